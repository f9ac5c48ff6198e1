/* lib_math.c - the math builtins: unary and binary elementwise functions
 * (torch.masked's lists and their aliases), reductions, normalizations,
 * where and masked_fill, intersect, and the constants nan, inf and pi.
 * Thin bindings of runtime/tensor.h; the signature is the help text. */
#include <math.h>

#include "../runtime/autograd.h"
#include "stdlib.h"

#define T(i, what) mq_arg_tensor(S, args[i], what)
/* An operand combined with others: a float number keeps its full value as
 * a weak float64 scalar (it still promotes as float32). */
#define TW(i, what) mq_tensor_from_value(S, args[i], what)
#define RET(t) return mq_objv(t)

/* --- unary ------------------------------------------------------------------ */

#define UNARY(name, OP)                                                        \
  static mq_value lib_##name(mq_state *S, mq_value *args) {                    \
    RET(mq_unary(S, OP, T(0, "x")));                                           \
  }
#define UNARIES(X)                                                             \
  X(ABS) X(ACOS) X(ACOSH) X(ANGLE) X(ASIN) X(ASINH) X(ATAN) X(ATANH) X(BITNOT)  \
  X(CEIL) X(POS) X(COS) X(COSH) X(DEG2RAD) X(DIGAMMA) X(ERF) X(ERFC) X(ERFINV)  \
  X(EXP) X(EXP2) X(EXPM1) X(TRUNC) X(FLOOR) X(FRAC) X(I0) X(ISNAN) X(ISINF)     \
  X(ISFINITE) X(LGAMMA) X(LOG) X(LOG10) X(LOG1P) X(LOG2) X(NOT) X(NEG)         \
  X(RAD2DEG) X(RECIPROCAL) X(RELU) X(RSQRT) X(SIGMOID) X(SIGN) X(SIGNBIT)       \
  X(SIN) X(SINC) X(SINH) X(SQRT) X(SQUARE) X(TAN) X(TANH)
#define X(E) UNARY(un_##E, MQ_UN_##E)
UNARIES(X)
#undef X

int mq_builtin_unop(const mq_builtin *b) {
  if (b->host || !b->def || b->nparams != 1 || b->rest >= 0) return -1;
#define X(E)                                                                   \
  if (b->def->fn == lib_un_##E) return MQ_UN_##E;
  UNARIES(X)
#undef X
  return -1;
}

static mq_value lib_round(mq_state *S, mq_value *args) {
  int64_t d = mq_arg_int(S, args[1], "decimals");
  double prm[3] = {(double)d, NAN, NAN};
  RET(mq_unary_p(S, d ? MQ_UN_ROUND_DEC : MQ_UN_ROUND, T(0, "x"), prm));
}
static mq_value lib_logit(mq_state *S, mq_value *args) {
  double prm[3] = {args[1].type == MQ_NONE ? NAN : mq_arg_number(S, args[1], "eps"), NAN, NAN};
  RET(mq_unary_p(S, MQ_UN_LOGIT, T(0, "x"), prm));
}
static mq_value lib_nan_to_num(mq_state *S, mq_value *args) {
  double prm[3] = {mq_arg_number(S, args[1], "nan"),
                   args[2].type == MQ_NONE ? NAN : mq_arg_number(S, args[2], "posinf"),
                   args[3].type == MQ_NONE ? NAN : mq_arg_number(S, args[3], "neginf")};
  RET(mq_unary_p(S, MQ_UN_NAN_TO_NUM, T(0, "x"), prm));
}
static mq_value lib_clamp(mq_state *S, mq_value *args) {
  mq_tensor *lo = args[1].type == MQ_NONE ? NULL : TW(1, "min");
  mq_tensor *hi = args[2].type == MQ_NONE ? NULL : TW(2, "max");
  RET(mq_clamp(S, T(0, "x"), lo, hi));
}

/* --- binary ------------------------------------------------------------------- */

#define BINARY(name, OP)                                                       \
  static mq_value lib_##name(mq_state *S, mq_value *args) {                    \
    RET(mq_binary(S, OP, TW(0, "x"), TW(1, "y")));                             \
  }
