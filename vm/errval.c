/* errval.c - error values (vm/errval.h). */
#include "errval.h"

mq_errval *mq_errval_new(mq_state *S, const char *message, size_t len, const mq_source *src,
                         mq_span span) {
  mq_string *m = mq_string_new(S, message, len);
  mq_errval *e = mq_alloc(S, sizeof *e);
  e->hdr.rc = 1;
  e->hdr.type = MQ_O_ERROR;
  e->message = NULL;
  e->src = NULL;
  e->span = span;
  mq_pool_own(S, &e->hdr); /* frees e (fields NULL) if the pool cannot grow */
  e->message = m;
  m->hdr.rc++;
  e->src = src;
  mq_source_retain(src);
  return e;
}

static const char *const field_names[] = {"message", "line", "col", "file"};

bool mq_errval_is_field(const char *name) {
  for (size_t i = 0; i < sizeof field_names / sizeof *field_names; i++)
    if (strcmp(name, field_names[i]) == 0) return true;
  return false;
}

bool mq_errval_field(mq_state *S, const mq_errval *e, const char *name, mq_value *out) {
  bool known = e->span.line > 0;
  if (strcmp(name, "message") == 0) *out = mq_objv(e->message);
  else if (strcmp(name, "line") == 0) *out = known ? mq_int(e->span.line) : mq_none();
  else if (strcmp(name, "col") == 0) *out = known ? mq_int(e->span.col) : mq_none();
  else if (strcmp(name, "file") == 0)
    *out = e->src && e->src->name ? mq_objv(mq_string_new(S, e->src->name, strlen(e->src->name)))
                                  : mq_none();
  else return false;
  return true;
}

void mq_errval_raise(mq_state *S, const mq_errval *e) {
  /* a message with a NUL byte is cut there, as every error message is */
  mq_raise_at(S, e->src, e->span, e->message->chars);
}

static void errval_free(mq_state *S, mq_obj *o) {
  mq_errval *e = (mq_errval *)o;
  if (e->message) mq_obj_release(S, &e->message->hdr);
  mq_source_release(S, e->src);
  mq_free(S, e, sizeof *e);
}

/* <error at file:3:5: message> */
static void errval_format(mq_state *S, mq_buf *b, mq_obj *o) {
  const mq_errval *e = (const mq_errval *)o;
  mq_buf_puts(S, b, "<error");
  if (e->span.line > 0)
    mq_buf_printf(S, b, " at %s:%d:%d", e->src && e->src->name ? e->src->name : "?", e->span.line,
                  e->span.col);
  mq_buf_puts(S, b, ": ");
  mq_buf_putn(S, b, e->message->chars, e->message->len);
  mq_buf_putc(S, b, '>');
}

void mq_errval_init_kind(mq_state *S) {
  S->kinds[MQ_O_ERROR] = (mq_kind){errval_free, errval_format, NULL, NULL, NULL};
}
