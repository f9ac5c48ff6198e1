/* sort.c - sort, topk and max/min along a dim (gather.h), and allclose.
 *
 * The orders are worked out as int64 indices first; the values are then a
 * gather of x by them (gather.c), so their masks and gradients are the
 * gather's: each value's gradient goes to the entry it came from. */
#include <math.h>

#include "gather.h"
#include "kernels.h"
#include "shape.h"

/* One slice's entries compared as their dtype: NaN is the largest value
 * (torch's sort), ties keep their order (a stable merge sort). */
typedef struct slice {
  const char *x; /* the slice's first entry */
  int64_t step;  /* between entries, in elements */
  mq_dtype dt;
  bool desc;
} slice;

static int cmp3(const slice *L, int64_t i, int64_t j) {
  switch (L->dt) {
  case MQ_DT_F32: case MQ_DT_F64: {
    double a, b;
    if (L->dt == MQ_DT_F32) a = ((const float *)L->x)[i * L->step], b = ((const float *)L->x)[j * L->step];
    else a = ((const double *)L->x)[i * L->step], b = ((const double *)L->x)[j * L->step];
    bool na = a != a, nb = b != b;
    if (na || nb) return na - nb;
    return (a > b) - (a < b);
  }
  case MQ_DT_I64: {
    int64_t a = ((const int64_t *)L->x)[i * L->step], b = ((const int64_t *)L->x)[j * L->step];
    return (a > b) - (a < b);
  }
  default: {
    uint8_t a = ((const uint8_t *)L->x)[i * L->step], b = ((const uint8_t *)L->x)[j * L->step];
    return (a > b) - (a < b);
  }
  }
}

/* j must come before i (strictly): equal entries keep their order. */
static bool before(const slice *L, int64_t j, int64_t i) {
  int c = cmp3(L, j, i);
  return L->desc ? c > 0 : c < 0;
}

/* Bottom-up merge sort of the positions p[0..n) with buffer tmp; returns
 * the array that holds the result. Iterative: no recursion. */
static int64_t *merge_sort(mq_state *S, const slice *L, int64_t *p, int64_t *tmp, int64_t n) {
  for (int64_t w = 1; w < n; w *= 2) {
    mq_poll(S);
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) tmp[o++] = before(L, p[b], p[a]) ? p[b++] : p[a++];
      while (a < mid) tmp[o++] = p[a++];
      while (b < hi) tmp[o++] = p[b++];
    }
    int64_t *t = p;
    p = tmp;
    tmp = t;
    if (w > INT64_MAX / 2) break;
  }
  return p;
}

/* The sorted positions along [dim] as a plain int64 tensor of x's shape:
 * each slice's valid entries in order, then its masked-out ones as they
 * were. */
static mq_tensor *sort_order(mq_state *S, mq_tensor *x, int dim, bool desc) {
  mq_tensor *xd = mq_contiguous(S, mq_get_data(S, x));
  const uint8_t *xm = x->mask ? mq_tensor_data(mq_contiguous(S, x->mask)) : NULL;
  int64_t n = x->ndim ? x->shape[dim] : 1, inner = 1, outer = 1;
  for (int d = 0; d < x->ndim; d++) {
    if (d < dim) outer *= x->shape[d];
    if (d > dim) inner *= x->shape[d];
  }
  mq_tensor *out = mq_tensor_new(S, MQ_DT_I64, x->ndim, x->shape);
  int64_t *o = mq_tensor_data(out);
  size_t bytes = (size_t)(n ? n : 1) * sizeof(int64_t);
  int64_t *p = mq_scratch(S, bytes), *tmp = mq_scratch(S, bytes), *rest = mq_scratch(S, bytes);
  size_t es = mq_dtype_size((mq_dtype)x->dtype);
  for (int64_t b = 0; b < outer; b++)
    for (int64_t c = 0; c < inner; c++) {
      mq_poll(S);
      int64_t base = b * n * inner + c, nv = 0, nm = 0;
      for (int64_t j = 0; j < n; j++) {
        if (xm && !xm[base + j * inner]) rest[nm++] = j;
        else p[nv++] = j;
      }
      slice L = {(const char *)mq_tensor_data(xd) + (size_t)base * es, inner, (mq_dtype)x->dtype,
                 desc};
      int64_t *sorted = merge_sort(S, &L, p, tmp, nv);
      for (int64_t j = 0; j < nv; j++) o[base + j * inner] = sorted[j];
      for (int64_t j = 0; j < nm; j++) o[base + (nv + j) * inner] = rest[j];
    }
  return out;
}

