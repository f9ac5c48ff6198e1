/* sort.c - sort, topk, kthvalue and max/min along a dim (gather.h), the
 * order quantile reads (quantile.c), and allclose.
 *
 * The orders are worked out as int64 indices first; the values are then a
 * gather of x by them (gather.c), so their masks and gradients are the
 * gather's: each value's gradient goes to the entry it came from. */
#include <math.h>

#include "../../core/checked.h"
#include "gather.h"
#include "../tensor/internal.h"
#include "../tensor/msort.h"
#include "ops.h"
#include "../tensor/shape.h"

/* Each valid entry of a slice becomes an item: its key (double for the
 * float dtypes, which float32 widens to exactly; int64 for int64 and bool)
 * and its position. Items are ordered by key - NaN after every number, as
 * torch's sort - and equal keys by position, a strict total order: any
 * algorithm below gives the stable order. */
#define FLT_LT(a, b) ((a) < (b) || ((b) != (b) && (a) == (a)))
#define INT_LT(a, b) ((a) < (b))

#define DEF_ORDER(SUF, KT, LT)                                                 \
  typedef struct item_##SUF {                                                  \
    KT k;                                                                      \
    int64_t p;                                                                 \
  } item_##SUF;                                                                \
  static inline bool before_##SUF(const item_##SUF *a, const item_##SUF *b, bool desc) { \
    if (LT(a->k, b->k)) return !desc;                                          \
    if (LT(b->k, a->k)) return desc;                                           \
    return a->p < b->p;                                                        \
  }                                                                            \
  /* Stable merge sort of a[0..n) with buffer t (msort.h); returns the     \
   * array holding the result. */                                            \
  MQ_DEF_MSORT(msort_##SUF, item_##SUF, bool, before_##SUF)                    \
  /* A heap of k items whose root comes last in the order. */                 \
  static void down_##SUF(item_##SUF *h, int64_t k, int64_t i, bool desc) {     \
    for (;;) {                                                                 \
      int64_t l = 2 * i + 1, r = l + 1, w = i;                                 \
      if (l < k && before_##SUF(&h[w], &h[l], desc)) w = l;                    \
      if (r < k && before_##SUF(&h[w], &h[r], desc)) w = r;                    \
      if (w == i) return;                                                      \
      item_##SUF tmp = h[i];                                                   \
      h[i] = h[w], h[w] = tmp, i = w;                                          \
    }                                                                          \
  }                                                                            \
  /* The first k (< n) items of a[0..n) in the order, into a[0..k) in any   \
   * order: O(n log k), for topk. */                                           \
  static void select_##SUF(mq_state *S, item_##SUF *a, int64_t n, int64_t k, bool desc) { \
    for (int64_t i = k / 2; i-- > 0;) down_##SUF(a, k, i, desc);               \
    for (int64_t j = k; j < n; j++) {                                          \
      if ((j & (MQ_MSORT_POLL - 1)) == 0) mq_check_interrupt(S);               \
      if (k && before_##SUF(&a[j], &a[0], desc)) {                             \
        a[0] = a[j];                                                           \
        down_##SUF(a, k, 0, desc);                                             \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  /* One slice: its first k valid positions in order into o (step inner),    \
   * then its masked-out positions as they were until k are written. */      \
  static void slice_##SUF(mq_state *S, item_##SUF *a, item_##SUF *t, int64_t nv,         \
                          const int64_t *rest, int64_t k, bool desc, int64_t *o,          \
                          int64_t inner) {                                     \
    int64_t kept = nv;                                                         \
    if (k < nv) {                                                              \
      select_##SUF(S, a, nv, k, desc);                                         \
      kept = k;                                                                \
    }                                                                          \
    item_##SUF *sorted = msort_##SUF(S, a, t, kept, desc);                     \
    for (int64_t j = 0; j < kept; j++) o[j * inner] = sorted[j].p;             \
    for (int64_t j = kept; j < k; j++) o[j * inner] = rest[j - kept];          \
  }
DEF_ORDER(f, double, FLT_LT)
DEF_ORDER(i, int64_t, INT_LT)

/* The key of entry j of a contiguous [dt] array. */
static double key_f(const void *x, mq_dtype dt, int64_t j) {
  return dt == MQ_DT_F32 ? (double)((const float *)x)[j] : ((const double *)x)[j];
}
static int64_t key_i(const void *x, mq_dtype dt, int64_t j) {
  return dt == MQ_DT_I64 ? ((const int64_t *)x)[j] : (int64_t)((const uint8_t *)x)[j];
}

/* The first k positions of each slice along [dim] in the order, as a plain
 * int64 tensor of x's shape with k along dim: its valid entries sorted,
 * then its masked-out ones as they were. */
mq_tensor *mq_sort_order(mq_state *S, mq_tensor *x, int dim, bool desc, int64_t k) {
  mq_dtype dt = (mq_dtype)x->dtype;
  const void *xd = mq_tensor_data(mq_contiguous(S, mq_get_data(S, x)));
  const uint8_t *xm = x->mask ? mq_tensor_data(mq_contiguous(S, x->mask)) : NULL;
  int64_t n = x->ndim ? x->shape[dim] : 1, inner = 1, outer = 1, shape[MQ_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) {
    if (d < dim) outer *= x->shape[d];
    if (d > dim) inner *= x->shape[d];
    shape[d] = d == dim ? k : x->shape[d];
  }
  mq_tensor *out = mq_tensor_new(S, MQ_DT_I64, x->ndim, shape);
  int64_t *o = mq_tensor_data(out);
  size_t len = (size_t)(n ? n : 1);
  bool flt = mq_dtype_is_float(dt);
  size_t isz = flt ? sizeof(item_f) : sizeof(item_i);
  void *a = mq_scratch(S, mq_ck_zmul(S, len, isz, "sort")), *t = mq_scratch(S, len * isz);
  int64_t *rest = mq_scratch(S, len * sizeof(int64_t));
  int64_t read = 0; /* entries gathered since the last poll */
  for (int64_t b = 0; b < outer; b++)
    for (int64_t c = 0; c < inner; c++) {
      if ((read += n) >= MQ_MSORT_POLL) { /* many short slices, or a long one */
        read = 0;
        mq_check_interrupt(S);
      }
      int64_t base = b * n * inner + c, nv = 0, nm = 0;
      for (int64_t j = 0; j < n; j++) {
        mq_poll_at(S, j); /* one slice may hold every entry */
        int64_t e = base + j * inner;
        if (xm && !xm[e]) rest[nm++] = j;
        else if (flt) ((item_f *)a)[nv++] = (item_f){key_f(xd, dt, e), j};
        else ((item_i *)a)[nv++] = (item_i){key_i(xd, dt, e), j};
      }
      int64_t *ob = o + b * k * inner + c;
      if (flt) slice_f(S, a, t, nv, rest, k, desc, ob, inner);
      else slice_i(S, a, t, nv, rest, k, desc, ob, inner);
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
  by_order(S, x, dim, mq_sort_order(S, x, dim, descending, x->ndim ? x->shape[dim] : 1), values,
           indices);
}

void mq_topk(mq_state *S, mq_tensor *x, int64_t k, int dim, bool largest, mq_tensor **values,
             mq_tensor **indices) {
  if (x->sparse) mq_error(S, "topk: x is sparse; to_dense(x) first");
  int64_t n = x->ndim ? x->shape[dim] : 1;
  if (k < 0 || k > n)
    mq_error(S, "topk: k=%lld is out of range for dim %d of size %lld", (long long)k, dim,
             (long long)n);
  /* a 0-d x gives its one entry whatever k (0 or 1), as torch */
  by_order(S, x, dim, mq_sort_order(S, x, dim, largest, x->ndim ? k : 1), values, indices);
}

void mq_kthvalue(mq_state *S, mq_tensor *x, int64_t k, int dim, bool keepdim, mq_tensor **values,
                 mq_tensor **indices) {
  if (x->sparse) mq_error(S, "kthvalue: x is sparse; to_dense(x) first");
  if (x->dtype == MQ_DT_BOOL) mq_error(S, "kthvalue: x is a bool tensor, which has no k-th value (as torch)");
  int64_t n = x->ndim ? x->shape[dim] : 1;
  if (n == 0)
    mq_error(S, "kthvalue: dim %d of x has size 0; there is no k-th value", dim);
  if (k < 1 || k > n)
    mq_error(S, "kthvalue: k=%lld is out of range for dim %d of size %lld (k counts from 1)",
             (long long)k, dim, (long long)n);
  /* the first k of the order, valid ones sorted then masked-out ones: its
   * last is the k-th smallest valid entry, or a masked-out one where the
   * slice has fewer than k valid entries, which the gather masks out */
  mq_tensor *order = mq_sort_order(S, x, dim, false, x->ndim ? k : 1);
  if (x->ndim) order = mq_narrow(S, order, dim, k - 1, 1);
  by_order(S, x, dim, order, values, indices);
  if (!keepdim && x->ndim) {
    int64_t d = dim;
    *values = mq_squeeze(S, *values, 1, &d);
    *indices = mq_squeeze(S, *indices, 1, &d);
  }
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
    mq_poll_at(S, k);
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
