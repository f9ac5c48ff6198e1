/* half.c - float16 and bfloat16 to and from float32 by arrays (half.h),
 * on the state's CPU path (cpu.h).
 *
 * The result is half.h's scalar functions', bit for bit, on every path
 * (tests/unit/test_cpu_paths.c checks all 65536 half patterns widening and
 * a sweep of float32 patterns narrowing). The native instructions agree
 * with them on every finite value and infinity; where they differ, a
 * fix-up puts the portable bits back:
 * - vcvtph2ps (F16C's, here in its AVX-512F form) quiets a signalling
 *   float16 NaN (sets the top mantissa bit); half.h keeps the payload as
 *   it is, so NaN lanes are rebuilt by shifting the bits.
 * - vcvtps2ph keeps a NaN's top payload bits; half.h stores 0x7E00 with
 *   the sign.
 * - AVX512_BF16's vcvtneps2bf16 flushes a subnormal float32 to zero of its
 *   sign (it ignores MXCSR and assumes DAZ) and keeps a NaN's top payload
 *   bits; half.h rounds a subnormal like any other value (the integer
 *   add-and-shift) and stores 0xFFFF for every NaN (torch 1.13's tensor
 *   casts). A block of 32 (16 in the tail) with such a lane takes the
 *   integer rounding.
 * Without AVX512_BF16 the AVX-512 path rounds by that integer add too.
 *
 * No conversion reads the rounding mode a host could set in MXCSR: the
 * instructions name theirs (nearest even), the rest is integer arithmetic. */
#include "half.h"

#include "cpu.h"

static void widen_f16_portable(float *o, const uint16_t *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = mq_f16_to_f32(x[i]);
}
static void widen_bf16_portable(float *o, const uint16_t *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = mq_bf16_to_f32(x[i]);
}
static void narrow_f16_portable(uint16_t *o, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = mq_f32_to_f16(x[i]);
}
static void narrow_bf16_portable(uint16_t *o, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) o[i] = mq_f32_to_bf16(x[i]);
}

#if MQ_CPU_X86
#include <immintrin.h>

/* F16C on the AVX2 path (a state takes that path only if the CPU has it:
 * mq_cpu_state_best); the AVX-512 path needs none, its conversions are
 * AVX-512F's forms of F16C's instructions. */
#define MQ_TGT_F16C __attribute__((target("avx2,f16c")))
#define MQ_TGT_AVX2H __attribute__((target("avx2")))
#define MQ_TGT_AVX512H __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq")))
#define MQ_TGT_AVX512BF __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

/* --- AVX2 with F16C: eight at a time -------------------------------------- */

/* float16 bits h (in 32-bit lanes) as float32 bits by shifting: exact for
 * an infinity or a NaN, whose payload it keeps. */
MQ_TGT_F16C static inline __m256i f16_special_avx2(__m256i h) {
  __m256i sign = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
  __m256i man = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x3ff)), 13);
  return _mm256_or_si256(_mm256_or_si256(sign, man), _mm256_set1_epi32(0x7f800000));
}

MQ_TGT_F16C static void widen_f16_avx2(float *o, const uint16_t *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128((const __m128i *)(x + i));
    __m256 v = _mm256_cvtph_ps(h);
    __m128i e = _mm_and_si128(h, _mm_set1_epi16(0x7c00));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(e, _mm_set1_epi16(0x7c00)))) { /* an infinity or a NaN */
      __m256i h32 = _mm256_cvtepu16_epi32(h);
      __m256i sp = _mm256_cmpeq_epi32(_mm256_and_si256(h32, _mm256_set1_epi32(0x7c00)), _mm256_set1_epi32(0x7c00));
      v = _mm256_blendv_ps(v, _mm256_castsi256_ps(f16_special_avx2(h32)), _mm256_castsi256_ps(sp));
    }
    _mm256_storeu_ps(o + i, v);
  }
  widen_f16_portable(o + i, x + i, n - i);
}

MQ_TGT_AVX2H static void widen_bf16_avx2(float *o, const uint16_t *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i)));
    _mm256_storeu_si256((__m256i *)(o + i), _mm256_slli_epi32(h, 16));
  }
  widen_bf16_portable(o + i, x + i, n - i);
}

