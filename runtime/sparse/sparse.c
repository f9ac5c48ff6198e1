/* sparse.c - sparse tensors: building and validating, coalescing,
 * conversions between layouts, masks, and unary ops on values. */
#include "sparse.h"

#include "../../core/checked.h"
#include "../tensor/internal.h"
#include "../tensor/msort.h"
#include "../kernels/ops.h"
#include "../kernels/gather.h"
#include "../tensor/shape.h"
#include "../tensor/tape.h"

/* --- building ------------------------------------------------------------------- */

static void keep(mq_tensor **slot, mq_tensor *t) {
  t->hdr.rc++;
  *slot = t;
}

/* The sparse layouts hold the compute dtypes only: their kernels, their
 * printing and to_dense read bool, int64, float32 or float64 values, so
 * int8 ... bfloat16 values (to(x, int8), dtype=int8, a scipy file's float16
 * data) are stored converted to their compute dtype, after the conversion
 * that made them (so to(x, int8) still wraps). Reading them as stored read
 * 2-byte float16 values as floats or doubles (an audit finding). Stored
 * values are plain data: callers record the history (built, mq_sparse_like),
 * so the conversion reads a plain view. */
static mq_tensor *stored_values(mq_state *S, mq_tensor *values) {
  if (mq_dtype_is_narrow((mq_dtype)values->dtype)) {
    if (values->requires_grad || values->node)
      values = mq_tensor_view(S, values, values->ndim, values->shape, values->strides,
                              values->offset);
    values = mq_tensor_computable(S, values);
  }
  /* A host's buffer (sparse_coo(ix, v), or a 0-d host operand's mask that
   * an op on values passed on) is copied: stored values never change, and a
   * mask's are counted and then used (tensor.h: mq_tensor_owned). */
  return mq_tensor_owned(S, values);
}

/* A sparse tensor from parts already known to be valid (the caller checked
 * or built them); the pool owns it. */
static mq_tensor *assemble(mq_state *S, mq_layout layout, int ndim, const int64_t *shape,
                           mq_tensor *indices, mq_tensor *crow, mq_tensor *values) {
  values = stored_values(S, values);
  /* the parts' forms (sparse.h): values 1-D and contiguous; COO indices
   * int64 (ndim, nnz); CSR crow (rows + 1) and col (nnz) */
  MQ_ASSERT(values->ndim == 1 && mq_tensor_is_contiguous(values) && !values->mask);
  MQ_ASSERT(indices->dtype == MQ_DT_I64 && mq_tensor_is_contiguous(indices));
  MQ_ASSERT(layout == MQ_LAYOUT_COO
                ? indices->ndim == 2 && indices->shape[0] == ndim && indices->shape[1] == values->numel
                : ndim == 2 && crow &&
                      crow->numel == shape[layout == MQ_LAYOUT_CSC] + 1 &&
                      indices->numel == values->numel);
  mq_tensor *t = mq_tensor_alloc(S, (mq_dtype)values->dtype, ndim, shape);
  t->hdr.type = MQ_O_SPARSE;
  t->layout = (uint8_t)layout;
  mq_sparse *sp = mq_calloc(S, sizeof *sp);
  t->sparse = sp;
  sp->nnz = values->numel;
  keep(&sp->indices, indices);
  if (crow) keep(&sp->crow, crow);
  keep(&sp->values, values);
  return t;
}

mq_tensor *mq_sparse_assemble(mq_state *S, mq_layout layout, int ndim, const int64_t *shape,
                              mq_tensor *indices, mq_tensor *crow, mq_tensor *values) {
  return assemble(S, layout, ndim, shape, indices, crow, values);
}

mq_tensor *mq_sparse_with_values(mq_state *S, const mq_tensor *t, mq_tensor *values,
                                 mq_tensor *mask) {
  const mq_sparse *sp = t->sparse;
  mq_tensor *r = assemble(S, (mq_layout)t->layout, t->ndim, t->shape, sp->indices, sp->crow,
                          mq_contiguous(S, values));
  /* a sparse mask: bool values, one per stored entry of the same layout */
  MQ_ASSERT(!mask || (mask->sparse && mask->layout == t->layout && mask->dtype == MQ_DT_BOOL &&
                      mask->sparse->nnz == sp->nnz));
  if (mask) keep(&r->mask, mask);
  return r;
}

/* Row-major strides of [shape]; check_shape bounded their products. */
static void dense_strides(int ndim, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    st[d] = s;
    s *= shape[d] ? shape[d] : 1;
  }
}

/* The dense position of each COO entry, into [keys]. */
static void coo_keys(mq_state *S, const mq_tensor *t, int64_t *keys) {
  int64_t st[MQ_MAX_DIMS], nnz = t->sparse->nnz;
  dense_strides(t->ndim, t->shape, st);
  const int64_t *ix = mq_tensor_data(t->sparse->indices);
  for (int64_t k = 0; k < nnz; k++) keys[k] = 0;
  for (int d = 0; d < t->ndim; d++)
    for (int64_t k = 0; k < nnz; k++) {
      mq_poll_at(S, k);
      keys[k] += ix[d * nnz + k] * st[d];
    }
}

