/* binary.c - elementwise functions of two tensors: torch.masked's binary
 * list (add ... fmin, comparisons, bitwise ops) plus hypot, copysign, xlogy,
 * float_power and the logical ops, with numpy broadcasting and torch's type
 * promotion (weak scalars included).
 *
 * Masks: two masked operands need equal masks (the error counts the
 * differing positions and says how to go on); a plain operand or a number
 * takes the masked one's mask, broadcast to the result. The op computes on
 * all data; integer division checks for zero divisors only where valid. */
#include <math.h>

#include "ewise.h"

#define DEF_BIN(NAME, TI, TO, EXPR)                                            \
  static void NAME(mq_state *S, mq_iter *it, const double *prm) {              \
    (void)prm;                                                                 \
    ROWS_BEGIN(S, it)                                                          \
    TO *o = (TO *)it->p[0];                                                    \
    const TI *a = (const TI *)it->p[1], *b = (const TI *)it->p[2];             \
    int64_t n = it->n, sa = it->is[1], sb = it->is[2];                         \
    if (sa == 1 && sb == 1) {                                                  \
      for (int64_t i = 0; i < n; i++) { TI x = a[i], y = b[i]; o[i] = (TO)(EXPR); } \
    } else if (sa == 1 && sb == 0) {                                           \
      const TI y = b[0];                                                       \
      for (int64_t i = 0; i < n; i++) { TI x = a[i]; o[i] = (TO)(EXPR); }      \
    } else if (sa == 0 && sb == 1) {                                           \
      const TI x = a[0];                                                       \
      for (int64_t i = 0; i < n; i++) { TI y = b[i]; o[i] = (TO)(EXPR); }      \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i++) {                                        \
        TI x = a[i * sa], y = b[i * sb];                                       \
        o[i] = (TO)(EXPR);                                                     \
      }                                                                        \
    }                                                                          \
    ROWS_END                                                                   \
  }

/* --- integer helpers (no UB: zero divisors are checked before, but masked-out
 * slots still run through here, and INT64_MIN / -1 overflows) ------------- */

/* Shifts as torch: by 64 or more (or a negative amount) a left shift gives
 * 0 and a right shift the sign. */
static inline int64_t ishl(int64_t x, int64_t y) {
  return y < 0 || y >= 64 ? 0 : (int64_t)((uint64_t)x << y);
}
static inline int64_t ishr(int64_t x, int64_t y) {
  return y < 0 || y >= 64 ? (x < 0 ? -1 : 0) : x >> y;
}

/* --- float helpers (type-generic through FN, as in unary.c) ----------------- */

#define DEF_FLOAT_HELPERS(T, FN)                                               \
  static inline T fmod_floor_##T(T x, T y) {                                   \
    T mod = FN(fmod)(x, y);                                                    \
    return mod != 0 && ((y < 0) != (mod < 0)) ? mod + y : mod;                 \
  }                                                                            \
  static inline T logaddexp_##T(T x, T y) {                                    \
    if (FN(fabs)(x) == (T)INFINITY && x == y) return x;                        \
    T m = x > y ? x : y;                                                       \
    return m + FN(log1p)(FN(exp)(-FN(fabs)(x - y)));                           \
  }                                                                            \
  static inline T logaddexp2_##T(T x, T y) {                                   \
    if (FN(fabs)(x) == (T)INFINITY && x == y) return x;                        \
    T m = x > y ? x : y;                                                       \
    return m + FN(log1p)(FN(exp2)(-FN(fabs)(x - y))) / (T)0.69314718055994530942; \
  }                                                                            \
  static inline T xlogy_##T(T x, T y) {                                        \
    if (y != y) return y;                                                      \
    return x == 0 ? (T)0 : x * FN(log)(y);                                     \
  }                                                                            \
  /* torch's pow(tensor, number): these exponents are other kernels there,  \
   * which differ from pow at -0, -inf and in rounding */                   \
  static inline T pow_number_##T(T x, T y) {                                   \
    if (y == (T)0.5) return FN(sqrt)(x);                                      \
    if (y == (T)-0.5) return (T)1 / FN(sqrt)(x);                               \
    if (y == (T)2) return x * x;                                               \
    if (y == (T)3) return x * x * x;                                           \
    if (y == (T)-1) return (T)1 / x;                                           \
    if (y == (T)-2) return (T)1 / (x * x);                                     \
    return FN(pow)(x, y);                                                      \
  }
