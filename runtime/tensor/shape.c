/* shape.c - reshaping, dim reordering, slicing helpers, flip, cat/stack and
 * length masks (see shape.h).
 *
 * Ops that are a selection of positions (narrow, select, squeeze,
 * unsqueeze) are written as an index (mq_index), which already moves the
 * mask with the data. The others compute a geometry for a plain tensor and
 * apply it to the data and, separately, to the mask: a mask may be a
 * broadcast view with strides of its own, so the two can end up one a view
 * and the other a copy, but always with the same logical order. */
#include "shape.h"

#include "../../core/checked.h"
#include "internal.h"

/* --- helpers ------------------------------------------------------------- */

static mq_index_item full_slice(void) {
  mq_index_item it;
  memset(&it, 0, sizeof it);
  it.kind = MQ_IX_SLICE;
  return it;
}

/* x[:, ..., :, item] with [dim] full slices before [item]. */
static mq_tensor *index_at(mq_state *S, mq_tensor *t, int dim, mq_index_item item) {
  mq_index_item items[MQ_MAX_DIMS + 1];
  for (int d = 0; d < dim; d++) items[d] = full_slice();
  items[dim] = item;
  return mq_index(S, t, items, dim + 1);
}

/* Applies [op] (a rearrangement of a plain tensor's elements) to the data
 * of [t] and to its mask. */
typedef mq_tensor *(*plain_op)(mq_state *S, mq_tensor *plain, const void *arg);
static mq_tensor *moved_with_mask(mq_state *S, mq_tensor *t, plain_op op, const void *arg) {
  mq_tensor *v = op(S, mq_get_data(S, t), arg);
  /* a rearrangement: the mask moves as the data does, and each element
   * lands once, which mq_ag_moved relies on (a view that drops or repeats
   * elements, such as a diagonal, must not come through here) */
  MQ_ASSERT(v->numel == t->numel);
  if (t->mask) mq_tensor_set_mask(S, v, op(S, t->mask, arg));
  return v;
}
static mq_tensor *with_mask(mq_state *S, mq_tensor *t, plain_op op, const void *arg) {
  mq_tensor *v = moved_with_mask(S, t, op, arg);
  mq_ag_moved(S, v, t, op, arg);
  return v;
}

/* Normalized, distinct dims; [what] names the op in errors. */
static void norm_dims(mq_state *S, int n, const int64_t *raw, int ndim, int *out,
                      const char *what) {
  for (int i = 0; i < n; i++) {
    out[i] = mq_shape_norm_dim(S, raw[i], ndim);
    for (int j = 0; j < i; j++)
      if (out[j] == out[i]) mq_error(S, "%s: dimension %d appears twice", what, out[i]);
  }
}

