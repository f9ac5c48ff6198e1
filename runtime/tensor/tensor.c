/* tensor.c - the dtype table, storage, creation, views and geometry. */
#include <math.h>
#include <stdio.h>
#include <sys/mman.h>

#include "../../core/checked.h"
#include "../../core/range.h"
#include "iter.h"
#include "masksum.h"
#include "maskspan.h"
#include "half.h"
#include "internal.h"
#include "layout.h"

static const char *const dtype_names[] = {
#define X(E, n, T, s) s,
    MQ_ALL_DTYPES(X)
#undef X
};
static const size_t dtype_sizes[] = {
#define X(E, n, T, s) sizeof(T),
    MQ_ALL_DTYPES(X)
#undef X
};

const char *mq_dtype_name(mq_dtype dt) { return dt < MQ_DT__ALL ? dtype_names[dt] : "?"; }
size_t mq_dtype_size(mq_dtype dt) { return dt < MQ_DT__ALL ? dtype_sizes[dt] : 1; }

/* --- objects and storage ------------------------------------------------ */

void mq_tensor_set_contiguous(mq_tensor *t) {
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    t->strides[d] = s;
    s *= t->shape[d];
  }
}

bool mq_tensor_same_shape(const mq_tensor *a, const mq_tensor *b) {
  if (a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

bool mq_tensor_same_view(const mq_tensor *a, const mq_tensor *b) {
  if (a == b) return true;
  if (a->storage != b->storage || a->offset != b->offset || !mq_tensor_same_shape(a, b)) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != 1 && a->strides[d] != b->strides[d]) return false;
  return true;
}

/* Both the element count and the product of the sizes with zeros counted
 * as ones (which bounds every contiguous stride) stay below INT64_MAX / 16,
 * so byte offsets and sizes computed from any of a tensor's dims cannot
 * overflow. */
bool mq_shape_fits(int ndim, const int64_t *shape) {
  int64_t span = 1;
  for (int d = 0; d < ndim; d++)
    if (!mq_mul_ok(span, shape[d] ? shape[d] : 1, &span) || span > INT64_MAX / 16) return false;
  return true;
}

/* Validates a shape and returns its element count. */
static int64_t check_shape(mq_state *S, int ndim, const int64_t *shape) {
  if (ndim < 0 || ndim > MQ_MAX_DIMS)
    mq_error(S, "tensors have at most %d dimensions, got %d", MQ_MAX_DIMS, ndim);
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0) mq_error(S, "negative dimension %lld in shape %s", (long long)shape[d],
                               mq_shape_str(S, ndim, shape));
  if (!mq_shape_fits(ndim, shape)) mq_error(S, "shape %s is too large", mq_shape_str(S, ndim, shape));
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  return n;
}

/* The object is handed to the pool before anything else is allocated, so an
 * allocation failure below can never strand it. */
mq_tensor *mq_tensor_alloc(mq_state *S, mq_dtype dt, int ndim, const int64_t *shape) {
  int64_t numel = check_shape(S, ndim, shape);
  mq_tensor *t = mq_calloc(S, sizeof *t);
  t->hdr.rc = 1;
  t->hdr.type = MQ_O_TENSOR;
  t->dtype = (uint8_t)dt;
  t->ndim = (uint8_t)ndim;
  t->numel = numel;
  for (int d = 0; d < ndim; d++) t->shape[d] = shape[d];
  mq_pool_own(S, &t->hdr);
  return t;
}

mq_tensor *mq_tensor_new(mq_state *S, mq_dtype dt, int ndim, const int64_t *shape) {
  mq_tensor *t = mq_tensor_alloc(S, dt, ndim, shape);
  mq_tensor_set_contiguous(t);
  size_t es = mq_dtype_size(dt);
  /* Never a zero-byte block: views of empty tensors still point somewhere. */
  size_t nbytes = mq_ck_zmul(S, t->numel ? (size_t)t->numel : 1, es, "tensor byte size");
  mq_storage *st = mq_calloc(S, sizeof *st);
  st->rc = 1;
  t->storage = st;
  st->data = mq_alloc_big(S, nbytes);
  st->nbytes = nbytes;
  return t;
}

