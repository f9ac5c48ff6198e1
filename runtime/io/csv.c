/* csv.c - CSV files to tables of typed, masked columns (or the old
 * (rows, columns) float tensor) and back.
 *
 * A hand-written scanner rather than libcsv (Debian's libcsv-dev): libcsv
 * reports no positions, so file:line:column errors would mean feeding it
 * one byte per call and tracking every field's start beside it, and its
 * allocator hook (realloc_func) takes no context pointer, so its buffers
 * could neither count against the state's memory limit nor go with the
 * pool on an error without global state. The whole job here is two loops
 * over bytes already in memory (RFC 4180: fields split by the delimiter,
 * double quotes around a field that holds the delimiter, quotes or line
 * breaks, a quote inside written twice), three passes over the bytes, which
 * are never written: the first counts the records, so the table is made
 * once at its size (memory in proportion to the file: its bytes, the
 * table, and a few bytes a column), the second checks the rows' shapes and
 * finds what each column's cells all are (int64, float, ISO date or
 * datetime, else text), the third reads the cells into the columns.
 *
 * Decisions (docs/IO.md): blank lines are skipped, as pandas and libcsv
 * do; a lone CR ends a line as CRLF and LF do; spaces and tabs around a
 * cell are ignored when it is read as a number or compared with the na
 * strings (not in header names); a cell is a number if strtod/strtof reads
 * all of it and it is decimal (no hex, no "nan(...)"), so "inf", "-inf"
 * and "nan" are numbers unless na lists them; a column is int64 when
 * every valid cell is an integer that fits, so 19580329 stays exact. */
#include "csv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../core/checked.h"

/* --- the scanner ----------------------------------------------------------------- */

typedef struct scan {
  mq_state *S;
  const mq_csv_opts *o;
  const uint8_t *p;
  size_t n, i, line_start;
  int64_t line;
} scan;

/* One field: where its text is and where it starts. A quoted field's text
 * is s[0..raw) with every "" standing for one quote (len bytes once
 * unescaped); nothing is written into the file's bytes, so every pass
 * reads the same text. */
typedef struct field {
  const uint8_t *s;
  size_t len, raw;
  bool quoted;
  int64_t line, col;         /* where it starts */
  int64_t end_line, end_col; /* just past its end */
} field;

static int64_t col_at(const scan *sc, size_t i) { return (int64_t)(i - sc->line_start) + 1; }

static MQ_NORETURN void fail_at(scan *sc, int64_t line, int64_t col, const char *msg,
                                const char *arg) {
  mq_error(sc->S, "%s: %s:%lld:%lld: %s%s", sc->o->who, sc->o->file, (long long)line,
           (long long)col, msg, arg ? arg : "");
}

/* Consumes the line break at sc->i (CRLF, LF or a lone CR). */
static void eat_newline(scan *sc) {
  if (sc->p[sc->i] == '\r' && sc->i + 1 < sc->n && sc->p[sc->i + 1] == '\n') sc->i++;
  sc->i++;
  sc->line++;
  sc->line_start = sc->i;
}

static bool at_break(const scan *sc) {
  return sc->i < sc->n && (sc->p[sc->i] == '\r' || sc->p[sc->i] == '\n');
}

static bool at_comment(const scan *sc) {
  return sc->o->comment && sc->i < sc->n && sc->p[sc->i] == (uint8_t)sc->o->comment;
}

/* Skips to the line break ending a comment (not past it). */
static void skip_comment(scan *sc) {
  while (sc->i < sc->n && !at_break(sc)) {
    if ((sc->i & 0xffff) == 0xffff) mq_check_interrupt(sc->S);
    sc->i++;
  }
}

static bool read_field(scan *sc, field *f);

/* Skips blank lines, comment lines and the lines skiprows= names; false
 * at the end of the input. */
static bool next_record(scan *sc) {
  for (;;) {
    if (at_comment(sc)) skip_comment(sc);
    if (at_break(sc)) {
      eat_newline(sc);
      continue;
    }
    if (sc->i >= sc->n) return false;
    int64_t k = sc->line - 1;
    if (k < sc->o->skip_first || (k < sc->o->nskip_line && sc->o->skip_line[k])) {
      field f;
      while (!read_field(sc, &f)) mq_poll(sc->S);
      continue;
    }
    return true;
  }
}

/* Reads one field into *f; true if it was the last of its record (the
 * record's line break, and a comment before it, are consumed). */
