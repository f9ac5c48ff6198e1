/* plot_blocks.c - the pictures of a tensor as rows x columns: show_mask
 * (where the valid entries are) and heatmap (a shade per entry). A big
 * tensor is summed over blocks of rows and columns, as many blocks as the
 * picture has cells (plot.h). */
#include "../../core/checked.h"
#include "../../vm/table.h"
#include "plot.h"

/* --- blocks: a tensor as rows x columns, summed over blocks of entries -------------------- */

typedef struct blocks {
  int64_t rows, cols; /* dim 0, and the product of the others */
  int64_t br, bc; /* rows and columns per block */
  int nr, nc; /* blocks down and across */
  int64_t *valid; /* valid entries per block */
  int64_t *finite; /* of which finite (with sums) */
  double *sum; /* their sum (with sums) */
} blocks;

static void blocks_fill(mq_state *S, blocks *b, mq_tensor *t, int max_r, int max_c, bool sums) {
  b->rows = t->ndim ? t->shape[0] : 1;
  b->cols = b->rows ? t->numel / b->rows : 0;
  b->br = mq_ceil_div(b->rows, max_r);
  b->bc = mq_ceil_div(b->cols, max_c);
  if (b->br < 1) b->br = 1;
  if (b->bc < 1) b->bc = 1;
  b->nr = (int)mq_ceil_div(b->rows, b->br);
  b->nc = (int)mq_ceil_div(b->cols, b->bc);
  size_t n = mq_ck_zmul(S, (size_t)b->nr, (size_t)b->nc, "picture size");
  b->valid = mq_scratch(S, mq_ck_zmul(S, n, sizeof(int64_t), "picture size"));
  memset(b->valid, 0, n * sizeof(int64_t));
  b->finite = NULL;
  b->sum = NULL;
  if (sums) {
    b->finite = mq_scratch(S, n * sizeof(int64_t));
    b->sum = mq_scratch(S, n * sizeof(double));
    memset(b->finite, 0, n * sizeof(int64_t));
    for (size_t i = 0; i < n; i++) b->sum[i] = 0;
  }
  mq_pic_vals v = mq_pic_vals_of(S, t);
  for (int64_t r = 0; r < b->rows; r++) {
    size_t base = (size_t)(r / b->br) * (size_t)b->nc;
    int64_t i = r * b->cols;
    for (int j = 0; j < b->nc; j++) {
      mq_check_interrupt(S); /* a block may be long: one row of 10^8 columns */
      int64_t c1 = (int64_t)(j + 1) * b->bc;
      if (c1 > b->cols) c1 = b->cols;
      for (int64_t c = (int64_t)j * b->bc; c < c1; c++, i++) {
        if (!mq_pic_valid(&v, i)) continue;
        b->valid[base + (size_t)j]++;
        if (sums) {
          double x = mq_pic_val(&v, i);
          if (isfinite(x)) {
            b->finite[base + (size_t)j]++;
            b->sum[base + (size_t)j] += x;
          }
        }
      }
    }
  }
}

/* Entries in block (i, j): the last row and column of blocks may be short. */
static int64_t block_size(const blocks *b, int i, int j) {
  int64_t h = b->rows - (int64_t)i * b->br, w = b->cols - (int64_t)j * b->bc;
  return (h < b->br ? h : b->br) * (w < b->bc ? w : b->bc);
}

/* What a block holds: none of its entries valid, some, or all. A block
 * with any masked-out entry is never drawn as valid (issue 33: a block drawn
 * valid when half of it was hid Stocks' 133 empty rows). */
typedef enum { BLOCK_NONE, BLOCK_PART, BLOCK_ALL } block_state;

static block_state block_at(const blocks *b, int i, int j) {
  if (i >= b->nr) return BLOCK_NONE;
  int64_t v = b->valid[(size_t)i * (size_t)b->nc + (size_t)j];
  return v == 0 ? BLOCK_NONE : v == block_size(b, i, j) ? BLOCK_ALL : BLOCK_PART;
}

static int64_t blocks_valid(const blocks *b) {
  int64_t n = 0;
  for (size_t i = 0; i < (size_t)b->nr * (size_t)b->nc; i++) n += b->valid[i];
  return n;
}

