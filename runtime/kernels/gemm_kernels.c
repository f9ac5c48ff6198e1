/* gemm_kernels.c - the micro-kernels (gemm_kernels.h). Each keeps its
 * MR x NR accumulators in registers for the whole block: per step k, NR
 * values of B are loaded as vectors and each of the MR values of A is
 * broadcast and fused-multiply-added into its row. One vector lane is one
 * entry of C and one chain, so the vector width changes nothing in the
 * result; the portable kernel computes the same chains with fma/fmaf. */
#include "gemm_kernels.h"

#include <float.h>
#include <math.h>

#include "../tensor/half.h"

#include "../tensor/cpu.h"

#define DEF_PORTABLE(NAME, T, FMA)                                                      \
  static void NAME(int64_t kc, const void *a_, const void *b_, void *c_, int64_t ldc, int load) { \
    const T *a = a_, *b = b_;                                                           \
    T *c = c_, acc[4][8];                                                               \
    for (int r = 0; r < 4; r++)                                                         \
      for (int j = 0; j < 8; j++) acc[r][j] = load ? c[r * ldc + j] : 0;               \
    for (int64_t k = 0; k < kc; k++, a += 4, b += 8)                                    \
      for (int r = 0; r < 4; r++)                                                       \
        for (int j = 0; j < 8; j++) acc[r][j] = FMA(a[r], b[j], acc[r][j]);            \
    for (int r = 0; r < 4; r++)                                                         \
      for (int j = 0; j < 8; j++) c[r * ldc + j] = acc[r][j];                           \
  }
DEF_PORTABLE(kern_f32_portable, float, fmaf)
DEF_PORTABLE(kern_f64_portable, double, fma)

/* x, or a zero of its sign when it is subnormal */
static inline float flush(float x) { return x != 0 && fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }
static inline float bf_lo(uint32_t w) { return flush(mq_bits_f32(w << 16)); }
static inline float bf_hi(uint32_t w) { return flush(mq_bits_f32(w & 0xffff0000u)); }

float mq_gemm_bf16_step(float acc, uint32_t a, uint32_t b) {
  float t = flush(fmaf(bf_hi(a), bf_hi(b), flush(acc)));
  return flush(fmaf(bf_lo(a), bf_lo(b), t));
}

/* bfloat16 pairs by their definition, for the paths without vdpbf16ps */
static void kern_bf16_portable(int64_t kc, const void *a_, const void *b_, void *c_, int64_t ldc,
                               int load) {
  const uint32_t *a = a_, *b = b_;
  float *c = c_, acc[4][8];
  for (int r = 0; r < 4; r++)
    for (int j = 0; j < 8; j++) acc[r][j] = load ? c[r * ldc + j] : 0;
  for (int64_t k = 0; k < kc; k++, a += 4, b += 8)
    for (int r = 0; r < 4; r++)
      for (int j = 0; j < 8; j++) acc[r][j] = mq_gemm_bf16_step(acc[r][j], a[r], b[j]);
  for (int r = 0; r < 4; r++)
    for (int j = 0; j < 8; j++) c[r * ldc + j] = acc[r][j];
}

#if MQ_CPU_X86
#include <immintrin.h>

/* Rows 0 .. 5 and 6 .. 11 of a kernel, as X-macros over the row number. */
#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS12(X) ROWS6(X) X(6) X(7) X(8) X(9) X(10) X(11)

/* A kernel of MR rows (ROWS) by two vectors: the vector type V of L
 * lanes and its intrinsics are the macros of that name defined where the
 * kernel is. */
#define DEF_VKERN(NAME, TGT, T, ROWS, MR)                                                  \
  TGT static void NAME(int64_t kc, const void *a_, const void *b_, void *c_, int64_t ldc,  \
                       int load) {                                                         \
    const T *a = a_, *b = b_;                                                              \
    T *c = c_;                                                                             \
    ROWS(DECL_ROW)                                                                         \
    if (load) { ROWS(LOAD_ROW) }                                                           \
    for (int64_t k = 0; k < kc; k++) {                                                     \
      V b0 = LOADA(b), b1 = LOADA(b + L);                                                  \
      ROWS(FMA_ROW)                                                                        \
      a += MR, b += 2 * L;                                                                 \
    }                                                                                      \
    ROWS(STORE_ROW)                                                                        \
  }
#define DECL_ROW(r) V x##r = ZERO(), y##r = ZERO();
#define LOAD_ROW(r) x##r = LOAD(c + (r) * ldc), y##r = LOAD(c + (r) * ldc + L);
#define FMA_ROW(r)                                                                         \
  {                                                                                        \
    V t = SET1(a[r]);                                                                      \
    x##r = FMADD(t, b0, x##r), y##r = FMADD(t, b1, y##r);                                  \
  }
