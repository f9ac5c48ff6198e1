/* diag.c - source texts and caret diagnostics. */
#include "diag.h"

mq_source *mq_source_new(mq_state *S, const char *name, const char *text, size_t len) {
  mq_source *src = mq_calloc(S, sizeof *src);
  src->refs = 1;
  src->next = S->sources; /* reachable at once: freed at close even if we fail below */
  if (S->sources) S->sources->prev = src;
  S->sources = src;
  src->name = mq_strdup(S, name);
  src->text = mq_alloc(S, len + 1);
  memcpy(src->text, text, len);
  src->text[len] = '\0';
  src->len = len;
  return src;
}

static void source_free(mq_state *S, mq_source *src) {
  mq_strfree(S, src->name);
  if (src->text) mq_free(S, src->text, src->len + 1);
  mq_free(S, src, sizeof *src);
}

void mq_source_release(mq_state *S, const mq_source *csrc) {
  mq_source *src = (mq_source *)csrc;
  if (!src || --src->refs > 0) return;
  if (src->prev) src->prev->next = src->next;
  else S->sources = src->next;
  if (src->next) src->next->prev = src->prev;
  source_free(S, src);
}

void mq_source_free_all(mq_state *S) {
  while (S->sources) {
    mq_source *src = S->sources;
    S->sources = src->next;
    source_free(S, src);
  }
}

/* Start and length of 1-based line [line] in [src]. */
static const char *line_at(const mq_source *src, int line, size_t *len) {
  const char *p = src->text, *end = src->text + src->len;
  for (int l = 1; l < line && p < end; l++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) return NULL;
    p = nl + 1;
  }
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  *len = (size_t)((nl ? nl : end) - p);
  if (*len && p[*len - 1] == '\r') (*len)--;
  return p;
}

/* Columns a terminal gives the code point [c]: 2 for the East Asian wide
 * and fullwidth ranges and emoji, 0 for combining marks and zero-width
 * characters, 1 otherwise (the ranges of Unicode's EastAsianWidth W/F that
 * matter for source text; the C library's wcwidth would need a locale). */
