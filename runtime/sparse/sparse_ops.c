/* sparse_ops.c - binary ops with a sparse operand, O(nnz): between tensors
 * of one structure, with a dense tensor (read at the stored positions) or
 * a number; and intersect/union, which bring two structures to one.
 *
 * Every op runs the strided kernel (mq_binary) on the stored values, so
 * dtypes, promotion and masks follow the dense rules exactly. A plain
 * sparse tensor's unstored entries are zeros, so an op may only keep it
 * sparse when it maps those zeros to zero; otherwise the message names
 * masked(x) (unstored entries masked out) and to_dense(x). */
#include "sparse.h"

#include <stdio.h>

#include "../../core/checked.h"
#include "../tensor/internal.h"
#include "../kernels/ops.h"
#include "../tensor/tape.h"

mq_tensor *mq_sparse_values(mq_state *S, const mq_tensor *t) {
  mq_tensor *v = t->sparse->values;
  if (MQ_UNLIKELY(t->requires_grad && !S->no_grad)) /* a new tensor, to carry the node */
    v = mq_tensor_view(S, v, v->ndim, v->shape, v->strides, v->offset);
  mq_tensor *r = t->mask ? mq_masked(S, v, t->mask->sparse->values) : v;
  if (MQ_UNLIKELY(t->requires_grad)) {
    mq_tensor *in = (mq_tensor *)t;
    mq_ag_rec_sparse(S, r, MQ_AG_SP_VALUES, 0, 1, 0, &in);
  }
  return r;
}

mq_tensor *mq_sparse_like(mq_state *S, const mq_tensor *like, mq_tensor *r) {
  mq_tensor *m = NULL;
  if (r->mask)
    m = mq_sparse_with_values(S, like, mq_contiguous(S, mq_get_mask(S, r)), NULL);
  if (MQ_LIKELY(!r->requires_grad)) return mq_sparse_with_values(S, like, mq_get_data(S, r), m);
  /* the stored values stay plain data; the node holds the history */
  mq_tensor *d = mq_tensor_view(S, r, r->ndim, r->shape, r->strides, r->offset);
  mq_tensor *out = mq_sparse_with_values(S, like, d, m);
  mq_ag_rec_sparse(S, out, MQ_AG_SP_WRAP, 0, 1, 0, &r);
  return out;
}

/* The element offset in a strided view (of [t]'s shape) with strides [st]
 * of each stored entry of [t], as [fn] wants it. */
#define FOR_ENTRY_OFFSETS(t, st, base, BODY)                                              \
  do {                                                                                    \
    int64_t nnz_ = (t)->sparse->nnz;                                                       \
    if ((t)->layout != MQ_LAYOUT_COO) { /* CSR by rows, CSC by columns */                 \
      int csc_ = (t)->layout == MQ_LAYOUT_CSC;                                            \
      const int64_t *c_ = mq_tensor_data((t)->sparse->crow);                              \
      const int64_t *col_ = mq_tensor_data((t)->sparse->indices);                         \
      for (int64_t r_ = 0; r_ < (t)->shape[csc_]; r_++) {                                 \
        mq_poll_at(S, r_);                                                                   \
        for (int64_t k = c_[r_]; k < c_[r_ + 1]; k++) {                                   \
          int64_t off = (base) + r_ * (st)[csc_] + col_[k] * (st)[!csc_];                  \
          BODY;                                                                           \
        }                                                                                 \
      }                                                                                   \
    } else {                                                                              \
      const int64_t *ix_ = mq_tensor_data((t)->sparse->indices);                          \
      for (int64_t k = 0; k < nnz_; k++) {                                                \
        mq_poll_at(S, k);                                                                    \
        int64_t off = (base);                                                             \
        for (int d_ = 0; d_ < (t)->ndim; d_++) off += ix_[d_ * nnz_ + k] * (st)[d_];      \
        BODY;                                                                             \
      }                                                                                   \
    }                                                                                     \
  } while (0)

/* The plain strided [v] (of [t]'s shape, any strides) at [t]'s stored
 * positions, as a 1-D tensor. */
