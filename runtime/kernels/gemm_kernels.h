/* gemm_kernels.h - the micro-kernels of the matrix products (gemm.c): for
 * each CPU path (cpu.h) and compute type, an MR x NR tile of C from packed
 * panels, each entry the fma chain gemm.h defines. */
#ifndef MQ_GEMM_KERNELS_H
#define MQ_GEMM_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../core/state.h"

/* c[r * ldc + j] (r < mr, j < nr) = its chain over kc steps of a[k * mr +
 * r] * b[k * nr + j], from c's own value when [load], else from +0. a and
 * b are 64-byte aligned packed panels (gemm.c). */
typedef void (*mq_gemm_fn)(int64_t kc, const void *a, const void *b, void *c, int64_t ldc,
                           int load);

/* The same with A read in place: row r's step k at a[r * ars + k * acs]
 * (A all valid where read, its rows or its columns contiguous: no packing
 * of A). */
typedef void (*mq_gemm_dfn)(int64_t kc, const void *a, int64_t ars, int64_t acs, const void *b,
                            void *c, int64_t ldc, int load);

typedef struct mq_gemm_kernel {
  mq_gemm_fn fn;
  int64_t mr, nr;
  mq_gemm_dfn direct; /* or NULL */
} mq_gemm_kernel;

/* The largest mr * nr of any kernel (an edge tile's buffer). */
#define MQ_GEMM_MAX_TILE (12 * 32)

/* What a kernel multiplies: float32 or float64 values, or bfloat16 pairs
 * (a 32-bit word holds elements k and k + 1 of a row of A or a column of
 * B, k even, k in the low half; the sums are float32). */
typedef enum mq_gemm_kind { MQ_GEMM_F32, MQ_GEMM_F64, MQ_GEMM_BF16 } mq_gemm_kind;

/* The kernel of CPU path [cpu] for [kind]. */
MQ_INTERNAL mq_gemm_kernel mq_gemm_kernel_for(int cpu, mq_gemm_kind kind);

/* Few rows (n <= 4) of a float32 product straight from B's rows, for
 * results too short for the MR-high tiles (a^T @ g with a of two
 * columns): c[i, j] (row stride ldc) for i < n, j < w, the chain over k <
 * kc of a(i, k) b[k, j] from +0 (or c's value, [load]); a(i, k) at a[i ars
 * + k acs], 0 where am[i amrs + k amcs] is 0 (am NULL: all valid); b's row
 * k at b + k ldb, contiguous, 0 where bm[k bmrs + j] is 0. False (nothing
 * done) on a path without AVX-512: the tiles then do it. */
MQ_INTERNAL bool mq_gemm_few_rows_f32(int cpu, int64_t n, int64_t w, int64_t kc, const float *a,
                                      int64_t ars, int64_t acs, const uint8_t *am, int64_t amrs,
                                      int64_t amcs, const float *b, int64_t ldb, const uint8_t *bm,
                                      int64_t bmrs, float *c, int64_t ldc, int load);

/* One step of a bfloat16 chain, the definition every path computes: the
 * pair's odd element first, each a fused multiply-add rounded to float32,
 * with bfloat16 subnormals read as zero and float32 subnormal results
 * flushed to zero (what AVX-512 BF16's vdpbf16ps does: checked on 2*10^7
 * random words, tests/unit/test_cpu_paths.c checks it on every path). */
MQ_INTERNAL float mq_gemm_bf16_step(float acc, uint32_t a, uint32_t b);

#endif
