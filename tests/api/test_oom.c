/* test_oom.c - allocation failure injection through the allocator hook.
 *
 * For every k, the k-th allocation request fails (once; the ones after it
 * succeed again, as when memory comes back):
 *  - in masq_open, which must return NULL (nothing live) or a working state;
 *  - in a host's session (registering a host function; a script with the
 *    tour, autograd, an .npz save and load, a CSV save and load with its
 *    summary and describe, an import, closures and lists;
 *    masq_call and friends; an echoed eval), which must fail with
 *    MASQ_ERR_MEMORY and a message, or succeed if the k-th request was never
 *    reached; then THE SAME STATE runs the session again without failures
 *    and must print exactly what a clean run prints;
 *  - in scripts that fail on their own (a runtime error deep in calls, a
 *    syntax error), which must end with their error or MASQ_ERR_MEMORY, and
 *    then give exactly the clean run's diagnostic.
 * And a failed request while freed tensor buffers are cached is retried
 * after giving them back. After masq_close nothing may be live. Every free and realloc must name the
 * exact size of its block: each block carries a header with its size, which
 * the hook checks against osize. The normal build covers every k; the
 * sanitized one, slower, strides past k = 2000. */
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"

#include "../sanitized.h"
#define SANITIZED TEST_ASAN

/* --- a tracking allocator that fails on request --------------------------------- */

#define MAGIC 0x6d61737161726e61ull

typedef struct header {
  uint64_t magic;
  uint64_t size;
} header;

typedef struct tracker {
  long live;
  size_t bytes;
  long requests;     /* allocation requests (nsize > 0) since arming */
  long fail_at;      /* the request that fails; 0: none */
  long fail_n;       /* how many requests from there fail (2: the retry too) */
  long wrong_sizes;  /* frees/reallocs whose osize was not the block's size */
  long failed;       /* requests refused */
} tracker;

/* A place for a debugger's breakpoint: OOM_K=k gdb build/api/test_oom. */
__attribute__((noinline)) static void wrong_size(void) { __asm__ volatile(""); }

static void *track_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  tracker *t = ud;
  header *h = p ? (header *)p - 1 : NULL;
  if (h && (h->magic != MAGIC || h->size != osize)) {
    wrong_size();
    if (t->wrong_sizes++ < 5)
      fprintf(stderr, "allocator: block %p of %llu bytes given back as %zu bytes\n", p,
              h->magic == MAGIC ? (unsigned long long)h->size : 0ull, osize);
  }
  if (nsize == 0) {
    if (h) {
      t->live--;
      t->bytes -= osize;
      h->magic = 0;
      free(h);
    }
    return NULL;
  }
  /* The chosen request fails and so does the next, which is the library's
   * one retry of it (after collecting cycles and emptying its buffer
   * cache): the k-th allocation then really fails. */
  if (t->fail_at && ++t->requests >= t->fail_at && t->requests < t->fail_at + t->fail_n) {
    t->failed++;
    return NULL;
  }
  header *q = realloc(h, sizeof *q + nsize);
  if (!q) return NULL;
  q->magic = MAGIC;
  q->size = nsize;
  if (!h) t->live++;
  t->bytes = t->bytes - (h ? osize : 0) + nsize;
  return q + 1;
}

static void arm(tracker *t, long k) {
  t->requests = 0;
  t->fail_at = k;
  t->fail_n = 2;
  t->failed = 0;
}

/* True if the armed failure was reached. */
static int disarm(tracker *t) {
  t->fail_at = 0;
  return t->failed != 0;
}

/* --- output, captured without masq's allocator ----------------------------------- */

typedef struct output {
  char *text;
  size_t len, cap;
} output;

static void output_write(void *ud, const char *s, size_t n) {
  output *o = ud;
  if (o->len + n + 1 > o->cap) {
    size_t nc = (o->len + n + 1) * 2;
    char *q = realloc(o->text, nc);
    if (!q) return;
    o->text = q;
    o->cap = nc;
  }
  memcpy(o->text + o->len, s, n);
  o->len += n;
  o->text[o->len] = '\0';
}

/* --- the host function ----------------------------------------------------------- */

/* host_twice(x): a new tensor of x's shape with every valid element doubled
 * (masked ones dropped to 0): masq_tensor_contiguous, _info and _new each
 * allocate inside masq. */
