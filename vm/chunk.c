/* chunk.c - building and listing bytecode. */
#include "chunk.h"

#include "../parser/ast.h"

mq_function *mq_function_new(mq_state *S, const char *name, const mq_source *src) {
  mq_function *f = mq_calloc(S, sizeof *f);
  f->hdr.rc = 1;
  f->hdr.type = MQ_O_FUNCTION;
  mq_pool_own(S, &f->hdr);
  f->src = src;
  f->name = mq_strdup(S, name);
  return f;
}

void mq_function_free(mq_state *S, mq_function *f) {
  for (int i = 0; i < f->nconsts; i++) mq_release(S, f->consts[i]);
  mq_free(S, f->consts, (size_t)f->consts_cap * sizeof *f->consts);
  mq_free(S, f->spans, (size_t)f->code_cap * (sizeof *f->spans + 1)); /* and the code */
  if (f->param_names) {
    for (int i = 0; i < f->nparams; i++) mq_strfree(S, f->param_names[i]);
    mq_free(S, f->param_names, (size_t)(f->nparams ? f->nparams : 1) * sizeof *f->param_names);
  }
  mq_strfree(S, f->name);
  mq_free(S, f, sizeof *f);
}

static size_t closure_size(const mq_function *fn) {
  return sizeof(mq_closure) + (size_t)(fn->nupvals + fn->ndefaults) * sizeof(mq_value);
}

mq_closure *mq_closure_new(mq_state *S, mq_function *fn) {
  mq_closure *c = mq_calloc(S, closure_size(fn));
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
  mq_free(S, c, closure_size(fn));
  mq_obj_release(S, &fn->hdr);
}

void mq_chunk_emit(mq_state *S, mq_function *f, uint8_t byte, mq_span span) {
  if (f->code_len == f->code_cap) {
    /* Spans and code share one block, so growing them is one allocation
     * that either happens or leaves the function as it was. */
    int cap = f->code_cap ? f->code_cap * 2 : 64;
    mq_span *spans = mq_alloc(S, (size_t)cap * (sizeof *spans + 1));
    uint8_t *code = (uint8_t *)(spans + cap);
    if (f->code_len) {
      memcpy(spans, f->spans, (size_t)f->code_len * sizeof *spans);
      memcpy(code, f->code, (size_t)f->code_len);
    }
    mq_free(S, f->spans, (size_t)f->code_cap * (sizeof *spans + 1));
    f->spans = spans;
    f->code = code;
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

int mq_chunk_const(mq_state *S, mq_function *f, mq_value v) {
  for (int i = 0; i < f->nconsts; i++)
    if (same_const(f->consts[i], v)) return i;
  if (f->nconsts >= 65535) mq_error(S, "too many constants in one function (limit 65535)");
  MQ_GROW(S, f->consts, f->consts_cap, f->nconsts + 1);
  mq_retain(v);
  f->consts[f->nconsts] = v;
  return f->nconsts++;
}

static const struct {
  const char *name;
  int nbytes;
} op_info[] = {
#define OP(name, nbytes, effect, doc) {#name, nbytes},
    MQ_OPCODES(OP)
#undef OP
};

static const char *const binop_names[] = {
#define X(n, s) s,
    MQ_BINOP_TOKENS(X)
#undef X
};

static unsigned operand(const mq_function *f, int at, int nbytes) {
  unsigned v = 0;
  for (int i = nbytes - 1; i >= 0; i--) v = (v << 8) | f->code[at + i];
  return v;
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

void mq_chunk_disassemble(mq_state *S, mq_buf *b, const mq_function *f) {
  mq_buf_printf(S, b, "function %s (%d bytes, %d constants, %d params, %d slots)\n", f->name,
                f->code_len, f->nconsts, f->nparams, f->nslots);
  int last_line = -1;
  for (int pc = 0; pc < f->code_len;) {
    uint8_t op = f->code[pc];
    if (op >= MQ_OP__COUNT) {
      mq_buf_printf(S, b, "  %04d  ?? %d\n", pc, op);
      pc++;
      continue;
    }
    int line = f->spans[pc].line;
    if (line != last_line) source_line(S, b, f, line);
    last_line = line;
    int nbytes = op_info[op].nbytes;
    mq_buf_printf(S, b, "  %04d  [%d:%d]\t%-18s", pc, line, f->spans[pc].col, op_info[op].name);
    if (nbytes) {
      unsigned arg = operand(f, pc + 1, op == MQ_OP_CALL_KW ? 1 : op == MQ_OP_FUSED ? 2 : nbytes);
      mq_buf_printf(S, b, " %u", arg);
      switch (op) {
      case MQ_OP_CONST: {
        mq_buf_puts(S, b, "\t; ");
        mq_value_format(S, b, f->consts[arg]);
        break;
      }
      case MQ_OP_GET_GLOBAL:
      case MQ_OP_SET_GLOBAL:
        if ((int)arg < S->nglobals) mq_buf_printf(S, b, "\t; %s", S->globals[arg].name);
        break;
      case MQ_OP_BINARY:
        if (arg < MQ_TOK__COUNT) mq_buf_printf(S, b, "\t; %s", binop_names[arg]);
        break;
      case MQ_OP_CALL_KW: mq_buf_printf(S, b, " %u", operand(f, pc + 2, 2)); break;
      case MQ_OP_FUSED:
        mq_buf_printf(S, b, " %u\t; done: to %d", operand(f, pc + 3, 2),
                      pc + 1 + nbytes + (int)operand(f, pc + 3, 2));
        break;
      case MQ_OP_JUMP:
      case MQ_OP_JUMP_IF_FALSE:
      case MQ_OP_JUMP_IF_FALSE_KEEP:
      case MQ_OP_JUMP_IF_TRUE_KEEP:
        mq_buf_printf(S, b, "\t; to %d", pc + 1 + nbytes + (int)arg);
        break;
      case MQ_OP_LOOP: mq_buf_printf(S, b, "\t; to %d", pc + 1 + nbytes - (int)arg); break;
      default: break;
      }
    }
    if (op == MQ_OP_INDEX) {
      int n = (int)operand(f, pc + 1, 1);
      mq_buf_puts(S, b, "\t; items");
      for (int i = 0; i < n; i++) mq_buf_printf(S, b, " %u", f->code[pc + 2 + i]);
      nbytes += n;
    }
    mq_buf_putc(S, b, '\n');
    pc += 1 + nbytes;
  }
  for (int i = 0; i < f->nconsts; i++)
    if (mq_is_obj(f->consts[i], MQ_O_FUNCTION))
      mq_chunk_disassemble(S, b, (const mq_function *)f->consts[i].as.o);
}
