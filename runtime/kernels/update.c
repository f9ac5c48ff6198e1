/* update.c - the in-place spellings' new values (update.h): the fit of an
 * update's result to the variable it replaces, and x[items] = v. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "update.h"
#include "gather.h"
#include "../../core/checked.h"
#include "../tensor/internal.h"
#include "../tensor/shape.h"

/* torch's can_cast for an in-place op's result: not a float into an
 * integer or bool, not a number into bool. */
static bool can_cast(mq_dtype from, mq_dtype to) {
  if (mq_dtype_is_float(from) && !mq_dtype_is_float(to)) return false;
  return from == MQ_DT_BOOL || to != MQ_DT_BOOL;
}

static bool same_shape(const mq_tensor *a, int nd, const int64_t *shape) {
  return a->ndim == nd && memcmp(a->shape, shape, (size_t)nd * sizeof *shape) == 0;
}

/* A leaf that requires grad, which torch updates in place only where
 * autograd does not record. */
static bool is_grad_leaf(const mq_tensor *x) { return x->requires_grad && !x->node; }
static void refuse_recorded_leaf(mq_state *S, const char *who) {
  if (!S->no_grad)
    mq_error(S, "%s: a leaf tensor that requires grad cannot be updated in place while autograd "
                "records (torch refuses it too); update it inside no_grad { }, or work on detach(x)",
             who);
}
/* [r], the value leaf [x] takes under no_grad (no_grad { w.sub_(lr * g) },
 * no_grad { w[m] -= lr * g[m] }): still the leaf torch's would be, with its
 * requires_grad and its accumulated .grad. */
static mq_tensor *still_the_leaf(mq_state *S, const mq_tensor *x, mq_tensor *r) {
  mq_tensor *w = mq_ag_detached(S, r);
  w->requires_grad = true;
  if (x->grad) {
    x->grad->hdr.rc++;
    w->grad = x->grad;
  }
  return w;
}

mq_tensor *mq_update_fit(mq_state *S, mq_tensor *x, mq_tensor *r, int flags, const char *name) {
  /* messages name the update as written: "add_" for x.add_(v), "x += v"
   * for x += v; [fresh] is how to get a new tensor instead */
  char who[80], fresh[96];
  if ((flags & MQ_UPD_OP) && !name) { /* an element's: xs[i] op= v, d[k] op= v */
    snprintf(who, sizeof who, "xs[i] op= v");
    snprintf(fresh, sizeof fresh, "xs[i] = xs[i] op v");
  } else if (flags & MQ_UPD_OP) {
    snprintf(who, sizeof who, "x %s= v", name);
    snprintf(fresh, sizeof fresh, "x = x %s v", name);
  } else {
    snprintf(who, sizeof who, "%s_", name);
    snprintf(fresh, sizeof fresh, "x = %s(x, ...)", name);
  }
  bool leaf = is_grad_leaf(x);
  if (leaf && !(flags & MQ_UPD_LEAF_OK)) refuse_recorded_leaf(S, who);
  if (!!r->sparse != !!x->sparse)
    mq_error(S, "%s: the result is %s but x is %s; an in-place update keeps x's layout", who,
             r->sparse ? "sparse" : "strided", x->sparse ? "sparse" : "strided");
  if (!same_shape(r, x->ndim, x->shape)) {
    /* an elementwise op on x has at least x's shape; only copy_'s src
     * broadcasts to it */
    int64_t to[MQ_MAX_DIMS];
    int nd = mq_broadcast_try(x->ndim, x->shape, r->ndim, r->shape, to);
    if (x->sparse || !(flags & MQ_UPD_SRC) || nd != x->ndim || !same_shape(x, nd, to))
      mq_error(S, "%s: the result has shape %s but x has shape %s; an in-place update keeps "
                  "x's shape",
               who, mq_shape_str(S, r->ndim, r->shape), mq_shape_str(S, x->ndim, x->shape));
    r = mq_expand(S, r, x->ndim, x->shape);
  }
  if (r->dtype != x->dtype) {
    if (!(flags & MQ_UPD_CAST) && !can_cast((mq_dtype)r->dtype, (mq_dtype)x->dtype))
      mq_error(S, "%s: result type %s can't be cast to x's dtype %s (torch refuses it too); "
                  "write %s for a new tensor of the result's dtype",
               who, mq_dtype_name((mq_dtype)r->dtype), mq_dtype_name((mq_dtype)x->dtype), fresh);
    r = mq_astype(S, r, (mq_dtype)x->dtype);
  }
  /* torch's MaskedTensor.copy_ writes the data and keeps self's mask */
  if ((flags & MQ_UPD_SRC) && x->mask && r->mask != x->mask)
    r = mq_as_masked(S, mq_get_data(S, r), x->mask);
  r->weak = r->weak && x->weak;
  if (leaf && !(flags & MQ_UPD_LEAF_OK) && !x->sparse) r = still_the_leaf(S, x, r);
  return r;
}

