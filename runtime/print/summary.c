/* summary.c - summary lines and describe tables (summary.h).
 *
 * Both read the tensor's entries where they are (a copy only of a view
 * that is not contiguous) and compute in double: the mean and the sample
 * standard deviation (ddof 1, as pandas and torch's default) by two passes,
 * the quantiles by numpy's linear interpolation on the sorted values.
 *
 * Text decisions (docs/LANGUAGE.md, "Summaries"): numbers take two
 * significant digits ("4.2", "0.010", "1.0") but never lose integer digits
 * ("1013"), and go to "%.1e" outside [1e-4, 1e6); negatives use ASCII '-'
 * (issue 18's sketch shows U+2212, which cannot be pasted back into a
 * script); the parts are separated by " · " (U+00B7, in every UTF-8 font;
 * NO_COLOR is about colour, not the character set, so it stays). */
#include "summary.h"

#include <math.h>
#include <stdio.h>

#include "../kernels/ops.h"
#include "../../core/checked.h"
#include "../tensor/msort.h"

/* [t]'s entries in order, read in place when [t] is contiguous (printing a
 * large tensor must not need a copy of it), and their validity (m NULL: a
 * plain tensor, all valid). */
typedef struct flat {
  const void *d;
  mq_dtype dt;
  const uint8_t *m;
} flat;

static flat flat_of(mq_state *S, const mq_tensor *t) {
  mq_tensor *x = (mq_tensor *)t;
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, x));
  /* a storage dtype (int8 ... bfloat16) is read in its compute dtype: the
   * readers below know only those four */
  if (mq_dtype_is_narrow((mq_dtype)d->dtype)) d = mq_astype(S, d, mq_dtype_compute((mq_dtype)d->dtype));
  flat f = {mq_tensor_data(d), (mq_dtype)d->dtype, NULL};
  if (t->mask) f.m = mq_tensor_data(mq_contiguous(S, t->mask));
  return f;
}

static inline double flat_get(const flat *f, int64_t i) {
  switch (f->dt) {
  case MQ_DT_BOOL: return ((const uint8_t *)f->d)[i];
  case MQ_DT_I64: return (double)((const int64_t *)f->d)[i];
  case MQ_DT_F32: return ((const float *)f->d)[i];
  case MQ_DT_F64: return ((const double *)f->d)[i];
  default: /* flat_of converts a storage dtype; read one right anyway */
    return mq_elem_f64(f->dt, (const char *)f->d + (size_t)i * mq_dtype_size(f->dt));
  }
}
static inline bool flat_valid(const flat *f, int64_t i) { return !f->m || f->m[i]; }

/* A number as the summary shows it (see the header comment). */
static void short_num(char *out, size_t cap, double v) {
  double a = fabs(v);
  if (v == 0) snprintf(out, cap, "0");
  else if (a >= 1e6 || a < 1e-4) snprintf(out, cap, "%.1e", v);
  else if (a >= 9.95) snprintf(out, cap, "%.0f", v);
  else snprintf(out, cap, "%#.2g", v);
}

typedef struct moments {
  int64_t valid, finite, nan, inf;
  double min, max, mean, std;
} moments;

static void moments_of(mq_state *S, const flat *f, int64_t n, moments *r) {
  memset(r, 0, sizeof *r);
  double sum = 0;
  for (int64_t i = 0; i < n; i++) {
    if ((i & 0xffff) == 0xffff) mq_check_interrupt(S);
    if (!flat_valid(f, i)) continue;
    r->valid++;
    double x = flat_get(f, i);
    if (isnan(x)) r->nan++;
    else if (isinf(x)) r->inf++;
    else {
      if (!r->finite || x < r->min) r->min = x;
      if (!r->finite || x > r->max) r->max = x;
      r->finite++;
      sum += x;
    }
  }
  r->mean = r->finite ? sum / (double)r->finite : NAN;
  double ss = 0;
  for (int64_t i = 0; i < n && r->finite > 1; i++) {
    if ((i & 0xffff) == 0xffff) mq_check_interrupt(S);
    double x = flat_get(f, i);
    if (flat_valid(f, i) && isfinite(x)) ss += (x - r->mean) * (x - r->mean);
  }
  r->std = r->finite > 1 ? sqrt(ss / (double)(r->finite - 1)) : NAN;
}

