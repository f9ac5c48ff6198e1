/* test_sparse_grad.c - gradients of sparse tensors against central finite
 * differences, in float64, on random 2-D masked COO and CSR tensors
 * (random structure, random masks, empty rows included).
 *
 * For a loss L(x) built from the sparse ops, grad(L, x) must be a sparse
 * tensor sharing x's index tensors, valid exactly at x's valid entries
 * (every loss below reads every valid entry), with the value
 * (L(x + h e_k) - L(x - h e_k)) / 2h at each; a dense operand's gradient
 * must match its finite differences wherever it is valid, and be masked
 * out only where L does not depend on the entry. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/autograd/autograd.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/sparse/sparse.h"

#include "unit.h"

static int reported;
static uint64_t rng = 0x8c2a7e91d3b45f07u;

static double urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1.0p-53;
}

static void check(bool ok, const char *name, int round, const char *what, double got,
                  double want) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  if (reported++ < 20)
    printf("FAIL sparse grad %s round %d: %s (got %.9g, want %.9g)\n", name, round, what, got,
           want);
}

/* the dense operands of the losses: W (3 x 5 weights), B (5 x 2), A (3 x 4), C (4 x 5);
 * Mw: a random 3 x 5 bool mask= (true at positions x may not store) */
static mq_tensor *Wt, *Bt, *At, *Ct, *Pat, *Mw;

static mq_tensor *rand_dense(int64_t r, int64_t c) {
  int64_t sh[2] = {r, c};
  mq_tensor *t = mq_tensor_new(S, MQ_DT_F64, 2, sh);
  double *p = mq_tensor_data(t);
  for (int64_t i = 0; i < t->numel; i++) p[i] = urand() * 2 - 1;
  return t;
}

static mq_tensor *total(mq_tensor *t) {
  if (t->sparse) return mq_sparse_reduce(S, MQ_SRED_SUM, t, (1u << t->ndim) - 1, false, "sum");
  return mq_reduce(S, MQ_RED_SUM, t, 0, NULL, false);
}

static mq_tensor *weighted(mq_tensor *t) { /* sum(t * w), t strided */
  mq_tensor *w = mq_tensor_new(S, MQ_DT_F64, t->ndim, t->shape);
  double *p = mq_tensor_data(w);
  for (int64_t i = 0; i < w->numel; i++) p[i] = 0.5 + (double)(i % 3);
  return total(mq_binary(S, MQ_BIN_MUL, t, w));
}

/* the losses; [d] is the dense operand whose gradient is also checked, or NULL */
static mq_tensor *l_unary(mq_tensor *x, mq_tensor *d) {
  (void)d;
  mq_tensor *e = mq_sparse_unary(S, MQ_UN_SIN, x, "sin");
  return total(mq_sparse_binary(S, MQ_BIN_MUL, e, Wt, "*"));
}
static mq_tensor *l_same(mq_tensor *x, mq_tensor *d) {
  (void)d;
  mq_tensor *xx = mq_sparse_binary(S, MQ_BIN_MUL, x, x, "*");
  mq_tensor *r = mq_sparse_binary(S, MQ_BIN_SUB, xx, mq_sparse_binary(S, MQ_BIN_DIV, x, mq_tensor_scalar(S, MQ_DT_F64, 3), "/"), "-");
  return total(r);
}
static mq_tensor *l_dense_operand(mq_tensor *x, mq_tensor *d) {
  return total(mq_sparse_binary(S, MQ_BIN_MUL, x, d, "*"));
}
static mq_tensor *l_sum1(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return weighted(mq_sparse_reduce(S, MQ_SRED_SUM, x, 2, false, "sum"));
}
static mq_tensor *l_mean0(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return weighted(mq_sparse_reduce(S, MQ_SRED_MEAN, x, 1, true, "mean"));
}
static mq_tensor *l_amax1(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return weighted(mq_sparse_reduce(S, MQ_SRED_AMAX, x, 2, false, "amax"));
}
static mq_tensor *l_amin0(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return weighted(mq_sparse_reduce(S, MQ_SRED_AMIN, x, 1, false, "amin"));
}
static mq_tensor *l_prod1(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return weighted(mq_sparse_reduce(S, MQ_SRED_PROD, x, 2, false, "prod"));
}
static mq_tensor *l_softmax(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return total(mq_sparse_binary(S, MQ_BIN_MUL, mq_sparse_softmax(S, x, 1, false, -1, "softmax"),
                                Wt, "*"));
}
static mq_tensor *l_log_softmax(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return total(mq_sparse_binary(S, MQ_BIN_MUL, mq_sparse_softmax(S, x, 1, true, -1, "log_softmax"),
                                Wt, "*"));
}
static mq_tensor *l_spmm(mq_tensor *x, mq_tensor *d) {
  return weighted(mq_sparse_matmul(S, x, d));
}
static mq_tensor *l_to_dense(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return weighted(mq_unary(S, MQ_UN_EXP, mq_sparse_to_dense(S, x)));
}
static mq_tensor *l_sddmm_a(mq_tensor *x, mq_tensor *d) { /* x unused: A is the leaf */
  (void)x;
  mq_tensor *r = mq_sparse_masked_matmul(S, d, Ct, Pat);
  return total(mq_sparse_binary(S, MQ_BIN_MUL, r, r, "*"));
}

