/* gather.c - gather, scatter, scatter_add, index_select and one_hot: moving
 * entries by int64 index tensors (gather.h).
 *
 * Every op first walks the index once (index_walk): it checks each valid
 * index against its dim's size and works out, for each index entry, the
 * element of x it names (or -1 for a masked-out index) and the element of
 * the other operand at the same position. The data, the mask and, in
 * backward, the element numbers (autograd's replay) then all move by those
 * numbers, so they cannot disagree. */
#include "gather.h"

#include "../../core/checked.h"
#include "../tensor/internal.h"
#include "../tensor/shape.h"

/* A tensor's geometry with a 0-d tensor seen as shape (1,), as torch does
 * for dim 0 of a scalar. */
typedef struct geom {
  int nd;
  int64_t shape[MQ_MAX_DIMS], st[MQ_MAX_DIMS]; /* st: contiguous strides */
} geom;

static void geom_of(geom *G, const mq_tensor *t) {
  G->nd = t->ndim ? t->ndim : 1;
  for (int d = 0; d < G->nd; d++) G->shape[d] = t->ndim ? t->shape[d] : 1;
  int64_t s = 1;
  for (int d = G->nd - 1; d >= 0; d--) G->st[d] = s, s *= G->shape[d];
}

/* The index as the op reads it: int64, strided, and in memory masq owns,
 * so that the positions checked are those used, also by autograd's replay
 * in a later call (tensor.h: mq_tensor_owned). */
static mq_tensor *need_index(mq_state *S, const char *who, mq_tensor *index) {
  if (index->dtype != MQ_DT_I64)
    mq_error(S, "%s: index must be an int64 tensor, got %s", who,
             mq_dtype_name((mq_dtype)index->dtype));
  if (index->sparse) mq_error(S, "%s: index must be a strided tensor, not sparse", who);
  return mq_tensor_owned(S, index);
}

/* The shape rules of torch's gather and scatter: index has x's number of
 * dims, is no longer than [other] (src; NULL for gather) along every dim
 * and no longer than x along every dim but [dim]. */
static void check_shapes(mq_state *S, const char *who, mq_tensor *x, int dim, mq_tensor *index,
                         mq_tensor *other) {
  if (index->ndim != x->ndim)
    mq_error(S, "%s: index has %d dims but x has %d; they must have the same number", who,
             index->ndim, x->ndim);
  if (other && other->ndim != x->ndim)
    mq_error(S, "%s: src has %d dims but x has %d; they must have the same number", who,
             other->ndim, x->ndim);
  for (int d = 0; d < x->ndim; d++) {
    if (d != dim && index->shape[d] > x->shape[d])
      mq_error(S, "%s: index %s is longer than x %s along dim %d", who,
               mq_shape_str(S, index->ndim, index->shape), mq_shape_str(S, x->ndim, x->shape), d);
    if (other && index->shape[d] > other->shape[d])
      mq_error(S, "%s: index %s is longer than src %s along dim %d", who,
               mq_shape_str(S, index->ndim, index->shape),
               mq_shape_str(S, other->ndim, other->shape), d);
  }
}

/* For each entry k of [index] (row-major): tgt[k], the element of x (in
 * x's row-major numbering) at k's position with dim replaced by the index,
 * or -1 where the index is masked out; and, when [ost] is given, oth[k],
 * the element at k's own position in a tensor of contiguous strides ost. */
static void index_walk(mq_state *S, const char *who, mq_tensor *x, int dim, mq_tensor *index,
                       int64_t *tgt, const int64_t *ost, int64_t *oth) {
  geom X, I;
  geom_of(&X, x);
  geom_of(&I, index);
  const int64_t *id = mq_tensor_data(mq_contiguous(S, mq_get_data(S, index)));
  const uint8_t *im = index->mask ? mq_tensor_data(mq_contiguous(S, index->mask)) : NULL;
  int64_t pos[MQ_MAX_DIMS] = {0}, size = X.shape[dim];
  for (int64_t k = 0; k < index->numel; k++) {
    mq_poll_at(S, k);
    int64_t off = 0, o = 0;
    if (im && !im[k]) {
      off = -1;
    } else {
      int64_t v = id[k];
      if (v < 0 || v >= size)
        mq_error(S, "%s: index %lld is out of range for dim %d of size %lld (at index position %s)",
                 who, (long long)v, dim, (long long)size,
                 index->ndim ? mq_shape_str(S, index->ndim, pos) : "()");
      for (int d = 0; d < X.nd; d++) off += (d == dim ? v : pos[d]) * X.st[d];
    }
    tgt[k] = off;
    if (ost) {
      for (int d = 0; d < I.nd; d++) o += pos[d] * ost[d];
      oth[k] = o;
    }
    for (int d = I.nd - 1; d >= 0; d--) {
      if (++pos[d] < I.shape[d]) break;
      pos[d] = 0;
    }
  }
}

