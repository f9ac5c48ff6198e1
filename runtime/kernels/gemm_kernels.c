/* gemm_kernels.c - the micro-kernels (gemm_kernels.h). Each keeps its
 * MR x NR accumulators in registers for the whole block: per step k, NR
 * values of B are loaded as vectors and each of the MR values of A is
 * broadcast and fused-multiply-added into its row. One vector lane is one
 * entry of C and one chain, so the vector width changes nothing in the
 * result; the portable kernel computes the same chains with fma/fmaf. */
#include "gemm_kernels.h"

#include <float.h>
#include <math.h>
#include <string.h>

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

/* Rows 0 .. 5 and 6 .. 11 of a kernel, as X-macros over the row number
 * (and the vector type and intrinsics' names, passed along). */
#define ROWS6(X, ...) X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__) \
  X(4, __VA_ARGS__) X(5, __VA_ARGS__)
#define ROWS12(X, ...) ROWS6(X, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__) \
  X(8, __VA_ARGS__) X(9, __VA_ARGS__) X(10, __VA_ARGS__) X(11, __VA_ARGS__)

/* A row r of a tile: two vectors of L lanes of type V, whose intrinsics
 * are P##_op_##S (P _mm256 or _mm512, S ps or pd). */
#define DECL_ROW(r, V, P, S, L) V x##r = P##_setzero_##S(), y##r = P##_setzero_##S();
#define LOAD_ROW(r, V, P, S, L) \
  x##r = P##_loadu_##S(c + (r) * ldc), y##r = P##_loadu_##S(c + (r) * ldc + L);
/* C's row r fetched for writing while the steps run (a result written
 * once would otherwise wait for its lines at the stores) */
#define PREFETCH_ROW(r, V, P, S, L) \
  __builtin_prefetch(c + (r) * ldc, 1, 3), __builtin_prefetch(c + (r) * ldc + 2 * L - 1, 1, 3);
#define STORE_ROW(r, V, P, S, L) \
  P##_storeu_##S(c + (r) * ldc, x##r), P##_storeu_##S(c + (r) * ldc + L, y##r);
/* step k of row r: A packed (a[r], a += MR) or read in place (a[r ars],
 * a += acs: its rows or its columns contiguous) */
#define FMA_ROW(r, V, P, S, L) FMA_AT(r, a[r], V, P, S)
#define FMA_ROW_D(r, V, P, S, L) FMA_AT(r, a[(r) * ars], V, P, S)
#define FMA_AT(r, val, V, P, S)                                                            \
  {                                                                                        \
    V t = P##_set1_##S(val);                                                               \
    x##r = P##_fmadd_##S(t, b0, x##r), y##r = P##_fmadd_##S(t, b1, y##r);                  \
  }

/* The body of a kernel of MR rows (ROWS) by two vectors, A's step ROW,
 * A advancing by STEP each k. */
#define VKERN_BODY(T, ROWS, ROW, STEP, V, P, S, L)                                         \
  const T *a = a_, *b = b_;                                                                \
  T *c = c_;                                                                               \
  ROWS(DECL_ROW, V, P, S, L)                                                               \
  if (load) { ROWS(LOAD_ROW, V, P, S, L) }                                                 \
  else { ROWS(PREFETCH_ROW, V, P, S, L) }                                                  \
  for (int64_t k = 0; k < kc; k++) {                                                       \
    V b0 = P##_load_##S(b), b1 = P##_load_##S(b + L);                                      \
    ROWS(ROW, V, P, S, L)                                                                  \
    a += STEP, b += 2 * L;                                                                 \
  }                                                                                        \
  ROWS(STORE_ROW, V, P, S, L)

/* NAME (mq_gemm_fn, A packed) and NAME_d (mq_gemm_dfn, A in place). */
#define DEF_VKERN(NAME, TGT, T, ROWS, MR, V, P, S, L)                                      \
  TGT static void NAME(int64_t kc, const void *a_, const void *b_, void *c_, int64_t ldc,  \
                       int load) {                                                         \
    VKERN_BODY(T, ROWS, FMA_ROW, MR, V, P, S, L)                                           \
  }                                                                                        \
  TGT static void NAME##_d(int64_t kc, const void *a_, int64_t ars, int64_t acs,          \
                           const void *b_, void *c_, int64_t ldc, int load) {              \
    VKERN_BODY(T, ROWS, FMA_ROW_D, acs, V, P, S, L)                                        \
  }

