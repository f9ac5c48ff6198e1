/* summary.h - a tensor's statistics at a glance (summary.c): the one-line
 * summary that large tensors print above their body and summary(x)
 * returns, and the per-column table of describe(x). */
#ifndef MQ_SUMMARY_H
#define MQ_SUMMARY_H

#include "../tensor/tensor.h"

/* Appends "MaskedTensor[1000, 1000] float32 · 62.3% valid · min -3.1 max
 * 4.2 mean 0.010 std 1.0 · 3 NaN, 1 inf" (plain tensors: "Tensor[...]",
 * no validity). Statistics are over the valid finite entries; NaN and inf
 * among the valid entries are counted instead. */
MQ_INTERNAL void mq_summary_line(mq_state *S, mq_buf *b, const mq_tensor *t);

/* Appends describe's table: count, mean, std, min, 25%, 50%, 75%, max of
 * the valid entries of each column, as pandas' DataFrame.describe. A 1-D
 * [t] is one column; a 2-D one has a column per entry of the dim not
 * reduced (dim 0, the default, reduces down the rows); more dims: the last
 * dim's entries are the columns. [names] (n of them, or NULL) head the
 * columns. */
MQ_INTERNAL void mq_describe(mq_state *S, mq_buf *b, mq_tensor *t, int dim,
                             const mq_string *const *names, int n);

/* The q-quantile (0 <= q <= 1) of [n] sorted values, interpolated linearly
 * as numpy's quantile (method "linear", also torch's): the same arithmetic,
 * so the same bits in float64. */
MQ_INTERNAL double mq_quantile_sorted(const double *v, int64_t n, double q);

#endif
