/* test_masksum.c - validity summaries (runtime/tensor/masksum.h) and the kernels
 * that use them.
 *
 * The summary itself: block counts and the whole count for masks of every
 * shape of validity, runs and counts through views at any offset, no
 * summary for strided masks or host memory, and a dropped summary rebuilt
 * from the bytes as they are now (the only way a stale one could arise).
 *
 * The kernels: every reduction of a masked tensor whose mask has a summary
 * must give bitwise what the same reduction gives through a mask without
 * one (the same validity read through a strided view, which the
 * reductions copy and never summarize), on one thread and on two: data,
 * mask and counts, for all-valid, all-masked, padding-shaped (aligned and
 * not), random and mixed masks, NaN and -0.0 data, views at offsets, rows
 * and rows of slots. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/tensor/masksum.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/kernels/reduce.h"
#include "../../runtime/tensor/tensor.h"

#include "unit.h"

/* --- masks ------------------------------------------------------------------- */

enum { K_VALID, K_MASKED, K_PAD4096, K_PAD3000, K_RAND, K_BLOCKY, K__COUNT };
static const char *const kind_names[] = {"valid", "masked", "pad4096", "pad3000", "rand", "blocky"};

static uint64_t rng = 12345;
static uint64_t next(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 33;
}

/* Entry i of a mask of kind k. */
static uint8_t mask_at(int k, int64_t i) {
  switch (k) {
  case K_VALID: return 1;
  case K_MASKED: return 0;
  case K_PAD4096: return (i % 8192) < 4096;
  case K_PAD3000: return (i % 6000) < 3000;
  case K_RAND: return next() & 1;
  default: { /* blocks of 4096: valid, mixed, masked, in turn */
    int64_t b = (i / 4096) % 3;
    return b == 0 ? 1 : b == 1 ? (uint8_t)(next() & 1) : 0;
  }
  }
}

/* A contiguous bool mask of [n] entries of kind k, and the same entries
 * seen through a view of stride 2 into a mask twice as long (no summary). */
static void make_masks(int k, int nd, const int64_t *shape, mq_tensor **plain, mq_tensor **strided) {
  mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, nd, shape);
  int64_t n = m->numel, wide = 2 * n;
  mq_tensor *w = mq_tensor_new(S, MQ_DT_BOOL, 1, &wide);
  uint8_t *p = mq_tensor_data(m), *q = mq_tensor_data(w);
  for (int64_t i = 0; i < n; i++) {
    p[i] = mask_at(k, i);
    q[2 * i] = p[i];
    q[2 * i + 1] = !p[i];
  }
  int64_t st[MQ_MAX_DIMS], s = 2;
  for (int d = nd - 1; d >= 0; d--) st[d] = s, s *= shape[d];
  *plain = m;
  *strided = mq_tensor_view(S, w, nd, shape, st, 0);
}

/* --- the summary ---------------------------------------------------------------- */

