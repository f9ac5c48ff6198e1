/* fuse_attn.c - the attention program of fuse.h: softmax(masked(a @ b / c,
 * m), -1) @ v, with b possibly transpose(x, d0, d1), decoded and handed to
 * mq_attention_try (runtime/nn/attention.h), the entry the
 * attention builtin takes too; as_masked in place of masked the same, and
 * with operands requiring grad one autograd node. masked under
 * grad is left to the op-by-op code (it drops the graph, and says so).
 *
 * The compiler checked that the names softmax, masked and transpose held
 * those builtins; they must still hold them (a script may rebind them),
 * and the operands must be what the fast path takes, else nothing is done
 * and the op-by-op code runs, with its own errors. */
#include "../runtime/nn/attention.h"
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

mq_tensor *mq_fuse_attention(mq_state *S, const uint8_t *code, size_t len, const mq_value *leaves) {
  if (len != MQ_FUSE_ATTN_LEN || (code[0] & ~MQ_FUSE_ATTN) != MQ_FUSE_ATTN_LEAVES) return NULL;
  const uint8_t *p = code + 1 + 3 * MQ_FUSE_ATTN_LEAVES;
  bool tr = p[8] != 0;
  if (!holds_builtin(S, p) || !holds_builtin(S, p + 4) || (tr && !holds_builtin(S, p + 9)))
    return NULL;
  mq_tensor *a = strided(leaves[0]), *b = strided(leaves[1]), *m = strided(leaves[2]);
  mq_tensor *v = strided(leaves[3]);
  if (!a || !b || !m || !v) return NULL;
  int d0 = (int8_t)p[13], d1 = (int8_t)p[14], dim = (int8_t)p[15];
  if (dim != -1 && dim != a->ndim - 1) return NULL; /* softmax along the last dim */
  bool keep_graph = strcmp(S->builtins[u16(p + 6)].name, "as_masked") == 0;
  return mq_attention_try(S, a, b, tr, d0, d1, leaves[4], m, v, keep_graph);
}
