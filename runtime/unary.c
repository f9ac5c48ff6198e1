/* unary.c - elementwise functions of one tensor: torch.masked's unary list
 * for real dtypes (abs ... trunc), plus relu, isinf, isfinite, logical_not.
 *
 * Like every elementwise op they compute on all data, masked-out entries
 * included, and keep the mask: a masked-out slot may end up holding NaN,
 * but it is never unmasked, so no valid result changes.
 *
 * Kernels are generated from one element expression per op: the float ones
 * are instantiated twice, with FN(f) naming the float32 (f##f) and then the
 * float64 (f) libm function, so `FN(exp)(x)` becomes expf or exp. R is the
 * element type inside an expression; P0..P2 are the op's parameters. */
#include <float.h>
#include <math.h>

#include "ewise.h"

#define DEF_UNP(NAME, TI, TO, PRE, EXPR)                                       \
  static void NAME(mq_state *S, mq_iter *it, const double *prm) {              \
    typedef TI R; (void)sizeof(R);                                             \
    const double P0 = prm[0], P1 = prm[1], P2 = prm[2];                        \
    (void)P0, (void)P1, (void)P2;                                              \
    PRE;                                                                       \
    ROWS_BEGIN(S, it)                                                          \
    TO *o = (TO *)it->p[0];                                                    \
    const TI *a = (const TI *)it->p[1];                                        \
    int64_t n = it->n, sa = it->is[1];                                         \
    if (sa == 1)                                                               \
      for (int64_t i = 0; i < n; i++) { TI x = a[i]; o[i] = (TO)(EXPR); }      \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) { TI x = a[i * sa]; o[i] = (TO)(EXPR); } \
    ROWS_END                                                                   \
  }
#define DEF_UN(NAME, TI, TO, EXPR) DEF_UNP(NAME, TI, TO, (void)0, EXPR)

/* --- special functions libm lacks (double; float32 rounds the result) ------ */

static const double PI = 3.14159265358979323846;

/* Inverse error function: Giles' single-precision approximation ("Approximating
 * the erfinv function", 2010) refined by two Newton steps on erf. */
static double erfinv_d(double y) {
  if (!(y > -1 && y < 1)) {
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    return NAN;
  }
  double w = -log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    x = 3.43273939e-07 + x * w;
    x = -3.5233877e-06 + x * w;
    x = -4.39150654e-06 + x * w;
    x = 0.00021858087 + x * w;
    x = -0.00125372503 + x * w;
    x = -0.00417768164 + x * w;
    x = 0.246640727 + x * w;
    x = 1.50140941 + x * w;
  } else {
    w = sqrt(w) - 3.0;
    x = -0.000200214257;
    x = 0.000100950558 + x * w;
    x = 0.00134934322 + x * w;
    x = -0.00367342844 + x * w;
    x = 0.00573950773 + x * w;
    x = -0.0076224613 + x * w;
    x = 0.00943887047 + x * w;
    x = 1.00167406 + x * w;
    x = 2.83297682 + x * w;
  }
  x *= y;
  for (int k = 0; k < 2; k++) /* d/dx erf(x) = 2/sqrt(pi) exp(-x^2) */
    x -= (erf(x) - y) / (1.1283791670955126 * exp(-x * x));
  return x;
}

/* Digamma, as torch's calc_digamma: reflection for negative x, recurrence
 * up to x >= 10, then the asymptotic series. */
static double digamma_d(double x) {
  if (x == 0) return copysign(INFINITY, -x);
  double result = 0;
  if (x < 0) {
    if (x == trunc(x)) return NAN; /* poles at the negative integers */
    double q, r = modf(x, &q);
    result = -PI / tan(PI * r);
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + 2.25175258906672110764;
  static const double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2,
                             7.57575757575757575758E-3, -4.16666666666666666667E-3,
                             3.96825396825396825397E-3, -8.33333333333333333333E-3,
                             8.33333333333333333333E-2};
  double y = 0;
  if (x < 1.0e17) {
    double z = 1 / (x * x), p = 0;
    for (int i = 0; i < 7; i++) p = p * z + A[i];
    y = z * p;
  }
  return result + log(x) - 0.5 / x - y;
}

