/* nn.c - losses, layer_norm and dropout over masked tensors (see nn.h).
 *
 * Each is a composition of differentiable runtime ops, so autograd records
 * them as it records a script doing the same; the few kernels of their own
 * (checks of the inputs, dropout's noise) record nothing. Masked-out
 * entries are left out by masking: the operands are restricted to the
 * entries valid in both (as intersect), and masked reductions neither sum
 * nor count what is masked out. */
#include "nn.h"
#include "layer_norm.h"
#include "pick.h"

#include <math.h>
#include <string.h>

#include "../tensor/iter.h"
#include "../kernels/ops.h"
#include "../tensor/shape.h"

/* A number combined with a tensor: weak, so x's dtype is kept. */
static mq_tensor *num(mq_state *S, double v) { return mq_tensor_from_value(S, mq_float(v), "number"); }

static mq_tensor *bin(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b) {
  return mq_binary(S, op, a, b);
}

static void need_float(mq_state *S, const char *who, const char *what, const mq_tensor *t) {
  if (!mq_dtype_is_float((mq_dtype)t->dtype))
    mq_error(S, "%s: %s must be a float tensor, not %s", who, what, mq_dtype_name((mq_dtype)t->dtype));
}

static void same_shape(mq_state *S, const char *who, const mq_tensor *x, const mq_tensor *t) {
  if (x->ndim != t->ndim || memcmp(x->shape, t->shape, (size_t)x->ndim * sizeof *x->shape))
    mq_error(S, "%s: target has shape %s but input has shape %s", who,
             mq_shape_str(S, t->ndim, t->shape), mq_shape_str(S, x->ndim, x->shape));
}

/* x and t restricted to the entries valid in both (nothing to do when both
 * are plain); gradients flow through to both. */
static void both_valid(mq_state *S, mq_tensor **x, mq_tensor **t) {
  if (!(*x)->mask && !(*t)->mask) return;
  mq_tensor *m = bin(S, MQ_BIN_BAND, mq_get_mask(S, *x), mq_get_mask(S, *t));
  *x = mq_as_masked(S, mq_get_data(S, *x), m);
  *t = mq_as_masked(S, mq_get_data(S, *t), m);
}

static mq_tensor *reduce(mq_state *S, mq_tensor *loss, mq_nn_reduction r) {
  if (r == MQ_NN_NONE) return loss;
  return mq_reduce(S, r == MQ_NN_MEAN ? MQ_RED_MEAN : MQ_RED_SUM, loss, 0, NULL, false);
}

/* The operands of an elementwise loss: x float, t of x's shape (an int or
 * bool target computes in x's dtype), both restricted to what is valid. */
static void operands(mq_state *S, const char *who, mq_tensor **x, mq_tensor **t) {
  need_float(S, who, "input", *x);
  same_shape(S, who, *x, *t);
  if (!mq_dtype_is_float((mq_dtype)(*t)->dtype)) *t = mq_astype(S, *t, (mq_dtype)(*x)->dtype);
  both_valid(S, x, t);
}

mq_tensor *mq_nn_mse_loss(mq_state *S, mq_tensor *x, mq_tensor *t, mq_nn_reduction r) {
  operands(S, "mse_loss", &x, &t);
  return reduce(S, mq_unary(S, MQ_UN_SQUARE, bin(S, MQ_BIN_SUB, x, t)), r);
}

mq_tensor *mq_nn_l1_loss(mq_state *S, mq_tensor *x, mq_tensor *t, mq_nn_reduction r) {
  operands(S, "l1_loss", &x, &t);
  return reduce(S, mq_unary(S, MQ_UN_ABS, bin(S, MQ_BIN_SUB, x, t)), r);
}

/* Every valid entry of float [x] in [0, 1], as torch requires of BCE's input. */
static void check_probabilities(mq_state *S, const char *who, mq_tensor *x) {
  int64_t *off = mq_iter_offsets(S, x->ndim, x->shape, x->strides);
  const uint8_t *m = mq_mask_bytes_to(S, x, x->ndim, x->shape);
  const void *d = mq_tensor_data(x);
  for (int64_t i = 0; i < x->numel; i++) {
    mq_poll_at(S, i);
    if (m && !m[i]) continue;
    double v = x->dtype == MQ_DT_F32 ? ((const float *)d)[off[i]] : ((const double *)d)[off[i]];
    if (v < 0 || v > 1) /* NaN passes: it propagates, as any NaN */
      mq_error(S, "%s: every valid entry of the input must be in [0, 1] (probabilities), got %g", who, v);
  }
}

