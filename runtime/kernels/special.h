/* special.h - the special functions libm lacks, and the constants the op
 * lists' element expressions and derivatives use (ops_unary.h).
 *
 * One copy of each, in double: the forward kernels (unary.c, float32
 * rounding the result) and the derivatives (backward.c) call the same
 * functions, so digamma(x) and lgamma's gradient at x are the same number.
 * Each follows torch's definition where torch has one (calc_digamma,
 * calc_trigamma, calc_i0). */
#ifndef MQ_SPECIAL_H
#define MQ_SPECIAL_H

#include "../../core/common.h"

#define MQ_PI 3.14159265358979323846
#define MQ_LN2 0.69314718055994530942
#define MQ_LN10 2.30258509299404568402
/* 2 / sqrt(pi): d/dx erf(x) = 2/sqrt(pi) exp(-x^2) */
#define MQ_TWO_SQRTPI 1.12837916709551257390

/* The inverse error function: inf at 1, -inf at -1, NaN outside [-1, 1]. */
MQ_INTERNAL double mq_erfinv(double y);
/* The logarithmic derivative of the gamma function: NaN at the poles (the
 * negative integers), -inf at +0 and inf at -0. */
MQ_INTERNAL double mq_digamma(double x);
/* Its derivative: inf at 0 and the negative integers. */
MQ_INTERNAL double mq_trigamma(double x);
/* The modified Bessel functions of the first kind, orders 0 and 1 (I1 is
 * d/dx I0). */
MQ_INTERNAL double mq_i0(double x);
MQ_INTERNAL double mq_i1(double x);

#endif
