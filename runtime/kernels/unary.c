/* unary.c - elementwise functions of one tensor: torch.masked's unary list
 * for real dtypes (abs ... trunc), plus relu, isinf, isfinite, logical_not.
 *
 * Like every elementwise op they compute on all data, masked-out entries
 * included, and keep the mask: a masked-out slot may end up holding NaN,
 * but it is never unmasked, so no valid result changes. The costly ones
 * (mq_unary_costly) under a padding mask compute its valid runs only and
 * hold +0 in the padding (tensor/spanrun.h).
 *
 * Kernels are generated from one element expression per op: the float ones
 * are instantiated twice, with FN(f) naming the float32 (f##f) and then the
 * float64 (f) libm function, so `FN(exp)(x)` becomes expf or exp. R is the
 * element type inside an expression; P0..P2 are the op's parameters. */
#include <float.h>
#include <math.h>

#include "../tensor/cpu.h"
#include "../tensor/spanrun.h"
#include "ewise.h"
#include "ops.h"
#include "special.h"
#include "vexp.h"
#include "vmath.h"

/* FN(vexp) in an element expression (ops_unary.h): masq's float32 exp,
 * glibc's float64 one */
#define vexpf mq_vexpf
#define vexp exp

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

/* --- kernels, from the rows of ops_unary.h ------------------------------------ */

/* Float kernels k_E_F32 and k_E_F64, by the row's class: the same type out,
 * or bool for predicates; none for the bools-and-ints-only ops. */
#define DEF_F_FLOAT(E, SFX, T, PRE, EXPR) DEF_UNP(k_##E##_##SFX, T, T, PRE, EXPR)
#define DEF_F_SAME DEF_F_FLOAT
#define DEF_F_SAMEB DEF_F_FLOAT
#define DEF_F_FONLY DEF_F_FLOAT
#define DEF_F_CLAMP DEF_F_FLOAT
#define DEF_F_PRED(E, SFX, T, PRE, EXPR) DEF_UNP(k_##E##_##SFX, T, uint8_t, PRE, EXPR)
#define DEF_F_BITS(E, SFX, T, PRE, EXPR)
#define NOPRE (void)0

#define DEF_F32(E, name, params, bind, cls, pre, fexpr, ...) DEF_F_##cls(E, F32, float, pre, fexpr)
#define DEF_F64(E, name, params, bind, cls, pre, fexpr, ...) DEF_F_##cls(E, F64, double, pre, fexpr)
#define FN(name) name##f
#define R_MAX FLT_MAX
MQ_UNARY_OPS(DEF_F32)
#undef R_MAX
#undef FN
#define FN(name) name
#define R_MAX DBL_MAX
MQ_UNARY_OPS(DEF_F64)
#undef R_MAX
#undef FN

