/* sparse_matmul.c - products with a sparse operand.
 *
 * SpMM (sparse @ dense) walks the rows of the CSR form: row r of the result
 * is the sum over r's valid entries (r, c, x) of x * b[c, :], accumulated
 * in entry order in the result's dtype (float32 as torch.sparse.mm does;
 * a double row would halve the speed of this memory-bound loop). SDDMM (masked_matmul) computes
 * a[r, :] . b[:, c] only at the valid stored entries (r, c) of a sparse
 * mask. Rows (SDDMM: entries) are independent, so threads split them and
 * the result does not depend on how many there are. */
#include <string.h>

#include "../../core/checked.h"
#include "../tensor/tape.h"
#include "../tensor/internal.h"
#include "../tensor/parallel.h"
#include "../tensor/shape.h"
#include "sparse.h"

static const char *lname(const mq_tensor *t) { return mq_layout_name((mq_layout)t->layout); }

/* The dtype both operands compute in: ints as int64, else the wider float. */
static mq_dtype product_dtype(mq_state *S, mq_tensor *a, mq_tensor *b, const char *who) {
  mq_tensor *ts[2] = {a, b};
  mq_dtype ct = mq_result_type(2, ts);
  if (ct == MQ_DT_BOOL)
    mq_error(S, "%s: bool tensors have no product; convert with long(x) or float(x)", who);
  return ct;
}

/* --- SpMM --------------------------------------------------------------------------- */

typedef struct spmm_job {
  mq_dtype dt;
  const int64_t *crow, *col;
  const void *av, *bv;
  const uint8_t *am, *bm; /* validity of a's entries, b's elements; NULL: all */
  int64_t m, n; /* a's rows, b's columns */
  void *out;
  uint8_t *om;
  const uint8_t *colvalid; /* a plain, b masked: columns of b with a valid element */
  void *acc; /* per thread: n accumulators */
} spmm_job;

/* b masked (spmm_plain_E below takes a plain b), so the result is masked
 * too: om is never NULL. */
#define DEF_SPMM(E, T, A)                                                                  \
  static void spmm_##E(const spmm_job *J, int64_t lo, int64_t hi, int t) {                 \
    int64_t n = J->n;                                                                      \
    A *acc = (A *)J->acc + (size_t)t * (size_t)n;                                          \
    const T *av = J->av, *bv = J->bv;                                                      \
    T *out = J->out;                                                                       \
    for (int64_t r = lo; r < hi; r++) {                                                    \
      for (int64_t j = 0; j < n; j++) acc[j] = 0;                                          \
      uint8_t *om = J->om + r * n;                                                         \
      for (int64_t j = 0; j < n; j++) om[j] = 0;                                           \
      for (int64_t k = J->crow[r]; k < J->crow[r + 1]; k++) {                              \
        if (J->am && !J->am[k]) continue;                                                  \
        A x = (A)av[k];                                                                    \
        const T *brow = bv + J->col[k] * n;                                                \
        const uint8_t *bm = J->bm + J->col[k] * n;                                         \
        for (int64_t j = 0; j < n; j++)                                                    \
          if (bm[j]) {                                                                     \
            acc[j] += x * (A)brow[j];                                                      \
            om[j] = 1;                                                                     \
          }                                                                                \
      }                                                                                    \
      for (int64_t j = 0; j < n; j++) out[r * n + j] = (T)acc[j];                          \
      /* a plain a's unstored zeros are valid: they pair with every valid b */             \
      if (J->colvalid) memcpy(om, J->colvalid, (size_t)n);                                 \
    }                                                                                      \
  }
DEF_SPMM(I64, int64_t, int64_t)
DEF_SPMM(F32, float, float)
DEF_SPMM(F64, double, double)

/* The same when b has no mask (the usual case): the columns go in blocks of
 * SPMM_W whose accumulators are a local array, which the compiler keeps in
 * vector registers (the per-thread [acc] above lives in memory that might
 * alias b or out, so that loop stays scalar and stores every sum). Each
 * output element still sums its row's entries in entry order from 0, so
 * the result is the same bit for bit; the row's entries are read once per
 * block, and a typical n (16, 32, 64) is one to four blocks.
 *
 * The time goes into fetching the rows of b the columns name (one cache
 * line per entry for n = 16, at scattered places): the loop prefetches the
 * row SPMM_AHEAD entries on, which the hardware cannot guess; that took
 * the benchmark's 10^7-entry product from about 1.0x to 0.5-0.8x the time
 * of the plain C loop, and a random column pattern by about a quarter. */