/* COO indices (ndim, n) from sorted dense positions. */
static mq_tensor *indices_of_keys(mq_state *S, int ndim, const int64_t *shape,
                                  const int64_t *keys, int64_t n) {
  int64_t st[MQ_MAX_DIMS], ishape[2] = {ndim, n};
  dense_strides(ndim, shape, st);
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 2, ishape);
  int64_t *p = mq_tensor_data(ix);
  for (int64_t k = 0; k < n; k++) {
    mq_poll_at(S, k);
    int64_t rem = keys[k];
    for (int d = 0; d < ndim; d++) {
      p[d * n + k] = rem / st[d];
      rem %= st[d];
    }
  }
  return ix;
}

typedef struct keyed {
  int64_t key, pos;
} keyed;

/* By key; entries of one key keep their order (the sort is stable), so
 * duplicates are summed in the order they were given. */
#define KEY_BEFORE(x, y, ctx) ((x)->key < (y)->key)
MQ_DEF_MSORT(sort_keyed, keyed, int, KEY_BEFORE)

/* dst[j] (+)= src[i] for the dtype; bools sum as or, as torch's coalesce. */
static void put_value(mq_tensor *dst, int64_t j, const mq_tensor *src, int64_t i, bool add) {
  switch ((mq_dtype)dst->dtype) {
#define X(E, n, T, s)                                                                   \
  case MQ_DT_##E: {                                                                     \
    T *d = mq_tensor_data(dst);                                                         \
    const T *v = mq_tensor_data(src);                                                   \
    if (!add) d[j] = v[i];                                                              \
    else if (MQ_DT_##E == MQ_DT_BOOL) d[j] = (T)(d[j] || v[i]);                          \
    else d[j] = (T)(d[j] + v[i]);                                                       \
    break;                                                                              \
  }
    MQ_DTYPES(X)
#undef X
  default: break;
  }
}

/* Sorts the entries of a COO tensor built from unchecked order and sums
 * duplicates; returns [t] itself when it already was in order. [dst]
 * (NULL, or nnz slots): the entry each given value went to. */
static mq_tensor *coalesce(mq_state *S, mq_tensor *t, int64_t *dst) {
  int64_t nnz = t->sparse->nnz;
  int64_t *keys = mq_scratch(S, mq_ck_zmul(S, (size_t)(nnz ? nnz : 1), sizeof *keys, "nnz"));
  coo_keys(S, t, keys);
  bool sorted = true;
  for (int64_t k = 1; k < nnz && sorted; k++) sorted = keys[k - 1] < keys[k];
  if (sorted) {
    for (int64_t k = 0; dst && k < nnz; k++) dst[k] = k;
    return t;
  }
  size_t bytes = mq_ck_zmul(S, (size_t)nnz, sizeof(keyed), "nnz");
  keyed *ord = mq_scratch(S, bytes), *tmp = mq_scratch(S, bytes);
  for (int64_t k = 0; k < nnz; k++) ord[k] = (keyed){keys[k], k};
  ord = sort_keyed(S, ord, tmp, nnz, 0);
  int64_t n = 0;
  for (int64_t k = 0; k < nnz; k++)
    if (k == 0 || ord[k].key != ord[k - 1].key) keys[n++] = ord[k].key;
  const mq_tensor *v = t->sparse->values;
  mq_tensor *nv = mq_tensor_new(S, (mq_dtype)v->dtype, 1, &n);
  for (int64_t k = 0, j = -1; k < nnz; k++) {
    mq_poll_at(S, k);
    bool dup = k > 0 && ord[k].key == ord[k - 1].key;
    if (!dup) j++;
    put_value(nv, j, v, ord[k].pos, dup);
    if (dst) dst[ord[k].pos] = j;
  }
  return assemble(S, MQ_LAYOUT_COO, t->ndim, t->shape,
                  indices_of_keys(S, t->ndim, t->shape, keys, n), NULL, nv);
}

/* An index argument as a contiguous int64 tensor of [ndim] dims (an empty
 * list of any dtype counts as ints; int8/16/32 and uint8 widen, as scipy
 * writes int32 indices), in memory masq owns: a sparse tensor keeps its
 * index tensors as they were checked, whatever a host writes into the
 * buffer it built them from (tensor.h: mq_tensor_owned). */
static mq_tensor *index_arg(mq_state *S, mq_tensor *t, int ndim, const char *who,
                            const char *what) {
  if (t->mask) mq_error(S, "%s: %s must be a plain tensor, not a masked one", who, what);
  bool narrow_int = mq_dtype_is_narrow((mq_dtype)t->dtype) &&
                    mq_dtype_compute((mq_dtype)t->dtype) == MQ_DT_I64;
  if (t->dtype != MQ_DT_I64 && !narrow_int && t->numel != 0)
    mq_error(S, "%s: %s must hold ints, not %s", who, what, mq_dtype_name((mq_dtype)t->dtype));
  if (t->ndim != ndim && !(t->numel == 0 && ndim == 2 && t->ndim == 1))
    mq_error(S, "%s: %s must have %d dimension%s, got shape %s", who, what, ndim,
             ndim == 1 ? "" : "s", mq_shape_str(S, t->ndim, t->shape));
  t = t->dtype == MQ_DT_I64 ? mq_contiguous(S, t) : mq_astype(S, t, MQ_DT_I64);
  return mq_tensor_owned(S, t);
}

