/* fusion.c - the pattern matcher of fusion.h: which expressions the fusion
 * engine (vm/fuse.h) runs in one pass, and their programs. */
#include "fusion.h"

#include "../vm/builtin.h"
#include "../vm/globals.h"

/* A checkpoint of a stacked tree: before stacking leaf [nstack], with ops
 * before it in the op-by-op order, the program so far ([nleaves] leaves,
 * [len] bytes of code). */
typedef struct fuse_ck {
  int nstack, nleaves, len;
} fuse_ck;

typedef struct fuse_prog {
  int nleaves, nops;
  bool any_var;
  /* stack mode (a tree with a call that is not elementwise): every leaf but
   * a number literal is evaluated in order onto the stack first, then read
   * from its slot (stack_base + i) by FUSED and by the op-by-op code */
  bool stack_mode, has_call;
  int stack_base, nstack;
  const mq_node *stack[MQ_FUSE_MAX_LEAVES];
  fuse_ck ck[MQ_FUSE_MAX_LEAVES];
  int nck;
  uint8_t red[7]; /* MQ_FI_RED ..., when the tree is reduced */
  uint8_t leaf[MQ_FUSE_MAX_LEAVES][3];
  uint8_t code[256];
  int len;
  int visits; /* nodes looked at: a program has one instruction per node */
} fuse_prog;

/* The most nodes a fusable tree can have (one per instruction the runtime
 * takes). The analysis stops there, so trying an expression costs at most
 * this much however big it is, and compiling stays linear in the source. */
#define FUSE_MAX_NODES (2 * MQ_FUSE_MAX_OPS + 1)

static bool fuse_emit(fuse_prog *P, const uint8_t *b, int n) {
  if (P->len + n > (int)sizeof P->code) return false;
  memcpy(P->code + P->len, b, (size_t)n);
  P->len += n;
  return true;
}

static bool fuse_leaf(fuse_prog *P, uint8_t kind, unsigned index) {
  int i = 0;
  while (i < P->nleaves &&
         !(P->leaf[i][0] == kind && (unsigned)(P->leaf[i][1] | P->leaf[i][2] << 8) == index))
    i++;
  if (i == P->nleaves) {
    if (P->nleaves == MQ_FUSE_MAX_LEAVES || index > 0xffff) return false;
    P->leaf[i][0] = kind;
    P->leaf[i][1] = (uint8_t)(index & 0xff);
    P->leaf[i][2] = (uint8_t)(index >> 8);
    P->nleaves++;
  }
  uint8_t b[2] = {MQ_FI_LEAF, (uint8_t)i};
  return fuse_emit(P, b, 2);
}

/* [n], a variable or a call, as a leaf: in stack mode the next stack slot. */
static bool fuse_stacked(fuse_prog *P, const mq_node *n) {
  if (P->nstack == MQ_FUSE_MAX_LEAVES || P->stack_base + P->nstack > 255) return false;
  if (P->nops > 0) P->ck[P->nck++] = (fuse_ck){P->nstack, P->nleaves, P->len};
  P->stack[P->nstack] = n;
  return fuse_leaf(P, MQ_FL_LOCAL, (unsigned)(P->stack_base + P->nstack++));
}

/* A call that is not an elementwise op (mean(x, 1, keepdim=true)): a leaf
 * computed before the fused pass, which takes it if it is a tensor whose
 * shape broadcasts to the result's. The tree still needs a variable. */
static bool fuse_call_leaf(fuse_prog *P, const mq_node *n) {
  P->has_call = true; /* not a variable: a tree of calls and numbers (f(n - 1) + f(n - 2) + 1,
                         mostly numbers) is not worth the stacking */
  return P->stack_mode && fuse_stacked(P, n);
}

static bool fuse_const(const mq_fusion_env *E, fuse_prog *P, mq_value v) {
  return fuse_leaf(P, MQ_FL_CONST, (unsigned)mq_chunk_const(E->S, E->f, v));
}

