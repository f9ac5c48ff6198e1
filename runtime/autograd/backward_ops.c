/* backward_ops.c - the derivatives that are not elementwise: reductions
 * (sum, mean, amax, amin, prod, logsumexp, var, std, norm), the softmax
 * family, running sums and products, data movement (indexing, views, cat,
 * stack), and matmul.
 *
 * Masks: an input position gets a gradient only if it is valid and some
 * valid output it feeds received one; a plain computation (no mask on the
 * input, the output or the incoming gradient) gives a plain gradient, with
 * 0 where nothing flowed, as torch does for plain tensors. */
#include "backward.h"

#include <math.h>

#include "../tensor/masksum.h"
#include "../tensor/maskspan.h"
#include "../kernels/ops.h"
#include "../tensor/parallel.h"
#include "../tensor/shape.h"
#include "../kernels/softmax_simd.h"

/* A gradient of [shape], masked when [masked]; *m gets the mask bytes. */
static mq_tensor *grad_new(mq_state *S, int nd, const int64_t *shape, bool masked, uint8_t **m) {
  mq_tensor *r = mq_ag_gnew(S, nd, shape);
  *m = masked ? mq_ag_new_mask(S, r) : NULL;
  return r;
}

static inline bool valid(const uint8_t *m, int64_t i) { return !m || m[i]; }

/* Whether each of p[0 .. n) lies in [lo, hi). */
MQ_CHECK_ONLY static bool all_in(const int64_t *p, int64_t n, int64_t lo, int64_t hi) {
  for (int64_t k = 0; k < n; k++)
    if (p[k] < lo || p[k] >= hi) return false;
  return true;
}

/* --- reductions --------------------------------------------------------------- */

/* Per-output-slot statistics of the valid inputs. */
typedef struct slot_stats {
  double *count, *sum, *ties, *zeros, *prod_nz;
  int64_t *first; /* the first valid input equal to the output (median) */
} slot_stats;

static double *zeroed(mq_state *S, int64_t n) {
  double *p = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = 0;
  return p;
}

/* The derivative of one output slot's value y w.r.t. one valid input x. */
static double dreduce(const mq_gradnode *n, double x, double y, int64_t i, int64_t k,
                      const slot_stats *st) {
  if (n->kind == MQ_AG_MEDIAN) return i == st->first[k]; /* the selected entry only */
  if (n->kind == MQ_AG_VAR) {
    double mean = st->sum[k] / st->count[k], den = st->count[k] - n->prm[0];
    double d = 2 * (x - mean) / (den > 0 ? den : 0);
    return n->op ? d / (2 * y) : d;
  }
  if (n->kind == MQ_AG_NORM) {
    double p = n->prm[0], sg = (double)((x > 0) - (x < 0));
    if (p == 0) return 0;
    if (p == 1) return sg;
    if (isinf(p)) return fabs(x) == y ? sg / st->ties[k] : 0;
    if (y == 0) return 0; /* torch: a zero norm has a zero subgradient */
    if (p == 2) return x / y;
    if (x == 0) return 0; /* torch: for p < 1, not 0 * inf = NaN */
    return sg * pow(fabs(x), p - 1) / pow(y, p - 1);
  }
  switch ((mq_redop)n->op) { /* the rows' D(...) of ops_reduce.h */
#define RED_D(e) return (e);
#define RED_NODIFF break;
#define X(E, name, bind, deriv, ...)                                           \
  case MQ_RED_##E: RED_##deriv
    MQ_REDUCE_OPS(X)
#undef X
  case MQ_RED__COUNT: break;
  }
  return NAN; /* bool and int results are never recorded (mq_ag_rec_reduce) */
}

/* Valid entry [i] of value [v] into the statistics of slot [k], of value [y]. */
static inline void stat_add(slot_stats *st, int64_t k, int64_t i, double v, double y, bool norm_inf) {
  st->count[k] += 1;
  st->sum[k] += v;
  if (norm_inf ? fabs(v) == y : v == y) st->ties[k] += 1; /* ties split evenly */
  if (st->first[k] < 0 && (v == y || (v != v && y != y))) st->first[k] = i;
  if (v == 0) st->zeros[k] += 1;
  else st->prod_nz[k] *= v;
}

/* The statistics of slots [lo, hi) when the reduced dims are one block
 * (mq_bw_block_walk). */
typedef struct stats_job {
  const double *xv, *yv;
  const uint8_t *xm;
  slot_stats *st;
  int64_t len, inner;
  bool norm_inf;
} stats_job;

static void stats_run(void *ctx, int64_t k, int64_t i, int64_t n, int64_t ds) {
  const stats_job *J = ctx;
  const double *xv = J->xv, *yv = J->yv;
  const uint8_t *xm = J->xm;
  for (int64_t c = 0; c < n; c++)
    if (valid(xm, i + c)) stat_add(J->st, k + c * ds, i + c, xv[i + c], yv[k + c * ds], J->norm_inf);
}

static void stats_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const stats_job *J = ctx;
  mq_bw_block_walk(lo, hi, J->len, J->inner, stats_run, ctx);
}

/* A reduction's gradient, from the slots' statistics: each entry on its
 * own, so the threads share them out. */
typedef struct red_job {
  const mq_gradnode *n;
  const int64_t *at;
  const double *xv, *yv, *gv;
  const uint8_t *xm, *gm;
  const slot_stats *st;
  double *o;
  uint8_t *m;
  int64_t len, inner; /* without at: the block of reduced dims */
} red_job;

/* Entries [i, i + n) of slots k + c * ds (mq_bw_block_walk). */
static void red_run(void *ctx, int64_t k, int64_t i, int64_t n, int64_t ds) {
  const red_job *J = ctx;
  const double *xv = J->xv + i, *yv = J->yv + k, *gv = J->gv + k;
  const uint8_t *xm = J->xm ? J->xm + i : NULL, *gm = J->gm ? J->gm + k : NULL;
  double *o = J->o + i;
  uint8_t *m = J->m ? J->m + i : NULL;
  for (int64_t c = 0; c < n; c++) {
    /* under the mask the data is whatever the formula gives, as in torch
     * (1 for a sum); it is never read */
    o[c] = gv[c * ds] * dreduce(J->n, xv[c], yv[c * ds], i + c, k + c * ds, J->st);
    if (m) m[c] = valid(xm, c) && valid(gm, c * ds);
  }
}

