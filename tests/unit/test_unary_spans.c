/* test_unary_spans.c - costly unary ops and their derivatives under a
 * padding mask compute the valid runs of its rows only (tensor/spanrun.h).
 *
 * Rows padded to lengths 0, 1, all, odd ones and random ones, with NaN,
 * inf, -inf and 1.5 under the padding (no op gives +0 there), in float32
 * and float64, and [B, L, D] under a broadcast [B, L, 1] mask. Each
 * result is checked against the op on the plain data (the loop over every
 * entry): every valid entry the same bits (fails if skipping changes a
 * valid bit), every masked-out entry +0 (counted: fails if the skipping
 * is removed, since the plain op gives no +0 there). The forward on every
 * CPU path and on 1, 2 and 3 threads; the derivative (the node's own
 * backward, whose masked-out entries no later step hides) likewise. And
 * what must not skip: a cheap op, a random mask, a mask whose rows are
 * too short or barely padded compute every entry, as before. */
#include <math.h>
#include <string.h>

#include "../../runtime/autograd/autograd.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/tensor/cpu.h"
#include "../../runtime/tensor/shape.h"

#include "unit.h"

static uint64_t rng = 31;
static uint64_t next(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 33;
}
static double unit_rand(void) { return (double)(next() & 0xffffff) / 16777216.0; }

static double at(const mq_tensor *t, int64_t i) {
  return t->dtype == MQ_DT_F32 ? ((const float *)mq_tensor_data(t))[i]
                               : ((const double *)mq_tensor_data(t))[i];
}
/* the same bits, or both NaN (which NaN is the compiler's choice) */
static bool same(const mq_tensor *a, const mq_tensor *b, int64_t i) {
  size_t es = mq_dtype_size((mq_dtype)a->dtype);
  if (!memcmp((const char *)mq_tensor_data(a) + i * es, (const char *)mq_tensor_data(b) + i * es, es))
    return true;
  return isnan(at(a, i)) && isnan(at(b, i));
}
static bool pos_zero(const mq_tensor *t, int64_t i) { return at(t, i) == 0 && !signbit(at(t, i)); }

/* Counts how [got] (contiguous data) holds against [ref] under mask
 * bytes [m]: valid entries differing, masked-out ones that are not +0. */
static void compare(const mq_tensor *got, const mq_tensor *ref, const uint8_t *m, int64_t *bad_valid,
                    int64_t *bad_pad) {
  *bad_valid = *bad_pad = 0;
  for (int64_t i = 0; i < got->numel; i++) {
    if (m[i]) *bad_valid += !same(got, ref, i);
    else *bad_pad += !pos_zero(got, i);
  }
}

/* x [R, L] of dtype dt with rows padded to lengths, and its mask */
static void padded(mq_dtype dt, int64_t R, int64_t L, mq_tensor **x, mq_tensor **m) {
  int64_t sh[2] = {R, L};
  *x = mq_tensor_new(S, MQ_DT_F64, 2, sh), *m = mq_tensor_new(S, MQ_DT_BOOL, 2, sh);
  double *xp = mq_tensor_data(*x);
  uint8_t *mp = mq_tensor_data(*m);
  static const int64_t fixed[] = {0, 1, -1, -1, 33, 37, 7, -2, 0, -1};
  for (int64_t r = 0; r < R; r++) {
    int64_t len = r < 10 ? fixed[r] : (int64_t)(next() % (uint64_t)(L + 1));
    if (len < 0) len += L + 1;
    for (int64_t j = 0; j < L; j++) {
      static const double under[] = {NAN, INFINITY, -INFINITY, 1.5};
      mp[r * L + j] = j < len;
      xp[r * L + j] = j < len ? unit_rand() * 6 - 3 : under[j % 4];
    }
  }
  *x = mq_astype(S, *x, dt);
}

static const mq_unop costly[] = {MQ_UN_EXP,  MQ_UN_LOG,       MQ_UN_TANH, MQ_UN_ERF,
                                 MQ_UN_GELU, MQ_UN_GELU_TANH, MQ_UN_SILU, MQ_UN_SIGMOID,
                                 MQ_UN_SIN,  MQ_UN_MISH,      MQ_UN_LOGSIGMOID};
#define NCOSTLY (int)(sizeof costly / sizeof costly[0])