static mq_tensor *values_arg(mq_state *S, mq_tensor *v, int64_t nnz, int dt, const char *who) {
  if (v->mask)
    mq_error(S, "%s: values must be a plain tensor; mask a sparse tensor with masked()", who);
  if (v->ndim != 1)
    mq_error(S, "%s: values must be 1-D (one per stored entry), got shape %s", who,
             mq_shape_str(S, v->ndim, v->shape));
  if (v->numel != nnz)
    mq_error(S, "%s: %lld stored entries but %lld values", who, (long long)nnz,
             (long long)v->numel);
  if (v->requires_grad) /* stored values are plain data; built() records the history */
    v = mq_tensor_view(S, v, v->ndim, v->shape, v->strides, v->offset);
  return mq_contiguous(S, dt >= 0 ? mq_astype(S, v, (mq_dtype)dt) : v);
}

/* The entry map of a sparse tensor built from [values] that require grad
 * (NULL otherwise): coalesce fills it. */
static int64_t *entry_map(mq_state *S, const mq_tensor *values, mq_tensor **map) {
  *map = NULL;
  if (MQ_LIKELY(!values->requires_grad)) return NULL;
  int64_t n = values->numel;
  *map = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  return mq_tensor_data(*map);
}

/* [out] built from [values] (backward_sparse.c: bw_build): value i went to
 * entry map[i]. */
static mq_tensor *built(mq_state *S, mq_tensor *out, mq_tensor *values, mq_tensor *map) {
  if (MQ_UNLIKELY(values->requires_grad)) {
    mq_tensor *in[2] = {values, map};
    mq_ag_rec_sparse(S, out, MQ_AG_SP_BUILD, 0, 1, 1, in);
  }
  return out;
}

static void check_sizes(mq_state *S, int ndim, const int64_t *shape, const char *who) {
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0)
      mq_error(S, "%s: negative size %lld in size %s", who, (long long)shape[d],
               mq_shape_str(S, ndim, shape));
}

mq_tensor *mq_sparse_coo(mq_state *S, mq_tensor *indices, mq_tensor *values, int ndim,
                         const int64_t *shape, int dt, const char *who) {
  mq_tensor *ix = index_arg(S, indices, 2, who, "indices");
  int64_t sd = ix->ndim == 2 ? ix->shape[0] : 0, nnz = ix->ndim == 2 ? ix->shape[1] : 0;
  int64_t inferred[MQ_MAX_DIMS];
  if (shape) {
    check_sizes(S, ndim, shape, who);
    if (sd != ndim && !(nnz == 0 && ix->numel == 0))
      mq_error(S, "%s: indices has %lld rows but size %s has %d dims", who, (long long)sd,
               mq_shape_str(S, ndim, shape), ndim);
  } else {
    if (sd < 1 || sd > MQ_MAX_DIMS)
      mq_error(S, "%s: cannot infer a size from indices of shape %s; give size", who,
               mq_shape_str(S, ix->ndim, ix->shape));
    ndim = (int)sd;
  }
  if (ix->ndim != 2 || ix->shape[0] != ndim) { /* an empty index list */
    int64_t es[2] = {ndim, 0};
    ix = mq_tensor_new(S, MQ_DT_I64, 2, es);
  }
  const int64_t *p = mq_tensor_data(ix);
  for (int d = 0; d < ndim; d++) {
    int64_t mx = -1;
    for (int64_t k = 0; k < nnz; k++) {
      mq_poll_at(S, k);
      int64_t i = p[d * nnz + k];
      if (i < 0 || (shape && i >= shape[d]))
        mq_error(S, "%s: index %lld of entry %lld is out of range for dim %d%s%s", who,
                 (long long)i, (long long)k, d, shape ? " of size " : "",
                 shape ? mq_shape_str(S, ndim, shape) : "");
      if (i > mx) mx = i;
    }
    inferred[d] = mx < INT64_MAX ? mx + 1 : mx; /* INT64_MAX: "too large" from the shape check */
  }
  mq_tensor *v = values_arg(S, values, nnz, dt, who), *map;
  int64_t *dst = entry_map(S, values, &map);
  mq_tensor *t = assemble(S, MQ_LAYOUT_COO, ndim, shape ? shape : inferred, ix, NULL, v);
  return built(S, coalesce(S, t, dst), values, map);
}

/* CSR parts from a coalesced 2-D COO tensor (values shared: same order). */
static mq_tensor *csr_of_coo(mq_state *S, const mq_tensor *t) {
  int64_t nnz = t->sparse->nnz, rows = t->shape[0], n1 = rows + 1;
  const int64_t *ix = mq_tensor_data(t->sparse->indices);
  mq_tensor *crow = mq_tensor_full_i64(S, 1, &n1, 0);
  int64_t *c = mq_tensor_data(crow);
  for (int64_t k = 0; k < nnz; k++) c[ix[k] + 1]++;
  for (int64_t r = 0; r < rows; r++) {
    mq_poll_at(S, r);
    c[r + 1] += c[r];
  }
  mq_tensor *col = mq_tensor_new(S, MQ_DT_I64, 1, &nnz);
  if (nnz) memcpy(mq_tensor_data(col), ix + nnz, (size_t)nnz * sizeof(int64_t));
  mq_tensor *r = assemble(S, MQ_LAYOUT_CSR, 2, t->shape, col, crow, t->sparse->values);
  return r;
}

/* COO indices of a CSR tensor (rows expanded from crow). */
static mq_tensor *coo_indices_of_csr(mq_state *S, const mq_tensor *t) {
  int64_t nnz = t->sparse->nnz, ishape[2] = {2, nnz};
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 2, ishape);
  int64_t *p = mq_tensor_data(ix);
  const int64_t *c = mq_tensor_data(t->sparse->crow);
  for (int64_t r = 0; r < t->shape[0]; r++) {
    mq_poll_at(S, r);
    for (int64_t k = c[r]; k < c[r + 1]; k++) p[k] = r;
  }
  if (nnz) memcpy(p + nnz, mq_tensor_data(t->sparse->indices), (size_t)nnz * sizeof(int64_t));
  return ix;
}

