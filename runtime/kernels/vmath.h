/* vmath.h - masq's own float32 erf, tanh, gelu (both forms) and silu,
 * forward and derivative, as plain arithmetic that compilers vectorize,
 * with the same bits on every CPU and CPU path.
 *
 * Why not glibc's: erff, tanhf and the double erf/exp of the derivatives
 * are scalar calls per entry (libmvec's twins round differently,
 * internal.h), which made gelu 3x torch's time forward and 4x with its
 * backward. Here each function is a fixed sequence of IEEE double
 * operations on a float32 input, rounded once to float32 at the end:
 * adds, multiplies, fmas, one or two divisions, bit operations; no table
 * (no gathers), no branch (the cases are computed and then picked by bit
 * masks, which gcc vectorizes where it would keep a branch). The fma is
 * explicit (mq_vm_fma) and every path has it: vmath.c builds the same C
 * for the portable path (libm's fma, correctly rounded), AVX2 and
 * AVX-512 (the fma instructions); anything else stays two roundings
 * (-ffp-contract=off, and clang's pragma below). Every operation rounds
 * the same whether it runs alone or eight to a register, so the paths
 * agree bit for bit (tests/unit/test_cpu_paths.c).
 *
 * Why double and not float32 arithmetic (twice the lanes): gelu's tail
 * Phi(-a) = e^(-a^2/2) E(a) needs a^2 (exact in double from a float32,
 * not in float32) and E(a), which falls like 1/a and so follows any
 * rounding of its variable 1/(1 + a/2) one for one: in float32 that alone
 * measured 2.8 ulp. Instead the polynomials are as short as float32's
 * result allows (relative error 1.5e-10 to 1e-15, not 1e-14 throughout)
 * and use fma: gelu's forward and derivative are about 3x faster than the
 * first version of this file.
 *
 * Accuracy, measured on all 2^32 float32 inputs against the first
 * version (double results within ~1e-13, so correctly rounded but for
 * inputs within ~1e-13 of a midpoint): erf, tanh, silu and both gelu forms
 * within 1 ulp of the correctly rounded result; erf and tanh equal to it
 * on all but about one input in a million (tests/unit/test_vmath.c sweeps
 * every 1021st input). gelu and silu have no cancellation left: gelu is
 * x Phi(x) = x - x Phi(-|x|) above 0 and x Phi(-|x|) below, its tanh form
 * x * sigmoid(2 u) (the same value as 0.5 x (1 + tanh u)), so their small
 * tails are accurate too, where torch's float32 kernels round 1 + erf to a
 * few bits. At +-inf they give what torch's formulas give (gelu(-inf) and
 * silu(-inf) NaN, gelu(inf) inf).
 *
 * float64 keeps glibc's erf, tanh and exp (a double result this way would
 * need double-double arithmetic). */
#ifndef MQ_VMATH_H
#define MQ_VMATH_H

#include <stdbool.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include "../../core/state.h"
#include "ops.h" /* mq_unop */

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

/* The functions, by number (mq_vact_rows). */
typedef enum mq_vact {
  MQ_VACT_ERF,
  MQ_VACT_TANH,
  MQ_VACT_GELU,      /* x Phi(x), the erf form */
  MQ_VACT_GELU_TANH, /* 0.5 x (1 + tanh(b (x + k x^3))) */
  MQ_VACT_SILU,      /* x sigmoid(x) */
  MQ_VACT__COUNT
} mq_vact;

/* The function of unary op [op] (mq_unop), or -1 */
static inline int mq_vact_of(int op) {
  switch (op) {
  case MQ_UN_ERF: return MQ_VACT_ERF;
  case MQ_UN_TANH: return MQ_VACT_TANH;
  case MQ_UN_GELU: return MQ_VACT_GELU;
  case MQ_UN_GELU_TANH: return MQ_VACT_GELU_TANH;
  case MQ_UN_SILU: return MQ_VACT_SILU;
  default: return -1;
  }
}

/* o[i] = f(x[i]) for i in [0, n), on CPU path [cpu] (cpu.h; every path
 * gives the same bits). o may be x. */
MQ_INTERNAL void mq_vact_rows(int cpu, int f, float *o, const float *x, int64_t n);
/* o[i] = g[i * gs] * f'(x[i]) rounded once (gs 0 or 1), the derivative
 * in double; not for tanh (whose derivative 1 - y^2 reads the result). */
MQ_INTERNAL void mq_vact_grad_rows(int cpu, int f, float *o, const float *x, const float *g,
                                   int64_t gs, int64_t n);

/* --- the scalar steps (vmath.c's loops are made of them) ------------------- */

/* Inlined always: a call left in a loop would keep it scalar (gcc declines
 * to inline the larger steps into the three loops that use them). */
#if defined(__GNUC__) || defined(__clang__)
#define MQ_VM_INLINE static inline __attribute__((always_inline))
#else
#define MQ_VM_INLINE static inline
#endif

