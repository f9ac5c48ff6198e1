/* print.h - tensors as text: torch's repr of strided tensors (print.c) and
 * of sparse ones (sparse_print.c), the one line :vars shows, and the rows
 * of the two tensor object kinds (kinds.c), through which core frees,
 * prints and tests tensors without knowing them. Statistics at a glance
 * (summary, describe) are summary.h's. */
#ifndef MQ_PRINT_H
#define MQ_PRINT_H

#include "../sparse/sparse.h"

/* Appends the printed form: "MaskedTensor(...)" for masked tensors, torch's
 * "tensor(...)" for plain ones. [color]: masked-out entries dim (ANSI). */
MQ_INTERNAL void mq_tensor_format(mq_state *S, mq_buf *b, const mq_tensor *t, bool color);
/* torch's _tensor_str: the bracketed elements of plain [t] alone ("[]" if
 * it is empty), continuation lines indented by [indent]. */
MQ_INTERNAL void mq_tensor_format_body(mq_state *S, mq_buf *b, const mq_tensor *t, int indent);
/* torch's _add_suffixes: appends ", suffix" for each of [suffixes] to the
 * text written since [start], wrapping at the line width (always before
 * the first when [force_newline]) to [indent], then the closing ')'. */
MQ_INTERNAL void mq_format_suffixes(mq_state *S, mq_buf *b, size_t start, int indent,
                                    bool force_newline, int nsuf, const char *const *suffixes);
/* "float32 tensor (2, 3), masked" for :vars. */
MQ_INTERNAL void mq_tensor_summary(mq_state *S, mq_buf *b, const mq_tensor *t);

/* torch's repr: "tensor(indices=..., values=..., size=..., nnz=..., layout=...)"
 * for a plain one; a masked one prints densified as MaskedTensor(...) when
 * it has at most MQ_SPARSE_PRINT_DENSE elements, else as its data and mask. */
#define MQ_SPARSE_PRINT_DENSE ((int64_t)1 << 22)
MQ_INTERNAL void mq_sparse_format(mq_state *S, mq_buf *b, const mq_tensor *t, bool color);

/* Set the rows of the tensor object kind, MQ_O_TENSOR (freeing, printing
 * with the summary line above a large tensor, truthiness: one valid
 * element, non-zero), and of the sparse kind, MQ_O_SPARSE (core/value.h). */
MQ_INTERNAL void mq_tensor_init_kind(mq_state *S);
MQ_INTERNAL void mq_sparse_init_kind(mq_state *S);

#endif
