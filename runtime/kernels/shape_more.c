/* shape_more.c - tril/triu, repeat, roll, diff, bmm and .T as compositions
 * of the ops of shape.h and elementwise.c (see shape_more.h): each step
 * records its own gradient, so these need no derivative of their own. */
#include "shape_more.h"

#include "../../core/checked.h"
#include "../tensor/internal.h"
#include "ops.h"
#include "../tensor/shape.h"
#include "../tensor/tape.h"

mq_tensor *mq_tri(mq_state *S, mq_tensor *t, int64_t diagonal, bool upper) {
  const char *fn = upper ? "triu" : "tril";
  if (t->ndim < 2)
    mq_error(S, "%s: x must have at least 2 dimensions, got shape %s", fn,
             mq_shape_str(S, t->ndim, t->shape));
  int64_t rc[2] = {t->shape[t->ndim - 2], t->shape[t->ndim - 1]};
  mq_tensor *keep = mq_tensor_new(S, MQ_DT_BOOL, 2, rc);
  uint8_t *k = mq_tensor_data(keep);
  int64_t done = 0; /* entries since the last poll: rows may be 10^8 long, or 1 */
  for (int64_t i = 0; i < rc[0]; i++) {
    if ((done += rc[1]) >= MQ_POLL_ELEMS) {
      done = 0;
      mq_check_interrupt(S);
    }
    for (int64_t j = 0; j < rc[1]; j++) {
      /* j - i never overflows (both are sizes); the diagonal may be huge */
      int64_t off = j - i;
      k[i * rc[1] + j] = upper ? off >= diagonal : off <= diagonal;
    }
  }
  /* zeros that keep x's mask: a zeroed entry keeps its validity */
  mq_tensor *zero = mq_expand(S, mq_tensor_scalar(S, (mq_dtype)t->dtype, 0), t->ndim, t->shape);
  if (t->mask) zero = mq_masked(S, zero, t->mask);
  return mq_where(S, keep, t, zero);
}

mq_tensor *mq_repeat(mq_state *S, mq_tensor *t, int n, const int64_t *sizes) {
  if (n < t->ndim)
    mq_error(S, "repeat: %d size%s for a %d-d tensor: give at least one per dimension", n,
             n == 1 ? "" : "s", t->ndim);
  if (n > MQ_MAX_DIMS) mq_error(S, "repeat: tensors have at most %d dimensions", MQ_MAX_DIMS);
  int64_t shape[MQ_MAX_DIMS] = {0};
  for (int d = 0; d < n; d++) {
    if (sizes[d] < 0)
      mq_error(S, "repeat: sizes must not be negative, got %lld", (long long)sizes[d]);
    shape[d] = d < n - t->ndim ? 1 : t->shape[d - (n - t->ndim)];
  }
  mq_tensor *x = mq_reshape(S, t, n, shape);
  int64_t total = 1;
  for (int d = 0; d < n; d++) {
    if (!mq_mul_ok(shape[d], sizes[d], &shape[d]) || !mq_mul_ok(total, shape[d], &total))
      mq_error(S, "repeat: the result would have more than %lld entries", (long long)INT64_MAX);
  }
  /* one dim at a time: x as (before, size, after), a new dim of [r] copies
   * in front of size, merged with it */
  for (int d = 0; d < n; d++) {
    int64_t r = sizes[d];
    if (r == 1) continue;
    int64_t before = 1, after = 1;
    for (int e = 0; e < d; e++) before *= x->shape[e];
    for (int e = d + 1; e < n; e++) after *= x->shape[e];
    int64_t three[3] = {before, x->shape[d], after};
    int64_t four[4] = {before, r, x->shape[d], after};
    mq_tensor *y = mq_unsqueeze(S, mq_reshape(S, x, 3, three), 1);
    y = mq_expand(S, y, 4, four);
    int64_t next[MQ_MAX_DIMS];
    for (int e = 0; e < n; e++) next[e] = e < d ? shape[e] : x->shape[e];
    next[d] = shape[d];
    x = mq_reshape(S, y, n, next);
  }
  return x;
}

