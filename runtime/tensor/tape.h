/* tape.h - what a forward op records for autograd: the node a result
 * carries (the op that made it, its inputs, what its derivative needs), and
 * the hooks that record it.
 *
 * Vocabulary (ggml's): a result computed from inputs that require grad
 * carries a node: the op that made it, its inputs (retained) and whatever
 * the derivative needs besides (a condition, index items, dims). A leaf is
 * a tensor with requires_grad set and no node. The backward pass that walks
 * the nodes, and every derivative, are autograd's (autograd.h).
 *
 * Ownership: a node belongs to the one tensor it is attached to (t->node)
 * and is freed with it; it references its inputs, never its outputs, so the
 * graph has no cycles.
 *
 * Recording is cheap to skip: every hook below is an inline test of the
 * inputs' requires_grad flags before any call. Recording is off while
 * S->no_grad is set (set_grad_enabled(false), and during backward itself).
 */
#ifndef MQ_TAPE_H
#define MQ_TAPE_H

#include "tensor.h"

/* The node kinds, one row each: the enum below, the backward dispatch and
 * the names in messages (runtime/autograd/backward.c) expand from it.
 *
 * X(E, name, backward, form)
 *
 *   E         the enum suffix: MQ_AG_E
 *   name      what messages call the op: an expression of the node n
 *             (OPNAME(table, n) looks n->op up in one of backward.c's
 *             name tables)
 *   backward  its derivative, fn(S, t, g, gin) (autograd.h,
 *             mq_ag_node_backward): the gradients of t->node's inputs from
 *             t's gradient g
 *   form      the gradient form it takes (backward.h): ANY, float32
 *             kernels or g passed on as it is (as float64 whenever an input
 *             is sparse); F64, the contiguous float64 form
 *
 * What each kind keeps on its node (op, dim, dims, prm, in[], aux) is said
 * beside its row. The sparse kinds' derivatives are in backward_sparse.c:
 * a sparse tensor's gradient is a sparse tensor of its structure. */
