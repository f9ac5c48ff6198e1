/* quantile.c - torch.quantile and nanquantile over the valid entries.
 *
 * The valid entries of each slice are put in order by sort.c's
 * mq_sort_order (NaN after every number, masked-out entries after those);
 * mq_quantile_pick turns q into the two places of that order to read and
 * the weight between them, torch 1.13's rule for each interpolation; the
 * values are gathers of x at those places, interpolated by torch's lerp
 * as tensor ops, so masks and gradients follow the gathers: a slice with
 * no valid entry reads a masked-out one and stays masked out. */
#include <math.h>
#include <string.h>

#include "../../core/checked.h"
#include "gather.h"
#include "../tensor/internal.h"
#include "ops.h"
#include "../tensor/shape.h"

/* torch's quantile rank: q * last, in float32 for float32 data (torch
 * computes it in the input's dtype); clamped at 0, where nanquantile of
 * nothing but NaN reads the first (a NaN). The modes other than linear
 * and midpoint round the rank and never interpolate (weight 0). */
mq_qpick mq_quantile_pick(double q, int64_t last, mq_qinterp how, bool f32, bool at_last) {
  double r = at_last ? (double)last : f32 ? (double)((float)q * (float)last) : q * (double)last;
  if (r < 0) r = 0;
  if (how == MQ_QI_LOWER) r = floor(r);
  else if (how == MQ_QI_HIGHER) r = ceil(r);
  else if (how == MQ_QI_NEAREST) r = nearbyint(r); /* half to even, as torch.round */
  mq_qpick p = {(int64_t)r, (int64_t)ceil(r), 0};
  if (how == MQ_QI_MIDPOINT) p.w = 0.5;
  else if (how == MQ_QI_LINEAR) p.w = r - (double)p.below; /* exact in float32 too */
  return p;
}

static double elem(const void *x, mq_dtype dt, int64_t e) {
  return dt == MQ_DT_F32 ? (double)((const float *)x)[e] : ((const double *)x)[e];
}

/* The places to read (positions along dim in x) and the weights, per q and
 * slice: ib, ia int64 and w, 1 - w of x's dtype, lo where w < 0.5, all of
 * x's shape with nq along d. */
typedef struct picks {
  mq_tensor *ib, *ia, *w, *w1, *lo;
} picks;

static picks pick_all(mq_state *S, mq_tensor *x, int d, const double *q, int64_t nq,
                      mq_qinterp how, bool skip_nan) {
  mq_dtype dt = (mq_dtype)x->dtype;
  int64_t n = x->shape[d], inner = 1, outer = 1, shape[MQ_MAX_DIMS];
  for (int k = 0; k < x->ndim; k++) {
    if (k < d) outer *= x->shape[k];
    if (k > d) inner *= x->shape[k];
    shape[k] = k == d ? nq : x->shape[k];
  }
  const int64_t *ord = mq_tensor_data(mq_sort_order(S, x, d, false, n));
  const void *xd = mq_tensor_data(mq_contiguous(S, mq_get_data(S, x)));
  const uint8_t *xm = x->mask ? mq_tensor_data(mq_contiguous(S, x->mask)) : NULL;
  picks P = {mq_tensor_new(S, MQ_DT_I64, x->ndim, shape), mq_tensor_new(S, MQ_DT_I64, x->ndim, shape),
             mq_tensor_new(S, dt, x->ndim, shape), mq_tensor_new(S, dt, x->ndim, shape),
             mq_tensor_new(S, MQ_DT_BOOL, x->ndim, shape)};
  int64_t *ib = mq_tensor_data(P.ib), *ia = mq_tensor_data(P.ia);
  uint8_t *lo = mq_tensor_data(P.lo);
  void *w = mq_tensor_data(P.w), *w1 = mq_tensor_data(P.w1);
  bool f32 = dt == MQ_DT_F32;
  for (int64_t b = 0; b < outer; b++)
    for (int64_t c = 0; c < inner; c++) {
      int64_t base = b * n * inner + c, nv = 0, nn = 0;
      for (int64_t j = 0; j < n; j++) {
        mq_poll_at(S, j);
        int64_t e = base + j * inner;
        if (xm && !xm[e]) continue;
        nv++;
        nn += !isnan(elem(xd, dt, e));
      }
      /* quantile: a valid NaN makes the rank the last place (a NaN), as
       * torch; nanquantile ranks among the numbers only */
      int64_t last = skip_nan ? nn - 1 : nv - 1;
      for (int64_t k = 0; k < nq; k++) {
        mq_poll_at(S, k); /* q may be long too */
        mq_qpick p = mq_quantile_pick(q[k], last, how, f32, !skip_nan && nn < nv);
        int64_t o = b * nq * inner + k * inner + c;
        ib[o] = ord[base + p.below * inner];
        ia[o] = ord[base + p.above * inner];
        lo[o] = p.w < 0.5;
        if (f32) ((float *)w)[o] = (float)p.w, ((float *)w1)[o] = 1.0f - (float)p.w;
        else ((double *)w)[o] = p.w, ((double *)w1)[o] = 1.0 - p.w;
      }
    }
  return P;
}

