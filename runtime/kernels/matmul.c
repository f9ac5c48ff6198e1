/* matmul.c - matrix products, plain and masked, batched (ops.h: mq_matmul).
 *
 * Each batch matrix is an i-k-j loop over contiguous copies: an output row
 * is built in a block of JB accumulators (in L1) as the sum over k of
 * a[i,k] * b[k, j..], a plain axpy the compiler vectorizes. Blocking over i
 * and k as well measured no faster here (B streams well from L2/L3), so the
 * loop stays simple. float32 accumulates in float64: accurate without a
 * pairwise tree, and vectorizable without -ffast-math. Output rows are
 * independent, so large products share them out among the threads; each
 * row is computed the same way whoever computes it.
 *
 * Masks. A masked-out entry of A is skipped (its whole k step). A
 * masked-out entry of B is zeroed in B's copy, which makes its product 0 for
 * every finite a[i,k]; only an inf or NaN a[i,k] would turn that 0 into NaN,
 * so such (rare) steps take a slower loop that selects on B's mask. The
 * output mask is "some valid pair exists", an OR over k of B's mask rows. */
#include "../tensor/cpu.h"
#include "../tensor/internal.h"
#include "ops.h"
#include "../tensor/parallel.h"
#include "../tensor/shape.h"
#include "../tensor/tape.h"

#define JB 512

/* Rows [i0, i1) of out[n, m] = a[n, K] @ b[K, m] (contiguous); ma/mb may
 * be NULL (all valid); b must be zero where mb is false, and every column
 * outside [jlo, jhi) wholly masked out (a padded key). ks: K scratch
 * indices. A row's valid k steps are listed first (a padded row's masked
 * tail costs nothing more), then taken four at a time: each accumulator is
 * loaded and stored once per four products, which are still added one
 * after the other in k order, so the sums are those of one step at a time
 * to the bit. A step whose a[i,k] is inf or NaN against a masked b goes
 * alone through the select. */
#define DEF_MM(NAME, ATTR, T, ACC, FINITE, MADD)                               \
  ATTR static void NAME(const T *a, const uint8_t *ma, const T *b, const uint8_t *mb, T *out, \
                           int64_t i0, int64_t i1, int64_t K, int64_t m, int64_t *ks, \
                           int64_t jlo, int64_t jhi) {                         \
    ACC c[JB];                                                                 \
    for (int64_t i = i0; i < i1; i++) {                                        \
      /* columns of b with no valid entry: 0, as their sums of zeros are */   \
      for (int64_t j = 0; j < jlo; j++) out[i * m + j] = 0;                    \
      for (int64_t j = jhi; j < m; j++) out[i * m + j] = 0;                    \
      int64_t nk = 0;                                                          \
      for (int64_t k = 0; k < K; k++) {                                        \
        ks[nk] = k;                                                            \
        nk += !ma || ma[i * K + k];                                            \
      }                                                                        \
      const T *ar = a + i * K;                                                 \
      for (int64_t j0 = jlo; j0 < jhi; j0 += JB) {                             \
        int64_t jn = jhi - j0 < JB ? jhi - j0 : JB;                            \
        for (int64_t j = 0; j < jn; j++) c[j] = 0;                             \
        int64_t q = 0;                                                         \
        for (; q + 4 <= nk; q += 4) {                                          \
          ACC x0 = (ACC)ar[ks[q]], x1 = (ACC)ar[ks[q + 1]];                    \
          ACC x2 = (ACC)ar[ks[q + 2]], x3 = (ACC)ar[ks[q + 3]];                \
          if (mb && !(FINITE(x0) && FINITE(x1) && FINITE(x2) && FINITE(x3))) break; \
          const T *b0 = b + ks[q] * m + j0, *b1 = b + ks[q + 1] * m + j0;      \
          const T *b2 = b + ks[q + 2] * m + j0, *b3 = b + ks[q + 3] * m + j0;  \
          for (int64_t j = 0; j < jn; j++) {                                   \
            ACC t = c[j];                                                      \
            t = MADD(t, x0, (ACC)b0[j]);                                       \
            t = MADD(t, x1, (ACC)b1[j]);                                       \
            t = MADD(t, x2, (ACC)b2[j]);                                       \
            t = MADD(t, x3, (ACC)b3[j]);                                       \
            c[j] = t;                                                          \
          }                                                                    \
        }                                                                      \
        for (; q < nk; q++) { /* the rest, and everything after a non-finite */ \
          ACC x = (ACC)ar[ks[q]];                                              \
          const T *bk = b + ks[q] * m + j0;                                    \
          if (mb && !FINITE(x)) {                                              \
            const uint8_t *mk = mb + ks[q] * m + j0;                           \
            for (int64_t j = 0; j < jn; j++) c[j] += mk[j] ? x * (ACC)bk[j] : 0; \
          } else {                                                             \
            for (int64_t j = 0; j < jn; j++) c[j] = MADD(c[j], x, (ACC)bk[j]); \
          }                                                                    \
        }                                                                      \
        for (int64_t j = 0; j < jn; j++) out[i * m + j0 + j] = (T)c[j];        \
      }                                                                        \
    }                                                                          \
  }

