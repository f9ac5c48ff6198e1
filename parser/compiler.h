/* compiler.h - turns a parsed program into a function of bytecode. */
#ifndef MQ_COMPILER_H
#define MQ_COMPILER_H

#include "../vm/chunk.h"
#include "ast.h"

/* Compiles the BLOCK [program] from [src] into a new pool-owned function.
 * With [echo], top-level expression statements print their value (REPL, -e);
 * otherwise their value is dropped. Errors (e.g. `break` outside a loop, a
 * ragged literal) are raised with mq_error_at. */
MQ_INTERNAL mq_function *mq_compile(mq_state *S, const mq_node *program, const mq_source *src,
                                    bool echo);

#endif
