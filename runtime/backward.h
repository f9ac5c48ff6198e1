/* backward.h - what the derivative files (backward.c, backward_ops.c)
 * share. A gradient is a float64 tensor, or a float32 one (the gradient of
 * a float32 tensor, from the derivatives that have float32 kernels:
 * unary, binary, sum and mean, softmax), with a contiguous mask or none
 * (autograd.h). It is contiguous, except that the gradient of a float32
 * sum or mean over every dim is one value broadcast with stride 0 (not
 * [numel] copies of it). mq_ag_node_backward hands every other derivative
 * the contiguous float64 form (mq_bw_g64). A derivative never multiplies
 * by a mask: it skips or selects. */
#ifndef MQ_BACKWARD_H
#define MQ_BACKWARD_H

#include "autograd.h"
#include "kernels.h"

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
/* [t]'s mask broadcast to [shape] (contiguous bytes), or NULL if plain. */
MQ_INTERNAL const uint8_t *mq_bw_mask_to(mq_state *S, mq_tensor *t, int nd, const int64_t *shape);
/* For every position of [shape] in row-major order, the offset
 * sum(index[d] * strides[d]). */
MQ_INTERNAL int64_t *mq_bw_offsets(mq_state *S, int nd, const int64_t *shape,
                                   const int64_t *strides);
/* The gradient of [x] from [v], a gradient of the (broadcast) result
 * shape: summed over the dims x was broadcast along, valid entries only.
 * Masked when v or x is (within x's mask). */
MQ_INTERNAL mq_tensor *mq_bw_sum_to(mq_state *S, mq_tensor *v, mq_tensor *x);

/* The derivatives that are not elementwise (backward_ops.c). */
MQ_INTERNAL void mq_bw_reduce(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_softmax(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_cumulative(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_gather(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
/* scatter_add's (gather.c): x gets g, src the gradient at its position */
MQ_INTERNAL void mq_bw_scatter_add(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL void mq_bw_matmul(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
/* The derivatives of the MQ_AG_SP_* kinds, and their names (backward_sparse.c). */
MQ_INTERNAL void mq_bw_sparse(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
MQ_INTERNAL const char *mq_bw_sparse_name(const mq_gradnode *n);

#endif
