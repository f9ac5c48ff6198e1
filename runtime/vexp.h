/* vexp.h - masq's float32 exp: mq_vexpf, correctly rounded in all but a
 * few inputs (vexp.c says which and why), written as plain arithmetic that
 * compilers vectorize, with the same bits on every CPU and CPU path.
 *
 * Why not glibc's expf: it is a scalar call per entry (its vector twin in
 * libmvec rounds differently, kernels.h), it misrounds 170,648 of the
 * 2^32 float32 inputs (its error bound is 0.502 ulp), and which ones
 * depends on the CPU: glibc picks an FMA variant at load time, and two
 * inputs (0x1.04845ep+5, -0x1.f8cbb2p+5) give other bits with it than
 * without. mq_vexpf gives one answer everywhere.
 *
 * Every float32 exp of masq goes through it: exp, softmax, log_softmax
 * and softmin forward (dense, sparse, and attention's fused rows), so a
 * softmax equals exp(x - max) / sum op by op, bit for bit. float64 exp
 * stays glibc's. */
#ifndef MQ_VEXP_H
#define MQ_VEXP_H

#include <stdint.h>
#include <string.h>

#include "../core/state.h"
#include "half.h"

#if defined(__clang__)
/* x * y + z stays two roundings (gcc: -std=c11 implies -ffp-contract=off) */
#pragma STDC FP_CONTRACT OFF
#endif

/* e^x rounded to float32. In double: x = k ln2 + r, |r| <= ln2/2 (k by
 * rounding x/ln2 with the 1.5 * 2^52 trick; ln2 in two parts, the first
 * short enough that k * part is exact), e^r - 1 = q by its Taylor series
 * to r^13 (the terms left out are below 2^-57 of the result), then
 * 2^k (1 + q) rounded once to float32, 2^k built from k's bits. Beyond
 * [-150, 100] e^x rounds to +0 or +inf: what the arithmetic gave there
 * (k out of the exponent's range) is replaced by selects on the bits,
 * made after it, not by clamping x before it: gcc (with its default
 * -ftrapping-math) turns a clamp into branches and stops vectorizing. A
 * NaN passes every operation as NaN. */
static inline float mq_vexpf(float xf) {
  double x = (double)xf;
  const double shift = 0x1.8p52;
  double kd = x * 0x1.71547652b82fep+0 + shift; /* 1/ln2 */
  uint64_t kb;
  memcpy(&kb, &kd, sizeof kb);
  kd -= shift;
  double r = (x - kd * 0x1.62e42feep-1) - kd * 0x1.a39ef35793c76p-33; /* ln2 = hi + lo */
  /* the series' sum by Estrin's scheme: pairs, then pairs of pairs, so
   * the chain of dependent operations is 10 long where Horner's is 24 */
  double r2 = r * r, r4 = r2 * r2;
  double a0 = 0x1.0p-1 + 0x1.5555555555555p-3 * r; /* 1/2! + r/3! */
  double a1 = 0x1.5555555555555p-5 + 0x1.1111111111111p-7 * r;
  double a2 = 0x1.6c16c16c16c17p-10 + 0x1.a01a01a01a01ap-13 * r;
  double a3 = 0x1.a01a01a01a01ap-16 + 0x1.71de3a556c734p-19 * r;
  double a4 = 0x1.27e4fb7789f5cp-22 + 0x1.ae64567f544e4p-26 * r;
  double a5 = 0x1.1eed8eff8d898p-29 + 0x1.6124613a86d09p-33 * r; /* ... + r/13! */
  double b0 = a0 + a1 * r2, b1 = a2 + a3 * r2, b2 = a4 + a5 * r2;
  double p = b0 + (b1 + b2 * r4) * r4;
  double q = r + r2 * p;
  /* the low bits of kb hold k (two's complement): 2^k's exponent field */
  uint64_t sb = (kb << 52) + ((uint64_t)1023 << 52);
  double s;
  memcpy(&s, &sb, sizeof s);
  uint32_t yb = mq_f32_bits((float)(s * (1.0 + q)));
  uint32_t big = 0u - (uint32_t)(xf > 100.0f), tiny = 0u - (uint32_t)(xf < -150.0f);
  return mq_bits_f32(((yb & ~big) | (0x7f800000u & big)) & ~tiny); /* +inf, +0 */
}

/* o[i] = mq_vexpf(x[i] - c) for i in [0, n) (the subtraction in float32,
 * as softmax's x - max), on CPU path [cpu] (cpu.h; every path gives the
 * same bits). o may be x. */
MQ_INTERNAL void mq_vexpf_rows(int cpu, float *o, const float *x, float c, int64_t n);
/* The same on the fastest path this CPU runs. */
MQ_INTERNAL void mq_vexpf_best(float *o, const float *x, float c, int64_t n);

#endif
