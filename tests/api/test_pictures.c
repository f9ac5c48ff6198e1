/* test_pictures.c - the pictures (show_mask, hist, plot, heatmap) as a host
 * sees them: their width follows the host's columns hook (80 without one,
 * clamped to 20..1000), colour follows masq_config.color, the text goes
 * through the write hook, file= is refused where the host did not enable
 * MASQ_LIB_IO, and a picture of a large tensor allocates no more than its
 * capped grid (everything is given back). */
#include "check.h"

static int columns_answer;
static int ask_columns(void *ud) {
  ++*(int *)ud;
  return columns_answer;
}

/* The display width of the longest line of [s] (UTF-8: count non-continuation bytes). */
static int widest(const char *s) {
  int best = 0, cur = 0;
  for (; *s; s++) {
    if (*s == '\n') {
      if (cur > best) best = cur;
      cur = 0;
    } else if (((unsigned char)*s & 0xC0) != 0x80) {
      cur++;
    }
  }
  return cur > best ? cur : best;
}

static masq_state *open_with(capture *c, int *asked, int color, unsigned libs) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = capture_write;
  cfg.write_ud = c;
  cfg.columns = asked ? ask_columns : NULL;
  cfg.columns_ud = asked;
  cfg.color = color;
  cfg.libs = libs;
  capture_reset(c);
  return masq_open(&cfg);
}

static const char hist_src[] = "hist(arange(0, 100) * 1.0, bins=5)";

static void test_width(void) {
  capture c;
  int asked = 0;
  masq_state *M = open_with(&c, NULL, 0, MASQ_LIB_DEFAULT);
  CHECK(widest(run(M, &c, hist_src)) == 80); /* no hook: 80 */
  masq_close(M);

  M = open_with(&c, &asked, 0, MASQ_LIB_DEFAULT);
  columns_answer = 50;
  CHECK(widest(run(M, &c, hist_src)) == 50);
  CHECK(asked == 1); /* asked at each picture: a resized window counts */
  columns_answer = 120;
  CHECK(widest(run(M, &c, hist_src)) == 120);
  CHECK(asked == 2);
  columns_answer = 0; /* the host does not know: 80 */
  CHECK(widest(run(M, &c, hist_src)) == 80);
  columns_answer = 5; /* too narrow to draw in: 20 */
  CHECK(widest(run(M, &c, "plot(arange(0, 10))")) == 20);
  columns_answer = 100000;
  CHECK(widest(run(M, &c, "hist(tensor([1.0, 2]), bins=1)")) == 1000);
  /* width= wins over the hook */
  CHECK(widest(run(M, &c, "hist(arange(0, 100) * 1.0, bins=5, width=33)")) == 33);
  asked = 0;
  run(M, &c, "hist(arange(0, 100) * 1.0, bins=5, width=33)");
  CHECK(asked == 0);
  masq_close(M);
}

static void test_color(void) {
  capture c;
  masq_state *M = open_with(&c, NULL, 1, MASQ_LIB_DEFAULT);
  CHECK(strstr(run(M, &c, "show_mask(masked(ones([2, 2]), tensor([[true, false], [true, true]])))"),
               "\x1b[38;5;") != NULL);
  CHECK(strstr(run(M, &c, "heatmap(ones([2, 2]))"), "\x1b[0m") != NULL);
  masq_close(M);
  M = open_with(&c, NULL, 0, MASQ_LIB_DEFAULT);
  CHECK(strchr(run(M, &c, "heatmap(ones([2, 2]))"), '\x1b') == NULL);
  CHECK(strchr(run(M, &c, "plot(arange(0, 10))"), '\x1b') == NULL);
  masq_close(M);
}

static void test_file_needs_io(void) {
  capture c;
  masq_state *M = open_with(&c, NULL, 0, MASQ_LIB_DEFAULT);
  CHECK_ERR(M, eval(M, "show_mask(ones(3), file=\"never.svg\")"), MASQ_ERR_RUNTIME,
            "show_mask: file= writes a file, and this host has not enabled file access "
            "(MASQ_LIB_IO)");
  CHECK_ERR(M, eval(M, "hist(ones(3), file=\"never.svg\")"), MASQ_ERR_RUNTIME, "hist: file=");
  CHECK_ERR(M, eval(M, "plot(ones(3), file=\"never.svg\")"), MASQ_ERR_RUNTIME, "plot: file=");
  CHECK_ERR(M, eval(M, "heatmap(ones([3, 3]), file=\"never.svg\")"), MASQ_ERR_RUNTIME,
            "heatmap: file=");
  CHECK(c.len == 0);
  CHECK(strcmp(run(M, &c, "print(1)"), "1\n") == 0); /* the state still works */
  masq_close(M);
}

