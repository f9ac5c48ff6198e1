/* backward.c - the backward dispatch over node kinds (a table from
 * tape.h's MQ_AG_KINDS rows), the elementwise derivatives (unary, binary,
 * where, masked_fill, the mask accessors), and the helpers every
 * derivative shares.
 *
 * Elementwise derivatives are computed per element in double from the
 * op's inputs and output: no temporaries per term, and a derivative that is
 * zero by construction (floor, a where branch not taken) is a selected 0,
 * never a product with 0 that would turn an inf gradient into NaN. */
#include "backward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../kernels/ops.h"
#include "../tensor/parallel.h"
#include "../tensor/spanrun.h"
#include "../kernels/special.h"
#include "../kernels/vmath.h"
#include "../sparse/sparse.h" /* mq_sparse_red_name */

/* An elementwise derivative loop over [0, n): the arrays it reads and
 * writes, split among the state's threads for large gradients (each
 * element's value is the same whoever computes it). */
typedef struct ew_job {
  int op;
  int which; /* binary: 0 the left operand's gradient, 1 the right's */
  bool in_f32; /* the forward computed in float32 (IN_R of ops_unary.h) */
  const double *x, *y, *o, *g, *p;
  double *ra;
  /* the float32 kernels': the same arrays as float32, g read with stride gs
   * (0: one value for every element, the gradient of a full sum) */
  const float *fx, *fy, *fo, *fg;
  float *fr;
  int64_t gs;
  int cpu; /* the state's CPU path, for vmath.h's derivatives */
} ew_job;

static void ew_run(mq_state *S, int64_t n, mq_range_fn fn, void *J) {
  mq_parallel_for(S, mq_parallel_threads_for(S, n), n, MQ_PAR_GRAIN, fn, J);
}

/* Mask bytes (0 or 1) out[i] = a[i] & b[i] (b NULL: all ones), on the
 * state's threads for large masks. */
typedef struct and_job {
  uint8_t *out;
  const uint8_t *a, *b;
} and_job;

/* (the job's fields are read into locals first: a store through a byte
 * pointer may change anything, the job too, as far as the compiler knows) */
static void and_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const and_job *J = ctx;
  uint8_t *out = J->out;
  const uint8_t *a = J->a, *b = J->b;
  if (b) /* without branches */
    for (int64_t i = lo; i < hi; i++) out[i] = a[i] & b[i];
  else
    memcpy(out + lo, a + lo, (size_t)(hi - lo));
}

static void mask_and(mq_state *S, uint8_t *out, const uint8_t *a, const uint8_t *b, int64_t n) {
  and_job J = {out, a, b};
  ew_run(S, n, and_range, &J);
}

/* --- helpers ---------------------------------------------------------------- */

mq_tensor *mq_bw_f64_to(mq_state *S, mq_tensor *t, int nd, const int64_t *shape) {
  mq_tensor *d = t->mask ? mq_get_data(S, t) : t;
  mq_tensor *out = mq_ag_gnew(S, nd, shape);
  mq_kernel_convert(S, out, mq_expand(S, d, nd, shape));
  return out;
}

mq_tensor *mq_bw_g64(mq_state *S, mq_tensor *g) {
  if (g->dtype == MQ_DT_F64 && mq_tensor_is_contiguous(g)) return g;
  mq_tensor *out = mq_ag_gnew(S, g->ndim, g->shape);
  mq_kernel_convert(S, out, g);
  if (g->mask) mq_tensor_set_mask(S, out, mq_contiguous(S, g->mask));
  return out;
}

mq_tensor *mq_bw_gnew32(mq_state *S, int nd, const int64_t *shape) {
  return mq_tensor_new(S, MQ_DT_F32, nd, shape);
}

const float *mq_bw_f32_at(mq_state *S, mq_tensor *t, int nd, const int64_t *shape) {
  mq_tensor *d = mq_expand(S, t->mask ? mq_get_data(S, t) : t, nd, shape);
  if (d->dtype == MQ_DT_F32 && mq_tensor_is_contiguous(d)) return mq_bw_f(d);
  mq_tensor *out = mq_bw_gnew32(S, nd, shape);
  mq_kernel_convert(S, out, d);
  return mq_bw_f(out);
}

/* Entries [k, k + n) of v added to x's [j, j + n), only where a gradient
 * flowed (vm), marking them (m); in order of k, whatever the threads. A
 * float32 v (a32, read with stride as: 0 for the one-value form) is read
 * as it is, each sum in double all the same. */
typedef struct sumto_job {
  const double *a;
  const float *a32;
  int64_t as;
  const uint8_t *vm;
  double *o;
  uint8_t *m;
  int64_t len, inner;
} sumto_job;

