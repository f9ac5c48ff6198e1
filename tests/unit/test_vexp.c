/* test_vexp.c - masq's float32 exp (runtime/kernels/vexp.h) on a million inputs:
 * the edges (zeros, infinities, NaNs of several payloads, subnormals, the
 * largest floats, the stretches around the overflow and underflow
 * thresholds and around the selects at 100 and -150, tiny |x| where e^x
 * is 1 or its neighbours), the 731 inputs whose e^x lies nearest a
 * midpoint between two float32s (vexp_hard.h: dropping the series' last
 * two terms, an error near 2^-43, misrounds 47 of them), inputs glibc's
 * expf misrounds, uniform values
 * over [-104, 89] and random bit patterns. Every CPU path this machine
 * runs, the load-time pick and the scalar give the same bits (NaNs
 * included); each result is the correctly rounded e^x (exp_ref.h), and a
 * NaN gives glibc's NaN (x + x). tools/vexp_check.c does the same for
 * all 2^32 inputs. Also: exp, softmax and log_softmax of masq use it. */
#include <float.h>
#include <stdlib.h>

#include "../../runtime/tensor/cpu.h"
#include "../../runtime/tensor/internal.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/kernels/reduce.h"
#include "../../runtime/kernels/vexp.h"
#include "exp_ref.h"
#include "unit.h"
#include "vexp_hard.h"

static uint64_t rng = 88172645463325252ull;
static uint32_t next32(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 32);
}

/* n consecutive floats from x on, away from zero, into v at k; returns
 * the new count. */
static int64_t stretch(float *v, int64_t k, float x, int n) {
  uint32_t b = mq_f32_bits(x);
  for (int i = 0; i < n; i++) v[k++] = mq_bits_f32(b + (uint32_t)i);
  return k;
}

static int64_t inputs(float *v) {
  int64_t k = 0;
  for (size_t i = 0; i < sizeof vexp_hard / sizeof *vexp_hard; i++) v[k++] = mq_bits_f32(vexp_hard[i]);
  static const float edge[] = {0.0f, -0.0f, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
                               0x1p-149f, -0x1p-149f, 1.0f, -1.0f, 100.0f, -150.0f, 88.0f, -87.0f,
                               /* the two inputs whose expf differs with and without FMA */
                               0x1.04845ep+5f, -0x1.f8cbb2p+5f,
                               /* some glibc misrounds */
                               0x1.fefe02p-16f, 0x1.5b3c52p-14f, 0x1.cd3982p-14f, 0x1.34e45ap-12f};
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) v[k++] = edge[i];
  static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u,
                                  0x7fc12345u, 0xffffffffu};
  for (size_t i = 0; i < sizeof nans / sizeof *nans; i++) v[k++] = mq_bits_f32(nans[i]);
  /* 2048 floats either side of the thresholds: e^x overflows above
   * 88.72284, turns subnormal below -87.33654 and rounds to 0 below
   * -103.97208; the selects at 100 and -150; then |x| < 2^-24, where e^x
   * rounds to 1 or a neighbour, and the subnormal inputs */
  static const float from[] = {0x1.62d43p+6f, -0x1.5d48ap+6f, -0x1.9fd368p+6f, 0x1.8ffp+6f,
                               -0x1.2bfp+7f, 0x1.fffff0p-26f, -0x1.fffff0p-26f, 0x1p-149f};
  for (size_t i = 0; i < sizeof from / sizeof *from; i++) k = stretch(v, k, from[i], 4096);
  k = stretch(v, k, 100.0f, 64), k = stretch(v, k, -150.0f, 64);
  while (k < 700000) v[k++] = (float)(-104.0 + 193.0 * (double)next32() / 4294967296.0);
  while (k < 1000000) v[k++] = mq_bits_f32(next32());
  return k;
}

static void million(void) {
  enum { N = 1000000 };
  float *x = malloc(N * sizeof *x), *y[MQ_CPU__COUNT + 1];
  for (int c = 0; c <= MQ_CPU__COUNT; c++) y[c] = malloc(N * sizeof *y[c]);
  int64_t n = inputs(x);
  CHECK(n == N);
  int best = mq_cpu_best();
  for (int c = 0; c <= best; c++) mq_vexpf_rows(c, y[c], x, 0.0f, n);
  mq_vexpf_best(y[MQ_CPU__COUNT], x, 0.0f, n);
  long same = 0, right = 0, near = 0, unsettled = 0, nans = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t v = mq_f32_bits(y[0][i]);
    bool ok = mq_f32_bits(mq_vexpf(x[i])) == v && mq_f32_bits(y[MQ_CPU__COUNT][i]) == v;
    for (int c = 1; c <= best; c++) ok = ok && mq_f32_bits(y[c][i]) == v;
    same += ok;
    if (isnan(x[i])) {
      nans++;
      right += mq_f32_bits(expf(x[i])) == v;
    } else {
      right += mq_f32_bits(ref_exp(x[i], &near, &unsettled)) == v;
    }
  }
  CHECK(same == n);
  CHECK(right == n);
  CHECK(unsettled == 0 && near > 0 && nans > 7); /* near-midpoint cases were met */
  /* a shift c: e^(x - c) with x - c in float32, o may be x */
  float a[3] = {1.0f, 2.0f, 0x1p-149f};
  mq_vexpf_rows(MQ_CPU_PORTABLE, a, a, 1.0f, 3);
  CHECK(a[0] == 1.0f && mq_f32_bits(a[1]) == mq_f32_bits(ref_exp(1.0f, &near, &unsettled)));
  CHECK(mq_f32_bits(a[2]) == mq_f32_bits(ref_exp(-1.0f, &near, &unsettled)));
  for (int c = 0; c <= MQ_CPU__COUNT; c++) free(y[c]);
  free(x);
}

/* exp, softmax and log_softmax of a float32 tensor go through it. */
static void users(void) {
  enum { M = 37 };
  float v[M];
  for (int i = 0; i < M; i++) v[i] = (float)(i - 20) * 0.731f + 0x1p-10f * (float)i;
  mq_tensor *t = mq_tensor_new(S, MQ_DT_F32, 1, (int64_t[]){M});
  memcpy(mq_tensor_data(t), v, sizeof v);
  const float *e = mq_tensor_data(mq_unary(S, MQ_UN_EXP, t));
  const float *sm = mq_tensor_data(mq_softmax(S, t, 0));
  const float *lsm = mq_tensor_data(mq_log_softmax(S, t, 0));
  float mx = v[M - 1], ex[M];
  for (int i = 0; i < M; i++) ex[i] = mq_vexpf(v[i] - mx);
  double sum = mq_kernel_rowsum_f32(ex, NULL, M);
  float inv = (float)(1.0 / sum), lsum = (float)log(sum);
  int ok = 0;
  for (int i = 0; i < M; i++)
    ok += mq_f32_bits(e[i]) == mq_f32_bits(mq_vexpf(v[i])) &&
          mq_f32_bits(sm[i]) == mq_f32_bits(ex[i] * inv) &&
          mq_f32_bits(lsm[i]) == mq_f32_bits((v[i] - mx) - lsum);
  CHECK(ok == M);
}

static void all_tests(mq_state *S_, void *ud) {
  million();
  users();
}

int main(void) { return unit_main("test_vexp", all_tests); }
