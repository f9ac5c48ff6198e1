/* kinds.c - the rows of the tensor object kinds (core/value.h): how core
 * frees, prints and tests a strided or a sparse tensor, which it knows
 * only as an object. */
#include "print.h"
#include "summary.h"

static void tensor_free(mq_state *S, mq_obj *o) { mq_tensor_free(S, (mq_tensor *)o); }
/* How print() and the REPL show a tensor: torch's repr (mq_tensor_format),
 * and above the print threshold, when it starts a line (not print(a, b)'s
 * b), the summary line first (summary.h). */
static void tensor_format(mq_state *S, mq_buf *b, mq_obj *o) {
  mq_tensor *t = (mq_tensor *)o;
  if (t->numel > S->print.threshold && (b->len == 0 || b->data[b->len - 1] == '\n')) {
    mq_summary_line(S, b, t);
    mq_buf_putc(S, b, '\n');
  }
  mq_tensor_format(S, b, t, S->cfg.color);
}
static bool tensor_truthy(mq_state *S, mq_obj *o) {
  mq_tensor *t = (mq_tensor *)o;
  if (t->numel != 1)
    mq_error(S, "the truth value of a tensor with %lld elements is ambiguous (use all() or any())",
             (long long)t->numel);
  return mq_tensor_item(S, t) != 0.0;
}

void mq_tensor_init_kind(mq_state *S) {
  S->kinds[MQ_O_TENSOR] = (mq_kind){tensor_free, tensor_format, tensor_truthy, NULL, NULL};
}

/* The sparse kind's row: freed as any tensor (mq_tensor_free releases the stored
 * entries), printed as torch prints sparse tensors, and never a condition. */
static void sparse_kind_free(mq_state *S, mq_obj *o) { mq_tensor_free(S, (mq_tensor *)o); }
static void sparse_kind_format(mq_state *S, mq_buf *b, mq_obj *o) {
  mq_sparse_format(S, b, (const mq_tensor *)o, S->cfg.color);
}
static bool sparse_kind_truthy(mq_state *S, mq_obj *o) {
  mq_sparse_refuse(S, (const mq_tensor *)o, "condition");
}

void mq_sparse_init_kind(mq_state *S) {
  S->kinds[MQ_O_SPARSE] =
      (mq_kind){sparse_kind_free, sparse_kind_format, sparse_kind_truthy, NULL, NULL};
}
