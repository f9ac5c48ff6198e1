/* autograd.h - reverse-mode differentiation of masked tensors: leaves,
 * the backward pass and the derivatives.
 *
 * The forward ops record their nodes through tape.h. Backward walks the
 * nodes from a 0-d result in topological order and runs each node's
 * derivative, found by its kind in a table made from tape.h's rows
 * (MQ_AG_KINDS; backward.c), accumulating a gradient per tensor.
 *
 * A sparse tensor's gradient is sparse, of its structure (backward_sparse.c).
 *
 * Gradients are masked tensors too (torch.masked's semantics): a masked-out
 * gradient means "no gradient flowed here", which is not a zero gradient.
 * The gradient of a masked tensor is always masked, within that tensor's
 * mask; a gradient reaching a plain tensor is masked if the path it came
 * through was (e.g. through as_masked). Masked-out data is never read:
 * derivatives select, they never multiply by the mask, so a NaN under the
 * mask cannot leak into a valid gradient.
 *
 * Backward frees the graph it walked (releases every node's inputs, leaving
 * the nodes marked freed) unless asked to retain it.
 */
#ifndef MQ_AUTOGRAD_H
#define MQ_AUTOGRAD_H

#include "../tensor/tape.h"

/* --- leaves, graphs, backward -------------------------------------------- */

/* A new leaf sharing [t]'s data and mask, with no history, requiring grad
 * if [flag] (then t must be float). requires_grad(x) and detach(x). */
MQ_INTERNAL mq_tensor *mq_ag_leaf(mq_state *S, mq_tensor *t, bool flag, const char *who);

/* Runs backward from [y] (one element, requiring grad): every leaf reached
 * gets the gradient added to its .grad. Frees the graph unless [retain]. */
MQ_INTERNAL void mq_backward(mq_state *S, mq_tensor *y, bool retain);
/* Gradients of [y] w.r.t. [n] tensors of its graph, without touching .grad
 * (torch.autograd.grad); out[i] is pool-owned, masked like inputs[i]. Frees
 * the graph unless [retain]. */
MQ_INTERNAL void mq_grad(mq_state *S, mq_tensor *y, mq_tensor *const *inputs, int n, bool retain,
                         mq_tensor **out);

/* --- the derivatives (backward.c) ----------------------------------------- */

/* Computes the gradients of [t]'s node inputs from [g], the gradient of t
 * (t's shape, masked or plain; float64, or float32 for a float32 t, and
 * contiguous or a stride-0 broadcast: backward.h). gin[i] receives the
 * gradient of in[i] in that form, or NULL (none, or in[i] does not require
 * grad). */
MQ_INTERNAL void mq_ag_node_backward(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
/* "exp", "sum", ... for messages. */
MQ_INTERNAL const char *mq_ag_node_name(const mq_gradnode *n);

/* Gradient helpers shared by autograd.c and backward.c. */
/* A new contiguous float64 tensor of [t]'s shape, uninitialized. */
MQ_INTERNAL mq_tensor *mq_ag_gnew(mq_state *S, int ndim, const int64_t *shape);
/* The contiguous mask bytes of [t], or NULL for a plain tensor. */
MQ_INTERNAL const uint8_t *mq_ag_maskp(mq_state *S, mq_tensor *t);
/* Attaches a new contiguous mask to gradient [g] and returns its bytes. */
MQ_INTERNAL uint8_t *mq_ag_new_mask(mq_state *S, mq_tensor *g);
/* a + b for gradients: where only one is valid it wins, where neither is
 * the sum is masked out; masked-out data is never read. */
MQ_INTERNAL mq_tensor *mq_ag_accumulate(mq_state *S, mq_tensor *a, mq_tensor *b);

/* The same for gradients of sparse tensors (backward_sparse.c): a sparse
 * gradient has float64 values (nnz, contiguous) and its tensor's index
 * tensors, with a sparse bool mask of that structure or none. */
MQ_INTERNAL mq_tensor *mq_ag_sparse_accumulate(mq_state *S, mq_tensor *a, mq_tensor *b);
/* [g] as the gradient of sparse [t]: t's dtype, within t's mask. */
MQ_INTERNAL mq_tensor *mq_ag_sparse_finalize(mq_state *S, mq_tensor *g, mq_tensor *t);
/* A stored gradient of sparse [t] back in the engine's form. */
MQ_INTERNAL mq_tensor *mq_ag_sparse_f64(mq_state *S, mq_tensor *t);
/* [g] with sparse [t]'s mask when g has none. */
MQ_INTERNAL mq_tensor *mq_ag_sparse_within(mq_state *S, mq_tensor *g, mq_tensor *t);
/* The gradient of sparse [x] when nothing flowed: 0s, all masked out if x
 * is masked. */
MQ_INTERNAL mq_tensor *mq_ag_sparse_none(mq_state *S, mq_tensor *x);
/* A leaf of sparse [t] (requires_grad, detach). */
MQ_INTERNAL mq_tensor *mq_ag_sparse_leaf(mq_state *S, mq_tensor *t, bool flag);

#endif
