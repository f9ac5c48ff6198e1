/* exp_ref.h - the correctly rounded float32 e^x, the reference of
 * tests/unit/test_vexp.c and tools/vexp_check.c: glibc's double exp (error
 * below 1 ulp of double) rounded to float32, except where that double lies
 * within 2^-40 (relative) of a midpoint between two float32s, where long
 * double expl (64-bit significand) decides. *unsettled counts the inputs
 * that even expl puts within 2^-60 of a midpoint (none are known). */
#ifndef MQ_TEST_EXP_REF_H
#define MQ_TEST_EXP_REF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../runtime/tensor/half.h"

/* How far v (> 0) lies from the nearest midpoint between the float32s
 * around it, relative to v (1 when it rounds to 0 or inf); v rounded to
 * float32 in *f. */
static inline double ref_midpoint_gap(long double v, float *f) {
  *f = (float)v;
  if (*f == 0 || isinf(*f)) return 1;
  uint32_t b = mq_f32_bits(*f);
  long double here = *f, dn = mq_bits_f32(b - 1), up = mq_bits_f32(b + 1);
  if (isinf((float)up)) up = here + (here - dn);
  long double g1 = fabsl(v - (here + up) / 2), g2 = fabsl(v - (here + dn) / 2);
  return (double)((g1 < g2 ? g1 : g2) / v);
}

/* Correctly rounded e^x for a float32 x that is not NaN; *near counts the
 * inputs expl had to settle. */
static inline float ref_exp(float x, long *near, long *unsettled) {
  float f;
  double d = exp((double)x);
  if (d == 0 || isinf(d) || ref_midpoint_gap(d, &f) > 0x1p-40) return (float)d;
  (*near)++;
  if (ref_midpoint_gap(expl((long double)x), &f) <= 0x1p-60) (*unsettled)++;
  return f;
}

#endif