mq_tensor *mq_nn_bce(mq_state *S, mq_tensor *x, mq_tensor *t, mq_nn_reduction r) {
  operands(S, "binary_cross_entropy", &x, &t);
  check_probabilities(S, "binary_cross_entropy", x);
  /* torch's: (t - 1) * max(log(1 - x), -100) - t * max(log(x), -100) */
  mq_tensor *floor = num(S, -100);
  mq_tensor *lx = mq_clamp(S, mq_unary(S, MQ_UN_LOG, x), floor, NULL);
  mq_tensor *l1 = mq_clamp(S, mq_unary(S, MQ_UN_LOG, bin(S, MQ_BIN_SUB, num(S, 1), x)), floor, NULL);
  mq_tensor *loss = bin(S, MQ_BIN_SUB, bin(S, MQ_BIN_MUL, bin(S, MQ_BIN_SUB, t, num(S, 1)), l1),
                        bin(S, MQ_BIN_MUL, t, lx));
  return reduce(S, loss, r);
}

/* A weight parameter: a plain float tensor (of [what] shape, checked by
 * the caller), in x's dtype so that it does not widen the loss. */
static mq_tensor *weight_arg(mq_state *S, const char *who, const char *what, mq_tensor *w,
                             const mq_tensor *x) {
  if (w->mask) mq_error(S, "%s: %s must be a plain tensor, not a masked one", who, what);
  need_float(S, who, what, w);
  return mq_astype(S, w, (mq_dtype)x->dtype);
}

mq_tensor *mq_nn_scaled(mq_state *S, const char *who, mq_tensor *loss, mq_tensor *w, mq_nn_reduction r) {
  w = weight_arg(S, who, "weight", w, loss);
  bool fits = w->ndim <= loss->ndim;
  for (int i = 1; fits && i <= w->ndim; i++) {
    int64_t a = w->shape[w->ndim - i];
    fits = a == 1 || a == loss->shape[loss->ndim - i];
  }
  if (!fits)
    mq_error(S, "%s: weight of shape %s does not broadcast to the input's shape %s", who,
             mq_shape_str(S, w->ndim, w->shape), mq_shape_str(S, loss->ndim, loss->shape));
  return reduce(S, bin(S, MQ_BIN_MUL, loss, w), r);
}

mq_tensor *mq_nn_bce_logits(mq_state *S, mq_tensor *x, mq_tensor *t, mq_tensor *pw,
                            mq_nn_reduction r) {
  static const char who[] = "binary_cross_entropy_with_logits";
  operands(S, who, &x, &t);
  /* torch's: (1 - t) x + m + log(e**-m + e**(-x - m)), m = max(-x, 0): no
   * exp overflows, and the value (hence the gradient) is the same for any m */
  mq_tensor *nx = mq_unary(S, MQ_UN_NEG, x);
  mq_tensor *m = mq_clamp(S, nx, num(S, 0), NULL);
  mq_tensor *lse = mq_unary(S, MQ_UN_LOG, bin(S, MQ_BIN_ADD, mq_unary(S, MQ_UN_EXP, mq_unary(S, MQ_UN_NEG, m)),
                                              mq_unary(S, MQ_UN_EXP, bin(S, MQ_BIN_SUB, nx, m))));
  mq_tensor *neg = bin(S, MQ_BIN_MUL, bin(S, MQ_BIN_SUB, num(S, 1), t), x);
  /* torch's association, so that the results round as torch's */
  if (!pw) return reduce(S, bin(S, MQ_BIN_ADD, bin(S, MQ_BIN_ADD, neg, m), lse), r);
  /* with pos_weight, torch's: the positive term -log(sigmoid(x)) times
   * 1 + (pos_weight - 1) t */
  pw = weight_arg(S, who, "pos_weight", pw, x);
  if (pw->ndim > 1 || (pw->ndim == 1 && pw->shape[0] != 1 &&
                       (x->ndim == 0 || pw->shape[0] != x->shape[x->ndim - 1])))
    mq_error(S, "%s: pos_weight must be a number or hold one weight per class (the input's "
                "last dim, %lld), got shape %s",
             who, (long long)(x->ndim ? x->shape[x->ndim - 1] : 1), mq_shape_str(S, pw->ndim, pw->shape));
  mq_tensor *lw = bin(S, MQ_BIN_ADD, bin(S, MQ_BIN_MUL, bin(S, MQ_BIN_SUB, pw, num(S, 1)), t), num(S, 1));
  mq_tensor *pos = bin(S, MQ_BIN_MUL, lw, bin(S, MQ_BIN_ADD, lse, m));
  return reduce(S, bin(S, MQ_BIN_ADD, neg, pos), r);
}