static masq_status host_twice(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                              masq_tensor **result) {
  (void)ud;
  (void)argc;
  masq_tensor *c;
  masq_tensor_desc d;
  masq_status st = masq_tensor_contiguous(M, argv[0], &c);
  if (st != MASQ_OK) return st;
  if ((st = masq_tensor_info(M, c, &d)) != MASQ_OK) goto done;
  int64_t n = 1;
  for (int i = 0; i < d.ndim; i++) n *= d.shape[i];
  double out[64];
  if (d.dtype != MASQ_FLOAT32 || n > 64) {
    st = masq_errorf(M, "host_twice: a float32 tensor of at most 64 elements, please");
    goto done;
  }
  for (int64_t i = 0; i < n; i++)
    out[i] = (!d.valid || d.valid[i]) ? 2.0 * ((const float *)d.data)[i] : 0.0;
  masq_tensor_desc r = {.dtype = MASQ_FLOAT64, .ndim = d.ndim, .shape = d.shape, .data = out};
  st = masq_tensor_new(M, &r, result);
done:
  masq_tensor_release(M, c);
  return st;
}

/* --- the script ------------------------------------------------------------------- */

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *text = NULL;
  size_t len = 0, cap = 0, n;
  do {
    if (len + 4097 > cap) {
      cap = cap ? cap * 2 : 8192;
      char *q = realloc(text, cap);
      if (!q) break;
      text = q;
    }
    n = fread(text + len, 1, cap - len - 1, f);
    len += n;
  } while (n > 0);
  fclose(f);
  if (text) text[len] = '\0';
  return text;
}

#define EXTRA_FMT \
    "\n# autograd through softmax, a reduction and a user function\n" \
    "fn loss_of(v) = sum(softmax(v, 0) * v) + mean(v * v)\n" \
    "b = masked([0.5, -1.0, 2.0, 0.25], [true, true, false, true], requires_grad=true)\n" \
    "backward(loss_of(b))\n" \
    "print(\"grad of b:\", b.grad)\n" \
    "print(\"grad() returned:\", grad(sum(b * 3), b))\n" \
    "# files: a masked tensor and an archive of several, back again\n" \
    "save(\"%s/b.npz\", b.grad)\n" \
    "savez(\"%s/all.npz\", [[\"w\", w.grad], [\"mt\", mt]])\n" \
    "print(load(\"%s/b.npz\"))\n" \
    "for pair in load(\"%s/all.npz\") {\n" \
    "  [name, t] = pair\n" \
    "  print(name, t)\n" \
    "}\n" \
    "# CSV: a table with missing cells, back again; its summary and describe\n" \
    "save_csv(\"%s/t.csv\", mt, header=[\"a\", \"b\", \"c\"])\n" \
    "tc, names = load_csv(\"%s/t.csv\", tensor=true)\n" \
    "print(names, tc, summary(tc))\n" \
    "describe(tc, names=names)\n" \
    "# the same file as a table: a text column, filter, sort, group, back again\n" \
    "tb = load_csv(\"%s/t.csv\")\n" \
    "lab = []\n" \
    "for i in range(len(tb)) { append(lab, str(i)) }\n" \
    "tb[\"label\"] = lab\n" \
    "tb[\"twice\"] = tb[\"a\"] * 2\n" \
    "print(tb, tb.columns, len(tb), tb[tb[\"a\"] > 0], sort(tb, \"b\", descending=true))\n" \
    "print(describe(tb), summary(tb), group(tb, \"label\", count), to_tensor(tb))\n" \
    "save_csv(\"%s/t2.csv\", tb)\n" \
    "print(load_csv(\"%s/t2.csv\"))\n" \
    "# the host function\n" \
    "print(\"host_twice:\", host_twice(mt[1]), host_twice(to_tensor(mt, 1) * 2))\n" \
    "# a module, a closure, lists, format and a few training steps\n" \
    "import \"%s/helper.masq\"\n" \
    "fn make_step(lr) {\n" \
    "  fn step(p, g) = requires_grad(p - lr * to_tensor(g, 0.0))\n" \
    "  return step\n" \
    "}\n" \
    "update = make_step(0.1)\n" \
    "seed(1)\n" \
    "xs = randn(4, 3)\n" \
    "v = requires_grad(zeros(3))\n" \
    "losses = []\n" \
    "for i in range(3) {\n" \
    "  l = mean(as_masked(matmul(xs, v) - 1, [true, false, true, true]) ** 2)\n" \
    "  backward(l)\n" \
    "  append(losses, item(l))\n" \
    "  v = update(v, v.grad)\n" \
    "}\n" \
    "print(format(\"losses {:.4f} {:.4f} {:.4f}\", losses[0], losses[1], losses[2]))\n" \
    "print(helper_scale(v, k=3), [\"a\", 1, [none]])\n"

