/* ops_unary.h - the unary elementwise ops, one row each. Everything else
 * expands from this list: the enum (tensor.h), the kernels (unary.c), the
 * derivatives (backward.c), what fused expressions may run (fuse.c), the
 * builtins with their :help text and docs/BUILTINS.md (stdlib/lib_math.c),
 * the gradient check (tests/unit/test_gradcheck.c) and the check that the
 * conformance suite covers the ops (tests/unit/test_ops.c).
 *
 * X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, dom, fuse, conf, doc)
 *
 *   E       the enum suffix: MQ_UN_E
 *   name    the op's name in messages, and its builtin's name
 *   params  the builtin's parameters after x, as they appear in its
 *           signature ("" or ", eps=none")
 *   bind    how the builtin is made: B0 calls the op on x; B1..B3 also pass
 *           that many number parameters (none: NaN, "absent"); BH its
 *           function lib_un_E is written by hand in lib_math.c; BN no
 *           builtin (another op's builtin reaches it)
 *   cls     the dtype behaviour: FLOAT computes ints and bools in float32;
 *           SAME keeps the dtype, ints by iexpr, bools refused; SAMEB the
 *           same with bools copied; FONLY floats only (torch has no int
 *           kernel: the activations); BITS bools and ints
 *           only (bools by bexpr); PRED a bool result for every dtype
 *           (ints by iexpr, bools by bexpr); CLAMP clamp's own int kernel
 *   pre     statements run once per kernel call (parameters): NOPRE if none
 *   fexpr   the float element expression in x, instantiated for float32 and
 *           float64: R is the element type, FN(exp) names expf or exp,
 *           FN(vexp) masq's float32 exp (vexp.h) or exp, P0..P2 are the
 *           op's parameters (see kernels.h on libmvec)
 *   iexpr   the int64 element expression (SAME, SAMEB, BITS, PRED), else NONE
 *   bexpr   the bool element expression (BITS, PRED), else NONE
 *   deriv   the gradient of one element in double: g times f'(x), from x,
 *           y = f(x), the incoming gradient g and the parameters p[0..2];
 *           NODIFF for ops whose result is never float
 *   dom     where the gradient check draws valid inputs: ANY, POS (0.5..2),
 *           UNIT (-0.9..0.9), GT1 (1.2..3.2), PROB (0.1..0.9)
 *   fuse    1 if fused expressions may run it (no parameters, the dtype kept)
 *   conf    1 if tests/conformance has its torch.masked cases (<name>.masq)
 *   doc     the builtin's :help text
 *
 * Aliases (more builtin names for one op) are listed in MQ_UNARY_ALIASES. */
#ifndef MQ_OPS_UNARY_H
#define MQ_OPS_UNARY_H