/* A class weight: plain, float, one per class of lsm's [dim]. */
static mq_tensor *class_weight(mq_state *S, const char *who, mq_tensor *w, const mq_tensor *lsm, int dim) {
  w = weight_arg(S, who, "weight", w, lsm);
  if (w->ndim != 1 || w->shape[0] != lsm->shape[dim])
    mq_error(S, "%s: weight must hold one weight per class, shape (%lld,); got shape %s", who,
             (long long)lsm->shape[dim], mq_shape_str(S, w->ndim, w->shape));
  return w;
}

/* The valid class targets of int64 [t]: the mask, less ignore_index; each
 * must be a class of [0, C). */
static mq_tensor *class_targets(mq_state *S, const char *who, mq_tensor *t, int64_t C, int64_t ignore) {
  mq_tensor *d = mq_get_data(S, t);
  mq_tensor *valid = bin(S, MQ_BIN_BAND, mq_get_mask(S, t), bin(S, MQ_BIN_NE, d, mq_tensor_scalar_i64(S, ignore)));
  int64_t *off = mq_iter_offsets(S, d->ndim, d->shape, d->strides);
  const uint8_t *vm = mq_tensor_data(mq_contiguous(S, valid));
  const int64_t *v = mq_tensor_data(d);
  for (int64_t i = 0; i < d->numel; i++) {
    mq_poll_at(S, i);
    if (vm[i] && (v[off[i]] < 0 || v[off[i]] >= C))
      mq_error(S, "%s: target %lld is not a class of [0, %lld) (nor ignore_index %lld)", who,
               (long long)v[off[i]], (long long)C, (long long)ignore);
  }
  return valid;
}

/* torch's label smoothing of a per-position [loss] (already weighted):
 * (1 - e) of it plus e times the mean over the classes of -lsm * w, the
 * mean over the valid entries of lsm (a masked-out logit is no class), so
 * that with every logit valid it is torch's e / C * sum. [cls] is the shape
 * that spreads w along dim. */
static mq_tensor *smoothed(mq_state *S, mq_tensor *loss, mq_tensor *lsm, mq_tensor *w, const int64_t *cls,
                           int dim, double e) {
  if (e == 0) return loss;
  mq_tensor *lw = w ? bin(S, MQ_BIN_MUL, lsm, mq_reshape(S, w, lsm->ndim, cls)) : lsm;
  mq_tensor *uniform = mq_reduce(S, MQ_RED_MEAN, lw, 1, &dim, false);
  if (!loss->mask) uniform = mq_to_tensor(S, uniform, 0); /* a row with no valid logit is ignored anyway */
  return bin(S, MQ_BIN_SUB, bin(S, MQ_BIN_MUL, loss, num(S, 1 - e)), bin(S, MQ_BIN_MUL, uniform, num(S, e)));
}

/* Whether each entry of lsm is its position's target class: t's data
 * along dim against the classes ([cls]: the shape that spreads them). */
static mq_tensor *one_hot(mq_state *S, mq_tensor *t, mq_tensor *lsm, int dim, const int64_t *cls) {
  mq_tensor *classes = mq_reshape(S, mq_arange_i64(S, 0, lsm->shape[dim], 1), lsm->ndim, cls);
  return bin(S, MQ_BIN_EQ, mq_unsqueeze(S, mq_get_data(S, t), dim), classes);
}

/* -lsm[target] per position (lsm: log-probabilities along dim): masked out
 * where the target is masked out or ignored, or lsm's entry at the target
 * is masked out. With a class weight [w] (else NULL), the loss is scaled by
 * the target's weight, and reduced by r: a mean divides by the sum of the
 * valid targets' weights. [e]: label smoothing (0: none). */