static bool fuse_node(const mq_fusion_env *E, fuse_prog *P, const mq_node *n);

/* The builtin that global [name] holds right now (it is checked again
 * when the code runs), called with the one argument [arg]: its index, and
 * its global slot in *slot; -1 if [name] is not such a global. */
static int called_builtin(const mq_fusion_env *E, const char *name, const mq_node *arg, mq_span sp,
                          int *slot) {
  int index = 0;
  if (!arg || arg->kind == MQ_N_KWARG || E->where(E->ctx, name, sp, &index) != MQ_FL_GLOBAL)
    return -1;
  *slot = mq_global_find(E->S, name);
  if (*slot < 0 || *slot > 0xffff) return -1;
  const mq_global *g = &E->S->globals[*slot];
  if (!g->defined || !mq_is_obj(g->value, MQ_O_BUILTIN)) return -1;
  int b = ((const mq_builtin_obj *)g->value.as.o)->index;
  return b > 0xffff ? -1 : b;
}

/* An instruction naming a builtin through its global: kind, op, slot, builtin. */
static void builtin_code(uint8_t code[6], uint8_t kind, int op, int slot, int b) {
  code[0] = kind, code[1] = (uint8_t)op;
  code[2] = (uint8_t)(slot & 0xff), code[3] = (uint8_t)(slot >> 8);
  code[4] = (uint8_t)(b & 0xff), code[5] = (uint8_t)(b >> 8);
}

/* Whether f(arg) calls a unary math builtin (fuse_call takes it). */
static bool unary_builtin(const mq_fusion_env *E, const char *name, const mq_node *arg,
                          mq_span sp) {
  int slot = 0, b = called_builtin(E, name, arg, sp, &slot);
  return b >= 0 && mq_builtin_unop(&E->S->builtins[b]) >= 0;
}

/* f(x) or x.f(): f a global holding a unary math builtin. */
static bool fuse_call(const mq_fusion_env *E, fuse_prog *P, const char *name, const mq_node *arg,
                      mq_span sp) {
  int slot = 0, b = called_builtin(E, name, arg, sp, &slot);
  int op = b < 0 ? -1 : mq_builtin_unop(&E->S->builtins[b]);
  if (op < 0 || !fuse_node(E, P, arg)) return false;
  P->nops++;
  uint8_t code[6];
  builtin_code(code, MQ_FI_CALL, op, slot, b);
  return fuse_emit(P, code, 6);
}

/* An int literal (-1 is a unary minus of 1), small enough for a dim. */
static bool dim_literal(const mq_node *n, int *dim) {
  bool neg = n && n->kind == MQ_N_UNARY && n->op == '-' && n->nkids == 1;
  const mq_node *k = neg ? n->kids[0] : n;
  if (!k || k->kind != MQ_N_INT || k->ival >= MQ_MAX_DIMS) return false;
  *dim = neg ? -(int)k->ival : (int)k->ival;
  return true;
}

/* sum(e), e.sum(), sum(e, d) or e.sum(d) with d an int literal (mean,
 * amax, amin too), e an elementwise tree: true with e in *body and the
 * MQ_FI_RED instruction to end the program with in P->red. */
static bool fuse_reduction(const mq_fusion_env *E, fuse_prog *P, const mq_node *n,
                           const mq_node **body) {
  const char *name;
  const mq_node *arg, *dim_arg = NULL;
  if (n->kind == MQ_N_CALL && (n->nkids == 2 || n->nkids == 3) && n->kids[0] &&
      n->kids[0]->kind == MQ_N_NAME)
    name = n->kids[0]->str, arg = n->kids[1], dim_arg = n->nkids == 3 ? n->kids[2] : NULL;
  else if (n->kind == MQ_N_METHOD && (n->nkids == 1 || n->nkids == 2))
    name = n->str, arg = n->kids[0], dim_arg = n->nkids == 2 ? n->kids[1] : NULL;
  else
    return false;
  int dim = MQ_FUSE_ALL_DIMS;
  if (dim_arg && !dim_literal(dim_arg, &dim)) return false;
  int slot = 0, b = called_builtin(E, name, arg, n->span, &slot);
  int op = b < 0 ? -1 : mq_builtin_redop(&E->S->builtins[b]);
  if (op < 0) return false;
  builtin_code(P->red, MQ_FI_RED, op, slot, b);
  P->red[6] = (uint8_t)(int8_t)dim;
  *body = arg;
  return true;
}