static void test_summary(void) {
  int64_t n = 5 * 4096 + 123;
  for (int k = 0; k < K__COUNT; k++) {
    mq_tensor *m, *sm;
    make_masks(k, 1, &n, &m, &sm);
    const mq_masksum *ms = mq_masksum_get(S, m);
    CHECK(ms != NULL);
    if (!ms) continue;
    CHECK(ms->n == n && ms->nblocks == 6);
    const uint8_t *p = mq_tensor_data(m);
    int64_t total = 0;
    for (int64_t b = 0; b < ms->nblocks; b++) {
      int64_t c = 0;
      for (int64_t i = b * 4096; i < n && i < (b + 1) * 4096; i++) c += p[i];
      CHECK(ms->cnt[b] == c);
      total += c;
    }
    CHECK(ms->nvalid == total);
    CHECK(mq_masksum_get(S, m) == ms); /* cached */
    CHECK(mq_mask_count(S, m) == total);
    CHECK(mq_mask_count(S, sm) == total); /* strided: counted */
    CHECK(mq_mask_view_of(S, sm).m == NULL);
    /* views at every kind of offset: runs and counts agree with the bytes */
    const int64_t offs[] = {0, 1, 100, 4095, 4096, 4097, 8192 + 5};
    for (size_t o = 0; o < sizeof offs / sizeof *offs; o++) {
      int64_t len = n - offs[o], st = 1;
      mq_tensor *v = mq_tensor_view(S, m, 1, &len, &st, offs[o]);
      mq_mask_view mv = mq_mask_view_of(S, v);
      CHECK(mv.ms == ms && mv.base == offs[o] && mv.m == p + offs[o]);
      int64_t c = 0;
      for (int64_t i = 0; i < len; i++) c += p[offs[o] + i];
      CHECK(mq_mask_count(S, v) == c);
      for (int64_t a = 0; a < len; a += 1000) {
        int64_t l = len - a < 5000 ? len - a : 5000, cv = 0;
        for (int64_t i = 0; i < l; i++) cv += p[offs[o] + a + i];
        CHECK(mq_mask_view_count(&mv, a, l) == cv);
        mq_ms_state r = mq_mask_run(&mv, a, l);
        /* a uniform answer must be true; MIXED may be conservative */
        if (r == MQ_MS_VALID) CHECK(cv == l);
        if (r == MQ_MS_MASKED) CHECK(cv == 0);
        if (k == K_VALID) CHECK(r == MQ_MS_VALID);
        if (k == K_MASKED) CHECK(r == MQ_MS_MASKED);
      }
    }
  }
  /* padding runs aligned to blocks are seen block by block */
  mq_tensor *m, *sm;
  make_masks(K_PAD4096, 1, &n, &m, &sm);
  mq_mask_view mv = mq_mask_view_of(S, m);
  CHECK(mq_mask_run(&mv, 0, 4096) == MQ_MS_VALID);
  CHECK(mq_mask_run(&mv, 4096, 4096) == MQ_MS_MASKED);
  CHECK(mq_mask_run(&mv, 4000, 200) == MQ_MS_MIXED);
  CHECK(mq_mask_run(&mv, 100, 10) == MQ_MS_VALID);
  /* not bool: no summary */
  mq_tensor *f = mq_tensor_full(S, MQ_DT_F32, 1, &n, 1.0);
  CHECK(mq_masksum_get(S, f) == NULL);
}

/* Host memory may change between two calls (masq.h): never summarized. */
static void release_none(void *ud) { (void)ud; }
static void test_host_memory(void) {
  static uint8_t buf[3 * 4096];
  memset(buf, 1, sizeof buf);
  int64_t n = sizeof buf;
  mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, 1, &n);
  /* point it at the host's buffer as api_tensor.c's wrap does */
  mq_storage *st = m->storage, saved = *st;
  st->data = buf;
  st->release = release_none;
  CHECK(mq_masksum_get(S, m) == NULL);
  CHECK(mq_mask_count(S, m) == n);
  buf[5] = 0;
  CHECK(mq_mask_count(S, m) == n - 1); /* read now, not remembered */
  *st = saved;
}

/* A summary dropped before the bytes change is rebuilt from the new ones. */
static void test_drop(void) {
  int64_t n = 3 * 4096;
  mq_tensor *m = mq_tensor_full(S, MQ_DT_BOOL, 1, &n, 1.0);
  CHECK(mq_mask_count(S, m) == n);
  mq_masksum_drop(S, m->storage);
  memset(mq_tensor_data(m), 0, 4096);
  const mq_masksum *ms = mq_masksum_get(S, m);
  CHECK(ms && ms->nvalid == n - 4096 && ms->cnt[0] == 0 && ms->cnt[1] == 4096);
}

/* --- reductions: bitwise as without a summary ---------------------------------------- */