#define SPMM_W 16
#define SPMM_AHEAD 16
#define DEF_SPMM_PLAIN(E, T, A)                                                            \
  static void spmm_plain_##E(const spmm_job *J, int64_t lo, int64_t hi) {                  \
    int64_t n = J->n;                                                                      \
    const T *av = J->av, *bv = J->bv;                                                      \
    const int64_t *crow = J->crow, *col = J->col;                                          \
    const uint8_t *am = J->am;                                                             \
    int64_t ahead = crow[J->m] - SPMM_AHEAD; /* the last entry that looks ahead */        \
    T *out = J->out;                                                                       \
    for (int64_t r = lo; r < hi; r++) {                                                    \
      int64_t k0 = crow[r], k1 = crow[r + 1];                                              \
      bool any = false;                                                                    \
      for (int64_t j0 = 0; j0 < n; j0 += SPMM_W) {                                         \
        A acc[SPMM_W] = {0};                                                               \
        int w = n - j0 < SPMM_W ? (int)(n - j0) : SPMM_W;                                  \
        for (int64_t k = k0; k < k1; k++) {                                                \
          if (k < ahead) __builtin_prefetch(bv + col[k + SPMM_AHEAD] * n + j0);            \
          if (am && !am[k]) continue;                                                      \
          any = true;                                                                      \
          A x = (A)av[k];                                                                  \
          const T *b = bv + col[k] * n + j0;                                               \
          if (w == SPMM_W)                                                                 \
            for (int j = 0; j < SPMM_W; j++) acc[j] += x * (A)b[j];                        \
          else                                                                             \
            for (int j = 0; j < w; j++) acc[j] += x * (A)b[j];                             \
        }                                                                                  \
        for (int j = 0; j < w; j++) out[r * n + j0 + j] = (T)acc[j];                       \
      }                                                                                    \
      if (J->om) memset(J->om + r * n, any, (size_t)n);                                    \
    }                                                                                      \
  }
DEF_SPMM_PLAIN(I64, int64_t, int64_t)
DEF_SPMM_PLAIN(F32, float, float)
DEF_SPMM_PLAIN(F64, double, double)

static void spmm_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const spmm_job *J = ctx;
  if (!J->bm) {
    if (J->dt == MQ_DT_I64) spmm_plain_I64(J, lo, hi);
    else if (J->dt == MQ_DT_F32) spmm_plain_F32(J, lo, hi);
    else spmm_plain_F64(J, lo, hi);
  } else if (J->dt == MQ_DT_I64) {
    spmm_I64(J, lo, hi, t);
  } else if (J->dt == MQ_DT_F32) {
    spmm_F32(J, lo, hi, t);
  } else {
    spmm_F64(J, lo, hi, t);
  }
}

/* --- dense @ sparse ------------------------------------------------------------------ */

/* Row i of a (m, k) @ b (k, n) is the sum over p of a[i, p] * b[p, :]: each
 * valid a[i, p] scales the valid stored entries of b's row p into out[i, :],
 * accumulated in place in the result's dtype like SpMM, p ascending, so each
 * output element sums its terms in one fixed order; threads split the rows
 * of a. b's unstored entries are not multiplied (so an inf in a meets no
 * unstored 0, as in sparse @ dense and torch.sparse); a plain b's unstored
 * zeros are still valid, so a row of a with a valid entry gives a valid
 * result row. */
typedef struct dsmm_job {
  mq_dtype dt;
  const int64_t *crow, *col; /* b as CSR */
  const void *av, *bv;       /* a (m, k) contiguous, b's values */
  const uint8_t *am, *bm;    /* validity of a's elements, b's entries; NULL: all */
  int64_t k, n;
  void *out;
  uint8_t *om;
} dsmm_job;

#define DEF_DSMM(E, T)                                                                     \
  static void dsmm_##E(const dsmm_job *J, int64_t lo, int64_t hi) {                        \
    int64_t k = J->k, n = J->n;                                                            \
    const T *av = J->av, *bv = J->bv;                                                      \
    const uint8_t *am = J->am, *bm = J->bm;                                                \
    for (int64_t i = lo; i < hi; i++) {                                                    \
      T *o = (T *)J->out + i * n;                                                          \
      uint8_t *om = J->om ? J->om + i * n : NULL;                                          \
      for (int64_t c = 0; c < n; c++) o[c] = 0;                                            \
      if (om) memset(om, 0, (size_t)n);                                                    \
      bool any = false;                                                                    \
      for (int64_t p = 0; p < k; p++) {                                                    \
        if (am && !am[i * k + p]) continue;                                                \
        any = true;                                                                        \
        T x = av[i * k + p];                                                               \
        for (int64_t e = J->crow[p]; e < J->crow[p + 1]; e++) {                            \
          if (bm && !bm[e]) continue;                                                      \
          o[J->col[e]] += x * bv[e];                                                       \
          if (om && bm) om[J->col[e]] = 1;                                                 \
        }                                                                                  \
      }                                                                                    \
      /* a plain b's unstored zeros are valid: a valid a[i, p] pairs with all */           \
      if (om && !bm) memset(om, any, (size_t)n);                                           \
    }                                                                                      \
  }
