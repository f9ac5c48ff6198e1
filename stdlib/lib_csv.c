/* lib_csv.c - load_csv and save_csv: tables of numbers with missing cells
 * as masked float tensors (runtime/io/csv.h parses and writes; docs/IO.md is
 * the user's account). Bound with the file builtins, under MASQ_LIB_IO. */
#include "../runtime/io/csv.h"
#include "../runtime/io/npy.h"
#include "stdlib.h"

static const char *arg_path(mq_state *S, mq_value v, const char *fn) {
  if (!mq_is_obj(v, MQ_O_STRING))
    mq_error(S, "%s: path must be a string, not %s", fn, mq_value_a_type_name(v));
  return mq_string_cstr(S, mq_as_string(v), "path");
}

/* delimiter=: "," by default (none too, as before signatures could hold
 * strings); otherwise one byte that is not a quote or a line
 * break. */
static char arg_delim(mq_state *S, mq_value v, const char *fn) {
  if (v.type == MQ_NONE) return ',';
  if (!mq_is_obj(v, MQ_O_STRING) || mq_as_string(v)->len != 1)
    mq_error(S, "%s: delimiter must be a one-character string such as \",\" or \"\\t\"", fn);
  char c = mq_as_string(v)->chars[0];
  if (c == '"' || c == '\n' || c == '\r')
    mq_error(S, "%s: delimiter cannot be a quote or a line break", fn);
  return c;
}

/* na=none: "", "NA", "NaN", "null"; otherwise a string or a list of them. */
static const mq_string *const *arg_na(mq_state *S, mq_value v, int *n) {
  static const char *const dflt[] = {"", "NA", "NaN", "null"};
  if (v.type != MQ_NONE) return mq_arg_string_list(S, v, "load_csv", "na", n);
  *n = (int)(sizeof dflt / sizeof *dflt);
  const mq_string **na = mq_scratch(S, sizeof dflt / sizeof *dflt * sizeof *na);
  for (int k = 0; k < *n; k++) na[k] = mq_string_new(S, dflt[k], strlen(dflt[k]));
  return na;
}

/* columns=: a name, an index, or a list of them ([0, 2] is an int64
 * tensor literal). */
static mq_csv_col *arg_columns(mq_state *S, mq_value v, int *n) {
  if (v.type == MQ_NONE) return NULL;
  if (mq_is_obj(v, MQ_O_TENSOR)) {
    mq_tensor *t = mq_contiguous(S, mq_as_tensor(v));
    if (t->dtype != MQ_DT_I64 || t->mask || t->ndim > 1)
      mq_error(S, "load_csv: columns must be column names or indices; a tensor of them must "
                  "be a plain 1-D int tensor");
    mq_csv_col *c = mq_scratch(S, (size_t)(t->numel ? t->numel : 1) * sizeof *c);
    for (int64_t k = 0; k < t->numel; k++) {
      c[k].name = NULL;
      c[k].index = ((const int64_t *)mq_tensor_data(t))[k];
    }
    *n = (int)t->numel;
    return c;
  }
  const mq_value *items = &v;
  int len = 1;
  if (mq_is_obj(v, MQ_O_LIST)) {
    items = mq_as_list(v)->items;
    len = mq_as_list(v)->len;
  }
  mq_csv_col *c = mq_scratch(S, (size_t)(len ? len : 1) * sizeof *c);
  for (int k = 0; k < len; k++) {
    mq_value it = items[k];
    c[k].name = NULL;
    if (mq_is_obj(it, MQ_O_STRING)) {
      c[k].name = mq_as_string(it)->chars;
      c[k].name_len = mq_as_string(it)->len;
    } else if (it.type == MQ_INT) {
      c[k].index = it.as.i;
    } else {
      mq_error(S, "load_csv: columns must be column names (strings) or indices (ints), or a "
                  "list of them; got %s", mq_value_a_type_name(it));
    }
  }
  *n = len;
  return c;
}

static mq_value lib_load_csv(mq_state *S, mq_value *args) {
  const char *path = arg_path(S, args[0], "load_csv");
  mq_csv_opts o = {"load_csv", path, arg_delim(S, args[2], "load_csv"),
                   mq_arg_bool(S, args[1], "header"), MQ_DT_F32, NULL, 0, NULL, 0};
  o.na = arg_na(S, args[3], &o.nna);
  o.cols = arg_columns(S, args[4], &o.ncols);
  o.dtype = mq_arg_dtype(S, args[5], MQ_DT_F32);
  if (o.dtype != MQ_DT_F32 && o.dtype != MQ_DT_F64)
    mq_error(S, "load_csv: dtype must be float32 or float64, not %s", mq_dtype_name(o.dtype));
  size_t len;
  uint8_t *bytes = mq_file_read(S, path, "load_csv", &len);
  mq_csv_table t;
  mq_csv_parse(S, bytes, len, &o, &t);
  mq_list *res = mq_list_new(S, 2);
  mq_list_push(S, res, mq_objv(t.x));
  if (t.names) {
    mq_list *names = mq_list_new(S, t.ncols);
    for (int j = 0; j < t.ncols; j++) mq_list_push(S, names, mq_objv(t.names[j]));
    mq_list_push(S, res, mq_objv(names));
  } else {
    mq_list_push(S, res, mq_none());
  }
  return mq_objv(res);
}

static mq_value lib_save_csv(mq_state *S, mq_value *args) {
  const char *path = arg_path(S, args[0], "save_csv");
  mq_tensor *x = mq_arg_tensor(S, args[1], "x");
  char delim = arg_delim(S, args[3], "save_csv");
  if (x->ndim != 1 && x->ndim != 2)
    mq_error(S, "save_csv: x must be 1-D (one column) or 2-D (rows, columns), not %d-D",
             x->ndim);
  int64_t cols = x->ndim == 2 ? x->shape[1] : 1;
  int n = 0;
  const mq_string **names = mq_arg_string_list(S, args[2], "save_csv", "header", &n);
  if (names && n != cols)
    mq_error(S, "save_csv: header has %d name%s but x has %lld column%s", n, n == 1 ? "" : "s",
             (long long)cols, cols == 1 ? "" : "s");
  size_t len;
  char *text = mq_csv_encode(S, x, names, n, delim, &len);
  mq_file_write(S, path, "save_csv", text, len);
  return mq_none();
}

const mq_libfn mq_lib_csv[] = {
    {"load_csv(path, header=true, delimiter=\",\", na=none, columns=none, dtype=none)",
     lib_load_csv,
     "[x, names]: a CSV table as a masked (rows, columns) float32 tensor, missing cells "
     "(na=none: the list \"\", \"NA\", \"NaN\", \"null\") masked out; names is none with "
     "header=false; columns= picks by name or index; see docs/IO.md",
     MQ_BK_NONE, 0},
    {"save_csv(path, x, header=none, delimiter=\",\")", lib_save_csv,
     "write a 1-D or 2-D tensor as CSV: masked-out cells empty, floats exact; header= a "
     "list of column names",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
