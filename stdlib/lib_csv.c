/* lib_csv.c - load_csv and save_csv: CSV files as tables of typed, masked
 * columns (vm/table.h), or with tensor=true the old masked float tensor and
 * names (runtime/io/csv.h parses and writes; docs/IO.md is the user's
 * account). Bound with the file builtins, under MASQ_LIB_IO. */
#include "../runtime/io/csv.h"
#include "../runtime/io/npy.h"
#include "../core/checked.h"
#include "../core/dict.h"
#include "../core/range.h"
#include "../vm/table.h"
#include "stdlib.h"

#include <stdio.h>

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

/* The na strings: the default list (na=none) or na= instead of it, then
 * na_values= added (pandas' na_values, kept with its default list). */
static const mq_string *const *arg_na(mq_state *S, mq_value na, mq_value more, int *n) {
  static const char *const dflt[] = {"", "NA", "NaN", "null", "N/A", "n/a", "NULL", "None",
                                     "#N/A", "<NA>"};
  int nbase = 0, nmore = 0;
  const mq_string **base = NULL;
  if (na.type != MQ_NONE) base = mq_arg_string_list(S, na, "load_csv", "na", &nbase);
  const mq_string **add = mq_arg_string_list(S, more, "load_csv", "na_values", &nmore);
  if (!base) nbase = (int)(sizeof dflt / sizeof *dflt);
  const mq_string **all = mq_scratch(S, (size_t)(nbase + nmore + 1) * sizeof *all);
  for (int k = 0; k < nbase; k++)
    all[k] = base ? base[k] : mq_string_new(S, dflt[k], strlen(dflt[k]));
  for (int k = 0; k < nmore; k++) all[nbase + k] = add[k];
  *n = nbase + nmore;
  return all;
}

/* usecols=: a name, an index, a range, or a list of them ([0, 2] is an int64
 * tensor literal; [0, range(4, 8)] a list). */
static void add_col(mq_state *S, mq_csv_col *c, int *k, mq_value it) {
  c[*k].name = NULL;
  if (mq_is_obj(it, MQ_O_STRING)) {
    c[*k].name = mq_as_string(it)->chars;
    c[*k].name_len = mq_as_string(it)->len;
  } else if (it.type == MQ_INT) {
    c[*k].index = it.as.i;
  } else {
    mq_error(S, "load_csv: usecols must be column names (strings), indices (ints) or ranges, "
                "or a list of them; got %s", mq_value_a_type_name(it));
  }
  (*k)++;
}

