/* backward_sparse.c - gradients of sparse tensors (runtime/sparse/sparse.h).
 *
 * The gradient of a sparse tensor is a sparse tensor of its structure: the
 * same layout, shape and index tensors (shared), float64 values (one per
 * stored entry) while in the engine, and a sparse bool mask of that
 * structure or none. "No gradient is not zero gradient" holds entry by
 * entry: a masked-out stored entry gets a masked-out gradient entry, and an
 * unstored position has no gradient entry at all. Accumulating two
 * gradients of one tensor is an add on values.
 *
 * Most ops on sparse tensors are ops on their values, so they are recorded
 * as three nodes: SP_VALUES (the sparse tensor's values as a 1-D strided
 * tensor), the strided op itself with its own derivative, and SP_WRAP (a
 * 1-D result back into the structure). The rest have their derivatives
 * here: the dense operand read at the stored positions (SP_GATHER), the
 * conversions, the reductions, softmax, SpMM and SDDMM. Loops over
 * entries run on one thread in entry order, so a gradient does not depend
 * on the thread count. */
#include <math.h>

#include "backward.h"
#include "../sparse/sparse.h"

/* --- the gradient form --------------------------------------------------------- */

static const uint8_t *sp_maskp(const mq_tensor *t) {
  return t->mask ? mq_tensor_data(t->mask->sparse->values) : NULL;
}

/* A plain 1-D float64 copy of [v]'s data (any dtype). */
static mq_tensor *f64_of(mq_state *S, mq_tensor *v) {
  mq_tensor *out = mq_ag_gnew(S, v->ndim, v->shape);
  mq_kernel_convert(S, out, v->mask ? mq_get_data(S, v) : v);
  return out;
}

static mq_tensor *zeros_f64(mq_state *S, int nd, const int64_t *shape) {
  return mq_tensor_full(S, MQ_DT_F64, nd, shape, 0.0);
}

static uint8_t *zero_bytes(mq_state *S, int64_t n) {
  uint8_t *p = mq_scratch(S, (size_t)(n ? n : 1));
  memset(p, 0, (size_t)(n ? n : 1));
  return p;
}

/* A gradient of sparse [t]: [vals] (nnz) valid where [m] says (NULL: all)
 * and within t's mask; plain when neither masks. */
static mq_tensor *sp_grad(mq_state *S, mq_tensor *t, mq_tensor *vals, const uint8_t *m) {
  const uint8_t *tm = sp_maskp(t);
  mq_tensor *mask = NULL;
  if (m || tm) {
    int64_t nnz = t->sparse->nnz;
    mask = mq_tensor_new(S, MQ_DT_BOOL, 1, &nnz);
    uint8_t *p = mq_tensor_data(mask);
    for (int64_t k = 0; k < nnz; k++) p[k] = (uint8_t)((m ? m[k] : 1) & (tm ? tm[k] : 1));
    mask = mq_sparse_with_values(S, t, mask, NULL);
  }
  return mq_sparse_with_values(S, t, vals, mask);
}

/* The 1-D strided gradient-form tensor of sparse gradient [g]'s entries. */
static mq_tensor *entries_of(mq_state *S, mq_tensor *g) {
  mq_tensor *v = g->sparse->values;
  mq_tensor *r = mq_tensor_view(S, v, v->ndim, v->shape, v->strides, v->offset);
  if (g->mask) mq_tensor_set_mask(S, r, g->mask->sparse->values);
  return r;
}

/* A plain view of a strided gradient's data (its mask left off). */
static mq_tensor *data_view(mq_state *S, mq_tensor *g) {
  return mq_tensor_view(S, g, g->ndim, g->shape, g->strides, g->offset);
}

mq_tensor *mq_ag_sparse_accumulate(mq_state *S, mq_tensor *a, mq_tensor *b) {
  int64_t n = a->sparse->nnz;
  mq_tensor *out = mq_ag_gnew(S, 1, &n);
  const double *x = mq_bw_d(a->sparse->values), *y = mq_bw_d(b->sparse->values);
  double *o = mq_bw_d(out);
  const uint8_t *ma = sp_maskp(a), *mb = sp_maskp(b);
  if (!ma && !mb) {
    for (int64_t k = 0; k < n; k++) o[k] = x[k] + y[k];
    return mq_sparse_with_values(S, a, out, NULL);
  }
  mq_tensor *mt = mq_tensor_new(S, MQ_DT_BOOL, 1, &n);
  uint8_t *m = mq_tensor_data(mt);
  for (int64_t k = 0; k < n; k++) {
    bool va = !ma || ma[k], vb = !mb || mb[k];
    o[k] = (va ? x[k] : 0.0) + (vb ? y[k] : 0.0);
    m[k] = va || vb;
  }
  return mq_sparse_with_values(S, a, out, mq_sparse_with_values(S, a, mt, NULL));
}

