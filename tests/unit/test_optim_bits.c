/* test_optim_bits.c - the optimizer steps' vectorized loops
 * (runtime/nn/optim.c) give the bits of torch's scalar loop, written out
 * here one entry at a time as optim.c had it: every step (SGD plain, with
 * momentum, dampening, Nesterov, weight decay, a first and a later step;
 * Adagrad; Adam, with weight decay, amsgrad; AdamW), float32 and float64,
 * over lengths 0 to past a piece of MQ_POLL_ELEMS (vector bodies and
 * scalar tails of every size), a mask none or random, and data with
 * zeros of both signs, NaN, infinities, subnormals and large values. The
 * parameter, every state tensor and the entries under the mask (which
 * must keep their old bits) are compared bit for bit (a NaN's sign
 * aside: see same()). The loops are elementwise, so the threads and CPU
 * paths (runtime/tensor/cpu.h) do not enter: MQ_WIDE's clones run the
 * same operations per entry, as vectors or in the scalar tail. */
#include <math.h>
#include <string.h>

#include "../../runtime/nn/nn.h"
#include "../../runtime/tensor/internal.h"

#include "unit.h"

static uint64_t rng = 1234567;
static uint64_t next(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 33;
}

static double value(int64_t i) {
  uint64_t r = next();
  switch (r % 23) {
  case 0: return 0.0;
  case 1: return -0.0;
  case 2: return NAN;
  case 3: return INFINITY;
  case 4: return -INFINITY;
  case 5: return 1e-40; /* a float32 subnormal */
  case 6: return 3e38;
  default: return ((double)(next() & 0xffffff) / 16777216.0 - 0.5) * (i % 3 ? 2 : 1e-3);
  }
}

static mq_tensor *rand_tensor(mq_dtype dt, int64_t n, bool positive) {
  mq_tensor *t = mq_tensor_new(S, dt, 1, &n);
  for (int64_t i = 0; i < n; i++) {
    double v = value(i);
    if (positive) v = fabs(v);
    if (dt == MQ_DT_F32) ((float *)mq_tensor_data(t))[i] = (float)v;
    else ((double *)mq_tensor_data(t))[i] = v;
  }
  return t;
}

static mq_tensor *mask_of(int64_t n) {
  mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, 1, &n);
  for (int64_t i = 0; i < n; i++) ((uint8_t *)mq_tensor_data(m))[i] = next() % 4 != 0;
  return m;
}

/* [a]'s entries the bits of b's, any NaN matching any NaN: the sign of a
 * NaN an operation makes is the compiler's choice (a + (-b) * c may be
 * a - b * c, the same number but for a NaN's sign), in either loop. */
static bool same(const mq_tensor *a, const void *b) {
  const void *x = mq_tensor_data((mq_tensor *)a);
  for (int64_t i = 0; i < a->numel; i++) {
    bool eq;
    if (a->dtype == MQ_DT_F32) {
      float u = ((const float *)x)[i], v = ((const float *)b)[i];
      eq = memcmp(&u, &v, sizeof u) == 0 || (isnan(u) && isnan(v));
    } else {
      double u = ((const double *)x)[i], v = ((const double *)b)[i];
      eq = memcmp(&u, &v, sizeof u) == 0 || (isnan(u) && isnan(v));
    }
    if (!eq) return false;
  }
  return true;
}

/* the scalar reference: torch's per-entry loops, in R */
#define REF_LOOPS(R, ROOT)                                                     \
  static void ref_sgd_##R(R *pw, R *pb, const R *pg, const uint8_t *ok, int64_t n, const mq_sgd_opts *o, \
                          bool has_buf) {                                      \
    for (int64_t i = 0; i < n; i++) {                                          \
      if (ok && !ok[i]) continue;                                              \
      R d = pg[i];                                                             \
      if (o->weight_decay != 0) d = d + (R)o->weight_decay * pw[i];            \
      if (pb) {                                                                \
        pb[i] = has_buf ? pb[i] * (R)o->momentum + (R)(1 - o->dampening) * d : d; \
        d = o->nesterov ? d + (R)o->momentum * pb[i] : pb[i];                  \
      }                                                                        \
      pw[i] = pw[i] + (R)-o->lr * d;                                           \
    }                                                                          \
  }                                                                            \
  static void ref_adagrad_##R(R *pw, R *ps, const R *pg, const uint8_t *ok, int64_t n, double lr, \
                              double eps, double wd) {                         \
    for (int64_t i = 0; i < n; i++) {                                          \
      if (ok && !ok[i]) continue;                                              \
      R d = pg[i];                                                             \
      if (wd != 0) d = d + (R)wd * pw[i];                                      \
      ps[i] = ps[i] + d * d;                                                   \
      R std = (R)sqrt(ps[i]) + (R)eps;                                         \
      pw[i] = pw[i] + (R)-lr * (d / std);                                      \
    }                                                                          \
  }                                                                            \
  static void ref_adam_##R(R *pw, R *pm, R *pv, R *px, const R *pg, const uint8_t *ok, int64_t n, \
                           int64_t step, const mq_adam_opts *o) {              \
    const double step_size = o->lr / (1 - pow(o->beta1, (double)step));       \
    const double bc2_sqrt = sqrt(1 - pow(o->beta2, (double)step));             \
    const double decay = 1 - o->lr * o->weight_decay;                          \
    for (int64_t i = 0; i < n; i++) {                                          \
      if (ok && !ok[i]) continue;                                              \
      R d = pg[i];                                                             \
      if (o->decoupled) pw[i] = pw[i] * (R)decay;                              \
      else if (o->weight_decay != 0) d = d + (R)o->weight_decay * pw[i];       \
      pm[i] = pm[i] * (R)o->beta1 + (R)(1 - o->beta1) * d;                     \
      pv[i] = pv[i] * (R)o->beta2 + (R)(1 - o->beta2) * d * d;                 \
      R second = pv[i];                                                        \
      if (px) {                                                                \
        if (pv[i] != pv[i] || pv[i] > px[i]) px[i] = pv[i];                    \
        second = px[i];                                                        \
      }                                                                        \
      R denom = (R)sqrt(second) / (R)bc2_sqrt + (R)o->eps;                     \
      pw[i] = pw[i] + (R)-step_size * (pm[i] / denom);                         \
    }                                                                          \
  }
