/* backward.c - the one backward switch over op kinds, the elementwise
 * derivatives (unary, binary, where, masked_fill, the mask accessors), and
 * the helpers every derivative shares.
 *
 * Elementwise derivatives are computed per element in double from the
 * op's inputs and output: no temporaries per term, and a derivative that is
 * zero by construction (floor, a where branch not taken) is a selected 0,
 * never a product with 0 that would turn an inf gradient into NaN. */
#include "backward.h"

#include <math.h>

#include "parallel.h"

/* An elementwise derivative loop over [0, n): the arrays it reads and
 * writes, split among the state's threads for large gradients (each
 * element's value is the same whoever computes it). */
typedef struct ew_job {
  int op;
  int which; /* bw_arith: 0 the left operand's gradient, 1 the right's */
  const double *x, *y, *o, *g, *p;
  double *ra, *rb;
} ew_job;

static void ew_run(mq_state *S, int64_t n, mq_range_fn fn, ew_job *J) {
  mq_parallel_for(S, mq_threads_for(S, n), n, MQ_PAR_GRAIN, fn, J);
}

static const double PI = 3.14159265358979323846, LN2 = 0.69314718055994530942,
                    LN10 = 2.30258509299404568402, TWO_SQRTPI = 1.12837916709551257390;

/* --- helpers ---------------------------------------------------------------- */

mq_tensor *mq_bw_f64_to(mq_state *S, mq_tensor *t, int nd, const int64_t *shape) {
  mq_tensor *d = t->mask ? mq_get_data(S, t) : t;
  mq_tensor *out = mq_ag_gnew(S, nd, shape);
  mq_kernel_convert(S, out, mq_expand(S, d, nd, shape));
  return out;
}

const uint8_t *mq_bw_mask_to(mq_state *S, mq_tensor *t, int nd, const int64_t *shape) {
  if (!t->mask) return NULL;
  return mq_tensor_data(mq_contiguous(S, mq_expand(S, t->mask, nd, shape)));
}

int64_t *mq_bw_offsets(mq_state *S, int nd, const int64_t *shape, const int64_t *strides) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  int64_t *o = mq_scratch(S, (size_t)(n ? n : 1) * sizeof *o);
  int64_t idx[MQ_MAX_DIMS] = {0}, off = 0;
  for (int64_t k = 0; k < n; k++) {
    o[k] = off;
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
  return o;
}

mq_tensor *mq_bw_sum_to(mq_state *S, mq_tensor *v, mq_tensor *x) {
  const uint8_t *vm = mq_ag_maskp(S, v), *xm = mq_ag_maskp(S, x);
  mq_tensor *r;
  if (v->ndim == x->ndim && memcmp(v->shape, x->shape, (size_t)x->ndim * sizeof *x->shape) == 0) {
    if (!xm) return v;
    r = mq_tensor_view(S, v, v->ndim, v->shape, v->strides, v->offset);
  } else {
    r = mq_tensor_full(S, MQ_DT_F64, x->ndim, x->shape, 0.0);
    double *o = mq_bw_d(r);
    const double *a = mq_bw_d(v);
    uint8_t *m = vm ? mq_ag_new_mask(S, r) : NULL;
    if (m) memset(m, 0, (size_t)r->numel);
    /* x's contiguous strides, 0 along the dims it was broadcast over */
    int64_t str[MQ_MAX_DIMS], s = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
      int xd = d - (v->ndim - x->ndim);
      str[d] = xd >= 0 && x->shape[xd] == v->shape[d] ? s : 0;
      if (xd >= 0) s *= x->shape[xd];
    }
    const int64_t *at = mq_bw_offsets(S, v->ndim, v->shape, str);
    for (int64_t k = 0; k < v->numel; k++) {
      if (vm && !vm[k]) continue; /* no gradient flowed here: never read it */
      o[at[k]] += a[k];
      if (m) m[at[k]] = 1;
    }
    if (!xm) return r;
    vm = mq_ag_maskp(S, r);
  }
  /* within x's mask */
  mq_tensor *mask = mq_tensor_new(S, MQ_DT_BOOL, x->ndim, x->shape);
  uint8_t *mv = mq_tensor_data(mask);
  if (vm) /* mask bytes are 0 or 1: & without branches */
    for (int64_t i = 0; i < x->numel; i++) mv[i] = xm[i] & vm[i];
  else
    memcpy(mv, xm, (size_t)x->numel);
  if (r->mask) mq_obj_release(S, &r->mask->hdr);
  r->mask = NULL;
  mq_tensor_set_mask(S, r, mask);
  return r;
}