#define MQ_AG_KINDS(X)                                                         \
  /* op: mq_unop; prm: the op's scalar parameters */                           \
  X(UNARY, OPNAME(un_names, n), bw_unary, ANY)                                 \
  /* op: mq_binop */                                                           \
  X(BINARY, OPNAME(bin_names, n), bw_binary, ANY)                              \
  /* in: a, b; aux: cond */                                                    \
  X(WHERE, "where", bw_where, ANY)                                             \
  /* op: mq_redop; dims: bit set of reduced dims (0: all) */                   \
  X(REDUCE, OPNAME(red_names, n), mq_bw_reduce, ANY)                           \
  /* op: 1 for log_softmax; dim */                                             \
  X(SOFTMAX, n->op ? "log_softmax" : "softmax", mq_bw_softmax, ANY)            \
  /* pure data movement: replay(args) on element numbers, or (replay NULL)     \
     in[nin]: the source of each output element; op 1: each input element     \
     lands once (mq_ag_moved, cat); op 2: a broadcast (expand), summed back    \
     as sum_to does */                                                         \
  X(GATHER, "indexing or view", mq_bw_gather, ANY)                             \
  /* permute / transpose; args: the permutation (int[ndim]): the gradient     \
     is g permuted back, with no element numbers made or kept */              \
  X(PERMUTE, "permute or transpose", mq_bw_permute, ANY)                       \
  /* as_masked(data, mask): the gradient passes to data */                     \
  X(AS_MASKED, "as_masked", bw_pass, ANY)                                      \
  /* get_data / to_tensor: the gradient re-wrapped with the mask */            \
  X(GET_DATA, "get_data", bw_get_data, ANY)                                    \
  /* astype / contiguous: the gradient passes as it is */                      \
  X(CAST, "conversion", bw_cast, ANY)                                          \
  /* in: x, v; aux: the fill mask */                                           \
  X(MASKED_FILL, "masked_fill", bw_masked_fill, ANY)                           \
  X(MATMUL, "matmul", mq_bw_matmul, ANY)                                       \
  /* op: 1 for std; prm[0]: correction; dims */                                \
  X(VAR, n->op ? "std" : "var", mq_bw_reduce, F64)                             \
  /* prm[0]: p; dims */                                                        \
  X(NORM, "norm", mq_bw_reduce, F64)                                           \
  /* op: 1 for cumprod; dim */                                                 \
  X(CUMULATIVE, n->op ? "cumprod" : "cumsum", mq_bw_cumulative, F64)           \
  /* dim; in: x (the derivative reads the result's own data as y) */         \
  X(LOGCUMSUMEXP, "logcumsumexp", mq_bw_logcumsumexp, F64)                     \
  /* dims: the one dim, or all (flattened) */                                  \
  X(MEDIAN, "median", mq_bw_reduce, F64)                                       \
  /* in: x, src; aux: the output element each src element was added to        \
     (int64, src's shape; -1: none) */                                         \
  X(SCATTER_ADD, "scatter_add", mq_bw_scatter_add, F64)                        \
  /* the stored values of sparse in[0], a 1-D tensor */                        \
  X(SP_VALUES, "values", mq_bw_sp_values, F64)                                 \
  /* a sparse result (its own structure) from the 1-D in[0] */                 \
  X(SP_WRAP, "op on sparse values", mq_bw_sp_wrap, F64)                        \
  /* in[0] (strided, of aux in[1]'s shape) at in[1]'s stored positions */      \
  X(SP_GATHER, "sparse op with a dense operand", mq_bw_sp_gather, F64)         \
  /* to_dense of sparse in[0] */                                               \
  X(SP_DENSE, "to_dense", mq_bw_sp_dense, F64)                                 \
  /* to_sparse_coo / _csr of in[0] (strided, or the other layout) */           \
  X(SP_LAYOUT, "to_sparse", mq_bw_sp_layout, F64)                              \
  /* op: mq_sparse_red; dims; keepdim */                                       \
  X(SP_REDUCE, mq_sparse_red_name(n->op), mq_bw_sp_reduce, F64)                \
  /* of sparse in[0] along dim [dims]; op: 1 for log_softmax */                \
  X(SP_SOFTMAX, n->op ? "log_softmax" : "softmax", mq_bw_sp_softmax, F64)      \
  /* op 0: sparse in[0] @ strided in[1] (SpMM); op 1: strided @ sparse */                                    \
  X(SP_MATMUL, "matmul", mq_bw_sp_matmul, F64)                                 \
  /* masked_matmul(in[0], in[1], aux in[2]) */                                 \
  X(SP_SDDMM, "masked_matmul", mq_bw_sp_sddmm, F64)                            \
  /* an op on sparse input with no derivative; args: its name */               \
  X(SP_NODIFF, n->args ? (const char *)n->args : "op", mq_bw_nodiff, F64)      \
  /* sparse_coo / sparse_csr from values in[0]; aux in[1]: each value's       \
     entry (int64) */                                                          \
  X(SP_BUILD, "sparse_coo or sparse_csr", mq_bw_sp_build, F64)                 \
  /* intersect / union: entry j of the result is entry aux in[1][j] of        \
     sparse in[0], or (-1) a new one */                                        \
  X(SP_PICK, "intersect or union", mq_bw_sp_pick, F64)                         \
  /* layer_norm(in[0], weight in[1], bias in[2]) fused (nn/layer_norm.h);     \
     aux in[3]: each row's mean and rstd (float64) */                          \
  X(LAYER_NORM, "layer_norm", mq_bw_layer_norm, ANY)                           \
  /* in: x; aux: the classes (int64, x's shape without dim); dim (nn/pick.h) */ \
  X(PICK, "cross_entropy's target pick", mq_bw_pick, ANY)

typedef enum mq_agkind {
#define X(E, ...) MQ_AG_##E,
  MQ_AG_KINDS(X)
#undef X
  MQ_AG__COUNT
} mq_agkind;

/* Re-runs a data-movement op on other tensors of the input shapes (the
 * backward of a gather runs it on tensors of element indices). */
typedef mq_tensor *(*mq_ag_replay_fn)(mq_state *S, mq_tensor *const *in, const void *args);
/* A rearrangement of one plain tensor's elements (shape.c's plain ops). */
typedef mq_tensor *(*mq_ag_move_fn)(mq_state *S, mq_tensor *t, const void *arg);

typedef struct mq_gradnode {
  struct mq_gradnode *next; /* work list while a chain of nodes is freed */
  uint8_t kind;             /* mq_agkind */
  bool freed;               /* released by a backward without retain */
  bool keepdim;
  int op;
  int dim;
  uint32_t dims;            /* reduced dims as bits; 0: all */
  int nin, ntot;            /* in[0..nin): inputs; in[nin..ntot): aux tensors */
  mq_tensor **in;           /* retained; NULL entries allowed */
  double prm[3];
  mq_ag_replay_fn replay;
  void *args; /* a copy of replay's arguments (owned) */
  size_t args_size;
} mq_gradnode;

/* --- recording (called by the forward ops) -------------------------------- */

MQ_INTERNAL void mq_ag_rec_unary(mq_state *S, mq_tensor *out, int op, mq_tensor *t,
                                 const double *prm);
MQ_INTERNAL void mq_ag_rec_binary(mq_state *S, mq_tensor *out, int op, mq_tensor *a,
                                  mq_tensor *b);