#define MQ_UNARY_OPS(X)                                                        \
  X(NEG, "neg", "", B0, SAME, NOPRE, -x, WSUB(0, x), NONE, D(-g), ANY, 1, 1,   \
    "-x elementwise")                                                          \
  X(EXP, "exp", "", B0, FLOAT, NOPRE, FN(vexp)(x), NONE, NONE, D(g * y), ANY, 1, 1, \
    "e**x elementwise")                                                        \
  X(LOG, "log", "", B0, FLOAT, NOPRE, FN(log)(x), NONE, NONE, D(g / x), POS, 1, 1, \
    "natural logarithm elementwise")                                           \
  X(SQRT, "sqrt", "", B0, FLOAT, NOPRE, FN(sqrt)(x), NONE, NONE, D(g / (2 * y)), POS, 1, 1, \
    "square root elementwise")                                                 \
  X(ABS, "abs", "", B0, SAME, NOPRE, FN(fabs)(x), x < 0 ? WSUB(0, x) : x, NONE, \
    D(g * (double)((x > 0) - (x < 0))), ANY, 1, 1, "absolute value elementwise") \
  X(BITNOT, "bitwise_not", "", B0, BITS, NOPRE, NONE, ~x, x ^ 1, NODIFF, ANY, 0, 1, \
    "~x: logical not of bools, bitwise not of ints")                           \
  X(POS, "positive", "", B0, SAME, NOPRE, x, x, NONE, D(g), ANY, 1, 1, "+x: x itself") \
  /* torch's conj_physical takes bools, its positive refuses them */           \
  X(CONJ, "conj_physical", "", B0, SAMEB, NOPRE, x, x, NONE, D(g), ANY, 0, 1,  \
    "the complex conjugate: x itself for real tensors") \
  X(SIGN, "sign", "", B0, SAMEB, NOPRE, (R)((0 < x) - (x < 0)), (0 < x) - (x < 0), NONE, \
    D(0), ANY, 1, 1, "-1, 0 or 1 by the sign of x (0 for NaN, as torch)")      \
  X(SIGNBIT, "signbit", "", B0, PRED, NOPRE, signbit(x) != 0, x < 0, x != x,   \
    NODIFF, ANY, 0, 1, "true where the sign bit is set (also for -0.0)")       \
  X(SQUARE, "square", "", B0, SAME, NOPRE, x * x, WMUL(x, x), NONE, D(g * 2 * x), ANY, 1, 1, \
    "x * x elementwise")                                                       \
  X(RELU, "relu", "", B0, SAME, NOPRE, x < 0 ? (R)0 : x, x < 0 ? 0 : x, NONE,  \
    D(y > 0 ? g : 0), ANY, 1, 1, "max(x, 0) elementwise (NaN stays NaN)")      \
  X(CEIL, "ceil", "", B0, SAME, NOPRE, FN(ceil)(x), x, NONE, D(0), ANY, 1, 1,  \
    "round up to an integer value")                                            \
  X(FLOOR, "floor", "", B0, SAME, NOPRE, FN(floor)(x), x, NONE, D(0), ANY, 1, 1, \
    "round down to an integer value")                                          \
  X(ROUND, "round", ", decimals=0", BH, SAME, NOPRE, FN(nearbyint)(x), x, NONE, D(0), ANY, 1, 1, \
    "round half to even, to a number of decimal places (negative: tens, hundreds ...)") \
  X(ROUND_DEC, "round", "", BN, SAME,                                          \
    const int neg = P0 < 0; const R ten = (R)pow(10, fabs(P0)),                \
    neg ? FN(nearbyint)(x / ten) * ten : FN(nearbyint)(x * ten) / ten, x, NONE, \
    D(0), ANY, 0, 1, "round half to even, to a number of decimal places")      \
  X(TRUNC, "trunc", "", B0, SAME, NOPRE, FN(trunc)(x), x, NONE, D(0), ANY, 1, 1, \
    "round toward zero")                                                       \
  X(FRAC, "frac", "", B0, FONLY, NOPRE, x - FN(trunc)(x), NONE, NONE, D(g), ANY, 1, 1, \
    "the fractional part, x - trunc(x)")                                       \
  X(EXP2, "exp2", "", B0, FLOAT, NOPRE, FN(exp2)(x), NONE, NONE, D(g * y * MQ_LN2), ANY, 1, 1, \
    "2**x elementwise")                                                        \
  X(EXPM1, "expm1", "", B0, FLOAT, NOPRE, FN(expm1)(x), NONE, NONE, D(g * (y + 1)), ANY, 1, 1, \
    "e**x - 1, accurate near 0")                                               \
  X(LOG2, "log2", "", B0, FLOAT, NOPRE, FN(log2)(x), NONE, NONE, D(g / (x * MQ_LN2)), POS, 1, 1, \
    "base-2 logarithm elementwise")                                            \
  X(LOG10, "log10", "", B0, FLOAT, NOPRE, FN(log10)(x), NONE, NONE, D(g / (x * MQ_LN10)), POS, 1, 1, \
    "base-10 logarithm elementwise")                                           \
  X(LOG1P, "log1p", "", B0, FLOAT, NOPRE, FN(log1p)(x), NONE, NONE, D(g / (1 + x)), POS, 1, 1, \
    "log(1 + x), accurate near 0")                                             \
  X(RSQRT, "rsqrt", "", B0, FLOAT, NOPRE, (R)1 / FN(sqrt)(x), NONE, NONE,      \
    D(-0.5 * g * y * y * y), POS, 1, 1, "1 / sqrt(x) elementwise")             \
  X(RECIPROCAL, "reciprocal", "", B0, FLOAT, NOPRE, (R)1 / x, NONE, NONE, D(-g * y * y), POS, \
    1, 1, "1 / x elementwise")                                                 \
  X(SIN, "sin", "", B0, FLOAT, NOPRE, FN(sin)(x), NONE, NONE, D(g * cos(x)), ANY, 1, 1, \
    "sine elementwise")                                                        \
  X(COS, "cos", "", B0, FLOAT, NOPRE, FN(cos)(x), NONE, NONE, D(-g * sin(x)), ANY, 1, 1, \
    "cosine elementwise")                                                      \
  X(TAN, "tan", "", B0, FLOAT, NOPRE, FN(tan)(x), NONE, NONE, D(g * (1 + y * y)), UNIT, 1, 1, \
    "tangent elementwise")                                                     \
  X(ASIN, "asin", "", B0, FLOAT, NOPRE, FN(asin)(x), NONE, NONE, D(g / sqrt(1 - x * x)), UNIT, \
    1, 1, "arcsine elementwise")                                               \
  X(ACOS, "acos", "", B0, FLOAT, NOPRE, FN(acos)(x), NONE, NONE, D(-g / sqrt(1 - x * x)), UNIT, \
    1, 1, "arccosine elementwise")                                             \
  X(ATAN, "atan", "", B0, FLOAT, NOPRE, FN(atan)(x), NONE, NONE, D(g / (1 + x * x)), ANY, 1, 1, \
    "arctangent elementwise")                                                  \
  X(SINH, "sinh", "", B0, FLOAT, NOPRE, FN(sinh)(x), NONE, NONE, D(g * cosh(x)), ANY, 1, 1, \
    "hyperbolic sine elementwise")                                             \
  X(COSH, "cosh", "", B0, FLOAT, NOPRE, FN(cosh)(x), NONE, NONE, D(g * sinh(x)), ANY, 1, 1, \
    "hyperbolic cosine elementwise")                                           \
  X(TANH, "tanh", "", B0, FLOAT, NOPRE, FN(tanh)(x), NONE, NONE, D(g * (1 - y * y)), ANY, 1, 1, \
    "hyperbolic tangent elementwise")                                          \
  X(ASINH, "asinh", "", B0, FLOAT, NOPRE, FN(asinh)(x), NONE, NONE, D(g / sqrt(x * x + 1)), \
    ANY, 1, 1, "inverse hyperbolic sine elementwise")                          \
  X(ACOSH, "acosh", "", B0, FLOAT, NOPRE, FN(acosh)(x), NONE, NONE, D(g / sqrt(x * x - 1)), \
    GT1, 1, 1, "inverse hyperbolic cosine elementwise")                        \
  X(ATANH, "atanh", "", B0, FLOAT, NOPRE, FN(atanh)(x), NONE, NONE, D(g / (1 - x * x)), UNIT, \
    1, 1, "inverse hyperbolic tangent elementwise")                            \
  X(SIGMOID, "sigmoid", "", B0, FLOAT, NOPRE, (R)1 / ((R)1 + FN(exp)(-x)), NONE, NONE, \
    D(g * y * (1 - y)), ANY, 1, 1, "1 / (1 + e**-x) elementwise")              \
  /* logit(x, eps): x clamped to [eps, 1 - eps] first when eps is given */     \
  X(LOGIT, "logit", ", eps=none", B1, FLOAT,                                   \
    const int has = P0 == P0; const R lo = (R)P0; const R hi = (R)(1 - P0),    \
    FN(log)(LOGIT_Z / ((R)1 - LOGIT_Z)), NONE, NONE,                           \
    D(p[0] == p[0] && (x < IN_R(p[0]) || x > IN_R(1 - p[0])) ? 0 : g / (x * (1 - x))), PROB, 0, 1, \
    "log(x / (1 - x)), x first clamped to [eps, 1 - eps] if given")            \
  X(ERF, "erf", "", B0, FLOAT, NOPRE, FN(erf)(x), NONE, NONE,                  \
    D(g * MQ_TWO_SQRTPI * exp(-x * x)), ANY, 1, 1, "the error function")          \
  X(ERFC, "erfc", "", B0, FLOAT, NOPRE, FN(erfc)(x), NONE, NONE,               \
    D(-g * MQ_TWO_SQRTPI * exp(-x * x)), ANY, 1, 1,                               \
    "the complementary error function, 1 - erf(x)")                            \
  X(ERFINV, "erfinv", "", B0, FLOAT, NOPRE, (R)mq_erfinv(x), NONE, NONE,        \
    D(g * (sqrt(MQ_PI) / 2) * exp(y * y)), UNIT, 1, 1, "the inverse error function") \
  X(LGAMMA, "lgamma", "", B0, FLOAT, NOPRE, FN(lgamma)(x), NONE, NONE, D(g * mq_digamma(x)), POS, \
    1, 1, "the log of the absolute value of the gamma function")               \
  X(DIGAMMA, "digamma", "", B0, FLOAT, NOPRE, (R)mq_digamma(x), NONE, NONE,     \
    D(g * mq_trigamma(x)), POS, 1, 1, "the logarithmic derivative of the gamma function") \
  X(I0, "i0", "", B0, FLOAT, NOPRE, (R)mq_i0(x), NONE, NONE, D(g * mq_i1(x)), ANY, 1, 1, \
    "the modified Bessel function of the first kind, order 0")                 \
  X(SINC, "sinc", "", B0, FLOAT, NOPRE, x == 0 ? (R)1 : FN(sin)((R)MQ_PI * x) / ((R)MQ_PI * x), \
    NONE, NONE, D(dsinc(x, g)), ANY, 1, 1, "sin(pi x) / (pi x), 1 at 0")       \
  X(DEG2RAD, "deg2rad", "", B0, FLOAT, NOPRE, x * (R)(MQ_PI / 180), NONE, NONE,   \
    D(g * (MQ_PI / 180)), ANY, 1, 1, "degrees to radians")                        \
  X(RAD2DEG, "rad2deg", "", B0, FLOAT, NOPRE, x * (R)(180 / MQ_PI), NONE, NONE,   \
    D(g * (180 / MQ_PI)), ANY, 1, 1, "radians to degrees")                        \
  X(ANGLE, "angle", "", B0, FLOAT, NOPRE, x != x ? x : x < 0 ? (R)MQ_PI : (R)0, NONE, NONE, \
    D(0), ANY, 1, 1, "the argument: 0 for x >= 0, pi for x < 0")               \
  X(ISNAN, "isnan", "", B0, PRED, NOPRE, x != x, x != x, x != x, NODIFF, ANY, 0, 1, \
    "true where x is NaN")                                                     \
  X(ISINF, "isinf", "", B0, PRED, NOPRE, FN(fabs)(x) == (R)INFINITY, x != x, x != x, \
    NODIFF, ANY, 0, 0, "true where x is inf or -inf")                          \
  X(ISFINITE, "isfinite", "", B0, PRED, NOPRE, x - x == 0, x == x, x == x, NODIFF, ANY, \
    0, 0, "true where x is neither inf nor NaN")                               \
  X(NOT, "logical_not", "", B0, PRED, NOPRE, x == 0, x == 0, x == 0, NODIFF, ANY, 0, 0, \
    "true where x is zero (false)")                                            \
  /* nan_to_num(x, nan, posinf, neginf): NaN for posinf/neginf means the       \
   * dtype's largest finite values */                                          \
  X(NAN_TO_NUM, "nan_to_num", ", nan=0.0, posinf=none, neginf=none", B3, SAMEB, \
    const R nv = (R)P0; const R pv = P1 == P1 ? (R)P1 : R_MAX;                 \
    const R mv = P2 == P2 ? (R)P2 : -R_MAX,                                    \
    x != x ? nv : x == (R)INFINITY ? pv : x == (R)-INFINITY ? mv : x, x, NONE, \
    D(isfinite(x) ? g : 0), ANY, 0, 1,                                         \
    "NaN, inf and -inf replaced (by default with 0 and the largest finite values)") \
  /* clamp(x, lo, hi): NaN bounds are absent (comparisons with NaN are         \
   * false), NaN x stays */                                                    \
  X(CLAMP, "clamp", ", min=none, max=none", BH, CLAMP, const R lo = (R)P0; const R hi = (R)P1, \
    CLAMP_X > hi ? hi : CLAMP_X, NONE, NONE, D((IN_R(p[0]) > x || IN_R(p[1]) < x) ? 0 : g), ANY, 0, 1, \
    "x limited to [min, max] (numbers or tensors; either may be none)")        \
  /* softplus(x, beta, threshold), torch.nn.functional's: linear where         \
   * beta * x > threshold; NaN parameters are the defaults, 1 and 20 */        \
  X(SOFTPLUS, "softplus", ", beta=1, threshold=20", B2, FONLY,                 \
    const R beta = P0 == P0 ? (R)P0 : (R)1; const R thr = P1 == P1 ? (R)P1 : (R)20, \
    x * beta > thr ? x : FN(log1p)(FN(exp)(x * beta)) / beta, NONE, NONE,      \
    D(IN_R(x * IN_R(SP_BETA)) > IN_R(SP_THR) ? g : g * exp(x * SP_BETA) / (exp(x * SP_BETA) + 1)), \
    ANY, 0, 1,                                                                 \
    "log(1 + e**(beta x)) / beta, x itself where beta x > threshold")          \
  /* the activations of torch.nn.functional: gelu's exact (erf) form and its  \
   * tanh approximation (gelu(x, approximate="tanh"), reached by gelu's        \
   * builtin), silu, leaky_relu and elu, each as torch computes it */          \
  X(GELU, "gelu", ", approximate=none", BH, FONLY, NOPRE,                      \
    x * (R)0.5 * ((R)1 + FN(erf)(x * (R)SQRT1_2)), NONE, NONE,                 \
    D(g * (0.5 * (1 + erf(x * SQRT1_2)) + x * INV_SQRT2PI * exp(-0.5 * x * x))), ANY, 0, 1, \
    "x * P(X <= x), X standard normal (exact erf form; approximate=\"tanh\": torch's tanh form)") \
  X(GELU_TANH, "gelu", "", BN, FONLY, NOPRE,                                   \
    (R)0.5 * x * ((R)1 + FN(tanh)((R)GELU_BETA * (x + (R)GELU_KAPPA * x * x * x))), NONE, NONE, \
    D(dgelu_tanh(x, g)), ANY, 0, 1, "gelu's tanh approximation")               \
  X(SILU, "silu", "", B0, FONLY, NOPRE, x / ((R)1 + FN(exp)(-x)), NONE, NONE,  \
    D(g / (1 + exp(-x)) * (1 + x * (1 - 1 / (1 + exp(-x))))), ANY, 1, 1,       \
    "x * sigmoid(x) (swish)")                                                  \
  X(LEAKY_RELU, "leaky_relu", ", negative_slope=0.01", B1, FONLY,              \
    const R slope = P0 == P0 ? (R)P0 : (R)0.01,                                \
    x > 0 ? x : x * slope, NONE, NONE, D(x > 0 ? g : g * LR_SLOPE), ANY, 0, 1, \
    "x where x > 0, else negative_slope * x")                                  \
  X(ELU, "elu", ", alpha=1.0", B1, FONLY, const R alpha = P0 == P0 ? (R)P0 : (R)1, \
    x <= 0 ? (FN(exp)(x) - (R)1) * alpha : x, NONE, NONE,                      \
    D(x <= 0 ? g * ELU_ALPHA * exp(x) : g), ANY, 0, 1,                         \
    "x where x > 0, else alpha * (e**x - 1)")                                  \
  X(SELU, "selu", "", B0, FONLY, NOPRE,                                       \
    (R)SELU_SCALE * (x <= 0 ? (FN(exp)(x) - (R)1) * (R)SELU_ALPHA : x), NONE, NONE, \
    D(x <= 0 ? g * SELU_SCALE * SELU_ALPHA * exp(x) : g * SELU_SCALE), ANY, 1, 1, \
    "scale * elu(x, alpha), torch's self-normalizing constants")               \
  X(MISH, "mish", "", B0, FONLY, NOPRE, x * FN(tanh)(FN(log1p)(FN(exp)(x))), NONE, NONE, \
    D(dmish(x, g)), ANY, 1, 1, "x * tanh(softplus(x))")                        \
  X(LOGSIGMOID, "logsigmoid", "", B0, FONLY, NOPRE,                            \
    (x < 0 ? x : (R)0) - FN(log1p)(FN(exp)(-FN(fabs)(x))), NONE, NONE,         \
    D(g / (1 + exp(x))), ANY, 1, 1, "log(sigmoid(x)), computed stably")        \
  /* the hard activations of torch.nn.functional, with torch's derivative at \
   * the kinks: hardtanh's and relu6's is 0 at the bounds, hardsigmoid's 0 at \
   * -3 and 3 (and 1/6 as the float32 constant, even in float64, as torch),  \
   * hardswish's (x/3 + 1/2) from -3 on and 1 from 3 on; NaN takes the       \
   * branch torch's comparisons give it */                                    \
  X(HARDTANH, "hardtanh", ", min_val=-1.0, max_val=1.0", BH, CLAMP,           \
    const R lo = (R)P0; const R hi = (R)P1, CLAMP_X > hi ? hi : CLAMP_X, NONE, NONE, \
    D(x <= p[0] || x >= p[1] ? 0 : g), ANY, 0, 1,                             \
    "x limited to [min_val, max_val]; gradient 0 at the bounds, as torch")    \
  X(RELU6, "relu6", "", B0, SAME, NOPRE, RELU6_X > (R)6 ? (R)6 : RELU6_X,      \
    RELU6_X > 6 ? 6 : RELU6_X, NONE, D(x <= 0 || x >= 6 ? 0 : g), ANY, 1, 1,   \
    "min(max(x, 0), 6) elementwise (hardtanh(x, 0, 6))")                      \
  X(HARDSIGMOID, "hardsigmoid", "", B0, FONLY, NOPRE, HSIG_T / (R)6, NONE, NONE, \
    D(x > -3 && x < 3 ? g * (double)(1.0f / 6.0f) : 0), ANY, 1, 1,            \
    "min(max(x + 3, 0), 6) / 6 elementwise")                                  \
  X(HARDSWISH, "hardswish", "", B0, FONLY, NOPRE, x * HSIG_T / (R)6, NONE, NONE, \
    D(x < -3 ? 0 : x < 3 ? g * (x / 3 + 0.5) : g), ANY, 1, 1,                 \
    "x * hardsigmoid(x) elementwise")                                         \
  X(SOFTSIGN, "softsign", "", B0, FLOAT, NOPRE, x / ((R)1 + FN(fabs)(x)), NONE, NONE, \
    D(g / (1 + fabs(x)) - g * fabs(x) / ((1 + fabs(x)) * (1 + fabs(x)))), ANY, 1, 1, \
    "x / (1 + |x|) elementwise (its gradient NaN at +-inf, as torch's)")      \
  X(TANHSHRINK, "tanhshrink", "", B0, FLOAT, NOPRE, x - FN(tanh)(x), NONE, NONE, \
    D(g * tanh(x) * tanh(x)), ANY, 1, 1, "x - tanh(x) elementwise")            \

