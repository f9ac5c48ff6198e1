/* dot_simd.h - the AVX2 and AVX-512 loops of a masked float32 dot product
 * in sixteen double lanes (dot_simd.c), for softmax's backward
 * (backward_ops.c): entry i goes to lane i % 16, as in its portable loop,
 * and each lane does the same IEEE operations, so every path gives the
 * same bits (cpu.h). */
#ifndef MQ_DOT_SIMD_H
#define MQ_DOT_SIMD_H

#include "cpu.h"

#if MQ_CPU_X86
/* d[i % 16] += (double)a[i] * (double)b[i] for i in [0, n) (n a multiple
 * of 16), in order of i, where m1[i] & m2[i] (bytes 0 or 1); elsewhere the
 * lane adds +0 * +0, as the portable loop's selects to +0 give. Returns
 * whether any entry was valid. */
MQ_INTERNAL bool mq_simd_fdot_f32_avx2(const float *a, const float *b, const uint8_t *m1,
                                       const uint8_t *m2, int64_t n, double *d);
MQ_INTERNAL bool mq_simd_fdot_f32_avx512(const float *a, const float *b, const uint8_t *m1,
                                         const uint8_t *m2, int64_t n, double *d);
#endif

#endif
