/* attention_try.c - mq_attention_try (attention_bwd.h): the one entry of
 * fused attention, for the compiler's fused shape and the attention
 * builtin alike. Here, after nn/, because it picks between the forward
 * alone (nn/attention.h) and the forward recorded as one node
 * (mq_attention_grad, attention_bwd.c). */
#include "attention_bwd.h"

#include "../nn/attention.h"
#include "../tensor/shape.h"

/* The divisor as a number: a number, or a 0-d tensor of plain data (no
 * mask, no gradient), which is what `for d in [8, 3]` or `tensor(8)`
 * gives; op by op divides by either alike (a 0-d operand does not promote
 * the scores' dtype), so the number gives the same bits. */
static bool divisor(mq_state *S, mq_value v, mq_value *c) {
  if (v.type == MQ_INT || v.type == MQ_FLOAT) {
    *c = v;
    return true;
  }
  if (!mq_is_tensor(v)) return false;
  mq_tensor *t = mq_as_tensor(v);
  if (t->layout != 0 || t->ndim != 0 || t->mask || t->requires_grad || t->node ||
      t->dtype == MQ_DT_BOOL)
    return false;
  *c = mq_tensor_item_value(S, t);
  return true;
}

mq_tensor *mq_attention_try(mq_state *S, mq_tensor *a, mq_tensor *b, bool tr, int d0, int d1,
                            mq_value c, mq_tensor *m, mq_tensor *v, bool keep_graph) {
  mq_value cn;
  if (a->layout || b->layout || m->layout || v->layout || !divisor(S, c, &cn)) return NULL;
  if (tr) { /* transpose(b, d0, d1), a view, when its dims are valid */
    if (d0 < -b->ndim || d0 >= b->ndim || d1 < -b->ndim || d1 >= b->ndim) return NULL;
    d0 += d0 < 0 ? b->ndim : 0, d1 += d1 < 0 ? b->ndim : 0;
  }
  bool grad = a->requires_grad | b->requires_grad | v->requires_grad;
  if (grad && !keep_graph) return NULL;
  /* under grad, the last two dims swapped are the node's to read (b gets
   * its gradient with no transpose node); other swaps are a view first */
  bool last2 = tr && d0 != d1 && d0 + d1 == 2 * b->ndim - 3 &&
               (d0 == b->ndim - 1 || d1 == b->ndim - 1);
  if (tr && !(grad && last2)) b = mq_transpose(S, b, d0, d1);
  if (!grad) return mq_attention(S, a, b, cn, m, v);
  return mq_attention_grad(S, a, b, tr && last2, cn, m, v);
}