static mq_tensor *data(mq_dtype dt, int nd, const int64_t *shape, int flavour) {
  mq_tensor *x = mq_randn(S, nd, shape, dt);
  int64_t n = x->numel;
  for (int64_t i = 0; i < n; i++) {
    double v = flavour == 1 ? -0.0 : flavour == 2 && i % 7919 == 5 ? NAN : 0;
    if (flavour == 0 || (flavour == 2 && v == 0)) continue;
    if (dt == MQ_DT_F32) ((float *)mq_tensor_data(x))[i] = (float)v;
    else ((double *)mq_tensor_data(x))[i] = v;
  }
  return x;
}

static bool same_tensor(const mq_tensor *a, const mq_tensor *b) {
  if (a->dtype != b->dtype || a->numel != b->numel || !a->mask != !b->mask) return false;
  size_t nb = (size_t)a->numel * mq_dtype_size((mq_dtype)a->dtype);
  if (memcmp(mq_tensor_data(a), mq_tensor_data(b), nb) != 0) return false;
  return !a->mask || memcmp(mq_tensor_data(a->mask), mq_tensor_data(b->mask), (size_t)a->numel) == 0;
}

static const mq_redop ops[] = {MQ_RED_SUM, MQ_RED_MEAN, MQ_RED_AMAX, MQ_RED_AMIN, MQ_RED_COUNT,
                               MQ_RED_PROD, MQ_RED_LOGSUMEXP};

/* Every op over [dims] of x under mask m (summarized) and sm (not), the
 * summarized one on [threads] threads, the reference on one. */
static void compare(const char *what, mq_tensor *x, mq_tensor *m, mq_tensor *sm, int ndims,
                    const int *dims) {
  mq_tensor *a = mq_masked(S, x, m), *b = mq_masked(S, x, sm);
  for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
    S->nthreads = 1;
    mq_tensor *want = mq_reduce(S, ops[o], b, ndims, dims, false);
    for (int t = 1; t <= 2; t++) {
      S->nthreads = t;
      mq_tensor *got = mq_reduce(S, ops[o], a, ndims, dims, false);
      if (!same_tensor(got, want)) {
        failed++;
        printf("FAIL %s: op %d, %d thread(s): differs from the reduction without a summary\n", what,
               (int)ops[o], t);
      } else {
        passed++;
      }
    }
  }
  S->nthreads = 0;
}

static void test_reductions(void) {
  char what[128];
  const mq_dtype dts[] = {MQ_DT_F32, MQ_DT_F64};
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < K__COUNT; k++)
      for (int fl = 0; fl < 3; fl++) {
        size_t mark = mq_pool_mark(S); /* the big tensors go at the end of each case */
        /* one long row; 2^20 entries (with every kind of piece) reach the
         * pieces split over threads */
        bool big = fl == 0 && d == 0 && (k == K_PAD4096 || k == K_BLOCKY);
        int64_t n = big ? ((int64_t)1 << 20) + 77 : 5 * 4096 + 11;
        mq_tensor *x = data(dts[d], 1, &n, fl), *m, *sm;
        make_masks(k, 1, &n, &m, &sm);
        snprintf(what, sizeof what, "%s %s flavour %d n %lld", mq_dtype_name(dts[d]), kind_names[k],
                 fl, (long long)n);
        compare(what, x, m, sm, 0, NULL);
        /* views at an offset inside a block and at a block boundary */
        for (int64_t off = 100; off <= 4096; off += 3996) {
          int64_t len = n - off, st = 1;
          mq_tensor *xv = mq_tensor_view(S, x, 1, &len, &st, off);
          mq_tensor *mv = mq_tensor_view(S, m, 1, &len, &st, off);
          int64_t st2 = 2;
          mq_tensor *smv = mq_tensor_view(S, sm, 1, &len, &st2, sm->offset + 2 * off);
          snprintf(what, sizeof what, "%s %s flavour %d view at %lld", mq_dtype_name(dts[d]),
                   kind_names[k], fl, (long long)off);
          compare(what, xv, mv, smv, 0, NULL);
        }
        /* rows (dim 1) and rows of slots (dim 0), and three dims */
        int64_t sh2[2] = {8, 3 * 4096 + 5};
        mq_tensor *x2 = data(dts[d], 2, sh2, fl), *m2, *sm2;
        make_masks(k, 2, sh2, &m2, &sm2);
        for (int dim = 0; dim < 2; dim++) {
          snprintf(what, sizeof what, "%s %s flavour %d 2-d dim %d", mq_dtype_name(dts[d]),
                   kind_names[k], fl, dim);
          compare(what, x2, m2, sm2, 1, &dim);
        }
        int64_t sh3[3] = {2, 3, 8192};
        mq_tensor *x3 = data(dts[d], 3, sh3, fl), *m3, *sm3;
        make_masks(k, 3, sh3, &m3, &sm3);
        const int d02[2] = {0, 2}, d1[1] = {1}, d2[1] = {2};
        snprintf(what, sizeof what, "%s %s flavour %d 3-d", mq_dtype_name(dts[d]), kind_names[k], fl);
        compare(what, x3, m3, sm3, 2, d02);
        compare(what, x3, m3, sm3, 1, d1);
        compare(what, x3, m3, sm3, 1, d2);
        mq_pool_drain(S, mark);
      }
}