#define BINARIES(X)                                                            \
  X(POW) X(MUL) X(DIV) X(FLOORDIV) X(REM) X(FMOD) X(ATAN2)                      \
  X(LOGADDEXP2) X(MAXIMUM) X(MINIMUM) X(FMAX) X(FMIN) X(NEXTAFTER) X(HYPOT)     \
  X(COPYSIGN) X(XLOGY) X(FLOAT_POWER) X(BAND) X(BOR) X(BXOR) X(SHL) X(SHR)      \
  X(LAND) X(LOR) X(LXOR) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE)
#define X(E) BINARY(bin_##E, MQ_BIN_##E)
BINARIES(X)
#undef X

/* torch's alpha: x + alpha * y (alpha a number, weak like any literal, so
 * an int alpha keeps int tensors int). */
static mq_value add_scaled(mq_state *S, mq_value *args, mq_binop op) {
  mq_tensor *y = TW(1, "y");
  if (!mq_is_number(args[2])) mq_error(S, "alpha must be a number, not a %s", mq_type_name(args[2]));
  if (!(args[2].type == MQ_INT && args[2].as.i == 1))
    y = mq_binary(S, MQ_BIN_MUL, y, mq_tensor_from_value(S, args[2], "alpha"));
  RET(mq_binary(S, op, TW(0, "x"), y));
}
static mq_value lib_add(mq_state *S, mq_value *args) { return add_scaled(S, args, MQ_BIN_ADD); }
static mq_value lib_sub(mq_state *S, mq_value *args) { return add_scaled(S, args, MQ_BIN_SUB); }

/* torch.masked.logaddexp: a masked-out entry of x (input_mask) or y
 * (other_mask) counts as -inf, logaddexp's identity, so the result is the
 * other operand there; where both are masked out, so is the result. */
static mq_value lib_logaddexp(mq_state *S, mq_value *args) {
  mq_tensor *x = TW(0, "x"), *y = TW(1, "y");
  if (args[2].type == MQ_NONE && args[3].type == MQ_NONE) RET(mq_binary(S, MQ_BIN_LOGADDEXP, x, y));
  if (x->mask || y->mask)
    mq_error(S, "input_mask= and other_mask= are for plain tensors; x or y is already masked");
  mq_tensor *identity = mq_tensor_from_value(S, mq_float(-INFINITY), "identity");
  mq_tensor *valid = NULL;
  mq_tensor *operand[2] = {x, y};
  for (int i = 0; i < 2; i++) {
    if (args[2 + i].type == MQ_NONE) {
      valid = mq_tensor_from_value(S, mq_bool(true), "mask");
      continue;
    }
    mq_tensor *m = T(2 + i, i ? "other_mask" : "input_mask");
    operand[i] = mq_where(S, m, operand[i], identity);
    valid = valid ? mq_binary(S, MQ_BIN_BOR, valid, m) : m;
  }
  mq_tensor *r = mq_binary(S, MQ_BIN_LOGADDEXP, operand[0], operand[1]);
  RET(mq_masked(S, r, valid));
}

static mq_value lib_div(mq_state *S, mq_value *args) {
  mq_binop op = MQ_BIN_DIV;
  if (mq_is_obj(args[2], MQ_O_STRING)) {
    const mq_string *mode = mq_as_string(args[2]);
    if (mq_string_is(mode, "trunc")) op = MQ_BIN_DIVTRUNC;
    else if (mq_string_is(mode, "floor")) op = MQ_BIN_FLOORDIV;
    else mq_error(S, "div: rounding_mode must be none, \"trunc\" or \"floor\", got %s",
                  mq_string_quoted(S, mode));
  } else if (args[2].type != MQ_NONE) {
    mq_error(S, "div: rounding_mode must be none, \"trunc\" or \"floor\", not a %s",
             mq_type_name(args[2]));
  }
  RET(mq_binary(S, op, TW(0, "x"), TW(1, "y")));
}

/* --- reductions --------------------------------------------------------------------- */

