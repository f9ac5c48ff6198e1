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

/* pandas' describe() numbers of each column of [t]'s valid entries: count,
 * mean, std (ddof 1), min, 25%, 50%, 75%, max (mq_describe_names), NaN
 * where undefined; MQ_DESCRIBE_STATS doubles a column, *ncols columns.
 * A 1-D [t] is one column; 2-D: its columns (dim 0) or rows (dim 1);
 * more dims: the last dim's entries are the columns. */
enum { MQ_DESCRIBE_STATS = 8 };
MQ_INTERNAL const char *const mq_describe_names[MQ_DESCRIBE_STATS];
MQ_INTERNAL double *mq_describe_stats(mq_state *S, mq_tensor *t, int dim, int64_t *ncols);

/* The q-quantile (0 <= q <= 1) of [n] sorted values, interpolated linearly
 * as numpy's quantile (method "linear", also torch's): the same arithmetic,
 * so the same bits in float64. */
MQ_INTERNAL double mq_quantile_sorted(const double *v, int64_t n, double q);

#endif
