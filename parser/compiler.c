/* compiler.c - one pass over the syntax tree, emitting stack-machine code.
 *
 * Every instruction carries the span of the node it evaluates, so a runtime
 * error can underline the whole failing expression. Literal nested lists of
 * numbers are folded into tensor constants here, which also checks them for
 * raggedness before the program runs. */
#include "compiler.h"

#include <math.h>

#include "../runtime/kernels/update.h"
#include "../runtime/tensor/tensor.h"
#include "../vm/errval.h"
#include "../vm/globals.h"
#include "fusion.h"

/* Bookkeeping below lives in scratch memory (the pool), so an error that
 * unwinds through the compiler leaks nothing. */
typedef struct loop {
  struct loop *prev;
  int start;       /* where `continue` goes */
  int *breaks;     /* jump operands to patch at the loop's end */
  int nbreaks, breaks_cap;
  int hidden;      /* iterator values a `for` keeps on the stack */
  int tries;       /* try blocks open around the loop (break ends those inside) */
} loop;

typedef struct capture {
  uint8_t kind; /* MQ_CAP_* */
  uint8_t index;
  const char *name;
} capture;

#define MAX_LOCALS 250
#define MAX_CAPTURES 250
#define MAX_GLOBAL_DECLS 250
#define MAX_SCOPED 64

typedef struct compiler {
  mq_state *S;
  struct compiler *enclosing; /* NULL for top-level code */
  mq_function *f;
  bool echo;
  bool is_fn;            /* false: top-level code, whose variables are globals */
  const char *self_name; /* a nested function's own name (calls itself by it) */
  int depth, max_depth;  /* stack depth tracking, for the frame's size */
  loop *loops;
  int ntries; /* try blocks open where the code being compiled is */
  const char *locals[MAX_LOCALS];
  int nlocals;
  capture captures[MAX_CAPTURES];
  int ncaptures;
  const char *gdecls[MAX_GLOBAL_DECLS]; /* names the function declares `global` */
  int ngdecls;
  /* The loop variables of the comprehensions being compiled, innermost
   * last: each lives in the stack slot its FOR_ITER pushes (a local slot
   * number above the named locals), seen only inside its comprehension. */
  struct {
    const char *name;
    int slot;
  } scoped[MAX_SCOPED];
  int nscoped;
  bool no_fuse; /* compiling the op-by-op code of a fused expression */
  /* while compiling that code for a tree with stacked leaves (fused()):
   * those nodes, read back from stack slots stacked_base + i */
  const mq_node *const *stacked;
  int nstacked, stacked_base;
  int nesting;  /* expressions and statements open on the C stack (nest_enter) */
} compiler;

/* How deep expressions and statements may nest inside each other (each
 * level is a few C frames; with this many the compiler fits in a 256 KiB
 * thread stack). Chains such as a + b + c, x.f.g, f(x)(y) or - - x do not
 * count: expr() follows them with a loop. */
#define MAX_NESTING 200

/* Counts one more open level below [sp]'s construct, and polls for an
 * interrupt (compiling a huge script takes time too). */
static void nest_enter(compiler *C, mq_span sp) {
  if (++C->nesting > MAX_NESTING)
    mq_error_at(C->S, sp, "expression nested too deeply (more than %d levels)", MAX_NESTING);
  mq_poll(C->S);
}

/* --- emitting ------------------------------------------------------------ */

static void adjust(compiler *C, int delta) {
  C->depth += delta;
  if (C->depth > C->max_depth) C->max_depth = C->depth;
}

static void emit(compiler *C, uint8_t byte, mq_span sp) { mq_chunk_emit(C->S, C->f, byte, sp); }

static void emit_op(compiler *C, mq_opcode op, int delta, mq_span sp) {
  emit(C, (uint8_t)op, sp);
  adjust(C, delta);
}

static void emit_u16(compiler *C, unsigned v, mq_span sp) {
  emit(C, (uint8_t)(v & 0xff), sp);
  emit(C, (uint8_t)(v >> 8), sp);
}

static void emit_const(compiler *C, mq_value v, mq_span sp) {
  int k = mq_chunk_const(C->S, C->f, v);
  emit_op(C, MQ_OP_CONST, +1, sp);
  emit_u16(C, (unsigned)k, sp);
}

/* Emits a forward jump with a placeholder; returns the operand's offset. */
static int emit_jump(compiler *C, mq_opcode op, int delta, mq_span sp) {
  emit_op(C, op, delta, sp);
  emit_u16(C, 0xffff, sp);
  return C->f->code_len - 2;
}

static void patch_jump(compiler *C, int at, mq_span sp) {
  int dist = C->f->code_len - (at + 2);
  if (dist > 0xffff) mq_error_at(C->S, sp, "this block is too large to jump over");
  C->f->code[at] = (uint8_t)(dist & 0xff);
  C->f->code[at + 1] = (uint8_t)(dist >> 8);
}

static void emit_loop(compiler *C, int start, mq_span sp) {
  emit_op(C, MQ_OP_LOOP, 0, sp);
  int dist = C->f->code_len + 2 - start;
  if (dist > 0xffff) mq_error_at(C->S, sp, "this loop body is too large");
  emit_u16(C, (unsigned)dist, sp);
}

/* A scratch array of [*cap] elements of [esize] bytes, full, copied into
 * one twice as big (at least 8); the old one stays with the pool. */
static void *grow_scratch(compiler *C, const void *arr, int *cap, size_t esize) {
  int nc = *cap ? *cap * 2 : 8;
  void *grown = mq_scratch(C->S, esize * (size_t)nc);
  if (*cap) memcpy(grown, arr, esize * (size_t)*cap);
  *cap = nc;
  return grown;
}

/* --- literal tensors ------------------------------------------------------- */

/* A literal number, or - applied to one. */
static bool literal_number(const mq_node *n) {
  if (!n) return false;
  if (n->kind == MQ_N_INT || n->kind == MQ_N_FLOAT || n->kind == MQ_N_TRUE ||
      n->kind == MQ_N_FALSE)
    return true;
  return n->kind == MQ_N_UNARY && n->op == '-' && n->nkids == 1 && n->kids[0] &&
         (n->kids[0]->kind == MQ_N_INT || n->kids[0]->kind == MQ_N_FLOAT);
}

/* A non-empty nested list with only literal numbers at its leaves, [depth]
 * lists deep inside the outermost. One deeper than the compiler nests is
 * left to the list path, which refuses it. */
static bool literal_tensor_at(const mq_node *n, int depth) {
  if (n->kind != MQ_N_LIST || n->nkids == 0 || depth >= MAX_NESTING) return false;
  for (int i = 0; i < n->nkids; i++) {
    const mq_node *k = n->kids[i];
    if (!literal_number(k) && !(k && literal_tensor_at(k, depth + 1))) return false;
  }
  return true;
}

static bool literal_tensor(const mq_node *n) { return literal_tensor_at(n, 0); }

typedef struct literal_info {
  int ndim;
  int64_t shape[MQ_MAX_DIMS];
  bool any_float, any_int, any_bool;
} literal_info;

/* First pass: shape (checked rectangular) and kinds of leaves. */
static void literal_shape(compiler *C, const mq_node *n, int depth, literal_info *li) {
  if (literal_number(n)) {
    if (depth != li->ndim)
      mq_error_at(C->S, n->span, "ragged nested list: expected a list at depth %d, got a number",
                  depth);
    const mq_node *v = n->kind == MQ_N_UNARY ? n->kids[0] : n;
    if (v->kind == MQ_N_FLOAT) li->any_float = true;
    else if (v->kind == MQ_N_INT) li->any_int = true;
    else li->any_bool = true;
    return;
  }
  if (depth >= MQ_MAX_DIMS)
    mq_error_at(C->S, n->span, "a tensor literal may have at most %d dimensions", MQ_MAX_DIMS);
  if (depth >= li->ndim) {
    if (li->ndim != depth)
      mq_error_at(C->S, n->span, "ragged nested list: expected a number at depth %d, got a list",
                  depth);
    li->shape[li->ndim++] = n->nkids;
  } else if (li->shape[depth] != n->nkids) {
    mq_error_at(C->S, n->span, "ragged nested list: expected %lld elements at depth %d, got %d",
                (long long)li->shape[depth], depth, n->nkids);
  }
  for (int i = 0; i < n->nkids; i++) literal_shape(C, n->kids[i], depth + 1, li);
}