/* 32-bit lanes holding 16-bit values, packed to eight 16-bit lanes. */
MQ_TGT_AVX2H static inline __m128i pack16_avx2(__m256i v) {
  return _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

MQ_TGT_F16C static void narrow_f16_avx2(uint16_t *o, const float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(nan)) {
      __m256i s = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 16),
                                   _mm256_set1_epi32(0x8000));
      __m256i q = _mm256_or_si256(s, _mm256_set1_epi32(0x7e00));
      __m128i k = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(nan)),
                                  _mm256_extracti128_si256(_mm256_castps_si256(nan), 1));
      h = _mm_blendv_epi8(h, pack16_avx2(q), k);
    }
    _mm_storeu_si128((__m128i *)(o + i), h);
  }
  narrow_f16_portable(o + i, x + i, n - i);
}

/* half.h's bfloat16 rounding of eight float32 lanes: add 0x7FFF and the
 * kept part's lowest bit, keep the top 16 bits; a NaN is 0xFFFF. */
MQ_TGT_AVX2H static inline __m256i bf16_round_avx2(__m256 v) {
  __m256i b = _mm256_castps_si256(v);
  __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb), 16);
  /* 0xFFFF, not all ones: the pack saturates a negative lane to 0 */
  __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_or_si256(r, _mm256_srli_epi32(nan, 16));
}

MQ_TGT_AVX2H static void narrow_bf16_avx2(uint16_t *o, const float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(o + i), pack16_avx2(bf16_round_avx2(_mm256_loadu_ps(x + i))));
  narrow_bf16_portable(o + i, x + i, n - i);
}

/* --- AVX-512: sixteen at a time, the tail under a mask ---------------------- */

#define TAIL16(n, i) ((__mmask16)((n) - (i) >= 16 ? 0xffff : (1u << ((n) - (i))) - 1))

/* Sixteen float16 as float32: F16C's, with infinities and NaN by shifting
 * (a NaN keeps its payload, signalling or not). */
MQ_TGT_AVX512H static inline __m512 f16x16_avx512(__m256i h) {
  __m512 v = _mm512_cvtph_ps(h);
  __mmask16 sp = _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, _mm256_set1_epi16(0x7c00)),
                                         _mm256_set1_epi16(0x7c00));
  if (sp) {
    __m512i h32 = _mm512_cvtepu16_epi32(h);
    __m512i s = _mm512_slli_epi32(_mm512_and_si512(h32, _mm512_set1_epi32(0x8000)), 16);
    __m512i m = _mm512_slli_epi32(_mm512_and_si512(h32, _mm512_set1_epi32(0x3ff)), 13);
    __m512i f = _mm512_or_si512(_mm512_or_si512(s, m), _mm512_set1_epi32(0x7f800000));
    v = _mm512_mask_blend_ps(sp, v, _mm512_castsi512_ps(f));
  }
  return v;
}

MQ_TGT_AVX512H static inline __m512 bf16x16_avx512(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The loops: sixteen at a time through CONV, the tail under a mask. */
#define DEF_WIDEN16(NAME, CONV)                                                \
  MQ_TGT_AVX512H static void NAME(float *o, const uint16_t *x, int64_t n) {    \
    int64_t i = 0;                                                             \
    for (; i + 16 <= n; i += 16)                                               \
      _mm512_storeu_ps(o + i, CONV(_mm256_loadu_si256((const __m256i *)(x + i)))); \
    if (i < n) {                                                               \
      __mmask16 t = TAIL16(n, i);                                              \
      _mm512_mask_storeu_ps(o + i, t, CONV(_mm256_maskz_loadu_epi16(t, x + i))); \
    }                                                                          \
  }
#define DEF_NARROW16(NAME, CONV)                                               \
  MQ_TGT_AVX512H static void NAME(uint16_t *o, const float *x, int64_t n) {    \
    int64_t i = 0;                                                             \
    for (; i + 16 <= n; i += 16)                                               \
      _mm256_storeu_si256((__m256i *)(o + i), CONV(_mm512_loadu_ps(x + i)));   \
    if (i < n) {                                                               \
      __mmask16 t = TAIL16(n, i);                                              \
      _mm256_mask_storeu_epi16(o + i, t, CONV(_mm512_maskz_loadu_ps(t, x + i))); \
    }                                                                          \
  }
DEF_WIDEN16(widen_f16_avx512, f16x16_avx512)
DEF_WIDEN16(widen_bf16_avx512, bf16x16_avx512)

/* Sixteen float32 as float16: F16C's, to nearest even; a NaN 0x7E00 with
 * its sign. */
MQ_TGT_AVX512H static inline __m256i f16_of_avx512(__m512 v) {
  __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  if (nan) {
    __m512i s = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(v), 16),
                                 _mm512_set1_epi32(0x8000));
    __m256i q = _mm512_cvtepi32_epi16(_mm512_or_si512(s, _mm512_set1_epi32(0x7e00)));
    h = _mm256_mask_blend_epi16(nan, h, q);
  }
  return h;
}

