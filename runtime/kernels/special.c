/* special.c - erfinv, digamma, trigamma and the Bessel functions I0 and I1
 * (special.h), in double. */
#include "special.h"

#include <math.h>

/* Inverse error function: Giles' single-precision approximation ("Approximating
 * the erfinv function", 2010) refined by two Newton steps on erf. */
double mq_erfinv(double y) {
  if (!(y > -1 && y < 1)) {
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    return NAN;
  }
  double w = -log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    x = 3.43273939e-07 + x * w;
    x = -3.5233877e-06 + x * w;
    x = -4.39150654e-06 + x * w;
    x = 0.00021858087 + x * w;
    x = -0.00125372503 + x * w;
    x = -0.00417768164 + x * w;
    x = 0.246640727 + x * w;
    x = 1.50140941 + x * w;
  } else {
    w = sqrt(w) - 3.0;
    x = -0.000200214257;
    x = 0.000100950558 + x * w;
    x = 0.00134934322 + x * w;
    x = -0.00367342844 + x * w;
    x = 0.00573950773 + x * w;
    x = -0.0076224613 + x * w;
    x = 0.00943887047 + x * w;
    x = 1.00167406 + x * w;
    x = 2.83297682 + x * w;
  }
  x *= y;
  for (int k = 0; k < 2; k++) /* d/dx erf(x) = 2/sqrt(pi) exp(-x^2) */
    x -= (erf(x) - y) / (MQ_TWO_SQRTPI * exp(-x * x));
  return x;
}

/* Digamma, as torch's calc_digamma: reflection for negative x, recurrence
 * up to x >= 10, then the asymptotic series. */
double mq_digamma(double x) {
  if (x == 0) return copysign(INFINITY, -x);
  double result = 0;
  if (x < 0) {
    if (x == trunc(x)) return NAN; /* poles at the negative integers */
    double q, r = modf(x, &q);
    result = -MQ_PI / tan(MQ_PI * r);
    x = 1 - x;
  }
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  if (x == 10) return result + 2.25175258906672110764;
  static const double A[] = {8.33333333333333333333E-2, -2.10927960927960927961E-2,
                             7.57575757575757575758E-3, -4.16666666666666666667E-3,
                             3.96825396825396825397E-3, -8.33333333333333333333E-3,
                             8.33333333333333333333E-2};
  double y = 0;
  if (x < 1.0e17) {
    double z = 1 / (x * x), p = 0;
    for (int i = 0; i < 7; i++) p = p * z + A[i];
    y = z * p;
  }
  return result + log(x) - 0.5 / x - y;
}

/* Trigamma of x > 0: recurrence up to x >= 10, then the asymptotic series. */
static double trigamma_pos(double x) {
  double r = 0;
  for (; x < 10; x += 1) r += 1 / (x * x);
  double f = 1 / (x * x);
  return r + 1 / x + f / 2 + f / x * (1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f / 30)));
}

double mq_trigamma(double x) {
  if (x <= 0 && x == floor(x)) return INFINITY;
  if (x < 0) {
    double s = MQ_PI / sin(MQ_PI * x);
    return s * s - trigamma_pos(1 - x); /* reflection */
  }
  return trigamma_pos(x);
}

/* Modified Bessel function of order 0 by its power series: every term is
 * positive, so summing until terms stop mattering is accurate for any x
 * (about x/2 + 20 terms; overflow gives inf, as it should). */
double mq_i0(double x) {
  if (x != x) return x;
  double q = x * x / 4, term = 1, sum = 1;
  for (int k = 1; k < 100000 && term > sum * 1e-17; k++) {
    term *= q / ((double)k * (double)k);
    sum += term;
  }
  return sum;
}

/* Modified Bessel function I1: d/dx I0. */
double mq_i1(double x) {
  double ax = fabs(x);
  if (ax < 30) {
    double term = x / 2, sum = term, q = x * x / 4;
    for (int k = 1; k < 200 && fabs(term) > 1e-17 * fabs(sum); k++) {
      term *= q / ((double)k * (double)(k + 1));
      sum += term;
    }
    return sum;
  }
  /* the asymptotic series; for |x| >= 30 its terms shrink at least up to
   * the 60th, and a dozen or so give full double precision */
  double t = 1, s = 1;
  for (int k = 1; k < 60 && fabs(t) > 1e-17 * fabs(s); k++) {
    t *= -(4 - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * ax);
    s += t;
  }
  double r = exp(ax) / sqrt(2 * MQ_PI * ax) * s;
  return x < 0 ? -r : r;
}
