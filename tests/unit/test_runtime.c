/* test_runtime.c - unit tests of the masked-tensor runtime (runtime/).
 *
 * Expected texts are torch 1.13's, verbatim, except where masq deliberately
 * differs: masked int rows are aligned (see runtime/print/print.c) and empty /
 * large masked tensors print instead of failing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../runtime/kernels/ops.h"
#include "../../runtime/print/print.h"
#include "../../runtime/tensor/shape.h"
#include "../../runtime/tensor/tensor.h"

#include "unit.h"

static void check_str(const char *got, const char *want, int line) {
  if (strcmp(got, want) == 0) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL %s:%d:\n--- want\n%s\n--- got\n%s\n---\n", __FILE__, line, want, got);
}
#define CHECK_STR(got, want) check_str((got), (want), __LINE__)

static void check_near(double got, double want, double tol, int line) {
  if ((isnan(want) && isnan(got)) || (got == want) || fabs(got - want) <= tol) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL %s:%d: got %.9g, want %.9g\n", __FILE__, line, got, want);
}
#define CHECK_NEAR(got, want) check_near((got), (want), 1e-4, __LINE__)

/* The printed form of t (static buffer, valid until the next call). */
static const char *fmt_c(const mq_tensor *t, bool color) {
  static char out[16384];
  mq_buf b = {0};
  mq_tensor_format(S, &b, t, color);
  snprintf(out, sizeof out, "%s", b.data ? b.data : "");
  mq_buf_free(S, &b);
  return out;
}
static const char *fmt(const mq_tensor *t) { return fmt_c(t, false); }

/* --- constructors ---------------------------------------------------------- */

static mq_tensor *mk(mq_dtype dt, int nd, const int64_t *shape, const double *v) {
  mq_tensor *t = mq_tensor_new(S, dt, nd, shape);
  void *p = mq_tensor_data(t);
  for (int64_t i = 0; i < t->numel; i++) {
    switch (dt) {
    case MQ_DT_BOOL: ((uint8_t *)p)[i] = v[i] != 0; break;
    case MQ_DT_I64: ((int64_t *)p)[i] = (int64_t)v[i]; break;
    case MQ_DT_F32: ((float *)p)[i] = (float)v[i]; break;
    default: ((double *)p)[i] = v[i]; break;
    }
  }
  return t;
}
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...) ((const double[]){__VA_ARGS__})
#define F32(nd, shape, vals) mk(MQ_DT_F32, nd, shape, vals)
#define I64(nd, shape, vals) mk(MQ_DT_I64, nd, shape, vals)
#define BOOLS(nd, shape, vals) mk(MQ_DT_BOOL, nd, shape, vals)

/* masked(t, mask) with mask values given in t's shape */
static mq_tensor *msk(mq_tensor *t, const double *m) {
  return mq_masked(S, t, mk(MQ_DT_BOOL, t->ndim, t->shape, m));
}

static mq_tensor *weak_int(int64_t i) { return mq_tensor_from_value(S, mq_int(i), "x"); }
static mq_tensor *weak_float(double f) { return mq_tensor_from_value(S, mq_float(f), "x"); }
static mq_tensor *weak_bool(bool b) { return mq_tensor_from_value(S, mq_bool(b), "x"); }

static double at(mq_tensor *t, int64_t i) { /* element i of a contiguous plain view */
  const void *p = mq_tensor_data(t);
  switch ((mq_dtype)t->dtype) {
  case MQ_DT_BOOL: return ((const uint8_t *)p)[i];
  case MQ_DT_I64: return (double)((const int64_t *)p)[i];
  case MQ_DT_F32: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}

/* --- errors ---------------------------------------------------------------- */

static mq_tensor *ga, *gb, *gc;
typedef struct job {
  void (*fn)(void);
} job;
static void run_job(mq_state *S_, void *ud) {
  (void)S_;
  ((job *)ud)->fn();
}
static void expect_error(void (*fn)(void), const char *want, int line) {
  job j = {fn};
  masq_status st = mq_protect(S, run_job, &j);
  const char *msg = S->err_message.data ? S->err_message.data : "";
  if (st == MASQ_ERR_RUNTIME && strcmp(msg, want) == 0) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL %s:%d: status %d, message\n  got:  %s\n  want: %s\n", __FILE__, line, (int)st,
         st == MASQ_OK ? "(no error)" : msg, want);
}
#define EXPECT_ERROR(fn, want) expect_error(fn, want, __LINE__)

/* --- fixtures ---------------------------------------------------------------- */

static mq_tensor *arange_f(int64_t n) { return mq_arange(S, 0, (double)n, 1, MQ_DT_F32); }
/* m0 = [0, 1, --, 3, --] */
static mq_tensor *m0(void) { return msk(arange_f(5), VALS(1, 1, 0, 1, 0)); }

/* ======================================================================== */

static void test_promotion(void) {
  struct {
    mq_tensor *a, *b;
    mq_dtype want;
  } cases[] = {
      {F32(1, SHAPE(2), VALS(1, 2)), weak_int(2), MQ_DT_F32},
      {I64(1, SHAPE(2), VALS(1, 2)), weak_float(2.5), MQ_DT_F32},
      {I64(1, SHAPE(2), VALS(1, 2)), weak_int(2), MQ_DT_I64},
      {I64(1, SHAPE(2), VALS(1, 2)), weak_bool(true), MQ_DT_I64},
      {BOOLS(1, SHAPE(2), VALS(1, 0)), weak_int(2), MQ_DT_I64},
      {BOOLS(1, SHAPE(2), VALS(1, 0)), weak_bool(true), MQ_DT_BOOL},
      {BOOLS(1, SHAPE(2), VALS(1, 0)), weak_float(1), MQ_DT_F32},
      {mk(MQ_DT_F64, 1, SHAPE(2), VALS(1, 2)), weak_float(2.5), MQ_DT_F64},
      {F32(1, SHAPE(2), VALS(1, 2)), mq_tensor_scalar(S, MQ_DT_F64, 1), MQ_DT_F32},
      {I64(1, SHAPE(2), VALS(1, 2)), mq_tensor_scalar(S, MQ_DT_F64, 1), MQ_DT_F64},
      {I64(1, SHAPE(2), VALS(1, 2)), mq_tensor_scalar(S, MQ_DT_F32, 1), MQ_DT_F32},
      {F32(1, SHAPE(2), VALS(1, 2)), mk(MQ_DT_F64, 1, SHAPE(2), VALS(1, 2)), MQ_DT_F64},
      {mq_tensor_scalar_i64(S, 3), weak_float(2.5), MQ_DT_F32},
      {mq_tensor_scalar_i64(S, 3), weak_int(2), MQ_DT_I64},
      {mq_tensor_scalar(S, MQ_DT_F64, 3), weak_float(2.5), MQ_DT_F64},
      {mq_tensor_scalar(S, MQ_DT_BOOL, 1), weak_float(2.5), MQ_DT_F32},
      {weak_float(1.5), weak_int(2), MQ_DT_F32},
      {weak_int(1), weak_bool(false), MQ_DT_I64},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    mq_tensor *ts[2] = {cases[i].a, cases[i].b};
    mq_dtype got = mq_result_type(2, ts);
    if (got != cases[i].want)
      printf("  promotion case %zu: got %s, want %s\n", i, mq_dtype_name(got),
             mq_dtype_name(cases[i].want));
    CHECK(got == cases[i].want);
    /* add agrees with result_type and is symmetric */
    CHECK(mq_binary(S, MQ_BIN_ADD, cases[i].a, cases[i].b)->dtype == cases[i].want);
    CHECK(mq_binary(S, MQ_BIN_ADD, cases[i].b, cases[i].a)->dtype == cases[i].want);
  }
  /* weak op weak stays weak; a tensor result is not */
  CHECK(mq_binary(S, MQ_BIN_MUL, weak_int(2), weak_int(3))->weak);
  CHECK(!mq_binary(S, MQ_BIN_MUL, I64(1, SHAPE(1), VALS(2)), weak_int(3))->weak);

  mq_tensor *i = I64(1, SHAPE(4), VALS(0, 1, 2, 3)), *j = I64(1, SHAPE(4), VALS(4, 4, 4, 4));
  mq_tensor *q = mq_binary(S, MQ_BIN_DIV, i, j);
  CHECK(q->dtype == MQ_DT_F32);
  CHECK_STR(fmt(q), "tensor([0.0000, 0.2500, 0.5000, 0.7500])");
  mq_tensor *c = mq_binary(S, MQ_BIN_LT, i, weak_float(1.5));
  CHECK(c->dtype == MQ_DT_BOOL);
  CHECK_STR(fmt(c), "tensor([ True,  True, False, False])");
  mq_tensor *p = mq_binary(S, MQ_BIN_POW, i, weak_int(3));
  CHECK(p->dtype == MQ_DT_I64);
  CHECK_STR(fmt(p), "tensor([ 0,  1,  8, 27])");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_POW, F32(1, SHAPE(3), VALS(1, 2, 3)), weak_int(2))),
            "tensor([1., 4., 9.])");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_POW, weak_int(2), F32(1, SHAPE(3), VALS(1, 2, 3)))),
            "tensor([2., 4., 8.])");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_BAND, I64(1, SHAPE(3), VALS(6, 5, 12)), weak_int(4))),
            "tensor([4, 4, 4])");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_BXOR, BOOLS(1, SHAPE(2), VALS(1, 0)), weak_bool(true))),
            "tensor([False,  True])");
  CHECK_STR(fmt(mq_unary(S, MQ_UN_BITNOT, BOOLS(1, SHAPE(2), VALS(1, 0)))), "tensor([False,  True])");
  CHECK_STR(fmt(mq_unary(S, MQ_UN_NEG, I64(1, SHAPE(2), VALS(1, -2)))), "tensor([-1,  2])");
  mq_tensor *e = mq_unary(S, MQ_UN_EXP, I64(1, SHAPE(2), VALS(0, 1)));
  CHECK(e->dtype == MQ_DT_F32);
  CHECK_STR(fmt(e), "tensor([1.0000, 2.7183])");
}