/* The stored entries of a sparse tensor (layout.h). */
static void sparse_free(mq_state *S, mq_sparse *sp) {
  if (sp->indices) mq_obj_release(S, &sp->indices->hdr);
  if (sp->crow) mq_obj_release(S, &sp->crow->hdr);
  if (sp->values) mq_obj_release(S, &sp->values->hdr);
  mq_free(S, sp, sizeof *sp);
}

/* A file mapping (npy.h, mq_file_map) and its record. */
static void unmap(mq_state *S, mq_mapping *m) {
  munmap(m->base, m->len);
  mq_free(S, m, sizeof *m);
}

void mq_tensor_free(mq_state *S, mq_tensor *t) {
  if (t->mask) mq_obj_release(S, &t->mask->hdr);
  if (t->grad) mq_obj_release(S, &t->grad->hdr);
  if (t->node) mq_ag_node_free(S, t->node); /* the recorded op that made t */
  if (t->sparse) sparse_free(S, t->sparse);
  mq_storage *st = t->storage;
  if (st && --st->rc == 0) {
    if (st->release) st->release(st->release_ud);
    else if (st->map) unmap(S, st->map);
    else mq_free_big(S, st->data, st->nbytes);
    mq_masksum_free(S, st);
    mq_maskspan_free(S, st);
    mq_free(S, st, sizeof *st);
  }
  mq_free(S, t, sizeof *t);
}

/* --- creation ------------------------------------------------------------ */

mq_tensor *mq_tensor_full(mq_state *S, mq_dtype dt, int ndim, const int64_t *shape,
                          double value) {
  if (mq_dtype_is_narrow(dt)) /* fill the compute dtype, store narrowed */
    return mq_astype(S, mq_tensor_full(S, mq_dtype_compute(dt), ndim, shape, value), dt);
  mq_tensor *t = mq_tensor_new(S, dt, ndim, shape);
  /* in pieces, polling between them: zeros(10**9) is seconds of writing */
  for (int64_t i0 = 0; i0 < t->numel; i0 += MQ_POLL_ELEMS) {
    int64_t i1 = t->numel - i0 > MQ_POLL_ELEMS ? i0 + MQ_POLL_ELEMS : t->numel;
    switch (dt) {
    case MQ_DT_BOOL: { uint8_t *p = mq_tensor_data(t); memset(p + i0, value != 0, (size_t)(i1 - i0)); break; }
    case MQ_DT_I64: { int64_t v = mq_f2i(value), *p = mq_tensor_data(t); for (int64_t i = i0; i < i1; i++) p[i] = v; break; }
    case MQ_DT_F32: { float v = (float)value, *p = mq_tensor_data(t); for (int64_t i = i0; i < i1; i++) p[i] = v; break; }
    case MQ_DT_F64: { double v = value, *p = mq_tensor_data(t); for (int64_t i = i0; i < i1; i++) p[i] = v; break; }
    default: mq_error(S, "bad dtype");
    }
    if (i1 < t->numel) mq_check_interrupt(S);
  }
  if (t->numel == 0 && (unsigned)dt >= MQ_DT__COUNT) mq_error(S, "bad dtype");
  return t;
}

mq_tensor *mq_tensor_scalar(mq_state *S, mq_dtype dt, double value) {
  return mq_tensor_full(S, dt, 0, NULL, value);
}

mq_tensor *mq_tensor_full_i64(mq_state *S, int ndim, const int64_t *shape, int64_t value) {
  mq_tensor *t = mq_tensor_new(S, MQ_DT_I64, ndim, shape);
  int64_t *p = mq_tensor_data(t);
  for (int64_t i0 = 0; i0 < t->numel; i0 += MQ_POLL_ELEMS) { /* one_hot's can be 10^9 */
    int64_t i1 = t->numel - i0 > MQ_POLL_ELEMS ? i0 + MQ_POLL_ELEMS : t->numel;
    for (int64_t i = i0; i < i1; i++) p[i] = value;
    if (i1 < t->numel) mq_check_interrupt(S);
  }
  return t;
}

