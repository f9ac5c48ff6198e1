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

/* V(v): the picked entry's value: the sum's for a float (+0 plus the
 * entry, in double for float32, exact), the byte itself for a mask */
#define DEF_PICK(NAME, T, V)                                                   \
  static void NAME(mq_state *S, const T *x, const int64_t *t, T *p, int64_t outer, int64_t C, \
                   int64_t inner) {                                            \
    for (int64_t a = 0; a < outer; a++) {                                      \
      mq_poll_at(S, a);                                                        \
      for (int64_t i = 0; i < inner; i++) {                                    \
        int64_t k = a * inner + i, c = t[k];                                   \
        p[k] = c >= 0 && c < C ? V(x[(a * C + c) * inner + i]) : (T)0;      \
      }                                                                        \
    }                                                                          \
  }
#define PICK_F32(v) (float)((double)(v) + 0.0)
#define PICK_F64(v) ((v) + 0.0)
#define PICK_BYTE(v) (v)
DEF_PICK(pick_f32, float, PICK_F32)
DEF_PICK(pick_f64, double, PICK_F64)
DEF_PICK(pick_bool, uint8_t, PICK_BYTE)

mq_tensor *mq_nn_pick(mq_state *S, mq_tensor *x, mq_tensor *t, int dim) {
  if (x->mask || t->mask || t->dtype != MQ_DT_I64 ||
      (x->dtype != MQ_DT_F32 && x->dtype != MQ_DT_F64 && x->dtype != MQ_DT_BOOL) ||
      x->layout || t->layout || dim < 0 || dim >= x->ndim || t->ndim != x->ndim - 1)
    return NULL;
  for (int d = 0, k = 0; d < x->ndim; d++)
    if (d != dim && t->shape[k++] != x->shape[d]) return NULL;
  mq_tensor *xc = mq_contiguous(S, x), *tc = mq_contiguous(S, t);
  mq_tensor *p = mq_tensor_new(S, (mq_dtype)x->dtype, t->ndim, t->shape);
  int64_t outer, inner;
  around_dim(x, dim, &outer, &inner);
  const int64_t *tv = mq_tensor_data(tc);
  int64_t C = x->shape[dim];
  if (x->dtype == MQ_DT_F32) pick_f32(S, mq_tensor_data(xc), tv, mq_tensor_data(p), outer, C, inner);
  else if (x->dtype == MQ_DT_F64) pick_f64(S, mq_tensor_data(xc), tv, mq_tensor_data(p), outer, C, inner);
  else pick_bool(S, mq_tensor_data(xc), tv, mq_tensor_data(p), outer, C, inner);
  if (MQ_AG_REQ(x)) {
    /* the classes the backward reads are the ones picked: t's data, owned */
    mq_tensor *in[2] = {x, mq_tensor_owned(S, tc)};
    mq_gradnode *n = mq_ag_rec_sparse(S, p, MQ_AG_PICK, 0, 1, 1, in);
    if (n) n->dim = dim;
  }
  return p;
}