static void e_neg_pow(void) { mq_binary(S, MQ_BIN_POW, ga, weak_int(-1)); }
static void e_band_float(void) { mq_binary(S, MQ_BIN_BAND, ga, gb); }
static void e_bitnot_float(void) { mq_unary(S, MQ_UN_BITNOT, gb); }
static void e_broadcast(void) { mq_binary(S, MQ_BIN_ADD, ga, gb); }

static void test_errors_elementwise(void) {
  ga = I64(1, SHAPE(3), VALS(1, 2, 3));
  EXPECT_ERROR(e_neg_pow, "integers to negative integer powers are not allowed (use a float base, "
                          "e.g. float(x) ** n)");
  gb = F32(1, SHAPE(3), VALS(1, 2, 3));
  EXPECT_ERROR(e_band_float, "bitwise_and is only defined for bool and integer tensors, got int64 and float32");
  EXPECT_ERROR(e_bitnot_float,
               "bitwise_not, the `~` operator, is only defined for bool and integer tensors, got float32");
  ga = F32(2, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5));
  gb = F32(1, SHAPE(4), VALS(0, 1, 2, 3));
  EXPECT_ERROR(e_broadcast, "shapes (2, 3) and (4,) cannot be broadcast");
}

static void test_broadcast(void) {
  mq_tensor *a = F32(2, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5));
  mq_tensor *b = F32(1, SHAPE(3), VALS(10, 20, 30));
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_ADD, a, b)), "tensor([[10., 21., 32.],\n        [13., 24., 35.]])");
  mq_tensor *col = F32(2, SHAPE(3, 1), VALS(1, 2, 3)), *row = F32(2, SHAPE(1, 4), VALS(1, 10, 100, 1000));
  mq_tensor *o = mq_binary(S, MQ_BIN_MUL, col, row);
  CHECK(o->ndim == 2 && o->shape[0] == 3 && o->shape[1] == 4);
  CHECK_STR(fmt(o), "tensor([[1.0000e+00, 1.0000e+01, 1.0000e+02, 1.0000e+03],\n"
                    "        [2.0000e+00, 2.0000e+01, 2.0000e+02, 2.0000e+03],\n"
                    "        [3.0000e+00, 3.0000e+01, 3.0000e+02, 3.0000e+03]])");
  int64_t out[MQ_MAX_DIMS];
  int nd = mq_broadcast_shapes(S, 3, SHAPE(5, 1, 3), 2, SHAPE(4, 1), out);
  CHECK(nd == 3 && out[0] == 5 && out[1] == 4 && out[2] == 3);
  /* expand is a zero-stride view */
  mq_tensor *e = mq_expand(S, b, 2, SHAPE(4, 3));
  CHECK(e->storage == b->storage && e->strides[0] == 0 && e->strides[1] == 1);
  /* a transposed (strided) operand */
  mq_tensor *t = mq_tensor_view(S, a, 2, SHAPE(3, 2), SHAPE(1, 3), 0);
  CHECK(!mq_tensor_is_contiguous(t));
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_SUB, t, weak_int(1))), "tensor([[-1.,  2.],\n        [ 0.,  3.],\n        [ 1.,  4.]])");
  mq_tensor *tc = mq_contiguous(S, t);
  CHECK(mq_tensor_is_contiguous(tc) && at(tc, 1) == 3 && at(tc, 2) == 1);
}

static void e_mask_mismatch(void) { mq_binary(S, MQ_BIN_ADD, ga, gb); }

static void test_binary_masked(void) {
  mq_tensor *a = m0();
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_ADD, a, a)),
            "MaskedTensor(\n  [  0.0000,   2.0000,       --,   6.0000,       --]\n)");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_ADD, a, weak_int(1))),
            "MaskedTensor(\n  [  1.0000,   2.0000,       --,   4.0000,       --]\n)");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_ADD, weak_int(1), a)),
            "MaskedTensor(\n  [  1.0000,   2.0000,       --,   4.0000,       --]\n)");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_MUL, a, weak_float(2.5))),
            "MaskedTensor(\n  [  0.0000,   2.5000,       --,   7.5000,       --]\n)");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_DIV, a, weak_int(0))),
            "MaskedTensor(\n  [     nan,      inf,       --,      inf,       --]\n)");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_POW, a, weak_int(2))),
            "MaskedTensor(\n  [  0.0000,   1.0000,       --,   9.0000,       --]\n)");
  mq_tensor *ones = mq_tensor_full(S, MQ_DT_F32, 2, SHAPE(2, 5), 1);
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_ADD, a, ones)),
            "MaskedTensor(\n  [\n    [  1.0000,   2.0000,       --,   4.0000,       --],\n"
            "    [  1.0000,   2.0000,       --,   4.0000,       --]\n  ]\n)");
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_ADD, mq_tensor_scalar(S, MQ_DT_F32, 1), a)),
            "MaskedTensor(\n  [  1.0000,   2.0000,       --,   4.0000,       --]\n)");
  /* separately built but equal masks match */
  mq_tensor *a2 = m0();
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_LT, a, a2)),
            "MaskedTensor(\n  [   False,    False,       --,    False,       --]\n)");
  /* int mt / int mt is float32 */
  mq_tensor *ia = msk(I64(1, SHAPE(5), VALS(0, 1, 2, 3, 4)), VALS(1, 1, 0, 1, 0));
  mq_tensor *ib = msk(I64(1, SHAPE(5), VALS(1, 2, 3, 4, 5)), VALS(1, 1, 0, 1, 0));
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_DIV, ia, ib)),
            "MaskedTensor(\n  [  0.0000,   0.5000,       --,   0.7500,       --]\n)");
  /* unary keeps the mask; data is computed under it too */
  CHECK_STR(fmt(mq_unary(S, MQ_UN_NEG, a)),
            "MaskedTensor(\n  [ -0.0000,  -1.0000,       --,  -3.0000,       --]\n)");
  CHECK_STR(fmt(mq_unary(S, MQ_UN_LOG, a)),
            "MaskedTensor(\n  [    -inf,   0.0000,       --,   1.0986,       --]\n)");
  CHECK_STR(fmt(mq_unary(S, MQ_UN_SQRT, mq_unary(S, MQ_UN_NEG, a))),
            "MaskedTensor(\n  [ -0.0000,      nan,       --,      nan,       --]\n)");
  CHECK_STR(fmt(mq_unary(S, MQ_UN_EXP, a)),
            "MaskedTensor(\n  [  1.0000,   2.7183,       --,  20.0855,       --]\n)");
  CHECK_STR(fmt(mq_astype(S, a, MQ_DT_I64)), "MaskedTensor(\n  [       0,        1,       --,        3,       --]\n)");

  ga = a;
  gb = msk(arange_f(5), VALS(1, 0, 1, 1, 0)); /* positions 1 and 2 differ */
  EXPECT_ERROR(e_mask_mismatch,
               "masks do not match: 2 of 5 positions differ (use intersect(a, b) to keep only "
               "positions valid in both, or to_tensor(x, fill) to drop a mask)");
  /* masks of different shapes broadcast and combine: valid where both are */
  gb = msk(mq_tensor_full(S, MQ_DT_F32, 2, SHAPE(2, 5), 1), VALS(1, 0, 1, 1, 0, 0, 1, 1, 1, 1));
  CHECK_STR(fmt(mq_binary(S, MQ_BIN_ADD, a, gb)),
            "MaskedTensor(\n  [\n    [  1.0000,       --,       --,   4.0000,       --],\n"
            "    [      --,   2.0000,       --,   4.0000,       --]\n  ]\n)");
  /* an all-valid broadcast mask leaves the other mask, shared */
  mq_tensor *row = msk(mq_tensor_full(S, MQ_DT_F32, 2, SHAPE(1, 5), 2), VALS(1, 1, 1, 1, 1));
  mq_tensor *r = mq_binary(S, MQ_BIN_MUL, gb, row);
  CHECK(r->mask->storage == gb->mask->storage);
}

