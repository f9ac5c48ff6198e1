/* csv.c - CSV tables to masked float tensors and back.
 *
 * A hand-written scanner rather than libcsv (Debian's libcsv-dev): libcsv
 * reports no positions, so file:line:column errors would mean feeding it
 * one byte per call and tracking every field's start beside it, and its
 * allocator hook (realloc_func) takes no context pointer, so its buffers
 * could neither count against the state's memory limit nor go with the
 * pool on an error without global state. The whole job here is two loops
 * over bytes already in memory (RFC 4180: fields split by the delimiter,
 * double quotes around a field that holds the delimiter, quotes or line
 * breaks, a quote inside written twice): the first counts the records, so
 * the table is made once at its size (memory in proportion to the file:
 * its bytes, the table, and a few bytes a column), the second unescapes
 * quoted fields in place and reads the cells into the table.
 *
 * Decisions (docs/IO.md): blank lines are skipped, as pandas and libcsv
 * do; a lone CR ends a line as CRLF and LF do; spaces and tabs around a
 * cell are ignored when it is read as a number or compared with the na
 * strings (not in header names); a cell is a number if strtod/strtof reads
 * all of it and it is decimal (no hex, no "nan(...)"), so "inf", "-inf"
 * and "nan" are numbers unless na lists them. */
#include "csv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../core/checked.h"

/* --- the scanner ----------------------------------------------------------------- */

typedef struct scan {
  mq_state *S;
  const mq_csv_opts *o;
  uint8_t *p;
  size_t n, i, line_start;
  int64_t line;
  bool dry; /* only counting: quoted fields are not unescaped */
} scan;