/* [t] rolled by [shift] along normalized dim [d]: two pieces swapped. */
static mq_tensor *roll_dim(mq_state *S, mq_tensor *t, int64_t shift, int d) {
  int64_t len = t->shape[d];
  if (len == 0) return t;
  int64_t s = shift % len;
  if (s < 0) s += len;
  if (s == 0) return t;
  mq_tensor *parts[2] = {mq_narrow(S, t, d, len - s, s), mq_narrow(S, t, d, 0, len - s)};
  return mq_cat(S, 2, parts, d);
}

mq_tensor *mq_roll(mq_state *S, mq_tensor *t, int n, const int64_t *shifts, const int64_t *dims) {
  if (!dims) {
    if (n != 1)
      mq_error(S, "roll: without dims, shifts must be one int (the flattened tensor), got %d", n);
    mq_tensor *flat = roll_dim(S, mq_flatten(S, t, 0, -1), shifts[0], 0);
    return mq_reshape(S, flat, t->ndim, t->shape);
  }
  for (int i = 0; i < n; i++)
    t = roll_dim(S, t, shifts[i], mq_shape_norm_dim(S, dims[i], t->ndim));
  return t;
}

/* torch.diff's prepend/append: x's number of dims, x's shape but along d */
static void check_side(mq_state *S, const mq_tensor *t, const mq_tensor *side, int d, const char *what) {
  bool ok = side->ndim == t->ndim;
  for (int k = 0; ok && k < t->ndim; k++) ok = k == d || side->shape[k] == t->shape[k];
  if (!ok)
    mq_error(S, "diff: %s must have x's number of dims and x's shape except along dim %d: x is %s, "
                "%s is %s", what, d, mq_shape_str(S, t->ndim, t->shape), what,
             mq_shape_str(S, side->ndim, side->shape));
}

mq_tensor *mq_diff(mq_state *S, mq_tensor *t, int64_t n, int64_t dim, mq_tensor *prepend,
                   mq_tensor *append) {
  if (t->ndim == 0) mq_error(S, "diff: x must have at least 1 dimension, got a 0-d tensor");
  if (n < 0) mq_error(S, "diff: n must not be negative, got %lld", (long long)n);
  int d = mq_shape_norm_dim(S, dim, t->ndim);
  if (prepend) check_side(S, t, prepend, d, "prepend");
  if (append) check_side(S, t, append, d, "append");
  /* joined first, as torch (which returns x itself, without them, for n = 0);
   * cat promotes the dtypes and makes a plain side all valid */
  if (n > 0 && (prepend || append)) {
    mq_tensor *parts[3];
    int np = 0;
    if (prepend) parts[np++] = prepend;
    parts[np++] = t;
    if (append) parts[np++] = append;
    t = mq_cat(S, np, parts, d);
  }
  /* each round is one shorter: at most size rounds do anything */
  for (int64_t k = 0; k < n && t->shape[d] > 0; k++) {
    int64_t len = t->shape[d] - 1;
    mq_tensor *hi = mq_narrow(S, t, d, 1, len), *lo = mq_narrow(S, t, d, 0, len);
    if (t->mask) { /* valid where both are: each side restricted to that */
      mq_tensor *both = mq_binary(S, MQ_BIN_BAND, hi->mask, lo->mask);
      hi = mq_as_masked(S, mq_get_data(S, hi), both);
      lo = mq_as_masked(S, mq_get_data(S, lo), both);
    }
    t = mq_binary(S, t->dtype == MQ_DT_BOOL ? MQ_BIN_BXOR : MQ_BIN_SUB, hi, lo);
  }
  return t;
}

mq_tensor *mq_bmm(mq_state *S, mq_tensor *a, mq_tensor *b) {
  if (a->ndim != 3 || b->ndim != 3)
    mq_error(S, "bmm: both operands must be 3-d (batch, rows, columns), got shapes %s and %s "
                "(matmul broadcasts other shapes)", mq_shape_str(S, a->ndim, a->shape),
             mq_shape_str(S, b->ndim, b->shape));
  if (a->shape[0] != b->shape[0])
    mq_error(S, "bmm: the batch sizes differ: shapes %s and %s", mq_shape_str(S, a->ndim, a->shape),
             mq_shape_str(S, b->ndim, b->shape));
  return mq_matmul(S, a, b);
}

mq_tensor *mq_reverse_dims(mq_state *S, mq_tensor *t) {
  int64_t perm[MQ_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) perm[d] = t->ndim - 1 - d;
  return t->ndim < 2 ? t : mq_permute(S, t, t->ndim, perm);
}