#define TGT_FMA __attribute__((target("avx2,fma")))
DEF_VKERN(kern_f32_avx2, TGT_FMA, float, ROWS6, 6, __m256, _mm256, ps, 8)
DEF_VKERN(kern_f64_avx2, TGT_FMA, double, ROWS6, 6, __m256d, _mm256, pd, 4)
DEF_VKERN(kern_f32_avx512, MQ_TGT_AVX512, float, ROWS12, 12, __m512, _mm512, ps, 16)
DEF_VKERN(kern_f64_avx512, MQ_TGT_AVX512, double, ROWS12, 12, __m512d, _mm512, pd, 8)

/* bfloat16 pairs: a broadcast word of A against 16 words of B per vector */
#define TGT_BF16 __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#define FMA_ROW_BF16(r, V, P, S, L)                                                        \
  {                                                                                        \
    __m512bh t = (__m512bh)_mm512_set1_epi32((int)a[r]);                                   \
    x##r = _mm512_dpbf16_ps(x##r, t, b0), y##r = _mm512_dpbf16_ps(y##r, t, b1);          \
  }
TGT_BF16 static void kern_bf16_avx512(int64_t kc, const void *a_, const void *b_, void *c_,
                                      int64_t ldc, int load) {
  const uint32_t *a = a_, *b = b_;
  float *c = c_;
  ROWS12(DECL_ROW, __m512, _mm512, ps, 16)
  if (load) { ROWS12(LOAD_ROW, __m512, _mm512, ps, 16) }
  for (int64_t k = 0; k < kc; k++) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
    ROWS12(FMA_ROW_BF16, __m512, _mm512, ps, 16)
    a += 12, b += 32;
  }
  ROWS12(STORE_ROW, __m512, _mm512, ps, 16)
}

/* The same with A's rows read in place (rows contiguous): row r's word q
 * is its elements 2q and 2q + 1 as they lie, at a + r * ars (ars in
 * elements); an even kc only (an odd block's last word pairs with 0). */
#define FMA_ROW_BF16_D(r, V, P, S, L)                                                      \
  {                                                                                        \
    uint32_t w_;                                                                           \
    memcpy(&w_, a + (r) * ars, 4);                                                          \
    __m512bh t = (__m512bh)_mm512_set1_epi32((int)w_);                                     \
    x##r = _mm512_dpbf16_ps(x##r, t, b0), y##r = _mm512_dpbf16_ps(y##r, t, b1);          \
  }
TGT_BF16 static void kern_bf16_avx512_d(int64_t kc, const void *a_, int64_t ars, int64_t acs,
                                        const void *b_, void *c_, int64_t ldc, int load) {
  const uint16_t *a = a_;
  const uint32_t *b = b_;
  float *c = c_;
  (void)acs;
  ROWS12(DECL_ROW, __m512, _mm512, ps, 16)
  if (load) { ROWS12(LOAD_ROW, __m512, _mm512, ps, 16) }
  else { ROWS12(PREFETCH_ROW, __m512, _mm512, ps, 16) }
  for (int64_t k = 0; k < kc; k++) {
    __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
    ROWS12(FMA_ROW_BF16_D, __m512, _mm512, ps, 16)
    a += 2, b += 32;
  }
  ROWS12(STORE_ROW, __m512, _mm512, ps, 16)
}
#endif

#if MQ_CPU_X86
/* A block of columns [j0, j1) of the n rows, k outermost: the rows of C
 * stay in L1 while B's rows stream through once, each entry's chain
 * still in k order. */