/* One field: its text (unescaped) and where it starts. */
typedef struct field {
  const uint8_t *s;
  size_t len;
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

/* Skips blank lines; false at the end of the input. */
static bool next_record(scan *sc) {
  while (at_break(sc)) eat_newline(sc);
  return sc->i < sc->n;
}

/* Reads one field into *f; true if it was the last of its record (the
 * record's line break is consumed). */
static bool read_field(scan *sc, field *f) {
  uint8_t *p = sc->p;
  const char d = sc->o->delim;
  f->line = sc->line;
  f->col = col_at(sc, sc->i);
  if (sc->i < sc->n && p[sc->i] == '"') {
    size_t w = ++sc->i, start = w;
    for (;;) {
      if (sc->i >= sc->n)
        fail_at(sc, f->line, f->col, "unterminated quoted field (the quote opened here)", NULL);
      if (((sc->i - start) & 0xffff) == 0xffff) mq_check_interrupt(sc->S); /* a long field */
      uint8_t c = p[sc->i];
      if (c == '"') {
        if (sc->i + 1 < sc->n && p[sc->i + 1] == '"') {
          if (!sc->dry) p[w] = '"';
          w++;
          sc->i += 2;
          continue;
        }
        sc->i++;
        break;
      }
      if (!sc->dry) p[w] = c;
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
    f->len = w - start;
    if (sc->i < sc->n && p[sc->i] != d && !at_break(sc))
      fail_at(sc, sc->line, col_at(sc, sc->i),
              "unexpected character after a closing quote (a quote inside a quoted field is "
              "written twice: \"\")",
              NULL);
  } else {
    size_t start = sc->i;
    while (sc->i < sc->n && p[sc->i] != d && p[sc->i] != '\r' && p[sc->i] != '\n') {
      if (((sc->i - start) & 0xffff) == 0xffff) mq_check_interrupt(sc->S);
      sc->i++;
    }
    f->s = p + start;
    f->len = sc->i - start;
  }
  f->end_line = sc->line;
  f->end_col = col_at(sc, sc->i);
  if (sc->i < sc->n && p[sc->i] == d) {
    sc->i++;
    return false;
  }
  if (sc->i < sc->n) eat_newline(sc);
  return true;
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

/* A header name: its text, unescaped in place in the file's bytes (later
 * fields never write before their own start). Strings are made only for
 * the columns selected. */
typedef struct slice {
  const uint8_t *s;
  size_t len;
} slice;

/* The source column of each selected column, from columns= and the header;
 * NULL without columns= (column k is then the source's k). */
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
      mq_error(S, "%s: %s: columns= names a column, but header=false gives no names (select by "
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
 * first has, read as the parse reads them (without unescaping), so the
 * table is made once at its size. An error stops it where the parse will
 * stop (there or earlier), so it is left to the parse to report. */
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

void mq_csv_parse(mq_state *S, uint8_t *p, size_t n, const mq_csv_opts *o, mq_csv_table *out) {
  scan sc = {S, o, p, n, 0, 0, 1, false};
  if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) sc.i = sc.line_start = 3;
  if (!next_record(&sc)) mq_error(S, "%s: %s is empty (no header and no rows)", o->who, o->file);
  count_job cj = {sc, 0, 0};
  cj.sc.dry = true;
  masq_status st = mq_protect(S, count_records, &cj);
  if (st != MASQ_OK && st != MASQ_ERR_RUNTIME) mq_rethrow(S, st); /* an interrupt */
  if (st != MASQ_OK && cj.records == 0) { /* the first record is bad: its error first */
    field f;
    while (!read_field(&sc, &f)) continue;
    mq_error(S, "%s: %s: a record the first pass could not read was read (a bug in masq)", o->who, o->file);
  }
  if (st != MASQ_OK) cj.records++; /* the record it failed in, read again below */
  if (cj.fields >= INT32_MAX) fail_at(&sc, sc.line, col_at(&sc, sc.i), "too many columns", NULL);
  size_t width = (size_t)cj.fields;
  int64_t rows = cj.records - o->header;
  /* the first record: the header, or the first row (which sets the width) */
  slice *names = NULL;
  if (o->header) {
    names = mq_scratch(S, width * sizeof *names);
    for (size_t c = 0; c < width; c++) {
      field f;
      read_field(&sc, &f);
      names[c] = (slice){f.s, f.len};
    }
  }
  int nsel;
  int *src = resolve_columns(&sc, names, (int)width, &nsel);
  /* where each source column goes, with columns=: to[k] is the first
   * selected column that reads source column k, more[j] the next after j
   * (a column may be selected twice), -1 none */
  int32_t *to = NULL, *more = NULL;
  if (src) {
    to = mq_scratch(S, width * sizeof *to);
    memset(to, 0xff, width * sizeof *to);
    more = mq_scratch(S, (size_t)(nsel ? nsel : 1) * sizeof *more);
    for (int j = nsel - 1; j >= 0; j--) {
      more[j] = to[src[j]];
      to[src[j]] = j;
    }
  }
  int64_t shape[2] = {rows, nsel}, r = 0;
  mq_tensor *x = mq_tensor_new(S, o->dtype, 2, shape), *valid = mq_tensor_new(S, MQ_DT_BOOL, 2, shape);
  float *xf = mq_tensor_data(x);
  double *xd = mq_tensor_data(x);
  uint8_t *xm = mq_tensor_data(valid);
  while (next_record(&sc)) {
    mq_poll(S);
    size_t k = 0;
    field lastf = {0};
    for (bool last = false; !last; k++) {
      field f;
      last = read_field(&sc, &f);
      lastf = f;
      if (k >= width) {
        char what[96];
        snprintf(what, sizeof what, "this row has more fields than %s's %zu",
                 o->header ? "the header" : "the first row", width);
        fail_at(&sc, f.line, f.col, what, NULL);
      }
      int32_t j = to ? to[k] : (int32_t)k;
      if (j < 0) continue;
      const uint8_t *s = f.s;
      size_t len = f.len;
      trim(&s, &len);
      bool ok = !is_na(o, s, len);
      double v = 0;
      if (ok && !parse_number(s, len, o->dtype, &v)) {
        const char *col =
            names ? cell_text(S, names[k].s, names[k].len) : NULL;
        mq_buf *m = &S->out;
        m->len = 0;
        mq_buf_printf(S, m, "%s is not a number nor one of the na strings", cell_text(S, f.s, f.len));
        if (col) mq_buf_printf(S, m, " (column %s)", col);
        fail_at(&sc, f.line, f.col, m->data, NULL);
      }
      if (r == rows) continue; /* cannot be: the count read the same records (checked below) */
      for (; j >= 0; j = to ? more[j] : -1) {
        size_t at = (size_t)r * (size_t)nsel + (size_t)j;
        if (o->dtype == MQ_DT_F32) xf[at] = (float)v;
        else xd[at] = v;
        xm[at] = ok;
      }
    }
    if (k < width) {
      char what[160];
      snprintf(what, sizeof what, "this row has %zu field%s, but %s has %zu", k, plural((int64_t)k),
               o->header ? "the header" : "the first row", width);
      fail_at(&sc, lastf.end_line, lastf.end_col, what, NULL);
    }
    if (r == rows) break;
    r++;
  }
  if (r != rows || next_record(&sc))
    mq_error(S, "%s: %s: the rows are not the %lld the first pass counted (a bug in masq)", o->who,
             o->file, (long long)rows);
  out->x = mq_masked(S, x, valid);
  out->ncols = nsel;
  out->names = NULL;
  if (names) {
    out->names = mq_scratch(S, (size_t)(nsel ? nsel : 1) * sizeof *out->names);
    for (int j = 0; j < nsel; j++) {
      const slice *nm = &names[src ? src[j] : j];
      out->names[j] = mq_string_new(S, (const char *)nm->s, nm->len);
    }
  }
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
static int shortest(char *t, size_t cap, double v, bool f32) {
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
static void put_name(mq_state *S, sbuf *b, const mq_string *s, char delim) {
  bool quote = s->len == 0;
  for (size_t k = 0; k < s->len && !quote; k++) {
    char c = s->chars[k];
    quote = c == delim || c == '"' || c == '\n' || c == '\r';
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
      case MQ_DT_F32: tl = shortest(t, sizeof t, ((const float *)mq_tensor_data(d))[k], true); break;
      default: tl = shortest(t, sizeof t, ((const double *)mq_tensor_data(d))[k], false); break;
      }
      sb_put(S, &b, t, (size_t)tl);
    }
    sb_put(S, &b, "\n", 1);
  }
  *len = b.len;
  return b.s ? b.s : mq_scratch(S, 1);
}