int mq_broadcast_try(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out) {
  int n = na > nb ? na : nb;
  if (n > MQ_MAX_DIMS) return -1;
  for (int i = 0; i < n; i++) {
    int64_t x = i < na ? a[na - 1 - i] : 1, y = i < nb ? b[nb - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return -1;
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return n;
}

/* --- reshape ------------------------------------------------------------- */

/* torch's computeStride: strides that let a tensor of (oshape, ostr) be
 * viewed as [nshape], or false when the memory layout does not allow it. */
static bool view_strides(int ond, const int64_t *oshape, const int64_t *ostr, int nnd,
                         const int64_t *nshape, int64_t *nstr) {
  int64_t numel = 1;
  for (int d = 0; d < ond; d++) numel *= oshape[d];
  if (numel == 0 || ond == 0) { /* nothing to walk: any strides work */
    int64_t s = 1;
    for (int d = nnd - 1; d >= 0; d--) {
      nstr[d] = s;
      s *= nshape[d] ? nshape[d] : 1;
    }
    return true;
  }
  /* Walk the old dims from the innermost, in chunks of dims that are
   * contiguous with each other; each chunk must be covered exactly by a run
   * of new dims. */
  int vd = nnd - 1;
  int64_t base = ostr[ond - 1], tnumel = 1, vnumel = 1;
  for (int td = ond - 1; td >= 0; td--) {
    tnumel *= oshape[td];
    if (td == 0 || (oshape[td - 1] != 1 && ostr[td - 1] != tnumel * base)) {
      while (vd >= 0 && (vnumel < tnumel || nshape[vd] == 1)) {
        nstr[vd] = vnumel * base;
        vnumel *= nshape[vd];
        vd--;
      }
      if (vnumel != tnumel) return false;
      if (td > 0) {
        base = ostr[td - 1];
        tnumel = vnumel = 1;
      }
    }
  }
  return vd == -1;
}

typedef struct shape_arg {
  int ndim;
  const int64_t *shape;
} shape_arg;

static mq_tensor *reshape_plain(mq_state *S, mq_tensor *t, const void *arg) {
  const shape_arg *a = arg;
  int64_t st[MQ_MAX_DIMS];
  if (!view_strides(t->ndim, t->shape, t->strides, a->ndim, a->shape, st)) {
    t = mq_contiguous(S, t); /* row-major copy of the logical order */
    view_strides(t->ndim, t->shape, t->strides, a->ndim, a->shape, st);
  }
  return mq_tensor_view(S, t, a->ndim, a->shape, st, t->offset);
}

mq_tensor *mq_reshape(mq_state *S, mq_tensor *t, int ndim, const int64_t *shape) {
  if (ndim > MQ_MAX_DIMS)
    mq_error(S, "reshape: tensors have at most %d dimensions, got %d", MQ_MAX_DIMS, ndim);
  int64_t out[MQ_MAX_DIMS], known = 1, span = 1;
  int infer = -1;
  for (int d = 0; d < ndim; d++) {
    out[d] = shape[d];
    if (shape[d] == -1) {
      if (infer >= 0) mq_error(S, "reshape: only one dimension can be -1");
      infer = d;
    } else if (shape[d] < 0) {
      mq_error(S, "reshape: invalid size %lld in shape %s", (long long)shape[d],
               mq_shape_str(S, ndim, shape));
    } else {
      /* zeros count as ones so that the strides are bounded too */
      if (!mq_mul_ok(span, shape[d] ? shape[d] : 1, &span))
        mq_error(S, "reshape: shape %s is too large", mq_shape_str(S, ndim, shape));
      known *= shape[d];
    }
  }
  if (infer >= 0) {
    if (known == 0)
      mq_error(S, "reshape: cannot infer the -1 in shape %s: with a dim of size 0 it could be "
                  "anything", mq_shape_str(S, ndim, shape));
    out[infer] = t->numel / known;
  }
  if (known * (infer >= 0 ? out[infer] : 1) != t->numel)
    mq_error(S, "reshape: cannot reshape a tensor of shape %s (%lld elements) into shape %s",
             mq_shape_str(S, t->ndim, t->shape), (long long)t->numel,
             mq_shape_str(S, ndim, shape));
  shape_arg a = {ndim, out};
  return with_mask(S, t, reshape_plain, &a);
}

mq_tensor *mq_flatten(mq_state *S, mq_tensor *t, int64_t start, int64_t end) {
  int s = mq_shape_norm_dim(S, start, t->ndim), e = mq_shape_norm_dim(S, end, t->ndim);
  if (t->ndim == 0) return mq_reshape(S, t, 1, (int64_t[]){1});
  if (s > e) mq_error(S, "flatten: start_dim %d comes after end_dim %d", s, e);
  int64_t shape[MQ_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (d <= s || d > e) shape[nd++] = t->shape[d];
    else shape[nd - 1] *= t->shape[d];
  }
  return mq_reshape(S, t, nd, shape);
}

/* --- selections, as indexes ---------------------------------------------- */

mq_tensor *mq_squeeze(mq_state *S, mq_tensor *t, int ndims, const int64_t *dims) {
  bool drop[MQ_MAX_DIMS] = {false};
  if (ndims == 0) {
    for (int d = 0; d < t->ndim; d++) drop[d] = t->shape[d] == 1;
  } else {
    int nd[MQ_MAX_DIMS];
    if (ndims > MQ_MAX_DIMS) mq_error(S, "squeeze: too many dims (%d)", ndims);
    norm_dims(S, ndims, dims, t->ndim, nd, "squeeze");
    for (int i = 0; i < ndims; i++) drop[nd[i]] = t->ndim > 0 && t->shape[nd[i]] == 1;
  }
  mq_index_item items[MQ_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) {
    items[d] = full_slice();
    if (drop[d]) items[d].kind = MQ_IX_INT; /* index 0 of a size-1 dim */
  }
  return mq_index(S, t, items, t->ndim);
}

mq_tensor *mq_unsqueeze(mq_state *S, mq_tensor *t, int64_t dim) {
  int d = mq_shape_norm_dim(S, dim, t->ndim + 1);
  mq_index_item it = full_slice();
  it.kind = MQ_IX_NEWAXIS;
  return index_at(S, t, d, it);
}

mq_tensor *mq_narrow(mq_state *S, mq_tensor *t, int64_t dim, int64_t start, int64_t length) {
  int d;
  mq_index_item it = mq_narrow_item(S, t, dim, start, length, &d);
  return index_at(S, t, d, it);
}

mq_index_item mq_narrow_item(mq_state *S, const mq_tensor *t, int64_t dim, int64_t start,
                             int64_t length, int *dp) {
  if (t->ndim == 0) mq_error(S, "narrow: cannot narrow a 0-d tensor");
  int d = mq_shape_norm_dim(S, dim, t->ndim);
  int64_t size = t->shape[d];
  if (start < -size || start > size)
    mq_error(S, "narrow: start %lld is out of range for dimension %d of size %lld",
             (long long)start, d, (long long)size);
  if (start < 0) start += size;
  if (length < 0 || length > size - start)
    mq_error(S, "narrow: start %lld + length %lld exceeds dimension %d of size %lld",
             (long long)start, (long long)length, d, (long long)size);
  mq_index_item it = full_slice();
  it.has_start = it.has_stop = true;
  it.start = start;
  it.stop = start + length;
  *dp = d;
  return it;
}

mq_tensor *mq_select(mq_state *S, mq_tensor *t, int64_t dim, int64_t index) {
  if (t->ndim == 0) mq_error(S, "select: cannot select from a 0-d tensor");
  mq_index_item it = full_slice();
  it.kind = MQ_IX_INT;
  it.start = index;
  return index_at(S, t, mq_shape_norm_dim(S, dim, t->ndim), it);
}

/* --- reordering dims -------------------------------------------------------- */

static mq_tensor *permute_plain(mq_state *S, mq_tensor *t, const void *arg) {
  const int *perm = arg;
  int64_t shape[MQ_MAX_DIMS], st[MQ_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) {
    shape[d] = t->shape[perm[d]];
    st[d] = t->strides[perm[d]];
  }
  return mq_tensor_view(S, t, t->ndim, shape, st, t->offset);
}

mq_tensor *mq_permute(mq_state *S, mq_tensor *t, int n, const int64_t *perm) {
  if (n != t->ndim)
    mq_error(S, "permute: a %d-d tensor needs %d dims, got %d", t->ndim, t->ndim, n);
  int p[MQ_MAX_DIMS];
  norm_dims(S, n, perm, t->ndim, p, "permute");
  mq_tensor *v = moved_with_mask(S, t, permute_plain, p);
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_permute(S, v, t, p);
  return v;
}

mq_tensor *mq_transpose(mq_state *S, mq_tensor *t, int64_t d0, int64_t d1) {
  int64_t perm[MQ_MAX_DIMS];
  int a = mq_shape_norm_dim(S, d0, t->ndim), b = mq_shape_norm_dim(S, d1, t->ndim);
  if (t->ndim == 0) return t;
  for (int d = 0; d < t->ndim; d++) perm[d] = d;
  perm[a] = b;
  perm[b] = a;
  return mq_permute(S, t, t->ndim, perm);
}

mq_tensor *mq_t(mq_state *S, mq_tensor *t) {
  if (t->ndim > 2)
    mq_error(S, "t: expects a tensor of at most 2 dims, got shape %s (use transpose(x, d0, d1) "
                "or permute)", mq_shape_str(S, t->ndim, t->shape));
  return t->ndim < 2 ? t : mq_transpose(S, t, 0, 1);
}

mq_tensor *mq_expand_sizes(mq_state *S, mq_tensor *t, int ndim, const int64_t *shape) {
  if (ndim > MQ_MAX_DIMS)
    mq_error(S, "expand: tensors have at most %d dimensions, got %d", MQ_MAX_DIMS, ndim);
  if (ndim < t->ndim)
    mq_error(S, "expand: the shape %s has fewer dims than the tensor's %s",
             mq_shape_str(S, ndim, shape), mq_shape_str(S, t->ndim, t->shape));
  int64_t out[MQ_MAX_DIMS];
  for (int i = 0; i < ndim; i++) {
    int d = i - (ndim - t->ndim);
    out[i] = shape[i];
    if (shape[i] == -1 && d >= 0) out[i] = t->shape[d];
    else if (shape[i] < 0)
      mq_error(S, "expand: invalid size %lld at dim %d of %s (-1, keep the size, only works "
                  "for existing dims)", (long long)shape[i], i, mq_shape_str(S, ndim, shape));
    if (d >= 0 && t->shape[d] != 1 && t->shape[d] != out[i])
      mq_error(S, "expand: cannot expand shape %s to %s: only dims of size 1 grow (dim %d has "
                  "size %lld; use cat to repeat data)", mq_shape_str(S, t->ndim, t->shape),
               mq_shape_str(S, ndim, shape), d, (long long)t->shape[d]);
  }
  return mq_expand(S, t, ndim, out);
}

/* --- flip ------------------------------------------------------------------- */

static mq_tensor *flip_plain(mq_state *S, mq_tensor *t, const void *arg) {
  const bool *flip = arg;
  int64_t st[MQ_MAX_DIMS], off = t->offset;
  for (int d = 0; d < t->ndim; d++) {
    st[d] = t->strides[d];
    if (flip[d] && t->shape[d] > 0) {
      off += (t->shape[d] - 1) * st[d];
      st[d] = -st[d];
    }
  }
  /* The reversed view (negative strides) never leaves this function: the
   * copy is what runtime code gets, so no kernel elsewhere meets one. */
  mq_tensor *rev = mq_tensor_view(S, t, t->ndim, t->shape, st, off);
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)t->dtype, t->ndim, t->shape);
  if (t->numel) mq_kernel_convert(S, out, rev);
  return out;
}