mq_tensor *mq_tensor_scalar_i64(mq_state *S, int64_t value) {
  return mq_tensor_full_i64(S, 0, NULL, value);
}

/* Whether every element of strided [t] lies inside its storage. */
MQ_CHECK_ONLY static bool within_storage(const mq_tensor *t) {
  if (t->numel == 0) return true;
  int64_t lo = t->offset, hi = t->offset;
  for (int d = 0; d < t->ndim; d++) {
    int64_t span = (t->shape[d] - 1) * t->strides[d];
    if (span < 0) lo += span;
    else hi += span;
  }
  return lo >= 0 && (uint64_t)(hi + 1) * mq_dtype_size((mq_dtype)t->dtype) <= t->storage->nbytes;
}

mq_tensor *mq_tensor_view(mq_state *S, const mq_tensor *base, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset) {
  mq_tensor *t = mq_tensor_alloc(S, (mq_dtype)base->dtype, ndim, shape);
  for (int d = 0; d < ndim; d++) t->strides[d] = strides[d];
  t->offset = offset;
  t->storage = base->storage;
  t->storage->rc++;
  MQ_ASSERT(within_storage(t)); /* the op worked out shape, strides and offset */
  return t;
}

void mq_tensor_set_mask(mq_state *S, mq_tensor *t, mq_tensor *mask) {
  (void)S;
  /* a mask is a plain bool tensor of the data's very shape (mq_masked
   * expands it), set once: a second one would leak the first */
  MQ_ASSERT(!t->mask && mask->dtype == MQ_DT_BOOL && !mask->mask && mq_tensor_same_shape(t, mask));
  mask->hdr.rc++;
  t->mask = mask;
}

mq_tensor *mq_arange_i64(mq_state *S, int64_t start, int64_t stop, int64_t step) {
  if (step == 0) mq_error(S, "arange: step must be nonzero");
  uint64_t c = mq_range_count(start, stop, step);
  if (c > (uint64_t)INT64_MAX / 16)
    mq_error(S, "arange: too many elements (%llu)", (unsigned long long)c);
  int64_t n = (int64_t)c;
  mq_tensor *t = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  int64_t *p = mq_tensor_data(t);
  /* start + i * step stays between start and stop for every i < n */
  for (int64_t i = 0; i < n; i++) p[i] = (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)step);
  return t;
}

mq_tensor *mq_arange(mq_state *S, double start, double stop, double step, mq_dtype dt) {
  if (step == 0) mq_error(S, "arange: step must be nonzero");
  if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
    mq_error(S, "arange: start, stop and step must be finite");
  double c = ceil((stop - start) / step);
  if (c > 1e15) mq_error(S, "arange: too many elements (%.0f)", c);
  int64_t n = c > 0 ? (int64_t)c : 0;
  if (mq_dtype_is_narrow(dt))
    return mq_astype(S, mq_arange(S, start, stop, step, mq_dtype_compute(dt)), dt);
  mq_tensor *t = mq_tensor_new(S, dt, 1, &n);
  switch (dt) {
  case MQ_DT_BOOL: { uint8_t *p = mq_tensor_data(t); for (int64_t i = 0; i < n; i++) p[i] = start + (double)i * step != 0; break; }
  case MQ_DT_I64: { int64_t *p = mq_tensor_data(t); for (int64_t i = 0; i < n; i++) p[i] = mq_f2i(start + (double)i * step); break; }
  case MQ_DT_F32: { float *p = mq_tensor_data(t); for (int64_t i = 0; i < n; i++) p[i] = (float)(start + (double)i * step); break; }
  case MQ_DT_F64: { double *p = mq_tensor_data(t); for (int64_t i = 0; i < n; i++) p[i] = start + (double)i * step; break; }
  default: mq_error(S, "bad dtype");
  }
  return t;
}

