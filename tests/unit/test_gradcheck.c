/* test_gradcheck.c - every differentiable builtin against central finite
 * differences, in float64, on random shapes (0-d, 1-d, 2-d, 3-d,
 * broadcasting pairs) and random masks, fully masked slices included.
 *
 * For an op f with inputs x1..xn, the check uses the loss
 *   L = sum(f(x1..xn) * w)        (w random, plain; in a quarter of the
 *                                  trials with a plain result, masked: an
 *                                  incoming gradient masked where the result
 *                                  is valid)
 * and compares grad(L, xi) with (L(xi + h e_j) - L(xi - h e_j)) / 2h at
 * every valid entry j. Masks are compared exactly against what the
 * gradient's mask must be: entry j has a gradient iff it is valid and L
 * depends on it, which is tested by setting x_j to NaN and seeing whether
 * L becomes NaN (NaN propagates through every op below, and masked-out
 * entries never reach L). And a gradient is masked exactly when f's result,
 * the input or w is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/autograd/autograd.h"
#include "../../runtime/kernels/gather.h"
#include "../../runtime/nn/nn.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/tensor/shape.h"
#include "../../runtime/kernels/shape_more.h"
#include "../../runtime/kernels/update.h"

#include "unit.h"

static int reported;
static uint64_t rng = 0x9e3779b97f4a7c15u;

static double urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1.0p-53;
}
static double nrand(void) {
  double u = 1 - urand(), v = urand();
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* --- op cases ------------------------------------------------------------- */

/* as the rows' dom column (runtime/kernels/ops_unary.h); CONV: a derivative by
 * convention that finite differences do not see (not checked) */
typedef enum domain { ANY, POS, UNIT, GT1, PROB, CONV } domain;

typedef enum shapes {
  ONE,    /* one input: 0-d, 1-d, 2-d, 3-d */
  ONE_ND, /* one input with at least one dim */
  PAIR,   /* two inputs, broadcasting pairs */
  SAME2,  /* two inputs of one shape */
  MATS,   /* matmul pairs */
  JOIN,   /* cat pairs */
  WITH0D  /* one input and a plain 0-d one */
} shapes;

typedef struct gcase {
  const char *name;
  int nin;
  domain dom[2];
  shapes sh;
  /* f(in, variant): the op; variant picks dims and the like */
  mq_tensor *(*f)(mq_tensor **in, int variant);
  bool nan_blind; /* NaN does not propagate (fmax): skip the mask check */
  double h;       /* the step, relative to 1 + |x|; 0: 1e-6 */
  int op;         /* a row's op (cur_op), with parameters [prm] (NULL: none) */
  const double *prm;
  bool diff;      /* a row: it has a derivative */
} gcase;

static int dims_of(const mq_tensor *t, int variant, int *dims) {
  if (t->ndim == 0 || variant % 3 == 0) return 0;
  dims[0] = variant % t->ndim;
  if (variant % 3 == 2 && t->ndim > 1) {
    dims[1] = (dims[0] + 1) % t->ndim;
    return 2;
  }
  return 1;
}

/* The rows of runtime/ops_*.h: every differentiable one is checked, on
 * inputs from its row's domain. [cur] is the row being checked. */
static int cur_op;
static const double *cur_prm;

static mq_tensor *f_unary_row(mq_tensor **in, int v) {
  (void)v;
  return mq_unary_p(S, (mq_unop)cur_op, in[0], cur_prm);
}
static mq_tensor *f_binary_row(mq_tensor **in, int v) {
  (void)v;
  return mq_binary(S, (mq_binop)cur_op, in[0], in[1]);
}
static mq_tensor *f_reduce_row(mq_tensor **in, int v);
static mq_tensor *f_scan_row(mq_tensor **in, int v) {
  return mq_cumulative(S, in[0], in[0]->ndim ? v % in[0]->ndim : 0, cur_op);
}

static mq_tensor *f_clamp(mq_tensor **in, int v) {
  mq_tensor *lo = mq_tensor_scalar(S, MQ_DT_F64, -0.5), *hi = mq_tensor_scalar(S, MQ_DT_F64, 0.7);
  return mq_clamp(S, in[0], v % 2 ? lo : NULL, hi);
}
static mq_tensor *f_logit_eps(mq_tensor **in, int v) {
  (void)v;
  double prm[3] = {0.2, NAN, NAN};
  return mq_unary_p(S, MQ_UN_LOGIT, in[0], prm);
}

static mq_tensor *f_pow2(mq_tensor **in, int v) { /* runs as x * x */
  (void)v;
  mq_tensor *two = mq_tensor_scalar(S, MQ_DT_F64, 2);
  two->weak = true;
  return mq_binary(S, MQ_BIN_POW, in[0], two);
}

/* a condition drawn once per shape, so that every evaluation sees it */
static mq_tensor *fixed_bool(int nd, const int64_t *shape, int variant) {
  mq_tensor *c = mq_tensor_new(S, MQ_DT_BOOL, nd, shape);
  uint8_t *p = mq_tensor_data(c);
  uint64_t x = 0x2545f4914f6cdd1du * (uint64_t)(variant + 1);
  for (int64_t i = 0; i < c->numel; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (x >> 20) & 1;
  }
  return c;
}

static mq_tensor *f_where(mq_tensor **in, int v) {
  int64_t shape[MQ_MAX_DIMS];
  int nd = mq_broadcast_shapes(S, in[0]->ndim, in[0]->shape, in[1]->ndim, in[1]->shape, shape);
  return mq_where(S, fixed_bool(nd, shape, v), in[0], in[1]);
}
static mq_tensor *f_masked_fill(mq_tensor **in, int v) {
  return mq_masked_fill(S, in[0], fixed_bool(in[0]->ndim, in[0]->shape, v), in[1]);
}

static mq_tensor *f_reduce_row(mq_tensor **in, int v) {
  int dims[2];
  int n = dims_of(in[0], v, dims);
  return mq_reduce(S, (mq_redop)cur_op, in[0], n, dims, v % 2 == 1);
}