DEF_DSMM(I64, int64_t)
DEF_DSMM(F32, float)
DEF_DSMM(F64, double)

static void dsmm_range(void *ctx, int64_t lo, int64_t hi, int t) {
  (void)t;
  const dsmm_job *J = ctx;
  if (J->dt == MQ_DT_I64) dsmm_I64(J, lo, hi);
  else if (J->dt == MQ_DT_F32) dsmm_F32(J, lo, hi);
  else dsmm_F64(J, lo, hi);
}

/* a strided 1-D or 2-D, b sparse 2-D. */
static mq_tensor *dense_sparse(mq_state *S, mq_tensor *a, mq_tensor *b) {
  if (b->layout == MQ_LAYOUT_CSC) b = mq_to_sparse_csr(S, b); /* rows to walk */
  if (b->ndim != 2 || a->ndim < 1 || a->ndim > 2)
    mq_error(S, "matmul: a product with a sparse right operand is (m, k) @ (k, n) or "
                "(k,) @ (k, n), got %s @ %s", mq_shape_str(S, a->ndim, a->shape),
             mq_shape_str(S, b->ndim, b->shape));
  int64_t k = a->shape[a->ndim - 1], m = a->ndim == 2 ? a->shape[0] : 1, n = b->shape[1];
  if (k != b->shape[0])
    mq_error(S, "matmul: size mismatch, %s @ %s", mq_shape_str(S, a->ndim, a->shape),
             mq_shape_str(S, b->ndim, b->shape));
  mq_dtype ct = product_dtype(S, a, b, "matmul");
  mq_tensor *c = mq_to_sparse_csr(S, b);
  int64_t oshape[2] = {m, n};
  int ond = a->ndim == 2 ? 2 : 1;
  const int64_t *os = ond == 2 ? oshape : &oshape[1];
  mq_tensor *out = mq_tensor_new(S, ct, ond, os);
  mq_tensor *om = a->mask || b->mask ? mq_tensor_new(S, MQ_DT_BOOL, ond, os) : NULL;
  dsmm_job J = {.dt = ct,
                .crow = mq_tensor_data(c->sparse->crow),
                .col = mq_tensor_data(c->sparse->indices),
                .av = mq_tensor_data(mq_contiguous(S, mq_astype(S, mq_get_data(S, a), ct))),
                .bv = mq_tensor_data(mq_contiguous(S, mq_astype(S, c->sparse->values, ct))),
                .am = a->mask ? mq_tensor_data(mq_contiguous(S, mq_get_mask(S, a))) : NULL,
                .bm = b->mask ? mq_tensor_data(c->mask->sparse->values) : NULL,
                .k = k,
                .n = n,
                .out = mq_tensor_data(out),
                .om = om ? mq_tensor_data(om) : NULL};
  int64_t per = mq_ck_add(S, mq_ck_add(S, c->sparse->nnz, k, "work"), n, "work");
  int64_t work;
  if (!mq_mul_ok(per, m, &work)) work = INT64_MAX; /* only picks the thread count */
  int nt = mq_parallel_threads_for(S, work);
  /* per is 0 for (m, 0) @ (0, 0): a grain of 1 then, not a division by 0 */
  mq_parallel_for(S, nt, m, per ? MQ_PAR_GRAIN / per + 1 : 1, dsmm_range, &J);
  out = om ? mq_masked(S, out, om) : out;
  if (MQ_UNLIKELY(a->requires_grad || b->requires_grad)) {
    mq_tensor *in[2] = {a, b};
    mq_ag_rec_sparse(S, out, MQ_AG_SP_MATMUL, MQ_SPMM_SPARSE_RIGHT, 2, 0, in);
  }
  return out;
}

