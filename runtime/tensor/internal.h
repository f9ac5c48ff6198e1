/* internal.h - helpers shared by the runtime's files (not for the layers
 * above): the kernels' compiler settings (MQ_WIDE), conversion and where
 * kernels, making tensor objects, and polling in long loops. */
#ifndef MQ_INTERNAL_H
#define MQ_INTERNAL_H

#include <math.h>
#include <string.h>

#include "tensor.h"
#include "tape.h" /* the recording hooks every forward op calls */

#if defined(__GNUC__) && !defined(__clang__)
/* gcc's -O2 vectorizes only loops whose trip count is a known multiple of
 * the vector width; our kernels run over runtime lengths, so the files that
 * hold kernels (all include this header) ask for the "cheap" model, which
 * adds a scalar epilogue and alias checks. clang vectorizes these at -O2. */
#pragma GCC optimize("vect-cost-model=cheap")
/* glibc's libmvec has SIMD variants of exp, log and pow, but they round
 * differently from the scalar functions (a few ulp), so a vectorized loop
 * would give a value a different result in the vector body than in the
 * scalar tail, or in a fused block than op by op. They stay undeclared:
 * every path calls the same scalar function and gets the same bits. */
#endif

/* MQ_WIDE on a kernel: also build it for AVX2, picked at load time when
 * the CPU has it (gcc and clang's function multiversioning). AVX2 alone,
 * not FMA: the same IEEE multiplies and adds, two or four at a time
 * instead of one or two, so every CPU gets the same bits. Not under
 * ThreadSanitizer, whose runtime is not up yet when the loader runs the
 * clones' resolvers, nor in the coverage build (MQ_NO_WIDE, `make
 * coverage`), which counts the branches of the source once, not once per
 * clone when this CPU runs only one of them. */
#if defined(__SANITIZE_THREAD__) /* gcc */
#define MQ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) /* clang */
#define MQ_TSAN 1
#endif
#endif
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(MQ_TSAN) && \
    !defined(MQ_NO_WIDE)
#define MQ_WIDE __attribute__((target_clones("avx2", "default")))
#else
#define MQ_WIDE
#endif

/* The span [*lo, *hi) from the first nonzero byte of m[0, n) to the last
 * (all of it when m is NULL); false when there is none (*lo == *hi).
 * Kernels skip what lies outside: a padded row's tail. */
static inline bool mq_valid_span(const uint8_t *m, int64_t n, int64_t *lo, int64_t *hi) {
  int64_t a = 0, b = n;
  if (m) { /* masked-out runs eight bytes at a time from both ends */
    for (uint64_t w; a + 8 <= n && (memcpy(&w, m + a, 8), w == 0);) a += 8;
    while (a < n && !m[a]) a++;
    for (uint64_t w; b - 8 >= a && (memcpy(&w, m + b - 8, 8), w == 0);) b -= 8;
    while (b > a && !m[b - 1]) b--;
  }
  *lo = a, *hi = b;
  return a < b;
}

/* float -> int64 the way x86 does it (NaN and out of range give INT64_MIN),
 * without the undefined behaviour of a plain C cast. */
static inline int64_t mq_f2i(double x) {
  if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return INT64_MIN;
  return (int64_t)x;
}

/* Writes src converted to dst's dtype into dst (same shape, any strides),
 * reading each element once; a bool byte other than 0 reads as 1
 * (convert.c). */
MQ_INTERNAL void mq_kernel_convert(mq_state *S, mq_tensor *dst, mq_tensor *src);
/* out = cond ? a : b for one dtype; all four of the same shape; cond bool,
 * a and b of out's dtype. */
MQ_INTERNAL void mq_kernel_where(mq_state *S, mq_tensor *out, mq_tensor *cond, mq_tensor *a,
                                 mq_tensor *b);

/* A tensor object with no storage yet, owned by the pool. */
MQ_INTERNAL mq_tensor *mq_tensor_alloc(mq_state *S, mq_dtype dt, int ndim, const int64_t *shape);
/* Sets contiguous row-major strides from t->shape. */
MQ_INTERNAL void mq_tensor_set_contiguous(mq_tensor *t);
MQ_INTERNAL bool mq_tensor_same_shape(const mq_tensor *a, const mq_tensor *b);
/* The same elements of the same storage (so, for masks, the same mask). */
MQ_INTERNAL bool mq_tensor_same_view(const mq_tensor *a, const mq_tensor *b);

/* How often long kernels poll for interrupts (elements). */
#define MQ_POLL_ELEMS (1 << 16)

/* For a plain loop over elements, k = 0, 1, ...: polls for an interrupt
 * at every MQ_POLL_ELEMS-th step (mq_poll's hook call comes only every
 * 1024 calls, too seldom for a loop step that is one element). */
static inline void mq_poll_at(mq_state *S, int64_t k) {
  if ((k & (MQ_POLL_ELEMS - 1)) == MQ_POLL_ELEMS - 1) mq_check_interrupt(S);
}

#endif