mq_tensor *mq_ag_sparse_finalize(mq_state *S, mq_tensor *g, mq_tensor *t) {
  mq_tensor *v = mq_tensor_new(S, (mq_dtype)t->dtype, 1, &t->sparse->nnz);
  mq_kernel_convert(S, v, g->sparse->values);
  return sp_grad(S, t, v, sp_maskp(g));
}

mq_tensor *mq_ag_sparse_f64(mq_state *S, mq_tensor *t) {
  return mq_sparse_with_values(S, t, f64_of(S, t->sparse->values), t->mask);
}

mq_tensor *mq_ag_sparse_within(mq_state *S, mq_tensor *g, mq_tensor *t) {
  if (!t->mask || g->mask) return g;
  return mq_sparse_with_values(S, g, g->sparse->values, t->mask);
}

mq_tensor *mq_ag_sparse_none(mq_state *S, mq_tensor *x) {
  mq_tensor *z = zeros_f64(S, 1, &x->sparse->nnz);
  return sp_grad(S, x, z, x->mask ? zero_bytes(S, x->sparse->nnz) : NULL);
}

mq_tensor *mq_ag_sparse_leaf(mq_state *S, mq_tensor *t, bool flag) {
  mq_tensor *r = mq_sparse_with_values(S, t, t->sparse->values, t->mask);
  r->requires_grad = flag;
  return r;
}

/* --- values, wrapping, conversions ----------------------------------------------- */

/* [g] (strided, of a tensor of [shape]) read at the stored positions
 * [keys] of a sparse tensor: the gradient of sparse [x]. */
static mq_tensor *gather_grad(mq_state *S, mq_tensor *x, mq_tensor *g, const int64_t *keys) {
  int64_t nnz = x->sparse->nnz;
  const double *gv = mq_bw_d(g);
  const uint8_t *gm = mq_ag_maskp(S, g);
  mq_tensor *v = mq_ag_gnew(S, 1, &nnz);
  double *o = mq_bw_d(v);
  uint8_t *m = gm ? zero_bytes(S, nnz) : NULL;
  for (int64_t k = 0; k < nnz; k++) {
    mq_poll_at(S, k);
    bool ok = !gm || gm[keys[k]];
    o[k] = ok ? gv[keys[k]] : 0.0;
    if (m) m[k] = ok;
  }
  return sp_grad(S, x, v, m);
}

/* The strided gradient of [x] (strided) from [g], the gradient of entries
 * stored at [keys] (n of them): each position gets its entry's gradient;
 * the others get none (masked out) when [masked] or x is masked, else 0. */
static mq_tensor *scatter_grad(mq_state *S, mq_tensor *x, mq_tensor *g, const int64_t *keys,
                               int64_t n, bool masked) {
  const double *gv = mq_bw_d(g);
  const uint8_t *gm = mq_ag_maskp(S, g), *xm = mq_ag_maskp(S, x);
  mq_tensor *r = zeros_f64(S, x->ndim, x->shape);
  double *o = mq_bw_d(r);
  uint8_t *m = NULL;
  if (masked || gm || xm) {
    m = mq_ag_new_mask(S, r);
    memset(m, 0, (size_t)r->numel);
  }
  for (int64_t k = 0; k < n; k++) {
    mq_poll_at(S, k);
    if (gm && !gm[k]) continue; /* no gradient flowed here: never read it */
    o[keys[k]] = gv[k];
    if (m) m[keys[k]] = xm ? xm[keys[k]] : 1;
  }
  return r;
}

void mq_bw_sp_values(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *x = t->node->in[0];
  if (x->requires_grad) gin[0] = sp_grad(S, x, data_view(S, g), mq_ag_maskp(S, g));
}

void mq_bw_sp_wrap(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  if (t->node->in[0]->requires_grad) gin[0] = entries_of(S, g);
}

void mq_bw_sp_gather(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *e = t->node->in[0], *s = t->node->in[1];
  if (!e->requires_grad) return;
  gin[0] = scatter_grad(S, e, g, mq_sparse_keys(S, s), s->sparse->nnz, s->mask != NULL);
}

