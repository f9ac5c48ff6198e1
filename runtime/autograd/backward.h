/* backward.h - what the derivative files (backward.c, backward_ops.c)
 * share. A gradient is a float64 tensor, or a float32 one (the gradient of
 * a float32 tensor, from the derivatives that have float32 kernels:
 * unary, binary, sum and mean, softmax, where and masked_fill, the sums
 * of a broadcast (mq_bw_sum_to), views and cat (moves), matmul,
 * layer_norm, cross_entropy's pick), with a contiguous mask or none
 * (autograd.h). It is contiguous, except that the gradient of a float32
 * sum or mean over every dim is one value broadcast with stride 0 (not
 * [numel] copies of it). mq_ag_node_backward hands every other derivative
 * the contiguous float64 form (mq_bw_g64). A derivative never multiplies
 * by a mask: it skips or selects. */
#ifndef MQ_BACKWARD_H
#define MQ_BACKWARD_H

#include <math.h>

#include "../../core/checked.h"
#include "autograd.h"
#include "../kernels/vexp.h"
#include "../tensor/iter.h"

/* e^y for log_softmax's derivative: of a float32 result, masq's float32
 * exp (mq_vexpf: the same bits on every CPU, as the forward's), else
 * glibc's double exp. */
static inline double mq_bw_exp(double y, bool f32) { return f32 ? (double)mq_vexpf((float)y) : exp(y); }

/* The float64 data of a gradient-form tensor. */
static inline double *mq_bw_d(mq_tensor *t) { return (double *)mq_tensor_data(t); }

/* The float32 data of a float32 gradient (contiguous, or stride 0). */
static inline float *mq_bw_f(mq_tensor *t) { return (float *)mq_tensor_data(t); }
/* A gradient's element stride: 1, or 0 for the broadcast form. */
static inline int64_t mq_bw_gstride(const mq_tensor *g) {
  return g->numel > 1 && !mq_tensor_is_contiguous(g) ? 0 : 1;
}

/* [g] in the contiguous float64 form, its mask kept (g itself if it is). */
MQ_INTERNAL mq_tensor *mq_bw_g64(mq_state *S, mq_tensor *g);
/* A new contiguous float32 gradient of [shape], uninitialized. */
MQ_INTERNAL mq_tensor *mq_bw_gnew32(mq_state *S, int nd, const int64_t *shape);
/* [t]'s data (mask ignored) broadcast to [shape], as contiguous float32:
 * read in place when it is that already (the result is then only read). */
MQ_INTERNAL const float *mq_bw_f32_at(mq_state *S, mq_tensor *t, int nd, const int64_t *shape);
/* [t]'s data (mask ignored) broadcast to [shape], as contiguous float64. */
MQ_INTERNAL mq_tensor *mq_bw_f64_to(mq_state *S, mq_tensor *t, int nd, const int64_t *shape);
/* The gradient of [x] from [v], a gradient of the (broadcast) result
 * shape: summed over the dims x was broadcast along, valid entries only.
 * Masked when v or x is (within x's mask). Each sum is in double; a
 * float32 v gives a float32 gradient (each sum rounded once). */
MQ_INTERNAL mq_tensor *mq_bw_sum_to(mq_state *S, mq_tensor *v, mq_tensor *x);

/* Sums over one block of dims, on threads: a tensor of [shape] seen as
 * (outer, len, inner), the dims [summed] (bits; size-1 dims count as
 * either) being those of len. False when they are not one block. */
static inline bool mq_bw_block(int nd, const int64_t *shape, uint32_t summed, int64_t *outer,
                               int64_t *len, int64_t *inner) {
  int d0 = 0, d1 = -1;
  while (d0 < nd && !((summed >> d0) & 1 && shape[d0] != 1)) d0++;
  for (int d = d0; d < nd; d++)
    if ((summed >> d) & 1 && shape[d] != 1) d1 = d;
  if (d1 < d0) return false;
  *outer = *len = *inner = 1;
  for (int d = 0; d < nd; d++) {
    bool in = (summed >> d) & 1 && shape[d] != 1;
    if (d > d0 && d < d1 && !in && shape[d] != 1) return false;
    *(d < d0 ? outer : d <= d1 ? len : inner) *= shape[d];
  }
  return true;
}
/* Walks slots [lo, hi) of such a sum (slot o * inner + c) in the order a
 * plain loop over the tensor meets their entries (o, r, c): fn(ctx, slot,
 * entry, n, ds) for each run of n consecutive entries, entry + j feeding
 * slot + j * ds (ds 1: n consecutive slots; 0, when inner is 1: one slot,
 * its whole row). A slot is then one thread's, its terms in order. */
typedef void (*mq_bw_run_fn)(void *ctx, int64_t slot, int64_t entry, int64_t n, int64_t ds);
static inline void mq_bw_block_walk(int64_t lo, int64_t hi, int64_t len, int64_t inner,
                                    mq_bw_run_fn fn, void *ctx) {
  if (inner == 1) {
    for (int64_t k = lo; k < hi; k++) fn(ctx, k, k * len, len, 0);
    return;
  }
  for (int64_t k0 = lo; k0 < hi;) {
    int64_t o = k0 / inner, c0 = k0 - o * inner, c1 = inner - c0 < hi - k0 ? inner : c0 + (hi - k0);
    for (int64_t r = 0; r < len; r++) fn(ctx, o * inner + c0, (o * len + r) * inner + c0, c1 - c0, 1);
    k0 += c1 - c0;
  }
}

/* The derivatives that are not elementwise (backward_ops.c), each the
 * backward of rows of MQ_AG_KINDS (tape.h). */
MQ_INTERNAL void mq_bw_reduce(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_softmax(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_cumulative(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_logcumsumexp(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_gather(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_permute(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
/* scatter_add's: x gets g, src the gradient at its position */
MQ_INTERNAL void mq_bw_scatter_add(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_matmul(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
/* the fused layer_norm's (layer_norm_bwd.c) */
MQ_INTERNAL void mq_bw_layer_norm(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
/* cross_entropy's pick of the target classes (backward_pick.c) */
MQ_INTERNAL void mq_bw_pick(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
/* The derivatives of the MQ_AG_SP_* kinds (backward_sparse.c). */
MQ_INTERNAL void mq_bw_sp_values(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_wrap(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_gather(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_dense(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_layout(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_reduce(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_softmax(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_matmul(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_sddmm(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_build(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_sp_pick(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
/* SP_NODIFF's: an error naming the op (backward.c). */
MQ_INTERNAL void mq_bw_nodiff(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);

#endif
