/* fuse_attn.c - the attention program of fuse.h: softmax(masked(a @ b / c,
 * m), -1) @ v, with b possibly transpose(x, d0, d1), run by
 * runtime/attention.c over the valid keys only; as_masked in place of
 * masked the same, and with operands requiring grad one autograd node
 * (runtime/attention_bwd.h). masked under grad is left to the op-by-op
 * code (it drops the graph, and says so).
 *
 * The compiler checked that the names softmax, masked and transpose held
 * those builtins; they must still hold them (a script may rebind them),
 * and the operands must be what the fast path takes, else nothing is done
 * and the op-by-op code runs, with its own errors. */
#include "../runtime/nn/attention.h"
#include "../runtime/autograd/attention_bwd.h"
#include "../runtime/tensor/shape.h"
#include "builtin.h"
#include "fuse.h"

static inline unsigned u16(const uint8_t *p) { return (unsigned)p[0] | ((unsigned)p[1] << 8); }

/* Whether global [slot] still holds builtin number [bidx]. */
static bool holds_builtin(mq_state *S, const uint8_t *ref) {
  unsigned slot = u16(ref), bidx = u16(ref + 2);
  if ((int)slot >= S->nglobals || (int)bidx >= S->nbuiltins) return false;
  const mq_global *g = &S->globals[slot];
  return g->defined && mq_is_obj(g->value, MQ_O_BUILTIN) &&
         ((const mq_builtin_obj *)g->value.as.o)->index == (int)bidx;
}

static mq_tensor *strided(mq_value v) {
  if (!mq_is_tensor(v)) return NULL;
  mq_tensor *t = mq_as_tensor(v);
  return t->layout == 0 ? t : NULL;
}

/* The divisor as a number: a number, or a 0-d tensor of plain data (no
 * mask, no gradient), which is what `for d in [8, 3]` or `tensor(8)`
 * gives; op by op divides by either alike (a 0-d operand does not promote
 * the scores' dtype), so the number gives the same bits. */
static bool divisor(mq_state *S, mq_value v, mq_value *c) {
  if (v.type == MQ_INT || v.type == MQ_FLOAT) {
    *c = v;
    return true;
  }
  mq_tensor *t = strided(v);
  if (!t || t->ndim != 0 || t->mask || t->requires_grad || t->node || t->dtype == MQ_DT_BOOL)
    return false;
  *c = mq_tensor_item_value(S, t);
  return true;
}

mq_tensor *mq_fuse_attention(mq_state *S, const uint8_t *code, size_t len, const mq_value *leaves) {
  if (len != MQ_FUSE_ATTN_LEN || (code[0] & ~MQ_FUSE_ATTN) != MQ_FUSE_ATTN_LEAVES) return NULL;
  const uint8_t *p = code + 1 + 3 * MQ_FUSE_ATTN_LEAVES;
  bool tr = p[8] != 0;
  if (!holds_builtin(S, p) || !holds_builtin(S, p + 4) || (tr && !holds_builtin(S, p + 9)))
    return NULL;
  mq_tensor *a = strided(leaves[0]), *b = strided(leaves[1]), *m = strided(leaves[2]);
  mq_tensor *v = strided(leaves[3]);
  mq_value c;
  if (!a || !b || !m || !v || !divisor(S, leaves[4], &c)) return NULL;
  int d0 = (int8_t)p[13], d1 = (int8_t)p[14], dim = (int8_t)p[15];
  if (dim != -1 && dim != a->ndim - 1) return NULL; /* softmax along the last dim */
  if (tr) { /* transpose(b, d0, d1), a view, when its dims are valid */
    if (d0 < -b->ndim || d0 >= b->ndim || d1 < -b->ndim || d1 >= b->ndim) return NULL;
    d0 += d0 < 0 ? b->ndim : 0, d1 += d1 < 0 ? b->ndim : 0;
  }
  bool grad = a->requires_grad | b->requires_grad | v->requires_grad;
  if (grad && strcmp(S->builtins[u16(p + 6)].name, "as_masked") != 0) return NULL;
  /* under grad, the last two dims swapped are the node's to read (b gets
   * its gradient with no transpose node); other swaps are a view first */
  bool last2 = tr && d0 != d1 && d0 + d1 == 2 * b->ndim - 3 && (d0 == b->ndim - 1 || d1 == b->ndim - 1);
  if (tr && !(grad && last2)) b = mq_transpose(S, b, d0, d1);
  if (!grad) return mq_attention(S, a, b, c, m, v);
  return mq_attention_grad(S, a, b, tr && last2, c, m, v);
}