mq_tensor *mq_flip(mq_state *S, mq_tensor *t, int ndims, const int64_t *dims) {
  if (ndims > MQ_MAX_DIMS) mq_error(S, "flip: too many dims (%d)", ndims);
  int nd[MQ_MAX_DIMS];
  bool flip[MQ_MAX_DIMS] = {false};
  norm_dims(S, ndims, dims, t->ndim, nd, "flip");
  for (int i = 0; i < ndims; i++) flip[nd[i]] = t->ndim > 0;
  return with_mask(S, t, flip_plain, flip);
}

/* --- diagonal ---------------------------------------------------------------- */

typedef struct diag_args {
  int64_t offset;
  int d1, d2;
} diag_args;

/* The entries (i, i + offset) of dims d1, d2 as a last dim: a view whose
 * stride is the two dims' strides added. */
static mq_tensor *diagonal_plain(mq_state *S, mq_tensor *t, const void *arg) {
  const diag_args *a = arg;
  int64_t shape[MQ_MAX_DIMS], st[MQ_MAX_DIMS], off = t->offset;
  int k = 0;
  for (int d = 0; d < t->ndim; d++)
    if (d != a->d1 && d != a->d2) shape[k] = t->shape[d], st[k++] = t->strides[d];
  int64_t n1 = t->shape[a->d1], n2 = t->shape[a->d2];
  /* no overflow: offset is checked against the sizes before it is used */
  int64_t len = a->offset >= 0 ? (n1 < n2 - a->offset ? n1 : n2 - a->offset)
                               : (n1 + a->offset < n2 ? n1 + a->offset : n2);
  if (len <= 0) len = 0;
  else off += a->offset >= 0 ? a->offset * t->strides[a->d2] : -a->offset * t->strides[a->d1];
  shape[k] = len;
  st[k++] = t->strides[a->d1] + t->strides[a->d2];
  return mq_tensor_view(S, t, k, shape, st, off);
}