static mq_csv_col *arg_columns(mq_state *S, mq_value v, int *n) {
  if (v.type == MQ_NONE) return NULL;
  if (mq_is_obj(v, MQ_O_TENSOR)) {
    mq_tensor *t = mq_contiguous(S, mq_as_tensor(v));
    if (t->dtype != MQ_DT_I64 || t->mask || t->ndim > 1)
      mq_error(S, "load_csv: usecols must be column names or indices; a tensor of them must "
                  "be a plain 1-D int tensor");
    if (t->numel > INT32_MAX) mq_error(S, "load_csv: usecols lists too many columns");
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
  int64_t total = 0; /* ranges count their entries */
  for (int k = 0; k < len; k++)
    total = mq_ck_add(S, total, mq_is_obj(items[k], MQ_O_RANGE) ? mq_as_range(items[k])->len : 1,
                      "usecols");
  if (total > INT32_MAX) mq_error(S, "load_csv: usecols lists too many columns");
  mq_csv_col *c = mq_scratch(S, (size_t)(total ? total : 1) * sizeof *c);
  int k = 0;
  for (int q = 0; q < len; q++) {
    if (!mq_is_obj(items[q], MQ_O_RANGE)) {
      add_col(S, c, &k, items[q]);
      continue;
    }
    const mq_range *r = mq_as_range(items[q]);
    for (int64_t i = 0; i < r->len; i++) add_col(S, c, &k, mq_int(mq_range_at(r, i)));
  }
  *n = k;
  return c;
}

/* skiprows=: a count of first lines, or a list of 0-based line numbers. */
static void arg_skiprows(mq_state *S, mq_value v, mq_csv_opts *o) {
  if (v.type == MQ_NONE) return;
  if (v.type == MQ_INT) {
    if (v.as.i < 0) mq_error(S, "load_csv: skiprows must be >= 0, not %lld", (long long)v.as.i);
    o->skip_first = v.as.i;
    return;
  }
  int n = 0;
  int64_t *lines = mq_int_list(S, v, &n, "skiprows");
  int64_t top = 0;
  for (int k = 0; k < n; k++) {
    if (lines[k] < 0 || lines[k] > INT32_MAX)
      mq_error(S, "load_csv: skiprows lists line numbers from 0, not %lld", (long long)lines[k]);
    if (lines[k] + 1 > top) top = lines[k] + 1;
  }
  uint8_t *skip = mq_scratch(S, (size_t)(top ? top : 1));
  memset(skip, 0, (size_t)(top ? top : 1));
  for (int k = 0; k < n; k++) skip[lines[k]] = 1;
  o->skip_line = skip;
  o->nskip_line = top;
}

/* comment=: one character that is not the delimiter, a quote or a line break. */
static char arg_comment(mq_state *S, mq_value v, char delim) {
  if (v.type == MQ_NONE) return 0;
  if (!mq_is_obj(v, MQ_O_STRING) || mq_as_string(v)->len != 1)
    mq_error(S, "load_csv: comment must be a one-character string such as \"#\"");
  char c = mq_as_string(v)->chars[0];
  if (c == '"' || c == '\n' || c == '\r' || c == delim)
    mq_error(S, "load_csv: comment cannot be a quote, a line break or the delimiter");
  return c;
}

/* Column j's name in the table, as pandas names it: "0", "1"... without a
 * header, "Unnamed: 3" for an empty name, and a name taken before gets the
 * first ".1", ".2"... that no column is named ("a", "a.1"), so that every
 * column can be picked. [header]: the header's names; [used]: the names
 * given so far (dicts, so a wide file costs time in proportion). */
static mq_string *column_name(mq_state *S, const mq_dict *header, const mq_dict *used,
                              mq_dict *next, const mq_csv_table *p, int j) {
  char nm[32];
  mq_string *name = p->names ? p->names[j] : NULL;
  if (!name) name = mq_string_new(S, nm, (size_t)snprintf(nm, sizeof nm, "%d", j));
  else if (!name->len) name = mq_string_new(S, nm, (size_t)snprintf(nm, sizeof nm, "Unnamed: %d", j));
  if (mq_dict_find(S, used, mq_objv(name)) < 0) return name;
  mq_buf *b = &S->out;
  int e = mq_dict_find(S, next, mq_objv(name)); /* where the last search for it stopped */
  for (int64_t k = e < 0 ? 1 : next->entries[e].val.as.i;; k++) {
    mq_poll(S);
    b->len = 0;
    mq_buf_putn(S, b, name->chars, name->len);
    mq_buf_printf(S, b, ".%lld", (long long)k);
    mq_value cand = mq_objv(mq_string_new(S, b->data, b->len));
    if (mq_dict_find(S, used, cand) < 0 && mq_dict_find(S, header, cand) < 0) {
      mq_dict_set(S, next, mq_objv(name), mq_int(k + 1));
      return mq_as_string(cand);
    }
  }
}

/* A table of the parsed columns. */
static mq_value table_of(mq_state *S, const mq_csv_table *p) {
  mq_table *t = mq_table_new(S);
  mq_dict *header = mq_dict_new(S, 0), *used = mq_dict_new(S, 0), *next = mq_dict_new(S, 0);
  for (int j = 0; p->names && j < p->ncols; j++) {
    mq_poll(S);
    mq_dict_set(S, header, mq_objv(p->names[j]), mq_bool(true));
  }
  for (int j = 0; j < p->ncols; j++) {
    mq_poll(S);
    mq_string *name = column_name(S, header, used, next, p, j);
    mq_dict_set(S, used, mq_objv(name), mq_bool(true));
    const mq_csv_column *c = &p->cols[j];
    mq_value v = c->kind == MQ_CSV_TEXT ? mq_objv(c->text) : mq_objv(c->x);
    mq_table_add(S, t, name, v, (mq_csv_kind)c->kind);
  }
  t->nrows = p->rows;
  return mq_objv(t);
}

static mq_value lib_load_csv(mq_state *S, mq_value *args) {
  const char *path = arg_path(S, args[0], "load_csv");
  mq_csv_opts o;
  memset(&o, 0, sizeof o);
  o.who = "load_csv";
  o.file = path;
  o.delim = arg_delim(S, args[2], "load_csv");
  o.header = mq_arg_bool(S, args[1], "header");
  o.tensor = mq_arg_bool(S, args[9], "tensor");
  o.na = arg_na(S, args[3], args[8], &o.nna);
  o.cols = arg_columns(S, args[4], &o.ncols);
  o.dtype = mq_arg_dtype(S, args[5], MQ_DT__ALL);
  if (o.dtype != MQ_DT__ALL && o.dtype != MQ_DT_F32 && o.dtype != MQ_DT_F64)
    mq_error(S, "load_csv: dtype must be float32 or float64, not %s", mq_dtype_name(o.dtype));
  o.comment = arg_comment(S, args[6], o.delim);
  arg_skiprows(S, args[7], &o);
  size_t len;
  uint8_t *bytes = mq_file_read(S, path, "load_csv", &len);
  mq_csv_table t;
  mq_csv_parse(S, bytes, len, &o, &t);
  if (!o.tensor) return table_of(S, &t);
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

/* save_csv of a table: its columns as they are, a header line unless
 * header=false. */
static void save_table(mq_state *S, const char *path, const mq_table *t, mq_value header,
                       char delim) {
  bool head = header.type == MQ_NONE || (header.type == MQ_BOOL && header.as.b);
  if (header.type != MQ_NONE && header.type != MQ_BOOL)
    mq_error(S, "save_csv: a table's header is its column names: header= is true or false");
  mq_csv_column *cols = mq_scratch(S, (size_t)(t->ncols ? t->ncols : 1) * sizeof *cols);
  for (int j = 0; j < t->ncols; j++) {
    cols[j].name = t->names[j];
    cols[j].kind = t->kinds[j];
    cols[j].x = t->kinds[j] == MQ_CSV_TEXT ? NULL : mq_as_tensor(t->cols[j]);
    cols[j].text = t->kinds[j] == MQ_CSV_TEXT ? mq_as_list(t->cols[j]) : NULL;
  }
  size_t len;
  char *text = mq_csv_encode_columns(S, cols, t->ncols, t->nrows, head, delim, &len);
  mq_file_write(S, path, "save_csv", text, len);
}

static mq_value lib_save_csv(mq_state *S, mq_value *args) {
  const char *path = arg_path(S, args[0], "save_csv");
  char delim = arg_delim(S, args[3], "save_csv");
  if (mq_is_obj(args[1], MQ_O_TABLE)) {
    save_table(S, path, mq_as_table(args[1]), args[2], delim);
    return mq_none();
  }
  mq_tensor *x = mq_arg_tensor(S, args[1], "x");
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
    {"load_csv(path, header=true, delimiter=\",\", na=none, usecols=none, dtype=none, "
     "comment=none, skiprows=none, na_values=none, tensor=false)",
     lib_load_csv,
     "a CSV file as a table of named columns: ints int64, other numbers float64 (dtype= "
     "float32 or float64: every column numbers of it), ISO dates int64 days, datetimes int64 "
     "seconds, else text; missing cells (\"\", \"NA\", ..., na_values= more) masked; "
     "comment=\"#\", skiprows=, usecols= names, indices, ranges; tensor=true: the old "
     "[x, names] (float32); see docs/IO.md",
     MQ_BK_NONE, 0},
    {"save_csv(path, x, header=none, delimiter=\",\")", lib_save_csv,
     "write a table (header=false: no names line) or a 1-D or 2-D tensor as CSV: masked-out "
     "cells empty, floats exact, dates ISO; for a tensor header= a list of column names",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