static const char *helper_text = "fn helper_scale(x, k=2) = x * k\n";

static char *make_script(const char *dir) {
  char *tour = read_all("examples/tour.masq");
  if (!tour) return NULL;
  size_t n = strlen(tour) + strlen(EXTRA_FMT) + 10 * strlen(dir) + 1;
  char *s = malloc(n);
  if (s) {
    strcpy(s, tour);
    snprintf(s + strlen(tour), n - strlen(tour), EXTRA_FMT, dir, dir, dir, dir, dir, dir, dir, dir, dir, dir);
  }
  free(tour);
  char path[64];
  snprintf(path, sizeof path, "%s/helper.masq", dir);
  FILE *f = fopen(path, "w");
  if (!f || fputs(helper_text, f) < 0 || fclose(f) != 0) {
    free(s);
    return NULL;
  }
  return s;
}

/* --- the runs --------------------------------------------------------------------- */

static masq_state *open_tracked(tracker *t, output *o) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = track_alloc;
  cfg.alloc_ud = t;
  cfg.write = output_write;
  cfg.write_ud = o;
  cfg.libs = MASQ_LIB_ALL;
  return masq_open(&cfg);
}

static masq_status eval_text(masq_state *M, const char *text, int flags) {
  return masq_eval(M, text, strlen(text), "<host>", flags);
}

/* A host's session: register the host function, run the script, call one
 * of its functions from C with one of its globals, read the result, echo
 * an expression as the REPL does. Stops at the first failure, whose
 * message and rendered diagnostic it copies out. */
static masq_status run_script(masq_state *M, const char *script, char message[256],
                              char rendered[1024]) {
  masq_status st = masq_register(M, "host_twice(x)", host_twice, NULL, "doubles x");
  if (st == MASQ_OK) st = masq_eval(M, script, strlen(script), "oom.masq", 0);
  masq_tensor *b = NULL, *loss = NULL;
  if (st == MASQ_OK) st = masq_get_global(M, "b", &b);
  if (st == MASQ_OK) st = masq_call(M, "loss_of", 1, &b, &loss);
  double value = 0;
  if (st == MASQ_OK) st = masq_tensor_item(M, loss, &value);
  if (st == MASQ_OK) st = masq_set_number(M, "from_c", value);
  if (st == MASQ_OK) st = eval_text(M, "print(format(\"loss_of(b) from C: {:.6f}\", from_c))", 0);
  if (st == MASQ_OK) st = eval_text(M, "mt * 2\nmatmul([1.0, 2.0], [3.0, 4.0])", MASQ_EVAL_ECHO);
  /* The error, before releasing the handles clears it. */
  const masq_error *e = masq_last_error(M);
  snprintf(message, 256, "%s", st == MASQ_OK ? "" : e->message ? e->message : "");
  snprintf(rendered, 1024, "%s", st == MASQ_OK ? "" : e->rendered ? e->rendered : "");
  /* Handles go back whatever happened (a NULL one is fine). */
  masq_tensor_release(M, loss);
  masq_tensor_release(M, b);
  return st;
}

/* The k that the run of one phase covers: every k, or (sanitized, past
 * [dense]) every [stride]-th. */
static long first_k(void) {
  const char *only = getenv("OOM_K");
  return only ? atol(only) : 1;
}

static long next_k(long k, long dense, long stride) {
  if (getenv("OOM_K")) return -1;
  return (SANITIZED && k >= dense) ? k + stride : k + 1;
}

/* (a) masq_open itself: NULL with nothing live, or a state that works. */
static long test_open(void) {
  long k = first_k();
  for (; k > 0; k = next_k(k, 2000, 7)) {
    tracker t = {0};
    output o = {0};
    arm(&t, k);
    masq_state *M = open_tracked(&t, &o);
    int reached = disarm(&t);
    if (M) {
      CHECK(masq_eval(M, "print(1 + 1)", 12, NULL, 0) == MASQ_OK);
      CHECK(o.text && strcmp(o.text, "2\n") == 0);
      masq_close(M);
    }
    if (reached && M) {
      failed++;
      fprintf(stderr, "masq_open: allocation %ld failed but it returned a state\n", k);
    }
    if (t.live || t.bytes || t.wrong_sizes) {
      failed++;
      fprintf(stderr, "masq_open, failing allocation %ld: %ld blocks (%zu bytes) live after "
                      "close, %ld wrong sizes\n", k, t.live, t.bytes, t.wrong_sizes);
    }
    free(o.text);
    if (!reached) break;
  }
  return k;
}