static void e_where_masked_cond(void) { mq_where(S, gc, ga, gb); }

static void test_where(void) {
  mq_tensor *a = m0(), *b = msk(arange_f(5), VALS(0, 0, 1, 0, 1));
  mq_tensor *cond = BOOLS(1, SHAPE(5), VALS(1, 0, 1, 0, 1));
  CHECK_STR(fmt(mq_where(S, cond, a, a)), "MaskedTensor(\n  [  0.0000,   1.0000,       --,   3.0000,       --]\n)");
  CHECK_STR(fmt(mq_where(S, cond, a, b)), "MaskedTensor(\n  [  0.0000,       --,       --,       --,       --]\n)");
  mq_tensor *z = mq_tensor_full(S, MQ_DT_F32, 1, SHAPE(5), 0);
  CHECK_STR(fmt(mq_where(S, cond, a, z)), "MaskedTensor(\n  [  0.0000,   0.0000,       --,   0.0000,       --]\n)");
  CHECK_STR(fmt(mq_where(S, cond, z, a)), "MaskedTensor(\n  [  0.0000,   1.0000,   0.0000,   3.0000,   0.0000]\n)");
  CHECK_STR(fmt(mq_where(S, cond, a, weak_float(0))),
            "MaskedTensor(\n  [  0.0000,   0.0000,       --,   0.0000,       --]\n)");
  CHECK_STR(fmt(mq_where(S, cond, I64(1, SHAPE(5), VALS(1, 2, 3, 4, 5)), weak_float(0.5))),
            "tensor([1.0000, 0.5000, 3.0000, 0.5000, 5.0000])");
  gc = msk(cond, VALS(1, 1, 0, 1, 0));
  ga = a, gb = a;
  EXPECT_ERROR(e_where_masked_cond, "where: the condition must be a plain bool tensor");
  gc = arange_f(5);
  EXPECT_ERROR(e_where_masked_cond, "where: the condition must be a plain bool tensor");
}

static void e_amax_empty(void) { mq_reduce(S, MQ_RED_AMAX, ga, 0, NULL, false); }

static void test_reductions(void) {
  mq_tensor *a = m0();
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_SUM, a, 0, NULL, false)), "MaskedTensor(  4.0000, True)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_MEAN, a, 0, NULL, false)), "MaskedTensor(  1.3333, True)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_AMIN, a, 0, NULL, false)), "MaskedTensor(  0.0000, True)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_AMAX, a, 0, NULL, false)), "MaskedTensor(  3.0000, True)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_SUM, a, 1, (int[]){0}, true)), "MaskedTensor(\n  [  4.0000]\n)");
  mq_tensor *ia = msk(I64(1, SHAPE(5), VALS(0, 1, 2, 3, 4)), VALS(1, 1, 0, 1, 0));
  mq_tensor *is = mq_reduce(S, MQ_RED_SUM, ia, 0, NULL, false);
  CHECK(is->dtype == MQ_DT_I64);
  CHECK_STR(fmt(is), "MaskedTensor(4, True)");
  mq_tensor *im = mq_reduce(S, MQ_RED_MEAN, ia, 0, NULL, false);
  CHECK(im->dtype == MQ_DT_F32);
  CHECK_STR(fmt(im), "MaskedTensor(  1.3333, True)");

  /* fully masked: (result, result.get_data()) */
  mq_tensor *fm = msk(arange_f(5), VALS(0, 0, 0, 0, 0));
  const char *want_data[] = {"tensor(0.)", "tensor(nan)", "tensor(-inf)", "tensor(inf)"};
  mq_redop ops[] = {MQ_RED_SUM, MQ_RED_MEAN, MQ_RED_AMAX, MQ_RED_AMIN};
  for (int i = 0; i < 4; i++) {
    mq_tensor *r = mq_reduce(S, ops[i], fm, 0, NULL, false);
    CHECK_STR(fmt(r), "MaskedTensor(--, False)");
    CHECK_STR(fmt(mq_get_data(S, r)), want_data[i]);
  }

  /* 2-D with a fully masked row and column */
  mq_tensor *mt2 = msk(F32(2, SHAPE(3, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)),
                       VALS(1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0));
  CHECK_STR(fmt(mt2), "MaskedTensor(\n  [\n    [  1.0000,       --,   3.0000,       --],\n"
                      "    [      --,       --,       --,       --],\n"
                      "    [  9.0000,  10.0000,  11.0000,       --]\n  ]\n)");
  int d1[] = {1}, d0[] = {0}, d01[] = {0, 1};
  mq_tensor *r = mq_reduce(S, MQ_RED_SUM, mt2, 1, d1, false);
  CHECK_STR(fmt(r), "MaskedTensor(\n  [  4.0000,       --,  30.0000]\n)");
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([ 4.,  0., 30.])");
  r = mq_reduce(S, MQ_RED_MEAN, mt2, 1, d1, false);
  CHECK_STR(fmt(r), "MaskedTensor(\n  [  2.0000,       --,  10.0000]\n)");
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([ 2., nan, 10.])");
  r = mq_reduce(S, MQ_RED_AMIN, mt2, 1, d1, false);
  CHECK_STR(fmt(r), "MaskedTensor(\n  [  1.0000,       --,   9.0000]\n)");
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([1., inf, 9.])");
  r = mq_reduce(S, MQ_RED_AMAX, mt2, 1, d1, false);
  CHECK_STR(fmt(r), "MaskedTensor(\n  [  3.0000,       --,  11.0000]\n)");
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([ 3., -inf, 11.])");
  r = mq_reduce(S, MQ_RED_SUM, mt2, 1, d0, false);
  CHECK_STR(fmt(r), "MaskedTensor(\n  [ 10.0000,  10.0000,  14.0000,       --]\n)");
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([10., 10., 14.,  0.])");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_SUM, mt2, 0, NULL, false)), "MaskedTensor( 34.0000, True)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_SUM, mt2, 1, d1, true)),
            "MaskedTensor(\n  [\n    [  4.0000],\n    [      --],\n    [ 30.0000]\n  ]\n)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_SUM, mt2, 2, d01, false)), "MaskedTensor( 34.0000, True)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_SUM, mt2, 2, d01, true)), "MaskedTensor(\n  [\n    [ 34.0000]\n  ]\n)");

  /* ints: mi = [[1, --, 3], [--, --, --]] */
  mq_tensor *mi = msk(I64(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)), VALS(1, 0, 1, 0, 0, 0));
  r = mq_reduce(S, MQ_RED_SUM, mi, 1, d1, false);
  CHECK(r->dtype == MQ_DT_I64);
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([4, 0])");
  r = mq_reduce(S, MQ_RED_MEAN, mi, 1, d1, false);
  CHECK(r->dtype == MQ_DT_F32);
  CHECK_STR(fmt(r), "MaskedTensor(\n  [  2.0000,       --]\n)");
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([2., nan])");
  r = mq_reduce(S, MQ_RED_AMAX, mi, 1, d1, false);
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([                   3, -9223372036854775808])");
  r = mq_reduce(S, MQ_RED_AMIN, mi, 1, d1, false);
  CHECK_STR(fmt(mq_get_data(S, r)), "tensor([                  1, 9223372036854775807])");

  /* plain: plain results; 3-d middle dim; bool sum counts */
  mq_tensor *p = F32(3, SHAPE(2, 3, 2), VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
  r = mq_reduce(S, MQ_RED_SUM, p, 1, d1, false);
  CHECK(!r->mask);
  CHECK_STR(fmt(r), "tensor([[ 6.,  9.],\n        [24., 27.]])");
  int d02[] = {0, 2};
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_AMAX, p, 2, d02, false)), "tensor([ 7.,  9., 11.])");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_MEAN, p, 2, d02, true)), "tensor([[[3.5000],\n         [5.5000],\n         [7.5000]]])");
  mq_tensor *bs = mq_reduce(S, MQ_RED_SUM, BOOLS(1, SHAPE(4), VALS(1, 0, 1, 1)), 0, NULL, false);
  CHECK(bs->dtype == MQ_DT_I64 && at(bs, 0) == 3);
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_MEAN, F32(1, SHAPE(0), NULL), 0, NULL, false)), "tensor(nan)");
  ga = F32(1, SHAPE(0), NULL);
  EXPECT_ERROR(e_amax_empty,
               "amax of an empty tensor has no value (reduce a non-empty tensor, or mask it)");
  /* a strided (transposed) input reduces correctly */
  mq_tensor *q = F32(2, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5));
  mq_tensor *qt = mq_tensor_view(S, q, 2, SHAPE(3, 2), SHAPE(1, 3), 0);
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_SUM, qt, 1, d1, false)), "tensor([3., 5., 7.])");

  /* a long sum is accurate: 1e6 * 0.1f */
  mq_tensor *big = mq_tensor_full(S, MQ_DT_F32, 1, SHAPE(1000000), 0.1);
  CHECK(at(mq_reduce(S, MQ_RED_SUM, big, 0, NULL, false), 0) == (float)(1000000 * (double)0.1f));
  CHECK_NEAR(at(mq_reduce(S, MQ_RED_MEAN, big, 0, NULL, false), 0), (double)0.1f);
  /* NaN propagates through amax of valid entries, hidden NaN does not */
  mq_tensor *nn = msk(F32(1, SHAPE(3), VALS(1, NAN, 2)), VALS(1, 0, 1));
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_AMAX, nn, 0, NULL, false)), "MaskedTensor(  2.0000, True)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_SUM, nn, 0, NULL, false)), "MaskedTensor(  3.0000, True)");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_AMAX, F32(1, SHAPE(3), VALS(1, NAN, 2)), 0, NULL, false)), "tensor(nan)");
}

