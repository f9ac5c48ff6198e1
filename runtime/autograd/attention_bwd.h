/* attention_bwd.h - masked attention as one autograd node.
 *
 * softmax(as_masked(a @ b / c, m), -1) @ v with a, b or v requiring grad:
 * the forward is nn/attention.c's pass over the valid keys, and ONE
 * node (MQ_AG_ATTENTION) is recorded in place of the six of op by op
 * (matmul, div, as_masked, softmax, matmul; b's transpose stays its own
 * node). Its backward (attention_bwd.c) works over the valid keys only and
 * gives, data and mask, bitwise the gradients op by op gives. */
#ifndef MQ_ATTENTION_BWD_H
#define MQ_ATTENTION_BWD_H

#include "../tensor/tensor.h"

/* The result, recording the node when gradients are recorded, or NULL when
 * the fast path does not take these operands (nothing was done): the same
 * operands as mq_attention (attention.h), except that a, b and v may
 * require grad, and that with [bt] the product reads b with its last two
 * dims swapped (transpose(k, -2, -1): k itself gets its gradient, no
 * transpose node is recorded). */
MQ_INTERNAL mq_tensor *mq_attention_grad(mq_state *S, mq_tensor *a, mq_tensor *b, bool bt,
                                         mq_value c, mq_tensor *m, mq_tensor *v);

/* The derivative of the node (backward.c's switch): g is the gradient of
 * the result in any form (backward.h); gin[0..3) those of a, b and v (NULL
 * when not requiring grad): float64, or for float32 operands float32, op
 * by op's values (sums in double) rounded once, the gradient a float32
 * leaf gets op by op. */
MQ_INTERNAL void mq_bw_attention(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);

/* The one entry of the compiler's fused form of the expression (FUSED,
 * vm/fuse_attn.c) and of the attention builtin (stdlib/lib_nn.c):
 * softmax(M(a @ b' / c, m), -1) @ v, where b' is b, or transpose(b, d0,
 * d1) when [tr]; M is as_masked when [keep_graph], else masked (whose
 * result under grad is the op-by-op code's to give: it drops the graph,
 * and warns). Without gradients mq_attention (nn/attention.h), with them
 * one node (mq_attention_grad above): picking between the two is why it
 * lives in this room, after nn/ (attention_try.c). c is a number, or a
 * plain 0-d tensor: its number (op by op divides by either alike: a 0-d
 * operand does not promote the scores' dtype). NULL when the fast path
 * does not take these operands (nothing was done): the caller then runs
 * the operations one by one, which raise their own errors. */
MQ_INTERNAL mq_tensor *mq_attention_try(mq_state *S, mq_tensor *a, mq_tensor *b, bool tr, int d0,
                                        int d1, mq_value c, mq_tensor *m, mq_tensor *v,
                                        bool keep_graph);

#endif