static mq_tensor *random_tensor(mq_state *S, int ndim, const int64_t *shape, mq_dtype dt,
                                bool normal) {
  if (!mq_dtype_is_float(dt)) mq_error(S, "%s: dtype must be float32 or float64, got %s",
                                       normal ? "randn" : "rand", mq_dtype_name(dt));
  /* float16 and bfloat16 draw in float32 and round once (a fuzz finding:
   * they were written as float64 into 2-byte storage) */
  if (mq_dtype_is_narrow(dt)) {
    mq_tensor *f = random_tensor(S, ndim, shape, MQ_DT_F32, normal);
    if (!normal) { /* keep [0, 1): the largest value below 1 of each rounds to itself */
      float below = dt == MQ_DT_F16 ? 1.0f - 0x1p-11f : 1.0f - 0x1p-8f;
      float *p = mq_tensor_data(f);
      for (int64_t i = 0; i < f->numel; i++) if (p[i] > below) p[i] = below;
    }
    return mq_narrow_back(S, f, dt);
  }
  mq_tensor *t = mq_tensor_new(S, dt, ndim, shape);
  if (dt == MQ_DT_F32) {
    float *p = mq_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++) {
      mq_poll_at(S, i); /* 10^8 normals take seconds */
      p[i] = (float)(normal ? mq_rng_normal(S) : mq_rng_uniform(S));
    }
    /* rounding can turn a uniform just below 1 into 1.0f; keep [0, 1) */
    if (!normal)
      for (int64_t i = 0; i < t->numel; i++) if (p[i] >= 1.0f) p[i] = 0x1.fffffep-1f;
  } else {
    double *p = mq_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++) {
      mq_poll_at(S, i);
      p[i] = normal ? mq_rng_normal(S) : mq_rng_uniform(S);
    }
  }
  return t;
}

mq_tensor *mq_rand(mq_state *S, int ndim, const int64_t *shape, mq_dtype dt) {
  return random_tensor(S, ndim, shape, dt, false);
}
mq_tensor *mq_randn(mq_state *S, int ndim, const int64_t *shape, mq_dtype dt) {
  return random_tensor(S, ndim, shape, dt, true);
}

/* --- layouts --------------------------------------------------------------- */

static const char *const layout_names[] = {"strided", "sparse_coo", "sparse_csr",
                                                "sparse_csc"};

const char *mq_layout_name(mq_layout l) { return l <= MQ_LAYOUT_CSC ? layout_names[l] : "?"; }

void mq_sparse_refuse(mq_state *S, const mq_tensor *t, const char *what) {
  mq_error(S, "%s: got a %s tensor, which this operation does not take; to_dense() makes a "
              "strided copy", what, mq_layout_name((mq_layout)t->layout));
}

/* --- values to tensors (lists: fromlist.c) ------------------------------ */

double mq_elem_f64(mq_dtype dt, const void *p) {
  switch (dt) {
  case MQ_DT_BOOL: return *(const uint8_t *)p;
  case MQ_DT_I64: return (double)*(const int64_t *)p;
  case MQ_DT_F32: return *(const float *)p;
  case MQ_DT_F64: return *(const double *)p;
  case MQ_DT_I8: return *(const int8_t *)p;
  case MQ_DT_I16: return *(const int16_t *)p;
  case MQ_DT_I32: return *(const int32_t *)p;
  case MQ_DT_U8: return *(const uint8_t *)p;
  case MQ_DT_F16: return mq_f16_to_f32(*(const uint16_t *)p);
  case MQ_DT_BF16: return mq_bf16_to_f32(*(const uint16_t *)p);
  case MQ_DT__ALL: break;
  }
  return NAN;
}

/* Element 0 of [t] as a double, whatever its dtype. */
static double first_element(const mq_tensor *t) {
  return mq_elem_f64((mq_dtype)t->dtype, mq_tensor_data(t));
}