/* "(300, 5), 1380 of 1500 valid (92.0%)" */
static void put_extent(mq_state *S, mq_buf *o, const mq_tensor *t, int64_t valid) {
  mq_buf_printf(S, o, "%s, %lld of %lld valid", mq_shape_str(S, t->ndim, t->shape),
                (long long)valid, (long long)t->numel);
  if (!t->numel) return;
  double pct = 100.0 * (double)valid / (double)t->numel;
  /* a share that rounds to all or nothing says it is not */
  if (valid < t->numel && pct >= 99.95) mq_buf_puts(S, o, " (>99.9%)");
  else if (valid > 0 && pct < 0.05) mq_buf_puts(S, o, " (<0.1%)");
  else mq_buf_printf(S, o, " (%.1f%%)", pct);
}

static void put_blocking(mq_state *S, mq_buf *o, const blocks *b, const char *rule) {
  if (b->br == 1 && b->bc == 1) return;
  mq_buf_printf(S, o, "; each cell is %lld row%s x %lld column%s, %s", (long long)b->br,
                b->br == 1 ? "" : "s", (long long)b->bc, b->bc == 1 ? "" : "s", rule);
}

/* The first column of each block as a label above it, where there is room. */
static void col_labels(mq_grid *g, int y, int x0, const blocks *b, int cw) {
  int next = x0;
  for (int j = 0; j < b->nc; j++) {
    char s[32];
    int x = x0 + j * cw;
    snprintf(s, sizeof s, "%lld", (long long)((int64_t)j * b->bc));
    if (x < next || x + (int)strlen(s) > g->w) continue;
    mq_grid_text(g, x, y, s, 0);
    next = x + (int)strlen(s) + 1;
  }
}

static void row_label(mq_grid *g, int y, int lw, int64_t row) {
  char s[32];
  snprintf(s, sizeof s, "%*lld", lw, (long long)row);
  mq_grid_text(g, 0, y, s, 0);
}

/* --- column names (labels=) --------------------------------------------------------- */

#define SVG_NAMES 160 /* room under an SVG for names turned 45 degrees */
#define SVG_NAME_MAX 30 /* bytes of a name shown there */

/* labels= checked: a list of strings, one per column of [x] (dims 1..
 * flattened); NULL for none. */
static const mq_list *arg_labels(mq_state *S, mq_value v, const char *who, const mq_tensor *x) {
  if (v.type == MQ_NONE) return NULL;
  if (!mq_is_obj(v, MQ_O_LIST))
    mq_error(S, "%s: labels must be a list of strings, not %s", who, mq_value_a_type_name(v));
  const mq_list *l = mq_as_list(v);
  int64_t rows = x->ndim ? x->shape[0] : 1, cols = rows ? x->numel / rows : 0;
  if (x->numel && l->len != cols)
    mq_error(S, "%s: labels has %d name%s for %lld column%s", who, l->len, l->len == 1 ? "" : "s",
             (long long)cols, cols == 1 ? "" : "s");
  for (int i = 0; i < l->len; i++)
    if (!mq_is_obj(l->items[i], MQ_O_STRING))
      mq_error(S, "%s: labels[%d] must be a string, not %s", who, i,
               mq_value_a_type_name(l->items[i]));
  return l;
}

/* "columns: 0 age, 1 height, ..." under a picture whose cells are single
 * columns, wrapped to its width. */
static void put_names(mq_state *S, mq_buf *o, const mq_pic *p, const blocks *b) {
  if (!p->labels || b->bc != 1) return;
  int col = mq_text_put(S, o, "columns:", 8, false);
  for (int j = 0; j < p->labels->len; j++) {
    const mq_string *name = mq_as_string(p->labels->items[j]);
    char num[32];
    int w = snprintf(num, sizeof num, " %d ", j) +
            mq_text_put(S, NULL, name->chars, name->len, false) + 1;
    if (col + w > p->width && col > 9) {
      mq_buf_puts(S, o, "\n        ");
      col = 8;
    }
    mq_buf_puts(S, o, num);
    mq_text_put(S, o, name->chars, name->len, false);
    if (j + 1 < p->labels->len) mq_buf_putc(S, o, ',');
    col += w;
  }
  mq_buf_putc(S, o, '\n');
}

/* The names under an SVG's cells of width [cw] from [x0], turned, each
 * where it has 14 units of room from the one before. */
static void svg_names(mq_state *S, mq_buf *o, const mq_list *labels, double x0, double cw,
                      double y) {
  double next = 0;
  for (int j = 0; j < labels->len; j++) {
    double x = x0 + (j + 0.5) * cw;
    if (x < next) continue;
    const mq_string *name = mq_as_string(labels->items[j]);
    mq_svg_text_turned(S, o, x - 4, y + 12, name->chars,
                       name->len < SVG_NAME_MAX ? name->len : SVG_NAME_MAX);
    next = x + 14;
  }
}