static double literal_value(const mq_node *n) {
  double sign = 1;
  if (n->kind == MQ_N_UNARY) {
    sign = -1;
    n = n->kids[0];
  }
  switch (n->kind) {
  case MQ_N_INT: return sign * (double)n->ival;
  case MQ_N_FLOAT: return sign * n->fval;
  case MQ_N_TRUE: return 1;
  default: return 0;
  }
}

static void literal_fill(const mq_node *n, mq_tensor *t, int64_t *at) {
  if (!literal_number(n)) {
    for (int i = 0; i < n->nkids; i++) literal_fill(n->kids[i], t, at);
    return;
  }
  void *data = mq_tensor_data(t);
  switch ((mq_dtype)t->dtype) {
  case MQ_DT_BOOL: ((uint8_t *)data)[*at] = n->kind == MQ_N_TRUE; break;
  case MQ_DT_I64: {
    const mq_node *v = n->kind == MQ_N_UNARY ? n->kids[0] : n;
    int64_t i = v->kind == MQ_N_TRUE ? 1 : v->kind == MQ_N_INT ? v->ival : 0;
    /* Negate through unsigned arithmetic: -INT64_MIN must not be UB. */
    ((int64_t *)data)[*at] = n->kind == MQ_N_UNARY ? (int64_t)(0 - (uint64_t)i) : i;
    break;
  }
  case MQ_DT_F32: ((float *)data)[*at] = (float)literal_value(n); break;
  case MQ_DT_F64: ((double *)data)[*at] = literal_value(n); break;
  default: break;
  }
  (*at)++;
}

/* [want] overrides the literal's own dtype (-1: int64, float32 or bool by
 * its leaves), so that tensor([0.1], dtype="float64") holds the double 0.1
 * rather than the float32 0.1 widened. */
static MQ_NOINLINE void compile_literal_tensor(compiler *C, const mq_node *n, int want) {
  literal_info li = {0};
  literal_shape(C, n, 0, &li);
  mq_dtype dt = want >= 0       ? (mq_dtype)want
                : li.any_float ? MQ_DT_F32
                : li.any_int   ? MQ_DT_I64
                               : MQ_DT_BOOL;
  mq_tensor *t = mq_tensor_new(C->S, dt, li.ndim, li.shape);
  int64_t at = 0;
  literal_fill(n, t, &at);
  emit_const(C, mq_objv(t), n->span);
}

/* --- expressions ---------------------------------------------------------- */

static void expr(compiler *C, const mq_node *n);
static void list(compiler *C, const mq_node *n, bool outermost);
static void function(compiler *C, const mq_node *n);

/* --- names: locals, captures, globals --------------------------------------- */

typedef enum { NAME_LOCAL, NAME_CAPTURE, NAME_SELF, NAME_GLOBAL } name_kind;

static int find_local(const compiler *C, const char *name) {
  for (int i = C->nlocals - 1; i >= 0; i--)
    if (strcmp(C->locals[i], name) == 0) return i;
  return -1;
}

static int add_local(compiler *C, const char *name, mq_span sp) {
  int i = find_local(C, name);
  if (i >= 0) return i;
  if (C->nlocals == MAX_LOCALS)
    mq_error_at(C->S, sp, "too many local variables in one function (limit %d)", MAX_LOCALS);
  C->locals[C->nlocals] = name;
  return C->nlocals++;
}

static name_kind resolve(compiler *C, const char *name, int *index, mq_span sp);

/* The slot of comprehension variable [name] in scope in [C], or -1. */
static int find_scoped(const compiler *C, const char *name) {
  for (int i = C->nscoped - 1; i >= 0; i--)
    if (strcmp(C->scoped[i].name, name) == 0) return C->scoped[i].slot;
  return -1;
}

static int add_capture(compiler *C, uint8_t kind, int index, const char *name, mq_span sp) {
  for (int i = 0; i < C->ncaptures; i++)
    if (strcmp(C->captures[i].name, name) == 0) return i;
  if (C->ncaptures == MAX_CAPTURES)
    mq_error_at(C->S, sp, "a function may capture at most %d variables", MAX_CAPTURES);
  C->captures[C->ncaptures] = (capture){kind, (uint8_t)index, name};
  return C->ncaptures++;
}

/* Whether the function [C] compiles declared [name] `global`. */
static bool declared_global(const compiler *C, const char *name) {
  for (int i = 0; i < C->ngdecls; i++)
    if (strcmp(C->gdecls[i], name) == 0) return true;
  return false;
}

/* Where [name] lives as seen from [C]: a local of this function, a value
 * captured from an enclosing function, the function itself, or a global. */
static name_kind resolve(compiler *C, const char *name, int *index, mq_span sp) {
  if ((*index = find_scoped(C, name)) >= 0) return NAME_LOCAL;
  if (!C->is_fn || declared_global(C, name)) return NAME_GLOBAL;
  if ((*index = find_local(C, name)) >= 0) return NAME_LOCAL;
  bool nested = C->enclosing && C->enclosing->is_fn;
  if (C->self_name && nested && strcmp(C->self_name, name) == 0) return NAME_SELF;
  /* a function made inside a top-level comprehension captures its variable */
  if (!nested && !(C->enclosing && find_scoped(C->enclosing, name) >= 0)) return NAME_GLOBAL;
  int outer;
  switch (resolve(C->enclosing, name, &outer, sp)) {
  case NAME_LOCAL: *index = add_capture(C, MQ_CAP_LOCAL, outer, name, sp); return NAME_CAPTURE;
  case NAME_CAPTURE: *index = add_capture(C, MQ_CAP_UPVAL, outer, name, sp); return NAME_CAPTURE;
  case NAME_SELF: *index = add_capture(C, MQ_CAP_SELF, 0, name, sp); return NAME_CAPTURE;
  case NAME_GLOBAL: break;
  }
  return NAME_GLOBAL;
}

static void name_get(compiler *C, const char *name, mq_span sp) {
  int index = 0;
  switch (resolve(C, name, &index, sp)) {
  case NAME_LOCAL: emit_op(C, MQ_OP_GET_LOCAL, +1, sp); emit(C, (uint8_t)index, sp); return;
  case NAME_CAPTURE: emit_op(C, MQ_OP_GET_UPVAL, +1, sp); emit(C, (uint8_t)index, sp); return;
  case NAME_SELF: emit_op(C, MQ_OP_SELF, +1, sp); return;
  case NAME_GLOBAL: break;
  }
  emit_op(C, MQ_OP_GET_GLOBAL, +1, sp);
  emit_u16(C, (unsigned)mq_global_slot(C->S, name), sp);
}

/* Pops the top value into variable [name]: a local inside a function (every
 * name a function assigns is its own, unless it declares it `global`), else
 * a global. */
static void name_set(compiler *C, const char *name, mq_span sp) {
  if (C->is_fn && !declared_global(C, name)) {
    int slot = find_local(C, name);
    if (slot < 0) slot = add_local(C, name, sp);
    emit_op(C, MQ_OP_SET_LOCAL, -1, sp);
    emit(C, (uint8_t)slot, sp);
    return;
  }
  emit_op(C, MQ_OP_SET_GLOBAL, -1, sp);
  emit_u16(C, (unsigned)mq_global_slot(C->S, name), sp);
}

/* Pushes args; returns the count. Keyword arguments must come last; their
 * names are collected into [kwnames]. */
static int call_args(compiler *C, const mq_node *const *args, int nargs, mq_list **kwnames) {
  int nkw = 0;
  for (int i = 0; i < nargs; i++) {
    const mq_node *a = args[i];
    if (a->kind == MQ_N_KWARG) {
      if (!*kwnames) *kwnames = mq_list_new(C->S, 4);
      for (int j = 0; j < (*kwnames)->len; j++)
        if (strcmp(mq_as_string((*kwnames)->items[j])->chars, a->str) == 0)
          mq_error_at(C->S, a->span, "keyword argument '%s' given twice", a->str);
      mq_list_push(C->S, *kwnames, mq_objv(mq_string_new(C->S, a->str, strlen(a->str))));
      expr(C, a->kids[0]);
      nkw++;
    } else {
      if (nkw) mq_error_at(C->S, a->span, "a positional argument cannot follow a keyword argument");
      expr(C, a);
    }
  }
  return nargs;
}

static void emit_call(compiler *C, int nargs, mq_list *kwnames, mq_span sp) {
  if (nargs > 255) mq_error_at(C->S, sp, "too many arguments (limit 255)");
  if (kwnames) {
    int k = mq_chunk_const(C->S, C->f, mq_objv(kwnames));
    emit_op(C, MQ_OP_CALL_KW, -nargs, sp);
    emit(C, (uint8_t)nargs, sp);
    emit_u16(C, (unsigned)k, sp);
  } else {
    emit_op(C, MQ_OP_CALL, -nargs, sp);
    emit(C, (uint8_t)nargs, sp);
  }
}