/* Entries [lo, hi), their slots from the offset table (one call site of
 * dreduce, red_run's, which the compiler then inlines). */
static void red_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const red_job *J = ctx;
  for (int64_t i = lo; i < hi; i++) red_run(ctx, J->at[i], i, 1, 0);
}

/* The entries of slots [lo, hi), when the reduced dims are one block. */
static void red_slots(void *ctx, int64_t lo, int64_t hi, int t) {
  const red_job *J = ctx;
  mq_bw_block_walk(lo, hi, J->len, J->inner, red_run, ctx);
}

/* Moves to the next row (the last dim) of [x], keeping k0, the output
 * slot of the row's first entry, up to date ([ostr]: slot strides). */
static inline void next_row(const mq_tensor *x, const int64_t *ostr, int64_t *idx, int64_t *k0) {
  for (int d = x->ndim - 2; d >= 0; d--) {
    if (++idx[d] < x->shape[d]) {
      *k0 += ostr[d];
      return;
    }
    *k0 -= ostr[d] * (x->shape[d] - 1);
    idx[d] = 0;
  }
}

/* Rows [r0, r1) of the gradient of sum or mean (bw_sum_mean). */
typedef struct fill_job {
  const mq_tensor *x;
  const int64_t *ostr;
  const double *gv, *scale; /* scale: NULL for sum */
  const uint8_t *xm, *gm;
  double *o;
  uint8_t *m;
  int64_t inner, is;
  float *o32; /* the float32 gradient instead of o */
} fill_job;

static void fill_range(void *ctx, int64_t r0, int64_t r1, int t) {
  const fill_job *J = ctx;
  const double *gv = J->gv, *scale = J->scale;
  const uint8_t *xm = J->xm, *gm = J->gm;
  float *o32 = J->o32;
  int64_t inner = J->inner, is = J->is, idx[MQ_MAX_DIMS] = {0}, k0 = 0, rest = r0;
  for (int d = J->x->ndim - 2; d >= 0; d--) { /* the slot of row r0's first entry */
    idx[d] = rest % J->x->shape[d];
    rest /= J->x->shape[d];
    k0 += idx[d] * J->ostr[d];
  }
  for (int64_t row = r0; row < r1; row++, next_row(J->x, J->ostr, idx, &k0)) {
    if (o32) { /* a float32 gradient: the same values, rounded once */
      float *orow = o32 + row * inner;
      if (scale)
        for (int64_t j = 0; j < inner; j++) orow[j] = (float)(gv[k0 + j * is] * scale[k0 + j * is]);
      else
        for (int64_t j = 0; j < inner; j++) orow[j] = (float)gv[k0 + j * is];
    } else {
      double *orow = J->o + row * inner;
      if (scale)
        for (int64_t j = 0; j < inner; j++) orow[j] = gv[k0 + j * is] * scale[k0 + j * is];
      else
        for (int64_t j = 0; j < inner; j++) orow[j] = gv[k0 + j * is] * 1.0;
    }
    if (!J->m) continue;
    uint8_t *mrow = J->m + row * inner;
    const uint8_t *xr = xm ? xm + row * inner : NULL;
    for (int64_t j = 0; j < inner; j++)
      mrow[j] = (uint8_t)((xr ? xr[j] : 1) & (gm ? gm[k0 + j * is] : 1));
  }
}

/* The gradient of a float32 sum or mean over every dim: one value (g,
 * or g over the valid count) broadcast with stride 0, within x's mask
 * (shared, not copied). NULL when that is not the gradient's form. */
static mq_tensor *sum_all32(mq_state *S, mq_tensor *x, mq_tensor *g, bool mean) {
  /* a masked g with a plain x makes an all-valid mask: the general path too */
  if (g->mask && (!x->mask || !*(const uint8_t *)mq_tensor_data(mq_contiguous(S, g->mask))))
    return NULL;
  double v = mq_tensor_item(S, mq_get_data(S, g));
  if (mean) {
    int64_t c = x->numel;
    if (x->mask) c = mq_mask_count(S, x->mask);
    v *= 1 / (double)c;
  }
  mq_tensor *one = mq_tensor_scalar(S, MQ_DT_F32, (double)(float)v);
  mq_tensor *r = mq_expand(S, one, x->ndim, x->shape);
  if (x->mask) mq_tensor_set_mask(S, r, mq_contiguous(S, x->mask));
  return r;
}

/* sum and mean, the common case: every input of slot k gets g[k] (times 1
 * over the slot's valid count for mean), exactly what the general path
 * below computes, without its statistics, offset table and float64 copies
 * of x and y, and without a branch per entry. */
static void bw_sum_mean(mq_state *S, mq_tensor *x, mq_tensor *g, bool mean, const int64_t *ostr,
                        int64_t nout, mq_tensor **gin) {
  /* float32 for a float32 or half x (the gradient's type, as matmul's) */
  bool f32 = g->dtype == MQ_DT_F32 && (x->dtype == MQ_DT_F32 || x->dtype == MQ_DT_BF16 ||
                                       x->dtype == MQ_DT_F16);
  if (f32 && nout == 1 && x->numel > 1 && (gin[0] = sum_all32(S, x, g, mean))) return;
  g = mq_bw_g64(S, g); /* nout values: read in double */
  const double *gv = mq_bw_d(g);
  const uint8_t *xm = mq_ag_maskp(S, x), *gm = mq_ag_maskp(S, g);
  int nd = x->ndim;
  int64_t N = x->numel, inner = nd ? x->shape[nd - 1] : 1, is = nd ? ostr[nd - 1] : 0;
  int64_t rows = inner ? N / inner : 0, idx[MQ_MAX_DIMS] = {0}, k0 = 0;
  double *scale = NULL; /* mean: 1 / the valid count of each slot */
  if (mean) {
    scale = zeroed(S, nout);
    for (int64_t r = 0; r < rows; r++, next_row(x, ostr, idx, &k0)) {
      const uint8_t *mr = xm ? xm + r * inner : NULL;
      if (is == 0) {
        int64_t c = inner;
        if (mr) {
          c = 0;
          for (int64_t j = 0; j < inner; j++) c += mr[j];
        }
        scale[k0] += (double)c;
      } else {
        for (int64_t j = 0; j < inner; j++) scale[k0 + j * is] += mr ? (double)mr[j] : 1.0;
      }
    }
    for (int64_t k = 0; k < nout; k++) scale[k] = 1 / scale[k];
  }
  uint8_t *m;
  mq_tensor *r = f32 ? mq_bw_gnew32(S, nd, x->shape) : mq_ag_gnew(S, nd, x->shape);
  m = xm || gm ? mq_ag_new_mask(S, r) : NULL;
  /* rows are independent: the threads share them out */
  fill_job J = {x, ostr, gv, scale, xm, gm, f32 ? NULL : mq_bw_d(r), m, inner, is,
                f32 ? mq_bw_f(r) : NULL};
  mq_parallel_for(S, mq_parallel_threads_for(S, N), rows, inner >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / (inner ? inner : 1),
                  fill_range, &J);
  gin[0] = r;
}

