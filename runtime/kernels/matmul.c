/* matmul.c - matrix products, plain and masked, batched (ops.h: mq_matmul).
 *
 * Floating-point products go to the GEMM (gemm.h), which defines their
 * results and skips padded rows, columns and steps; this file checks the
 * shapes, lays out the batches (broadcast batch dims read the same matrix,
 * transposed operands are read through their strides, not copied) and
 * computes the output mask: "some valid pair exists", an OR over k of B's
 * mask rows. int64 products, exact and wrapping like torch's, keep a loop
 * of their own: an output row built in a block of JB accumulators as the
 * sum over k of a[i,k] * b[k, j..], over contiguous copies. */
#include "../../core/checked.h"
#include "../tensor/cpu.h"
#include "../tensor/internal.h"
#include "ops.h"
#include "../tensor/parallel.h"
#include "../tensor/shape.h"
#include "../tensor/tape.h"
#include "gemm.h"

#define JB 512

/* Rows [i0, i1) of out[n, m] = a[n, K] @ b[K, m] (contiguous int64); ma/mb
 * may be NULL (all valid); b must be zero where mb is false, and every
 * column outside [jlo, jhi) wholly masked out (a padded key). ks: K
 * scratch indices. A row's valid k steps are listed first (a padded row's
 * masked tail costs nothing more). Sums wrap like torch's (two's
 * complement), through unsigned math. */
