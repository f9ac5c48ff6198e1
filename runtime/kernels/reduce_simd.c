/* reduce_simd.c - the AVX2 and AVX-512 inner loops of the float32
 * reductions (reduce_simd.h). Same lanes as the portable loops of
 * reduce_kernels.c and stats.c, same IEEE operation per lane, so the same
 * bits: a float -> double conversion is exact, an add or a multiply is
 * one rounding whatever the vector width, and nothing here is contracted
 * into an FMA (the adds and multiplies are separate intrinsics; clang is
 * also told not to contract). A masked-out entry becomes what the
 * portable select gives: +0.0 in a sum, -inf / +inf in an extremum.
 *
 * Why not leave it to the compiler: built for AVX2, gcc 12 vectorizes the
 * portable 16-lane loops with 128-bit registers and keeps some lanes on
 * the stack, a store and a reload on every add; and a byte mask becomes a
 * blend here (AVX2) or a mask register and a masked load (AVX-512). */
#include "reduce_simd.h"

#if MQ_CPU_X86
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <immintrin.h>
#include <math.h>
#include <string.h>

/* The valid entries among sixteen mask bytes, as two 64-bit sums. */
#define COUNT16(c, mb) (c) = _mm_add_epi64((c), _mm_sad_epu8((mb), _mm_setzero_si128()))
#define COUNT_OF(c) (_mm_cvtsi128_si64(c) + _mm_extract_epi64((c), 1))

/* --- AVX2 ------------------------------------------------------------------ */

/* Mask bytes 0 or 1 -> 32-bit lanes of 0 or all ones (0 - m, as the
 * portable select). */
MQ_TGT_AVX2 static inline __m256 ones_where(__m128i mb) {
  return _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_cvtepu8_epi32(mb)));
}

/* Adds the eight floats of v to lanes a (the first four) and b. */
#define ADD8(a, b, v)                                                          \
  do {                                                                         \
    a = _mm256_add_pd(a, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));          \
    b = _mm256_add_pd(b, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));        \
  } while (0)

/* The sum's loop, LOAD8(p) giving the eight floats from entry p on:
 * float32's, or half bits widened in the registers. */
#define DEF_FSUM_AVX2(NAME, TGT, T, LOAD8)                                     \
  TGT int64_t NAME(const T *x, const uint8_t *m, int64_t n, double *d) {       \
    __m256d a0 = _mm256_loadu_pd(d), a1 = _mm256_loadu_pd(d + 4);              \
    __m256d a2 = _mm256_loadu_pd(d + 8), a3 = _mm256_loadu_pd(d + 12);         \
    __m128i c = _mm_setzero_si128();                                           \
    if (m) {                                                                   \
      for (int64_t i = 0; i < n; i += 16) {                                    \
        __m128i mb = _mm_loadu_si128((const __m128i *)(m + i));                \
        __m256 v0 = _mm256_and_ps(LOAD8(x + i), ones_where(mb));               \
        __m256 v1 = _mm256_and_ps(LOAD8(x + i + 8), ones_where(_mm_srli_si128(mb, 8))); \
        ADD8(a0, a1, v0);                                                      \
        ADD8(a2, a3, v1);                                                      \
        COUNT16(c, mb);                                                        \
      }                                                                        \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i += 16) {                                    \
        __m256 v0 = LOAD8(x + i), v1 = LOAD8(x + i + 8);                       \
        ADD8(a0, a1, v0);                                                      \
        ADD8(a2, a3, v1);                                                      \
      }                                                                        \
    }                                                                          \
    _mm256_storeu_pd(d, a0), _mm256_storeu_pd(d + 4, a1);                      \
    _mm256_storeu_pd(d + 8, a2), _mm256_storeu_pd(d + 12, a3);                 \
    return COUNT_OF(c);                                                        \
  }
#define LOAD8_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define LOAD8_BF16(p)                                                          \
  _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
DEF_FSUM_AVX2(mq_simd_fsum_f32_avx2, MQ_TGT_AVX2, float, _mm256_loadu_ps)
/* float16 on the AVX2 path: a state takes it only with F16C (cpu.h) */
DEF_FSUM_AVX2(fsum_f16_avx2, __attribute__((target("avx2,f16c"))) static, uint16_t, LOAD8_F16)
DEF_FSUM_AVX2(fsum_bf16_avx2, MQ_TGT_AVX2 static, uint16_t, LOAD8_BF16)

int64_t mq_simd_fsum_h16_avx2(const uint16_t *x, bool bf16, const uint8_t *m, int64_t n, double *d) {
  return bf16 ? fsum_bf16_avx2(x, m, n, d) : fsum_f16_avx2(x, m, n, d);
}

/* Extrema: r = OP(v, r) is v > r ? v : r for max (maxps returns its
 * second operand unless the first is greater), v < r ? v : r for min,
 * the portable FAST_MAX / FAST_MIN; NaNs are noted on the side. */