static mq_tensor *f_var(mq_tensor **in, int v) {
  int dims[2];
  int n = dims_of(in[0], v, dims);
  return mq_var(S, in[0], n, dims, v % 2, v % 4 == 1, false);
}
static mq_tensor *f_std(mq_tensor **in, int v) {
  int dims[2];
  int n = dims_of(in[0], v, dims);
  return mq_var(S, in[0], n, dims, v % 2, v % 4 == 1, true);
}
static mq_tensor *f_norm(mq_tensor **in, int v) {
  static const double ps[] = {2, 1, 3, INFINITY, -INFINITY, 1.5};
  int dims[2];
  int n = dims_of(in[0], v, dims);
  return mq_norm(S, in[0], ps[v % 6], n, dims, v % 2 == 0);
}
static mq_tensor *f_median(mq_tensor **in, int v) {
  return mq_median(S, in[0], in[0]->ndim && v % 2 ? v % in[0]->ndim : -1, v % 4 == 1);
}
static mq_tensor *f_softmax(mq_tensor **in, int v) {
  return mq_softmax(S, in[0], in[0]->ndim ? v % in[0]->ndim : 0);
}
static mq_tensor *f_log_softmax(mq_tensor **in, int v) {
  return mq_log_softmax(S, in[0], in[0]->ndim ? v % in[0]->ndim : 0);
}
static mq_tensor *f_logcumsumexp(mq_tensor **in, int v) {
  return mq_logcumsumexp(S, in[0], in[0]->ndim ? v % in[0]->ndim : 0);
}
static mq_tensor *f_normalize(mq_tensor **in, int v) {
  return mq_normalize(S, in[0], v % 2 ? 1 : 2, in[0]->ndim ? v % in[0]->ndim : 0, 1e-12);
}
/* data movement */
static mq_tensor *f_index(mq_tensor **in, int v) {
  mq_tensor *t = in[0];
  mq_index_item it[3];
  memset(it, 0, sizeof it);
  if (v % 3 == 0) { /* x[-1, ::2] or x[::2] */
    int k = 0;
    if (t->ndim > 1) it[k].kind = MQ_IX_INT, it[k++].start = -1;
    it[k].kind = MQ_IX_SLICE, it[k].has_step = true, it[k++].step = 2;
    return mq_index(S, t, it, k);
  }
  if (v % 3 == 1) { /* x[none, 1:] */
    it[0].kind = MQ_IX_NEWAXIS;
    it[1].kind = MQ_IX_SLICE, it[1].has_start = true, it[1].start = 1;
    return mq_index(S, t, it, 2);
  }
  /* x[[0, 0, last]]: a repeated row collects twice */
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 1, (int64_t[]){3});
  int64_t *p = mq_tensor_data(ix);
  p[0] = p[1] = 0, p[2] = t->shape[0] - 1;
  it[0].kind = MQ_IX_TENSOR, it[0].tensor = ix;
  return mq_index(S, t, it, 1);
}
static mq_tensor *f_bool_index(mq_tensor **in, int v) {
  mq_index_item it;
  memset(&it, 0, sizeof it);
  it.kind = MQ_IX_TENSOR;
  it.tensor = fixed_bool(in[0]->ndim, in[0]->shape, v);
  return mq_index(S, in[0], &it, 1);
}
static mq_tensor *f_expand(mq_tensor **in, int v) {
  (void)v;
  int64_t shape[MQ_MAX_DIMS];
  shape[0] = 2;
  for (int d = 0; d < in[0]->ndim; d++) shape[d + 1] = in[0]->shape[d];
  return mq_expand(S, in[0], in[0]->ndim + 1, shape);
}
static mq_tensor *f_reshape(mq_tensor **in, int v) {
  (void)v;
  return mq_reshape(S, in[0], 2, (int64_t[]){-1, 1});
}
static mq_tensor *f_transpose_reshape(mq_tensor **in, int v) {
  (void)v;
  mq_tensor *t = mq_transpose(S, in[0], 0, -1); /* non-contiguous: reshape copies */
  return mq_reshape(S, t, 1, (int64_t[]){-1});
}
static mq_tensor *f_permute(mq_tensor **in, int v) {
  int64_t perm[MQ_MAX_DIMS];
  for (int d = 0; d < in[0]->ndim; d++) perm[d] = (d + 1 + v) % in[0]->ndim;
  return mq_permute(S, in[0], in[0]->ndim, perm);
}
static mq_tensor *f_flip(mq_tensor **in, int v) {
  int64_t d = v % in[0]->ndim;
  return mq_flip(S, in[0], 1, &d);
}
static mq_tensor *f_squeeze(mq_tensor **in, int v) {
  (void)v;
  return mq_squeeze(S, mq_unsqueeze(S, in[0], -1), 0, NULL);
}
static mq_tensor *f_narrow(mq_tensor **in, int v) {
  int64_t d = v % in[0]->ndim, len = in[0]->shape[d];
  return mq_narrow(S, in[0], d, len > 1 ? 1 : 0, len > 1 ? len - 1 : len);
}
static mq_tensor *f_select(mq_tensor **in, int v) {
  int64_t d = v % in[0]->ndim;
  return mq_select(S, in[0], d, -1);
}
static mq_tensor *f_cat(mq_tensor **in, int v) {
  (void)v;
  return mq_cat(S, 2, in, 0);
}
static mq_tensor *f_stack(mq_tensor **in, int v) {
  mq_tensor *two[2] = {in[0], mq_unary(S, MQ_UN_EXP, in[0])};
  return mq_stack(S, 2, two, v % (in[0]->ndim + 1));
}
static mq_tensor *f_matmul(mq_tensor **in, int v) {
  (void)v;
  return mq_matmul(S, in[0], in[1]);
}
static mq_tensor *f_get_data(mq_tensor **in, int v) {
  (void)v;
  return mq_unary(S, MQ_UN_SQUARE, mq_get_data(S, in[0]));
}
static mq_tensor *f_to_tensor(mq_tensor **in, int v) {
  (void)v;
  return mq_to_tensor(S, in[0], 0.5);
}
static mq_tensor *f_as_masked(mq_tensor **in, int v) {
  mq_tensor *x = mq_get_data(S, in[0]);
  return mq_as_masked(S, x, fixed_bool(x->ndim, x->shape, v));
}
/* as_masked on a masked input: valid, and passing gradients, where both
 * masks are */
