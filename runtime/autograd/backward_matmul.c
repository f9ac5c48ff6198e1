/* backward_matmul.c - matmul's derivative (backward.h: mq_bw_matmul), by
 * the GEMM (runtime/kernels/gemm.h), in the operands' precision.
 *
 * With c = a @ b over valid pairs only, and g the gradient of c:
 *     ga = g @ b^T    gb = a^T @ g
 * in float32 when both operands are float32 (or half types), else float64,
 * each entry the GEMM's chain: a masked-out entry of g, a or b takes part
 * as 0 (its term adds an exact 0), and a term whose pair is not valid and
 * holds an inf or NaN is not formed, as op by op. An operand broadcast
 * along batch dims sums its gradient over them: the chains continue from
 * one batch to the next (accumulate), batches in order. The transposes are
 * read through strides, never copied.
 *
 * Masks: an entry of ga is valid where a is and some valid term reached
 * it, ma[i,l] & OR_j (gm[i,j] & mb[l,j]) (likewise gb); its data under a
 * masked-out entry is 0. */
#include "backward.h"

#include <string.h>

#include "../kernels/gemm.h"
#include "../tensor/internal.h"
#include "../tensor/shape.h"

/* One operand as a stack of matrices over the full batch. */
typedef struct bw_mat {
  mq_tensor *t;       /* the data, in the compute dtype */
  const uint8_t *m;   /* its mask, contiguous, or NULL */
  int64_t rows, cols; /* as a matrix: a 1-d a is one row, a 1-d b one column */
  int64_t rs, cs;     /* element strides of its data along them */
  int64_t *off, *moff, *own; /* per full batch: offsets of its matrix in data and mask, which
                                of its own matrices (0 .. count) */
  int64_t count;
} bw_mat;

static void bw_mat_init(mq_state *S, bw_mat *M, mq_tensor *t, bool left, mq_dtype dt, int nbd,
                        const int64_t *bshape, int64_t nbatch) {
  M->t = mq_astype(S, t, dt);
  M->m = mq_ag_maskp(S, t);
  int nd = t->ndim;
  if (nd == 1) {
    M->rows = left ? 1 : t->shape[0], M->cols = left ? t->shape[0] : 1;
    M->rs = left ? 0 : M->t->strides[0], M->cs = left ? M->t->strides[0] : 0;
  } else {
    M->rows = t->shape[nd - 2], M->cols = t->shape[nd - 1];
    M->rs = M->t->strides[nd - 2], M->cs = M->t->strides[nd - 1];
  }
  /* strides of its batch dims aligned to the full batch shape: 0 where
   * broadcast; and the same for the contiguous numbering of its matrices */
  int tb = nd > 2 ? nd - 2 : 0;
  int64_t ds[MQ_MAX_DIMS], cs[MQ_MAX_DIMS], own = 1;
  for (int d = nbd - 1; d >= 0; d--) {
    int od = d - (nbd - tb);
    bool here = od >= 0 && t->shape[od] != 1;
    ds[d] = here ? M->t->strides[od] : 0;
    cs[d] = here ? own : 0;
    if (od >= 0) own *= t->shape[od];
  }
  M->count = own;
  size_t nb = (size_t)(nbatch > 0 ? nbatch : 1);
  M->off = mq_scratch(S, 3 * nb * sizeof *M->off);
  M->moff = M->off + nb, M->own = M->off + 2 * nb;
  for (int64_t b = 0; b < nbatch; b++) {
    mq_batch_offsets(nbd, bshape, b, ds, &M->off[b], cs, &M->own[b]);
    M->moff[b] = M->own[b] * M->rows * M->cols;
  }
}

/* A GEMM operand: [M]'s matrices, or their transposes. */
static mq_gemm_mat operand(const bw_mat *M, bool tr) {
  int64_t r = M->cols, c = 1; /* the contiguous mask's strides */
  return (mq_gemm_mat){.p = mq_tensor_data(M->t), .rs = tr ? M->cs : M->rs, .cs = tr ? M->rs : M->cs,
                       .off = M->off, .m = M->m, .mrs = tr ? c : r, .mcs = tr ? r : c,
                       .moff = M->m ? M->moff : NULL};
}

