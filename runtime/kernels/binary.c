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
#include "../tensor/masksum.h"
#include "ops.h"

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

/* NaN-propagating extrema (torch.maximum); fmax/fmin ignore NaN. On a
 * tie (0 and -0) each gives y. fmax/fmin are written out, not libm's:
 * the C functions may return either zero on a tie, and gcc vectorizes a
 * loop with a number operand with the operands of MAXPS swapped, so
 * fmax(-0.0, 0.0) gave 0 on two tensors and -0 on a tensor and a number. */
#define MAXP(x, y) ((x) > (y) || (x) != (x) ? (x) : (y))
#define MINP(x, y) ((x) < (y) || (x) != (x) ? (x) : (y))
#define MAXN(x, y) ((x) > (y) || (y) != (y) ? (x) : (y))
#define MINN(x, y) ((x) < (y) || (y) != (y) ? (x) : (y))

/* --- kernels, from the rows of ops_binary.h ------------------------------------ */

/* Float kernels k_E_F32 and k_E_F64 (bool results for comparisons). */
#define DEF_BF_ARITH(E, SFX, T, EXPR) DEF_BIN(k_##E##_##SFX, T, T, EXPR)
#define DEF_BF_FLOAT DEF_BF_ARITH
#define DEF_BF_FONLY DEF_BF_ARITH
/* F64 ops always compute in float64: no float32 kernel */
#define DEF_BF_F64(E, SFX, T, EXPR) DEF_BF_F64_##SFX(E, T, EXPR)
#define DEF_BF_F64_F32(E, T, EXPR)
#define DEF_BF_F64_F64(E, T, EXPR) DEF_BIN(k_##E##_F64, T, T, EXPR)
#define DEF_BF_CMP(E, SFX, T, EXPR) DEF_BIN(k_##E##_##SFX, T, uint8_t, EXPR)
#define DEF_BF_INT(E, SFX, T, EXPR)
#define DEF_FB32(E, name, params, bind, cls, div0, fexpr, ...) DEF_BF_##cls(E, F32, float, fexpr)
#define DEF_FB64(E, name, params, bind, cls, div0, fexpr, ...) DEF_BF_##cls(E, F64, double, fexpr)
#define FN(name) name##f
#define FH(name) name##_float
MQ_BINARY_OPS(DEF_FB32)
#undef FH
#undef FN
#define FN(name) name
#define FH(name) name##_double
MQ_BINARY_OPS(DEF_FB64)
#undef FH
#undef FN
DEF_BIN(pow_number_F32, float, float, pow_number_float(x, y))
DEF_BIN(pow_number_F64, double, double, pow_number_double(x, y))

/* Int64 and bool kernels k_E_I64 and k_E_BOOL (comparisons: the float
 * expression for every dtype). */