static int64_t *scratch_i64(mq_state *S, int64_t n) {
  return mq_scratch(S, mq_ck_zmul(S, (size_t)(n ? n : 1), sizeof(int64_t), "index"));
}

/* o[k] = x[from[k]] for elements of [es] bytes; 0 where from[k] < 0. */
static void take(mq_state *S, char *o, const char *x, size_t es, const int64_t *from, int64_t n) {
  for (int64_t k = 0; k < n; k++) {
    mq_poll_at(S, k); /* random reads: 10^8 of them take seconds */
    if (from[k] < 0) memset(o + (size_t)k * es, 0, es);
    else memcpy(o + (size_t)k * es, x + (size_t)from[k] * es, es);
  }
}

/* o[to[k]] = x[from[k]] for every k with to[k] >= 0, in order. */
static void put(mq_state *S, char *o, const char *x, size_t es, const int64_t *to,
                const int64_t *from, int64_t n) {
  for (int64_t k = 0; k < n; k++) {
    mq_poll_at(S, k);
    if (to[k] >= 0) memcpy(o + (size_t)to[k] * es, x + (size_t)from[k] * es, es);
  }
}

static const char *bytes_of(mq_state *S, mq_tensor *t) {
  return mq_tensor_data(mq_contiguous(S, mq_get_data(S, t)));
}

/* --- gather ----------------------------------------------------------------------- */

/* x's element numbers (in[0]) moved as the data was; in[1] is the index. */
static mq_tensor *replay_gather(mq_state *S, mq_tensor *const *in, const void *args) {
  int dim = *(const int *)args;
  mq_tensor *out = mq_tensor_new(S, MQ_DT_I64, in[1]->ndim, in[1]->shape);
  int64_t *from = scratch_i64(S, in[1]->numel), *o = mq_tensor_data(out);
  index_walk(S, "gather", in[0], dim, in[1], from, NULL, NULL);
  const int64_t *ids = mq_tensor_data(mq_contiguous(S, in[0]));
  for (int64_t k = 0; k < out->numel; k++) {
    mq_poll_at(S, k);
    o[k] = from[k] < 0 ? -1 : ids[from[k]];
  }
  return out;
}

static mq_tensor *gather_as(mq_state *S, const char *who, mq_tensor *x, int dim,
                            mq_tensor *index) {
  index = need_index(S, who, index);
  if (x->sparse) mq_error(S, "%s: x is sparse; to_dense(x) first", who);
  check_shapes(S, who, x, dim, index, NULL);
  int64_t n = index->numel, *from = scratch_i64(S, n);
  index_walk(S, who, x, dim, index, from, NULL, NULL);
  size_t es = mq_dtype_size((mq_dtype)x->dtype);
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)x->dtype, index->ndim, index->shape);
  take(S, mq_tensor_data(out), bytes_of(S, x), es, from, n);
  if (x->mask || index->mask) {
    mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, index->ndim, index->shape);
    uint8_t *mp = mq_tensor_data(m);
    const uint8_t *xm = x->mask ? (const uint8_t *)bytes_of(S, x->mask) : NULL;
    for (int64_t k = 0; k < n; k++) {
      mq_poll_at(S, k);
      mp[k] = from[k] >= 0 && (!xm || xm[from[k]]);
    }
    mq_tensor_set_mask(S, out, m);
  }
  if (MQ_UNLIKELY(x->requires_grad))
    mq_ag_rec_replay(S, out, 1, &x, 1, &index, replay_gather, &dim, sizeof dim);
  return out;
}

mq_tensor *mq_gather(mq_state *S, mq_tensor *x, int dim, mq_tensor *index) {
  return gather_as(S, "gather", x, dim, index);
}

/* --- scatter and scatter_add --------------------------------------------------------- */

/* x's element numbers (in[0]) with src's (in[1]) written over them; in[2]
 * is the index. */