void mq_summary_line(mq_state *S, mq_buf *b, const mq_tensor *t) {
  mq_buf_puts(S, b, t->mask ? "MaskedTensor[" : "Tensor[");
  for (int d = 0; d < t->ndim; d++)
    mq_buf_printf(S, b, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  mq_buf_printf(S, b, "] %s", mq_dtype_name((mq_dtype)t->dtype));
  if (t->numel == 0) return;
  flat f = flat_of(S, t);
  moments r;
  moments_of(S, &f, t->numel, &r);
  if (t->mask) {
    double pct = 100.0 * (double)r.valid / (double)t->numel;
    /* never round a partly valid tensor to 100% or 0% */
    if (r.valid < t->numel && pct > 99.9) pct = 99.9;
    if (r.valid > 0 && pct < 0.1) pct = 0.1;
    mq_buf_printf(S, b, " · %.1f%% valid", pct);
    if (!r.valid) return;
  }
  char a[32], c[32];
  if (r.finite) {
    if (!mq_dtype_is_float((mq_dtype)t->dtype)) { /* bool, int64, int8 ... uint8: no ".0" */
      mq_buf_printf(S, b, " · min %.0f max %.0f", r.min, r.max);
    } else {
      short_num(a, sizeof a, r.min);
      short_num(c, sizeof c, r.max);
      mq_buf_printf(S, b, " · min %s max %s", a, c);
    }
    short_num(a, sizeof a, r.mean);
    mq_buf_printf(S, b, " mean %s", a);
    if (r.finite > 1) {
      short_num(a, sizeof a, r.std);
      mq_buf_printf(S, b, " std %s (ddof 1)", a); /* std(x)'s default is ddof 0: said */
    }
  }
  if (r.nan) mq_buf_printf(S, b, " · %lld NaN", (long long)r.nan);
  if (r.inf) mq_buf_printf(S, b, "%s%lld inf", r.nan ? ", " : " · ", (long long)r.inf);
}

/* --- quantiles and describe -------------------------------------------------------- */

double mq_quantile_sorted(const double *v, int64_t n, double q) {
  /* quantile's rule (kernels/quantile.c), method "linear", then the lerp,
   * which goes from the upper end when the weight is 0.5 or more */
  mq_qpick p = mq_quantile_pick(q, n - 1, MQ_QI_LINEAR, false, false);
  double t = p.w, a = v[p.below], bb = v[p.above], diff = bb - a;
  return t >= 0.5 ? bb - diff * (1 - t) : a + diff * t;
}

/* Ascending (no NaN reaches the sort); stable, so which of -0.0 and 0.0
 * shows as the minimum does not depend on the C library. */
#define NUM_BEFORE(x, y, ctx) (*(x) < *(y))
MQ_DEF_MSORT(sort_doubles, double, int, NUM_BEFORE)

/* One column's statistics: count, then mean, std, min, quartiles, max, NaN
 * where there is no valid entry (std: fewer than two). */
static void describe_column(mq_state *S, const flat *f, int64_t start, int64_t n, int64_t step,
                            double st[MQ_DESCRIBE_STATS]) {
  double *vals = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *vals);
  int64_t cnt = 0;
  bool nan = false;
  double sum = 0;
  for (int64_t k = 0, i = start; k < n; k++, i += step) {
    if ((k & 0xffff) == 0xffff) mq_check_interrupt(S);
    if (!flat_valid(f, i)) continue;
    double x = flat_get(f, i);
    nan |= isnan(x);
    sum += x;
    vals[cnt++] = x;
  }
  st[0] = (double)cnt;
  for (int s = 1; s < MQ_DESCRIBE_STATS; s++) st[s] = NAN;
  if (!cnt) return;
  /* a valid NaN makes every statistic NaN, as it does torch.masked's */
  double mean = sum / (double)cnt, ss = 0;
  for (int64_t k = 0; k < cnt; k++) ss += (vals[k] - mean) * (vals[k] - mean);
  st[1] = mean;
  st[2] = cnt > 1 ? sqrt(ss / (double)(cnt - 1)) : NAN;
  if (nan) return;
  vals = sort_doubles(S, vals, mq_scratch(S, (size_t)cnt * sizeof *vals), cnt, 0);
  st[3] = vals[0];
  st[7] = vals[cnt - 1];
  for (int q = 1; q <= 3; q++) st[3 + q] = mq_quantile_sorted(vals, cnt, q * 0.25);
}

const char *const mq_describe_names[MQ_DESCRIBE_STATS] = {"count", "mean", "std (ddof 1)", "min",
                                                          "25%",   "50%",  "75%", "max"};

double *mq_describe_stats(mq_state *S, mq_tensor *t, int dim, int64_t *ncols) {
  flat f = flat_of(S, t);
  /* columns: ncol of them, each [len] entries [step] apart from [start] */
  int64_t ncol = 1, len = t->numel, step = 1, cstride = 0;
  if (t->ndim >= 2) {
    int64_t last = t->shape[t->ndim - 1];
    if (t->ndim == 2 && dim == 1) {
      ncol = t->shape[0], len = last, step = 1, cstride = last;
    } else {
      ncol = last, len = last ? t->numel / last : 0, step = last, cstride = 1;
    }
  }
  size_t cells = mq_ck_zmul(S, (size_t)(ncol ? ncol : 1), MQ_DESCRIBE_STATS * sizeof(double), "describe");
  double *st = mq_scratch(S, cells);
  for (int64_t c = 0; c < ncol; c++) {
    mq_check_interrupt(S);
    describe_column(S, &f, c * cstride, len, step, st + c * MQ_DESCRIBE_STATS);
  }
  *ncols = ncol;
  return st;
}
