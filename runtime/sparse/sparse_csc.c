/* sparse_csc.c - the sparse_csc layout: a CSC (m, n) tensor is stored as
 * the CSR (n, m) tensor of its transpose (layout.h), so it has no kernels
 * of its own. Ops that only read values or positions take it as it is
 * (sparse.c, sparse_ops.c); the ones that walk rows or need the dense
 * order run the CSR code on its flip (the transpose, O(1)) or on its
 * regrouping (the same tensor in CSR, O(nnz + m + n)), and give the result
 * back in CSC where it is sparse. */
#include "sparse.h"

#include "../../core/checked.h"
#include "../tensor/internal.h"
#include "../tensor/shape.h"
#include "../tensor/tape.h"
#include "../kernels/gather.h"

static bool compressed(const mq_tensor *t) {
  return t->layout == MQ_LAYOUT_CSR || t->layout == MQ_LAYOUT_CSC;
}

mq_tensor *mq_sparse_flip(mq_state *S, mq_tensor *t) {
  MQ_ASSERT(compressed(t));
  mq_layout to = t->layout == MQ_LAYOUT_CSR ? MQ_LAYOUT_CSC : MQ_LAYOUT_CSR;
  int64_t shape[2] = {t->shape[1], t->shape[0]};
  const mq_sparse *sp = t->sparse;
  mq_tensor *r = mq_sparse_assemble(S, to, 2, shape, sp->indices, sp->crow, sp->values);
  if (t->mask)
    r = mq_sparse_with_values(S, r, sp->values,
                              mq_sparse_with_values(S, r, t->mask->sparse->values, NULL));
  /* the entries keep their order: to_sparse's derivative passes them on */
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_sparse(S, r, MQ_AG_SP_LAYOUT, 0, 1, 0, &t);
  return r;
}

mq_tensor *mq_sparse_regroup(mq_state *S, mq_tensor *t) {
  MQ_ASSERT(compressed(t));
  bool csr = t->layout == MQ_LAYOUT_CSR;
  int64_t major = t->shape[!csr], minor = t->shape[csr], nnz = t->sparse->nnz;
  const int64_t *ptr = mq_tensor_data(t->sparse->crow), *mi = mq_tensor_data(t->sparse->indices);
  int64_t n1 = mq_ck_add(S, minor, 1, "size");
  mq_tensor *optr = mq_tensor_full_i64(S, 1, &n1, 0);
  mq_tensor *omi = mq_tensor_new(S, MQ_DT_I64, 1, &nnz);
  mq_tensor *perm = mq_tensor_new(S, MQ_DT_I64, 1, &nnz);
  int64_t *op = mq_tensor_data(optr), *om = mq_tensor_data(omi), *pm = mq_tensor_data(perm);
  for (int64_t k = 0; k < nnz; k++) {
    mq_poll_at(S, k);
    op[mi[k] + 1]++;
  }
  for (int64_t j = 0; j < minor; j++) op[j + 1] += op[j];
  /* next free slot of each group; entries come in major order, so each
   * group's ascend (a stable counting sort) */
  int64_t *next = mq_scratch(S, mq_ck_zmul(S, (size_t)(minor ? minor : 1), sizeof *next, "size"));
  if (minor) memcpy(next, op, (size_t)minor * sizeof *next);
  for (int64_t i = 0; i < major; i++) {
    mq_poll_at(S, i);
    for (int64_t k = ptr[i]; k < ptr[i + 1]; k++) {
      int64_t at = next[mi[k]]++;
      om[at] = i;
      pm[at] = k;
    }
  }
  mq_tensor *vals = mq_index_select(S, t->sparse->values, 0, perm);
  mq_tensor *r = mq_sparse_assemble(S, csr ? MQ_LAYOUT_CSC : MQ_LAYOUT_CSR, 2, t->shape, omi, optr,
                                    vals);
  if (MQ_UNLIKELY(t->requires_grad)) /* values -> picked by perm -> wrapped: recorded */
    return mq_sparse_like(S, r, mq_index_select(S, mq_sparse_values(S, t), 0, perm));
  if (t->mask) {
    mq_tensor *mv = mq_index_select(S, t->mask->sparse->values, 0, perm);
    r = mq_sparse_with_values(S, r, vals, mq_sparse_with_values(S, r, mv, NULL));
  }
  return r;
}

