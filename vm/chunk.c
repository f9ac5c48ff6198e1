/* chunk.c - building and listing bytecode. */
#include "chunk.h"

#include "../core/gc.h"

mq_function *mq_function_new(mq_state *S, const char *name, const mq_source *src) {
  mq_function *f = mq_gc_alloc(S, sizeof *f);
  f->hdr.rc = 1;
  f->hdr.type = MQ_O_FUNCTION;
  mq_pool_own(S, &f->hdr);
  f->src = src;
  mq_source_retain(src);
  f->name = mq_strdup(S, name);
  return f;
}

void mq_function_free(mq_state *S, mq_function *f) {
  for (int i = 0; i < f->nconsts; i++) mq_release(S, f->consts[i]);
  mq_free(S, f->consts, (size_t)f->consts_cap * sizeof *f->consts);
  mq_free(S, f->const_index, (size_t)f->const_index_cap * sizeof *f->const_index);
  mq_free(S, f->code, (size_t)f->code_cap);
  mq_free(S, f->spans, (size_t)f->spans_cap * sizeof *f->spans);
  if (f->param_names) {
    for (int i = 0; i < f->nparams; i++) mq_strfree(S, f->param_names[i]);
    /* the compiler allocates room for at least one name */
    mq_free(S, f->param_names, (size_t)(f->nparams ? f->nparams : 1) * sizeof *f->param_names);
  }
  for (int i = 0; i < f->nnames; i++) mq_strfree(S, f->names[i]);
  mq_free(S, f->names, (size_t)f->nnames * sizeof *f->names);
  mq_strfree(S, f->name);
  mq_source_release(S, f->src);
  mq_gc_dealloc(S, f, sizeof *f);
}

static size_t closure_size(const mq_function *fn) {
  return sizeof(mq_closure) + (size_t)(fn->nupvals + fn->ndefaults) * sizeof(mq_value);
}

mq_closure *mq_closure_new(mq_state *S, mq_function *fn) {
  mq_closure *c = mq_gc_alloc(S, closure_size(fn));
  c->hdr.rc = 1;
  c->hdr.type = MQ_O_CLOSURE;
  c->fn = fn;
  fn->hdr.rc++;
  mq_pool_own(S, &c->hdr);
  return c;
}

void mq_closure_free(mq_state *S, mq_closure *c) {
  mq_function *fn = c->fn;
  for (int i = 0; i < fn->nupvals + fn->ndefaults; i++) mq_release(S, c->vals[i]);
  mq_gc_dealloc(S, c, closure_size(fn));
  mq_obj_release(S, &fn->hdr);
}

/* --- functions and closures as objects (core/value.h) ------------------------ */

_Static_assert(sizeof(mq_gchead) % _Alignof(mq_closure) == 0 &&
                   sizeof(mq_gchead) % _Alignof(mq_function) == 0,
               "a container right after its head is aligned");

static void function_free(mq_state *S, mq_obj *o) { mq_function_free(S, (mq_function *)o); }
static void function_format(mq_state *S, mq_buf *b, mq_obj *o) {
  mq_buf_printf(S, b, "<code %s>", ((mq_function *)o)->name);
}
static void function_traverse(mq_state *S, mq_obj *o, mq_visit fn) {
  mq_function *f = (mq_function *)o;
  for (int i = 0; i < f->nconsts; i++) fn(S, f->consts[i]);
}
static void function_clear(mq_state *S, mq_obj *o) {
  mq_function *f = (mq_function *)o;
  while (f->nconsts > 0) mq_release(S, f->consts[--f->nconsts]);
}

