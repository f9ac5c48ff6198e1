/* chunk.h - compiled code: a function's bytecode, constants and the source
 * span of every instruction byte (for caret diagnostics). */
#ifndef MQ_CHUNK_H
#define MQ_CHUNK_H

#include "../core/diag.h"
#include "../core/state.h"
#include "opcodes.h"

typedef struct mq_function {
  mq_obj hdr;
  char *name;               /* "<script>" for top-level code */
  uint8_t *code;
  mq_span *spans;           /* spans[i] belongs to code[i] */
  int code_len, code_cap;
  int spans_cap;            /* its own count: growing code can fail between the two */
  mq_value *consts;
  int nconsts, consts_cap;
  /* A hash index of consts (open addressing, index + 1, 0 empty), built
   * once a function has many, so that adding each one stays O(1). */
  int *const_index;
  int const_index_cap; /* a power of two, at least twice nconsts; 0: none */
  int nparams;
  int ndefaults;            /* the last ndefaults params have defaults */
  char **param_names;       /* nparams names, for keyword arguments */
  int nlocals;              /* params first, then the other locals */
  char **names;             /* its locals' names and its enclosing functions', for did-you-mean hints */
  int nnames;
  int nupvals;              /* values captured from enclosing functions */
  int nslots;               /* stack slots the frame needs: locals + temporaries */
  const mq_source *src;
} mq_function;

/* A function value: its code, the values it captured when it was created
 * (by value: see docs/LANGUAGE.md), then its parameters' default values. */
typedef struct mq_closure {
  mq_obj hdr;
  mq_function *fn;
  mq_value vals[]; /* fn->nupvals captures, then fn->ndefaults defaults */
} mq_closure;

/* A new function, owned by the pool like every new object. */
MQ_INTERNAL mq_function *mq_function_new(mq_state *S, const char *name, const mq_source *src);
MQ_INTERNAL void mq_function_free(mq_state *S, mq_function *f);
/* A closure of [fn] with room for its captures and defaults (all none). */
MQ_INTERNAL mq_closure *mq_closure_new(mq_state *S, mq_function *fn);
MQ_INTERNAL void mq_closure_free(mq_state *S, mq_closure *c);
/* Sets the hooks of the function and closure object kinds (freeing,
 * printing, and what the cycle collector needs). */
MQ_INTERNAL void mq_chunk_init_kinds(mq_state *S);
MQ_INTERNAL void mq_chunk_emit(mq_state *S, mq_function *f, uint8_t byte, mq_span span);
/* Adds [v] (retained) to the constants, reusing an equal number or string. */
MQ_INTERNAL int mq_chunk_const(mq_state *S, mq_function *f, mq_value v);
/* The length in bytes of the instruction at [pc] of [f], operands and
 * trailing INDEX items or CLOSURE captures included, from the operand list
 * of vm/opcodes.h; -1 for an unknown opcode or one that runs past the end. */
MQ_INTERNAL int mq_chunk_op_length(const mq_function *f, int pc);
/* Appends a `luac -l`-style listing of [f] to [b]. */
MQ_INTERNAL void mq_chunk_disassemble(mq_state *S, mq_buf *b, const mq_function *f);

#endif
