/* table.c - tables (vm/table.h): columns, rows, and how a table prints. */
#include "table.h"

#include <math.h>
#include <stdio.h>

#include "../core/checked.h"
#include "../runtime/tensor/shape.h"
#include "suggest.h"

mq_table *mq_table_new(mq_state *S) {
  mq_table *t = mq_calloc(S, sizeof *t);
  t->hdr.rc = 1;
  t->hdr.type = MQ_O_TABLE;
  mq_pool_own(S, &t->hdr);
  return t;
}

/* The three arrays share one block of [cap] columns' room. */
static size_t block_size(int cap) {
  return (size_t)cap * (sizeof(mq_string *) + sizeof(mq_value) + 1);
}

/* Room for one more column, made before anything changes. */
static void grow(mq_state *S, mq_table *t) {
  if (t->ncols < t->cap) return;
  int cap = t->cap ? t->cap * 2 : 8;
  if (cap > 1 << 24) mq_error(S, "a table holds at most %d columns", 1 << 24);
  char *block = mq_alloc(S, block_size(cap));
  mq_value *cols = (mq_value *)block;
  mq_string **names = (mq_string **)(block + (size_t)cap * sizeof(mq_value));
  uint8_t *kinds = (uint8_t *)(block + (size_t)cap * (sizeof(mq_value) + sizeof(mq_string *)));
  if (t->ncols) {
    memcpy(names, t->names, (size_t)t->ncols * sizeof *names);
    memcpy(cols, t->cols, (size_t)t->ncols * sizeof *cols);
    memcpy(kinds, t->kinds, (size_t)t->ncols);
  }
  if (t->cap) mq_free(S, t->cols, block_size(t->cap));
  t->names = names, t->cols = cols, t->kinds = kinds, t->cap = cap;
}

static void table_free(mq_state *S, mq_obj *o) {
  mq_table *t = (mq_table *)o;
  for (int j = 0; j < t->ncols; j++) {
    mq_obj_release(S, &t->names[j]->hdr);
    mq_release(S, t->cols[j]);
  }
  if (t->cap) mq_free(S, t->cols, block_size(t->cap));
  mq_free(S, t, sizeof *t);
}

int mq_table_find_name(const mq_table *t, const char *s, size_t len) {
  for (int j = 0; j < t->ncols; j++)
    if (t->names[j]->len == len && memcmp(t->names[j]->chars, s, len) == 0) return j;
  return -1;
}

/* Whether a list is text: it holds a string or none (a list of numbers
 * becomes a tensor). */
static bool is_text(const mq_list *l) {
  for (int i = 0; i < l->len; i++)
    if (mq_is_obj(l->items[i], MQ_O_STRING) || l->items[i].type == MQ_NONE) return true;
  return false;
}

/* A copy of a text column, checked: strings and none only. */
static mq_list *text_copy(mq_state *S, const mq_list *l, const char *who) {
  mq_list *c = mq_list_new(S, l->len);
  for (int i = 0; i < l->len; i++) {
    mq_poll(S);
    mq_value v = l->items[i];
    if (v.type != MQ_NONE && !mq_is_obj(v, MQ_O_STRING))
      mq_error(S, "%s: a text column holds strings and none (missing), not %s (item %d)", who,
               mq_value_a_type_name(v), i);
    mq_list_push(S, c, v);
  }
  return c;
}

/* Column [j] (t->ncols: a new one) becomes [col] of [n] entries. */
static void put(mq_state *S, mq_table *t, int j, const mq_string *name, mq_value col, int64_t n,
                mq_csv_kind kind, const char *who) {
  bool only = t->ncols == 0 || (t->ncols == 1 && j == 0);
  if (!only && n != t->nrows)
    mq_error(S, "%s: column \"%s\" has %lld entr%s but the table has %lld row%s", who,
             name->chars, (long long)n, n == 1 ? "y" : "ies", (long long)t->nrows,
             t->nrows == 1 ? "" : "s");
  if (j == t->ncols) {
    grow(S, t);
    t->ncols++;
    t->names[j] = (mq_string *)name;
    t->names[j]->hdr.rc++;
  } else {
    mq_release(S, t->cols[j]);
  }
  mq_retain(col);
  t->cols[j] = col;
  t->kinds[j] = (uint8_t)kind;
  t->nrows = n;
}

