/* sparse_index.c - x[...], select, narrow and index_select of sparse
 * tensors, by walking the stored entries (never the dense positions).
 *
 * An index is read per dim of x as one operation: an int (the dim goes),
 * a slice (start, step, len; a full dim is the slice 0:size) or a list of
 * positions (index_select, or a 1-D int tensor in x[...]); `none` adds a
 * dim of size 1. Each stored entry either falls outside the selection or
 * lands at new coordinates (once per listed position that names it), and
 * the result stores exactly the entries that land: unstored entries stay
 * unstored, a masked tensor's mask is selected with its data, and the
 * values are gathered from x's stored values, so their gradient reaches
 * x's values as for the other sparse ops.
 *
 * Layouts (torch 1.13's where it answers): a result with no dim is a
 * strided 0-d tensor (x's entry, 0 or masked out where x stores none); a
 * 1-D result of CSR or CSC is COO, as torch's select; a 2-D one of CSR or
 * CSC keeps the layout (torch refuses these slices); `none` on CSR or CSC
 * gives COO (more than 2 dims). Cost: COO O(nnz * ndim) (O(log nnz + run)
 * for an int or slice on dim 0, whose entries are one run); CSR and CSC
 * O(rows + the selected rows' entries), a column found by binary search in
 * each row; a list adds O(k log k) to sort it and a binary search per
 * entry, and the result is sorted when the list is not in order. */
#include <string.h>

#include "../../core/checked.h"
#include "../kernels/gather.h"
#include "../tensor/internal.h"
#include "../tensor/msort.h"
#include "../tensor/shape.h"
#include "sparse.h"

enum { OP_INT, OP_SLICE, OP_LIST };

/* A listed position: its value (a coordinate of x) and its place in the list. */
typedef struct pick {
  int64_t value, place;
} pick;

#define PICK_BEFORE(x, y, ctx) ((x)->value < (y)->value)
MQ_DEF_MSORT(sort_picks, pick, int, PICK_BEFORE)

typedef struct dimop {
  int kind;
  int64_t at, step, len;    /* INT: at; SLICE: at, step, len; LIST: len entries */
  const int64_t *list;      /* LIST, in the given order (wrapped, checked) */
  const pick *sorted;       /* LIST, by value */
} dimop;

typedef struct plan {
  int ndim;                    /* of x */
  dimop op[MQ_MAX_DIMS];       /* per dim of x */
  int out_ndim;
  int out_src[MQ_MAX_DIMS];    /* per result dim: the dim of x it comes from, -1 for `none` */
  int64_t out_shape[MQ_MAX_DIMS];
  bool newaxis;
} plan;

/* --- reading the index ------------------------------------------------------------ */

static dimop whole(int64_t size) { return (dimop){OP_SLICE, 0, 1, size, NULL, NULL}; }

/* A list op from the 1-D integer tensor [ix] on a dim of [size]. */
static dimop list_op(mq_state *S, mq_tensor *ix, int dim, int64_t size, const char *who) {
  if (ix->mask || ix->layout != MQ_LAYOUT_STRIDED || ix->ndim != 1 ||
      mq_dtype_is_float((mq_dtype)ix->dtype) || ix->dtype == MQ_DT_BOOL)
    mq_error(S, "%s: the index of a sparse tensor must be a plain 1-D integer tensor, got a "
                "%s%d-d %s tensor", who, ix->mask ? "masked " : "", ix->ndim,
             mq_dtype_name((mq_dtype)ix->dtype));
  mq_tensor *c = mq_contiguous(S, mq_astype(S, ix, MQ_DT_I64));
  int64_t n = c->numel;
  const int64_t *src = mq_tensor_data(c);
  int64_t *list = mq_scratch(S, mq_ck_zmul(S, (size_t)(n ? n : 1), sizeof *list, "index"));
  size_t bytes = mq_ck_zmul(S, (size_t)(n ? n : 1), sizeof(pick), "index");
  pick *p = mq_scratch(S, bytes), *tmp = mq_scratch(S, bytes);
  for (int64_t j = 0; j < n; j++) {
    mq_poll_at(S, j);
    int64_t v = src[j];
    if (v < -size || v >= size)
      mq_error(S, "%s: index %lld is out of range for dimension %d of size %lld", who,
               (long long)v, dim, (long long)size);
    list[j] = v < 0 ? v + size : v;
    p[j] = (pick){list[j], j};
  }
  return (dimop){OP_LIST, 0, 1, n, list, sort_picks(S, p, tmp, n, 0)};
}