static void test_softmax(void) {
  /* safe softmax: a fully masked column stays masked */
  double x[] = {1.5410, -INFINITY, -INFINITY, 0.5684, -INFINITY, -1.3986, -INFINITY, -INFINITY, -INFINITY};
  mq_tensor *xt = F32(2, SHAPE(3, 3), x);
  CHECK_STR(fmt(xt), "tensor([[ 1.5410,    -inf,    -inf],\n        [ 0.5684,    -inf, -1.3986],\n"
                     "        [   -inf,    -inf,    -inf]])");
  mq_tensor *mt = msk(xt, VALS(1, 0, 0, 1, 0, 1, 0, 0, 0));
  CHECK_STR(fmt(mt), "MaskedTensor(\n  [\n    [  1.5410,       --,       --],\n"
                     "    [  0.5684,       --,  -1.3986],\n    [      --,       --,       --]\n  ]\n)");
  const char *soft0 = "tensor([[0.7256,    nan, 0.0000],\n        [0.2744,    nan, 1.0000],\n"
                      "        [0.0000,    nan, 0.0000]])";
  CHECK_STR(fmt(mq_softmax(S, xt, 0)), soft0);
  mq_tensor *s0 = mq_softmax(S, mt, 0);
  CHECK_STR(fmt(s0), "MaskedTensor(\n  [\n    [  0.7256,       --,       --],\n"
                     "    [  0.2744,       --,   1.0000],\n    [      --,       --,       --]\n  ]\n)");
  CHECK_STR(fmt(mq_get_data(S, s0)), soft0);
  mq_tensor *s1 = mq_softmax(S, mt, 1);
  CHECK_STR(fmt(s1), "MaskedTensor(\n  [\n    [  1.0000,       --,       --],\n"
                     "    [  0.8773,       --,   0.1227],\n    [      --,       --,       --]\n  ]\n)");
  CHECK_STR(fmt(mq_get_data(S, s1)), "tensor([[1.0000, 0.0000, 0.0000],\n        [0.8773, 0.0000, 0.1227],\n"
                                     "        [   nan,    nan,    nan]])");
  char want1[512];
  snprintf(want1, sizeof want1, "%s", fmt(s1));
  CHECK_STR(fmt(mq_softmax(S, mt, -1)), want1);
  /* softmax along each dim of a partly masked 3x3 */
  mq_tensor *smt = msk(F32(2, SHAPE(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9)), VALS(1, 0, 0, 1, 0, 1, 0, 0, 0));
  CHECK_STR(fmt(mq_softmax(S, smt, 0)), "MaskedTensor(\n  [\n    [  0.0474,       --,       --],\n"
                                        "    [  0.9526,       --,   1.0000],\n    [      --,       --,       --]\n  ]\n)");
  CHECK_STR(fmt(mq_get_data(S, mq_softmax(S, smt, 1))),
            "tensor([[1.0000, 0.0000, 0.0000],\n        [0.1192, 0.0000, 0.8808],\n        [   nan,    nan,    nan]])");
  mq_tensor *d64 = mq_softmax(S, mq_astype(S, smt, MQ_DT_F64), 1);
  CHECK(d64->dtype == MQ_DT_F64);
  CHECK_STR(fmt(d64), "MaskedTensor(\n  [\n    [  1.0000,       --,       --],\n"
                      "    [  0.1192,       --,   0.8808],\n    [      --,       --,       --]\n  ],\n"
                      "  dtype=float64\n)");
  CHECK_STR(fmt(mq_softmax(S, m0(), 0)), "MaskedTensor(\n  [  0.0420,   0.1142,       --,   0.8438,       --]\n)");
  /* ints compute in float32; large inputs stay finite */
  mq_tensor *si = mq_softmax(S, I64(1, SHAPE(3), VALS(1000, 1000, 1000)), 0);
  CHECK(si->dtype == MQ_DT_F32);
  CHECK_STR(fmt(si), "tensor([0.3333, 0.3333, 0.3333])");
}

static void e_index_range(void) {
  mq_index_item it[] = {{MQ_IX_INT, 0, 0, 0, 5, 0, 0, NULL}};
  mq_index(S, ga, it, 1);
}
static void e_index_step(void) {
  mq_index_item it[] = {{MQ_IX_SLICE, 0, 0, 1, 0, 0, 0, NULL}};
  mq_index(S, ga, it, 1);
}
static void e_index_many(void) {
  mq_index_item it[] = {{MQ_IX_INT, 0, 0, 0, 0, 0, 0, NULL}, {MQ_IX_INT, 0, 0, 0, 0, 0, 0, NULL}, {MQ_IX_INT, 0, 0, 0, 0, 0, 0, NULL}};
  mq_index(S, ga, it, 3);
}
static void e_index_ell(void) {
  mq_index_item it[] = {{MQ_IX_ELLIPSIS, 0, 0, 0, 0, 0, 0, NULL}, {MQ_IX_ELLIPSIS, 0, 0, 0, 0, 0, 0, NULL}};
  mq_index(S, ga, it, 2);
}