void mq_bw_sp_dense(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *x = t->node->in[0];
  if (x->requires_grad) gin[0] = gather_grad(S, x, g, mq_sparse_keys(S, x));
}

/* to_sparse* and get_data: a sparse input's entries are the result's, in
 * the same (dense) order; a strided input's are at the result's keys. */
void mq_bw_sp_layout(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *x = t->node->in[0];
  if (!x->requires_grad) return;
  if (x->sparse) {
    gin[0] = sp_grad(S, x, g->sparse->values, sp_maskp(g));
    return;
  }
  gin[0] = scatter_grad(S, x, entries_of(S, g), mq_sparse_keys(S, t), t->sparse->nnz, false);
}

/* sparse_coo / sparse_csr from values: value i went to entry map[i]
 * (duplicates summed into one entry each get its gradient). */
void mq_bw_sp_build(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *v = t->node->in[0];
  if (!v->requires_grad) return;
  const int64_t *map = mq_tensor_data(t->node->in[1]);
  const double *gv = mq_bw_d(g->sparse->values);
  const uint8_t *gm = sp_maskp(g);
  mq_tensor *r = mq_ag_gnew(S, v->ndim, v->shape);
  double *o = mq_bw_d(r);
  uint8_t *m = gm ? mq_ag_new_mask(S, r) : NULL;
  for (int64_t i = 0; i < v->numel; i++) {
    mq_poll_at(S, i);
    bool ok = !gm || gm[map[i]];
    o[i] = ok ? gv[map[i]] : 0.0;
    if (m) m[i] = ok;
  }
  gin[0] = r;
}

/* intersect / union: each entry of x the result kept gets that entry's
 * gradient; the others none (or 0 when nothing is masked). */
void mq_bw_sp_pick(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *x = t->node->in[0];
  if (!x->requires_grad) return;
  const int64_t *src = mq_tensor_data(t->node->in[1]);
  int64_t nnz = x->sparse->nnz;
  const double *gv = mq_bw_d(g->sparse->values);
  const uint8_t *gm = sp_maskp(g);
  mq_tensor *v = zeros_f64(S, 1, &nnz);
  double *o = mq_bw_d(v);
  uint8_t *m = zero_bytes(S, nnz);
  for (int64_t j = 0; j < t->sparse->nnz; j++) {
    mq_poll_at(S, j);
    if (src[j] < 0 || (gm && !gm[j])) continue;
    o[src[j]] = gv[j];
    m[src[j]] = 1;
  }
  gin[0] = sp_grad(S, x, v, gm || x->mask ? m : NULL);
}

/* --- reductions -------------------------------------------------------------------- */

/* sum, mean, amax, amin, prod of sparse [x] over n->dims: each valid
 * stored entry gets its slot's gradient times 1, 1 / the slot's count (a
 * plain x's unstored zeros count), for amax/amin 1 / the number of entries
 * equal to the result (ties split evenly, unstored zeros included), for
 * prod the product of the slot's other entries (as the strided prod's
 * derivative: from the product of the nonzero ones and the zeros count;
 * a plain x's unstored zeros are zeros of the slot). */