/* mask= on a sparse x (torch.masked's _where): x read on Mw's true positions */
static mq_tensor *l_where_amax0(mq_tensor *x, mq_tensor *d) {
  (void)d;
  return weighted(mq_sparse_reduce(S, MQ_SRED_AMAX, mq_sparse_where(S, x, Mw, "amax"), 1, false,
                                   "amax"));
}
static mq_tensor *l_where_softmax(mq_tensor *x, mq_tensor *d) {
  (void)d;
  mq_tensor *m = x->layout == MQ_LAYOUT_CSR ? mq_to_sparse_coo(S, Mw) : mq_to_sparse_csr(S, Mw);
  mq_tensor *r = mq_sparse_softmax(S, mq_sparse_where(S, x, m, "softmax"), 1, false, -1, "softmax");
  return total(mq_sparse_binary(S, MQ_BIN_MUL, r, Wt, "*"));
}
/* as_masked(x, m) with m of another pattern: x read on m's positions */
static mq_tensor *l_as_masked_other(mq_tensor *x, mq_tensor *d) {
  (void)d;
  mq_tensor *m = x->layout == MQ_LAYOUT_CSR ? mq_to_sparse_csr(S, Mw) : mq_to_sparse_coo(S, Mw);
  return weighted(mq_sparse_reduce(S, MQ_SRED_SUM, mq_sparse_as_masked(S, x, m), 2, false, "sum"));
}

/* selections (sparse_index.c): rows, then columns (CSR's binary search), each
 * read once with its own weight; index_select repeats and reorders
 * columns, narrow and a stepped slice read some entries again */
static mq_tensor *weighted_sum(mq_tensor *acc, mq_tensor *part, double w) {
  /* a part with no valid entry sums to masked out; it adds 0 */
  mq_tensor *sum = mq_to_tensor(S, total(mq_sparse_unary(S, MQ_UN_SIN, part, "sin")), 0);
  mq_tensor *p = mq_binary(S, MQ_BIN_MUL, sum, mq_tensor_scalar(S, MQ_DT_F64, w));
  return acc ? mq_binary(S, MQ_BIN_ADD, acc, p) : p;
}
static mq_tensor *l_select_rows(mq_tensor *x, mq_tensor *d) {
  (void)d;
  mq_tensor *acc = NULL;
  for (int i = 0; i < 3; i++) acc = weighted_sum(acc, mq_sparse_select(S, x, 0, i - 3), i + 1);
  return acc;
}
static mq_tensor *l_select_cols(mq_tensor *x, mq_tensor *d) {
  (void)d;
  mq_tensor *acc = NULL;
  for (int j = 0; j < 5; j++) acc = weighted_sum(acc, mq_sparse_select(S, x, 1, j), 0.5 + j);
  return acc;
}
static mq_tensor *l_index_select(mq_tensor *x, mq_tensor *d) {
  int64_t six = 6, at[6] = {4, 0, 2, 3, 1, 0};
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 1, &six);
  memcpy(mq_tensor_data(ix), at, sizeof at);
  mq_tensor *r = mq_sparse_index_select(S, x, 1, ix);
  mq_tensor *acc = total(mq_sparse_binary(S, MQ_BIN_MUL, r, d, "*"));
  mq_index_item it[2];
  memset(it, 0, sizeof it);
  it[0].kind = it[1].kind = MQ_IX_SLICE;
  it[0].has_step = true, it[0].step = 2, it[1].has_start = true, it[1].start = -4;
  acc = weighted_sum(acc, mq_sparse_index(S, x, it, 2), 3);
  return weighted_sum(acc, mq_sparse_narrow(S, x, 0, 1, 2), -2);
}

