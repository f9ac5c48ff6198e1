/* half.h - float16 and bfloat16 as bits, to and from float32.
 *
 * Both directions are exact where they can be and round to nearest, ties to
 * even, otherwise, bit for bit as torch's tensor casts: a NaN becomes
 * float16 0x7E00 with its sign, bfloat16 0xFFFF. Wider values (a
 * double, an int64) go through float32 first, as torch's casts do.
 *
 * The same by arrays, on a CPU path (runtime/tensor/cpu.h): F16C, its
 * AVX-512F forms, and AVX512_BF16's rounding where the CPU has it, with
 * the bits of these scalar functions on every path (half.c says where the
 * instructions differ and how that is undone). */
#ifndef MQ_HALF_H
#define MQ_HALF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../core/common.h"

static inline uint32_t mq_f32_bits(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return x;
}

static inline float mq_bits_f32(uint32_t x) {
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* Rounds [v] (>> s keeps the result) to nearest even. */
static inline uint32_t mq_half_round(uint32_t v, int s) {
  uint32_t h = v >> s, rem = v & ((1u << s) - 1), tie = 1u << (s - 1);
  return h + (rem > tie || (rem == tie && (h & 1)));
}

static inline uint16_t mq_f32_to_f16(float f) {
  uint32_t x = mq_f32_bits(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
  if (ax > 0x7f800000) return (uint16_t)(sign | 0x7e00);
  if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00); /* >= 65520 rounds to inf */
  int e = (int)(ax >> 23) - 127;
  if (e >= -14) /* a normal half; a carry out of the mantissa bumps the exponent */
    return (uint16_t)(sign | mq_half_round((((uint32_t)(e + 15) << 23) | (ax & 0x7fffff)), 13));
  if (e < -25) return (uint16_t)sign;
  /* subnormal: the 24-bit significand in units of 2^-24 */
  return (uint16_t)(sign | mq_half_round((ax & 0x7fffff) | 0x800000, -(e + 1)));
}

static inline float mq_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return mq_bits_f32(sign | 0x7f800000 | (m << 13));
  if (e == 0) {
    float v = ldexpf((float)m, -24);
    return sign ? -v : v;
  }
  return mq_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

static inline uint16_t mq_f32_to_bf16(float f) {
  if (isnan(f)) return 0xffff; /* what torch 1.13's tensor casts store (not c10's scalar 0x7FC0) */
  uint32_t x = mq_f32_bits(f);
  return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static inline float mq_bf16_to_f32(uint16_t h) { return mq_bits_f32((uint32_t)h << 16); }

/* o[i] = x[i] as float32 (bfloat16 if [bf16], else float16), i < n, on CPU
 * path [cpu]. */
MQ_INTERNAL void mq_half_widen(int cpu, bool bf16, float *o, const uint16_t *x, int64_t n);
/* o[i] = x[i] rounded to bfloat16 or float16, i < n, on CPU path [cpu]. */
MQ_INTERNAL void mq_half_narrow(int cpu, bool bf16, uint16_t *o, const float *x, int64_t n);
/* The same, naming whether the AVX-512 path's bfloat16 takes AVX512_BF16's
 * instruction ([native]: the CPU must have it), so a test runs both. */
MQ_INTERNAL void mq_half_narrow_on(int cpu, bool native, bool bf16, uint16_t *o, const float *x,
                                   int64_t n);
/* Whether this CPU has AVX512_BF16. */
MQ_INTERNAL bool mq_cpu_has_bf16(void);

#endif