void mq_table_set(mq_state *S, mq_table *t, const mq_string *name, mq_value col,
                  mq_csv_kind kind, const char *who) {
  int64_t n;
  if (mq_is_obj(col, MQ_O_LIST) && mq_as_list(col)->len && !is_text(mq_as_list(col)))
    col = mq_objv(mq_tensor_from_value(S, col, "column")); /* numbers: a tensor */
  if (mq_is_obj(col, MQ_O_LIST)) {
    col = mq_objv(text_copy(S, mq_as_list(col), who));
    kind = MQ_CSV_TEXT;
    n = mq_as_list(col)->len;
  } else if (mq_is_tensor(col)) {
    mq_tensor *x = mq_as_tensor(col);
    if (x->ndim != 1)
      mq_error(S, "%s: a table's column is 1-D (one entry a row), not %d-D %s", who, x->ndim,
               mq_shape_str(S, x->ndim, x->shape));
    if (kind == MQ_CSV_TEXT) kind = MQ_CSV_NUM;
    if (kind != MQ_CSV_NUM && x->dtype != MQ_DT_I64) kind = MQ_CSV_NUM;
    n = x->shape[0];
  } else {
    mq_error(S, "%s: a table's column is a 1-D tensor or a list of strings, not %s", who,
             mq_value_a_type_name(col));
  }
  int j = mq_table_find_name(t, name->chars, name->len);
  put(S, t, j < 0 ? t->ncols : j, name, col, n, kind, who);
}

void mq_table_add(mq_state *S, mq_table *t, const mq_string *name, mq_value col,
                  mq_csv_kind kind) {
  MQ_ASSERT(mq_table_find_name(t, name->chars, name->len) < 0);
  int64_t n = kind == MQ_CSV_TEXT ? mq_as_list(col)->len : mq_as_tensor(col)->shape[0];
  put(S, t, t->ncols, name, col, n, kind, "table");
}

int mq_table_find(mq_state *S, const mq_table *t, mq_value name, const char *who) {
  if (!mq_is_obj(name, MQ_O_STRING))
    mq_error(S, "%s: a table's columns are named by strings, not %s (rows: t[2:5], "
                "t[mask])", who, mq_value_a_type_name(name));
  const mq_string *s = mq_as_string(name);
  int j = mq_table_find_name(t, s->chars, s->len);
  if (j >= 0) return j;
  const char **cands = mq_scratch(S, (size_t)(t->ncols ? t->ncols : 1) * sizeof *cands);
  mq_buf *b = &S->out;
  b->len = 0;
  for (int k = 0; k < t->ncols; k++) {
    cands[k] = t->names[k]->chars;
    if (k < 20) {
      if (k) mq_buf_puts(S, b, ", ");
      mq_string_quote(S, b, t->names[k]);
    }
  }
  if (t->ncols > 20) mq_buf_printf(S, b, " and %d more", t->ncols - 20);
  const char *like = mq_suggest_word(s->chars, cands, t->ncols);
  char *have = mq_scratch(S, b->len + 5);
  memcpy(have, t->ncols ? b->data : "none", t->ncols ? b->len + 1 : 5);
  if (like)
    mq_error(S, "%s: the table has no column %s; did you mean \"%s\"? (it has %s)", who,
             mq_string_quoted(S, s), like, have);
  mq_error(S, "%s: the table has no column %s (it has %s)", who, mq_string_quoted(S, s), have);
}

mq_value mq_table_column(mq_state *S, const mq_table *t, int j) {
  if (t->kinds[j] == MQ_CSV_TEXT) return mq_objv(text_copy(S, mq_as_list(t->cols[j]), "table"));
  return t->cols[j];
}