static mq_tensor *replay_diagonal(mq_state *S, mq_tensor *const *in, const void *args) {
  return diagonal_plain(S, in[0], args);
}

mq_tensor *mq_diagonal(mq_state *S, mq_tensor *t, int64_t offset, int64_t dim1, int64_t dim2) {
  if (t->ndim < 2)
    mq_error(S, "diagonal: needs at least 2 dims, got shape %s", mq_shape_str(S, t->ndim, t->shape));
  diag_args a = {offset, mq_shape_norm_dim(S, dim1, t->ndim), mq_shape_norm_dim(S, dim2, t->ndim)};
  if (a.d1 == a.d2) mq_error(S, "diagonal: dim1 and dim2 are both dimension %d", a.d1);
  /* not every entry lands once: not with_mask (HACKING.md, Gradients (c)) */
  mq_tensor *out = diagonal_plain(S, mq_get_data(S, t), &a);
  if (t->mask) mq_tensor_set_mask(S, out, diagonal_plain(S, t->mask, &a));
  mq_ag_rec_replay(S, out, 1, &t, 0, NULL, replay_diagonal, &a, sizeof a);
  return out;
}

/* --- cat and stack ------------------------------------------------------------ */

/* The slab [pos, pos + len) of [t] along dim [d], as a view. */
static mq_tensor *slab(mq_state *S, mq_tensor *t, int d, int64_t pos, int64_t len) {
  int64_t shape[MQ_MAX_DIMS];
  memcpy(shape, t->shape, (size_t)t->ndim * sizeof *shape);
  shape[d] = len;
  return mq_tensor_view(S, t, t->ndim, shape, t->strides, t->offset + pos * t->strides[d]);
}