/* out's matrices (target [T]'s, contiguous, rows x cols each) = the sums
 * over the full batch of X_b @ Y_b into matrix T->own[b], in batch order. */
static void products(mq_state *S, mq_dtype dt, int64_t nbatch, const bw_mat *T, mq_gemm_mat X,
                     mq_gemm_mat Y, int64_t K, void *out) {
  int64_t n = T->rows, m = T->cols;
  size_t nb = (size_t)(nbatch > 0 ? nbatch : 1);
  int64_t *coff = mq_scratch(S, nb * sizeof *coff);
  for (int64_t b = 0; b < nbatch; b++) coff[b] = T->own[b] * n * m;
  mq_gemm G = {.in = dt, .dt = dt, .nbatch = nbatch, .n = n, .m = m, .K = K, .A = X, .B = Y,
               .C = out, .ldc = m, .coff = coff};
  if (T->count == nbatch) { /* a matrix of its own for every batch: one product */
    if (T->m) /* computed only within the span of T's mask, which hides the rest */
      G.keep = (mq_gemm_mat){.m = T->m, .mrs = m, .mcs = 1, .moff = T->moff};
    mq_gemm_run(S, &G);
    return;
  }
  /* broadcast: batch by batch, each chain continuing where the last left it */
  memset(out, 0, (size_t)(T->count * n * m) * mq_dtype_size(dt));
  if (T->count == 1) { /* one matrix for every batch (a weight's): one call */
    G.sum_batches = true, G.accumulate = true, G.coff = NULL;
    mq_gemm_run(S, &G);
    return;
  }
  mq_gemm one = G;
  one.nbatch = 1, one.accumulate = true;
  for (int64_t b = 0; b < nbatch; b++) {
    one.A.off = X.off ? X.off + b : NULL, one.A.moff = X.moff ? X.moff + b : NULL;
    one.B.off = Y.off ? Y.off + b : NULL, one.B.moff = Y.moff ? Y.moff + b : NULL;
    one.coff = coff + b;
    mq_gemm_run(S, &one);
  }
}

/* om &= m and d = 0 where m is 0, over n entries: eight entries at a
 * time where m is all valid (nothing to do), runs of all masked words at
 * once (zeroes), the rest entry by entry. */
static void within_mask(const uint8_t *m, int64_t n, char *d, mq_dtype dt, uint8_t *om) {
  size_t es = mq_dtype_size(dt);
  int64_t i = 0;
  while (i < n) {
    uint64_t v = 0;
    if (n - i >= 8) memcpy(&v, m + i, 8);
    if (n - i >= 8 && v == 0x0101010101010101u) {
      i += 8;
      continue;
    }
    if (n - i >= 8 && v == 0) {
      int64_t j = i + 8;
      for (uint64_t w; n - j >= 8 && (memcpy(&w, m + j, 8), w == 0);) j += 8;
      memset(om + i, 0, (size_t)(j - i));
      memset(d + i * (int64_t)es, 0, (size_t)(j - i) * es);
      i = j;
      continue;
    }
    for (int64_t e = i + (n - i < 8 ? n - i : 8); i < e; i++) {
      if (m[i]) continue;
      om[i] = 0;
      memset(d + i * (int64_t)es, 0, es);
    }
  }
}

/* The gradient of operand [T] (data [d], its mask [om]): valid where a
 * valid term reached it (om, built here over the batches: terms x(r, q)
 * & y(q, c), x at xrs/xcs from offset xoff[b], y at yrs/ycs from yoff[b]),
 * and where T itself is; 0 under its masked-out entries. */