/* The forward of every costly op, both dtypes, on one thread. */
static void forward_ops(void) {
  for (int d = 0; d < 2; d++) {
    mq_tensor *x, *m;
    padded(d ? MQ_DT_F64 : MQ_DT_F32, 41, 203, &x, &m);
    for (int k = 0; k < NCOSTLY; k++) {
      mq_tensor *got = mq_contiguous(S, mq_get_data(S, mq_unary(S, costly[k], mq_masked(S, x, m))));
      mq_tensor *ref = mq_unary(S, costly[k], x);
      int64_t bv, bp, rv, rp;
      compare(got, ref, mq_tensor_data(m), &bv, &bp);
      compare(ref, ref, mq_tensor_data(m), &rv, &rp);
      CHECK(bv == 0 && bp == 0);
      CHECK(rp > 0); /* the plain op gives no +0 under the padding */
    }
  }
}

/* [B, L, D] under a [B, L, 1] mask broadcast over D: rows of D, each all
 * valid or all masked out, joined into runs. */
static void broadcast_mask(void) {
  int64_t sh[3] = {5, 19, 40}, msh[3] = {5, 19, 1};
  mq_tensor *x = mq_tensor_new(S, MQ_DT_F32, 3, sh), *m1 = mq_tensor_new(S, MQ_DT_BOOL, 3, msh);
  float *xp = mq_tensor_data(x);
  uint8_t *mp = mq_tensor_data(m1);
  static const int64_t lens[5] = {0, 1, 19, 7, 12};
  for (int64_t b = 0; b < 5; b++)
    for (int64_t l = 0; l < 19; l++) mp[b * 19 + l] = l < lens[b];
  for (int64_t i = 0; i < x->numel; i++) xp[i] = mp[i / 40] ? (float)(unit_rand() * 6 - 3) : NAN;
  mq_tensor *m = mq_contiguous(S, mq_expand(S, m1, 3, sh));
  for (int k = 0; k < NCOSTLY; k++) {
    mq_tensor *got = mq_contiguous(S, mq_get_data(S, mq_unary(S, costly[k], mq_masked(S, x, m1))));
    int64_t bv, bp;
    compare(got, mq_unary(S, costly[k], x), mq_tensor_data(m), &bv, &bp);
    CHECK(bv == 0 && bp == 0);
  }
}

/* The node's derivative of op at masked x (float32 or float64) for the
 * incoming gradient g masked like x. */
static mq_tensor *node_grad(mq_unop op, mq_tensor *x, mq_tensor *m, mq_tensor *g) {
  mq_tensor *xg = mq_as_masked(S, mq_ag_leaf(S, x, true, "test"), m);
  mq_tensor *y = mq_unary(S, op, xg);
  mq_tensor *gin[4] = {NULL};
  mq_ag_node_backward(S, y, mq_masked(S, g, m), gin);
  return mq_contiguous(S, mq_get_data(S, gin[0]));
}

/* Every path and 1, 2, 3 threads, on a tensor past MQ_PAR_MIN_ELEMS of
 * valid entries: forward and derivative the same bits as the plain op's
 * on one thread, on the portable path. */
static void paths_threads(void) {
  int best = mq_cpu_state_best(), saved_cpu = S->cpu, saved_nt = S->nthreads;
  static const mq_unop ops[] = {MQ_UN_GELU, MQ_UN_EXP, MQ_UN_TANH};
  for (int d = 0; d < 2; d++) {
    mq_tensor *x, *m;
    padded(d ? MQ_DT_F64 : MQ_DT_F32, 800, 4133, &x, &m); /* 1.6e6 valid: 3 threads */
    mq_tensor *g = mq_astype(S, mq_unary(S, MQ_UN_COS, x), (mq_dtype)x->dtype);
    mq_tensor *all = mq_tensor_new(S, MQ_DT_BOOL, x->ndim, x->shape);
    memset(mq_tensor_data(all), 1, (size_t)all->numel);
    for (int k = 0; k < (d ? 1 : 3); k++) { /* float64: gelu */
      S->cpu = MQ_CPU_PORTABLE, S->nthreads = 1;
      mq_tensor *fref = mq_unary(S, ops[k], x), *gref = node_grad(ops[k], x, all, g);
      for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++)
        for (int nt = 1; nt <= 3; nt++) {
          S->cpu = cpu, S->nthreads = nt;
          int64_t bv, bp;
          compare(mq_contiguous(S, mq_get_data(S, mq_unary(S, ops[k], mq_masked(S, x, m)))), fref,
                  mq_tensor_data(m), &bv, &bp);
          CHECK(bv == 0 && bp == 0);
          compare(node_grad(ops[k], x, m, g), gref, mq_tensor_data(m), &bv, &bp);
          CHECK(bv == 0 && bp == 0);
        }
    }
  }
  S->cpu = saved_cpu, S->nthreads = saved_nt;
}