mq_tensor *mq_cat(mq_state *S, int n, mq_tensor *const *ts, int64_t dim) {
  if (n == 0) mq_error(S, "cat: expected a non-empty list of tensors");
  const mq_tensor *t0 = ts[0];
  if (t0->ndim == 0)
    mq_error(S, "cat: 0-d tensors cannot be concatenated (use stack to join them into a "
                "1-d tensor)");
  int d = mq_shape_norm_dim(S, dim, t0->ndim);
  int64_t shape[MQ_MAX_DIMS];
  memcpy(shape, t0->shape, (size_t)t0->ndim * sizeof *shape);
  shape[d] = 0;
  bool masked = false;
  for (int i = 0; i < n; i++) {
    const mq_tensor *t = ts[i];
    bool ok = t->ndim == t0->ndim;
    for (int k = 0; ok && k < t->ndim; k++) ok = k == d || t->shape[k] == t0->shape[k];
    if (!ok)
      mq_error(S, "cat: tensors must have the same shape except in dimension %d: got %s at "
                  "entry 0 and %s at entry %d", d, mq_shape_str(S, t0->ndim, t0->shape),
               mq_shape_str(S, t->ndim, t->shape), i);
    shape[d] = mq_ck_add(S, shape[d], t->shape[d], "cat: the joined dimension");
    masked |= t->mask != NULL;
  }
  mq_dtype dt = mq_result_type(n, ts);
  mq_tensor *out = mq_tensor_new(S, dt, t0->ndim, shape);
  mq_tensor *m = masked ? mq_tensor_new(S, MQ_DT_BOOL, t0->ndim, shape) : NULL;
  mq_tensor *yes = m ? mq_tensor_scalar(S, MQ_DT_BOOL, 1) : NULL;
  int64_t pos = 0;
  for (int i = 0; i < n; i++) {
    mq_tensor *t = ts[i];
    int64_t len = t->shape[d];
    if (len == 0 || t->numel == 0) {
      pos += len;
      continue;
    }
    /* mq_kernel_convert copies data (never a mask) through any strides and
     * converts dtypes */
    mq_kernel_convert(S, slab(S, out, d, pos, len), t);
    if (m) {
      mq_tensor *part = slab(S, m, d, pos, len);
      mq_kernel_convert(S, part, t->mask ? t->mask : mq_expand(S, yes, t->ndim, t->shape));
    }
    pos += len;
  }
  if (m) mq_tensor_set_mask(S, out, m);
  mq_ag_cat(S, out, n, ts, d);
  return out;
}