static mq_tensor *replay_scatter(mq_state *S, mq_tensor *const *in, const void *args) {
  int dim = *(const int *)args;
  mq_tensor *x = in[0], *src = in[1], *index = in[2];
  geom G;
  geom_of(&G, src);
  int64_t *to = scratch_i64(S, index->numel), *from = scratch_i64(S, index->numel);
  index_walk(S, "scatter", x, dim, index, to, G.st, from);
  mq_tensor *out = mq_tensor_new(S, MQ_DT_I64, x->ndim, x->shape);
  memcpy(mq_tensor_data(out), bytes_of(S, x), (size_t)x->numel * sizeof(int64_t));
  put(S, mq_tensor_data(out), bytes_of(S, src), sizeof(int64_t), to, from, index->numel);
  return out;
}

/* out[to[k]] += src[from[k]] over the valid src entries, in the dtype T
 * (int64 wraps, as torch's); a masked-out output entry that gets its first
 * valid addend starts from 0 and becomes valid. */
#define DEF_ADD(NAME, T, ADD)                                                  \
  static void NAME(mq_state *S, T *o, uint8_t *om, const T *s, const uint8_t *sm, \
                   const int64_t *to, const int64_t *from, int64_t n) {        \
    for (int64_t k = 0; k < n; k++) {                                          \
      mq_poll_at(S, k);                                                        \
      if (to[k] < 0 || (sm && !sm[from[k]])) continue;                         \
      if (om && !om[to[k]]) o[to[k]] = 0, om[to[k]] = 1;                        \
      o[to[k]] = ADD(o[to[k]], s[from[k]]);                                    \
    }                                                                          \
  }
#define PLAIN_ADD(a, b) ((a) + (b))
#define WRAP_ADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
DEF_ADD(add_i64, int64_t, WRAP_ADD)
DEF_ADD(add_f32, float, PLAIN_ADD)
DEF_ADD(add_f64, double, PLAIN_ADD)

mq_tensor *mq_scatter(mq_state *S, mq_tensor *x, int dim, mq_tensor *index, mq_tensor *src,
                      bool add) {
  const char *who = add ? "scatter_add" : "scatter";
  index = need_index(S, who, index);
  if (x->sparse || src->sparse) mq_error(S, "%s: x and src must be strided; to_dense first", who);
  if (src->dtype != x->dtype)
    mq_error(S, "%s: src is %s but x is %s; convert one (to(src, dtype(x)))", who,
             mq_dtype_name((mq_dtype)src->dtype), mq_dtype_name((mq_dtype)x->dtype));
  if (add && x->dtype == MQ_DT_BOOL) mq_error(S, "scatter_add: x is bool; adding needs numbers");
  check_shapes(S, who, x, dim, index, src);
  geom G;
  geom_of(&G, src);
  int64_t n = index->numel, *to = scratch_i64(S, n), *from = scratch_i64(S, n);
  index_walk(S, who, x, dim, index, to, G.st, from);
  size_t es = mq_dtype_size((mq_dtype)x->dtype);
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)x->dtype, x->ndim, x->shape);
  void *o = mq_tensor_data(out);
  memcpy(o, bytes_of(S, x), (size_t)x->numel * es);
  const char *s = bytes_of(S, src);
  const uint8_t *sm = src->mask ? (const uint8_t *)bytes_of(S, src->mask) : NULL;
  uint8_t *om = NULL;
  if (x->mask || src->mask) {
    mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, x->ndim, x->shape);
    om = mq_tensor_data(m);
    if (x->mask) memcpy(om, bytes_of(S, x->mask), (size_t)x->numel);
    else memset(om, 1, (size_t)x->numel);
    mq_tensor_set_mask(S, out, m);
  }
  if (!add) {
    put(S, o, s, es, to, from, n);
    if (om) {
      if (sm) put(S, (char *)om, (const char *)sm, 1, to, from, n);
      else
        for (int64_t k = 0; k < n; k++) {
          mq_poll_at(S, k);
          if (to[k] >= 0) om[to[k]] = 1;
        }
    }
    if (MQ_UNLIKELY(x->requires_grad | src->requires_grad)) {
      mq_tensor *in[2] = {x, src};
      mq_ag_rec_replay(S, out, 2, in, 1, &index, replay_scatter, &dim, sizeof dim);
    }
    return out;
  }
  if (x->dtype == MQ_DT_I64) add_i64(S, o, om, (const int64_t *)s, sm, to, from, n);
  else if (x->dtype == MQ_DT_F32) add_f32(S, o, om, (const float *)s, sm, to, from, n);
  else add_f64(S, o, om, (const double *)s, sm, to, from, n);
  if (MQ_UNLIKELY(x->requires_grad | src->requires_grad)) {
    /* each src element's output element, -1 where nothing was added */
    mq_tensor *pos = mq_tensor_full_i64(S, src->ndim, src->shape, -1);
    int64_t *p = mq_tensor_data(pos);
    for (int64_t k = 0; k < n; k++) {
      mq_poll_at(S, k);
      if (to[k] >= 0 && (!sm || sm[from[k]])) p[from[k]] = to[k];
    }
    mq_ag_rec_scatter_add(S, out, x, src, pos);
  }
  return out;
}