/* (b) the script: returns how many k it covered, and the last one. */
static void test_script(const char *script, long *covered, long *last) {
  /* A clean run first: what the script prints, and that it works. */
  tracker t0 = {0};
  output clean = {0};
  masq_state *M = open_tracked(&t0, &clean);
  CHECK(M != NULL);
  if (!M) return;
  char message[256], rendered[1024];
  CHECK(run_script(M, script, message, rendered) == MASQ_OK);
  if (message[0]) fprintf(stderr, "clean run: %s", rendered);
  masq_close(M);
  CHECK(t0.live == 0 && t0.wrong_sizes == 0);
  CHECK(clean.text != NULL && strstr(clean.text, "host_twice:") != NULL);
  if (!clean.text) return;

  long k = first_k(), problems = 0;
  *covered = 0;
  for (; k > 0; k = next_k(k, 2000, 7)) {
    tracker t = {0};
    output o = {0};
    M = open_tracked(&t, &o);
    if (!M) {
      failed++;
      fprintf(stderr, "script, k=%ld: masq_open failed without injection\n", k);
      break;
    }
    /* The registration and the script, failing at the k-th request. */
    arm(&t, k);
    masq_status st = run_script(M, script, message, rendered);
    int reached = disarm(&t);
    int bad = 0;
    if (reached) {
      if (st != MASQ_ERR_MEMORY || !message[0] || !rendered[0]) {
        fprintf(stderr, "script, failing allocation %ld: status %d, message \"%s\"\n", k,
                (int)st, message);
        bad = 1;
      }
    } else if (st != MASQ_OK) {
      fprintf(stderr, "script, k=%ld not reached, yet status %d: %s", k, (int)st, rendered);
      bad = 1;
    }
    /* The same state again, without failures: the same output as a clean run. */
    o.len = 0;
    if (o.text) o.text[0] = '\0';
    masq_status again = run_script(M, script, message, rendered);
    if (again != MASQ_OK || !o.text || strcmp(o.text, clean.text) != 0) {
      fprintf(stderr, "script, failing allocation %ld: the same state then %s\n", k,
              again != MASQ_OK ? rendered : "prints something else");
      if (again == MASQ_OK && o.text) {
        size_t i = 0;
        while (o.text[i] && o.text[i] == clean.text[i]) i++;
        fprintf(stderr, "  from byte %zu: got \"%.60s\", expected \"%.60s\"\n", i, o.text + i,
                clean.text + i);
      }
      bad = 1;
    }
    masq_close(M);
    if (t.live || t.bytes || t.wrong_sizes) {
      fprintf(stderr, "script, failing allocation %ld: %ld blocks (%zu bytes) live after close, "
                      "%ld wrong sizes\n", k, t.live, t.bytes, t.wrong_sizes);
      bad = 1;
    }
    free(o.text);
    (*covered)++;
    if (bad) {
      failed++;
      if (++problems >= 20) {
        fprintf(stderr, "script: stopping after %ld failing k\n", problems);
        break;
      }
    } else {
      passed++;
    }
    if (!reached) break;
  }
  *last = k;
  free(clean.text);
}

/* (c) Scripts that fail on their own: under a failing allocation they end
 * with their own error or MASQ_ERR_MEMORY, and the same state then gives
 * exactly the clean run's error and output. Returns how many k it covered. */
static long test_failing(const char *name, const char *src, masq_status expect) {
  tracker t0 = {0};
  output clean = {0};
  masq_state *M = open_tracked(&t0, &clean);
  CHECK(M != NULL);
  if (!M) return 0;
  CHECK(masq_eval(M, src, strlen(src), name, 0) == expect);
  char want[2048];
  snprintf(want, sizeof want, "%s", masq_last_error(M)->rendered);
  masq_close(M);
  CHECK(t0.live == 0 && t0.wrong_sizes == 0);
  long k = first_k(), covered = 0;
  for (; k > 0; k = next_k(k, 2000, 7)) {
    tracker t = {0};
    output o = {0};
    M = open_tracked(&t, &o);
    if (!M) break;
    arm(&t, k);
    masq_status st = masq_eval(M, src, strlen(src), name, 0);
    int reached = disarm(&t);
    int bad = !(st == expect || (reached && st == MASQ_ERR_MEMORY)) ||
              !masq_last_error(M)->message[0];
    if (bad) fprintf(stderr, "%s, failing allocation %ld: status %d\n", name, k, (int)st);
    o.len = 0;
    st = masq_eval(M, src, strlen(src), name, 0);
    if (st != expect || strcmp(masq_last_error(M)->rendered, want) != 0 ||
        strcmp(o.text ? o.text : "", clean.text ? clean.text : "") != 0) {
      fprintf(stderr, "%s, failing allocation %ld: then status %d, %s", name, k, (int)st,
              masq_last_error(M)->rendered);
      bad = 1;
    }
    masq_close(M);
    if (t.live || t.bytes || t.wrong_sizes) {
      fprintf(stderr, "%s, failing allocation %ld: %ld blocks (%zu bytes) live after close, "
                      "%ld wrong sizes\n", name, k, t.live, t.bytes, t.wrong_sizes);
      bad = 1;
    }
    free(o.text);
    covered++;
    if (bad) failed++;
    else passed++;
    if (!reached || failed > 20) break;
  }
  free(clean.text);
  return covered;
}