#define ALWAYS_FINITE(x) ((void)(x), 1)
#define MADD(t, x, y) ((t) + (x) * (y))
/* int64 wraps like torch's (two's complement), through unsigned math */
DEF_MM(mm_i64, MQ_WIDE, int64_t, uint64_t, ALWAYS_FINITE, MADD)
DEF_MM(mm_f32, MQ_WIDE, float, double, isfinite, MADD)
DEF_MM(mm_f64, MQ_WIDE, double, double, isfinite, MADD)
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
/* float32 by fma on the AVX2 and AVX-512 paths (cpu.h) of a CPU that has
 * it: a float32 product widened to float64 is exact (24 + 24 bits), so
 * rounding product and sum once gives the bits of the multiply (not
 * rounded) then the add: the same results as the portable path's mm_f32,
 * faster (tests/unit/test_cpu_paths.c compares them). Not for float64,
 * whose products are rounded. */
#define MM_FMA 1
#define MADD_FMA(t, x, y) __builtin_fma((x), (y), (t))
DEF_MM(mm_f32_fma, __attribute__((target("avx2,fma"))), float, double, isfinite, MADD_FMA)
#endif

/* om[i, j] = some k has ma[i, k] and mb[k, j] (NULL masks: all valid), for
 * rows [i0, i1). */