/* Appends [n] to the program; false if it is not an elementwise tree of
 * variables and number literals. */
static bool fuse_node(const mq_fusion_env *E, fuse_prog *P, const mq_node *n) {
  if (!n || P->nops >= MQ_FUSE_MAX_OPS || ++P->visits > FUSE_MAX_NODES) return false;
  mq_poll(E->S); /* the analysis is where compile time goes */
  switch ((mq_node_kind)n->kind) {
  case MQ_N_INT: return fuse_const(E, P, mq_int(n->ival));
  case MQ_N_FLOAT: return fuse_const(E, P, mq_float(n->fval));
  case MQ_N_NAME: {
    int index = 0;
    P->any_var = true;
    if (P->stack_mode) return fuse_stacked(P, n);
    int kind = E->where(E->ctx, n->str, n->span, &index);
    if (kind < 0) return false; /* a function's own name */
    if (kind == MQ_FL_GLOBAL) index = mq_global_slot(E->S, n->str);
    return fuse_leaf(P, (uint8_t)kind, (unsigned)index);
  }
  case MQ_N_UNARY: {
    if (n->op != '-' || n->nkids != 1) return false;
    const mq_node *k = n->kids[0];
    if (k && k->kind == MQ_N_INT) /* -3: the number the op-by-op code makes */
      return fuse_const(E, P, mq_int((int64_t)(0 - (uint64_t)k->ival)));
    if (k && k->kind == MQ_N_FLOAT) return fuse_const(E, P, mq_float(-k->fval));
    if (!fuse_node(E, P, k)) return false;
    uint8_t code[2] = {MQ_FI_UN, MQ_UN_NEG};
    P->nops++;
    return fuse_emit(P, code, 2);
  }
  case MQ_N_BINARY: {
    static const int8_t ops[MQ_TOK__COUNT] = {
        [MQ_TOK_ADD] = MQ_BIN_ADD + 1, [MQ_TOK_SUB] = MQ_BIN_SUB + 1, [MQ_TOK_MUL] = MQ_BIN_MUL + 1,
        [MQ_TOK_DIV] = MQ_BIN_DIV + 1, [MQ_TOK_POW] = MQ_BIN_POW + 1};
    if (n->op >= MQ_TOK__COUNT || !ops[n->op] || n->nkids != 2) return false;
    if (!fuse_node(E, P, n->kids[0]) || !fuse_node(E, P, n->kids[1])) return false;
    uint8_t code[2] = {MQ_FI_BIN, (uint8_t)(ops[n->op] - 1)};
    P->nops++;
    return fuse_emit(P, code, 2);
  }
  case MQ_N_CALL:
    if (n->nkids == 2 && n->kids[0] && n->kids[0]->kind == MQ_N_NAME &&
        unary_builtin(E, n->kids[0]->str, n->kids[1], n->span))
      return fuse_call(E, P, n->kids[0]->str, n->kids[1], n->span);
    return fuse_call_leaf(P, n);
  case MQ_N_METHOD:
    if (n->nkids == 1 && unary_builtin(E, mq_attr_callee(n), n->kids[0], n->span))
      return fuse_call(E, P, mq_attr_callee(n), n->kids[0], n->span);
    return fuse_call_leaf(P, n);
  case MQ_N_ATTR:
    if (n->nkids != 1) return false;
    return fuse_call(E, P, mq_attr_callee(n), n->kids[0], n->span);
  default: return false;
  }
}

