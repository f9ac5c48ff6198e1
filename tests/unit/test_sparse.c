/* test_sparse.c - the invariants of the sparse layouts on random input:
 * COO built from unsorted entries with duplicates is coalesced (strictly
 * ascending positions) and densifies to the entries summed in order; CSR
 * from it holds the same entries in the same order; conversions back and
 * forth keep the dense value; the structural mask makes exactly the
 * stored entries valid. */
#include <stdio.h>
#include <string.h>

#include "../../runtime/sparse/sparse.h"

#include "unit.h"

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static int64_t below(int64_t n) { return (int64_t)(next() % (uint64_t)n); }

static void check(bool ok, const char *what, int round) {
  if (ok) {
    passed++;
  } else {
    failed++;
    printf("FAIL sparse round %d: %s\n", round, what);
  }
}

static bool same_dense(const mq_tensor *a, const double *ref, int64_t n) {
  if (a->numel != n || a->dtype != MQ_DT_F64) return false;
  const double *p = mq_tensor_data(a);
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&p[i], &ref[i], sizeof(double)) != 0) return false;
  return true;
}

/* Dense positions of a COO tensor's entries. */
static bool ascending(const mq_tensor *t) {
  const int64_t *ix = mq_tensor_data(t->sparse->indices);
  int64_t nnz = t->sparse->nnz, prev = -1;
  for (int64_t k = 0; k < nnz; k++) {
    int64_t key = 0;
    for (int d = 0; d < t->ndim; d++) key = key * t->shape[d] + ix[d * nnz + k];
    if (key <= prev) return false;
    prev = key;
  }
  return true;
}

static void one_round(int round) {
  int ndim = 1 + (int)below(3);
  int64_t shape[3], st[3], numel = 1;
  for (int d = 0; d < ndim; d++) shape[d] = 1 + below(5), numel *= shape[d];
  for (int d = ndim - 1, s = 1; d >= 0; d--) st[d] = s, s *= (int)shape[d];
  int64_t nnz = below(2 * numel + 1), ishape[2] = {ndim, nnz};
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 2, ishape), *v = mq_tensor_new(S, MQ_DT_F64, 1, &nnz);
  int64_t *p = mq_tensor_data(ix);
  double *pv = mq_tensor_data(v), ref[125] = {0};
  for (int64_t k = 0; k < nnz; k++) {
    int64_t key = 0;
    for (int d = 0; d < ndim; d++) {
      p[d * nnz + k] = below(shape[d]);
      key += p[d * nnz + k] * st[d];
    }
    pv[k] = (double)(below(2001) - 1000) / 8;
    ref[key] += pv[k];
  }
  mq_tensor *coo = mq_sparse_coo(S, ix, v, ndim, shape, -1, "test");
  check(ascending(coo), "COO entries strictly ascending", round);
  check(coo->sparse->nnz <= numel, "no position stored twice", round);
  check(same_dense(mq_sparse_to_dense(S, coo), ref, numel), "COO densifies to the summed entries",
        round);
  mq_tensor *back = mq_to_sparse_coo(S, mq_sparse_to_dense(S, coo));
  check(same_dense(mq_sparse_to_dense(S, back), ref, numel), "dense -> COO -> dense", round);
  mq_tensor *m = mq_sparse_masked(S, coo, NULL);
  check(mq_sparse_count(S, m) == coo->sparse->nnz, "structural mask: count == nnz", round);
  if (ndim != 2) return;
  mq_tensor *csr = mq_to_sparse_csr(S, coo);
  check(same_dense(mq_sparse_to_dense(S, csr), ref, numel), "CSR densifies the same", round);
  check(csr->sparse->values == coo->sparse->values, "CSR shares the COO values (same order)",
        round);
  mq_tensor *coo2 = mq_to_sparse_coo(S, csr);
  const mq_tensor *a = coo->sparse->indices, *b = coo2->sparse->indices;
  check(a->numel == b->numel &&
            (a->numel == 0 || memcmp(mq_tensor_data(a), mq_tensor_data(b),
                                     (size_t)a->numel * sizeof(int64_t)) == 0),
        "COO -> CSR -> COO keeps the indices", round);
  const int64_t *crow = mq_tensor_data(csr->sparse->crow);
  check(crow[0] == 0 && crow[shape[0]] == coo->sparse->nnz, "crow spans the entries", round);
}

static void all(mq_state *st, void *ud) {
  (void)st, (void)ud;
  for (int round = 0; round < 400; round++) {
    size_t mark = mq_pool_mark(S);
    one_round(round);
    mq_pool_drain(S, mark);
  }
}

int main(void) { return unit_main("test_sparse", all); }