static mq_tensor *gather(mq_state *S, const mq_tensor *t, const mq_tensor *v) {
  int64_t nnz = t->sparse->nnz;
  mq_tensor *r = mq_tensor_new(S, (mq_dtype)v->dtype, 1, &nnz);
  switch (mq_dtype_size((mq_dtype)v->dtype)) {
#define G(T)                                                                              \
  {                                                                                       \
    const T *src = (const T *)v->storage->data;                                           \
    T *dst = mq_tensor_data(r);                                                           \
    FOR_ENTRY_OFFSETS(t, v->strides, v->offset, dst[k] = src[off]);                        \
    break;                                                                                \
  }
  case 1: G(uint8_t)
  case 2: G(uint16_t)
  case 4: G(uint32_t)
  default: G(uint64_t)
#undef G
  }
  return r;
}

/* [d] (strided, maybe masked, broadcastable to [t]'s shape) at [t]'s
 * stored positions. */
static mq_tensor *gather_masked(mq_state *S, const mq_tensor *t, mq_tensor *d) {
  mq_tensor *e = mq_expand(S, d, t->ndim, t->shape);
  mq_tensor *g = gather(S, t, mq_get_data(S, e));
  g = e->mask ? mq_masked(S, g, gather(S, t, mq_get_mask(S, e))) : g;
  if (MQ_UNLIKELY(e->requires_grad)) {
    mq_tensor *in[2] = {e, (mq_tensor *)t};
    mq_ag_rec_sparse(S, g, MQ_AG_SP_GATHER, 0, 1, 1, in);
  }
  return g;
}

static bool is_zero(mq_state *S, mq_tensor *z) { return mq_tensor_item(S, mq_get_data(S, z)) == 0; }

static const char *lname(const mq_tensor *t) { return mq_layout_name((mq_layout)t->layout); }

static MQ_NORETURN void fills(mq_state *S, const char *name, const mq_tensor *s, double z) {
  char zs[32];
  if (z != z) snprintf(zs, sizeof zs, "nan");
  else snprintf(zs, sizeof zs, "%g", z);
  mq_error(S,
           "%s with a plain %s tensor would turn every unstored zero into %s; masked(x) makes "
           "unstored entries masked out, to_dense(x) computes them",
           name, lname(s), zs);
}

static mq_tensor *op_on(mq_state *S, mq_binop op, bool left, mq_tensor *s, mq_tensor *o) {
  return left ? mq_binary(S, op, s, o) : mq_binary(S, op, o, s);
}

/* Both sparse: same layout, shape and stored positions. */
static mq_tensor *both_sparse(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b,
                              const char *name) {
  if (a->layout != b->layout)
    mq_error(S, "%s: the operands have different layouts, %s and %s; convert one with "
                "to_sparse_coo or to_sparse_csr", name, lname(a), lname(b));
  if (!mq_tensor_same_shape(a, b))
    mq_error(S, "%s: sparse operands must have the same size, got %s and %s", name,
             mq_shape_str(S, a->ndim, a->shape), mq_shape_str(S, b->ndim, b->shape));
  if (!mq_sparse_same_structure(a, b))
    mq_error(S, "%s: the %s operands store different positions (nnz %lld and %lld); "
                "intersect(a, b) keeps the positions stored in both, union(a, b) the positions "
                "stored in either", name, lname(a), (long long)a->sparse->nnz,
             (long long)b->sparse->nnz);
  if (!a->mask && !b->mask) {
    mq_tensor *za = mq_tensor_scalar(S, (mq_dtype)a->dtype, 0);
    mq_tensor *z = mq_binary(S, op, za, mq_tensor_scalar(S, (mq_dtype)b->dtype, 0));
    if (!is_zero(S, z)) fills(S, name, a, mq_tensor_item(S, z));
  }
  return mq_sparse_like(S, a, mq_binary(S, op, mq_sparse_values(S, a), mq_sparse_values(S, b)));
}

/* A plain sparse [s] and a dense [d] with op(0, x) != 0: a strided result,
 * d's op with zero everywhere and with s's values at the stored positions
 * (O(numel), but d is already that big). The op with zero is this call's
 * own fresh tensor: when nothing else holds its storage (and autograd did
 * not record it) the stored values go straight into it, one pass over
 * numel instead of two (the sparse Adagrad step is two such adds). */