/* X(alias, E, params, doc): more builtin names for MQ_UN_E, bound by its
 * builtin's function (params: that builtin's). */
#define MQ_UNARY_ALIASES(X)                                                    \
  X("absolute", ABS, "", "absolute value elementwise (alias of abs)")          \
  X("arccos", ACOS, "", "arccosine elementwise (alias of acos)")               \
  X("arccosh", ACOSH, "", "inverse hyperbolic cosine elementwise (alias of acosh)") \
  X("arcsin", ASIN, "", "arcsine elementwise (alias of asin)")                 \
  X("arcsinh", ASINH, "", "inverse hyperbolic sine elementwise (alias of asinh)") \
  X("arctan", ATAN, "", "arctangent elementwise (alias of atan)")              \
  X("arctanh", ATANH, "", "inverse hyperbolic tangent elementwise (alias of atanh)") \
  X("clip", CLAMP, ", min=none, max=none", "x limited to [min, max] (alias of clamp)") \
  X("fix", TRUNC, "", "round toward zero (alias of trunc)")                    \
  X("negative", NEG, "", "-x elementwise (alias of neg)")                      \
  X("sgn", SIGN, "", "the sign of x (alias of sign for real tensors)")

/* Helpers of the element expressions above. */
/* In a derivative, [v] rounded to the type the forward computed in (in_f32:
 * float32, else float64), so that a branch compares the same values the
 * forward's did (softplus's beta x > threshold, clamp's bounds): a
 * gradient never takes the other branch than its forward. */