static bool read_field(scan *sc, field *f) {
  const uint8_t *p = sc->p;
  const char d = sc->o->delim, cm = sc->o->comment;
  f->line = sc->line;
  f->col = col_at(sc, sc->i);
  f->quoted = sc->i < sc->n && p[sc->i] == '"';
  if (f->quoted) {
    size_t start = ++sc->i, w = 0;
    for (;;) {
      if (sc->i >= sc->n)
        fail_at(sc, f->line, f->col, "unterminated quoted field (the quote opened here)", NULL);
      if (((sc->i - start) & 0xffff) == 0xffff) mq_check_interrupt(sc->S); /* a long field */
      uint8_t c = p[sc->i];
      if (c == '"') {
        if (sc->i + 1 < sc->n && p[sc->i + 1] == '"') {
          w++;
          sc->i += 2;
          continue;
        }
        break;
      }
      w++;
      if (c == '\n' || (c == '\r' && !(sc->i + 1 < sc->n && p[sc->i + 1] == '\n'))) {
        sc->i++;
        sc->line++;
        sc->line_start = sc->i;
      } else {
        sc->i++;
      }
    }
    f->s = p + start;
    f->raw = sc->i - start;
    f->len = w;
    sc->i++; /* the closing quote */
    if (sc->i < sc->n && p[sc->i] != d && !at_break(sc) && !at_comment(sc))
      fail_at(sc, sc->line, col_at(sc, sc->i),
              "unexpected character after a closing quote (a quote inside a quoted field is "
              "written twice: \"\")",
              NULL);
  } else {
    size_t start = sc->i;
    while (sc->i < sc->n && p[sc->i] != d && p[sc->i] != '\r' && p[sc->i] != '\n' &&
           !(cm && p[sc->i] == (uint8_t)cm)) {
      if (((sc->i - start) & 0xffff) == 0xffff) mq_check_interrupt(sc->S);
      sc->i++;
    }
    f->s = p + start;
    f->len = f->raw = sc->i - start;
  }
  f->end_line = sc->line;
  f->end_col = col_at(sc, sc->i);
  if (sc->i < sc->n && p[sc->i] == d) {
    sc->i++;
    return false;
  }
  if (at_comment(sc)) skip_comment(sc);
  if (sc->i < sc->n) eat_newline(sc);
  return true;
}

/* A field's text, unescaped: the file's own bytes unless a doubled quote
 * must become one ([tmp] then holds it; it grows as needed). */
typedef struct textbuf {
  uint8_t *s;
  size_t cap;
} textbuf;

static const uint8_t *field_text(mq_state *S, const field *f, textbuf *tmp) {
  if (f->len == f->raw) return f->s;
  if (tmp->cap < f->len) {
    tmp->cap = mq_ck_zmul(S, f->len, 2, "a CSV field");
    tmp->s = mq_scratch(S, tmp->cap);
  }
  for (size_t r = 0, w = 0; r < f->raw; r++) {
    tmp->s[w++] = f->s[r];
    if (f->s[r] == '"') r++; /* "" is one quote */
  }
  return tmp->s;
}

/* --- cells ------------------------------------------------------------------------- */

static void trim(const uint8_t **s, size_t *len) {
  while (*len && (**s == ' ' || **s == '\t')) (*s)++, (*len)--;
  while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t')) (*len)--;
}

static bool is_na(const mq_csv_opts *o, const uint8_t *s, size_t len) {
  for (int k = 0; k < o->nna; k++)
    if (o->na[k]->len == len && memcmp(o->na[k]->chars, s, len) == 0) return true;
  return false;
}

/* Decimal digits, signs, a point and exponents, or a spelling of inf/nan. */
static bool numeric_chars(const char *t) {
  const char *u = t + (*t == '+' || *t == '-');
  static const char *const words[] = {"inf", "infinity", "nan"};
  for (size_t k = 0; k < sizeof words / sizeof *words; k++) {
    size_t m = strlen(words[k]), j = 0;
    while (j < m && u[j] && (u[j] | 0x20) == words[k][j]) j++;
    if (j == m && !u[j]) return true;
  }
  for (; *t; t++)
    if (!((*t >= '0' && *t <= '9') || *t == '.' || *t == 'e' || *t == 'E' || *t == '+' ||
          *t == '-'))
      return false;
  return true;
}

/* The cell as a number; false if it is not one. */
static bool parse_number(const uint8_t *s, size_t len, mq_dtype dt, double *v) {
  char t[80];
  if (len == 0 || len >= sizeof t) return false;
  memcpy(t, s, len);
  t[len] = '\0';
  if (!numeric_chars(t)) return false;
  char *end;
  *v = dt == MQ_DT_F32 ? (double)strtof(t, &end) : strtod(t, &end);
  return end == t + len;
}

/* The cell as an int64 (an optional sign, then digits only); false if it
 * is not one or does not fit. */
static bool parse_int(const uint8_t *s, size_t len, int64_t *v) {
  size_t k = len && (s[0] == '+' || s[0] == '-');
  bool neg = len && s[0] == '-';
  if (k == len) return false;
  uint64_t acc = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; k < len; k++) {
    if (s[k] < '0' || s[k] > '9') return false;
    unsigned dgt = s[k] - '0';
    if (acc > (lim - dgt) / 10) return false;
    acc = acc * 10 + dgt;
  }
  *v = neg ? (int64_t)(0 - acc) : (int64_t)acc;
  return true;
}

