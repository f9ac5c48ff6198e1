/* attention_tile.c - fused attention's vector kernels (attention_tile.h):
 * float64 sums by register tiles, and two AVX-512 helpers at the end.
 *
 * A tile is R rows by C vectors of columns (the last vector masked to
 * the columns left), R * C accumulators in registers: per key t, the C
 * vectors of row r(t) are loaded once and each of the R rows adds its
 * x[i, t] times them by fma. Every accumulator is one sum in t order, as
 * one row at a time would make it; the tiles only save loads (one row
 * segment for R rows instead of one each) and keep more independent
 * chains in flight than one row has. AVX-512 takes 6 rows by 4 vectors
 * (24 of the 32 registers), AVX2 3 rows by 4 (12 of 16); a single row
 * takes up to 8 vectors, for the chains. The kernels exist per (R, C),
 * the loops over them unrolled, so the accumulators are registers. */
#include "attention_tile.h"

#include "../tensor/cpu.h"

#include <math.h>

#if MQ_CPU_X86
#include <immintrin.h>

/* One call's operands. */
typedef struct tl {
  const double *x, *rows;
  const int64_t *ks;
  int64_t xs, w, os;
  double *out;
} tl;

#define TL_INLINE static inline __attribute__((always_inline))
#define ROWP(g, t) ((g)->rows + ((g)->ks ? (g)->ks[t] : (t)) * (g)->w)

/* The tile at rows [i0, i0 + R), columns [j, j + L C) (the last vector's
 * lanes: [last]), keys [t0, t1): from 0 when t0 is 0, else from the
 * partial sums in out. One definition per register width: VT holds L
 * doubles, MT says which lanes of the last vector are columns, and the
 * per-width operations are the macros P##_ZERO etc. below. */
#define DEF_TILE(NAME, ATTR, VT, MT, L, RMAX, P)                               \
  ATTR TL_INLINE void NAME(const tl *g, const int R, const int C, int64_t i0, int64_t j, \
                           int64_t t0, int64_t t1, MT last) {                  \
    VT acc[RMAX][8], rv[8];                                                    \
    double *o = g->out + i0 * g->os + j;                                       \
    const double *x = g->x + i0 * g->xs;                                       \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                       \
      _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                     \
        acc[i][c] = !t0 ? P##_ZERO() : P##_LOAD(o + i * g->os + L * c, c == C - 1, last); \
    for (int64_t t = t0; t < t1; t++) {                                        \
      const double *r = ROWP(g, t) + j;                                        \
      _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                     \
        rv[c] = P##_LOAD(r + L * c, c == C - 1, last);                         \
      _Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {                   \
        VT b = P##_SET1(x[i * g->xs + t]);                                     \
        _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                   \
          acc[i][c] = P##_FMA(b, rv[c], acc[i][c]);                            \
      }                                                                        \
    }                                                                          \
    _Pragma("GCC unroll 8") for (int i = 0; i < R; i++)                       \
      _Pragma("GCC unroll 8") for (int c = 0; c < C; c++)                     \
        P##_STORE(o + i * g->os + L * c, c == C - 1, last, acc[i][c]);         \
  }

/* AVX-512: 8 lanes, a lane mask. */
#define T512 __attribute__((target("avx512f")))
#define Z_ZERO _mm512_setzero_pd
#define Z_SET1 _mm512_set1_pd
#define Z_FMA _mm512_fmadd_pd
#define Z_LOAD(p, tail, last) _mm512_maskz_loadu_pd((tail) ? (last) : 0xff, p)
#define Z_STORE(p, tail, last, v) _mm512_mask_storeu_pd(p, (tail) ? (last) : 0xff, v)
DEF_TILE(tile512, T512, __m512d, __mmask8, 8, 6, Z)

/* AVX2: 4 lanes, a vector of lane masks (its sign bits). */
#define T256 __attribute__((target("avx2,fma")))
#define Y_ZERO _mm256_setzero_pd
#define Y_SET1 _mm256_set1_pd
#define Y_FMA _mm256_fmadd_pd
#define Y_LOAD(p, tail, last) ((tail) ? _mm256_maskload_pd(p, last) : _mm256_loadu_pd(p))
#define Y_STORE(p, tail, last, v)                                              \
  ((tail) ? _mm256_maskstore_pd(p, last, v) : _mm256_storeu_pd(p, v))
DEF_TILE(tile256, T256, __m256d, __m256i, 4, 3, Y)

/* One function per tile shape, in tables [R - 1][C - 1]: rows up to 6
 * (AVX-512) or 3 (AVX2) by 4 vectors, and one row by up to 8. */