mq_tensor *mq_tensor_from_value(mq_state *S, mq_value v, const char *what) {
  return mq_tensor_computable(S, mq_tensor_from_value_stored(S, v, what));
}

mq_tensor *mq_narrow_back(mq_state *S, mq_tensor *r, mq_dtype want) {
  if (!mq_dtype_is_narrow(want) || r->dtype != mq_dtype_compute(want)) return r;
  return mq_astype(S, r, want);
}

mq_tensor *mq_tensor_computable(mq_state *S, mq_tensor *t) {
  mq_dtype dt = (mq_dtype)t->dtype;
  return mq_dtype_is_narrow(dt) ? mq_astype(S, t, mq_dtype_compute(dt)) : t;
}

mq_tensor *mq_tensor_from_value_stored(mq_state *S, mq_value v, const char *what) {
  switch ((mq_vtype)v.type) {
  case MQ_BOOL: case MQ_INT: case MQ_FLOAT: {
    mq_tensor *t;
    if (v.type == MQ_INT) t = mq_tensor_scalar_i64(S, v.as.i);
    else if (v.type == MQ_BOOL) t = mq_tensor_scalar(S, MQ_DT_BOOL, v.as.b);
    else t = mq_tensor_scalar(S, MQ_DT_F64, v.as.f); /* full value; promotes as float32 */
    t->weak = true;
    return t;
  }
  case MQ_NONE: mq_error(S, "%s: expected a tensor, got none", what);
  case MQ_OBJ: break;
  }
  if (mq_is_tensor(v)) return mq_as_tensor(v);
  if (mq_is_sparse(v)) mq_sparse_refuse(S, mq_as_tensor_any(v), what);
  if (mq_is_obj(v, MQ_O_RANGE)) {
    const mq_range *r = mq_as_range(v);
    return mq_arange_i64(S, r->start, r->stop, r->step);
  }
  if (mq_is_obj(v, MQ_O_TABLE)) /* pandas' df.mean() habit */
    mq_error(S, "%s: expected a tensor, got a table: a column is t[\"name\"]; to_tensor(t) "
                "stacks the numeric columns into one (rows, columns) tensor", what);
  if (!mq_is_obj(v, MQ_O_LIST))
    mq_error(S, "%s: expected a tensor, got %s", what, mq_value_type_name(v));
  return mq_tensor_from_list(S, mq_as_list(v), what, false);
}

mq_tensor *mq_tensor_from_value_f64(mq_state *S, mq_value v, const char *what) {
  if (mq_is_number(v))
    return mq_tensor_scalar(S, MQ_DT_F64, v.type == MQ_FLOAT ? v.as.f : v.type == MQ_INT ? (double)v.as.i : v.as.b);
  if (!mq_is_obj(v, MQ_O_LIST)) return mq_astype(S, mq_tensor_from_value(S, v, what), MQ_DT_F64);
  return mq_tensor_from_list(S, mq_as_list(v), what, true);
}

/* --- geometry ------------------------------------------------------------ */

bool mq_tensor_is_contiguous(const mq_tensor *t) {
  if (t->numel == 0) return true;
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->strides[d] != s) return false;
    s *= t->shape[d];
  }
  return true;
}

bool mq_reusable(const mq_tensor *t, mq_dtype dt, int nd, const int64_t *shape) {
  if (!t || t->layout || t->sparse || t->dtype != dt || dt == MQ_DT_BOOL || t->weak) return false;
  if (t->requires_grad || t->grad || t->node) return false;
  if (t->storage->rc != 1 || mq_storage_foreign(t->storage) || t->offset != 0) return false;
  if (t->ndim != nd || memcmp(t->shape, shape, (size_t)nd * sizeof *shape) != 0) return false;
  return mq_tensor_is_contiguous(t);
}

mq_tensor *mq_reuse(mq_state *S, mq_tensor *t) {
  S->reused++;
  return mq_tensor_view(S, t, t->ndim, t->shape, t->strides, 0);
}