static void closure_free(mq_state *S, mq_obj *o) { mq_closure_free(S, (mq_closure *)o); }
static void closure_format(mq_state *S, mq_buf *b, mq_obj *o) {
  mq_buf_printf(S, b, "<function %s>", ((mq_closure *)o)->fn->name);
}
static void closure_traverse(mq_state *S, mq_obj *o, mq_visit fn) {
  mq_closure *c = (mq_closure *)o;
  if (!c->fn) return;
  fn(S, mq_objv(c->fn));
  for (int i = 0; i < c->fn->nupvals + c->fn->ndefaults; i++) fn(S, c->vals[i]);
}
/* Keeps the function: the closure's size depends on it. */
static void closure_clear(mq_state *S, mq_obj *o) {
  mq_closure *c = (mq_closure *)o;
  if (!c->fn) return;
  for (int i = 0; i < c->fn->nupvals + c->fn->ndefaults; i++) {
    mq_value v = c->vals[i];
    c->vals[i] = mq_none();
    mq_release(S, v);
  }
}

void mq_chunk_init_kinds(mq_state *S) {
  S->kinds[MQ_O_FUNCTION] =
      (mq_kind){function_free, function_format, NULL, function_traverse, function_clear};
  S->kinds[MQ_O_CLOSURE] =
      (mq_kind){closure_free, closure_format, NULL, closure_traverse, closure_clear};
}

/* --- bytecode ----------------------------------------------------------------- */

void mq_chunk_emit(mq_state *S, mq_function *f, uint8_t byte, mq_span span) {
  if (f->code_len == f->code_cap) {
    /* Spans and code share one block, so growing them is one allocation
     * that either happens or leaves the function as it was. */
    int cap = f->code_cap ? f->code_cap * 2 : 64;
    if (f->spans_cap < cap) {
      f->spans = mq_realloc(S, f->spans, (size_t)f->spans_cap * sizeof *f->spans,
                            (size_t)cap * sizeof *f->spans);
      f->spans_cap = cap;
    }
    f->code = mq_realloc(S, f->code, (size_t)f->code_cap, (size_t)cap);
    f->code_cap = cap;
  }
  f->spans[f->code_len] = span;
  f->code[f->code_len++] = byte;
}

static bool same_const(mq_value a, mq_value b) {
  if (a.type != b.type) return false;
  switch ((mq_vtype)a.type) {
  case MQ_NONE: return true;
  case MQ_BOOL: return a.as.b == b.as.b;
  case MQ_INT: return a.as.i == b.as.i;
  case MQ_FLOAT: return memcmp(&a.as.f, &b.as.f, sizeof a.as.f) == 0;
  case MQ_OBJ:
    if (mq_is_obj(a, MQ_O_STRING) && mq_is_obj(b, MQ_O_STRING)) /* may hold NULs (fused programs) */
      return mq_as_string(a)->len == mq_as_string(b)->len &&
             memcmp(mq_as_string(a)->chars, mq_as_string(b)->chars, mq_as_string(a)->len) == 0;
    return a.as.o == b.as.o;
  }
  return false;
}

/* Hashes what same_const compares: the bits of a number, the bytes of a
 * string, the address of any other object (FNV-1a). */
static uint32_t const_hash(mq_value v) {
  uint32_t h = 2166136261u ^ v.type;
  const unsigned char *p;
  size_t n;
  switch ((mq_vtype)v.type) {
  case MQ_NONE: return h;
  case MQ_BOOL: p = (const unsigned char *)&v.as.b, n = sizeof v.as.b; break;
  case MQ_INT: p = (const unsigned char *)&v.as.i, n = sizeof v.as.i; break;
  case MQ_FLOAT: p = (const unsigned char *)&v.as.f, n = sizeof v.as.f; break;
  default:
    if (mq_is_obj(v, MQ_O_STRING)) {
      p = (const unsigned char *)mq_as_string(v)->chars, n = mq_as_string(v)->len;
    } else {
      p = (const unsigned char *)&v.as.o, n = sizeof v.as.o;
    }
  }
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
  return h;
}

/* The slot of [v] in f's index: where it is, or the empty slot where it
 * would go. */