void mq_bw_reduce(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *x = n->in[0];
  if (!x->requires_grad) return;
  /* input position -> output slot: the output keeps the unreduced dims in
   * order, so its contiguous layout is the same with or without keepdim */
  int64_t ostr[MQ_MAX_DIMS], nout = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    bool red = (n->dims >> d) & 1;
    ostr[d] = red ? 0 : nout;
    if (!red) nout *= x->shape[d];
  }
  if (n->kind == MQ_AG_REDUCE && (n->op == MQ_RED_SUM || n->op == MQ_RED_MEAN)) {
    bw_sum_mean(S, x, g, n->op == MQ_RED_MEAN, ostr, nout, gin);
    return;
  }
  g = mq_bw_g64(S, g);
  const double *xv = mq_bw_d(mq_bw_f64_to(S, x, x->ndim, x->shape));
  const double *yv = mq_bw_d(mq_bw_f64_to(S, t, t->ndim, t->shape));
  const double *gv = mq_bw_d(g);
  const uint8_t *xm = mq_ag_maskp(S, x), *gm = mq_ag_maskp(S, g);
  int64_t N = x->numel;

  slot_stats st = {zeroed(S, nout), zeroed(S, nout), zeroed(S, nout), zeroed(S, nout),
                   zeroed(S, nout), mq_scratch(S, (size_t)(nout ? nout : 1) * sizeof *st.first)};
  bool norm_inf = n->kind == MQ_AG_NORM && isinf(n->prm[0]);
  for (int64_t k = 0; k < nout; k++) st.prod_nz[k] = 1, st.first[k] = -1;
  /* the reduced dims one block: the threads share out the slots */
  stats_job K = {xv, yv, xm, &st, 1, 1, norm_inf};
  int64_t outer, grain = 1;
  const int64_t *at = NULL; /* input position -> slot, unless one block */
  if (N > 0 && mq_bw_block(x->ndim, x->shape, n->dims, &outer, &K.len, &K.inner)) {
    int64_t len = K.len > 0 ? K.len : 1;
    grain = len >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / len;
    mq_parallel_for(S, mq_parallel_threads_for(S, N), nout, grain, stats_range, &K);
  } else {
    at = mq_iter_offsets(S, x->ndim, x->shape, ostr);
    for (int64_t i = 0; i < N; i++)
      if (valid(xm, i)) stat_add(&st, at[i], i, xv[i], yv[at[i]], norm_inf);
  }

  uint8_t *m;
  mq_tensor *r = grad_new(S, x->ndim, x->shape, xm || gm, &m);
  red_job J = {n, at, xv, yv, gv, xm, gm, &st, mq_bw_d(r), m, K.len, K.inner};
  if (at) mq_parallel_for(S, mq_parallel_threads_for(S, N), N, MQ_PAR_GRAIN, red_range, &J);
  else mq_parallel_for(S, mq_parallel_threads_for(S, N), nout, grain, red_slots, &J);
  gin[0] = r;
}

/* --- dims: softmax, log_softmax, cumsum, cumprod ---------------------------- */

/* [t] viewed as (outer, len, inner) around dim [dim]. */
typedef struct around {
  int64_t outer, len, inner;
} around;

static around split(const mq_tensor *t, int dim) {
  around a = {1, 1, 1};
  if (t->ndim == 0) return a;
  int d = dim < 0 ? dim + t->ndim : dim;
  for (int i = 0; i < d; i++) a.outer *= t->shape[i];
  a.len = t->shape[d];
  for (int i = d + 1; i < t->ndim; i++) a.inner *= t->shape[i];
  return a;
}

/* What the derivatives along one dim share: the input, its slices, the
 * masks, and the new gradient (o, with mask m or none). */
typedef struct along {
  mq_tensor *x, *r;
  around A;
  const double *gv;
  const uint8_t *xm, *gm;
  double *o;
  uint8_t *m;
} along;

static bool along_init(mq_state *S, along *J, mq_tensor *t, mq_tensor *g) {
  J->x = t->node->in[0];
  if (!J->x->requires_grad) return false;
  J->A = split(J->x, t->node->dim);
  J->gv = mq_bw_d(g);
  J->xm = mq_ag_maskp(S, J->x), J->gm = mq_ag_maskp(S, g);
  J->r = grad_new(S, J->x->ndim, J->x->shape, J->xm || J->gm, &J->m);
  J->o = mq_bw_d(J->r);
  return true;
}


/* softmax: g_x = y (g - sum(g y)); log_softmax: g_x = g - exp(y) sum(g),
 * sums over the slice's valid entries that received a gradient. A slice
 * where none did gets none (masked out, or 0 when plain). */
/* v where [keep] (0 or 1), else [fill]: a select on the bits, without a
 * branch (random masks mispredict half of them) and without letting a NaN
 * through, as a multiply by the mask would. */
static inline double pick(double v, uint8_t keep, uint64_t fill) {
  uint64_t b, k = (uint64_t)0 - keep;
  memcpy(&b, &v, sizeof b);
  b = (b & k) | (fill & ~k);
  memcpy(&v, &b, sizeof v);
  return v;
}
#define NEG_ZERO UINT64_C(0x8000000000000000) /* s + -0.0 is s, whatever s */

