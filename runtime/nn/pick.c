/* pick.c - the target class of each position (pick.h). */
#include "pick.h"

#include "../tensor/internal.h"

/* Positions as (outer, inner) around the class dim of [x]. */
static void around_dim(const mq_tensor *x, int dim, int64_t *outer, int64_t *inner) {
  *outer = *inner = 1;
  for (int d = 0; d < x->ndim; d++) {
    if (d < dim) *outer *= x->shape[d];
    else if (d > dim) *inner *= x->shape[d];
  }
}

#define DEF_PICK(NAME, T)                                                      \
  static void NAME(mq_state *S, const T *x, const int64_t *t, T *p, int64_t outer, int64_t C, \
                   int64_t inner) {                                            \
    for (int64_t a = 0; a < outer; a++) {                                      \
      mq_poll_at(S, a);                                                        \
      for (int64_t i = 0; i < inner; i++) {                                    \
        int64_t k = a * inner + i, c = t[k];                                   \
        /* the sum's: +0 plus the one entry (in double for float32, exact) */ \
        p[k] = c >= 0 && c < C ? (T)((double)x[(a * C + c) * inner + i] + 0.0) : (T)0; \
      }                                                                        \
    }                                                                          \
  }
DEF_PICK(pick_f32, float)
DEF_PICK(pick_f64, double)

mq_tensor *mq_nn_pick(mq_state *S, mq_tensor *x, mq_tensor *t, int dim) {
  if (x->mask || t->mask || t->dtype != MQ_DT_I64 || (x->dtype != MQ_DT_F32 && x->dtype != MQ_DT_F64) ||
      x->layout || t->layout || dim < 0 || dim >= x->ndim || t->ndim != x->ndim - 1)
    return NULL;
  for (int d = 0, k = 0; d < x->ndim; d++)
    if (d != dim && t->shape[k++] != x->shape[d]) return NULL;
  mq_tensor *xc = mq_contiguous(S, x), *tc = mq_contiguous(S, t);
  mq_tensor *p = mq_tensor_new(S, (mq_dtype)x->dtype, t->ndim, t->shape);
  int64_t outer, inner;
  around_dim(x, dim, &outer, &inner);
  if (x->dtype == MQ_DT_F32)
    pick_f32(S, mq_tensor_data(xc), mq_tensor_data(tc), mq_tensor_data(p), outer, x->shape[dim], inner);
  else
    pick_f64(S, mq_tensor_data(xc), mq_tensor_data(tc), mq_tensor_data(p), outer, x->shape[dim], inner);
  if (MQ_AG_REQ(x)) {
    /* the classes the backward reads are the ones picked: t's data, owned */
    mq_tensor *in[2] = {x, mq_tensor_owned(S, tc)};
    mq_gradnode *n = mq_ag_rec_sparse(S, p, MQ_AG_PICK, 0, 1, 1, in);
    if (n) n->dim = dim;
  }
  return p;
}