/* Modified Bessel function of order 0 by its power series: every term is
 * positive, so summing until terms stop mattering is accurate for any x
 * (about x/2 + 20 terms; overflow gives inf, as it should). */
static double i0_d(double x) {
  if (x != x) return x;
  double q = x * x / 4, term = 1, sum = 1;
  for (int k = 1; k < 100000 && term > sum * 1e-17; k++) {
    term *= q / ((double)k * (double)k);
    sum += term;
  }
  return sum;
}

/* --- float kernels (float32 and float64) ------------------------------------ */

/* Ops defined for floats; the ones also defined for ints have int kernels
 * below. */
#define FLOAT_OPS(X)                                                           \
  X(neg, -x) X(pos, x) X(abs, FN(fabs)(x))                                     \
  X(sign, (R)((0 < x) - (x < 0)))                                              \
  X(square, x * x) X(relu, x < 0 ? (R)0 : x)                                   \
  X(ceil, FN(ceil)(x)) X(floor, FN(floor)(x)) X(round, FN(nearbyint)(x))       \
  X(trunc, FN(trunc)(x)) X(frac, x - FN(trunc)(x))                             \
  X(exp, FN(exp)(x)) X(exp2, FN(exp2)(x)) X(expm1, FN(expm1)(x))               \
  X(log, FN(log)(x)) X(log2, FN(log2)(x)) X(log10, FN(log10)(x))               \
  X(log1p, FN(log1p)(x)) X(sqrt, FN(sqrt)(x)) X(rsqrt, (R)1 / FN(sqrt)(x))     \
  X(reciprocal, (R)1 / x) X(sin, FN(sin)(x)) X(cos, FN(cos)(x))                \
  X(tan, FN(tan)(x)) X(asin, FN(asin)(x)) X(acos, FN(acos)(x))                 \
  X(atan, FN(atan)(x)) X(sinh, FN(sinh)(x)) X(cosh, FN(cosh)(x))               \
  X(tanh, FN(tanh)(x)) X(asinh, FN(asinh)(x)) X(acosh, FN(acosh)(x))           \
  X(atanh, FN(atanh)(x)) X(sigmoid, (R)1 / ((R)1 + FN(exp)(-x)))               \
  X(erf, FN(erf)(x)) X(erfc, FN(erfc)(x)) X(lgamma, FN(lgamma)(x))             \
  X(erfinv, (R)erfinv_d(x)) X(digamma, (R)digamma_d(x)) X(i0, (R)i0_d(x))      \
  X(sinc, x == 0 ? (R)1 : FN(sin)((R)PI * x) / ((R)PI * x))                    \
  X(deg2rad, x * (R)(PI / 180)) X(rad2deg, x * (R)(180 / PI))                  \
  X(angle, x != x ? x : x < 0 ? (R)PI : (R)0)

#define DEF_F32(name, EXPR) DEF_UN(name##_F32, float, float, EXPR)
#define DEF_F64(name, EXPR) DEF_UN(name##_F64, double, double, EXPR)
#define FN(name) name##f
FLOAT_OPS(DEF_F32)
#undef FN
#define FN(name) name
FLOAT_OPS(DEF_F64)
#undef FN

/* Ops with parameters. round(x, decimals): torch's scaling, by 10^d or by
 * 10^-d for negative d. logit(x, eps): x clamped to [eps, 1 - eps] first
 * when eps is given (P0 not NaN). nan_to_num(x, nan, posinf, neginf): NaN
 * for posinf/neginf means the dtype's largest finite values. clamp(x, lo,
 * hi): NaN bounds are absent (comparisons with NaN are false), NaN x stays. */
#define PARAM_FLOAT_OPS(X, T, TMAX)                                            \
  X(round_dec, T, const int neg = P0 < 0; const T ten = (T)pow(10, fabs(P0)),  \
    neg ? FN(nearbyint)(x / ten) * ten : FN(nearbyint)(x * ten) / ten)          \
  X(logit, T, const int has = P0 == P0; const T lo = (T)P0; const T hi = (T)(1 - P0), \
    FN(log)(LOGIT_Z / ((T)1 - LOGIT_Z)))                                       \
  X(nan_to_num, T, const T nv = (T)P0; const T pv = P1 == P1 ? (T)P1 : TMAX;   \
    const T mv = P2 == P2 ? (T)P2 : -TMAX,                                     \
    x != x ? nv : x == (T)INFINITY ? pv : x == (T)-INFINITY ? mv : x)          \
  X(clamp, T, const T lo = (T)P0; const T hi = (T)P1, CLAMP_X > hi ? hi : CLAMP_X)