/* The words of a compressed layout's messages: CSR groups entries by row,
 * CSC by column (the CSR of the transpose). */
typedef struct compressed_words {
  const char *ptr, *minor, *major_pl, *minor_one, *name;
} compressed_words;
static const compressed_words csr_words = {"crow_indices", "col_indices", "rows", "column", "CSR"};
static const compressed_words csc_words = {"ccol_indices", "row_indices", "columns", "row", "CSC"};

/* CSR (or CSC: the CSR of the transpose, [shape] still the logical one)
 * from ptr, the minor indices and values. */
static mq_tensor *compressed(mq_state *S, mq_layout layout, mq_tensor *ptr, mq_tensor *minor,
                             mq_tensor *values, const int64_t *shape, int dt, const char *who) {
  const compressed_words *w = layout == MQ_LAYOUT_CSC ? &csc_words : &csr_words;
  int ma = layout == MQ_LAYOUT_CSC, mi = 1 - ma; /* the major and minor dims of [shape] */
  if (ptr->ndim == 2) /* torch's batched form, (B, R + 1) */
    mq_error(S, "%s: %s must have 1 dimension, got shape %s: %s is 2-D in masq (no "
                "batched %s); a batch of sparse matrices is a 3-D sparse_coo tensor "
                "(sparse_coo, or to_sparse_coo(x)), whose sums and softmax take any dim", who,
             w->ptr, mq_shape_str(S, ptr->ndim, ptr->shape), w->name, w->name);
  mq_tensor *cr = index_arg(S, ptr, 1, who, w->ptr);
  mq_tensor *ci = index_arg(S, minor, 1, who, w->minor);
  int64_t rows = cr->numel - 1, nnz = ci->numel; /* rows: the major count */
  if (rows < 0) mq_error(S, "%s: %s must hold %s + 1 entries, got none", who, w->ptr, w->major_pl);
  const int64_t *c = mq_tensor_data(cr), *cc = mq_tensor_data(ci);
  if (shape) {
    check_sizes(S, 2, shape, who);
    if (shape[ma] != rows)
      mq_error(S, "%s: %s has %lld entries, so %lld %s, but size is %s", who, w->ptr,
               (long long)cr->numel, (long long)rows, w->major_pl, mq_shape_str(S, 2, shape));
  }
  if (c[0] != 0) mq_error(S, "%s: %s must start at 0, got %lld", who, w->ptr, (long long)c[0]);
  for (int64_t r = 0; r < rows; r++) {
    mq_poll_at(S, r);
    if (c[r + 1] < c[r])
      mq_error(S, "%s: %s must not decrease, but entry %lld is %lld after %lld", who, w->ptr,
               (long long)(r + 1), (long long)c[r + 1], (long long)c[r]);
  }
  if (c[rows] != nnz)
    mq_error(S, "%s: %s ends at %lld but there are %lld %s", who, w->ptr, (long long)c[rows],
             (long long)nnz, w->minor);
  int64_t mx = -1;
  bool canonical = true;
  for (int64_t r = 0; r < rows; r++) {
    mq_poll_at(S, r);
    for (int64_t k = c[r]; k < c[r + 1]; k++) {
      if (cc[k] < 0 || (shape && cc[k] >= shape[mi]))
        mq_error(S, "%s: %s index %lld of entry %lld is out of range%s%s", who, w->minor_one,
                 (long long)cc[k], (long long)k, shape ? " for size " : "",
                 shape ? mq_shape_str(S, 2, shape) : "");
      if (cc[k] > mx) mx = cc[k];
      if (k > c[r] && cc[k] <= cc[k - 1]) canonical = false;
    }
  }
  /* tsize: the shape of the CSR this is (the transpose's for CSC) */
  int64_t tsize[2] = {rows, shape ? shape[mi] : mx < INT64_MAX ? mx + 1 : mx};
  int64_t size[2] = {tsize[ma], tsize[mi]};
  mq_tensor *v = values_arg(S, values, nnz, dt, who), *map;
  int64_t *dst = entry_map(S, values, &map);
  mq_tensor *t = assemble(S, MQ_LAYOUT_CSR, 2, tsize, ci, cr, v);
  if (canonical) {
    for (int64_t k = 0; dst && k < nnz; k++) dst[k] = k;
  } else {
    mq_tensor *coo = assemble(S, MQ_LAYOUT_COO, 2, tsize, coo_indices_of_csr(S, t), NULL, v);
    t = csr_of_coo(S, coalesce(S, coo, dst));
  }
  if (layout == MQ_LAYOUT_CSC)
    t = assemble(S, MQ_LAYOUT_CSC, 2, size, t->sparse->indices, t->sparse->crow,
                 t->sparse->values);
  return built(S, t, values, map);
}

mq_tensor *mq_sparse_csr(mq_state *S, mq_tensor *crow, mq_tensor *col, mq_tensor *values,
                         const int64_t *shape, int dt, const char *who) {
  return compressed(S, MQ_LAYOUT_CSR, crow, col, values, shape, dt, who);
}