/* dim: none (everything), an int, or a list of ints. A list holds dims, not
 * sizes: each may be negative (counted from the end). A literal [0, -1]
 * arrives as an int64 tensor, a computed one as a list. */
static int reduce_dims(mq_state *S, mq_value v, const mq_tensor *t, int *dims) {
  if (v.type == MQ_NONE) return 0;
  int n = 0;
  if (mq_is_obj(v, MQ_O_LIST)) {
    mq_list *l = mq_as_list(v);
    if (l->len > MQ_MAX_DIMS)
      mq_error(S, "dim lists %d dims; a tensor has at most %d", l->len, MQ_MAX_DIMS);
    for (int i = 0; i < l->len; i++) dims[n++] = mq_norm_dim(S, mq_arg_int(S, l->items[i], "dim"), t->ndim);
  } else if (mq_is_tensor(v) && mq_as_tensor(v)->ndim == 1) {
    mq_tensor *list = mq_as_tensor(v);
    if (mq_dtype_is_float((mq_dtype)list->dtype))
      mq_error(S, "dim must be an int or a list of ints, not a list of %s", mq_dtype_name((mq_dtype)list->dtype));
    if (list->numel > MQ_MAX_DIMS)
      mq_error(S, "dim lists %lld dims; a tensor has at most %d", (long long)list->numel, MQ_MAX_DIMS);
    const int64_t *d = mq_tensor_data(mq_contiguous(S, mq_astype(S, list, MQ_DT_I64)));
    for (int64_t i = 0; i < list->numel; i++) dims[n++] = mq_norm_dim(S, d[i], t->ndim);
  } else {
    dims[n++] = mq_norm_dim(S, mq_arg_int(S, v, "dim"), t->ndim);
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (dims[i] == dims[j]) mq_error(S, "dimension %d appears twice in dim", dims[i]);
  if (n == 0) mq_error(S, "dim must not be empty (use none to reduce everything)");
  return n;
}

/* dim for the ops along one dim: none (the flattened tensor: -1) or an int. */
static int one_dim(mq_state *S, mq_value v, const mq_tensor *t, const char *fn) {
  if (v.type == MQ_NONE) return -1;
  if (!(v.type == MQ_INT || v.type == MQ_BOOL || (mq_is_tensor(v) && mq_as_tensor(v)->ndim == 0)))
    mq_error(S, "%s: dim must be one int or none (%s works along a single dim), got a %s", fn, fn,
             mq_is_tensor(v) ? "list of dims" : mq_type_name(v));
  return mq_norm_dim(S, mq_arg_int(S, v, "dim"), t->ndim);
}

/* x converted to dtype= when given (sum, mean, prod, cumsum, softmax ...). */
static mq_tensor *with_dtype(mq_state *S, mq_tensor *t, mq_value dtype) {
  return dtype.type == MQ_NONE ? t : mq_astype(S, t, mq_arg_dtype(S, dtype, (mq_dtype)t->dtype));
}

/* torch.masked's functional forms: x converted to dtype= when given, and
 * with mask= (a plain x only) the masked tensor masked(x, mask). */
static mq_tensor *functional_input(mq_state *S, mq_value *args, int dtype_arg, int mask_arg) {
  mq_tensor *t = with_dtype(S, T(0, "x"), args[dtype_arg]);
  if (args[mask_arg].type == MQ_NONE) return t;
  if (t->mask)
    mq_error(S, "mask= is for plain tensors; x is already masked (combine the masks with &)");
  return mq_masked(S, t, T(mask_arg, "mask"));
}

#define REDUCE(name, OP)                                                       \
  static mq_value lib_##name(mq_state *S, mq_value *args) {                    \
    mq_tensor *t = T(0, "x");                                                  \
    int dims[MQ_MAX_DIMS], n = reduce_dims(S, args[1], t, dims);               \
    RET(mq_reduce(S, OP, t, n, dims, mq_arg_bool(S, args[2], "keepdim")));     \
  }
REDUCE(all, MQ_RED_ALL)
REDUCE(any, MQ_RED_ANY)
REDUCE(count, MQ_RED_COUNT)