mq_tensor *mq_contiguous(mq_state *S, mq_tensor *t) {
  bool mask_ok = !t->mask || mq_tensor_is_contiguous(t->mask);
  if (mq_tensor_is_contiguous(t) && mask_ok) return t;
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)t->dtype, t->ndim, t->shape);
  mq_kernel_convert(S, out, t);
  if (t->mask) mq_tensor_set_mask(S, out, mq_contiguous(S, t->mask));
  return mq_ag_cast(S, out, t);
}

mq_tensor *mq_astype(mq_state *S, mq_tensor *t, mq_dtype dt) {
  if (t->dtype == dt) return t;
  mq_tensor *out = mq_tensor_new(S, dt, t->ndim, t->shape);
  mq_kernel_convert(S, out, t);
  if (t->mask) mq_tensor_set_mask(S, out, t->mask);
  return mq_ag_cast(S, out, t);
}

const char *mq_shape_str(mq_state *S, int ndim, const int64_t *shape) {
  char *buf = mq_scratch(S, 24 * (size_t)ndim + 4);
  size_t n = 0;
  buf[n++] = '(';
  for (int d = 0; d < ndim; d++)
    n += (size_t)sprintf(buf + n, d ? ", %lld" : "%lld", (long long)shape[d]);
  if (ndim == 1) buf[n++] = ',';
  buf[n++] = ')';
  buf[n] = '\0';
  return buf;
}

int mq_broadcast_shapes(mq_state *S, int na, const int64_t *a, int nb, const int64_t *b,
                        int64_t *out) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int64_t x = i < na ? a[na - 1 - i] : 1, y = i < nb ? b[nb - 1 - i] : 1;
    if (x != y && x != 1 && y != 1)
      mq_error(S, "shapes %s and %s cannot be broadcast", mq_shape_str(S, na, a),
               mq_shape_str(S, nb, b));
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return n;
}

mq_tensor *mq_expand(mq_state *S, mq_tensor *t, int ndim, const int64_t *shape) {
  if (t->ndim == ndim && memcmp(t->shape, shape, (size_t)ndim * sizeof *shape) == 0) return t;
  if (ndim < t->ndim || ndim > MQ_MAX_DIMS) goto bad;
  int64_t strides[MQ_MAX_DIMS];
  for (int i = 0; i < ndim; i++) {
    int d = t->ndim - ndim + i; /* t's dim aligned with out dim i, if any */
    if (d < 0) strides[i] = 0;
    else if (t->shape[d] == shape[i]) strides[i] = t->strides[d];
    else if (t->shape[d] == 1) strides[i] = 0;
    else goto bad;
  }
  mq_tensor *v = mq_tensor_view(S, t, ndim, shape, strides, t->offset);
  if (t->mask) mq_tensor_set_mask(S, v, mq_expand(S, t->mask, ndim, shape));
  return mq_ag_expand(S, v, t);
bad:
  mq_error(S, "cannot broadcast shape %s to %s", mq_shape_str(S, t->ndim, t->shape),
           mq_shape_str(S, ndim, shape));
}

int mq_shape_norm_dim(mq_state *S, int64_t dim, int ndim) {
  int n = ndim > 0 ? ndim : 1; /* a 0-d tensor accepts dim 0 and -1, as torch */
  if (dim < -n || dim >= n)
    mq_error(S, "dimension %lld out of range for a %d-d tensor (expected %d to %d)",
             (long long)dim, ndim, -n, n - 1);
  return (int)(dim < 0 ? dim + n : dim);
}

/* --- masks --------------------------------------------------------------- */

/* The AND of a masked tensor's mask [had] and a new one [m] of its shape:
 * re-masking keeps what is valid in both. The same mask again is kept as
 * it is, its storage and the validity summary cached on it included. */
static mq_tensor *both_masks(mq_state *S, mq_tensor *had, mq_tensor *m) {
  if (mq_tensor_same_view(had, m)) return had;
  mq_tensor *no = mq_expand(S, mq_tensor_scalar(S, MQ_DT_BOOL, 0), m->ndim, m->shape);
  mq_tensor *out = mq_tensor_new(S, MQ_DT_BOOL, m->ndim, m->shape);
  mq_kernel_where(S, out, had, m, no);
  return out;
}