MQ_INTERNAL void mq_ag_rec_where(mq_state *S, mq_tensor *out, mq_tensor *cond, mq_tensor *a,
                                 mq_tensor *b);
MQ_INTERNAL void mq_ag_rec_reduce(mq_state *S, mq_tensor *out, int kind, int op, mq_tensor *t,
                                  int ndims, const int *dims, bool keepdim, double prm);
MQ_INTERNAL void mq_ag_rec_dim(mq_state *S, mq_tensor *out, int kind, int op, mq_tensor *t,
                               int dim);
MQ_INTERNAL void mq_ag_rec_moved(mq_state *S, mq_tensor *out, mq_tensor *t, mq_ag_move_fn f,
                                 const void *arg);
MQ_INTERNAL void mq_ag_rec_cat(mq_state *S, mq_tensor *out, int n, mq_tensor *const *ts, int dim);
MQ_INTERNAL void mq_ag_rec_permute(mq_state *S, mq_tensor *out, mq_tensor *t, const int *perm);
MQ_INTERNAL void mq_ag_rec_simple(mq_state *S, mq_tensor *out, int kind, mq_tensor *t);
MQ_INTERNAL void mq_ag_rec_index(mq_state *S, mq_tensor *out, mq_tensor *t,
                                 const mq_index_item *items, int n);
MQ_INTERNAL void mq_ag_rec_expand(mq_state *S, mq_tensor *out, mq_tensor *t);
MQ_INTERNAL void mq_ag_rec_masked_fill(mq_state *S, mq_tensor *out, mq_tensor *x,
                                       mq_tensor *m, mq_tensor *v);
MQ_INTERNAL void mq_ag_rec_matmul(mq_state *S, mq_tensor *out, mq_tensor *a, mq_tensor *b);
/* A data-movement op over [nin] inputs (gather, scatter): its backward
 * replays [replay] on the inputs' element numbers, passing the [naux] aux
 * tensors (an index) after them; args is copied. A replayed element number
 * of -1 means "no source" (a masked-out index). */
MQ_INTERNAL void mq_ag_rec_replay(mq_state *S, mq_tensor *out, int nin, mq_tensor *const *in,
                                  int naux, mq_tensor *const *aux, mq_ag_replay_fn replay,
                                  const void *args, size_t size);
/* scatter_add: out = x with src's valid entries added at [pos] (each src
 * element's output element, -1 for none). */
MQ_INTERNAL void mq_ag_rec_scatter_add(mq_state *S, mq_tensor *out, mq_tensor *x, mq_tensor *src,
                                       mq_tensor *pos);
/* A node of [kind] for the sparse ops (the MQ_AG_SP_* kinds): [in] holds
 * [nin] inputs then [naux] aux tensors (NULL entries allowed); NULL when
 * nothing is recorded (the caller then sets nothing else). */
MQ_INTERNAL mq_gradnode *mq_ag_rec_sparse(mq_state *S, mq_tensor *out, int kind, int op, int nin,
                                          int naux, mq_tensor *const *in);
/* Records that [out] was computed from [t] by [name], which has no
 * derivative: a backward through it says so instead of losing a gradient. */
MQ_INTERNAL void mq_ag_rec_nodiff(mq_state *S, mq_tensor *out, mq_tensor *t, const char *name);

#define MQ_AG_REQ(t) ((t) && (t)->requires_grad)

/* The hooks: one line at the end of each forward op, as a statement or
 * around the returned expression (each returns [out]). */