#define IN_R(v) (in_f32 ? (double)(float)(v) : (double)(v))
#define LOGIT_Z (has ? (x < lo ? lo : x > hi ? hi : x) : x)
#define CLAMP_X (x < lo ? lo : x)
#define SP_BETA (p[0] == p[0] ? p[0] : 1)
#define SP_THR (p[1] == p[1] ? p[1] : 20)
#define LR_SLOPE (p[0] == p[0] ? p[0] : 0.01)
#define ELU_ALPHA (p[0] == p[0] ? p[0] : 1)
/* relu6's max(x, 0) and hardsigmoid's min(max(x + 3, 0), 6), NaN kept */
#define RELU6_X (x < 0 ? 0 : x)
#define HSIG_U (x + (R)3 < 0 ? (R)0 : x + (R)3)
#define HSIG_T (HSIG_U > (R)6 ? (R)6 : HSIG_U)
/* gelu's constants, torch's: 1/sqrt(2), 1/sqrt(2 pi), and the tanh form's
 * sqrt(2/pi) and 0.044715 */
#define SQRT1_2 0.70710678118654752440
#define INV_SQRT2PI 0.39894228040143267794
#define GELU_BETA 0.79788456080286535588
#define GELU_KAPPA 0.044715
/* selu's alpha and scale, torch's */
#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946

#endif
