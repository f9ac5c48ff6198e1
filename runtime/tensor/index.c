/* index.c - x[...] with ints, slices, `...`, none (new axes) and tensors.
 *
 * Ints, slices, `...` and none follow Python's rules and give a view; a mask
 * is indexed the same way, so the view of a masked tensor is masked at the
 * same positions.
 *
 * Tensor items are advanced indexing (numpy/torch): an int64 tensor gathers
 * along its dim, a bool tensor selects the positions where it is true over
 * the dims it covers. Several tensor items broadcast together. The result is
 * a copy, and the mask is gathered with the same coordinates. As in torch
 * (and unlike numpy), plain ints are applied first as selections, so
 * x[0, :, idx] keeps the slice's dim in front of the index's dims. */
#include "internal.h"
#include "shape.h"

/* How many dims of the indexed tensor [it] consumes. */
static int item_dims(const mq_index_item *it) {
  switch ((mq_index_kind)it->kind) {
  case MQ_IX_INT: case MQ_IX_SLICE: return 1;
  case MQ_IX_TENSOR: return it->tensor->dtype == MQ_DT_BOOL ? it->tensor->ndim : 1;
  default: return 0;
  }
}

int64_t mq_index_int(mq_state *S, const mq_index_item *it, int64_t size, int dim) {
  int64_t ix = it->start;
  if (ix < -size || ix >= size)
    mq_error(S, "index %lld is out of range for dimension %d of size %lld", (long long)ix, dim,
             (long long)size);
  return ix < 0 ? ix + size : ix;
}

void mq_index_slice(mq_state *S, const mq_index_item *it, int64_t size, int64_t *start,
                    int64_t *step, int64_t *len) {
  int64_t st = it->has_step ? it->step : 1;
  if (st <= 0) mq_error(S, "slice step must be positive");
  int64_t a = it->has_start ? it->start : 0, b = it->has_stop ? it->stop : size;
  if (a < 0) a = a + size < 0 ? 0 : a + size;
  if (b < 0) b = b + size < 0 ? 0 : b + size;
  if (a > size) a = size;
  if (b > size) b = size;
  *start = a;
  *step = st;
  *len = b > a ? (b - a - 1) / st + 1 : 0;
}

/* The basic part of the index, as a view. A tensor item keeps the dims it
 * consumes whole; [tpos] (if given) receives, per item, the view dim where
 * they start and [tdim] the dim of t. */
static mq_tensor *index_view(mq_state *S, mq_tensor *t, const mq_index_item *items, int n,
                             int *tpos, int *tdim) {
  int consumed = 0, ellipsis = -1;
  for (int i = 0; i < n; i++) {
    if (items[i].kind == MQ_IX_ELLIPSIS) {
      if (ellipsis >= 0) mq_error(S, "an index can only have a single ellipsis (...)");
      ellipsis = i;
    } else if (items[i].kind > MQ_IX_TENSOR) {
      mq_error(S, "bad index item");
    }
    consumed += item_dims(&items[i]);
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
    case MQ_IX_TENSOR:
      if (tpos) {
        tpos[i] = nd;
        tdim[i] = d;
      }
      for (int k = item_dims(it); k > 0; k--, d++) PUSH(t->shape[d], t->strides[d]);
      break;
    case MQ_IX_INT:
      offset += mq_index_int(S, it, t->shape[d], d) * t->strides[d];
      d++;
      break;
    case MQ_IX_SLICE: {
      int64_t start, step, len;
      mq_index_slice(S, it, t->shape[d], &start, &step, &len);
      if (len > 0) offset += start * t->strides[d];
      /* with one entry or none the step never applies, and may be huge */
      PUSH(len, len > 1 ? t->strides[d] * step : t->strides[d]);
      d++;
      break;
    }
    }
  }
  for (; d < t->ndim; d++) PUSH(t->shape[d], t->strides[d]); /* implicit trailing `...` */
#undef PUSH
  return mq_tensor_view(S, t, nd, shape, strides, offset);
}

/* --- advanced indexing ---------------------------------------------------- */

/* One coordinate column: the index along view dim [dim] for each of the J
 * gathered positions (already wrapped and range-checked, broadcast to the
 * common index shape, contiguous). */
typedef struct coord_col {
  int dim;
  const int64_t *at;
} coord_col;

typedef struct gather_plan {
  int ncols;
  coord_col cols[MQ_MAX_DIMS];
  int64_t nidx;                /* J: positions per (outer, inner) pair */
  int nouter, ninner;          /* view dims before and after the index block */
  int outer[MQ_MAX_DIMS], inner[MQ_MAX_DIMS];
} gather_plan;