static inline mq_tensor *mq_ag_unary(mq_state *S, mq_tensor *out, int op, mq_tensor *t,
                                     const double *prm) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_unary(S, out, op, t, prm);
  return out;
}
/* [a] and [b] as given to the op (before x ** 2 became x * x). */
static inline mq_tensor *mq_ag_binary(mq_state *S, mq_tensor *out, int op, mq_tensor *a,
                                      mq_tensor *b) {
  if (MQ_UNLIKELY(a->requires_grad | b->requires_grad)) mq_ag_rec_binary(S, out, op, a, b);
  return out;
}
static inline mq_tensor *mq_ag_where(mq_state *S, mq_tensor *out, mq_tensor *cond, mq_tensor *a,
                                     mq_tensor *b) {
  if (MQ_UNLIKELY(a->requires_grad | b->requires_grad)) mq_ag_rec_where(S, out, cond, a, b);
  return out;
}
static inline mq_tensor *mq_ag_reduce(mq_state *S, mq_tensor *out, int op, mq_tensor *t,
                                      int ndims, const int *dims, bool keepdim) {
  if (MQ_UNLIKELY(t->requires_grad))
    mq_ag_rec_reduce(S, out, MQ_AG_REDUCE, op, t, ndims, dims, keepdim, 0);
  return out;
}
/* var and std with [correction] */
static inline mq_tensor *mq_ag_var(mq_state *S, mq_tensor *out, mq_tensor *t, int ndims,
                                   const int *dims, double correction, bool keepdim, bool std) {
  if (MQ_UNLIKELY(t->requires_grad))
    mq_ag_rec_reduce(S, out, MQ_AG_VAR, std, t, ndims, dims, keepdim, correction);
  return out;
}
static inline mq_tensor *mq_ag_norm(mq_state *S, mq_tensor *out, mq_tensor *t, double p,
                                    int ndims, const int *dims, bool keepdim) {
  if (MQ_UNLIKELY(t->requires_grad))
    mq_ag_rec_reduce(S, out, MQ_AG_NORM, 0, t, ndims, dims, keepdim, p);
  return out;
}
/* median along [dim] (< 0: of the flattened tensor) */
static inline mq_tensor *mq_ag_median(mq_state *S, mq_tensor *out, mq_tensor *t, int dim,
                                      bool keepdim) {
  if (MQ_UNLIKELY(t->requires_grad))
    mq_ag_rec_reduce(S, out, MQ_AG_MEDIAN, 0, t, dim >= 0, &dim, keepdim, 0);
  return out;
}
static inline mq_tensor *mq_ag_softmax(mq_state *S, mq_tensor *out, mq_tensor *t, int dim,
                                       bool log) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_dim(S, out, MQ_AG_SOFTMAX, log, t, dim);
  return out;
}
static inline mq_tensor *mq_ag_cumulative(mq_state *S, mq_tensor *out, mq_tensor *t, int dim,
                                          bool prod) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_dim(S, out, MQ_AG_CUMULATIVE, prod, t, dim);
  return out;
}
static inline mq_tensor *mq_ag_index(mq_state *S, mq_tensor *out, mq_tensor *t,
                                     const mq_index_item *items, int n) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_index(S, out, t, items, n);
  return out;
}
static inline mq_tensor *mq_ag_expand(mq_state *S, mq_tensor *out, mq_tensor *t) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_expand(S, out, t);
  return out;
}
/* get_data and to_tensor */
static inline mq_tensor *mq_ag_get_data(mq_state *S, mq_tensor *out, mq_tensor *t) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_simple(S, out, MQ_AG_GET_DATA, t);
  return out;
}
/* astype and contiguous */
static inline mq_tensor *mq_ag_cast(mq_state *S, mq_tensor *out, mq_tensor *t) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_simple(S, out, MQ_AG_CAST, t);
  return out;
}
static inline mq_tensor *mq_ag_masked_fill(mq_state *S, mq_tensor *out, mq_tensor *x,
                                           mq_tensor *m, mq_tensor *v) {
  if (MQ_UNLIKELY(x->requires_grad | MQ_AG_REQ(v))) mq_ag_rec_masked_fill(S, out, x, m, v);
  return out;
}
static inline mq_tensor *mq_ag_matmul(mq_state *S, mq_tensor *out, mq_tensor *a, mq_tensor *b) {
  if (MQ_UNLIKELY(a->requires_grad | b->requires_grad)) mq_ag_rec_matmul(S, out, a, b);
  return out;
}
/* A rearrangement [f](S, t, arg) of t's elements (reshape, permute, flip:
 * every element once, so that the backward may spread the gradient on
 * threads): f is run once more, right away, on t's element numbers, to
 * learn where each output element came from. */
static inline mq_tensor *mq_ag_moved(mq_state *S, mq_tensor *out, mq_tensor *t, mq_ag_move_fn f,
                                     const void *arg) {
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_moved(S, out, t, f, arg);
  return out;
}
/* cat of [n] tensors along the normalized [dim] */
static inline mq_tensor *mq_ag_cat(mq_state *S, mq_tensor *out, int n, mq_tensor *const *ts,
                                   int dim) {
  bool any = false;
  for (int i = 0; i < n; i++) any |= ts[i]->requires_grad;
  if (MQ_UNLIKELY(any)) mq_ag_rec_cat(S, out, n, ts, dim);
  return out;
}

/* as_masked(data, mask): like mq_masked, but differentiable w.r.t. data. */
MQ_INTERNAL mq_tensor *mq_as_masked(mq_state *S, mq_tensor *data, mq_tensor *mask);
/* A view of strided [t] sharing its data and mask, with no history and
 * not requiring grad: what detach(t) is for a strided tensor. */
MQ_INTERNAL mq_tensor *mq_ag_detached(mq_state *S, mq_tensor *t);

/* Frees a node whose tensor died (mq_tensor_free). Chains of nodes are
 * released iteratively, so a long recorded loop cannot overflow the C
 * stack. */
MQ_INTERNAL void mq_ag_node_free(mq_state *S, mq_gradnode *node);

#endif
