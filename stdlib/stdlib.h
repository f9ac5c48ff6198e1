/* stdlib.h - the table of builtins and the argument binder.
 *
 * A builtin is declared by its signature string, which is also its
 * documentation and the spec its arguments are bound by:
 *
 *   {"softmax(x, dim)", lib_softmax, "softmax over the valid entries along dim"}
 *   {"sum(x, dim=none, keepdim=false)", ...}
 *   {"zeros(*shape, dtype=none)", ...}      -- *rest collects into a list
 *   {"format(fmt, *values, **names)", ...}  -- **names collects the keyword
 *                                              arguments no parameter takes:
 *                                              a list name, value, name, ...
 *
 * Before the C function runs, positional and keyword arguments are matched
 * to the parameters, defaults filled in, and a *rest parameter gets a list;
 * the function receives exactly one value per parameter, in order. */
#ifndef MQ_STDLIB_H
#define MQ_STDLIB_H

#include "../runtime/tensor.h"
#include "../vm/state.h"

/* Returns a borrowed or pool-owned value (the VM retains what it keeps). */
typedef mq_value (*mq_cfn)(mq_state *S, mq_value *args);

typedef struct mq_libfn {
  const char *sig;
  mq_cfn fn;
  const char *doc;
} mq_libfn;

/* A named numeric constant bound at open (nan, inf, pi). */
typedef struct mq_constant {
  const char *name;
  double value;
} mq_constant;

/* A builtin as bound at open: the parsed signature. */
typedef struct mq_builtin {
  const char *name; /* points into [name_buf] */
  char *name_buf;
  char *help;       /* "sig -- doc", what :help NAME shows */
  const mq_libfn *def;
  int nparams;
  int rest;          /* index of the *rest parameter, or -1 */
  int kwrest;        /* index of the **names parameter, or -1 */
  char **pnames;
  mq_value *defaults;
  bool *required;
  /* A host function (masq_register): called through mq_host_call() instead
   * of def->fn. Owned by this entry; NULL for the library's builtins. */
  struct mq_hostfn *host;
} mq_builtin;

/* Most parameters a builtin or host function may declare. */
#define MQ_MAX_PARAMS 16

/* Binds the library's table into S->builtins and global slots. */
MQ_INTERNAL void mq_stdlib_open(mq_state *S);
MQ_INTERNAL void mq_stdlib_close(mq_state *S);
/* Adding a builtin after open (host functions), in two steps so that
 * nothing can leak in between: a new zeroed entry, counted at once (close
 * frees whatever part of it gets filled in), returned by index; then its
 * binding to [def] (a well-formed signature, outliving the entry), which
 * also binds the name in the globals, replacing what was there. */
MQ_INTERNAL int mq_stdlib_new_entry(mq_state *S);
MQ_INTERNAL void mq_stdlib_bind(mq_state *S, int index, const mq_libfn *def);

/* Host functions (vm/api_host.c): runs one with its bound [args], the way
 * def->fn would; frees one when its builtin entry goes. */
MQ_INTERNAL mq_value mq_host_call(mq_state *S, const mq_builtin *b, mq_value *args);
MQ_INTERNAL void mq_hostfn_free(mq_state *S, struct mq_hostfn *h);

/* Calls builtin [b] with [nargs] values at [argv], the last [nkw] of which
 * are keyword arguments named by [kwnames] (a list of strings). */
MQ_INTERNAL mq_value mq_builtin_call(mq_state *S, const mq_builtin *b, mq_value *argv,
                                     int nargs, int nkw, const mq_list *kwnames);

/* The unary op builtin [b] is exactly (one parameter x, the result
 * mq_unary(op, x) for a tensor x), or -1: the compiler fuses calls of
 * those (runtime/fuse.h). */
MQ_INTERNAL int mq_builtin_unop(const mq_builtin *b);
/* The reduction builtin [b] is (sum, mean, amax or amin, whose one-argument
 * call reduces over everything), or -1: the compiler fuses such a call of
 * an elementwise expression into one pass (runtime/fuse.h). */
MQ_INTERNAL int mq_builtin_redop(const mq_builtin *b);
/* A reduction's dim argument (none: 0 dims; an int; a list of ints) as
 * normalized, distinct dims of [t]; returns how many. */
MQ_INTERNAL int mq_arg_reduce_dims(mq_state *S, mq_value v, const mq_tensor *t, int *dims);

/* --- argument helpers for builtins ---------------------------------------- */

MQ_INTERNAL mq_tensor *mq_arg_tensor(mq_state *S, mq_value v, const char *what);
/* The same, also admitting a sparse tensor (runtime/sparse.h): for the
 * builtins that handle every layout. */
MQ_INTERNAL mq_tensor *mq_arg_tensor_any(mq_state *S, mq_value v, const char *what);
/* Runs builtin [b] on a sparse first argument when it has a sparse form
 * (unary ops on values, count); false if it has none (lib_sparse.c). */
MQ_INTERNAL bool mq_sparse_builtin(mq_state *S, const mq_builtin *b, mq_value *args,
                                   mq_value *out);
/* The generic builtins that sparse_ops, sparse_reduce and sparse_matmul
 * implement (lib_sparse_ops.c); false: not one of them. */
MQ_INTERNAL bool mq_sparse_ops_builtin(mq_state *S, const mq_builtin *b, mq_value *args,
                                       mq_value *out);
MQ_INTERNAL int64_t mq_arg_int(mq_state *S, mq_value v, const char *what);
MQ_INTERNAL double mq_arg_number(mq_state *S, mq_value v, const char *what);
MQ_INTERNAL bool mq_arg_bool(mq_state *S, mq_value v, const char *what);
/* A shape from a list of ints, or from one list argument inside [v]. */
MQ_INTERNAL int mq_arg_shape(mq_state *S, mq_value v, int64_t *shape, const char *what);
/* none -> [dflt]; otherwise a dtype name string or a dtype constant. */
MQ_INTERNAL mq_dtype mq_arg_dtype(mq_state *S, mq_value v, mq_dtype dflt);

#endif
