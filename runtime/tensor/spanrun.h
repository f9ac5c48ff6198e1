/* spanrun.h - running a costly elementwise kernel over the valid runs of a
 * padded tensor only (issue 31).
 *
 * A padding mask's rows are dense spans [lo, hi) (maskspan.h); a costly
 * op (gelu, erf, exp ...) over such a tensor spends most of its time on
 * the padding when the rows are short of valid entries. mq_span_plan_of
 * says whether skipping pays, from the mask's cached row spans alone (no
 * mask bytes read): every row with a valid entry must be all valid inside
 * its span, enough entries must be padding, and the valid runs long. Then
 * mq_span_run calls the kernel over each valid run (adjacent rows' runs
 * joined) and writes +0 over everything else. Any other mask (random,
 * time-major, all valid, none, no summary) gets no plan: the caller keeps
 * its ordinary loop over every entry. A skipped entry's data is not
 * meaningful (LANGUAGE.md); a valid entry gets the bits the kernel gives
 * it in the full loop, since elementwise kernels compute entry i from
 * entry i alone, whatever the run it is in. */
#ifndef MQ_SPANRUN_H
#define MQ_SPANRUN_H

#include "parallel.h"
#include "tensor.h"

typedef struct mq_span_plan {
  int64_t k;           /* valid runs (a long one cut into pieces) */
  int64_t n;           /* entries of the tensor */
  const int64_t *runs; /* run j is entries [runs[2j], runs[2j + 1]), ascending */
  int64_t valid;       /* entries inside the runs */
} mq_span_plan;

/* Whether [mask] (the mask of a contiguous tensor of [nd] dims [shape],
 * broadcasting to it) makes skipping pay; fills [P] then. Call on the
 * main thread. */
MQ_INTERNAL bool mq_span_plan_of(mq_state *S, const mq_tensor *mask, int nd, const int64_t *shape,
                                 mq_span_plan *P);

/* Runs fn(ctx, a, b, t) over the valid runs of [P] (entries of the
 * contiguous result [out] of [es]-byte entries), on the state's threads
 * for large tensors, and writes +0 bytes over the entries outside them. */
MQ_INTERNAL void mq_span_run(mq_state *S, const mq_span_plan *P, char *out, size_t es,
                             mq_range_fn fn, void *ctx);

#endif