/* Unstored entries are zeros, and for add the zero is -0.0, the exact
 * identity of IEEE addition (x + -0.0 is x for every x, -0.0 included,
 * where +0.0 turns -0.0 into +0.0): so d + s and s + d hold d's own bits
 * at the unstored positions, as torch's dense + sparse (a copy of the
 * dense operand with the values added at the stored positions) does, and
 * a dying d can take the result in place, touching only the stored
 * positions (d - s holds them too: x - +0.0 is x). */
static mq_tensor *dense_result(mq_state *S, mq_binop op, bool left, mq_tensor *s, mq_tensor *d,
                               mq_tensor *g, mq_tensor *spare) {
  int64_t one = 1;
  mq_tensor *at = mq_get_data(S, op_on(S, op, left, s->sparse->values, g));
  int64_t *keys = mq_sparse_keys(S, s);
  size_t es = mq_dtype_size((mq_dtype)at->dtype);
  if (!left && spare == d && !MQ_AG_REQ(s) && !s->node &&
      mq_reusable(d, (mq_dtype)at->dtype, s->ndim, s->shape)) {
    /* everything that may fail first; then no poll: a write stopped
     * half-way would show in d's variable */
    mq_tensor *out = mq_reuse(S, d), *r = d->mask ? mq_masked(S, out, d->mask) : out;
    const char *v = mq_tensor_data(mq_contiguous(S, at));
    char *o = mq_tensor_data(out);
    for (int64_t k = 0; k < s->sparse->nnz; k++)
      memcpy(o + (size_t)keys[k] * es, v + (size_t)k * es, es);
    return r;
  }
  mq_tensor *zero = mq_tensor_full(S, (mq_dtype)s->dtype, 1, &one, op == MQ_BIN_ADD ? -0.0 : 0.0);
  mq_tensor *base = op_on(S, op, left, zero, mq_expand(S, d, s->ndim, s->shape));
  mq_tensor *src = mq_contiguous(S, mq_get_data(S, base));
  mq_tensor *out = src;
  if (src == d || src->storage->rc != 1 || src->node || src->requires_grad || src->offset) {
    out = mq_tensor_new(S, (mq_dtype)src->dtype, src->ndim, src->shape);
    if (out->numel) memcpy(mq_tensor_data(out), mq_tensor_data(src), (size_t)out->numel * es);
  }
  const char *v = mq_tensor_data(mq_contiguous(S, at));
  char *o = mq_tensor_data(out);
  for (int64_t k = 0; k < s->sparse->nnz; k++) {
    mq_poll_at(S, k);
    memcpy(o + (size_t)keys[k] * es, v + (size_t)k * es, es);
  }
  return base->mask ? mq_masked(S, out, base->mask) : out;
}

/* d = d + s or d - s into a dying float [d] (mq_reusable) of the result's
 * dtype [dt]: each stored position read, added to and written in one
 * scattered pass (a gather, the op and a scatter would be two), with the
 * same float expression as the strided kernel (x + y, x - y in dt), so the
 * same bits. Keys are distinct (a sparse tensor is coalesced). Everything
 * that may fail comes before the first write, and the loop does not poll:
 * a write stopped half-way would show in d's variable. */
static mq_tensor *update_in_place(mq_state *S, mq_binop op, mq_tensor *s, mq_tensor *d,
                                  mq_dtype dt) {
  const int64_t *keys = mq_sparse_keys(S, s);
  mq_tensor *v = mq_contiguous(S, mq_astype(S, s->sparse->values, dt));
  mq_tensor *out = mq_reuse(S, d), *r = d->mask ? mq_masked(S, out, d->mask) : out;
  int64_t nnz = s->sparse->nnz;
  bool sub = op == MQ_BIN_SUB;
#define UPDATE(T)                                                              \
  do {                                                                         \
    T *o = mq_tensor_data(out);                                                \
    const T *w = mq_tensor_data(v);                                            \
    if (sub)                                                                   \
      for (int64_t k = 0; k < nnz; k++) o[keys[k]] = o[keys[k]] - w[k];        \
    else                                                                       \
      for (int64_t k = 0; k < nnz; k++) o[keys[k]] = o[keys[k]] + w[k];        \
  } while (0)
  if (dt == MQ_DT_F32) UPDATE(float);
  else UPDATE(double);
#undef UPDATE
  return r;
}