/* A new gradient with [g]'s shape and mask (shared: masks are values). */
static mq_tensor *like(mq_state *S, mq_tensor *g) {
  mq_tensor *r = mq_ag_gnew(S, g->ndim, g->shape);
  if (g->mask) mq_tensor_set_mask(S, r, g->mask);
  return r;
}

/* --- special functions for derivatives ------------------------------------ */

static double digamma(double x) {
  if (x == 0) return copysign(INFINITY, -x);
  if (x < 0) {
    if (x == floor(x)) return NAN;
    return digamma(1 - x) - PI / tan(PI * x); /* reflection */
  }
  double r = 0;
  for (; x < 10; x += 1) r -= 1 / x;
  double f = 1 / (x * x);
  return r + log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))));
}

static double trigamma(double x) {
  if (x <= 0 && x == floor(x)) return INFINITY;
  if (x < 0) {
    double s = PI / sin(PI * x);
    return s * s - trigamma(1 - x); /* reflection */
  }
  double r = 0;
  for (; x < 10; x += 1) r += 1 / (x * x);
  double f = 1 / (x * x);
  return r + 1 / x + f / 2 + f / x * (1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f / 30)));
}

/* Modified Bessel function I1: d/dx I0. */
static double bessel_i1(double x) {
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
  double r = exp(ax) / sqrt(2 * PI * ax) * s;
  return x < 0 ? -r : r;
}

/* --- unary ------------------------------------------------------------------ */

/* The gradient of one element: [g] times f'(x), with y = f(x); p holds the
 * op's parameters (NaN: absent). */
static MQ_ALWAYS_INLINE double dunary(int op, double x, double y, const double *p, double g) {
  switch ((mq_unop)op) {
  case MQ_UN_NEG: return -g;
  case MQ_UN_POS: case MQ_UN_FRAC: return g;
  case MQ_UN_EXP: return g * y; /* torch's formulas: from the result, in its dtype */
  case MQ_UN_LOG: return g / x;
  case MQ_UN_SQRT: return g / (2 * y);
  case MQ_UN_ABS: return g * (double)((x > 0) - (x < 0));
  case MQ_UN_SQUARE: return g * 2 * x;
  case MQ_UN_RELU: return y > 0 ? g : 0;
  case MQ_UN_SIGN: case MQ_UN_CEIL: case MQ_UN_FLOOR: case MQ_UN_ROUND: case MQ_UN_ROUND_DEC:
  case MQ_UN_TRUNC: case MQ_UN_ANGLE:
    return 0; /* piecewise constant */
  case MQ_UN_EXP2: return g * y * LN2;
  case MQ_UN_EXPM1: return g * (y + 1);
  case MQ_UN_LOG2: return g / (x * LN2);
  case MQ_UN_LOG10: return g / (x * LN10);
  case MQ_UN_LOG1P: return g / (1 + x);
  case MQ_UN_RSQRT: return -0.5 * g * y * y * y;
  case MQ_UN_RECIPROCAL: return -g * y * y;
  case MQ_UN_SIN: return g * cos(x);
  case MQ_UN_COS: return -g * sin(x);
  case MQ_UN_TAN: return g * (1 + y * y);
  case MQ_UN_ASIN: return g / sqrt(1 - x * x);
  case MQ_UN_ACOS: return -g / sqrt(1 - x * x);
  case MQ_UN_ATAN: return g / (1 + x * x);
  case MQ_UN_SINH: return g * cosh(x);
  case MQ_UN_COSH: return g * sinh(x);
  case MQ_UN_TANH: return g * (1 - y * y);
  case MQ_UN_ASINH: return g / sqrt(x * x + 1);
  case MQ_UN_ACOSH: return g / sqrt(x * x - 1);
  case MQ_UN_ATANH: return g / (1 - x * x);
  case MQ_UN_SIGMOID: return g * y * (1 - y);
  case MQ_UN_LOGIT:
    if (p[0] == p[0] && (x < p[0] || x > 1 - p[0])) return 0; /* clamped by eps */
    return g / (x * (1 - x));
  case MQ_UN_ERF: return g * TWO_SQRTPI * exp(-x * x);
  case MQ_UN_ERFC: return -g * TWO_SQRTPI * exp(-x * x);
  case MQ_UN_ERFINV: return g * (sqrt(PI) / 2) * exp(y * y);
  case MQ_UN_LGAMMA: return g * digamma(x);
  case MQ_UN_DIGAMMA: return g * trigamma(x);
  case MQ_UN_I0: return g * bessel_i1(x);
  case MQ_UN_SINC: {
    if (x == 0) return 0;
    double px = PI * x;
    return g * (cos(px) * px - sin(px)) / (px * x);
  }
  case MQ_UN_DEG2RAD: return g * (PI / 180);
  case MQ_UN_RAD2DEG: return g * (180 / PI);
  case MQ_UN_NAN_TO_NUM: return isfinite(x) ? g : 0;
  case MQ_UN_CLAMP: /* NaN bounds are absent: the comparisons come out false */
    return (p[0] > x || p[1] < x) ? 0 : g;
  default: return NAN; /* not differentiable (never recorded: bool or int results) */
  }
}