/* f(args) */
/* tensor([...], dtype="float64") or dtype=float64 (the constant; built in
 * float64 and converted, a rebound name still gets the dtype it names): the
 * dtype the list should be built in, or -1. A list of numbers would
 * otherwise become a float32 tensor first and lose each number's float64
 * value. */
static int literal_dtype_request(const mq_node *n) {
  if (n->kids[0]->kind != MQ_N_NAME || strcmp(n->kids[0]->str, "tensor") != 0 || n->nkids < 2 ||
      n->kids[1]->kind != MQ_N_LIST)
    return -1;
  for (int i = 2; i < n->nkids; i++) {
    const mq_node *a = n->kids[i];
    if (a->kind == MQ_N_KWARG && strcmp(a->str, "dtype") == 0 &&
        (a->kids[0]->kind == MQ_N_STRING || a->kids[0]->kind == MQ_N_NAME) &&
        strcmp(a->kids[0]->str, "float64") == 0)
      return MQ_DT_F64;
  }
  return -1;
}

/* f(args), the callee f already pushed. */
static void call_rest(compiler *C, const mq_node *n) {
  mq_list *kw = NULL;
  int want = literal_dtype_request(n), skip = 0;
  if (want >= 0) {
    if (literal_tensor(n->kids[1])) compile_literal_tensor(C, n->kids[1], want);
    else list(C, n->kids[1], false); /* tensor() builds it in float64 */
    skip = 1;
  }
  int nargs = skip + call_args(C, (const mq_node *const *)n->kids + 1 + skip, n->nkids - 1 - skip, &kw);
  emit_call(C, nargs, kw, n->span);
}

/* x.f(args) is f(x, args); x.f is f(x): f pushed, then x, then this. */
static void method_rest(compiler *C, const mq_node *n) {
  mq_list *kw = NULL;
  int nargs = 1 + call_args(C, (const mq_node *const *)n->kids + 1, n->nkids - 1, &kw);
  emit_call(C, nargs, kw, n->span);
}

static void list(compiler *C, const mq_node *n, bool outermost) {
  if (outermost && literal_tensor(n)) {
    compile_literal_tensor(C, n, -1);
    return;
  }
  if (n->nkids > 65535) mq_error_at(C->S, n->span, "list literal too long");
  nest_enter(C, n->span);
  for (int i = 0; i < n->nkids; i++) {
    const mq_node *k = n->kids[i];
    if (k->kind == MQ_N_LIST) list(C, k, false);
    else expr(C, k);
  }
  C->nesting--;
  emit_op(C, MQ_OP_LIST, 1 - n->nkids, n->span);
  emit_u16(C, (unsigned)n->nkids, n->span);
  if (outermost) emit_op(C, MQ_OP_TENSORIZE, 0, n->span);
}

/* {k: v, ...}: the keys and values in order, then DICT. */
static void dict_literal(compiler *C, const mq_node *n) {
  if (n->nkids / 2 > 65535) mq_error_at(C->S, n->span, "dict literal too long");
  nest_enter(C, n->span);
  for (int i = 0; i < n->nkids; i++) expr(C, n->kids[i]);
  C->nesting--;
  emit_op(C, MQ_OP_DICT, 1 - n->nkids, n->span);
  emit_u16(C, (unsigned)(n->nkids / 2), n->span);
}

/* [e for x in xs if c] and {k: v for x in xs if c}, with any number of
 * `for` clauses (the first outermost): the empty result, then one loop per
 * clause, as `for` compiles it, whose variable x is the stack slot its
 * FOR_ITER or FOR_RANGE pushes (not a variable of the function or a
 * global: it is gone after the comprehension, as in Python 3); innermost,
 * APPEND or DICT_SET into the result, the loops' values above it. */
typedef struct comp_loop {
  int start, to_end, to_next, hidden, nnames;
} comp_loop;

static int loop_head(compiler *C, const mq_node *it, mq_opcode *next);

static void comprehension(compiler *C, const mq_node *n) {
  bool dict = n->kind == MQ_N_DICTCOMP;
  nest_enter(C, n->span);
  emit_op(C, dict ? MQ_OP_DICT : MQ_OP_LIST, +1, n->span);
  emit_u16(C, 0, n->span);
  int result = C->depth - 1, nloops = n->nkids - 2;
  comp_loop *loops = mq_scratch(C->S, (size_t)nloops * sizeof *loops);
  for (int i = 0; i < nloops; i++) {
    const mq_node *cl = n->kids[2 + i];
    comp_loop *l = &loops[i];
    mq_opcode next;
    l->hidden = loop_head(C, cl->kids[0], &next);
    l->start = C->f->code_len;
    l->to_end = emit_jump(C, next, +1, cl->kids[0]->span);
    /* `for k, v in ...`: the item unpacked in place, the first name on top */
    const mq_node *names = cl->str ? NULL : cl->kids[2];
    l->nnames = names ? names->nkids : 1;
    if (names) {
      if (l->nnames > 255) mq_error_at(C->S, names->span, "too many names to unpack into");
      emit_op(C, MQ_OP_UNPACK, l->nnames - 1, names->span);
      emit(C, (uint8_t)l->nnames, names->span);
    }
    int slot = C->depth - 1;
    if (slot > 255 || C->nscoped + l->nnames > MAX_SCOPED)
      mq_error_at(C->S, cl->span,
                  "no stack slot left for this comprehension's variable (comprehensions nested "
                  "too deeply, or too many locals)");
    for (int k = 0; k < l->nnames; k++) {
      C->scoped[C->nscoped].name = names ? names->kids[k]->str : cl->str;
      C->scoped[C->nscoped++].slot = slot - k;
    }
    l->to_next = -1;
    if (cl->kids[1]) {
      expr(C, cl->kids[1]);
      l->to_next = emit_jump(C, MQ_OP_JUMP_IF_FALSE, -1, cl->kids[1]->span);
    }
  }
  int nvals = dict ? 2 : 1;
  for (int i = 0; i < nvals; i++) expr(C, n->kids[i]);
  /* the operand counts from the top left once the values are popped */
  int below = C->depth - nvals - 1 - result;
  if (below > 255) mq_error_at(C->S, n->span, "this comprehension is nested too deeply");
  emit_op(C, dict ? MQ_OP_DICT_SET : MQ_OP_APPEND, -nvals, n->span);
  emit(C, (uint8_t)below, n->span);
  for (int i = nloops - 1; i >= 0; i--) {
    const comp_loop *l = &loops[i];
    if (l->to_next >= 0) patch_jump(C, l->to_next, n->span);
    C->nscoped -= l->nnames;
    for (int k = 0; k < l->nnames; k++) emit_op(C, MQ_OP_POP, -1, n->span);
    emit_loop(C, l->start, n->span);
    patch_jump(C, l->to_end, n->span);
    for (int k = 0; k < l->hidden; k++) emit_op(C, MQ_OP_POP, -1, n->span);
  }
  C->nesting--;
}

/* The kinds of [n]'s index items (MQ_IXB_*) into [kinds]; returns how many
 * values they push: one per plain item, one per bound a slice has. */
static int item_kinds(const mq_node *n, uint8_t *kinds) {
  int pushed = 0;
  for (int i = 0; i < n->nkids - 1; i++) {
    const mq_node *it = n->kids[i + 1];
    if (it->kind == MQ_N_ELLIPSIS) {
      kinds[i] = MQ_IXB_ELLIPSIS;
    } else if (it->kind == MQ_N_SLICE) {
      kinds[i] = MQ_IXB_SLICE;
      for (int p = 0; p < 3 && p < it->nkids; p++)
        if (it->kids[p]) {
          kinds[i] |= (uint8_t)(1 << p);
          pushed++;
        }
    } else {
      kinds[i] = MQ_IXB_VALUE;
      pushed++;
    }
  }
  return pushed;
}

/* The items of x[items] pushed, their kinds in [kinds]; returns how many
 * values were pushed. */
static int index_items(compiler *C, const mq_node *n, uint8_t *kinds) {
  if (n->nkids - 1 > 255) mq_error_at(C->S, n->span, "too many indices");
  for (int i = 1; i < n->nkids; i++) {
    const mq_node *it = n->kids[i];
    if (it->kind == MQ_N_SLICE) {
      for (int p = 0; p < 3 && p < it->nkids; p++)
        if (it->kids[p]) expr(C, it->kids[p]);
    } else if (it->kind != MQ_N_ELLIPSIS) {
      expr(C, it);
    }
  }
  return item_kinds(n, kinds);
}