#define LOGIT_Z (has ? (x < lo ? lo : x > hi ? hi : x) : x)
#define CLAMP_X (x < lo ? lo : x)

#define DEF_P32(name, T, PRE, EXPR) DEF_UNP(name##_F32, T, T, PRE, EXPR)
#define DEF_P64(name, T, PRE, EXPR) DEF_UNP(name##_F64, T, T, PRE, EXPR)
#define FN(name) name##f
PARAM_FLOAT_OPS(DEF_P32, float, FLT_MAX)
#undef FN
#define FN(name) name
PARAM_FLOAT_OPS(DEF_P64, double, DBL_MAX)
#undef FN

/* --- integer and bool kernels -------------------------------------------- */

DEF_UN(neg_I64, int64_t, int64_t, WSUB(0, x))
DEF_UN(pos_I64, int64_t, int64_t, x)
DEF_UN(abs_I64, int64_t, int64_t, x < 0 ? WSUB(0, x) : x)
DEF_UN(sign_I64, int64_t, int64_t, (0 < x) - (x < 0))
DEF_UN(square_I64, int64_t, int64_t, WMUL(x, x))
DEF_UN(relu_I64, int64_t, int64_t, x < 0 ? 0 : x)
DEF_UN(bitnot_I64, int64_t, int64_t, ~x)
/* int64 bounds: NaN means none; a float bound rounds toward the inside */
DEF_UNP(clamp_I64, int64_t, int64_t,
        const int64_t lo = P0 == P0 ? mq_f2i(ceil(P0)) : INT64_MIN;
        const int64_t hi = P1 == P1 ? (P1 >= 9.2233720368547758e18 ? INT64_MAX : mq_f2i(floor(P1)))
                                    : INT64_MAX,
        CLAMP_X > hi ? hi : CLAMP_X)
DEF_UN(copy_BOOL, uint8_t, uint8_t, x)
DEF_UN(bitnot_BOOL, uint8_t, uint8_t, x ^ 1)

/* Predicates: bool results for every input dtype. */
#define PRED_OPS(X)                                                            \
  X(signbit, FN(signbit)(x) != 0, x < 0, x != x) X(isnan, x != x, x != x, x != x)  \
  X(isinf, FN(fabs)(x) == (R)INFINITY, x != x, x != x)                         \
  X(isfinite, x - x == 0, x == x, x == x) X(not, x == 0, x == 0, x == 0)