int64_t mq_days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static bool digits(const uint8_t *s, int n, int *v) {
  *v = 0;
  for (int k = 0; k < n; k++) {
    if (s[k] < '0' || s[k] > '9') return false;
    *v = *v * 10 + (s[k] - '0');
  }
  return true;
}

/* An ISO date "YYYY-MM-DD" (days) or datetime "YYYY-MM-DD[T ]HH:MM[:SS]"
 * (seconds), a real day of the calendar; false otherwise. */
static bool parse_when(const uint8_t *s, size_t len, bool *datetime, int64_t *v) {
  int y, mo, d, h = 0, mi = 0, se = 0;
  if (len < 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
      !digits(s + 8, 2, &d) || mo < 1 || mo > 12 || d < 1)
    return false;
  static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap)) return false;
  int64_t days = mq_days_from_civil(y, mo, d);
  *datetime = len > 10;
  if (len == 10) {
    *v = days;
    return true;
  }
  if (len != 16 && len != 19) return false;
  if ((s[10] != 'T' && s[10] != ' ') || s[13] != ':' || !digits(s + 11, 2, &h) ||
      !digits(s + 14, 2, &mi) || h > 23 || mi > 59)
    return false;
  if (len == 19 && (s[16] != ':' || !digits(s + 17, 2, &se) || se > 59)) return false;
  *v = days * 86400 + h * 3600 + mi * 60 + se;
  return true;
}

mq_when mq_when_of(int64_t v, bool datetime) {
  mq_when w = {v, 0, 0, 0, 0, 0, 0};
  int64_t secs = 0;
  if (datetime) { /* floor division: -1 is 1969-12-31 23:59:59 */
    w.days = v / 86400 - (v % 86400 < 0);
    secs = v - w.days * 86400;
  }
  civil_from_days(w.days, &w.year, &w.month, &w.day);
  w.hour = (int)(secs / 3600);
  w.minute = (int)(secs / 60 % 60);
  w.second = (int)(secs % 60);
  return w;
}

int mq_csv_format_when(char *out, size_t cap, int64_t v, bool datetime) {
  mq_when w = mq_when_of(v, datetime);
  if (!datetime) return snprintf(out, cap, "%04lld-%02d-%02d", (long long)w.year, w.month, w.day);
  return snprintf(out, cap, "%04lld-%02d-%02d %02d:%02d:%02d", (long long)w.year, w.month, w.day,
                  w.hour, w.minute, w.second);
}

/* Length of the well-formed UTF-8 sequence at s (of n bytes), 0 if none. */
static size_t utf8_len(const uint8_t *s, size_t n) {
  size_t len = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (s[0] >= 0xf8 || len > n) return 0;
  for (size_t k = 1; k < len; k++)
    if ((s[k] & 0xc0) != 0x80) return 0;
  return len;
}

/* A cell or name for a message: quoted, escaped (a stray byte of a binary
 * file as \xNN, a line break as \n), cut after 40 bytes. */
static const char *cell_text(mq_state *S, const uint8_t *s, size_t len) {
  bool cut = len > 40;
  if (cut) len = 40;
  char *r = mq_scratch(S, len * 4 + 8), *w = r;
  *w++ = '"';
  for (size_t k = 0; k < len;) {
    uint8_t c = s[k];
    size_t u = c >= 0x80 ? utf8_len(s + k, len - k) : 0;
    if (u) {
      memcpy(w, s + k, u);
      w += u, k += u;
      continue;
    }
    if (c == '"' || c == '\\') *w++ = '\\', *w++ = (char)c;
    else if (c == '\n') *w++ = '\\', *w++ = 'n';
    else if (c == '\r') *w++ = '\\', *w++ = 'r';
    else if (c == '\t') *w++ = '\\', *w++ = 't';
    else if (c < 0x20 || c >= 0x7f) w += snprintf(w, 5, "\\x%02x", c);
    else *w++ = (char)c;
    k++;
  }
  *w++ = '"';
  strcpy(w, cut ? "..." : "");
  return r;
}

/* --- the table --------------------------------------------------------------------- */

/* A header name: its text, unescaped. Strings are made only for the
 * columns selected. */
typedef struct slice {
  const uint8_t *s;
  size_t len;
} slice;

/* The source column of each selected column, from usecols= and the header;
 * NULL without usecols= (column k is then the source's k). */