typedef struct lcase {
  const char *name;
  mq_tensor *(*f)(mq_tensor *x, mq_tensor *d);
  int dense; /* 0: none; 1: W (3 x 5); 2: B (5 x 2); 3: A (3 x 4), x not a leaf; 4: 3 x 6 */
  bool masked_only; /* refuses a plain x (softmax) */
  bool under_mw;    /* a plain x read under Mw: an entry's gradient is valid iff Mw is there */
} lcase;

static const lcase cases[] = {
    {"sin * W", l_unary, 0},        {"x*x - x/3", l_same, 0},   {"x * D", l_dense_operand, 1},
    {"sum dim 1", l_sum1, 0},       {"mean dim 0", l_mean0, 0}, {"amax dim 1", l_amax1, 0},
    {"amin dim 0", l_amin0, 0},     {"prod dim 1", l_prod1, 0},     {"softmax", l_softmax, 0, true},  {"log_softmax", l_log_softmax, 0, true},
    {"x @ B", l_spmm, 2},           {"to_dense", l_to_dense, 0}, {"masked_matmul", l_sddmm_a, 3},
    {"amax dim 0, mask=", l_where_amax0, 0, false, true},
    {"softmax, a sparse mask= of the other layout", l_where_softmax, 0, false, true},
    {"as_masked, a mask of another pattern", l_as_masked_other, 0, false, true},
    {"select rows", l_select_rows, 0}, {"select columns", l_select_cols, 0},
    {"index_select, slices, narrow", l_index_select, 4},
};

static double item(mq_tensor *t) { return mq_tensor_item(S, mq_get_data(S, t)); }

/* L with the k-th entry of [vals] (x's values or d's data) moved by [dx]. */
static double loss_at(const lcase *c, mq_tensor *x, mq_tensor *d, mq_tensor *vals, int64_t k,
                      double dx) {
  double *p = mq_tensor_data(vals), keep = p[k];
  p[k] = keep + dx;
  double l = item(c->f(x, d));
  p[k] = keep;
  return l;
}

static bool close(double a, double b) { return fabs(a - b) <= 1e-6 * (1 + fabs(b)); }

