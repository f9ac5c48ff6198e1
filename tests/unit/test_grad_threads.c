/* test_grad_threads.c - every differentiable op's gradient is the same
 * bits whatever the thread count and whichever CPU path runs (issue 16).
 *
 * The cases come from the op lists themselves: every row of
 * runtime/kernels/ops_unary.h, ops_binary.h and ops_reduce.h (reductions over
 * every dim and along each) whose derivative is a D(...), and every scan
 * row, so a new row is checked without anyone writing its case; the ops
 * that are not rows (softmax and its kin, var/std/norm/median, matmul,
 * the data movements, where, masked_fill, the nn ops) are listed below.
 *
 * Each case is a loss over masked inputs of 1024 x 1536 entries (more
 * than 1.5 MQ_PAR_MIN_ELEMS, so three threads split a kernel that splits;
 * masks random, with whole rows and columns masked out), in float32 and in
 * float64. Its gradients (data bytes, and mask bytes) are computed on the
 * portable path on one thread, then on the other paths on 2 and 3 threads
 * (runs()), the forward pass included, and must be the same bits: a
 * difference prints the op, the dtype, the path and thread count, and the
 * first entry that differs. Under AddressSanitizer or ThreadSanitizer:
 * 1024 x 1040 entries (two threads), and one run besides the reference.
 *
 * While working: GRAD_THREADS_ONLY=NAME checks the cases of one op,
 * GRAD_THREADS_TIME=1 prints each case's time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../include/masq.h"
#include "../../runtime/tensor/cpu.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/kernels/ops_binary.h"
#include "../../runtime/kernels/ops_reduce.h"
#include "../../runtime/kernels/ops_unary.h"

#include "unit.h"
#include "grad_rows.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SLOW 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SLOW 1
#endif
#endif
#ifndef SLOW
#define SLOW 0
#endif
/* the inputs' columns: 1024 x 1536 entries split over three threads,
 * 1024 x 1040 (just over MQ_PAR_MIN_ELEMS) over two */
#define N1 (SLOW ? 1040 : 1536)

/* The inputs, per dtype (suffix 32 or 64), in the dict G: D_<dom> the
 * first operand in the row's domain, E_<dom> a second one (other values,
 * the same mask: masked operands of a binary op must agree), B_<dom> a
 * row to broadcast, W a plain weight of the input's shape, W0 / W1 of the
 * result of a reduction along dim 0 / 1; IDX, TGT indices, C a
 * condition, KM a key mask. */
static const char *const setup =
    "seed(16)\n"
    "n0 = 1024\n"
    "n1 = N1\n"
    "fn holes(m) {\n"
    "  m = m & unsqueeze(arange(n0) % 97 != 5, 1)\n" /* rows masked out */
    "  return m & (arange(n1) % 89 != 7)\n"          /* columns masked out */
    "}\n"
    "mk = holes(rand(n0, n1) < 0.7)\n"
        "mkb = rand(n1) < 0.8\n"
    "fn doms(u, m, p) {\n"
    "  for d in [[\"ANY\", (u - 0.5) * 4], [\"POS\", u * 1.5 + 0.5], [\"UNIT\", (u - 0.5) * 1.8],\n"
    "            [\"GT1\", u * 2 + 1.2], [\"PROB\", u * 0.8 + 0.1], [\"CONV\", (u - 0.5) * 4],\n"
    "            [\"NEAR1\", u * 0.02 + 0.99]] {\n"
    "    v = masked(d[1], m)\n"
    "    set(p + d[0] + \"_32\", v)\n"
    "    set(p + d[0] + \"_64\", double(v))\n"
    "  }\n"
    "}\n"
    "G = {}\n"
    "fn set(k, v) { G[k] = v }\n"
    "doms(rand(n0, n1), mk, \"D_\")\n"
    "doms(rand(n0, n1), mk, \"E_\")\n"
    "doms(rand(n1), mkb, \"B_\")\n"
    "w = rand(n0, n1) - 0.25\n"
    "w0 = rand(n1)\n"
    "w1 = rand(n0)\n"
    "for p in [[\"W\", w], [\"W0\", w0], [\"W1\", w1]] {\n"
    "  set(p[0] + \"_32\", p[1])\n"
    "  set(p[0] + \"_64\", double(p[1]))\n"
    "}\n"
    "IDX = long(rand(n0, 7) * n1)\n"
    "TGT = long(rand(n0) * n1)\n"
    "C = rand(n0, n1) < 0.5\n"
    "KM = reshape(arange(64), 1, 1, 64) < reshape(long(rand(128) * 64) + 1, 128, 1, 1)\n";