static int *resolve_columns(scan *sc, const slice *names, int width, int *nsel) {
  const mq_csv_opts *o = sc->o;
  mq_state *S = sc->S;
  if (!o->cols) {
    *nsel = width;
    return NULL;
  }
  int *src = mq_scratch(S, (size_t)(o->ncols ? o->ncols : 1) * sizeof *src);
  for (int k = 0; k < o->ncols; k++) {
    const mq_csv_col *c = &o->cols[k];
    if (!c->name) {
      int64_t ix = c->index < 0 ? c->index + width : c->index;
      if (ix < 0 || ix >= width)
        mq_error(S, "%s: %s: column %lld is out of range (the file has %d column%s)", o->who,
                 o->file, (long long)c->index, width, width == 1 ? "" : "s");
      src[k] = (int)ix;
      continue;
    }
    if (!names)
      mq_error(S, "%s: %s: usecols= names a column, but header=false gives no names (select by "
                  "index)", o->who, o->file);
    src[k] = -1;
    for (int j = 0; j < width && src[k] < 0; j++)
      if (names[j].len == c->name_len && memcmp(names[j].s, c->name, c->name_len) == 0)
        src[k] = j;
    if (src[k] < 0) {
      mq_buf *b = &S->out; /* the message lists what is there */
      b->len = 0;
      for (int j = 0; j < width && j < 20; j++) {
        if (j) mq_buf_puts(S, b, ", ");
        mq_buf_puts(S, b, cell_text(S, names[j].s, names[j].len));
      }
      if (width > 20) mq_buf_printf(S, b, " and %d more", width - 20);
      mq_error(S, "%s: %s has no column %s (it has %s)", o->who, o->file,
               cell_text(S, (const uint8_t *)c->name, c->name_len), width ? b->data : "none");
    }
  }
  *nsel = o->ncols;
  return src;
}

static const char *plural(int64_t n) { return n == 1 ? "" : "s"; }

/* The first pass: how many records there are and how many fields the
 * first has, read as the others read them, so the table is made once at
 * its size. An error stops it where the next pass will stop (there or
 * earlier), so it is left to that pass to report. */
typedef struct count_job {
  scan sc;
  int64_t records, fields; /* fields: of the first record, so far */
} count_job;

static void count_records(mq_state *S, void *ud) {
  count_job *j = ud;
  while (next_record(&j->sc)) {
    mq_poll(S);
    field f;
    for (bool last = false; !last;) {
      last = read_field(&j->sc, &f);
      if (j->records == 0) j->fields++;
    }
    j->records++;
  }
}

/* What a column's cells may all be: each cell clears the kinds it is not. */
enum { MAY_INT = 1, MAY_FLOAT = 2, MAY_DATE = 4, MAY_DATETIME = 8, SEEN = 16 };

/* The state of the passes over the rows, after the header. */
typedef struct rows_job {
  scan sc;
  const slice *names;
  size_t width;
  int nsel;
  const int32_t *to, *more; /* usecols=: source column -> selected ones */
  int64_t rows;
  uint8_t *may;             /* the infer pass: per selected column */
  mq_csv_column *cols;      /* the fill pass: the columns, or */
  mq_tensor *x, *valid;     /* the old (rows, columns) tensor */
  textbuf tmp;
} rows_job;

static MQ_NORETURN void not_a_number(rows_job *j, const field *f, size_t k) {
  mq_state *S = j->sc.S;
  const char *col = j->names ? cell_text(S, j->names[k].s, j->names[k].len) : NULL;
  mq_buf *m = &S->out;
  m->len = 0;
  const uint8_t *t = field_text(S, f, &j->tmp);
  mq_buf_printf(S, m, "%s is not a number nor one of the na strings", cell_text(S, t, f->len));
  if (col) mq_buf_printf(S, m, " (column %s)", col);
  fail_at(&j->sc, f->line, f->col, m->data, NULL);
}

/* One cell in the infer pass. */
static void infer_cell(rows_job *j, int32_t c, const uint8_t *s, size_t len, const field *f,
                       size_t k) {
  const mq_csv_opts *o = j->sc.o;
  uint8_t m = j->may[c];
  int64_t iv;
  double dv;
  bool dt;
  if (o->dtype != MQ_DT__ALL) { /* every column numbers: the first that is not stops */
    if (!parse_number(s, len, MQ_DT_F64, &dv)) not_a_number(j, f, k);
    return;
  }
  if ((m & MAY_INT) && !parse_int(s, len, &iv)) m &= (uint8_t)~MAY_INT;
  if ((m & MAY_FLOAT) && !parse_number(s, len, MQ_DT_F64, &dv)) m &= (uint8_t)~MAY_FLOAT;
  if (m & (MAY_DATE | MAY_DATETIME)) {
    if (!parse_when(s, len, &dt, &iv)) m &= (uint8_t)~(MAY_DATE | MAY_DATETIME);
    else if (dt) m &= (uint8_t)~MAY_DATE;
  }
  j->may[c] = m | SEEN;
}

