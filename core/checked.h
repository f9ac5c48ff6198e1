/* checked.h - checked arithmetic for every size, stride, offset and count.
 *
 * Sizes come from scripts and files, so any product or sum of them may
 * overflow. Each helper returns the exact result or raises "size overflow"
 * (MASQ_ERR_RUNTIME) with what was being computed; the _ok forms return
 * false instead, for code that must clean up or word its own error first.
 * C11 has no ckd_add (C23 does); GCC and clang's builtins are the same
 * thing and compile to one flag test. */
#ifndef MQ_CHECKED_H
#define MQ_CHECKED_H

#include "state.h"

static inline bool mq_add_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool mq_mul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool mq_zmul_ok(size_t a, size_t b, size_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* [what] names the quantity in the message: "size overflow in <what>". */
static inline int64_t mq_ck_add(mq_state *S, int64_t a, int64_t b, const char *what) {
  int64_t r;
  if (!mq_add_ok(a, b, &r)) mq_error(S, "size overflow in %s", what);
  return r;
}
static inline size_t mq_ck_zadd(mq_state *S, size_t a, size_t b, const char *what) {
  size_t r;
  if (__builtin_add_overflow(a, b, &r)) mq_error(S, "size overflow in %s", what);
  return r;
}
static inline size_t mq_ck_zmul(mq_state *S, size_t a, size_t b, const char *what) {
  size_t r;
  if (!mq_zmul_ok(a, b, &r)) mq_error(S, "size overflow in %s", what);
  return r;
}

/* The most entries a list holds (its length is an int). */
#define MQ_LIST_MAX INT32_MAX

/* ceil(a / b) for a >= 0, b > 0, without the a + b - 1 that overflows. */
static inline int64_t mq_ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* How many of start, start + step, ... lie before stop (step != 0), as
 * range() and arange() count: the distance is taken in uint64 because
 * stop - start may not fit an int64; the count may not either. */
static inline uint64_t mq_range_count(int64_t start, int64_t stop, int64_t step) {
  uint64_t dist = step > 0 ? (stop > start ? (uint64_t)stop - (uint64_t)start : 0)
                           : (start > stop ? (uint64_t)start - (uint64_t)stop : 0);
  uint64_t mag = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
  return dist / mag + (dist % mag != 0);
}

#endif
