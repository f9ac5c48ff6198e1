/* ewise.h - what the elementwise files (elementwise.c, unary.c, binary.c)
 * share: the row-walk macro their typed kernels are written with, and the
 * operand preparation every op does before it runs a kernel. */
#ifndef MQ_EWISE_H
#define MQ_EWISE_H

#include "intmath.h"
#include "iter.h"
#include "kernels.h"

/* Counts a row of [n] elements toward the next poll of S for interrupts,
 * every MQ_POLL_ELEMS elements (never when S is NULL: a worker thread, see
 * mq_ewise_run). A function rather than part of ROWS_BEGIN: one check,
 * not one per kernel that the macros instantiate (hundreds), which would
 * each need a test on threads and past MQ_POLL_ELEMS to be seen taking
 * both ways. Inlined, it costs what the macro's own test did. */
static inline void mq_rows_poll(mq_state *S, int64_t *polled, int64_t n) {
  if (S && (*polled += n) >= MQ_POLL_ELEMS) {
    *polled = 0;
    mq_check_interrupt(S);
  }
}

/* Walks the rows of an iterator, polling S for interrupts now and then. */
#define ROWS_BEGIN(S, it)                                                      \
  {                                                                            \
    int64_t polled_ = 0;                                                       \
    for (int64_t r_ = 0; r_ < (it)->rows; r_++, mq_iter_next(it)) {            \
      mq_rows_poll(S, &polled_, (it)->n);
#define ROWS_END                                                               \
  }                                                                            \
  }

/* A typed elementwise kernel. [prm] holds the op's scalar parameters
 * (clamp bounds, rounding digits, ...); kernels without any ignore it.
 * S is NULL on a worker thread: a kernel uses it only to poll. */
typedef void (*mq_ewise_fn)(mq_state *S, mq_iter *it, const double *prm);

/* Runs kernel [k] over the walk [it] (fresh from mq_iter_init): on the
 * calling thread, or for a million elements or more split by elements
 * (one row) or rows among the state's threads (runtime/parallel.h). Each
 * element's result is the same either way. */
MQ_INTERNAL void mq_ewise_run(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm);

/* The kernel an op runs on float tensors of dtype [dt] when its result
 * has that dtype too (unary: no parameters, not a predicate; binary:
 * arithmetic), or NULL: what fused expressions (fuse.c) may use. */
MQ_INTERNAL mq_ewise_fn mq_unary_float_kernel(mq_unop op, mq_dtype dt);
MQ_INTERNAL mq_ewise_fn mq_binary_float_kernel(mq_binop op, mq_dtype dt);
/* x ** y for a number y, as torch computes it: sqrt for 0.5, x * x for 2 ... */
MQ_INTERNAL mq_ewise_fn mq_pow_number_kernel(mq_dtype dt);

/* Data of [t] (its mask ignored) converted to [dt] and broadcast to
 * [shape]; a scalar converts once, before broadcasting. */
MQ_INTERNAL mq_tensor *mq_operand(mq_state *S, mq_tensor *t, mq_dtype dt, int nd,
                                  const int64_t *shape);

/* Errors unless every valid entry of the integer tensor [t] (mask [m],
 * NULL: all valid; both of one shape) is nonzero: integer division by zero
 * has no value, but a masked-out zero is no error. */
MQ_INTERNAL void mq_check_int_divisor(mq_state *S, mq_tensor *t, mq_tensor *m, const char *op);

#endif