static void unary_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const ew_job *J = ctx;
  const double *xv = J->x, *yv = J->y, *gv = J->g, *p = J->p;
  double *o = J->ra;
  switch ((mq_unop)J->op) { /* one loop per op, the op's case inlined into it */
#define X(E, s)                                                                \
  case MQ_UN_##E:                                                              \
    for (int64_t i = lo; i < hi; i++) o[i] = dunary(MQ_UN_##E, xv[i], yv[i], p, gv[i]); \
    break;
    MQ_UNARY_OPS(X)
#undef X
  default:
    for (int64_t i = lo; i < hi; i++) o[i] = NAN;
  }
}

static void bw_unary(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *x = n->in[0];
  if (!x->requires_grad) return;
  mq_tensor *r = like(S, g);
  ew_job J = {.op = n->op, .x = mq_bw_d(mq_bw_f64_to(S, x, x->ndim, x->shape)),
              .y = mq_bw_d(mq_bw_f64_to(S, t, t->ndim, t->shape)), .g = mq_bw_d(g), .p = n->prm,
              .ra = mq_bw_d(r)};
  ew_run(S, r->numel, unary_range, &J);
  gin[0] = r;
}

/* --- binary ----------------------------------------------------------------- */

/* The gradients of one element of a op b = o for both operands. */
static MQ_ALWAYS_INLINE void dbinary(int op, double x, double y, double o, double g, double *ga,
                                     double *gb) {
  switch ((mq_binop)op) {
  case MQ_BIN_ADD: *ga = g, *gb = g; return;
  case MQ_BIN_SUB: *ga = g, *gb = -g; return;
  case MQ_BIN_MUL: *ga = g * y, *gb = g * x; return;
  case MQ_BIN_DIV: *ga = g / y, *gb = -g * x / (y * y); return;
  case MQ_BIN_POW: case MQ_BIN_FLOAT_POWER: /* torch's pow_backward_{self,exponent} */
    *ga = y == 0 ? 0 : g * y * pow(x, y - 1);
    *gb = x == 0 && y >= 0 ? 0 : g * pow(x, y) * log(x);
    return;
  case MQ_BIN_ATAN2: {
    double d = x * x + y * y;
    *ga = g * y / d, *gb = -g * x / d;
    return;
  }
  case MQ_BIN_LOGADDEXP: *ga = g / (1 + exp(y - x)), *gb = g / (1 + exp(x - y)); return;
  case MQ_BIN_LOGADDEXP2: *ga = g / (1 + exp2(y - x)), *gb = g / (1 + exp2(x - y)); return;
  case MQ_BIN_MAXIMUM: case MQ_BIN_MINIMUM: { /* ties split evenly, as torch */
    bool first = op == MQ_BIN_MAXIMUM ? x > y : x < y;
    if (x == y) *ga = *gb = g / 2;
    else *ga = first ? g : 0, *gb = first ? 0 : g;
    return;
  }
  case MQ_BIN_FMAX: case MQ_BIN_FMIN: { /* the non-NaN operand wins */
    bool first = (op == MQ_BIN_FMAX ? x >= y : x <= y) || y != y;
    *ga = first ? g : 0, *gb = first ? 0 : g;
    return;
  }
  case MQ_BIN_HYPOT: *ga = g * x / o, *gb = g * y / o; return;
  case MQ_BIN_COPYSIGN: *ga = x == 0 ? 0 : g * (o / x), *gb = 0; return;
  case MQ_BIN_XLOGY: /* torch's: log(y) at x == 0 too, where a finite difference agrees */
    *ga = x == 0 && y <= 0 ? 0 : g == 0 && y == y ? 0 : g * log(y), *gb = g * x / y;
    return;
  case MQ_BIN_REM: *ga = g, *gb = -g * floor(x / y); return;
  case MQ_BIN_FMOD: *ga = g, *gb = -g * trunc(x / y); return;
  case MQ_BIN_FLOORDIV: case MQ_BIN_DIVTRUNC: case MQ_BIN_NEXTAFTER:
    *ga = *gb = 0; /* piecewise constant */
    return;
  default: *ga = *gb = NAN; return; /* bool or int results: never recorded */
  }
}

