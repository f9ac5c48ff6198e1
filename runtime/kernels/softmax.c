/* softmax.c - softmax and log_softmax along one dim, torch.masked's "safe
 * softmax", and normalize.
 *
 * The input is viewed as (outer, n, inner) with n the softmax dim. With
 * inner == 1 each slice is a contiguous row; otherwise the slices are the
 * columns of an (n, inner) block, handled a whole row of columns at a time
 * with per-column max/sum rows, so nothing is gathered. The max is taken
 * over valid entries only (numerical stability), exponentials are summed in
 * double (pairwise along rows). Masked-out entries of a partly valid slice
 * get 0 (-inf for log_softmax, which is x - max - log(sum), never the log of
 * a rounded softmax); a slice with no valid entry gets NaN and stays masked
 * out. */
#include <math.h>

#include "../tensor/internal.h"
#include "ops.h"
#include "../tensor/parallel.h"
#include "reduce.h"
#include "../tensor/maskspan.h"
#include "vexp.h"

/* o[i] = e^(x[i] - c) over a contiguous stretch, on CPU path [cpu]: float32
 * by mq_vexpf (vexp.h; every path the same bits), float64 by glibc. */
static void sm_exp_F64(int cpu, double *o, const double *x, double c, int64_t n) {
  (void)cpu;
  for (int64_t i = 0; i < n; i++) o[i] = exp(x[i] - c);
}
#define sm_exp_F32 mq_vexpf_rows

/* A contiguous row's max and sum on CPU path [cpu] (float32: the same
 * bits on every path, kernels.h) */
#define sm_max_F32 mq_kernel_rowmax_on_f32
#define sm_sum_F32(cpu, x, n) mq_kernel_rowsum_cnt_f32(cpu, x, NULL, n, NULL)
#define sm_max_F64(cpu, x, m, n) mq_kernel_rowmax_f64(x, m, n)
#define sm_sum_F64(cpu, x, n) mq_kernel_rowsum_f64(x, NULL, n)

