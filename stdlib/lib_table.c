/* lib_table.c - builtins on tables (vm/table.h): columns, table() from a
 * dict, group (a builtin such as mean over the rows of each key), and the
 * table forms of sort, describe, summary and to_tensor, which those
 * builtins' own files hand tables to. */
#include <math.h>

#include "../core/dict.h"
#include "../runtime/io/csv.h"
#include "../runtime/print/summary.h"
#include "../runtime/tensor/msort.h"
#include "../runtime/tensor/shape.h"
#include "../vm/table.h"
#include "stdlib.h"

static mq_table *arg_table(mq_state *S, mq_value v, const char *fn) {
  if (!mq_is_obj(v, MQ_O_TABLE))
    mq_error(S, "%s: needs a table (load_csv(path) or table({...})), not %s", fn,
             mq_value_a_type_name(v));
  return mq_as_table(v);
}

static mq_value lib_columns(mq_state *S, mq_value *args) {
  const mq_table *t = arg_table(S, args[0], "columns");
  mq_list *l = mq_list_new(S, t->ncols);
  for (int j = 0; j < t->ncols; j++) mq_list_push(S, l, mq_objv(t->names[j]));
  return mq_objv(l);
}

/* dtypes(t): what each column holds, as pandas' df.dtypes says it. */
static mq_value lib_dtypes(mq_state *S, mq_value *args) {
  const mq_table *t = arg_table(S, args[0], "dtypes");
  mq_list *l = mq_list_new(S, t->ncols);
  for (int j = 0; j < t->ncols; j++) {
    const char *k = t->kinds[j] == MQ_CSV_DATE       ? "date"
                    : t->kinds[j] == MQ_CSV_DATETIME ? "datetime"
                    : t->kinds[j] == MQ_CSV_TEXT     ? "text"
                    : mq_dtype_name((mq_dtype)mq_as_tensor(t->cols[j])->dtype);
    mq_list_push(S, l, mq_objv(mq_string_new(S, k, strlen(k))));
  }
  return mq_objv(l);
}

/* table({"name": column, ...}): columns in the dict's order. */
static mq_value lib_table(mq_state *S, mq_value *args) {
  if (!mq_is_obj(args[0], MQ_O_DICT))
    mq_error(S, "table: needs a dict of name: column (a 1-D tensor or a list of strings), not %s",
             mq_value_a_type_name(args[0]));
  const mq_dict *d = mq_as_dict(args[0]);
  mq_table *t = mq_table_new(S);
  for (int i = 0; i < d->used; i++) {
    const mq_dentry *e = &d->entries[i];
    if (!mq_dentry_live(e)) continue;
    if (!mq_is_obj(e->key, MQ_O_STRING))
      mq_error(S, "table: column names are strings, not %s", mq_value_a_type_name(e->key));
    mq_table_set(S, t, mq_as_string(e->key), e->val, MQ_CSV_NUM, "table");
  }
  return mq_objv(t);
}

/* --- ordering rows by a column ------------------------------------------------ */

/* A column's keys as the sort and group read them: valid ones first. */
typedef struct keys {
  const uint8_t *ok;
  const int64_t *i;
  const double *f;
  const mq_list *text;
} keys;

static keys keys_of(mq_state *S, const mq_table *t, int j) {
  keys k = {NULL, NULL, NULL, NULL};
  if (t->kinds[j] == MQ_CSV_TEXT) {
    k.text = mq_as_list(t->cols[j]);
    return k;
  }
  mq_tensor *x = mq_tensor_computable(S, mq_as_tensor(t->cols[j]));
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, x));
  if (d->dtype == MQ_DT_BOOL) d = mq_astype(S, d, MQ_DT_I64);
  if (d->dtype == MQ_DT_F32) d = mq_astype(S, d, MQ_DT_F64);
  k.ok = mq_tensor_data(mq_contiguous(S, mq_get_mask(S, x)));
  if (d->dtype == MQ_DT_I64) k.i = mq_tensor_data(d);
  else k.f = mq_tensor_data(d);
  return k;
}