/* One operand's gradient under + - * / (J->which), in loops that vectorize. */
static void arith_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const ew_job *J = ctx;
  const double *gv = J->g, *xv = J->x, *yv = J->y;
  double *o = J->ra;
  int op = J->op;
  if (J->which == 0) {
    if (op == MQ_BIN_MUL) for (int64_t i = lo; i < hi; i++) o[i] = gv[i] * yv[i];
    else if (op == MQ_BIN_DIV) for (int64_t i = lo; i < hi; i++) o[i] = gv[i] / yv[i];
    else memcpy(o + lo, gv + lo, (size_t)(hi - lo) * sizeof *o);
  } else {
    if (op == MQ_BIN_MUL) for (int64_t i = lo; i < hi; i++) o[i] = gv[i] * xv[i];
    else if (op == MQ_BIN_DIV) for (int64_t i = lo; i < hi; i++) o[i] = -gv[i] * xv[i] / (yv[i] * yv[i]);
    else if (op == MQ_BIN_SUB) for (int64_t i = lo; i < hi; i++) o[i] = -gv[i];
    else memcpy(o + lo, gv + lo, (size_t)(hi - lo) * sizeof *o);
  }
}

/* + - * /: the same values as dbinary, for the operands that need a
 * gradient, converting only the operands those read. */
static void bw_arith(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *a = n->in[0], *b = n->in[1];
  int op = n->op, nd = t->ndim;
  const int64_t *shape = t->shape, N = t->numel;
  bool ga = a->requires_grad, gb = b->requires_grad, md = op == MQ_BIN_MUL || op == MQ_BIN_DIV;
  ew_job J = {.op = op, .g = mq_bw_d(g)};
  J.x = gb && md ? mq_bw_d(mq_bw_f64_to(S, a, nd, shape)) : NULL;
  J.y = (ga && md) || (gb && op == MQ_BIN_DIV) ? mq_bw_d(mq_bw_f64_to(S, b, nd, shape)) : NULL;
  for (int side = 0; side < 2; side++) {
    if (!(side ? gb : ga)) continue;
    mq_tensor *r = like(S, g);
    J.which = side;
    J.ra = mq_bw_d(r);
    ew_run(S, N, arith_range, &J);
    gin[side] = mq_bw_sum_to(S, r, side ? b : a);
  }
}

