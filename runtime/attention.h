/* attention.h - masked attention in one pass over the valid keys.
 *
 * softmax(masked(a @ b / c, m), -1) @ v, which the compiler hands over as
 * one fused program (vm/fuse.h): each output row is computed from the
 * scores of its valid keys only, never stored, with the very operations
 * (and order of operations) of matmul.c, the division and softmax.c, so
 * the result is bitwise the op-by-op one, data and mask, at any thread
 * count. */
#ifndef MQ_ATTENTION_H
#define MQ_ATTENTION_H

#include "tensor.h"

/* The result, or NULL when the fast path does not take these operands
 * (nothing was done; the op-by-op code then runs with its own errors). It
 * takes: a, b, v plain (no mask), float32 or float64 alike, not recording
 * gradients, of at least 2 dims and the same batch dims, with
 * a [.., n, K], b [.., K, m], v [.., m, dv] (b any view: a transpose is
 * read in place); c a number; m a plain bool tensor that broadcasts to
 * the scores' shape [.., n, m]. Raises only what any op may (memory,
 * interrupt). */
MQ_INTERNAL mq_tensor *mq_attention(mq_state *S, mq_tensor *a, mq_tensor *b, mq_value c,
                                    mq_tensor *m, mq_tensor *v);

#endif
