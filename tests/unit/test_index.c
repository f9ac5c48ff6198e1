/* test_index.c - the index ops of runtime/kernels/gather.h called directly: they
 * never write their operands (tensors are values), long loops stop on an
 * interrupt, sorts are stable under every key type, and allclose's rules.
 * Their values against torch are tests/lang/index_*.masq and
 * tests/conformance/index_*; their gradients test_gradcheck.c's. */
#include <math.h>
#include <string.h>

#include "../../runtime/kernels/gather.h"

#include "unit.h"

static mq_tensor *f64s(int64_t n, const double *v) {
  mq_tensor *t = mq_tensor_new(S, MQ_DT_F64, 1, &n);
  memcpy(mq_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}
static mq_tensor *i64s(int64_t n, const int64_t *v) {
  mq_tensor *t = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  memcpy(mq_tensor_data(t), v, (size_t)n * sizeof *v);
  return t;
}
static mq_tensor *bools(int64_t n, const uint8_t *v) {
  mq_tensor *t = mq_tensor_new(S, MQ_DT_BOOL, 1, &n);
  memcpy(mq_tensor_data(t), v, (size_t)n);
  return t;
}
static int64_t at(mq_tensor *t, int64_t i) {
  return ((const int64_t *)mq_tensor_data(mq_contiguous(S, t)))[i];
}

/* scatter and scatter_add copy x: x and src keep their bytes, and the
 * result has storage of its own. */
static void test_values(void) {
  double xv[4] = {1, 2, 3, 4}, sv[2] = {10, 20};
  int64_t iv[2] = {3, 3};
  mq_tensor *x = f64s(4, xv), *src = f64s(2, sv), *ix = i64s(2, iv);
  for (int add = 0; add < 2; add++) {
    mq_tensor *y = mq_scatter(S, x, 0, ix, src, add);
    CHECK(memcmp(mq_tensor_data(x), xv, sizeof xv) == 0);
    CHECK(memcmp(mq_tensor_data(src), sv, sizeof sv) == 0);
    CHECK(y->storage != x->storage);
    CHECK(((double *)mq_tensor_data(y))[3] == (add ? 34 : 20)); /* a later index wins */
  }
}

/* A sort's equal keys keep their positions in both orders, -0.0 and 0.0
 * equal, NaN after every number (before them, descending). */
static void test_stable(void) {
  double v[6] = {0.0, NAN, -0.0, 1, 0.0, -INFINITY};
  mq_tensor *values, *indices;
  mq_sort(S, f64s(6, v), 0, false, &values, &indices);
  int64_t up[6] = {5, 0, 2, 4, 3, 1}, down[6] = {1, 3, 0, 2, 4, 5};
  for (int i = 0; i < 6; i++) CHECK(at(indices, i) == up[i]);
  mq_sort(S, f64s(6, v), 0, true, &values, &indices);
  for (int i = 0; i < 6; i++) CHECK(at(indices, i) == down[i]);
  int64_t iv[5] = {2, -1, 2, INT64_MAX, INT64_MIN};
  mq_topk(S, i64s(5, iv), 3, 0, true, &values, &indices);
  CHECK(at(indices, 0) == 3 && at(indices, 1) == 0 && at(indices, 2) == 2);
  uint8_t bv[4] = {1, 0, 1, 0};
  mq_sort(S, bools(4, bv), 0, true, &values, &indices);
  CHECK(at(indices, 0) == 0 && at(indices, 1) == 2 && at(indices, 2) == 1 && at(indices, 3) == 3);
}

/* Each op stops on a pending interrupt instead of running on. */
static int which;
static void run_op(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  int64_t n = 100000;
  mq_tensor *x = mq_tensor_full(S, MQ_DT_F32, 1, &n, 1), *ix = mq_tensor_full_i64(S, 1, &n, 0);
  mq_tensor *v, *i;
  S->interrupted = 1;
  switch (which) {
  case 0: mq_sort(S, x, 0, false, &v, &i); break;
  case 1: mq_topk(S, x, 5, 0, true, &v, &i); break;
  case 2: mq_gather(S, x, 0, ix); break;
  default: mq_scatter(S, x, 0, ix, x, true); break;
  }
}
static void test_interrupt(void) {
  for (which = 0; which < 4; which++) {
    masq_status st = mq_protect(S, run_op, NULL);
    S->interrupted = 0;
    CHECK(st == MASQ_ERR_INTERRUPTED);
  }
}

static void test_allclose(void) {
  double a[3] = {1, NAN, INFINITY}, b[3] = {1 + 1e-9, NAN, INFINITY}, c[3] = {1, 5, INFINITY};
  uint8_t m[3] = {1, 0, 1}, m2[3] = {1, 1, 1};
  CHECK(!mq_allclose(S, f64s(3, a), f64s(3, b), 1e-5, 1e-8, false)); /* NaN */
  CHECK(mq_allclose(S, f64s(3, a), f64s(3, b), 1e-5, 1e-8, true));
  /* masked-out entries are not compared; a plain operand takes the mask */
  CHECK(mq_allclose(S, mq_masked(S, f64s(3, a), bools(3, m)), f64s(3, c), 0, 0, false));
  CHECK(mq_allclose(S, f64s(3, c), mq_masked(S, f64s(3, a), bools(3, m)), 0, 0, false));
  /* two masked operands with different masks: not close */
  CHECK(!mq_allclose(S, mq_masked(S, f64s(3, a), bools(3, m)),
                     mq_masked(S, f64s(3, a), bools(3, m2)), 0, 0, true));
  double d[1] = {-INFINITY};
  CHECK(!mq_allclose(S, f64s(1, a + 2), f64s(1, d), 1, 1, false)); /* inf vs -inf */
}

static void all(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  test_values();
  test_stable();
  test_interrupt();
  test_allclose();
}

int main(void) { return unit_main("test_index", all); }