static void binary_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const ew_job *J = ctx;
  const double *xv = J->x, *yv = J->y, *ov = J->o, *gv = J->g;
  double *pa = J->ra, *pb = J->rb;
  switch ((mq_binop)J->op) { /* one loop per op, as in unary_range */
#define X(E, s)                                                                \
  case MQ_BIN_##E:                                                             \
    for (int64_t i = lo; i < hi; i++) dbinary(MQ_BIN_##E, xv[i], yv[i], ov[i], gv[i], &pa[i], &pb[i]); \
    break;
    MQ_BINARY_OPS(X)
#undef X
  default:
    for (int64_t i = lo; i < hi; i++) pa[i] = pb[i] = NAN;
  }
}

static void bw_binary(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *a = n->in[0], *b = n->in[1];
  int nd = t->ndim;
  const int64_t *shape = t->shape;
  if (n->op == MQ_BIN_ADD || n->op == MQ_BIN_SUB || n->op == MQ_BIN_MUL || n->op == MQ_BIN_DIV) {
    bw_arith(S, t, g, gin);
    return;
  }
  const double *xv = mq_bw_d(mq_bw_f64_to(S, a, nd, shape));
  const double *yv = mq_bw_d(mq_bw_f64_to(S, b, nd, shape));
  const double *ov = mq_bw_d(mq_bw_f64_to(S, t, nd, shape));
  const double *gv = mq_bw_d(g);
  mq_tensor *ra = like(S, g), *rb = like(S, g);
  double *pa = mq_bw_d(ra), *pb = mq_bw_d(rb);
  ew_job J = {.op = n->op, .x = xv, .y = yv, .o = ov, .g = gv, .ra = pa, .rb = pb};
  ew_run(S, t->numel, binary_range, &J);
  if (a->requires_grad) gin[0] = mq_bw_sum_to(S, ra, a);
  if (b->requires_grad) gin[1] = mq_bw_sum_to(S, rb, b);
}

/* --- selections --------------------------------------------------------------- */

/* The part of [g] where [sel] (bytes of g's shape) is set, [want] it: the
 * rest gets no gradient when [masked] (torch.masked's where: g's data under
 * a false mask), else 0. */
static mq_tensor *select_part(mq_state *S, mq_tensor *g, const uint8_t *sel, bool want,
                              bool masked) {
  const double *gv = mq_bw_d(g);
  const uint8_t *gm = mq_ag_maskp(S, g);
  mq_tensor *r = mq_ag_gnew(S, g->ndim, g->shape);
  double *o = mq_bw_d(r);
  uint8_t *m = masked ? mq_ag_new_mask(S, r) : NULL;
  for (int64_t i = 0; i < r->numel; i++) {
    bool take = (sel[i] != 0) == want;
    double v = gv[i];
    o[i] = take || m ? v : 0.0;
    if (m) m[i] = take && (!gm || gm[i]);
  }
  return r;
}

/* where(cond, a, b): the branch not taken gets no gradient when the
 * result is masked (torch_masked.md §2.6), a zero one for plain tensors. */
static void bw_where(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *a = n->in[0], *b = n->in[1], *cond = n->in[2];
  const uint8_t *c = mq_tensor_data(mq_contiguous(S, mq_expand(S, cond, t->ndim, t->shape)));
  bool masked = g->mask || t->mask;
  if (a->requires_grad) gin[0] = mq_bw_sum_to(S, select_part(S, g, c, true, masked), a);
  if (b->requires_grad) gin[1] = mq_bw_sum_to(S, select_part(S, g, c, false, masked), b);
}

/* masked_fill(x, m, v): filled positions owe nothing to x; v gets their sum. */
static void bw_masked_fill(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *x = n->in[0], *v = n->in[1], *m = n->in[2];
  const uint8_t *c = mq_tensor_data(mq_contiguous(S, mq_expand(S, m, t->ndim, t->shape)));
  bool masked = g->mask || x->mask;
  if (x->requires_grad) gin[0] = select_part(S, g, c, false, masked);
  if (v && v->requires_grad) gin[1] = mq_bw_sum_to(S, select_part(S, g, c, true, masked), v);
}

/* get_data / to_tensor: the plain result's gradient re-wrapped with the
 * input's mask (torch_masked.md §2.4). */