/* v where [keep] (0 or 1), else +0: on the bits, without a branch */
static inline double keep_or_zero(double v, uint8_t keep) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  b &= (uint64_t)0 - keep;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* An entry where no gradient flowed (vm) adds +0 rather than nothing: a
 * sum that starts at +0 is never -0, so adding +0 leaves it as it was,
 * and a masked-out entry's data (never read as a value) cannot reach it. */
MQ_WIDE static void sumto_run(void *ctx, int64_t j, int64_t k, int64_t n, int64_t ds) {
  const sumto_job *J = ctx; /* in locals: m's stores may alias anything */
  const uint8_t *vm = J->vm ? J->vm + k : NULL;
  double *o = J->o + j;
  uint8_t *m = J->m ? J->m + j : NULL;
  const double *a = J->a ? J->a + k : NULL;
  int64_t as = J->as;
  const float *a32 = J->a32 ? J->a32 + k * as : NULL;
#define SUMTO_V(c) (a32 ? (double)a32[(c) * as] : a[c])
  if (ds == 0) { /* a row into one slot: its sum in a register */
    double acc = o[0];
    uint8_t any = 0;
    if (vm)
      for (int64_t c = 0; c < n; c++) acc += keep_or_zero(SUMTO_V(c), vm[c]), any |= vm[c];
    else
      for (int64_t c = 0; c < n; c++) acc += SUMTO_V(c);
    o[0] = acc;
    if (m && (any || !vm) && n) m[0] = 1;
    return;
  }
  /* ds 1 (mq_bw_block_walk: 0 or 1), consecutive slots: one loop per
   * source, each vectorizes; only the span of v's valid entries (a padded
   * row: none), since outside it every entry adds +0 and marks nothing */
  if (vm) {
    int64_t lo, hi;
    if (!mq_valid_span(vm, n, &lo, &hi)) return;
    vm += lo, o += lo, m = m ? m + lo : NULL, n = hi - lo;
    a = a ? a + lo : NULL, a32 = a32 ? a32 + lo * as : NULL;
  }
  if (a32 && as == 1 && vm)
    for (int64_t c = 0; c < n; c++) o[c] += keep_or_zero((double)a32[c], vm[c]);
  else if (a32 && as == 1)
    for (int64_t c = 0; c < n; c++) o[c] += (double)a32[c];
  else if (a32 && vm)
    for (int64_t c = 0; c < n; c++) o[c] += keep_or_zero((double)a32[c * as], vm[c]);
  else if (a32)
    for (int64_t c = 0; c < n; c++) o[c] += (double)a32[c * as];
  else if (vm)
    for (int64_t c = 0; c < n; c++) o[c] += keep_or_zero(a[c], vm[c]);
  else
    for (int64_t c = 0; c < n; c++) o[c] += a[c];
  if (m)
    for (int64_t c = 0; c < n; c++) m[c] |= vm[c];
#undef SUMTO_V
}

static void sumto_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const sumto_job *J = ctx;
  mq_bw_block_walk(lo, hi, J->len, J->inner, sumto_run, ctx);
}

/* The float64 gradient [r] rounded once to float32, its mask kept. */
static mq_tensor *grad_as32(mq_state *S, mq_tensor *r) {
  mq_tensor *o = mq_bw_gnew32(S, r->ndim, r->shape);
  mq_kernel_convert(S, o, r);
  if (r->mask) mq_tensor_set_mask(S, o, r->mask);
  return o;
}

