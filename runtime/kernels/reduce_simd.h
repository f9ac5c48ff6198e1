/* reduce_simd.h - the AVX2 and AVX-512 inner loops of the float32
 * reductions (reduce_simd.c), which reduce_kernels.c and stats.c call on
 * those CPU paths (cpu.h) in place of their portable loops, with the same
 * lanes and hence the same bits. Each folds whole blocks only: x[0, n)
 * with n a multiple of 16 (4 for sqdev); the caller folds the tail and
 * combines the lanes. A mask [m] (NULL: all valid) holds bytes 0 or 1. */
#ifndef MQ_REDUCE_SIMD_H
#define MQ_REDUCE_SIMD_H

#include "../tensor/cpu.h"

#if MQ_CPU_X86
/* d[j] += x[i] for every i with i % 16 == j, in order of i, a masked-out
 * entry counting as +0.0; returns the number of valid entries (0 when m
 * is NULL). */
MQ_INTERNAL int64_t mq_simd_fsum_f32_avx2(const float *x, const uint8_t *m, int64_t n, double *d);
MQ_INTERNAL int64_t mq_simd_fsum_f32_avx512(const float *x, const uint8_t *m, int64_t n, double *d);
/* The same from float16 ([bf16]: bfloat16) bits, each entry widened to
 * float32 in the registers first: the sums of the widened values (a
 * float16 signalling NaN comes out quiet: a NaN all the same). AVX2's
 * float16 takes F16C (a state's AVX2 path has it: cpu.h). */
MQ_INTERNAL int64_t mq_simd_fsum_h16_avx2(const uint16_t *x, bool bf16, const uint8_t *m, int64_t n,
                                          double *d);
MQ_INTERNAL int64_t mq_simd_fsum_h16_avx512(const uint16_t *x, bool bf16, const uint8_t *m, int64_t n,
                                            double *d);
/* r[j] = max(r[j], x[i]) likewise with the compare v > r ? v : r (min:
 * v < r), a masked-out entry counting as -inf (min: +inf); *nan set to 1
 * if an entry read (masked-out ones are not) is NaN. Returns the number
 * of valid entries. */
MQ_INTERNAL int64_t mq_simd_fmax_f32_avx2(const float *x, const uint8_t *m, int64_t n, float *r, int32_t *nan);
MQ_INTERNAL int64_t mq_simd_fmin_f32_avx2(const float *x, const uint8_t *m, int64_t n, float *r, int32_t *nan);
MQ_INTERNAL int64_t mq_simd_fmax_f32_avx512(const float *x, const uint8_t *m, int64_t n, float *r, int32_t *nan);
MQ_INTERNAL int64_t mq_simd_fmin_f32_avx512(const float *x, const uint8_t *m, int64_t n, float *r, int32_t *nan);
/* l[j] += d * d for every i with i % 4 == j, d = (double)x[i] - mean, or
 * +0.0 where m is 0 (var and std; both paths AVX2). */
MQ_INTERNAL void mq_simd_sqdev_f32_avx2(const float *x, const uint8_t *m, int64_t n, double mean, double *l);
#endif

#endif