/* INDEX over the [pushed] values of [n]'s items and the object below them. */
static void emit_index(compiler *C, const mq_node *n, const uint8_t *kinds, int pushed) {
  int nitems = n->nkids - 1;
  emit_op(C, MQ_OP_INDEX, -pushed, n->span);
  emit(C, (uint8_t)nitems, n->span);
  for (int i = 0; i < nitems; i++) emit(C, kinds[i], n->span);
}

/* x[items], x already pushed. */
static MQ_NOINLINE void index_rest(compiler *C, const mq_node *n) {
  uint8_t kinds[256];
  emit_index(C, n, kinds, index_items(C, n, kinds));
}

/* --- updates: x[i] = v, x[i] += v, x.f_(...) ------------------------------- */

/* Tensors are values: an update computes the new value and stores it where
 * the old one was read from, a variable or an element of a list, dict or
 * tensor (runtime/kernels/update.h). A target is loaded with what its
 * store needs left below it: xs[i][j] pushes xs, i, xs[i], j, then the
 * value; STORE_INDEX of each level gives the container its store takes. */

/* Whether the variable [name] can take an update's new value: a local or a
 * global, not a value captured from an enclosing function. */
static bool name_storable(compiler *C, const char *name, mq_span sp) {
  int index = 0;
  name_kind k = resolve(C, name, &index, sp);
  return k == NAME_LOCAL || k == NAME_GLOBAL;
}

static bool target_storable(compiler *C, const mq_node *t) {
  return t->kind == MQ_N_INDEX || (t->kind == MQ_N_NAME && name_storable(C, t->str, t->span));
}

/* Stores the top into variable [name] where it was read from. */
static void name_store(compiler *C, const char *name, mq_span sp) {
  int index = 0;
  if (resolve(C, name, &index, sp) == NAME_LOCAL) {
    emit_op(C, MQ_OP_SET_LOCAL, -1, sp);
    emit(C, (uint8_t)index, sp);
    return;
  }
  emit_op(C, MQ_OP_SET_GLOBAL, -1, sp);
  emit_u16(C, (unsigned)mq_global_slot(C->S, name), sp);
}

static void load_target(compiler *C, const mq_node *t);

/* For the INDEX target [t]: its object (loaded as a target when it is one)
 * and its items; returns the number of item values, kinds in [kinds]. */
static int prepare_store(compiler *C, const mq_node *t, uint8_t *kinds) {
  const mq_node *obj = t->kids[0];
  if (target_storable(C, obj)) load_target(C, obj);
  else expr(C, obj);
  return index_items(C, t, kinds);
}

/* Pushes [t]'s value, what its store needs below it. */
static void load_target(compiler *C, const mq_node *t) {
  if (t->kind == MQ_N_NAME) {
    name_get(C, t->str, t->span);
    return;
  }
  nest_enter(C, t->span);
  uint8_t kinds[256];
  int pushed = prepare_store(C, t, kinds);
  emit_op(C, MQ_OP_DUPN, pushed + 1, t->span);
  emit(C, (uint8_t)(pushed + 1), t->span);
  emit_index(C, t, kinds, pushed);
  C->nesting--;
}

/* Stores the new value on top into [t], loaded by load_target or
 * prepare_store, and pops it. */
static void store_target(compiler *C, const mq_node *t, bool aug, mq_span sp) {
  if (t->kind == MQ_N_NAME) {
    name_store(C, t->str, sp);
    return;
  }
  nest_enter(C, t->span);
  const mq_node *obj = t->kids[0];
  bool stored = target_storable(C, obj);
  uint8_t kinds[256];
  int pushed = item_kinds(t, kinds), nitems = t->nkids - 1;
  emit_op(C, MQ_OP_STORE_INDEX, -pushed - 1, sp);
  emit(C, (uint8_t)((stored ? MQ_STORE_STORED : 0) | (aug ? MQ_STORE_AUG : 0)), sp);
  emit(C, (uint8_t)nitems, sp);
  for (int i = 0; i < nitems; i++) emit(C, kinds[i], sp);
  if (stored) store_target(C, obj, false, sp);
  else emit_op(C, MQ_OP_POP, -1, sp);
  C->nesting--;
}

/* x[items] = v and, [aug], x[items] op= v. */
static void index_assign(compiler *C, const mq_node *target, const mq_node *value, bool aug,
                         int op, mq_span sp) {
  uint8_t kinds[256];
  int pushed = prepare_store(C, target, kinds);
  if (aug) {
    emit_op(C, MQ_OP_DUPN, pushed + 1, target->span);
    emit(C, (uint8_t)(pushed + 1), target->span);
    emit_index(C, target, kinds, pushed);
    expr(C, value);
    emit_op(C, MQ_OP_BINARY, -1, sp);
    emit(C, (uint8_t)op, sp);
  } else {
    expr(C, value);
  }
  store_target(C, target, aug, sp);
}

/* The in-place spellings whose out-of-place form has another name; any
 * other x.NAME_(...) is x = NAME(x, ...) (callee NULL: no call, the value
 * is the argument: x.copy_(src)). */
static const struct {
  const char *spelling, *callee;
  int flags;
  const char *keyword; /* the name the one argument is passed by, or NULL */
} update_names[] = {
    {"copy_", NULL, MQ_UPD_SRC | MQ_UPD_CAST, NULL},
    {"zero_", "zeros_like", MQ_UPD_CAST | MQ_UPD_ZERO, NULL},
    {"fill_", "full_like", MQ_UPD_CAST | MQ_UPD_FILL, NULL},
    {"requires_grad_", "requires_grad", MQ_UPD_LEAF_OK, NULL},
    {"clamp_min_", "clamp", 0, "min"},
    {"clamp_max_", "clamp", 0, "max"},
};

/* Whether [n] is torch's in-place spelling x.NAME_(...). */
static bool update_method(const mq_node *n) {
  if (n->kind != MQ_N_METHOD) return false;
  size_t len = strlen(n->str);
  return len >= 2 && n->str[len - 1] == '_' && n->str[len - 2] != '_';
}

/* x.f_(args): CALL_UPDATE of f with x and args, its value stored into x,
 * then x's new value pushed. An element target (xs[i].f_()) keeps that
 * value in a slot pushed first, since its stores consume the stack. */
static void update_call(compiler *C, const mq_node *n) {
  const mq_node *t = n->kids[0];
  const mq_node *root = t;
  while (update_method(root)) root = root->kids[0];
  if (root != t && root->kind == MQ_N_NAME) {
    /* x.mul_(2).sub_(1): torch's in-place ops return x itself */
    expr(C, t);
    emit_op(C, MQ_OP_POP, -1, t->span);
    t = root;
  }
  const char *callee = NULL, *keyword = NULL;
  int flags = 0;
  bool found = false;
  for (size_t i = 0; i < sizeof update_names / sizeof *update_names; i++)
    if (strcmp(n->str, update_names[i].spelling) == 0) {
      callee = update_names[i].callee;
      flags = update_names[i].flags;
      keyword = update_names[i].keyword;
      found = true;
    }
  if (!found) {
    size_t len = strlen(n->str) - 1;
    char *name = mq_scratch(C->S, len + 1);
    memcpy(name, n->str, len);
    name[len] = '\0';
    callee = name;
  }
  if (!target_storable(C, t))
    mq_error_at(C->S, n->span,
                "x.%s(...) updates a variable or an element (x, xs[i], d[k]) in place, and %s; "
                "write y = %s(...) for a new value",
                n->str,
                t->kind == MQ_N_NAME ? "this x is captured from an enclosing function"
                                     : "this receiver is neither",
                callee ? callee : "clone");
  bool element = t->kind == MQ_N_INDEX;
  int keep = C->depth;
  if (element) {
    if (keep > 255) mq_error_at(C->S, n->span, "no stack slot left for this update");
    emit_op(C, MQ_OP_NONE, +1, n->span);
  }
  uint8_t kinds[256];
  int pushed = 0;
  if (element) {
    nest_enter(C, t->span);
    pushed = prepare_store(C, t, kinds);
    emit_op(C, MQ_OP_DUPN, pushed + 1, t->span);
    emit(C, (uint8_t)(pushed + 1), t->span);
    emit_index(C, t, kinds, pushed);
    C->nesting--;
  } else {
    name_get(C, t->str, t->span);
  }
  /* the function under x, as method_after puts it */
  int index = 0;
  if (!callee) {
    emit_op(C, MQ_OP_NONE, +1, n->span);
  } else if (resolve(C, callee, &index, n->span) == NAME_GLOBAL) {
    emit_op(C, MQ_OP_GET_METHOD, +1, n->span);
    emit_u16(C, (unsigned)mq_global_slot(C->S, callee), n->span);
    emit(C, 1, n->span);
  } else {
    name_get(C, callee, n->span);
  }
  emit_op(C, MQ_OP_SWAP, 0, n->span);
  mq_list *kw = NULL;
  int nargs;
  if (keyword && n->nkids == 2 && n->kids[1]->kind != MQ_N_KWARG) {
    /* x.clamp_max_(v) is clamp(x, max=v) */
    kw = mq_list_new(C->S, 1);
    mq_list_push(C->S, kw, mq_objv(mq_string_new(C->S, keyword, strlen(keyword))));
    expr(C, n->kids[1]);
    nargs = 2;
  } else {
    nargs = 1 + call_args(C, (const mq_node *const *)n->kids + 1, n->nkids - 1, &kw);
  }
  if (nargs > 255) mq_error_at(C->S, n->span, "too many arguments (limit 255)");
  int k = kw ? mq_chunk_const(C->S, C->f, mq_objv(kw)) : 0xffff;
  emit_op(C, MQ_OP_CALL_UPDATE, -nargs, n->span);
  emit(C, (uint8_t)nargs, n->span);
  emit_u16(C, (unsigned)k, n->span);
  emit(C, (uint8_t)flags, n->span);
  if (!element) {
    name_store(C, t->str, n->span);
    name_get(C, t->str, n->span);
    return;
  }
  emit_op(C, MQ_OP_DUPN, +1, n->span);
  emit(C, 1, n->span);
  emit_op(C, MQ_OP_SET_LOCAL, -1, n->span);
  emit(C, (uint8_t)keep, n->span);
  store_target(C, t, false, n->span);
}