static mq_index_item ix_int(int64_t i) { return (mq_index_item){MQ_IX_INT, 0, 0, 0, i, 0, 0, NULL}; }
static mq_index_item ix_all(void) { return (mq_index_item){MQ_IX_SLICE, 0, 0, 0, 0, 0, 0, NULL}; }
static mq_index_item ix_slice(bool hs, int64_t s, bool he, int64_t e, bool hst, int64_t st) {
  return (mq_index_item){MQ_IX_SLICE, hs, he, hst, s, e, st, NULL};
}

static void test_index(void) {
  /* indexing and slicing a masked 3-d tensor */
  mq_tensor *data = mq_arange(S, 0, 24, 1, MQ_DT_I64);
  data = mq_tensor_view(S, data, 3, SHAPE(2, 3, 4), SHAPE(12, 4, 1), 0);
  CHECK_STR(fmt(data), "tensor([[[ 0,  1,  2,  3],\n         [ 4,  5,  6,  7],\n         [ 8,  9, 10, 11]],\n\n"
                       "        [[12, 13, 14, 15],\n         [16, 17, 18, 19],\n         [20, 21, 22, 23]]])");
  mq_tensor *mask = mq_binary(S, MQ_BIN_EQ, mq_binary(S, MQ_BIN_SUB, data,
                                 mq_binary(S, MQ_BIN_MUL, mq_astype(S, mq_binary(S, MQ_BIN_DIV, data, weak_int(2)), MQ_DT_I64), weak_int(2))),
                              weak_int(0));
  CHECK_STR(fmt(mask), "tensor([[[ True, False,  True, False],\n         [ True, False,  True, False],\n"
                       "         [ True, False,  True, False]],\n\n        [[ True, False,  True, False],\n"
                       "         [ True, False,  True, False],\n         [ True, False,  True, False]]])");
  mq_tensor *mt = mq_masked(S, mq_astype(S, data, MQ_DT_F32), mask);
  mq_index_item i0[] = {ix_int(0)};
  mq_tensor *v = mq_index(S, mt, i0, 1);
  CHECK(v->storage == mt->storage && v->mask && v->mask->storage == mt->mask->storage);
  CHECK_STR(fmt(v), "MaskedTensor(\n  [\n    [  0.0000,       --,   2.0000,       --],\n"
                    "    [  4.0000,       --,   6.0000,       --],\n    [  8.0000,       --,  10.0000,       --]\n  ]\n)");
  mq_index_item s24[] = {ix_all(), ix_all(), ix_slice(1, 2, 1, 4, 0, 0)};
  CHECK_STR(fmt(mq_index(S, mt, s24, 3)),
            "MaskedTensor(\n  [\n    [\n      [  2.0000,       --],\n      [  6.0000,       --],\n"
            "      [ 10.0000,       --]\n    ],\n    [\n      [ 14.0000,       --],\n      [ 18.0000,       --],\n"
            "      [ 22.0000,       --]\n    ]\n  ]\n)");
  CHECK_STR(fmt(mt), "MaskedTensor(\n  [\n    [\n      [  0.0000,       --,   2.0000,       --],\n"
                     "      [  4.0000,       --,   6.0000,       --],\n      [  8.0000,       --,  10.0000,       --]\n"
                     "    ],\n    [\n      [ 12.0000,       --,  14.0000,       --],\n"
                     "      [ 16.0000,       --,  18.0000,       --],\n      [ 20.0000,       --,  22.0000,       --]\n"
                     "    ]\n  ]\n)");

  /* A.1: m23 = [[0, --, 2], [--, 4, 5]] */
  mq_tensor *m23 = msk(F32(2, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5)), VALS(1, 0, 1, 0, 1, 1));
  mq_index_item a1[] = {ix_int(1)};
  CHECK_STR(fmt(mq_index(S, m23, a1, 1)), "MaskedTensor(\n  [      --,   4.0000,   5.0000]\n)");
  mq_index_item a2[] = {ix_all(), ix_int(1)};
  CHECK_STR(fmt(mq_index(S, m23, a2, 2)), "MaskedTensor(\n  [      --,   4.0000]\n)");
  mq_index_item a3[] = {ix_int(0), ix_int(0)};
  mq_tensor *sc = mq_index(S, m23, a3, 2);
  CHECK(sc->ndim == 0);
  CHECK_STR(fmt(sc), "MaskedTensor(  0.0000, True)");
  mq_index_item a4[] = {ix_int(0), ix_int(1)};
  CHECK_STR(fmt(mq_index(S, m23, a4, 2)), "MaskedTensor(--, False)");
  mq_index_item a5[] = {{MQ_IX_ELLIPSIS, 0, 0, 0, 0, 0, 0, NULL}, ix_slice(1, 1, 0, 0, 0, 0)};
  CHECK_STR(fmt(mq_index(S, m23, a5, 2)), "MaskedTensor(\n  [\n    [      --,   2.0000],\n    [  4.0000,   5.0000]\n  ]\n)");
  mq_index_item a6[] = {{MQ_IX_NEWAXIS, 0, 0, 0, 0, 0, 0, NULL}};
  CHECK_STR(fmt(mq_index(S, m23, a6, 1)),
            "MaskedTensor(\n  [\n    [\n      [  0.0000,       --,   2.0000],\n      [      --,   4.0000,   5.0000]\n    ]\n  ]\n)");
  mq_index_item a7[] = {ix_all(), ix_slice(0, 0, 0, 0, 1, 2)};
  CHECK_STR(fmt(mq_index(S, m23, a7, 2)), "MaskedTensor(\n  [\n    [  0.0000,   2.0000],\n    [      --,   5.0000]\n  ]\n)");
  /* negative ints and clamped negative slices */
  mq_tensor *r = arange_f(5);
  mq_index_item n1[] = {ix_int(-1)};
  CHECK_STR(fmt(mq_index(S, r, n1, 1)), "tensor(4.)");
  mq_index_item n2[] = {ix_slice(1, -3, 1, 100, 0, 0)};
  CHECK_STR(fmt(mq_index(S, r, n2, 1)), "tensor([2., 3., 4.])");
  mq_index_item n3[] = {ix_slice(1, -100, 1, -2, 1, 2)};
  CHECK_STR(fmt(mq_index(S, r, n3, 1)), "tensor([0., 2.])");
  mq_index_item n4[] = {ix_slice(1, 4, 1, 1, 0, 0)};
  CHECK_STR(fmt(mq_index(S, r, n4, 1)), "tensor([])");

  ga = F32(1, SHAPE(3), VALS(1, 2, 3));
  EXPECT_ERROR(e_index_range, "index 5 is out of range for dimension 0 of size 3");
  EXPECT_ERROR(e_index_step, "slice step must be positive");
  EXPECT_ERROR(e_index_many, "too many indices for a 1-d tensor: 3 given");
  EXPECT_ERROR(e_index_ell, "an index can only have a single ellipsis (...)");
}

