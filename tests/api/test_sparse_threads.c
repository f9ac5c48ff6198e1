/* test_sparse_threads.c - the sparse kernels give the same bytes whatever
 * the thread count: one script (row reductions, softmax along rows and
 * columns, SpMM with plain and masked operands, SDDMM, dense @ sparse)
 * runs in states on 1, 2 and 3 threads, and every result's data and mask,
 * and everything the script prints, must be byte for byte the same; so
 * must COO reductions over the last dims (2-D, and a 3-D batch).
 *
 * The CSR matrix has rows of very uneven length (a row of 3000 entries
 * every 500 rows, the others 0 to 24), so the split of rows into runs of
 * about equal entries (mq_parallel_for_weighted) puts the boundaries in
 * different places from a split by rows; NaN and -0.0 values, and a mask
 * that hides some of them, make any change in the order of a sum or in
 * which entries count show in the bits. 1.4 * 10^6 entries: above the
 * size at which kernels split (MQ_PAR_MIN_ELEMS, 2^20). */
#include "check.h"

static const char SCRIPT[] =
    "seed(5)\n"
    "rows = 80000\n"
    "ri = arange(rows)\n"
    "lens = where(ri % 500 == 0, 3000, ri % 7 * 4)\n"
    "crow = cat([tensor([0]), cumsum(lens, 0)])\n"
    "k = arange(crow[rows])\n"
    "v = sin(float(k)) * 3\n"
    "v = where(k % 1013 == 0, nan, where(k % 517 == 0, -0.0, v))\n"
    /* columns out of order within a row: sparse_csr sorts them */
    "sp = sparse_csr(crow, (k * 7919) % 20011, v, [rows, 20011])\n"
    "ks = arange(nnz(sp))\n"
    "msp = masked(sp, sparse_csr(crow_indices(sp), col_indices(sp),\n"
    "                            (ks % 5 != 0) | (ks % 1013 == 0), [rows, 20011]))\n"
    "b20 = cos(arange(400220.)).reshape(20011, 20).float()\n"
    "mb37 = masked(sin(arange(740407.).reshape(20011, 37)).float(), rand(20011, 37) < 0.8)\n"
    "qa = rand(rows, 8)\n"
    "kb = rand(8, 20011)\n"
    "da = rand(4, rows)\n"
    "r0 = to_dense(sum(sp, 1))\n" /* a plain sparse sum along dims is sparse, as torch.masked.sum */
    "r1 = mean(msp, 1)\n"
    "r2 = amax(msp, 1)\n"
    "r3 = amin(sp, 1)\n"
    "r4 = count(msp, 1)\n"
    "r5 = values(softmax(msp, 1))\n"
    "r6 = values(log_softmax(msp, 1))\n"
    "r7 = values(softmax(msp, 0))\n"
    "r8 = sp @ b20\n"
    "r9 = msp @ b20\n"
    "r10 = sp @ mb37\n"
    "r11 = values(masked_matmul(qa, kb, msp))\n"
    "r12 = da @ msp\n"
    "r13 = sum(msp, 0)\n"
    "r14 = sum(double(msp), 1)\n"
    "r15 = prod(msp, 1)\n"
    /* COO over its last dims: each slot's entries are a run (sparse_reduce.c) */
    "r16 = to_dense(sum(to_sparse_coo(sp), 1))\n"
    "ix = indices(to_sparse_coo(msp))\n"
    "b3 = sparse_coo(stack([ix[0] // 1000, ix[0] % 1000, ix[1]]), values(sp), [80, 1000, 20011])\n"
    "mb3 = masked(b3, sparse_coo(indices(b3), values(get_mask(msp)), [80, 1000, 20011]))\n"
    "r17 = amax(mb3, 2)\n"
    "r18 = mean(mb3, [1, 2], keepdim=true)\n"
    "r19 = count(mb3, 2)\n"
    "r20 = amax(msp, 1).reshape(80, 1000)\n"
    "r21 = count(msp, 1).reshape(80, 1000)\n"
    "print(nnz(sp), count(msp), sum(r0), r1[0:3], r2[0:3], sum(r8), sum(r9), sum(r11))\n";

enum { NRESULTS = 22 };

static size_t elem_size(masq_dtype dt) {
  switch (dt) {
  case MASQ_BOOL: return 1;
  case MASQ_FLOAT32: return 4;
  default: return 8;
  }
}

/* A state on [threads] threads that has run SCRIPT; its output in [c]. */
static masq_state *run_on(int threads, capture *c) {
  masq_state *M = open_capturing(c);
  char set[64];
  snprintf(set, sizeof set, "set_num_threads(%d)", threads);
  CHECK(M != NULL);
  if (!M) return NULL;
  CHECK_OK(M, eval(M, set));
  capture_reset(c);
  CHECK_OK(M, eval(M, SCRIPT));
  return M;
}

/* Results [na] of state A and [nb] of B: same dtype, shape, data and mask
 * bytes. */
static void compare2(masq_state *A, const char *na, masq_state *B, const char *nb, int threads) {
  masq_tensor *ta = NULL, *tb = NULL, *ca = NULL, *cb = NULL;
  CHECK_OK(A, masq_get_global(A, na, &ta));
  CHECK_OK(B, masq_get_global(B, nb, &tb));
  if (!ta || !tb) return;
  CHECK_OK(A, masq_tensor_contiguous(A, ta, &ca));
  CHECK_OK(B, masq_tensor_contiguous(B, tb, &cb));
  masq_tensor_desc da, db;
  CHECK_OK(A, masq_tensor_info(A, ca, &da));
  CHECK_OK(B, masq_tensor_info(B, cb, &db));
  int same = da.dtype == db.dtype && da.ndim == db.ndim;
  size_t n = 1;
  for (int d = 0; same && d < da.ndim; d++) {
    same = da.shape[d] == db.shape[d];
    n *= (size_t)da.shape[d];
  }
  same = same && (da.valid == NULL) == (db.valid == NULL);
  same = same && memcmp(da.data, db.data, n * elem_size(da.dtype)) == 0;
  same = same && (!da.valid || memcmp(da.valid, db.valid, n) == 0);
  if (!same) fprintf(stderr, "%s and %s differ on %d threads\n", na, nb, threads);
  CHECK(same);
  masq_tensor_release(A, ca);
  masq_tensor_release(B, cb);
  masq_tensor_release(A, ta);
  masq_tensor_release(B, tb);
}

static void compare(masq_state *A, masq_state *B, const char *name, int threads) {
  compare2(A, name, B, name, threads);
}

static void test_same_bytes_on_any_thread_count(void) {
  static capture c1, cn;
  masq_state *one = run_on(1, &c1);
  if (!one) return;
  CHECK(strstr(c1.text, "1438060") != NULL); /* it ran, and printed */
  /* COO reductions over the last dim fold the same entries in the same
   * order as CSR's row reductions */
  compare2(one, "r0", one, "r16", 1);
  compare2(one, "r17", one, "r20", 1); /* the batch's rows are msp's rows */
  compare2(one, "r19", one, "r21", 1);
  for (int threads = 2; threads <= 3; threads++) {
    masq_state *M = run_on(threads, &cn);
    if (!M) continue;
    CHECK(strcmp(c1.text, cn.text) == 0);
    for (int i = 0; i < NRESULTS; i++) {
      char name[8];
      snprintf(name, sizeof name, "r%d", i);
      compare(one, M, name, threads);
    }
    masq_close(M);
  }
  masq_close(one);
}

int main(void) {
  test_same_bytes_on_any_thread_count();
  return report("sparse_threads");
}