/* --- index_select ------------------------------------------------------------------ */

mq_tensor *mq_index_select(mq_state *S, mq_tensor *x, int dim, mq_tensor *index) {
  index = need_index(S, "index_select", index);
  if (index->ndim > 1)
    mq_error(S, "index_select: index must be 1-d (or 0-d), got %d dims", index->ndim);
  if (x->ndim == 0 && index->numel != 1) /* torch: a 0-d x takes one index, 0 */
    mq_error(S, "index_select: x is 0-d; the index must hold one entry, not %lld",
             (long long)index->numel);
  /* checked here, so the message names the index's own position */
  const int64_t *id = mq_tensor_data(mq_contiguous(S, mq_get_data(S, index)));
  const uint8_t *im = index->mask ? (const uint8_t *)bytes_of(S, index->mask) : NULL;
  int64_t size = x->ndim ? x->shape[dim] : 1;
  for (int64_t k = 0; k < index->numel; k++) {
    mq_poll_at(S, k);
    if ((!im || im[k]) && (id[k] < 0 || id[k] >= size))
      mq_error(S, "index_select: index %lld is out of range for dim %d of size %lld (at index "
                  "position %lld)",
               (long long)id[k], dim, (long long)size, (long long)k);
  }
  if (x->ndim == 0) return gather_as(S, "index_select", x, 0, mq_reshape(S, index, 0, NULL));
  /* a gather by the index laid along dim and broadcast over the other dims */
  int64_t line[MQ_MAX_DIMS], shape[MQ_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) {
    line[d] = d == dim ? index->numel : 1;
    shape[d] = d == dim ? index->numel : x->shape[d];
  }
  mq_tensor *ix = mq_expand(S, mq_reshape(S, index, x->ndim, line), x->ndim, shape);
  return gather_as(S, "index_select", x, dim, ix);
}

/* --- one_hot ----------------------------------------------------------------------- */

mq_tensor *mq_one_hot(mq_state *S, mq_tensor *index, int64_t classes) {
  index = need_index(S, "one_hot", index);
  if (index->ndim >= MQ_MAX_DIMS)
    mq_error(S, "one_hot: index has %d dims; the result would have more than %d", index->ndim,
             MQ_MAX_DIMS);
  const int64_t *id = mq_tensor_data(mq_contiguous(S, mq_get_data(S, index)));
  const uint8_t *im = index->mask ? (const uint8_t *)bytes_of(S, index->mask) : NULL;
  int64_t n = index->numel, top = -1;
  for (int64_t k = 0; k < n; k++) {
    mq_poll_at(S, k);
    if (im && !im[k]) continue;
    if (id[k] < 0)
      mq_error(S, "one_hot: class %lld is negative (at index position %lld)", (long long)id[k],
               (long long)k);
    if (classes >= 0 && id[k] >= classes)
      mq_error(S, "one_hot: class %lld is out of range for num_classes=%lld (at index position %lld)",
               (long long)id[k], (long long)classes, (long long)k);
    if (id[k] > top) top = id[k];
  }
  if (classes < 0) {
    if (top < 0)
      mq_error(S, "one_hot: no valid index to infer num_classes from; pass num_classes=");
    if (top == INT64_MAX) mq_error(S, "size overflow in one_hot");
    classes = top + 1;
  }
  int64_t shape[MQ_MAX_DIMS];
  memcpy(shape, index->shape, (size_t)index->ndim * sizeof *shape);
  shape[index->ndim] = classes;
  int64_t total;
  if (!mq_mul_ok(n, classes, &total)) mq_error(S, "size overflow in one_hot");
  mq_tensor *out = mq_tensor_full_i64(S, index->ndim + 1, shape, 0);
  int64_t *o = mq_tensor_data(out);
  for (int64_t k = 0; k < n; k++) {
    mq_poll_at(S, k);
    if (!im || im[k]) o[k * classes + id[k]] = 1;
  }
  if (im) {
    mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, index->ndim + 1, shape);
    uint8_t *mp = mq_tensor_data(m);
    for (int64_t k = 0; k < n; k++) {
      mq_poll_at(S, k * classes); /* approximately: classes bytes a step */
      memset(mp + k * classes, im[k], (size_t)classes);
    }
    mq_tensor_set_mask(S, out, m);
  }
  return out;
}