bool mq_number_fits(mq_dtype to, double f, bool is_int) {
  static const double top[MQ_DT__ALL] = {
      [MQ_DT_I8] = 127, [MQ_DT_I16] = 32767, [MQ_DT_I32] = 2147483647.0,
      [MQ_DT_I64] = 9223372036854775807.0, [MQ_DT_U8] = 255, [MQ_DT_F16] = 65504,
      [MQ_DT_BF16] = 3.38953138925153547590470800371487866880e38,
      [MQ_DT_F32] = 3.40282346638528859811704183484516925440e38};
  if (to == MQ_DT_BOOL || to == MQ_DT_F64) return true;
  if (mq_dtype_is_float(to)) return isnan(f) || isinf(f) || (f >= -top[to] && f <= top[to]);
  if (isnan(f)) return false;
  double lo = to == MQ_DT_U8 ? (is_int ? -255 : 0) : -top[to] - 1;
  /* int64's top as a double is 2^63, one past it */
  return f >= lo && (to == MQ_DT_I64 ? f < 0x1p63 : f <= top[to]);
}

void mq_check_number_fits(mq_state *S, mq_dtype to, double f, bool is_int, const char *who) {
  if (!mq_number_fits(to, f, is_int))
    mq_error(S, "%s: the number %.10g does not fit in dtype %s (torch refuses it too: value "
                "cannot be converted without overflow)",
             who, f, mq_dtype_name(to));
}

/* v without the leading size-1 dims torch drops before broadcasting it to
 * an indexed shape of [nd] dims. */
static mq_tensor *drop_leading_ones(mq_state *S, mq_tensor *v, int nd) {
  while (v->ndim > nd && v->shape[0] == 1) {
    int64_t d = 0;
    v = mq_squeeze(S, v, 1, &d);
  }
  return v;
}

/* Writes v's entries (contiguous, x's dtype) at the flat positions [at]
 * of x's storage; interrupts wait, so that x is never half written. */
static mq_tensor *put_in_place(mq_state *S, mq_tensor *x, const int64_t *at, mq_tensor *v) {
  size_t es = mq_dtype_size((mq_dtype)x->dtype);
  const char *src = mq_tensor_data(v);
  mq_tensor *out = mq_reuse(S, x);
  char *dst = mq_tensor_data(out);
  S->defer_interrupts++;
  for (int64_t k = 0; k < v->numel; k++) memcpy(dst + (size_t)at[k] * es, src + (size_t)k * es, es);
  S->defer_interrupts--;
  return out;
}

/* The flat position in x of every entry x[items] selects, in the indexed
 * shape (int64, contiguous). Without an index tensor, x[items] of a
 * contiguous x is a view whose geometry gives them at O(entries); else
 * they are read from arange(numel) indexed as x would be. */
