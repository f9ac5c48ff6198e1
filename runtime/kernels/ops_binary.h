/* ops_binary.h - the binary elementwise ops, one row each; as ops_unary.h
 * for the unary ones: the enum, the kernels (binary.c), the derivatives
 * (backward.c), fusion (fuse.c), the builtins and their docs (lib_math.c)
 * and the table-driven checks (tests/unit/test_gradcheck.c, test_ops.c) expand from it.
 *
 * X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, doma, domb, fuse, conf, doc)
 *
 *   E, name, fuse, conf, doc   as in ops_unary.h
 *   params  the builtin's parameters after x (", y", ", exponent")
 *   bind    B0 calls mq_binary on x and y; BH lib_bin_E is written by hand
 *           in lib_math.c; BN no builtin of its own
 *   cls     the compute dtype: ARITH keeps the promoted one (ints by iexpr,
 *           bools by bk); FLOAT computes ints and bools in float32; FONLY
 *           refuses them (torch has no int kernel); F64
 *           always in float64; CMP keeps it and answers bool (fexpr for
 *           every dtype); INT bools (bk) and ints (iexpr) only
 *   div0    1 if valid integer divisors must be nonzero
 *   fexpr   the float element expression in x and y (FN(pow) names powf or
 *           pow, FH(xlogy) the float or double helper of binary.c)
 *   iexpr   the int64 expression (ARITH, INT), else NONE
 *   bk      the bool kernel (ARITH, INT): OR, AND, XOR, or NONE (two bools
 *           refused, as torch: // % ** fmod); NOBOOL also refuses a bool
 *           with any other operand (torch's sub)
 *   deriv   D(ga, gb): the gradients of one element for x and y in double,
 *           from x, y, the result o and the incoming g; NODIFF for ops
 *           whose result is never float
 *   doma, domb  the gradient check's domains for x and y (ops_unary.h);
 *           CONV: the derivative is a convention finite differences do
 *           not see (nextafter's 0) */
#ifndef MQ_OPS_BINARY_H
#define MQ_OPS_BINARY_H