/* A new table with t's names and kinds, each column made by [f]. */
typedef mq_value (*col_fn)(mq_state *S, mq_value col, bool text, void *ud);
static mq_table *map_columns(mq_state *S, const mq_table *t, col_fn f, void *ud) {
  mq_table *r = mq_table_new(S);
  for (int j = 0; j < t->ncols; j++) {
    mq_poll(S);
    mq_value c = f(S, t->cols[j], t->kinds[j] == MQ_CSV_TEXT, ud);
    mq_table_add(S, r, t->names[j], c, (mq_csv_kind)t->kinds[j]);
  }
  r->labelled = t->labelled;
  return r;
}

static mq_value take_col(mq_state *S, mq_value col, bool text, void *ud) {
  mq_tensor *idx = ud;
  const int64_t *ix = mq_tensor_data(idx);
  if (text) {
    const mq_list *l = mq_as_list(col);
    if (idx->numel > INT32_MAX) mq_error(S, "table: too many rows for a text column");
    mq_list *c = mq_list_new(S, (int)idx->numel);
    for (int64_t k = 0; k < idx->numel; k++) {
      if ((k & 0xffff) == 0xffff) mq_poll(S);
      mq_list_push(S, c, l->items[ix[k]]);
    }
    return mq_objv(c);
  }
  mq_index_item it;
  memset(&it, 0, sizeof it);
  it.kind = MQ_IX_TENSOR;
  it.tensor = idx;
  return mq_objv(mq_index(S, mq_as_tensor(col), &it, 1));
}

mq_table *mq_table_take(mq_state *S, const mq_table *t, mq_tensor *idx) {
  return map_columns(S, t, take_col, mq_contiguous(S, idx));
}

mq_table *mq_table_slice(mq_state *S, const mq_table *t, int64_t start, int64_t step,
                         int64_t len) {
  mq_tensor *idx = mq_arange_i64(S, start, start + len * step, step);
  mq_table *r = mq_table_take(S, t, idx);
  r->nrows = len;
  return r;
}

/* The rows where [m] (1-D bool, one a row) is valid and true. */
static mq_table *filter_rows(mq_state *S, const mq_table *t, mq_tensor *m) {
  if (m->ndim != 1 || m->shape[0] != t->nrows)
    mq_error(S, "a table's rows are picked by a 1-D bool tensor of its %lld rows, not %s",
             (long long)t->nrows, mq_shape_str(S, m->ndim, m->shape));
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, m));
  mq_tensor *v = mq_contiguous(S, mq_get_mask(S, m));
  const uint8_t *dd = mq_tensor_data(d), *vv = mq_tensor_data(v);
  int64_t n = 0;
  for (int64_t i = 0; i < t->nrows; i++) {
    mq_poll(S);
    n += dd[i] && vv[i];
  }
  mq_tensor *idx = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  int64_t *ix = mq_tensor_data(idx);
  for (int64_t i = 0, k = 0; i < t->nrows; i++)
    if (dd[i] && vv[i]) ix[k++] = i;
  mq_table *r = mq_table_take(S, t, idx);
  r->nrows = n;
  return r;
}

