/* iter.c - setting up row walks over same-shaped tensors, and running a
 * kernel over one on threads (see iter.h). */
#include "iter.h"

#include "half.h"
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
  const uint8_t *half; /* mq_ewise_run_half's operand kinds, or NULL */
  int cpu;
} ewise_job;

/* Float32 values per operand in a block of mq_ewise_run_half: four
 * operands' blocks take 4 KiB, in L1 with the kernel's tables (longer
 * blocks measured no faster, and slower on some alignments). */
#define HALF_BLOCK 256

/* Operand [k] of [it] from element [i0]: its address. */
static char *at(const mq_iter *it, int k, int64_t i0) { return it->p[k] + i0 * it->is[k] * it->es[k]; }

/* The rows of [it] by blocks of HALF_BLOCK: each half operand widened
 * into a block of float32 (a broadcast one once), the kernel run on the
 * blocks, a half output narrowed back; every other operand as it is. */
static void half_rows(mq_state *S, const ewise_job *J, mq_iter *it) {
  /* a line apart beyond the block: the operands' blocks do not share
   * their addresses' low 12 bits, which would stall a load on an
   * unrelated store (4K aliasing) */
  float buf[MQ_ITER_MAXOPS][HALF_BLOCK + 16];
  const uint8_t *h = J->half;
  ROWS_BEGIN(S, it)
  for (int64_t i0 = 0; i0 < it->n; i0 += HALF_BLOCK) {
    int64_t len = it->n - i0 < HALF_BLOCK ? it->n - i0 : HALF_BLOCK;
    mq_iter b = {.nops = it->nops, .nd = 1, .n = len, .rows = 1};
    for (int k = 0; k < it->nops; k++) {
      char *p = at(it, k, i0);
      int64_t is = it->is[k];
      b.p[k] = p, b.is[k] = is, b.es[k] = it->es[k];
      if (!h[k]) continue;
      b.p[k] = (char *)buf[k], b.es[k] = sizeof(float), b.is[k] = is != 0;
      if (k == 0) continue; /* the output: narrowed after the kernel */
      const uint16_t *x = (const uint16_t *)(const void *)p;
      if (is == 1) mq_half_widen(J->cpu, h[k] == MQ_HALF_BF16, buf[k], x, len);
      else
        for (int64_t i = 0; i < (is ? len : 1); i++)
          buf[k][i] = h[k] == MQ_HALF_BF16 ? mq_bf16_to_f32(x[i * is]) : mq_f16_to_f32(x[i * is]);
    }
    J->k(NULL, &b, J->prm);
    if (h[0]) {
      uint16_t *o = (uint16_t *)(void *)at(it, 0, i0);
      int64_t os = it->is[0];
      if (os == 1) mq_half_narrow(J->cpu, h[0] == MQ_HALF_BF16, o, buf[0], len);
      else
        for (int64_t i = 0; i < len; i++)
          o[i * os] = h[0] == MQ_HALF_BF16 ? mq_f32_to_bf16(buf[0][i]) : mq_f32_to_f16(buf[0][i]);
    }
  }
  ROWS_END
}

static void ewise_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const ewise_job *J = ctx;
  mq_iter part;
  mq_iter_part(J->it, lo, hi, &part);
  if (J->half) half_rows(NULL, J, &part);
  else J->k(NULL, &part, J->prm);
}

static void ewise_run(mq_state *S, const ewise_job *J) {
  mq_iter *it = (mq_iter *)J->it;
  int nt = mq_parallel_threads_for(S, it->rows * it->n);
  if (nt <= 1 && it->rows == 1 && it->n > MQ_POLL_ELEMS) {
    /* one long row (a contiguous tensor is one): the kernel polls between
     * rows only, so cut it, polling between the pieces (mq_parallel_for
     * runs them all here) */
    mq_parallel_for(S, 1, it->n, MQ_POLL_ELEMS, ewise_range, (void *)J);
    return;
  }
  if (nt <= 1) {
    if (J->half) half_rows(S, J, it);
    else J->k(S, it, J->prm);
    return;
  }
  if (it->rows == 1)
    mq_parallel_for(S, nt, it->n, MQ_PAR_GRAIN, ewise_range, (void *)J);
  else
    mq_parallel_for(S, nt, it->rows, it->n >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / it->n, ewise_range,
                    (void *)J);
}

void mq_ewise_run(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm) {
  ewise_job J = {k, it, prm, NULL, 0};
  ewise_run(S, &J);
}

void mq_ewise_run_half(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm,
                       const uint8_t *half) {
  ewise_job J = {k, it, prm, half, S->cpu};
  ewise_run(S, &J);
}
