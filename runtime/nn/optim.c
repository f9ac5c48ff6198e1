/* optim.c - the optimizer steps of nn.h: torch.optim's SGD (with dampening
 * and Nesterov momentum), Adagrad, Adam (with amsgrad) and AdamW updates, one entry at a time in the parameters' dtype with torch's order
 * of operations, where the gradient is valid. A masked-out gradient entry
 * is no gradient (not a zero one): its parameter and state are copied, as
 * the masked Adagrad of torch's MaskedTensor tutorial (seed 003) does.
 *
 * The loops vectorize (MQ_WIDE): each entry is the same sequence of IEEE
 * operations on its own (no fma: the build's -ffp-contract=off; nothing
 * reassociated), a masked-out entry keeps its values by a select rather
 * than a branch, and the interrupt poll sits between pieces of
 * MQ_POLL_ELEMS, so every vector width gives the scalar loop's bits
 * (tests/unit/test_optim_bits.c). A float32 square root is sqrtf: the
 * double root of a float, rounded to float, is the same number (a double
 * holds more than twice float's digits). */
#include <math.h>
#include <string.h>

#include "nn.h"
#include "../tensor/internal.h" /* MQ_WIDE, MQ_POLL_ELEMS, the vectorizer's cost model */
/* The contiguous data of [t] in dtype [dt] (a copy when needed). */
static void *dense(mq_state *S, mq_tensor *t, mq_dtype dt) {
  if (t->mask) t = mq_get_data(S, t);
  if (t->dtype != dt) t = mq_astype(S, t, dt);
  return mq_tensor_data(mq_contiguous(S, t));
}

/* A new tensor of w's dtype and shape holding [src] (NULL: zeros). */
static mq_tensor *copy_of(mq_state *S, mq_tensor *w, mq_tensor *src) {
  mq_tensor *c = mq_tensor_new(S, (mq_dtype)w->dtype, w->ndim, w->shape);
  size_t n = (size_t)c->numel * mq_dtype_size((mq_dtype)w->dtype);
  if (src) memcpy(mq_tensor_data(c), dense(S, src, (mq_dtype)w->dtype), n);
  else memset(mq_tensor_data(c), 0, n);
  return c;
}

/* What every step shares: w's new copy, g's data and validity. */
typedef struct step_io {
  mq_tensor *w;      /* the new parameters (a leaf, requiring grad as w did) */
  const void *wv, *g; /* the old parameters, the gradient */
  const uint8_t *ok; /* NULL: every entry valid */
  int64_t n;
} step_io;

static step_io step_begin(mq_state *S, mq_tensor *w, mq_tensor *g) {
  step_io io;
  mq_dtype dt = (mq_dtype)w->dtype;
  io.w = copy_of(S, w, w);
  io.w->requires_grad = w->requires_grad;
  io.wv = mq_tensor_data(io.w);
  io.g = dense(S, g, dt);
  io.ok = g->mask ? mq_tensor_data(mq_contiguous(S, mq_expand(S, g->mask, w->ndim, w->shape))) : NULL;
  io.n = w->numel;
  return io;
}

/* Runs fn(args..., lo, hi) over the entries in pieces, polling between them. */
#define PIECES(S, n, fn, ...)                                                  \
  for (int64_t i0 = 0; i0 < (n); i0 += MQ_POLL_ELEMS) {                        \
    int64_t i1 = (n) - i0 < MQ_POLL_ELEMS ? (n) : i0 + MQ_POLL_ELEMS;          \
    fn(__VA_ARGS__, i0, i1);                                                   \
    if (i1 < (n)) mq_check_interrupt(S);                                       \
  }

/* The element loop over [lo, hi) twice: with the gradient's validity
 * bytes ok, and (ok NULL) every entry valid. BODY(use) is one entry's
 * update, use whether it applies: every value computed, then selected
 * (gcc does not if-convert a floating-point operation that may trap), so
 * that the loop vectorizes. */
/* c ? a : b on the bits: a select gcc vectorizes. A ternary between
 * floating-point values is a branch to it, which it does not if-convert
 * when an operand's computation may trap (-ftrapping-math, the default). */
#define DEF_PICK(NAME, T, U)                                                   \
  static inline T NAME(bool c, T a, T b) {                                     \
    U x, y, m = (U)0 - (U)c;                                                   \
    memcpy(&x, &a, sizeof x), memcpy(&y, &b, sizeof y);                        \
    x = (x & m) | (y & ~m);                                                    \
    memcpy(&a, &x, sizeof a);                                                  \
    return a;                                                                  \
  }