/* (x, dim, keepdim, dtype, mask) */
#define REDUCE_DT(name, OP)                                                    \
  static mq_value lib_##name(mq_state *S, mq_value *args) {                    \
    mq_tensor *t = functional_input(S, args, 3, 4);                            \
    int dims[MQ_MAX_DIMS], n = reduce_dims(S, args[1], t, dims);               \
    RET(mq_reduce(S, OP, t, n, dims, mq_arg_bool(S, args[2], "keepdim")));     \
  }
REDUCE_DT(sum, MQ_RED_SUM)
REDUCE_DT(mean, MQ_RED_MEAN)
REDUCE_DT(prod, MQ_RED_PROD)
REDUCE_DT(amax, MQ_RED_AMAX)
REDUCE_DT(amin, MQ_RED_AMIN)
REDUCE_DT(logsumexp, MQ_RED_LOGSUMEXP)

int mq_arg_reduce_dims(mq_state *S, mq_value v, const mq_tensor *t, int *dims) {
  return reduce_dims(S, v, t, dims);
}

int mq_builtin_redop(const mq_builtin *b) {
  if (b->host || !b->def) return -1;
  if (b->def->fn == lib_sum) return MQ_RED_SUM;
  if (b->def->fn == lib_mean) return MQ_RED_MEAN;
  if (b->def->fn == lib_amax) return MQ_RED_AMAX;
  if (b->def->fn == lib_amin) return MQ_RED_AMIN;
  return -1;
}

/* (x, dim, correction, keepdim, unbiased, dtype, mask): unbiased=true is
 * torch's spelling of correction=1 */
static mq_value var_std(mq_state *S, mq_value *args, bool std) {
  mq_tensor *t = functional_input(S, args, 5, 6);
  int dims[MQ_MAX_DIMS], n = reduce_dims(S, args[1], t, dims);
  double correction = 0;
  if (args[4].type != MQ_NONE) {
    if (args[2].type != MQ_NONE) mq_error(S, "give correction= or unbiased=, not both");
    correction = mq_arg_bool(S, args[4], "unbiased");
  } else if (args[2].type != MQ_NONE) {
    correction = mq_arg_number(S, args[2], "correction");
  }
  RET(mq_var(S, t, n, dims, correction, mq_arg_bool(S, args[3], "keepdim"), std));
}
static mq_value lib_var(mq_state *S, mq_value *args) { return var_std(S, args, false); }
static mq_value lib_std(mq_state *S, mq_value *args) { return var_std(S, args, true); }

static mq_value lib_norm(mq_state *S, mq_value *args) {
  mq_tensor *t = functional_input(S, args, 4, 5);
  int dims[MQ_MAX_DIMS], n = reduce_dims(S, args[2], t, dims);
  RET(mq_norm(S, t, mq_arg_number(S, args[1], "p"), n, dims, mq_arg_bool(S, args[3], "keepdim")));
}

static mq_value argext(mq_state *S, mq_value *args, bool max) {
  mq_tensor *t = functional_input(S, args, 3, 4);
  int d = one_dim(S, args[1], t, max ? "argmax" : "argmin");
  RET(mq_argext(S, t, t->ndim ? d : -1, mq_arg_bool(S, args[2], "keepdim"), max));
}
static mq_value lib_argmax(mq_state *S, mq_value *args) { return argext(S, args, true); }
static mq_value lib_argmin(mq_state *S, mq_value *args) { return argext(S, args, false); }

static mq_value lib_median(mq_state *S, mq_value *args) {
  mq_tensor *t = T(0, "x");
  int d = one_dim(S, args[1], t, "median");
  RET(mq_median(S, t, t->ndim ? d : -1, mq_arg_bool(S, args[2], "keepdim")));
}

static mq_value cumulative(mq_state *S, mq_value *args, bool prod) {
  mq_tensor *t = with_dtype(S, T(0, "x"), args[2]);
  RET(mq_cumulative(S, t, mq_norm_dim(S, mq_arg_int(S, args[1], "dim"), t->ndim), prod));
}
static mq_value lib_cumsum(mq_state *S, mq_value *args) { return cumulative(S, args, false); }
static mq_value lib_cumprod(mq_state *S, mq_value *args) { return cumulative(S, args, true); }