/* The kind a column's cells agreed on, and its dtype. */
static mq_csv_kind kind_of(const mq_csv_opts *o, uint8_t m, mq_dtype *dt) {
  *dt = MQ_DT_I64;
  if (o->dtype != MQ_DT__ALL || !(m & SEEN)) { /* an empty column is float64, as pandas' */
    *dt = o->dtype != MQ_DT__ALL ? o->dtype : MQ_DT_F64;
    return MQ_CSV_NUM;
  }
  if (m & MAY_INT) return MQ_CSV_NUM;
  if (m & MAY_FLOAT) {
    *dt = MQ_DT_F64;
    return MQ_CSV_NUM;
  }
  if (m & MAY_DATE) return MQ_CSV_DATE;
  if (m & MAY_DATETIME) return MQ_CSV_DATETIME;
  return MQ_CSV_TEXT;
}

/* One cell in the fill pass, into row r of selected column c. */
static void fill_cell(rows_job *j, int32_t c, int64_t r, const uint8_t *s, size_t len, bool ok,
                      const uint8_t *raw, size_t rawlen) {
  mq_state *S = j->sc.S;
  if (j->x) {
    size_t at = (size_t)r * (size_t)j->nsel + (size_t)c;
    double v = 0;
    if (ok) parse_number(s, len, (mq_dtype)j->x->dtype, &v);
    if (j->x->dtype == MQ_DT_F32) ((float *)mq_tensor_data(j->x))[at] = (float)v;
    else ((double *)mq_tensor_data(j->x))[at] = v;
    ((uint8_t *)mq_tensor_data(j->valid))[at] = ok;
    return;
  }
  mq_csv_column *col = &j->cols[c];
  if (col->kind == MQ_CSV_TEXT) { /* text keeps its spaces */
    mq_value v = ok ? mq_objv(mq_string_new(S, (const char *)raw, rawlen)) : mq_none();
    mq_list_push(S, col->text, v);
    return;
  }
  mq_tensor *data = col->x;
  ((uint8_t *)mq_tensor_data(data->mask))[r] = ok;
  void *d = mq_tensor_data(data);
  int64_t iv = 0;
  double dv = 0;
  bool dt;
  if (col->kind != MQ_CSV_NUM) {
    if (ok) parse_when(s, len, &dt, &iv);
    ((int64_t *)d)[r] = iv;
  } else if (data->dtype == MQ_DT_I64) {
    if (ok) parse_int(s, len, &iv);
    ((int64_t *)d)[r] = iv;
  } else {
    if (ok) parse_number(s, len, (mq_dtype)data->dtype, &dv);
    if (data->dtype == MQ_DT_F32) ((float *)d)[r] = (float)dv;
    else ((double *)d)[r] = dv;
  }
}

/* A pass over the rows: [fill] false infers the columns' kinds and checks
 * the rows' shapes, true writes the cells. */
static void walk_rows(rows_job *j, bool fill) {
  scan *sc = &j->sc;
  mq_state *S = sc->S;
  const mq_csv_opts *o = sc->o;
  int64_t r = 0;
  while (next_record(sc)) {
    mq_poll(S);
    size_t k = 0;
    field lastf = {0};
    for (bool last = false; !last; k++) {
      field f;
      last = read_field(sc, &f);
      lastf = f;
      if (k >= j->width) {
        char what[96];
        snprintf(what, sizeof what, "this row has more fields than %s's %zu",
                 o->header ? "the header" : "the first row", j->width);
        fail_at(sc, f.line, f.col, what, NULL);
      }
      int32_t c = j->to ? j->to[k] : (int32_t)k;
      if (c < 0 || r == j->rows) continue; /* r == rows cannot be: checked below */
      const uint8_t *raw = field_text(S, &f, &j->tmp), *s = raw;
      size_t len = f.len;
      trim(&s, &len);
      bool ok = !is_na(o, s, len);
      for (; c >= 0; c = j->to ? j->more[c] : -1) {
        if (!fill && ok) infer_cell(j, c, s, len, &f, k);
        if (fill) fill_cell(j, c, r, s, len, ok, raw, f.len);
      }
    }
    if (k < j->width) {
      char what[160];
      snprintf(what, sizeof what, "this row has %zu field%s, but %s has %zu", k,
               plural((int64_t)k), o->header ? "the header" : "the first row", j->width);
      fail_at(sc, lastf.end_line, lastf.end_col, what, NULL);
    }
    if (r == j->rows) break;
    r++;
  }
  if (r != j->rows || next_record(sc))
    mq_error(S, "%s: %s: the rows are not the %lld the first pass counted (a bug in masq)",
             o->who, o->file, (long long)j->rows);
}