static mq_tensor *nll_classes(mq_state *S, const char *who, mq_tensor *lsm, mq_tensor *t, int dim,
                              int64_t ignore, mq_tensor *w, double e, mq_nn_reduction r) {
  const int nd = lsm->ndim;
  int64_t want[MQ_MAX_DIMS], cls[MQ_MAX_DIMS];
  for (int i = 0, k = 0; i < nd; i++) {
    cls[i] = i == dim ? lsm->shape[i] : 1;
    if (i != dim) want[k++] = lsm->shape[i];
  }
  if (t->ndim != nd - 1 || memcmp(t->shape, want, (size_t)(nd - 1) * sizeof *want))
    mq_error(S, "%s: class targets must have shape %s (the input's without dim %d), got %s", who,
             mq_shape_str(S, nd - 1, want), dim, mq_shape_str(S, t->ndim, t->shape));
  t = mq_tensor_owned(S, t); /* the classes checked are the classes picked */
  mq_tensor *valid = class_targets(S, who, t, lsm->shape[dim], ignore);
  /* each position's target entry: one op (pick.h) unless a class weight
   * needs the one-hot comparison, else op by op */
  mq_tensor *hot = NULL, *picked = w ? NULL : mq_nn_pick(S, mq_get_data(S, lsm), mq_get_data(S, t), dim);
  if (!picked) {
    hot = one_hot(S, t, lsm, dim, cls);
    picked = mq_reduce(S, MQ_RED_SUM, mq_where(S, hot, mq_get_data(S, lsm), num(S, 0)), 1, &dim, false);
  }
  if (lsm->mask) { /* the picked entry itself must be valid */
    mq_tensor *at = hot ? NULL : mq_nn_pick(S, lsm->mask, mq_get_data(S, t), dim);
    if (!at) {
      if (!hot) hot = one_hot(S, t, lsm, dim, cls);
      at = mq_reduce(S, MQ_RED_ANY, bin(S, MQ_BIN_BAND, hot, lsm->mask), 1, &dim, false);
    }
    valid = bin(S, MQ_BIN_BAND, valid, at);
  }
  mq_tensor *loss = mq_unary(S, MQ_UN_NEG, picked), *tw = NULL;
  if (w) { /* the weight of each position's target class (w: hot was made) */
    w = class_weight(S, who, w, lsm, dim);
    tw = mq_reduce(S, MQ_RED_SUM, mq_where(S, hot, mq_reshape(S, w, nd, cls), num(S, 0)), 1, &dim, false);
    loss = bin(S, MQ_BIN_MUL, loss, tw);
  }
  loss = smoothed(S, loss, lsm, w, cls, dim, e);
  bool all = mq_tensor_item(S, mq_reduce(S, MQ_RED_ALL, valid, 0, NULL, false)) != 0;
  bool plain = all && !t->mask && !lsm->mask;
  if (!plain) loss = mq_as_masked(S, loss, valid);
  if (!tw || r != MQ_NN_MEAN) return reduce(S, loss, r);
  if (!plain) tw = mq_as_masked(S, tw, valid);
  return bin(S, MQ_BIN_DIV, reduce(S, loss, MQ_NN_SUM), reduce(S, tw, MQ_NN_SUM));
}

mq_tensor *mq_nn_cross_entropy(mq_state *S, mq_tensor *x, mq_tensor *t, int dim, int64_t ignore,
                               mq_tensor *w, mq_nn_reduction r) {
  return mq_nn_cross_entropy_ls(S, x, t, dim, ignore, w, 0, r);
}

mq_tensor *mq_nn_cross_entropy_ls(mq_state *S, mq_tensor *x, mq_tensor *t, int dim, int64_t ignore,
                                  mq_tensor *w, double smoothing, mq_nn_reduction r) {
  need_float(S, "cross_entropy", "input", x);
  if (!(smoothing >= 0 && smoothing <= 1))
    mq_error(S, "cross_entropy: label_smoothing must be in [0, 1], got %g", smoothing);
  if (x->ndim == 0) mq_error(S, "cross_entropy: the input needs a class dimension, got a 0-d tensor");
  dim = mq_shape_norm_dim(S, dim, x->ndim);
  mq_tensor *lsm = mq_log_softmax(S, x, dim), *loss;
  if (t->dtype == MQ_DT_I64) {
    return nll_classes(S, "cross_entropy", lsm, t, dim, ignore, w, smoothing, r);
  } else if (mq_dtype_is_float((mq_dtype)t->dtype)) { /* probabilities along dim */
    same_shape(S, "cross_entropy", x, t);
    both_valid(S, &lsm, &t);
    mq_tensor *terms = bin(S, MQ_BIN_MUL, lsm, t);
    int64_t cls[MQ_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) cls[i] = i == dim ? x->shape[i] : 1;
    if (w) {
      w = class_weight(S, "cross_entropy", w, lsm, dim);
      terms = bin(S, MQ_BIN_MUL, terms, mq_reshape(S, w, x->ndim, cls));
    }
    loss = mq_unary(S, MQ_UN_NEG, mq_reduce(S, MQ_RED_SUM, terms, 1, &dim, false));
    loss = smoothed(S, loss, lsm, w, cls, dim, smoothing);
  } else {
    mq_error(S, "cross_entropy: the target must hold int64 classes or float probabilities, not %s",
             mq_dtype_name((mq_dtype)t->dtype));
  }
  return reduce(S, loss, r);
}

