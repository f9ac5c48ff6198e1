/* ewise.h - what the elementwise files (elementwise.c, unary.c, binary.c)
 * share: their typed kernels for fusion, and the operand preparation every
 * op does before it runs a kernel (the row walk their kernels are written
 * with, and mq_ewise_run, are iter.h's). */
#ifndef MQ_EWISE_H
#define MQ_EWISE_H

#include "../tensor/intmath.h"
#include "../tensor/iter.h"
#include "../tensor/internal.h"
#include "ops.h"

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
/* Counts the positions where two same-shaped bool tensors differ. */
MQ_INTERNAL int64_t mq_kernel_count_ne(mq_state *S, mq_tensor *a, mq_tensor *b);

#endif