DEF_PICK(pick_f32, float, uint32_t)
DEF_PICK(pick_f64, double, uint64_t)
/* (R: the element type, a typedef in each loop's function) */
#define PICK(c, a, b) _Generic((a), float: pick_f32, default: pick_f64)(c, a, b)
#define ROOT(x) _Generic((x), float: sqrtf, default: sqrt)(x)
#define BOTH_LOOPS(BODY)                                                       \
  if (ok)                                                                      \
    for (int64_t i = lo; i < hi; i++) {                                        \
      BODY(ok[i] != 0)                                                         \
    }                                                                          \
  else                                                                         \
    for (int64_t i = lo; i < hi; i++) {                                        \
      BODY(true)                                                               \
    }

/* --- SGD ---------------------------------------------------------------------- */

/* A step's numbers as torch's loop takes them. */
typedef struct sgd_k {
  double lr, momentum, dampening, wd;
  bool nesterov, first; /* first: no buffer yet (it becomes d itself) */
} sgd_k;

/* Entries [lo, hi) of w and (with momentum) the buffer b, in place. */
#define SGD_D(use)                                                             \
  R w = pw[i], g = pg[i], gd = g + wd * w;                                     \
  R d = PICK(decay, gd, g);
#define SGD_PLAIN(use)                                                         \
  SGD_D(use)                                                                   \
  R wn = w + nlr * d;                                                          \
  pw[i] = PICK(use, wn, w);
#define SGD_MOMENTUM(use) /* torch's first step takes the buffer to be d, undampened */ \
  SGD_D(use)                                                                   \
  R b0 = pb[i], bm = b0 * mom + damp * d;                                      \
  R b = PICK(first, d, bm), dn = d + mom * b;                                  \
  R e = PICK(nesterov, dn, b), wn = w + nlr * e;                               \
  pb[i] = PICK(use, b, b0);                                                    \
  pw[i] = PICK(use, wn, w);
#define DEF_SGD(NAME, RT)                                                      \
  MQ_WIDE static void NAME(const sgd_k *k, RT *restrict pw, RT *restrict pb, const RT *restrict pg, \
                           const uint8_t *restrict ok, int64_t lo, int64_t hi) { \
    typedef RT R;                                                              \
    const R mom = (R)k->momentum, damp = (R)(1 - k->dampening), wd = (R)k->wd, nlr = (R)-k->lr; \
    const bool decay = k->wd != 0, nesterov = k->nesterov, first = k->first;   \
    if (pb) {                                                                  \
      BOTH_LOOPS(SGD_MOMENTUM)                                                 \
    } else {                                                                   \
      BOTH_LOOPS(SGD_PLAIN)                                                    \
    }                                                                          \
  }
DEF_SGD(sgd_f32, float)
DEF_SGD(sgd_f64, double)

void mq_optim_sgd(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *buf, const mq_sgd_opts *o,
                  mq_tensor **w_out, mq_tensor **buf_out) {
  step_io io = step_begin(S, w, g);
  mq_tensor *nb = o->momentum != 0 ? copy_of(S, w, buf) : NULL;
  sgd_k k = {o->lr, o->momentum, o->dampening, o->weight_decay, o->nesterov, !buf};
  void *pw = mq_tensor_data(io.w), *pb = nb ? mq_tensor_data(nb) : NULL;
  if (w->dtype == MQ_DT_F32) {
    PIECES(S, io.n, sgd_f32, &k, pw, pb, io.g, io.ok);
  } else {
    PIECES(S, io.n, sgd_f64, &k, pw, pb, io.g, io.ok);
  }
  *w_out = io.w;
  *buf_out = nb;
}

/* --- Adagrad ------------------------------------------------------------------- */

typedef struct adagrad_k {
  double lr, eps, wd;
} adagrad_k;

#define ADAGRAD(use)                                                           \
  R w = pw[i], g = pg[i], gd = g + wd * w, s0 = ps[i];                         \
  R d = PICK(decay, gd, g);                                                    \
  R sum = s0 + d * d;                                                          \
  R std = ROOT(sum) + eps;                                                     \
  R wn = w + nlr * (d / std);                                                  \
  ps[i] = PICK(use, sum, s0);                                                  \
  pw[i] = PICK(use, wn, w);
#define DEF_ADAGRAD(NAME, RT)                                                  \
  MQ_WIDE static void NAME(const adagrad_k *k, RT *restrict pw, RT *restrict ps, const RT *restrict pg, \
                           const uint8_t *restrict ok, int64_t lo, int64_t hi) { \
    typedef RT R;                                                              \
    const R wd = (R)k->wd, eps = (R)k->eps, nlr = (R)-k->lr;                   \
    const bool decay = k->wd != 0;                                             \
    BOTH_LOOPS(ADAGRAD)                                                        \
  }
DEF_ADAGRAD(adagrad_f32, float)
DEF_ADAGRAD(adagrad_f64, double)

