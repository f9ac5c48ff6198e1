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
    mq_buf_puts(S, out, "    ");
    mq_buf_putn(S, out, line, len);
    mq_buf_puts(S, out, "\n    ");
    size_t col = (size_t)(span.col > 0 ? span.col - 1 : 0);
    if (col > len) col = len;
    for (size_t i = 0; i < col; i++) mq_buf_putc(S, out, line[i] == '\t' ? '\t' : ' ');
    size_t end = span.end_col > span.col ? (size_t)(span.end_col - 1) : col + 1;
    if (end > len) end = len > col ? len : col + 1;
    mq_buf_puts(S, out, red);
    for (size_t i = col; i < end; i++) mq_buf_putc(S, out, '^');
    mq_buf_puts(S, out, reset);
    mq_buf_putc(S, out, '\n');
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
