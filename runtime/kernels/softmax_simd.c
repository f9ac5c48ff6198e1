/* softmax_simd.c - float32 softmax backward's AVX2 and AVX-512 loops
 * (softmax_simd.h). Why not leave it to the compiler: built for AVX2, gcc
 * 12 vectorizes the portable sixteen-lane sum with 128-bit registers and
 * keeps lanes on the stack (as reduce_simd.c found for the sums), and
 * leaves the result loop at 256 bits. The product of two floats is exact
 * in double, and every multiply, add and subtract is its own intrinsic (no
 * FMA; clang told not to contract), so a lane rounds exactly as the
 * portable `d[k] += (double)a * (double)b` and `(float)(y * (g - s))`. */
#include "softmax_simd.h"

#if MQ_CPU_X86
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <immintrin.h>
#include <string.h>

/* Eight floats as two halves of four doubles each. */
#define LO4(v) _mm256_cvtps_pd(_mm256_castps256_ps128(v))
#define HI4(v) _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))

/* Eight mask bytes (0 or 1) -> 32-bit lanes of 0 or all ones. */
MQ_TGT_AVX2 static inline __m256 dot_ones(__m128i mb) {
  return _mm256_castsi256_ps(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_cvtepu8_epi32(mb)));
}

MQ_TGT_AVX2 bool mq_simd_fdot_f32_avx2(const float *a, const float *b, const uint8_t *m1,
                                       const uint8_t *m2, int64_t n, double *d) {
  __m256d l[4];
  for (int k = 0; k < 4; k++) l[k] = _mm256_loadu_pd(d + 4 * k);
  __m128i any = _mm_setzero_si128();
  for (int64_t i = 0; i < n; i += 16) {
    __m128i mb = _mm_and_si128(_mm_loadu_si128((const __m128i *)(m1 + i)),
                               _mm_loadu_si128((const __m128i *)(m2 + i)));
    any = _mm_or_si128(any, mb);
    for (int h = 0; h < 2; h++) { /* entries i + 8h .. i + 8h + 7: lanes 8h .. */
      __m256 k = dot_ones(h ? _mm_srli_si128(mb, 8) : mb);
      __m256 va = _mm256_and_ps(_mm256_loadu_ps(a + i + 8 * h), k);
      __m256 vb = _mm256_and_ps(_mm256_loadu_ps(b + i + 8 * h), k);
      l[2 * h] = _mm256_add_pd(l[2 * h], _mm256_mul_pd(LO4(va), LO4(vb)));
      l[2 * h + 1] = _mm256_add_pd(l[2 * h + 1], _mm256_mul_pd(HI4(va), HI4(vb)));
    }
  }
  for (int k = 0; k < 4; k++) _mm256_storeu_pd(d + 4 * k, l[k]);
  return !_mm_testz_si128(any, any);
}

MQ_TGT_AVX2 void mq_simd_smgrad_f32_avx2(const float *g, const float *y, const uint8_t *xm,
                                         const uint8_t *gm, int64_t n, double s, float *o) {
  __m256d sv = _mm256_set1_pd(s);
  for (int64_t i = 0; i < n; i += 8) {
    int64_t w1, w2;
    memcpy(&w1, xm + i, sizeof w1), memcpy(&w2, gm + i, sizeof w2);
    __m128i mx = _mm_cvtsi64_si128(w1), mg = _mm_and_si128(mx, _mm_cvtsi64_si128(w2));
    __m256 vg = _mm256_and_ps(_mm256_loadu_ps(g + i), dot_ones(mg)), vy = _mm256_loadu_ps(y + i);
    __m128 lo = _mm256_cvtpd_ps(_mm256_mul_pd(LO4(vy), _mm256_sub_pd(LO4(vg), sv)));
    __m128 hi = _mm256_cvtpd_ps(_mm256_mul_pd(HI4(vy), _mm256_sub_pd(HI4(vg), sv)));
    __m256 r = _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
    _mm256_storeu_ps(o + i, _mm256_and_ps(r, dot_ones(mx)));
  }
}

#define HIGH8(v) _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))

MQ_TGT_AVX512 bool mq_simd_fdot_f32_avx512(const float *a, const float *b, const uint8_t *m1,
                                           const uint8_t *m2, int64_t n, double *d) {
  __m512d l0 = _mm512_loadu_pd(d), l1 = _mm512_loadu_pd(d + 8);
  __mmask16 any = 0;
  for (int64_t i = 0; i < n; i += 16) {
    __m128i mb = _mm_and_si128(_mm_loadu_si128((const __m128i *)(m1 + i)),
                               _mm_loadu_si128((const __m128i *)(m2 + i)));
    __mmask16 k = _mm_test_epi8_mask(mb, mb);
    any |= k;
    __m512 va = _mm512_maskz_loadu_ps(k, a + i), vb = _mm512_maskz_loadu_ps(k, b + i);
    l0 = _mm512_add_pd(l0, _mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(va)),
                                         _mm512_cvtps_pd(_mm512_castps512_ps256(vb))));
    l1 = _mm512_add_pd(l1, _mm512_mul_pd(_mm512_cvtps_pd(HIGH8(va)), _mm512_cvtps_pd(HIGH8(vb))));
  }
  _mm512_storeu_pd(d, l0), _mm512_storeu_pd(d + 8, l1);
  return any != 0;
}

MQ_TGT_AVX512 void mq_simd_smgrad_f32_avx512(const float *g, const float *y, const uint8_t *xm,
                                             const uint8_t *gm, int64_t n, double s, float *o) {
  __m512d sv = _mm512_set1_pd(s);
  for (int64_t i = 0; i < n; i += 16) {
    __m128i bx = _mm_loadu_si128((const __m128i *)(xm + i));
    __m128i bg = _mm_and_si128(bx, _mm_loadu_si128((const __m128i *)(gm + i)));
    __m512 vg = _mm512_maskz_loadu_ps(_mm_test_epi8_mask(bg, bg), g + i), vy = _mm512_loadu_ps(y + i);
    __m512d ylo = _mm512_cvtps_pd(_mm512_castps512_ps256(vy));
    __m512d glo = _mm512_cvtps_pd(_mm512_castps512_ps256(vg));
    __m256 lo = _mm512_cvtpd_ps(_mm512_mul_pd(ylo, _mm512_sub_pd(glo, sv)));
    __m256 hi = _mm512_cvtpd_ps(_mm512_mul_pd(_mm512_cvtps_pd(HIGH8(vy)),
                                              _mm512_sub_pd(_mm512_cvtps_pd(HIGH8(vg)), sv)));
    __m512 r = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)),
                                                   _mm256_castps_pd(hi), 1));
    _mm512_storeu_ps(o + i, _mm512_maskz_mov_ps(_mm_test_epi8_mask(bx, bx), r));
  }
}
#endif
