/* test_layer_norm.c - the fused layer_norm (runtime/nn/layer_norm.h)
 * against the same computation op by op (mq_nn_layer_norm_ops, whose
 * gradients test_gradcheck checked before the fused kernel existed), in
 * float32 and float64, plain and masked (random masks, a row with no valid
 * entry, a column with none), with and without weight and bias, the
 * incoming gradient plain or masked: the result and the gradients of x,
 * weight and bias agree in value (to rounding: the fused sums are in
 * double where op by op's float32 ones are not) and exactly in their masks.
 * And the fused gradients are the same bits at 1 and 3 threads. */
#include <math.h>
#include <string.h>

#include "../../runtime/autograd/autograd.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/nn/nn.h"
#include "../../runtime/tensor/shape.h"

#include "unit.h"

static uint64_t rng = 12345;
static double urand(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng >> 11) * 0x1.0p-53;
}

static mq_tensor *rand_tensor(mq_dtype dt, int nd, const int64_t *shape, double lo, double hi) {
  mq_tensor *t = mq_tensor_new(S, MQ_DT_F64, nd, shape);
  for (int64_t i = 0; i < t->numel; i++) ((double *)mq_tensor_data(t))[i] = lo + (hi - lo) * urand();
  return mq_astype(S, t, dt);
}

/* A mask of [shape] (rows of C): random, with row 1 and column 0 all masked out. */
static mq_tensor *rand_mask(int nd, const int64_t *shape, int64_t C) {
  mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, nd, shape);
  uint8_t *b = mq_tensor_data(m);
  for (int64_t i = 0; i < m->numel; i++) b[i] = urand() < 0.7 && i / C != 1 && i % C != 0;
  return m;
}

static bool same_mask(mq_tensor *a, mq_tensor *b) {
  if (!a->mask != !b->mask) return false;
  if (!a->mask) return true;
  mq_tensor *ma = mq_contiguous(S, a->mask), *mb = mq_contiguous(S, b->mask);
  return memcmp(mq_tensor_data(ma), mq_tensor_data(mb), (size_t)ma->numel) == 0;
}

/* close where valid (in either's mask: they are equal) */
static bool close_to(mq_tensor *a, mq_tensor *b, double tol) {
  mq_tensor *da = mq_astype(S, mq_contiguous(S, mq_get_data(S, a)), MQ_DT_F64);
  mq_tensor *db = mq_astype(S, mq_contiguous(S, mq_get_data(S, b)), MQ_DT_F64);
  const uint8_t *m = a->mask ? mq_tensor_data(mq_contiguous(S, a->mask)) : NULL;
  const double *x = mq_tensor_data(da), *y = mq_tensor_data(db);
  for (int64_t i = 0; i < da->numel; i++) {
    if (m && !m[i]) continue;
    if (!(fabs(x[i] - y[i]) <= tol * (1 + fabs(y[i])))) {
      printf("  entry %lld: %.9g, op by op %.9g\n", (long long)i, x[i], y[i]);
      return false;
    }
  }
  return true;
}

static bool same_bits(mq_tensor *a, mq_tensor *b) {
  mq_tensor *da = mq_contiguous(S, mq_get_data(S, a)), *db = mq_contiguous(S, mq_get_data(S, b));
  return same_mask(a, b) && a->dtype == b->dtype &&
         memcmp(mq_tensor_data(da), mq_tensor_data(db), (size_t)da->numel * mq_dtype_size((mq_dtype)a->dtype)) == 0;
}

static void one(mq_dtype dt, int nd, const int64_t *shape, int ndn, int masked, int params, int gmasked) {
  int64_t C = 1;
  for (int i = nd - ndn; i < nd; i++) C *= shape[i];
  mq_tensor *x = mq_ag_leaf(S, rand_tensor(dt, nd, shape, -3, 5), true, "test");
  mq_tensor *w = NULL, *b = NULL;
  if (params & 1) w = mq_ag_leaf(S, rand_tensor(dt, ndn, shape + nd - ndn, 0.5, 2), true, "test");
  if (params & 2) b = mq_ag_leaf(S, rand_tensor(dt, ndn, shape + nd - ndn, -1, 1), true, "test");
  mq_tensor *xin = masked ? mq_as_masked(S, x, rand_mask(nd, shape, C)) : x;
  mq_tensor *gw = rand_tensor(dt, nd, shape, -1, 1);
  if (gmasked && !masked) gw = mq_masked(S, gw, rand_mask(nd, shape, C + 1)); /* (masks of a product must match) */
  mq_tensor *ins[3] = {x, w, b}, *leaves[3];
  int nl = 0;
  for (int i = 0; i < 3; i++)
    if (ins[i]) leaves[nl++] = ins[i];
  mq_tensor *yf = mq_nn_layer_norm(S, xin, ndn, w, b, 1e-5);
  mq_tensor *yo = mq_nn_layer_norm_ops(S, xin, ndn, w, b, 1e-5);
  double tol = dt == MQ_DT_F32 ? 2e-5 : 1e-12;
  CHECK(yf->dtype == dt && same_mask(yf, yo) && close_to(yf, yo, tol));
  mq_tensor *gf[3], *go[3];
  mq_grad(S, mq_reduce(S, MQ_RED_SUM, mq_binary(S, MQ_BIN_MUL, yf, gw), 0, NULL, false), leaves, nl, true, gf);
  mq_grad(S, mq_reduce(S, MQ_RED_SUM, mq_binary(S, MQ_BIN_MUL, yo, gw), 0, NULL, false), leaves, nl, true, go);
  for (int i = 0; i < nl; i++) {
    bool ok = same_mask(gf[i], go[i]) && close_to(gf[i], go[i], dt == MQ_DT_F32 ? 1e-4 : 1e-10);
    if (!ok)
      printf("FAIL dtype %d shape nd %d (normalized %d) masked %d params %d gmasked %d: gradient %d\n", dt, nd,
             ndn, masked, params, gmasked, i);
    CHECK(ok);
  }
  /* the same bits at 1 and 3 threads (large enough to split: MQ_PAR_MIN_ELEMS) */
  int saved = S->nthreads;
  S->nthreads = 3;
  mq_tensor *g3[3];
  mq_grad(S, mq_reduce(S, MQ_RED_SUM, mq_binary(S, MQ_BIN_MUL, mq_nn_layer_norm(S, xin, ndn, w, b, 1e-5), gw),
                       0, NULL, false), leaves, nl, true, g3);
  S->nthreads = 1;
  mq_tensor *g1[3];
  mq_grad(S, mq_reduce(S, MQ_RED_SUM, mq_binary(S, MQ_BIN_MUL, mq_nn_layer_norm(S, xin, ndn, w, b, 1e-5), gw),
                       0, NULL, false), leaves, nl, true, g1);
  S->nthreads = saved;
  for (int i = 0; i < nl; i++) CHECK(same_bits(g1[i], g3[i]));
}

static void all_tests(mq_state *S_, void *ud) {
  static const int64_t small[3] = {4, 3, 5}, big[2] = {700, 1500};
  for (int dt = 0; dt < 2; dt++)
    for (int masked = 0; masked < 2; masked++)
      for (int params = 0; params < 4; params++)
        for (int gm = 0; gm < 2; gm++) {
          mq_dtype d = dt ? MQ_DT_F64 : MQ_DT_F32;
          one(d, 3, small, 1, masked, params, gm);
          one(d, 3, small, 2, masked, params, gm);
          if (params == 3) one(d, 2, big, 1, masked, params, gm);
        }
}

int main(void) { return unit_main("test_layer_norm", all_tests); }