mq_tensor *mq_sparse_csc(mq_state *S, mq_tensor *ccol, mq_tensor *row, mq_tensor *values,
                         const int64_t *shape, int dt, const char *who) {
  return compressed(S, MQ_LAYOUT_CSC, ccol, row, values, shape, dt, who);
}

/* --- conversions ------------------------------------------------------------------ */

/* A bool (n) of trues: the structural mask's values. */
static mq_tensor *all_true(mq_state *S, int64_t n) {
  return mq_tensor_full(S, MQ_DT_BOOL, 1, &n, 1);
}

static bool nonzero_at(const mq_tensor *t, int64_t i) {
  switch ((mq_dtype)t->dtype) {
#define X(E, n, T, s) case MQ_DT_##E: return ((const T *)mq_tensor_data(t))[i] != 0;
    MQ_DTYPES(X)
#undef X
  default: return false;
  }
}

static mq_tensor *coo_of_dense(mq_state *S, mq_tensor *x) {
  x = mq_tensor_owned(S, x); /* counted, then stored: one copy of a host's */
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, x));
  mq_tensor *m = x->mask ? mq_contiguous(S, mq_expand(S, mq_get_mask(S, x), x->ndim, x->shape))
                         : NULL;
  int64_t n = 0;
  for (int64_t i = 0; i < d->numel; i++) {
    mq_poll_at(S, i);
    n += m ? nonzero_at(m, i) : nonzero_at(d, i);
  }
  int64_t *keys = mq_scratch(S, mq_ck_zmul(S, (size_t)(n ? n : 1), sizeof *keys, "nnz"));
  mq_tensor *v = mq_tensor_new(S, (mq_dtype)d->dtype, 1, &n);
  for (int64_t i = 0, k = 0; i < d->numel && k < n; i++) { /* k < n: belt and braces */
    mq_poll_at(S, i);
    if (!(m ? nonzero_at(m, i) : nonzero_at(d, i))) continue;
    put_value(v, k, d, i, false);
    keys[k++] = i;
  }
  mq_tensor *t = assemble(S, MQ_LAYOUT_COO, x->ndim, x->shape,
                          indices_of_keys(S, x->ndim, x->shape, keys, n), NULL, v);
  if (x->mask) keep(&t->mask, mq_sparse_with_values(S, t, all_true(S, n), NULL));
  return t;
}

/* [t] with its data and mask converted by [conv]. */
static mq_tensor *convert_both(mq_state *S, mq_tensor *t,
                               mq_tensor *(*conv)(mq_state *, const mq_tensor *)) {
  mq_tensor *r = conv(S, t);
  if (t->mask) {
    mq_tensor *m = mq_sparse_with_values(S, r, t->mask->sparse->values, NULL);
    keep(&r->mask, m);
  }
  return r;
}

static mq_tensor *coo_of_csr(mq_state *S, const mq_tensor *t) {
  return assemble(S, MQ_LAYOUT_COO, 2, t->shape, coo_indices_of_csr(S, t), NULL,
                  t->sparse->values);
}

/* [out] made from [t] by a conversion whose gradient passes entry by
 * entry (backward_sparse.c: bw_layout, bw_dense). */
static mq_tensor *converted(mq_state *S, mq_tensor *out, mq_tensor *t, int kind) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_sparse(S, out, kind, 0, 1, 0, &t);
  return out;
}

mq_tensor *mq_to_sparse_coo(mq_state *S, mq_tensor *t) {
  if (t->layout == MQ_LAYOUT_COO) return t;
  if (t->layout == MQ_LAYOUT_CSC) return mq_sparse_csc_coo(S, t);
  if (t->layout == MQ_LAYOUT_CSR)
    return converted(S, convert_both(S, t, coo_of_csr), t, MQ_AG_SP_LAYOUT);
  return converted(S, coo_of_dense(S, t), t, MQ_AG_SP_LAYOUT);
}

void mq_sparse_need_2d(mq_state *S, const mq_tensor *t, mq_layout to) {
  if (t->ndim == 2) return;
  const char *name = mq_layout_name(to), *abbr = to == MQ_LAYOUT_CSC ? "CSC" : "CSR";
  mq_error(S, "to_%s: only 2-D tensors can be converted to the %s layout, got shape %s%s%s%s",
           name, name, mq_shape_str(S, t->ndim, t->shape),
           t->ndim > 2 ? " (no batched " : "", t->ndim > 2 ? abbr : "",
           t->ndim > 2 ? "); a batch of sparse matrices goes in the sparse_coo layout: "
                         "to_sparse_coo(x), whose sums and softmax take any dim"
                       : "");
}

mq_tensor *mq_to_sparse_csr(mq_state *S, mq_tensor *t) {
  if (t->layout == MQ_LAYOUT_CSR) return t;
  if (t->layout == MQ_LAYOUT_CSC) return mq_sparse_regroup(S, t);
  mq_sparse_need_2d(S, t, MQ_LAYOUT_CSR);
  mq_tensor *coo = mq_to_sparse_coo(S, t);
  return converted(S, convert_both(S, coo, csr_of_coo), coo, MQ_AG_SP_LAYOUT);
}

/* Whether [keys] ascend strictly within [0, numel). */
MQ_CHECK_ONLY static bool dense_order(const int64_t *keys, int64_t n, int64_t numel) {
  for (int64_t k = 0; k < n; k++)
    if (keys[k] < 0 || keys[k] >= numel || (k > 0 && keys[k] <= keys[k - 1])) return false;
  return true;
}

