/* tape.c - recording the nodes of the forward ops (tape.h), and freeing
 * them with their tensors. */
#include "tape.h"

#include <math.h>
#include <string.h>

#include "shape.h"

/* --- recording ----------------------------------------------------------- */

/* A node for [out] with [nin] inputs and [naux] aux tensors, or NULL when
 * nothing is to be recorded: recording is off, the result is not float
 * (comparisons, argmax), or the op returned a tensor that already exists
 * (one of its inputs, unchanged). The node is attached before anything
 * else is allocated, so an error can never strand it. */
static mq_gradnode *record(mq_state *S, mq_tensor *out, int kind, int nin, int naux) {
  if (S->no_grad || !mq_dtype_is_float((mq_dtype)out->dtype) || out->node || out->requires_grad)
    return NULL;
  MQ_ASSERT(kind >= 0 && kind < MQ_AG__COUNT && nin >= 1 && naux >= 0);
  mq_gradnode *n = mq_calloc(S, sizeof *n);
  n->kind = (uint8_t)kind;
  out->node = n;
  out->requires_grad = true;
  n->in = mq_calloc(S, (size_t)(nin + naux) * sizeof *n->in);
  n->nin = nin;
  n->ntot = nin + naux;
  return n;
}

static void set_in(mq_gradnode *n, int i, mq_tensor *t) {
  MQ_ASSERT(i >= 0 && i < n->ntot);
  if (!t) return;
  t->hdr.rc++;
  n->in[i] = t;
}

static void set_args(mq_state *S, mq_gradnode *n, const void *args, size_t size) {
  if (!size) return;
  n->args = mq_alloc(S, size);
  n->args_size = size;
  memcpy(n->args, args, size);
}

void mq_ag_rec_unary(mq_state *S, mq_tensor *out, int op, mq_tensor *t, const double *prm) {
  mq_gradnode *n = record(S, out, MQ_AG_UNARY, 1, 0);
  if (!n) return;
  n->op = op;
  set_in(n, 0, t);
  for (int i = 0; i < 3; i++) n->prm[i] = prm ? prm[i] : NAN; /* NaN: absent (unary.c) */
}

void mq_ag_rec_binary(mq_state *S, mq_tensor *out, int op, mq_tensor *a, mq_tensor *b) {
  mq_gradnode *n = record(S, out, MQ_AG_BINARY, 2, 0);
  if (!n) return;
  n->op = op;
  set_in(n, 0, a);
  set_in(n, 1, b);
}

void mq_ag_rec_where(mq_state *S, mq_tensor *out, mq_tensor *cond, mq_tensor *a, mq_tensor *b) {
  MQ_ASSERT(cond->dtype == MQ_DT_BOOL); /* the forward checked it */
  mq_gradnode *n = record(S, out, MQ_AG_WHERE, 2, 1);
  if (!n) return;
  set_in(n, 0, a);
  set_in(n, 1, b);
  set_in(n, 2, cond);
}

void mq_ag_rec_reduce(mq_state *S, mq_tensor *out, int kind, int op, mq_tensor *t, int ndims,
                      const int *dims, bool keepdim, double prm) {
  mq_gradnode *n = record(S, out, kind, 1, 0);
  if (!n) return;
  n->op = op;
  n->keepdim = keepdim;
  n->prm[0] = prm;
  uint32_t bits = 0;
  for (int i = 0; i < ndims; i++) {
    /* normalized by the forward (a 0-d tensor's one dim is 0, as torch's) */
    MQ_ASSERT(dims[i] >= 0 && dims[i] < (t->ndim ? t->ndim : 1));
    bits |= 1u << dims[i];
  }
  n->dims = ndims == 0 || t->ndim == 0 ? (1u << t->ndim) - 1 : bits;
  set_in(n, 0, t);
}

void mq_ag_rec_dim(mq_state *S, mq_tensor *out, int kind, int op, mq_tensor *t, int dim) {
  mq_gradnode *n = record(S, out, kind, 1, 0);
  if (!n) return;
  n->op = op;
  n->dim = dim;
  set_in(n, 0, t);
}

/* [how]: MQ_AG_GATHER's op (autograd.h). */
static void rec_gather(mq_state *S, mq_tensor *out, int nin, mq_tensor *const *in,
                       mq_ag_replay_fn replay, const void *args, size_t size, int how) {
  mq_gradnode *n = record(S, out, MQ_AG_GATHER, nin, 0);
  if (!n) return;
  n->op = how;
  for (int i = 0; i < nin; i++) set_in(n, i, in[i]);
  n->replay = replay;
  set_args(S, n, args, size);
}