typedef void tile512_fn(const tl *, int64_t, int64_t, int64_t, int64_t, __mmask8);
typedef void tile256_fn(const tl *, int64_t, int64_t, int64_t, int64_t, __m256i);
#define K512(R, C)                                                             \
  T512 static void k512_##R##_##C(const tl *g, int64_t i0, int64_t j, int64_t t0, int64_t t1, \
                                  __mmask8 last) {                             \
    tile512(g, R, C, i0, j, t0, t1, last);                                     \
  }
#define K256(R, C)                                                             \
  T256 static void k256_##R##_##C(const tl *g, int64_t i0, int64_t j, int64_t t0, int64_t t1, \
                                  __m256i last) {                              \
    tile256(g, R, C, i0, j, t0, t1, last);                                     \
  }
#define SHAPES4(K, R) K(R, 1) K(R, 2) K(R, 3) K(R, 4)
#define SHAPES8(K) SHAPES4(K, 1) K(1, 5) K(1, 6) K(1, 7) K(1, 8)
SHAPES8(K512)
SHAPES4(K512, 2) SHAPES4(K512, 3) SHAPES4(K512, 4) SHAPES4(K512, 5) SHAPES4(K512, 6)
SHAPES8(K256)
SHAPES4(K256, 2) SHAPES4(K256, 3)
#define ROW4(P, R) {P##R##_1, P##R##_2, P##R##_3, P##R##_4, NULL, NULL, NULL, NULL}
#define ROW8(P) {P##1_1, P##1_2, P##1_3, P##1_4, P##1_5, P##1_6, P##1_7, P##1_8}
static tile512_fn *const tiles512[6][8] = {ROW8(k512_),    ROW4(k512_, 2), ROW4(k512_, 3),
                                           ROW4(k512_, 4), ROW4(k512_, 5), ROW4(k512_, 6)};
static tile256_fn *const tiles256[3][8] = {ROW8(k256_), ROW4(k256_, 2), ROW4(k256_, 3)};

/* Columns in tiles of (rows > 1 ? 4 : 8) vectors of L lanes, keys in
 * blocks whose rows (a tile's width) fill 16 KB, rows in tiles of RT. */