/* Makes the columns, empty, of the kinds the infer pass found. */
static void make_columns(rows_job *j, mq_csv_table *out) {
  mq_state *S = j->sc.S;
  const mq_csv_opts *o = j->sc.o;
  int64_t shape[2] = {j->rows, j->nsel};
  if (o->tensor) {
    j->x = mq_tensor_new(S, o->dtype == MQ_DT__ALL ? MQ_DT_F32 : o->dtype, 2, shape);
    j->valid = mq_tensor_new(S, MQ_DT_BOOL, 2, shape);
    return;
  }
  j->cols = out->cols = mq_scratch(S, (size_t)(j->nsel ? j->nsel : 1) * sizeof *j->cols);
  for (int c = 0; c < j->nsel; c++) {
    mq_csv_column *col = &j->cols[c];
    mq_dtype dt;
    col->kind = (uint8_t)kind_of(o, j->may[c], &dt);
    col->name = out->names ? out->names[c] : NULL;
    col->x = NULL;
    col->text = NULL;
    if (col->kind == MQ_CSV_TEXT) {
      if (j->rows > INT32_MAX) mq_error(S, "%s: %s: too many rows for a text column", o->who, o->file);
      col->text = mq_list_new(S, (int)j->rows);
      continue;
    }
    mq_tensor *d = mq_tensor_new(S, dt, 1, shape);
    mq_tensor_set_mask(S, d, mq_tensor_new(S, MQ_DT_BOOL, 1, shape));
    col->x = d;
  }
}

void mq_csv_parse(mq_state *S, const uint8_t *p, size_t n, const mq_csv_opts *o,
                  mq_csv_table *out) {
  scan sc = {S, o, p, n, 0, 0, 1};
  if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) sc.i = sc.line_start = 3;
  if (!next_record(&sc))
    mq_error(S, "%s: %s is empty (no header and no rows)", o->who, o->file);
  count_job cj = {sc, 0, 0};
  masq_status st = mq_protect(S, count_records, &cj);
  if (st != MASQ_OK && st != MASQ_ERR_RUNTIME) mq_rethrow(S, st); /* an interrupt */
  if (st != MASQ_OK && cj.records == 0) { /* the first record is bad: its error first */
    field f;
    while (!read_field(&sc, &f)) continue;
    mq_error(S, "%s: %s: a record the first pass could not read was read (a bug in masq)",
             o->who, o->file);
  }
  if (st != MASQ_OK) cj.records++; /* the record it failed in, read again below */
  if (cj.fields >= INT32_MAX) fail_at(&sc, sc.line, col_at(&sc, sc.i), "too many columns", NULL);
  rows_job j;
  memset(&j, 0, sizeof j);
  j.width = (size_t)cj.fields;
  j.rows = cj.records - o->header;
  /* the first record: the header, or the first row (which sets the width) */
  slice *names = NULL;
  if (o->header) {
    names = mq_scratch(S, j.width * sizeof *names);
    textbuf tmp = {NULL, 0};
    for (size_t c = 0; c < j.width; c++) {
      field f;
      read_field(&sc, &f);
      const uint8_t *t = field_text(S, &f, &tmp);
      if (t == tmp.s) { /* keep it: the buffer is reused */
        uint8_t *keep = mq_scratch(S, f.len ? f.len : 1);
        memcpy(keep, t, f.len);
        t = keep;
      }
      names[c] = (slice){t, f.len};
    }
  }
  int *src = resolve_columns(&sc, names, (int)j.width, &j.nsel);
  /* where each source column goes, with usecols=: to[k] is the first
   * selected column that reads source column k, more[c] the next after c
   * (a column may be selected twice), -1 none */
  if (src) {
    int32_t *to = mq_scratch(S, j.width * sizeof *to);
    int32_t *more = mq_scratch(S, (size_t)(j.nsel ? j.nsel : 1) * sizeof *more);
    memset(to, 0xff, j.width * sizeof *to);
    for (int c = j.nsel - 1; c >= 0; c--) {
      more[c] = to[src[c]];
      to[src[c]] = c;
    }
    j.to = to;
    j.more = more;
  }
  j.names = names;
  out->ncols = j.nsel;
  out->rows = j.rows;
  out->names = NULL;
  out->cols = NULL;
  out->x = NULL;
  if (names) {
    out->names = mq_scratch(S, (size_t)(j.nsel ? j.nsel : 1) * sizeof *out->names);
    for (int c = 0; c < j.nsel; c++) {
      const slice *nm = &names[src ? src[c] : c];
      out->names[c] = mq_string_new(S, (const char *)nm->s, nm->len);
    }
  }
  j.may = mq_scratch(S, (size_t)(j.nsel ? j.nsel : 1));
  memset(j.may, MAY_INT | MAY_FLOAT | MAY_DATE | MAY_DATETIME, (size_t)(j.nsel ? j.nsel : 1));
  j.sc = sc;
  /* the old tensor needs no kinds, only the first cell that is not a number */
  rows_job infer = j;
  if (o->tensor && o->dtype == MQ_DT__ALL) {
    mq_csv_opts numeric = *o;
    numeric.dtype = MQ_DT_F32;
    infer.sc.o = &numeric;
    walk_rows(&infer, false);
  } else {
    walk_rows(&infer, false);
  }
  make_columns(&j, out);
  walk_rows(&j, true);
  if (j.x) out->x = mq_masked(S, j.x, j.valid);
}

