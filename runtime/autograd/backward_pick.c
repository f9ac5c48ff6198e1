/* backward_pick.c - the derivative of cross_entropy's pick (nn/pick.h):
 * each position's gradient lands on its target class, every other class
 * gets +0, in g's own precision (float32 stays float32). With g masked,
 * the result is masked but at the target classes where g is valid: what
 * the sum's and the where's derivatives of the op-by-op pick give, so
 * log_softmax's derivative after it sees the same gradient. */
#include "backward.h"

#include "../tensor/parallel.h"

typedef struct pick_job {
  const void *g;
  int64_t gs; /* g's stride: 1, or 0 for the one-value form */
  const uint8_t *gm;
  const int64_t *cls;
  void *o;
  uint8_t *m;
  int64_t C, inner;
  bool f32;
} pick_job;

/* Outer slices [lo, hi): each its C x inner block of the result. */
static void pick_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const pick_job *J = ctx;
  int64_t C = J->C, inner = J->inner;
  size_t es = J->f32 ? sizeof(float) : sizeof(double);
  memset((char *)J->o + (size_t)(lo * C * inner) * es, 0, (size_t)((hi - lo) * C * inner) * es);
  if (J->m) memset(J->m + lo * C * inner, 0, (size_t)((hi - lo) * C * inner));
  for (int64_t a = lo; a < hi; a++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t k = a * inner + i, c = J->cls[k];
      if (c < 0 || c >= C) continue; /* no class: no gradient */
      int64_t at = (a * C + c) * inner + i;
      if (J->f32) ((float *)J->o)[at] = ((const float *)J->g)[k * J->gs];
      else ((double *)J->o)[at] = ((const double *)J->g)[k];
      if (J->m) J->m[at] = J->gm[k];
    }
}

void mq_bw_pick(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *x = n->in[0], *cls = n->in[1];
  if (!x->requires_grad) return;
  bool f32 = g->dtype == MQ_DT_F32;
  mq_tensor *r = f32 ? mq_bw_gnew32(S, x->ndim, x->shape) : mq_ag_gnew(S, x->ndim, x->shape);
  pick_job J = {mq_tensor_data(g), f32 ? mq_bw_gstride(g) : 1, mq_ag_maskp(S, g),
                mq_tensor_data(cls), mq_tensor_data(r), NULL, x->shape[n->dim], 1, f32};
  if (J.gm) J.m = mq_ag_new_mask(S, r);
  int64_t outer = 1;
  for (int d = 0; d < x->ndim; d++) {
    if (d < n->dim) outer *= x->shape[d];
    else if (d > n->dim) J.inner *= x->shape[d];
  }
  int64_t per = J.C * J.inner > 0 ? J.C * J.inner : 1;
  mq_parallel_for(S, mq_parallel_threads_for(S, x->numel), outer,
                  per >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / per, pick_range, &J);
  gin[0] = r;
}