/* Rows longer than MQ_RED_BATCH pieces fold their pieces batch by batch
 * along the merge tree (runtime/kernels/reduce_tree.c): on two threads (the
 * pieces split over threads, and rows piece by piece under a summarized
 * mask) every op gives the bits one thread gives folding the whole row at
 * once, plain and masked, with NaNs and signed zeros; one long row, and
 * three (fewer than two a thread: each split into pieces). */
static void test_long_rows(void) {
  char what[128];
  const mq_dtype dts[] = {MQ_DT_F32, MQ_DT_F64};
  for (int d = 0; d < 2; d++)
    for (int fl = 0; fl < 3 - 2 * d; fl += 2) { /* float64: no NaN case */
      size_t mark = mq_pool_mark(S);
      int64_t n = (int64_t)(2 - d) * MQ_RED_BATCH * 4096 + 3 * 4096 + 77;
      mq_tensor *x = data(dts[d], 1, &n, fl), *m, *sm;
      for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        if (ops[o] == MQ_RED_COUNT) continue;
        S->nthreads = 1;
        mq_tensor *want = mq_reduce(S, ops[o], x, 0, NULL, false);
        S->nthreads = 2;
        mq_tensor *got = mq_reduce(S, ops[o], x, 0, NULL, false);
        CHECK(same_tensor(got, want));
      }
      S->nthreads = 0;
      make_masks(K_BLOCKY, 1, &n, &m, &sm);
      snprintf(what, sizeof what, "%s flavour %d one row of %lld", mq_dtype_name(dts[d]), fl, (long long)n);
      compare(what, x, m, sm, 0, NULL);
      int64_t sh[2] = {3, n / 3};
      mq_tensor *x2 = mq_tensor_view(S, x, 2, sh, (int64_t[]){sh[1], 1}, 0);
      mq_tensor *m2, *sm2;
      make_masks(K_BLOCKY, 2, sh, &m2, &sm2);
      const int d1[1] = {1};
      snprintf(what, sizeof what, "%s flavour %d three rows", mq_dtype_name(dts[d]), fl);
      compare(what, x2, m2, sm2, 1, d1);
      mq_pool_drain(S, mark);
    }
}

/* A mask broadcast along a dim is not contiguous: no summary, same results. */
static void test_broadcast(void) {
  int64_t sh[2] = {16, 8192}, row = 8192;
  mq_tensor *x = data(MQ_DT_F32, 2, sh, 0);
  mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, 1, &row);
  for (int64_t i = 0; i < row; i++) ((uint8_t *)mq_tensor_data(m))[i] = i < 4096;
  mq_tensor *a = mq_masked(S, x, m);
  CHECK(mq_mask_view_of(S, a->mask).ms == NULL);
  mq_tensor *full = mq_contiguous(S, a->mask); /* the same validity, contiguous */
  mq_tensor *b = mq_masked(S, x, full);
  CHECK(mq_mask_view_of(S, b->mask).ms != NULL);
  for (int dim = 0; dim < 2; dim++)
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
      CHECK(same_tensor(mq_reduce(S, ops[o], a, 1, &dim, false), mq_reduce(S, ops[o], b, 1, &dim, false)));
}