static bool keeps_zero(mq_binop op) {
  return op == MQ_BIN_MUL || op == MQ_BIN_LAND || op == MQ_BIN_BAND;
}

mq_tensor *mq_sparse_binary(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b,
                            const char *name) {
  return mq_sparse_binary_spare(S, op, a, b, name, NULL);
}

mq_tensor *mq_sparse_binary_spare(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b,
                                  const char *name, mq_tensor *spare) {
  if (a->sparse && b->sparse) return both_sparse(S, op, a, b, name);
  bool left = a->sparse != NULL;
  mq_tensor *s = left ? a : b, *d = left ? b : a;
  if (d->ndim == 0) { /* a number or 0-d tensor: the kernel broadcasts it */
    if (!s->mask) {
      mq_tensor *z = op_on(S, op, left, mq_tensor_scalar(S, (mq_dtype)s->dtype, 0), d);
      if (!is_zero(S, z)) fills(S, name, s, mq_tensor_item(S, mq_get_data(S, z)));
    }
    return mq_sparse_like(S, s, op_on(S, op, left, mq_sparse_values(S, s), d));
  }
  int64_t shape[MQ_MAX_DIMS + 1];
  if (d->ndim > MQ_MAX_DIMS) mq_error(S, "too many dimensions");
  int nd = mq_broadcast_shapes(S, s->ndim, s->shape, d->ndim, d->shape, shape);
  if (nd != s->ndim || memcmp(shape, s->shape, (size_t)nd * sizeof *shape) != 0)
    mq_error(S, "%s: the dense operand of size %s would broadcast the %s one of size %s; a "
                "sparse tensor is not broadcast", name, mq_shape_str(S, d->ndim, d->shape),
             lname(s), mq_shape_str(S, s->ndim, s->shape));
  if (!s->mask && (op == MQ_BIN_ADD || op == MQ_BIN_SUB) && !left && spare == d &&
      !MQ_AG_REQ(s) && !s->node) {
    mq_tensor *ts[2] = {d, s};
    mq_dtype dt = mq_result_type(2, ts);
    if (mq_dtype_is_float(dt) && mq_reusable(d, dt, s->ndim, s->shape))
      return update_in_place(S, op, s, d, dt);
  }
  if (!s->mask && (op == MQ_BIN_ADD || op == MQ_BIN_SUB) &&
      MQ_UNLIKELY(s->requires_grad || d->requires_grad)) /* the same values, recorded */
    return op_on(S, op, left, mq_sparse_to_dense(S, s), d);
  mq_tensor *g = gather_masked(S, s, d);
  if (!s->mask && (op == MQ_BIN_ADD || op == MQ_BIN_SUB)) return dense_result(S, op, left, s, d, g, spare);
  if (!s->mask && !keeps_zero(op))
    mq_error(S, "%s of a plain %s tensor and a dense one would compute every unstored entry; "
                "masked(x) keeps the result at the stored entries, to_dense(x) computes all",
             name, lname(s));
  return mq_sparse_like(S, s, op_on(S, op, left, mq_sparse_values(S, s), g));
}

/* --- intersect and union ----------------------------------------------------------- */

/* [t]'s values at the sorted positions [keys] (n of them), as a 1-D tensor
 * masked by [t]'s validity there, a position [t] lacks holding 0 with
 * validity [absent]. [tk]: t's own keys. */