#define DEF_EXT_AVX2(NAME, OP, FILL)                                           \
  MQ_TGT_AVX2 int64_t NAME(const float *x, const uint8_t *m, int64_t n, float *r, int32_t *nan) { \
    __m256 r0 = _mm256_loadu_ps(r), r1 = _mm256_loadu_ps(r + 8), nn = _mm256_setzero_ps(); \
    __m256 fill = _mm256_set1_ps(FILL);                                        \
    __m128i c = _mm_setzero_si128();                                           \
    for (int64_t i = 0; i < n; i += 16) {                                      \
      __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);     \
      if (m) {                                                                 \
        __m128i mb = _mm_loadu_si128((const __m128i *)(m + i));                \
        v0 = _mm256_blendv_ps(fill, v0, ones_where(mb));                       \
        v1 = _mm256_blendv_ps(fill, v1, ones_where(_mm_srli_si128(mb, 8)));    \
        COUNT16(c, mb);                                                        \
      }                                                                        \
      r0 = OP(v0, r0), r1 = OP(v1, r1);                                        \
      nn = _mm256_or_ps(nn, _mm256_or_ps(_mm256_cmp_ps(v0, v0, _CMP_UNORD_Q),  \
                                         _mm256_cmp_ps(v1, v1, _CMP_UNORD_Q))); \
    }                                                                          \
    _mm256_storeu_ps(r, r0), _mm256_storeu_ps(r + 8, r1);                      \
    *nan |= _mm256_movemask_ps(nn) != 0;                                       \
    return COUNT_OF(c);                                                        \
  }
DEF_EXT_AVX2(mq_simd_fmax_f32_avx2, _mm256_max_ps, -INFINITY)
DEF_EXT_AVX2(mq_simd_fmin_f32_avx2, _mm256_min_ps, INFINITY)

/* Four lanes, one entry each per step: the adds of a lane form one
 * chain, as in the portable loop. */
MQ_TGT_AVX2 void mq_simd_sqdev_f32_avx2(const float *x, const uint8_t *m, int64_t n, double mean,
                                        double *l) {
  __m256d acc = _mm256_loadu_pd(l), mu = _mm256_set1_pd(mean);
  if (m) {
    for (int64_t i = 0; i < n; i += 4) {
      int32_t w;
      memcpy(&w, m + i, sizeof w);
      __m256i k = _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(w)));
      __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), mu);
      d = _mm256_and_pd(d, _mm256_castsi256_pd(k));
      acc = _mm256_add_pd(acc, _mm256_mul_pd(d, d));
    }
  } else {
    for (int64_t i = 0; i < n; i += 4) {
      __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), mu);
      acc = _mm256_add_pd(acc, _mm256_mul_pd(d, d));
    }
  }
  _mm256_storeu_pd(l, acc);
}

/* --- AVX-512 ----------------------------------------------------------------- */

/* The mask bytes become a mask register; a masked load reads only the
 * valid entries and puts zeros (sums) or the fill (extrema) elsewhere. */
#define HIGH8(v) _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))

/* The sum's loop; its entries float32 ([h] 0), or float16 (1) or
 * bfloat16 (2) bits widened in the registers (a masked-out entry loads as
 * 0 bits, +0.0). Inlined with a constant h. */
MQ_TGT_AVX512 static inline int64_t fsum_avx512(const void *x, int h, const uint8_t *m, int64_t n,
                                                double *d) {
  __m512d a0 = _mm512_loadu_pd(d), a1 = _mm512_loadu_pd(d + 8);
  __m128i c = _mm_setzero_si128();
  const float *xf = x;
  const uint16_t *xh = x;
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 k = 0xffff;
    if (m) {
      __m128i mb = _mm_loadu_si128((const __m128i *)(m + i));
      k = _mm_test_epi8_mask(mb, mb);
      COUNT16(c, mb);
    }
    __m512 v;
    if (!h) v = _mm512_maskz_loadu_ps(k, xf + i);
    else {
      __m256i b = _mm256_maskz_loadu_epi16(k, xh + i);
      v = h == 1 ? _mm512_cvtph_ps(b) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
    }
    a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(HIGH8(v)));
  }
  _mm512_storeu_pd(d, a0), _mm512_storeu_pd(d + 8, a1);
  return COUNT_OF(c);
}

MQ_TGT_AVX512 int64_t mq_simd_fsum_f32_avx512(const float *x, const uint8_t *m, int64_t n, double *d) {
  return fsum_avx512(x, 0, m, n, d);
}

MQ_TGT_AVX512 int64_t mq_simd_fsum_h16_avx512(const uint16_t *x, bool bf16, const uint8_t *m, int64_t n,
                                              double *d) {
  return bf16 ? fsum_avx512(x, 2, m, n, d) : fsum_avx512(x, 1, m, n, d);
}

#define DEF_EXT_AVX512(NAME, OP, FILL)                                         \
  MQ_TGT_AVX512 int64_t NAME(const float *x, const uint8_t *m, int64_t n, float *r, int32_t *nan) { \
    __m512 a = _mm512_loadu_ps(r), fill = _mm512_set1_ps(FILL);                \
    __mmask16 nn = 0;                                                          \
    __m128i c = _mm_setzero_si128();                                           \
    for (int64_t i = 0; i < n; i += 16) {                                      \
      __m512 v;                                                                \
      if (m) {                                                                 \
        __m128i mb = _mm_loadu_si128((const __m128i *)(m + i));                \
        v = _mm512_mask_loadu_ps(fill, _mm_test_epi8_mask(mb, mb), x + i);     \
        COUNT16(c, mb);                                                        \
      } else {                                                                 \
        v = _mm512_loadu_ps(x + i);                                            \
      }                                                                        \
      a = OP(v, a);                                                            \
      nn |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);                            \
    }                                                                          \
    _mm512_storeu_ps(r, a);                                                    \
    *nan |= nn != 0;                                                           \
    return COUNT_OF(c);                                                        \
  }
DEF_EXT_AVX512(mq_simd_fmax_f32_avx512, _mm512_max_ps, -INFINITY)
DEF_EXT_AVX512(mq_simd_fmin_f32_avx512, _mm512_min_ps, INFINITY)

#endif