/* where, masked_fill and to_tensor under a summarized condition copy or
 * fill whole blocks: the same bytes as the select (NaN payloads included),
 * for tensor and scalar branches, on one thread and two. */
static bool same_bytes(const mq_tensor *a, const mq_tensor *b) {
  return a->numel == b->numel && a->dtype == b->dtype &&
         memcmp(mq_tensor_data(a), mq_tensor_data(b), (size_t)a->numel * mq_dtype_size((mq_dtype)a->dtype)) == 0;
}
static void test_where(void) {
  const mq_dtype dts[] = {MQ_DT_BOOL, MQ_DT_I64, MQ_DT_F32, MQ_DT_F64};
  for (int k = 0; k < K__COUNT; k++)
    for (int d = 0; d < 4; d++) {
      size_t mark = mq_pool_mark(S);
      int64_t n = 6 * 4096 + 33;
      mq_tensor *c, *sc;
      make_masks(k, 1, &n, &c, &sc);
      CHECK(mq_mask_view_of(S, c).ms != NULL);
      mq_tensor *a = mq_astype(S, data(MQ_DT_F64, 1, &n, 2), dts[d]);
      mq_tensor *b = mq_astype(S, mq_randn(S, 1, &n, MQ_DT_F64), dts[d]);
      mq_tensor *s = mq_tensor_scalar(S, dts[d], 7);
      mq_tensor *pairs[3][2] = {{a, b}, {a, s}, {s, b}};
      for (int p = 0; p < 3; p++)
        for (int t = 1; t <= 2; t++) {
          S->nthreads = t;
          mq_tensor *want = mq_where(S, sc, pairs[p][0], pairs[p][1]);
          CHECK(same_bytes(mq_where(S, c, pairs[p][0], pairs[p][1]), want));
        }
      S->nthreads = 0;
      mq_tensor *x = mq_masked(S, a, c), *y = mq_masked(S, a, sc);
      CHECK(same_bytes(mq_to_tensor(S, x, -1), mq_to_tensor(S, y, -1)));
      mq_tensor *fx = mq_masked_fill(S, a, c, s), *fy = mq_masked_fill(S, a, sc, s);
      CHECK(same_bytes(fx, fy));
      mq_pool_drain(S, mark);
    }
}

/* The same validity as [mask] (any layout) through a view of stride 2:
 * neither summarized nor broadcast. */
static mq_tensor *unsummarized(mq_tensor *mask) {
  mq_tensor *c = mq_contiguous(S, mask);
  int64_t n = c->numel, wide = 2 * n;
  mq_tensor *w = mq_tensor_new(S, MQ_DT_BOOL, 1, &wide);
  uint8_t *q = mq_tensor_data(w);
  const uint8_t *p = mq_tensor_data(c);
  for (int64_t i = 0; i < n; i++) q[2 * i] = p[i], q[2 * i + 1] = !p[i];
  int64_t st[MQ_MAX_DIMS], s = 2;
  for (int d = mask->ndim - 1; d >= 0; d--) st[d] = s, s *= mask->shape[d];
  return mq_tensor_view(S, w, mask->ndim, mask->shape, st, 0);
}

/* Padding masks broadcast along the last dims ((B, L, 1) over (B, L, D),
 * (B, 1, 1) over (B, L, D)): every row of the reduction's last block is
 * all valid or all masked out, which the kernels take from its first
 * entry; the same results as through an unsummarized mask. */