mq_value mq_table_index(mq_state *S, const mq_table *t, mq_value key) {
  if (mq_is_obj(key, MQ_O_STRING)) return mq_table_column(S, t, mq_table_find(S, t, key, "t[name]"));
  if (mq_is_obj(key, MQ_O_LIST)) { /* columns by name */
    const mq_list *l = mq_as_list(key);
    mq_table *r = mq_table_new(S);
    for (int k = 0; k < l->len; k++) {
      int j = mq_table_find(S, t, l->items[k], "t[[names]]");
      if (mq_table_find_name(r, t->names[j]->chars, t->names[j]->len) >= 0)
        mq_error(S, "t[[names]]: column \"%s\" is named twice", t->names[j]->chars);
      mq_table_add(S, r, t->names[j], t->cols[j], (mq_csv_kind)t->kinds[j]);
    }
    if (l->len == 0) r->nrows = t->nrows;
    return mq_objv(r);
  }
  if (key.type == MQ_INT) { /* one row, as a table of one row */
    int64_t i = key.as.i < 0 ? key.as.i + t->nrows : key.as.i;
    if (i < 0 || i >= t->nrows)
      mq_error(S, "row %lld is out of range for a table of %lld rows", (long long)key.as.i,
               (long long)t->nrows);
    return mq_objv(mq_table_slice(S, t, i, 1, 1));
  }
  if (mq_is_tensor(key)) {
    mq_tensor *k = mq_as_tensor(key);
    if (k->dtype == MQ_DT_BOOL) return mq_objv(filter_rows(S, t, k));
    if (k->dtype == MQ_DT_I64 && !k->mask && k->ndim == 1) {
      mq_tensor *c = mq_contiguous(S, k);
      int64_t *src = mq_tensor_data(c);
      mq_tensor *idx = mq_tensor_new(S, MQ_DT_I64, 1, c->shape);
      int64_t *ix = mq_tensor_data(idx);
      for (int64_t q = 0; q < c->numel; q++) {
        int64_t i = src[q] < 0 ? src[q] + t->nrows : src[q];
        if (i < 0 || i >= t->nrows)
          mq_error(S, "row %lld is out of range for a table of %lld rows", (long long)src[q],
                   (long long)t->nrows);
        ix[q] = i;
      }
      mq_table *r = mq_table_take(S, t, idx);
      r->nrows = c->numel;
      return mq_objv(r);
    }
  }
  mq_error(S, "a table is indexed by a column name (t[\"co2\"]), a list of names, a row "
              "slice (t[0:5]), a bool row mask (t[t[\"co2\"] > 300]) or row positions, not %s",
           mq_value_a_type_name(key));
}

mq_tensor *mq_table_to_tensor(mq_state *S, const mq_table *t, mq_string ***names, int *n) {
  mq_tensor **cs = mq_scratch(S, (size_t)(t->ncols ? t->ncols : 1) * sizeof *cs);
  mq_string **nm = mq_scratch(S, (size_t)(t->ncols ? t->ncols : 1) * sizeof *nm);
  int k = 0;
  for (int j = 0; j < t->ncols; j++) {
    if (t->kinds[j] == MQ_CSV_TEXT) continue;
    nm[k] = t->names[j];
    cs[k++] = mq_tensor_computable(S, mq_as_tensor(t->cols[j]));
  }
  if (names) *names = nm;
  *n = k;
  if (k == 0) {
    int64_t shape[2] = {t->nrows, 0};
    return mq_tensor_new(S, MQ_DT_F32, 2, shape);
  }
  mq_dtype dt = (mq_dtype)cs[0]->dtype;
  for (int j = 1; j < k; j++) dt = mq_promote_types(dt, (mq_dtype)cs[j]->dtype);
  for (int j = 0; j < k; j++) {
    cs[j] = mq_astype(S, cs[j], dt);
    if (!cs[j]->mask) /* masked throughout, so a missing cell stays visible */
      cs[j] = mq_masked(S, cs[j], mq_tensor_full(S, MQ_DT_BOOL, 1, cs[j]->shape, 1));
  }
  return mq_stack(S, k, cs, 1);
}