void mq_bw_sp_reduce(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *n = t->node;
  mq_tensor *x = n->in[0];
  if (!x->requires_grad) return;
  int64_t ost[MQ_MAX_DIMS], nout = 1, per = 1, nnz = x->sparse->nnz;
  for (int d = x->ndim - 1; d >= 0; d--) {
    bool red = (n->dims >> d) & 1;
    ost[d] = red ? 0 : nout;
    if (red) per *= x->shape[d];
    else nout *= x->shape[d];
  }
  const int64_t *keys = mq_sparse_keys(S, x);
  int64_t *slot = mq_scratch(S, (size_t)(nnz ? nnz : 1) * sizeof *slot);
  for (int64_t k = 0; k < nnz; k++) {
    mq_poll_at(S, k);
    int64_t rem = keys[k], s = 0;
    for (int d = x->ndim - 1; d >= 0; d--) {
      s += rem % x->shape[d] * ost[d];
      rem /= x->shape[d];
    }
    slot[k] = s;
  }
  const double *xv = mq_bw_d(f64_of(S, x->sparse->values));
  const double *yv = mq_bw_d(mq_bw_f64_to(S, t, t->ndim, t->shape));
  const double *gv = mq_bw_d(g);
  const uint8_t *xm = sp_maskp(x), *gm = mq_ag_maskp(S, g);
  bool ext = n->op == MQ_SRED_AMAX || n->op == MQ_SRED_AMIN;
  double *cnt = mq_scratch(S, (size_t)(nout ? nout : 1) * sizeof *cnt);
  double *ties = mq_scratch(S, (size_t)(nout ? nout : 1) * sizeof *ties);
  double *zeros = mq_scratch(S, (size_t)(nout ? nout : 1) * sizeof *zeros);
  double *pnz = mq_scratch(S, (size_t)(nout ? nout : 1) * sizeof *pnz);
  for (int64_t s = 0; s < nout; s++) cnt[s] = ties[s] = zeros[s] = 0, pnz[s] = 1;
  for (int64_t k = 0; k < nnz; k++) {
    if (xm && !xm[k]) continue;
    int64_t s = slot[k];
    cnt[s] += 1;
    if (ext && xv[k] == yv[s]) ties[s] += 1;
    if (xv[k] == 0) zeros[s] += 1;
    else pnz[s] *= xv[k];
  }
  if (!xm) /* a plain x: the unstored entries are zeros of each slot */
    for (int64_t s = 0; s < nout; s++) {
      if (ext && yv[s] == 0) ties[s] += (double)per - cnt[s];
      zeros[s] += (double)per - cnt[s];
      cnt[s] = (double)per;
    }
  mq_tensor *v = mq_ag_gnew(S, 1, &nnz);
  double *o = mq_bw_d(v);
  uint8_t *m = xm || gm ? zero_bytes(S, nnz) : NULL;
  for (int64_t k = 0; k < nnz; k++) {
    mq_poll_at(S, k);
    int64_t s = slot[k];
    bool ok = (!xm || xm[k]) && (!gm || gm[s]);
    double d = n->op == MQ_SRED_MEAN ? 1 / cnt[s]
               : ext                 ? (xv[k] == yv[s] ? 1 / ties[s] : 0)
               : n->op == MQ_SRED_PROD
                   ? (xv[k] != 0 ? (zeros[s] == 0 ? pnz[s] / xv[k] : 0)
                                 : (zeros[s] == 1 ? pnz[s] : 0))
                   : 1;
    o[k] = ok ? gv[s] * d : 0.0;
    if (m) m[k] = ok;
  }
  gin[0] = sp_grad(S, x, v, m);
}

/* --- softmax along any dim ------------------------------------------------------- */

/* As the strided softmax: g_x = y (g - sum(g y)), log_softmax g_x = g -
 * exp(y) sum(g), the sums over a group's valid entries that got a
 * gradient (the groups of mq_sparse_group along the node's dim); a group
 * where none did gets none. */
void mq_bw_sp_softmax(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *c = t->node->in[0];
  if (!c->requires_grad) return;
  bool lg = t->node->op, f32 = t->sparse->values->dtype == MQ_DT_F32;
  int64_t nnz = c->sparse->nnz;
  mq_sparse_groups gr;
  mq_sparse_group(S, c, (int)t->node->dims, &gr);
  const int64_t *ord = gr.order;
  const double *yv = mq_bw_d(f64_of(S, t->sparse->values)), *gv = mq_bw_d(g->sparse->values);
  const uint8_t *cm = sp_maskp(c), *gm = sp_maskp(g);
  mq_tensor *v = mq_ag_gnew(S, 1, &nnz);
  double *o = mq_bw_d(v);
  uint8_t *m = zero_bytes(S, nnz);
  for (int64_t r = 0; r < gr.n; r++) {
    mq_poll_at(S, r);
    double s = 0;
    bool any = false;
    for (int64_t j = gr.start[r]; j < gr.start[r + 1]; j++) {
      int64_t k = ord ? ord[j] : j;
      if ((cm && !cm[k]) || (gm && !gm[k])) continue;
      any = true;
      s += lg ? gv[k] : gv[k] * yv[k];
    }
    for (int64_t j = gr.start[r]; j < gr.start[r + 1]; j++) {
      int64_t k = ord ? ord[j] : j;
      bool ok = !cm || cm[k], got = ok && (!gm || gm[k]);
      double gi = got ? gv[k] : 0, y = ok ? yv[k] : 0;
      o[k] = ok && any ? (lg ? gi - mq_bw_exp(y, f32) * s : y * (gi - s)) : 0;
      m[k] = ok && any;
    }
  }
  gin[0] = sp_grad(S, c, v, m);
}

/* --- products ---------------------------------------------------------------------- */

