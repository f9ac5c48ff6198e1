/* vmath.h - masq's own float32 erf, tanh, gelu (both forms) and silu,
 * forward and derivative, as plain arithmetic that compilers vectorize,
 * with the same bits on every CPU and CPU path.
 *
 * Why not glibc's: erff, tanhf and the double erf/exp of the derivatives
 * are scalar calls per entry (libmvec's twins round differently,
 * internal.h), which made gelu 3x torch's time forward and 4x with its
 * backward. Here each function is a fixed sequence of IEEE double
 * operations on a float32 input, rounded once to float32 at the end:
 * adds, multiplies, one division, bit operations; no table (no gathers),
 * no fma (no contraction: -ffp-contract=off, and clang's pragma below), no
 * branch (the cases are computed and then picked by bit masks, which gcc
 * vectorizes where it would keep a branch). vmath.c builds the same C for
 * the portable, AVX2 and AVX-512 paths: every operation rounds the same
 * whether it runs alone or eight to a register, so the paths agree bit for
 * bit (tests/unit/test_cpu_paths.c).
 *
 * Accuracy: each double result is within about 1e-13 (relative) of the
 * true value, so the float32 result is the correctly rounded one except
 * for inputs whose value lies within ~1e-13 of a midpoint between two
 * float32s; tests/unit/test_vmath.c compares erf and tanh on every float32
 * of a dense sweep with glibc's double erf and tanh rounded once (at most
 * 1 ulp apart, and almost always equal). gelu and silu have no
 * cancellation left: gelu is x * Phi(x) with Phi from erfc where x < 0,
 * its tanh form x * sigmoid(2 u) (the same value as 0.5 x (1 + tanh u)),
 * so their small tails are accurate too, where torch's float32 kernels
 * round 1 + erf to a few bits. At +-inf they give what torch's formulas
 * give (gelu(-inf) and silu(-inf) NaN, gelu(inf) inf).
 *
 * float64 keeps glibc's erf, tanh and exp (a double result this way would
 * need double-double arithmetic). */
#ifndef MQ_VMATH_H
#define MQ_VMATH_H

#include <stdbool.h>
#include <stdint.h>
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

/* e^x for x in [-708, 708] (callers pick outside it), relative error below
 * 1e-15: x = k ln2 + r, |r| <= ln2/2 (k by rounding x/ln2 with the 1.5 *
 * 2^52 trick; ln2 in two parts, the first with 32 bits, so k * hi is
 * exact), e^r by its Taylor series to r^11 (the rest is below 6e-15 r's
 * size), times 2^k made from k's bits. */
MQ_VM_INLINE double mq_vm_exp(double x) {
  const double shift = 0x1.8p52;
  double kd = x * 0x1.71547652b82fep+0 + shift;
  uint64_t kb = mq_vm_bits(kd);
  kd -= shift;
  double r = (x - kd * 0x1.62e42fee00000p-1) - kd * 0x1.a39ef35793c76p-33;
  double p = 0x1.ae64567f544e4p-26 * r + 0x1.27e4fb7789f5cp-22; /* r/11! + 1/10! */
  p = p * r + 0x1.71de3a556c734p-19;
  p = p * r + 0x1.a01a01a01a01ap-16;
  p = p * r + 0x1.a01a01a01a01ap-13;
  p = p * r + 0x1.6c16c16c16c17p-10;
  p = p * r + 0x1.1111111111111p-7;
  p = p * r + 0x1.5555555555555p-5;
  p = p * r + 0x1.5555555555555p-3;
  p = p * r + 0x1.0p-1;
  p = p * r + 1.0;
  p = p * r + 1.0;
  /* the low 12 bits of kb hold k (two's complement): 2^k's bits */
  return p * mq_vm_dbl((kb << 52) + ((uint64_t)1023 << 52));
}

/* e^x for any x: 0 below -708, +inf above 708, NaN kept */
MQ_VM_INLINE double mq_vm_exp_all(double x) {
  double c = mq_vm_pick(x < -708.0, -708.0, mq_vm_pick(x > 708.0, 708.0, x));
  double e = mq_vm_exp(c);
  e = mq_vm_pick(x < -708.0, 0.0, e);
  e = mq_vm_pick(x > 708.0, (double)INFINITY, e);
  return mq_vm_pick(x != x, x, e);
}

