/* vexp.c - mq_vexpf over rows, one loop per CPU path (vexp.h).
 *
 * Why the paths agree: mq_vexpf is a fixed sequence of IEEE double
 * operations (conversions, adds, multiplies, integer shifts and adds on
 * the bits; no FMA: gcc's -std=c11 turns contraction off, clang is told
 * in vexp.h), each rounded the same whether it runs alone or four or
 * eight to a register, so the portable (SSE2), AVX2 and AVX-512 loops
 * below, which are the same C built for three targets, give the same
 * bits. tests/unit/test_vexp.c compares them.
 *
 * Why it is (nearly) correctly rounded: the double result carries a
 * relative error below about 2^-52 (r is exact but for one rounding, the
 * series' rounding errors are scaled by |r| <= 0.35, and 1 + q rounds
 * once), and a float32 has 24 bits, so the final rounding to float32 goes
 * the wrong way only when e^x lies within about 2^-52 of a midpoint
 * between two float32s. tools/vexp_check.c compares every one of the 2^32
 * inputs with the correctly rounded result (from glibc's double exp,
 * settled by expl near midpoints) and with glibc's expf: see
 * docs/PERFORMANCE.md, "A vectorized float32 exp (issue 16)", for what
 * it found. */
#include "kernels.h" /* first: gcc's vectorizer cost model, before mq_vexpf */
#include "cpu.h"
#include "vexp.h"

#define VEXP_ROWS(NAME, ATTR)                                                  \
  ATTR void NAME(float *o, const float *x, float c, int64_t n) {               \
    for (int64_t i = 0; i < n; i++) o[i] = mq_vexpf(x[i] - c);                 \
  }
VEXP_ROWS(rows_portable, static)
#if MQ_CPU_X86
VEXP_ROWS(rows_avx2, MQ_TGT_AVX2 static)
VEXP_ROWS(rows_avx512, MQ_TGT_AVX512 static)
#endif

void mq_vexpf_rows(int cpu, float *o, const float *x, float c, int64_t n) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) rows_avx512(o, x, c, n);
  else if (cpu == MQ_CPU_AVX2) rows_avx2(o, x, c, n);
  else
#endif
    rows_portable(o, x, c, n);
}

/* Picked once, at load time (as MQ_WIDE, kernels.h): for callers without
 * a state at hand, such as elementwise kernels on a worker thread. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define VEXP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VEXP_CLONES
#endif
VEXP_ROWS(mq_vexpf_best, VEXP_CLONES)