/* The row and column of each stored entry of a 2-D sparse [t]. */
static void entry_rc(mq_state *S, const mq_tensor *t, const int64_t **rows, const int64_t **cols) {
  MQ_ASSERT(t->layout != MQ_LAYOUT_CSC); /* products record CSC operands converted to CSR */
  int64_t nnz = t->sparse->nnz;
  const int64_t *ix = mq_tensor_data(t->sparse->indices);
  if (t->layout == MQ_LAYOUT_COO) {
    *rows = ix;
    *cols = ix + nnz;
    return;
  }
  int64_t *r = mq_scratch(S, (size_t)(nnz ? nnz : 1) * sizeof *r);
  const int64_t *crow = mq_tensor_data(t->sparse->crow);
  for (int64_t i = 0; i < t->shape[0]; i++)
    for (int64_t k = crow[i]; k < crow[i + 1]; k++) r[k] = i;
  *rows = r;
  *cols = ix;
}

/* A strided gradient of [x] in [r] (its data filled in), valid where [got]
 * and x is, when [masked] or x is masked; plain otherwise. */
static mq_tensor *dense_grad(mq_state *S, mq_tensor *x, mq_tensor *r, const uint8_t *got,
                             bool masked) {
  const uint8_t *xm = mq_ag_maskp(S, x);
  if (!masked && !xm) return r;
  uint8_t *m = mq_ag_new_mask(S, r);
  for (int64_t i = 0; i < r->numel; i++) m[i] = (uint8_t)(got[i] & (xm ? xm[i] : 1));
  return r;
}

/* c = a @ b, a sparse (m, k), b strided (k, n) or (k,): over the valid
 * pairs (a's valid entry (r, l), b[l, j] valid) of each valid c[r, j],
 * dc/da[r, l] = b[l, j] (so a's gradient is the SDDMM of g and b^T at a's
 * entries) and dc/db[l, j] = a[r, l] (b's is a^T @ g). */
static void dense_sparse_bw(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin);

void mq_bw_sp_matmul(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  if (t->node->op == MQ_SPMM_SPARSE_RIGHT) {
    dense_sparse_bw(S, t, g, gin);
    return;
  }
  mq_tensor *a = t->node->in[0], *b = t->node->in[1];
  int64_t nnz = a->sparse->nnz, n = b->ndim == 2 ? b->shape[1] : 1;
  const int64_t *rows, *cols;
  entry_rc(S, a, &rows, &cols);
  const double *av = mq_bw_d(f64_of(S, a->sparse->values));
  const double *bv = mq_bw_d(mq_bw_f64_to(S, b, b->ndim, b->shape)), *gv = mq_bw_d(g);
  const uint8_t *am = sp_maskp(a), *bm = mq_ag_maskp(S, b), *gm = mq_ag_maskp(S, g);
  bool masked = am || bm || gm;
  mq_tensor *ga = a->requires_grad ? zeros_f64(S, 1, &nnz) : NULL;
  mq_tensor *gb = b->requires_grad ? zeros_f64(S, b->ndim, b->shape) : NULL;
  double *pa = ga ? mq_bw_d(ga) : NULL, *pb = gb ? mq_bw_d(gb) : NULL;
  uint8_t *ma = zero_bytes(S, nnz), *mb = zero_bytes(S, b->numel);
  int64_t step = 0; /* polled by work done: nnz * n steps */
  for (int64_t e = 0; e < nnz; e++) {
    mq_poll_at(S, step++);
    if (am && !am[e]) continue; /* a masked-out entry is in no pair */
    const double *gr = gv + rows[e] * n, *br = bv + cols[e] * n;
    const uint8_t *gmr = gm ? gm + rows[e] * n : NULL, *bmr = bm ? bm + cols[e] * n : NULL;
    double s = 0;
    for (int64_t j = 0; j < n; j++) {
      mq_poll_at(S, step++);
      if ((gmr && !gmr[j]) || (bmr && !bmr[j])) continue;
      s += gr[j] * br[j];
      ma[e] = 1;
      if (pb) {
        pb[cols[e] * n + j] += gr[j] * av[e];
        mb[cols[e] * n + j] = 1;
      }
    }
    if (pa) pa[e] = s;
  }
  if (ga) gin[0] = sp_grad(S, a, ga, masked ? ma : NULL);
  if (gb) gin[1] = dense_grad(S, b, gb, mb, masked);
}