/* --- writing ------------------------------------------------------------------------- */

/* Text growing in scratch memory (an error leaves nothing behind). */
typedef struct sbuf {
  char *s;
  size_t len, cap;
} sbuf;

static void sb_put(mq_state *S, sbuf *b, const char *s, size_t n) {
  if (b->cap - b->len < n + 1) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n + 1) cap = mq_ck_zmul(S, cap, 2, "a CSV file");
    char *bigger = mq_scratch(S, cap);
    if (b->len) memcpy(bigger, b->s, b->len);
    b->s = bigger;
    b->cap = cap;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
}

/* The shortest text that reads back as v (in v's own precision), in
 * Python's repr style: fixed notation for exponents -4 to 15 ("-300",
 * "0.1"), scientific otherwise ("1e-05", "1.5e+20"). */
int mq_csv_shortest(char *t, size_t cap, double v, bool f32) {
  if (isnan(v)) return snprintf(t, cap, "nan");
  if (isinf(v)) return snprintf(t, cap, v < 0 ? "-inf" : "inf");
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(t, cap, "%.*e", prec - 1, v);
    if (f32 ? strtof(t, NULL) == (float)v : strtod(t, NULL) == v) break;
  }
  int exp10 = atoi(strchr(t, 'e') + 1);
  if (exp10 < -4 || exp10 >= 16) return snprintf(t, cap, "%.*g", prec, v);
  if (exp10 < prec - 1) return snprintf(t, cap, "%.*f", prec - 1 - exp10, v);
  /* an integer: the shortest digits then zeros ("41728690" for the float32
   * 41728688, which %.0f would spell out in full) */
  char digits[32];
  int nd = 0;
  for (const char *c = t; *c != 'e'; c++)
    if (*c >= '0' && *c <= '9') digits[nd++] = *c;
  int len = snprintf(t, cap, "%s%.*s", signbit(v) ? "-" : "", nd, digits);
  for (int z = nd; z <= exp10 && (size_t)len + 1 < cap; z++) t[len++] = '0';
  t[len] = '\0';
  return len;
}

/* A header name, quoted when a reader would otherwise split or trim it. */
static void put_text(mq_state *S, sbuf *b, const mq_string *s, char delim, bool empty_quoted);
static void put_name(mq_state *S, sbuf *b, const mq_string *s, char delim) {
  put_text(S, b, s, delim, true);
}

static void put_text(mq_state *S, sbuf *b, const mq_string *s, char delim, bool empty_quoted) {
  bool quote = empty_quoted && s->len == 0;
  for (size_t k = 0; k < s->len && !quote; k++) {
    char c = s->chars[k];
    quote = c == delim || c == '"' || c == '\n' || c == '\r' || c == '#'; /* # may be a comment */
  }
  /* spaces would be kept but look trimmed; a first name starting like a
   * BOM would lose it */
  if (s->len && (s->chars[0] == ' ' || s->chars[s->len - 1] == ' ' || s->chars[0] == '\xef'))
    quote = true;
  if (!quote) {
    sb_put(S, b, s->chars, s->len);
    return;
  }
  sb_put(S, b, "\"", 1);
  for (size_t k = 0; k < s->len; k++) sb_put(S, b, s->chars[k] == '"' ? "\"\"" : &s->chars[k], s->chars[k] == '"' ? 2 : 1);
  sb_put(S, b, "\"", 1);
}