mq_tensor *mq_stack(mq_state *S, int n, mq_tensor *const *ts, int64_t dim) {
  if (n == 0) mq_error(S, "stack: expected a non-empty list of tensors");
  const mq_tensor *t0 = ts[0];
  for (int i = 1; i < n; i++)
    if (!mq_tensor_same_shape(ts[i], t0))
      mq_error(S, "stack: tensors must all have the same shape: got %s at entry 0 and %s at "
                  "entry %d", mq_shape_str(S, t0->ndim, t0->shape),
               mq_shape_str(S, ts[i]->ndim, ts[i]->shape), i);
  if (t0->ndim + 1 > MQ_MAX_DIMS)
    mq_error(S, "stack: the result would have more than %d dimensions", MQ_MAX_DIMS);
  int d = mq_shape_norm_dim(S, dim, t0->ndim + 1);
  mq_tensor **us = mq_scratch(S, (size_t)n * sizeof *us);
  for (int i = 0; i < n; i++) us[i] = mq_unsqueeze(S, ts[i], d);
  return mq_cat(S, n, us, d);
}

/* --- length masks ---------------------------------------------------------- */

mq_tensor *mq_length_mask(mq_state *S, mq_tensor *lengths, int64_t max_len) {
  if (lengths->mask)
    mq_error(S, "length_mask: lengths must be a plain tensor, not a masked one");
  if (lengths->dtype != MQ_DT_I64 && lengths->numel > 0) /* [] is float32: fine */
    mq_error(S, "length_mask: lengths must be int64, got %s",
             mq_dtype_name((mq_dtype)lengths->dtype));
  if (lengths->ndim + 1 > MQ_MAX_DIMS)
    mq_error(S, "length_mask: the result would have more than %d dimensions", MQ_MAX_DIMS);
  /* checked, then used to size and fill: one copy of a host's lengths */
  mq_tensor *c = mq_contiguous(S, mq_tensor_owned(S, mq_astype(S, lengths, MQ_DT_I64)));
  const int64_t *len = mq_tensor_data(c);
  int64_t longest = 0;
  for (int64_t i = 0; i < c->numel; i++) {
    mq_poll_at(S, i);
    if (len[i] < 0)
      mq_error(S, "length_mask: lengths must not be negative, got %lld at position %lld",
               (long long)len[i], (long long)i);
    if (len[i] > longest) longest = len[i];
  }
  if (max_len < 0) max_len = longest;
  int64_t shape[MQ_MAX_DIMS];
  memcpy(shape, c->shape, (size_t)c->ndim * sizeof *shape);
  shape[c->ndim] = max_len;
  mq_tensor *out = mq_tensor_new(S, MQ_DT_BOOL, c->ndim + 1, shape);
  uint8_t *o = mq_tensor_data(out);
  for (int64_t i = 0, done = 0; i < c->numel; i++, o += max_len) {
    if ((done += max_len + 1) >= MQ_POLL_ELEMS) { /* rows of max_len bytes */
      done = 0;
      mq_check_interrupt(S);
    }
    int64_t k = len[i] < max_len ? len[i] : max_len; /* longer than max_len: all valid */
    memset(o, 1, (size_t)k);
    memset(o + k, 0, (size_t)(max_len - k));
  }
  return out;
}