mq_tensor *mq_sparse_matmul(mq_state *S, mq_tensor *a, mq_tensor *b) {
  if (!a->sparse) return dense_sparse(S, a, b);
  if (b->sparse)
    mq_error(S, "matmul: %s @ %s is not supported; to_dense(b) makes the right operand "
                "strided", lname(a), lname(b));
  if (a->ndim != 2 || b->ndim < 1 || b->ndim > 2)
    mq_error(S, "matmul: a sparse product is (m, k) @ (k, n) or (m, k) @ (k,), got %s @ %s",
             mq_shape_str(S, a->ndim, a->shape), mq_shape_str(S, b->ndim, b->shape));
  if (b->shape[0] != a->shape[1])
    mq_error(S, "matmul: size mismatch, %s @ %s", mq_shape_str(S, a->ndim, a->shape),
             mq_shape_str(S, b->ndim, b->shape));
  mq_dtype ct = product_dtype(S, a, b, "matmul");
  if (a->layout == MQ_LAYOUT_CSC) a = mq_to_sparse_csr(S, a); /* rows to walk; the node's input */
  mq_tensor *c = mq_to_sparse_csr(S, a);
  int64_t m = a->shape[0], n = b->ndim == 2 ? b->shape[1] : 1;
  mq_tensor *bd = mq_contiguous(S, mq_astype(S, mq_get_data(S, b), ct));
  mq_tensor *bm = b->mask ? mq_contiguous(S, mq_get_mask(S, b)) : NULL;
  int64_t oshape[2] = {m, n};
  mq_tensor *out = mq_tensor_new(S, ct, b->ndim, oshape);
  mq_tensor *om = a->mask || b->mask ? mq_tensor_new(S, MQ_DT_BOOL, b->ndim, oshape) : NULL;
  int nt = mq_parallel_threads_for(S, mq_ck_add(S, c->sparse->nnz, m, "work"));
  spmm_job J = {.dt = ct,
                .crow = mq_tensor_data(c->sparse->crow),
                .col = mq_tensor_data(c->sparse->indices),
                .av = mq_tensor_data(mq_contiguous(S, mq_astype(S, c->sparse->values, ct))),
                .bv = mq_tensor_data(bd),
                .am = a->mask ? mq_tensor_data(c->mask->sparse->values) : NULL,
                .bm = bm ? mq_tensor_data(bm) : NULL,
                .m = m,
                .n = n,
                .out = mq_tensor_data(out),
                .om = om ? mq_tensor_data(om) : NULL};
  if (!a->mask && bm && a->shape[1] > 0) {
    uint8_t *cv = mq_scratch(S, (size_t)(n ? n : 1));
    memset(cv, 0, (size_t)n);
    const uint8_t *bmd = J.bm;
    for (int64_t p = 0; p < a->shape[1]; p++)
      for (int64_t j = 0; j < n; j++) cv[j] |= bmd[p * n + j];
    J.colvalid = cv;
  }
  J.acc = mq_scratch(S, mq_ck_zmul(S, (size_t)nt * (size_t)(n ? n : 1), 8, "result"));
  /* rows in runs of about equal entries; an entry costs a row of b */
  mq_parallel_for_weighted(S, nt, m, J.crow, MQ_PAR_GRAIN / (n < 16 ? 16 : n < 1024 ? n : 1024),
                           spmm_range, &J);
  out = om ? mq_masked(S, out, om) : out;
  if (MQ_UNLIKELY(a->requires_grad || b->requires_grad)) {
    mq_tensor *in[2] = {a, b};
    mq_ag_rec_sparse(S, out, MQ_AG_SP_MATMUL, MQ_SPMM_SPARSE_LEFT, 2, 0, in);
  }
  return out;
}

/* --- SDDMM --------------------------------------------------------------------------- */

typedef struct sddmm_job {
  mq_dtype dt;
  const mq_tensor *p; /* the pattern */
  const void *a, *bt; /* a (m, k) and b transposed (n, k), contiguous */
  int64_t k;
  const uint8_t *valid;
  void *out;
} sddmm_job;

#define DEF_DOT(E, T, A)                                                                   \
  static T dot_##E(const T *x, const T *y, int64_t k) {                                    \
    A s = 0;                                                                               \
    for (int64_t i = 0; i < k; i++) s += (A)x[i] * (A)y[i];                                \
    return (T)s;                                                                           \
  }
DEF_DOT(I64, int64_t, int64_t)
DEF_DOT(F32, float, double)
DEF_DOT(F64, double, double)