char *mq_csv_encode(mq_state *S, mq_tensor *x, const mq_string *const *names, int n, char delim,
                    size_t *len) {
  int64_t rows = x->shape[0], cols = x->ndim == 2 ? x->shape[1] : 1;
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, x));
  if (mq_dtype_is_narrow((mq_dtype)d->dtype)) d = mq_astype(S, d, mq_dtype_compute((mq_dtype)d->dtype));
  mq_tensor *m = mq_contiguous(S, mq_get_mask(S, x));
  const uint8_t *mv = mq_tensor_data(m);
  sbuf b = {NULL, 0, 0};
  for (int j = 0; names && j < n; j++) {
    if (j) sb_put(S, &b, &delim, 1);
    put_name(S, &b, names[j], delim);
  }
  if (names) sb_put(S, &b, "\n", 1);
  char t[64];
  for (int64_t r = 0; r < rows; r++) {
    mq_poll(S);
    for (int64_t c = 0; c < cols; c++) {
      int64_t k = r * cols + c;
      if (c) sb_put(S, &b, &delim, 1);
      if (!mv[k]) {
        /* a one-column row of nothing would be a blank line, which readers skip */
        if (cols == 1) sb_put(S, &b, "\"\"", 2);
        continue;
      }
      int tl;
      switch ((mq_dtype)d->dtype) {
      case MQ_DT_BOOL: tl = snprintf(t, sizeof t, "%d", ((const uint8_t *)mq_tensor_data(d))[k] != 0); break;
      case MQ_DT_I64: tl = snprintf(t, sizeof t, "%lld", (long long)((const int64_t *)mq_tensor_data(d))[k]); break;
      case MQ_DT_F32: tl = mq_csv_shortest(t, sizeof t, ((const float *)mq_tensor_data(d))[k], true); break;
      default: tl = mq_csv_shortest(t, sizeof t, ((const double *)mq_tensor_data(d))[k], false); break;
      }
      sb_put(S, &b, t, (size_t)tl);
    }
    sb_put(S, &b, "\n", 1);
  }
  *len = b.len;
  return b.s ? b.s : mq_scratch(S, 1);
}

char *mq_csv_encode_columns(mq_state *S, const mq_csv_column *cols, int ncols, int64_t rows,
                            bool header, char delim, size_t *len) {
  sbuf b = {NULL, 0, 0};
  for (int j = 0; header && j < ncols; j++) {
    if (j) sb_put(S, &b, &delim, 1);
    put_name(S, &b, cols[j].name, delim);
  }
  if (header) sb_put(S, &b, "\n", 1);
  /* each column's data and mask, contiguous, in a dtype the writer reads */
  const void **data = mq_scratch(S, (size_t)(ncols ? ncols : 1) * sizeof *data);
  const uint8_t **mask = mq_scratch(S, (size_t)(ncols ? ncols : 1) * sizeof *mask);
  uint8_t *dts = mq_scratch(S, (size_t)(ncols ? ncols : 1));
  for (int j = 0; j < ncols; j++) {
    if (cols[j].kind == MQ_CSV_TEXT) continue;
    mq_tensor *d = mq_contiguous(S, mq_get_data(S, cols[j].x));
    if (mq_dtype_is_narrow((mq_dtype)d->dtype)) d = mq_astype(S, d, mq_dtype_compute((mq_dtype)d->dtype));
    data[j] = mq_tensor_data(d);
    dts[j] = d->dtype;
    mask[j] = mq_tensor_data(mq_contiguous(S, mq_get_mask(S, cols[j].x)));
  }
  char t[64];
  for (int64_t r = 0; r < rows; r++) {
    mq_poll(S);
    size_t line_start = b.len;
    for (int j = 0; j < ncols; j++) {
      if (j) sb_put(S, &b, &delim, 1);
      const mq_csv_column *c = &cols[j];
      if (c->kind == MQ_CSV_TEXT) {
        mq_value v = c->text->items[r];
        if (mq_is_obj(v, MQ_O_STRING)) put_text(S, &b, mq_as_string(v), delim, true);
        continue;
      }
      if (!mask[j][r]) continue;
      int tl;
      switch ((mq_dtype)dts[j]) {
      case MQ_DT_BOOL: tl = snprintf(t, sizeof t, "%d", ((const uint8_t *)data[j])[r] != 0); break;
      case MQ_DT_I64: {
        int64_t v = ((const int64_t *)data[j])[r];
        tl = c->kind == MQ_CSV_NUM ? snprintf(t, sizeof t, "%lld", (long long)v)
                                   : mq_csv_format_when(t, sizeof t, v, c->kind == MQ_CSV_DATETIME);
        break;
      }
      case MQ_DT_F32: tl = mq_csv_shortest(t, sizeof t, ((const float *)data[j])[r], true); break;
      default: tl = mq_csv_shortest(t, sizeof t, ((const double *)data[j])[r], false); break;
      }
      /* a whole float keeps a point ("3.0", as pandas writes it), so the
       * column reads back as floats, not ints */
      if (mq_dtype_is_float((mq_dtype)dts[j]) && strspn(t, "-0123456789") == (size_t)tl)
        tl += snprintf(t + tl, sizeof t - (size_t)tl, ".0");
      sb_put(S, &b, t, (size_t)tl);
    }
    /* a row of nothing would be a blank line, which readers skip */
    if (b.len == line_start + (size_t)(ncols ? ncols - 1 : 0)) sb_put(S, &b, "\"\"", 2);
    sb_put(S, &b, "\n", 1);
  }
  *len = b.len;
  return b.s ? b.s : mq_scratch(S, 1);
}