/* Contiguous slices [a0, a1) of softmax's derivative, branch-free. */
typedef struct sm_bw_job {
  const along *J;
  const mq_mask_rows *xrs; /* the spans of x's mask rows (maskspan.h), or NULL */
  const double *yv;
  bool lg, f32; /* f32: a float32 result (mq_bw_exp) */
} sm_bw_job;

static void sm_bw_range(void *ctx, int64_t a0, int64_t a1, int t) {
  const sm_bw_job *B = ctx;
  const along *J = B->J;
  const double *yv = B->yv;
  bool lg = B->lg;
  for (int64_t a = a0; a < a1; a++) {
    int64_t base = a * J->A.len, len = J->A.len;
    const double *gr = J->gv + base, *yr = yv + base;
    const uint8_t *xr = J->xm ? J->xm + base : NULL, *gmr = J->gm ? J->gm + base : NULL;
    double s = 0;
    uint8_t any = 0;
    double *o = J->o + base;
    uint8_t *m = J->m ? J->m + base : NULL;
    /* only the span of the input's valid entries: outside it every term
     * is -0 (no change to s) and every result masked out (0); a padded
     * slice's span is known, all valid, and read without x's mask */
    int64_t f, l;
    if (B->xrs && B->xrs->full[a]) {
      f = B->xrs->lo[a], l = B->xrs->hi[a];
      xr = NULL;
    } else {
      mq_valid_span(xr, len, &f, &l);
    }
    for (int64_t j = 0; j < f; j++) o[j] = 0;
    for (int64_t j = l; j < len; j++) o[j] = 0;
    if (m) {
      memset(m, 0, (size_t)f);
      memset(m + l, 0, (size_t)(len - l));
    }
    for (int64_t j = f; j < l; j++) {
      uint8_t ok = (uint8_t)((xr ? xr[j] : 1) & (gmr ? gmr[j] : 1));
      s += pick(lg ? gr[j] : gr[j] * yr[j], ok, NEG_ZERO);
      any |= ok;
    }
    for (int64_t j = f; j < l; j++) {
      uint8_t ok = xr ? xr[j] : 1, got = (uint8_t)(ok & (gmr ? gmr[j] : 1));
      double gi = pick(gr[j], got, 0), y = pick(yr[j], ok, 0);
      o[j] = pick(lg ? gi - mq_bw_exp(y, B->f32) * s : y * (gi - s), (uint8_t)(ok & any), 0);
      if (m) m[j] = (uint8_t)(ok & any);
    }
  }
}

/* Slices [s0, s1) (slice a * inner + c: entries base + j * inner) of
 * softmax's derivative along a dim that is not the last: up to SM_COLS
 * neighbouring slices at a time, walked row by row (a slice alone strides
 * a whole row per entry: a cache miss each), each slice's sum still in its
 * own order along j. */
enum { SM_COLS = 256 };
MQ_WIDE static void sm_bw_strided(void *ctx, int64_t s0, int64_t s1, int t) {
  (void)t;
  uint8_t sm_all_valid[SM_COLS]; /* a plain operand's mask row */
  memset(sm_all_valid, 1, sizeof sm_all_valid);
  const sm_bw_job *B = ctx;
  const along *J = B->J;
  const double *yv = B->yv, *gv = J->gv;
  const uint8_t *xm = J->xm, *gm = J->gm;
  double *out = J->o;
  uint8_t *mo = J->m;
  int64_t len = J->A.len, inner = J->A.inner;
  bool lg = B->lg;
  double s[SM_COLS];
  uint8_t any[SM_COLS];
  for (int64_t sl = s0; sl < s1;) {
    int64_t a = sl / inner, c0 = sl - a * inner, w = inner - c0;
    if (w > SM_COLS) w = SM_COLS;
    if (w > s1 - sl) w = s1 - sl;
    int64_t base = a * len * inner + c0;
    for (int64_t c = 0; c < w; c++) s[c] = 0, any[c] = 0;
    /* a term not formed adds -0, which leaves s as it was */
    for (int64_t j = 0; j < len; j++) {
      int64_t r = base + j * inner;
      const double *restrict gr = gv + r, *restrict yr = yv + r;
      const uint8_t *restrict xr = xm ? xm + r : sm_all_valid, *restrict gmr = gm ? gm + r : sm_all_valid;
      if (lg)
        for (int64_t c = 0; c < w; c++) {
          uint8_t ok = (uint8_t)(xr[c] & gmr[c]);
          s[c] += pick(gr[c], ok, NEG_ZERO);
          any[c] |= ok;
        }
      else
        for (int64_t c = 0; c < w; c++) {
          uint8_t ok = (uint8_t)(xr[c] & gmr[c]);
          s[c] += pick(gr[c] * yr[c], ok, NEG_ZERO);
          any[c] |= ok;
        }
    }
    for (int64_t j = 0; j < len; j++) {
      int64_t r = base + j * inner;
      const double *restrict gr = gv + r, *restrict yr = yv + r;
      const uint8_t *restrict xr = xm ? xm + r : sm_all_valid, *restrict gmr = gm ? gm + r : sm_all_valid;
      double *restrict o = out + r;
      if (lg)
        for (int64_t c = 0; c < w; c++) {
          uint8_t ok = xr[c];
          double gi = pick(gr[c], (uint8_t)(ok & gmr[c]), 0), y = pick(yr[c], ok, 0);
          o[c] = pick(gi - mq_bw_exp(y, B->f32) * s[c], (uint8_t)(ok & any[c]), 0);
        }
      else
        for (int64_t c = 0; c < w; c++) {
          uint8_t ok = xr[c];
          double gi = pick(gr[c], (uint8_t)(ok & gmr[c]), 0), y = pick(yr[c], ok, 0);
          o[c] = pick(y * (gi - s[c]), (uint8_t)(ok & any[c]), 0);
        }
      if (mo)
        for (int64_t c = 0; c < w; c++) mo[r + c] = (uint8_t)(xr[c] & any[c]);
    }
    sl += w;
  }
}