mq_tensor *mq_to_sparse_csc(mq_state *S, mq_tensor *t) {
  if (t->layout == MQ_LAYOUT_CSC) return t;
  mq_sparse_need_2d(S, t, MQ_LAYOUT_CSC);
  return mq_sparse_regroup(S, mq_to_sparse_csr(S, t));
}

mq_tensor *mq_sparse_csc_coo(mq_state *S, mq_tensor *t) {
  MQ_ASSERT(t->layout == MQ_LAYOUT_CSC);
  int64_t nnz = t->sparse->nnz, ishape[2] = {2, nnz};
  mq_tensor *ix = mq_tensor_new(S, MQ_DT_I64, 2, ishape);
  int64_t *p = mq_tensor_data(ix);
  const int64_t *ptr = mq_tensor_data(t->sparse->crow), *row = mq_tensor_data(t->sparse->indices);
  for (int64_t j = 0; j < t->shape[1]; j++) {
    mq_poll_at(S, j);
    for (int64_t k = ptr[j]; k < ptr[j + 1]; k++) {
      p[k] = row[k];
      p[nnz + k] = j;
    }
  }
  /* the values as sparse_coo's argument carry the gradient (its build
   * node); the mask, sorted the same way, masks the result */
  mq_tensor *vals = mq_sparse_values(S, mq_sparse_get_data(S, t));
  mq_tensor *coo = mq_sparse_coo(S, ix, vals, 2, t->shape, -1, "to_sparse_coo");
  if (!t->mask) return coo;
  mq_tensor *m = mq_sparse_coo(S, ix, t->mask->sparse->values, 2, t->shape, -1, "to_sparse_coo");
  return mq_sparse_as_masked(S, coo, m);
}

/* --- ops that run on the flip or the regrouping -------------------------------------- */

mq_tensor *mq_sparse_csc_reduce(mq_state *S, mq_sparse_red op, mq_tensor *t, uint32_t dims,
                                bool keepdim, const char *name) {
  uint32_t tdims = (dims & 1u) << 1 | (dims >> 1 & 1u); /* dim 0 is the transpose's dim 1 */
  mq_tensor *r = mq_sparse_reduce(S, op, mq_sparse_flip(S, t), tdims, keepdim, name);
  return keepdim && r->ndim == 2 ? mq_contiguous(S, mq_transpose(S, r, 0, 1)) : r;
}

mq_tensor *mq_sparse_csc_softmax(mq_state *S, mq_tensor *t, int dim, bool lg, int dt,
                                 const char *name) {
  int d = mq_shape_norm_dim(S, dim, t->ndim);
  return mq_sparse_flip(S, mq_sparse_softmax(S, mq_sparse_flip(S, t), 1 - d, lg, dt, name));
}

mq_list *mq_sparse_csc_merge(mq_state *S, mq_tensor *a, mq_tensor *b, bool both,
                             const char *name) {
  /* on the flips, whose entries are in their dense order; the sizes are
   * checked first, so that a message names them untransposed */
  if (!mq_tensor_same_shape(a, b))
    mq_error(S, "%s: a and b must have the same size, got %s and %s", name,
             mq_shape_str(S, a->ndim, a->shape), mq_shape_str(S, b->ndim, b->shape));
  mq_list *l = mq_sparse_merge(S, mq_sparse_flip(S, a), mq_sparse_flip(S, b), both, name);
  mq_list *r = mq_list_new(S, l->len);
  for (int k = 0; k < l->len; k++)
    mq_list_push(S, r, mq_objv(mq_sparse_flip(S, mq_as_tensor_any(l->items[k]))));
  return r;
}