mq_tensor *mq_table_validity(mq_state *S, const mq_table *t, mq_list **names) {
  int64_t shape[2] = {t->nrows, t->ncols};
  mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, 2, shape);
  uint8_t *md = mq_tensor_data(m);
  *names = mq_list_new(S, t->ncols);
  for (int j = 0; j < t->ncols; j++) {
    mq_poll(S);
    mq_list_push(S, *names, mq_objv(t->names[j]));
    if (t->kinds[j] == MQ_CSV_TEXT) {
      const mq_list *l = mq_as_list(t->cols[j]);
      for (int64_t r = 0; r < t->nrows; r++) {
        mq_poll(S);
        md[r * t->ncols + j] = l->items[r].type != MQ_NONE;
      }
      continue;
    }
    mq_tensor *v = mq_contiguous(S, mq_get_mask(S, mq_as_tensor(t->cols[j])));
    const uint8_t *vd = mq_tensor_data(v);
    for (int64_t r = 0; r < t->nrows; r++) {
      mq_poll(S);
      md[r * t->ncols + j] = vd[r] != 0;
    }
  }
  return mq_masked(S, mq_tensor_full(S, MQ_DT_F32, 2, shape, 0), m);
}

/* --- printing ---------------------------------------------------------------------- */

/* Rows shown: all up to MAX_ROWS, else the first and last HEAD_ROWS. */
enum { MAX_ROWS = 30, HEAD_ROWS = 5 };
/* Columns shown: all up to MAX_COLS (the 58 of the World Bank's
 * fertility table fold into blocks), else the first and last HEAD_COLS. */
enum { MAX_COLS = 60, HEAD_COLS = 20 };

/* The decimals a float column shows: the fewest (1 to 6) that show every
 * shown value as %.6f does; -1 for %g when a value is too large or too
 * small for fixed notation. */
static int float_decimals(const double *v, const uint8_t *ok, int n) {
  int dec = 1;
  for (int k = 0; k < n; k++) {
    if (!ok[k] || !isfinite(v[k])) continue;
    double a = fabs(v[k]);
    if (a >= 1e15 || (a > 0 && a < 1e-4)) return -1;
    char t[64];
    int len = snprintf(t, sizeof t, "%.6f", v[k]);
    int d = 6;
    while (d > dec && t[len - 1 - (6 - d)] == '0') d--;
    if (d > dec) dec = d;
  }
  return dec;
}

/* Text as a cell shows it: control bytes as spaces (a line break would
 * break the table), cut after 40 characters (pandas cuts at 50) at a
 * character's start, with "...". */
static char *display_text(mq_state *S, const mq_string *s) {
  size_t len = 0;
  for (int chars = 0; len < s->len; len++) {
    if (((uint8_t)s->chars[len] & 0xc0) != 0x80 && chars++ == 40) break;
  }
  char *c = mq_scratch(S, len + 4);
  for (size_t q = 0; q < len; q++) {
    uint8_t ch = (uint8_t)s->chars[q];
    c[q] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
  }
  strcpy(c + len, len < s->len ? "..." : "");
  return c;
}