MQ_WIDE static void mm_i64(const int64_t *a, const uint8_t *ma, const int64_t *b, int64_t *out,
                           int64_t i0, int64_t i1, int64_t K, int64_t m, int64_t *ks, int64_t jlo,
                           int64_t jhi) {
  uint64_t c[JB];
  for (int64_t i = i0; i < i1; i++) {
    /* columns of b with no valid entry: 0, as their sums of zeros are */
    for (int64_t j = 0; j < jlo; j++) out[i * m + j] = 0;
    for (int64_t j = jhi; j < m; j++) out[i * m + j] = 0;
    int64_t nk = 0;
    for (int64_t k = 0; k < K; k++) {
      ks[nk] = k;
      nk += !ma || ma[i * K + k];
    }
    for (int64_t j0 = jlo; j0 < jhi; j0 += JB) {
      int64_t jn = jhi - j0 < JB ? jhi - j0 : JB;
      for (int64_t j = 0; j < jn; j++) c[j] = 0;
      for (int64_t q = 0; q < nk; q++) {
        uint64_t x = (uint64_t)a[i * K + ks[q]];
        const int64_t *bk = b + ks[q] * m + j0;
        for (int64_t j = 0; j < jn; j++) c[j] += x * (uint64_t)bk[j];
      }
      for (int64_t j = 0; j < jn; j++) out[i * m + j0 + j] = (int64_t)c[j];
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

/* The int64 operands as contiguous matrices; B zeroed where masked out. */
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

/* One product's int64 values and output mask, by rows of its batch
 * matrices: items q = batch * n + row. pa/pb NULL: the mask only (the
 * GEMM computes float values); the masks are contiguous. */
typedef struct mm_job {
  int64_t n, K, m;
  int nb;
  const int64_t *shape, *ast, *bst, *mast, *mbst; /* batch shape; element strides of data, masks */
  const int64_t *pa, *pb;
  const uint8_t *pma, *pmb;
  int64_t *po;
  uint8_t *pom;
  int64_t *ks; /* per thread: K indices */
  char *ws;     /* per thread: wsz bytes for mq_mask_product */
  size_t wsz;
  const int64_t *bspan; /* per matrix of b: its span of columns with a valid entry, or NULL */
  const uint8_t *bcols; /* per matrix of b: which columns have one (m bytes) */
} mm_job;

static void mm_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const mm_job *J = ctx;
  int64_t n = J->n, K = J->K, m = J->m;
  for (int64_t q = lo; q < hi;) {
    int64_t bi = q / n, i0 = q % n, i1 = n - i0 < hi - q ? n : i0 + (hi - q);
    int64_t aoff, boff, maoff, mboff; /* element offsets of batch bi */
    mq_batch_offsets(J->nb, J->shape, bi, J->ast, &aoff, J->bst, &boff);
    mq_batch_offsets(J->nb, J->shape, bi, J->mast, &maoff, J->mbst, &mboff);
    const uint8_t *mx = J->pma ? J->pma + maoff : NULL, *my = J->pmb ? J->pmb + mboff : NULL;
    int64_t jlo = 0, jhi = m;
    if (J->bspan && K > 0) {
      const int64_t *sp = J->bspan + 2 * (mboff / (K * m));
      jlo = sp[0], jhi = sp[1];
    }
    if (J->pa)
      mm_i64(J->pa + aoff, mx, J->pb + boff, J->po + bi * n * m, i0, i1, K, m, J->ks + t * K, jlo, jhi);
    if (J->pom) {
      /* with a all valid, a row of the mask is "the column has a valid b" */
      const uint8_t *cols = J->bcols && !mx && K > 0 ? J->bcols + (mboff / (K * m)) * m : NULL;
      if (cols)
        for (int64_t i = i0; i < i1; i++) memcpy(J->pom + bi * n * m + i * m, cols, (size_t)m);
      else {
        uint8_t *o = J->pom + (bi * n + i0) * m;
        memset(o, 0, (size_t)((i1 - i0) * m));
        mq_mask_product(o, i1 - i0, K, m, mx ? mx + i0 * K : NULL, K, 1, my, m, 1,
                        J->ws + (size_t)t * J->wsz);
      }
    }
    q += i1 - i0;
  }
}

/* [t]'s mask as a contiguous tensor of its shape (NULL: none). */
static mq_tensor *mask_of(mq_state *S, const mq_tensor *t) {
  return t->mask ? mq_contiguous(S, mq_expand(S, t->mask, t->ndim, t->shape)) : NULL;
}

/* The float product of A and B (1-d operands already made matrices) into
 * out, through the GEMM: A and B read in place through their strides. */
static void mm_float(mq_state *S, mq_tensor *A, mq_tensor *B, mq_tensor *out, mq_dtype in, int nb,
                     const int64_t *shape, int64_t nbatch, mq_tensor *keep) {
  int64_t n = A->shape[A->ndim - 2], K = A->shape[A->ndim - 1], m = B->shape[B->ndim - 1];
  int64_t ast[MQ_MAX_DIMS], bst[MQ_MAX_DIMS];
  batch_strides(A, nb, ast);
  batch_strides(B, nb, bst);
  mq_tensor *ma = mask_of(S, A), *mb = mask_of(S, B);
  int64_t mast[MQ_MAX_DIMS], mbst[MQ_MAX_DIMS];
  if (ma) batch_strides(ma, nb, mast);
  if (mb) batch_strides(mb, nb, mbst);
  size_t nbs = (size_t)(nbatch > 0 ? nbatch : 1);
  int64_t *off = mq_scratch(S, 4 * nbs * sizeof *off);
  int64_t *aoff = off, *boff = off + nbs, *maoff = off + 2 * nbs, *mboff = off + 3 * nbs;
  for (int64_t b = 0; b < nbatch; b++) {
    mq_batch_offsets(nb, shape, b, ast, &aoff[b], bst, &boff[b]);
    if (ma || mb) mq_batch_offsets(nb, shape, b, ma ? mast : ast, &maoff[b], mb ? mbst : bst, &mboff[b]);
  }
  int ad = A->ndim, bd = B->ndim;
  mq_gemm G = {
      .in = in, .dt = (mq_dtype)out->dtype, .nbatch = nbatch, .n = n, .m = m, .K = K,
      .A = {.p = mq_tensor_data(A), .rs = A->strides[ad - 2], .cs = A->strides[ad - 1], .off = aoff,
            .m = ma ? mq_tensor_data(ma) : NULL, .mrs = K, .mcs = 1, .moff = maoff},
      .B = {.p = mq_tensor_data(B), .rs = B->strides[bd - 2], .cs = B->strides[bd - 1], .off = boff,
            .m = mb ? mq_tensor_data(mb) : NULL, .mrs = m, .mcs = 1, .moff = mboff},
      .C = mq_tensor_data(out), .ldc = m, .coff = NULL};
  /* the output's batches are contiguous matrices */
  int64_t *coff = mq_scratch(S, nbs * sizeof *coff);
  for (int64_t b = 0; b < nbatch; b++) coff[b] = b * n * m;
  G.coff = coff;
  if (keep) { /* out's shape already: its batch strides, 0 where broadcast */
    int64_t kst[MQ_MAX_DIMS], *koff = mq_scratch(S, nbs * sizeof *koff), unused;
    batch_strides(keep, nb, kst);
    for (int64_t b = 0; b < nbatch; b++) mq_batch_offsets(nb, shape, b, kst, &koff[b], kst, &unused);
    G.keep = (mq_gemm_mat){.m = mq_tensor_data(keep), .mrs = keep->strides[keep->ndim - 2],
                           .mcs = keep->strides[keep->ndim - 1], .moff = koff};
  }
  mq_gemm_run(S, &G);
}

/* [keep]: a plain bool tensor of the result's shape (expanded), or NULL. */
static mq_tensor *matmul(mq_state *S, mq_tensor *a, mq_tensor *b, mq_tensor *keep) {
  if (a->ndim == 0 || b->ndim == 0)
    mq_error(S, "matmul: both operands need at least 1 dimension, got shapes %s and %s (use * "
                "to multiply by a scalar)", mq_shape_str(S, a->ndim, a->shape),
             mq_shape_str(S, b->ndim, b->shape));
  mq_tensor *ab[2] = {a, b};
  mq_dtype want = mq_result_type(2, ab);
  /* half types are packed as float32 and accumulate in float32, rounding
   * once at the end; int8 @ int8 is int8 (wrapping) as torch */
  bool half = want == MQ_DT_BF16 || want == MQ_DT_F16;
  mq_dtype dt = half ? MQ_DT_F32 : mq_dtype_is_narrow(want) ? MQ_DT_I64 : want;
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
  int64_t nbatch = 1;
  for (int i = 0; i < nb; i++) nbatch *= shape[i];
  bool masked = a->mask || b->mask;
  mq_tensor *out = mq_tensor_new(S, dt, nd, shape);
  mq_tensor *om = masked ? mq_tensor_new(S, MQ_DT_BOOL, nd, shape) : NULL;
  mq_dtype in = half ? want : dt;
  if (dt != MQ_DT_I64) {
    A = mq_astype(S, A, in), B = mq_astype(S, B, in);
    /* keep, when it broadcasts to the result without growing it */
    int64_t kshape[MQ_MAX_DIMS + 2];
    bool fits = keep && a->ndim > 1 && b->ndim > 1 &&
                mq_broadcast_try(keep->ndim, keep->shape, nd, shape, kshape) == nd &&
                !memcmp(kshape, shape, (size_t)nd * sizeof *shape);
    mm_float(S, A, B, out, in, nb, shape, nbatch, fits ? mq_expand(S, keep, nd, shape) : NULL);
  } else {
    A = prepare(S, A, dt, false), B = prepare(S, B, dt, true);
  }
  /* the int64 values and the mask, by rows: the threads share them out,
   * a row at a time when rows are long (K * m multiply-adds each) */
  bool values = dt == MQ_DT_I64;
  if (values || om) {
    mq_tensor *ma = values ? A->mask : mask_of(S, A), *mb = values ? B->mask : mask_of(S, B);
    int64_t ast[MQ_MAX_DIMS], bst[MQ_MAX_DIMS], mast[MQ_MAX_DIMS], mbst[MQ_MAX_DIMS];
    batch_strides(A, nb, ast);
    batch_strides(B, nb, bst);
    batch_strides(ma ? ma : A, nb, mast);
    batch_strides(mb ? mb : B, nb, mbst);
    mm_job J = {.n = n, .K = K, .m = m, .nb = nb, .shape = shape, .ast = ast, .bst = bst,
                .mast = mast, .mbst = mbst, .pa = values ? mq_tensor_data(A) : NULL,
                .pb = values ? mq_tensor_data(B) : NULL, .pma = ma ? mq_tensor_data(ma) : NULL,
                .pmb = mb ? mq_tensor_data(mb) : NULL, .po = values ? mq_tensor_data(out) : NULL,
                .pom = om ? mq_tensor_data(om) : NULL};
    int64_t rows = n > 0 && m > 0 ? nbatch * n : 0, per_row = K * m > 0 ? K * m : 1;
    int nt = mq_parallel_threads_for(S, values ? rows * per_row : rows * per_row / 16);
    if (mb && K > 0 && m > 0 && rows > 0) { /* b's padded keys: no work */
      int64_t nm = mb->numel / (K * m);
      int64_t *span = mq_scratch(S, (size_t)nm * 2 * sizeof *span);
      uint8_t *cols = mq_scratch(S, (size_t)(nm * m)); /* nm * m <= B's size */
      column_spans(J.pmb, nm, K, m, cols, span);
      J.bspan = span, J.bcols = cols;
    }
    J.ks = mq_scratch(S, (size_t)nt * (size_t)(K > 0 ? K : 1) * sizeof *J.ks); /* K: a dim of a */
    if (om) { /* n rows at most per call: a batch's */
      J.wsz = (mq_mask_product_bytes(n, K, m) + 63) / 64 * 64;
      J.ws = mq_scratch(S, mq_ck_zmul(S, J.wsz, (size_t)nt, "matmul"));
    }
    /* the mask alone (float values come from the GEMM): a batch's rows at
     * once, so that b's mask is turned into bits once per batch */
    int64_t grain = !values ? (n > 0 ? n : 1) : per_row >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / per_row;
    mq_parallel_for(S, nt, rows, grain, mm_range, &J);
  }
  if (om) mq_tensor_set_mask(S, out, om);
  mq_ag_matmul(S, out, a, b);
  return want != dt ? mq_narrow_back(S, out, want) : out;
}

mq_tensor *mq_matmul(mq_state *S, mq_tensor *a, mq_tensor *b) { return matmul(S, a, b, NULL); }

mq_tensor *mq_matmul_within(mq_state *S, mq_tensor *a, mq_tensor *b, mq_tensor *keep) {
  bool usable = keep->layout == 0 && !keep->mask && keep->dtype == MQ_DT_BOOL;
  return matmul(S, a, b, usable ? keep : NULL);
}