static void sddmm_entry(const sddmm_job *J, int64_t e, int64_t r, int64_t c) {
  if (J->valid && !J->valid[e]) return;
  int64_t k = J->k;
  switch (J->dt) {
  case MQ_DT_I64:
    ((int64_t *)J->out)[e] = dot_I64((const int64_t *)J->a + r * k, (const int64_t *)J->bt + c * k, k);
    break;
  case MQ_DT_F32:
    ((float *)J->out)[e] = dot_F32((const float *)J->a + r * k, (const float *)J->bt + c * k, k);
    break;
  default:
    ((double *)J->out)[e] = dot_F64((const double *)J->a + r * k, (const double *)J->bt + c * k, k);
    break;
  }
}

/* CSR: rows [lo, hi); COO: entries [lo, hi). */
static void sddmm_range(void *ctx, int64_t lo, int64_t hi, int t) {
  (void)t;
  const sddmm_job *J = ctx;
  const mq_sparse *sp = J->p->sparse;
  const int64_t *ix = mq_tensor_data(sp->indices);
  if (J->p->layout == MQ_LAYOUT_CSR) {
    const int64_t *crow = mq_tensor_data(sp->crow);
    for (int64_t r = lo; r < hi; r++)
      for (int64_t e = crow[r]; e < crow[r + 1]; e++) sddmm_entry(J, e, r, ix[e]);
  } else {
    for (int64_t e = lo; e < hi; e++) sddmm_entry(J, e, ix[e], ix[sp->nnz + e]);
  }
}

mq_tensor *mq_sparse_masked_matmul(mq_state *S, mq_tensor *a, mq_tensor *b, mq_tensor *mask) {
  if (mask->layout == MQ_LAYOUT_CSC) /* on the CSR form, given back in CSC */
    return mq_sparse_regroup(S, mq_sparse_masked_matmul(S, a, b, mq_sparse_regroup(S, mask)));
  if (a->sparse || b->sparse)
    mq_error(S, "masked_matmul: a and b must be strided, got %s and %s", lname(a), lname(b));
  if (a->mask || b->mask)
    mq_error(S, "masked_matmul: a and b must be plain tensors; the sparse mask says which "
                "entries are computed");
  if (!mask->sparse)
    mq_error(S, "masked_matmul: mask must be a sparse tensor (to_sparse_csr(m) makes one), "
                "got a strided one");
  if (a->ndim != 2 || b->ndim != 2 || mask->ndim != 2 || a->shape[1] != b->shape[0] ||
      mask->shape[0] != a->shape[0] || mask->shape[1] != b->shape[1])
    mq_error(S, "masked_matmul: needs a (m, k), b (k, n) and mask (m, n), got %s, %s and %s",
             mq_shape_str(S, a->ndim, a->shape), mq_shape_str(S, b->ndim, b->shape),
             mq_shape_str(S, mask->ndim, mask->shape));
  mq_dtype ct = product_dtype(S, a, b, "masked_matmul");
  int64_t nnz = mask->sparse->nnz;
  mq_tensor *valid = mask->mask ? mask->mask->sparse->values
                     : mask->dtype == MQ_DT_BOOL ? mask->sparse->values : NULL;
  mq_tensor *out = mq_tensor_full(S, ct, 1, &nnz, 0);
  sddmm_job J = {.dt = ct,
                 .p = mask,
                 .a = mq_tensor_data(mq_contiguous(S, mq_astype(S, a, ct))),
                 .bt = mq_tensor_data(mq_contiguous(S, mq_astype(S, mq_transpose(S, b, 0, 1), ct))),
                 .k = a->shape[1],
                 .valid = valid ? mq_tensor_data(valid) : NULL,
                 .out = mq_tensor_data(out)};
  int64_t k1 = a->shape[1] + 1;
  int nt = mq_parallel_threads_for(S, nnz * (k1 < 64 ? k1 : 64));
  int64_t per = k1 < 1024 ? k1 : 1024;
  if (mask->layout == MQ_LAYOUT_CSR)
    mq_parallel_for_weighted(S, nt, mask->shape[0], mq_tensor_data(mask->sparse->crow),
                             MQ_PAR_GRAIN / per, sddmm_range, &J);
  else
    mq_parallel_for(S, nt, nnz, MQ_PAR_GRAIN / per + 1, sddmm_range, &J);
  if (!valid) {
    valid = mq_tensor_full(S, MQ_DT_BOOL, 1, &nnz, 1);
  }
  mq_tensor *r = mq_sparse_with_values(S, mask, out, mq_sparse_with_values(S, mask, valid, NULL));
  if (MQ_UNLIKELY(a->requires_grad || b->requires_grad)) {
    mq_tensor *in[3] = {a, b, mask};
    mq_ag_rec_sparse(S, r, MQ_AG_SP_SDDMM, 0, 2, 1, in);
  }
  return r;
}