/* The float32 form of sm_bw_range, for contiguous slices of a float32
 * softmax with a float32 gradient: the same formula, the slice's sum in
 * double in sixteen fixed lanes (entry f + i in lane i % 16, added
 * pairwise), so that it vectorizes and depends on the slice alone, never on
 * the thread count; each result computed in double and rounded once.
 * log_softmax's e^y is masq's float32 exp (mq_vexpf: vectorizes, and the
 * same bits on every CPU, where glibc's double exp picks an FMA variant
 * by CPU), as torch's float32 backward takes it.
 * Masked-out operands are selected to +0 in float32 before the product (a
 * lane starts at +0, so adding +0 changes nothing, as sm_bw_range's -0
 * does not). No mask is the all-ones row [ones]. With x masked, the result's
 * mask is x's wherever a slice got a gradient: [bad] flags the slices with
 * valid entries that got none, and the mask is only built if one has. */
#define SM_LANES 16
#if MQ_CPU_X86
#define SM_DOT(cpu, a, b, m1, m2, n, d)                                        \
  ((cpu) == MQ_CPU_AVX512 ? mq_simd_fdot_f32_avx512(a, b, m1, m2, n, d)        \
                          : mq_simd_fdot_f32_avx2(a, b, m1, m2, n, d))
#define SM_GRAD(cpu, g, y, xm, gm, n, s, o)                                    \
  ((cpu) == MQ_CPU_AVX512 ? mq_simd_smgrad_f32_avx512(g, y, xm, gm, n, s, o)   \
                          : mq_simd_smgrad_f32_avx2(g, y, xm, gm, n, s, o))
#else
#define SM_DOT(cpu, a, b, m1, m2, n, d) false
#define SM_GRAD(cpu, g, y, xm, gm, n, s, o) ((void)0)
#endif
typedef struct sm_bw32_job {
  const float *yv, *gv;
  const uint8_t *xm, *gm, *ones;
  float *o;
  uint8_t *m, *bad; /* m: the mask to write (x plain, g masked); else bad */
  /* the spans of x's and g's mask rows (maskspan.h), or NULL: a padded
   * slice whose span both masks hold all valid is read without either */
  const mq_mask_rows *xrs, *grs;
  int64_t len;
  int cpu; /* the state's CPU path: the sum's loop (softmax_simd.h) */
  bool lg;
} sm_bw32_job;

static inline float sel32(float v, uint8_t keep) {
  uint32_t b, k = (uint32_t)0 - keep;
  memcpy(&b, &v, sizeof b);
  b &= k;
  memcpy(&v, &b, sizeof v);
  return v;
}

static inline double lanes16(const double *d) {
  return (((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]))) +
         (((d[8] + d[9]) + (d[10] + d[11])) + ((d[12] + d[13]) + (d[14] + d[15])));
}

MQ_WIDE static void sm_bw_range32(void *ctx, int64_t a0, int64_t a1, int t) {
  const sm_bw32_job *B = ctx;
  int64_t len = B->len;
  bool lg = B->lg;
  for (int64_t a = a0; a < a1; a++) {
    int64_t base = a * len;
    const float *gr = B->gv + base, *yr = B->yv + base;
    const uint8_t *xr = B->xm ? B->xm + base : B->ones, *gmr = B->gm ? B->gm + base : B->ones;
    float *o = B->o + base;
    int64_t f, l;
    if (B->xrs && B->xrs->full[a] &&
        (!B->gm || (B->grs && B->grs->full[a] && B->grs->lo[a] <= B->xrs->lo[a] &&
                    B->grs->hi[a] >= B->xrs->hi[a]))) {
      f = B->xrs->lo[a], l = B->xrs->hi[a]; /* every entry of [f, l) valid in both */
      xr = gmr = B->ones;
    } else {
      mq_valid_span(B->xm ? xr : NULL, len, &f, &l);
    }
    for (int64_t j = 0; j < f; j++) o[j] = 0;
    for (int64_t j = l; j < len; j++) o[j] = 0;
    double d[SM_LANES] = {0};
    uint8_t any = 0;
    int64_t j = f;
    if (lg) {
      for (; j + SM_LANES <= l; j += SM_LANES)
        for (int k = 0; k < SM_LANES; k++) {
          uint8_t ok = (uint8_t)(xr[j + k] & gmr[j + k]);
          d[k] += (double)sel32(gr[j + k], ok);
          any |= ok;
        }
    } else if (B->cpu != MQ_CPU_PORTABLE && l - j >= SM_LANES) { /* the same lanes */
      int64_t nb = (l - j) / SM_LANES * SM_LANES;
      any = SM_DOT(B->cpu, gr + j, yr + j, xr + j, gmr + j, nb, d);
      j += nb;
    } else {
      for (; j + SM_LANES <= l; j += SM_LANES)
        for (int k = 0; k < SM_LANES; k++) {
          uint8_t ok = (uint8_t)(xr[j + k] & gmr[j + k]);
          d[k] += (double)sel32(gr[j + k], ok) * (double)sel32(yr[j + k], ok);
          any |= ok;
        }
    }
    for (int k = 0; j < l; j++, k++) {
      uint8_t ok = (uint8_t)(xr[j] & gmr[j]);
      double gs = sel32(gr[j], ok);
      d[k] += lg ? gs : gs * (double)sel32(yr[j], ok);
      any |= ok;
    }
    double s = lanes16(d);
    if (lg) {
      for (j = f; j < l; j++) {
        uint8_t ok = xr[j];
        double gi = sel32(gr[j], (uint8_t)(ok & gmr[j])), y = sel32(yr[j], ok);
        o[j] = sel32((float)(gi - mq_bw_exp(y, true) * s), (uint8_t)(ok & any));
      }
    } else {
      j = f;
      if (B->cpu != MQ_CPU_PORTABLE && any) { /* the same operations per entry */
        int64_t nb = (l - j) / SM_LANES * SM_LANES;
        SM_GRAD(B->cpu, gr + j, yr + j, xr + j, gmr + j, nb, s, o + j);
        j += nb;
      }
      for (; j < l; j++) {
        uint8_t ok = xr[j];
        double gi = sel32(gr[j], (uint8_t)(ok & gmr[j])), y = sel32(yr[j], ok);
        o[j] = sel32((float)(y * (gi - s)), (uint8_t)(ok & any));
      }
    }
    if (B->m) { /* x plain: valid where the slice got a gradient */
      memset(B->m + base, any, (size_t)len);
    } else if (B->bad) {
      B->bad[a] = f < l && !any;
    }
  }
}