/* Scaling multiplies by the float reciprocal of the sum, as torch does. */
#define DEF_SOFTMAX(E, T, EXP)                                                 \
  /* o[i] = fill where m[i] is 0: a select of its own, which vectorizes */     \
  static inline void sm_fill_##E(T *o, const uint8_t *m, int64_t n, T fill) {  \
    for (int64_t i = 0; i < n; i++) {                                          \
      T v = o[i];                                                              \
      o[i] = m[i] ? v : fill;                                                  \
    }                                                                          \
  }                                                                            \
  /* one contiguous slice of n */                                              \
  static void sm_row_##E(int cpu, T *o, const T *x, const uint8_t *m, int64_t n, bool lg) { \
    int64_t f, l; /* the span from the first valid entry to the last */      \
    if (!mq_valid_span(m, n, &f, &l)) {                                        \
      for (int64_t i = 0; i < n; i++) o[i] = NAN;                              \
      return;                                                                  \
    }                                                                          \
    T mx = sm_max_##E(cpu, x, m, n); /* whole row: its lanes, hence its NaN */ \
    /* exp over the span, then zero the masked-out slots: two loops that \
     * both vectorize, where one loop with a select around a call does not; \
     * outside the span (a padded row's tail) nothing is computed */          \
    for (int64_t i = 0; i < f; i++) o[i] = 0;                                  \
    sm_exp_##E(cpu, o + f, x + f, mx, l - f);                                  \
    for (int64_t i = l; i < n; i++) o[i] = 0;                                  \
    if (m) sm_fill_##E(o + f, m + f, l - f, (T)0);                             \
    if (lg) { /* (x - max) - log(sum), as torch: max + log(sum) would lose \
               * log(sum) beside a large max; masked-out entries: log(0) */ \
      T lsum = (T)log(sm_sum_##E(cpu, o, n));                                  \
      for (int64_t i = 0; i < n; i++) o[i] = (x[i] - mx) - lsum;               \
      if (m) sm_fill_##E(o, m, n, (T)-INFINITY);                               \
      return;                                                                  \
    }                                                                          \
    T inv = (T)(1.0 / sm_sum_##E(cpu, o, n));                                  \
    for (int64_t i = 0; i < n; i++) o[i] *= inv;                               \
  }                                                                            \
  /* n rows of [inner] columns; mx, sum and any are scratch rows (wide: \
   * its loops are exact entry by entry, so any vector width gives the    \
   * same bits) */                                                          \
  /* rst (NULL: not known) says of each row of the block whether it is   \
   * all valid (MQ_MS_VALID: read without the mask) or all masked out      \
   * (MQ_MS_MASKED: not read at all; a time-major batch's steps past its   \
   * longest sequence): a masked-out entry adds nothing to a column's max  \
   * and sum, and its result is the constant the fill gives it below */    \
  MQ_WIDE static void sm_cols_##E(int cpu, T *o, const T *x, const uint8_t *m, const uint8_t *rst, int64_t n, \
                          int64_t inner, T *mx, double *sum, uint8_t *any, bool lg) { \
    for (int64_t i = 0; i < inner; i++) { mx[i] = -INFINITY; sum[i] = 0; any[i] = m ? 0 : 1; } \
    for (int64_t j = 0; j < n; j++) {                                          \
      const T *xr = x + j * inner;                                             \
      uint8_t rs = rst ? rst[j] : MQ_MS_MIXED;                                 \
      if (rs == MQ_MS_MASKED) continue;                                        \
      if (rs == MQ_MS_VALID) {                                                 \
        for (int64_t i = 0; i < inner; i++) {                                  \
          T v = xr[i];                                                         \
          mx[i] = (v > mx[i] || v != v) ? v : mx[i];                           \
          any[i] = 1;                                                          \
        }                                                                      \
      } else if (m) {                                                          \
        const uint8_t *mr = m + j * inner;                                     \
        for (int64_t i = 0; i < inner; i++) {                                  \
          T v = xr[i];                                                         \
          v = mr[i] ? v : (T)-INFINITY;                                        \
          mx[i] = (v > mx[i] || v != v) ? v : mx[i];                           \
          any[i] |= mr[i];                                                     \
        }                                                                      \
      } else {                                                                 \
        for (int64_t i = 0; i < inner; i++) {                                  \
          T v = xr[i];                                                         \
          mx[i] = (v > mx[i] || v != v) ? v : mx[i];                           \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    for (int64_t j = 0; j < n; j++) {                                          \
      const T *xr = x + j * inner;                                             \
      T *orow = o + j * inner;                                                 \
      uint8_t rs = rst ? rst[j] : MQ_MS_MIXED;                                 \
      if (rs == MQ_MS_MASKED) continue; /* its 0s add nothing: written below */ \
      for (int64_t i = 0; i < inner; i++) orow[i] = xr[i] - mx[i];             \
      EXP##_cols(cpu, orow, inner); /* in place: e^(x - max), on the path */  \
      if (m && rs != MQ_MS_VALID) sm_fill_##E(orow, m + j * inner, inner, (T)0); \
      for (int64_t i = 0; i < inner; i++) sum[i] += (double)orow[i];           \
    }                                                                          \
    if (lg) { /* (x - max) - log(sum); sum becomes log(sum) */              \
      for (int64_t i = 0; i < inner; i++) {                                    \
        sum[i] = (T)log(sum[i]);                                               \
        mx[i] = any[i] ? mx[i] : (T)NAN;                                       \
      }                                                                        \
      bool all_any = true;                                                     \
      for (int64_t i = 0; i < inner; i++) all_any &= any[i] != 0;             \
      for (int64_t j = 0; j < n; j++) {                                        \
        const T *xr = x + j * inner;                                           \
        T *orow = o + j * inner;                                               \
        uint8_t rs = rst ? rst[j] : MQ_MS_MIXED;                               \
        if (rs == MQ_MS_MASKED && all_any) { /* every column has a valid entry */ \
          for (int64_t i = 0; i < inner; i++) orow[i] = (T)-INFINITY;          \
          continue;                                                            \
        }                                                                      \
        for (int64_t i = 0; i < inner; i++) orow[i] = (xr[i] - mx[i]) - (T)sum[i]; \
        if (m && rs != MQ_MS_VALID) {                                          \
          const uint8_t *mr = m + j * inner;                                   \
          for (int64_t i = 0; i < inner; i++) {                                \
            T v = orow[i];                                                     \
            orow[i] = mr[i] || !any[i] ? v : (T)-INFINITY;                     \
          }                                                                    \
        }                                                                      \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    /* mx is reused for the reciprocals */                                     \
    for (int64_t i = 0; i < inner; i++) mx[i] = any[i] ? (T)(1.0 / sum[i]) : (T)NAN; \
    for (int64_t j = 0; j < n; j++) {                                          \
      T *orow = o + j * inner;                                                 \
      if (rst && rst[j] == MQ_MS_MASKED) /* 0 * the reciprocal, as the rest */ \
        for (int64_t i = 0; i < inner; i++) orow[i] = (T)0 * mx[i];            \
      else                                                                     \
        for (int64_t i = 0; i < inner; i++) orow[i] *= mx[i];                  \
    }                                                                          \
  }

/* e^v in place over a row of a column block: float32 by the CPU path's
 * loop (x - 0 is x, so the bits are mq_vexpf's), float64 by glibc */
#define mq_vexpf_cols(cpu, o, n) mq_vexpf_rows(cpu, o, o, 0.0f, n)
static void exp_cols(int cpu, double *o, int64_t n) {
  (void)cpu;
  for (int64_t i = 0; i < n; i++) o[i] = exp(o[i]);
}
DEF_SOFTMAX(F32, float, mq_vexpf)
DEF_SOFTMAX(F64, double, exp)

/* A float32 row whose valid entries are exactly [f, l) (a padded row,
 * known from its mask's spans, maskspan.h): sm_row_F32's bits, reading
 * only the span and not the mask. The max and sum fold the span as
 * their pieces would (reduce.h: the masked-out entries give the
 * identity); outside the span softmax's o[i] *= inv gives 0 * inv (NaN
 * for a NaN row, as there), log_softmax's fill -inf. */
static void sm_span_F32(int cpu, float *o, const float *x, int64_t n, int64_t f, int64_t l, bool lg) {
  if (f >= l) {
    for (int64_t i = 0; i < n; i++) o[i] = NAN;
    return;
  }
  float mx = mq_kernel_rowmax_span_f32(cpu, x, n, f, l);
  sm_exp_F32(cpu, o + f, x + f, mx, l - f);
  float out;
  if (lg) {
    float lsum = (float)log(mq_kernel_rowsum_span_f32(cpu, o, n, f, l));
    for (int64_t i = f; i < l; i++) o[i] = (x[i] - mx) - lsum;
    out = -INFINITY;
  } else {
    float inv = (float)(1.0 / mq_kernel_rowsum_span_f32(cpu, o, n, f, l));
    for (int64_t i = f; i < l; i++) o[i] *= inv;
    out = 0.0f * inv;
  }
  for (int64_t i = 0; i < f; i++) o[i] = out;
  for (int64_t i = l; i < n; i++) o[i] = out;
}

void mq_softmax_row_f32(int cpu, float *o, const float *x, const uint8_t *m, int64_t n) {
  sm_row_F32(cpu, o, x, m, n, false);
}
void mq_softmax_row_f64(int cpu, double *o, const double *x, const uint8_t *m, int64_t n) {
  sm_row_F64(cpu, o, x, m, n, false);
}

/* Slices [b0, b1) of the (outer, n, inner) view on thread t, with that
 * thread's scratch rows. */
typedef struct sm_job {
  mq_dtype dt;
  int cpu; /* the state's CPU path (cpu.h) */
  size_t es;
  char *o;
  const char *x;
  const uint8_t *m;
  const mq_mask_rows *rs; /* the spans of m's rows (float32 rows), or NULL */
  const uint8_t *rst;     /* inner > 1: each row of each block all valid,
                             all masked out or mixed (mq_ms_state), or NULL */
  int64_t n, inner;
  char *mx; /* per thread: inner T, inner doubles, inner bytes */
  double *sum;
  uint8_t *any;
  bool lg;
} sm_job;

static void sm_range(void *ctx, int64_t b0, int64_t b1, int t) {
  const sm_job *J = ctx;
  int64_t n = J->n, inner = J->inner, block = n * inner;
  void *mx = J->mx ? J->mx + (size_t)(t * inner) * J->es : NULL;
  double *sum = J->sum ? J->sum + t * inner : NULL;
  uint8_t *any = J->any ? J->any + t * inner : NULL;
  for (int64_t b = b0; b < b1; b++) {
    size_t off = (size_t)(b * block);
    const uint8_t *mb = J->m ? J->m + off : NULL;
    if (J->dt == MQ_DT_F32) {
      float *o = (float *)J->o + off;
      const float *x = (const float *)J->x + off;
      if (J->rs && J->rs->full[b]) sm_span_F32(J->cpu, o, x, n, J->rs->lo[b], J->rs->hi[b], J->lg);
      else if (inner == 1) sm_row_F32(J->cpu, o, x, mb, n, J->lg);
      else sm_cols_F32(J->cpu, o, x, mb, J->rst ? J->rst + b * n : NULL, n, inner, mx, sum, any, J->lg);
    } else {
      double *o = (double *)J->o + off;
      const double *x = (const double *)J->x + off;
      if (inner == 1) sm_row_F64(J->cpu, o, x, mb, n, J->lg);
      else sm_cols_F64(J->cpu, o, x, mb, J->rst ? J->rst + b * n : NULL, n, inner, mx, sum, any, J->lg);
    }
  }
}

static mq_tensor *softmax(mq_state *S, mq_tensor *t, int dim, bool lg) {
  int d = mq_shape_norm_dim(S, dim, t->ndim);
  mq_dtype dt = mq_dtype_float_compute((mq_dtype)t->dtype);
  mq_tensor *x = mq_contiguous(S, mq_astype(S, mq_get_data(S, t), dt));
  const uint8_t *m = t->mask ? mq_tensor_data(mq_contiguous(S, t->mask)) : NULL;
  mq_tensor *out = mq_tensor_new(S, dt, t->ndim, t->shape);
  int64_t outer = 1, n = t->ndim ? t->shape[d] : 1, inner = 1;
  for (int i = 0; i < d; i++) outer *= t->shape[i];
  for (int i = d + 1; i < t->ndim; i++) inner *= t->shape[i];
  if (out->numel) {
    /* slices are independent: the threads share them out (parallel.h) */
    int nt = mq_parallel_threads_for(S, out->numel);
    sm_job J = {.dt = dt, .cpu = S->cpu, .es = mq_dtype_size(dt), .o = mq_tensor_data(out),
                .x = mq_tensor_data(x), .m = m, .n = n, .inner = inner, .lg = lg};
    if (inner == 1 && dt == MQ_DT_F32 && t->mask && t->mask->ndim == t->ndim)
      J.rs = mq_mask_rows_of(S, t->mask); /* rows are the slices */
    if (inner > 1 && t->mask && t->mask->ndim == t->ndim) /* the block's rows are the mask's */
      J.rst = mq_mask_row_states(S, t->mask, inner);
    if (inner > 1) {
      J.mx = mq_scratch(S, (size_t)(nt * inner) * J.es);
      J.sum = mq_scratch(S, (size_t)(nt * inner) * sizeof *J.sum);
      J.any = mq_scratch(S, (size_t)(nt * inner));
    }
    int64_t block = n * inner;
    mq_parallel_for(S, nt, outer, block >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / block, sm_range, &J);
  }
  if (t->mask) mq_tensor_set_mask(S, out, t->mask);
  mq_ag_softmax(S, out, t, d, lg);
  return out;
}

mq_tensor *mq_softmax(mq_state *S, mq_tensor *t, int dim) { return softmax(S, t, dim, false); }
mq_tensor *mq_log_softmax(mq_state *S, mq_tensor *t, int dim) { return softmax(S, t, dim, true); }

/* --- normalize --------------------------------------------------------------- */

mq_tensor *mq_normalize(mq_state *S, mq_tensor *t, double p, int dim, double eps) {
  int d = mq_shape_norm_dim(S, dim, t->ndim);
  int dims[1] = {d};
  /* the norm's data (0 for a fully masked slice) clamped to eps, then a
   * division that reads the norm broadcast: no full-size temporary */
  mq_tensor *nrm = mq_get_data(S, mq_norm(S, t, p, t->ndim ? 1 : 0, dims, true));
  mq_tensor *e = mq_tensor_scalar(S, (mq_dtype)nrm->dtype, eps);
  e->weak = true;
  mq_tensor *den = mq_binary(S, MQ_BIN_MAXIMUM, nrm, e);
  mq_tensor *out = mq_binary(S, MQ_BIN_DIV, t, den);
  return t->mask ? mq_as_masked(S, mq_to_tensor(S, out, 0), t->mask) : out; /* as_masked: differentiable */
}
