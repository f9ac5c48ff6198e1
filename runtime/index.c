/* index.c - x[...] with ints, slices, `...` and none (new axes), Python's
 * rules. The result is always a view; a mask is indexed the same way, so the
 * view of a masked tensor is masked at the same positions. */
#include "kernels.h"

static mq_tensor *index_view(mq_state *S, mq_tensor *t, const mq_index_item *items, int n) {
  int consumed = 0, ellipsis = -1;
  for (int i = 0; i < n; i++) {
    if (items[i].kind == MQ_IX_ELLIPSIS) {
      if (ellipsis >= 0) mq_error(S, "an index can only have a single ellipsis (...)");
      ellipsis = i;
    } else if (items[i].kind == MQ_IX_INT || items[i].kind == MQ_IX_SLICE) {
      consumed++;
    } else if (items[i].kind != MQ_IX_NEWAXIS) {
      mq_error(S, "bad index item");
    }
  }
  if (consumed > t->ndim)
    mq_error(S, "too many indices for a %d-d tensor: %d given", t->ndim, consumed);

  int64_t shape[MQ_MAX_DIMS], strides[MQ_MAX_DIMS], offset = t->offset;
  int nd = 0, d = 0; /* d: next dim of t */
#define PUSH(sz, st)                                                           \
  do {                                                                         \
    if (nd == MQ_MAX_DIMS)                                                     \
      mq_error(S, "indexing gives more than %d dimensions", MQ_MAX_DIMS);      \
    shape[nd] = (sz);                                                          \
    strides[nd++] = (st);                                                      \
  } while (0)
  for (int i = 0; i < n; i++) {
    const mq_index_item *it = &items[i];
    switch ((mq_index_kind)it->kind) {
    case MQ_IX_ELLIPSIS:
      for (int k = 0; k < t->ndim - consumed; k++, d++) PUSH(t->shape[d], t->strides[d]);
      break;
    case MQ_IX_NEWAXIS: PUSH(1, 0); break;
    case MQ_IX_INT: {
      int64_t size = t->shape[d], ix = it->start;
      if (ix < -size || ix >= size)
        mq_error(S, "index %lld is out of range for dimension %d of size %lld", (long long)ix, d,
                 (long long)size);
      if (ix < 0) ix += size;
      offset += ix * t->strides[d];
      d++;
      break;
    }
    case MQ_IX_SLICE: {
      int64_t size = t->shape[d], step = it->has_step ? it->step : 1;
      if (step <= 0) mq_error(S, "slice step must be positive");
      int64_t start = it->has_start ? it->start : 0, stop = it->has_stop ? it->stop : size;
      if (start < 0) start = start + size < 0 ? 0 : start + size;
      if (stop < 0) stop = stop + size < 0 ? 0 : stop + size;
      if (start > size) start = size;
      if (stop > size) stop = size;
      int64_t len = stop > start ? (stop - start - 1) / step + 1 : 0;
      if (len > 0) offset += start * t->strides[d];
      PUSH(len, t->strides[d] * step);
      d++;
      break;
    }
    }
  }
  for (; d < t->ndim; d++) PUSH(t->shape[d], t->strides[d]); /* implicit trailing `...` */
#undef PUSH
  return mq_tensor_view(S, t, nd, shape, strides, offset);
}

mq_tensor *mq_index(mq_state *S, mq_tensor *t, const mq_index_item *items, int n) {
  mq_tensor *v = index_view(S, t, items, n);
  if (t->mask) mq_tensor_set_mask(S, v, index_view(S, t->mask, items, n));
  return v;
}