static void grad_mask(mq_state *S, const bw_mat *T, int64_t nbatch, int64_t nq, const uint8_t *x,
                      const int64_t *xoff, int64_t xrs, int64_t xcs, const uint8_t *y,
                      const int64_t *yoff, int64_t yrs, int64_t ycs, char *d, mq_dtype dt,
                      uint8_t *om) {
  int64_t n = T->rows, w = T->cols, per = n * w;
  void *ws = mq_scratch(S, mq_mask_product_bytes(n, nq, w));
  memset(om, 0, (size_t)(T->count * per));
  /* a matrix summed over batches (a broadcast weight's) that is all valid
   * stays so: its later batches are not looked at */
  uint8_t *full = T->count < nbatch ? mq_scratch(S, (size_t)T->count) : NULL;
  if (full) memset(full, 0, (size_t)T->count);
  for (int64_t b = 0; b < nbatch; b++) {
    if (full && full[T->own[b]]) continue;
    uint8_t *o = om + T->own[b] * per;
    mq_mask_product(o, n, nq, w, x ? x + xoff[b] : NULL, xrs, xcs, y ? y + yoff[b] : NULL, yrs,
                    ycs, ws);
    if (full) full[T->own[b]] = !memchr(o, 0, (size_t)per);
    mq_poll(S);
  }
  if (T->m) within_mask(T->m, T->count * per, d, dt, om);
}

void mq_bw_matmul(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *node = t->node;
  mq_tensor *a = node->in[0], *b = node->in[1];
  /* the operands' precision: an incoming float64 gradient of a float32
   * product is rounded to float32, as torch's gradients are */
  bool wide = a->dtype == MQ_DT_F64 || b->dtype == MQ_DT_F64;
  mq_dtype dt = wide ? MQ_DT_F64 : MQ_DT_F32;
  /* the full batch: a's and b's batch dims broadcast */
  int ab = a->ndim > 2 ? a->ndim - 2 : 0, bb = b->ndim > 2 ? b->ndim - 2 : 0;
  int64_t bshape[MQ_MAX_DIMS], nbatch = 1;
  int nbd = mq_broadcast_shapes(S, ab, a->shape, bb, b->shape, bshape);
  for (int d = 0; d < nbd; d++) nbatch *= bshape[d];
  bw_mat A, B;
  bw_mat_init(S, &A, a, true, dt, nbd, bshape, nbatch);
  bw_mat_init(S, &B, b, false, dt, nbd, bshape, nbatch);
  int64_t n = A.rows, K = A.cols, m = B.cols;
  /* g as [batch.., n, m], contiguous, in dt */
  g = mq_contiguous(S, mq_astype(S, g, dt));
  const uint8_t *gm = mq_ag_maskp(S, g);
  size_t nbs = (size_t)(nbatch > 0 ? nbatch : 1);
  int64_t *goff = mq_scratch(S, nbs * sizeof *goff);
  for (int64_t i = 0; i < nbatch; i++) goff[i] = i * n * m;
  mq_gemm_mat G = {.p = mq_tensor_data(g), .rs = m, .cs = 1, .off = goff, .m = gm, .mrs = m,
                   .mcs = 1, .moff = gm ? goff : NULL};
  bool masked = gm || A.m || B.m;
  gin[0] = gin[1] = NULL;
  if (a->requires_grad) { /* ga = g @ b^T */
    mq_tensor *ga = mq_tensor_new(S, dt, a->ndim, a->shape);
    products(S, dt, nbatch, &A, G, operand(&B, true), m, mq_tensor_data(ga));
    if (masked) /* terms g[i, j] & b[l, j]: b's mask read transposed */
      grad_mask(S, &A, nbatch, m, gm, goff, m, 1, B.m, B.moff, 1, m, mq_tensor_data(ga), dt,
                mq_ag_new_mask(S, ga));
    gin[0] = ga;
  }
  if (b->requires_grad) { /* gb = a^T @ g */
    mq_tensor *gb = mq_tensor_new(S, dt, b->ndim, b->shape);
    products(S, dt, nbatch, &B, operand(&A, true), G, n, mq_tensor_data(gb));
    if (masked) /* terms a[i, l] & g[i, j]: rows l of a^T, over i, against g's rows */
      grad_mask(S, &B, nbatch, n, A.m, A.moff, 1, K, gm, goff, m, 1, mq_tensor_data(gb), dt,
                mq_ag_new_mask(S, gb));
    gin[1] = gb;
  }
}