/* The program of [P] cut to its first [nleaves] leaves and [len] bytes of
 * code, with [flags] on its leaf count, as a string. */
static mq_string *fuse_prog_string(const mq_fusion_env *E, const fuse_prog *P, int nleaves, int len,
                                   int flags) {
  uint8_t bytes[1 + 3 * MQ_FUSE_MAX_LEAVES + sizeof P->code];
  int nb = 0;
  bytes[nb++] = (uint8_t)(nleaves | flags);
  for (int i = 0; i < nleaves; i++)
    for (int j = 0; j < 3; j++) bytes[nb++] = P->leaf[i][j];
  memcpy(bytes + nb, P->code, (size_t)len);
  nb += len;
  return mq_string_new(E->S, (const char *)bytes, (size_t)nb);
}

/* An elementwise tree, reduced or not: its program, and in stack mode its
 * leaves and checks. */
static MQ_NOINLINE bool elementwise_plan(const mq_fusion_env *E, const mq_node *n,
                                         mq_fusion_plan *plan) {
  fuse_prog P;
  memset(&P, 0, sizeof P);
  const mq_node *body = n;
  /* a reduction of one elementwise op already saves a full-size temporary */
  bool red = fuse_reduction(E, &P, n, &body);
  if (!fuse_node(E, &P, body) && !(P.has_call && !red)) return false;
  if (P.has_call) { /* again, in stack mode (not under a reduction) */
    if (red) return false;
    memset(&P, 0, sizeof P);
    P.stack_mode = true;
    P.stack_base = E->depth;
    if (!fuse_node(E, &P, body)) return false;
  }
  if (P.nops < (red ? 1 : 2) || !P.any_var) return false;
  if (red && !fuse_emit(&P, P.red, 7)) return false;
  plan->prog = fuse_prog_string(E, &P, P.nleaves, P.len, 0);
  plan->nstack = P.nstack;
  memcpy(plan->stack, P.stack, (size_t)P.nstack * sizeof *P.stack);
  plan->nck = P.nck;
  for (int i = 0; i < P.nck; i++) {
    plan->ck[i].nstack = P.ck[i].nstack;
    plan->ck[i].prog = fuse_prog_string(E, &P, P.ck[i].nleaves, P.ck[i].len, MQ_FUSE_CHECK);
  }
  return true;
}

/* --- attention: softmax(masked(a @ b / c, m), -1) @ v (MQ_FUSE_ATTN);
 * as_masked in place of masked alike ------------------------------------- */

/* [n], a variable, as a leaf of three bytes; false for anything else. */
static bool attn_var(const mq_fusion_env *E, const mq_node *n, uint8_t *leaf) {
  int index = 0;
  if (!n || n->kind != MQ_N_NAME) return false;
  int kind = E->where(E->ctx, n->str, n->span, &index);
  if (kind < 0) return false;
  if (kind == MQ_FL_GLOBAL) index = mq_global_slot(E->S, n->str);
  if (index < 0 || index > 0xffff) return false;
  leaf[0] = (uint8_t)kind, leaf[1] = (uint8_t)(index & 0xff), leaf[2] = (uint8_t)(index >> 8);
  return true;
}

/* call [n] = name(first, ...) with [nargs] arguments, name a global holding
 * the library's builtin [name]: its slot and index in ref[4]. */
static bool attn_call(const mq_fusion_env *E, const mq_node *n, const char *name, int nargs,
                      uint8_t *ref) {
  if (!n || n->kind != MQ_N_CALL || n->nkids != nargs + 1 || !n->kids[0] ||
      n->kids[0]->kind != MQ_N_NAME || strcmp(n->kids[0]->str, name) != 0)
    return false;
  for (int i = 1; i <= nargs; i++)
    if (!n->kids[i] || n->kids[i]->kind == MQ_N_KWARG) return false;
  int slot = 0, b = called_builtin(E, name, n->kids[1], n->span, &slot);
  if (b < 0 || strcmp(E->S->builtins[b].name, name) != 0 || E->S->builtins[b].host) return false;
  uint8_t code[6];
  builtin_code(code, 0, 0, slot, b);
  memcpy(ref, code + 2, 4);
  return true;
}

