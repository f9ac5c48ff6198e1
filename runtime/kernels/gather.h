/* gather.h - moving entries by int64 index tensors (gather.c), ordering
 * them (sort.c), and comparing two tensors (allclose).
 *
 * Masks travel with the values: an output entry is valid when the entry
 * it was read from is. An index tensor may itself be masked: a masked-out
 * index is never read (nor range-checked), and what it would have produced
 * is masked out (gather), or nothing happens (scatter). An index out of
 * range is an error naming the index, the dim and its size. Gradients flow
 * to the values moved (the backward of a gather adds into the sources). */
#ifndef MQ_GATHER_H
#define MQ_GATHER_H

#include "../tensor/tensor.h"

/* out[p] = x[p with p[dim] replaced by index[p]]: index (int64) has x's
 * number of dims and is no longer than x along every other dim; the
 * result has index's shape. */
MQ_INTERNAL mq_tensor *mq_gather(mq_state *S, mq_tensor *x, int dim, mq_tensor *index);
/* x with src[p] written at (p with p[dim] replaced by index[p]) for every
 * valid index entry p, in row-major order (a later entry wins). With [add],
 * the valid src entries are added instead (scatter_add): an output entry
 * is valid if x's entry or some src entry added to it is. src has at least
 * index's size along every dim, and x's dtype. */
MQ_INTERNAL mq_tensor *mq_scatter(mq_state *S, mq_tensor *x, int dim, mq_tensor *index,
                                  mq_tensor *src, bool add);
/* The entries of x at the 1-D (or 0-d) int64 [index] along [dim]. */
MQ_INTERNAL mq_tensor *mq_index_select(mq_state *S, mq_tensor *x, int dim, mq_tensor *index);
/* int64 one-hot rows: shape index.shape + (classes,); classes < 0: the
 * largest valid index + 1. A masked-out index gives a masked-out row. */
MQ_INTERNAL mq_tensor *mq_one_hot(mq_state *S, mq_tensor *index, int64_t classes);

/* sort.c: along [dim], stable; NaN counts as the largest value; masked-out
 * entries come last in either order, masked out in both results. */
MQ_INTERNAL void mq_sort(mq_state *S, mq_tensor *x, int dim, bool descending, mq_tensor **values,
                         mq_tensor **indices);
/* The k largest (or smallest) valid entries along [dim], in order; a slice
 * with fewer than k valid entries has its last results masked out. */
MQ_INTERNAL void mq_topk(mq_state *S, mq_tensor *x, int64_t k, int dim, bool largest,
                         mq_tensor **values, mq_tensor **indices);
/* torch.kthvalue: the k-th smallest (k from 1) valid entry along [dim] and
 * its index, ties in the stable order (NaN largest); a slice with fewer
 * than k valid entries gives a masked-out value and index. */
MQ_INTERNAL void mq_kthvalue(mq_state *S, mq_tensor *x, int64_t k, int dim, bool keepdim,
                             mq_tensor **values, mq_tensor **indices);
/* The order of sort and topk: an int64 tensor of x's shape with k along
 * [dim], each slice's first k positions: its valid entries sorted (NaN
 * last), then its masked-out ones in place order. */
MQ_INTERNAL mq_tensor *mq_sort_order(mq_state *S, mq_tensor *x, int dim, bool desc, int64_t k);
/* max(x, dim) / min(x, dim): the extreme valid entry of each slice and its
 * int64 index (the first of equals; NaN wins); a slice with no valid entry
 * gives a masked-out value and index. */
MQ_INTERNAL void mq_extreme_dim(mq_state *S, mq_tensor *x, int dim, bool keepdim, bool max,
                                mq_tensor **values, mq_tensor **indices);
/* |a - b| <= atol + rtol * |b| at every valid position (after
 * broadcasting; NaN equal to NaN with [equal_nan]). A plain operand takes
 * the other's mask, as in a binary op; two masked operands whose masks
 * differ are not close (false, where a binary op raises). */
MQ_INTERNAL bool mq_allclose(mq_state *S, mq_tensor *a, mq_tensor *b, double rtol, double atol,
                             bool equal_nan);

#endif