/* --- normalizations ------------------------------------------------------------------ */

static mq_value softmaxes(mq_state *S, mq_value *args, int kind) {
  mq_tensor *t = with_dtype(S, T(0, "x"), args[2]);
  int d = mq_norm_dim(S, mq_arg_int(S, args[1], "dim"), t->ndim);
  if (kind == 2) { /* softmin(x) = softmax(-x) */
    if (!mq_dtype_is_float((mq_dtype)t->dtype)) t = mq_astype(S, t, MQ_DT_F32);
    t = mq_unary(S, MQ_UN_NEG, t);
  }
  RET(kind == 1 ? mq_log_softmax(S, t, d) : mq_softmax(S, t, d));
}
static mq_value lib_softmax(mq_state *S, mq_value *args) { return softmaxes(S, args, 0); }
static mq_value lib_log_softmax(mq_state *S, mq_value *args) { return softmaxes(S, args, 1); }
static mq_value lib_softmin(mq_state *S, mq_value *args) { return softmaxes(S, args, 2); }

static mq_value lib_normalize(mq_state *S, mq_value *args) {
  RET(mq_normalize(S, T(0, "x"), mq_arg_number(S, args[1], "p"), (int)mq_arg_int(S, args[2], "dim"),
                   mq_arg_number(S, args[3], "eps")));
}

/* --- selection and masks ----------------------------------------------------------- */

static mq_value lib_where(mq_state *S, mq_value *args) {
  RET(mq_where(S, T(0, "cond"), TW(1, "a"), TW(2, "b")));
}
static mq_value lib_masked_fill(mq_state *S, mq_value *args) {
  RET(mq_masked_fill(S, T(0, "x"), T(1, "mask"), TW(2, "value")));
}

/* intersect(a, b): both operands restricted to the positions valid in both
 * (numpy.ma's rule for binary ops, on request), broadcast to one shape. */
static mq_value lib_intersect(mq_state *S, mq_value *args) {
  mq_tensor *a = T(0, "a"), *b = T(1, "b");
  int64_t shape[MQ_MAX_DIMS];
  int nd = mq_broadcast_shapes(S, a->ndim, a->shape, b->ndim, b->shape, shape);
  mq_tensor *mask = mq_binary(S, MQ_BIN_BAND, mq_get_mask(S, a), mq_get_mask(S, b));
  mq_list *l = mq_list_new(S, 2);
  /* as_masked: gradients flow through to a and b */
  mq_list_push(S, l, mq_objv(mq_as_masked(S, mq_expand(S, mq_get_data(S, a), nd, shape), mask)));
  mq_list_push(S, l, mq_objv(mq_as_masked(S, mq_expand(S, mq_get_data(S, b), nd, shape), mask)));
  RET(l);
}

/* --- the table --------------------------------------------------------------------- */

#define U(sig, E, doc) {sig, lib_un_##E, doc}
#define B(sig, E, doc) {sig, lib_bin_##E, doc}