static bool is_binary(const mq_node *n, int tok) {
  return n && n->kind == MQ_N_BINARY && n->op == tok && n->nkids == 2;
}

/* The attention program of [n] when it is softmax(masked(a @ b / c, m),
 * -1) @ v with a, m, v variables, b a variable or transpose(variable, d0,
 * d1) with int literals, c a number literal or a variable. */
static MQ_NOINLINE bool attention_plan(const mq_fusion_env *E, const mq_node *n,
                                       mq_fusion_plan *plan) {
  uint8_t prog[MQ_FUSE_ATTN_LEN] = {MQ_FUSE_ATTN_LEAVES | MQ_FUSE_ATTN};
  uint8_t *leaf = prog + 1, *p = prog + 1 + 3 * MQ_FUSE_ATTN_LEAVES;
  if (!is_binary(n, MQ_TOK_MATMUL)) return false;
  const mq_node *sm = n->kids[0], *mk = sm && sm->nkids == 3 ? sm->kids[1] : NULL;
  const mq_node *dv = mk && mk->nkids == 3 ? mk->kids[1] : NULL;
  int dim = 0, d0 = 0, d1 = 0;
  if (!is_binary(dv, MQ_TOK_DIV) || !is_binary(dv->kids[0], MQ_TOK_MATMUL) ||
      !dim_literal(sm->kids[2], &dim))
    return false;
  const mq_node *bn = dv->kids[0]->kids[1], *cn = dv->kids[1];
  if (bn && bn->kind == MQ_N_CALL) {
    if (bn->nkids != 4 || !dim_literal(bn->kids[2], &d0) || !dim_literal(bn->kids[3], &d1) ||
        !attn_call(E, bn, "transpose", 3, p + 9))
      return false;
    p[8] = 1, p[13] = (uint8_t)(int8_t)d0, p[14] = (uint8_t)(int8_t)d1;
    bn = bn->kids[1];
  }
  p[15] = (uint8_t)(int8_t)dim;
  if (!attn_var(E, dv->kids[0]->kids[0], leaf) || !attn_var(E, bn, leaf + 3) ||
      !attn_var(E, mk->kids[2], leaf + 6) || !attn_var(E, n->kids[1], leaf + 9))
    return false;
  if (cn && (cn->kind == MQ_N_INT || cn->kind == MQ_N_FLOAT)) {
    mq_value c = cn->kind == MQ_N_INT ? mq_int(cn->ival) : mq_float(cn->fval);
    int k = mq_chunk_const(E->S, E->f, c);
    if (k > 0xffff) return false;
    leaf[12] = MQ_FL_CONST, leaf[13] = (uint8_t)(k & 0xff), leaf[14] = (uint8_t)(k >> 8);
  } else if (!attn_var(E, cn, leaf + 12)) {
    return false;
  }
  if (!attn_call(E, sm, "softmax", 2, p) ||
      (!attn_call(E, mk, "masked", 2, p + 4) && !attn_call(E, mk, "as_masked", 2, p + 4)))
    return false;
  plan->prog = mq_string_new(E->S, (const char *)prog, sizeof prog);
  plan->nstack = plan->nck = 0;
  return true;
}

bool mq_fusion_plan_of(const mq_fusion_env *E, const mq_node *n, mq_fusion_plan *plan) {
  if (n->kind != MQ_N_BINARY && n->kind != MQ_N_UNARY && n->kind != MQ_N_CALL &&
      n->kind != MQ_N_METHOD && n->kind != MQ_N_ATTR)
    return false;
  return attention_plan(E, n, plan) || elementwise_plan(E, n, plan);
}