DEF_NARROW16(narrow_f16_avx512, f16_of_avx512)

/* half.h's bfloat16 rounding of sixteen lanes by integer add (NaN: 0xFFFF). */
MQ_TGT_AVX512H static inline __m256i bf16_round_avx512(__m512 v) {
  __m512i b = _mm512_castps_si512(v);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), lsb), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(0xffff));
  return _mm512_cvtepi32_epi16(r);
}

DEF_NARROW16(narrow_bf16_avx512_int, bf16_round_avx512)

/* Lanes of v that are a subnormal (|x| - 1 below 0x7FFFFF, unsigned) or
 * a NaN (|x| above 0x7F800000): where AVX512_BF16's rounding differs. */
MQ_TGT_AVX512H static inline __mmask16 bf16_odd_avx512(__m512 v) {
  __m512i a = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff));
  return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7fffff)) |
         _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7f800000));
}

/* By AVX512_BF16's instruction, 32 at a time; a block with a subnormal or
 * a NaN (where it differs from half.h, above) by the integer rounding. */
MQ_TGT_AVX512BF static void narrow_bf16_avx512_native(uint16_t *o, const float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 lo = _mm512_loadu_ps(x + i), hi = _mm512_loadu_ps(x + i + 16);
    if (bf16_odd_avx512(lo) | bf16_odd_avx512(hi)) {
      _mm256_storeu_si256((__m256i *)(o + i), bf16_round_avx512(lo));
      _mm256_storeu_si256((__m256i *)(o + i + 16), bf16_round_avx512(hi));
    } else
      _mm512_storeu_si512(o + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
  for (; i < n; i += 16) {
    __mmask16 t = TAIL16(n, i);
    __m512 v = _mm512_maskz_loadu_ps(t, x + i);
    __m256i h = bf16_odd_avx512(v) ? bf16_round_avx512(v) : (__m256i)_mm512_cvtneps_pbh(v);
    _mm256_mask_storeu_epi16(o + i, t, h);
  }
}
#endif

/* --- the entry points ------------------------------------------------------ */

void mq_half_widen(int cpu, bool bf16, float *o, const uint16_t *x, int64_t n) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) {
    (bf16 ? widen_bf16_avx512 : widen_f16_avx512)(o, x, n);
    return;
  }
  if (cpu == MQ_CPU_AVX2) {
    (bf16 ? widen_bf16_avx2 : widen_f16_avx2)(o, x, n);
    return;
  }
#endif
  (void)cpu;
  (bf16 ? widen_bf16_portable : widen_f16_portable)(o, x, n);
}

void mq_half_narrow_on(int cpu, bool native, bool bf16, uint16_t *o, const float *x, int64_t n) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) {
    if (!bf16) narrow_f16_avx512(o, x, n);
    else if (native) narrow_bf16_avx512_native(o, x, n);
    else narrow_bf16_avx512_int(o, x, n);
    return;
  }
  if (cpu == MQ_CPU_AVX2) {
    (bf16 ? narrow_bf16_avx2 : narrow_f16_avx2)(o, x, n);
    return;
  }
#endif
  (void)cpu, (void)native;
  (bf16 ? narrow_bf16_portable : narrow_f16_portable)(o, x, n);
}

bool mq_cpu_has_bf16(void) {
#if MQ_CPU_X86
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

void mq_half_narrow(int cpu, bool bf16, uint16_t *o, const float *x, int64_t n) {
  mq_half_narrow_on(cpu, bf16 && cpu == MQ_CPU_AVX512 && mq_cpu_has_bf16(), bf16, o, x, n);
}