static void add_out(mq_state *S, plan *pl, int src, int64_t size) {
  if (pl->out_ndim == MQ_MAX_DIMS)
    mq_error(S, "indexing gives more than %d dimensions", MQ_MAX_DIMS);
  pl->out_src[pl->out_ndim] = src;
  pl->out_shape[pl->out_ndim++] = size;
}

/* The plan of x[items] (the messages of strided indexing). */
static void read_items(mq_state *S, const mq_tensor *t, const mq_index_item *items, int n,
                       plan *pl) {
  int consumed = 0, ellipsis = -1;
  for (int i = 0; i < n; i++) {
    if (items[i].kind == MQ_IX_ELLIPSIS) {
      if (ellipsis >= 0) mq_error(S, "an index can only have a single ellipsis (...)");
      ellipsis = i;
    } else if (items[i].kind == MQ_IX_TENSOR) {
      mq_tensor *ix = items[i].tensor;
      if (ix->dtype == MQ_DT_BOOL)
        mq_error(S, "a %s tensor takes no bool index (to_dense(x) takes any index)",
                 mq_layout_name((mq_layout)t->layout));
      if (ix->ndim != 1)
        mq_error(S, "a %s tensor takes ints, slices, none, ... and one 1-D int tensor as "
                    "index, not a %d-d tensor (to_dense(x) takes any index)",
                 mq_layout_name((mq_layout)t->layout), ix->ndim);
      consumed++;
    } else if (items[i].kind != MQ_IX_NEWAXIS) {
      consumed++;
    }
  }
  if (consumed > t->ndim)
    mq_error(S, "too many indices for a %d-d tensor: %d given", t->ndim, consumed);
  memset(pl, 0, sizeof *pl);
  pl->ndim = t->ndim;
  int d = 0, lists = 0;
  for (int i = 0; i < n; i++) {
    const mq_index_item *it = &items[i];
    switch ((mq_index_kind)it->kind) {
    case MQ_IX_ELLIPSIS:
      for (int k = 0; k < t->ndim - consumed; k++, d++) {
        pl->op[d] = whole(t->shape[d]);
        add_out(S, pl, d, t->shape[d]);
      }
      break;
    case MQ_IX_NEWAXIS:
      pl->newaxis = true;
      add_out(S, pl, -1, 1);
      break;
    case MQ_IX_INT:
      pl->op[d] = (dimop){OP_INT, mq_index_int(S, it, t->shape[d], d), 1, 1, NULL, NULL};
      d++;
      break;
    case MQ_IX_SLICE: {
      dimop *o = &pl->op[d];
      *o = whole(0);
      mq_index_slice(S, it, t->shape[d], &o->at, &o->step, &o->len);
      add_out(S, pl, d++, o->len);
      break;
    }
    case MQ_IX_TENSOR:
      if (lists++) mq_error(S, "a sparse tensor is indexed by one int tensor at most");
      pl->op[d] = list_op(S, it->tensor, d, t->shape[d], "index");
      add_out(S, pl, d, pl->op[d].len);
      d++;
      break;
    }
  }
  for (; d < t->ndim; d++) { /* implicit trailing `...` */
    pl->op[d] = whole(t->shape[d]);
    add_out(S, pl, d, t->shape[d]);
  }
}

/* --- matching one coordinate ----------------------------------------------------- */

