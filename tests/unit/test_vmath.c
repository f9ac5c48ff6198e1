/* test_vmath.c - masq's float32 erf, tanh, gelu (both forms) and silu
 * (runtime/kernels/vmath.h) against glibc's double functions, on a dense
 * sweep of float32 inputs: every 1021st bit pattern of the 2^32 (both signs,
 * subnormals, the tails, huge values), plus +-0, +-inf, NaN and the
 * neighbourhoods of the cases' borders.
 *
 *   - erf and tanh: at most 1 ulp from the double function rounded once,
 *     and equal to it on all but a few in a million inputs (erf's double
 *     results lie within 1e-14 of the true ones below 1 and 2.5e-11 above,
 *     tanh's within ~1e-14: only a value that close to a midpoint between
 *     two float32s can round the other way);
 *   - gelu, its tanh form and silu: within 1 ulp of long-double references
 *     wherever the result is a normal float32 (gelu's tail polynomial has
 *     a relative error of 1.5e-10: about one input in 35,000 rounds the
 *     other way; all 2^32 inputs were checked so, PERFORMANCE.md);
 *   - the derivatives: within 4 float32 ulp (relative) of double references
 *     (the reference itself cancels in gelu's where x < -5; below, an
 *     absolute 1e-30 suffices), gelu's within 4 ulp plus 1e-10 absolute:
 *     it is a difference, e^(-x^2/2) (E(a) - a/sqrt(2 pi)), that crosses
 *     0 near x = -0.7518, and E's relative error is 1.5e-10;
 *   - +-0 keep their sign, NaN stays NaN, and the infinities give torch's
 *     formulas' values. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/kernels/vmath.h"
#include "../../runtime/tensor/cpu.h"

#include "unit.h"

#define MQ_PI_D 3.14159265358979323846

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
/* ulps between two finite float32s of one sign (or zeros) */
static int64_t ulps(float a, float b) {
  int64_t ia = (int32_t)fbits(a), ib = (int32_t)fbits(b);
  if (ia < 0) ia = (int64_t)INT32_MIN - ia;
  if (ib < 0) ib = (int64_t)INT32_MIN - ib;
  return ia > ib ? ia - ib : ib - ia;
}

enum { BLOCK = 4096 };
static float xs[BLOCK], ys[BLOCK];
static int n_in;

typedef struct stats {
  int64_t count, off, worst;
  float at;
} stats;

static void note(stats *st, float x, float got, float want) {
  st->count++;
  if (isnan(want) || isnan(got)) {
    if (isnan(want) != isnan(got)) st->worst = INT64_MAX, st->at = x;
    return;
  }
  int64_t u = ulps(got, want);
  if (u) st->off++;
  if (u > st->worst) st->worst = u, st->at = x;
}

static long double ref_gelu(long double x) { return x * 0.5L * erfcl(-x / sqrtl(2.0L)); }
static long double ref_gelu_tanh(long double x) {
  long double u = 0.79788456080286535588L * (x + 0.044715L * x * x * x);
  return x / (1.0L + expl(-2.0L * u));
}
static long double ref_silu(long double x) { return x / (1.0L + expl(-x)); }

static stats st_erf, st_tanh, st_act[3], st_d[4];

static void flush(void) {
  int best = mq_cpu_best();
  mq_vact_rows(best, MQ_VACT_ERF, ys, xs, n_in);
  for (int i = 0; i < n_in; i++) note(&st_erf, xs[i], ys[i], (float)erf((double)xs[i]));
  mq_vact_rows(best, MQ_VACT_TANH, ys, xs, n_in);
  for (int i = 0; i < n_in; i++) note(&st_tanh, xs[i], ys[i], (float)tanh((double)xs[i]));
  static const int acts[3] = {MQ_VACT_GELU, MQ_VACT_GELU_TANH, MQ_VACT_SILU};
  for (int k = 0; k < 3; k++) {
    mq_vact_rows(best, acts[k], ys, xs, n_in);
    for (int i = 0; i < n_in; i++) {
      long double x = xs[i];
      if (!isfinite(xs[i])) continue;
      float want = (float)(k == 0 ? ref_gelu(x) : k == 1 ? ref_gelu_tanh(x) : ref_silu(x));
      if (fabsf(want) < FLT_MIN) continue; /* subnormal results: double rounding aside */
      note(&st_act[k], xs[i], ys[i], want);
    }
  }
  static const int ds[4] = {MQ_VACT_ERF, MQ_VACT_GELU, MQ_VACT_GELU_TANH, MQ_VACT_SILU};
  const float one = 1.0f;
  for (int k = 0; k < 4; k++) {
    mq_vact_grad_rows(best, ds[k], ys, xs, &one, 0, n_in);
    for (int i = 0; i < n_in; i++) {
      double x = xs[i], w;
      if (!isfinite(xs[i]) || fabs(x) > 1e15) continue;
      if (k == 0) w = 2 / sqrt(MQ_PI_D) * exp(-x * x);
      else if (k == 1) w = 0.5 * erfc(-x / sqrt(2.0)) + x * exp(-0.5 * x * x) / sqrt(2 * MQ_PI_D);
      else if (k == 2) {
        double u = 0.79788456080286535588 * (x + 0.044715 * x * x * x), t = tanh(u);
        w = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.79788456080286535588 * (1 + 3 * 0.044715 * x * x);
      } else {
        double s = 1 / (1 + exp(-x));
        w = s * (1 + x * (1 - s));
      }
      double err = fabs((double)ys[i] - w), tol = 4 * 0x1p-24 * fabs(w);
      if (k >= 1 && x < -5) tol += 1e-9 * fabs(x); /* the reference's own cancellation */
      if (k == 1) tol += 1e-10; /* gelu's crosses 0 at x = -0.7518: E's 1.5e-10, absolute */
      if (!(err <= tol + 1e-30)) {
        if (st_d[k].worst == 0) printf("derivative %d at %a: %a, reference %a\n", k, x, ys[i], w);
        st_d[k].worst++;
      }
      st_d[k].count++;
    }
  }
  n_in = 0;
}