/* torch 1.13's printing of masked tensors, for the dtypes masq has */
static void test_print_masked(void) {
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F32, 50.0 / 3), VALS(1))), "MaskedTensor( 16.6667, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F32, 50.0 / 3), VALS(0))), "MaskedTensor(--, False)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F32, -1.5), VALS(1))), "MaskedTensor( -1.5000, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F32, 123456.789), VALS(1))), "MaskedTensor(123456.7891, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F64, 0.1), VALS(1))), "MaskedTensor(  0.1000, True, dtype=float64)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F32, NAN), VALS(1))), "MaskedTensor(     nan, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F32, -NAN), VALS(1))), "MaskedTensor(     nan, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F32, INFINITY), VALS(1))), "MaskedTensor(     inf, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_F32, -INFINITY), VALS(1))), "MaskedTensor(    -inf, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar_i64(S, 5), VALS(1))), "MaskedTensor(5, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar_i64(S, -42), VALS(0))), "MaskedTensor(--, False)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_BOOL, 1), VALS(1))), "MaskedTensor(True, True)");
  CHECK_STR(fmt(msk(mq_tensor_scalar(S, MQ_DT_BOOL, 0), VALS(0))), "MaskedTensor(--, False)");

  CHECK_STR(fmt(m0()), "MaskedTensor(\n  [  0.0000,   1.0000,       --,   3.0000,       --]\n)");
  CHECK_STR(fmt(msk(arange_f(5), VALS(0, 0, 1, 0, 1))), "MaskedTensor(\n  [      --,       --,   2.0000,       --,   4.0000]\n)");
  CHECK_STR(fmt(msk(arange_f(3), VALS(0, 0, 0))), "MaskedTensor(\n  [      --,       --,       --]\n)");
  CHECK_STR(fmt(msk(arange_f(3), VALS(1, 1, 1))), "MaskedTensor(\n  [  0.0000,   1.0000,   2.0000]\n)");
  CHECK_STR(fmt(msk(F32(1, SHAPE(5), VALS(-1.5, 12345.678, 3.0, 1e10, -0.0)), VALS(1, 1, 0, 1, 1))),
            "MaskedTensor(\n  [         -1.5000,       12345.6777,               --, 10000000000.0000,\n            -0.0000]\n)");
  CHECK_STR(fmt(msk(F32(1, SHAPE(4), VALS(-1.5, 12345.678, 3.0, 1e10)), VALS(1, 1, 1, 1))),
            "MaskedTensor(\n  [         -1.5000,       12345.6777,           3.0000, 10000000000.0000]\n)");
  CHECK_STR(fmt(msk(F32(1, SHAPE(4), VALS(NAN, INFINITY, -INFINITY, 1.0)), VALS(1, 1, 1, 0))),
            "MaskedTensor(\n  [     nan,      inf,     -inf,       --]\n)");
  CHECK_STR(fmt(msk(F32(1, SHAPE(4), VALS(1e-5, 0.00005, 0.00004999, -1e-9)), VALS(1, 1, 1, 1))),
            "MaskedTensor(\n  [  0.0000,   0.0000,   0.0000,  -0.0000]\n)");
  CHECK_STR(fmt(msk(mk(MQ_DT_F64, 1, SHAPE(2), VALS(1.0, 2.5)), VALS(1, 0))),
            "MaskedTensor(\n  [  1.0000,       --],\n  dtype=float64\n)");
  /* ints: aligned (torch: "[1,       --, 333, 4444]") */
  CHECK_STR(fmt(msk(I64(1, SHAPE(4), VALS(1, 22, 333, 4444)), VALS(1, 0, 1, 1))),
            "MaskedTensor(\n  [       1,       --,      333,     4444]\n)");
  CHECK_STR(fmt(msk(I64(1, SHAPE(3), VALS(1, 123456789012, 3)), VALS(1, 0, 1))),
            "MaskedTensor(\n  [       1,       --,        3]\n)");
  CHECK_STR(fmt(msk(I64(1, SHAPE(3), VALS(1, 123456789012, 3)), VALS(0, 1, 1))),
            "MaskedTensor(\n  [          --, 123456789012,            3]\n)");
  CHECK_STR(fmt(msk(I64(1, SHAPE(3), VALS(1, 22, 333)), VALS(1, 1, 1))), "MaskedTensor(\n  [  1,  22, 333]\n)");
  CHECK_STR(fmt(msk(I64(1, SHAPE(3), VALS(-1, 0, 7)), VALS(1, 0, 1))), "MaskedTensor(\n  [      -1,       --,        7]\n)");
  CHECK_STR(fmt(msk(BOOLS(1, SHAPE(3), VALS(1, 0, 1)), VALS(1, 1, 0))), "MaskedTensor(\n  [    True,    False,       --]\n)");
  CHECK_STR(fmt(msk(F32(1, SHAPE(1), VALS(3)), VALS(1))), "MaskedTensor(\n  [  3.0000]\n)");
  CHECK_STR(fmt(msk(F32(1, SHAPE(1), VALS(3)), VALS(0))), "MaskedTensor(\n  [      --]\n)");
  /* empty: torch raises; we print */
  CHECK_STR(fmt(msk(F32(1, SHAPE(0), NULL), NULL)), "MaskedTensor(\n  []\n)");
  CHECK_STR(fmt(msk(F32(2, SHAPE(2, 0), NULL), NULL)), "MaskedTensor(\n  [\n    [],\n    []\n  ]\n)");
  CHECK_STR(fmt(msk(F32(2, SHAPE(0, 3), NULL), NULL)), "MaskedTensor(\n  [\n  \n  ]\n)");

  CHECK_STR(fmt(msk(arange_f(6), VALS(1, 0, 1, 0, 1, 1))), "MaskedTensor(\n  [  0.0000,       --,   2.0000,       --,   4.0000,   5.0000]\n)");
  CHECK_STR(fmt(msk(F32(2, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5)), VALS(1, 0, 1, 0, 1, 1))),
            "MaskedTensor(\n  [\n    [  0.0000,       --,   2.0000],\n    [      --,   4.0000,   5.0000]\n  ]\n)");
  CHECK_STR(fmt(msk(F32(2, SHAPE(2, 3), VALS(1.0, 123456.0, 2.0, 3.0, 4.0, 5.0)), VALS(1, 1, 0, 1, 0, 1))),
            "MaskedTensor(\n  [\n    [     1.0000, 123456.0000,          --],\n    [     3.0000,          --,      5.0000]\n  ]\n)");
  CHECK_STR(fmt(msk(I64(2, SHAPE(2, 3), VALS(0, 0, 3, 4, 0, 5)), VALS(0, 0, 1, 0, 0, 1))),
            "MaskedTensor(\n  [\n    [      --,       --,        3],\n    [      --,       --,        5]\n  ]\n)");
  CHECK_STR(fmt(msk(BOOLS(2, SHAPE(2, 2), VALS(1, 0, 0, 1)), VALS(1, 0, 1, 1))),
            "MaskedTensor(\n  [\n    [    True,       --],\n    [   False,     True]\n  ]\n)");
  CHECK_STR(fmt(msk(F32(2, SHAPE(1, 1), VALS(2)), VALS(1))), "MaskedTensor(\n  [\n    [  2.0000]\n  ]\n)");
  CHECK_STR(fmt(msk(F32(3, SHAPE(2, 2, 2), VALS(0, 1, 2, 3, 4, 5, 6, 7)), VALS(1, 0, 1, 1, 0, 0, 1, 0))),
            "MaskedTensor(\n  [\n    [\n      [  0.0000,       --],\n      [  2.0000,   3.0000]\n    ],\n"
            "    [\n      [      --,       --],\n      [  6.0000,       --]\n    ]\n  ]\n)");
  CHECK_STR(fmt(msk(F32(4, SHAPE(1, 2, 1, 2), VALS(0, 1, 2, 3)), VALS(1, 0, 0, 1))),
            "MaskedTensor(\n  [\n    [\n      [\n        [  0.0000,       --]\n      ],\n      [\n"
            "        [      --,   3.0000]\n      ]\n    ]\n  ]\n)");
  CHECK_STR(fmt(msk(I64(3, SHAPE(2, 2, 2), VALS(0, 1, 2, 3, 4, 5, 6, 7)), VALS(1, 0, 1, 1, 0, 0, 1, 0))),
            "MaskedTensor(\n  [\n    [\n      [       0,       --],\n      [       2,        3]\n    ],\n"
            "    [\n      [      --,       --],\n      [       6,       --]\n    ]\n  ]\n)");
  /* colour: only the dashes change */
  CHECK_STR(fmt_c(msk(arange_f(2), VALS(1, 0)), true), "MaskedTensor(\n  [  0.0000,       \x1b[2m--\x1b[0m]\n)");
  CHECK_STR(fmt_c(msk(mq_tensor_scalar(S, MQ_DT_F32, 1), VALS(0)), true), "MaskedTensor(\x1b[2m--\x1b[0m, False)");
  /* large: summarized */
  mq_tensor *big = mq_masked(S, mq_arange(S, 0, 2000, 1, MQ_DT_F32),
                             mq_binary(S, MQ_BIN_NE, mq_arange(S, 0, 2000, 1, MQ_DT_I64), weak_int(1998)));
  CHECK_STR(fmt(big), "MaskedTensor(\n  [   0.0000,    1.0000,    2.0000,       ..., 1997.0000,        --, 1999.0000]\n)");
  mq_tensor *b2 = mq_masked(S, mq_tensor_full(S, MQ_DT_F32, 2, SHAPE(40, 40), 1), mq_tensor_scalar(S, MQ_DT_BOOL, 1));
  CHECK_STR(fmt(b2), "MaskedTensor(\n  [\n"
                     "    [  1.0000,   1.0000,   1.0000,      ...,   1.0000,   1.0000,   1.0000],\n"
                     "    [  1.0000,   1.0000,   1.0000,      ...,   1.0000,   1.0000,   1.0000],\n"
                     "    [  1.0000,   1.0000,   1.0000,      ...,   1.0000,   1.0000,   1.0000],\n"
                     "    ...,\n"
                     "    [  1.0000,   1.0000,   1.0000,      ...,   1.0000,   1.0000,   1.0000],\n"
                     "    [  1.0000,   1.0000,   1.0000,      ...,   1.0000,   1.0000,   1.0000],\n"
                     "    [  1.0000,   1.0000,   1.0000,      ...,   1.0000,   1.0000,   1.0000]\n  ]\n)");
}