/* Whether the row-major [keys] of an (m, n) tensor ascend strictly in the
 * column-major order, inside the shape: a CSC tensor's entries. */
MQ_CHECK_ONLY static bool column_order(const int64_t *keys, int64_t nnz, int64_t m, int64_t n) {
  for (int64_t k = 0; k < nnz; k++) {
    if (keys[k] < 0 || keys[k] >= m * n) return false;
    if (k > 0 && keys[k] % n * m + keys[k] / n <= keys[k - 1] % n * m + keys[k - 1] / n)
      return false;
  }
  return true;
}

/* The dense positions of [t]'s entries in [keys] (nnz of them). */
static int64_t *entry_keys(mq_state *S, const mq_tensor *t) {
  int64_t nnz = t->sparse->nnz;
  int64_t *keys = mq_scratch(S, mq_ck_zmul(S, (size_t)(nnz ? nnz : 1), sizeof *keys, "nnz"));
  if (t->layout == MQ_LAYOUT_COO) {
    coo_keys(S, t, keys);
  } else if (t->layout == MQ_LAYOUT_CSC) {
    /* in the stored (column) order: the callers that need the dense
     * order regroup a CSC tensor first (sparse_csc.c) */
    const int64_t *c = mq_tensor_data(t->sparse->crow), *row = mq_tensor_data(t->sparse->indices);
    for (int64_t j = 0; j < t->shape[1]; j++) {
      mq_poll_at(S, j);
      for (int64_t k = c[j]; k < c[j + 1]; k++) keys[k] = row[k] * t->shape[1] + j;
    }
    MQ_ASSERT(column_order(keys, nnz, t->shape[0], t->shape[1]));
    return keys;
  } else {
    const int64_t *c = mq_tensor_data(t->sparse->crow), *col = mq_tensor_data(t->sparse->indices);
    for (int64_t r = 0; r < t->shape[0]; r++) {
      mq_poll_at(S, r);
      for (int64_t k = c[r]; k < c[r + 1]; k++) keys[k] = r * t->shape[1] + col[k];
    }
  }
  /* what every op on the layout relies on: entries in the dense order,
   * each position once, inside the shape (sparse.h) */
  MQ_ASSERT(dense_order(keys, nnz, t->numel));
  return keys;
}

static mq_tensor *scatter(mq_state *S, const mq_tensor *t, const int64_t *keys) {
  mq_tensor *d = mq_tensor_full(S, (mq_dtype)t->dtype, t->ndim, t->shape, 0);
  for (int64_t k = 0; k < t->sparse->nnz; k++) {
    mq_poll_at(S, k);
    put_value(d, keys[k], t->sparse->values, k, false);
  }
  return d;
}

mq_tensor *mq_sparse_to_dense(mq_state *S, mq_tensor *t) {
  if (!t->sparse) return t;
  size_t es = mq_dtype_size((mq_dtype)t->dtype) + (t->mask != NULL);
  if ((uint64_t)t->numel > MQ_SPARSE_DENSE_MAX / es)
    mq_error(S, "to_dense: a strided copy of size %s would take %.3g bytes (the limit is 2^40)",
             mq_shape_str(S, t->ndim, t->shape), (double)t->numel * (double)es);
  int64_t *keys = entry_keys(S, t);
  mq_tensor *d = scatter(S, t, keys);
  return converted(S, t->mask ? mq_masked(S, d, scatter(S, t->mask, keys)) : d, t, MQ_AG_SP_DENSE);
}

/* --- masks ------------------------------------------------------------------------- */

/* The ascending dense positions where [mask] (any layout and dtype, not
 * masked; broadcast to [x]'s shape) holds a nonzero, in [*keys]; returns how many. */
static int64_t mask_true_keys(mq_state *S, const mq_tensor *x, mq_tensor *mask, int64_t **keys,
                              const char *who) {
  if (mask->mask)
    mq_error(S, "%s: mask= must be a plain tensor, got a masked one (get_data(m) & get_mask(m) "
                "combines them)", who);
  const mq_tensor *vals;
  int64_t *pos = NULL, n = 0, total;
  if (mask->sparse && !mq_tensor_same_shape(x, mask)) /* broadcast as torch does */
    mask = mq_sparse_to_dense(S, mask);
  if (mask->layout == MQ_LAYOUT_CSC) /* its keys in the dense order */
    mask = mq_to_sparse_coo(S, mask);
  if (mask->sparse) {
    pos = entry_keys(S, mask);
    vals = mask->sparse->values;
    total = mask->sparse->nnz;
  } else {
    vals = mq_contiguous(S, mq_expand(S, mask, x->ndim, x->shape));
    total = vals->numel;
  }
  for (int64_t i = 0; i < total; i++) {
    mq_poll_at(S, i);
    n += nonzero_at(vals, i);
  }
  *keys = mq_scratch(S, mq_ck_zmul(S, (size_t)(n ? n : 1), sizeof **keys, "nnz"));
  for (int64_t i = 0, k = 0; i < total && k < n; i++)
    if (nonzero_at(vals, i)) (*keys)[k++] = pos ? pos[i] : i;
  return n;
}

/* [x]'s values at the ascending dense positions [keys] (n): x's entry, or
 * a 0 where x stores none; recorded for autograd when [diff] (each kept
 * entry passes its gradient to the x entry it read). */
