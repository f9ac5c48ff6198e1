/* sparse_print.c - the printed forms of sparse tensors, as torch's repr. */
#include "print.h"

#include <stdio.h>

/* "name=tensor(<body>)" with the body's continuation lines under its first
 * element, and torch's ", size=..." after an empty body. */
static void part(mq_state *S, mq_buf *b, const char *name, const mq_tensor *t, int indent) {
  mq_buf_printf(S, b, "%s=tensor(", name);
  mq_tensor_format_body(S, b, t, indent + (int)strlen(name) + 8);
  if (t->numel == 0) mq_buf_printf(S, b, ", size=%s", mq_shape_str(S, t->ndim, t->shape));
  mq_buf_putc(S, b, ')');
}

static void format_plain_sparse(mq_state *S, mq_buf *b, const mq_tensor *t) {
  static const char prefix[] = "tensor(";
  const int indent = (int)sizeof prefix - 1;
  const mq_sparse *sp = t->sparse;
  size_t start = b->len;
  mq_buf_puts(S, b, prefix);
  if (t->layout != MQ_LAYOUT_COO) {
    bool csc = t->layout == MQ_LAYOUT_CSC;
    part(S, b, csc ? "ccol_indices" : "crow_indices", sp->crow, indent);
    mq_buf_printf(S, b, ",\n%*s", indent, "");
    part(S, b, csc ? "row_indices" : "col_indices", sp->indices, indent);
  } else {
    part(S, b, "indices", sp->indices, indent);
  }
  mq_buf_printf(S, b, ",\n%*s", indent, "");
  part(S, b, "values", sp->values, indent);
  char sfx[4][64];
  const char *sfxp[4] = {sfx[0], sfx[1], sfx[2], sfx[3]};
  int n = 0;
  snprintf(sfx[n++], sizeof sfx[0], "size=%s", mq_shape_str(S, t->ndim, t->shape));
  snprintf(sfx[n++], sizeof sfx[0], "nnz=%lld", (long long)sp->nnz);
  if (t->dtype == MQ_DT_F64) snprintf(sfx[n++], sizeof sfx[0], "dtype=float64");
  snprintf(sfx[n++], sizeof sfx[0], "layout=%s", mq_layout_name((mq_layout)t->layout));
  /* torch starts a COO tensor's suffixes on a line of their own, not a CSR's */
  mq_format_suffixes(S, b, start, indent, t->layout == MQ_LAYOUT_COO, n, sfxp);
}

void mq_sparse_format(mq_state *S, mq_buf *b, const mq_tensor *t, bool color) {
  if (!t->mask) {
    format_plain_sparse(S, b, t);
  } else if (t->numel <= MQ_SPARSE_PRINT_DENSE) {
    /* torch.masked prints a sparse MaskedTensor densified */
    mq_tensor_format(S, b, mq_sparse_to_dense(S, (mq_tensor *)t), color);
  } else {
    mq_buf_printf(S, b, "MaskedTensor(%s, size=%s, nnz=%lld, count=%lld)",
                  mq_layout_name((mq_layout)t->layout), mq_shape_str(S, t->ndim, t->shape),
                  (long long)t->sparse->nnz, (long long)mq_sparse_count(S, t));
  }
}
