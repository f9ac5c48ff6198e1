/* stats.c - variance, standard deviation and p-norms over any set of dims,
 * on the block walk of reduce_walk.c. Ints compute in float32, as torch.masked's
 * mean does. */
#include <math.h>
#include <string.h>

#include "ops.h"
#include "reduce.h"
#include "reduce_simd.h"

/* --- variance ---------------------------------------------------------------- */

/* Per slot: valid count, mean and sum of squared deviations (Welford), in
 * double. A contiguous row is summarized exactly with two passes (mean,
 * then deviations) and merged with Chan's formula; a row of slots updates
 * each slot with one element at a time. Both are stable where the naive
 * sum-of-squares formula cancels catastrophically. */
typedef struct var_acc {
  double n, mean, m2;
} var_acc;

static inline void var_merge(var_acc *a, double n, double mean, double m2) {
  if (n == 0) return;
  double tot = a->n + n, d = mean - a->mean;
  a->mean += d * n / tot;
  a->m2 += m2 + d * d * a->n * n / tot;
  a->n = tot;
}

/* [d] where [keep] is non-zero, else +0.0, without a branch (a random mask
 * mispredicts half of them) and without a multiply (0 * inf is NaN): the
 * hidden value may be anything. */
static inline double keep_or_zero(double d, uint8_t keep) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  u &= -(uint64_t)(keep != 0);
  memcpy(&d, &u, sizeof d);
  return d;
}

/* The sum of squared deviations from [mean] of the valid entries, in four
 * lanes (entry i in lane i % 4, added as (l0 + l1) + (l2 + l3)), which
 * break the chain of dependent adds; a masked-out entry adds an exact 0.
 * The order is fixed, so the result is the same on every CPU path (the
 * whole blocks of four run in AVX2 on the wider ones: reduce_simd.h) and
 * thread count. */
#define DEF_SQ_LANES(E, T)                                                     \
  static inline void sq_lanes_##E(const T *x, const uint8_t *m, int64_t n, double mean, double *l) { \
    double l0 = l[0], l1 = l[1], l2 = l[2], l3 = l[3];                         \
    if (m) {                                                                   \
      for (int64_t i = 0; i + 4 <= n; i += 4) {                                \
        double d0 = keep_or_zero((double)x[i] - mean, m[i]);                   \
        double d1 = keep_or_zero((double)x[i + 1] - mean, m[i + 1]);           \
        double d2 = keep_or_zero((double)x[i + 2] - mean, m[i + 2]);           \
        double d3 = keep_or_zero((double)x[i + 3] - mean, m[i + 3]);           \
        l0 += d0 * d0, l1 += d1 * d1, l2 += d2 * d2, l3 += d3 * d3;            \
      }                                                                        \
    } else {                                                                   \
      for (int64_t i = 0; i + 4 <= n; i += 4) {                                \
        double d0 = (double)x[i] - mean, d1 = (double)x[i + 1] - mean;         \
        double d2 = (double)x[i + 2] - mean, d3 = (double)x[i + 3] - mean;     \
        l0 += d0 * d0, l1 += d1 * d1, l2 += d2 * d2, l3 += d3 * d3;            \
      }                                                                        \
    }                                                                          \
    l[0] = l0, l[1] = l1, l[2] = l2, l[3] = l3;                                \
  }                                                                            \
  static double sq_dev_##E(int cpu, const T *x, const uint8_t *m, int64_t n, double mean) { \
    double l[4] = {0, 0, 0, 0};                                                \
    int64_t i = n - n % 4;                                                     \
    if (!SQ_SIMD_##E(cpu, x, m, i, mean, l)) sq_lanes_##E(x, m, i, mean, l);   \
    double tail[3] = {0, 0, 0};                                                \
    for (int j = 0; i < n; i++, j++) {                                         \
      double d = (double)x[i] - mean;                                          \
      tail[j] = m ? keep_or_zero(d, m[i]) : d;                                 \
    }                                                                          \
    l[0] += tail[0] * tail[0], l[1] += tail[1] * tail[1], l[2] += tail[2] * tail[2]; \
    return (l[0] + l[1]) + (l[2] + l[3]);                                      \
  }
/* Whether the CPU path ran the blocks of four in AVX2 (float32 only). */
#if MQ_CPU_X86
#define SQ_SIMD_F32(cpu, x, m, n, mean, l)                                     \
  ((cpu) != MQ_CPU_PORTABLE && (mq_simd_sqdev_f32_avx2(x, m, n, mean, l), true))
#else
#define SQ_SIMD_F32(cpu, x, m, n, mean, l) false
#endif
#define SQ_SIMD_F64(cpu, x, m, n, mean, l) false
DEF_SQ_LANES(F32, float)
DEF_SQ_LANES(F64, double)

double mq_kernel_sqdev_f32(int cpu, const float *x, const uint8_t *m, int64_t n, double mean) {
  return sq_dev_F32(cpu, x, m, n, mean);
}