mq_tensor *mq_nn_nll_loss(mq_state *S, mq_tensor *x, mq_tensor *t, int dim, int64_t ignore,
                          mq_tensor *w, mq_nn_reduction r) {
  need_float(S, "nll_loss", "input", x);
  if (x->ndim == 0) mq_error(S, "nll_loss: the input needs a class dimension, got a 0-d tensor");
  if (t->dtype != MQ_DT_I64)
    mq_error(S, "nll_loss: the target must hold int64 classes, not %s", mq_dtype_name((mq_dtype)t->dtype));
  return nll_classes(S, "nll_loss", x, t, mq_shape_norm_dim(S, dim, x->ndim), ignore, w, 0, r);
}

mq_tensor *mq_nn_layer_norm(mq_state *S, mq_tensor *x, int nd, mq_tensor *w, mq_tensor *b, double eps) {
  need_float(S, "layer_norm", "input", x);
  if (nd < 1 || nd > x->ndim)
    mq_error(S, "layer_norm: normalized_shape must name 1 to %d trailing dims of the input", x->ndim);
  const int64_t *tail = x->shape + x->ndim - nd;
  mq_tensor *p[2] = {w, b};
  for (int i = 0; i < 2; i++) {
    if (!p[i]) continue;
    if (p[i]->mask) mq_error(S, "layer_norm: %s must be a plain tensor", i ? "bias" : "weight");
    if (p[i]->ndim != nd || memcmp(p[i]->shape, tail, (size_t)nd * sizeof *tail))
      mq_error(S, "layer_norm: %s must have shape %s, got %s", i ? "bias" : "weight",
               mq_shape_str(S, nd, tail), mq_shape_str(S, p[i]->ndim, p[i]->shape));
  }
  mq_tensor *fused = mq_nn_layer_norm_fused(S, x, nd, w, b, eps);
  return fused ? fused : mq_nn_layer_norm_ops(S, x, nd, w, b, eps);
}

mq_tensor *mq_nn_layer_norm_ops(mq_state *S, mq_tensor *x, int nd, mq_tensor *w, mq_tensor *b,
                                double eps) {
  int dims[MQ_MAX_DIMS];
  for (int i = 0; i < nd; i++) dims[i] = x->ndim - nd + i;
  /* a fully masked slice: mean and variance 0 (its result stays masked out) */
  mq_tensor *mu = mq_to_tensor(S, mq_reduce(S, MQ_RED_MEAN, x, nd, dims, true), 0);
  mq_tensor *xc = bin(S, MQ_BIN_SUB, mq_get_data(S, x), mu);
  mq_tensor *sq = mq_unary(S, MQ_UN_SQUARE, xc);
  if (x->mask) sq = mq_as_masked(S, sq, x->mask);
  mq_tensor *var = mq_to_tensor(S, mq_reduce(S, MQ_RED_MEAN, sq, nd, dims, true), 0);
  mq_tensor *y = bin(S, MQ_BIN_MUL, xc, mq_unary(S, MQ_UN_RSQRT, bin(S, MQ_BIN_ADD, var, num(S, eps))));
  if (w) y = bin(S, MQ_BIN_MUL, y, w);
  if (b) y = bin(S, MQ_BIN_ADD, y, b);
  return x->mask ? mq_as_masked(S, y, x->mask) : y;
}

/* splitmix64's finalizer: a counter-based generator, one draw per index */
static uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

mq_tensor *mq_nn_dropout(mq_state *S, mq_tensor *x, double p, int64_t seed) {
  need_float(S, "dropout", "x", x);
  if (!(p >= 0 && p <= 1)) mq_error(S, "dropout: p must be in [0, 1], got %g", p);
  if (p == 0) return x;
  mq_tensor *noise = mq_tensor_new(S, (mq_dtype)x->dtype, x->ndim, x->shape);
  const double scale = p == 1 ? 0 : 1 / (1 - p);
  const uint64_t base = mix((uint64_t)seed);
  for (int64_t i = 0; i < noise->numel; i++) {
    if ((i & 0xffff) == 0xffff) mq_check_interrupt(S);
    double u = (double)(mix(base + (uint64_t)i) >> 11) * 0x1.0p-53; /* [0, 1) */
    double v = u >= p ? scale : 0;
    if (noise->dtype == MQ_DT_F32) ((float *)mq_tensor_data(noise))[i] = (float)v;
    else ((double *)mq_tensor_data(noise))[i] = v;
  }
  return bin(S, MQ_BIN_MUL, x, noise);
}
