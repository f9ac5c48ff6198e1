/* shape.h - shape and view operations, joining and splitting, and
 * length masks.
 *
 * The mask follows the data: every op here moves a masked tensor's mask
 * exactly as its data. Ops that can be views are views (sharing storage with
 * their input, data and mask alike); the others copy. Since tensors are
 * immutable values, "view or copy" is never observable from a program, only
 * in memory and time. Dims passed in are raw (possibly negative) unless
 * noted; the functions normalize and check them. */
#ifndef MQ_SHAPE_H
#define MQ_SHAPE_H

#include "tensor.h"

/* reshape/view: [shape] may hold one -1 (inferred). A view when the strides
 * allow it, else a copy in row-major order of the LOGICAL layout (data and
 * mask alike; torch 1.13 gets this wrong for non-contiguous masked
 * tensors). */
MQ_INTERNAL mq_tensor *mq_reshape(mq_state *S, mq_tensor *t, int ndim, const int64_t *shape);
/* Merges dims start..end into one; a 0-d tensor becomes shape (1,). */
MQ_INTERNAL mq_tensor *mq_flatten(mq_state *S, mq_tensor *t, int64_t start, int64_t end);
/* Drops the size-1 dims among [dims] ([ndims] of them; none given: all
 * size-1 dims). A listed dim whose size is not 1 is left alone (torch). */
MQ_INTERNAL mq_tensor *mq_squeeze(mq_state *S, mq_tensor *t, int ndims, const int64_t *dims);
/* Inserts a dim of size 1 at [dim] (-ndim-1 .. ndim). */
MQ_INTERNAL mq_tensor *mq_unsqueeze(mq_state *S, mq_tensor *t, int64_t dim);
/* Reorders dims: out dim i is t's dim perm[i]; perm is a permutation. */
MQ_INTERNAL mq_tensor *mq_permute(mq_state *S, mq_tensor *t, int n, const int64_t *perm);
MQ_INTERNAL mq_tensor *mq_transpose(mq_state *S, mq_tensor *t, int64_t d0, int64_t d1);
/* Transpose of a tensor of at most 2 dims (0-d and 1-d as they are). */
MQ_INTERNAL mq_tensor *mq_t(mq_state *S, mq_tensor *t);
/* expand/broadcast_to: like mq_expand, with -1 keeping a dim's size. */
MQ_INTERNAL mq_tensor *mq_expand_sizes(mq_state *S, mq_tensor *t, int ndim,
                                       const int64_t *shape);
/* [length] entries of [dim] from [start] (negative start counts from the
 * end). */
MQ_INTERNAL mq_tensor *mq_narrow(mq_state *S, mq_tensor *t, int64_t dim, int64_t start,
                                 int64_t length);
/* narrow's checks, and the slice item it indexes dim *d with (sparse
 * tensors index by items too). */
MQ_INTERNAL mq_index_item mq_narrow_item(mq_state *S, const mq_tensor *t, int64_t dim,
                                         int64_t start, int64_t length, int *d);
/* Entry [index] of [dim], which is removed. */
MQ_INTERNAL mq_tensor *mq_select(mq_state *S, mq_tensor *t, int64_t dim, int64_t index);
/* Reverses the order along each of [dims] (a copy, as torch). */
MQ_INTERNAL mq_tensor *mq_flip(mq_state *S, mq_tensor *t, int ndims, const int64_t *dims);

/* torch's diagonal: the entries (i, i + offset) of dims [dim1] and [dim2],
 * which are removed, as a new last dim (a view, data and mask alike). */
MQ_INTERNAL mq_tensor *mq_diagonal(mq_state *S, mq_tensor *t, int64_t offset, int64_t dim1,
                                   int64_t dim2);

/* Joins [n] tensors along an existing dim (cat) or a new one (stack). The
 * result dtype is mq_result_type of the inputs; it is masked if any input
 * is, plain inputs counting as all valid. */
MQ_INTERNAL mq_tensor *mq_cat(mq_state *S, int n, mq_tensor *const *ts, int64_t dim);
MQ_INTERNAL mq_tensor *mq_stack(mq_state *S, int n, mq_tensor *const *ts, int64_t dim);

/* Broadcasts shapes a and b (numpy rules) into out and returns its ndim, or
 * -1 when they do not broadcast (for callers with their own message). */
MQ_INTERNAL int mq_broadcast_try(int na, const int64_t *a, int nb, const int64_t *b,
                                 int64_t *out);

/* A bool tensor of shape lengths.shape + (max_len,): True where the position
 * is < the length. max_len < 0: the largest length (0 if none). */
MQ_INTERNAL mq_tensor *mq_length_mask(mq_state *S, mq_tensor *lengths, int64_t max_len);

/* The element offsets of batch matrix [bi] in two tensors: bi counts the
 * batch dims shape[0, nb) in row-major order, and the tensors step by
 * strides sa and sb along them (*oa, *ob). For kernels that take a batch
 * of matrices one at a time (matmul, attention). */
static inline void mq_batch_offsets(int nb, const int64_t *shape, int64_t bi, const int64_t *sa,
                                    int64_t *oa, const int64_t *sb, int64_t *ob) {
  int64_t a = 0, b = 0;
  for (int d = nb - 1; d >= 0; d--) {
    int64_t k = bi % shape[d];
    bi /= shape[d];
    a += k * sa[d];
    b += k * sb[d];
  }
  *oa = a, *ob = b;
}

#endif