static mq_tensor *f_remask(mq_tensor **in, int v) {
  return mq_as_masked(S, in[0], fixed_bool(in[0]->ndim, in[0]->shape, v));
}
static mq_tensor *f_astype(mq_tensor **in, int v) {
  (void)v; /* float64 -> float32 -> float64, then a view made contiguous */
  mq_tensor *t = mq_astype(S, mq_astype(S, in[0], MQ_DT_F32), MQ_DT_F64);
  return t->ndim > 1 ? mq_contiguous(S, mq_transpose(S, t, 0, 1)) : t;
}

/* moving by index (runtime/kernels/gather.h): an index along [dim] of [len]
 * entries laid over x's other dims, with repeats when [dup] (else a
 * reversal, len = size), masked out at some entries when [masked] */
static mq_tensor *index_for(const mq_tensor *x, int dim, int64_t len, bool dup, bool masked, int v) {
  int64_t shape[MQ_MAX_DIMS], inner = 1, size = x->shape[dim];
  for (int d = 0; d < x->ndim; d++) shape[d] = d == dim ? len : x->shape[d];
  for (int d = dim + 1; d < x->ndim; d++) inner *= shape[d];
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, x->ndim, shape);
  int64_t *p = mq_tensor_data(ix);
  for (int64_t k = 0; k < ix->numel; k++) {
    int64_t j = (k / inner) % len;
    p[k] = dup ? (j * 7 + k) % size : size - 1 - j;
  }
  if (masked) mq_tensor_set_mask(S, ix, fixed_bool(ix->ndim, ix->shape, v));
  return ix;
}
static mq_tensor *f_gather(mq_tensor **in, int v) {
  int dim = v % in[0]->ndim;
  return mq_gather(S, in[0], dim, index_for(in[0], dim, 3, true, v % 4 == 3, v));
}
static mq_tensor *f_index_select(mq_tensor **in, int v) {
  int dim = v % in[0]->ndim;
  int64_t n = 4, size = in[0]->shape[dim];
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  for (int64_t k = 0; k < n; k++) ((int64_t *)mq_tensor_data(ix))[k] = (k * 3 + 1) % size;
  if (v % 4 == 3) mq_tensor_set_mask(S, ix, fixed_bool(1, &n, v));
  return mq_index_select(S, in[0], dim, ix);
}
static mq_tensor *f_sort(mq_tensor **in, int v) {
  mq_tensor *values, *indices;
  mq_sort(S, in[0], v % in[0]->ndim, v % 2, &values, &indices);
  return values;
}
static mq_tensor *f_topk(mq_tensor **in, int v) {
  mq_tensor *values, *indices;
  int dim = v % in[0]->ndim;
  mq_topk(S, in[0], in[0]->shape[dim] < 2 ? in[0]->shape[dim] : 2, dim, v % 2, &values, &indices);
  return values;
}
static mq_tensor *f_kthvalue(mq_tensor **in, int v) {
  mq_tensor *values, *indices;
  int dim = v % in[0]->ndim;
  int64_t n = in[0]->shape[dim];
  if (n == 0) return in[0];
  mq_kthvalue(S, in[0], 1 + v % n, dim, v % 2, &values, &indices);
  return values;
}
/* quantile and nanquantile: each interpolation, along a dim or over all,
 * one q or two */
static mq_tensor *f_quantile(mq_tensor **in, int v) {
  static const double qs[2] = {0.3, 0.85};
  if (in[0]->numel == 0) return in[0];
  bool has_dim = in[0]->ndim && v % 3;
  int64_t nq = 1 + v / 2 % 2;
  return mq_quantile(S, in[0], nq == 2 ? qs : qs + v % 2, nq, nq == 2, has_dim,
                     has_dim ? v % in[0]->ndim : 0, v / 3 % 2, (mq_qinterp)(v % 5), v / 6 % 2);
}
static mq_tensor *f_max_dim(mq_tensor **in, int v) {
  mq_tensor *values, *indices;
  mq_extreme_dim(S, in[0], v % in[0]->ndim, v % 2, v / 2 % 2, &values, &indices);
  return values;
}
/* x[items] = v (the in-place spellings' index_put, runtime/kernels/update.h)
 * with v made from x * x, so that the gradient reaches x both through the
 * entries kept and through v: x[0] = v, x[1:] = a 0-d v (broadcast),
 * x[bool mask] = v, x[[0, 0]] = v (a repeated index: the later v wins,
 * and both get their gradient, as torch's index_put). */
static mq_tensor *f_index_put(mq_tensor **in, int v) {
  mq_tensor *x = in[0], *sq = mq_binary(S, MQ_BIN_MUL, x, x);
  mq_index_item it;
  memset(&it, 0, sizeof it);
  mq_tensor *val;
  switch (v % 4) {
  case 0:
    it.kind = MQ_IX_INT;
    val = mq_select(S, sq, 0, x->shape[0] - 1);
    break;
  case 1:
    it.kind = MQ_IX_SLICE, it.has_start = true, it.start = 1;
    val = mq_reduce(S, MQ_RED_SUM, sq, 0, NULL, false);
    break;
  case 2: {
    mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, x->ndim, x->shape);
    uint8_t *p = mq_tensor_data(m);
    int64_t n = 0;
    for (int64_t i = 0; i < m->numel; i++) n += p[i] = i % 3 != 1;
    it.kind = MQ_IX_TENSOR, it.tensor = m;
    val = mq_narrow(S, mq_reshape(S, sq, 1, &sq->numel), 0, 0, n);
    break;
  }
  default: {
    int64_t two = 2;
    it.kind = MQ_IX_TENSOR, it.tensor = mq_tensor_full_i64(S, 1, &two, 0);
    val = mq_index(S, sq, &it, 1);
    break;
  }
  }
  /* into x * 1, as a script writes y = x * 1; y[i] = v: a leaf that
   * requires grad is refused outside no_grad, as torch */
  mq_tensor *y = mq_binary(S, MQ_BIN_MUL, x, mq_tensor_scalar(S, (mq_dtype)x->dtype, 1));
  return mq_index_put(S, y, &it, 1, val, 0, NULL);
}
/* src = x * x, so both of scatter's paths carry a gradient to x */
static mq_tensor *f_scatter(mq_tensor **in, int v) {
  int dim = v % in[0]->ndim;
  mq_tensor *ix = index_for(in[0], dim, in[0]->shape[dim], false, v % 4 == 3, v);
  return mq_scatter(S, in[0], dim, ix, mq_binary(S, MQ_BIN_MUL, in[0], in[0]), false);
}
static mq_tensor *f_scatter_add(mq_tensor **in, int v) {
  int dim = v % in[0]->ndim;
  mq_tensor *ix = index_for(in[0], dim, in[0]->shape[dim], true, v % 4 == 3, v);
  return mq_scatter(S, in[0], dim, ix, mq_binary(S, MQ_BIN_MUL, in[0], in[0]), true);
}
/* the losses of runtime/nn/nn.h against a fixed target in [lo, hi], masked in
 * one variant of four; the reduction by variant. *_t: the target's gradient
 * (in[0] is the target, the input fixed). */