/* --- show_mask ------------------------------------------------------------------------------ */

/* The SVG's cells: dark where every entry is valid, light where only some
 * are, none where none is. */
static const char *const mask_fill[] = {NULL, "#a9c8e4", "#2b6ca3"};

static void show_mask_svg(mq_state *S, mq_buf *o, mq_tensor *x, const mq_pic *p) {
  blocks b;
  blocks_fill(S, &b, x, p->svg_h, p->svg_w / 2, false);
  char s[32];
  double cw = (double)p->svg_w / b.nc, ch = (double)p->svg_h / b.nr;
  bool named = p->labels && b.bc == 1;
  size_t at = o->len;
  mq_buf_puts(S, o, "mask ");
  put_extent(S, o, x, blocks_valid(&b));
  put_blocking(S, o, &b, "light where only part of it is valid");
  mq_pic_svg_begin(S, o, at, p, p->svg_w + MQ_SVG_LEFT + 30,
                   p->svg_h + MQ_SVG_TOP + 40 + (named ? SVG_NAMES : 0));
  for (int i = 0; i < b.nr; i++) {
    mq_poll(S);
    for (int j = 0; j < b.nc;) { /* a run of blocks of one state is one rectangle */
      block_state st = block_at(&b, i, j);
      int k = j + 1;
      while (k < b.nc && block_at(&b, i, k) == st) k++;
      if (st != BLOCK_NONE)
        mq_svg_rect(S, o, MQ_SVG_LEFT + j * cw, MQ_SVG_TOP + i * ch, (k - j) * cw, ch,
                    mask_fill[st]);
      j = k;
    }
  }
  mq_pic_svg_frame(S, o, MQ_SVG_LEFT, MQ_SVG_TOP, p->svg_w, p->svg_h);
  double next = 0;
  for (int j = 0; j < b.nc; j++) {
    double xx = MQ_SVG_LEFT + (j + 0.5) * cw;
    if (xx < next) continue;
    mq_svg_text(S, o, xx, MQ_SVG_TOP - 4, "middle", mq_pic_ints(s, (int64_t)j * b.bc));
    next = xx + 40;
  }
  mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + 12, "end", "0");
  mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + p->svg_h, "end", mq_pic_ints(s, b.rows - 1));
  mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + p->svg_h / 2.0, "end", "row");
  if (named) svg_names(S, o, p->labels, MQ_SVG_LEFT, cw, MQ_SVG_TOP + p->svg_h);
  mq_pic_svg_end(S, o);
}

/* The glyph of a line's cell, its blocks [top] and [bottom] (two rows of
 * blocks per line): half blocks where each is all valid or none, else a
 * shade by the valid share of the two, ░ up to a third, ▒ up to two
 * thirds, ▓ above. */
static uint32_t mask_glyph(const blocks *b, int top, int j) {
  block_state t = block_at(b, top, j), u = block_at(b, top + 1, j);
  if (t != BLOCK_PART && u != BLOCK_PART) {
    bool a = t == BLOCK_ALL, c = u == BLOCK_ALL;
    return a && c ? 0x2588 : a ? 0x2580 : c ? 0x2584 : ' ';
  }
  int64_t nvalid = 0, nall = 0;
  for (int i = top; i < top + 2 && i < b->nr; i++) {
    nvalid += b->valid[(size_t)i * (size_t)b->nc + (size_t)j];
    nall += block_size(b, i, j);
  }
  return 3 * nvalid <= nall ? 0x2591 : 3 * nvalid <= 2 * nall ? 0x2592 : 0x2593;
}

