/* matmul.c - matrix products, plain and masked, batched (see shape.h).
 *
 * Each batch matrix is an i-k-j loop over contiguous copies: an output row
 * is built in a block of JB accumulators (in L1) as the sum over k of
 * a[i,k] * b[k, j..], a plain axpy the compiler vectorizes. Blocking over i
 * and k as well measured no faster here (B streams well from L2/L3), so the
 * loop stays simple. float32 accumulates in float64: accurate without a
 * pairwise tree, and vectorizable without -ffast-math.
 *
 * Masks. A masked-out entry of A is skipped (its whole k step). A
 * masked-out entry of B is zeroed in B's copy, which makes its product 0 for
 * every finite a[i,k]; only an inf or NaN a[i,k] would turn that 0 into NaN,
 * so such (rare) steps take a slower loop that selects on B's mask. The
 * output mask is "some valid pair exists", an OR over k of B's mask rows. */
#include "autograd.h"
#include "kernels.h"
#include "shape.h"

#define JB 512

/* out[n, m] = a[n, K] @ b[K, m] (contiguous); ma/mb may be NULL (all
 * valid); b must be zero where mb is false. */
#define DEF_MM(NAME, T, ACC, FINITE)                                           \
  static void NAME(mq_state *S, const T *a, const uint8_t *ma, const T *b,     \
                   const uint8_t *mb, T *out, int64_t n, int64_t K, int64_t m) { \
    ACC c[JB];                                                                 \
    for (int64_t j0 = 0; j0 < m; j0 += JB) {                                   \
      int64_t jn = m - j0 < JB ? m - j0 : JB;                                  \
      for (int64_t i = 0; i < n; i++) {                                        \
        mq_check_interrupt(S);                                                 \
        for (int64_t j = 0; j < jn; j++) c[j] = 0;                             \
        for (int64_t k = 0; k < K; k++) {                                      \
          if (ma && !ma[i * K + k]) continue;                                  \
          ACC x = (ACC)a[i * K + k];                                           \
          const T *bk = b + k * m + j0;                                        \
          if (mb && !FINITE(x)) {                                              \
            const uint8_t *mk = mb + k * m + j0;                               \
            for (int64_t j = 0; j < jn; j++) c[j] += mk[j] ? x * (ACC)bk[j] : 0; \
          } else {                                                             \
            for (int64_t j = 0; j < jn; j++) c[j] += x * (ACC)bk[j];           \
          }                                                                    \
        }                                                                      \
        for (int64_t j = 0; j < jn; j++) out[i * m + j0 + j] = (T)c[j];        \
      }                                                                        \
    }                                                                          \
  }

#define ALWAYS_FINITE(x) ((void)(x), 1)
/* int64 wraps like torch's (two's complement), through unsigned math */
DEF_MM(mm_i64, int64_t, uint64_t, ALWAYS_FINITE)
DEF_MM(mm_f32, float, double, isfinite)
DEF_MM(mm_f64, double, double, isfinite)

/* om[i, j] = some k has ma[i, k] and mb[k, j] (NULL masks: all valid). */
static void mm_mask(const uint8_t *ma, const uint8_t *mb, uint8_t *om, int64_t n, int64_t K,
                    int64_t m) {
  for (int64_t i = 0; i < n; i++) {
    uint8_t *o = om + i * m;
    memset(o, 0, (size_t)m);
    for (int64_t k = 0; k < K; k++) {
      if (ma && !ma[i * K + k]) continue;
      if (!mb) {
        memset(o, 1, (size_t)m);
        break;
      }
      const uint8_t *r = mb + k * m;
      for (int64_t j = 0; j < m; j++) o[j] |= r[j];
    }
  }
}

/* The operands as contiguous matrices of [dt]; B zeroed where masked out. */
static mq_tensor *prepare(mq_state *S, mq_tensor *t, mq_dtype dt, bool zero_masked) {
  t = mq_contiguous(S, mq_astype(S, t, dt));
  if (!zero_masked || !t->mask) return t;
  mq_tensor *z = mq_tensor_new(S, dt, t->ndim, t->shape);
  mq_kernel_where(S, z, t->mask, mq_get_data(S, t),
                  mq_expand(S, mq_tensor_scalar(S, dt, 0), t->ndim, t->shape));
  mq_tensor_set_mask(S, z, t->mask);
  return z;
}

/* Element strides of [t]'s batch dims (all but the last two) aligned to a
 * batch shape of [nb] dims: 0 where [t] is broadcast. */
