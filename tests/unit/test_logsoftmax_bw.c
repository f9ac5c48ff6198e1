/* test_logsoftmax_bw.c - float32 log_softmax's backward
 * (runtime/autograd/backward_ops.c, sm_bw_range32) is defined entry by
 * entry as g - e^y s, with e^y masq's own float32 exp (mq_vexpf,
 * kernels/vexp.h: correctly rounded, the same bits on every CPU), s the
 * slice's sum of g in double in sixteen lanes (entry i into lane i % 16,
 * the lanes added pairwise), the rest in double, rounded once. Before, e^y
 * was glibc's double exp, whose bits depend on which variant glibc picks
 * for the CPU (FMA or not) and which took a scalar call per entry. The
 * rows here (lengths 1 to 40 and 1000, data over several magnitudes) are
 * checked against that definition written out, on every CPU path this
 * CPU runs and at one and three threads; and along a dim that is not
 * the last (the float64 loop, its sum in order), where the same e^y
 * applies to a float32 result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/masq.h"
#include "../../runtime/kernels/vexp.h"

#include "unit.h"

static bool eval(const char *src, const char *what) {
  if (masq_eval(S, src, strlen(src), what, 0) == MASQ_OK) return true;
  printf("FAIL %s: %s\n", what, masq_last_error(S)->rendered);
  return false;
}

/* Global [name]'s float32 data (a malloc'd copy; NULL if it is not a
 * plain float32 tensor of n entries). */
static float *grab32(const char *name, int64_t n) {
  masq_tensor *t = NULL, *c = NULL;
  masq_tensor_desc d;
  float *out = NULL;
  if (masq_get_global(S, name, &t) != MASQ_OK) return NULL;
  if (masq_tensor_contiguous(S, t, &c) == MASQ_OK && masq_tensor_info(S, c, &d) == MASQ_OK &&
      d.dtype == MASQ_FLOAT32 && !d.valid) {
    int64_t k = 1;
    for (int i = 0; i < d.ndim; i++) k *= d.shape[i];
    if (k == n && (out = malloc((size_t)n * sizeof *out + 1))) memcpy(out, d.data, (size_t)n * sizeof *out);
  }
  if (c) masq_tensor_release(S, c);
  masq_tensor_release(S, t);
  return out;
}

static double lanes16(const double *d) {
  return (((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]))) +
         (((d[8] + d[9]) + (d[10] + d[11])) + ((d[12] + d[13]) + (d[14] + d[15])));
}

/* G (the gradient of sum(log_softmax(X, 1) * W) w.r.t. X) against the
 * definition from X's log_softmax Y and W, rows of [len]. */
static void check_rows(int64_t len, const char *path, int threads) {
  char src[800], what[96];
  snprintf(what, sizeof what, "rows of %lld, %s, %d threads", (long long)len, path, threads);
  snprintf(src, sizeof src,
           "set_cpu_path(\"%s\")\nset_num_threads(%d)\nseed(%lld)\n"
           "X = requires_grad(randn(7, %lld, dtype=float32) * tensor([0.1, 1, 3, 10, 30, 0.01, 1])[:, none])\n"
           "W = rand(7, %lld, dtype=float32) - 0.3\n"
           "Y = log_softmax(X, 1)\nG = grad(sum(Y * W), X)\nY = get_data(Y)\n",
           path, threads, (long long)len, (long long)len, (long long)len);
  if (!eval(src, what)) {
    failed++;
    return;
  }
  float *y = grab32("Y", 7 * len), *w = grab32("W", 7 * len), *g = grab32("G", 7 * len);
  bool ok = y && w && g;
  CHECK(ok);
  int64_t bad = -1;
  for (int64_t r = 0; ok && r < 7; r++) {
    const float *yr = y + r * len, *wr = w + r * len, *gr = g + r * len;
    double d[16] = {0};
    for (int64_t j = 0; j < len; j++) d[j % 16] += (double)wr[j];
    double s = lanes16(d);
    for (int64_t j = 0; j < len; j++) {
      float want = (float)((double)wr[j] - (double)mq_vexpf(yr[j]) * s);
      if (memcmp(&want, gr + j, sizeof want) && bad < 0) bad = r * len + j;
    }
  }
  if (bad >= 0) printf("FAIL log_softmax backward, %s: entry %lld is not g - e^y s\n", what, (long long)bad);
  CHECK(bad < 0);
  free(y), free(w), free(g);
}

/* Along dim 0 (slices strided, sm_bw_strided's float64 loop): the same
 * e^y, the slice's sum in order. */
static void check_cols(int64_t len) {
  char src[600], what[64];
  snprintf(what, sizeof what, "columns of %lld", (long long)len);
  snprintf(src, sizeof src,
           "seed(%lld)\nX = requires_grad(randn(%lld, 5, dtype=float32) * 4)\n"
           "W = rand(%lld, 5, dtype=float32) - 0.3\n"
           "Y = log_softmax(X, 0)\nG = grad(sum(Y * W), X)\nY = get_data(Y)\n",
           (long long)len, (long long)len, (long long)len);
  if (!eval(src, what)) {
    failed++;
    return;
  }
  float *y = grab32("Y", 5 * len), *w = grab32("W", 5 * len), *g = grab32("G", 5 * len);
  bool ok = y && w && g;
  CHECK(ok);
  int64_t bad = -1;
  for (int64_t c = 0; ok && c < 5; c++) {
    double s = 0;
    for (int64_t j = 0; j < len; j++) s += (double)w[j * 5 + c];
    for (int64_t j = 0; j < len; j++) {
      float want = (float)((double)w[j * 5 + c] - (double)mq_vexpf(y[j * 5 + c]) * s);
      if (memcmp(&want, g + j * 5 + c, sizeof want) && bad < 0) bad = j * 5 + c;
    }
  }
  if (bad >= 0) printf("FAIL log_softmax backward, %s: entry %lld is not g - e^y s\n", what, (long long)bad);
  CHECK(bad < 0);
  free(y), free(w), free(g);
}

static void tests(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  static const char *const paths[] = {"portable", "avx2", "avx512"};
  for (int p = 0; p < 3; p++)
    for (int th = 1; th <= 3; th += 2) {
      for (int64_t len = 1; len <= 40; len++) check_rows(len, paths[p], th);
      check_rows(1000, paths[p], th);
    }
  for (int64_t len = 1; len <= 40; len++) check_cols(len);
  check_cols(1000);
}

int main(void) { return unit_main("test_logsoftmax_bw", tests); }