static bool key_valid(const keys *k, int64_t r) {
  return k->text ? k->text->items[r].type != MQ_NONE : k->ok[r] && !(k->f && isnan(k->f[r]));
}

/* <0, 0, >0 as row a's key is below, equal to, above row b's; missing keys
 * (masked, none, NaN) after every other, as pandas sorts them. */
static int key_cmp(const keys *k, int64_t a, int64_t b) {
  bool va = key_valid(k, a), vb = key_valid(k, b);
  if (va != vb) return va ? -1 : 1;
  if (!va) return 0;
  if (k->text) {
    const mq_string *x = mq_as_string(k->text->items[a]), *y = mq_as_string(k->text->items[b]);
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->chars, y->chars, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
  }
  if (k->i) return (k->i[a] > k->i[b]) - (k->i[a] < k->i[b]);
  return (k->f[a] > k->f[b]) - (k->f[a] < k->f[b]);
}

typedef struct order_ctx {
  const keys *k;
  bool desc;
} order_ctx;

/* descending reverses the valid keys only: missing ones stay last */
static bool row_before(const int64_t *a, const int64_t *b, const order_ctx *c) {
  int r = key_cmp(c->k, *a, *b);
  if (c->desc && key_valid(c->k, *a) && key_valid(c->k, *b)) r = -r;
  return r < 0;
}
#define ROW_BEFORE(x, y, ctx) row_before(x, y, ctx)
MQ_DEF_MSORT(sort_rows, int64_t, const order_ctx *, ROW_BEFORE)

/* The row positions in the order of column j (stable). */
static mq_tensor *row_order(mq_state *S, const mq_table *t, int j, bool desc, const keys *k) {
  mq_tensor *idx = mq_arange_i64(S, 0, t->nrows, 1);
  idx = mq_contiguous(S, idx);
  int64_t *a = mq_tensor_data(idx);
  order_ctx c = {k, desc};
  int64_t *tmp = mq_scratch(S, (size_t)(t->nrows ? t->nrows : 1) * sizeof *tmp);
  int64_t *r = sort_rows(S, a, tmp, t->nrows, &c);
  if (r != a) memcpy(a, r, (size_t)t->nrows * sizeof *a);
  (void)j;
  return idx;
}

mq_value mq_lib_table_sort(mq_state *S, mq_value *args) {
  const mq_table *t = mq_as_table(args[0]);
  if (!mq_is_obj(args[1], MQ_O_STRING))
    mq_error(S, "sort: a table is sorted by a column: sort(t, \"name\", descending=false)");
  int j = mq_table_find(S, t, args[1], "sort");
  keys k = keys_of(S, t, j);
  mq_table *r = mq_table_take(S, t, row_order(S, t, j, mq_arg_bool(S, args[2], "descending"), &k));
  r->nrows = t->nrows;
  return mq_objv(r);
}

/* --- group ------------------------------------------------------------------------- */

/* The value columns of group(): those named, or every numeric one but the key. */
static int *value_columns(mq_state *S, const mq_table *t, mq_value cols, int by, int *n) {
  int *v = mq_scratch(S, (size_t)(t->ncols + 1) * sizeof *v);
  *n = 0;
  if (cols.type == MQ_NONE) {
    for (int j = 0; j < t->ncols; j++)
      if (j != by && t->kinds[j] == MQ_CSV_NUM) v[(*n)++] = j;
    return v;
  }
  const mq_value *items = &cols;
  int len = 1;
  if (mq_is_obj(cols, MQ_O_LIST)) items = mq_as_list(cols)->items, len = mq_as_list(cols)->len;
  v = mq_scratch(S, (size_t)(len ? len : 1) * sizeof *v);
  for (int k = 0; k < len; k++) {
    v[k] = mq_table_find(S, t, items[k], "group");
    if (t->kinds[v[k]] == MQ_CSV_TEXT)
      mq_error(S, "group: column \"%s\" is text; its values cannot be reduced",
               t->names[v[k]]->chars);
  }
  *n = len;
  return v;
}

