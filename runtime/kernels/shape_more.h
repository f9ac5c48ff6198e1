/* shape_more.h - more shape ops with torch's names: triangles (tril,
 * triu), tiling (repeat), rotation (roll), differences (diff), batched and
 * Einstein-summed products (bmm, einsum), and numpy's .T.
 *
 * All are compositions of the ops of shape.h, elementwise.c, reduce and
 * matmul, so masks and gradients follow those ops' rules: data and mask
 * move alike, a product is valid when both factors are, and a sum skips
 * masked-out terms (none valid: masked out). Dims passed in are raw
 * (possibly negative). */
#ifndef MQ_SHAPE_MORE_H
#define MQ_SHAPE_MORE_H

#include "../tensor/tensor.h"

/* tril (upper false) / triu (upper true) over the last two dims: entries
 * below (above) [diagonal] are kept, the others set to 0. Zeroing is not
 * masking: a zeroed entry keeps its validity, as torch's tril of a
 * MaskedTensor's data with its mask unchanged. */
MQ_INTERNAL mq_tensor *mq_tri(mq_state *S, mq_tensor *t, int64_t diagonal, bool upper);
/* torch's repeat: [n] sizes (n >= ndim; leading ones add dims), each dim
 * tiled sizes[i] times. */
MQ_INTERNAL mq_tensor *mq_repeat(mq_state *S, mq_tensor *t, int n, const int64_t *sizes);
/* torch's roll: entries move [shifts[i]] places along [dims[i]] and wrap
 * around; [dims] NULL: along the flattened tensor ([n] is then 1). */
MQ_INTERNAL mq_tensor *mq_roll(mq_state *S, mq_tensor *t, int n, const int64_t *shifts,
                               const int64_t *dims);
/* torch's diff: the [n]-th forward difference along [dim] (bool: xor). A
 * difference is valid when both its entries are. */
MQ_INTERNAL mq_tensor *mq_diff(mq_state *S, mq_tensor *t, int64_t n, int64_t dim, mq_tensor *prepend,
                                 mq_tensor *append);
/* bmm: matmul of two 3-d tensors with the same batch size (no
 * broadcasting, as torch). */
MQ_INTERNAL mq_tensor *mq_bmm(mq_state *S, mq_tensor *a, mq_tensor *b);
/* x.T: the dims in reverse order (numpy's rule; a transpose for 2-d). */
MQ_INTERNAL mq_tensor *mq_reverse_dims(mq_state *S, mq_tensor *t);

/* einsum([spec] of [len] bytes, [n] operands): labels a-z A-Z, "..." for
 * the dims no label names, "->" then the output (implicit: the labels
 * used once, in ASCII order, after the ellipsis dims). Dims of size 1
 * broadcast. A label repeated within one operand takes its diagonal.
 * Computed by sums over labels only one operand has, then pairwise
 * matmuls, left to right. */
MQ_INTERNAL mq_tensor *mq_einsum(mq_state *S, const char *spec, size_t len, int n,
                                 mq_tensor *const *ops);

#endif