static int index_slot(const mq_function *f, const int *index, int cap, mq_value v) {
  unsigned mask = (unsigned)cap - 1, i = const_hash(v) & mask;
  while (index[i] && !same_const(f->consts[index[i] - 1], v)) i = (i + 1) & mask;
  return (int)i;
}

/* Functions with few constants search them; past this many, an index. */
#define MQ_CONST_LINEAR 16

/* Makes room in f's index for one more constant, building or doubling it
 * (a new table first, so a failed allocation leaves the old one intact). */
static void index_reserve(mq_state *S, mq_function *f) {
  if (f->nconsts < MQ_CONST_LINEAR || (f->nconsts + 1) * 2 <= f->const_index_cap) return;
  int cap = f->const_index_cap ? f->const_index_cap * 2 : 4 * MQ_CONST_LINEAR;
  int *index = mq_calloc(S, (size_t)cap * sizeof *index);
  for (int k = 0; k < f->nconsts; k++) index[index_slot(f, index, cap, f->consts[k])] = k + 1;
  mq_free(S, f->const_index, (size_t)f->const_index_cap * sizeof *f->const_index);
  f->const_index = index;
  f->const_index_cap = cap;
}

int mq_chunk_const(mq_state *S, mq_function *f, mq_value v) {
  int slot = -1;
  if (f->nconsts < MQ_CONST_LINEAR) {
    for (int i = 0; i < f->nconsts; i++)
      if (same_const(f->consts[i], v)) return i;
  } else {
    index_reserve(S, f);
    slot = index_slot(f, f->const_index, f->const_index_cap, v);
    if (f->const_index[slot]) return f->const_index[slot] - 1;
  }
  if (f->nconsts >= 65535) mq_error(S, "too many constants in one function (limit 65535)");
  MQ_GROW(S, f->consts, f->consts_cap, f->nconsts + 1);
  mq_retain(v);
  f->consts[f->nconsts] = v;
  if (slot >= 0) f->const_index[slot] = f->nconsts + 1;
  return f->nconsts++;
}

static const struct {
  const char *name, *operands;
} op_info[] = {
#define OP(name, operands, effect, doc) {#name, operands},
    MQ_OPCODES(OP)
#undef OP
};

static const char *const binop_names[] = {
#define X(n, s) s,
    MQ_BINOP_TOKENS(X)
#undef X
};

static int operand_width(char kind) {
  return kind == 'K' || kind == 'G' || kind == 'n' || kind == 'D' || kind == 'd' ? 2 : 1;
}

static unsigned operand(const mq_function *f, int at, int nbytes) {
  unsigned v = 0;
  for (int i = nbytes - 1; i >= 0; i--) v = (v << 8) | f->code[at + i];
  return v;
}

/* The function a CLOSURE at [pc] makes, or NULL if its constant is not one. */
static const mq_function *closure_target(const mq_function *f, int pc) {
  if (pc + 3 > f->code_len) return NULL;
  unsigned k = operand(f, pc + 1, 2);
  if ((int)k >= f->nconsts || !mq_is_obj(f->consts[k], MQ_O_FUNCTION)) return NULL;
  return (const mq_function *)f->consts[k].as.o;
}

int mq_chunk_op_length(const mq_function *f, int pc) {
  uint8_t op = f->code[pc];
  if (op >= MQ_OP__COUNT) return -1;
  int len = 1;
  for (const char *k = op_info[op].operands; *k; k++) {
    if (*k == 'i') {
      len += (int)operand(f, pc + len - 1, 1); /* the item count just before */
    } else if (*k == 'c') {
      const mq_function *target = closure_target(f, pc);
      if (!target) return -1;
      len += 2 * target->nupvals;
    } else {
      if (pc + len + operand_width(*k) > f->code_len) return -1;
      len += operand_width(*k);
    }
  }
  return pc + len <= f->code_len ? len : -1;
}