/* The text of column j's cells at rows [rows] (n of them). */
static char **column_cells(mq_state *S, const mq_table *t, int j, const int64_t *rows, int n) {
  char **cells = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *cells);
  if (t->kinds[j] == MQ_CSV_TEXT) {
    const mq_list *l = mq_as_list(t->cols[j]);
    for (int k = 0; k < n; k++) {
      mq_value v = l->items[rows[k]];
      if (v.type == MQ_NONE) {
        cells[k] = "--";
        continue;
      }
      cells[k] = display_text(S, mq_as_string(v));
    }
    return cells;
  }
  mq_tensor *x = mq_as_tensor(t->cols[j]);
  mq_tensor *d = mq_tensor_computable(S, mq_get_data(S, x));
  mq_tensor *m = mq_get_mask(S, x);
  double *v = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *v);
  int64_t *iv = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *iv);
  uint8_t *ok = mq_scratch(S, (size_t)(n ? n : 1));
  mq_tensor *dc = mq_contiguous(S, d), *mc = mq_contiguous(S, m);
  const uint8_t *mv = mq_tensor_data(mc);
  for (int k = 0; k < n; k++) {
    int64_t r = rows[k];
    ok[k] = mv[r] != 0;
    if (dc->dtype == MQ_DT_I64 || dc->dtype == MQ_DT_BOOL) {
      iv[k] = dc->dtype == MQ_DT_I64 ? ((const int64_t *)mq_tensor_data(dc))[r]
                                     : ((const uint8_t *)mq_tensor_data(dc))[r] != 0;
    } else {
      v[k] = dc->dtype == MQ_DT_F32 ? ((const float *)mq_tensor_data(dc))[r]
                                    : ((const double *)mq_tensor_data(dc))[r];
    }
  }
  int dec = mq_dtype_is_float((mq_dtype)dc->dtype) ? float_decimals(v, ok, n) : 0;
  for (int k = 0; k < n; k++) {
    char buf[64];
    if (!ok[k]) {
      cells[k] = "--";
      continue;
    }
    if (t->kinds[j] == MQ_CSV_DATE || t->kinds[j] == MQ_CSV_DATETIME)
      mq_csv_format_when(buf, sizeof buf, iv[k], t->kinds[j] == MQ_CSV_DATETIME);
    else if (dc->dtype == MQ_DT_BOOL) snprintf(buf, sizeof buf, "%s", iv[k] ? "true" : "false");
    else if (dc->dtype == MQ_DT_I64) snprintf(buf, sizeof buf, "%lld", (long long)iv[k]);
    else if (isnan(v[k])) snprintf(buf, sizeof buf, "nan");
    else if (isinf(v[k])) snprintf(buf, sizeof buf, "%s", v[k] < 0 ? "-inf" : "inf");
    else if (dec < 0) snprintf(buf, sizeof buf, "%.6g", v[k]);
    else snprintf(buf, sizeof buf, "%.*f", dec, v[k]);
    cells[k] = mq_scratch(S, strlen(buf) + 1);
    strcpy(cells[k], buf);
  }
  return cells;
}

/* Display width of UTF-8 text: its code points (each taken as one column). */
static int text_width(const char *s) {
  int w = 0;
  for (; *s; s++) w += ((uint8_t)*s & 0xc0) != 0x80;
  return w;
}

static void pad(mq_state *S, mq_buf *b, int n) {
  for (; n > 0; n--) mq_buf_putc(S, b, ' ');
}

/* The width a printed table may take: the line width set by
 * set_printoptions(linewidth=) if it is not the default, else the
 * terminal's (masq_config.columns), else the default 80. */
static int table_width(mq_state *S) {
  int w = S->print.linewidth;
  if (w == MQ_PRINTOPTS_DEFAULT.linewidth && S->cfg.columns) {
    int c = S->cfg.columns(S->cfg.columns_ud);
    if (c >= 20) w = c;
  }
  return w;
}