static void check_index_tensor(mq_state *S, const mq_tensor *ix) {
  if (ix->mask)
    mq_error(S, "cannot index with a masked tensor: its masked-out entries have no position "
                "(use to_tensor(index, fill) or get_data(index) for a plain index)");
  if (ix->dtype != MQ_DT_BOOL && ix->dtype != MQ_DT_I64 && ix->numel > 0)
    mq_error(S, "tensors used as indices must be int64 or bool, got %s (convert with "
                "long(index))", mq_dtype_name((mq_dtype)ix->dtype));
}

/* Adds the coordinate columns of tensor item [ix] (at view dim [pos] of [v],
 * dim [tdim] of the indexed tensor, for messages) to [cols]; [cshape]
 * receives the shape its columns have before broadcast. Returns its ndim. */
static int item_columns(mq_state *S, const mq_tensor *v, const mq_tensor *ix, int pos,
                        int tdim, mq_tensor **cols, int *cdim, int64_t *cshape) {
  if (ix->dtype != MQ_DT_BOOL) {
    mq_tensor *c = mq_contiguous(S, mq_astype(S, (mq_tensor *)ix, MQ_DT_I64));
    mq_tensor *w = mq_tensor_new(S, MQ_DT_I64, c->ndim, c->shape);
    const int64_t *src = mq_tensor_data(c);
    int64_t *dst = mq_tensor_data(w), size = v->shape[pos];
    for (int64_t j = 0; j < c->numel; j++) {
      mq_poll_at(S, j);
      int64_t x = src[j];
      if (x < -size || x >= size)
        mq_error(S, "index %lld is out of range for dimension %d of size %lld", (long long)x,
                 tdim, (long long)size);
      dst[j] = x < 0 ? x + size : x;
    }
    cols[0] = w;
    cdim[0] = pos;
    memcpy(cshape, c->shape, (size_t)c->ndim * sizeof *cshape);
    return c->ndim;
  }
  /* bool: must match the dims it covers; one column per dim, one entry per
   * true position in row-major order (nonzero()). */
  int k = ix->ndim;
  for (int d = 0; d < k; d++)
    if (ix->shape[d] != v->shape[pos + d])
      mq_error(S, "a bool index of shape %s does not match the indexed dims %s of a tensor of "
                  "shape %s", mq_shape_str(S, k, ix->shape), mq_shape_str(S, k, v->shape + pos),
               mq_shape_str(S, v->ndim, v->shape));
  mq_tensor *c = mq_contiguous(S, (mq_tensor *)ix);
  const uint8_t *b = mq_tensor_data(c);
  int64_t count = 0;
  for (int64_t j0 = 0; j0 < c->numel; j0 += MQ_POLL_ELEMS) {
    int64_t j1 = c->numel - j0 > MQ_POLL_ELEMS ? j0 + MQ_POLL_ELEMS : c->numel;
    for (int64_t j = j0; j < j1; j++) count += b[j] != 0;
    mq_check_interrupt(S);
  }
  int64_t *dst[MQ_MAX_DIMS];
  for (int d = 0; d < k; d++) {
    cols[d] = mq_tensor_new(S, MQ_DT_I64, 1, &count);
    cdim[d] = pos + d;
    dst[d] = mq_tensor_data(cols[d]);
  }
  int64_t coord[MQ_MAX_DIMS] = {0}, w = 0;
  for (int64_t j = 0; j < c->numel; j++) {
    mq_poll_at(S, j);
    if (b[j] && w < count) { /* b is masq's (mq_index): the bound never binds */
      for (int d = 0; d < k; d++) dst[d][w] = coord[d];
      w++;
    }
    for (int d = k - 1; d >= 0 && ++coord[d] == ix->shape[d]; d--) coord[d] = 0;
  }
  if (k == 0) { /* x[true] adds a dim of 1, x[false] a dim of 0 */
    cols[0] = mq_tensor_new(S, MQ_DT_I64, 1, &count);
    cdim[0] = -1;
  }
  cshape[0] = count;
  return 1;
}

/* Works out the output shape of indexing [v] (the basic view) by the tensor
 * items, and the plan to gather it. */