/* The float32 path of mq_bw_softmax (contiguous slices); false when it
 * does not apply. */
static bool bw_softmax32(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *x = t->node->in[0];
  around A = split(x, t->node->dim);
  if (g->dtype != MQ_DT_F32 || t->dtype != MQ_DT_F32 || A.inner != 1 || A.len == 0) return false;
  if (!mq_bw_gstride(g)) g = mq_contiguous(S, g); /* a sum's single value, spread */
  sm_bw32_job B = {.yv = mq_bw_f32_at(S, t, t->ndim, t->shape), .gv = mq_bw_f(g),
                   .xm = mq_ag_maskp(S, x), .gm = mq_ag_maskp(S, g), .len = A.len,
                   .cpu = S->cpu, .lg = t->node->op};
  if (B.gm == B.xm) B.gm = NULL; /* the same bytes (sum(softmax(x) * w)'s): x's alone */
  if (B.xm && x->mask->ndim == x->ndim) { /* slices are rows: the spans of padded ones */
    B.xrs = mq_mask_rows_of(S, x->mask);
    if (B.xrs && B.gm && g->mask->ndim == g->ndim) B.grs = mq_mask_rows_of(S, g->mask);
  }
  if (!B.xm || !B.gm || B.xrs) {
    uint8_t *ones = mq_scratch(S, (size_t)A.len);
    memset(ones, 1, (size_t)A.len);
    B.ones = ones;
  }
  mq_tensor *r = mq_bw_gnew32(S, x->ndim, x->shape);
  if (B.xm) {
    B.bad = mq_scratch(S, (size_t)(A.outer ? A.outer : 1));
  } else if (B.gm) {
    B.m = mq_ag_new_mask(S, r);
  }
  B.o = mq_bw_f(r);
  mq_parallel_for(S, mq_parallel_threads_for(S, t->numel), A.outer,
                  A.len >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / A.len, sm_bw_range32, &B);
  if (B.xm) {
    int64_t nbad = 0;
    for (int64_t a = 0; a < A.outer; a++) nbad += B.bad[a];
    if (!nbad) { /* x's own mask, shared */
      mq_tensor_set_mask(S, r, mq_contiguous(S, x->mask));
    } else {
      uint8_t *m = mq_ag_new_mask(S, r);
      for (int64_t a = 0; a < A.outer; a++) {
        if (B.bad[a]) memset(m + a * A.len, 0, (size_t)A.len);
        else memcpy(m + a * A.len, B.xm + a * A.len, (size_t)A.len);
      }
    }
  }
  gin[0] = r;
  return true;
}

void mq_bw_softmax(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  if (!t->node->in[0]->requires_grad || bw_softmax32(S, t, g, gin)) return;
  g = mq_bw_g64(S, g);
  along J;
  if (!along_init(S, &J, t, g)) return;
  bool lg = t->node->op;
  const double *yv = mq_bw_d(mq_bw_f64_to(S, t, t->ndim, t->shape));
  if (J.A.inner == 1) { /* contiguous slices, shared out among the threads */
    sm_bw_job B = {&J, NULL, yv, lg, t->dtype == MQ_DT_F32};
    if (J.xm && J.x->mask->ndim == J.x->ndim) B.xrs = mq_mask_rows_of(S, J.x->mask); /* slices are rows */
    int64_t len = J.A.len > 0 ? J.A.len : 1;
    mq_parallel_for(S, mq_parallel_threads_for(S, t->numel), J.A.outer, len >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / len,
                    sm_bw_range, &B);
    gin[0] = J.r;
    return;
  }
  /* strided slices, each on its own: the threads share them out */
  sm_bw_job B = {&J, NULL, yv, lg, t->dtype == MQ_DT_F32};
  int64_t len = J.A.len > 0 ? J.A.len : 1;
  mq_parallel_for(S, mq_parallel_threads_for(S, t->numel), J.A.outer * J.A.inner,
                  len >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / len, sm_bw_strided, &B);
  gin[0] = J.r;
}

/* Running sums and products skip masked-out entries (they count as the
 * identity), so those get no gradient; entry j feeds every valid i >= j. */
void mq_bw_cumulative(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  along J;
  if (!along_init(S, &J, t, g)) return;
  if (!t->node->op) { /* cumsum: each slice's suffix sum of the gradients */
    int64_t len = J.A.len, inner = J.A.inner;
    double s[SM_COLS];
    bool any[SM_COLS];
    for (int64_t a = 0; a < J.A.outer; a++)
      for (int64_t c0 = 0; c0 < inner; c0 += SM_COLS) { /* neighbouring slices row by row */
        int64_t w = inner - c0 < SM_COLS ? inner - c0 : SM_COLS, base = a * len * inner + c0;
        for (int64_t c = 0; c < w; c++) s[c] = 0, any[c] = false;
        for (int64_t j = len - 1; j >= 0; j--)
          for (int64_t c = 0, i = base + j * inner; c < w; c++, i++) {
            bool ok = valid(J.xm, i);
            if (ok && valid(J.gm, i)) s[c] += J.gv[i], any[c] = true;
            J.o[i] = ok && any[c] ? s[c] : 0;
            if (J.m) J.m[i] = ok && any[c];
          }
        mq_poll(S);
      }
    gin[0] = J.r;
    return;
  }
  const double *xv = mq_bw_d(mq_bw_f64_to(S, J.x, J.x->ndim, J.x->shape));
  for (int64_t a = 0; a < J.A.outer; a++)
    for (int64_t c = 0; c < J.A.inner; c++) {
      int64_t base = a * J.A.len * J.A.inner + c;
#define AT(j) (base + (j) * J.A.inner)
#define GOT(j) (valid(J.xm, AT(j)) && valid(J.gm, AT(j)))
      double prefix = 1; /* product of the valid entries before j */
      for (int64_t j = 0; j < J.A.len; j++) {
        int64_t i = AT(j);
        bool ok = valid(J.xm, i), any = false;
        double s = 0, p = prefix;
        for (int64_t k = j; ok && k < J.A.len; k++) {
          if (k > j && valid(J.xm, AT(k))) p *= xv[AT(k)];
          if (GOT(k)) s += J.gv[AT(k)] * p, any = true;
        }
        J.o[i] = ok && any ? s : 0;
        if (J.m) J.m[i] = ok && any;
        if (ok) prefix *= xv[i];
      }
#undef GOT
#undef AT
    }
  gin[0] = J.r;
}