#define FNF(name) name##f
#define FND(name) name
DEF_FLOAT_HELPERS(float, FNF)
DEF_FLOAT_HELPERS(double, FND)

/* torch's div_floor_floating, for float64: floor of the exact quotient,
 * not of the rounded x / y; a zero divisor gives x / y (inf or NaN). */
static inline double fdiv_floor_double(double x, double y) {
  if (y == 0) return x / y;
  double mod = fmod(x, y), div = (x - mod) / y;
  if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign(0.0, x / y);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1 : fl;
}

/* float32 floor division in double: the double quotient of two floats is
 * never rounded across an integer (their exact quotient is at least about
 * 2^-48 relatively away from one), so floor() of it is exact, and it
 * spares fmodf, which costs ~10x a division. Above 2^24 the result is the
 * exact floor correctly rounded, where torch's float32 formula can be off
 * by a few units. An infinite operand takes torch's formula, as Python
 * does: inf // y is NaN, and x // inf is -1 when the signs differ. */
static inline float fdiv_floor_float(float x, float y) {
  if (y == 0) return x / y;
  if (MQ_UNLIKELY(!isfinite(x) || !isfinite(y))) return (float)fdiv_floor_double(x, y);
  return (float)floor((double)x / (double)y);
}

/* NaN-propagating extrema (torch.maximum); fmax/fmin ignore NaN. */
#define MAXP(x, y) ((x) > (y) || (x) != (x) ? (x) : (y))
#define MINP(x, y) ((x) < (y) || (x) != (x) ? (x) : (y))

/* --- kernels ------------------------------------------------------------------ */

/* Float ops, both float types. */
#define FLOAT_BIN(X)                                                           \
  X(add, x + y) X(sub, x - y) X(mul, x * y) X(div, x / y) X(pow, FN(pow)(x, y)) \
  X(floordiv, FH(fdiv_floor)(x, y)) X(rem, FH(fmod_floor)(x, y))               \
  X(fmod, FN(fmod)(x, y)) X(divtrunc, FN(trunc)(x / y)) X(atan2, FN(atan2)(x, y)) \
  X(logaddexp, FH(logaddexp)(x, y)) X(logaddexp2, FH(logaddexp2)(x, y))        \
  X(maximum, MAXP(x, y)) X(minimum, MINP(x, y)) X(fmax, FN(fmax)(x, y))        \
  X(fmin, FN(fmin)(x, y)) X(nextafter, FN(nextafter)(x, y))                    \
  X(hypot, FN(hypot)(x, y)) X(copysign, FN(copysign)(x, y))                    \
  X(xlogy, FH(xlogy)(x, y)) X(pow_number, FH(pow_number)(x, y))
#define DEF_FB32(name, EXPR) DEF_BIN(name##_F32, float, float, EXPR)
#define DEF_FB64(name, EXPR) DEF_BIN(name##_F64, double, double, EXPR)
#define FN(name) name##f
#define FH(name) name##_float
FLOAT_BIN(DEF_FB32)
#undef FH
#undef FN
#define FN(name) name
#define FH(name) name##_double
FLOAT_BIN(DEF_FB64)
#undef FH
#undef FN

DEF_BIN(add_I64, int64_t, int64_t, WADD(x, y))
DEF_BIN(sub_I64, int64_t, int64_t, WSUB(x, y))
DEF_BIN(mul_I64, int64_t, int64_t, WMUL(x, y))
DEF_BIN(pow_I64, int64_t, int64_t, mq_ipow(x, y))
DEF_BIN(floordiv_I64, int64_t, int64_t, mq_idiv_floor(x, y))
DEF_BIN(rem_I64, int64_t, int64_t, mq_imod_floor(x, y))
DEF_BIN(fmod_I64, int64_t, int64_t, mq_imod_trunc(x, y))
DEF_BIN(divtrunc_I64, int64_t, int64_t, mq_idiv_trunc(x, y))
DEF_BIN(maximum_I64, int64_t, int64_t, x > y ? x : y)
DEF_BIN(minimum_I64, int64_t, int64_t, x < y ? x : y)
DEF_BIN(shl_I64, int64_t, int64_t, ishl(x, y))
DEF_BIN(shr_I64, int64_t, int64_t, ishr(x, y))
DEF_BIN(band_I64, int64_t, int64_t, x & y)
DEF_BIN(bor_I64, int64_t, int64_t, x | y)
DEF_BIN(bxor_I64, int64_t, int64_t, x ^ y)
/* bool arithmetic: add is or, mul is and, as torch */
DEF_BIN(or_BOOL, uint8_t, uint8_t, x | y)
DEF_BIN(and_BOOL, uint8_t, uint8_t, x & y)
DEF_BIN(xor_BOOL, uint8_t, uint8_t, x ^ y)

