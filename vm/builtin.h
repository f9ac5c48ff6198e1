/* builtin.h - builtins: the rows that declare them, the table a state binds
 * them into, the argument binder that calls them, and argument converters.
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
#ifndef MQ_BUILTIN_H
#define MQ_BUILTIN_H

#include "../core/state.h"
#include "../runtime/kernels/ops.h"
#include "../runtime/tensor/tensor.h"

/* Returns a borrowed or pool-owned value (the VM retains what it keeps). */
typedef mq_value (*mq_cfn)(mq_state *S, mq_value *args);

/* What the compiler and the fusion engine may do with a builtin's calls
 * (vm/fuse.h): a unary elementwise op, whose op field is the mq_unop it
 * applies, or a reduction over everything when called with one argument,
 * whose op is the MQ_RED_* it computes. */
enum { MQ_BK_NONE = 0, MQ_BK_UNARY = 1, MQ_BK_REDUCE = 2, MQ_BK_ON_STRING = 3, MQ_BK_ON_SCALARS = 4 };
/* MQ_BK_ON_STRING and MQ_BK_ON_SCALARS mark an overload: a row with the name
 * of an earlier row (split, count, min, max: a tensor builtin) that the
 * binder calls instead of it when the call's arguments fit: a string first
 * argument (ON_STRING), or two or more positional arguments and no keyword
 * ones, each a plain number, bool or string (ON_SCALARS: min(3, 4)). The choice is made
 * in one place, mq_builtin_call, before the arguments are bound, since the
 * two rows' signatures differ. The name stays bound to the earlier row;
 * :help shows both (help_both). */

/* torch's result dtype for storage-dtype operands, for builtins whose C
 * function computes in the compute dtype (int64, float32) and returns it:
 * after the call, a tensor result (of a [values, indices] list, the
 * values) in the compute dtype of the first tensor operand's storage dtype
 * takes that dtype (mq_narrow_back), unless the call gave a dtype=.
 * MQ_KEEP_DTYPE: any storage dtype (sort, gather, tril, ones_like: int8
 * stays int8, as torch); MQ_KEEP_FLOAT: float16 and bfloat16 only (cumsum,
 * softmax, the losses: an int8 cumsum is int64 in torch too);
 * MQ_KEEP_PROMOTE: torch's result_type of every tensor and number argument
 * (add(h, 1) is float16, clamp(h, tensor(0.0)) float32), the dtype the
 * operators already answer in. */
enum { MQ_KEEP_NONE = 0, MQ_KEEP_DTYPE = 1, MQ_KEEP_FLOAT = 2, MQ_KEEP_PROMOTE = 3 };

typedef struct mq_libfn {
  const char *sig;
  mq_cfn fn;
  const char *doc;
  int8_t kind; /* MQ_BK_* */
  int16_t op;
  int8_t keep; /* MQ_KEEP_* */
} mq_libfn;

/* A parameter of a builtin, from its signature. */
typedef struct mq_param {
  const char *name;
  mq_value dflt; /* what an omitted optional parameter gets */
  bool required;
} mq_param;

/* A builtin as bound: the parsed signature. Its strings and parameters live
 * in one block: for the library's builtins the one block of all of them
 * (S->builtin_block), for a host function a block of its own ([own]). */
typedef struct mq_builtin {
  const char *name;
  const char *help; /* "sig -- doc", what :help NAME shows */
  const mq_libfn *def;
  int nparams;
  int rest;   /* index of the *rest parameter, or -1 */
  int kwrest; /* index of the **names parameter, or -1 */
  const mq_param *params;
  void *own; /* the block of a host function's entry, [own_size] bytes */
  size_t own_size;
  /* A host function (masq_register): called through S->hooks.host_call
   * instead of def->fn. Owned by this entry; NULL for the library's builtins. */
  struct mq_hostfn *host;
  /* 1 + the index of the other row of an overloaded name (MQ_BK_ON_*), or
   * 0; and on the overload row, the help of both rows (in its [own] block),
   * which masq_doc shows for the name. */
  int twin;
  const char *help_both;
} mq_builtin;

/* A builtin as a value: an index into S->builtins. */
typedef struct mq_builtin_obj {
  mq_obj hdr;
  int index;
} mq_builtin_obj;

/* Most parameters a builtin or host function may declare. */
#define MQ_MAX_PARAMS 16

