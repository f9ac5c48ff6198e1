/* vexp.c - mq_vexpf over rows, one loop per CPU path (vexp.h).
 *
 * Why the paths agree: mq_vexpf is a fixed sequence of IEEE double
 * operations (conversions, adds, multiplies, table reads, integer shifts
 * and adds on the bits; no contraction: gcc's -std=c11 turns it off,
 * clang is told), each rounded the same whether it runs alone or four or
 * eight to a register. The portable (SSE2) and AVX2 loops are the same C
 * built for two targets; the AVX-512 loop writes the same steps in the
 * same order with intrinsics, its multiply-adds fused (they round less,
 * and the float32 result is still the correctly rounded one, below).
 * tests/unit/test_vexp.c compares them on a million inputs,
 * tools/vexp_check.c on all 2^32.
 *
 * Why it is correctly rounded: the double result carries a relative error
 * of at most about 2^-53 (r is exact but for one rounding, the series'
 * rounding errors are scaled by |r| <= 0.022, 2^(j/16) is hi + lo, and
 * hi + (lo + hi q) rounds once), and a float32 has 24 bits, so the final
 * rounding to float32 could go the wrong way only for an e^x within about
 * 2^-53 of a midpoint between two float32s. There are few such inputs,
 * and tools/vexp_check.c found that none of them goes wrong: it compares
 * every one of the 2^32 inputs with the correctly rounded result (glibc's
 * double exp rounded once, expl deciding near midpoints) and with glibc's
 * expf; see docs/DIFFERENCES.md, "exp, log, pow and sigmoid give one
 * answer per value". */
#include "../tensor/internal.h" /* first: gcc's vectorizer cost model, before mq_vexpf */
#include "../tensor/cpu.h"
#include "vexp.h"

/* 2^(j/16) = hi + lo: hi rounded to nearest, lo the rest rounded (both
 * from 80-digit decimals, Python's decimal module) */
const double mq_vexp_hi[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};
const double mq_vexp_lo[16] = {
    0x0.0p+0,                0x1.8a62e4adc610bp-54,  -0x1.19041b9d78a76p-55, 0x1.9b07eb6c70573p-54,
    0x1.6f46ad23182e4p-55,  0x1.ada0911f09ebcp-55,  0x1.d4397afec42e2p-56,  0x1.6324c054647adp-54,
    -0x1.bdd3413b26456p-54, -0x1.41577ee04992fp-55, 0x1.6e9f156864b27p-54,  0x1.c7c46b071f2bep-56,
    0x1.7a1cd345dcc81p-54,  0x1.11065895048ddp-55,  0x1.2ed02d75b3707p-55,  -0x1.e9c23179c2893p-54};

#define VEXP_ROWS(NAME, ATTR)                                                  \
  ATTR void NAME(float *o, const float *x, float c, int64_t n) {               \
    for (int64_t i = 0; i < n; i++) o[i] = mq_vexpf(x[i] - c);                 \
  }
VEXP_ROWS(rows_portable, static)

#if MQ_CPU_X86
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif
#include <immintrin.h>

/* gcc builds the table lookups of AVX2 with gathers */
VEXP_ROWS(rows_avx2, MQ_TGT_AVX2 static)

/* AVX-512: mq_vexpf's steps on eight doubles, each multiply-add fused
 * (AVX-512F has fma): fourteen rounding operations instead of twenty-four,
 * on a port that does one 512-bit operation a cycle. The fused steps
 * round less, never more, and the result is still correctly rounded for
 * every float32 input, so the bits are the portable loop's: that is what
 * tools/vexp_check.c checks on all 2^32 inputs, path against path (run it
 * after changing either). The 16-entry tables are two registers each,
 * looked up by a two-source permute (which reads the low four bits of
 * kb's lanes), where gcc would gather them from memory at about twice the
 * cost of the whole loop. */
#define BD(v) _mm512_set1_pd(v)
MQ_TGT_AVX512 static inline __m512d exp8(__m512d x, const __m512d *t) {
  const __m512d shift = BD(0x1.8p52);
  __m512d kd = _mm512_fmadd_pd(x, BD(0x1.71547652b82fep+4), shift);
  __m512i kb = _mm512_castpd_si512(kd);
  kd = _mm512_sub_pd(kd, shift);
  __m512d r = _mm512_fnmadd_pd(kd, BD(0x1.62e42fefa3p-5), x);
  r = _mm512_fnmadd_pd(kd, BD(0x1.3de6af278ece6p-46), r);
  __m512d r2 = _mm512_mul_pd(r, r);
  __m512d a0 = _mm512_fmadd_pd(BD(0x1.5555555555555p-3), r, BD(0x1.0p-1));
  __m512d a1 = _mm512_fmadd_pd(BD(0x1.1111111111111p-7), r, BD(0x1.5555555555555p-5));
  __m512d a2 = _mm512_fmadd_pd(BD(0x1.a01a01a01a01ap-13), r, BD(0x1.6c16c16c16c17p-10));
  __m512d p = _mm512_fmadd_pd(_mm512_fmadd_pd(a2, r2, a1), r2, a0);
  __m512d q = _mm512_fmadd_pd(r2, p, r);
  __m512d hi = _mm512_permutex2var_pd(t[0], kb, t[1]), lo = _mm512_permutex2var_pd(t[2], kb, t[3]);
  __m512d y = _mm512_add_pd(hi, _mm512_fmadd_pd(hi, q, lo));
  __m512i sb = _mm512_add_epi64(_mm512_slli_epi64(_mm512_srli_epi64(kb, 4), 52),
                                _mm512_set1_epi64((int64_t)1023 << 52));
  return _mm512_mul_pd(y, _mm512_castsi512_pd(sb));
}

MQ_TGT_AVX512 static void rows_avx512(float *o, const float *x, float c, int64_t n) {
  const __m512d t[4] = {_mm512_loadu_pd(mq_vexp_hi), _mm512_loadu_pd(mq_vexp_hi + 8),
                        _mm512_loadu_pd(mq_vexp_lo), _mm512_loadu_pd(mq_vexp_lo + 8)};
  const __m512 cv = _mm512_set1_ps(c), big = _mm512_set1_ps(100.0f), tiny = _mm512_set1_ps(-150.0f);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_sub_ps(_mm512_loadu_ps(x + i), cv);
    __m256 lo = _mm512_cvtpd_ps(exp8(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), t));
    __m256 hi = _mm512_cvtpd_ps(
        exp8(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), t));
    __m512 y = _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(v, big, _CMP_GT_OQ), _mm512_set1_ps(INFINITY));
    y = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, tiny, _CMP_NLT_UQ), y); /* +0 where v < -150 */
    _mm512_storeu_ps(o + i, y);
  }
  rows_portable(o + i, x + i, c, n - i);
}
#endif

void mq_vexpf_rows(int cpu, float *o, const float *x, float c, int64_t n) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) rows_avx512(o, x, c, n);
  else if (cpu == MQ_CPU_AVX2) rows_avx2(o, x, c, n);
  else
#endif
    rows_portable(o, x, c, n);
}

void mq_vexpf_best(float *o, const float *x, float c, int64_t n) {
  if (n < 64) rows_portable(o, x, c, n); /* short: not worth asking the CPU */
  else mq_vexpf_rows(mq_cpu_best(), o, x, c, n);
}