#define STORE_ROW(r) STORE(c + (r) * ldc, x##r), STORE(c + (r) * ldc + L, y##r);

#define TGT_FMA __attribute__((target("avx2,fma")))
#define V __m256
#define L 8
#define ZERO _mm256_setzero_ps
#define LOAD _mm256_loadu_ps
#define LOADA _mm256_load_ps
#define STORE _mm256_storeu_ps
#define SET1 _mm256_set1_ps
#define FMADD _mm256_fmadd_ps
DEF_VKERN(kern_f32_avx2, TGT_FMA, float, ROWS6, 6)
#undef V
#undef L
#undef ZERO
#undef LOAD
#undef LOADA
#undef STORE
#undef SET1
#undef FMADD
#define V __m256d
#define L 4
#define ZERO _mm256_setzero_pd
#define LOAD _mm256_loadu_pd
#define LOADA _mm256_load_pd
#define STORE _mm256_storeu_pd
#define SET1 _mm256_set1_pd
#define FMADD _mm256_fmadd_pd
DEF_VKERN(kern_f64_avx2, TGT_FMA, double, ROWS6, 6)
#undef V
#undef L
#undef ZERO
#undef LOAD
#undef LOADA
#undef STORE
#undef SET1
#undef FMADD
#define V __m512
#define L 16
#define ZERO _mm512_setzero_ps
#define LOAD _mm512_loadu_ps
#define LOADA _mm512_load_ps
#define STORE _mm512_storeu_ps
#define SET1 _mm512_set1_ps
#define FMADD _mm512_fmadd_ps
DEF_VKERN(kern_f32_avx512, MQ_TGT_AVX512, float, ROWS12, 12)
#undef V
#undef L
#undef ZERO
#undef LOAD
#undef LOADA
#undef STORE
#undef SET1
#undef FMADD
#define V __m512d
#define L 8
#define ZERO _mm512_setzero_pd
#define LOAD _mm512_loadu_pd
#define LOADA _mm512_load_pd
#define STORE _mm512_storeu_pd
#define SET1 _mm512_set1_pd
#define FMADD _mm512_fmadd_pd
DEF_VKERN(kern_f64_avx512, MQ_TGT_AVX512, double, ROWS12, 12)
#undef V
#undef L
#undef ZERO
#undef LOAD
#undef LOADA
#undef STORE
#undef SET1
#undef FMADD
#undef FMA_ROW
/* bfloat16 pairs: a broadcast word of A against 16 words of B per vector */
#define TGT_BF16 __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define V __m512
#define L 16
#define ZERO _mm512_setzero_ps
#define LOAD _mm512_loadu_ps
#define STORE _mm512_storeu_ps
#define FMA_ROW(r)                                                                         \
  {                                                                                        \
    __m512bh t = (__m512bh)_mm512_set1_epi32((int)a[r]);                                   \
    x##r = _mm512_dpbf16_ps(x##r, t, b0), y##r = _mm512_dpbf16_ps(y##r, t, b1);          \
  }
TGT_BF16 static void kern_bf16_avx512(int64_t kc, const void *a_, const void *b_, void *c_,
                                      int64_t ldc, int load) {
  const uint32_t *a = a_, *b = b_;
  float *c = c_;
  ROWS12(DECL_ROW)
  if (load) { ROWS12(LOAD_ROW) }
  for (int64_t k = 0; k < kc; k++) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + L);
    ROWS12(FMA_ROW)
    a += 12, b += 2 * L;
  }
  ROWS12(STORE_ROW)
}
#endif

mq_gemm_kernel mq_gemm_kernel_for(int cpu, mq_gemm_kind kind) {
  bool f64 = kind == MQ_GEMM_F64;
#if MQ_CPU_X86
  if (kind == MQ_GEMM_BF16)
    return cpu >= MQ_CPU_AVX512 && __builtin_cpu_supports("avx512bf16")
               ? (mq_gemm_kernel){kern_bf16_avx512, 12, 32}
               : (mq_gemm_kernel){kern_bf16_portable, 4, 8};
  if (cpu >= MQ_CPU_AVX512)
    return f64 ? (mq_gemm_kernel){kern_f64_avx512, 12, 16} : (mq_gemm_kernel){kern_f32_avx512, 12, 32};
  if (cpu >= MQ_CPU_AVX2 && __builtin_cpu_supports("fma"))
    return f64 ? (mq_gemm_kernel){kern_f64_avx2, 6, 8} : (mq_gemm_kernel){kern_f32_avx2, 6, 16};
#else
  (void)cpu;
  if (kind == MQ_GEMM_BF16) return (mq_gemm_kernel){kern_bf16_portable, 4, 8};
#endif
  return f64 ? (mq_gemm_kernel){kern_f64_portable, 4, 8} : (mq_gemm_kernel){kern_f32_portable, 4, 8};
}