/* sq_dev_F32 of a row whose valid entries are exactly [lo, hi), read only
 * there: entry i still goes to lane i % 4 in order of i (the whole blocks
 * of four from the first on a lane boundary), the tail's after; the
 * entries left out added +0.0. */
static double sq_dev_span_F32(int cpu, const float *x, int64_t n, int64_t lo, int64_t hi, double mean) {
  double l[4] = {0, 0, 0, 0}, tail[3] = {0, 0, 0};
  int64_t n4 = n - n % 4, b = hi < n4 ? hi : n4, i = lo;
  for (; i < b && i % 4; i++) {
    double d = (double)x[i] - mean;
    l[i % 4] += d * d;
  }
  int64_t e = i < b ? i + (b - i) / 4 * 4 : i;
  if (e > i && !SQ_SIMD_F32(cpu, x + i, NULL, e - i, mean, l)) sq_lanes_F32(x + i, NULL, e - i, mean, l);
  for (i = e; i < b; i++) {
    double d = (double)x[i] - mean;
    l[i % 4] += d * d;
  }
  for (i = n4 > lo ? n4 : lo; i < hi; i++) tail[i - n4] = (double)x[i] - mean;
  l[0] += tail[0] * tail[0], l[1] += tail[1] * tail[1], l[2] += tail[2] * tail[2];
  return (l[0] + l[1]) + (l[2] + l[3]);
}

/* A row: its valid entries counted while it is summed (ROWSUM), its mean,
 * then its squared deviations, on CPU path CPU. */
#define DEF_VAR_ROW(E, T, CPU, ROWSUM)                                         \
  static void var_row_##E##_##CPU(void *acc, int64_t o, const void *xv, const uint8_t *m, int64_t n) { \
    const T *x = xv;                                                           \
    int64_t cnt = m ? 0 : n;                                                   \
    double s = ROWSUM;                                                         \
    if (cnt == 0) return;                                                      \
    double mean = s / (double)cnt;                                             \
    var_merge((var_acc *)acc + o, (double)cnt, mean, sq_dev_##E(CPU, x, m, n, mean)); \
  }
#define DEF_VAR(E, T)                                                          \
  static void var_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    var_acc *acc = accv;                                                       \
    const T *x = xv;                                                           \
    for (int64_t i = 0; i < n; i++) {                                          \
      if (m && !m[i]) continue;                                                \
      var_acc *a = &acc[i];                                                    \
      double v = (double)x[i], d = v - a->mean;                                \
      a->n += 1;                                                               \
      a->mean += d / a->n;                                                     \
      a->m2 += d * (v - a->mean);                                              \
    }                                                                          \
  }
DEF_VAR(F32, float)
DEF_VAR(F64, double)
DEF_VAR_ROW(F64, double, 0, mq_kernel_rowsum_cnt_f64(x, m, n, &cnt))
#define ROWSUM_F32(CPU) mq_kernel_rowsum_cnt_f32(CPU, x, m, n, &cnt)
DEF_VAR_ROW(F32, float, 0, ROWSUM_F32(MQ_CPU_PORTABLE))
DEF_VAR_ROW(F32, float, 1, ROWSUM_F32(MQ_CPU_AVX2))
DEF_VAR_ROW(F32, float, 2, ROWSUM_F32(MQ_CPU_AVX512))

/* A padded row (its valid entries exactly [lo, hi)): the row's bits,
 * reading only the span (reduce.h, row_span). */
#define DEF_VAR_ROWSPAN(CPU)                                                   \
  static void var_rowspan_F32_##CPU(void *acc, int64_t o, const void *xv, int64_t n, int64_t lo, \
                                    int64_t hi) {                              \
    const float *x = xv;                                                       \
    if (lo >= hi) return;                                                      \
    double mean = mq_kernel_rowsum_span_f32(CPU, x, n, lo, hi) / (double)(hi - lo); \
    var_merge((var_acc *)acc + o, (double)(hi - lo), mean, sq_dev_span_F32(CPU, x, n, lo, hi, mean)); \
  }
DEF_VAR_ROWSPAN(0)
DEF_VAR_ROWSPAN(1)
DEF_VAR_ROWSPAN(2)