/* The first place in picks [p] (n, by value) whose value is >= v. */
static int64_t lower_pick(const pick *p, int64_t n, int64_t v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (p[mid].value < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* How many times coordinate [c] lands under [o] (0 or 1 but for a list);
 * *first: its new coordinate (a list: the first of its picks, *first the
 * index into o->sorted). */
static int64_t lands(const dimop *o, int64_t c, int64_t *first) {
  switch (o->kind) {
  case OP_INT: *first = 0; return c == o->at;
  case OP_SLICE:
    if (c < o->at || (c - o->at) % o->step) return 0;
    *first = (c - o->at) / o->step;
    return *first < o->len;
  default: {
    int64_t lo = lower_pick(o->sorted, o->len, c), hi = lo;
    while (hi < o->len && o->sorted[hi].value == c) hi++;
    *first = lo;
    return hi - lo;
  }
  }
}

/* The new coordinate of the [j]-th landing (from lands' *first). */
static int64_t landed(const dimop *o, int64_t first, int64_t j) {
  return o->kind == OP_LIST ? o->sorted[first + j].place : first;
}

/* --- results ------------------------------------------------------------------- */

/* The selected entries: src[k] the stored entry of x that result entry k
 * holds; for COO its coordinates (out_ndim x n, row-major by dim), for CSR
 * its column and the counts of each result row. */
typedef struct picked {
  int64_t n, cap;
  int64_t *src, *coord;
} picked;

static void picked_init(mq_state *S, picked *r, int64_t cap, int width) {
  r->n = 0;
  r->cap = cap;
  size_t c = (size_t)(cap ? cap : 1);
  r->src = mq_scratch(S, mq_ck_zmul(S, c, sizeof(int64_t), "index"));
  r->coord = mq_scratch(S, mq_ck_zmul(S, mq_ck_zmul(S, c, (size_t)(width ? width : 1),
                                                    "index"), sizeof(int64_t), "index"));
}

/* [t]'s data values at the picked entries (differentiable) and its mask's. */
static mq_tensor *gather_values(mq_state *S, mq_tensor *t, const picked *r, mq_tensor **mvals) {
  int64_t n = r->n;
  mq_tensor *at = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  if (n) memcpy(mq_tensor_data(at), r->src, (size_t)n * sizeof(int64_t));
  *mvals = t->mask ? mq_index_select(S, t->mask->sparse->values, 0, at) : NULL;
  return mq_index_select(S, mq_sparse_values(S, mq_sparse_get_data(S, t)), 0, at);
}

/* The 0-d result: entry src[0] of [t], or an unstored 0 (masked out if
 * t is masked). */
static mq_tensor *scalar_result(mq_state *S, mq_tensor *t, const picked *r) {
  if (r->n) {
    mq_index_item it;
    memset(&it, 0, sizeof it);
    it.kind = MQ_IX_INT;
    it.start = r->src[0];
    return mq_index(S, mq_sparse_values(S, t), &it, 1);
  }
  mq_tensor *z = mq_tensor_scalar(S, (mq_dtype)t->dtype, 0);
  if (t->mask) mq_tensor_set_mask(S, z, mq_tensor_scalar(S, MQ_DT_BOOL, 0));
  return z;
}

static mq_tensor *coo_result(mq_state *S, mq_tensor *t, const picked *r, int nd,
                             const int64_t *shape) {
  int64_t ishape[2] = {nd, r->n};
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 2, ishape);
  int64_t *p = mq_tensor_data(ix);
  for (int64_t k = 0; k < r->n; k++) {
    mq_poll_at(S, k);
    for (int d = 0; d < nd; d++) p[d * r->n + k] = r->coord[k * nd + d];
  }
  mq_tensor *mv, *v = gather_values(S, t, r, &mv);
  mq_tensor *out = mq_sparse_coo(S, ix, v, nd, shape, -1, "index");
  if (!mv) return out;
  return mq_sparse_as_masked(S, out, mq_sparse_coo(S, ix, mv, nd, shape, -1, "index"));
}

/* A CSR result of [rows] rows: r->coord holds each entry's result row then
 * column. */
static mq_tensor *csr_result(mq_state *S, mq_tensor *t, const picked *r, const int64_t *shape) {
  int64_t rows = shape[0], n1 = rows + 1;
  mq_tensor *crow = mq_tensor_full_i64(S, 1, &n1, 0), *col = mq_tensor_new(S, MQ_DT_I64, 1, &r->n);
  int64_t *c = mq_tensor_data(crow), *cl = mq_tensor_data(col);
  for (int64_t k = 0; k < r->n; k++) {
    mq_poll_at(S, k);
    c[r->coord[2 * k] + 1]++;
    cl[k] = r->coord[2 * k + 1];
  }
  for (int64_t i = 0; i < rows; i++) {
    mq_poll_at(S, i);
    c[i + 1] += c[i];
  }
  mq_tensor *mv, *v = gather_values(S, t, r, &mv);
  mq_tensor *out = mq_sparse_csr(S, crow, col, v, shape, -1, "index");
  if (!mv) return out;
  return mq_sparse_as_masked(S, out, mq_sparse_csr(S, crow, col, mv, shape, -1, "index"));
}

/* --- COO ----------------------------------------------------------------------- */

/* The first entry in [lo, hi) whose coordinate in [rows] is >= v (COO's
 * dim 0, a CSR row's columns: both ascend). */
static int64_t lower_row(const int64_t *rows, int64_t lo, int64_t hi, int64_t v) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (rows[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static mq_tensor *index_coo(mq_state *S, mq_tensor *t, const plan *pl) {
  int nd = t->ndim;
  int64_t nnz = t->sparse->nnz, lo = 0, hi = nnz;
  const int64_t *ix = mq_tensor_data(t->sparse->indices);
  const dimop *o0 = &pl->op[0];
  if (nd > 0 && o0->kind != OP_LIST && o0->len > 0) { /* dim 0's entries are one run */
    int64_t last = o0->kind == OP_INT ? o0->at : o0->at + (o0->len - 1) * o0->step;
    lo = lower_row(ix, 0, nnz, o0->at);
    hi = last < INT64_MAX ? lower_row(ix, lo, nnz, last + 1) : nnz;
  } else if (nd > 0 && o0->kind != OP_LIST) {
    hi = 0;
  }
  /* count, then fill */
  int64_t count = 0;
  for (int64_t k = lo; k < hi; k++) {
    mq_poll_at(S, k);
    int64_t m = 1, f;
    for (int d = 0; d < nd && m; d++) m *= lands(&pl->op[d], ix[d * nnz + k], &f);
    count = mq_ck_add(S, count, m, "index");
  }
  picked r;
  picked_init(S, &r, count, pl->out_ndim);
  for (int64_t k = lo; k < hi; k++) {
    mq_poll_at(S, k);
    int64_t first[MQ_MAX_DIMS], m = 1, ld = -1;
    for (int d = 0; d < nd && m; d++) {
      int64_t c = lands(&pl->op[d], ix[d * nnz + k], &first[d]);
      if (pl->op[d].kind == OP_LIST) ld = d;
      m *= c;
    }
    for (int64_t j = 0; j < m; j++) {
      int64_t *out = r.coord + r.n * pl->out_ndim;
      for (int e = 0; e < pl->out_ndim; e++) {
        int d = pl->out_src[e];
        out[e] = d < 0 ? 0 : landed(&pl->op[d], first[d], d == ld ? j : 0);
      }
      r.src[r.n++] = k;
    }
  }
  if (pl->out_ndim == 0) return scalar_result(S, t, &r);
  return coo_result(S, t, &r, pl->out_ndim, pl->out_shape);
}

/* --- CSR (and CSC, on its flip) -------------------------------------------------- */

/* The x row of result row [i] under [o]. */
static int64_t row_of(const dimop *o, int64_t i) {
  return o->kind == OP_INT ? o->at : o->kind == OP_SLICE ? o->at + i * o->step : o->list[i];
}

/* Entries of one row [a, b) (ascending columns [col]) that land under [o],
 * handed to [emit] with their new column; a slice or an int starts at its
 * first column found by binary search and stops past its last. */
static void row_entries(mq_state *S, const int64_t *col, int64_t a, int64_t b, const dimop *o,
                        int64_t orow, picked *r, bool fill) {
  if (o->kind != OP_LIST) {
    if (o->len == 0) return;
    a = lower_row(col, a, b, o->at); /* a row's columns ascend */
  }
  for (int64_t k = a; k < b; k++) {
    mq_poll_at(S, k);
    int64_t f, m = lands(o, col[k], &f);
    if (o->kind != OP_LIST && !m && col[k] - o->at >= o->step * (o->len - 1)) break;
    for (int64_t j = 0; j < m; j++) {
      if (fill) {
        r->coord[2 * r->n] = orow;
        r->coord[2 * r->n + 1] = landed(o, f, j);
        r->src[r->n] = k;
      }
      r->n = mq_ck_add(S, r->n, 1, "index");
    }
  }
}

/* [t] a CSR tensor, [rows] and [cols] the ops on its dims. */
static mq_tensor *index_csr(mq_state *S, mq_tensor *t, const dimop *rows, const dimop *cols,
                            int64_t *shape, int nd) {
  const int64_t *crow = mq_tensor_data(t->sparse->crow), *col = mq_tensor_data(t->sparse->indices);
  int64_t nrows = rows->kind == OP_INT ? 1 : rows->len;
  picked r = {0};
  for (int pass = 0; pass < 2; pass++) {
    if (pass) picked_init(S, &r, r.n, 2);
    for (int64_t i = 0; i < nrows; i++) {
      mq_poll_at(S, i);
      int64_t x = row_of(rows, i);
      row_entries(S, col, crow[x], crow[x + 1], cols, i, &r, pass == 1);
    }
  }
  if (nd == 0) return scalar_result(S, t, &r);
  if (nd == 2) return csr_result(S, t, &r, shape);
  /* 1-D: the coordinate of the dim that is not an int */
  int keep = rows->kind == OP_INT ? 1 : 0;
  for (int64_t k = 0; k < r.n; k++) r.coord[k] = r.coord[2 * k + keep];
  return coo_result(S, t, &r, 1, shape);
}

/* --- entry points ---------------------------------------------------------------- */

static mq_tensor *run(mq_state *S, mq_tensor *t, const plan *pl) {
  if (t->layout == MQ_LAYOUT_COO) return index_coo(S, t, pl);
  if (pl->newaxis) return index_coo(S, mq_to_sparse_coo(S, t), pl); /* > 2 dims: COO */
  int64_t shape[2] = {0, 0};
  for (int e = 0; e < pl->out_ndim; e++) shape[e] = pl->out_shape[e];
  if (t->layout == MQ_LAYOUT_CSR) return index_csr(S, t, &pl->op[0], &pl->op[1], shape, pl->out_ndim);
  /* CSC: the CSR of the transpose, its dims swapped; a 2-D result flips back */
  int64_t tshape[2] = {shape[1], shape[0]};
  mq_tensor *r = index_csr(S, mq_sparse_flip(S, t), &pl->op[1], &pl->op[0],
                           pl->out_ndim == 2 ? tshape : shape, pl->out_ndim);
  return pl->out_ndim == 2 ? mq_sparse_flip(S, r) : r;
}

mq_tensor *mq_sparse_index(mq_state *S, mq_tensor *t, const mq_index_item *items, int n) {
  plan pl;
  read_items(S, t, items, n, &pl);
  return run(S, t, &pl);
}

mq_tensor *mq_sparse_select(mq_state *S, mq_tensor *t, int64_t dim, int64_t index) {
  if (t->ndim == 0) mq_error(S, "select: cannot select from a 0-d tensor");
  int d = mq_shape_norm_dim(S, dim, t->ndim);
  mq_index_item items[MQ_MAX_DIMS];
  memset(items, 0, sizeof items);
  for (int k = 0; k < d; k++) items[k].kind = MQ_IX_SLICE;
  items[d].kind = MQ_IX_INT;
  items[d].start = index;
  return mq_sparse_index(S, t, items, d + 1);
}

mq_tensor *mq_sparse_narrow(mq_state *S, mq_tensor *t, int64_t dim, int64_t start,
                            int64_t length) {
  int d;
  mq_index_item items[MQ_MAX_DIMS];
  memset(items, 0, sizeof items);
  mq_index_item it = mq_narrow_item(S, t, dim, start, length, &d);
  for (int k = 0; k < d; k++) items[k].kind = MQ_IX_SLICE;
  items[d] = it;
  return mq_sparse_index(S, t, items, d + 1);
}

mq_tensor *mq_sparse_index_select(mq_state *S, mq_tensor *t, int64_t dim, mq_tensor *index) {
  if (t->ndim == 0) mq_error(S, "index_select: cannot select from a 0-d tensor");
  int d = mq_shape_norm_dim(S, dim, t->ndim);
  plan pl;
  memset(&pl, 0, sizeof pl);
  pl.ndim = t->ndim;
  for (int k = 0; k < t->ndim; k++) {
    pl.op[k] = k == d ? list_op(S, index, d, t->shape[d], "index_select") : whole(t->shape[k]);
    add_out(S, &pl, k, pl.op[k].len);
  }
  return run(S, t, &pl);
}