static void mm_mask(const uint8_t *ma, const uint8_t *mb, uint8_t *om, int64_t i0, int64_t i1,
                    int64_t K, int64_t m) {
  for (int64_t i = i0; i < i1; i++) {
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

/* For each of the [nm] contiguous [K, m] mask matrices at [mb], which of
 * its columns have a valid entry, in [cols] (m bytes per matrix), and their
 * span [lo, hi) (lo == hi: none), in [span] (2 per matrix). */
static void column_spans(const uint8_t *mb, int64_t nm, int64_t K, int64_t m, uint8_t *cols,
                         int64_t *span) {
  for (int64_t b = 0; b < nm; b++) {
    uint8_t *col = cols + b * m;
    memset(col, 0, (size_t)m);
    for (int64_t k = 0; k < K; k++) {
      const uint8_t *r = mb + (b * K + k) * m;
      for (int64_t j = 0; j < m; j++) col[j] |= r[j];
    }
    mq_valid_span(col, m, &span[2 * b], &span[2 * b + 1]);
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

/* One product: rows of batch matrices, items q = batch * n + row. */
typedef struct mm_job {
  mq_dtype dt;
  int64_t es, n, K, m;
  int nb;
  const int64_t *shape, *ast, *bst; /* batch shape and element strides */
  const char *pa, *pb;
  const uint8_t *pma, *pmb;
  char *po;
  uint8_t *pom;
  int64_t *ks; /* per thread: K indices */
  const int64_t *bspan; /* per matrix of b: its span of columns with a valid entry, or NULL */
  const uint8_t *bcols; /* per matrix of b: which columns have one (m bytes) */
  bool fma;             /* an AVX2 path on a CPU with FMA: float32 takes mm_f32_fma */
} mm_job;

static void mm_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const mm_job *J = ctx;
  int64_t n = J->n, K = J->K, m = J->m, es = J->es;
  for (int64_t q = lo; q < hi;) {
    int64_t bi = q / n, i0 = q % n, i1 = n - i0 < hi - q ? n : i0 + (hi - q);
    int64_t aoff, boff; /* element offsets of batch bi */
    mq_batch_offsets(J->nb, J->shape, bi, J->ast, &aoff, J->bst, &boff);
    const void *x = J->pa + aoff * es, *y = J->pb + boff * es;
    const uint8_t *mx = J->pma ? J->pma + aoff : NULL, *my = J->pmb ? J->pmb + boff : NULL;
    char *o = J->po + bi * n * m * es;
    int64_t *ks = J->ks + t * K, jlo = 0, jhi = m;
    if (J->bspan && K > 0) {
      const int64_t *sp = J->bspan + 2 * (boff / (K * m));
      jlo = sp[0], jhi = sp[1];
    }
    switch (J->dt) {
    case MQ_DT_I64: mm_i64(x, mx, y, my, (int64_t *)o, i0, i1, K, m, ks, jlo, jhi); break;
    case MQ_DT_F32:
#ifdef MM_FMA
      if (J->fma) {
        mm_f32_fma(x, mx, y, my, (float *)o, i0, i1, K, m, ks, jlo, jhi);
        break;
      }
#endif
      mm_f32(x, mx, y, my, (float *)o, i0, i1, K, m, ks, jlo, jhi);
      break;
    default: mm_f64(x, mx, y, my, (double *)o, i0, i1, K, m, ks, jlo, jhi); break;
    }
    if (J->pom) {
      /* with a all valid, a row of the mask is "the column has a valid b" */
      const uint8_t *cols = J->bcols && !mx && K > 0 ? J->bcols + (boff / (K * m)) * m : NULL;
      if (cols)
        for (int64_t i = i0; i < i1; i++) memcpy(J->pom + bi * n * m + i * m, cols, (size_t)m);
      else
        mm_mask(mx, my, J->pom + bi * n * m, i0, i1, K, m);
    }
    q += i1 - i0;
  }
}

mq_tensor *mq_matmul(mq_state *S, mq_tensor *a, mq_tensor *b) {
  if (mq_dtype_is_narrow((mq_dtype)a->dtype) || mq_dtype_is_narrow((mq_dtype)b->dtype)) {
    /* storage dtypes: int8 @ int8 is int8 (wrapping) as torch; a half type
     * accumulates in float32 and rounds once */
    mq_tensor *ab[2] = {a, b};
    mq_dtype want = mq_result_type(2, ab);
    return mq_narrow_back(S, mq_matmul(S, mq_tensor_computable(S, a), mq_tensor_computable(S, b)), want);
  }
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

  int64_t ast[MQ_MAX_DIMS], bst[MQ_MAX_DIMS], nbatch = 1;
  batch_strides(A, nb, ast);
  batch_strides(B, nb, bst);
  for (int i = 0; i < nb; i++) nbatch *= shape[i];
  mm_job J = {.dt = dt, .es = (int64_t)mq_dtype_size(dt), .n = n, .K = K, .m = m, .nb = nb,
              .shape = shape, .ast = ast, .bst = bst, .pa = mq_tensor_data(A),
              .pb = mq_tensor_data(B), .pma = A->mask ? mq_tensor_data(A->mask) : NULL,
              .pmb = B->mask ? mq_tensor_data(B->mask) : NULL, .po = mq_tensor_data(out),
              .pom = om ? mq_tensor_data(om) : NULL};
  /* rows are independent: the threads share them out, a row at a time
   * when rows are long (K * m multiply-adds each) */
  int64_t rows = n > 0 && m > 0 ? nbatch * n : 0, per_row = K * m > 0 ? K * m : 1;
  int nt = mq_parallel_threads_for(S, rows * per_row);
  if (B->mask && K > 0 && m > 0 && rows > 0) { /* b's padded keys: no work (B is contiguous) */
    int64_t nm = B->numel / (K * m);
    int64_t *span = mq_scratch(S, (size_t)nm * 2 * sizeof *span);
    uint8_t *cols = mq_scratch(S, (size_t)(nm * m)); /* nm * m <= B's size */
    column_spans(J.pmb, nm, K, m, cols, span);
    J.bspan = span, J.bcols = cols;
  }
#ifdef MM_FMA
  J.fma = S->cpu >= MQ_CPU_AVX2 && __builtin_cpu_supports("fma");
#endif
  J.ks = mq_scratch(S, (size_t)nt * (size_t)(K > 0 ? K : 1) * sizeof *J.ks); /* K: a dim of a */
  mq_parallel_for(S, nt, rows,
                  per_row >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / per_row, mm_range, &J);
  if (om) mq_tensor_set_mask(S, out, om);
  mq_ag_matmul(S, out, a, b);
  return out;
}