static void bw_get_data(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *x = t->node->in[0];
  if (!x->requires_grad) return;
  const uint8_t *xm = mq_ag_maskp(S, x), *gm = mq_ag_maskp(S, g);
  if (!xm) {
    gin[0] = g;
    return;
  }
  mq_tensor *r = mq_tensor_view(S, g, g->ndim, g->shape, g->strides, g->offset);
  mq_tensor *mask = mq_tensor_new(S, MQ_DT_BOOL, g->ndim, g->shape);
  uint8_t *mv = mq_tensor_data(mask);
  for (int64_t i = 0; i < g->numel; i++) mv[i] = xm[i] && (!gm || gm[i]);
  mq_tensor_set_mask(S, r, mask);
  gin[0] = r;
}

/* as_masked, astype, contiguous: the gradient passes through as it is (an
 * as_masked result is masked, so g already carries its mask). */
static void bw_pass(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  (void)S;
  if (t->node->in[0]->requires_grad) gin[0] = g;
}

/* --- the switch ---------------------------------------------------------------- */

void mq_ag_node_backward(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  switch ((mq_agkind)t->node->kind) {
  case MQ_AG_UNARY: bw_unary(S, t, g, gin); return;
  case MQ_AG_BINARY: bw_binary(S, t, g, gin); return;
  case MQ_AG_WHERE: bw_where(S, t, g, gin); return;
  case MQ_AG_MASKED_FILL: bw_masked_fill(S, t, g, gin); return;
  case MQ_AG_GET_DATA: bw_get_data(S, t, g, gin); return;
  case MQ_AG_AS_MASKED: case MQ_AG_CAST: bw_pass(S, t, g, gin); return;
  case MQ_AG_REDUCE: case MQ_AG_VAR: case MQ_AG_NORM: case MQ_AG_MEDIAN:
    mq_bw_reduce(S, t, g, gin);
    return;
  case MQ_AG_SOFTMAX: mq_bw_softmax(S, t, g, gin); return;
  case MQ_AG_CUMULATIVE: mq_bw_cumulative(S, t, g, gin); return;
  case MQ_AG_GATHER: mq_bw_gather(S, t, g, gin); return;
  case MQ_AG_MATMUL: mq_bw_matmul(S, t, g, gin); return;
  case MQ_AG__COUNT: break;
  }
  mq_error(S, "backward: unknown node kind %d", t->node->kind);
}

const char *mq_ag_node_name(const mq_gradnode *n) {
  static const char *const un[] = {
#define X(E, s) s,
      MQ_UNARY_OPS(X)
#undef X
  };
  static const char *const bin[] = {
#define X(E, s) s,
      MQ_BINARY_OPS(X)
#undef X
  };
  static const char *const red[] = {
#define X(E, s) s,
      MQ_REDUCE_OPS(X)
#undef X
  };
  switch ((mq_agkind)n->kind) {
  case MQ_AG_UNARY: return n->op >= 0 && n->op < MQ_UN__COUNT ? un[n->op] : "unary op";
  case MQ_AG_BINARY: return n->op >= 0 && n->op < MQ_BIN__COUNT ? bin[n->op] : "binary op";
  case MQ_AG_REDUCE: return n->op >= 0 && n->op < MQ_RED__COUNT ? red[n->op] : "reduction";
  case MQ_AG_WHERE: return "where";
  case MQ_AG_SOFTMAX: return n->op ? "log_softmax" : "softmax";
  case MQ_AG_GATHER: return "indexing or view";
  case MQ_AG_AS_MASKED: return "as_masked";
  case MQ_AG_GET_DATA: return "get_data";
  case MQ_AG_CAST: return "conversion";
  case MQ_AG_MASKED_FILL: return "masked_fill";
  case MQ_AG_MATMUL: return "matmul";
  case MQ_AG_VAR: return n->op ? "std" : "var";
  case MQ_AG_NORM: return "norm";
  case MQ_AG_CUMULATIVE: return n->op ? "cumprod" : "cumsum";
  case MQ_AG_MEDIAN: return "median";
  case MQ_AG__COUNT: break;
  }
  return "op";
}