static void test_print_plain(void) {
  CHECK_STR(fmt(mq_tensor_scalar(S, MQ_DT_F32, 3)), "tensor(3.)");
  CHECK_STR(fmt(mq_tensor_scalar(S, MQ_DT_F32, 1.5410)), "tensor(1.5410)");
  CHECK_STR(fmt(mq_tensor_scalar(S, MQ_DT_F32, 12.5)), "tensor(12.5000)");
  CHECK_STR(fmt(mq_tensor_scalar(S, MQ_DT_F32, NAN)), "tensor(nan)");
  CHECK_STR(fmt(mq_tensor_scalar(S, MQ_DT_F32, -0.0)), "tensor(-0.)");
  CHECK_STR(fmt(mq_tensor_scalar_i64(S, 5)), "tensor(5)");
  CHECK_STR(fmt(mq_tensor_scalar(S, MQ_DT_BOOL, 1)), "tensor(True)");
  CHECK_STR(fmt(mq_tensor_scalar(S, MQ_DT_F64, 0.5)), "tensor(0.5000, dtype=float64)");
  CHECK_STR(fmt(arange_f(5)), "tensor([0., 1., 2., 3., 4.])");
  CHECK_STR(fmt(BOOLS(1, SHAPE(5), VALS(1, 1, 0, 1, 0))), "tensor([ True,  True, False,  True, False])");
  mq_tensor *a = m0();
  CHECK_STR(fmt(mq_get_mask(S, a)), "tensor([ True,  True, False,  True, False])");
  CHECK_STR(fmt(mq_get_data(S, a)), "tensor([0., 1., 2., 3., 4.])");
  CHECK_STR(fmt(mq_to_tensor(S, a, 0)), "tensor([0., 1., 0., 3., 0.])");
  CHECK_STR(fmt(mq_to_tensor(S, a, NAN)), "tensor([0., 1., nan, 3., nan])");
  CHECK_STR(fmt(mq_to_tensor(S, a, -1)), "tensor([ 0.,  1., -1.,  3., -1.])");
  CHECK_STR(fmt(mq_get_mask(S, arange_f(2))), "tensor([True, True])");
  mq_tensor *mi = msk(I64(2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6)), VALS(1, 0, 1, 0, 0, 0));
  CHECK_STR(fmt(mq_to_tensor(S, mi, 0.5)), "tensor([[1, 0, 3],\n        [0, 0, 0]])");
  /* scientific notation, wrapped at 80 columns */
  mq_tensor *g = F32(1, SHAPE(11), VALS(exp(-10), exp(-5), 0, 0, 0, 0, 0, 0, 0, NAN, NAN));
  CHECK_STR(fmt(g), "tensor([4.5400e-05, 6.7379e-03, 0.0000e+00, 0.0000e+00, 0.0000e+00, 0.0000e+00,\n"
                    "        0.0000e+00, 0.0000e+00, 0.0000e+00,        nan,        nan])");
  /* the nan* operators example: nan among floats, a masked mean */
  mq_tensor *y = F32(1, SHAPE(16), VALS(0, 1, 4, 9, 0, 5, 12, 21, 0, 9, 20, 33, 0, 13, 28, 45));
  CHECK_STR(fmt(y), "tensor([ 0.,  1.,  4.,  9.,  0.,  5., 12., 21.,  0.,  9., 20., 33.,  0., 13.,\n        28., 45.])");
  mq_tensor *z = F32(1, SHAPE(16), VALS(NAN, 1, 4, 9, NAN, 5, 12, 21, NAN, 9, 20, 33, NAN, 13, 28, 45));
  CHECK_STR(fmt(z), "tensor([nan,  1.,  4.,  9., nan,  5., 12., 21., nan,  9., 20., 33., nan, 13.,\n        28., 45.])");
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_MEAN, y, 0, NULL, false)), "tensor(12.5000)");
  mq_tensor *ym = msk(y, VALS(0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1)); /* y != 0 */
  CHECK_STR(fmt(mq_reduce(S, MQ_RED_MEAN, ym, 0, NULL, false)), "MaskedTensor( 16.6667, True)");
  mq_tensor *n16 = mq_tensor_full(S, MQ_DT_F32, 1, SHAPE(16), NAN);
  CHECK_STR(fmt(n16), "tensor([nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan, nan])");
  /* the masked Adagrad example's values */
  mq_tensor *ss = F32(2, SHAPE(2, 4), VALS(0.5, 0.5, 9.5, 0.5, 16.5, 0.5, 25.5, 0.5));
  CHECK_STR(fmt(ss), "tensor([[ 0.5000,  0.5000,  9.5000,  0.5000],\n        [16.5000,  0.5000, 25.5000,  0.5000]])");
  mq_tensor *pm = F32(2, SHAPE(2, 4), VALS(0, 1, 1.9027, 3, 3.9015, 5, 5.9010, 7));
  CHECK_STR(fmt(pm), "tensor([[0.0000, 1.0000, 1.9027, 3.0000],\n        [3.9015, 5.0000, 5.9010, 7.0000]])");
  /* empty, dtype suffixes */
  CHECK_STR(fmt(F32(1, SHAPE(0), NULL)), "tensor([])");
  CHECK_STR(fmt(F32(2, SHAPE(2, 0), NULL)), "tensor([], size=(2, 0))");
  CHECK_STR(fmt(I64(1, SHAPE(0), NULL)), "tensor([], dtype=int64)");
  CHECK_STR(fmt(mk(MQ_DT_F64, 1, SHAPE(2), VALS(1, 2))), "tensor([1., 2.], dtype=float64)");
  CHECK_STR(fmt(mk(MQ_DT_F64, 1, SHAPE(2), VALS(1.25, 2))), "tensor([1.2500, 2.0000], dtype=float64)");
  CHECK_STR(fmt(F32(1, SHAPE(2), VALS(1e9, 1))), "tensor([1.0000e+09, 1.0000e+00])");
  CHECK_STR(fmt(F32(1, SHAPE(3), VALS(INFINITY, -INFINITY, 2))), "tensor([inf, -inf, 2.])");
  /* summarized */
  CHECK_STR(fmt(mq_arange(S, 0, 2000, 1, MQ_DT_I64)), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  CHECK_STR(fmt(mq_arange(S, 0, 2000, 1, MQ_DT_F32)),
            "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n        1.9990e+03])");
  CHECK_STR(fmt(mq_tensor_full(S, MQ_DT_F32, 2, SHAPE(100, 100), 0)),
            "tensor([[0., 0., 0.,  ..., 0., 0., 0.],\n        [0., 0., 0.,  ..., 0., 0., 0.],\n"
            "        [0., 0., 0.,  ..., 0., 0., 0.],\n        ...,\n        [0., 0., 0.,  ..., 0., 0., 0.],\n"
            "        [0., 0., 0.,  ..., 0., 0., 0.],\n        [0., 0., 0.,  ..., 0., 0., 0.]])");
  mq_buf b = {0};
  mq_tensor_summary(S, &b, a);
  CHECK_STR(b.data, "float32 tensor (5,), masked");
  mq_buf_free(S, &b);
}