#define FEW_TGT __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq,fma")))
FEW_TGT static void few_rows(int64_t n, int64_t w, int64_t kc, const float *a, int64_t ars,
                             int64_t acs, const uint8_t *am, int64_t amrs, int64_t amcs,
                             const float *b, int64_t ldb, const uint8_t *bm, int64_t bmrs, float *c,
                             int64_t ldc, int load) {
  for (int64_t j0 = 0; j0 < w; j0 += 1024) {
    int64_t j1 = w - j0 < 1024 ? w : j0 + 1024;
    if (!load)
      for (int64_t i = 0; i < n; i++) memset(c + i * ldc + j0, 0, (size_t)(j1 - j0) * sizeof *c);
    for (int64_t k = 0; k < kc; k++) {
      __m512 x[4];
      for (int64_t i = 0; i < n; i++)
        x[i] = _mm512_set1_ps(!am || am[i * amrs + k * amcs] ? a[i * ars + k * acs] : 0.0f);
      const float *bk = b + k * ldb;
      const uint8_t *mk = bm ? bm + k * bmrs : NULL;
      for (int64_t j = j0; j < j1; j += 16) {
        __mmask16 v = j1 - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (j1 - j)) - 1);
        if (mk) { /* the mask's bytes, read only up to the row's end */
          __m128i mb = v == 0xffff ? _mm_loadu_si128((const __m128i *)(const void *)(mk + j))
                                   : _mm_maskz_loadu_epi8(v, mk + j);
          v &= _mm_test_epi8_mask(mb, mb);
        }
        __m512 bv = _mm512_maskz_loadu_ps(v, bk + j);
        __mmask16 all = j1 - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (j1 - j)) - 1);
        for (int64_t i = 0; i < n; i++) {
          float *ci = c + i * ldc + j;
          _mm512_mask_storeu_ps(ci, all, _mm512_fmadd_ps(x[i], bv, _mm512_maskz_loadu_ps(all, ci)));
        }
      }
    }
  }
}
#endif

bool mq_gemm_few_rows_f32(int cpu, int64_t n, int64_t w, int64_t kc, const float *a, int64_t ars,
                          int64_t acs, const uint8_t *am, int64_t amrs, int64_t amcs, const float *b,
                          int64_t ldb, const uint8_t *bm, int64_t bmrs, float *c, int64_t ldc,
                          int load) {
#if MQ_CPU_X86
  if (cpu < MQ_CPU_AVX512 || n < 1 || n > 4) return false;
  few_rows(n, w, kc, a, ars, acs, am, amrs, amcs, b, ldb, bm, bmrs, c, ldc, load);
  return true;
#else
  (void)cpu, (void)n, (void)w, (void)kc, (void)a, (void)ars, (void)acs, (void)am, (void)amrs;
  (void)amcs, (void)b, (void)ldb, (void)bm, (void)bmrs, (void)c, (void)ldc, (void)load;
  return false;
#endif
}

mq_gemm_kernel mq_gemm_kernel_for(int cpu, mq_gemm_kind kind) {
  bool f64 = kind == MQ_GEMM_F64;
#if MQ_CPU_X86
  if (kind == MQ_GEMM_BF16)
    return cpu >= MQ_CPU_AVX512 && __builtin_cpu_supports("avx512bf16")
               ? (mq_gemm_kernel){kern_bf16_avx512, 12, 32, kern_bf16_avx512_d}
               : (mq_gemm_kernel){kern_bf16_portable, 4, 8, NULL};
  if (cpu >= MQ_CPU_AVX512)
    return f64 ? (mq_gemm_kernel){kern_f64_avx512, 12, 16, kern_f64_avx512_d}
               : (mq_gemm_kernel){kern_f32_avx512, 12, 32, kern_f32_avx512_d};
  if (cpu >= MQ_CPU_AVX2) /* which implies FMA (cpu.c) */
    return f64 ? (mq_gemm_kernel){kern_f64_avx2, 6, 8, kern_f64_avx2_d}
               : (mq_gemm_kernel){kern_f32_avx2, 6, 16, kern_f32_avx2_d};
#else
  (void)cpu;
  if (kind == MQ_GEMM_BF16) return (mq_gemm_kernel){kern_bf16_portable, 4, 8, NULL};
#endif
  return f64 ? (mq_gemm_kernel){kern_f64_portable, 4, 8, NULL}
             : (mq_gemm_kernel){kern_f32_portable, 4, 8, NULL};
}