static mq_tensor *values_at(mq_state *S, mq_tensor *x, const int64_t *keys, int64_t n, bool diff) {
  int64_t *dk = entry_keys(S, x), dn = x->sparse->nnz;
  /* each kept entry reads x's entry, or the zero appended after x's nnz */
  mq_tensor *at = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  int64_t *a = mq_tensor_data(at);
  for (int64_t k = 0, i = 0; k < n; k++) {
    mq_poll_at(S, k);
    while (i < dn && dk[i] < keys[k]) i++;
    a[k] = i < dn && dk[i] == keys[k] ? i : dn;
  }
  int64_t one = 1;
  mq_tensor *ext[2] = {diff ? mq_sparse_values(S, x) : x->sparse->values,
                       mq_tensor_full(S, (mq_dtype)x->dtype, 1, &one, 0)};
  return mq_index_select(S, mq_cat(S, 2, ext, 0), 0, at);
}

/* [x] on the stored positions [mk] (n, ascending) with [mvals] (n bools)
 * as its mask: masked(x, m) for an m of another pattern, and mask= on a
 * sparse x (torch's _where(mask, x, 0)). */
static mq_tensor *on_positions(mq_state *S, mq_tensor *x, const int64_t *mk, int64_t n,
                               mq_tensor *mvals, bool diff) {
  mq_tensor *r = values_at(S, x, mk, n, diff);
  mq_tensor *like = mq_sparse_of_keys(S, x, mk, n, mq_get_data(S, r));
  if (!diff || !r->requires_grad)
    return mq_sparse_with_values(S, like, like->sparse->values,
                                 mq_sparse_with_values(S, like, mvals, NULL));
  return mq_sparse_like(S, like, mq_as_masked(S, r, mvals));
}

/* Whether masked [x] (not CSC) holds a valid entry at each of the
 * ascending dense positions [keys] (n), in [ok]: re-masking keeps what is
 * valid in both masks, and an entry x does not store is masked out. */
static void valid_at(mq_state *S, const mq_tensor *x, const int64_t *keys, int64_t n, uint8_t *ok) {
  const int64_t *dk = entry_keys(S, x);
  const uint8_t *v = mq_tensor_data(x->mask->sparse->values);
  for (int64_t k = 0, i = 0, dn = x->sparse->nnz; k < n; k++) {
    mq_poll_at(S, k);
    while (i < dn && dk[i] < keys[k]) i++;
    ok[k] = i < dn && dk[i] == keys[k] && v[i];
  }
}

mq_tensor *mq_sparse_where(mq_state *S, mq_tensor *x, mq_tensor *mask, const char *who) {
  if (x->layout == MQ_LAYOUT_CSC) /* on_positions reads keys in the dense order */
    return mq_to_sparse_csc(S, mq_sparse_where(S, mq_to_sparse_coo(S, x), mask, who));
  int64_t *mk, n = mask_true_keys(S, x, mask, &mk, who);
  if (x->mask) { /* the positions both masks hold valid, on x's data */
    uint8_t *ok = mq_scratch(S, (size_t)(n ? n : 1));
    valid_at(S, x, mk, n, ok);
    int64_t kept = 0;
    for (int64_t k = 0; k < n; k++)
      if (ok[k]) mk[kept++] = mk[k];
    n = kept;
    x = mq_sparse_get_data(S, x);
  }
  return on_positions(S, x, mk, n, all_true(S, n), true);
}

static bool same_ints(const mq_tensor *a, const mq_tensor *b) {
  if (a == b) return true;
  if (!a || !b || a->numel != b->numel) return false;
  return a->numel == 0 ||
         memcmp(mq_tensor_data(a), mq_tensor_data(b), (size_t)a->numel * sizeof(int64_t)) == 0;
}

/* [data] read on [mask]'s stored positions (a valid 0 where data stores
 * none), differentiable when [grad]. on_positions wants ascending dense
 * keys, which a CSC tensor's (column order) are not: it works on the
 * transposes' CSR and flips back. */
static mq_tensor *on_mask_positions(mq_state *S, mq_tensor *data, mq_tensor *mask, bool grad) {
  if (data->layout == MQ_LAYOUT_CSC)
    return mq_sparse_flip(
        S, on_mask_positions(S, mq_sparse_flip(S, data), mq_sparse_flip(S, mask), grad));
  return on_positions(S, data, entry_keys(S, mask), mask->sparse->nnz, mask->sparse->values, grad);
}

/* [mask] (bool, [data]'s layout and shape) false where masked [data]
 * holds no valid entry: the AND of the two masks on mask's positions. */
static mq_tensor *mask_within(mq_state *S, mq_tensor *mask, mq_tensor *data) {
  if (mask->layout == MQ_LAYOUT_CSC) /* valid_at wants the dense order: a CSR of the transposes */
    return mq_sparse_flip(S, mask_within(S, mq_sparse_flip(S, mask), mq_sparse_flip(S, data)));
  int64_t n = mask->sparse->nnz;
  mq_tensor *vals = mq_tensor_new(S, MQ_DT_BOOL, 1, &n);
  uint8_t *v = mq_tensor_data(vals);
  valid_at(S, data, entry_keys(S, mask), n, v);
  const uint8_t *m = mq_tensor_data(mq_contiguous(S, mask->sparse->values));
  for (int64_t k = 0; k < n; k++) v[k] &= m[k] != 0;
  return mq_sparse_with_values(S, mask, vals, NULL);
}