static void e_ragged(void) {
  mq_list *outer = mq_list_new(S, 2), *l1 = mq_list_new(S, 3), *l2 = mq_list_new(S, 2);
  for (int i = 0; i < 3; i++) mq_list_push(S, l1, mq_int(i));
  for (int i = 0; i < 2; i++) mq_list_push(S, l2, mq_int(i));
  mq_list_push(S, outer, mq_objv(l1));
  mq_list_push(S, outer, mq_objv(l2));
  mq_tensor_from_value(S, mq_objv(outer), "x");
}
static void e_arange0(void) { mq_arange(S, 0, 1, 0, MQ_DT_F32); }
static void e_item_masked(void) { mq_tensor_item(S, msk(mq_tensor_scalar(S, MQ_DT_F32, 1), VALS(0))); }

static void test_creation(void) {
  mq_list *outer = mq_list_new(S, 2);
  for (int r = 0; r < 2; r++) {
    mq_list *row = mq_list_new(S, 3);
    for (int i = 0; i < 3; i++) mq_list_push(S, row, r ? mq_float(i + 0.5) : mq_int(i));
    mq_list_push(S, outer, mq_objv(row));
  }
  mq_tensor *t = mq_tensor_from_value(S, mq_objv(outer), "x");
  CHECK(t->dtype == MQ_DT_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3);
  CHECK_STR(fmt(t), "tensor([[0.0000, 1.0000, 2.0000],\n        [0.5000, 1.5000, 2.5000]])");
  mq_list *bl = mq_list_new(S, 2);
  mq_list_push(S, bl, mq_bool(true));
  mq_list_push(S, bl, mq_bool(false));
  CHECK(mq_tensor_from_value(S, mq_objv(bl), "x")->dtype == MQ_DT_BOOL);
  mq_list_push(S, bl, mq_int(7));
  CHECK_STR(fmt(mq_tensor_from_value(S, mq_objv(bl), "x")), "tensor([1, 0, 7])");
  mq_list_push(S, bl, mq_objv(mq_tensor_scalar(S, MQ_DT_F32, 2.5)));
  CHECK_STR(fmt(mq_tensor_from_value(S, mq_objv(bl), "x")), "tensor([1.0000, 0.0000, 7.0000, 2.5000])");
  CHECK_STR(fmt(mq_tensor_from_value(S, mq_objv(mq_list_new(S, 0)), "x")), "tensor([])");
  mq_tensor *w = mq_tensor_from_value(S, mq_float(2.5), "x");
  CHECK(w->weak && w->ndim == 0 && w->dtype == MQ_DT_F64); /* full value; promotes as float32 */
  EXPECT_ERROR(e_ragged, "ragged nested list: expected 3 elements at depth 1, got 2");
  CHECK_STR(fmt(mq_arange(S, 1, 2, 0.25, MQ_DT_F32)), "tensor([1.0000, 1.2500, 1.5000, 1.7500])");
  CHECK_STR(fmt(mq_arange(S, 5, 0, -2, MQ_DT_I64)), "tensor([5, 3, 1])");
  CHECK(mq_arange(S, 0, -1, 1, MQ_DT_F32)->numel == 0);
  EXPECT_ERROR(e_arange0, "arange: step must be nonzero");
  mq_rng_seed(S, 1);
  mq_tensor *u = mq_rand(S, 1, SHAPE(1000), MQ_DT_F32);
  bool in_range = true;
  for (int i = 0; i < 1000; i++) in_range &= at(u, i) >= 0 && at(u, i) < 1;
  CHECK(in_range);
  mq_tensor *nrm = mq_randn(S, 1, SHAPE(10000), MQ_DT_F32);
  double mean = at(mq_reduce(S, MQ_RED_MEAN, nrm, 0, NULL, false), 0);
  CHECK(fabs(mean) < 0.05);
  CHECK(mq_tensor_item(S, weak_int(3)) == 3);
  EXPECT_ERROR(e_item_masked, "item: the only element is masked out");
  mq_tensor *f = mq_astype(S, F32(1, SHAPE(3), VALS(NAN, 1e30, -2.7)), MQ_DT_I64);
  CHECK(at(f, 2) == -2);
  CHECK_STR(fmt(mq_astype(S, F32(1, SHAPE(3), VALS(0, 0.5, NAN)), MQ_DT_BOOL)), "tensor([False,  True,  True])");
}

/* runtime/tensor/shape.c and index.c: which ops are views sharing storage (data
 * and mask alike) and which copy, and the element order of copies made from
 * strided inputs (the golden tests see values only). */
static bool shares(const mq_tensor *v, const mq_tensor *t) {
  return v->storage == t->storage && v->mask->storage == t->mask->storage;
}

static void test_shape_views(void) {
  mq_tensor *t = msk(arange_f(6), VALS(1, 0, 1, 1, 0, 1));
  t = mq_reshape(S, t, 2, SHAPE(2, 3));
  CHECK(shares(mq_reshape(S, t, 2, SHAPE(3, 2)), t));
  CHECK(shares(mq_flatten(S, t, 0, -1), t));
  CHECK(shares(mq_unsqueeze(S, t, 1), t));
  CHECK(shares(mq_squeeze(S, mq_unsqueeze(S, t, 0), 0, NULL), t));
  CHECK(shares(mq_transpose(S, t, 0, 1), t));
  CHECK(shares(mq_permute(S, t, 2, SHAPE(1, 0)), t));
  CHECK(shares(mq_t(S, t), t));
  CHECK(shares(mq_expand_sizes(S, t, 3, SHAPE(4, -1, -1)), t));
  CHECK(shares(mq_narrow(S, t, 1, 1, 2), t));
  CHECK(shares(mq_select(S, t, 0, 1), t));
  CHECK(mq_flip(S, t, 1, SHAPE(0))->storage != t->storage);
  mq_tensor *two[2] = {t, t};
  CHECK(mq_cat(S, 2, two, 0)->storage != t->storage);
  /* a transpose stays a view where its strides allow, else it is copied in
   * the transposed order (torch 1.13 keeps memory order: A.2 item 6) */
  mq_tensor *tt = mq_transpose(S, t, 0, 1);
  CHECK(shares(mq_unsqueeze(S, tt, 0), t));
  mq_tensor *flat = mq_reshape(S, tt, 1, SHAPE(-1));
  CHECK(flat->storage != t->storage && flat->mask->storage != t->mask->storage);
  const double want[6] = {0, 3, 1, 4, 2, 5}, valid[6] = {1, 1, 0, 0, 1, 1};
  for (int i = 0; i < 6; i++) CHECK(at(flat, i) == want[i] && at(flat->mask, i) == valid[i]);
  /* a broadcast mask (zero strides) that cannot take the new shape is
   * copied alone, in the same logical order */
  mq_tensor *b = mq_masked(S, mq_reshape(S, arange_f(6), 2, SHAPE(2, 3)),
                           BOOLS(1, SHAPE(3), VALS(1, 0, 1)));
  mq_tensor *bf = mq_reshape(S, b, 1, SHAPE(6));
  CHECK(bf->storage == b->storage && bf->mask->storage != b->mask->storage);
  for (int i = 0; i < 6; i++) CHECK(at(bf->mask, i) == (i % 3 != 1));
  CHECK(shares(mq_reshape(S, b, 3, SHAPE(2, 1, 3)), b));
}

static void all_tests(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  size_t mark = mq_pool_mark(S);
  test_promotion();
  test_errors_elementwise();
  test_broadcast();
  test_binary_masked();
  test_where();
  test_reductions();
  test_softmax();
  test_index();
  test_shape_views();
  test_print_masked();
  test_print_plain();
  test_creation();
  mq_pool_drain(S, mark);
}

int main(void) { return unit_main("test_runtime", all_tests); }