/* Comparisons and logical ops: bool results for every compute dtype. */
#define DEF_CMP(E, n, T, s)                                                    \
  DEF_BIN(lt_##E, T, uint8_t, x < y)                                           \
  DEF_BIN(le_##E, T, uint8_t, x <= y)                                          \
  DEF_BIN(gt_##E, T, uint8_t, x > y)                                           \
  DEF_BIN(ge_##E, T, uint8_t, x >= y)                                          \
  DEF_BIN(eq_##E, T, uint8_t, x == y)                                          \
  DEF_BIN(ne_##E, T, uint8_t, x != y)                                          \
  DEF_BIN(land_##E, T, uint8_t, (x != 0) & (y != 0))                           \
  DEF_BIN(lor_##E, T, uint8_t, (x != 0) | (y != 0))                            \
  DEF_BIN(lxor_##E, T, uint8_t, (x != 0) ^ (y != 0))
MQ_DTYPES(DEF_CMP)

/* --- the table ------------------------------------------------------------------ */

/* How the compute dtype follows the promoted one: ARITH keeps it; FLOAT
 * computes ints and bools in float32 (true division, atan2, ...); F64
 * always computes in float64 (float_power); CMP keeps it and answers bool;
 * INT wants bool or int64 (bitwise ops). */
enum { CL_ARITH, CL_FLOAT, CL_F64, CL_CMP, CL_INT };

typedef struct binary_def {
  uint8_t cls;
  bool int_divisor; /* integer kernels need nonzero valid divisors */
  mq_ewise_fn k[MQ_DT__COUNT];
} binary_def;

#define FK(op) op##_F32, op##_F64
#define ALL(op) {op##_BOOL, op##_I64, op##_F32, op##_F64}

static const binary_def defs[MQ_BIN__COUNT] = {
    [MQ_BIN_ADD] = {CL_ARITH, false, {or_BOOL, add_I64, FK(add)}},
    [MQ_BIN_SUB] = {CL_ARITH, false, {NULL, sub_I64, FK(sub)}},
    [MQ_BIN_MUL] = {CL_ARITH, false, {and_BOOL, mul_I64, FK(mul)}},
    [MQ_BIN_DIV] = {CL_FLOAT, false, {NULL, NULL, FK(div)}},
    [MQ_BIN_POW] = {CL_ARITH, false, {NULL, pow_I64, FK(pow)}},
    [MQ_BIN_FLOAT_POWER] = {CL_F64, false, {NULL, NULL, FK(pow)}},
    [MQ_BIN_FLOORDIV] = {CL_ARITH, true, {NULL, floordiv_I64, FK(floordiv)}},
    [MQ_BIN_REM] = {CL_ARITH, true, {NULL, rem_I64, FK(rem)}},
    [MQ_BIN_FMOD] = {CL_ARITH, true, {NULL, fmod_I64, FK(fmod)}},
    [MQ_BIN_DIVTRUNC] = {CL_ARITH, true, {NULL, divtrunc_I64, FK(divtrunc)}},
    [MQ_BIN_MAXIMUM] = {CL_ARITH, false, {or_BOOL, maximum_I64, FK(maximum)}},
    [MQ_BIN_MINIMUM] = {CL_ARITH, false, {and_BOOL, minimum_I64, FK(minimum)}},
    [MQ_BIN_FMAX] = {CL_ARITH, false, {or_BOOL, maximum_I64, FK(fmax)}},
    [MQ_BIN_FMIN] = {CL_ARITH, false, {and_BOOL, minimum_I64, FK(fmin)}},
    [MQ_BIN_ATAN2] = {CL_FLOAT, false, {NULL, NULL, FK(atan2)}},
    [MQ_BIN_LOGADDEXP] = {CL_FLOAT, false, {NULL, NULL, FK(logaddexp)}},
    [MQ_BIN_LOGADDEXP2] = {CL_FLOAT, false, {NULL, NULL, FK(logaddexp2)}},
    [MQ_BIN_NEXTAFTER] = {CL_FLOAT, false, {NULL, NULL, FK(nextafter)}},
    [MQ_BIN_HYPOT] = {CL_FLOAT, false, {NULL, NULL, FK(hypot)}},
    [MQ_BIN_COPYSIGN] = {CL_FLOAT, false, {NULL, NULL, FK(copysign)}},
    [MQ_BIN_XLOGY] = {CL_FLOAT, false, {NULL, NULL, FK(xlogy)}},
    [MQ_BIN_LT] = {CL_CMP, false, ALL(lt)}, [MQ_BIN_LE] = {CL_CMP, false, ALL(le)},
    [MQ_BIN_GT] = {CL_CMP, false, ALL(gt)}, [MQ_BIN_GE] = {CL_CMP, false, ALL(ge)},
    [MQ_BIN_EQ] = {CL_CMP, false, ALL(eq)}, [MQ_BIN_NE] = {CL_CMP, false, ALL(ne)},
    [MQ_BIN_LAND] = {CL_CMP, false, ALL(land)}, [MQ_BIN_LOR] = {CL_CMP, false, ALL(lor)},
    [MQ_BIN_LXOR] = {CL_CMP, false, ALL(lxor)},
    [MQ_BIN_BAND] = {CL_INT, false, {and_BOOL, band_I64, NULL, NULL}},
    [MQ_BIN_BOR] = {CL_INT, false, {or_BOOL, bor_I64, NULL, NULL}},
    [MQ_BIN_BXOR] = {CL_INT, false, {xor_BOOL, bxor_I64, NULL, NULL}},
    [MQ_BIN_SHL] = {CL_INT, false, {NULL, shl_I64, NULL, NULL}},
    [MQ_BIN_SHR] = {CL_INT, false, {NULL, shr_I64, NULL, NULL}},
};

static const char *const bin_names[] = {
#define X(E, s) s,
    MQ_BINARY_OPS(X)
#undef X
};

/* --- masks --------------------------------------------------------------------- */

static const char mask_hint[] =
    "(use intersect(a, b) to keep only positions valid in both, or to_tensor(x, fill) to drop a mask)";

/* The result mask of a binary op on a and b, broadcast to [shape]. */
static mq_tensor *binary_mask(mq_state *S, mq_tensor *a, mq_tensor *b, int nd,
                              const int64_t *shape) {
  if (a->mask && b->mask) {
    if (!mq_same_shape(a, b))
      mq_error(S, "masks do not match: shapes %s and %s differ %s",
               mq_shape_str(S, a->ndim, a->shape), mq_shape_str(S, b->ndim, b->shape), mask_hint);
    if (!mq_same_view(a->mask, b->mask)) {
      int64_t diff = mq_kernel_count_ne(S, a->mask, b->mask);
      if (diff)
        mq_error(S, "masks do not match: %lld of %lld positions differ %s", (long long)diff,
                 (long long)a->numel, mask_hint);
    }
    return a->mask;
  }
  if (a->mask) return mq_expand(S, a->mask, nd, shape);
  if (b->mask) return mq_expand(S, b->mask, nd, shape);
  return NULL;
}

/* Integer powers with negative exponents have no integer result; only valid
 * exponents count. */
static void check_int_exponent(mq_state *S, mq_tensor *e, mq_tensor *m) {
  mq_tensor *ts[2] = {e, m ? m : e};
  mq_iter it;
  mq_iter_init(&it, 2, ts);
  bool neg = false;
  for (int64_t r = 0; r < it.rows; r++, mq_iter_next(&it)) {
    const int64_t *p = (const int64_t *)it.p[0];
    const uint8_t *v = (const uint8_t *)it.p[1];
    if (m)
      for (int64_t i = 0; i < it.n; i++) neg |= v[i * it.is[1]] && p[i * it.is[0]] < 0;
    else
      for (int64_t i = 0; i < it.n; i++) neg |= p[i * it.is[0]] < 0;
  }
  if (neg)
    mq_error(S, "integers to negative integer powers are not allowed (use a float base, "
                "e.g. float(x) ** n)");
}

/* --- the op ---------------------------------------------------------------------- */

/* A float number arrives as a weak float64 scalar holding its full value
 * (mq_tensor_from_value); this is it rounded to float32, still weak. */
static mq_tensor *f32_number(mq_state *S, mq_tensor *t) {
  if (!t->weak || t->ndim != 0 || t->dtype != MQ_DT_F64) return t;
  mq_tensor *r = mq_tensor_scalar(S, MQ_DT_F32, *(const double *)mq_tensor_data(t));
  r->weak = true;
  return r;
}

mq_ewise_fn mq_binary_float_kernel(mq_binop op, mq_dtype dt) {
  if ((unsigned)op >= MQ_BIN__COUNT || !mq_dtype_is_float(dt)) return NULL;
  if (defs[op].cls != CL_ARITH && defs[op].cls != CL_FLOAT) return NULL;
  return defs[op].k[dt];
}

mq_ewise_fn mq_pow_number_kernel(mq_dtype dt) {
  return dt == MQ_DT_F32 ? pow_number_F32 : dt == MQ_DT_F64 ? pow_number_F64 : NULL;
}

mq_tensor *mq_binary(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b) {
  if ((unsigned)op >= MQ_BIN__COUNT) mq_error(S, "bad binary op");
  const binary_def *def = &defs[op];
  mq_tensor *in[2] = {a, b};
  mq_dtype ct = mq_result_type(2, in), out_dt;
  switch (def->cls) {
  case CL_FLOAT: if (!mq_dtype_is_float(ct)) ct = MQ_DT_F32; break;
  case CL_F64: ct = MQ_DT_F64; break;
  case CL_INT:
    if (mq_dtype_is_float(ct))
      mq_error(S, "%s is only defined for bool and int64 tensors, got %s and %s", bin_names[op],
               mq_dtype_name((mq_dtype)a->dtype), mq_dtype_name((mq_dtype)b->dtype));
    break;
  default: break;
  }
  if (ct == MQ_DT_BOOL && (op == MQ_BIN_POW || def->int_divisor)) ct = MQ_DT_I64;
  if (op == MQ_BIN_SUB && ct == MQ_DT_BOOL)
    mq_error(S, "subtraction, the `-` operator, with two bool tensors is not supported "
                "(use `^` or `&` with `~`)");
  if (ct == MQ_DT_F32) { /* computed in float32, a float number is its float32 value, as in torch */
    a = in[0] = f32_number(S, a);
    b = in[1] = f32_number(S, b);
  }
  out_dt = def->cls == CL_CMP ? MQ_DT_BOOL : ct;
  mq_ewise_fn k = def->k[ct];
  if (!k) mq_error(S, "%s is not defined for %s tensors", bin_names[op], mq_dtype_name(ct));

  int64_t shape[MQ_MAX_DIMS + 1];
  if ((a->ndim > b->ndim ? a->ndim : b->ndim) > MQ_MAX_DIMS) mq_error(S, "too many dimensions");
  int nd = mq_broadcast_shapes(S, a->ndim, a->shape, b->ndim, b->shape, shape);
  mq_tensor *mask = binary_mask(S, a, b, nd, shape);

  /* x ** 2 is x * x: exact, and much faster than pow */
  if (op == MQ_BIN_POW && mq_dtype_is_float(ct) && b->numel == 1 && !b->mask && b->ndim <= a->ndim &&
      a->dtype == ct && mq_tensor_item(S, b) == 2.0)
    b = a, k = defs[MQ_BIN_MUL].k[ct];
  else if ((op == MQ_BIN_POW || op == MQ_BIN_FLOAT_POWER) && mq_dtype_is_float(ct) && in[1]->weak)
    k = mq_pow_number_kernel(ct);

  mq_tensor *x = mq_operand(S, a, ct, nd, shape), *y = mq_operand(S, b, ct, nd, shape);
  if (ct == MQ_DT_I64) {
    if (op == MQ_BIN_POW) check_int_exponent(S, y, mask);
    if (def->int_divisor) mq_check_int_divisor(S, y, mask, bin_names[op]);
  }
  mq_tensor *out = mq_tensor_new(S, out_dt, nd, shape);
  mq_tensor *ts[3] = {out, x, y};
  mq_iter it;
  mq_iter_init(&it, 3, ts);
  mq_ewise_run(S, k, &it, NULL);
  if (mask) mq_tensor_set_mask(S, out, mask);
  out->weak = in[0]->weak && in[1]->weak;
  mq_ag_binary(S, out, op, in[0], in[1]);
  return out;
}