/* fn of one group's entries of a column: a number or a 0-d tensor. */
static mq_tensor *apply(mq_state *S, const mq_builtin *b, mq_tensor *part) {
  mq_value arg = mq_objv(part);
  mq_value r = mq_builtin_call(S, b, &arg, 1, 0, NULL, NULL);
  if (mq_is_number(r)) return mq_tensor_from_value(S, r, "result");
  if (!mq_is_tensor(r) || mq_as_tensor(r)->ndim != 0)
    mq_error(S, "group: %s of a group must give one number, not %s", b->name,
             mq_is_tensor(r) ? mq_shape_str(S, mq_as_tensor(r)->ndim, mq_as_tensor(r)->shape)
                             : mq_value_a_type_name(r));
  return mq_as_tensor(r);
}

static mq_value lib_group(mq_state *S, mq_value *args) {
  const mq_table *t = arg_table(S, args[0], "group");
  int by = mq_table_find(S, t, args[1], "group");
  if (!mq_is_obj(args[2], MQ_O_BUILTIN))
    mq_error(S, "group: fn must be a builtin that reduces a column to one number, such as "
                "mean, sum, count, std, median, amax; not %s",
             mq_value_a_type_name(args[2]));
  const mq_builtin *b = &S->builtins[((const mq_builtin_obj *)args[2].as.o)->index];
  int nv;
  int *vc = value_columns(S, t, args[3], by, &nv);
  keys k = keys_of(S, t, by);
  mq_tensor *order = row_order(S, t, by, false, &k);
  const int64_t *ord = mq_tensor_data(order);
  /* groups: runs of equal valid keys in the order; rows with a missing key
   * belong to none (pandas' dropna) */
  int64_t *starts = mq_scratch(S, (size_t)(t->nrows + 1) * sizeof *starts), ng = 0, end = 0;
  for (int64_t i = 0; i < t->nrows; i++) {
    if (!key_valid(&k, ord[i])) break;
    if (i == 0 || key_cmp(&k, ord[i - 1], ord[i]) != 0) starts[ng++] = i;
    end = i + 1;
  }
  starts[ng] = end;
  mq_tensor *first = mq_tensor_new(S, MQ_DT_I64, 1, &ng);
  for (int64_t g = 0; g < ng; g++) ((int64_t *)mq_tensor_data(first))[g] = ord[starts[g]];
  mq_table *r = mq_table_new(S);
  mq_table *keyt = mq_table_take(S, t, first);
  int kj = mq_table_find(S, keyt, mq_objv(t->names[by]), "group");
  mq_table_set(S, r, t->names[by], keyt->cols[kj], (mq_csv_kind)t->kinds[by], "group");
  mq_tensor **res = mq_scratch(S, (size_t)(ng ? ng : 1) * sizeof *res);
  for (int v = 0; v < nv; v++) {
    mq_tensor *col = mq_as_tensor(t->cols[vc[v]]);
    for (int64_t g = 0; g < ng; g++) {
      mq_poll(S);
      int64_t len = starts[g + 1] - starts[g];
      mq_tensor *idx = mq_tensor_new(S, MQ_DT_I64, 1, &len);
      memcpy(mq_tensor_data(idx), ord + starts[g], (size_t)len * sizeof(int64_t));
      mq_index_item it;
      memset(&it, 0, sizeof it);
      it.kind = MQ_IX_TENSOR;
      it.tensor = idx;
      res[g] = apply(S, b, mq_index(S, col, &it, 1));
    }
    mq_value out;
    if (ng == 0) {
      out = mq_objv(mq_tensor_new(S, MQ_DT_F64, 1, &ng));
    } else {
      mq_dtype dt = (mq_dtype)res[0]->dtype;
      for (int64_t g = 1; g < ng; g++) dt = mq_promote_types(dt, (mq_dtype)res[g]->dtype);
      for (int64_t g = 0; g < ng; g++) res[g] = mq_astype(S, res[g], dt);
      if (ng > INT32_MAX) mq_error(S, "group: too many groups");
      out = mq_objv(mq_stack(S, (int)ng, res, 0));
    }
    mq_table_set(S, r, t->names[vc[v]], out, MQ_CSV_NUM, "group");
  }
  r->nrows = ng;
  return mq_objv(r);
}