/* Two rows of 2^21 padded to long lengths: their runs cut into pieces
 * the threads share (spanrun.c), the same bits on 1 and 3 threads. */
static void long_runs(void) {
  int saved_nt = S->nthreads;
  int64_t L = (int64_t)1 << 21, sh[2] = {2, L};
  mq_tensor *x = mq_tensor_new(S, MQ_DT_F32, 2, sh), *m = mq_tensor_new(S, MQ_DT_BOOL, 2, sh);
  float *xp = mq_tensor_data(x);
  uint8_t *mp = mq_tensor_data(m);
  for (int64_t i = 0; i < 2 * L; i++) {
    mp[i] = i % L < (i < L ? L - 5 : 3 * L / 4 + 1);
    xp[i] = mp[i] ? (float)(unit_rand() * 6 - 3) : NAN;
  }
  mq_tensor *ref = mq_unary(S, MQ_UN_GELU, x);
  for (int nt = 1; nt <= 3; nt += 2) {
    S->nthreads = nt;
    int64_t bv, bp;
    compare(mq_contiguous(S, mq_get_data(S, mq_unary(S, MQ_UN_GELU, mq_masked(S, x, m)))), ref,
            mq_tensor_data(m), &bv, &bp);
    CHECK(bv == 0 && bp == 0);
  }
  S->nthreads = saved_nt;
}

/* Every entry computed, as before: the result's data is the plain op's
 * everywhere (NaN, inf and the op of 1.5 under the mask included). */
static bool everywhere(mq_unop op, mq_tensor *x, mq_tensor *m) {
  mq_tensor *got = mq_contiguous(S, mq_get_data(S, mq_unary(S, op, mq_masked(S, x, m))));
  mq_tensor *ref = mq_unary(S, op, x);
  for (int64_t i = 0; i < x->numel; i++)
    if (!same(got, ref, i)) return false;
  return true;
}

static void no_skip(void) {
  mq_tensor *x, *m;
  padded(MQ_DT_F32, 41, 203, &x, &m);
  CHECK(everywhere(MQ_UN_RELU, x, m)); /* a cheap op */
  CHECK(everywhere(MQ_UN_NEG, x, m));
  CHECK(everywhere(MQ_UN_SQRT, x, m));
  /* a random mask: holes inside the rows */
  mq_tensor *rm = mq_tensor_new(S, MQ_DT_BOOL, x->ndim, x->shape);
  for (int64_t i = 0; i < rm->numel; i++) ((uint8_t *)mq_tensor_data(rm))[i] = next() % 2;
  CHECK(everywhere(MQ_UN_GELU, x, rm));
  /* time-major: the same padding transposed, rows across the batch */
  mq_tensor *xt = mq_contiguous(S, mq_transpose(S, x, 0, 1));
  CHECK(everywhere(MQ_UN_GELU, xt, mq_contiguous(S, mq_transpose(S, m, 0, 1))));
  /* rows under 32 entries have no summary */
  mq_tensor *xs, *ms;
  padded(MQ_DT_F32, 60, 31, &xs, &ms);
  CHECK(everywhere(MQ_UN_GELU, xs, ms));
  /* barely padded: one masked-out entry in 203 * 41 */
  mq_tensor *mb = mq_tensor_new(S, MQ_DT_BOOL, x->ndim, x->shape);
  memset(mq_tensor_data(mb), 1, (size_t)mb->numel);
  ((uint8_t *)mq_tensor_data(mb))[202] = 0;
  CHECK(everywhere(MQ_UN_GELU, x, mb));
}

static void all_tests(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  forward_ops();
  broadcast_mask();
  paths_threads();
  long_runs();
  no_skip();
}

int main(void) { return unit_main("test_unary_spans", all_tests); }