/* c = a @ b, a strided (m, k) or (k,), b sparse (k, n): over the valid
 * pairs (a[i, p] valid, b's valid entry (p, j)) of each valid c[i, j],
 * dc/da[i, p] = b[p, j] (a's gradient is g @ b^T over those pairs) and
 * dc/db[p, j] = a[i, p] (b's, at its entries, is a^T @ g there). Each
 * gradient entry sums its terms in one order: entries ascending, then i. */
static void dense_sparse_bw(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *a = t->node->in[0], *b = t->node->in[1];
  int64_t nnz = b->sparse->nnz, k = a->shape[a->ndim - 1], n = b->shape[1];
  int64_t m = a->ndim == 2 ? a->shape[0] : 1;
  const int64_t *rows, *cols;
  entry_rc(S, b, &rows, &cols);
  const double *bv = mq_bw_d(f64_of(S, b->sparse->values));
  const double *av = mq_bw_d(mq_bw_f64_to(S, a, a->ndim, a->shape)), *gv = mq_bw_d(g);
  const uint8_t *bm = sp_maskp(b), *am = mq_ag_maskp(S, a), *gm = mq_ag_maskp(S, g);
  bool masked = am || bm || gm;
  mq_tensor *ga = a->requires_grad ? zeros_f64(S, a->ndim, a->shape) : NULL;
  mq_tensor *gb = b->requires_grad ? zeros_f64(S, 1, &nnz) : NULL;
  double *pa = ga ? mq_bw_d(ga) : NULL, *pb = gb ? mq_bw_d(gb) : NULL;
  uint8_t *ma = zero_bytes(S, a->numel), *mb = zero_bytes(S, nnz);
  int64_t step = 0; /* polled by work done: nnz * m steps */
  for (int64_t e = 0; e < nnz; e++) {
    mq_poll_at(S, step++);
    if (bm && !bm[e]) continue; /* a masked-out entry is in no pair */
    int64_t p = rows[e], j = cols[e];
    double s = 0;
    for (int64_t i = 0; i < m; i++) {
      mq_poll_at(S, step++);
      if ((am && !am[i * k + p]) || (gm && !gm[i * n + j])) continue;
      s += av[i * k + p] * gv[i * n + j];
      mb[e] = 1;
      if (pa) {
        pa[i * k + p] += gv[i * n + j] * bv[e];
        ma[i * k + p] = 1;
      }
    }
    if (pb) pb[e] = s;
  }
  if (ga) gin[0] = dense_grad(S, a, ga, ma, masked);
  if (gb) gin[1] = sp_grad(S, b, gb, masked ? mb : NULL);
}

/* c<M> = a @ b at M's valid entries: entry (r, c) with gradient g adds
 * g b[:, c] to a's row r and g a[r, :] to b's column c. The result is
 * masked (unstored entries are out), so a row or column that fed no entry
 * gets no gradient. */
void mq_bw_sp_sddmm(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_tensor *a = t->node->in[0], *b = t->node->in[1];
  int64_t nnz = t->sparse->nnz, K = a->shape[1], N = b->shape[1];
  const int64_t *rows, *cols;
  entry_rc(S, t, &rows, &cols);
  const double *av = mq_bw_d(mq_bw_f64_to(S, a, a->ndim, a->shape));
  const double *bv = mq_bw_d(mq_bw_f64_to(S, b, b->ndim, b->shape));
  const double *gv = mq_bw_d(g->sparse->values);
  const uint8_t *tm = sp_maskp(t), *gm = sp_maskp(g);
  mq_tensor *ga = a->requires_grad ? zeros_f64(S, a->ndim, a->shape) : NULL;
  mq_tensor *gb = b->requires_grad ? zeros_f64(S, b->ndim, b->shape) : NULL;
  double *pa = ga ? mq_bw_d(ga) : NULL, *pb = gb ? mq_bw_d(gb) : NULL;
  uint8_t *ma = zero_bytes(S, a->numel), *mb = zero_bytes(S, b->numel);
  for (int64_t e = 0; e < nnz; e++) {
    mq_poll_at(S, e);
    if ((tm && !tm[e]) || (gm && !gm[e])) continue;
    int64_t r = rows[e], c = cols[e];
    double ge = gv[e];
    for (int64_t l = 0; l < K; l++) {
      if (pa) pa[r * K + l] += ge * bv[l * N + c], ma[r * K + l] = 1;
      if (pb) pb[l * N + c] += ge * av[r * K + l], mb[l * N + c] = 1;
    }
  }
  if (ga) gin[0] = dense_grad(S, a, ga, ma, true);
  if (gb) gin[1] = dense_grad(S, b, gb, mb, true);
}