static int plan_gather(mq_state *S, const mq_tensor *v, const mq_index_item *items, int n,
                       const int *tpos, const int *tdim, gather_plan *g, int64_t *oshape) {
  mq_tensor *cols[MQ_MAX_DIMS];
  int cdim[MQ_MAX_DIMS], ncols = 0, bnd = 0;
  int64_t bshape[MQ_MAX_DIMS];
  bool is_adv[MQ_MAX_DIMS] = {false};
  int first = -1, last = -1, nadv = 0;
  for (int i = 0; i < n; i++) {
    if (items[i].kind != MQ_IX_TENSOR) continue;
    const mq_tensor *ix = items[i].tensor;
    int k = item_dims(&items[i]), pos = tpos[i];
    int64_t cshape[MQ_MAX_DIMS];
    int ncol = ix->dtype == MQ_DT_BOOL ? (k ? k : 1) : 1;
    if (ncols + ncol > MQ_MAX_DIMS) mq_error(S, "too many tensor indices");
    int cnd = item_columns(S, v, ix, pos, tdim[i], cols + ncols, cdim + ncols, cshape);
    ncols += ncol;
    int64_t tmp[MQ_MAX_DIMS];
    int nb = mq_broadcast_try(bnd, bshape, cnd, cshape, tmp);
    if (nb < 0)
      mq_error(S, "index tensors of shapes %s and %s cannot be broadcast together",
               mq_shape_str(S, bnd, bshape), mq_shape_str(S, cnd, cshape));
    memcpy(bshape, tmp, (size_t)nb * sizeof *tmp);
    bnd = nb;
    for (int d = pos; d < pos + k; d++) is_adv[d] = true;
    if (k > 0) {
      if (first < 0) first = pos;
      last = pos + k;
      nadv += k;
    } else if (first < 0) {
      first = last = pos;
    }
  }
  /* Index dims replace the indexed ones in place when those are adjacent,
   * else they go first (numpy's rule). */
  bool adjacent = last - first == nadv;
  int nd = 0;
  g->nouter = g->ninner = 0;
  for (int d = 0; d < v->ndim; d++) {
    if (is_adv[d]) continue;
    if (adjacent && d < first) g->outer[g->nouter++] = d;
    else g->inner[g->ninner++] = d;
  }
  if (g->nouter + bnd + g->ninner > MQ_MAX_DIMS)
    mq_error(S, "indexing gives more than %d dimensions", MQ_MAX_DIMS);
  for (int i = 0; i < g->nouter; i++) oshape[nd++] = v->shape[g->outer[i]];
  for (int i = 0; i < bnd; i++) oshape[nd++] = bshape[i];
  for (int i = 0; i < g->ninner; i++) oshape[nd++] = v->shape[g->inner[i]];
  g->nidx = 1;
  for (int i = 0; i < bnd; i++) g->nidx *= bshape[i];
  g->ncols = 0;
  for (int c = 0; c < ncols; c++) {
    if (cdim[c] < 0) continue; /* a 0-d bool consumes no dim */
    mq_tensor *e = mq_contiguous(S, mq_expand(S, cols[c], bnd, bshape));
    g->cols[g->ncols].dim = cdim[c];
    g->cols[g->ncols++].at = mq_tensor_data(e);
  }
  return nd;
}

/* Some dims of a view, walked in row-major order by an odometer (no table
 * of offsets: the dims around an index can be arbitrarily large). */
typedef struct walk {
  int nd;
  int64_t count; /* positions */
  int64_t shape[MQ_MAX_DIMS], st[MQ_MAX_DIMS];
} walk;

static void walk_init(walk *w, const mq_tensor *v, const int *dims, int n) {
  w->nd = n;
  w->count = 1;
  for (int i = 0; i < n; i++) {
    w->shape[i] = v->shape[dims[i]];
    w->st[i] = v->strides[dims[i]];
    w->count *= w->shape[i];
  }
}

/* Splits off the innermost run of [w]: its trailing dims that are evenly
 * strided together, as one dim of *len entries *st apart. */
static void walk_run(walk *w, int64_t *len, int64_t *st) {
  *len = 1;
  *st = 1;
  while (w->nd > 0) {
    int64_t n = w->shape[w->nd - 1], s = w->st[w->nd - 1];
    if (*len > 1 && n > 1 && s != *st * *len) break;
    if (n != 1) {
      if (*len == 1) *st = s;
      *len *= n;
    }
    w->nd--;
  }
  w->count = 1;
  for (int i = 0; i < w->nd; i++) w->count *= w->shape[i];
}

static inline void walk_next(const walk *w, int64_t *idx, int64_t *off) {
  for (int d = w->nd - 1; d >= 0; d--) {
    *off += w->st[d];
    if (++idx[d] < w->shape[d]) return;
    *off -= w->st[d] * w->shape[d];
    idx[d] = 0;
  }
}

/* dst[(o, j, r, i)] = src[outer o + ao[j] + inner r + i * rs]: one typed copy
 * per element size (a gather only moves bytes). */