MQ_VM_INLINE uint64_t mq_vm_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
MQ_VM_INLINE double mq_vm_dbl(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}
/* c ? a : b on the bits: both already computed, so no branch */
MQ_VM_INLINE double mq_vm_pick(bool c, double a, double b) {
  uint64_t m = 0 - (uint64_t)c;
  return mq_vm_dbl((mq_vm_bits(a) & m) | (mq_vm_bits(b) & ~m));
}
MQ_VM_INLINE double mq_vm_abs(double x) { return mq_vm_dbl(mq_vm_bits(x) & ~(UINT64_C(1) << 63)); }
/* |m| with x's sign */
MQ_VM_INLINE double mq_vm_sign(double m, double x) {
  return mq_vm_dbl(mq_vm_bits(m) | (mq_vm_bits(x) & (UINT64_C(1) << 63)));
}

/* x * y + z rounded once: every path computes it so (the AVX2 and AVX-512
 * loops with fma instructions, the portable one with libm's fma, correctly
 * rounded wherever it runs), so it serves like any other operation. Half
 * the operations of a polynomial, and one rounding per step instead of two. */
MQ_VM_INLINE double mq_vm_fma(double x, double y, double z) { return fma(x, y, z); }

/* c[0] t^(n-1) + c[1] t^(n-2) + ... + c[n-1] by Horner's rule, one fma a
 * step. n is a constant where it is called, and the loop must be unrolled
 * before the caller's loop is vectorized: at -O2 gcc would not (4x slower
 * measured), hence the pragma. */
MQ_VM_INLINE double mq_vm_poly(const double *c, int n, double t) {
  double p = c[0];
#pragma GCC unroll 16
  for (int i = 1; i < n; i++) p = mq_vm_fma(p, t, c[i]);
  return p;
}

/* e^x for x in [-708, 708] (callers pick outside it): x = k ln2 + r,
 * |r| <= ln2/2 (k by rounding x/ln2 with the 1.5 * 2^52 trick; k ln2's
 * high part exact in the fma, so r is off by one rounding of the low
 * part's product), e^r by its Taylor series to r^[deg] (r^11: the rest is
 * below 6e-15 r's size; r^9: below 7e-12, enough where a 1.5e-10
 * polynomial sets the error), times 2^k made from k's bits. */
MQ_VM_INLINE double mq_vm_exp_deg(double x, int deg) {
  const double shift = 0x1.8p52;
  double kd = mq_vm_fma(x, 0x1.71547652b82fep+0, shift);
  uint64_t kb = mq_vm_bits(kd);
  kd -= shift;
  double r = mq_vm_fma(kd, -0x1.62e42fefa39efp-1, x);
  r = mq_vm_fma(kd, -0x1.abc9e3b39803fp-56, r);
  static const double inv_fact[12] = { /* 1/11!, 1/10!, ..., 1/1!, 1/0! */
      0x1.ae64567f544e4p-26, 0x1.27e4fb7789f5cp-22, 0x1.71de3a556c734p-19, 0x1.a01a01a01a01ap-16,
      0x1.a01a01a01a01ap-13, 0x1.6c16c16c16c17p-10, 0x1.1111111111111p-7,  0x1.5555555555555p-5,
      0x1.5555555555555p-3,  0x1.0p-1,              1.0,                   1.0};
  double p = mq_vm_poly(inv_fact + (11 - deg), deg + 1, r);
  /* the low 12 bits of kb hold k (two's complement): 2^k's bits */
  return p * mq_vm_dbl((kb << 52) + ((uint64_t)1023 << 52));
}
MQ_VM_INLINE double mq_vm_exp(double x) { return mq_vm_exp_deg(x, 11); }

/* e^x for any x: 0 below -708, +inf above 708, NaN kept */
MQ_VM_INLINE double mq_vm_exp_all(double x) {
  double c = mq_vm_pick(x < -708.0, -708.0, mq_vm_pick(x > 708.0, 708.0, x));
  double e = mq_vm_exp(c);
  e = mq_vm_pick(x < -708.0, 0.0, e);
  e = mq_vm_pick(x > 708.0, (double)INFINITY, e);
  return mq_vm_pick(x != x, x, e);
}

/* erf(z) / z - 1 as a polynomial in v = z^2, for |z| < 1 (least-squares
 * fit on Chebyshev nodes with the constant term fixed, relative error of
 * erf(z) 6e-14; 1 + p would round
 * away p's low bits, so callers add z last, in an fma) */
MQ_VM_INLINE double mq_vm_erf_small_p(double z) {
  static const double c[10] = {
      -0x1.c7cb2217a9889p-24, 0x1.9c778e4ce6ee0p-20,  -0x1.f0c67a3b4d663p-17,
      0x1.f94b57ca8b043p-14,  -0x1.c029073b40149p-11, 0x1.565ba5bb7a148p-8,
      -0x1.b82ce191e7febp-6,  0x1.ce2f2198cd61ep-4,   -0x1.812746b02a5a7p-2,
      0x1.06eba8214db69p-3}; /* the last, 2/sqrt(pi) - 1 */
  return mq_vm_poly(c, 10, z * z);
}