void mq_optim_adagrad(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *sum, double lr,
                      double eps, double weight_decay, mq_tensor **w_out, mq_tensor **sum_out) {
  step_io io = step_begin(S, w, g);
  mq_tensor *ns = copy_of(S, w, sum);
  adagrad_k k = {lr, eps, weight_decay};
  void *pw = mq_tensor_data(io.w), *ps = mq_tensor_data(ns);
  if (w->dtype == MQ_DT_F32) {
    PIECES(S, io.n, adagrad_f32, &k, pw, ps, io.g, io.ok);
  } else {
    PIECES(S, io.n, adagrad_f64, &k, pw, ps, io.g, io.ok);
  }
  *w_out = io.w;
  *sum_out = ns;
}

/* --- Adam and AdamW ----------------------------------------------------------- */

typedef struct adam_k {
  double beta1, beta2, eps, wd, step_size, bc2_sqrt, decay;
  bool decoupled;
} adam_k;

/* AMS: amsgrad's largest second moment px (torch.maximum: NaN wins), a
 * loop of its own so that the other does not read it. AdamW's parameter
 * decays; Adam's gradient takes the decay (l2). */
#define ADAM(use)                                                              \
  R w0 = pw[i], g = pg[i], m0 = pm[i], v0 = pv[i], wdec = w0 * decay;          \
  R w = PICK(decoupled, wdec, w0), gd = g + wd * w;                            \
  R d = PICK(l2, gd, g);                                                       \
  R m = m0 * b1 + b1c * d;                                                     \
  R v = v0 * b2 + b2c * d * d;                                                 \
  R second = v;                                                                \
  if (AMS) {                                                                   \
    R x = px[i];                                                               \
    second = PICK((v != v) | (v > x), v, x);                                   \
    px[i] = PICK(use, second, x);                                              \
  }                                                                            \
  R denom = ROOT(second) / bc2 + eps;                                          \
  R wn = w + nstep * (m / denom);                                              \
  pm[i] = PICK(use, m, m0);                                                    \
  pv[i] = PICK(use, v, v0);                                                    \
  pw[i] = PICK(use, wn, w0);
#define DEF_ADAM(NAME, RT, AMS_)                                               \
  MQ_WIDE static void NAME(const adam_k *k, RT *restrict pw, RT *restrict pm, RT *restrict pv, \
                           RT *restrict px, const RT *restrict pg, const uint8_t *restrict ok, \
                           int64_t lo, int64_t hi) {                           \
    typedef RT R;                                                              \
    enum { AMS = AMS_ };                                                       \
    const R b1 = (R)k->beta1, b1c = (R)(1 - k->beta1), b2 = (R)k->beta2, b2c = (R)(1 - k->beta2); \
    const R wd = (R)k->wd, decay = (R)k->decay, bc2 = (R)k->bc2_sqrt, eps = (R)k->eps; \
    const R nstep = (R)-k->step_size;                                          \
    const bool decoupled = k->decoupled, l2 = !k->decoupled && k->wd != 0;     \
    (void)px;                                                                  \
    BOTH_LOOPS(ADAM)                                                           \
  }
DEF_ADAM(adam_f32, float, 0)
DEF_ADAM(adam_f64, double, 0)
DEF_ADAM(adam_ams_f32, float, 1)
DEF_ADAM(adam_ams_f64, double, 1)
void mq_optim_adam(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *m, mq_tensor *v,
                   mq_tensor *vmax, int64_t step, const mq_adam_opts *o, mq_tensor **w_out,
                   mq_tensor **m_out, mq_tensor **v_out, mq_tensor **vmax_out) {
  step_io io = step_begin(S, w, g);
  mq_tensor *nm = copy_of(S, w, m), *nv = copy_of(S, w, v);
  mq_tensor *nx = o->amsgrad ? copy_of(S, w, vmax) : NULL;
  /* torch's bias corrections, in double; AdamW's decay factor likewise */
  adam_k k = {o->beta1, o->beta2, o->eps, o->weight_decay,
              o->lr / (1 - pow(o->beta1, (double)step)), sqrt(1 - pow(o->beta2, (double)step)),
              1 - o->lr * o->weight_decay, o->decoupled};
  void *pw = mq_tensor_data(io.w), *pm = mq_tensor_data(nm), *pv = mq_tensor_data(nv);
  void *px = nx ? mq_tensor_data(nx) : NULL;
  bool f32 = w->dtype == MQ_DT_F32;
  if (px && f32) {
    PIECES(S, io.n, adam_ams_f32, &k, pw, pm, pv, px, io.g, io.ok);
  } else if (px) {
    PIECES(S, io.n, adam_ams_f64, &k, pw, pm, pv, px, io.g, io.ok);
  } else if (f32) {
    PIECES(S, io.n, adam_f32, &k, pw, pm, pv, NULL, io.g, io.ok);
  } else {
    PIECES(S, io.n, adam_f64, &k, pw, pm, pv, NULL, io.g, io.ok);
  }
  *w_out = io.w;
  *m_out = nm;
  *v_out = nv;
  *vmax_out = nx;
}
