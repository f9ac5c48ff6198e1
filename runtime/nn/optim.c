/* optim.c - the optimizer steps of nn.h: torch.optim's SGD (with dampening
 * and Nesterov momentum), Adagrad, Adam (with amsgrad) and AdamW updates, one entry at a time in the parameters' dtype with torch's order
 * of operations, where the gradient is valid. A masked-out gradient entry
 * is no gradient (not a zero one): its parameter and state are copied, as
 * the masked Adagrad of torch's MaskedTensor tutorial (seed 003) does. */
#include <math.h>
#include <string.h>

#include "nn.h"

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

#define VALID(io, i) (!(io).ok || (io).ok[i])
#define POLL(i) if (((i) & 0xffff) == 0xffff) mq_check_interrupt(S)

/* One loop per dtype: R is the element type. */
#define BY_DTYPE(dt, ...)                                                      \
  do {                                                                         \
    if ((dt) == MQ_DT_F32) {                                                   \
      typedef float R;                                                         \
      __VA_ARGS__                                                              \
    } else {                                                                   \
      typedef double R;                                                        \
      __VA_ARGS__                                                              \
    }                                                                          \
  } while (0)

void mq_optim_sgd(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *buf, const mq_sgd_opts *o,
                  mq_tensor **w_out, mq_tensor **buf_out) {
  step_io io = step_begin(S, w, g);
  const double momentum = o->momentum, weight_decay = o->weight_decay;
  mq_tensor *nb = momentum != 0 ? copy_of(S, w, buf) : NULL;
  BY_DTYPE(w->dtype, {
    R *pw = mq_tensor_data(io.w), *pb = nb ? mq_tensor_data(nb) : NULL;
    const R *pg = io.g;
    for (int64_t i = 0; i < io.n; i++) {
      POLL(i);
      if (!VALID(io, i)) continue;
      R d = pg[i];
      if (weight_decay != 0) d = d + (R)weight_decay * pw[i];
      if (pb) { /* torch's first step takes the buffer to be d itself, undampened */
        pb[i] = buf ? pb[i] * (R)momentum + (R)(1 - o->dampening) * d : d;
        d = o->nesterov ? d + (R)momentum * pb[i] : pb[i];
      }
      pw[i] = pw[i] + (R)-o->lr * d;
    }
  });
  *w_out = io.w;
  *buf_out = nb;
}

void mq_optim_adagrad(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *sum, double lr,
                      double eps, double weight_decay, mq_tensor **w_out, mq_tensor **sum_out) {
  step_io io = step_begin(S, w, g);
  mq_tensor *ns = copy_of(S, w, sum);
  BY_DTYPE(w->dtype, {
    R *pw = mq_tensor_data(io.w), *ps = mq_tensor_data(ns);
    const R *pg = io.g;
    for (int64_t i = 0; i < io.n; i++) {
      POLL(i);
      if (!VALID(io, i)) continue;
      R d = pg[i];
      if (weight_decay != 0) d = d + (R)weight_decay * pw[i];
      ps[i] = ps[i] + d * d;
      R std = (R)sqrt(ps[i]) + (R)eps;
      pw[i] = pw[i] + (R)-lr * (d / std);
    }
  });
  *w_out = io.w;
  *sum_out = ns;
}

void mq_optim_adam(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *m, mq_tensor *v,
                   mq_tensor *vmax, int64_t step, const mq_adam_opts *o, mq_tensor **w_out,
                   mq_tensor **m_out, mq_tensor **v_out, mq_tensor **vmax_out) {
  step_io io = step_begin(S, w, g);
  mq_tensor *nm = copy_of(S, w, m), *nv = copy_of(S, w, v);
  mq_tensor *nx = o->amsgrad ? copy_of(S, w, vmax) : NULL;
  const double beta1 = o->beta1, beta2 = o->beta2, eps = o->eps, wd = o->weight_decay;
  /* torch's bias corrections, in double; AdamW's decay factor likewise */
  const double step_size = o->lr / (1 - pow(beta1, (double)step));
  const double bc2_sqrt = sqrt(1 - pow(beta2, (double)step));
  const double decay = 1 - o->lr * wd;
  BY_DTYPE(w->dtype, {
    R *pw = mq_tensor_data(io.w), *pm = mq_tensor_data(nm), *pv = mq_tensor_data(nv);
    R *px = nx ? mq_tensor_data(nx) : NULL;
    const R *pg = io.g;
    for (int64_t i = 0; i < io.n; i++) {
      POLL(i);
      if (!VALID(io, i)) continue;
      R d = pg[i];
      if (o->decoupled) pw[i] = pw[i] * (R)decay; /* AdamW: the parameter decays */
      else if (wd != 0) d = d + (R)wd * pw[i];    /* Adam: the gradient takes it */
      pm[i] = pm[i] * (R)beta1 + (R)(1 - beta1) * d;
      pv[i] = pv[i] * (R)beta2 + (R)(1 - beta2) * d * d;
      R second = pv[i];
      if (px) { /* amsgrad: the largest second moment so far (torch.maximum: NaN wins) */
        if (pv[i] != pv[i] || pv[i] > px[i]) px[i] = pv[i];
        second = px[i];
      }
      R denom = (R)sqrt(second) / (R)bc2_sqrt + (R)eps;
      pw[i] = pw[i] + (R)-step_size * (pm[i] / denom);
    }
  });
  *w_out = io.w;
  *m_out = nm;
  *v_out = nv;
  *vmax_out = nx;
}