/* --- describe, summary, to_tensor of a table ------------------------------------- */

/* describe's table: a column "" of the statistics' names, then one float64
 * column per column described, masked where a statistic is undefined. */
mq_value mq_describe_table(mq_state *S, const double *st, int64_t ncol,
                           mq_string *const *names) {
  mq_table *r = mq_table_new(S);
  mq_list *label = mq_list_new(S, MQ_DESCRIBE_STATS);
  for (int s = 0; s < MQ_DESCRIBE_STATS; s++)
    mq_list_push(S, label, mq_objv(mq_string_new(S, mq_describe_names[s], strlen(mq_describe_names[s]))));
  mq_table_add(S, r, mq_string_new(S, "", 0), mq_objv(label), MQ_CSV_TEXT);
  r->labelled = true;
  int64_t n = MQ_DESCRIBE_STATS;
  for (int64_t c = 0; c < ncol; c++) {
    mq_poll(S);
    mq_tensor *x = mq_tensor_new(S, MQ_DT_F64, 1, &n), *m = mq_tensor_new(S, MQ_DT_BOOL, 1, &n);
    double *xd = mq_tensor_data(x);
    uint8_t *md = mq_tensor_data(m);
    for (int s = 0; s < MQ_DESCRIBE_STATS; s++) {
      xd[s] = st[c * MQ_DESCRIBE_STATS + s];
      /* undefined (no entries, or std of one) is missing; a valid NaN's
       * NaN statistics stay NaN */
      md[s] = !isnan(xd[s]) || (xd[0] > (s == 2 ? 1 : 0) && s != 0);
    }
    mq_string *name = names[c];
    mq_table_set(S, r, name, mq_objv(mq_masked(S, x, m)), MQ_CSV_NUM, "describe");
  }
  return mq_objv(r);
}

mq_value mq_lib_table_describe(mq_state *S, const mq_table *t) {
  mq_string **names = mq_scratch(S, (size_t)(t->ncols ? t->ncols : 1) * sizeof *names);
  double *st = mq_scratch(S, (size_t)(t->ncols ? t->ncols : 1) * MQ_DESCRIBE_STATS * sizeof *st);
  int64_t n = 0;
  for (int j = 0; j < t->ncols; j++) {
    if (t->kinds[j] != MQ_CSV_NUM) continue; /* numbers only, as pandas' default */
    int64_t one;
    double *s = mq_describe_stats(S, mq_tensor_computable(S, mq_as_tensor(t->cols[j])), 0, &one);
    memcpy(st + n * MQ_DESCRIBE_STATS, s, MQ_DESCRIBE_STATS * sizeof *st);
    names[n++] = t->names[j];
  }
  return mq_describe_table(S, st, n, names);
}

/* A date or datetime column's line: how many valid, the first and last. */
static void when_line(mq_state *S, mq_buf *b, mq_tensor *x, bool datetime) {
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, x));
  const uint8_t *ok = mq_tensor_data(mq_contiguous(S, mq_get_mask(S, x)));
  const int64_t *v = mq_tensor_data(d);
  int64_t n = 0, lo = 0, hi = 0;
  for (int64_t i = 0; i < d->numel; i++) {
    if (!ok[i]) continue;
    if (!n || v[i] < lo) lo = v[i];
    if (!n || v[i] > hi) hi = v[i];
    n++;
  }
  mq_buf_printf(S, b, "%s · %lld of %lld valid", datetime ? "datetime" : "date", (long long)n,
                (long long)d->numel);
  if (!n) return;
  char a[48], c[48];
  mq_csv_format_when(a, sizeof a, lo, datetime);
  mq_csv_format_when(c, sizeof c, hi, datetime);
  mq_buf_printf(S, b, " · %s to %s", a, c);
}