/* (d) A failed allocation while freed tensor buffers are kept for reuse:
 * masq gives those back to the allocator and asks again, so the eval
 * succeeds. */
static void test_cache_retry(void) {
  tracker t = {0};
  output o = {0};
  masq_state *M = open_tracked(&t, &o);
  CHECK(M != NULL);
  if (!M) return;
  CHECK(eval_text(M, "big = ones(1000, 1000)\nbig = 0", 0) == MASQ_OK); /* 4 MB, then cached */
  size_t before = t.bytes;
  arm(&t, 1);
  t.fail_n = 1; /* the retry after giving the cache back succeeds */
  CHECK(eval_text(M, "print(sum(ones(10)))", 0) == MASQ_OK);
  CHECK(disarm(&t));
  CHECK(o.text && strcmp(o.text, "tensor(10.)\n") == 0);
  CHECK(t.bytes + 3000000 < before); /* the cached buffer went back */
  masq_close(M);
  CHECK(t.live == 0 && t.bytes == 0 && t.wrong_sizes == 0);
  free(o.text);
}

static const char *runtime_error_src =
    "fn inner(x, n) {\n"
    "  if n == 0 { return x + ones(3) }\n"
    "  return inner(x, n - 1)\n"
    "}\n"
    "fn outer(v) = inner(v * 2, 12)\n"
    "print(\"before\", [1, \"two\"])\n"
    "outer(masked([1.0, 2.0], [true, false]))\n";

/* Dicts, comprehensions and no_grad, then a missing key. */
static const char *dict_error_src =
    "d = {\"a\": [1, \"x\"], \"b\": {\"c\": 3}}\n"
    "d[\"self\"] = d\n"
    "for i in range(40) { d[str(i)] = [j * i for j in range(3)] }\n"
    "e = {k: len(k) for k in keys(d) if k != \"a\"}\n"
    "no_grad { print(d[\"b\"], len(e), items(e)[0], d == e) }\n"
    "print(d[\"sefl\"])\n";

static const char *syntax_error_src =
    "x = [1, 2\n"
    "fn f(a, = 3\n"
    "y = )\n";

int main(void) {
  long open_k = test_open();
  printf("oom: masq_open covered every k up to %ld%s\n", open_k,
         SANITIZED && open_k > 2000 ? " (every 7th past 2000)" : "");

  char dir[] = "/tmp/masq_oom_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char *script = make_script(dir);
  CHECK(script != NULL);
  if (script) {
    long covered = 0, last = 0;
    test_script(script, &covered, &last);
    printf("oom: the script covered %ld values of k, up to %ld%s\n", covered, last,
           SANITIZED && last > 2000 ? " (every k to 2000, then every 7th)" : " (every k)");
  }
  free(script);
  long rt = test_failing("runtime.masq", runtime_error_src, MASQ_ERR_RUNTIME);
  long sy = test_failing("syntax.masq", syntax_error_src, MASQ_ERR_SYNTAX);
  long di = test_failing("dict.masq", dict_error_src, MASQ_ERR_RUNTIME);
  printf("oom: a runtime error covered %ld values of k, a syntax error %ld, dicts %ld\n", rt, sy, di);
  test_cache_retry();
  char path[64];
  snprintf(path, sizeof path, "%s/b.npz", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/all.npz", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/t.csv", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/t2.csv", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/helper.masq", dir);
  unlink(path);
  CHECK(rmdir(dir) == 0); /* nothing else left: no writer's temporary either */
  return report("oom");
}
