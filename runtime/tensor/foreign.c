/* foreign.c - reading memory a tensor does not own (tensor.h:
 * mq_storage_foreign): a buffer a host wrapped (masq.h: masq_tensor_wrap)
 * or a file mapped by load(path, mmap=true). Its bytes may change between
 * two calls into masq and, from another host thread, during one.
 *
 * The rule: validate what you use, use what you validated. A value that
 * changes under a kernel is only another value, so the kernels that compute
 * values read such memory in place. But an op that takes positions,
 * lengths or counts from data (an index, a bool mask it counts, a sparse
 * tensor's indices, a dims list) reads them from mq_tensor_owned(): one
 * pass copies them into memory masq owns, and everything after, the checks,
 * the sizes, the writes and autograd's replay in a later call, reads that
 * copy. Tensors in masq's own memory are values that never change (tensor.h)
 * and are used as they are, so the copy costs only where memory is shared. */
#include "iter.h"

mq_tensor *mq_tensor_copy_owned(mq_state *S, mq_tensor *t) {
  mq_tensor *plain = mq_tensor_view(S, t, t->ndim, t->shape, t->strides, t->offset);
  mq_tensor *c = mq_tensor_new(S, (mq_dtype)t->dtype, t->ndim, t->shape);
  mq_kernel_convert(S, c, plain); /* reads each element once; a bool as 0 or 1 */
  return c;
}

static bool foreign(const mq_tensor *t) { return t->storage && mq_storage_foreign(t->storage); }

mq_tensor *mq_tensor_owned(mq_state *S, mq_tensor *t) {
  bool data = foreign(t), mask = t->mask && foreign(t->mask);
  if (!data && !mask) return t;
  mq_tensor *r = data ? mq_tensor_copy_owned(S, t)
                      : mq_tensor_view(S, t, t->ndim, t->shape, t->strides, t->offset);
  if (t->mask) mq_tensor_set_mask(S, r, mask ? mq_tensor_copy_owned(S, t->mask) : t->mask);
  return r;
}

/* OR of every byte of a bool tensor: above 1 when some byte is neither 0
 * nor 1. One pass, any strides; the OR of a row vectorizes. */
static void or_bytes(mq_state *S, mq_iter *it, uint8_t *acc) {
  ROWS_BEGIN(S, it)
  const uint8_t *p = (const uint8_t *)it->p[0];
  int64_t n = it->n, s = it->is[0];
  uint8_t a = 0;
  if (s == 1)
    for (int64_t i = 0; i < n; i++) a |= p[i];
  else
    for (int64_t i = 0; i < n; i++) a |= p[i * s];
  *acc |= a;
  if (*acc > 1) return;
  ROWS_END
}

mq_tensor *mq_bool_normalized(mq_state *S, mq_tensor *t) {
  if (t->numel == 0) return t;
  mq_iter it;
  mq_iter_init(&it, 1, &t);
  uint8_t acc = 0;
  or_bytes(S, &it, &acc);
  return acc > 1 ? mq_tensor_copy_owned(S, t) : t;
}