static void show_mask_text(mq_state *S, mq_buf *o, mq_tensor *x, const mq_pic *p) {
  int lw = mq_pic_ndigits(x->ndim && x->shape[0] > 1 ? x->shape[0] - 1 : 0);
  int avail = p->width - lw - 3; /* row labels, a space; a space and the sparkline */
  if (avail < 1) avail = 1;
  blocks b;
  blocks_fill(S, &b, x, 2 * p->height, avail, false);
  mq_buf_puts(S, o, "mask ");
  put_extent(S, o, x, blocks_valid(&b));
  put_blocking(S, o, &b, "shaded \xe2\x96\x91\xe2\x96\x92\xe2\x96\x93 where only part of it is valid");
  mq_buf_putc(S, o, '\n');
  int cw = avail / b.nc;
  if (cw > 4) cw = 4;
  int gap = cw >= 3, x0 = lw + 1, lines = (b.nr + 1) / 2;
  mq_grid *g = mq_grid_new(S, x0 + b.nc * cw + 2, lines + 1);
  col_labels(g, 0, x0, &b, cw);
  for (int l = 0; l < lines; l++) {
    int64_t nvalid = 0, nall = 0;
    row_label(g, l + 1, lw, (int64_t)l * 2 * b.br);
    for (int j = 0; j < b.nc; j++) {
      uint32_t cp = mask_glyph(&b, 2 * l, j);
      for (int k = 0; k < cw - gap; k++) mq_grid_put(g, x0 + j * cw + k, l + 1, cp, MQ_PIC_MAIN);
      for (int i = 2 * l; i < 2 * l + 2 && i < b.nr; i++) {
        nvalid += b.valid[(size_t)i * (size_t)b.nc + (size_t)j];
        nall += block_size(&b, i, j);
      }
    }
    /* the sparkline: the valid share of the line's rows, in eighths rounded
     * up, but full only when all of them are valid */
    int eighths = nvalid ? (int)ceil(8.0 * (double)nvalid / (double)nall) : 0;
    if (eighths == 8 && nvalid < nall) eighths = 7;
    mq_grid_put(g, x0 + b.nc * cw + 1, l + 1, eighths ? 0x2580 + (uint32_t)eighths : ' ',
                MQ_PIC_DIM);
  }
  mq_grid_emit(S, g, o, p->color);
  put_names(S, o, p, &b);
}

/* show_mask and heatmap after their own checks: [title] names the
 * picture of an empty tensor, which is a line on the terminal and an error
 * for an SVG (a file of nothing would look like a drawing that failed). */
static mq_value block_picture(mq_state *S, mq_value *args, mq_tensor *x, const char *who,
                              const char *title,
                              void (*svg)(mq_state *, mq_buf *, mq_tensor *, const mq_pic *),
                              void (*text)(mq_state *, mq_buf *, mq_tensor *, const mq_pic *)) {
  mq_pic p;
  mq_pic_init(S, &p, who, args[1], args[2], 20, args[3], args[5]);
  p.labels = arg_labels(S, args[4], who, x);
  mq_buf *o = &S->out;
  o->len = 0;
  if (!p.file) mq_pic_text_title(S, o, &p);
  if (x->numel == 0) {
    if (p.file)
      mq_error(S, "%s: x of shape %s has no entries to draw", who,
               mq_shape_str(S, x->ndim, x->shape));
    mq_buf_printf(S, o, "%s %s: no entries\n", title, mq_shape_str(S, x->ndim, x->shape));
  } else if (p.file) {
    svg(S, o, x, &p);
  } else {
    text(S, o, x, &p);
  }
  mq_pic_finish(S, &p);
  if (!mq_pic_wants_svg(S, &p)) return mq_none();
  if (x->numel) svg(S, o, x, &p);
  return mq_pic_give_svg(S, &p);
}

mq_value mq_pic_show_mask(mq_state *S, mq_value *args) {
  if (mq_is_obj(args[0], MQ_O_TABLE)) { /* every cell, text included, columns named */
    mq_value a[6]; /* the arguments as show_mask's signature has them */
    mq_list *names;
    memcpy(a, args, sizeof a);
    mq_tensor *x = mq_table_validity(S, mq_as_table(args[0]), &names);
    if (a[4].type == MQ_NONE) a[4] = mq_objv(names);
    return block_picture(S, a, x, "show_mask", "mask", show_mask_svg, show_mask_text);
  }
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  return block_picture(S, args, x, "show_mask", "mask", show_mask_svg, show_mask_text);
}

/* --- heatmap ---------------------------------------------------------------------------------------- */

#define RAMP_LEVELS 9
static const char ramp_chars[] = ".:-=+*#%@";
/* dark blue to yellow, a viridis-like ramp in xterm's 256 colours and in RGB */
static const uint8_t ramp_256[RAMP_LEVELS] = {54, 60, 24, 30, 36, 35, 71, 148, 226};
static const char *const ramp_rgb[RAMP_LEVELS] = {"#440154", "#472d7b", "#3b528b",
                                                  "#2c728e", "#21918c", "#28ae80",
                                                  "#5ec962", "#addc30", "#fde725"};

/* What a block shows: its level on the ramp (0..8), or -1 when it has no
 * valid entries, -2 when its valid entries are all NaN or infinite. */
