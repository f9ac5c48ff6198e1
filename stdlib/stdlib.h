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

#endif
