/* backward.h - what the derivative files (backward.c, backward_ops.c)
 * share. Every gradient here is a contiguous float64 tensor with a
 * contiguous mask or none (autograd.h); the helpers read and build that
 * form. A derivative never multiplies by a mask: it skips or selects. */
#ifndef MQ_BACKWARD_H
#define MQ_BACKWARD_H

#include "autograd.h"
#include "kernels.h"

/* The float64 data of a gradient-form tensor. */
static inline double *mq_bw_d(mq_tensor *t) { return (double *)mq_tensor_data(t); }

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
