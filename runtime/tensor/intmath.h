/* intmath.h - int64 arithmetic as masq defines it, for the tensor kernels
 * and the VM's number fast path alike: wrapping like torch (two's
 * complement, never UB), Python's floor division and modulo. Callers
 * check for a zero divisor themselves where it is an error; here it
 * yields 0 so masked-out slots can run through harmlessly. */
#ifndef MQ_INTMATH_H
#define MQ_INTMATH_H

#include <stdbool.h>
#include <stdint.h>

#define WADD(x, y) ((int64_t)((uint64_t)(x) + (uint64_t)(y)))
#define WSUB(x, y) ((int64_t)((uint64_t)(x) - (uint64_t)(y)))
#define WMUL(x, y) ((int64_t)((uint64_t)(x) * (uint64_t)(y)))

/* x ** y for y >= 0 by squaring, wrapping on overflow like torch */
static inline int64_t mq_ipow(int64_t x, int64_t y) {
  uint64_t r = 1, b = (uint64_t)x;
  while (y > 0) {
    if (y & 1) r *= b;
    b *= b;
    y >>= 1;
  }
  return (int64_t)r;
}

/* x ** y for y >= 0, or false when the result does not fit an int64 (for
 * the VM's plain ints, where overflow is an error rather than a wrap). */
static inline bool mq_ipow_ok(int64_t x, int64_t y, int64_t *out) {
  int64_t r = 1, b = x;
  bool b_ok = true; /* b holds x ** (2 ** k) exactly */
  while (y > 0) {
    if (y & 1) {
      if (!b_ok || __builtin_mul_overflow(r, b, &r)) return false;
    }
    y >>= 1;
    if (y > 0 && b_ok && __builtin_mul_overflow(b, b, &b)) b_ok = false;
  }
  *out = r;
  return true;
}

/* INT64_MIN / -1 overflows in C; as wrapping arithmetic it is INT64_MIN. */
static inline int64_t mq_idiv_trunc(int64_t x, int64_t y) {
  if (y == 0) return 0;
  if (y == -1) return WSUB(0, x);
  return x / y;
}
static inline int64_t mq_imod_trunc(int64_t x, int64_t y) {
  return y == 0 || y == -1 ? 0 : x % y;
}
static inline int64_t mq_idiv_floor(int64_t x, int64_t y) {
  int64_t q = mq_idiv_trunc(x, y), r = mq_imod_trunc(x, y);
  return r != 0 && ((r < 0) != (y < 0)) ? q - 1 : q;
}
static inline int64_t mq_imod_floor(int64_t x, int64_t y) {
  int64_t r = mq_imod_trunc(x, y);
  return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

#endif
