/* lib_summary.c - summary and describe: a tensor's statistics at a glance
 * (runtime/print/summary.h computes them; large tensors print the same summary
 * line above their body, runtime/print/print.c). */
#include "../runtime/print/summary.h"
#include "../vm/table.h"
#include "stdlib.h"

#include <stdio.h>

const mq_string **mq_arg_string_list(mq_state *S, mq_value v, const char *fn, const char *what,
                                     int *n) {
  *n = 0;
  if (v.type == MQ_NONE) return NULL;
  const mq_value *items = &v;
  int len = 1;
  if (mq_is_obj(v, MQ_O_LIST)) {
    items = mq_as_list(v)->items;
    len = mq_as_list(v)->len;
  } else if (!mq_is_obj(v, MQ_O_STRING)) {
    mq_error(S, "%s: %s must be a list of strings, not %s", fn, what, mq_value_a_type_name(v));
  }
  const mq_string **out = mq_scratch(S, (size_t)(len ? len : 1) * sizeof *out);
  for (int k = 0; k < len; k++) {
    if (!mq_is_obj(items[k], MQ_O_STRING))
      mq_error(S, "%s: %s must be a list of strings; item %d is a %s", fn, what, k,
               mq_value_type_name(items[k]));
    out[k] = mq_as_string(items[k]);
  }
  *n = len;
  return out;
}

static mq_value lib_summary(mq_state *S, mq_value *args) {
  if (mq_is_obj(args[0], MQ_O_TABLE)) return mq_lib_table_summary(S, mq_as_table(args[0]));
  mq_tensor *t = mq_arg_tensor_stored(S, args[0], "x");
  mq_buf *b = &S->out;
  b->len = 0;
  mq_summary_line(S, b, t);
  return mq_objv(mq_string_new(S, b->data, b->len));
}

static mq_value lib_describe(mq_state *S, mq_value *args) {
  if (mq_is_obj(args[0], MQ_O_TABLE)) {
    if (args[1].type != MQ_NONE || args[2].type != MQ_NONE)
      mq_error(S, "describe: a table describes its columns by their names (no dim=, names=)");
    return mq_lib_table_describe(S, mq_as_table(args[0]));
  }
  mq_tensor *t = mq_arg_tensor(S, args[0], "x");
  if (t->ndim == 0) mq_error(S, "describe: x must have at least one dim, not be 0-d");
  int dim = 0;
  if (args[1].type != MQ_NONE) {
    if (t->ndim != 2) mq_error(S, "describe: dim applies to a 2-D x (0: per column, 1: per row)");
    dim = mq_shape_norm_dim(S, mq_arg_int(S, args[1], "dim"), t->ndim);
  }
  int n = 0;
  const mq_string **names = mq_arg_string_list(S, args[2], "describe", "names", &n);
  int64_t ncol;
  double *st = mq_describe_stats(S, t, dim, &ncol);
  if (names && n != ncol)
    mq_error(S, "describe: names has %d entr%s but x has %lld column%s", n, n == 1 ? "y" : "ies",
             (long long)ncol, ncol == 1 ? "" : "s");
  mq_string **nm = mq_scratch(S, (size_t)(ncol ? ncol : 1) * sizeof *nm);
  for (int64_t c = 0; c < ncol; c++) {
    char buf[24];
    nm[c] = names ? (mq_string *)names[c]
                  : mq_string_new(S, buf, (size_t)snprintf(buf, sizeof buf, "%lld", (long long)c));
  }
  return mq_describe_table(S, st, ncol, nm);
}

const mq_libfn mq_lib_summary[] = {
    {"summary(x)", lib_summary,
     "one line: shape, dtype, % valid, min/max/mean/std of the valid finite entries, NaN and "
     "inf counts (large tensors print it above their body); of a table, a line a column",
     MQ_BK_NONE, 0},
    {"describe(x, dim=none, names=none)", lib_describe,
     "a table of count, mean, std (ddof 1), min, quartiles and max of each column's valid "
     "entries (pandas' describe; dim=1: per row of a 2-D x; names= column headings); of a "
     "table, its numeric columns",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