/* --- the cases -------------------------------------------------------------- */

/* A loss in X (and Y, if it names it) and the weights; its inputs' domains. */
typedef struct gcase {
  char name[64];
  char loss[512];
  const char *dom, *domb; /* domb NULL: one input, X */
  char yset;              /* 'E': Y another full operand, 'B': a row to broadcast */
} gcase;

#define MAXCASES 256
static gcase cases[MAXCASES];
static int ncases;

/* The case [name]: the loss pre mid post. */
static void add(const char *name, const char *dom, const char *domb, char yset, const char *pre,
                const char *mid, const char *post) {
  if (ncases == MAXCASES) {
    CHECK(!"too many cases: raise MAXCASES");
    return;
  }
  gcase *c = &cases[ncases++];
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->loss, sizeof c->loss, "%s%s%s", pre, mid, post);
  c->dom = dom, c->domb = domb, c->yset = yset;
}

static void row_cases(void) {
  char buf[128], loss[256];
#define X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, dom, ...) \
  if (HAS_##deriv) add(name, #dom, NULL, 0, "sum(", unary_call(#E, name, buf, sizeof buf), " * W)");
  MQ_UNARY_OPS(X)
#undef X
#define X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, doma, domb, ...) \
  if (HAS_##deriv) {                                                                \
    const char *call = binary_call(#E, name, buf, sizeof buf);                      \
    add(name, #doma, #domb, 'E', "sum(", call, " * W)");                              \
    snprintf(loss, sizeof loss, "%s (broadcast)", name);                            \
    add(loss, #doma, #domb, 'B', "sum(", call, " * W)");                              \
  }
  MQ_BINARY_OPS(X)
#undef X
  /* reductions over every dim and along each; prod near 1 (no overflow) */
#define X(E, name, bind, deriv, ...)                                           \
  if (HAS_##deriv) {                                                           \
    const char *dom = !strcmp(#E, "PROD") ? "NEAR1" : "ANY";                   \
    add(name, dom, NULL, 0, "", name, "(X) * 3");                                \
    add(name, dom, NULL, 0, "sum(", name, "(X, 0) * W0)");                       \
    add(name, dom, NULL, 0, "sum(", name, "(X, 1) * W1)");                       \
  }
  MQ_REDUCE_OPS(X)
#undef X
  /* scans: cumprod's derivative is quadratic in the length: short rows */
#define X(E, name, prod, ...)                                                  \
  add(name, prod ? "NEAR1" : "ANY", NULL, 0, "sum(", name,                    \
      "(reshape(X, n0 * n1 // 8, 8), 1) * reshape(W, n0 * n1 // 8, 8))");                  \
  add(name, prod ? "NEAR1" : "ANY", NULL, 0, "sum(", name,                    \
      "(reshape(X, 8, n0 * n1 // 8), 0) * reshape(W, 8, n0 * n1 // 8))");
  MQ_SCAN_OPS(X)
#undef X
}

/* The ops that are not rows: [name, loss, its domains, Y's kind]. */
static const struct {
  const char *name, *loss, *dom, *domb;
  char yset;
} other[] = {
    {"softmax", "sum(softmax(X, 1) * W)", "ANY", NULL, 0},
    {"softmax", "sum(softmax(X, 0) * W)", "ANY", NULL, 0},
    {"log_softmax", "sum(log_softmax(X, 1) * W)", "ANY", NULL, 0},
    {"log_softmax", "sum(log_softmax(X, 0) * W)", "ANY", NULL, 0},
    {"softmin", "sum(softmin(X, 1) * W)", "ANY", NULL, 0},
    {"softmin", "sum(softmin(X, 0) * W)", "ANY", NULL, 0},
    {"var", "var(X) * 3", "ANY", NULL, 0},
    {"var", "sum(var(X, 0) * W0)", "ANY", NULL, 0},
    {"std", "sum(std(X, 1) * W1)", "ANY", NULL, 0},
    {"norm", "sum(norm(X, dim=1) * W1)", "ANY", NULL, 0},
    {"norm", "sum(norm(X, 1, dim=0) * W0)", "ANY", NULL, 0},
    {"norm", "norm(X, inf) * 3", "ANY", NULL, 0},
    {"median", "sum(median(X, 1) * W1)", "ANY", NULL, 0},
    {"logcumsumexp", "sum(logcumsumexp(X, 1) * W)", "ANY", NULL, 0},
    {"logcumsumexp", "sum(logcumsumexp(X, 0) * W)", "ANY", NULL, 0},
    {"max", "sum(max(X, 1)[0] * W1)", "ANY", NULL, 0},
    {"matmul", "sum((X @ transpose(Y, 0, 1)[:, 0:5]) * W[:, 0:5])", "ANY", "ANY", 'E'},
    {"matmul", "sum((transpose(X, 0, 1) @ Y[:, 0:6]) * transpose(W, 0, 1)[:, 0:6])", "ANY", "ANY", 'E'},
    {"matmul", "sum((reshape(X, 64, 16, n1) @ reshape(Y, 64, n1, 16)) * W[0:16, 0:16])",
     "ANY", "ANY", 'E'},
    /* an infinity: the term-by-term path */
    {"matmul", "sum((where(arange(n0 * n1).reshape(n0, n1) % 100003 == 777, inf, X) @ transpose(Y, 0, 1)[:, 0:5]) * W[:, 0:5])",
     "ANY", "ANY", 'E'},
    /* one operand broadcast over the other's batches */
    {"matmul", "sum((reshape(X, 64, 16, n1) @ transpose(Y, 0, 1)[:, 0:16]) * W[0:16, 0:16])", "ANY", "ANY", 'E'},
    {"matmul", "sum((X[0:16] @ reshape(Y, 64, n1, 16)) * W[0:16, 0:16])", "ANY", "ANY", 'E'},
    {"transpose", "sum(contiguous(transpose(X, 0, 1)) * transpose(W, 0, 1))", "ANY", NULL, 0},
    {"reshape", "sum(reshape(X, n1, n0) * reshape(W, n1, n0))", "ANY", NULL, 0},
    {"flip", "sum(flip(X, 1) * W)", "ANY", NULL, 0},
    {"roll", "sum(roll(X, 5, 0) * W)", "ANY", NULL, 0},
    {"index", "sum(X[1:1000:3, 7:1000] * W[0:333, 0:993])", "ANY", NULL, 0},
    {"cat", "sum(cat([X, Y], 1) * cat([W, W], 1))", "ANY", "ANY", 'E'},
    {"stack", "sum(stack([X, Y]) * W)", "ANY", "ANY", 'E'},
    {"expand", "sum(expand(Y, n0, n1) * W) + sum(X)", "ANY", "ANY", 'B'},
    {"tril", "sum(tril(X) * W)", "ANY", NULL, 0},
    {"diff", "sum(diff(X) * W[:, 1:])", "ANY", NULL, 0},
    {"diff", "sum(diff(X, prepend=X[:, 0:2]) * cat([W[:, 0:1], W], 1))", "ANY", NULL, 0},
    {"kthvalue", "sum(kthvalue(X, 5, 1)[0] * W1)", "ANY", NULL, 0},
    {"quantile", "sum(quantile(X, 0.3, 1) * W1)", "ANY", NULL, 0},
    {"quantile", "sum(nanquantile(X, [0.5, 0.9], 0, interpolation=\"midpoint\")[1] * W0)", "ANY", NULL, 0},
    {"diagonal", "sum(diagonal(X, 3) * W1)", "ANY", NULL, 0},
    {"gather", "sum(gather(X, 1, IDX) * W[:, 0:7])", "ANY", NULL, 0},
    {"index_select", "sum(index_select(X, 1, TGT[0:300]) * W[:, 0:300])", "ANY", NULL, 0},
    {"scatter_add", "sum(scatter_add(X, 1, IDX, Y[:, 0:7]) * W)", "ANY", "ANY", 'E'},
    {"where", "sum(where(C, X, Y) * W)", "ANY", "ANY", 'E'},
    {"where (broadcast)", "sum(where(C, X, Y) * W)", "ANY", "ANY", 'B'},
    {"masked_fill", "sum(masked_fill(X, C, 0.5) * W)", "ANY", NULL, 0},
    {"get_data", "sum(get_data(X) * W)", "ANY", NULL, 0},
    {"to_tensor", "sum(to_tensor(X, 0.5) * W)", "ANY", NULL, 0},
    {"as_masked", "sum(as_masked(get_data(X), C) * W)", "ANY", NULL, 0},
    {"conversion", "sum(double(X) * W)", "ANY", NULL, 0},
    {"clone", "sum(clone(X) * W)", "ANY", NULL, 0},
    {"layer_norm", "sum(layer_norm(X, [n1]) * W)", "ANY", NULL, 0},
    {"normalize", "sum(normalize(X) * W)", "ANY", NULL, 0},
    {"mse_loss", "mse_loss(X, Y) * 3", "ANY", "ANY", 'E'},
    {"l1_loss", "l1_loss(X, Y) * 3", "ANY", "ANY", 'E'},
    {"binary_cross_entropy", "binary_cross_entropy(X, Y) * 3", "PROB", "PROB", 'E'},
    {"binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits(X, Y) * 3", "ANY", "PROB", 'E'},
    {"cross_entropy", "cross_entropy(X, TGT) * 3", "ANY", NULL, 0},
    {"nll_loss", "nll_loss(log_softmax(X, 1), TGT) * 3", "ANY", NULL, 0},
    {"dropout", "sum(dropout(X, 0.3, 7) * W)", "ANY", NULL, 0},
    {"einsum", "sum(einsum(\"ij,ij->i\", X, Y) * W1)", "ANY", "ANY", 'E'},
    {"sum of a product", "sum(X * Y)", "ANY", "ANY", 'E'},
    /* masked attention (fused where the compiler fuses it) */
    {"attention",
     "sum((softmax(as_masked(reshape(get_data(X)[0:512], 128, 64, n1 // 16) @ transpose(reshape(get_data(Y)[0:512], 128, "
     "64, n1 // 16), -2, -1) / 8, KM), -1) @ reshape(get_data(Y)[512:], 128, 64, n1 // 16)) * reshape(W[0:512], 128, 64, n1 // 16))",
     "ANY", "ANY", 'E'},
    {"attention builtin",
     "sum(attention(reshape(get_data(X)[0:512], 128, 64, n1 // 16), reshape(get_data(Y)[0:512], 128, 64, "
     "n1 // 16), reshape(get_data(Y)[512:], 128, 64, n1 // 16), KM, 8) * reshape(W[0:512], 128, 64, n1 // 16))",
     "ANY", "ANY", 'E'},
    {"accumulation", "sum(exp(X) * W) + sum(X * Y) + sum(double(Y) * W)", "ANY", "ANY", 'E'},
};

/* --- running and comparing ------------------------------------------------- */


/* The runs: the reference (portable, 1 thread), then 2 and 3 threads on
 * the next paths (the fastest once there are no more), so every path and
 * every thread count is compared with the reference, and every run differs
 * from it in both (a difference names the run; narrow it down with
 * set_cpu_path and set_num_threads). Under AddressSanitizer, the
 * reference and the fastest path on 3 threads. */
typedef struct run {
  int cpu, threads;
} run;

static int runs(run *r) {
  int best = mq_cpu_best();
  r[0] = (run){MQ_CPU_PORTABLE, 1};
  if (SLOW) {
    r[1] = (run){best, 3};
    return 2;
  }
  int n = 1;
  for (int t = 2; t <= 3 || n <= best; t++, n++) r[n] = (run){n < best ? n : best, t <= 3 ? t : 3};
  return n;
}

static void check_case(const gcase *c, int bits) {
  char src[2048], what[700];
  snprintf(what, sizeof what, "%s: %s, float%d", c->name, c->loss, bits);
  int nin = c->domb ? 2 : 1;
  char yline[96] = "Y = none\n";
  if (c->domb) snprintf(yline, sizeof yline, "Y = requires_grad(G[\"%c_%s_%d\"])\n", c->yset, c->domb, bits);
  snprintf(src, sizeof src,
           "X = requires_grad(G[\"D_%s_%d\"])\n%s"
           "W = G[\"W_%d\"]\nW0 = G[\"W0_%d\"]\nW1 = G[\"W1_%d\"]\n",
           c->dom, bits, yline, bits, bits, bits);
  if (!eval(src, what)) {
    failed++;
    return;
  }
  run r[MQ_CPU__COUNT + 2];
  int nr = runs(r);
  gbytes ref[2] = {{0}}, got[2] = {{0}};
  for (int k = 0; k < nr; k++) {
    snprintf(src, sizeof src,
             "set_cpu_path(\"%s\")\nset_num_threads(%d)\nseed(5)\n"
             "GR = grad(%s, %s)\nG0 = GR[0]\n%s",
             mq_cpu_name(r[k].cpu), r[k].threads, c->loss, nin == 2 ? "[X, Y]" : "[X]",
             nin == 2 ? "G1 = GR[1]\n" : "");
    if (!eval(src, what)) {
      failed++;
      break;
    }
    gbytes *into = k ? got : ref;
    bool ok = true;
    for (int i = 0; i < nin; i++) ok &= grab(i ? "G1" : "G0", &into[i]);
    if (!ok) {
      printf("FAIL %s: no gradient to read\n", what);
      failed++;
    }
    for (int i = 0; ok && k && i < nin; i++) {
      int64_t at = differ(&ref[i], &got[i]);
      if (at == -1) {
        passed++;
        continue;
      }
      failed++;
      printf("FAIL %s: the gradient of %s on the %s path, %d threads, differs from the portable "
             "path's on 1 thread (first at entry %lld)\n",
             what, i ? "Y" : "X", mq_cpu_name(r[k].cpu), r[k].threads, (long long)at);
    }
    for (int i = 0; k && i < nin; i++) gfree(&got[i]);
    if (!ok) break;
  }
  for (int i = 0; i < nin; i++) gfree(&ref[i]);
}

static void tests(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  char src[4096];
  snprintf(src, sizeof src, "N1 = %d\n%s", N1, setup);
  if (!eval(src, "setup")) {
    failed++;
    return;
  }
  row_cases();
  for (size_t i = 0; i < sizeof other / sizeof *other; i++)
    add(other[i].name, other[i].dom, other[i].domb, other[i].yset, "", other[i].loss, "");
  const char *only = getenv("GRAD_THREADS_ONLY"); /* one op by name, while working */
  for (int i = 0; i < ncases; i++) {
    if (only && strcmp(only, cases[i].name)) continue;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    check_case(&cases[i], 32);
    check_case(&cases[i], 64);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (getenv("GRAD_THREADS_TIME"))
      printf("%8.1f ms %s: %s\n", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
             cases[i].name, cases[i].loss);
  }
  eval("set_cpu_path(cpu_paths()[-1])\nset_num_threads(2)\n", "reset");
}

int main(void) { return unit_main("test_grad_threads", tests); }