/* The kernels of var: one per CPU path for float32 (the same bits). */
#define VAR_KERNEL(E, CPU)                                                     \
  {.acc_size = sizeof(var_acc), .row = var_row_##E##_##CPU, .acc_row = var_acc_##E}
#define VAR_KERNEL_F32(CPU)                                                    \
  {.acc_size = sizeof(var_acc), .row = var_row_F32_##CPU, .acc_row = var_acc_F32, \
   .row_span = var_rowspan_F32_##CPU}
static const mq_red_kernel var_F32[MQ_CPU__COUNT] = {VAR_KERNEL_F32(0), VAR_KERNEL_F32(1),
                                                     VAR_KERNEL_F32(2)};
static const mq_red_kernel var_F64 = VAR_KERNEL(F64, 0);

static mq_dtype float_of(const mq_tensor *t) {
  return mq_dtype_float_compute((mq_dtype)t->dtype);
}

/* What var and the norms compute an input in: its float dtype, but
 * float64 for integers (an int64 near 2^40 has no float32 neighbours one
 * apart: var([2^40, 2^40 + 1]) would be 0), rounded once into the result
 * (float_of: float32, torch's dtype), as numpy computes them. */
static mq_dtype compute_of(const mq_tensor *t) {
  return mq_dtype_is_float((mq_dtype)t->dtype) ? float_of(t) : MQ_DT_F64;
}

/* Stores double [v] into element [i] of a float output. */
static inline void put(mq_tensor *out, int64_t i, double v) {
  if (out->dtype == MQ_DT_F64) ((double *)mq_tensor_data(out))[i] = v;
  else ((float *)mq_tensor_data(out))[i] = (float)v;
}

mq_tensor *mq_var(mq_state *S, mq_tensor *t, int ndims, const int *dims, double correction,
                  bool keepdim, bool std) {
  if (!(correction >= 0))
    mq_error(S, "%s: correction must be a non-negative number, got %g", std ? "std" : "var",
             correction);
  mq_dtype dt = compute_of(t);
  mq_red_plan P;
  mq_red_plan_init(S, &P, std ? "std" : "var", t, dt, ndims, dims, keepdim);
  var_acc *acc = mq_red_acc(S, &P, sizeof *acc);
  for (int64_t i = 0; i < P.on; i++) acc[i] = (var_acc){0, 0, 0};
  mq_red_fold(S, &P, dt == MQ_DT_F32 ? &var_F32[S->cpu] : &var_F64, acc);
  mq_tensor *out = mq_tensor_new(S, float_of(t), P.ond, P.oshape);
  for (int64_t i = 0; i < P.on; i++) {
    /* torch divides by max(0, n - correction): too few entries give inf or NaN */
    double den = acc[i].n - correction, v = acc[i].m2 / (den > 0 ? den : 0);
    put(out, i, std ? sqrt(v) : v);
  }
  /* the slots counted their valid entries (exact in double): no pass over
   * the mask of its own */
  int64_t *count = P.m ? mq_red_acc(S, &P, sizeof *count) : NULL;
  for (int64_t i = 0; count && i < P.on; i++) count[i] = (int64_t)acc[i].n;
  mq_red_set_mask(S, &P, out, count);
  mq_ag_var(S, out, t, ndims, dims, correction, keepdim, std);
  return out;
}

/* --- norms ------------------------------------------------------------------------ */

mq_tensor *mq_norm(mq_state *S, mq_tensor *t, double p, int ndims, const int *dims, bool keepdim) {
  if (p != p) mq_error(S, "norm: p must be a number, not nan");
  mq_dtype dt = float_of(t);
  if (p == 1 || p == 2) {
    mq_dtype cdt = compute_of(t);
    mq_red_plan P;
    mq_red_plan_init(S, &P, "norm", t, cdt, ndims, dims, keepdim);
    double *acc = mq_red_acc(S, &P, sizeof *acc);
    memset(acc, 0, (size_t)P.on * sizeof *acc);
    mq_red_fold(S, &P, p == 2 ? mq_red_sumsq(cdt) : mq_red_sumabs(cdt), acc);
    mq_tensor *out = mq_tensor_new(S, dt, P.ond, P.oshape);
    for (int64_t i = 0; i < P.on; i++) put(out, i, p == 2 ? sqrt(acc[i]) : acc[i]);
    mq_red_set_mask(S, &P, out, mq_red_counts(S, &P));
    mq_ag_norm(S, out, t, p, ndims, dims, keepdim);
    return out;
  }
  /* The other p are composed of elementwise ops and a reduction, run on a
   * detached x; one norm node then gives torch's derivative: 0 for p = 0
   * (a count), 0 where the norm is 0 (the composed pow(|x|, p) would give
   * 0 * inf = NaN there for p < 1). */
  mq_tensor *x = mq_astype(S, t->requires_grad ? mq_ag_detached(S, t) : t, dt), *out;
  if (p == 0) { /* the number of nonzero entries */
    out = mq_astype(S, mq_reduce(S, MQ_RED_SUM, mq_binary(S, MQ_BIN_NE, x, mq_tensor_scalar(S, dt, 0)),
                                 ndims, dims, keepdim), dt);
  } else if (isinf(p)) {
    out = mq_reduce(S, p > 0 ? MQ_RED_AMAX : MQ_RED_AMIN, mq_unary(S, MQ_UN_ABS, x), ndims, dims, keepdim);
  } else {
    mq_tensor *e = mq_tensor_scalar(S, dt, p);
    e->weak = true;
    mq_tensor *s = mq_reduce(S, MQ_RED_SUM, mq_binary(S, MQ_BIN_POW, mq_unary(S, MQ_UN_ABS, x), e),
                             ndims, dims, keepdim);
    mq_tensor *inv = mq_tensor_scalar(S, dt, 1 / p);
    inv->weak = true;
    out = mq_binary(S, MQ_BIN_POW, s, inv);
  }
  return mq_ag_norm(S, out, t, p, ndims, dims, keepdim);
}