static mq_tensor *positions_of(mq_state *S, mq_tensor *x, const mq_index_item *items, int n,
                               bool advanced) {
  if (advanced || !mq_tensor_is_contiguous(x)) {
    int64_t flat = x->numel;
    mq_tensor *pos = mq_reshape(S, mq_arange_i64(S, 0, flat, 1), x->ndim, x->shape);
    return mq_contiguous(S, mq_index(S, pos, items, n));
  }
  mq_tensor *geom = mq_tensor_view(S, x, x->ndim, x->shape, x->strides, x->offset);
  mq_tensor *view = mq_index(S, geom, items, n);
  mq_tensor *at = mq_tensor_new(S, MQ_DT_I64, view->ndim, view->shape);
  int64_t *p = mq_tensor_data(at), idx[MQ_MAX_DIMS] = {0}, base = view->offset - x->offset;
  for (int64_t k = 0; k < at->numel; k++) {
    mq_poll_at(S, k);
    p[k] = base;
    for (int d = view->ndim - 1; d >= 0; d--) { /* the next entry, last dim fastest */
      base += view->strides[d];
      if (++idx[d] < view->shape[d]) break;
      base -= idx[d] * view->strides[d];
      idx[d] = 0;
    }
  }
  return at;
}

mq_tensor *mq_index_put(mq_state *S, mq_tensor *x, const mq_index_item *items, int n,
                        mq_tensor *v, int flags, mq_tensor *spare) {
  if (x->sparse || v->sparse)
    mq_error(S, "x[...] = v: %s is sparse; convert it with to_dense first", x->sparse ? "x" : "v");
  bool leaf = is_grad_leaf(x);
  if (leaf) refuse_recorded_leaf(S, flags & MQ_UPD_AUG ? "x[...] op= v" : "x[...] = v");
  /* decided first: the positions' view of x below shares its storage */
  bool reuse = spare == x && !x->mask && !v->mask && !v->requires_grad && !v->node &&
               mq_reusable(x, (mq_dtype)x->dtype, x->ndim, x->shape);
  bool advanced = false; /* an index tensor among the items */
  for (int i = 0; i < n; i++) advanced |= items[i].kind == MQ_IX_TENSOR;
  mq_tensor *at = positions_of(S, x, items, n, advanced);
  int64_t flat = x->numel;
  if ((flags & MQ_UPD_AUG) && !can_cast((mq_dtype)v->dtype, (mq_dtype)x->dtype))
    mq_error(S, "x[...] op= v: result type %s can't be cast to x's dtype %s (torch refuses it too)",
             mq_dtype_name((mq_dtype)v->dtype), mq_dtype_name((mq_dtype)x->dtype));
  if (advanced && !(flags & MQ_UPD_AUG) && !v->weak && v->dtype != x->dtype)
    mq_error(S, "x[index] = v: with an index tensor, v must have x's dtype %s, not %s (torch's "
                "index_put); convert it with to(v, dtype(x))",
             mq_dtype_name((mq_dtype)x->dtype), mq_dtype_name((mq_dtype)v->dtype));
  if (v->weak && v->ndim == 0)
    mq_check_number_fits(S, (mq_dtype)x->dtype, mq_elem_f64((mq_dtype)v->dtype, mq_tensor_data(v)),
                         !mq_dtype_is_float((mq_dtype)v->dtype), "x[...] = v");
  v = drop_leading_ones(S, v, at->ndim);
  int64_t to[MQ_MAX_DIMS];
  int nd = mq_broadcast_try(at->ndim, at->shape, v->ndim, v->shape, to);
  if (nd != at->ndim || !same_shape(at, nd, to))
    mq_error(S, "x[...] = v: v of shape %s cannot be broadcast to the indexed shape %s",
             mq_shape_str(S, v->ndim, v->shape), mq_shape_str(S, at->ndim, at->shape));
  v = mq_astype(S, mq_expand(S, v, at->ndim, at->shape), (mq_dtype)x->dtype);
  if (reuse) return put_in_place(S, x, mq_tensor_data(at), mq_contiguous(S, v));
  int64_t k = at->numel;
  mq_tensor *out = mq_scatter(S, mq_reshape(S, x, 1, &flat), 0, mq_reshape(S, at, 1, &k),
                              mq_reshape(S, v, 1, &k), false);
  out = mq_reshape(S, out, x->ndim, x->shape);
  return leaf ? still_the_leaf(S, x, out) : out;
}