static int heat_level(const blocks *b, size_t k, double lo, double hi) {
  if (!b->valid[k]) return -1;
  if (!b->finite[k]) return -2;
  double m = b->sum[k] / (double)b->finite[k];
  int l = hi > lo ? (int)(mq_pic_frac(m, lo, hi) * RAMP_LEVELS) : RAMP_LEVELS / 2;
  return l < RAMP_LEVELS ? l : RAMP_LEVELS - 1;
}

/* The SVG's colour of a block mean: the ramp's RGB stops interpolated,
 * so the file shows more than the terminal's nine levels. */
static void heat_rgb(char out[8], double f) {
  double t = f * (RAMP_LEVELS - 1);
  int k = (int)t;
  if (k >= RAMP_LEVELS - 1) k = RAMP_LEVELS - 2;
  t -= k;
  unsigned a, b, rgb[3] = {0, 0, 0};
  for (int c = 0; c < 3; c++) {
    sscanf(ramp_rgb[k] + 1 + 2 * c, "%2x", &a);
    sscanf(ramp_rgb[k + 1] + 1 + 2 * c, "%2x", &b);
    rgb[c] = (unsigned)floor(a + (b - (double)a) * t + 0.5);
  }
  snprintf(out, 8, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* The least and greatest block mean; false when no block has one. */
static bool heat_range(const blocks *b, double *lo, double *hi, bool *bad) {
  *lo = INFINITY;
  *hi = -INFINITY;
  *bad = false;
  for (size_t k = 0; k < (size_t)b->nr * (size_t)b->nc; k++) {
    if (b->valid[k] && !b->finite[k]) *bad = true;
    if (!b->finite[k]) continue;
    double m = b->sum[k] / (double)b->finite[k];
    if (m < *lo) *lo = m;
    if (m > *hi) *hi = m;
  }
  return *lo <= *hi;
}

static void heat_header(mq_state *S, mq_buf *o, mq_tensor *x, const blocks *b) {
  mq_buf_puts(S, o, "heatmap ");
  put_extent(S, o, x, blocks_valid(b));
  put_blocking(S, o, b, "the mean of its valid finite entries");
}

static void heatmap_text(mq_state *S, mq_buf *o, mq_tensor *x, const mq_pic *p) {
  int lw = mq_pic_ndigits(x->shape[0] > 1 ? x->shape[0] - 1 : 0);
  int avail = p->width - lw - 1;
  blocks b;
  blocks_fill(S, &b, x, p->height, avail, true);
  double lo, hi;
  bool bad, any = heat_range(&b, &lo, &hi, &bad);
  heat_header(S, o, x, &b);
  mq_buf_putc(S, o, '\n');
  int cw = avail / b.nc > 1 ? 2 : 1, x0 = lw + 1;
  mq_grid *g = mq_grid_new(S, x0 + b.nc * cw, b.nr + 1);
  col_labels(g, 0, x0, &b, cw);
  for (int i = 0; i < b.nr; i++) {
    row_label(g, i + 1, lw, (int64_t)i * b.br);
    for (int j = 0; j < b.nc; j++) {
      int l = heat_level(&b, (size_t)i * (size_t)b.nc + (size_t)j, lo, hi);
      uint32_t cp = l == -1 ? 0xB7 : l == -2 ? '!' : p->color ? 0x2588 : (uint32_t)ramp_chars[l];
      uint8_t c = l == -1 ? MQ_PIC_MASKED : l == -2 ? MQ_PIC_BAD : ramp_256[l];
      for (int k = 0; k < cw; k++) mq_grid_put(g, x0 + j * cw + k, i + 1, cp, c);
    }
  }
  mq_grid_emit(S, g, o, p->color);
  put_names(S, o, p, &b);
  /* the legend */
  char a[32];
  if (any) {
    mq_buf_printf(S, o, "%s ", mq_pic_nums(a, lo));
    for (int l = 0; l < RAMP_LEVELS; l++) {
      if (p->color) mq_buf_printf(S, o, "\x1b[38;5;%dm\xe2\x96\x88\x1b[0m", ramp_256[l]);
      else mq_buf_putc(S, o, ramp_chars[l]);
    }
    mq_buf_printf(S, o, " %s", mq_pic_nums(a, hi));
  }
  mq_buf_printf(S, o, "%s\xc2\xb7 masked out", any ? "; " : "");
  if (bad) mq_buf_puts(S, o, "; ! only NaN or inf");
  mq_buf_putc(S, o, '\n');
}

/* The SVG's cells are as wide and as high as the area allows, up to 40
 * units, neither more than three times the other (a table of many rows
 * and few columns stays a picture, not a strip); the legend stands at
 * their right, a ramp from the greatest mean at the top to the least. */
static void heatmap_svg(mq_state *S, mq_buf *o, mq_tensor *x, const mq_pic *p) {
  blocks b;
  blocks_fill(S, &b, x, p->svg_h / 4, p->svg_w / 4, true);
  double lo, hi;
  bool bad, any = heat_range(&b, &lo, &hi, &bad);
  double cw = (double)p->svg_w / b.nc, ch = (double)p->svg_h / b.nr;
  if (cw > 40) cw = 40;
  if (ch > 40) ch = 40;
  if (cw > 3 * ch) cw = 3 * ch;
  if (ch > 3 * cw) ch = 3 * cw;
  double w = cw * b.nc, h = ch * b.nr;
  bool named = p->labels && b.bc == 1;
  const double legend_h = RAMP_LEVELS * 16;
  double lx = MQ_SVG_LEFT + w + 16; /* the legend's ramp */
  size_t at = o->len;
  heat_header(S, o, x, &b);
  /* the canvas: the area's, or wider when the legend and its labels (90
   * units) would not fit at the right of the cells */
  int canvas_w = p->svg_w + MQ_SVG_LEFT + 30, need = (int)ceil(lx) + 16 + 90;
  mq_pic_svg_begin(S, o, at, p, need > canvas_w ? need : canvas_w,
                   MQ_SVG_TOP + (int)ceil(h > legend_h ? h : legend_h) + 40 + (named ? SVG_NAMES : 0));
  for (int i = 0; i < b.nr; i++) {
    mq_poll(S);
    for (int j = 0; j < b.nc; j++) {
      size_t k = (size_t)i * (size_t)b.nc + (size_t)j;
      int l = heat_level(&b, k, lo, hi);
      double cx = MQ_SVG_LEFT + j * cw, cy = MQ_SVG_TOP + i * ch;
      char rgb[8];
      if (l >= 0)
        heat_rgb(rgb, hi > lo ? mq_pic_frac(b.sum[k] / (double)b.finite[k], lo, hi) : 0.5);
      mq_svg_rect(S, o, cx, cy, cw, ch, l == -1 ? "#f0f0f0" : l == -2 ? "#ff0000" : rgb);
      if (l == -1) { /* masked out: a light cell, crossed */
        mq_svg_line(S, o, cx, cy, cx + cw, cy + ch, "#b0b0b0");
        mq_svg_line(S, o, cx + cw, cy, cx, cy + ch, "#b0b0b0");
      }
    }
  }
  mq_pic_svg_frame(S, o, MQ_SVG_LEFT, MQ_SVG_TOP, w, h);
  char a[32];
  mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + 12, "end", "0");
  mq_svg_text(S, o, MQ_SVG_LEFT - 6, MQ_SVG_TOP + h, "end", mq_pic_ints(a, b.rows - 1));
  mq_svg_text(S, o, MQ_SVG_LEFT, MQ_SVG_TOP - 4, "start", "0");
  mq_svg_text(S, o, MQ_SVG_LEFT + w, MQ_SVG_TOP - 4, "end", mq_pic_ints(a, b.cols - 1));
  if (named) svg_names(S, o, p->labels, MQ_SVG_LEFT, cw, MQ_SVG_TOP + h);
  if (any) {
    for (int l = 0; l < RAMP_LEVELS; l++)
      mq_svg_rect(S, o, lx, MQ_SVG_TOP + (RAMP_LEVELS - 1 - l) * 16, 16, 16, ramp_rgb[l]);
    mq_svg_text(S, o, lx + 22, MQ_SVG_TOP + 12, "start", mq_pic_nums(a, hi));
    mq_svg_text(S, o, lx + 22, MQ_SVG_TOP + legend_h, "start", mq_pic_nums(a, lo));
  }
  mq_pic_svg_end(S, o);
}

mq_value mq_pic_heatmap(mq_state *S, mq_value *args) {
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  if (x->ndim != 2)
    mq_error(S, "heatmap: x must be 2-D, not %d-D (shape %s)", x->ndim,
             mq_shape_str(S, x->ndim, x->shape));
  return block_picture(S, args, x, "heatmap", "heatmap", heatmap_svg, heatmap_text);
}