/* erf(z) / z as a polynomial in v = z^2, for |z| < 1 (Chebyshev fit, relative
 * error 6e-16) */
MQ_VM_INLINE double mq_vm_erf_small(double z) {
  double v = z * z, p = 0x1.43f6d0dee7032p-27;
  p = p * v - 0x1.462a758d4591dp-23;
  p = p * v + 0x1.b5d3ea9fd0b5ap-20;
  p = p * v - 0x1.f4684782919e8p-17;
  p = p * v + 0x1.f99c295886f05p-14;
  p = p * v - 0x1.c02d67e37081ep-11;
  p = p * v + 0x1.565bcb082cca2p-8;
  p = p * v - 0x1.b82ce3026aae0p-6;
  p = p * v + 0x1.ce2f21a000d30p-4;
  p = p * v - 0x1.812746b037352p-2;
  p = p * v + 0x1.20dd750429b6bp+0;
  return z * p;
}

/* erfc(a) for a >= 1: e^(-a^2) erfcx(a), erfcx as a polynomial in
 * s = 2 / (2 + a) - 0.392 over a in [1, 15] (Chebyshev fit, relative error
 * 1.2e-14); 0 from a = 15 on (erfc(15) < 1e-99, below any float32). */
MQ_VM_INLINE double mq_vm_erfc_big(double a) {
  double ac = mq_vm_pick(a < 15.0, a, 15.0);
  double s = 2.0 / (2.0 + ac) - 0x1.9191919191919p-2, q = -0x1.fe03f49f6339fp-5;
  q = q * s + 0x1.73c61e9d3ae83p-4;
  q = q * s + 0x1.502e03888b084p-6;
  q = q * s - 0x1.b62aad0ac952bp-4;
  q = q * s + 0x1.11b56ba31e10bp-5;
  q = q * s + 0x1.67991862536b1p-4;
  q = q * s - 0x1.1b619e7191268p-4;
  q = q * s - 0x1.224b0eff211a0p-4;
  q = q * s + 0x1.8fa39b8cfb83ap-4;
  q = q * s + 0x1.3db51af2610dbp-4;
  q = q * s - 0x1.15f5e02914f21p-3;
  q = q * s - 0x1.48b38bf3bf3cep-3;
  q = q * s + 0x1.537d305613318p-3;
  q = q * s + 0x1.29f625947ee0dp-1;
  q = q * s + 0x1.89c072986086cp-1;
  q = q * s + 0x1.55c035857fe6cp-1;
  q = q * s + 0x1.63c67a1d631c1p-3;
  return mq_vm_pick(a < 15.0, mq_vm_exp(-(ac * ac)) * q, 0.0);
}

/* erf(z), NaN kept */
MQ_VM_INLINE double mq_vm_erf(double z) {
  double a = mq_vm_abs(z);
  double r = mq_vm_pick(a < 1.0, mq_vm_erf_small(z), mq_vm_sign(1.0 - mq_vm_erfc_big(a), z));
  return mq_vm_pick(z != z, z, r);
}

/* Phi(x) = erfc(-x / sqrt(2)) / 2, the standard normal's distribution,
 * without cancellation for x < 0 */
MQ_VM_INLINE double mq_vm_phi(double x) {
  double u = x * 0.70710678118654752440, a = mq_vm_abs(u), c = mq_vm_erfc_big(a);
  double big = mq_vm_pick(u < 0.0, c, 2.0 - c);
  return 0.5 * mq_vm_pick(a < 1.0, 1.0 + mq_vm_erf_small(u), big);
}

/* tanh(z): for |z| < 1/16 its series to z^9 (the rest below 1e-14 of it),
 * else 1 - 2 / (e^(2|z|) + 1) with |z|'s sign (|z| taken at most 20, where
 * tanh is 1 in double); NaN kept */
MQ_VM_INLINE double mq_vm_tanh(double z) {
  double v = z * z, p = 0x1.664f4882c10fap-6; /* 62/2835 */
  p = p * v - 0x1.ba1ba1ba1ba1cp-5;                  /* 17/315 */
  p = p * v + 0x1.1111111111111p-3;                  /* 2/15 */
  p = p * v - 0x1.5555555555555p-2;                  /* 1/3 */
  double small = z * (1.0 + v * p); /* (not z + z v p: -0 + +0 is +0) */
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