/* The table S->builtins. The library's rows are bound at open, all at
 * once: [ntables] tables of rows (each ended by a row with a NULL sig) into
 * an empty table, their signatures parsed into one block and their names
 * bound in the globals. Host functions come after, one at a time, in two
 * steps so that nothing can leak in between: new_entry adds a zeroed entry,
 * counted at once (close frees whatever part of it gets filled in), and
 * returns its index; bind binds it to [def] (a well-formed signature,
 * outliving the entry) and its name in the globals, replacing what was
 * there. close frees the table; it comes after the last value that may
 * hold a builtin is released (the library's builtin objects are in the
 * block). */
MQ_INTERNAL void mq_builtin_open(mq_state *S, const mq_libfn *const *tables, int ntables);
MQ_INTERNAL int mq_builtin_new_entry(mq_state *S);
MQ_INTERNAL void mq_builtin_bind(mq_state *S, int index, const mq_libfn *def);
MQ_INTERNAL void mq_builtin_close(mq_state *S);
/* Sets the hooks of the builtin object kind (freeing, printing). */
MQ_INTERNAL void mq_builtin_init_kind(mq_state *S);

/* Calls builtin [b] with [nargs] values at [argv], the last [nkw] of which
 * are keyword arguments named by [kwnames] (a list of strings). A library
 * builtin whose first argument is sparse goes first to S->hooks.sparse_call
 * (the library's sparse form of it, if it has one). */
MQ_INTERNAL mq_value mq_builtin_call(mq_state *S, const mq_builtin *b, mq_value *argv,
                                     int nargs, int nkw, const mq_list *kwnames,
                                     mq_tensor *spare);
/* [spare] is the first argument when the VM knows it dying (vm/vm.c,
 * dying_operand), else NULL; builtins that can write their result into
 * it take it with mq_take_spare, first thing, and hand it to the runtime
 * (mq_binary_spare); every other builtin ignores it. */
static inline mq_tensor *mq_take_spare(mq_state *S) {
  mq_tensor *t = S->spare;
  S->spare = NULL;
  return t;
}

/* The unary op builtin [b] is exactly (one parameter x, the result
 * mq_unary(op, x) for a tensor x: its row's kind is MQ_BK_UNARY), or -1:
 * the compiler fuses calls of those (vm/fuse.h). */
MQ_INTERNAL int mq_builtin_unop(const mq_builtin *b);
/* The reduction builtin [b] is (a row of kind MQ_BK_REDUCE: sum, mean,
 * amax or amin, whose one-argument call reduces over everything), or -1:
 * the compiler fuses such a call of an elementwise expression into one pass
 * (vm/fuse.h). */
MQ_INTERNAL int mq_builtin_redop(const mq_builtin *b);

/* --- argument helpers for builtins ---------------------------------------- */

MQ_INTERNAL mq_tensor *mq_arg_tensor(mq_state *S, mq_value v, const char *what);
/* The same, also admitting a sparse tensor (runtime/sparse/sparse.h): for the
 * builtins that handle every layout. */
MQ_INTERNAL mq_tensor *mq_arg_tensor_any(mq_state *S, mq_value v, const char *what);
/* The same two as stored: a tensor of a storage dtype (int8 ... bfloat16,
 * runtime/tensor/tensor.h) is not converted to its compute dtype. Only for
 * builtins that handle every dtype (views, conversions, printing, save). */
MQ_INTERNAL mq_tensor *mq_arg_tensor_stored(mq_state *S, mq_value v, const char *what);
MQ_INTERNAL mq_tensor *mq_arg_tensor_any_stored(mq_state *S, mq_value v, const char *what);
MQ_INTERNAL int64_t mq_arg_int(mq_state *S, mq_value v, const char *what);
MQ_INTERNAL double mq_arg_number(mq_state *S, mq_value v, const char *what);
MQ_INTERNAL bool mq_arg_bool(mq_state *S, mq_value v, const char *what);
/* A shape from a list of ints, or from one list argument inside [v]. */
MQ_INTERNAL int mq_arg_shape(mq_state *S, mq_value v, int64_t *shape, const char *what);
/* none -> [dflt]; otherwise a dtype name string or a dtype constant. */
MQ_INTERNAL mq_dtype mq_arg_dtype(mq_state *S, mq_value v, mq_dtype dflt);

#endif
