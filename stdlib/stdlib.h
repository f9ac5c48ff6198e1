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
 * (or second) is sparse, when it has such a form, setting
 * *out; false if it has none. */
MQ_INTERNAL bool mq_sparse_builtin(mq_state *S, const mq_builtin *b, mq_value *args,
                                   mq_value *out);
/* The generic builtins that sparse_ops, sparse_reduce and sparse_matmul
 * implement (lib_sparse_ops.c); false: not one of them. */
MQ_INTERNAL bool mq_sparse_ops_builtin(mq_state *S, const mq_builtin *b, mq_value *args,
                                       mq_value *out);
/* A reduction's dim argument (none: 0 dims; an int; a list of ints) as
 * normalized, distinct dims of [t]; returns how many (lib_math.c). */
MQ_INTERNAL int mq_arg_reduce_dims(mq_state *S, mq_value v, const mq_tensor *t, int *dims);
/* A string or a list of strings as an array of *n (none: NULL, n 0);
 * errors name [fn] and the argument [what] (lib_summary.c). */
MQ_INTERNAL const mq_string **mq_arg_string_list(mq_state *S, mq_value v, const char *fn,
                                                 const char *what, int *n);

/* Ints given as f(x, 2, 3), f(x, [2, 3]) or f(x, some_list): an int, a
 * 0-d or 1-d int tensor, or a list of ints (a single list or tensor inside
 * a list is unwrapped, for *rest parameters); negatives allowed; *n gets
 * how many. Scratch memory (lib_shape.c). */
MQ_INTERNAL int64_t *mq_int_list(mq_state *S, mq_value v, int *n, const char *what);

/* The number a literal list's float32 entry was written as: the shortest
 * decimal that reads back as [v], read as a double (lib_nn.c), so that
 * [0.9, 0.999] or [0.1, 1 / 3] given for numbers mean what they say. */
MQ_INTERNAL double mq_literal_of_f32(double v);
/* The interpolation= argument of quantile, nanquantile and median, checked
 * (lib_index.c): "linear", "lower", "higher", "midpoint" or "nearest". */
MQ_INTERNAL int mq_arg_qinterp(mq_state *S, mq_value v, const char *who);

/* Tables (lib_table.c) for the builtins that take one besides a tensor:
 * sort(t, "name", descending) with sort's arguments; describe and summary
 * of a table; describe's table of statistics (mq_describe_stats: [ncol]
 * columns, named by [names]). */
struct mq_table;
MQ_INTERNAL mq_value mq_lib_table_sort(mq_state *S, mq_value *args);
MQ_INTERNAL mq_value mq_lib_table_describe(mq_state *S, const struct mq_table *t);
MQ_INTERNAL mq_value mq_lib_table_summary(mq_state *S, const struct mq_table *t);
MQ_INTERNAL mq_value mq_describe_table(mq_state *S, const double *st, int64_t ncol,
                                       mq_string *const *names);

/* Warnings a state gives once (bits of S->warned). */
enum { MQ_WARN_MASKED_GRAD = 1 };
/* Writes "warning: [message]" at the running call's location to the host's
 * error output, the first time [bit] is warned about in this state
 * (lib_habits.c). */
MQ_INTERNAL void mq_warn_once(mq_state *S, unsigned bit, const char *message);
/* Binds the dtype constants (float32, float64, int64: their names, so that
 * dtype=float64 works; lib_habits.c). */
MQ_INTERNAL void mq_habits_open(mq_state *S);

#endif
