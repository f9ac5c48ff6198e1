/* gemm.h - dense matrix products at the machine's limit: C = A @ B for
 * stacks of matrices, float32 and float64 (and half-type inputs, widened
 * to float32 as they are packed), with validity masks, on the state's
 * threads. matmul, bmm, @, einsum's contractions, linear and matmul's
 * backward all come here (matmul.c, einsum.c, backward_ops.c).
 *
 * The result is defined entry by entry, whatever the path, tiling or
 * thread count: c[i, j] is a chain of fused multiply-adds over k in
 * increasing order, starting from +0 (or from C's own value, with
 * accumulate), in the compute type, rounded once per step:
 *     c = fma(a[i, k], b[k, j], c)    for k in the batch's k span
 * Every path (portable fma/fmaf, AVX2, AVX-512) computes that same chain
 * for every entry; blocking over k stores and reloads the exact partial
 * sum, so the tile sizes, the CPU's vector width and which thread takes a
 * tile change nothing. float32 accumulates in float32, as BLAS and torch
 * do (a float64 accumulator halves the width of every vector).
 *
 * Masks. A masked-out entry of A or B takes part as 0 (so a product with
 * a finite partner adds an exact 0). The spans shrink the work: rows of A
 * with no valid entry, columns of B with none, and k outside the span
 * where both have one are not computed (their c is 0). A valid inf or NaN
 * meeting a masked-out partner would turn that 0 into NaN; products with
 * such a pair, and only those, are skipped (a scalar path taken only when
 * such a value exists). */
#ifndef MQ_GEMM_H
#define MQ_GEMM_H

#include "../../core/state.h"
#include "../tensor/tensor.h"

/* One operand: element (r, c) of batch b at p + off[b] + r * rs + c * cs
 * (elements of the data's dtype), valid where m + moff[b] + r * mrs +
 * c * mcs is nonzero (m NULL: all valid; off/moff NULL: every batch at 0). */
typedef struct mq_gemm_mat {
  const void *p;
  int64_t rs, cs;
  const int64_t *off;
  const uint8_t *m;
  int64_t mrs, mcs;
  const int64_t *moff;
} mq_gemm_mat;

/* C[b] (n x m, row stride ldc, at C + coff[b]) = A[b] (n x K) @ B[b]
 * (K x m) for b < nbatch. [in]: the dtype of A's and B's data (F32, F64,
 * BF16, F16); [dt]: the compute and C's dtype (F32 for every input but
 * F64). [accumulate]: each chain starts from C's value instead of +0.
 * [keep] (its p unused; m NULL: all of C): where C is wanted, as a mask
 * laid out like an operand's; the rows and columns of a batch outside
 * the span of its valid entries are not computed but hold 0 (a gradient
 * that the operand's own mask will hide there anyway). */
typedef struct mq_gemm {
  mq_dtype in, dt;
  int64_t nbatch, n, m, K;
  mq_gemm_mat A, B;
  void *C;
  int64_t ldc;
  const int64_t *coff;
  bool accumulate;
  mq_gemm_mat keep;
  /* every batch adds into the one C (coff NULL), batch after batch, each
   * over its own spans: a weight broadcast over the batches summing its
   * gradient in one call (the chains those calls one by one would give);
   * with accumulate (C holds where the chains start) */
  bool sum_batches;
} mq_gemm;

/* Runs [G]: on the state's threads when large, polling for interrupts. */
MQ_INTERNAL void mq_gemm_run(mq_state *S, const mq_gemm *G);

/* For kernels that share out their own work over the threads (attention):
 * c (n x m, row stride ldc) = a (n x K, row stride lda) @ b (K x m, row
 * stride ldb), contiguous rows of dtype dt (F32 or F64), no masks, each
 * entry the chain of gemm.h from +0, on the calling thread alone, on CPU
 * path [cpu], with the packing buffers at [buf] (mq_gemm_serial_bytes of
 * the same sizes, 64-byte aligned). Never allocates, raises or polls. */
MQ_INTERNAL size_t mq_gemm_serial_bytes(int cpu, mq_dtype dt, int64_t n, int64_t m, int64_t K);
MQ_INTERNAL void mq_gemm_serial(int cpu, mq_dtype dt, int64_t n, int64_t m, int64_t K,
                                const void *a, int64_t lda, const void *b, int64_t ldb, void *c,
                                int64_t ldc, void *buf);

/* om[i m + j] |= some k < K has x(i, k) and y(k, j), for i < n, j < m:
 * the entries of a product that a valid term reaches (matmul's mask and
 * its gradients'). x(i, k) at x[i xrs + k xcs], y(k, j) at y[k yrs + j
 * ycs], nonzero bytes valid; NULL: all valid. [ws]: a workspace of
 * mq_mask_product_bytes(n, K, m) bytes, 8-byte aligned (one per thread). */
MQ_INTERNAL void mq_mask_product(uint8_t *om, int64_t n, int64_t K, int64_t m, const uint8_t *x,
                                 int64_t xrs, int64_t xcs, const uint8_t *y, int64_t yrs,
                                 int64_t ycs, void *ws);
MQ_INTERNAL size_t mq_mask_product_bytes(int64_t n, int64_t K, int64_t m);

#endif
