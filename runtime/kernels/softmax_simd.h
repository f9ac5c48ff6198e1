/* softmax_simd.h - the AVX2 and AVX-512 loops of float32 softmax's
 * backward (softmax_simd.c; backward_ops.c has the portable ones): the
 * slice's sum(g y) in sixteen double lanes, entry i in lane i % 16, and
 * the result y (g - s). Each lane or entry does the same IEEE operations
 * as the portable loop, so every path gives the same bits (cpu.h). */
#ifndef MQ_SOFTMAX_SIMD_H
#define MQ_SOFTMAX_SIMD_H

#include "../tensor/cpu.h"

#if MQ_CPU_X86
/* d[i % 16] += (double)a[i] * (double)b[i] for i in [0, n) (n a multiple
 * of 16), in order of i, where m1[i] & m2[i] (bytes 0 or 1); elsewhere the
 * lane adds +0 * +0, as the portable loop's selects to +0 give. Returns
 * whether any entry was valid. */
MQ_INTERNAL bool mq_simd_fdot_f32_avx2(const float *a, const float *b, const uint8_t *m1,
                                       const uint8_t *m2, int64_t n, double *d);
MQ_INTERNAL bool mq_simd_fdot_f32_avx512(const float *a, const float *b, const uint8_t *m1,
                                         const uint8_t *m2, int64_t n, double *d);
/* o[i] = (float)((double)y[i] * ((double)g[i] - s)) where xm[i], with g[i]
 * taken as +0 where gm[i] is 0; +0 where xm[i] is 0 (n a multiple of 16). */
MQ_INTERNAL void mq_simd_smgrad_f32_avx2(const float *g, const float *y, const uint8_t *xm,
                                         const uint8_t *gm, int64_t n, double s, float *o);
MQ_INTERNAL void mq_simd_smgrad_f32_avx512(const float *g, const float *y, const uint8_t *xm,
                                           const uint8_t *gm, int64_t n, double s, float *o);
#endif

#endif
