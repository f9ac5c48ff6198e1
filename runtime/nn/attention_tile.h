/* attention_tile.h - the vector kernels of fused attention (attention.c):
 * its float64 sums several rows at a time, and on the AVX-512 path the
 * scaling-and-max of a row and the gather of transposed keys. Each gives
 * the bits of attention.c's plain loops.
 *
 * out[i * os + j] = sum over t < n of x[i * xs + t] * rows[r(t) * w + j]
 * for i < nr, j < w, with r(t) = ks[t] (ks NULL: r(t) = t). Each sum is
 * one chain of fma in t order from 0, exactly as attention.c's dot and
 * matmul.c compute it for float32 operands widened to float64 (their
 * products are exact, so fma rounds where a multiply then an add would:
 * the same bits). Only the blocking differs: a tile of up to 6 rows by
 * 32 columns lives in registers, every loaded row segment serves all its
 * rows, and the rows are taken a block of keys at a time, so that block
 * (16 KB) stays in L1 while all nr rows read it; a partial sum goes to
 * out between key blocks and comes back exactly. */
#ifndef MQ_ATTENTION_TILE_H
#define MQ_ATTENTION_TILE_H

#include "../../core/common.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether mq_tile_sums runs on CPU path [cpu] (runtime/tensor/cpu.h: AVX2 with
 * FMA, or AVX-512); the caller's plain loops are the portable path. */
MQ_INTERNAL bool mq_tile_ok(int cpu);

/* The sums above on path [cpu] (mq_tile_ok(cpu)); only for products that
 * are exact in float64 (float32 operands). */
MQ_INTERNAL void mq_tile_sums(int cpu, const double *x, int64_t xs, const int64_t *ks, int64_t n,
                              int64_t nr, const double *rows, int64_t w, double *out, int64_t os);

/* srow[j] = (float)acc[j] / c (mul: * c) for j < n (n > 0), and their
 * max: the max of the values, NAN (canonical) if any is NaN; in AVX-512
 * registers (cpu MQ_CPU_AVX512 only: false otherwise, nothing done). */
MQ_INTERNAL bool mq_tile_divmax_f32(int cpu, const double *acc, float c, bool mul, int64_t n,
                                    float *srow, float *mx);

/* kc[k * nv + jj] = b[cols[jj] * sj + k] (float32 widened, exact) for
 * k < K, jj < nv: the key columns of b = transpose(keys) (b's k stride
 * 1) laid out for mq_tile_sums, 8 x 8 blocks transposed in AVX-512
 * registers (cpu MQ_CPU_AVX512 only: false otherwise, nothing done). */
MQ_INTERNAL bool mq_tile_gather_t(int cpu, const float *b, int64_t sj, const int64_t *cols,
                                  int64_t nv, int64_t K, double *kc);

#endif