#define DEF_BI_ARITH(E, FEXPR, IEXPR) DEF_BIN(k_##E##_I64, int64_t, int64_t, IEXPR)
#define DEF_BI_INT DEF_BI_ARITH
#define DEF_BI_FLOAT(E, FEXPR, IEXPR)
#define DEF_BI_FONLY DEF_BI_FLOAT
#define DEF_BI_F64 DEF_BI_FLOAT
#define DEF_BI_CMP(E, FEXPR, IEXPR)                                            \
  DEF_BIN(k_##E##_I64, int64_t, uint8_t, FEXPR)                                \
  DEF_BIN(k_##E##_BOOL, uint8_t, uint8_t, FEXPR)
#define DEF_BI(E, name, params, bind, cls, div0, fexpr, iexpr, ...) DEF_BI_##cls(E, fexpr, iexpr)
MQ_BINARY_OPS(DEF_BI)
/* bool arithmetic: add is or, mul is and, as torch */
DEF_BIN(or_BOOL, uint8_t, uint8_t, x | y)
DEF_BIN(and_BOOL, uint8_t, uint8_t, x & y)
DEF_BIN(xor_BOOL, uint8_t, uint8_t, x ^ y)

/* --- the table ------------------------------------------------------------------ */

/* How the compute dtype follows the promoted one: ARITH keeps it; FLOAT
 * computes ints and bools in float32 (true division, atan2, ...); F64
 * always computes in float64 (float_power); CMP keeps it and answers bool;
 * INT wants bool or int64 (bitwise ops); FONLY refuses ints and bools, as
 * torch (logaddexp, hypot). */
enum { CL_ARITH, CL_FLOAT, CL_F64, CL_CMP, CL_INT, CL_FONLY };

typedef struct binary_def {
  uint8_t cls;
  mq_ewise_fn k[MQ_DT__COUNT];
  bool int_divisor; /* integer kernels need nonzero valid divisors */
  bool no_bool;     /* a bool operand is refused, whatever the other (bk NOBOOL) */
  bool fuse;
} binary_def;

#define BK_OR or_BOOL
#define BK_AND and_BOOL
#define BK_XOR xor_BOOL
#define BK_NONE NULL
#define BK_NOBOOL NULL
#define NB_OR 0
#define NB_AND 0
#define NB_XOR 0
#define NB_NONE 0
#define NB_NOBOOL 1
#define FK(E) k_##E##_F32, k_##E##_F64
#define TAB_ARITH(E, bk) CL_ARITH, {BK_##bk, k_##E##_I64, FK(E)}
#define TAB_FLOAT(E, bk) CL_FLOAT, {NULL, NULL, FK(E)}
#define TAB_FONLY(E, bk) CL_FONLY, {NULL, NULL, FK(E)}
#define TAB_F64(E, bk) CL_F64, {NULL, NULL, NULL, k_##E##_F64}
#define TAB_CMP(E, bk) CL_CMP, {k_##E##_BOOL, k_##E##_I64, FK(E)}
#define TAB_INT(E, bk) CL_INT, {BK_##bk, k_##E##_I64, NULL, NULL}

static const binary_def defs[MQ_BIN__COUNT] = {
#define X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, doma, domb, fuse, ...) \
  [MQ_BIN_##E] = {TAB_##cls(E, bk), div0, NB_##bk, fuse},
    MQ_BINARY_OPS(X)
#undef X
};
static const char *const bin_names[] = {
#define X(E, name, ...) name,
    MQ_BINARY_OPS(X)
#undef X
};

/* --- masks --------------------------------------------------------------------- */

static const char mask_hint[] =
    "(use intersect(a, b) to keep only positions valid in both, or to_tensor(x, fill) to drop a mask)";

/* Masks of operands of different shapes, one broadcast against the other
 * (a per-row statistic such as mean(x, 1, keepdim=true), a 0-d result): a
 * position is valid when both operands are valid there, as a number's
 * validity would combine. A mask that is all valid leaves the other's,
 * shared, without a new mask. */
static mq_tensor *broadcast_masks(mq_state *S, mq_tensor *a, mq_tensor *b, int nd,
                                  const int64_t *shape) {
  mq_tensor *ma = mq_expand(S, a->mask, nd, shape), *mb = mq_expand(S, b->mask, nd, shape);
  if (mq_mask_known_all_valid(S, b->mask)) return ma;
  if (mq_mask_known_all_valid(S, a->mask)) return mb;
  return mq_binary(S, MQ_BIN_LAND, ma, mb);
}

/* The result mask of a binary op on a and b, broadcast to [shape]. Masks of
 * the same shape must be equal, as in torch.masked: two different masks
 * over the same positions mostly mean misaligned data. 0-d ones are
 * results, not data, and combine like the broadcast ones. */
static mq_tensor *binary_mask(mq_state *S, mq_tensor *a, mq_tensor *b, int nd,
                              const int64_t *shape) {
  if (a->mask && b->mask) {
    /* two 0-d results (mean(a) - mean(b)) combine as numbers would */
    if (!mq_tensor_same_shape(a, b) || a->ndim == 0) return broadcast_masks(S, a, b, nd, shape);
    if (!mq_tensor_same_view(a->mask, b->mask)) {
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
  if ((unsigned)op >= MQ_BIN__COUNT || mq_dtype_float_compute(dt) != dt) return NULL; /* float32, float64 */
  return defs[op].fuse ? defs[op].k[dt] : NULL;
}

mq_ewise_fn mq_pow_number_kernel(mq_dtype dt) {
  return dt == MQ_DT_F32 ? pow_number_F32 : dt == MQ_DT_F64 ? pow_number_F64 : NULL;
}

/* [t] as half type [h] (float16 or bfloat16), a weak number staying weak:
 * torch converts an int tensor or a number that meets a half tensor to the
 * half type before it computes in float32 (fmod(bf16 300, int16 257) is
 * fmod(300, 256), 44), so an operand is rounded as torch rounds it. */
static mq_tensor *half_operand(mq_state *S, mq_tensor *t, mq_dtype h) {
  if (t->dtype == h) return t;
  mq_tensor *r = mq_astype(S, t, h); /* a new tensor */
  r->weak = t->weak;
  return r;
}

static mq_tensor *binary_run(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b,
                             mq_tensor *spare, mq_dtype half);

mq_tensor *mq_binary(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b) {
  return mq_binary_spare(S, op, a, b, NULL);
}

mq_tensor *mq_binary_spare(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b,
                           mq_tensor *spare) {
  if ((unsigned)op >= MQ_BIN__COUNT) mq_error(S, "bad binary op");
  const binary_def *def = &defs[op];
  mq_tensor *in[2] = {a, b};
  if (def->no_bool && (a->dtype == MQ_DT_BOOL || b->dtype == MQ_DT_BOOL))
    mq_error(S, "subtraction, the `-` operator, with a bool tensor is not supported, as in torch "
                "(for two bools use `^`, or `&` with `~`; else convert with long(x) or float(x))");
  if (def->cls == CL_FONLY && !mq_dtype_is_float(mq_result_type(2, in)))
    mq_error(S, "%s is only defined for float tensors, got %s and %s (float(x) converts)",
             bin_names[op], mq_dtype_name((mq_dtype)a->dtype), mq_dtype_name((mq_dtype)b->dtype));
  if (mq_dtype_is_narrow((mq_dtype)a->dtype) || mq_dtype_is_narrow((mq_dtype)b->dtype)) {
    /* storage dtypes: computed in their compute dtypes, stored back as
     * torch's result type says */
    mq_dtype want = mq_result_type(2, in);
    if (def->cls == CL_INT && mq_dtype_is_float(want)) /* named as given, not as computed */
      mq_error(S, "%s is only defined for %s tensors, got %s and %s", bin_names[op],
               def->k[MQ_DT_BOOL] ? "bool and integer" : "integer",
               mq_dtype_name((mq_dtype)a->dtype), mq_dtype_name((mq_dtype)b->dtype));
    /* torch: both operands as the half type first (float_power: float64) */
    if ((want == MQ_DT_F16 || want == MQ_DT_BF16) && def->cls != CL_F64) {
      a = half_operand(S, a, want);
      b = half_operand(S, b, want);
      if (!a->requires_grad && !b->requires_grad) return binary_run(S, op, a, b, NULL, want);
    }
    mq_tensor *r = mq_binary_spare(S, op, mq_tensor_computable(S, a), mq_tensor_computable(S, b), NULL);
    return mq_narrow_back(S, r, want);
  }
  return binary_run(S, op, a, b, spare, MQ_DT__ALL);
}

/* [op] on [a] and [b] (after the checks of mq_binary_spare), computed in
 * their result type; or, when [half] is a half type (both operands are
 * of it, no gradient to record), in float32 block by block from the half
 * data (iter.h's mq_ewise_run_half) into a result of that half type (a
 * bool one for a comparison): the bits of the op on the operands widened
 * to float32, then narrowed, without those float32 tensors. */
static mq_tensor *binary_run(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b,
                             mq_tensor *spare, mq_dtype half) {
  const binary_def *def = &defs[op];
  mq_tensor *in[2] = {a, b};
  bool hs = half != MQ_DT__ALL; /* half storage */
  mq_dtype ct = hs ? MQ_DT_F32 : mq_result_type(2, in), out_dt;
  switch (def->cls) {
  case CL_FLOAT: if (!mq_dtype_is_float(ct)) ct = MQ_DT_F32; break;
  case CL_F64: ct = MQ_DT_F64; break;
  case CL_INT:
    if (mq_dtype_is_float(ct))
      mq_error(S, "%s is only defined for %s tensors, got %s and %s", bin_names[op],
               def->k[MQ_DT_BOOL] ? "bool and integer" : "integer",
               mq_dtype_name((mq_dtype)a->dtype), mq_dtype_name((mq_dtype)b->dtype));
    break;
  default: break;
  }
  if (ct == MQ_DT_F32) { /* computed in float32, a float number is its float32 value, as in torch */
    a = in[0] = f32_number(S, a);
    b = in[1] = f32_number(S, b);
  }
  /* the dtype the operands and a float result are stored in */
  mq_dtype st = hs ? half : ct;
  out_dt = def->cls == CL_CMP ? MQ_DT_BOOL : st;
  mq_ewise_fn k = def->k[ct];
  if (!k) mq_error(S, "%s is not defined for %s tensors", bin_names[op], mq_dtype_name(ct));

  int64_t shape[MQ_MAX_DIMS + 1];
  if ((a->ndim > b->ndim ? a->ndim : b->ndim) > MQ_MAX_DIMS) mq_error(S, "too many dimensions");
  int nd = mq_broadcast_shapes(S, a->ndim, a->shape, b->ndim, b->shape, shape);
  mq_tensor *mask = binary_mask(S, a, b, nd, shape);

  /* x ** 2 is x * x: exact, and much faster than pow */
  if (op == MQ_BIN_POW && mq_dtype_is_float(ct) && b->numel == 1 && !b->mask && b->ndim <= a->ndim &&
      a->dtype == st && mq_tensor_item(S, b) == 2.0)
    b = a, k = defs[MQ_BIN_MUL].k[ct];
  else if ((op == MQ_BIN_POW || op == MQ_BIN_FLOAT_POWER) && mq_dtype_is_float(ct) && in[1]->weak)
    k = mq_pow_number_kernel(ct);

  /* Decided before mq_operand, whose data view of a masked [a] shares its
   * storage. An operand in a graph is read again by backward: none here. */
  bool reuse = spare && spare == in[0] && a == spare && !MQ_AG_REQ(b) && !b->node &&
               mq_reusable(a, out_dt, nd, shape);
  mq_tensor *out = reuse ? mq_reuse(S, a) : NULL;
  mq_tensor *x = mq_operand(S, a, st, nd, shape), *y = mq_operand(S, b, st, nd, shape);
  if (ct == MQ_DT_I64) {
    if (op == MQ_BIN_POW) check_int_exponent(S, y, mask);
    if (def->int_divisor) mq_check_int_divisor(S, y, mask, bin_names[op]);
  }
  if (!out) out = mq_tensor_new(S, out_dt, nd, shape);
  mq_tensor *ts[3] = {out, x, y};
  mq_iter it;
  mq_iter_init(&it, 3, ts);
  /* In place, the kernel runs to its end: an interrupt waits until after
   * it (each element reads x[i] before writing out[i], the same place) */
  S->defer_interrupts += reuse;
  if (hs) {
    uint8_t kind = half == MQ_DT_BF16 ? MQ_HALF_BF16 : MQ_HALF_F16;
    const uint8_t kinds[3] = {out_dt == half ? kind : 0, kind, kind};
    mq_ewise_run_half(S, k, &it, NULL, kinds);
  } else
    mq_ewise_run(S, k, &it, NULL);
  S->defer_interrupts -= reuse;
  if (mask) mq_tensor_set_mask(S, out, mask);
  out->weak = in[0]->weak && in[1]->weak;
  mq_ag_binary(S, out, op, in[0], in[1]);
  return out;
}