/* --- fused expressions (fusion.h finds them, vm/fuse.h runs them) -------- */

/* How a name resolves where the expression being matched is (fusion.h). */
static int fusion_where(void *ctx, const char *name, mq_span sp, int *index) {
  switch (resolve(ctx, name, index, sp)) {
  case NAME_LOCAL: return MQ_FL_LOCAL;
  case NAME_CAPTURE: return MQ_FL_UPVAL;
  case NAME_GLOBAL: return MQ_FL_GLOBAL;
  case NAME_SELF: break;
  }
  return -1;
}

/* FUSED with the program in constant [k], jumping [dist] bytes when it
 * succeeds (0xffff: patched later); returns that operand's offset. */
static int emit_fused(compiler *C, int k, unsigned dist, mq_span sp) {
  emit_op(C, MQ_OP_FUSED, 0, sp);
  emit_u16(C, (unsigned)k, sp);
  emit_u16(C, dist, sp);
  return C->f->code_len - 2;
}

/* The op-by-op code of [n], the first [nstacked] of its stacked leaves
 * [stack] read from their slots from [base] on (the others are evaluated
 * where they are). */
static void op_by_op(compiler *C, const mq_node *n, const mq_node *const *stack, int base,
                     int nstacked) {
  C->no_fuse = true;
  C->stacked = stack, C->nstacked = nstacked, C->stacked_base = base;
  expr(C, n);
  C->no_fuse = false;
  C->nstacked = 0;
}

/* The value on top in place of the [nstacked] stacked leaves below it,
 * from slot [base] on. */
static void unstack(compiler *C, int base, int nstacked, mq_span sp) {
  if (!nstacked) return;
  emit_op(C, MQ_OP_SET_LOCAL, -1, sp);
  emit(C, (uint8_t)base, sp);
  for (int i = 1; i < nstacked; i++) emit_op(C, MQ_OP_POP, -1, sp);
}

/* Compiles [n] as FUSED followed by its op-by-op code, which FUSED jumps
 * over when it succeeds; false (nothing emitted) if the matcher finds [n]
 * not worth it. */
static MQ_NOINLINE bool fused(compiler *C, const mq_node *n) {
  if (C->no_fuse) return false;
  int base = C->depth; /* stacked leaves go from here */
  mq_fusion_env E = {C->S, C->f, base, fusion_where, C};
  mq_fusion_plan P;
  if (!mq_fusion_plan_of(&E, n, &P)) return false;
  int k = mq_chunk_const(C->S, C->f, mq_objv(P.prog));
  /* the leaves in the op-by-op order; before one that has ops before it,
   * a check that those ops cannot fail, else the op-by-op code from there
   * (copy c below), so that they fail before it is evaluated */
  int to_copy[MQ_FUSE_MAX_LEAVES], c = 0;
  for (int i = 0; i < P.nstack; i++) {
    if (c < P.nck && P.ck[c].nstack == i) {
      int kc = mq_chunk_const(C->S, C->f, mq_objv(P.ck[c].prog));
      emit_fused(C, kc, 3, n->span); /* over the jump */
      to_copy[c++] = emit_jump(C, MQ_OP_JUMP, 0, n->span);
    }
    expr(C, P.stack[i]);
  }
  int j = emit_fused(C, k, 0xffff, n->span);
  op_by_op(C, n, P.stack, base, P.nstack);
  patch_jump(C, j, n->span); /* either way one value is pushed */
  unstack(C, base, P.nstack, n->span);
  int to_end[MQ_FUSE_MAX_LEAVES];
  for (int i = 0; i < P.nck; i++) { /* copy i: leaves before ck[i] stacked */
    to_end[i] = emit_jump(C, MQ_OP_JUMP, 0, n->span);
    patch_jump(C, to_copy[i], n->span);
    C->depth = base + P.ck[i].nstack;
    op_by_op(C, n, P.stack, base, P.ck[i].nstack);
    unstack(C, base, P.ck[i].nstack, n->span);
  }
  for (int i = 0; i < P.nck; i++) patch_jump(C, to_end[i], n->span);
  return true;
}

/* In the op-by-op code of a fused tree, a stacked leaf is read from its
 * slot (it was evaluated before FUSED); true if [n] is one and was. */
static bool stacked_leaf(compiler *C, const mq_node *n) {
  for (int i = 0; i < C->nstacked; i++)
    if (C->stacked[i] == n) {
      emit_op(C, MQ_OP_GET_LOCAL, +1, n->span);
      emit(C, (uint8_t)(C->stacked_base + i), n->span);
      return true;
    }
  return false;
}

/* The operand a node compiles first, when it is one of the forms that chain
 * through it: a + b + c is (a + b) + c, x.f.g is g(f(x)), f(x)(y) calls
 * f(x), x[0][1] indexes x[0], - - x negates -x. */
static const mq_node *chain_head(const mq_node *n) {
  switch ((mq_node_kind)n->kind) {
  case MQ_N_UNARY:
  case MQ_N_BINARY:
  case MQ_N_AND:
  case MQ_N_OR:
  case MQ_N_CALL:
  case MQ_N_INDEX:
  case MQ_N_METHOD:
  case MQ_N_ATTR: return n->kids[0];
  default: return NULL;
  }
}

/* x.message, x.line, x.col, x.file: a field of an error value, else, for
 * any other x, the call message(x) that x.name always is. The receiver
 * comes first here, so the function is swapped under it. */
static bool field_attr(const mq_node *n) {
  return n->kind == MQ_N_ATTR && mq_errval_is_field(n->str);
}

/* Whether the function of x.f is a global: then it is looked up after x,
 * so that an undefined one can be reported with x's type (GET_METHOD). */
static bool global_method(compiler *C, const mq_node *n) {
  int index = 0;
  return resolve(C, mq_attr_callee(n), &index, n->span) == NAME_GLOBAL;
}

/* What a chain node emits before its head: a method's function, unless it
 * comes after the receiver (field_attr, global_method). */
static void chain_open(compiler *C, const mq_node *n) {
  if ((n->kind == MQ_N_METHOD || n->kind == MQ_N_ATTR) && !field_attr(n) && !global_method(C, n))
    name_get(C, mq_attr_callee(n), n->span);
}

/* The function of x.f pushed after x, then swapped under it. */
static void method_after(compiler *C, const mq_node *n) {
  if (global_method(C, n)) {
    emit_op(C, MQ_OP_GET_METHOD, +1, n->span);
    emit_u16(C, (unsigned)mq_global_slot(C->S, mq_attr_callee(n)), n->span);
    emit(C, n->kind == MQ_N_METHOD, n->span);
  } else {
    name_get(C, mq_attr_callee(n), n->span);
  }
  emit_op(C, MQ_OP_SWAP, 0, n->span);
}

