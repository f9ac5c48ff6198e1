/* stdlib.h - the library of builtins: tables of rows (vm/builtin.h says how
 * a row declares a builtin), one per family (lib_*.c), and the function that
 * binds them into a state. Nothing calls a builtin here by name: the VM
 * calls them through the state's table. */
#ifndef MQ_STDLIB_H
#define MQ_STDLIB_H

#include "../vm/builtin.h"

/* A named numeric constant bound at open (nan, inf, pi). */
typedef struct mq_constant {
  const char *name;
  double value;
} mq_constant;

/* Binds the tables of the groups S->cfg.libs enables into S->builtins and
 * the global slots. */
MQ_INTERNAL void mq_stdlib_open(mq_state *S);

/* The sparse forms of generic builtins (lib_sparse.c), which api/ installs
 * as S->hooks.sparse_call: runs builtin [b] on [args], whose first argument
 * is sparse, when it has such a form (unary ops on values, count), setting
 * *out; false if it has none. */
MQ_INTERNAL bool mq_sparse_builtin(mq_state *S, const mq_builtin *b, mq_value *args,
                                   mq_value *out);

#endif