/* values = x gathered by the order; the indices carry the values' mask,
 * on a view of their own (the gather's node holds the plain order). */
static void by_order(mq_state *S, mq_tensor *x, int dim, mq_tensor *order, mq_tensor **values,
                     mq_tensor **indices) {
  *values = mq_gather(S, x, dim, order);
  *indices = order;
  if (!(*values)->mask) return;
  *indices = mq_tensor_view(S, order, order->ndim, order->shape, order->strides, order->offset);
  mq_tensor_set_mask(S, *indices, (*values)->mask);
}

void mq_sort(mq_state *S, mq_tensor *x, int dim, bool descending, mq_tensor **values,
             mq_tensor **indices) {
  if (x->sparse) mq_error(S, "sort: x is sparse; to_dense(x) first");
  by_order(S, x, dim, sort_order(S, x, dim, descending), values, indices);
}

void mq_topk(mq_state *S, mq_tensor *x, int64_t k, int dim, bool largest, mq_tensor **values,
             mq_tensor **indices) {
  if (x->sparse) mq_error(S, "topk: x is sparse; to_dense(x) first");
  int64_t n = x->ndim ? x->shape[dim] : 1;
  if (k < 0 || k > n)
    mq_error(S, "topk: k=%lld is out of range for dim %d of size %lld", (long long)k, dim,
             (long long)n);
  mq_tensor *order = sort_order(S, x, dim, largest);
  if (x->ndim) order = mq_contiguous(S, mq_narrow(S, order, dim, 0, k));
  by_order(S, x, dim, order, values, indices);
}

void mq_extreme_dim(mq_state *S, mq_tensor *x, int dim, bool keepdim, bool max,
                    mq_tensor **values, mq_tensor **indices) {
  const char *who = max ? "max" : "min";
  if (x->sparse) mq_error(S, "%s: x is sparse; to_dense(x) first", who);
  if (x->ndim && x->shape[dim] == 0 && !x->mask)
    mq_error(S, "%s: dim %d of x has size 0; there is no %s", who, dim, who);
  /* argext's index of each slice, masked out where the slice has no
   * valid entry, so the gather leaves that value masked out too */
  mq_tensor *ix = mq_argext(S, x, x->ndim ? dim : -1, true, max);
  *values = mq_gather(S, x, dim, ix);
  *indices = ix;
  if (!keepdim && x->ndim) {
    int64_t d = dim;
    *values = mq_squeeze(S, *values, 1, &d);
    *indices = mq_squeeze(S, *indices, 1, &d);
  }
}

/* --- allclose ------------------------------------------------------------------------ */

bool mq_allclose(mq_state *S, mq_tensor *a, mq_tensor *b, double rtol, double atol,
                 bool equal_nan) {
  if (a->sparse || b->sparse) mq_error(S, "allclose: a and b must be strided; to_dense first");
  int64_t shape[MQ_MAX_DIMS];
  int nd = mq_broadcast_shapes(S, a->ndim, a->shape, b->ndim, b->shape, shape);
  /* a plain operand takes the other's mask, as in a binary op; two masked
   * ones must have the same mask (where a binary op raises, this is false) */
  mq_tensor *ma = mq_contiguous(S, mq_expand(S, mq_get_mask(S, a->mask ? a : b), nd, shape));
  mq_tensor *mb = mq_contiguous(S, mq_expand(S, mq_get_mask(S, b->mask ? b : a), nd, shape));
  const uint8_t *pa = mq_tensor_data(ma), *pb = mq_tensor_data(mb);
  int64_t n = ma->numel;
  if (n && memcmp(pa, pb, (size_t)n) != 0) return false;
  /* both read as float64: torch compares in the promoted dtype, which
   * float64 holds exactly for bool, float32 and ints up to 2^53 */
  const double *x = mq_tensor_data(
      mq_contiguous(S, mq_expand(S, mq_astype(S, mq_get_data(S, a), MQ_DT_F64), nd, shape)));
  const double *y = mq_tensor_data(
      mq_contiguous(S, mq_expand(S, mq_astype(S, mq_get_data(S, b), MQ_DT_F64), nd, shape)));
  for (int64_t k = 0; k < n; k++) {
    if (!pa[k]) continue;
    double u = x[k], v = y[k];
    if (u == v) continue; /* equal infinities too */
    if (u != u || v != v) {
      if (equal_nan && u != u && v != v) continue;
      return false;
    }
    if (isinf(u) || isinf(v) || !(fabs(u - v) <= atol + rtol * fabs(v))) return false;
  }
  return true;
}