static void field_rest(compiler *C, const mq_node *n) {
  int k = mq_chunk_const(C->S, C->f, mq_objv(mq_string_new(C->S, n->str, strlen(n->str))));
  emit_op(C, MQ_OP_FIELD, 0, n->span);
  emit_u16(C, (unsigned)k, n->span);
  int to_end = C->f->code_len;
  emit_u16(C, 0xffff, n->span);
  method_after(C, n);
  emit_call(C, 1, NULL, n->span);
  patch_jump(C, to_end, n->span);
}

/* What a chain node emits after its head. */
static void chain_close(compiler *C, const mq_node *n) {
  switch ((mq_node_kind)n->kind) {
  case MQ_N_UNARY:
    if (n->op == '-') emit_op(C, MQ_OP_NEG, 0, n->span);
    else if (n->op == '~') emit_op(C, MQ_OP_BITNOT, 0, n->span);
    else if (n->op == '!') emit_op(C, MQ_OP_NOT, 0, n->span);
    return; /* unary + is the value itself */
  case MQ_N_BINARY:
    expr(C, n->kids[1]);
    emit_op(C, MQ_OP_BINARY, -1, n->span);
    emit(C, n->op, n->span);
    return;
  case MQ_N_AND:
  case MQ_N_OR: {
    int j = emit_jump(C, n->kind == MQ_N_AND ? MQ_OP_JUMP_IF_FALSE_KEEP : MQ_OP_JUMP_IF_TRUE_KEEP,
                      -1, n->span);
    expr(C, n->kids[1]);
    patch_jump(C, j, n->span);
    return;
  }
  case MQ_N_CALL: call_rest(C, n); return;
  case MQ_N_METHOD:
  case MQ_N_ATTR:
    if (field_attr(n)) {
      field_rest(C, n);
      return;
    }
    if (global_method(C, n)) method_after(C, n);
    method_rest(C, n);
    return;
  case MQ_N_INDEX: index_rest(C, n); return;
  default: return;
  }
}

/* An expression that is not a chain node. */
static void expr_leaf(compiler *C, const mq_node *n) {
  switch ((mq_node_kind)n->kind) {
  case MQ_N_INT: emit_const(C, mq_int(n->ival), n->span); return;
  case MQ_N_FLOAT: emit_const(C, mq_float(n->fval), n->span); return;
  case MQ_N_TRUE: emit_op(C, MQ_OP_TRUE, +1, n->span); return;
  case MQ_N_FALSE: emit_op(C, MQ_OP_FALSE, +1, n->span); return;
  case MQ_N_NONE: emit_op(C, MQ_OP_NONE, +1, n->span); return;
  case MQ_N_STRING:
    emit_const(C, mq_objv(mq_string_new(C->S, n->str, (size_t)n->ival)), n->span);
    return;
  case MQ_N_NAME: name_get(C, n->str, n->span); return;
  case MQ_N_LIST: list(C, n, true); return;
  case MQ_N_DICT: dict_literal(C, n); return;
  case MQ_N_LISTCOMP:
  case MQ_N_DICTCOMP: comprehension(C, n); return;
  case MQ_N_KWARG:
    mq_error_at(C->S, n->span, "a keyword argument is only allowed in a call");
  case MQ_N_SLICE:
  case MQ_N_ELLIPSIS:
    mq_error_at(C->S, n->span, "a slice is only allowed inside [ ]");
  case MQ_N_FN: function(C, n); return;
  default:
    mq_error_at(C->S, n->span, "%s is not an expression", mq_node_kind_name(n->kind));
  }
}

/* A chain as long as the source (a sum of 100 000 terms) is followed down
 * its heads with a loop, remembering the nodes passed, and closed on the
 * way back up; only the other operands recurse, which nest_enter bounds. */
static void expr(compiler *C, const mq_node *n) {
  nest_enter(C, n->span);
  const mq_node *local[8], **passed = local;
  int npassed = 0, cap = 8;
  const mq_node *m = n;
  bool done = false;
  while (chain_head(m) && !update_method(m)) {
    if (stacked_leaf(C, m) || fused(C, m)) {
      done = true;
      break;
    }
    if (npassed == cap) passed = grow_scratch(C, passed, &cap, sizeof *passed);
    passed[npassed++] = m;
    chain_open(C, m);
    m = chain_head(m);
  }
  if (!done && !stacked_leaf(C, m)) {
    if (update_method(m)) update_call(C, m);
    else expr_leaf(C, m);
  }
  while (npassed > 0) chain_close(C, passed[--npassed]);
  C->nesting--;
}

/* --- statements ------------------------------------------------------------ */

static void block(compiler *C, const mq_node *n, bool top);

/* x += v is x = x + v, except that a tensor x takes it as torch's
 * x.add_(v) does (UPDATE_BINARY: x's shape and dtype kept, a leaf that
 * requires grad updated only under no_grad). Whether x is a tensor is
 * known only at run time, so the op is never fused; the result may still
 * take x's storage when nothing else holds it (vm/vm.c, dying_operand:
 * the SET follows the op). x[i] += v reads x and i once (index_assign). */
static void aug_assign(compiler *C, const mq_node *n) {
  const mq_node *target = n->kids[0], *value = n->kids[1];
  if (target->kind == MQ_N_NAME) {
    name_get(C, target->str, target->span);
    expr(C, value);
    emit_op(C, MQ_OP_UPDATE_BINARY, -1, n->span);
    emit(C, (uint8_t)n->op, n->span);
    name_set(C, target->str, n->span);
    return;
  }
  index_assign(C, target, value, true, n->op, n->span);
}

/* Pops a list or tensor of as many items as [names] (a LIST of NAME nodes)
 * has and assigns them in order: a, b = v and for a, b in vs. */
static void unpack_into(compiler *C, const mq_node *names, mq_span sp) {
  int nt = names->nkids;
  if (nt > 255) mq_error_at(C->S, names->span, "too many names to unpack into");
  emit_op(C, MQ_OP_UNPACK, nt - 1, sp);
  emit(C, (uint8_t)nt, sp);
  for (int i = 0; i < nt; i++) name_set(C, names->kids[i]->str, names->kids[i]->span);
}

/* del d[k]: the object and the one index, then DEL_INDEX. del name: a
 * global (one that shadows a builtin gives the builtin back). */
static void del_stmt(compiler *C, const mq_node *n) {
  const mq_node *target = n->kids[0];
  if (target->kind == MQ_N_NAME) {
    int index = 0;
    if ((C->is_fn && !declared_global(C, target->str)) ||
        resolve(C, target->str, &index, target->span) != NAME_GLOBAL)
      mq_error_at(C->S, target->span,
                  "del %s in a function needs `global %s` first: del of a name removes a "
                  "global variable",
                  target->str, target->str);
    emit_op(C, MQ_OP_DEL_GLOBAL, 0, target->span);
    emit_u16(C, (unsigned)mq_global_slot(C->S, target->str), target->span);
    return;
  }
  if (target->nkids != 2 || target->kids[1]->kind == MQ_N_SLICE ||
      target->kids[1]->kind == MQ_N_ELLIPSIS)
    mq_error_at(C->S, target->span, "del removes one item at a time, as in del d[key]");
  expr(C, target->kids[0]);
  expr(C, target->kids[1]);
  emit_op(C, MQ_OP_DEL_INDEX, -2, target->span);
}

static void assign(compiler *C, const mq_node *n) {
  const mq_node *target = n->kids[0], *value = n->kids[1];
  switch ((mq_node_kind)target->kind) {
  case MQ_N_NAME:
    expr(C, value);
    name_set(C, target->str, n->span);
    return;
  case MQ_N_INDEX: index_assign(C, target, value, false, 0, n->span); return;
  case MQ_N_LIST: {
    int nt = target->nkids;
    if (nt > 255) mq_error_at(C->S, target->span, "too many names on the left of '='");
    if (value->kind == MQ_N_LIST && value->nkids == nt) {
      /* a, b = b, a: evaluate every value first, then assign. */
      for (int i = 0; i < nt; i++) expr(C, value->kids[i]);
      for (int i = nt - 1; i >= 0; i--) name_set(C, target->kids[i]->str, target->kids[i]->span);
      return;
    }
    expr(C, value);
    unpack_into(C, target, n->span);
    return;
  }
  default: mq_error_at(C->S, target->span, "cannot assign to this");
  }
}