/* The normal tail Phi(-a) = e^(-a^2/2) E(a) for a in [0, 14.5], E as a
 * polynomial of degree 13 in s = a / (2 + a) (least-squares fit on
 * Chebyshev nodes with E(0) = 1/2 and E'(0) fixed, relative error 1.5e-10
 * over the interval: E falls like 1 / (a sqrt(2 pi)), which 1 - s
 * follows; with E(0) exact, gelu of a tiny x is x/2 plus the right
 * x^2/sqrt(2 pi), so it rounds as the exact value does). No cancellation
 * anywhere: a^2 of a float32 is exact in double, so is the exponent.
 * Callers pick past 14.5, where a Phi(-a) is below half the smallest
 * float32. */
MQ_VM_INLINE double mq_vm_ntail_e(double a) {
  static const double c[14] = {
      0x1.a1a7138138911p-5,  -0x1.fe09303408849p-3, 0x1.050db4f095c5dp-1,  -0x1.321d5854e5028p-1,
      0x1.deaaa0e222daap-2,  -0x1.e52499c765ba3p-3, 0x1.3c006bc7b7a1ap-4,  -0x1.75f75f10b107ap-5,
      -0x1.d749ca65824b6p-6, 0x1.5012eb874a8ffp-7,  0x1.1b35f1990f82ep-3,  0x1.9dee82082473fp-3,
      -0x1.9884533d43651p-1, 0.5}; /* the last two: -2/sqrt(2 pi) and E(0) */
  return mq_vm_poly(c, 14, a / (2.0 + a));
}
#define MQ_VM_NTAIL_END 14.5

/* erf(z) of a float32 z, NaN kept: z (1 + p(z^2)) below 1; above,
 * 1 - erfc(a) with erfc(a) = 2 Phi(-a sqrt 2) = 2 e^(-a^2) E(a sqrt 2)
 * (below 2^-25 from a = 4 on, where erf rounds to 1 in float32) */
MQ_VM_INLINE double mq_vm_erf(double z) {
  double a = mq_vm_abs(z), ac = mq_vm_pick(a < 4.0, a, 4.0);
  double erfc = 2.0 * mq_vm_exp_deg(-(ac * ac), 9) * mq_vm_ntail_e(ac * 1.41421356237309504880);
  double big = mq_vm_sign(mq_vm_pick(a < 4.0, 1.0 - erfc, 1.0), z);
  double r = mq_vm_pick(a < 1.0, mq_vm_fma(z, mq_vm_erf_small_p(z), z), big);
  return mq_vm_pick(z != z, z, r);
}

/* tanh(z): for |z| < 1/16 its series to z^9 (the rest below 1e-14 of it),
 * else 1 - 2 / (e^(2|z|) + 1) with |z|'s sign (|z| taken at most 20, where
 * tanh is 1 in double); NaN kept */
MQ_VM_INLINE double mq_vm_tanh(double z) {
  double v = z * z, p = 0x1.664f4882c10fap-6; /* 62/2835 */
  p = mq_vm_fma(p, v, -0x1.ba1ba1ba1ba1cp-5);       /* 17/315 */
  p = mq_vm_fma(p, v, 0x1.1111111111111p-3);        /* 2/15 */
  p = mq_vm_fma(p, v, -0x1.5555555555555p-2);       /* 1/3 */
  double small = z * mq_vm_fma(v, p, 1.0); /* (not z + z v p: -0 + +0 is +0) */
  double a = mq_vm_abs(z), ac = mq_vm_pick(a < 20.0, a, 20.0);
  double big = mq_vm_sign(1.0 - 2.0 / (mq_vm_exp(ac + ac) + 1.0), z);
  return mq_vm_pick(z != z, z, mq_vm_pick(a < 0.0625, small, big));
}

/* s = 1 / (1 + e^-w), and 1 - s as e^-w s, without cancellation (1 where
 * e^-w overflows and s is 0) */
MQ_VM_INLINE double mq_vm_sigmoid(double w, double *one_minus) {
  double e = mq_vm_exp_all(-w), s = 1.0 / (1.0 + e);
  *one_minus = mq_vm_pick(s == 0.0, 1.0, e * s);
  return s;
}

/* gelu's tanh form: 0.5 x (1 + tanh u) = x sigmoid(2 u), u = b (x + k x^3) */
#define MQ_VM_GELU_BETA 0.79788456080286535588
#define MQ_VM_GELU_KAPPA 0.044715
MQ_VM_INLINE double mq_vm_gelu_u(double x) {
  return MQ_VM_GELU_BETA * (x + MQ_VM_GELU_KAPPA * (x * x * x));
}

#endif