const mq_libfn mq_lib_math[] = {
    /* unary: torch.masked's 62 names for real dtypes, and relu, isinf, isfinite, logical_not */
    U("abs(x)", ABS, "absolute value elementwise"),
    U("absolute(x)", ABS, "absolute value elementwise (alias of abs)"),
    U("acos(x)", ACOS, "arccosine elementwise"),
    U("arccos(x)", ACOS, "arccosine elementwise (alias of acos)"),
    U("acosh(x)", ACOSH, "inverse hyperbolic cosine elementwise"),
    U("arccosh(x)", ACOSH, "inverse hyperbolic cosine elementwise (alias of acosh)"),
    U("angle(x)", ANGLE, "the argument: 0 for x >= 0, pi for x < 0"),
    U("asin(x)", ASIN, "arcsine elementwise"),
    U("arcsin(x)", ASIN, "arcsine elementwise (alias of asin)"),
    U("asinh(x)", ASINH, "inverse hyperbolic sine elementwise"),
    U("arcsinh(x)", ASINH, "inverse hyperbolic sine elementwise (alias of asinh)"),
    U("atan(x)", ATAN, "arctangent elementwise"),
    U("arctan(x)", ATAN, "arctangent elementwise (alias of atan)"),
    U("atanh(x)", ATANH, "inverse hyperbolic tangent elementwise"),
    U("arctanh(x)", ATANH, "inverse hyperbolic tangent elementwise (alias of atanh)"),
    U("bitwise_not(x)", BITNOT, "~x: logical not of bools, bitwise not of ints"),
    U("ceil(x)", CEIL, "round up to an integer value"),
    {"clamp(x, min=none, max=none)", lib_clamp,
     "x limited to [min, max] (numbers or tensors; either may be none)"},
    {"clip(x, min=none, max=none)", lib_clamp, "x limited to [min, max] (alias of clamp)"},
    U("conj_physical(x)", POS, "the complex conjugate: x itself for real tensors"),
    U("cos(x)", COS, "cosine elementwise"),
    U("cosh(x)", COSH, "hyperbolic cosine elementwise"),
    U("deg2rad(x)", DEG2RAD, "degrees to radians"),
    U("digamma(x)", DIGAMMA, "the logarithmic derivative of the gamma function"),
    U("erf(x)", ERF, "the error function"),
    U("erfc(x)", ERFC, "the complementary error function, 1 - erf(x)"),
    U("erfinv(x)", ERFINV, "the inverse error function"),
    U("exp(x)", EXP, "e**x elementwise"),
    U("exp2(x)", EXP2, "2**x elementwise"),
    U("expm1(x)", EXPM1, "e**x - 1, accurate near 0"),
    U("fix(x)", TRUNC, "round toward zero (alias of trunc)"),
    U("floor(x)", FLOOR, "round down to an integer value"),
    U("frac(x)", FRAC, "the fractional part, x - trunc(x)"),
    U("i0(x)", I0, "the modified Bessel function of the first kind, order 0"),
    U("isnan(x)", ISNAN, "true where x is NaN"),
    U("isinf(x)", ISINF, "true where x is inf or -inf"),
    U("isfinite(x)", ISFINITE, "true where x is neither inf nor NaN"),
    U("lgamma(x)", LGAMMA, "the log of the absolute value of the gamma function"),
    U("log(x)", LOG, "natural logarithm elementwise"),
    U("log10(x)", LOG10, "base-10 logarithm elementwise"),
    U("log1p(x)", LOG1P, "log(1 + x), accurate near 0"),
    U("log2(x)", LOG2, "base-2 logarithm elementwise"),
    {"logit(x, eps=none)", lib_logit, "log(x / (1 - x)), x first clamped to [eps, 1 - eps] if given"},
    U("logical_not(x)", NOT, "true where x is zero (false)"),
    {"nan_to_num(x, nan=0.0, posinf=none, neginf=none)", lib_nan_to_num,
     "NaN, inf and -inf replaced (by default with 0 and the largest finite values)"},
    U("neg(x)", NEG, "-x elementwise"),
    U("negative(x)", NEG, "-x elementwise (alias of neg)"),
    U("positive(x)", POS, "+x: x itself"),
    B("pow(x, exponent)", POW, "x ** exponent; a number on either side works"),
    U("rad2deg(x)", RAD2DEG, "radians to degrees"),
    U("reciprocal(x)", RECIPROCAL, "1 / x elementwise"),
    U("relu(x)", RELU, "max(x, 0) elementwise (NaN stays NaN)"),
    {"round(x, decimals=0)", lib_round,
     "round half to even, to a number of decimal places (negative: tens, hundreds ...)"},
    U("rsqrt(x)", RSQRT, "1 / sqrt(x) elementwise"),
    U("sigmoid(x)", SIGMOID, "1 / (1 + e**-x) elementwise"),
    U("sign(x)", SIGN, "-1, 0 or 1 by the sign of x (0 for NaN, as torch)"),
    U("sgn(x)", SIGN, "the sign of x (alias of sign for real tensors)"),
    U("signbit(x)", SIGNBIT, "true where the sign bit is set (also for -0.0)"),
    U("sin(x)", SIN, "sine elementwise"),
    U("sinc(x)", SINC, "sin(pi x) / (pi x), 1 at 0"),
    U("sinh(x)", SINH, "hyperbolic sine elementwise"),
    U("sqrt(x)", SQRT, "square root elementwise"),
    U("square(x)", SQUARE, "x * x elementwise"),
    U("tan(x)", TAN, "tangent elementwise"),
    U("tanh(x)", TANH, "hyperbolic tangent elementwise"),
    U("trunc(x)", TRUNC, "round toward zero"),

    /* binary: torch.masked's 36 names, and hypot, copysign, xlogy, float_power, logical ops */
    {"add(x, y, alpha=1)", lib_add, "x + alpha * y with broadcasting"},
    {"sub(x, y, alpha=1)", lib_sub, "x - alpha * y with broadcasting"},
    {"subtract(x, y, alpha=1)", lib_sub, "x - alpha * y (alias of sub)"},
    B("mul(x, y)", MUL, "x * y with broadcasting"),
    B("multiply(x, y)", MUL, "x * y (alias of mul)"),
    {"div(x, y, rounding_mode=none)", lib_div,
     "x / y; rounding_mode \"trunc\" or \"floor\" rounds the quotient (ints stay ints)"},
    {"divide(x, y, rounding_mode=none)", lib_div, "x / y (alias of div)"},
    B("true_divide(x, y)", DIV, "x / y, ints giving floats"),
    B("floor_divide(x, y)", FLOORDIV, "x // y: the quotient rounded down"),
    B("remainder(x, y)", REM, "x % y: the remainder with the sign of y (Python's)"),
    B("fmod(x, y)", FMOD, "the remainder with the sign of x (C's fmod)"),
    B("atan2(x, y)", ATAN2, "atan(x / y) in the right quadrant: the angle of the point (y, x)"),
    B("arctan2(x, y)", ATAN2, "atan2 (alias)"),
    {"logaddexp(x, y, input_mask=none, other_mask=none)", lib_logaddexp,
     "log(e**x + e**y) without overflow; input_mask= and other_mask= mask plain x and y"},
    B("logaddexp2(x, y)", LOGADDEXP2, "log2(2**x + 2**y) without overflow"),
    B("maximum(x, y)", MAXIMUM, "the larger of x and y elementwise (NaN wins)"),
    B("minimum(x, y)", MINIMUM, "the smaller of x and y elementwise (NaN wins)"),
    B("fmax(x, y)", FMAX, "the larger of x and y elementwise, ignoring NaN"),
    B("fmin(x, y)", FMIN, "the smaller of x and y elementwise, ignoring NaN"),
    B("nextafter(x, y)", NEXTAFTER, "the next float after x toward y"),
    B("hypot(x, y)", HYPOT, "sqrt(x**2 + y**2) without overflow"),
    B("copysign(x, y)", COPYSIGN, "the magnitude of x with the sign of y"),
    B("xlogy(x, y)", XLOGY, "x * log(y), 0 where x is 0"),
    B("float_power(x, y)", FLOAT_POWER, "x ** y computed in float64"),
    B("bitwise_and(x, y)", BAND, "x & y for bools and ints"),
    B("bitwise_or(x, y)", BOR, "x | y for bools and ints"),
    B("bitwise_xor(x, y)", BXOR, "x ^ y for bools and ints"),
    B("bitwise_left_shift(x, y)", SHL, "x shifted left by y bits (ints)"),
    B("bitwise_right_shift(x, y)", SHR, "x shifted right by y bits, keeping the sign (ints)"),
    B("logical_and(x, y)", LAND, "true where both are nonzero"),
    B("logical_or(x, y)", LOR, "true where either is nonzero"),
    B("logical_xor(x, y)", LXOR, "true where exactly one is nonzero"),
    B("eq(x, y)", EQ, "x == y elementwise"),
    B("ne(x, y)", NE, "x != y elementwise"),
    B("not_equal(x, y)", NE, "x != y (alias of ne)"),
    B("lt(x, y)", LT, "x < y elementwise"),
    B("less(x, y)", LT, "x < y (alias of lt)"),
    B("le(x, y)", LE, "x <= y elementwise"),
    B("less_equal(x, y)", LE, "x <= y (alias of le)"),
    B("gt(x, y)", GT, "x > y elementwise"),
    B("greater(x, y)", GT, "x > y (alias of gt)"),
    B("ge(x, y)", GE, "x >= y elementwise"),
    B("greater_equal(x, y)", GE, "x >= y (alias of ge)"),

    /* reductions: dim is none (everything), an int or a list of ints */
    {"sum(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_sum, "sum of the valid entries"},
    {"mean(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_mean, "mean of the valid entries"},
    {"prod(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_prod, "product of the valid entries"},
    {"amax(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_amax, "largest valid entry (NaN wins)"},
    {"amin(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_amin, "smallest valid entry (NaN wins)"},
    {"argmax(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_argmax,
     "int64 index of the largest valid entry (of the flattened tensor if dim is none)"},
    {"argmin(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_argmin,
     "int64 index of the smallest valid entry (of the flattened tensor if dim is none)"},
    {"all(x, dim=none, keepdim=false)", lib_all, "true if every valid entry is nonzero"},
    {"any(x, dim=none, keepdim=false)", lib_any, "true if some valid entry is nonzero"},
    {"count(x, dim=none, keepdim=false)", lib_count,
     "the number of valid entries, as a plain int64 tensor"},
    {"norm(x, p=2, dim=none, keepdim=false, dtype=none, mask=none)", lib_norm,
     "p-norm of the valid entries (p may be inf, -inf, or 0 to count nonzeros)"},
    {"var(x, dim=none, correction=none, keepdim=false, unbiased=none, dtype=none, mask=none)", lib_var,
     "variance of the valid entries: divides by count - correction (0: population, as torch.masked)"},
    {"std(x, dim=none, correction=none, keepdim=false, unbiased=none, dtype=none, mask=none)", lib_std,
     "standard deviation of the valid entries (correction as in var)"},
    {"logsumexp(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_logsumexp,
     "log of the sum of exp of the valid entries, without overflow"},
    {"median(x, dim=none, keepdim=false)", lib_median,
     "lower median of the valid entries along one dim (or of all)"},
    {"cumsum(x, dim, dtype=none)", lib_cumsum,
     "running sum along dim; masked-out entries add nothing and stay masked"},
    {"cumprod(x, dim, dtype=none)", lib_cumprod,
     "running product along dim; masked-out entries multiply by 1 and stay masked"},

    /* normalizations along a dim; a fully masked slice stays masked out */
    {"softmax(x, dim, dtype=none)", lib_softmax,
     "softmax over the valid entries along dim; a fully masked slice stays masked"},
    {"log_softmax(x, dim, dtype=none)", lib_log_softmax,
     "log of softmax over the valid entries along dim, computed stably"},
    {"softmin(x, dim, dtype=none)", lib_softmin, "softmax(-x) over the valid entries along dim"},
    {"normalize(x, p=2.0, dim=1, eps=1e-12)", lib_normalize,
     "x divided by the p-norm of its valid entries along dim (at least eps)"},

    /* selection */
    {"where(cond, a, b)", lib_where,
     "a where cond is true, else b; the mask is picked the same way (a plain branch is valid)"},
    {"masked_fill(x, mask, value)", lib_masked_fill,
     "x with value where mask is true; those entries become valid"},
    {"intersect(a, b)", lib_intersect,
     "[a, b] restricted to the positions valid in both, broadcast to one shape"},
    {NULL, NULL, NULL},
};

const mq_constant mq_lib_constants[] = {
    {"nan", NAN},
    {"inf", INFINITY},
    {"pi", 3.14159265358979323846},
    {NULL, 0},
};
