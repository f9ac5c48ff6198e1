/* vexp.h - masq's float32 exp: mq_vexpf, correctly rounded for every
 * float32 input (vexp.c says why and how that was checked), written as
 * plain arithmetic that compilers vectorize, with the same bits on every
 * CPU and CPU path.
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

#include "../../core/state.h"
#include "../tensor/half.h"

#if defined(__clang__)
/* x * y + z stays two roundings (gcc: -std=c11 implies -ffp-contract=off) */
#pragma STDC FP_CONTRACT OFF
#endif

/* 2^(j/16) for j in [0, 16), as a double (hi) and what that misses (lo):
 * vexp.c. */
MQ_INTERNAL const double mq_vexp_hi[16], mq_vexp_lo[16];

/* e^x rounded to float32. In double: x = (16 k + j) ln2/16 + r with
 * |r| <= ln2/32 (k and j from rounding 16 x/ln2 with the 1.5 * 2^52
 * trick; ln2/16 in two parts, the first short enough that its product
 * with 16 k + j is exact, so r is exact but for one rounding), e^r - 1 = q
 * by its Taylor series to r^7 (the terms left out are below 2^-59), then
 * 2^k 2^(j/16) (1 + q), with 2^(j/16) as hi + lo from a table and 2^k
 * from k's bits, rounded once to float32. Beyond [-150, 100] e^x rounds
 * to +0 or +inf: what the arithmetic gave there (k out of the exponent's
 * range) is replaced by selects on the bits, made after it, not by
 * clamping x before it: gcc (with its default -ftrapping-math) turns a
 * clamp into branches and stops vectorizing. A NaN passes every operation
 * as NaN. vexp.c's AVX-512 loop does these operations in this order with
 * intrinsics (the table in registers, not gathered). */
static inline float mq_vexpf(float xf) {
  double x = (double)xf;
  const double shift = 0x1.8p52;
  double kd = x * 0x1.71547652b82fep+4 + shift; /* 16/ln2 */
  uint64_t kb;
  memcpy(&kb, &kd, sizeof kb);
  kd -= shift;
  double r = (x - kd * 0x1.62e42fefa3p-5) - kd * 0x1.3de6af278ece6p-46; /* ln2/16 = hi + lo */
  double r2 = r * r; /* the series by Estrin's scheme: a short chain of dependent operations */
  double a0 = 0x1.0p-1 + 0x1.5555555555555p-3 * r; /* 1/2! + r/3! */
  double a1 = 0x1.5555555555555p-5 + 0x1.1111111111111p-7 * r;
  double a2 = 0x1.6c16c16c16c17p-10 + 0x1.a01a01a01a01ap-13 * r; /* ... + r/7! */
  double q = r + r2 * (a0 + (a1 + a2 * r2) * r2);
  /* the low bits of kb hold 16 k + j (two's complement) */
  double hi = mq_vexp_hi[kb & 15], y = hi + (mq_vexp_lo[kb & 15] + hi * q);
  uint64_t sb = ((kb >> 4) << 52) + ((uint64_t)1023 << 52); /* 2^k */
  double s;
  memcpy(&s, &sb, sizeof s);
  uint32_t yb = mq_f32_bits((float)(y * s));
  uint32_t big = 0u - (uint32_t)(xf > 100.0f), tiny = 0u - (uint32_t)(xf < -150.0f);
  return mq_bits_f32(((yb & ~big) | (0x7f800000u & big)) & ~tiny); /* +inf, +0 */
}

/* o[i] = mq_vexpf(x[i] - c) for i in [0, n) (the subtraction in float32,
 * as softmax's x - max), on CPU path [cpu] (cpu.h; every path gives the
 * same bits). o may be x. */
MQ_INTERNAL void mq_vexpf_rows(int cpu, float *o, const float *x, float c, int64_t n);
/* The same on the fastest path this CPU runs, for callers without a
 * state at hand (elementwise kernels on a worker thread). */
MQ_INTERNAL void mq_vexpf_best(float *o, const float *x, float c, int64_t n);

#endif
