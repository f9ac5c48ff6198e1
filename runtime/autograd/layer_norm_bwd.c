/* layer_norm_bwd.c - the derivative of the fused layer_norm node
 * (MQ_AG_LAYER_NORM): the gradients' tensors and masks around
 * nn/layer_norm.c's arithmetic (layer_norm.h says what it computes). The
 * gradients are in x's dtype, float32 or float64, as the node's inputs. */
#include "backward.h"

#include "../nn/layer_norm.h"
#include "../tensor/shape.h"
#include "../tensor/maskspan.h"

/* [t]'s data alone as a contiguous array of [dt] (t's dtype, or a gradient's
 * float32 or float64 converted), broadcast to [shape] */
static const void *data_as(mq_state *S, mq_tensor *t, int dt, int nd, const int64_t *shape) {
  if (dt == MQ_DT_F32) return mq_bw_f32_at(S, t, nd, shape);
  return mq_bw_d(mq_bw_f64_to(S, t, nd, shape));
}

static mq_tensor *grad_new(mq_state *S, int dt, int nd, const int64_t *shape) {
  return dt == MQ_DT_F32 ? mq_bw_gnew32(S, nd, shape) : mq_ag_gnew(S, nd, shape);
}

void mq_bw_layer_norm(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2], *st = n->in[3];
  const bool want_x = x->requires_grad, want_w = MQ_AG_REQ(w), want_b = MQ_AG_REQ(b);
  if (!want_x && !want_w && !want_b) return;
  const int dt = x->dtype, nd = x->ndim;
  mq_ln_grad G = {.dt = dt, .rows = st->numel / 2, .st = mq_tensor_data(st)};
  G.C = G.rows ? x->numel / G.rows : 0;
  G.x = data_as(S, x, dt, nd, x->shape);
  G.g = data_as(S, g, dt, nd, x->shape);
  G.xm = mq_ag_maskp(S, x);
  G.gm = mq_ag_maskp(S, g);
  if (G.xm && x->mask->ndim == nd) { /* padded rows (maskspan.h) */
    G.xrst = mq_mask_row_states(S, x->mask, G.C);
    if (G.xrst && G.gm && g->mask->ndim == nd) G.grst = mq_mask_row_states(S, g->mask, G.C);
  }
  if (w) G.w = data_as(S, w, dt, w->ndim, w->shape);
  mq_tensor *dx = NULL;
  if (want_x) {
    dx = grad_new(S, dt, nd, x->shape);
    G.dx = mq_tensor_data(dx);
    if (G.xm || G.gm) G.dxm = mq_ag_new_mask(S, dx);
  }
  const int64_t pn[1] = {G.C};
  mq_tensor *sums[2] = {NULL, NULL}; /* dw, db in float64 */
  for (int i = 0; i < 2; i++)
    if (i ? want_b : want_w) sums[i] = mq_ag_gnew(S, 1, pn);
  G.dw = sums[0] ? mq_bw_d(sums[0]) : NULL;
  G.db = sums[1] ? mq_bw_d(sums[1]) : NULL;
  uint8_t *wm = NULL;
  if ((want_w || want_b) && (G.xm || G.gm)) wm = mq_scratch(S, (size_t)G.C + 1);
  G.wm = wm;
  mq_nn_layer_norm_grad(S, &G);
  gin[0] = dx;
  for (int i = 0; i < 2; i++) {
    if (!sums[i]) continue;
    mq_tensor *q = i ? b : w, *r = mq_astype(S, mq_reshape(S, sums[i], q->ndim, q->shape), (mq_dtype)dt);
    if (wm) { /* masked where no valid entry reached the column */
      mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, q->ndim, q->shape);
      memcpy(mq_tensor_data(m), wm, (size_t)G.C);
      mq_tensor_set_mask(S, r, m);
    }
    gin[1 + i] = r;
  }
}