static int code_width(uint32_t c) {
  static const uint32_t zero[][2] = {
      {0x0300, 0x036F}, {0x200B, 0x200F}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}};
  static const uint32_t wide[][2] = {
      {0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},
      {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
      {0xFE30, 0xFE4F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
      {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD}};
  for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
    if (c >= zero[i][0] && c <= zero[i][1]) return 0;
  for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
    if (c >= wide[i][0] && c <= wide[i][1]) return 2;
  return 1;
}

/* Length in bytes of the character at s[0, n) (an invalid byte is one
 * character) and, in *width, its columns; a tab counts as one here (it is
 * copied, so it lines up in both lines whatever the tab stops). */
static size_t char_at(const char *s, size_t n, int *width) {
  const unsigned char *u = (const unsigned char *)s;
  size_t len = u[0] < 0x80 ? 1 : (u[0] >> 5) == 6 ? 2 : (u[0] >> 4) == 14 ? 3 : (u[0] >> 3) == 30 ? 4 : 1;
  uint32_t c = len == 1 ? u[0] : len == 2 ? u[0] & 0x1Fu : len == 3 ? u[0] & 0x0Fu : u[0] & 0x07u;
  if (len > n) len = 1;
  for (size_t i = 1; i < len; i++) {
    if ((u[i] & 0xC0) != 0x80) {
      len = 1;
      c = u[0];
      break;
    }
    c = c << 6 | (u[i] & 0x3Fu);
  }
  *width = len == 1 ? 1 : code_width(c);
  return len;
}

/* Columns of line[from, to). */
static size_t columns(const char *line, size_t from, size_t to) {
  size_t cols = 0;
  int w;
  while (from < to) {
    from += char_at(line + from, to - from, &w);
    cols += (size_t)w;
  }
  return cols;
}

/* The excerpt shown of a long line is at most this many columns wide (with
 * the 4 of indent, an 80-column terminal never wraps it); the caret gets
 * DIAG_LEFT columns of what comes before it. */
enum { DIAG_WIDTH = 76, DIAG_LEFT = 24 };

/* Byte offset in [line] after skipping [cols] columns from [from]. */
static size_t skip_columns(const char *line, size_t len, size_t from, size_t cols) {
  int w;
  while (from < len) {
    size_t n = char_at(line + from, len - from, &w);
    if ((size_t)w > cols) break;
    cols -= (size_t)w;
    from += n;
  }
  return from;
}

/* The source line and the carets under bytes [col, end) of it: a window of
 * a long line around the caret, "…" where it is cut; the caret line copies
 * tabs and gives a wide character two columns, so the carets stand under
 * the text they mean. */
static void render_excerpt(mq_state *S, mq_buf *out, const char *line, size_t len, size_t col,
                           size_t end, const char *red, const char *reset) {
  static const char ellipsis[] = "\xe2\x80\xa6";
  size_t from = 0, to = len;
  int w;
  if (columns(line, 0, len) > DIAG_WIDTH) {
    size_t before = columns(line, 0, col);
    if (before > DIAG_LEFT) from = skip_columns(line, len, 0, before - DIAG_LEFT);
    to = skip_columns(line, len, from, DIAG_WIDTH - (from > 0) - 1);
    if (to < col + 1 && col < len) to = col + 1;
    if (to >= len) {
      /* The end is in sight: show as much before the caret as fits. */
      to = len;
      if (from > 0) {
        size_t tail = columns(line, from, len);
        if (tail < DIAG_WIDTH - 1) from = skip_columns(line, len, 0, columns(line, 0, len) - (DIAG_WIDTH - 1));
      }
    }
  }
  mq_buf_puts(S, out, "    ");
  if (from > 0) mq_buf_puts(S, out, ellipsis);
  mq_buf_putn(S, out, line + from, to - from);
  if (to < len) mq_buf_puts(S, out, ellipsis);
  mq_buf_puts(S, out, "\n    ");
  if (from > 0) mq_buf_putc(S, out, ' ');
  for (size_t i = from; i < col && i < to;) {
    size_t n = char_at(line + i, to - i, &w);
    if (line[i] == '\t') mq_buf_putc(S, out, '\t');
    else
      for (int k = 0; k < w; k++) mq_buf_putc(S, out, ' ');
    i += n;
  }
  mq_buf_puts(S, out, red);
  if (col >= to) {
    mq_buf_putc(S, out, '^'); /* past the end of the line: one caret */
  } else {
    if (end > to) end = to;
    for (size_t i = col; i < end;) {
      size_t n = char_at(line + i, end - i, &w);
      for (int k = 0; k < (w ? w : 1); k++) mq_buf_putc(S, out, '^');
      i += n;
    }
  }
  mq_buf_puts(S, out, reset);
  mq_buf_putc(S, out, '\n');
}

void mq_diag_render(mq_state *S, mq_buf *out, const mq_source *src, mq_span span,
                    const char *severity, const char *message, bool color) {
  const char *bold = color ? "\x1b[1m" : "", *red = color ? "\x1b[1;31m" : "",
             *reset = color ? "\x1b[0m" : "";
  if (src && span.line > 0) {
    mq_buf_printf(S, out, "%s%s:%d:%d:%s %s%s:%s %s\n", bold, src->name, span.line, span.col,
                  reset, red, severity, reset, message);
    size_t len;
    const char *line = line_at(src, span.line, &len);
    if (!line) return;
    size_t col = (size_t)(span.col > 0 ? span.col - 1 : 0);
    if (col > len) col = len;
    size_t end = span.end_col > span.col ? (size_t)(span.end_col - 1) : col + 1;
    if (end > len) end = len > col ? len : col + 1;
    render_excerpt(S, out, line, len, col, end, red, reset);
  } else {
    mq_buf_printf(S, out, "%s%s:%s %s\n", red, severity, reset, message);
  }
}

void mq_diag_set_error(mq_state *S, masq_status st, const mq_source *src, const mq_span *span,
                       const char *message) {
  /* Copy first: [message] may point into err_message itself. */
  mq_buf msg = {0};
  mq_buf_puts(S, &msg, message);
  mq_buf_free(S, &S->err_message);
  S->err_message = msg;
  S->err_rendered.len = 0;
  mq_diag_render(S, &S->err_rendered, src, span ? *span : (mq_span){0, 0, 0}, "error",
                 msg.data, S->cfg.color);
  mq_strfree(S, S->err_chunk);
  S->err_chunk = src ? mq_strdup(S, src->name) : NULL;
  S->err.status = st;
  S->err.message = S->err_message.data;
  S->err.rendered = S->err_rendered.data;
  S->err.chunkname = S->err_chunk;
  S->err.line = span ? span->line : 0;
  S->err.column = span ? span->col : 0;
  S->err.end_column = span ? span->end_col : 0;
}
