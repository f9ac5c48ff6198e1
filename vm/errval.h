/* errval.h - error values: what `catch e` binds and raise(e) raises again.
 *
 * An error value keeps the message and the place of a runtime error (its
 * source, held by reference, and span), so that raising it again reports it
 * where it first happened. Its fields are read with field syntax (e.message,
 * e.line, e.col, e.file), which the compiler turns into FIELD. */
#ifndef MQ_ERRVAL_H
#define MQ_ERRVAL_H

#include "../core/diag.h"

typedef struct mq_errval {
  mq_obj hdr;
  mq_string *message;   /* retained */
  const mq_source *src; /* retained; NULL when unknown */
  mq_span span;         /* line 0 when unknown */
} mq_errval;

static inline bool mq_is_errval(mq_value v) { return mq_is_obj(v, MQ_O_ERROR); }

/* A new error value (owned by the pool) with a copy of [message] located at
 * [span] of [src] (either may be unknown: NULL, line 0). */
MQ_INTERNAL mq_errval *mq_errval_new(mq_state *S, const char *message, size_t len,
                                     const mq_source *src, mq_span span);
/* Field [name] of [e] into *out; false if it has no such field. */
MQ_INTERNAL bool mq_errval_field(mq_state *S, const mq_errval *e, const char *name, mq_value *out);
/* Whether [name] is the name of a field of error values. */
MQ_INTERNAL bool mq_errval_is_field(const char *name);
/* Raises [e] again: its message, at its own location. */
MQ_INTERNAL MQ_NORETURN void mq_errval_raise(mq_state *S, const mq_errval *e);
/* Sets the hooks of the error object kind (core/value.h). */
MQ_INTERNAL void mq_errval_init_kind(mq_state *S);

#endif