#define MQ_BINARY_OPS(X)                                                       \
  X(ADD, "add", ", y, alpha=1", BH, ARITH, 0, x + y, WADD(x, y), OR, D(g, g), ANY, ANY, 1, 1, \
    "x + alpha * y with broadcasting")                                         \
  X(SUB, "sub", ", y, alpha=1", BH, ARITH, 0, x - y, WSUB(x, y), NOBOOL, D(g, -g), ANY, ANY, 1, 1, \
    "x - alpha * y with broadcasting")                                         \
  X(MUL, "mul", ", y", B0, ARITH, 0, x * y, WMUL(x, y), AND, D(g * y, g * x), ANY, ANY, 1, 1, \
    "x * y with broadcasting")                                                 \
  X(DIV, "div", ", y, rounding_mode=none", BH, FLOAT, 0, x / y, NONE, NONE,    \
    D(g / y, -g * x / (y * y)), ANY, POS, 1, 1,                                \
    "x / y; rounding_mode \"trunc\" or \"floor\" rounds the quotient (ints stay ints)") \
  /* torch's pow_backward_{self,exponent} */                                   \
  X(POW, "pow", ", exponent", B0, ARITH, 0, FN(pow)(x, y), mq_ipow(x, y), NONE, \
    D(y == 0 ? 0 : g * y * pow(x, y - 1), x == 0 && y >= 0 ? 0 : g * pow(x, y) * log(x)), \
    POS, ANY, 1, 1, "x ** exponent; a number on either side works")            \
  X(LT, "lt", ", y", B0, CMP, 0, x < y, NONE, NONE, NODIFF, ANY, ANY, 0, 1, "x < y elementwise") \
  X(LE, "le", ", y", B0, CMP, 0, x <= y, NONE, NONE, NODIFF, ANY, ANY, 0, 1, "x <= y elementwise") \
  X(GT, "gt", ", y", B0, CMP, 0, x > y, NONE, NONE, NODIFF, ANY, ANY, 0, 1, "x > y elementwise") \
  X(GE, "ge", ", y", B0, CMP, 0, x >= y, NONE, NONE, NODIFF, ANY, ANY, 0, 1, "x >= y elementwise") \
  X(EQ, "eq", ", y", B0, CMP, 0, x == y, NONE, NONE, NODIFF, ANY, ANY, 0, 1, "x == y elementwise") \
  X(NE, "ne", ", y", B0, CMP, 0, x != y, NONE, NONE, NODIFF, ANY, ANY, 0, 1, "x != y elementwise") \
  X(BAND, "bitwise_and", ", y", B0, INT, 0, NONE, x & y, AND, NODIFF, ANY, ANY, 0, 1, \
    "x & y for bools and ints")                                                \
  X(BOR, "bitwise_or", ", y", B0, INT, 0, NONE, x | y, OR, NODIFF, ANY, ANY, 0, 1, \
    "x | y for bools and ints")                                                \
  X(BXOR, "bitwise_xor", ", y", B0, INT, 0, NONE, x ^ y, XOR, NODIFF, ANY, ANY, 0, 1, \
    "x ^ y for bools and ints")                                                \
  X(FLOORDIV, "floor_divide", ", y", B0, ARITH, 1, FH(fdiv_floor)(x, y), mq_idiv_floor(x, y), \
    NONE, D(0, 0), ANY, POS, 1, 1, "x // y: the quotient rounded down")        \
  X(REM, "remainder", ", y", B0, ARITH, 1, FH(fmod_floor)(x, y), mq_imod_floor(x, y), NONE, \
    D(g, -g * floor(x / y)), ANY, POS, 1, 1,                                   \
    "x % y: the remainder with the sign of y (Python's)")                      \
  X(FMOD, "fmod", ", y", B0, ARITH, 1, FN(fmod)(x, y), mq_imod_trunc(x, y), NONE, \
    D(g, -g * trunc(x / y)), ANY, POS, 1, 1, "the remainder with the sign of x (C's fmod)") \
  X(DIVTRUNC, "div", ", y", BN, ARITH, 1, FN(trunc)(x / y), mq_idiv_trunc(x, y), NONE, \
    D(0, 0), ANY, POS, 1, 0, "")                                               \
  X(ATAN2, "atan2", ", y", B0, FLOAT, 0, FN(atan2)(x, y), NONE, NONE,          \
    D(g * y / (x * x + y * y), -g * x / (x * x + y * y)), ANY, ANY, 1, 1,      \
    "atan(x / y) in the right quadrant: the angle of the point (y, x)")        \
  X(LOGADDEXP, "logaddexp", ", y, input_mask=none, other_mask=none", BH, FONLY, 0, \
    FH(logaddexp)(x, y), NONE, NONE, D(g / (1 + exp(y - x)), g / (1 + exp(x - y))), ANY, \
    ANY, 1, 1, "log(e**x + e**y) without overflow; input_mask= and other_mask= mask plain x and y") \
  X(LOGADDEXP2, "logaddexp2", ", y", B0, FONLY, 0, FH(logaddexp2)(x, y), NONE, NONE, \
    D(g / (1 + exp2(y - x)), g / (1 + exp2(x - y))), ANY, ANY, 1, 1,           \
    "log2(2**x + 2**y) without overflow")                                      \
  /* ties split evenly, as torch; NaN wins */                                  \
  X(MAXIMUM, "maximum", ", y", B0, ARITH, 0, MAXP(x, y), x > y ? x : y, OR,    \
    D(x == y ? g / 2 : x > y ? g : 0, x == y ? g / 2 : x > y ? 0 : g), ANY, ANY, 1, 1, \
    "the larger of x and y elementwise (NaN wins)")                            \
  X(MINIMUM, "minimum", ", y", B0, ARITH, 0, MINP(x, y), x < y ? x : y, AND,   \
    D(x == y ? g / 2 : x < y ? g : 0, x == y ? g / 2 : x < y ? 0 : g), ANY, ANY, 1, 1, \
    "the smaller of x and y elementwise (NaN wins)")                           \
  /* the non-NaN operand wins */                                               \
  X(FMAX, "fmax", ", y", B0, ARITH, 0, MAXN(x, y), x > y ? x : y, OR,          \
    D(x >= y || y != y ? g : 0, x >= y || y != y ? 0 : g), ANY, ANY, 1, 1,     \
    "the larger of x and y elementwise, ignoring NaN")                         \
  X(FMIN, "fmin", ", y", B0, ARITH, 0, MINN(x, y), x < y ? x : y, AND,         \
    D(x <= y || y != y ? g : 0, x <= y || y != y ? 0 : g), ANY, ANY, 1, 1,     \
    "the smaller of x and y elementwise, ignoring NaN")                        \
  X(SHL, "bitwise_left_shift", ", y", B0, INT, 0, NONE, ishl(x, y), NONE, NODIFF, ANY, ANY, \
    0, 1, "x shifted left by y bits (ints)")                                   \
  X(SHR, "bitwise_right_shift", ", y", B0, INT, 0, NONE, ishr(x, y), NONE, NODIFF, ANY, ANY, \
    0, 1, "x shifted right by y bits, keeping the sign (ints)")                \
  X(NEXTAFTER, "nextafter", ", y", B0, FONLY, 0, FN(nextafter)(x, y), NONE, NONE, D(0, 0), \
    CONV, CONV, 1, 1, "the next float after x toward y")                       \
  X(HYPOT, "hypot", ", y", B0, FONLY, 0, FN(hypot)(x, y), NONE, NONE, D(g * x / o, g * y / o), \
    ANY, ANY, 1, 1, "sqrt(x**2 + y**2) without overflow")                      \
  X(COPYSIGN, "copysign", ", y", B0, FLOAT, 0, FN(copysign)(x, y), NONE, NONE, \
    D(x == 0 ? 0 : g * (o / x), 0), ANY, ANY, 1, 1, "the magnitude of x with the sign of y") \
  /* torch's: log(y) at x == 0 too, where a finite difference agrees */        \
  X(XLOGY, "xlogy", ", y", B0, FLOAT, 0, FH(xlogy)(x, y), NONE, NONE,          \
    D(x == 0 && y <= 0 ? 0 : g == 0 && y == y ? 0 : g * log(y), g * x / y), ANY, POS, 1, 1, \
    "x * log(y), 0 where x is 0")                                              \
  X(FLOAT_POWER, "float_power", ", y", B0, F64, 0, FN(pow)(x, y), NONE, NONE,  \
    D(y == 0 ? 0 : g * y * pow(x, y - 1), x == 0 && y >= 0 ? 0 : g * pow(x, y) * log(x)), \
    POS, ANY, 0, 1, "x ** y computed in float64")                              \
  X(LAND, "logical_and", ", y", B0, CMP, 0, (x != 0) & (y != 0), NONE, NONE, NODIFF, ANY, ANY, \
    0, 0, "true where both are nonzero")                                       \
  X(LOR, "logical_or", ", y", B0, CMP, 0, (x != 0) | (y != 0), NONE, NONE, NODIFF, ANY, ANY, \
    0, 0, "true where either is nonzero")                                      \
  X(LXOR, "logical_xor", ", y", B0, CMP, 0, (x != 0) ^ (y != 0), NONE, NONE, NODIFF, ANY, ANY, \
    0, 0, "true where exactly one is nonzero")

/* X(alias, E, bind, params, doc): more builtin names for MQ_BIN_E, bound
 * as [bind] says (B0: plainly on x and y, BH: by the op's own builtin). */
#define MQ_BINARY_ALIASES(X)                                                   \
  X("subtract", SUB, BH, ", y, alpha=1", "x - alpha * y (alias of sub)")       \
  X("multiply", MUL, B0, ", y", "x * y (alias of mul)")                        \
  X("divide", DIV, BH, ", y, rounding_mode=none", "x / y (alias of div)")      \
  X("true_divide", DIV, B0, ", y", "x / y, ints giving floats")                \
  X("arctan2", ATAN2, B0, ", y", "atan2 (alias)")                              \
  X("not_equal", NE, B0, ", y", "x != y (alias of ne)")                        \
  X("less", LT, B0, ", y", "x < y (alias of lt)")                              \
  X("less_equal", LE, B0, ", y", "x <= y (alias of le)")                       \
  X("greater", GT, B0, ", y", "x > y (alias of gt)")                           \
  X("greater_equal", GE, B0, ", y", "x >= y (alias of ge)")

#endif