static void add(float x) {
  xs[n_in++] = x;
  if (n_in == BLOCK) flush();
}

static void sweep(void) {
  for (uint64_t b = 0; b < ((uint64_t)1 << 32); b += 1021) add(bitsf((uint32_t)b));
  static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MIN, -FLT_MIN,
                                  FLT_TRUE_MIN, FLT_MAX, -FLT_MAX};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++) add(special[i]);
  /* around the borders of the cases: 1/16 (tanh), 1 and 15 (erf), sqrt(2) and 15 sqrt(2) (gelu) */
  static const float borders[] = {0.0625f, 1.0f, 15.0f, 1.41421356f, 21.2132034f, 20.0f, 9.0f, 3.9f};
  for (size_t i = 0; i < sizeof borders / sizeof *borders; i++)
    for (int d = -300; d <= 300; d++) {
      add(bitsf((uint32_t)((int32_t)fbits(borders[i]) + d)));
      add(-bitsf((uint32_t)((int32_t)fbits(borders[i]) + d)));
    }
  flush();
  printf("erf: %lld inputs, %lld off by an ulp, worst %lld ulp at %a\n", (long long)st_erf.count,
         (long long)st_erf.off, (long long)st_erf.worst, st_erf.at);
  printf("tanh: %lld inputs, %lld off by an ulp, worst %lld ulp at %a\n", (long long)st_tanh.count,
         (long long)st_tanh.off, (long long)st_tanh.worst, st_tanh.at);
  CHECK(st_erf.worst <= 1 && st_erf.off * 100000 < st_erf.count);
  CHECK(st_tanh.worst <= 1 && st_tanh.off * 100000 < st_tanh.count);
  for (int k = 0; k < 3; k++) {
    printf("activation %d: %lld inputs, %lld off, worst %lld ulp at %a\n", k, (long long)st_act[k].count,
           (long long)st_act[k].off, (long long)st_act[k].worst, st_act[k].at);
    CHECK(st_act[k].worst <= 1);
  }
  for (int k = 0; k < 4; k++) CHECK(st_d[k].count > 1000000 / 20 && st_d[k].worst == 0);
}

/* Signs of zeros, NaN, and the infinities as torch's formulas give them. */
static void edges(void) {
  const float in[5] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY};
  float out[5];
  mq_vact_rows(MQ_CPU_PORTABLE, MQ_VACT_ERF, out, in, 5);
  CHECK(fbits(out[0]) == 0 && fbits(out[1]) == 0x80000000u && isnan(out[2]) && out[3] == 1 && out[4] == -1);
  mq_vact_rows(MQ_CPU_PORTABLE, MQ_VACT_TANH, out, in, 5);
  CHECK(fbits(out[0]) == 0 && fbits(out[1]) == 0x80000000u && isnan(out[2]) && out[3] == 1 && out[4] == -1);
  for (int f = MQ_VACT_GELU; f <= MQ_VACT_SILU; f++) {
    mq_vact_rows(MQ_CPU_PORTABLE, f, out, in, 5);
    CHECK(out[0] == 0 && isnan(out[2]) && out[3] == INFINITY && isnan(out[4])); /* -inf * 0 */
  }
}

static void all_tests(mq_state *S_, void *ud) {
  edges();
  sweep();
}

int main(void) { return unit_main("test_vmath", all_tests); }