mq_tensor *mq_bw_sum_to(mq_state *S, mq_tensor *v, mq_tensor *x) {
  const uint8_t *vm = mq_ag_maskp(S, v), *xm = mq_ag_maskp(S, x);
  mq_tensor *r;
  if (v->ndim == x->ndim && memcmp(v->shape, x->shape, (size_t)x->ndim * sizeof *x->shape) == 0) {
    /* within x's mask: nothing to do when v has those very bytes (the
     * mask passed down the chain, e.g. sum(x * w)'s) */
    if (!xm || vm == xm) return v;
    r = mq_tensor_view(S, v, v->ndim, v->shape, v->strides, v->offset);
  } else {
    /* summed in double; a float32 v read in place and the sums rounded
     * once into a float32 gradient (x's, as torch's is), a float64 v
     * into a float64 one */
    bool f32 = v->dtype == MQ_DT_F32;
    if (!f32) {
      v = mq_bw_g64(S, v);
      vm = mq_ag_maskp(S, v);
    }
    r = mq_tensor_full(S, MQ_DT_F64, x->ndim, x->shape, 0.0);
    double *o = mq_bw_d(r);
    uint8_t *m = vm ? mq_ag_new_mask(S, r) : NULL;
    if (m) memset(m, 0, (size_t)r->numel);
    /* x's contiguous strides, 0 along the dims it was broadcast over */
    int64_t str[MQ_MAX_DIMS], s = 1, outer;
    uint32_t summed = 0;
    for (int d = v->ndim - 1; d >= 0; d--) {
      int xd = d - (v->ndim - x->ndim);
      str[d] = xd >= 0 && x->shape[xd] == v->shape[d] ? s : 0;
      if (xd >= 0) s *= x->shape[xd];
      if (!str[d]) summed |= (uint32_t)1 << d;
    }
    sumto_job J = {f32 ? NULL : mq_bw_d(v), f32 ? mq_bw_f(v) : NULL, f32 ? mq_bw_gstride(v) : 1,
                   vm, o, m, 1, 1};
    if (v->numel > 0 && mq_bw_block(v->ndim, v->shape, summed, &outer, &J.len, &J.inner)) {
      /* one block of dims: the threads share out x's entries */
      int64_t len = J.len > 0 ? J.len : 1;
      mq_parallel_for(S, mq_parallel_threads_for(S, v->numel), r->numel,
                      len >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / len, sumto_range, &J);
    } else {
      const int64_t *at = mq_iter_offsets(S, v->ndim, v->shape, str);
      for (int64_t k = 0; k < v->numel; k++) sumto_run(&J, at[k], k, 1, 1);
    }
    if (f32) r = grad_as32(S, r);
    if (!xm) return r;
    vm = mq_ag_maskp(S, r);
  }
  /* within x's mask */
  mq_tensor *mask = mq_tensor_new(S, MQ_DT_BOOL, x->ndim, x->shape);
  mask_and(S, mq_tensor_data(mask), xm, vm, x->numel);
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

/* --- unary ------------------------------------------------------------------ */

/* d/dx sinc(x): 0 at 0 */
static double dsinc(double x, double g) {
  if (x == 0) return 0;
  double px = MQ_PI * x;
  return g * (cos(px) * px - sin(px)) / (px * x);
}

/* d/dx of gelu's tanh form 0.5 x (1 + tanh(u)), u = b (x + k x^3) */
static double dgelu_tanh(double x, double g) {
  double t = tanh(GELU_BETA * (x + GELU_KAPPA * x * x * x));
  return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_BETA * (1 + 3 * GELU_KAPPA * x * x));
}

/* d/dx x tanh(softplus(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2) */
static double dmish(double x, double g) {
  double t = tanh(log1p(exp(x)));
  return g * (t + x / (1 + exp(-x)) * (1 - t * t));
}

/* A row's derivative is D(expr), or NODIFF: exactly the rows whose result
 * can be float have one, or the build stops here. */