#define DEF_GATHER(NAME, T)                                                    \
  static void NAME(mq_state *S, void *dstv, const void *srcv, const walk *outer, \
                   const int64_t *ao, int64_t na, const walk *inner, int64_t rl, int64_t rs) { \
    T *dst = dstv;                                                             \
    const T *src = srcv;                                                       \
    int64_t oidx[MQ_MAX_DIMS] = {0}, ooff = 0, polled = 0;                     \
    for (int64_t o = 0; o < outer->count; o++, walk_next(outer, oidx, &ooff))  \
      for (int64_t j = 0; j < na; j++) {                                       \
        int64_t iidx[MQ_MAX_DIMS] = {0}, ioff = 0;                             \
        for (int64_t r = 0; r < inner->count; r++, walk_next(inner, iidx, &ioff), dst += rl) { \
          const T *p = src + ooff + ao[j] + ioff;                              \
          if (rs == 1)                                                         \
            for (int64_t i = 0; i < rl; i++) dst[i] = p[i];                    \
          else                                                                 \
            for (int64_t i = 0; i < rl; i++) dst[i] = p[i * rs];               \
          if ((polled += rl + 1) >= MQ_POLL_ELEMS) {                           \
            polled = 0;                                                        \
            mq_check_interrupt(S);                                             \
          }                                                                    \
        }                                                                      \
      }                                                                        \
  }
DEF_GATHER(gather8, uint8_t)
DEF_GATHER(gather16, uint16_t)
DEF_GATHER(gather32, uint32_t)
DEF_GATHER(gather64, uint64_t)

/* Gathers [v] (a basic view of the indexed tensor) into [out] by plan [g]. */
static void gather(mq_state *S, mq_tensor *out, const mq_tensor *v, const gather_plan *g) {
  if (out->numel == 0) return;
  walk outer, inner;
  int64_t rl, rs;
  walk_init(&outer, v, g->outer, g->nouter);
  walk_init(&inner, v, g->inner, g->ninner);
  walk_run(&inner, &rl, &rs);
  int64_t *ao = mq_scratch(S, (size_t)g->nidx * sizeof *ao);
  for (int64_t j = 0; j < g->nidx; j++) ao[j] = 0;
  for (int c = 0; c < g->ncols; c++) {
    int64_t st = v->strides[g->cols[c].dim];
    for (int64_t j = 0; j < g->nidx; j++) {
      mq_poll_at(S, j);
      ao[j] += g->cols[c].at[j] * st;
    }
  }
  void *dst = mq_tensor_data(out);
  const void *src = mq_tensor_data(v);
  switch (mq_dtype_size((mq_dtype)v->dtype)) {
  case 1: gather8(S, dst, src, &outer, ao, g->nidx, &inner, rl, rs); break;
  case 2: gather16(S, dst, src, &outer, ao, g->nidx, &inner, rl, rs); break;
  case 4: gather32(S, dst, src, &outer, ao, g->nidx, &inner, rl, rs); break;
  default: gather64(S, dst, src, &outer, ao, g->nidx, &inner, rl, rs); break;
  }
}

static mq_tensor *index_advanced(mq_state *S, mq_tensor *t, const mq_index_item *items, int n) {
  int *tpos = mq_scratch(S, 2 * (size_t)n * sizeof *tpos), *tdim = tpos + n;
  mq_tensor *v = index_view(S, t, items, n, tpos, tdim);
  gather_plan g;
  int64_t oshape[MQ_MAX_DIMS];
  int nd = plan_gather(S, v, items, n, tpos, tdim, &g, oshape);
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)t->dtype, nd, oshape);
  gather(S, out, v, &g);
  if (t->mask) {
    mq_tensor *mv = index_view(S, t->mask, items, n, NULL, NULL);
    mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, nd, oshape);
    gather(S, m, mv, &g);
    mq_tensor_set_mask(S, out, m);
  }
  return out;
}

mq_tensor *mq_index(mq_state *S, mq_tensor *t, const mq_index_item *items, int n) {
  bool advanced = false;
  for (int i = 0; i < n; i++)
    if (items[i].kind == MQ_IX_TENSOR) {
      check_index_tensor(S, items[i].tensor);
      advanced = true;
    }
  if (advanced) {
    /* Positions are counted, checked and gathered from one copy of each
     * index a host shares, which autograd's replay reads again (tensor.h:
     * mq_tensor_owned). */
    mq_index_item *own = mq_scratch(S, (size_t)n * sizeof *own);
    memcpy(own, items, (size_t)n * sizeof *own);
    for (int i = 0; i < n; i++)
      if (own[i].kind == MQ_IX_TENSOR) own[i].tensor = mq_tensor_owned(S, own[i].tensor);
    return mq_ag_index(S, index_advanced(S, t, own, n), t, own, n);
  }
  mq_tensor *v = index_view(S, t, items, n, NULL, NULL);
  if (t->mask) mq_tensor_set_mask(S, v, index_view(S, t->mask, items, n, NULL, NULL));
  mq_ag_index(S, v, t, items, n);
  return v;
}