/* An allocator that keeps the peak of the bytes in use. */
typedef struct peak {
  size_t bytes, peak;
} peak;

static void *peak_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  peak *k = ud;
  if (nsize == 0) {
    if (p) k->bytes -= osize;
    free(p);
    return NULL;
  }
  void *q = realloc(p, nsize);
  if (q) {
    k->bytes = k->bytes - (p ? osize : 0) + nsize;
    if (k->bytes > k->peak) k->peak = k->bytes;
  }
  return q;
}

/* A picture of ten million entries holds its capped grid and counts, not
 * anything per entry: each picture's peak is a few megabytes above the
 * 50 MB the tensor holds. */
static void test_large_is_capped(void) {
  capture c;
  peak k = {0, 0};
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = peak_alloc;
  cfg.alloc_ud = &k;
  cfg.write = capture_write;
  cfg.write_ud = &c;
  masq_state *M = masq_open(&cfg);
  CHECK_OK(M, eval(M, "x = masked(zeros([100000, 100]), ones([100000, 100], dtype=\"bool\"))"));
  CHECK_OK(M, eval(M, "y = x[:, 0]"));
  static const char *const pics[] = {
      "show_mask(x, width=1000, height=200)",
      "heatmap(x, width=1000, height=200)",
      "hist(x, bins=1000)",
      "plot(y, width=1000, height=200)",
  };
  for (size_t i = 0; i < sizeof pics / sizeof *pics; i++) {
    capture_reset(&c);
    k.peak = k.bytes;
    size_t before = k.bytes;
    CHECK_OK(M, eval(M, pics[i]));
    if (k.peak - before >= ((size_t)16 << 20))
      fprintf(stderr, "%s: peak %zu bytes above the %zu in use\n", pics[i], k.peak - before,
              before);
    CHECK(k.peak - before < ((size_t)16 << 20));
  }
  masq_close(M);
  CHECK(k.bytes == 0);
}

/* What the picture hook got: how many pictures, the last text and SVG. */
typedef struct pictures {
  int n;
  char text[4096], svg[65536];
  size_t svg_len;
} pictures;

static void take_picture(void *ud, const char *text, size_t tn, const char *svg, size_t sn) {
  pictures *p = ud;
  p->n++;
  snprintf(p->text, sizeof p->text, "%.*s", (int)tn, text);
  snprintf(p->svg, sizeof p->svg, "%.*s", (int)sn, svg);
  p->svg_len = sn;
}

/* With masq_config.picture a host that shows images (a notebook) gets each
 * picture's text and SVG together, and write gets none of it; print()
 * still goes to write. Nothing to draw: the text and an empty SVG. */
static void test_picture_hook(void) {
  capture c;
  pictures pics = {0};
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = capture_write;
  cfg.write_ud = &c;
  cfg.picture = take_picture;
  cfg.picture_ud = &pics;
  capture_reset(&c);
  masq_state *M = masq_open(&cfg);
  CHECK_OK(M, eval(M, "print(\"before\")\nhist(tensor([1.0, 2, 2, 3]), bins=3)"));
  CHECK(strcmp(c.text, "before\n") == 0);
  CHECK(pics.n == 1 && strstr(pics.text, "hist of 4 valid entries") != NULL);
  CHECK(strncmp(pics.svg, "<?xml", 5) == 0 && strstr(pics.svg, "</svg>") != NULL);
  const char *kinds[] = {"show_mask(masked(ones(2, 2), [true, false]))",
                         "heatmap(arange(6.0).reshape(2, 3))", "plot(tensor([1.0, 3, 2]))"};
  for (int i = 0; i < 3; i++) {
    CHECK_OK(M, eval(M, kinds[i]));
    CHECK(pics.n == 2 + i && pics.svg_len > 0 && strstr(pics.svg, "<svg") != NULL);
  }
  CHECK_OK(M, eval(M, "hist(masked(tensor([1.0]), [false]))"));
  CHECK(pics.n == 5 && pics.svg_len == 0 && strstr(pics.text, "1 masked out") != NULL);
  CHECK(strcmp(c.text, "before\n") == 0);
  masq_close(M);
}

int main(void) {
  test_picture_hook();
  test_width();
  test_color();
  test_file_needs_io();
  test_large_is_capped();
  return report("test_pictures");
}