/* [t]'s element numbers 0 .. numel-1 in its shape (int64). */
static mq_tensor *element_ids(mq_state *S, mq_tensor *t) {
  mq_tensor *e = mq_tensor_new(S, MQ_DT_I64, t->ndim, t->shape);
  int64_t *p = mq_tensor_data(e);
  for (int64_t i = 0; i < t->numel; i++) p[i] = i;
  return e;
}

/* Whether [src] (int64, contiguous) holds each of 0 .. n-1 exactly once. */
MQ_CHECK_ONLY static bool each_once(mq_state *S, const mq_tensor *src, int64_t n) {
  if (src->numel != n) return false;
  const int64_t *p = mq_tensor_data(src);
  uint8_t *seen = mq_scratch(S, (size_t)n);
  memset(seen, 0, (size_t)n);
  for (int64_t i = 0; i < n; i++) {
    if (p[i] < 0 || p[i] >= n || seen[p[i]]) return false;
    seen[p[i]] = 1;
  }
  return true;
}

void mq_ag_rec_moved(mq_state *S, mq_tensor *out, mq_tensor *t, mq_ag_move_fn f,
                     const void *arg) {
  /* a rearrangement: each of t's elements lands once in out (the backward
   * spreads the gradient by this, on threads). A view that drops or
   * repeats elements (a diagonal, an expand) needs a gather replay
   * (mq_ag_rec_replay) instead. */
  MQ_ASSERT(out->numel == t->numel);
  /* record()'s test, before the work below */
  if (S->no_grad || out->node || out->requires_grad || !mq_dtype_is_float((mq_dtype)out->dtype))
    return;
  /* f's argument lives only as long as this call: run it now */
  mq_tensor *src = mq_contiguous(S, f(S, element_ids(S, t), arg));
  MQ_ASSERT(each_once(S, src, t->numel));
  mq_gradnode *n = record(S, out, MQ_AG_GATHER, 1, 1);
  if (!n) return;
  n->op = 1; /* a rearrangement */
  set_in(n, 0, t);
  set_in(n, 1, src);
}

void mq_ag_rec_permute(mq_state *S, mq_tensor *out, mq_tensor *t, const int *perm) {
  mq_gradnode *n = record(S, out, MQ_AG_PERMUTE, 1, 0);
  if (!n) return;
  set_in(n, 0, t);
  set_args(S, n, perm, (size_t)t->ndim * sizeof *perm);
}

static mq_tensor *replay_cat(mq_state *S, mq_tensor *const *in, const void *args) {
  const int *a = args;
  return mq_cat(S, a[0], in, a[1]);
}

void mq_ag_rec_cat(mq_state *S, mq_tensor *out, int n, mq_tensor *const *ts, int dim) {
  int a[2] = {n, dim};
  rec_gather(S, out, n, ts, replay_cat, a, sizeof a, 1);
}

void mq_ag_rec_replay(mq_state *S, mq_tensor *out, int nin, mq_tensor *const *in, int naux,
                      mq_tensor *const *aux, mq_ag_replay_fn replay, const void *args,
                      size_t size) {
  bool any = false;
  for (int i = 0; i < nin; i++) any |= in[i]->requires_grad;
  if (!any) return;
  mq_gradnode *n = record(S, out, MQ_AG_GATHER, nin, naux);
  if (!n) return;
  for (int i = 0; i < nin; i++) set_in(n, i, in[i]);
  for (int i = 0; i < naux; i++) set_in(n, nin + i, aux[i]);
  n->replay = replay;
  set_args(S, n, args, size);
}

void mq_ag_rec_scatter_add(mq_state *S, mq_tensor *out, mq_tensor *x, mq_tensor *src,
                           mq_tensor *pos) {
  if (!x->requires_grad && !src->requires_grad) return;
  /* one output element (or -1) per src element: the backward reads pos by src's numbers */
  MQ_ASSERT(pos->dtype == MQ_DT_I64 && pos->numel == src->numel);
  mq_gradnode *n = record(S, out, MQ_AG_SCATTER_ADD, 2, 1);
  if (!n) return;
  set_in(n, 0, x);
  set_in(n, 1, src);
  set_in(n, 2, pos);
}

void mq_ag_rec_simple(mq_state *S, mq_tensor *out, int kind, mq_tensor *t) {
  mq_gradnode *n = record(S, out, kind, 1, 0);
  if (n) set_in(n, 0, t);
}

/* replay's arguments: the item count, then the items */
typedef struct index_args {
  int n;
  mq_index_item items[];
} index_args;

static mq_tensor *replay_index(mq_state *S, mq_tensor *const *in, const void *args) {
  const index_args *a = args;
  return mq_index(S, in[0], a->items, a->n);
}