/* exp(a - b) for a <= b, and 1 when they are equal (both inf or both -inf
 * included, where the difference is NaN): the weight of a running
 * log-sum's term. */
static inline double lse_w(double a, double b) { return a == b ? 1 : exp(a - b); }

/* logcumsumexp: y_i = log sum_{k <= i} exp(x_k) over a slice's valid
 * entries, so g_x[j] = sum_{i >= j} g_i exp(x_j - y_i) = exp(x_j - y_j) R_j
 * with R_j = sum_{i >= j} g_i exp(y_j - y_i), the suffix sum
 * R_j = g_j + exp(y_j - y_j') R_j' (j' the next valid entry). y grows
 * along the slice, so every factor is at most 1 and nothing overflows. y is
 * the result as computed (float64 from float32 for a float32 one). An
 * entry no valid gradient follows gets none, as cumsum's. Slices
 * [lo, hi), each one thread's, in a fixed order. */
typedef struct lcse_bw_job {
  const along *J;
  const double *xv, *yv;
} lcse_bw_job;

static void lcse_bw_range(void *ctx, int64_t lo, int64_t hi, int t) {
  (void)t;
  const lcse_bw_job *B = ctx;
  const along *J = B->J;
  int64_t len = J->A.len, inner = J->A.inner;
  for (int64_t k = lo; k < hi; k++) {
    int64_t base = (k / inner) * len * inner + k % inner;
    double r = 0, ynext = 0;
    bool have = false, any = false;
    for (int64_t j = len - 1; j >= 0; j--) {
      int64_t i = base + j * inner;
      if (!valid(J->xm, i)) {
        J->o[i] = 0;
        if (J->m) J->m[i] = 0;
        continue;
      }
      double y = B->yv[i];
      bool got = valid(J->gm, i);
      if (have) r *= lse_w(y, ynext);
      if (got) r = have ? J->gv[i] + r : J->gv[i];
      else if (!have) r = 0;
      have = true, ynext = y, any |= got;
      J->o[i] = any ? lse_w(B->xv[i], y) * r : 0;
      if (J->m) J->m[i] = any;
    }
  }
}

void mq_bw_logcumsumexp(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  along J;
  if (!along_init(S, &J, t, g)) return;
  lcse_bw_job B = {&J, mq_bw_d(mq_bw_f64_to(S, J.x, J.x->ndim, J.x->shape)),
                   mq_bw_d(mq_bw_f64_to(S, t, t->ndim, t->shape))};
  int64_t slices = J.A.outer * J.A.inner, len = J.A.len ? J.A.len : 1;
  int n = mq_parallel_threads_for(S, J.x->numel);
  mq_parallel_for(S, n, slices, MQ_PAR_GRAIN / len + 1, lcse_bw_range, &B);
  gin[0] = J.r;
}

/* --- data movement ------------------------------------------------------------ */

/* A rearrangement's gradient, entries [lo, hi) of g: each lands on its own
 * input element, as 0 + g (the sum the general path forms: +0 for -0). */
/* Each element of g to its place: float64, or (f32) a float32 g, read
 * with stride gs (0: the one-value form), into a float32 gradient: a move
 * rounds nothing, so a float32 gradient stays float32. */
typedef struct move_job {
  const int64_t *from;
  const double *gv;
  const uint8_t *gm, *um;
  double *o;
  uint8_t *m;
  const float *gv32;
  float *o32;
  int64_t gs;
} move_job;

static void move_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const move_job *J = ctx;
  const int64_t *from = J->from;
  const double *gv = J->gv;
  const uint8_t *gm = J->gm, *um = J->um;
  double *o = J->o;
  uint8_t *m = J->m;
  const float *gv32 = J->gv32;
  float *o32 = J->o32;
  int64_t gs = J->gs;
  for (int64_t k = lo; k < hi; k++) {
    int64_t d = from[k];
    bool got = valid(gm, k);
    /* 0 + g: the sum a gradient added back there is (-0 becomes +0) */
    if (o32) o32[d] = got ? (float)(0.0 + (double)gv32[k * gs]) : 0.0f;
    else o[d] = got ? 0.0 + gv[k] : 0.0;
    if (m) m[d] = got && valid(um, d);
  }
}

/* The op is replayed on tensors holding the element numbers of its inputs
 * (numbered across all inputs, for cat and stack); the result says, for
 * each output element, which input element it came from, and the gradient
 * is added back there. One rule for every view, index, cat and stack. */
void mq_bw_permute(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *u = n->in[0];
  if (!u->requires_grad) return;
  const int *p = n->args;
  int64_t inv[MQ_MAX_DIMS];
  for (int d = 0; d < u->ndim; d++) inv[p[d]] = d;
  /* g's entries moved back, within u's mask (sum_to of equal shapes) */
  gin[0] = mq_bw_sum_to(S, mq_contiguous(S, mq_permute(S, g, u->ndim, inv)), u);
}