mq_tensor *mq_quantile(mq_state *S, mq_tensor *x, const double *q, int64_t nq, bool qvec,
                       bool has_dim, int64_t dim, bool keepdim, mq_qinterp how, bool skip_nan) {
  const char *who = skip_nan ? "nanquantile" : "quantile";
  if (x->sparse) mq_error(S, "%s: x is sparse; to_dense(x) first", who);
  if (!mq_dtype_is_float((mq_dtype)x->dtype))
    mq_error(S, "%s: x must be a float tensor, got %s (as torch; float(x) converts)", who,
             mq_dtype_name((mq_dtype)x->dtype));
  if (x->numel == 0) mq_error(S, "%s: x is empty; it has no quantile (as torch)", who);
  for (int64_t k = 0; k < nq; k++)
    if (!(q[k] >= 0 && q[k] <= 1)) mq_error(S, "%s: q must be in [0, 1], got %g", who, q[k]);
  /* the result's shape: x's without dim (1 there with keepdim; every dim
   * 1 with keepdim and no dim), after q's length when q is a tensor */
  int tnd = 0, nd0 = x->ndim;
  int64_t tshape[MQ_MAX_DIMS + 1];
  if (qvec) tshape[tnd++] = nq;
  int d = 0;
  if (has_dim) d = mq_shape_norm_dim(S, dim, x->ndim);
  for (int k = 0; k < nd0; k++)
    if (keepdim) tshape[tnd++] = has_dim && k != d ? x->shape[k] : 1;
    else if (has_dim && k != d) tshape[tnd++] = x->shape[k];
  if (!has_dim || nd0 == 0) {
    int64_t all = x->numel;
    x = mq_reshape(S, x, 1, &all);
    d = 0;
  }
  if (x->shape[d] > (int64_t)1 << 24)
    mq_error(S, "%s: %lld entries along the dim, more than 2**24 (as torch)", who,
             (long long)x->shape[d]);
  picks P = pick_all(S, x, d, q, nq, how, skip_nan);
  mq_tensor *r = mq_gather(S, x, d, P.ib);
  if (how == MQ_QI_LINEAR || how == MQ_QI_MIDPOINT) {
    /* torch's lerp: from the lower end below weight 0.5, else from the upper */
    mq_tensor *va = mq_gather(S, x, d, P.ia);
    mq_tensor *diff = mq_binary(S, MQ_BIN_SUB, va, r);
    mq_tensor *up = mq_binary(S, MQ_BIN_ADD, r, mq_binary(S, MQ_BIN_MUL, P.w, diff));
    mq_tensor *down = mq_binary(S, MQ_BIN_SUB, va, mq_binary(S, MQ_BIN_MUL, diff, P.w1));
    r = mq_where(S, P.lo, up, down);
  }
  if (qvec && d) { /* q's dim first */
    int64_t perm[MQ_MAX_DIMS];
    perm[0] = d;
    for (int k = 0, j = 1; k < r->ndim; k++)
      if (k != d) perm[j++] = k;
    r = mq_permute(S, r, r->ndim, perm);
  }
  return mq_reshape(S, r, tnd, tshape);
}
