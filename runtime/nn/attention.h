/* attention.h - masked attention in one pass over the valid keys.
 *
 * softmax(masked(a @ b / c, m), -1) @ v, which the compiler hands over as
 * one fused program (vm/fuse.h) and the attention builtin asks for
 * (both through mq_attention_try below, when no gradient is recorded):
 * each output row is computed from the
 * scores of its valid keys only, never stored, with the very operations
 * (and order of operations) of matmul.c, the division and softmax.c, so
 * the result is bitwise the op-by-op one, data and mask, at any thread
 * count. */
#ifndef MQ_ATTENTION_H
#define MQ_ATTENTION_H

#include "../tensor/tensor.h"

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

/* The one entry of the compiler's fused form of the expression (FUSED,
 * vm/fuse_attn.c) and of the attention builtin (stdlib/lib_nn.c):
 * softmax(M(a @ b' / c, m), -1) @ v, where b' is b, or transpose(b, d0,
 * d1) when [tr]; M is as_masked when [keep_graph], else masked (whose
 * result under grad is the op-by-op code's to give: it drops the graph,
 * and warns). Without gradients mq_attention above; with them NULL: op
 * by op records and differentiates each step. c is a number, or a
 * plain 0-d tensor: its number (op by op divides by either alike: a 0-d
 * operand does not promote the scores' dtype). NULL when the fast path
 * does not take these operands (nothing was done): the caller then runs
 * the operations one by one, which raise their own errors. */
MQ_INTERNAL mq_tensor *mq_attention_try(mq_state *S, mq_tensor *a, mq_tensor *b, bool tr, int d0,
                                        int d1, mq_value c, mq_tensor *m, mq_tensor *v,
                                        bool keep_graph);

/* Helpers of the forward. */

/* The bytes of a row's mask at [mr] (stride [sj]) as a contiguous row,
 * copied into buf [m] unless they already are one. */
static inline const uint8_t *mq_attn_mask_row(const uint8_t *mr, int64_t sj, int64_t m,
                                              uint8_t *buf) {
  if (sj == 1) return mr;
  for (int64_t j = 0; j < m; j++) buf[j] = mr[j * sj];
  return buf;
}

/* The valid keys of mask row mr as indices into the union columns
 * cols [nv], in ks; returns how many. */
static inline int64_t mq_attn_valid_keys(const uint8_t *mr, const int64_t *cols, int64_t nv,
                                         int64_t *ks) {
  int64_t nk = 0;
  for (int64_t jj = 0; jj < nv; jj++) {
    ks[nk] = jj;
    nk += mr[cols[jj]] != 0;
  }
  return nk;
}

#endif