void mq_bw_gather(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  if (n->op == 2) { /* expand: the sums of a broadcast operand, on threads */
    if (n->in[0]->requires_grad) gin[0] = mq_bw_sum_to(S, g, n->in[0]);
    return;
  }
  int64_t *base = mq_scratch(S, (size_t)n->nin * sizeof *base), total = 0;
  for (int i = 0; i < n->nin; i++) {
    base[i] = total;
    total += n->in[i]->numel;
  }
  mq_tensor *src;
  if (n->replay) {
    mq_tensor **ids = mq_scratch(S, (size_t)n->ntot * sizeof *ids);
    for (int i = 0; i < n->ntot; i++) ids[i] = n->in[i];
    for (int i = 0; i < n->nin; i++) {
      mq_tensor *u = n->in[i], *e = mq_tensor_new(S, MQ_DT_I64, u->ndim, u->shape);
      int64_t *p = mq_tensor_data(e);
      for (int64_t k = 0; k < u->numel; k++) p[k] = base[i] + k;
      ids[i] = e;
    }
    src = mq_contiguous(S, n->replay(S, ids, n->args));
  } else {
    src = n->in[n->nin]; /* worked out when the op ran */
  }
  if (src->numel != t->numel || src->dtype != MQ_DT_I64)
    mq_error(S, "backward of %s: replaying the op gave shape %s of %s, expected %lld elements",
             mq_ag_node_name(n), mq_shape_str(S, src->ndim, src->shape),
             mq_dtype_name((mq_dtype)src->dtype), (long long)t->numel);
  const int64_t *from = mq_tensor_data(src);
  const uint8_t *gm = mq_ag_maskp(S, g);
  bool f32 = g->dtype == MQ_DT_F32 && n->op == 1; /* moves only: a sum of repeats is in double */
  if (!f32) g = mq_bw_g64(S, g);
  const double *gv = f32 ? NULL : mq_bw_d(g);
  const float *gv32 = f32 ? mq_bw_f(g) : NULL;
  int64_t gs = f32 ? mq_bw_gstride(g) : 1;
  if (n->op == 1 && n->nin == 1) { /* a rearrangement: on threads */
    mq_tensor *u = n->in[0];
    if (!u->requires_grad) return;
    const uint8_t *um = mq_ag_maskp(S, u);
    move_job J = {from, gv, gm, um, NULL, NULL, gv32, NULL, gs};
    mq_tensor *r = f32 ? mq_bw_gnew32(S, u->ndim, u->shape) : mq_ag_gnew(S, u->ndim, u->shape);
    J.m = gm || um ? mq_ag_new_mask(S, r) : NULL;
    if (f32) J.o32 = mq_bw_f(r);
    else J.o = mq_bw_d(r);
    mq_parallel_for(S, mq_parallel_threads_for(S, t->numel), t->numel, MQ_PAR_GRAIN, move_range, &J);
    gin[0] = r;
    return;
  }
  double *acc = NULL;
  float *acc32 = NULL;
  uint8_t *got = mq_scratch(S, (size_t)(total ? total : 1));
  if (n->op == 1) { /* cat: every element of the inputs written once, on threads */
    size_t es = f32 ? sizeof(float) : sizeof(double);
    void *a = mq_scratch(S, (size_t)(total ? total : 1) * es);
    move_job J = {from, gv, gm, NULL, NULL, got, gv32, NULL, gs};
    if (f32) J.o32 = acc32 = a;
    else J.o = acc = a;
    mq_parallel_for(S, mq_parallel_threads_for(S, t->numel), t->numel, MQ_PAR_GRAIN, move_range, &J);
  } else {
    acc = zeroed(S, total);
    memset(got, 0, (size_t)total);
    MQ_ASSERT(all_in(from, t->numel, -1, total)); /* an element number of the inputs, or -1 */
    for (int64_t k = 0; k < t->numel; k++) {
      /* no gradient flowed here, or (-1: a masked-out index) nothing was read */
      if (!valid(gm, k) || from[k] < 0) continue;
      acc[from[k]] += gv[k];
      got[from[k]] = 1;
    }
  }
  for (int i = 0; i < n->nin; i++) {
    mq_tensor *u = n->in[i];
    if (!u->requires_grad) continue;
    const uint8_t *um = mq_ag_maskp(S, u);
    mq_tensor *r = f32 ? mq_bw_gnew32(S, u->ndim, u->shape) : mq_ag_gnew(S, u->ndim, u->shape);
    uint8_t *m = gm || um ? mq_ag_new_mask(S, r) : NULL;
    if (f32) memcpy(mq_bw_f(r), acc32 + base[i], (size_t)u->numel * sizeof(float));
    else memcpy(mq_bw_d(r), acc + base[i], (size_t)u->numel * sizeof(double));
    if (m)
      for (int64_t k = 0; k < u->numel; k++) m[k] = got[base[i] + k] && valid(um, k);
    gin[i] = r;
  }
}

/* scatter_add (gather.c): x gets g, src the gradient at the output element
 * it was added to (aux in[2]; -1: none). */
void mq_bw_scatter_add(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *node = t->node;
  mq_tensor *x = node->in[0], *src = node->in[1], *pos = node->in[2];
  const double *gv = mq_bw_d(g);
  const uint8_t *gm = mq_ag_maskp(S, g);
  if (x->requires_grad) { /* d out / d x is 1 at every valid entry of x */
    const uint8_t *xm = mq_ag_maskp(S, x);
    mq_tensor *r = mq_ag_gnew(S, x->ndim, x->shape);
    memcpy(mq_bw_d(r), gv, (size_t)x->numel * sizeof(double));
    if (gm || xm) {
      uint8_t *m = mq_ag_new_mask(S, r);
      for (int64_t k = 0; k < x->numel; k++) {
        mq_poll_at(S, k);
        m[k] = (!gm || gm[k]) && (!xm || xm[k]);
      }
    }
    gin[0] = r;
  }
  if (src->requires_grad) { /* each added src entry: the gradient where it went */
    const int64_t *p = mq_tensor_data(pos);
    MQ_ASSERT(all_in(p, src->numel, -1, t->numel)); /* an output element, or -1 */
    const uint8_t *sm = mq_ag_maskp(S, src);
    mq_tensor *r = mq_ag_gnew(S, src->ndim, src->shape);
    double *rv = mq_bw_d(r);
    uint8_t *m = gm || sm ? mq_ag_new_mask(S, r) : NULL;
    for (int64_t j = 0; j < src->numel; j++) {
      mq_poll_at(S, j);
      bool got = p[j] >= 0 && (!gm || gm[p[j]]);
      rv[j] = got ? gv[p[j]] : 0.0;
      if (m) m[j] = got;
    }
    gin[1] = r;
  }
}