mq_tensor *mq_sparse_masked(mq_state *S, mq_tensor *data, mq_tensor *mask) {
  if (!data->sparse)
    mq_error(S, "masked: data and mask must have the same layout, got strided and %s",
             mask ? mq_layout_name((mq_layout)mask->layout) : "none");
  if (!mask && data->mask) return data; /* its own mask already within its entries */
  if (!mask) {
    mq_tensor *structural = mq_sparse_with_values(S, data, all_true(S, data->sparse->nnz), NULL);
    return mq_sparse_with_values(S, data, data->sparse->values, structural);
  }
  if (mask->layout != data->layout)
    mq_error(S, "masked: data and mask must have the same layout, got %s and %s",
             mq_layout_name((mq_layout)data->layout), mq_layout_name((mq_layout)mask->layout));
  if (mask->dtype != MQ_DT_BOOL || mask->mask)
    mq_error(S, "masked: mask must be a plain bool tensor, got %s%s",
             mask->mask ? "a masked " : "", mq_dtype_name((mq_dtype)mask->dtype));
  if (!mq_tensor_same_shape(data, mask))
    mq_error(S, "masked: data and mask must have the same size, got %s and %s",
             mq_shape_str(S, data->ndim, data->shape), mq_shape_str(S, mask->ndim, mask->shape));
  if (data->mask) { /* re-masking keeps what is valid in both */
    mask = mask_within(S, mask, data);
    data = mq_sparse_with_values(S, data, data->sparse->values, NULL);
  }
  if (!mq_sparse_same_structure(data, mask)) /* any other pattern: data on the mask's */
    return on_mask_positions(S, data, mask, false);
  return mq_sparse_with_values(S, data, data->sparse->values,
                               mq_sparse_with_values(S, data, mask->sparse->values, NULL));
}

mq_tensor *mq_sparse_as_masked(mq_state *S, mq_tensor *data, mq_tensor *mask) {
  mq_tensor *t = mq_sparse_masked(S, data, mask);
  if (MQ_LIKELY(!data->requires_grad) || t == data) return t;
  if (!mq_sparse_same_structure(t, data)) /* data read on the mask's positions */
    return data->mask ? on_mask_positions(S, mq_sparse_get_data(S, data), t->mask, true)
                      : on_mask_positions(S, data, mask, true);
  return converted(S, t, data, MQ_AG_SP_LAYOUT);
}

mq_tensor *mq_sparse_get_data(mq_state *S, mq_tensor *t) {
  if (!t->mask) return t;
  return converted(S, mq_sparse_with_values(S, t, t->sparse->values, NULL), t, MQ_AG_SP_LAYOUT);
}

mq_tensor *mq_sparse_get_mask(mq_state *S, mq_tensor *t) {
  return t->mask ? t->mask : mq_sparse_with_values(S, t, all_true(S, t->sparse->nnz), NULL);
}

int64_t mq_sparse_count(mq_state *S, const mq_tensor *t) {
  (void)S;
  if (!t->mask) return t->numel;
  const uint8_t *m = mq_tensor_data(t->mask->sparse->values);
  int64_t n = 0;
  for (int64_t k = 0; k < t->sparse->nnz; k++) n += m[k] != 0;
  return n;
}

/* --- ops on values ------------------------------------------------------------------ */

mq_tensor *mq_sparse_unary(mq_state *S, mq_unop op, mq_tensor *t, const char *name) {
  if (!t->mask) {
    mq_tensor *z = mq_unary(S, op, mq_tensor_scalar(S, (mq_dtype)t->dtype, 0));
    double f0 = mq_tensor_item(S, z);
    if (f0 != 0)
      mq_error(S,
               "%s of a plain %s tensor would turn every unstored zero into %g; masked(x) makes "
               "unstored entries masked out, to_dense(x) computes them",
               name, mq_layout_name((mq_layout)t->layout), f0);
  }
  if (MQ_UNLIKELY(t->requires_grad)) /* recorded: the op on values between two nodes */
    return mq_sparse_like(S, t, mq_unary(S, op, mq_sparse_values(S, t)));
  return mq_sparse_with_values(S, t, mq_unary(S, op, t->sparse->values), t->mask);
}

mq_tensor *mq_sparse_astype(mq_state *S, mq_tensor *t, mq_dtype dt) {
  if (MQ_UNLIKELY(t->requires_grad))
    return mq_sparse_like(S, t, mq_astype(S, mq_sparse_values(S, t), dt));
  return mq_sparse_with_values(S, t, mq_astype(S, t->sparse->values, dt), t->mask);
}

/* --- structure, for the ops in sparse_ops.c and friends ------------------------------ */

int64_t *mq_sparse_keys(mq_state *S, const mq_tensor *t) { return entry_keys(S, t); }

bool mq_sparse_same_structure(const mq_tensor *a, const mq_tensor *b) {
  return a->layout == b->layout && mq_tensor_same_shape(a, b) &&
         same_ints(a->sparse->indices, b->sparse->indices) &&
         same_ints(a->sparse->crow, b->sparse->crow);
}

mq_tensor *mq_sparse_of_keys(mq_state *S, const mq_tensor *like, const int64_t *keys, int64_t n,
                             mq_tensor *values) {
  mq_tensor *t = assemble(S, MQ_LAYOUT_COO, like->ndim, like->shape,
                          indices_of_keys(S, like->ndim, like->shape, keys, n), NULL, values);
  if (like->layout == MQ_LAYOUT_CSC) return mq_sparse_regroup(S, csr_of_coo(S, t));
  return like->layout == MQ_LAYOUT_CSR ? csr_of_coo(S, t) : t;
}