mq_tensor *mq_masked(mq_state *S, mq_tensor *data, mq_tensor *mask) {
  if (mask->mask) mq_error(S, "masked: the mask must be a plain bool tensor, not a masked one");
  if (mask->dtype != MQ_DT_BOOL)
    mq_error(S, "masked: the mask must have dtype bool, got %s", mq_dtype_name((mq_dtype)mask->dtype));
  int64_t shape[MQ_MAX_DIMS];
  int n = mq_broadcast_shapes(S, data->ndim, data->shape, mask->ndim, mask->shape, shape);
  if (n != data->ndim || memcmp(shape, data->shape, (size_t)n * sizeof *shape) != 0)
    mq_error(S, "masked: a mask of shape %s does not broadcast to data of shape %s",
             mq_shape_str(S, mask->ndim, mask->shape), mq_shape_str(S, data->ndim, data->shape));
  mq_tensor *m = mq_expand(S, mask, data->ndim, data->shape);
  if (data->mask) m = both_masks(S, data->mask, m);
  mq_tensor *t = mq_tensor_view(S, data, data->ndim, data->shape, data->strides, data->offset);
  mq_tensor_set_mask(S, t, m);
  return t;
}

mq_tensor *mq_get_data(mq_state *S, mq_tensor *t) {
  if (!t->mask) return t;
  return mq_ag_get_data(S, mq_tensor_view(S, t, t->ndim, t->shape, t->strides, t->offset), t);
}

mq_tensor *mq_get_mask(mq_state *S, mq_tensor *t) {
  if (t->mask) return t->mask;
  /* all valid: a broadcast view of one True, not numel bytes */
  return mq_expand(S, mq_tensor_scalar(S, MQ_DT_BOOL, 1), t->ndim, t->shape);
}

mq_tensor *mq_to_tensor(mq_state *S, mq_tensor *t, double fill) {
  if (!t->mask) return t;
  mq_tensor *data = mq_get_data(S, t);
  mq_tensor *f = mq_expand(S, mq_tensor_scalar(S, (mq_dtype)t->dtype, fill), t->ndim, t->shape);
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)t->dtype, t->ndim, t->shape);
  mq_kernel_where(S, out, t->mask, data, f);
  return mq_ag_get_data(S, out, t);
}

/* --- scalars -------------------------------------------------------------- */

static void check_item(mq_state *S, mq_tensor *t) {
  if (t->numel != 1)
    mq_error(S, "item: expected a tensor with one element, got shape %s",
             mq_shape_str(S, t->ndim, t->shape));
  if (t->mask && !*(const uint8_t *)mq_tensor_data(t->mask))
    mq_error(S, "item: the only element is masked out");
}

mq_value mq_tensor_item_value(mq_state *S, mq_tensor *t) {
  check_item(S, t);
  const void *p = mq_tensor_data(t);
  switch ((mq_dtype)t->dtype) {
  case MQ_DT_BOOL: return mq_bool(*(const uint8_t *)p != 0);
  case MQ_DT_I64: return mq_int(*(const int64_t *)p);
  default:
    if (!mq_dtype_is_float((mq_dtype)t->dtype)) return mq_int((int64_t)first_element(t));
    return mq_float(first_element(t));
  }
}

bool mq_value_as_int(mq_state *S, mq_value v, int64_t *out) {
  if (mq_is_tensor(v)) {
    mq_tensor *t = mq_as_tensor(v);
    if (t->numel != 1 || mq_dtype_is_float((mq_dtype)t->dtype)) return false;
    v = mq_tensor_item_value(S, t);
  }
  if (v.type == MQ_INT) *out = v.as.i;
  else if (v.type == MQ_BOOL) *out = v.as.b;
  else return false;
  return true;
}

double mq_tensor_item(mq_state *S, mq_tensor *t) {
  check_item(S, t);
  return first_element(t);
}