static void test_broadcast_rows(void) {
  const int64_t sh[3] = {6, 40, 300};
  const int64_t msh[2][3] = {{6, 40, 1}, {6, 1, 1}};
  const int dl[][3] = {{1, 0}, {1, 1}, {1, 2}, {2, 1, 2}, {2, 0, 1}, {0}};
  const mq_dtype dts[] = {MQ_DT_F32, MQ_DT_F64};
  for (int d = 0; d < 2; d++)
    for (int k = 0; k < K__COUNT; k++)
      for (int ms = 0; ms < 2; ms++) {
        size_t mark = mq_pool_mark(S);
        mq_tensor *x = data(dts[d], 3, sh, k % 3), *m0, *unused;
        make_masks(k, 3, msh[ms], &m0, &unused);
        for (int64_t i = 0; i < m0->numel; i += 7) ((uint8_t *)mq_tensor_data(m0))[i] = (uint8_t)(i % 2);
        mq_tensor *a = mq_masked(S, x, m0), *b = mq_masked(S, x, unsummarized(a->mask));
        for (size_t c = 0; c < sizeof dl / sizeof *dl; c++)
          for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
            for (int t = 1; t <= 2; t++) {
              S->nthreads = t;
              CHECK(same_tensor(mq_reduce(S, ops[o], a, dl[c][0], dl[c] + 1, false),
                                mq_reduce(S, ops[o], b, dl[c][0], dl[c] + 1, false)));
            }
        S->nthreads = 0;
        mq_pool_drain(S, mark);
      }
}

/* The first sum over a fresh mask counts its blocks while it reads them
 * and leaves the summary behind: the same as one built from the bytes. */
static void test_built_on_the_way(void) {
  const int64_t shapes[3][2] = {{1, 5 * 4096 + 300}, {6, 8192}, {1, ((int64_t)1 << 20) + 5}};
  for (int k = 0; k < K__COUNT; k++)
    for (int sh = 0; sh < 3; sh++)
      for (int t = 1; t <= 2; t++) {
        size_t mark = mq_pool_mark(S);
        mq_tensor *x = data(MQ_DT_F32, 2, shapes[sh], 0), *m, *unused;
        make_masks(k, 2, shapes[sh], &m, &unused);
        mq_tensor *copy = mq_tensor_new(S, MQ_DT_BOOL, 2, shapes[sh]);
        memcpy(mq_tensor_data(copy), mq_tensor_data(m), (size_t)m->numel);
        CHECK(m->storage->msum == NULL && mq_masksum_pending(m));
        S->nthreads = t;
        int dim = 1;
        mq_tensor *r = mq_reduce(S, MQ_RED_SUM, mq_masked(S, x, m), sh == 1 ? 1 : 0, &dim, false);
        S->nthreads = 0;
        const mq_masksum *got = m->storage->msum, *want = mq_masksum_get(S, copy);
        CHECK(got != NULL && !mq_masksum_pending(m));
        if (got && want)
          CHECK(got->n == want->n && got->nblocks == want->nblocks && got->nvalid == want->nvalid &&
                memcmp(got->cnt, want->cnt, (size_t)got->nblocks * sizeof *got->cnt) == 0);
        /* and the result is the one the summary then gives */
        CHECK(same_tensor(r, mq_reduce(S, MQ_RED_SUM, mq_masked(S, x, m), sh == 1 ? 1 : 0, &dim, false)));
        mq_pool_drain(S, mark);
      }
  /* a view at an offset, or rows not made of whole blocks: built from the
   * bytes before the walk, as before */
  int64_t sh2[2] = {5, 5000};
  mq_tensor *x = data(MQ_DT_F32, 2, sh2, 0), *m, *unused;
  make_masks(K_PAD4096, 2, sh2, &m, &unused);
  int dim = 1;
  mq_reduce(S, MQ_RED_SUM, mq_masked(S, x, m), 1, &dim, false);
  CHECK(m->storage->msum != NULL);
}

static void all_tests(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  size_t mark = mq_pool_mark(S);
  test_summary();
  test_built_on_the_way();
  test_host_memory();
  test_drop();
  test_reductions();
  test_long_rows();
  test_broadcast();
  test_where();
  test_broadcast_rows();
  mq_pool_drain(S, mark);
}

int main(void) { return unit_main("test_masksum", all_tests); }
