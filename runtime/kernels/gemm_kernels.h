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

typedef struct mq_gemm_kernel {
  mq_gemm_fn fn;
  int64_t mr, nr;
} mq_gemm_kernel;

/* The largest mr * nr of any kernel (an edge tile's buffer). */
#define MQ_GEMM_MAX_TILE (12 * 32)

/* The kernel of CPU path [cpu] for float64 ([f64]) or float32. */
MQ_INTERNAL mq_gemm_kernel mq_gemm_kernel_for(int cpu, bool f64);

#endif