#define HAS_D(...) 1
#define HAS_NODIFF 0
#define FLOATRES_FLOAT 1
#define FLOATRES_SAME 1
#define FLOATRES_SAMEB 1
#define FLOATRES_FONLY 1
#define FLOATRES_CLAMP 1
#define FLOATRES_PRED 0
#define FLOATRES_BITS 0
#define X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, ...)     \
  _Static_assert(HAS_##deriv == FLOATRES_##cls, "unary op " name ": a float result needs a D(derivative)");
MQ_UNARY_OPS(X)
#undef X

static const bool un_diff[MQ_UN__COUNT] = {
#define X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, ...) [MQ_UN_##E] = HAS_##deriv,
    MQ_UNARY_OPS(X)
#undef X
};

/* The elements' names in the rows' derivative expressions. */
#define UN_ELEM                                                                \
  const double x = xv[i], y = yv[i], g = gv[i];                               \
  (void)x, (void)y, (void)g
#define UN_LOOP_D(e)                                                           \
  for (int64_t i = lo; i < hi; i++) {                                          \
    UN_ELEM;                                                                   \
    o[i] = (e);                                                                \
  }                                                                            \
  break;
/* A case for each row with a derivative (its class can give a float
 * result); the others never record a node, and share the default. */
#define UN_CASE_FLOAT(E, LOOP, d) case MQ_UN_##E: LOOP##d
#define UN_CASE_SAME UN_CASE_FLOAT
#define UN_CASE_SAMEB UN_CASE_FLOAT
#define UN_CASE_FONLY UN_CASE_FLOAT
#define UN_CASE_CLAMP UN_CASE_FLOAT
#define UN_CASE_PRED(E, LOOP, d)
#define UN_CASE_BITS(E, LOOP, d)

/* NAME: the loops over operands x and y of element type T (double, or
 * float read in place when a float32 operand meets a float64 gradient: the
 * same doubles, without a float64 copy of each), g and the result double. */
#define DEF_UNARY_RANGE(NAME, T, XV, YV)                                       \
  static void NAME(void *ctx, int64_t lo, int64_t hi, int t) {                 \
    const ew_job *J = ctx;                                                     \
    const T *xv = XV, *yv = YV;                                                \
    const double *gv = J->g, *p = J->p;                                        \
    double *o = J->ra;                                                         \
    const bool in_f32 = J->in_f32;                                             \
    (void)p, (void)in_f32;                                                     \
    switch ((mq_unop)J->op) { /* one loop per op, its derivative inlined into it */ \
      MQ_UNARY_OPS(UN_X)                                                       \
    default: break;                                                            \
    }                                                                          \
  }
#define UN_X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, ...) \
  UN_CASE_##cls(E, UN_LOOP_, deriv)
DEF_UNARY_RANGE(unary_range, double, J->x, J->y)
DEF_UNARY_RANGE(unary_range_m, float, J->fx, J->fy)
#undef UN_X

/* The float32 kernels: the same derivative per element, computed in
 * double from the float32 operands and rounded once to float32 (for one
 * operation, such as g * y, exactly float32's own result). One loop per op
 * for an array g, one for a single g (stride 0). */
#define UN_ELEM32(G)                                                           \
  const double x = xv[i], y = yv[i], g = (G);                                 \
  (void)x, (void)y, (void)g
/* OUT[i] = e over [lo, hi), the names of ELEM bound per element, g from
 * the array gv or the single g0 */
#define LOOP32(OUT, ELEM, e)                                                   \
  if (J->gs)                                                                   \
    for (int64_t i = lo; i < hi; i++) {                                        \
      ELEM(gv[i]);                                                             \
      OUT[i] = (float)(e);                                                     \
    }                                                                          \
  else                                                                         \
    for (int64_t i = lo; i < hi; i++) {                                        \
      ELEM(g0);                                                                \
      OUT[i] = (float)(e);                                                     \
    }
#define UN_LOOP32_D(e) LOOP32(o, UN_ELEM32, e) break;

MQ_WIDE static void unary_range32(void *ctx, int64_t lo, int64_t hi, int t) {
  const ew_job *J = ctx;
  const float *xv = J->fx, *yv = J->fy, *gv = J->fg;
  const double *p = J->p, g0 = J->gs ? 0 : gv[0];
  float *o = J->fr;
  const bool in_f32 = true;
  (void)p, (void)g0, (void)in_f32;
  int f = mq_vact_of(J->op);
  if (f >= 0 && f != MQ_VACT_TANH) { /* erf, gelu, silu: masq's own, vectorized (vmath.h) */
    mq_vact_grad_rows(J->cpu, f, o + lo, xv + lo, J->gs ? gv + lo : gv, J->gs, hi - lo);
    return;
  }
  switch ((mq_unop)J->op) {
#define X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, ...)     \
  UN_CASE_##cls(E, UN_LOOP32_, deriv)
    MQ_UNARY_OPS(X)
#undef X
  default: break;
  }
}

/* A new gradient of [g]'s shape and mask in [dt]. */
static mq_tensor *like_dt(mq_state *S, mq_tensor *g, mq_dtype dt) {
  mq_tensor *r = dt == MQ_DT_F32 ? mq_bw_gnew32(S, g->ndim, g->shape) : mq_ag_gnew(S, g->ndim, g->shape);
  if (g->mask) mq_tensor_set_mask(S, r, mq_contiguous(S, g->mask));
  return r;
}

/* A costly op's derivative into the new contiguous gradient [r]: over
 * the valid runs of g's mask only when that is padding and skipping pays
 * (spanrun.h: the rest of r is +0), else over every entry. */
static void ew_run_unary(mq_state *S, mq_unop op, mq_tensor *g, mq_tensor *r, mq_range_fn fn,
                         void *J) {
  mq_span_plan P;
  if (g->mask && mq_unary_costly(op) && mq_span_plan_of(S, g->mask, r->ndim, r->shape, &P))
    mq_span_run(S, &P, mq_tensor_data(r), mq_dtype_size((mq_dtype)r->dtype), fn, J);
  else ew_run(S, r->numel, fn, J);
}

static void bw_unary(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *x = n->in[0];
  if (!x->requires_grad) return;
  if (!un_diff[n->op]) mq_error(S, "backward: %s has no derivative", mq_ag_node_name(n));
  if (g->dtype == MQ_DT_F32 && x->dtype == MQ_DT_F32 && t->dtype == MQ_DT_F32) {
    mq_tensor *r = like_dt(S, g, MQ_DT_F32);
    ew_job J = {.op = n->op, .p = n->prm, .fx = mq_bw_f32_at(S, x, x->ndim, x->shape),
                .fy = mq_bw_f32_at(S, t, t->ndim, t->shape), .fg = mq_bw_f(g),
                .gs = mq_bw_gstride(g), .fr = mq_bw_f(r), .cpu = S->cpu};
    ew_run_unary(S, (mq_unop)n->op, g, r, unary_range32, &J);
    gin[0] = r;
    return;
  }
  g = mq_bw_g64(S, g);
  mq_tensor *r = like(S, g);
  ew_job J = {.op = n->op, .g = mq_bw_d(g), .p = n->prm, .ra = mq_bw_d(r),
              .in_f32 = t->dtype != MQ_DT_F64};
  if (x->dtype == MQ_DT_F32 && t->dtype == MQ_DT_F32) { /* read as they are */
    J.fx = mq_bw_f32_at(S, x, x->ndim, x->shape), J.fy = mq_bw_f32_at(S, t, t->ndim, t->shape);
    ew_run_unary(S, (mq_unop)n->op, g, r, unary_range_m, &J);
  } else {
    J.x = mq_bw_d(mq_bw_f64_to(S, x, x->ndim, x->shape));
    J.y = mq_bw_d(mq_bw_f64_to(S, t, t->ndim, t->shape));
    ew_run_unary(S, (mq_unop)n->op, g, r, unary_range, &J);
  }
  gin[0] = r;
}

/* --- binary ----------------------------------------------------------------- */

#define FLOATRES_B_ARITH 1
#define FLOATRES_B_FLOAT 1
#define FLOATRES_B_FONLY 1
#define FLOATRES_B_F64 1
#define FLOATRES_B_CMP 0
#define FLOATRES_B_INT 0
#define X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, ...)        \
  _Static_assert(HAS_##deriv == FLOATRES_B_##cls, "binary op " name ": a float result needs a D(derivative)");
MQ_BINARY_OPS(X)
#undef X

static const bool bin_diff[MQ_BIN__COUNT] = {
#define X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, ...) [MQ_BIN_##E] = HAS_##deriv,
    MQ_BINARY_OPS(X)
#undef X
};

/* x, y: the operands; o: the result */
#define BIN_ELEM                                                               \
  const double x = xv[i], y = yv[i], o = ov[i], g = gv[i];                    \
  (void)x, (void)y, (void)o, (void)g
#define BIN_LOOP_D(ga, gb)                                                     \
  if (J->which == 0)                                                           \
    for (int64_t i = lo; i < hi; i++) {                                        \
      BIN_ELEM;                                                                \
      r[i] = (ga);                                                             \
    }                                                                          \
  else                                                                         \
    for (int64_t i = lo; i < hi; i++) {                                        \
      BIN_ELEM;                                                                \
      r[i] = (gb);                                                             \
    }                                                                          \
  break;
/* A case for each row with a derivative; the comparisons and bitwise
 * ops never record a node, and share the default, and so do the F64 rows
 * in the float32 loops (their result is float64). */
#define BIN_CASE_ARITH(E, LOOP, d) case MQ_BIN_##E: LOOP##d
#define BIN_CASE_FLOAT BIN_CASE_ARITH
#define BIN_CASE_FONLY BIN_CASE_ARITH
#define BIN_CASE_F64 BIN_CASE_ARITH
#define BIN_CASE_CMP(E, LOOP, d)
#define BIN_CASE_INT(E, LOOP, d)
#define BIN32_CASE_ARITH BIN_CASE_ARITH
#define BIN32_CASE_FLOAT BIN_CASE_ARITH
#define BIN32_CASE_FONLY BIN_CASE_ARITH
#define BIN32_CASE_F64(E, LOOP, d)
#define BIN32_CASE_CMP(E, LOOP, d)
#define BIN32_CASE_INT(E, LOOP, d)

/* One operand's gradient (J->which: 0 the left's, 1 the right's), one loop
 * per op and side. An array the derivative does not read may be any
 * array of the length (bw_binary passes g's). */
#define DEF_BINARY_RANGE(NAME, T, XV, YV, OV)                                  \
  static void NAME(void *ctx, int64_t lo, int64_t hi, int t) {                 \
    const ew_job *J = ctx;                                                     \
    const T *xv = XV, *yv = YV, *ov = OV;                                      \
    const double *gv = J->g;                                                   \
    double *r = J->ra;                                                         \
    switch ((mq_binop)J->op) {                                                 \
      MQ_BINARY_OPS(BIN_X)                                                     \
    default: break;                                                            \
    }                                                                          \
  }
#define BIN_X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, ...)   \
  BIN_CASE_##cls(E, BIN_LOOP_, deriv)
/* as the unary loops: float64 operands, or float32 ones read in place */
DEF_BINARY_RANGE(binary_range, double, J->x, J->y, J->o)
DEF_BINARY_RANGE(binary_range_m, float, J->fx, J->fy, J->fo)
#undef BIN_X

#define BIN_ELEM32(G)                                                          \
  const double x = xv[i], y = yv[i], o = ov[i], g = (G);                      \
  (void)x, (void)y, (void)o, (void)g
#define BIN_SIDE32(e) LOOP32(r, BIN_ELEM32, e)
#define BIN_LOOP32_D(ga, gb)                                                   \
  if (J->which == 0) {                                                         \
    BIN_SIDE32(ga)                                                             \
  } else {                                                                     \
    BIN_SIDE32(gb)                                                             \
  }                                                                            \
  break;

MQ_WIDE static void binary_range32(void *ctx, int64_t lo, int64_t hi, int t) {
  const ew_job *J = ctx;
  const float *xv = J->fx, *yv = J->fy, *ov = J->fo, *gv = J->fg;
  const double g0 = J->gs ? 0 : gv[0];
  float *r = J->fr;
  (void)g0;
  switch ((mq_binop)J->op) {
#define X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, ...)        \
  BIN32_CASE_##cls(E, BIN_LOOP32_, deriv)
    MQ_BINARY_OPS(X)
#undef X
  default: break;
  }
}

/* + - * / read at most x and y, and only some of them: the others are not
 * converted. A float32 result with a float32 gradient runs the float32
 * kernels (the operands read as the forward read them: float32). */
/* a * b with a gradient of 1 everywhere (sum(a * b)'s): a's gradient is b
 * itself, exactly (1 * v is v), so b's float32 data is shared, not copied,
 * when it is stored as the gradient's (contiguous, of t's shape, not host
 * memory, which the host may rewrite). NULL otherwise. */
static mq_tensor *times_one(mq_state *S, const ew_job *J, mq_tensor *v, mq_tensor *t,
                            mq_tensor *g) {
  if (J->op != MQ_BIN_MUL || J->gs || J->fg[0] != 1.0f) return NULL;
  mq_tensor *d = v->mask ? mq_get_data(S, v) : v;
  if (d->dtype != MQ_DT_F32 || d->ndim != t->ndim || !mq_tensor_is_contiguous(d) ||
      memcmp(d->shape, t->shape, (size_t)t->ndim * sizeof *t->shape) != 0 ||
      mq_storage_foreign(d->storage))
    return NULL;
  mq_tensor *r = mq_tensor_view(S, d, d->ndim, d->shape, d->strides, d->offset);
  if (g->mask) mq_tensor_set_mask(S, r, mq_contiguous(S, g->mask));
  return r;
}

/* g * v or g / v with v one value (x * 0.5's, x / 8's gradient): the
 * derivative's own expression (in double, rounded once), without v
 * spread to the gradient's size first. */
typedef struct scal_job {
  const float *g;
  int64_t gs;
  float *o;
  double v;
  bool div;
} scal_job;

/* (float32 operations: a product or quotient of two floats rounded to
 * double and then to float is the float one, correctly rounded, since
 * double holds more than twice float's bits plus two) */
MQ_WIDE static void scal_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const scal_job *J = ctx;
  const float *g = J->g;
  float *o = J->o;
  const float v = (float)J->v, g0 = J->gs ? 0 : g[0];
  (void)t;
  if (J->div && J->gs)
    for (int64_t i = lo; i < hi; i++) o[i] = g[i] / v;
  else if (J->div)
    for (int64_t i = lo; i < hi; i++) o[i] = g0 / v;
  else if (J->gs)
    for (int64_t i = lo; i < hi; i++) o[i] = g[i] * v;
  else
    for (int64_t i = lo; i < hi; i++) o[i] = g0 * v;
}

/* The operand whose one value side [side]'s derivative reads alone (x *
 * y: the other; x / y: y, for x's), or NULL. */
static mq_tensor *scalar_partner(int op, int side, mq_tensor *a, mq_tensor *b) {
  mq_tensor *p = op == MQ_BIN_MUL ? (side ? a : b) : op == MQ_BIN_DIV && !side ? b : NULL;
  return p && p->numel == 1 && !p->sparse ? p : NULL;
}

/* Which operands' data the derivatives of the sides wanted ([ga], [gb])
 * read: + - * / read at most x and y, and only some of them. */
static void operands_read(int op, bool ga, bool gb, bool *x, bool *y) {
  bool arith = op == MQ_BIN_ADD || op == MQ_BIN_SUB || op == MQ_BIN_MUL || op == MQ_BIN_DIV;
  bool md = op == MQ_BIN_MUL || op == MQ_BIN_DIV;
  *x = !arith || (gb && md);
  *y = !arith || (ga && md) || (gb && op == MQ_BIN_DIV);
}

/* The float32 arrays the derivatives read, at t's shape; one a derivative
 * does not read is any array of the length (t's). */
static void f32_operands(mq_state *S, ew_job *J, mq_tensor *t, mq_tensor *a, mq_tensor *b,
                         bool need_x, bool need_y, bool arith) {
  const float *any = need_x && need_y && !arith ? NULL : mq_bw_f32_at(S, t, t->ndim, t->shape);
  J->fx = need_x ? mq_bw_f32_at(S, a, t->ndim, t->shape) : any;
  J->fy = need_y ? mq_bw_f32_at(S, b, t->ndim, t->shape) : any;
  J->fo = !arith ? mq_bw_f32_at(S, t, t->ndim, t->shape) : any;
}

static void bw_binary(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *a = n->in[0], *b = n->in[1];
  int op = n->op, nd = t->ndim;
  const int64_t *shape = t->shape;
  if (!bin_diff[op]) mq_error(S, "backward: %s has no derivative", mq_ag_node_name(n));
  bool ga = a->requires_grad, gb = b->requires_grad;
  bool arith = op == MQ_BIN_ADD || op == MQ_BIN_SUB || op == MQ_BIN_MUL || op == MQ_BIN_DIV;
  bool need_x, need_y;
  if (g->dtype == MQ_DT_F32 && t->dtype == MQ_DT_F32) {
    /* a + b, a - b's a: the gradient is g itself (1 * g is g, exactly),
     * shared rather than copied, summed down to a broadcast operand */
    bool passes = op == MQ_BIN_ADD || op == MQ_BIN_SUB;
    if (passes && mq_bw_gstride(g) && mq_tensor_is_contiguous(g) && mq_tensor_same_shape(g, t)) {
      if (ga) gin[0] = mq_bw_sum_to(S, g, a);
      if (op == MQ_BIN_ADD) {
        if (gb) gin[1] = mq_bw_sum_to(S, g, b);
        return;
      }
      ga = false; /* a - b: b's gradient, -g, below */
    }
    ew_job J = {.op = op, .fg = mq_bw_f(g), .gs = mq_bw_gstride(g)};
    for (int side = 0; side < 2; side++) { /* a number's partner: no arrays */
      mq_tensor *p = (side ? gb : ga) ? scalar_partner(op, side, a, b) : NULL;
      if (!p) continue;
      mq_tensor *r = like_dt(S, g, MQ_DT_F32);
      scal_job K = {J.fg, J.gs, mq_bw_f(r), (double)mq_bw_f32_at(S, p, p->ndim, p->shape)[0],
                    op == MQ_BIN_DIV};
      ew_run(S, t->numel, scal_range, &K);
      gin[side] = mq_bw_sum_to(S, r, side ? b : a);
      if (side) gb = false;
      else ga = false;
    }
    if (!ga && !gb) return;
    operands_read(op, ga, gb, &need_x, &need_y);
    f32_operands(S, &J, t, a, b, need_x, need_y, arith);
    for (int side = 0; side < 2; side++) {
      if (!(side ? gb : ga)) continue;
      mq_tensor *r = times_one(S, &J, side ? a : b, t, g);
      if (!r) {
        r = like_dt(S, g, MQ_DT_F32);
        J.which = side;
        J.fr = mq_bw_f(r);
        ew_run(S, t->numel, binary_range32, &J);
      }
      gin[side] = mq_bw_sum_to(S, r, side ? b : a);
    }
    return;
  }
  g = mq_bw_g64(S, g);
  ew_job J = {.op = op, .g = mq_bw_d(g)};
  operands_read(op, ga, gb, &need_x, &need_y);
  /* float32 operands read in place (the doubles they convert to), when
   * every array read is float32 */
  bool m32 = t->dtype == MQ_DT_F32 && (!need_x || a->dtype == MQ_DT_F32) &&
             (!need_y || b->dtype == MQ_DT_F32);
  if (m32) {
    f32_operands(S, &J, t, a, b, need_x, need_y, arith);
  } else {
    J.x = need_x ? mq_bw_d(mq_bw_f64_to(S, a, nd, shape)) : J.g;
    J.y = need_y ? mq_bw_d(mq_bw_f64_to(S, b, nd, shape)) : J.g;
    J.o = !arith ? mq_bw_d(mq_bw_f64_to(S, t, nd, shape)) : J.g;
  }
  for (int side = 0; side < 2; side++) {
    if (!(side ? gb : ga)) continue;
    mq_tensor *r = like(S, g);
    J.which = side;
    J.ra = mq_bw_d(r);
    ew_run(S, t->numel, m32 ? binary_range_m : binary_range, &J);
    gin[side] = mq_bw_sum_to(S, r, side ? b : a);
  }
}

/* --- selections --------------------------------------------------------------- */

/* The part of [g] where [sel] (bytes of g's shape) is set, [want] it: the
 * rest gets no gradient when [masked] (torch.masked's where: g's data under
 * a false mask), else 0. */
typedef struct sel_job {
  const void *gv;
  const uint8_t *gm, *sel;
  void *o;
  uint8_t *m;
  bool want;
  int64_t gs; /* float32: g's stride (0: the one-value form) */
} sel_job;

#define DEF_SELECT_RANGE(NAME, T, GS)                                          \
  static void NAME(void *ctx, int64_t lo, int64_t hi, int t) {                 \
    const sel_job *J = ctx;                                                    \
    const T *gv = J->gv;                                                       \
    const uint8_t *gm = J->gm, *sel = J->sel;                                  \
    T *o = J->o;                                                               \
    uint8_t *m = J->m;                                                         \
    bool want = J->want;                                                       \
    int64_t gs = GS;                                                           \
    for (int64_t i = lo; i < hi; i++) {                                        \
      bool take = (sel[i] != 0) == want;                                       \
      T v = gv[i * gs];                                                        \
      o[i] = take || m ? v : (T)0;                                             \
      if (m) m[i] = take && (!gm || gm[i]);                                    \
    }                                                                          \
  }
DEF_SELECT_RANGE(select_range, double, 1)
DEF_SELECT_RANGE(select_range32, float, J->gs)

/* g in its own precision: a float32 g (either form) gives a float32
 * part, the same values (a selection rounds nothing). */
static mq_tensor *select_part(mq_state *S, mq_tensor *g, const uint8_t *sel, bool want,
                              bool masked) {
  bool f32 = g->dtype == MQ_DT_F32;
  mq_tensor *r = f32 ? mq_bw_gnew32(S, g->ndim, g->shape) : mq_ag_gnew(S, g->ndim, g->shape);
  sel_job J = {mq_tensor_data(g), mq_ag_maskp(S, g), sel, mq_tensor_data(r),
               masked ? mq_ag_new_mask(S, r) : NULL, want, f32 ? mq_bw_gstride(g) : 1};
  ew_run(S, r->numel, f32 ? select_range32 : select_range, &J);
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
  mask_and(S, mq_tensor_data(mask), xm, gm, g->numel);
  mq_tensor_set_mask(S, r, mask);
  gin[0] = r;
}

/* as_masked, astype, contiguous: the gradient passes through as it is (an
 * as_masked result is masked, so g already carries its mask). */
static void bw_pass(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  (void)S;
  if (t->node->in[0]->requires_grad) gin[0] = g;
}

/* A conversion's gradient passes, in float32 when what was converted is
 * float32 (as its gradient would be: a float32 op under a half result,
 * gelu(x) computed for a bfloat16 x, then gets the float32 kernels) */
static void bw_cast(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *x = t->node->in[0];
  if (!x->requires_grad) return;
  gin[0] = x->dtype == MQ_DT_F32 && g->dtype == MQ_DT_F64 && !g->sparse ? grad_as32(S, g) : g;
}

/* --- the kinds' table (tape.h, MQ_AG_KINDS) ------------------------------------ */

/* an op of a node's kind stands for its name here: the rows' name column */
static const char *const un_names[] = {
#define X(E, name, ...) name,
    MQ_UNARY_OPS(X)
#undef X
};
static const char *const bin_names[] = {
#define X(E, name, ...) name,
    MQ_BINARY_OPS(X)
#undef X
};
static const char *const red_names[] = {
#define X(E, name, ...) name,
    MQ_REDUCE_OPS(X)
#undef X
};
#define OPNAME(table, n)                                                       \
  ((n)->op >= 0 && (size_t)(n)->op < sizeof table / sizeof *table ? table[(n)->op] : "op")

/* SP_NODIFF's: its op has no derivative (the node says which op). */
void mq_bw_nodiff(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  (void)g, (void)gin;
  mq_error(S, "backward: no gradient for %s", mq_ag_node_name(t->node));
}

typedef void (*bw_fn)(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);
#define FORM_ANY true
#define FORM_F64 false
static const struct {
  bw_fn backward;
  bool any_form; /* takes the gradient in any form (backward.h) */
} kinds[MQ_AG__COUNT] = {
#define X(E, name, backward, form) [MQ_AG_##E] = {backward, FORM_##form},
    MQ_AG_KINDS(X)
#undef X
};

void mq_ag_node_backward(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  const mq_gradnode *n = t->node;
  if (getenv("BWDBG")) fprintf(stderr, "bw %-12s g=%s t=%s numel=%lld\n", mq_ag_node_name(n), g->dtype == MQ_DT_F32 ? "f32" : "f64", t->dtype == MQ_DT_F32 ? "f32" : "f64", (long long)t->numel);
  MQ_ASSERT(n->kind < MQ_AG__COUNT); /* record() takes only the kinds of the list */
  bool any_form = kinds[n->kind].any_form;
  for (int i = 0; i < n->nin && any_form; i++) /* sparse gradients are float64 (backward_sparse.c) */
    if (n->in[i] && n->in[i]->sparse) any_form = false;
  if (!g->sparse && !any_form) g = mq_bw_g64(S, g);
  kinds[n->kind].backward(S, t, g, gin);
  if (getenv("BWHACK") && (n->kind == MQ_AG_MATMUL))
    for (int i = 0; i < n->nin; i++)
      if (gin[i] && gin[i]->dtype == MQ_DT_F64 && n->in[i]->dtype == MQ_DT_F32) {
        mq_tensor *o = mq_bw_gnew32(S, gin[i]->ndim, gin[i]->shape);
        mq_kernel_convert(S, o, gin[i]);
        if (gin[i]->mask) mq_tensor_set_mask(S, o, gin[i]->mask);
        gin[i] = o;
      }
}

const char *mq_ag_node_name(const mq_gradnode *n) {
  switch ((mq_agkind)n->kind) {
#define X(E, name, ...) case MQ_AG_##E: return name;
    MQ_AG_KINDS(X)
#undef X
  case MQ_AG__COUNT: break;
  }
  return "op";
}