/* One line a column: its name, then summary's line (text: how many valid). */
mq_value mq_lib_table_summary(mq_state *S, const mq_table *t) {
  mq_buf *b = &S->out;
  b->len = 0;
  mq_buf_printf(S, b, "table: %lld row%s x %d column%s", (long long)t->nrows,
                t->nrows == 1 ? "" : "s", t->ncols, t->ncols == 1 ? "" : "s");
  int w = 0;
  for (int j = 0; j < t->ncols; j++)
    if ((int)t->names[j]->len > w) w = (int)t->names[j]->len;
  if (w > 24) w = 24;
  for (int j = 0; j < t->ncols; j++) {
    mq_poll(S);
    mq_buf_printf(S, b, "\n  %-*s  ", w, t->names[j]->chars);
    if (t->kinds[j] == MQ_CSV_TEXT) {
      const mq_list *l = mq_as_list(t->cols[j]);
      int64_t valid = 0;
      for (int i = 0; i < l->len; i++) valid += l->items[i].type != MQ_NONE;
      mq_buf_printf(S, b, "text · %lld of %d valid", (long long)valid, l->len);
      continue;
    }
    if (t->kinds[j] != MQ_CSV_NUM) {
      when_line(S, b, mq_as_tensor(t->cols[j]), t->kinds[j] == MQ_CSV_DATETIME);
      continue;
    }
    mq_summary_line(S, b, mq_as_tensor(t->cols[j]));
  }
  return mq_objv(mq_string_new(S, b->data, b->len));
}

/* isin(texts, values): which strings of a text column are among [values]
 * (a string or a list of them), as a bool tensor masked where the cell is
 * missing: the row mask of t[isin(t["station"], ["north", "east"])]. */
static mq_value lib_isin(mq_state *S, mq_value *args) {
  if (!mq_is_obj(args[0], MQ_O_LIST))
    mq_error(S, "isin: x must be a text column (a list of strings), not %s; for numbers "
                "compare: (x == 1) | (x == 2)", mq_value_a_type_name(args[0]));
  int nv = 0;
  const mq_string **vals = mq_arg_string_list(S, args[1], "isin", "values", &nv);
  mq_dict *set = mq_dict_new(S, nv);
  for (int k = 0; k < nv; k++) mq_dict_set(S, set, mq_objv((mq_string *)vals[k]), mq_bool(true));
  const mq_list *l = mq_as_list(args[0]);
  int64_t n = l->len;
  mq_tensor *r = mq_tensor_new(S, MQ_DT_BOOL, 1, &n), *m = mq_tensor_new(S, MQ_DT_BOOL, 1, &n);
  uint8_t *rd = mq_tensor_data(r), *md = mq_tensor_data(m);
  for (int i = 0; i < l->len; i++) {
    mq_poll(S);
    mq_value v = l->items[i];
    if (v.type != MQ_NONE && !mq_is_obj(v, MQ_O_STRING))
      mq_error(S, "isin: x must hold strings and none (missing), not %s (item %d)",
               mq_value_a_type_name(v), i);
    md[i] = v.type != MQ_NONE;
    rd[i] = md[i] && mq_dict_find(S, set, v) >= 0;
  }
  return mq_objv(mq_masked(S, r, m));
}

/* --- parts of dates ------------------------------------------------------------------ */

enum { P_YEAR, P_MONTH, P_DAY, P_WEEKDAY, P_DAYOFYEAR, P_HOUR, P_MINUTE, P_SECOND, P_N };
static const char *const part_names[P_N] = {"year", "month", "day", "weekday", "dayofyear",
                                            "hour", "minute", "second"};