/* Int64 and bool kernels k_E_I64 and k_E_BOOL. */
#define DEF_IB_FLOAT(E, IEXPR, BEXPR)
#define DEF_IB_FONLY DEF_IB_FLOAT
#define DEF_IB_SAME(E, IEXPR, BEXPR) DEF_UN(k_##E##_I64, int64_t, int64_t, IEXPR)
#define DEF_IB_SAMEB DEF_IB_SAME
#define DEF_IB_BITS(E, IEXPR, BEXPR)                                           \
  DEF_UN(k_##E##_I64, int64_t, int64_t, IEXPR)                                 \
  DEF_UN(k_##E##_BOOL, uint8_t, uint8_t, BEXPR)
#define DEF_IB_PRED(E, IEXPR, BEXPR)                                           \
  DEF_UN(k_##E##_I64, int64_t, uint8_t, IEXPR)                                 \
  DEF_UN(k_##E##_BOOL, uint8_t, uint8_t, BEXPR)
/* clamp's int64 bounds: NaN means none; a float bound rounds toward the inside */
#define DEF_IB_CLAMP(E, IEXPR, BEXPR)                                          \
  DEF_UNP(k_##E##_I64, int64_t, int64_t,                                       \
          const int64_t lo = P0 == P0 ? mq_f2i(ceil(P0)) : INT64_MIN;          \
          const int64_t hi = P1 == P1 ? (P1 >= 9.2233720368547758e18 ? INT64_MAX : mq_f2i(floor(P1))) \
                                      : INT64_MAX,                             \
          CLAMP_X > hi ? hi : CLAMP_X)
#define DEF_IB(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, ...) DEF_IB_##cls(E, iexpr, bexpr)
MQ_UNARY_OPS(DEF_IB)
DEF_UN(copy_BOOL, uint8_t, uint8_t, x)

/* --- the table ----------------------------------------------------------- */

/* How the result dtype follows the input's: FLOAT ops compute ints and
 * bools in float32; SAME ops keep the dtype; BOOL ops answer bool. */
enum { CL_FLOAT, CL_SAME, CL_BOOL };

typedef struct unary_def {
  uint8_t cls;
  mq_ewise_fn k[MQ_DT__COUNT]; /* by input dtype, after the FLOAT cast */
  bool fuse;
} unary_def;

#define FK(E) k_##E##_F32, k_##E##_F64
#define TAB_FLOAT(E) CL_FLOAT, {NULL, NULL, FK(E)}
#define TAB_SAME(E) CL_SAME, {NULL, k_##E##_I64, FK(E)}
#define TAB_SAMEB(E) CL_SAME, {copy_BOOL, k_##E##_I64, FK(E)}
#define TAB_FONLY(E) CL_SAME, {NULL, NULL, FK(E)}
#define TAB_CLAMP TAB_SAME
#define TAB_BITS(E) CL_SAME, {k_##E##_BOOL, k_##E##_I64, NULL, NULL}
#define TAB_PRED(E) CL_BOOL, {k_##E##_BOOL, k_##E##_I64, FK(E)}

static const unary_def defs[MQ_UN__COUNT] = {
#define X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, dom, fuse, ...) \
  [MQ_UN_##E] = {TAB_##cls(E), fuse},
    MQ_UNARY_OPS(X)
#undef X
};

/* float32 exp over contiguous rows on the CPU's widest path (vexp.h):
 * the bits of the table's kernel, faster */
static void k_exp_f32_rows(mq_state *S, mq_iter *it, const double *prm) {
  (void)prm;
  ROWS_BEGIN(S, it)
  float *o = (float *)it->p[0];
  const float *a = (const float *)it->p[1];
  int64_t n = it->n, sa = it->is[1];
  if (sa == 1) mq_vexpf_best(o, a, 0.0f, n); /* x - 0 is x, -0 and NaN too */
  else
    for (int64_t i = 0; i < n; i++) o[i] = mq_vexpf(a[i * sa]);
  ROWS_END
}

/* float32 erf, tanh, gelu (both forms) and silu: masq's own (vmath.h),
 * on the CPU's widest path (the same bits on every path); a strided row
 * is gathered in blocks first. */
#define VACT_KERNEL(E)                                                         \
  static void k_vact_##E(mq_state *S, mq_iter *it, const double *prm) {         \
    (void)prm;                                                                 \
    const int cpu = mq_cpu_best(), f = mq_vact_of(MQ_UN_##E);                     \
    ROWS_BEGIN(S, it)                                                          \
    float *o = (float *)it->p[0];                                              \
    const float *a = (const float *)it->p[1];                                  \
    int64_t n = it->n, sa = it->is[1];                                         \
    if (sa == 1) mq_vact_rows(cpu, f, o, a, n);                                \
    else                                                                       \
      for (int64_t i0 = 0; i0 < n; i0 += 256) {                                \
        float buf[256];                                                        \
        int64_t m = n - i0 < 256 ? n - i0 : 256;                               \
        for (int64_t i = 0; i < m; i++) buf[i] = a[(i0 + i) * sa];             \
        mq_vact_rows(cpu, f, o + i0, buf, m);                                  \
      }                                                                        \
    ROWS_END                                                                   \
  }
VACT_KERNEL(ERF)
VACT_KERNEL(TANH)
VACT_KERNEL(GELU)
VACT_KERNEL(GELU_TANH)
VACT_KERNEL(SILU)

/* The kernel of op on dtype dt (NULL: none). */
static mq_ewise_fn kernel_of(mq_unop op, mq_dtype dt) {
  if (dt == MQ_DT_F32) switch (op) {
    case MQ_UN_EXP: return k_exp_f32_rows;
    case MQ_UN_ERF: return k_vact_ERF;
    case MQ_UN_TANH: return k_vact_TANH;
    case MQ_UN_GELU: return k_vact_GELU;
    case MQ_UN_GELU_TANH: return k_vact_GELU_TANH;
    case MQ_UN_SILU: return k_vact_SILU;
    default: break;
    }
  return defs[op].k[dt];
}

static const char *const un_names[] = {
#define X(E, name, ...) name,
    MQ_UNARY_OPS(X)
#undef X
};

/* [op] has no kernel for [t]'s dtype (named as stored, int8 not int64). */
static MQ_NORETURN void refuse(mq_state *S, mq_unop op, const mq_tensor *t) {
  mq_dtype dt = (mq_dtype)t->dtype;
  if (op == MQ_UN_NEG)
    mq_error(S, "negation, the `-` operator, on a bool tensor is not supported "
                "(use `~` to invert a mask)");
  if (op == MQ_UN_BITNOT)
    mq_error(S, "bitwise_not, the `~` operator, is only defined for bool and integer tensors, got %s",
             mq_dtype_name(dt));
  if (!defs[op].k[MQ_DT_I64]) /* FONLY: torch has no int kernel */
    mq_error(S, "%s is only defined for float tensors, got %s, as in torch (float(x) converts)",
             un_names[op], mq_dtype_name(dt));
  mq_error(S, "%s is not defined for %s tensors%s", un_names[op], mq_dtype_name(dt),
           dt == MQ_DT_BOOL ? " (convert with long(x) or float(x) first)" : "");
}

/* [op] on half tensor [t] (no gradient to record): float32's kernel on
 * blocks widened from t, its result rounded back into the half result
 * (or a bool one) block by block; the bits of the op on t widened to
 * float32, then narrowed, without those two float32 tensors. */
static mq_tensor *unary_half(mq_state *S, mq_unop op, mq_tensor *t, const double *prm) {
  mq_dtype h = (mq_dtype)t->dtype, out_dt = defs[op].cls == CL_BOOL ? MQ_DT_BOOL : h;
  mq_tensor *x = mq_operand(S, t, h, t->ndim, t->shape);
  mq_tensor *out = mq_tensor_new(S, out_dt, t->ndim, t->shape);
  mq_tensor *ts[2] = {out, x};
  mq_iter it;
  mq_iter_init(&it, 2, ts);
  uint8_t kind = h == MQ_DT_BF16 ? MQ_HALF_BF16 : MQ_HALF_F16, half[2] = {out_dt == h ? kind : 0, kind};
  mq_ewise_run_half(S, kernel_of(op, MQ_DT_F32), &it, prm, half);
  if (t->mask) mq_tensor_set_mask(S, out, t->mask);
  out->weak = t->weak;
  return out;
}

bool mq_unary_costly(mq_unop op) {
  switch (op) { /* tens of cycles an entry or more: libm or masq's vmath.h */
  case MQ_UN_EXP: case MQ_UN_LOG: case MQ_UN_EXP2: case MQ_UN_EXPM1: case MQ_UN_LOG2:
  case MQ_UN_LOG10: case MQ_UN_LOG1P: case MQ_UN_SIN: case MQ_UN_COS: case MQ_UN_TAN:
  case MQ_UN_ASIN: case MQ_UN_ACOS: case MQ_UN_ATAN: case MQ_UN_SINH: case MQ_UN_COSH:
  case MQ_UN_TANH: case MQ_UN_ASINH: case MQ_UN_ACOSH: case MQ_UN_ATANH: case MQ_UN_SIGMOID:
  case MQ_UN_LOGIT: case MQ_UN_ERF: case MQ_UN_ERFC: case MQ_UN_ERFINV: case MQ_UN_LGAMMA:
  case MQ_UN_DIGAMMA: case MQ_UN_I0: case MQ_UN_SINC: case MQ_UN_SOFTPLUS: case MQ_UN_GELU:
  case MQ_UN_GELU_TANH: case MQ_UN_SILU: case MQ_UN_ELU: case MQ_UN_SELU: case MQ_UN_MISH:
  case MQ_UN_LOGSIGMOID: case MQ_UN_TANHSHRINK:
    return true;
  default:
    return false;
  }
}

/* A kernel over entries [a, b) of a contiguous walk of one row. */
typedef struct span_un {
  mq_ewise_fn k;
  const mq_iter *it;
  const double *prm;
} span_un;

static void span_un_range(void *ctx, int64_t a, int64_t b, int t) {
  (void)t;
  const span_un *U = ctx;
  mq_iter part;
  mq_iter_part(U->it, a, b, &part);
  U->k(NULL, &part, U->prm);
}

/* Runs [k] over [it] (out, x: float, contiguous) for a costly op under a
 * padding mask [m] only over its valid runs, the rest +0 (spanrun.h);
 * false (nothing done) when that does not pay. */
static bool unary_spans(mq_state *S, mq_unop op, mq_ewise_fn k, const mq_iter *it, mq_tensor *out,
                        mq_tensor *m, const double *prm) {
  mq_span_plan P;
  if (!m || !mq_unary_costly(op) || !mq_dtype_is_float((mq_dtype)out->dtype) || it->rows != 1 ||
      it->n != out->numel || it->is[0] != 1 || it->is[1] != 1 ||
      !mq_span_plan_of(S, m, out->ndim, out->shape, &P))
    return false;
  span_un U = {k, it, prm};
  mq_span_run(S, &P, mq_tensor_data(out), mq_dtype_size((mq_dtype)out->dtype), span_un_range, &U);
  return true;
}

mq_tensor *mq_unary_p(mq_state *S, mq_unop op, mq_tensor *t, const double *prm) {
  return mq_unary_spare(S, op, t, prm, NULL);
}

mq_tensor *mq_unary_spare(mq_state *S, mq_unop op, mq_tensor *t, const double *prm,
                          mq_tensor *spare) {
  if ((unsigned)op >= MQ_UN__COUNT) mq_error(S, "bad unary op");
  static const double none[3] = {NAN, NAN, NAN};
  if (mq_dtype_is_narrow((mq_dtype)t->dtype)) { /* computed in the compute dtype, stored back */
    mq_dtype c = mq_dtype_compute((mq_dtype)t->dtype);
    if (defs[op].cls != CL_FLOAT && !kernel_of(op, c)) refuse(S, op, t);
    if (c == MQ_DT_F32 && !t->requires_grad)
      return unary_half(S, op, t, prm ? prm : none);
    return mq_narrow_back(S, mq_unary_p(S, op, mq_tensor_computable(S, t), prm), (mq_dtype)t->dtype);
  }
  const unary_def *def = &defs[op];
  mq_dtype in = (mq_dtype)t->dtype, out_dt;
  if (t->weak && t->ndim == 0 && in == MQ_DT_F64) in = MQ_DT_F32; /* a float number */
  if (def->cls == CL_FLOAT && !mq_dtype_is_float(in)) in = MQ_DT_F32;
  if (op == MQ_UN_SQUARE && in == MQ_DT_BOOL) in = MQ_DT_I64; /* as torch: True**2 is 1 */
  out_dt = def->cls == CL_BOOL ? MQ_DT_BOOL : in;
  mq_ewise_fn k = kernel_of(op, in);
  if (!k) refuse(S, op, t);
  /* decided before mq_operand, whose data view of a masked t shares its
   * storage (mq_binary_spare's order) */
  bool reuse = spare && spare == t && mq_reusable(t, out_dt, t->ndim, t->shape);
  mq_tensor *out = reuse ? mq_reuse(S, t) : NULL;
  mq_tensor *x = mq_operand(S, t, in, t->ndim, t->shape);
  if (!out) out = mq_tensor_new(S, out_dt, t->ndim, t->shape);
  mq_tensor *ts[2] = {out, x};
  mq_iter it;
  mq_iter_init(&it, 2, ts);
  /* in place, the kernel runs to its end (each entry read before written) */
  S->defer_interrupts += reuse;
  if (!unary_spans(S, op, k, &it, out, t->mask, prm ? prm : none))
    mq_ewise_run(S, k, &it, prm ? prm : none);
  S->defer_interrupts -= reuse;
  if (t->mask) mq_tensor_set_mask(S, out, t->mask);
  out->weak = t->weak;
  mq_ag_unary(S, out, op, t, prm);
  return out;
}

mq_tensor *mq_unary(mq_state *S, mq_unop op, mq_tensor *t) { return mq_unary_p(S, op, t, NULL); }

mq_ewise_fn mq_unary_float_kernel(mq_unop op, mq_dtype dt) {
  if ((unsigned)op >= MQ_UN__COUNT || mq_dtype_float_compute(dt) != dt || !defs[op].fuse) /* float32, float64 */
    return NULL;
  return kernel_of(op, dt);
}

/* --- clamp ------------------------------------------------------------------- */

static bool scalar_bound(const mq_tensor *b) { return !b || (b->ndim == 0 && !b->mask); }

mq_tensor *mq_clamp(mq_state *S, mq_tensor *t, mq_tensor *lo, mq_tensor *hi) {
  if (!lo && !hi) mq_error(S, "clamp: give at least one of min and max");
  mq_tensor *in[3] = {t, lo, hi};
  int n = 1;
  if (lo) in[n++] = lo;
  if (hi) in[n++] = hi;
  mq_dtype dt = mq_result_type(n, in);
  if (t->dtype == MQ_DT_BOOL) { /* as torch: promoted by its bounds (int64 for ints), bool refused */
    if (dt == MQ_DT_BOOL) mq_error(S, "clamp is not defined for bool tensors with bool bounds");
    t = mq_astype(S, t, dt);
  }
  if (!scalar_bound(lo) || !scalar_bound(hi)) {
    /* tensor bounds: elementwise maximum and minimum (masks must agree) */
    if (lo) t = mq_binary(S, MQ_BIN_MAXIMUM, t, lo);
    if (hi) t = mq_binary(S, MQ_BIN_MINIMUM, t, hi);
    return t;
  }
  double prm[3] = {lo ? mq_tensor_item(S, lo) : NAN, hi ? mq_tensor_item(S, hi) : NAN, NAN};
  return mq_unary_p(S, MQ_UN_CLAMP, mq_astype(S, t, dt), prm);
}
