/* diag.h - source texts and jq-style diagnostics: "file:line:col: error:
 * message", then the source line and carets under the span. */
#ifndef MQ_DIAG_H
#define MQ_DIAG_H

#include "state.h"

/* A source text that compiled code refers to, so a function defined in a
 * REPL line can still show that line in a runtime error much later. Each
 * function made from it holds a reference, and so does the eval or import
 * compiling it; the last release frees it, so a host that evaluates
 * millions of lines keeps only the ones whose functions live on. Every
 * live source is on S->sources (freed at masq_close whatever the counts). */
typedef struct mq_source {
  struct mq_source *next, *prev;
  int refs;
  char *name; /* "script.masq", "<expr>", "<stdin>" */
  char *text; /* NUL-terminated copy */
  size_t len;
} mq_source;

/* Copies [text] and registers it on S->sources, with one reference: the
 * caller's. */
MQ_INTERNAL mq_source *mq_source_new(mq_state *S, const char *name, const char *text,
                                     size_t len);
static inline void mq_source_retain(const mq_source *src) {
  if (src) ((mq_source *)src)->refs++;
}
/* Drops a reference; the last one unlinks and frees the source. */
MQ_INTERNAL void mq_source_release(mq_state *S, const mq_source *src);
MQ_INTERNAL void mq_source_free_all(mq_state *S);

/* Appends a rendered diagnostic to [out]:
 *
 *   name:3:19: error: unexpected ')', expecting an expression
 *       softmax(masked(x, ), 0)
 *                         ^
 *
 * The caret run covers span.col .. span.end_col-1 (at least one caret; cut at
 * the end of the line). Tabs in the source line are kept in the padding so
 * carets line up. [color]: ANSI bold/red. */
MQ_INTERNAL void mq_diag_render(mq_state *S, mq_buf *out, const mq_source *src, mq_span span,
                                const char *severity, const char *message, bool color);

/* Records the state's last error (S->err) from a message and optional span;
 * renders it. */
MQ_INTERNAL void mq_diag_set_error(mq_state *S, masq_status st, const mq_source *src,
                                   const mq_span *span, const char *message);

#endif
