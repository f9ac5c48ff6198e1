/* attention.h - masked attention in one pass over the valid keys.
 *
 * softmax(masked(a @ b / c, m), -1) @ v, which the compiler hands over as
 * one fused program (vm/fuse.h) and the attention builtin asks for
 * (both through mq_attention_try, autograd/attention_bwd.h, which also
 * records the node under grad): each output row is computed from the
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

/* Helpers the forward and its backward (attention_bwd.c) share. */

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