#define DEF_SUMS(NAME, ATTR, L, RT, TABLE, LAST)                               \
  ATTR static void NAME(const tl *g, int64_t n, int64_t nr, int64_t w) {       \
    int64_t jt = (nr > 1 ? 4 : 8) * L, tb = 16384 / (jt * 8);                  \
    for (int64_t j = 0; j < w; j += jt) {                                      \
      int64_t cw = w - j < jt ? w - j : jt, c = (cw + L - 1) / L, lw = cw - (c - 1) * L; \
      for (int64_t t0 = 0; t0 < n; t0 += tb) {                                 \
        int64_t t1 = n - t0 < tb ? n : t0 + tb;                                \
        for (int64_t i = 0; i < nr; i += RT) {                                 \
          int64_t r = nr - i < RT ? nr - i : RT;                               \
          TABLE[r - 1][c - 1](g, i, j, t0, t1, LAST(lw));                      \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }
#define LAST512(lw) ((__mmask8)(0xff >> (8 - (lw))))
#define LAST256(lw) _mm256_cmpgt_epi64(_mm256_set1_epi64x(lw), _mm256_setr_epi64x(0, 1, 2, 3))
DEF_SUMS(sums512, T512, 8, 6, tiles512, LAST512)
DEF_SUMS(sums256, T256, 4, 3, tiles256, LAST256)

/* Sixteen scores at a time, the last ones under a lane mask; the masked
 * lanes take no part in the max or the NaN test. The division and the
 * conversion are the IEEE operations of the scalar code, lane by lane;
 * the max (v > r ? v : r, MAXPS) of non-NaN values is the same whatever
 * the grouping but for a zero's sign (see attention.c's rowmax). */
__attribute__((target("avx512f,avx512dq"))) static float divmax512(const double *acc, float c,
                                                                   bool mul, int64_t n,
                                                                   float *srow) {
  __m512 r = _mm512_set1_ps(-INFINITY), cv = _mm512_set1_ps(c);
  __mmask16 nan = 0;
  for (int64_t j = 0; j < n; j += 16) {
    __mmask16 k = n - j >= 16 ? 0xffff : (__mmask16)((1u << (n - j)) - 1);
    __m256 lo = _mm512_cvtpd_ps(_mm512_maskz_loadu_pd((__mmask8)k, acc + j));
    __m256 hi = _mm512_cvtpd_ps(_mm512_maskz_loadu_pd((__mmask8)(k >> 8), acc + j + 8));
    __m512 x = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
    __m512 v = mul ? _mm512_mul_ps(x, cv) : _mm512_div_ps(x, cv);
    _mm512_mask_storeu_ps(srow + j, k, v);
    r = _mm512_mask_max_ps(r, k, v, r);
    nan |= _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q);
  }
  return nan ? (float)NAN : _mm512_reduce_max_ps(r);
}

/* Eight key rows of eight floats each (row r: b + cols[jj + r] * sj + k)
 * widened and transposed into kc rows k .. k + 8, columns jj .. jj + 8:
 * pairs within 128-bit lanes (unpack), then lane pairs and halves
 * (permutex2var); the tails one entry at a time. */
T512 static void gather_t512(const float *b, int64_t sj, const int64_t *cols, int64_t nv,
                             int64_t K, double *kc) {
  const __m512i lo2 = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i hi2 = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  const __m512i lo4 = _mm512_setr_epi64(0, 1, 2, 3, 8, 9, 10, 11);
  const __m512i hi4 = _mm512_setr_epi64(4, 5, 6, 7, 12, 13, 14, 15);
  int64_t jj = 0, K8 = K - K % 8;
  for (; jj + 8 <= nv; jj += 8) {
    const float *r[8];
    for (int i = 0; i < 8; i++) r[i] = b + cols[jj + i] * sj;
    for (int64_t k = 0; k < K8; k += 8) {
      __m512d x[8], t[8], u[8];
      for (int i = 0; i < 8; i++) x[i] = _mm512_cvtps_pd(_mm256_loadu_ps(r[i] + k));
      for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(x[i], x[i + 1]);    /* rows i, i+1 at k 0 2 4 6 */
        t[i + 1] = _mm512_unpackhi_pd(x[i], x[i + 1]); /* at k 1 3 5 7 */
      }
      for (int h = 0; h < 8; h += 4) { /* rows h .. h+3 */
        u[h] = _mm512_permutex2var_pd(t[h], lo2, t[h + 2]);         /* k 0, 4 */
        u[h + 1] = _mm512_permutex2var_pd(t[h + 1], lo2, t[h + 3]); /* k 1, 5 */
        u[h + 2] = _mm512_permutex2var_pd(t[h], hi2, t[h + 2]);     /* k 2, 6 */
        u[h + 3] = _mm512_permutex2var_pd(t[h + 1], hi2, t[h + 3]); /* k 3, 7 */
      }
      double *o = kc + k * nv + jj;
      for (int c = 0; c < 4; c++) {
        _mm512_storeu_pd(o + c * nv, _mm512_permutex2var_pd(u[c], lo4, u[c + 4]));
        _mm512_storeu_pd(o + (c + 4) * nv, _mm512_permutex2var_pd(u[c], hi4, u[c + 4]));
      }
    }
    for (int64_t k = K8; k < K; k++)
      for (int i = 0; i < 8; i++) kc[k * nv + jj + i] = (double)r[i][k];
  }
  for (; jj < nv; jj++)
    for (int64_t k = 0; k < K; k++) kc[k * nv + jj] = (double)b[cols[jj] * sj + k];
}
#endif

bool mq_tile_gather_t(int cpu, const float *b, int64_t sj, const int64_t *cols, int64_t nv,
                      int64_t K, double *kc) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) {
    gather_t512(b, sj, cols, nv, K, kc);
    return true;
  }
#endif
  (void)cpu, (void)b, (void)sj, (void)cols, (void)nv, (void)K, (void)kc;
  return false;
}

bool mq_tile_divmax_f32(int cpu, const double *acc, float c, bool mul, int64_t n, float *srow,
                        float *mx) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) {
    *mx = divmax512(acc, c, mul, n, srow);
    return true;
  }
#endif
  (void)cpu, (void)acc, (void)c, (void)mul, (void)n, (void)srow, (void)mx;
  return false;
}

bool mq_tile_ok(int cpu) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) return __builtin_cpu_supports("avx512f");
  if (cpu == MQ_CPU_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  (void)cpu;
  return false;
}

void mq_tile_sums(int cpu, const double *x, int64_t xs, const int64_t *ks, int64_t n, int64_t nr,
                  const double *rows, int64_t w, double *out, int64_t os) {
  if (n == 0) { /* no key: every sum is 0 */
    for (int64_t i = 0; i < nr; i++)
      for (int64_t j = 0; j < w; j++) out[i * os + j] = 0;
    return;
  }
#if MQ_CPU_X86
  tl g = {.x = x, .rows = rows, .ks = ks, .xs = xs, .w = w, .os = os, .out = out};
  if (cpu == MQ_CPU_AVX512) sums512(&g, n, nr, w);
  else sums256(&g, n, nr, w);
#else
  (void)cpu, (void)x, (void)xs, (void)ks, (void)rows;
#endif
}
