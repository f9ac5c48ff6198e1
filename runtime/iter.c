/* iter.c - setting up row walks over same-shaped tensors, and running a
 * kernel over one on threads (see iter.h). */
#include "iter.h"

#include "parallel.h"

void mq_iter_init(mq_iter *it, int nops, mq_tensor *const *ts) {
  const mq_tensor *t0 = ts[0];
  int64_t shape[MQ_MAX_DIMS], st[MQ_ITER_MAXOPS][MQ_MAX_DIMS];
  int nd = 0;
  it->nops = nops;
  /* Drop size-1 dims (their strides are irrelevant), then merge dim d into
   * the previous one when that is exactly one step of d for every operand. */
  for (int d = 0; d < t0->ndim; d++) {
    if (t0->shape[d] == 1) continue;
    if (nd > 0) {
      bool merge = true;
      for (int k = 0; k < nops && merge; k++)
        merge = st[k][nd - 1] == ts[k]->strides[d] * t0->shape[d];
      if (merge) {
        shape[nd - 1] *= t0->shape[d];
        for (int k = 0; k < nops; k++) st[k][nd - 1] = ts[k]->strides[d];
        continue;
      }
    }
    shape[nd] = t0->shape[d];
    for (int k = 0; k < nops; k++) st[k][nd] = ts[k]->strides[d];
    nd++;
  }
  if (nd == 0) { /* a single element */
    shape[0] = 1;
    for (int k = 0; k < nops; k++) st[k][0] = 1;
    nd = 1;
  }
  it->nd = nd;
  it->n = shape[nd - 1];
  it->rows = t0->numel == 0 ? 0 : t0->numel / it->n;
  for (int k = 0; k < nops; k++) {
    size_t es = mq_dtype_size((mq_dtype)ts[k]->dtype);
    it->es[k] = (int64_t)es;
    it->is[k] = st[k][nd - 1];
    it->p[k] = (char *)mq_tensor_data(ts[k]);
    for (int d = 0; d < nd - 1; d++) it->bst[k][d] = st[k][d] * (int64_t)es;
  }
  for (int d = 0; d < nd - 1; d++) {
    it->shape[d] = shape[d];
    it->idx[d] = 0;
  }
}

void mq_iter_part(const mq_iter *it, int64_t lo, int64_t hi, mq_iter *part) {
  *part = *it;
  if (it->rows == 1) {
    part->n = hi - lo;
    for (int k = 0; k < it->nops; k++) part->p[k] += lo * it->is[k] * it->es[k];
    return;
  }
  part->rows = hi - lo;
  int64_t rest = lo;
  for (int d = it->nd - 2; d >= 0; d--) {
    part->idx[d] = rest % it->shape[d];
    rest /= it->shape[d];
    for (int k = 0; k < it->nops; k++) part->p[k] += part->idx[d] * it->bst[k][d];
  }
}

/* --- running a kernel ------------------------------------------------------- */

typedef struct ewise_job {
  mq_ewise_fn k;
  const mq_iter *it;
  const double *prm;
} ewise_job;

static void ewise_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const ewise_job *J = ctx;
  mq_iter part;
  mq_iter_part(J->it, lo, hi, &part);
  J->k(NULL, &part, J->prm);
}

void mq_ewise_run(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm) {
  int nt = mq_parallel_threads_for(S, it->rows * it->n);
  ewise_job J = {k, it, prm};
  if (nt <= 1 && it->rows == 1 && it->n > MQ_POLL_ELEMS) {
    /* one long row (a contiguous tensor is one): the kernel polls between
     * rows only, so cut it, polling between the pieces (mq_parallel_for
     * runs them all here) */
    mq_parallel_for(S, 1, it->n, MQ_POLL_ELEMS, ewise_range, &J);
    return;
  }
  if (nt <= 1) {
    k(S, it, prm);
    return;
  }
  if (it->rows == 1)
    mq_parallel_for(S, nt, it->n, MQ_PAR_GRAIN, ewise_range, &J);
  else
    mq_parallel_for(S, nt, it->rows, it->n >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / it->n, ewise_range, &J);
}