/* if ... elif ... elif ... else: a chain of any length, walked with a loop;
 * every branch but the last jumps to the end. */
static void if_stmt(compiler *C, const mq_node *n) {
  const mq_span sp = n->span;
  int local[8], *to_end = local, nend = 0, cap = 8;
  for (;;) {
    expr(C, n->kids[0]);
    int to_else = emit_jump(C, MQ_OP_JUMP_IF_FALSE, -1, n->kids[0]->span);
    block(C, n->kids[1], false);
    const mq_node *rest = n->nkids > 2 ? n->kids[2] : NULL;
    if (!rest) {
      patch_jump(C, to_else, n->span);
      break;
    }
    if (nend == cap) to_end = grow_scratch(C, to_end, &cap, sizeof *to_end);
    to_end[nend++] = emit_jump(C, MQ_OP_JUMP, 0, n->span);
    patch_jump(C, to_else, n->span);
    if (rest->kind != MQ_N_IF) {
      block(C, rest, false);
      break;
    }
    n = rest;
  }
  for (int i = 0; i < nend; i++) patch_jump(C, to_end[i], sp);
}

static void begin_loop(compiler *C, loop *l, int hidden) {
  memset(l, 0, sizeof *l);
  l->prev = C->loops;
  l->start = C->f->code_len;
  l->hidden = hidden;
  l->tries = C->ntries;
  C->loops = l;
}

/* Patches the loop's breaks to land here. */
static void end_loop(compiler *C, loop *l, mq_span sp) {
  for (int i = 0; i < l->nbreaks; i++) patch_jump(C, l->breaks[i], sp);
  C->loops = l->prev;
}

static void add_break(compiler *C, int at) {
  loop *l = C->loops;
  if (l->nbreaks == l->breaks_cap) l->breaks = grow_scratch(C, l->breaks, &l->breaks_cap, sizeof *l->breaks);
  l->breaks[l->nbreaks++] = at;
}

static void while_stmt(compiler *C, const mq_node *n) {
  loop l;
  begin_loop(C, &l, 0);
  expr(C, n->kids[0]);
  int to_end = emit_jump(C, MQ_OP_JUMP_IF_FALSE, -1, n->kids[0]->span);
  block(C, n->kids[1], false);
  emit_loop(C, l.start, n->span);
  patch_jump(C, to_end, n->span);
  end_loop(C, &l, n->span);
}

/* `for i in range(a, b, s)` counts without building a list. */
static bool range_call(const mq_node *it) {
  if (it->kind != MQ_N_CALL || it->kids[0]->kind != MQ_N_NAME ||
      strcmp(it->kids[0]->str, "range") != 0 || it->nkids < 2 || it->nkids > 4)
    return false;
  for (int i = 1; i < it->nkids; i++)
    if (it->kids[i]->kind == MQ_N_KWARG) return false;
  return true;
}

/* Pushes what a loop over [it] keeps on the stack: [cur, stop, step] for
 * FOR_RANGE, [sequence, index] for FOR_ITER; returns how many, and the
 * opcode that takes a step in *next. */
static int loop_head(compiler *C, const mq_node *it, mq_opcode *next) {
  if (range_call(it)) {
    int nargs = it->nkids - 1;
    if (nargs == 1) emit_const(C, mq_int(0), it->span);
    expr(C, it->kids[1]);
    if (nargs >= 2) expr(C, it->kids[2]);
    if (nargs == 3) expr(C, it->kids[3]);
    else emit_const(C, mq_int(1), it->span);
    *next = MQ_OP_FOR_RANGE;
    return 3;
  }
  expr(C, it);
  emit_const(C, mq_int(0), it->span);
  *next = MQ_OP_FOR_ITER;
  return 2;
}

static void for_stmt(compiler *C, const mq_node *n) {
  const mq_node *it = n->kids[0];
  loop l;
  mq_opcode next;
  int hidden = loop_head(C, it, &next);
  begin_loop(C, &l, hidden);
  int to_end = emit_jump(C, next, +1, it->span);
  if (n->str) name_set(C, n->str, n->span);
  else unpack_into(C, n->kids[2], n->kids[2]->span);
  block(C, n->kids[1], false);
  emit_loop(C, l.start, n->span);
  patch_jump(C, to_end, n->span);
  end_loop(C, &l, n->span);
  for (int i = 0; i < hidden; i++) emit_op(C, MQ_OP_POP, -1, n->span);
}

/* Leaving the try blocks opened since [outer] were open (break, continue). */
static void end_tries(compiler *C, int outer, mq_span sp) {
  for (int i = C->ntries; i > outer; i--) emit_op(C, MQ_OP_END_TRY, 0, sp);
}

/* try { body } catch e { handler }: TRY names where the handler starts; the
 * VM goes there on a runtime error with the stack as it was at TRY and the
 * error value pushed, which the handler stores in e (or drops). */
static void try_stmt(compiler *C, const mq_node *n) {
  int to_catch = emit_jump(C, MQ_OP_TRY, 0, n->span);
  C->ntries++;
  block(C, n->kids[0], false);
  C->ntries--;
  emit_op(C, MQ_OP_END_TRY, 0, n->span);
  int to_end = emit_jump(C, MQ_OP_JUMP, 0, n->span);
  patch_jump(C, to_catch, n->span);
  adjust(C, +1); /* the error value */
  if (n->str) name_set(C, n->str, n->span);
  else emit_op(C, MQ_OP_POP, -1, n->span);
  block(C, n->kids[1], false);
  patch_jump(C, to_end, n->span);
}

/* no_grad { body }: NO_GRAD starts a handler that catches nothing; its
 * END_TRY (or the one a break or continue emits, or a return, or an error
 * going through) puts the autograd flag back. */
static void no_grad_stmt(compiler *C, const mq_node *n) {
  emit_op(C, MQ_OP_NO_GRAD, 0, n->span);
  C->ntries++;
  block(C, n->kids[0], false);
  C->ntries--;
  emit_op(C, MQ_OP_END_TRY, 0, n->span);
}

static void stmt_at(compiler *C, const mq_node *n, bool top);

static void stmt(compiler *C, const mq_node *n, bool top) {
  nest_enter(C, n->span);
  stmt_at(C, n, top);
  C->nesting--;
}

static void stmt_at(compiler *C, const mq_node *n, bool top) {
  switch ((mq_node_kind)n->kind) {
  case MQ_N_EXPR_STMT:
    expr(C, n->kids[0]);
    if (top && C->echo) emit_op(C, MQ_OP_ECHO, -1, n->span);
    else emit_op(C, MQ_OP_POP, -1, n->span);
    return;
  case MQ_N_ASSIGN: assign(C, n); return;
  case MQ_N_AUG_ASSIGN: aug_assign(C, n); return;
  case MQ_N_BLOCK: block(C, n, false); return;
  case MQ_N_IF: if_stmt(C, n); return;
  case MQ_N_WHILE: while_stmt(C, n); return;
  case MQ_N_FOR: for_stmt(C, n); return;
  case MQ_N_BREAK:
    if (!C->loops) mq_error_at(C->S, n->span, "'break' outside a loop");
    /* The loop's exit pops its own iterator values. */
    end_tries(C, C->loops->tries, n->span);
    add_break(C, emit_jump(C, MQ_OP_JUMP, 0, n->span));
    return;
  case MQ_N_CONTINUE:
    if (!C->loops) mq_error_at(C->S, n->span, "'continue' outside a loop");
    end_tries(C, C->loops->tries, n->span);
    emit_loop(C, C->loops->start, n->span);
    return;
  case MQ_N_TRY: try_stmt(C, n); return;
  case MQ_N_NO_GRAD: no_grad_stmt(C, n); return;
  case MQ_N_DEL: del_stmt(C, n); return;
  case MQ_N_FN:
    function(C, n);
    if (n->str) name_set(C, n->str, n->span);
    else emit_op(C, MQ_OP_POP, -1, n->span);
    return;
  case MQ_N_RETURN:
    if (!C->is_fn) mq_error_at(C->S, n->span, "'return' outside a function");
    if (n->nkids > 0 && n->kids[0]) expr(C, n->kids[0]);
    else emit_op(C, MQ_OP_NONE, +1, n->span);
    emit_op(C, MQ_OP_RETURN, -1, n->span);
    return;
  case MQ_N_GLOBAL: return; /* resolved when the function was scanned; a no-op at the top level */
  case MQ_N_IMPORT: {
    if (C->is_fn) mq_error_at(C->S, n->span, "'import' is only allowed at the top level");
    int k = mq_chunk_const(C->S, C->f, mq_objv(mq_string_new(C->S, n->str, (size_t)n->ival)));
    emit_op(C, MQ_OP_IMPORT, 0, n->span);
    emit_u16(C, (unsigned)k, n->span);
    return;
  }
  default: expr(C, n); emit_op(C, MQ_OP_POP, -1, n->span); return;
  }
}

