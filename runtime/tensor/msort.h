/* msort.h - the runtime's one sort: a stable bottom-up merge sort,
 * O(n log n) comparisons whatever the input, iterative (no recursion),
 * that polls the interrupt hook as it moves items and allocates nothing
 * itself (the caller passes a buffer of n items, from mq_scratch).
 *
 * Why not the C library's qsort: glibc's allocates its own buffer with
 * malloc, outside the state's allocator and memory limit (and a failed
 * malloc there is not masq's error to report), it never polls, so a
 * sort of 10^8 entries cannot be stopped, and it is not stable, so the
 * order of equal keys (which duplicate entries of a sparse tensor get
 * summed in, which of -0.0 and 0.0 comes first) depended on the C
 * library.
 *
 * MQ_DEF_MSORT(NAME, T, CTX, BEFORE) defines
 *   static T *NAME(mq_state *S, T *a, T *tmp, int64_t n, CTX ctx)
 * which sorts a[0..n) by BEFORE(x, y, ctx) - x must come before y, a
 * strict order on pointers to items - equal items keeping their order,
 * and returns whichever of a and tmp holds the result. */
#ifndef MQ_MSORT_H
#define MQ_MSORT_H

#include "../../core/state.h"

/* Items moved between two polls of the interrupt hook. */
#define MQ_MSORT_POLL ((int64_t)1 << 16)

#define MQ_DEF_MSORT(NAME, T, CTX, BEFORE)                                     \
  static T *NAME(mq_state *S, T *a, T *tmp, int64_t n, CTX ctx) {              \
    (void)ctx;                                                                 \
    int64_t moved = 0;                                                         \
    for (int64_t w = 1; w < n; w = w > n / 2 ? n : 2 * w) {                    \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                              \
        int64_t mid = lo + w < n ? lo + w : n, hi = n - lo > 2 * w ? lo + 2 * w : n; \
        int64_t i = lo, j = mid, o = lo;                                       \
        while (i < mid && j < hi) {                                            \
          tmp[o++] = BEFORE(&a[j], &a[i], ctx) ? a[j++] : a[i++];              \
          if (++moved == MQ_MSORT_POLL) { /* the last merges are n long */     \
            moved = 0;                                                         \
            mq_check_interrupt(S);                                             \
          }                                                                    \
        }                                                                      \
        while (i < mid) tmp[o++] = a[i++];                                     \
        while (j < hi) tmp[o++] = a[j++];                                      \
      }                                                                        \
      T *u = a;                                                                \
      a = tmp;                                                                 \
      tmp = u;                                                                 \
    }                                                                          \
    return a;                                                                  \
  }

#endif
