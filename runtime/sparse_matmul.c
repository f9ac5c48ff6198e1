/* sparse_matmul.c - products with a sparse operand.
 *
 * SpMM (sparse @ dense) walks the rows of the CSR form: row r of the result
 * is the sum over r's valid entries (r, c, x) of x * b[c, :], accumulated
 * in entry order in the result's dtype (float32 as torch.sparse.mm does;
 * a double row would halve the speed of this memory-bound loop). SDDMM (masked_matmul) computes
 * a[r, :] . b[:, c] only at the valid stored entries (r, c) of a sparse
 * mask. Rows (SDDMM: entries) are independent, so threads split them and
 * the result does not depend on how many there are. */
#include "../core/checked.h"
#include "autograd.h"
#include "kernels.h"
#include "parallel.h"
#include "shape.h"
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
  int64_t n;
  void *out;
  uint8_t *om;
  void *acc; /* per thread: n accumulators */
} spmm_job;

#define DEF_SPMM(E, T, A)                                                                  \
  static void spmm_##E(const spmm_job *J, int64_t lo, int64_t hi, int t) {                 \
    int64_t n = J->n;                                                                      \
    A *acc = (A *)J->acc + (size_t)t * (size_t)n;                                          \
    const T *av = J->av, *bv = J->bv;                                                      \
    T *out = J->out;                                                                       \
    for (int64_t r = lo; r < hi; r++) {                                                    \
      for (int64_t j = 0; j < n; j++) acc[j] = 0;                                          \
      uint8_t *om = J->om ? J->om + r * n : NULL;                                          \
      if (om)                                                                              \
        for (int64_t j = 0; j < n; j++) om[j] = 0;                                         \
      for (int64_t k = J->crow[r]; k < J->crow[r + 1]; k++) {                              \
        if (J->am && !J->am[k]) continue;                                                  \
        A x = (A)av[k];                                                                    \
        const T *brow = bv + J->col[k] * n;                                                \
        if (J->bm) {                                                                       \
          const uint8_t *bm = J->bm + J->col[k] * n;                                       \
          for (int64_t j = 0; j < n; j++)                                                  \
            if (bm[j]) {                                                                   \
              acc[j] += x * (A)brow[j];                                                    \
              om[j] = 1;                                                                   \
            }                                                                              \
        } else {                                                                           \
          for (int64_t j = 0; j < n; j++) acc[j] += x * (A)brow[j];                        \
          if (om)                                                                          \
            for (int64_t j = 0; j < n; j++) om[j] = 1;                                     \
        }                                                                                  \
      }                                                                                    \
      for (int64_t j = 0; j < n; j++) out[r * n + j] = (T)acc[j];                          \
    }                                                                                      \
  }
DEF_SPMM(I64, int64_t, int64_t)
DEF_SPMM(F32, float, float)
DEF_SPMM(F64, double, double)

static void spmm_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const spmm_job *J = ctx;
  if (J->dt == MQ_DT_I64) spmm_I64(J, lo, hi, t);
  else if (J->dt == MQ_DT_F32) spmm_F32(J, lo, hi, t);
  else spmm_F64(J, lo, hi, t);
}

mq_tensor *mq_sparse_matmul(mq_state *S, mq_tensor *a, mq_tensor *b) {
  if (!a->sparse)
    mq_error(S, "matmul: dense @ %s is not supported; sparse @ dense is (transpose the "
                "product), or to_dense(b)", lname(b));
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
                .n = n,
                .out = mq_tensor_data(out),
                .om = om ? mq_tensor_data(om) : NULL};
  J.acc = mq_scratch(S, mq_ck_zmul(S, (size_t)nt * (size_t)(n ? n : 1), 8, "result"));
  int64_t per = (c->sparse->nnz / (m ? m : 1) + 1) * (n ? n : 1);
  mq_parallel_for(S, nt, m, MQ_PAR_GRAIN / per + 1, spmm_range, &J);
  out = om ? mq_masked(S, out, om) : out;
  if (MQ_UNLIKELY(a->requires_grad || b->requires_grad)) {
    mq_tensor *in[2] = {a, b};
    mq_ag_rec_sparse(S, out, MQ_AG_SP_MATMUL, 0, 2, 0, in);
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
  bool csr = mask->layout == MQ_LAYOUT_CSR;
  int64_t items = csr ? mask->shape[0] : nnz;
  int64_t per = (csr ? nnz / (items ? items : 1) + 1 : 1) * k1;
  mq_parallel_for(S, nt, items, MQ_PAR_GRAIN / per + 1, sddmm_range, &J);
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