static void batch_strides(const mq_tensor *t, int nb, int64_t *st) {
  int tb = t->ndim - 2;
  for (int i = 0; i < nb; i++) {
    int d = i - (nb - tb);
    st[i] = d < 0 || t->shape[d] == 1 ? 0 : t->strides[d];
  }
}

mq_tensor *mq_matmul(mq_state *S, mq_tensor *a, mq_tensor *b) {
  if (a->ndim == 0 || b->ndim == 0)
    mq_error(S, "matmul: both operands need at least 1 dimension, got shapes %s and %s (use * "
                "to multiply by a scalar)", mq_shape_str(S, a->ndim, a->shape),
             mq_shape_str(S, b->ndim, b->shape));
  mq_tensor *ab[2] = {a, b};
  mq_dtype dt = mq_result_type(2, ab);
  if (dt == MQ_DT_BOOL)
    mq_error(S, "matmul: not defined for bool tensors (convert with float(x) or long(x))");
  /* 1-d operands are a row (left) or a column (right) vector */
  mq_tensor *A = a->ndim == 1 ? mq_unsqueeze(S, a, 0) : a;
  mq_tensor *B = b->ndim == 1 ? mq_unsqueeze(S, b, 1) : b;
  int64_t n = A->shape[A->ndim - 2], K = A->shape[A->ndim - 1];
  int64_t K2 = B->shape[B->ndim - 2], m = B->shape[B->ndim - 1];
  if (K != K2)
    mq_error(S, "matmul: cannot multiply shapes %s and %s: the left has %lld columns, the "
                "right %lld rows", mq_shape_str(S, a->ndim, a->shape),
             mq_shape_str(S, b->ndim, b->shape), (long long)K, (long long)K2);
  int64_t shape[MQ_MAX_DIMS + 2];
  int nb = mq_broadcast_try(A->ndim - 2, A->shape, B->ndim - 2, B->shape, shape);
  if (nb < 0)
    mq_error(S, "matmul: the batch dims of shapes %s and %s cannot be broadcast",
             mq_shape_str(S, a->ndim, a->shape), mq_shape_str(S, b->ndim, b->shape));
  int nd = nb;
  if (a->ndim > 1) shape[nd++] = n;
  if (b->ndim > 1) shape[nd++] = m;
  if (nd > MQ_MAX_DIMS) mq_error(S, "matmul: the result would have more than %d dims", MQ_MAX_DIMS);
  bool masked = a->mask || b->mask;
  A = prepare(S, A, dt, false);
  B = prepare(S, B, dt, true);
  mq_tensor *out = mq_tensor_new(S, dt, nd, shape);
  mq_tensor *om = masked ? mq_tensor_new(S, MQ_DT_BOOL, nd, shape) : NULL;

  int64_t ast[MQ_MAX_DIMS], bst[MQ_MAX_DIMS], idx[MQ_MAX_DIMS] = {0}, nbatch = 1;
  batch_strides(A, nb, ast);
  batch_strides(B, nb, bst);
  for (int i = 0; i < nb; i++) nbatch *= shape[i];
  size_t es = mq_dtype_size(dt);
  const char *pa = mq_tensor_data(A), *pb = mq_tensor_data(B);
  const uint8_t *pma = A->mask ? mq_tensor_data(A->mask) : NULL;
  const uint8_t *pmb = B->mask ? mq_tensor_data(B->mask) : NULL;
  int64_t aoff = 0, boff = 0; /* element offsets of the current batch */
  for (int64_t bi = 0; bi < (n > 0 && m > 0 ? nbatch : 0); bi++) {
    const void *x = pa + aoff * (int64_t)es, *y = pb + boff * (int64_t)es;
    const uint8_t *mx = pma ? pma + aoff : NULL, *my = pmb ? pmb + boff : NULL;
    char *o = (char *)mq_tensor_data(out) + bi * n * m * (int64_t)es;
    switch (dt) {
    case MQ_DT_I64: mm_i64(S, x, mx, y, my, (int64_t *)o, n, K, m); break;
    case MQ_DT_F32: mm_f32(S, x, mx, y, my, (float *)o, n, K, m); break;
    default: mm_f64(S, x, mx, y, my, (double *)o, n, K, m); break;
    }
    if (om) mm_mask(mx, my, (uint8_t *)mq_tensor_data(om) + bi * n * m, n, K, m);
    for (int d = nb - 1; d >= 0; d--) { /* next batch index */
      aoff += ast[d];
      boff += bst[d];
      if (++idx[d] < shape[d]) break;
      aoff -= ast[d] * shape[d];
      boff -= bst[d] * shape[d];
      idx[d] = 0;
    }
  }
  if (om) mq_tensor_set_mask(S, out, om);
  mq_ag_matmul(S, out, a, b);
  return out;
}