static void block(compiler *C, const mq_node *n, bool top) {
  for (int i = 0; i < n->nkids; i++)
    if (n->kids[i]) stmt(C, n->kids[i], top);
}

/* --- functions ---------------------------------------------------------------- */

/* A name the function body assigns: its local, unless declared global. */
static void assigned(compiler *F, const char *name, mq_span sp) {
  if (!declared_global(F, name)) add_local(F, name, sp);
}

/* The prescans below stop looking this deep into nested statements; the
 * compiler itself refuses to go so deep (MAX_NESTING; a level of statements
 * is two levels of the tree, the statement and its block). */
#define PRESCAN_DEPTH (2 * MAX_NESTING + 2)

/* Every name a function body assigns (not looking into nested functions)
 * is a local of that function, unless the body declares it `global`. */
static void prescan_locals(compiler *F, const mq_node *n, int depth) {
  if (!n || depth > PRESCAN_DEPTH) return;
  switch ((mq_node_kind)n->kind) {
  case MQ_N_ASSIGN:
  case MQ_N_AUG_ASSIGN: {
    const mq_node *t = n->kids[0];
    if (t->kind == MQ_N_NAME) assigned(F, t->str, t->span);
    else if (t->kind == MQ_N_LIST)
      for (int i = 0; i < t->nkids; i++) assigned(F, t->kids[i]->str, t->kids[i]->span);
    return;
  }
  case MQ_N_FOR:
    if (n->str) assigned(F, n->str, n->span);
    else
      for (int i = 0; i < n->kids[2]->nkids; i++)
        assigned(F, n->kids[2]->kids[i]->str, n->kids[2]->kids[i]->span);
    prescan_locals(F, n->kids[1], depth + 1);
    return;
  case MQ_N_FN:
    if (n->str) assigned(F, n->str, n->span);
    return;
  case MQ_N_TRY:
    if (n->str) assigned(F, n->str, n->span);
    /* fall through */
  case MQ_N_BLOCK:
  case MQ_N_IF:
  case MQ_N_WHILE:
  case MQ_N_NO_GRAD:
    for (int i = 0; i < n->nkids; i++) prescan_locals(F, n->kids[i], depth + 1);
    return;
  default: return;
  }
}

/* The names a function body declares `global` (anywhere in it, not looking
 * into nested functions), which [np] parameters may not be among. */
static void prescan_globals(compiler *F, const mq_node *n, int np, int depth) {
  if (!n || depth > PRESCAN_DEPTH) return;
  switch ((mq_node_kind)n->kind) {
  case MQ_N_GLOBAL:
    for (int i = 0; i < n->nkids; i++) {
      const mq_node *k = n->kids[i];
      int p = find_local(F, k->str);
      if (p >= 0 && p < np)
        mq_error_at(F->S, k->span, "'%s' is a parameter of this function, so it cannot be declared global",
                    k->str);
      if (declared_global(F, k->str)) continue;
      if (F->ngdecls == MAX_GLOBAL_DECLS)
        mq_error_at(F->S, k->span, "too many global declarations in one function (limit %d)",
                    MAX_GLOBAL_DECLS);
      F->gdecls[F->ngdecls++] = k->str;
    }
    return;
  case MQ_N_BLOCK:
  case MQ_N_IF:
  case MQ_N_WHILE:
  case MQ_N_FOR:
  case MQ_N_TRY:
  case MQ_N_NO_GRAD:
    for (int i = 0; i < n->nkids; i++) prescan_globals(F, n->kids[i], np, depth + 1);
    return;
  default: return;
  }
}

/* The names the function could have meant, for the hints of an
 * undefined-variable error (vm/suggest.h): its locals, then those of the
 * functions around it (the nearest first). Captures are among the latter.
 * The list is allocated whole first, so a failed copy leaves one that
 * frees. */
static void keep_names(compiler *F) {
  int n = 0;
  for (const compiler *c = F; c && c->is_fn; c = c->enclosing) n += c->nlocals;
  if (n == 0) return;
  mq_function *f = F->f;
  f->names = mq_calloc(F->S, (size_t)n * sizeof *f->names);
  f->nnames = n;
  int k = 0;
  for (const compiler *c = F; c && c->is_fn; c = c->enclosing)
    for (int i = 0; i < c->nlocals; i++) f->names[k++] = mq_strdup(F->S, c->locals[i]);
}

static void function(compiler *C, const mq_node *n) {
  mq_state *S = C->S;
  const mq_node *params = n->kids[0], *body = n->kids[1];
  /* Kilobytes of tables: off the C stack, which nested functions would
   * otherwise use up. What the pool takes while the function compiles
   * (this, scratch, and objects its constants now hold) goes at the end. */
  size_t mark = mq_pool_mark(S);
  compiler *F = mq_scratch(S, sizeof *F);
  memset(F, 0, sizeof *F);
  F->S = S;
  F->nesting = C->nesting;
  F->enclosing = C;
  F->is_fn = true;
  F->self_name = n->str;
  F->f = mq_function_new(S, n->str ? n->str : "<anonymous>", C->f->src);
  int np = params ? params->nkids : 0, ndefaults = 0;
  for (int i = 0; i < np; i++) {
    const mq_node *p = params->kids[i];
    add_local(F, p->str, p->span);
    if (p->nkids > 0 && p->kids[0]) {
      ndefaults++;
      expr(C, p->kids[0]); /* defaults are evaluated when the fn statement runs */
    }
  }
  F->f->param_names = mq_calloc(S, (size_t)(np ? np : 1) * sizeof(char *));
  F->f->nparams = np; /* before the names: a failed strdup leaves the rest NULL, freed by count */
  for (int i = 0; i < np; i++) F->f->param_names[i] = mq_strdup(S, params->kids[i]->str);
  F->f->ndefaults = ndefaults;
  if (body->kind == MQ_N_BLOCK) {
    prescan_globals(F, body, np, 0);
    prescan_locals(F, body, 0);
  }
  F->depth = F->max_depth = F->nlocals;
  if (body->kind == MQ_N_BLOCK) {
    block(F, body, false);
    emit_op(F, MQ_OP_NONE, +1, n->span);
  } else {
    expr(F, body);
  }
  emit_op(F, MQ_OP_RETURN, -1, n->span);
  F->f->nlocals = F->nlocals;
  F->f->nupvals = F->ncaptures;
  keep_names(F);
  F->f->nslots = F->max_depth + 1;
  int k = mq_chunk_const(S, C->f, mq_objv(F->f));
  emit_op(C, MQ_OP_CLOSURE, 1 - ndefaults, n->span);
  emit_u16(C, (unsigned)k, n->span);
  for (int i = 0; i < F->ncaptures; i++) {
    emit(C, F->captures[i].kind, n->span);
    emit(C, F->captures[i].index, n->span);
  }
  mq_pool_drain(S, mark);
}

typedef struct compile_job {
  compiler *C;
  const mq_node *program;
} compile_job;

static void compile_protected(mq_state *S, void *ud) {
  (void)S;
  compile_job *job = ud;
  block(job->C, job->program, true);
}

mq_function *mq_compile(mq_state *S, const mq_node *program, const mq_source *src, bool echo) {
  /* off the C stack, as function() does: imports compile inside runs */
  compiler *C = mq_scratch(S, sizeof *C);
  memset(C, 0, sizeof *C);
  C->S = S;
  C->echo = echo;
  C->f = mq_function_new(S, "<script>", src);
  compile_job job = {C, program};
  masq_status st = mq_protect(S, compile_protected, &job);
  if (st != MASQ_OK) {
    /* Re-raise with the span the compiler recorded; a static error is
     * reported like a syntax error (exit status 3), before anything runs. */
    S->pending_span = S->err_has_span;
    mq_throw(S, st == MASQ_ERR_RUNTIME ? MASQ_ERR_SYNTAX : st, "%s", S->err_message.data);
  }
  mq_span end = {0, 0, 0};
  emit_op(C, MQ_OP_NONE, +1, end);
  emit_op(C, MQ_OP_RETURN, -1, end);
  C->f->nslots = C->max_depth + 1;
  return C->f;
}