void mq_ag_rec_index(mq_state *S, mq_tensor *out, mq_tensor *t, const mq_index_item *items,
                     int nitems) {
  /* the items' tensors (advanced indexing) are kept alive as aux inputs */
  int ntensors = 0;
  for (int i = 0; i < nitems; i++) ntensors += items[i].kind == MQ_IX_TENSOR;
  mq_gradnode *n = record(S, out, MQ_AG_GATHER, 1, ntensors);
  if (!n) return;
  set_in(n, 0, t);
  for (int i = 0, k = 1; i < nitems; i++)
    if (items[i].kind == MQ_IX_TENSOR) set_in(n, k++, items[i].tensor);
  n->replay = replay_index;
  size_t size = sizeof(index_args) + (size_t)nitems * sizeof *items;
  n->args = mq_calloc(S, size);
  n->args_size = size;
  index_args *a = n->args;
  a->n = nitems;
  memcpy(a->items, items, (size_t)nitems * sizeof *items);
}

static mq_tensor *replay_expand(mq_state *S, mq_tensor *const *in, const void *args) {
  const int64_t *a = args;
  return mq_expand(S, in[0], (int)a[0], a + 1);
}

void mq_ag_rec_expand(mq_state *S, mq_tensor *out, mq_tensor *t) {
  int64_t a[MQ_MAX_DIMS + 1];
  a[0] = out->ndim;
  memcpy(a + 1, out->shape, (size_t)out->ndim * sizeof *a);
  rec_gather(S, out, 1, &t, replay_expand, a, (size_t)(out->ndim + 1) * sizeof *a, 2);
}

void mq_ag_rec_masked_fill(mq_state *S, mq_tensor *out, mq_tensor *x, mq_tensor *m,
                           mq_tensor *v) {
  MQ_ASSERT(m->dtype == MQ_DT_BOOL);
  mq_gradnode *n = record(S, out, MQ_AG_MASKED_FILL, 2, 1);
  if (!n) return;
  set_in(n, 0, x);
  set_in(n, 1, v);
  set_in(n, 2, m);
}

void mq_ag_rec_matmul(mq_state *S, mq_tensor *out, mq_tensor *a, mq_tensor *b) {
  mq_gradnode *n = record(S, out, MQ_AG_MATMUL, 2, 0);
  if (!n) return;
  set_in(n, 0, a);
  set_in(n, 1, b);
}

mq_gradnode *mq_ag_rec_sparse(mq_state *S, mq_tensor *out, int kind, int op, int nin, int naux,
                              mq_tensor *const *in) {
  mq_gradnode *n = record(S, out, kind, nin, naux);
  if (!n) return NULL;
  n->op = op;
  for (int i = 0; i < nin + naux; i++) set_in(n, i, in[i]);
  return n;
}

void mq_ag_rec_nodiff(mq_state *S, mq_tensor *out, mq_tensor *t, const char *name) {
  mq_gradnode *n = record(S, out, MQ_AG_SP_NODIFF, 1, 0);
  if (!n) return;
  set_in(n, 0, t);
  set_args(S, n, name, strlen(name) + 1);
}

mq_tensor *mq_as_masked(mq_state *S, mq_tensor *data, mq_tensor *mask) {
  mq_tensor *out = mq_masked(S, data, mask);
  if (MQ_UNLIKELY(data->requires_grad)) mq_ag_rec_simple(S, out, MQ_AG_AS_MASKED, data);
  return out;
}

mq_tensor *mq_ag_detached(mq_state *S, mq_tensor *t) {
  mq_tensor *v = mq_tensor_view(S, t, t->ndim, t->shape, t->strides, t->offset);
  if (t->mask) mq_tensor_set_mask(S, v, t->mask);
  return v;
}

/* --- freeing --------------------------------------------------------------- */

static void node_dealloc(mq_state *S, mq_gradnode *n) {
  if (n->in) mq_free(S, n->in, (size_t)n->ntot * sizeof *n->in);
  if (n->args) mq_free(S, n->args, n->args_size);
  mq_free(S, n, sizeof *n);
}

/* Releases the node's references; an input that dies with them hands its
 * own node to the work list instead of freeing it recursively. */
void mq_ag_node_free(mq_state *S, mq_gradnode *node) {
  node->next = NULL;
  mq_gradnode *work = node;
  while (work) {
    mq_gradnode *n = work;
    work = n->next;
    for (int i = 0; i < n->ntot; i++) {
      mq_tensor *t = n->in[i];
      if (!t) continue;
      if (t->hdr.rc == 1 && t->node) {
        mq_gradnode *c = t->node;
        t->node = NULL;
        c->next = work;
        work = c;
      }
      mq_obj_release(S, &t->hdr);
    }
    node_dealloc(S, n);
  }
}
