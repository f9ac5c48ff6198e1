/* spanrun.c - costly elementwise kernels over the valid runs of padded
 * rows (spanrun.h). */
#include <string.h>

#include "internal.h"
#include "maskspan.h"
#include "masksum.h"
#include "spanrun.h"

/* Skipping pays when at least this share of the entries is padding
 * (1/16): less, and the ordinary loop is as fast. */
#define MIN_SKIP_SHIFT 4
/* ... and the valid runs average at least this many entries: a kernel
 * call per run costs about as much as a few entries of gelu. */
#define MIN_AVG_RUN 32

bool mq_span_plan_of(mq_state *S, const mq_tensor *mask, int nd, const int64_t *shape,
                     mq_span_plan *P) {
  if (!mask || mask->ndim > nd || nd == 0) return false;
  bool same = mask->ndim == nd;
  for (int d = 0; same && d < nd; d++) same = mask->shape[d] == shape[d];
  mq_mask_totals tot;
  /* a mask made by an op: the decision from its cached totals, at no cost
   * per use; else (a view, a mask that broadcasts) its rows walked, after
   * the cached answer for an all-valid one */
  const mq_mask_rows *R = same ? mq_mask_rows_whole(S, mask, &tot) : NULL;
  if (!R) {
    if (mq_mask_known_all_valid(S, mask)) return false;
    /* [L] for [B, L], [B, L, 1] for [B, L, D]: its view of the data's shape */
    R = mq_mask_rows_of(S, same ? mask : mq_expand(S, (mq_tensor *)mask, nd, shape));
    if (!R) return false;
    tot = mq_mask_rows_totals(R);
  }
  int64_t n = R->rows * R->rlen, k = tot.runs, valid = tot.valid;
  if (tot.holes || R->rlen != shape[nd - 1] || n - valid < n >> MIN_SKIP_SHIFT ||
      (k && valid < k * MIN_AVG_RUN))
    return false;
  int64_t *runs = mq_scratch(S, (size_t)(k ? k : 1) * 2 * sizeof *runs), j = 0;
  for (int64_t r = 0; r < R->rows; r++) {
    if (R->lo[r] == R->hi[r]) continue;
    int64_t a = r * R->rlen + R->lo[r], b = r * R->rlen + R->hi[r];
    if (j && runs[2 * j - 1] == a) runs[2 * j - 1] = b; /* continues the run */
    else runs[2 * j] = a, runs[2 * j + 1] = b, j++;
  }
  /* runs longer than MQ_PAR_GRAIN cut into pieces of it: the threads
   * share a long run, as the loop over every entry's pieces, and the
   * calling thread polls for interrupts between them */
  int64_t pieces = 0;
  for (j = 0; j < k; j++) pieces += (runs[2 * j + 1] - runs[2 * j] + MQ_PAR_GRAIN - 1) / MQ_PAR_GRAIN;
  if (pieces > k) {
    int64_t *cut = mq_scratch(S, (size_t)pieces * 2 * sizeof *cut), q = 0;
    for (j = 0; j < k; j++)
      for (int64_t a = runs[2 * j]; a < runs[2 * j + 1]; a += MQ_PAR_GRAIN, q++)
        cut[2 * q] = a, cut[2 * q + 1] = runs[2 * j + 1] - a < MQ_PAR_GRAIN ? runs[2 * j + 1] : a + MQ_PAR_GRAIN;
    runs = cut, k = pieces;
  }
  P->k = k, P->n = n, P->runs = runs, P->valid = valid;
  return true;
}

typedef struct span_job {
  const mq_span_plan *P;
  char *out;
  size_t es;
  mq_range_fn fn;
  void *ctx;
} span_job;

/* Runs [j0, j1): each run computed, and the padding before it zeroed
 * (the last run's chunk also zeroes the tail after it). */
static void span_range(void *ctx, int64_t j0, int64_t j1, int t) {
  const span_job *J = ctx;
  const int64_t *runs = J->P->runs;
  for (int64_t j = j0; j < j1; j++) {
    int64_t gap = j ? runs[2 * j - 1] : 0;
    if (runs[2 * j] > gap) memset(J->out + (size_t)gap * J->es, 0, (size_t)(runs[2 * j] - gap) * J->es);
    J->fn(J->ctx, runs[2 * j], runs[2 * j + 1], t);
  }
  if (j1 == J->P->k && j1 > j0) {
    int64_t end = runs[2 * j1 - 1];
    memset(J->out + (size_t)end * J->es, 0, (size_t)(J->P->n - end) * J->es);
  }
}

void mq_span_run(mq_state *S, const mq_span_plan *P, char *out, size_t es, mq_range_fn fn,
                 void *ctx) {
  if (!P->k) { /* nothing valid */
    memset(out, 0, (size_t)P->n * es);
    return;
  }
  span_job J = {P, out, es, fn, ctx};
  /* chunks of about MQ_PAR_GRAIN entries, as the ordinary loop's */
  int64_t avg = P->valid / P->k, grain = avg >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / avg;
  mq_parallel_for(S, mq_parallel_threads_for(S, P->valid), P->k, grain, span_range, &J);
}