REF_LOOPS(float, sqrt)
REF_LOOPS(double, sqrt)

/* a copy of [t]'s bytes, for the reference to work on */
static void *bytes_of(mq_tensor *t) {
  size_t n = (size_t)(t->numel ? t->numel : 1) * mq_dtype_size((mq_dtype)t->dtype);
  void *p = mq_scratch(S, n);
  memcpy(p, mq_tensor_data(t), (size_t)t->numel * mq_dtype_size((mq_dtype)t->dtype));
  return p;
}

static mq_tensor *with_mask(mq_tensor *g, mq_tensor *m) {
  if (!m) return g;
  mq_tensor *r = mq_tensor_view(S, g, g->ndim, g->shape, g->strides, g->offset);
  mq_tensor_set_mask(S, r, m);
  return r;
}

static void one(mq_dtype dt, int64_t n, bool masked) {
  bool f32 = dt == MQ_DT_F32;
  mq_tensor *w = rand_tensor(dt, n, false), *g = rand_tensor(dt, n, false);
  mq_tensor *s1 = rand_tensor(dt, n, false), *s2 = rand_tensor(dt, n, true), *s3 = rand_tensor(dt, n, true);
  mq_tensor *m = masked ? mask_of(n) : NULL, *gm = with_mask(g, m);
  const uint8_t *ok = m ? mq_tensor_data(m) : NULL;
  /* SGD: plain, momentum from none and from a buffer, Nesterov, dampening, decay */
  for (int v = 0; v < 5; v++) {
    mq_sgd_opts o = {0.1, v ? 0.9 : 0, v == 3 ? 0.25 : 0, v >= 2 ? 0.01 : 0, v == 4};
    mq_tensor *buf = v == 1 ? NULL : s1, *wo, *bo;
    void *rw = bytes_of(w), *rb = o.momentum != 0 ? (buf ? bytes_of(buf) : mq_scratch(S, (size_t)(n + 1) * 8)) : NULL;
    if (rb && !buf) memset(rb, 0, (size_t)(n + 1) * 8);
    mq_optim_sgd(S, w, gm, o.momentum != 0 ? buf : NULL, &o, &wo, &bo);
    if (f32) ref_sgd_float(rw, rb, mq_tensor_data(g), ok, n, &o, buf != NULL);
    else ref_sgd_double(rw, rb, mq_tensor_data(g), ok, n, &o, buf != NULL);
    CHECK(same(wo, rw));
    if (rb) CHECK(bo && same(bo, rb));
  }
  for (int v = 0; v < 2; v++) { /* Adagrad, without and with decay */
    mq_tensor *wo, *so;
    void *rw = bytes_of(w), *rs = bytes_of(s2);
    mq_optim_adagrad(S, w, gm, s2, 0.05, 1e-10, v ? 0.1 : 0, &wo, &so);
    if (f32) ref_adagrad_float(rw, rs, mq_tensor_data(g), ok, n, 0.05, 1e-10, v ? 0.1 : 0);
    else ref_adagrad_double(rw, rs, mq_tensor_data(g), ok, n, 0.05, 1e-10, v ? 0.1 : 0);
    CHECK(same(wo, rw) && same(so, rs));
  }
  for (int v = 0; v < 4; v++) { /* Adam, with decay, amsgrad, AdamW */
    mq_adam_opts o = {0.001, 0.9, 0.999, 1e-8, v >= 1 ? 0.01 : 0, v == 2, v == 3};
    mq_tensor *wo, *mo, *vo, *xo;
    void *rw = bytes_of(w), *rm = bytes_of(s1), *rv = bytes_of(s2), *rx = o.amsgrad ? bytes_of(s3) : NULL;
    mq_optim_adam(S, w, gm, s1, s2, o.amsgrad ? s3 : NULL, 3 + v, &o, &wo, &mo, &vo, &xo);
    if (f32) ref_adam_float(rw, rm, rv, rx, mq_tensor_data(g), ok, n, 3 + v, &o);
    else ref_adam_double(rw, rm, rv, rx, mq_tensor_data(g), ok, n, 3 + v, &o);
    CHECK(same(wo, rw) && same(mo, rm) && same(vo, rv));
    if (rx) CHECK(xo && same(xo, rx));
  }
}

static void all_tests(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  for (int d = 0; d < 2; d++)
    for (int masked = 0; masked < 2; masked++) {
      for (int64_t n = 0; n <= 70; n++) one(d ? MQ_DT_F64 : MQ_DT_F32, n, masked);
      one(d ? MQ_DT_F64 : MQ_DT_F32, MQ_POLL_ELEMS + 37, masked); /* two pieces */
    }
}

int main(void) { return unit_main("test_optim_bits", all_tests); }