/* One part of the date [v] (days since 1970-01-01, or seconds with [secs]). */
static int64_t date_part_of(int64_t v, bool secs, int part) {
  mq_when w = mq_when_of(v, secs);
  switch (part) {
  case P_YEAR: return w.year;
  case P_MONTH: return w.month;
  case P_DAY: return w.day;
  case P_WEEKDAY: return ((w.days % 7) + 7 + 3) % 7; /* 1970-01-01 was a Thursday; Monday is 0 */
  case P_DAYOFYEAR: return w.days - mq_days_from_civil(w.year, 1, 1) + 1;
  case P_HOUR: return w.hour;
  case P_MINUTE: return w.minute;
  default: return w.second;
  }
}

static mq_value lib_date_part(mq_state *S, mq_value *args) {
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  if (x->dtype != MQ_DT_I64)
    mq_error(S, "date_part: x must be int64 days (or seconds, seconds=true) as load_csv reads "
                "dates, not %s", mq_dtype_name((mq_dtype)x->dtype));
  if (!mq_is_obj(args[1], MQ_O_STRING))
    mq_error(S, "date_part: part must be a string such as \"year\", not %s",
             mq_value_a_type_name(args[1]));
  bool secs = mq_arg_bool(S, args[2], "seconds");
  int part = 0;
  while (part < P_N && !mq_string_is(mq_as_string(args[1]), part_names[part])) part++;
  if (part == P_N || (!secs && part >= P_HOUR))
    mq_error(S, "date_part: part must be one of year, month, day, weekday, dayofyear%s, not %s",
             secs ? ", hour, minute, second" : " (hour, minute, second with seconds=true)",
             mq_string_quoted(S, mq_as_string(args[1])));
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, x));
  mq_tensor *r = mq_tensor_new(S, MQ_DT_I64, d->ndim, d->shape);
  const int64_t *src = mq_tensor_data(d);
  int64_t *dst = mq_tensor_data(r);
  for (int64_t i = 0; i < d->numel; i++) {
    if ((i & 0xffff) == 0xffff) mq_poll(S);
    dst[i] = date_part_of(src[i], secs, part);
  }
  return mq_objv(x->mask ? mq_masked(S, r, mq_get_mask(S, x)) : r);
}

const mq_libfn mq_lib_table[] = {
    {"columns(t)", lib_columns, "the column names of table t, a list of strings (t.columns)",
     MQ_BK_NONE, 0},
    {"dtypes(t)", lib_dtypes,
     "what each column of table t holds, a list of strings: its dtype (\"int64\", "
     "\"float64\" ...), or \"date\" (int64 days since 1970-01-01), \"datetime\" (int64 "
     "seconds) or \"text\"",
     MQ_BK_NONE, 0},
    {"table(columns)", lib_table,
     "a table from a dict of name: column, each a 1-D tensor or list of numbers, or a list "
     "of strings (none: missing), all of one length",
     MQ_BK_NONE, 0},
    {"group(t, by, fn, columns=none)", lib_group,
     "a table of each value of column by (ascending; missing keys dropped) and fn (a builtin "
     "such as mean, sum, count, std, median) of the other numeric columns' entries in its "
     "rows (columns= picks them)",
     MQ_BK_NONE, 0},
    {"isin(x, values)", lib_isin,
     "true where the strings of text column x are among values (a string or a list of "
     "them), masked where x is none: t[isin(t[\"station\"], [\"north\", \"east\"])]",
     MQ_BK_NONE, 0},
    {"date_part(x, part, seconds=false)", lib_date_part,
     "a part of the dates x (int64 days since 1970-01-01, as load_csv reads ISO dates; "
     "seconds=true: datetimes' seconds) as int64, masked where x is: \"year\", \"month\", "
     "\"day\", \"weekday\" (Monday 0), \"dayofyear\"; with seconds, \"hour\", "
     "\"minute\", \"second\" too",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