static mq_tensor *fixed_target(const mq_tensor *like, int v, double lo, double hi) {
  mq_tensor *t = mq_tensor_new(S, MQ_DT_F64, like->ndim, like->shape);
  double *p = mq_tensor_data(t);
  for (int64_t i = 0; i < t->numel; i++) p[i] = lo + (hi - lo) * (double)((i * 7 + v) % 11) / 10;
  if (v % 4 == 3) mq_tensor_set_mask(S, t, fixed_bool(t->ndim, t->shape, v));
  return t;
}
static mq_tensor *f_mse_loss(mq_tensor **in, int v) {
  return mq_nn_mse_loss(S, in[0], fixed_target(in[0], v, -1, 1), (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_mse_loss_t(mq_tensor **in, int v) {
  return mq_nn_mse_loss(S, fixed_target(in[0], v + 1, -1, 1), in[0], (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_l1_loss(mq_tensor **in, int v) {
  return mq_nn_l1_loss(S, in[0], fixed_target(in[0], v, -1, 1), (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_bce(mq_tensor **in, int v) {
  return mq_nn_bce(S, in[0], fixed_target(in[0], v, 0, 1), (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_bce_t(mq_tensor **in, int v) {
  return mq_nn_bce(S, fixed_target(in[0], v + 1, 0.1, 0.9), in[0], (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_bce_logits(mq_tensor **in, int v) {
  mq_tensor *x = v % 2 ? mq_binary(S, MQ_BIN_MUL, in[0], mq_tensor_scalar(S, MQ_DT_F64, 30)) : in[0];
  return mq_nn_bce_logits(S, x, fixed_target(in[0], v, 0, 1), NULL, (mq_nn_reduction)(v % 3));
}
/* one weight in [0.5, 3] per entry of [n] (a class weight, a pos_weight) */
static mq_tensor *fixed_weights(int64_t n, int v) {
  mq_tensor *w = mq_tensor_new(S, MQ_DT_F64, 1, &n);
  double *p = mq_tensor_data(w);
  for (int64_t i = 0; i < n; i++) p[i] = 0.5 + 0.25 * (double)((i * 5 + v) % 11);
  return w;
}
/* a weight per entry of x's last dim: pos_weight, or weight= broadcast */
static mq_tensor *last_dim_weights(const mq_tensor *x, int v) {
  return fixed_weights(x->ndim ? x->shape[x->ndim - 1] : 1, v);
}
static mq_tensor *f_bce_logits_pw(mq_tensor **in, int v) {
  mq_tensor *x = in[0];
  return mq_nn_bce_logits(S, x, fixed_target(x, v, 0, 1), last_dim_weights(x, v), (mq_nn_reduction)(v % 3));
}
/* weight= must broadcast to x's shape: 0-d for a 0-d x */
static mq_tensor *entry_weights(const mq_tensor *x, int v) {
  mq_tensor *w = last_dim_weights(x, v);
  return x->ndim ? w : mq_reshape(S, w, 0, NULL);
}
static mq_tensor *f_bce_w(mq_tensor **in, int v) {
  mq_tensor *loss = mq_nn_bce(S, in[0], fixed_target(in[0], v, 0, 1), MQ_NN_NONE);
  return mq_nn_scaled(S, "bce", loss, entry_weights(in[0], v), (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_bce_logits_w(mq_tensor **in, int v) {
  mq_tensor *x = in[0];
  mq_tensor *loss = mq_nn_bce_logits(S, x, fixed_target(x, v, 0, 1), v % 2 ? last_dim_weights(x, v + 3) : NULL,
                                     MQ_NN_NONE);
  return mq_nn_scaled(S, "bce", loss, entry_weights(x, v), (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_bce_logits_t(mq_tensor **in, int v) {
  return mq_nn_bce_logits(S, fixed_target(in[0], v + 1, -3, 3), in[0], NULL, (mq_nn_reduction)(v % 3));
}
/* class targets along dim 1 (0 for 1-d), some ignored (-100), masked in
 * one variant of four */
static mq_tensor *class_target(const mq_tensor *x, int v, int dim) {
  int k = 0;
  int64_t shape[MQ_MAX_DIMS], C = x->shape[dim];
  for (int i = 0; i < x->ndim; i++)
    if (i != dim) shape[k++] = x->shape[i];
  mq_tensor *t = mq_tensor_new(S, MQ_DT_I64, k, shape);
  int64_t *p = mq_tensor_data(t);
  for (int64_t i = 0; i < t->numel; i++) p[i] = v % 2 && i % 3 == 2 ? -100 : (i * 3 + v) % C;
  if (v % 4 == 3) mq_tensor_set_mask(S, t, fixed_bool(k, shape, v));
  return t;
}
static mq_tensor *f_cross_entropy(mq_tensor **in, int v) {
  int dim = in[0]->ndim > 1;
  return mq_nn_cross_entropy(S, in[0], class_target(in[0], v, dim), dim, -100, NULL, (mq_nn_reduction)(v % 3));
}
/* with class weights: the weighted mean divides by the valid targets' weights */
static mq_tensor *f_cross_entropy_w(mq_tensor **in, int v) {
  int dim = in[0]->ndim > 1;
  return mq_nn_cross_entropy(S, in[0], class_target(in[0], v, dim), dim, -100,
                             fixed_weights(in[0]->shape[dim], v), (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_cross_entropy_pw(mq_tensor **in, int v) {
  int dim = in[0]->ndim > 1;
  return mq_nn_cross_entropy(S, in[0], fixed_target(in[0], v, 0, 1), dim, -100,
                             fixed_weights(in[0]->shape[dim], v), (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_nll_loss(mq_tensor **in, int v) {
  int dim = in[0]->ndim > 1;
  return mq_nn_nll_loss(S, in[0], class_target(in[0], v, dim), dim, -100,
                        v % 2 ? fixed_weights(in[0]->shape[dim], v) : NULL, (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_cross_entropy_p(mq_tensor **in, int v) {
  return mq_nn_cross_entropy(S, in[0], fixed_target(in[0], v, 0, 1), in[0]->ndim > 1, -100, NULL,
                             (mq_nn_reduction)(v % 3));
}
/* label smoothing, with and without class weights, class and probability targets */
static mq_tensor *f_cross_entropy_ls(mq_tensor **in, int v) {
  int dim = in[0]->ndim > 1;
  return mq_nn_cross_entropy_ls(S, in[0], class_target(in[0], v, dim), dim, -100,
                                v % 2 ? fixed_weights(in[0]->shape[dim], v) : NULL, 0.1 + 0.3 * (v % 3),
                                (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_cross_entropy_pls(mq_tensor **in, int v) {
  int dim = in[0]->ndim > 1;
  return mq_nn_cross_entropy_ls(S, in[0], fixed_target(in[0], v, 0, 1), dim, -100,
                                v % 2 ? fixed_weights(in[0]->shape[dim], v) : NULL, 0.2 + 0.4 * (v % 2),
                                (mq_nn_reduction)(v % 3));
}
static mq_tensor *f_layer_norm(mq_tensor **in, int v) {
  int nd = in[0]->ndim > 1 && v % 2 ? 2 : 1;
  mq_tensor *w = NULL, *b = NULL;
  if (v % 3 == 2) {
    mq_tensor tail = *in[0];
    tail.ndim = (uint8_t)nd;
    memmove(tail.shape, in[0]->shape + in[0]->ndim - nd, (size_t)nd * sizeof *tail.shape);
    w = fixed_target(&tail, 0, 0.5, 2), b = fixed_target(&tail, 1, -1, 1);
  }
  return mq_nn_layer_norm(S, in[0], nd, w, b, 1e-5);
}
static mq_tensor *f_dropout(mq_tensor **in, int v) { return mq_nn_dropout(S, in[0], 0.3, v); }

#define C1(NAME, DOM) {#NAME, 1, {DOM, ANY}, ONE, f_##NAME, false, 0, 0, NULL, true}
#define C1ND(NAME, DOM) {#NAME, 1, {DOM, ANY}, ONE_ND, f_##NAME, false, 0, 0, NULL, true}
#define C2(NAME, DA, DB) {#NAME, 2, {DA, DB}, PAIR, f_##NAME, false, 0, 0, NULL, true}
/* shape_more.h: compositions whose recorded steps must add up */
static mq_tensor *as_matrix(mq_tensor *t) { return t->ndim < 2 ? mq_unsqueeze(S, t, 0) : t; }
static mq_tensor *f_tril(mq_tensor **in, int v) { return mq_tri(S, as_matrix(in[0]), v % 3 - 1, false); }
static mq_tensor *f_triu(mq_tensor **in, int v) { return mq_tri(S, as_matrix(in[0]), v % 3 - 1, true); }
static mq_tensor *f_repeat(mq_tensor **in, int v) {
  int64_t sizes[MQ_MAX_DIMS];
  int n = in[0]->ndim + 1;
  sizes[0] = 2;
  for (int d = 1; d < n; d++) sizes[d] = d == 1 + v % n ? 3 : 1;
  return mq_repeat(S, in[0], n, sizes);
}
static mq_tensor *f_roll(mq_tensor **in, int v) {
  int64_t shift = v - 5, dim = v % in[0]->ndim;
  return mq_roll(S, in[0], 1, &shift, v % 2 ? &dim : NULL);
}
/* a part of the entries: the others get 0, or none when masked */
static mq_tensor *f_diagonal(mq_tensor **in, int v) {
  mq_tensor *x = as_matrix(in[0]);
  return mq_diagonal(S, x, v % 3 - 1, v % 2 ? -1 : 0, v % 2 ? 0 : 1);
}
static mq_tensor *f_diff(mq_tensor **in, int v) {
  mq_tensor *x = in[0];
  int d = v % x->ndim;
  /* v 2, 3: a prepend and an append cut from x itself, so that their
   * gradients add into x's */
  mq_tensor *pre = v % 4 >= 2 && x->shape[d] ? mq_narrow(S, x, d, 0, 1) : NULL;
  mq_tensor *app = v % 4 == 3 ? x : NULL;
  return mq_diff(S, x, 1 + v % 2, d, pre, app);
}
static mq_tensor *f_bmm(mq_tensor **in, int v) {
  (void)v;
  mq_tensor *x = in[0];
  int64_t three[3] = {x->ndim == 3 ? x->shape[0] : 1, x->ndim >= 2 ? x->shape[x->ndim - 2] : 1,
                      x->shape[x->ndim - 1]};
  x = mq_reshape(S, x, 3, three);
  return mq_bmm(S, x, mq_transpose(S, x, 1, 2));
}
/* matmul spelled as an einsum: the same shapes, broadcast batch included */
static mq_tensor *f_einsum_mm(mq_tensor **in, int v) {
  (void)v;
  char spec[32];
  int a = in[0]->ndim, b = in[1]->ndim;
  snprintf(spec, sizeof spec, "%s,%s->...%s%s", a == 1 ? "j" : "...ij", b == 1 ? "j" : "...jk",
           a == 1 ? "" : "i", b == 1 ? "" : "k");
  return mq_einsum(S, spec, strlen(spec), 2, in);
}
/* one operand twice, a diagonal, a trace and a plain sum */
static mq_tensor *f_einsum_one(mq_tensor **in, int v) {
  mq_tensor *x = in[0], *two[2] = {x, x};
  static const char *const specs[4][3] = {{"i,j->ij", "ij,kj->ik", "bij,bkj->bki"},
                                          {"i->", "ii->i", "bii->ib"},
                                          {"i->i", "ii", "bii"},
                                          {"i->", "ij->j", "bij->"}};
  int k = v % 4, d = x->ndim - 1;
  if ((k == 1 || k == 2) && d > 0) { /* a square in the last two dims */
    int64_t n = x->shape[d] < x->shape[d - 1] ? x->shape[d] : x->shape[d - 1];
    x = mq_narrow(S, mq_narrow(S, x, d, 0, n), d - 1, 0, n);
  }
  const char *spec = specs[k][d];
  return mq_einsum(S, spec, strlen(spec), k == 0 ? 2 : 1, k == 0 ? two : &x);
}
/* x - mean(x): a masked 0-d operand broadcasts its validity (binary.c) */
static mq_tensor *f_center(mq_tensor **in, int v) {
  (void)v;
  return mq_binary(S, MQ_BIN_SUB, in[0], mq_reduce(S, MQ_RED_MEAN, in[0], 0, NULL, false));
}

/* the ops that are not rows of runtime/ops_*.h, and rows with parameters */
static const double round_prm[3] = {1, NAN, NAN}, softplus_prm[3] = {2, 1, NAN};
static const double hardtanh_prm[3] = {-0.5, 0.25, NAN};
static const gcase cases[] = {
    C1(clamp, ANY), C1(logit_eps, PROB), C1(pow2, ANY),
    {"softplus(x, 2, 1)", 1, {ANY, ANY}, ONE, f_unary_row, false, 0, MQ_UN_SOFTPLUS, softplus_prm, true},
    {"hardtanh(x, -0.5, 0.25)", 1, {ANY, ANY}, ONE, f_unary_row, false, 0, MQ_UN_HARDTANH, hardtanh_prm, true},
    C2(where, ANY, ANY),
    {"masked_fill", 2, {ANY, ANY}, WITH0D, f_masked_fill, false, 0, 0, NULL, true},
    C1(var, ANY), C1(std, ANY), C1(norm, ANY), C1(median, ANY), C1(softmax, ANY),
    C1(log_softmax, ANY), C1(normalize, ANY), C1(logcumsumexp, ANY),
    C1ND(index, ANY), C1ND(bool_index, ANY), C1(expand, ANY), C1(reshape, ANY),
    C1ND(transpose_reshape, ANY), C1ND(permute, ANY), C1ND(flip, ANY), C1(squeeze, ANY),
    C1ND(narrow, ANY), C1ND(select, ANY), C1ND(stack, ANY), C1(get_data, ANY),
    C1(to_tensor, ANY), C1(as_masked, ANY), C1(remask, ANY),
    {"astype", 1, {ANY, ANY}, ONE, f_astype, false, 1e-2, 0, NULL, true}, /* linear, through float32 */
    {"cat", 2, {ANY, ANY}, JOIN, f_cat, false, 0, 0, NULL, true},
    {"matmul", 2, {ANY, ANY}, MATS, f_matmul, false, 0, 0, NULL, true},
    C1ND(gather, ANY), C1ND(index_select, ANY), C1ND(scatter, ANY), C1ND(scatter_add, ANY),
    C1ND(index_put, ANY),
    /* a NaN becomes the largest entry and moves in sort's, max's and topk's
     * results (to a place a masked weight may not count): no mask check by
     * NaN there */
    {"sort", 1, {ANY, ANY}, ONE_ND, f_sort, true, 0, 0, NULL, true},
    {"topk", 1, {ANY, ANY}, ONE_ND, f_topk, true, 0, 0, NULL, true},
    {"max_dim", 1, {ANY, ANY}, ONE_ND, f_max_dim, true, 0, 0, NULL, true},
    {"kthvalue", 1, {ANY, ANY}, ONE_ND, f_kthvalue, true, 0, 0, NULL, true},
    {"quantile", 1, {ANY, ANY}, ONE, f_quantile, true, 0, 0, NULL, true},
    C1ND(tril, ANY), C1ND(triu, ANY), C1ND(repeat, ANY), C1ND(roll, ANY), C1ND(diff, ANY), C1ND(diagonal, ANY),
    C1ND(bmm, ANY), C1ND(einsum_one, ANY), C1(center, ANY),
    {"einsum_mm", 2, {ANY, ANY}, MATS, f_einsum_mm, false, 0, 0, NULL, true},
    C1(mse_loss, ANY), C1(mse_loss_t, ANY), C1(l1_loss, ANY), C1ND(nll_loss, ANY), C1(bce, PROB), C1(bce_t, ANY), C1(bce_logits, ANY),
    C1(bce_logits_t, ANY), C1ND(cross_entropy, ANY), C1ND(cross_entropy_p, ANY),
    C1(bce_logits_pw, ANY), C1(bce_w, PROB), C1(bce_logits_w, ANY), C1ND(cross_entropy_w, ANY), C1ND(cross_entropy_pw, ANY),
    C1ND(cross_entropy_ls, ANY), C1ND(cross_entropy_pls, ANY), C1ND(layer_norm, ANY), C1(dropout, ANY),
};

/* Every row, the differentiable ones checked; NaN does not propagate
 * through sign, nan_to_num, copysign's y, fmax and fmin (no mask check). */
#define HAS_D(...) true
#define HAS_NODIFF false
#define BLIND(name)                                                            \
  (!strcmp(name, "sign") || !strcmp(name, "nan_to_num") || !strcmp(name, "copysign") || \
   !strcmp(name, "fmax") || !strcmp(name, "fmin"))
#define UN_CASE(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, dom, ...) \
  {name, 1, {dom, ANY}, ONE, f_unary_row, false, 0, MQ_UN_##E, NULL, HAS_##deriv},
#define BIN_CASE(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, da, db, ...) \
  {name, 2, {da, db}, PAIR, f_binary_row, false, 0, MQ_BIN_##E, NULL, HAS_##deriv},
#define RED_CASE(E, name, bind, deriv, ...)                                    \
  {name, 1, {ANY, ANY}, ONE, f_reduce_row, false, 0, MQ_RED_##E, NULL, HAS_##deriv},
#define SCAN_CASE(E, name, prod, ...) {name, 1, {ANY, ANY}, ONE, f_scan_row, false, 0, prod, NULL, true},
static gcase rows[] = {
    MQ_UNARY_OPS(UN_CASE) MQ_BINARY_OPS(BIN_CASE) MQ_REDUCE_OPS(RED_CASE) MQ_SCAN_OPS(SCAN_CASE)
};

/* --- shapes and inputs ------------------------------------------------------- */

typedef struct shp {
  int nd;
  int64_t s[4];
} shp;

static const shp one_shapes[] = {{0, {0}}, {1, {5}}, {2, {3, 4}}, {3, {2, 3, 2}}};
static const shp pair_shapes[][2] = {
    {{2, {3, 4}}, {2, {3, 4}}}, {{2, {3, 4}}, {1, {4}}},     {{2, {3, 1}}, {2, {1, 4}}},
    {{0, {0}}, {1, {3}}},       {{2, {2, 3}}, {0, {0}}},     {{1, {5}}, {1, {5}}},
};
static const shp mat_shapes[][2] = {
    {{2, {3, 4}}, {2, {4, 2}}}, {{1, {4}}, {2, {4, 3}}},       {{2, {3, 4}}, {1, {4}}},
    {{1, {4}}, {1, {4}}},       {{3, {2, 3, 4}}, {2, {4, 2}}}, {{4, {2, 1, 3, 4}}, {3, {3, 4, 2}}},
};
static const shp join_shapes[][2] = {
    {{2, {2, 3}}, {2, {1, 3}}}, {{1, {3}}, {1, {2}}}, {{3, {1, 2, 2}}, {3, {2, 2, 2}}},
};

static double draw(domain d) {
  switch (d) {
  case POS: return 0.5 + 1.5 * urand();
  case UNIT: return -0.9 + 1.8 * urand();
  case GT1: return 1.2 + 2 * urand();
  case PROB: return 0.1 + 0.8 * urand();
  default: return nrand();
  }
}

/* A float64 leaf; [mask_kind] 0: plain, 1: random mask, 2: random with the
 * first slice along dim 0 fully masked out; [like] (not NULL): its mask. */
static mq_tensor *make_input(const shp *sh, domain d, int mask_kind, const mq_tensor *like) {
  mq_tensor *t = mq_tensor_new(S, MQ_DT_F64, sh->nd, sh->s);
  double *p = mq_tensor_data(t);
  for (int64_t i = 0; i < t->numel; i++) p[i] = draw(d);
  if (like && like->mask) {
    mq_tensor_set_mask(S, t, like->mask);
  } else if (mask_kind) {
    mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, sh->nd, sh->s);
    uint8_t *mv = mq_tensor_data(m);
    int64_t slice = sh->nd ? t->numel / sh->s[0] : 0;
    for (int64_t i = 0; i < t->numel; i++) mv[i] = urand() < 0.7 && !(mask_kind == 2 && i < slice);
    mq_tensor_set_mask(S, t, m);
  }
  t->requires_grad = true;
  return t;
}

/* [t] with element [j] of its data set to [v] (same mask). */
static mq_tensor *with_value(mq_tensor *t, int64_t j, double v) {
  mq_tensor *c = mq_tensor_new(S, MQ_DT_F64, t->ndim, t->shape);
  memcpy(mq_tensor_data(c), mq_tensor_data(t), (size_t)t->numel * sizeof(double));
  ((double *)mq_tensor_data(c))[j] = v;
  if (t->mask) mq_tensor_set_mask(S, c, t->mask);
  return c;
}

static mq_tensor *loss_of(mq_tensor *out, mq_tensor *w) {
  return mq_reduce(S, MQ_RED_SUM, mq_binary(S, MQ_BIN_MUL, out, w), 0, NULL, false);
}
static double value_of(mq_tensor *L) {
  if (L->mask && !*(const uint8_t *)mq_tensor_data(L->mask)) return NAN;
  return mq_tensor_item(S, L);
}

/* L with input [i] replaced by [x], recording off. */
static double loss_with(const gcase *c, mq_tensor **in, int i, mq_tensor *x, int variant,
                        mq_tensor *w) {
  mq_tensor *args[2] = {in[0], c->nin > 1 ? in[1] : NULL};
  args[i] = x;
  S->no_grad = true;
  double v = value_of(loss_of(c->f(args, variant), w));
  S->no_grad = false;
  return v;
}

static void fail(const gcase *c, mq_tensor *const *in, int i, const char *what) {
  failed++;
  if (reported++ > 40) return;
  printf("FAIL gradcheck %s, input %d of shapes", c->name, i + 1);
  for (int k = 0; k < c->nin; k++)
    printf(" %s%s", mq_shape_str(S, in[k]->ndim, in[k]->shape), in[k]->mask ? "(masked)" : "");
  printf(": %s\n", what);
}

static void check_case(const gcase *c, mq_tensor **in, int variant) {
  mq_tensor *out = c->f(in, variant);
  if (!out->requires_grad) {
    fail(c, in, 0, "the result does not require grad");
    return;
  }
  mq_tensor *w = mq_tensor_new(S, MQ_DT_F64, out->ndim, out->shape);
  for (int64_t i = 0; i < w->numel; i++) ((double *)mq_tensor_data(w))[i] = nrand();
  if (variant % 4 == 3 && !out->mask) { /* a masked weight: an incoming gradient masked where the
                                          * result is valid (a masked result's mask would have to
                                          * match w's: masks do not combine in a product) */
    mq_tensor *wm = mq_tensor_new(S, MQ_DT_BOOL, out->ndim, out->shape);
    for (int64_t i = 0; i < wm->numel; i++) ((uint8_t *)mq_tensor_data(wm))[i] = urand() < 0.7;
    w = mq_as_masked(S, w, wm);
  }
  mq_tensor *L = loss_of(out, w), *g[2];
  bool L_masked = L->mask && !*(const uint8_t *)mq_tensor_data(L->mask);
  if (!L_masked && isnan(value_of(L))) return; /* a degenerate draw (var of one entry) */
  mq_grad(S, L, in, c->nin, false, g);
  char msg[256];
  for (int i = 0; i < c->nin; i++) {
    mq_tensor *x = in[i], *gi = g[i];
    /* masked exactly when the input or the result is */
    if ((gi->mask != NULL) != (out->mask != NULL || x->mask != NULL || w->mask != NULL)) {
      fail(c, in, i, gi->mask ? "a masked gradient in a plain computation" : "a plain gradient in a masked one");
      continue;
    }
    const double *xv = mq_tensor_data(x), *gv = mq_tensor_data(mq_contiguous(S, gi));
    const uint8_t *xm = x->mask ? mq_tensor_data(mq_contiguous(S, x->mask)) : NULL;
    const uint8_t *gm = gi->mask ? mq_tensor_data(mq_contiguous(S, gi->mask)) : NULL;
    bool ok = true;
    for (int64_t j = 0; j < x->numel && ok; j++) {
      bool xvalid = !xm || xm[j];
      if (gm) { /* the mask: valid iff x_j is and L depends on it */
        bool dep = !L_masked && xvalid &&
                   isnan(loss_with(c, in, i, with_value(x, j, NAN), variant, w));
        if (!c->nan_blind && (gm[j] != 0) != dep) {
          snprintf(msg, sizeof msg, "entry %lld: gradient %s, expected %s", (long long)j,
                   gm[j] ? "valid" : "masked out", dep ? "valid" : "masked out");
          fail(c, in, i, msg);
          ok = false;
        }
        if (!gm[j]) continue;
      }
      if (!xvalid) continue;
      double h = (c->h ? c->h : 1e-6) * (1 + fabs(xv[j]));
      double lp = loss_with(c, in, i, with_value(x, j, xv[j] + h), variant, w);
      double lm = loss_with(c, in, i, with_value(x, j, xv[j] - h), variant, w);
      double fd = (lp - lm) / (2 * h), an = gv[j];
      if (!isfinite(fd)) continue; /* a singular point: nothing to compare */
      if (fabs(an - fd) > 2e-5 + 2e-4 * fmax(fabs(an), fabs(fd))) {
        snprintf(msg, sizeof msg, "entry %lld (x = %g, variant %d): analytic %.9g, numeric %.9g",
                 (long long)j, xv[j], variant, an, fd);
        fail(c, in, i, msg);
        ok = false;
      }
    }
    if (ok) passed++;
  }
}

/* --- driving ------------------------------------------------------------------ */

static void run_case(const gcase *c) {
  if (!c->diff || c->dom[0] == CONV) return;
  cur_op = c->op;
  cur_prm = c->prm;
  for (int trial = 0; trial < 12; trial++) {
    size_t mark = mq_pool_mark(S);
    mq_tensor *in[2] = {NULL, NULL};
    int mk = trial % 3; /* plain, masked, masked with a fully masked slice */
    switch (c->sh) {
    case ONE: case ONE_ND: case WITH0D: {
      int k = trial % 4;
      if (c->sh == ONE_ND && k == 0) k = 2;
      in[0] = make_input(&one_shapes[k], c->dom[0], mk, NULL);
      if (c->sh == WITH0D) in[1] = make_input(&one_shapes[0], c->dom[1], 0, NULL);
      break;
    }
    case PAIR: case SAME2: case MATS: case JOIN: {
      const shp (*set)[2] = c->sh == MATS ? mat_shapes : c->sh == JOIN ? join_shapes : pair_shapes;
      int nset = c->sh == MATS ? 6 : c->sh == JOIN ? 3 : 6;
      const shp *p = set[trial % nset];
      /* masked operands: a only, b only, or both (one mask, same shapes) */
      int who = (trial / 2) % 4;
      bool same = p[0].nd == p[1].nd && memcmp(p[0].s, p[1].s, sizeof p[0].s) == 0;
      bool joint = c->sh != MATS && c->sh != JOIN;
      bool ma = who == 1 || who == 3, mb = who == 2 || (who == 3 && (!joint || same));
      in[0] = make_input(&p[0], c->dom[0], ma ? 1 + (mk == 2) : 0, NULL);
      in[1] = make_input(&p[1], c->dom[1], mb, who == 3 && same && joint ? in[0] : NULL);
      break;
    }
    }
    check_case(c, in, trial);
    mq_pool_drain(S, mark);
  }
}

/* The check itself must be able to fail: a wrong derivative is caught.
 * This is sin(x) whose recorded history says its derivative is 0. */
static mq_tensor *f_wrong(mq_tensor **in, int v) {
  (void)v;
  mq_tensor *y = mq_unary(S, MQ_UN_COS, in[0]);
  S->no_grad = true;
  mq_tensor *r = mq_unary(S, MQ_UN_SIN, in[0]);
  S->no_grad = false;
  return mq_binary(S, MQ_BIN_ADD, r, mq_binary(S, MQ_BIN_MUL, mq_binary(S, MQ_BIN_SUB, y, y), y));
}

static void all(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    rows[i].nan_blind = BLIND(rows[i].name);
    if (rows[i].f == f_unary_row && rows[i].op == MQ_UN_ROUND_DEC) rows[i].prm = round_prm; /* NaN digits: NaN */
    run_case(&rows[i]);
  }
  /* self-test: a result whose recorded history misses a term must fail */
  int p0 = passed, f0 = failed, r0 = reported;
  reported = 1000; /* quiet */
  gcase wrong = {"wrong", 1, {ANY, ANY}, ONE, f_wrong, false, 0, 0, NULL, true};
  run_case(&wrong);
  bool caught = failed > f0;
  passed = p0, failed = f0, reported = r0;
  if (caught) passed++;
  else {
    failed++;
    printf("FAIL gradcheck: a wrong derivative went unnoticed\n");
  }
}

int main(void) { return unit_main("test_gradcheck", all); }