static void one_case(const lcase *c, int round, bool csr, bool plain_x) {
  if (c->under_mw && !plain_x) plain_x = true; /* mask= and as_masked(x, m) take a plain x */
  /* x: 3 x 5, each position stored with probability 0.5, valid with 0.75
   * (or plain: every entry valid, the unstored ones zeros) */
  int64_t sh[2] = {3, 5}, n = 0, keys[15];
  for (int64_t i = 0; i < 15; i++)
    if (urand() < 0.5) keys[n++] = i;
  mq_tensor *vals = mq_tensor_new(S, MQ_DT_F64, 1, &n), *mv = mq_tensor_new(S, MQ_DT_BOOL, 1, &n);
  double *pv = mq_tensor_data(vals);
  uint8_t *pm = mq_tensor_data(mv);
  for (int64_t k = 0; k < n; k++) pv[k] = urand() * 2 - 1, pm[k] = plain_x || urand() < 0.75;
  mq_tensor *like = mq_tensor_new(S, MQ_DT_F64, 2, sh);
  like->layout = csr ? MQ_LAYOUT_CSR : MQ_LAYOUT_COO; /* only read for layout and shape */
  mq_tensor *plain = mq_sparse_of_keys(S, like, keys, n, vals);
  mq_tensor *x = plain_x ? plain : mq_sparse_masked(S, plain, mq_sparse_with_values(S, plain, mv, NULL));
  mq_tensor *d = c->dense == 1 ? rand_dense(3, 5) : c->dense == 2 ? Bt : c->dense == 3 ? At
                 : c->dense == 4 ? rand_dense(3, 6) : NULL;
  Pat = x;
  mq_tensor *xl = c->dense == 3 ? x : mq_ag_leaf(S, x, true, "test");
  mq_tensor *dl = d ? mq_ag_leaf(S, d, true, "test") : NULL;
  mq_tensor *ins[2] = {xl, dl}, *g[2] = {NULL, NULL};
  int first = c->dense == 3 ? 1 : 0, nin = d ? 2 : 1;
  mq_grad(S, c->f(xl, dl ? dl : d), ins + first, nin - first, false, g + first);
  mq_tensor *xvals = x->sparse->values; /* shared by xl: moved in place */
  if (first == 0) {
    mq_tensor *gx = g[0];
    check(gx->sparse && gx->sparse->indices == x->sparse->indices &&
              gx->sparse->crow == x->sparse->crow,
          c->name, round, "the gradient shares x's index tensors", 0, 0);
    const double *gv = mq_tensor_data(gx->sparse->values);
    const uint8_t *gm = gx->mask ? mq_tensor_data(gx->mask->sparse->values) : NULL;
    for (int64_t k = 0; k < n; k++) {
      bool valid = !gm || gm[k];
      if (c->under_mw) {
        bool want = ((const uint8_t *)mq_tensor_data(Mw))[keys[k]] != 0;
        check(valid == want, c->name, round, "gradient entry valid iff the mask is", valid, want);
      } else {
        check(!gm == plain_x, c->name, round, "masked iff x is", !gm, plain_x);
        check(valid == (pm[k] != 0), c->name, round, "gradient entry valid iff x's is", valid,
              pm[k]);
      }
      if (!valid) continue;
      double h = 1e-6 * (1 + fabs(pv[k]));
      double fd = (loss_at(c, x, d, xvals, k, h) - loss_at(c, x, d, xvals, k, -h)) / (2 * h);
      check(close(gv[k], fd), c->name, round, csr ? "csr entry" : "coo entry", gv[k], fd);
    }
  }
  if (d) {
    mq_tensor *gd = g[1];
    const double *gv = mq_tensor_data(gd);
    const uint8_t *gm = gd->mask ? mq_tensor_data(mq_contiguous(S, gd->mask)) : NULL;
    double *pd = mq_tensor_data(d);
    for (int64_t k = 0; k < d->numel; k++) {
      double h = 1e-6 * (1 + fabs(pd[k]));
      double fd = (loss_at(c, x, d, d, k, h) - loss_at(c, x, d, d, k, -h)) / (2 * h);
      if (gm && !gm[k]) check(fd == 0, c->name, round, "masked out only where L does not depend",
                              0, fd);
      else check(close(gv[k], fd), c->name, round, "dense operand", gv[k], fd);
    }
  }
}

static void all(mq_state *st, void *ud) {
  (void)st, (void)ud;
  Wt = rand_dense(3, 5), Bt = rand_dense(5, 2), At = rand_dense(3, 4), Ct = rand_dense(4, 5);
  for (int round = 0; round < 40; round++)
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
      size_t mark = mq_pool_mark(S);
      int64_t msh[2] = {3, 5};
      Mw = mq_tensor_new(S, MQ_DT_BOOL, 2, msh);
      for (int64_t k = 0; k < 15; k++) ((uint8_t *)mq_tensor_data(Mw))[k] = urand() < 0.6;
      one_case(&cases[i], round, round % 2, round % 3 == 2 && !cases[i].masked_only);
      mq_pool_drain(S, mark);
    }
}

int main(void) { return unit_main("test_sparse_grad", all); }