static void table_format(mq_state *S, mq_buf *b, mq_obj *o) {
  const mq_table *t = (const mq_table *)o;
  if (t->ncols == 0) {
    mq_buf_printf(S, b, "table: %lld row%s, no columns", (long long)t->nrows,
                  t->nrows == 1 ? "" : "s");
    return;
  }
  bool cut = t->nrows > MAX_ROWS;
  int n = cut ? 2 * HEAD_ROWS : (int)t->nrows;
  int64_t *rows = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *rows);
  for (int k = 0; k < n; k++) rows[k] = cut && k >= HEAD_ROWS ? t->nrows - 2 * HEAD_ROWS + k : k;
  /* a labelled table's first column takes the numbers' place, left-aligned */
  bool labelled = t->labelled && t->kinds[0] == MQ_CSV_TEXT;
  char **labels = labelled ? column_cells(S, t, 0, rows, n) : NULL;
  char lab[32];
  int lw = snprintf(lab, sizeof lab, "%lld", (long long)(t->nrows ? t->nrows - 1 : 0));
  for (int k = 0; labelled && k < n; k++)
    if (k == 0 || text_width(labels[k]) > lw) lw = text_width(labels[k]);
  if (cut && lw < 3) lw = 3; /* the "..." row */
  /* the columns shown: all up to MAX_COLS, else the first and last
   * HEAD_COLS with a column of "..." (-1) between */
  int total = t->ncols - labelled, m = total > MAX_COLS ? 2 * HEAD_COLS + 1 : total;
  int *show = mq_scratch(S, (size_t)(m ? m : 1) * sizeof *show);
  for (int q = 0; q < m; q++)
    show[q] = total <= MAX_COLS ? labelled + q
              : q < HEAD_COLS   ? labelled + q
              : q == HEAD_COLS  ? -1
                                : t->ncols - (m - q);
  char ***cells = mq_scratch(S, (size_t)(m ? m : 1) * sizeof *cells);
  char **heads = mq_scratch(S, (size_t)(m ? m : 1) * sizeof *heads);
  int *w = mq_scratch(S, (size_t)(m ? m : 1) * sizeof *w);
  for (int q = 0; q < m; q++) {
    mq_poll(S);
    if (show[q] < 0) {
      cells[q] = mq_scratch(S, (size_t)(n ? n : 1) * sizeof **cells);
      for (int k = 0; k < n; k++) cells[q][k] = "...";
      heads[q] = "...";
      w[q] = 3;
      continue;
    }
    cells[q] = column_cells(S, t, show[q], rows, n);
    heads[q] = display_text(S, t->names[show[q]]);
    w[q] = text_width(heads[q]);
    for (int k = 0; k < n; k++)
      if (text_width(cells[q][k]) > w[q]) w[q] = text_width(cells[q][k]);
  }
  /* blocks of the columns that fit the width, one under the other */
  int width = table_width(S);
  bool folded = false;
  for (int q0 = 0; q0 < m;) {
    int used = lw, q1 = q0;
    while (q1 < m && (q1 == q0 || used + 2 + w[q1] <= width)) used += 2 + w[q1++];
    if (q0) {
      mq_buf_puts(S, b, "\n\n");
      folded = true;
    }
    pad(S, b, lw);
    for (int q = q0; q < q1; q++) {
      pad(S, b, 2 + w[q] - text_width(heads[q]));
      mq_buf_puts(S, b, heads[q]);
    }
    for (int k = 0; k < n; k++) {
      mq_buf_putc(S, b, '\n');
      if (cut && k == HEAD_ROWS) {
        mq_buf_printf(S, b, "%-*s", lw, "...");
        for (int q = q0; q < q1; q++) mq_buf_printf(S, b, "  %*s", w[q], "...");
        mq_buf_putc(S, b, '\n');
      }
      if (labelled) {
        mq_buf_puts(S, b, labels[k]);
        pad(S, b, lw - text_width(labels[k]));
      } else {
        mq_buf_printf(S, b, "%*lld", lw, (long long)rows[k]);
      }
      for (int q = q0; q < q1; q++) {
        pad(S, b, 2 + w[q] - text_width(cells[q][k]));
        mq_buf_puts(S, b, cells[q][k]);
      }
    }
    q0 = q1;
  }
  if (cut || folded || total > MAX_COLS || t->nrows == 0)
    mq_buf_printf(S, b, "\n[%lld row%s x %d column%s]", (long long)t->nrows,
                  t->nrows == 1 ? "" : "s", t->ncols, t->ncols == 1 ? "" : "s");
}

void mq_table_shape(mq_state *S, mq_buf *b, const mq_table *t) {
  mq_buf_printf(S, b, "[%lld row%s x %d column%s]", (long long)t->nrows, t->nrows == 1 ? "" : "s",
                t->ncols, t->ncols == 1 ? "" : "s");
  for (int j = 0; j < t->ncols && b->len < 200; j++) {
    mq_buf_puts(S, b, j ? ", " : " ");
    mq_buf_puts(S, b, display_text(S, t->names[j]));
  }
}

void mq_table_init_kind(mq_state *S) {
  S->kinds[MQ_O_TABLE] = (mq_kind){table_free, table_format, NULL, NULL, NULL};
}