static mq_tensor *values_at(mq_state *S, const mq_tensor *t, const int64_t *tk,
                            const int64_t *keys, int64_t n, bool absent, int64_t *src) {
  mq_tensor *v = mq_tensor_full(S, (mq_dtype)t->dtype, 1, &n, 0);
  mq_tensor *m = mq_tensor_full(S, MQ_DT_BOOL, 1, &n, absent);
  size_t es = mq_dtype_size((mq_dtype)t->dtype);
  const char *from = mq_tensor_data(t->sparse->values);
  const uint8_t *tm = t->mask ? mq_tensor_data(t->mask->sparse->values) : NULL;
  char *dst = mq_tensor_data(v);
  uint8_t *dm = mq_tensor_data(m);
  for (int64_t j = 0, i = 0; j < n; j++) {
    mq_poll_at(S, j);
    while (i < t->sparse->nnz && tk[i] < keys[j]) i++;
    bool has = i < t->sparse->nnz && tk[i] == keys[j];
    if (has) {
      memcpy(dst + (size_t)j * es, from + (size_t)i * es, es);
      dm[j] = tm ? tm[i] : 1;
    }
    if (src) src[j] = has ? i : -1;
  }
  return mq_masked(S, v, m);
}

mq_list *mq_sparse_merge(mq_state *S, mq_tensor *a, mq_tensor *b, bool both, const char *name) {
  if (a->layout == MQ_LAYOUT_CSC && b->layout == MQ_LAYOUT_CSC) /* merged in the dense order */
    return mq_sparse_csc_merge(S, a, b, both, name);
  if (!a->sparse || !b->sparse || a->layout != b->layout)
    mq_error(S, "%s: a and b must both be sparse tensors of one layout, got %s and %s", name,
             lname(a), lname(b));
  if (!mq_tensor_same_shape(a, b))
    mq_error(S, "%s: a and b must have the same size, got %s and %s", name,
             mq_shape_str(S, a->ndim, a->shape), mq_shape_str(S, b->ndim, b->shape));
  int64_t na = a->sparse->nnz, nb = b->sparse->nnz;
  int64_t *ka = mq_sparse_keys(S, a), *kb = mq_sparse_keys(S, b);
  size_t cap = (size_t)(both ? (na < nb ? na : nb) : mq_ck_add(S, na, nb, "nnz"));
  int64_t *keys = mq_scratch(S, mq_ck_zmul(S, cap ? cap : 1, sizeof *keys, "nnz"));
  int64_t n = 0, i = 0, j = 0;
  while (i < na || j < nb) {
    mq_poll_at(S, n);
    if (j >= nb || (i < na && ka[i] < kb[j])) {
      if (!both) keys[n++] = ka[i];
      i++;
    } else if (i >= na || kb[j] < ka[i]) {
      if (!both) keys[n++] = kb[j];
      j++;
    } else {
      keys[n++] = ka[i];
      i++, j++;
    }
  }
  mq_list *l = mq_list_new(S, 2);
  const mq_tensor *ts[2] = {a, b};
  const int64_t *tks[2] = {ka, kb};
  mq_tensor *r[2], *src[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    if (MQ_UNLIKELY(ts[k]->requires_grad)) src[k] = mq_tensor_new(S, MQ_DT_I64, 1, &n);
    r[k] = values_at(S, ts[k], tks[k], keys, n, !ts[k]->mask && !both,
                     src[k] ? mq_tensor_data(src[k]) : NULL);
  }
  mq_tensor *like = mq_sparse_of_keys(S, a, keys, n, mq_get_data(S, r[0]));
  if (both) { /* valid where valid in both, as intersect of strided tensors */
    mq_tensor *m = mq_binary(S, MQ_BIN_BAND, mq_get_mask(S, r[0]), mq_get_mask(S, r[1]));
    for (int k = 0; k < 2; k++) r[k] = mq_masked(S, mq_get_data(S, r[k]), m);
  }
  for (int k = 0; k < 2; k++) {
    bool plain = !both && !ts[k]->mask;
    mq_tensor *x = plain ? mq_get_data(S, r[k]) : r[k];
    mq_tensor *out = mq_sparse_like(S, like, x);
    if (MQ_UNLIKELY(src[k] != NULL)) { /* entry j of out is entry src[j] of ts[k], or new */
      mq_tensor *in[2] = {(mq_tensor *)ts[k], src[k]};
      mq_ag_rec_sparse(S, out, MQ_AG_SP_PICK, 0, 1, 1, in);
    }
    mq_list_push(S, l, mq_objv(out));
  }
  return l;
}