/* Prints the source line the first time an instruction from it appears. */
static void source_line(mq_state *S, mq_buf *b, const mq_function *f, int line) {
  if (!f->src || line <= 0) return;
  const char *p = f->src->text;
  for (int l = 1; l < line && p; l++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p) return;
  const char *e = strchr(p, '\n');
  mq_buf_printf(S, b, "  ; %d: %.*s\n", line, (int)(e ? e - p : (long)strlen(p)), p);
}

/* Appends the decoded operands of the instruction at [pc] ([len] bytes). */
static void operands(mq_state *S, mq_buf *b, const mq_function *f, int pc, int len) {
  uint8_t op = f->code[pc];
  int at = pc + 1;
  unsigned last = 0;
  for (const char *k = op_info[op].operands; *k; k++) {
    if (*k == 'i') {
      mq_buf_puts(S, b, "\t; items");
      for (unsigned i = 0; i < last; i++) mq_buf_printf(S, b, " %u", f->code[at++]);
      continue;
    }
    if (*k == 'c') {
      if (at < pc + len) mq_buf_puts(S, b, "\t; captures");
      static const char *const kinds[] = {"local", "upval", "self"};
      for (; at + 1 < pc + len; at += 2) {
        unsigned kind = f->code[at];
        mq_buf_printf(S, b, " %s %u", kind < 3 ? kinds[kind] : "?", f->code[at + 1]);
      }
      continue;
    }
    int w = operand_width(*k);
    unsigned arg = operand(f, at, w);
    at += w;
    last = arg;
    /* A global by its name alone: its slot number depends on how many
     * builtins come before it, so listings would change with every new one. */
    if (*k == 'G' && (int)arg < S->nglobals) {
      mq_buf_printf(S, b, " %s", S->globals[arg].name);
      continue;
    }
    mq_buf_printf(S, b, " %u", arg);
    switch (*k) {
    case 'K':
      if (op == MQ_OP_CLOSURE) {
        mq_buf_printf(S, b, "\t; %s", closure_target(f, pc)->name);
      } else if ((int)arg < f->nconsts && op != MQ_OP_FUSED) {
        mq_buf_puts(S, b, "\t; ");
        mq_value_format(S, b, f->consts[arg]);
      }
      break;
    case 'G': mq_buf_puts(S, b, "\t; no such global"); break;
    case 'B':
      if (arg < MQ_TOK__COUNT) mq_buf_printf(S, b, "\t; %s", binop_names[arg]);
      break;
    case 'D': mq_buf_printf(S, b, "\t; to %d", pc + len + (int)arg); break;
    case 'd': mq_buf_printf(S, b, "\t; to %d", pc + len - (int)arg); break;
    default: break;
    }
  }
}

void mq_chunk_disassemble(mq_state *S, mq_buf *b, const mq_function *f) {
  mq_buf_printf(S, b, "function %s (%d bytes, %d constants, %d params, %d slots)\n", f->name,
                f->code_len, f->nconsts, f->nparams, f->nslots);
  int last_line = -1;
  for (int pc = 0; pc < f->code_len;) {
    uint8_t op = f->code[pc];
    int len = mq_chunk_op_length(f, pc);
    if (len < 0) { /* an unknown opcode or operands past the end: the rest is not code */
      mq_buf_printf(S, b, "  %04d  ?? %d\n", pc, op);
      break;
    }
    int line = f->spans[pc].line;
    if (line != last_line) source_line(S, b, f, line);
    last_line = line;
    mq_buf_printf(S, b, "  %04d  [%d:%d]\t%-18s", pc, line, f->spans[pc].col, op_info[op].name);
    operands(S, b, f, pc, len);
    mq_buf_putc(S, b, '\n');
    pc += len;
  }
  for (int i = 0; i < f->nconsts; i++)
    if (mq_is_obj(f->consts[i], MQ_O_FUNCTION))
      mq_chunk_disassemble(S, b, (const mq_function *)f->consts[i].as.o);
}
