/* iter.c - setting up row walks over same-shaped tensors, and running a
 * kernel over one on threads (see iter.h). */
#include "iter.h"

#include "parallel.h"

void mq_iter_init(mq_iter *it, int nops, mq_tensor *const *ts) {
  const mq_tensor *t0 = ts[0];
  int64_t shape[MQ_MAX_DIMS], st[MQ_ITER_MAXOPS][MQ_MAX_DIMS];
  int nd = 0;
  MQ_ASSERT(nops >= 1 && nops <= MQ_ITER_MAXOPS);
  for (int k = 0; k < nops; k++) /* strided, and broadcast to one shape first */
    MQ_ASSERT(!ts[k]->sparse && mq_tensor_same_shape(ts[k], t0));
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
  MQ_ASSERT(0 <= lo && lo <= hi && hi <= (it->rows == 1 ? it->n : it->rows));
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

/* --- positions ---------------------------------------------------------------- */

const uint8_t *mq_mask_bytes_to(mq_state *S, mq_tensor *t, int nd, const int64_t *shape) {
  if (!t->mask) return NULL;
  return mq_tensor_data(mq_contiguous(S, mq_expand(S, t->mask, nd, shape)));
}

int64_t *mq_iter_offsets(mq_state *S, int nd, const int64_t *shape, const int64_t *strides) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  int64_t *o = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *o);
  int64_t idx[MQ_MAX_DIMS] = {0}, off = 0;
  for (int64_t k = 0; k < n; k++) {
    o[k] = off;
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
  return o;
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