#define DEF_PRED(name, FEXPR, IEXPR, BEXPR)                                    \
  DEF_UN(name##_F32, float, uint8_t, FEXPR)                                    \
  DEF_UN(name##_F64, double, uint8_t, FEXPR)                                   \
  DEF_UN(name##_I64, int64_t, uint8_t, IEXPR)                                  \
  DEF_UN(name##_BOOL, uint8_t, uint8_t, BEXPR)
#define FN(name) name /* signbit and fabs are type-generic enough */
PRED_OPS(DEF_PRED)
#undef FN

/* --- the table ----------------------------------------------------------- */

/* How the result dtype follows the input's: FLOAT ops compute ints and
 * bools in float32; SAME ops keep the dtype; BOOL ops answer bool. */
enum { CL_FLOAT, CL_SAME, CL_BOOL };

typedef struct unary_def {
  uint8_t cls;
  mq_ewise_fn k[MQ_DT__COUNT]; /* by input dtype, after the FLOAT cast */
} unary_def;

#define FK(op) {NULL, NULL, op##_F32, op##_F64}
#define FLOAT(op) {CL_FLOAT, FK(op)}
#define PRED(op) {CL_BOOL, {op##_BOOL, op##_I64, op##_F32, op##_F64}}

static const unary_def defs[MQ_UN__COUNT] = {
    [MQ_UN_NEG] = {CL_SAME, {NULL, neg_I64, neg_F32, neg_F64}},
    [MQ_UN_POS] = {CL_SAME, {copy_BOOL, pos_I64, pos_F32, pos_F64}},
    [MQ_UN_ABS] = {CL_SAME, {copy_BOOL, abs_I64, abs_F32, abs_F64}},
    [MQ_UN_SIGN] = {CL_SAME, {copy_BOOL, sign_I64, sign_F32, sign_F64}},
    [MQ_UN_SQUARE] = {CL_SAME, {NULL, square_I64, square_F32, square_F64}},
    [MQ_UN_RELU] = {CL_SAME, {NULL, relu_I64, relu_F32, relu_F64}},
    [MQ_UN_CEIL] = {CL_SAME, {NULL, pos_I64, ceil_F32, ceil_F64}},
    [MQ_UN_FLOOR] = {CL_SAME, {NULL, pos_I64, floor_F32, floor_F64}},
    [MQ_UN_ROUND] = {CL_SAME, {NULL, pos_I64, round_F32, round_F64}},
    [MQ_UN_ROUND_DEC] = {CL_SAME, {NULL, pos_I64, round_dec_F32, round_dec_F64}},
    [MQ_UN_TRUNC] = {CL_SAME, {NULL, pos_I64, trunc_F32, trunc_F64}},
    [MQ_UN_FRAC] = {CL_SAME, {NULL, NULL, frac_F32, frac_F64}},
    [MQ_UN_NAN_TO_NUM] = {CL_SAME, {copy_BOOL, pos_I64, nan_to_num_F32, nan_to_num_F64}},
    [MQ_UN_CLAMP] = {CL_SAME, {NULL, clamp_I64, clamp_F32, clamp_F64}},
    [MQ_UN_BITNOT] = {CL_SAME, {bitnot_BOOL, bitnot_I64, NULL, NULL}},
    [MQ_UN_EXP] = FLOAT(exp), [MQ_UN_EXP2] = FLOAT(exp2), [MQ_UN_EXPM1] = FLOAT(expm1),
    [MQ_UN_LOG] = FLOAT(log), [MQ_UN_LOG2] = FLOAT(log2), [MQ_UN_LOG10] = FLOAT(log10),
    [MQ_UN_LOG1P] = FLOAT(log1p), [MQ_UN_SQRT] = FLOAT(sqrt), [MQ_UN_RSQRT] = FLOAT(rsqrt),
    [MQ_UN_RECIPROCAL] = FLOAT(reciprocal), [MQ_UN_SIN] = FLOAT(sin), [MQ_UN_COS] = FLOAT(cos),
    [MQ_UN_TAN] = FLOAT(tan), [MQ_UN_ASIN] = FLOAT(asin), [MQ_UN_ACOS] = FLOAT(acos),
    [MQ_UN_ATAN] = FLOAT(atan), [MQ_UN_SINH] = FLOAT(sinh), [MQ_UN_COSH] = FLOAT(cosh),
    [MQ_UN_TANH] = FLOAT(tanh), [MQ_UN_ASINH] = FLOAT(asinh), [MQ_UN_ACOSH] = FLOAT(acosh),
    [MQ_UN_ATANH] = FLOAT(atanh), [MQ_UN_SIGMOID] = FLOAT(sigmoid), [MQ_UN_LOGIT] = FLOAT(logit),
    [MQ_UN_ERF] = FLOAT(erf), [MQ_UN_ERFC] = FLOAT(erfc), [MQ_UN_ERFINV] = FLOAT(erfinv),
    [MQ_UN_LGAMMA] = FLOAT(lgamma), [MQ_UN_DIGAMMA] = FLOAT(digamma), [MQ_UN_I0] = FLOAT(i0),
    [MQ_UN_SINC] = FLOAT(sinc), [MQ_UN_DEG2RAD] = FLOAT(deg2rad),
    [MQ_UN_RAD2DEG] = FLOAT(rad2deg), [MQ_UN_ANGLE] = FLOAT(angle),
    [MQ_UN_SIGNBIT] = PRED(signbit), [MQ_UN_ISNAN] = PRED(isnan), [MQ_UN_ISINF] = PRED(isinf),
    [MQ_UN_ISFINITE] = PRED(isfinite), [MQ_UN_NOT] = PRED(not),
};

static const char *const un_names[] = {
#define X(E, s) s,
    MQ_UNARY_OPS(X)
#undef X
};

mq_tensor *mq_unary_p(mq_state *S, mq_unop op, mq_tensor *t, const double *prm) {
  if ((unsigned)op >= MQ_UN__COUNT) mq_error(S, "bad unary op");
  static const double none[3] = {NAN, NAN, NAN};
  const unary_def *def = &defs[op];
  mq_dtype in = (mq_dtype)t->dtype, out_dt;
  if (t->weak && t->ndim == 0 && in == MQ_DT_F64) in = MQ_DT_F32; /* a float number */
  if (def->cls == CL_FLOAT && !mq_dtype_is_float(in)) in = MQ_DT_F32;
  if (op == MQ_UN_SQUARE && in == MQ_DT_BOOL) in = MQ_DT_I64; /* as torch: True**2 is 1 */
  out_dt = def->cls == CL_BOOL ? MQ_DT_BOOL : in;
  mq_ewise_fn k = def->k[in];
  if (!k) {
    if (op == MQ_UN_NEG)
      mq_error(S, "negation, the `-` operator, on a bool tensor is not supported "
                  "(use `~` to invert a mask)");
    if (op == MQ_UN_BITNOT)
      mq_error(S, "bitwise_not, the `~` operator, is only defined for bool and int64 tensors, got %s",
               mq_dtype_name(in));
    mq_error(S, "%s is not defined for %s tensors%s", un_names[op], mq_dtype_name(in),
             in == MQ_DT_BOOL ? " (convert with long(x) or float(x) first)" : "");
  }
  mq_tensor *x = mq_operand(S, t, in, t->ndim, t->shape);
  mq_tensor *out = mq_tensor_new(S, out_dt, t->ndim, t->shape);
  mq_tensor *ts[2] = {out, x};
  mq_iter it;
  mq_iter_init(&it, 2, ts);
  mq_ewise_run(S, k, &it, prm ? prm : none);
  if (t->mask) mq_tensor_set_mask(S, out, t->mask);
  out->weak = t->weak;
  mq_ag_unary(S, out, op, t, prm);
  return out;
}

mq_tensor *mq_unary(mq_state *S, mq_unop op, mq_tensor *t) { return mq_unary_p(S, op, t, NULL); }

mq_ewise_fn mq_unary_float_kernel(mq_unop op, mq_dtype dt) {
  if ((unsigned)op >= MQ_UN__COUNT || !mq_dtype_is_float(dt) || defs[op].cls == CL_BOOL) return NULL;
  switch (op) { /* the ones with parameters */
  case MQ_UN_ROUND_DEC: case MQ_UN_LOGIT: case MQ_UN_NAN_TO_NUM: case MQ_UN_CLAMP: return NULL;
  default: return defs[op].k[dt];
  }
}

/* --- clamp ------------------------------------------------------------------- */

static bool scalar_bound(const mq_tensor *b) { return !b || (b->ndim == 0 && !b->mask); }

mq_tensor *mq_clamp(mq_state *S, mq_tensor *t, mq_tensor *lo, mq_tensor *hi) {
  if (!lo && !hi) mq_error(S, "clamp: give at least one of min and max");
  if (t->dtype == MQ_DT_BOOL) mq_error(S, "clamp is not defined for bool tensors");
  if (!scalar_bound(lo) || !scalar_bound(hi)) {
    /* tensor bounds: elementwise maximum and minimum (masks must agree) */
    if (lo) t = mq_binary(S, MQ_BIN_MAXIMUM, t, lo);
    if (hi) t = mq_binary(S, MQ_BIN_MINIMUM, t, hi);
    return t;
  }
  mq_tensor *in[3] = {t, lo, hi};
  int n = 1;
  if (lo) in[n++] = lo;
  if (hi) in[n++] = hi;
  mq_dtype dt = mq_result_type(n, in);
  if (dt == MQ_DT_BOOL) dt = (mq_dtype)t->dtype;
  double prm[3] = {lo ? mq_tensor_item(S, lo) : NAN, hi ? mq_tensor_item(S, hi) : NAN, NAN};
  return mq_unary_p(S, MQ_UN_CLAMP, mq_astype(S, t, dt), prm);
}
