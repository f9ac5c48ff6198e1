/* sparse.h - sparse layouts: COO (any ndim), CSR and CSC (2-D) tensors.
 *
 * Design.
 *
 * A sparse tensor is an ordinary struct mq_tensor (tensor.h) whose [layout]
 * is MQ_LAYOUT_COO or MQ_LAYOUT_CSR and whose [sparse] points at the stored
 * entries (layout.h: a tensor frees them with itself). dtype, ndim, shape and numel describe the logical (dense) tensor,
 * exactly as for a strided one, so metadata code reads them unchanged;
 * storage is NULL, strides and offset are zero: there is no dense buffer
 * and nothing may index one.
 *
 * Its object header says MQ_O_SPARSE, not MQ_O_TENSOR, so mq_is_tensor() is
 * false for it: code written for strided tensors (every kernel, the VM's
 * operators, mq_tensor_from_value) never receives one by accident. The one
 * choke point, mq_tensor_from_value (which mq_arg_tensor and every operand
 * conversion go through), refuses it with a located message naming the
 * layout and the way out (to_dense). Code that knows sparse tensors asks
 * mq_is_sparse() and takes them through mq_as_tensor_any().
 *
 * The stored entries (struct mq_sparse):
 *   COO: indices int64 (ndim, nnz), values (nnz). Always coalesced: the
 *        columns of indices are in row-major order of the positions they
 *        name, with no position twice (duplicates are summed on the way in,
 *        as torch's coalesce()). So an entry's rank in [values] is its rank
 *        in the dense order, and two tensors with equal indices line up
 *        entry by entry.
 *   CSR: crow int64 (rows + 1), indices = col_indices int64 (nnz), values
 *        (nnz). Columns ascend within each row and are distinct (scipy's
 *        canonical format), which again makes the order the dense order.
 *   CSC: the CSR of the transpose: crow = ccol_indices (columns + 1),
 *        indices = row_indices, values in column order (not the dense
 *        order: mq_sparse_keys gives a CSC tensor's positions in its stored
 *        order; what needs the dense order regroups it, sparse_csc.c).
 * The index tensors and [values] are plain, contiguous and strided; index
 * tensors are never modified once built, so tensors with the same sparsity
 * structure share them (a masked sparse tensor and its mask do, and so does
 * the result of an op on values).
 *
 * Masks. A masked sparse tensor's [mask] is a sparse bool tensor of the
 * same layout sharing the same index tensors; its values say which stored
 * entries are valid. Unstored entries are masked out: torch's rule (an
 * unstored position of a sparse mask is False) and GraphBLAS's structural
 * mask when the mask is the tensor itself (masked(x)). A plain sparse
 * tensor is all valid, its unstored entries zeros.
 *
 * What this layout is built for (memory O(nnz + rows), never O(numel)):
 *   - unary and binary ops on values: an op maps [values] (a strided 1-D
 *     tensor, so every strided kernel applies) and shares the indices;
 *     binary ops between tensors with equal index tensors (pointer-equal
 *     or equal contents) do the same on both values; mq_sparse_with_values
 *     makes the result.
 *   - reductions along dims: COO's sorted indices give each output slot a
 *     run of entries for the leading dims; CSR's crow gives per-row runs.
 *   - softmax along any dim: CSR rows are values[crow[r]:crow[r+1]]; other
 *     dims group entries by a stable sort of their other coordinates.
 *   - SpMM (CSR x dense) walks rows; SDDMM computes only at the stored
 *     positions of a CSR/COO pattern and returns mq_sparse_with_values.
 *   - sparse gradients: a gradient of a sparse input is a sparse tensor
 *     with the input's structure (same index tensors), so accumulation is
 *     an add on values. Ops on values record values -> strided op -> wrap
 *     (mq_sparse_values and mq_sparse_like carry the nodes); the other
 *     ops record their own kinds (autograd.h MQ_AG_SP_*), derived in
 *     backward_sparse.c.
 * Hybrid tensors (dense trailing dims in values) and batched CSR would add
 * dims to [values] and [crow]; nothing here assumes they cannot.
 */
#ifndef MQ_SPARSE_H
#define MQ_SPARSE_H

#include "../tensor/layout.h"
#include "../kernels/ops.h"


/* --- construction (validating every input; errors prefixed by [who]) ----- */

/* COO from int indices (ndim, nnz) and values (nnz); [shape] NULL infers
 * each size as the largest index + 1. Duplicates are summed. [dt] < 0 keeps
 * the values' dtype. Values that require grad get each its entry's
 * gradient (the stored values are a plain copy). */
MQ_INTERNAL mq_tensor *mq_sparse_coo(mq_state *S, mq_tensor *indices, mq_tensor *values,
                                     int ndim, const int64_t *shape, int dt, const char *who);
/* CSR from crow (rows + 1), col (nnz), values (nnz) and a 2-D shape (NULL:
 * rows from crow, columns the largest column + 1). Unsorted rows are sorted
 * and duplicates summed. */
MQ_INTERNAL mq_tensor *mq_sparse_csr(mq_state *S, mq_tensor *crow, mq_tensor *col,
                                     mq_tensor *values, const int64_t *shape, int dt,
                                     const char *who);
/* CSC from ccol (columns + 1), row (nnz), values (nnz) and a 2-D shape
 * (NULL: columns from ccol, rows the largest row + 1): the same checks and
 * repairs as CSR's, in the transpose's terms. */
MQ_INTERNAL mq_tensor *mq_sparse_csc(mq_state *S, mq_tensor *ccol, mq_tensor *row,
                                     mq_tensor *values, const int64_t *shape, int dt,
                                     const char *who);
/* A sparse tensor from parts already known to be valid (the caller checked
 * or built them); the pool owns it. */
MQ_INTERNAL mq_tensor *mq_sparse_assemble(mq_state *S, mq_layout layout, int ndim,
                                          const int64_t *shape, mq_tensor *indices,
                                          mq_tensor *crow, mq_tensor *values);
/* A tensor with [t]'s layout and index tensors (shared) and new [values]
 * (plain, nnz entries, any dtype); [mask]: NULL or a sparse bool tensor of
 * the same structure. */
MQ_INTERNAL mq_tensor *mq_sparse_with_values(mq_state *S, const mq_tensor *t, mq_tensor *values,
                                             mq_tensor *mask);

/* --- conversions ----------------------------------------------------------------- */

/* To COO: a strided plain tensor stores its nonzeros; a strided masked one
 * its valid entries (data kept even if zero), masked by a structural mask;
 * CSR converts; COO returns itself. */
MQ_INTERNAL mq_tensor *mq_to_sparse_coo(mq_state *S, mq_tensor *t);
/* The same to CSR, 2-D only. */
MQ_INTERNAL mq_tensor *mq_to_sparse_csr(mq_state *S, mq_tensor *t);
/* The error of to_sparse_csr/to_sparse_csc ([to]) for a [t] that is not 2-D. */
MQ_INTERNAL void mq_sparse_need_2d(mq_state *S, const mq_tensor *t, mq_layout to);
/* The same to CSC (sparse_csc.c). */
MQ_INTERNAL mq_tensor *mq_to_sparse_csc(mq_state *S, mq_tensor *t);
/* To strided: unstored entries are 0 (and masked out); a strided tensor is
 * returned as is. The caller asked for it, so any size goes up to
 * MQ_SPARSE_DENSE_MAX bytes (data and mask), a located error beyond. */
#define MQ_SPARSE_DENSE_MAX ((uint64_t)1 << 40)
MQ_INTERNAL mq_tensor *mq_sparse_to_dense(mq_state *S, mq_tensor *t);

/* --- masks ----------------------------------------------------------------------- */

/* masked(data, mask) for sparse operands: both sparse of the same layout
 * and shape. A mask storing other positions than data reads data on the
 * mask's (torch's _where(mask, data, 0): a valid 0 where data stores
 * nothing), so the result always has the mask's structure. [mask] NULL:
 * the structural mask (every stored entry valid). */
MQ_INTERNAL mq_tensor *mq_sparse_masked(mq_state *S, mq_tensor *data, mq_tensor *mask);
/* The same, differentiable w.r.t. data (as_masked): each entry read from
 * data passes its gradient back, within the mask. */
MQ_INTERNAL mq_tensor *mq_sparse_as_masked(mq_state *S, mq_tensor *data, mq_tensor *mask);
/* torch.masked's mask= on a sparse input (_input_mask, then _where(mask, x,
 * 0)): a plain sparse [x] under [mask] of any layout and dtype (nonzero is
 * true), broadcast to x's size. The result has
 * x's layout and stores exactly the mask's true positions, all valid: x's
 * value where x stores one, a valid 0 where it does not. Whatever the mask
 * leaves out is unstored, so masked out. The gradient reaches x's values.
 * [who] prefixes errors. */
MQ_INTERNAL mq_tensor *mq_sparse_where(mq_state *S, mq_tensor *x, mq_tensor *mask,
                                       const char *who);
MQ_INTERNAL mq_tensor *mq_sparse_get_data(mq_state *S, mq_tensor *t);
/* The mask as a sparse bool tensor (for a plain sparse tensor: stored
 * entries true; torch's get_mask of a sparse MT is sparse too). */
MQ_INTERNAL mq_tensor *mq_sparse_get_mask(mq_state *S, mq_tensor *t);
/* The number of valid entries: all numel of a plain tensor, the true
 * stored mask values of a masked one. */
MQ_INTERNAL int64_t mq_sparse_count(mq_state *S, const mq_tensor *t);

/* --- ops on values ----------------------------------------------------------------- */

/* A unary op on the stored values, O(nnz). A plain sparse tensor only
 * takes ops that map 0 to 0 (its unstored entries are zeros); a masked one
 * takes any (unstored entries are masked out). */
MQ_INTERNAL mq_tensor *mq_sparse_unary(mq_state *S, mq_unop op, mq_tensor *t, const char *name);
/* [t] with its values converted to [dt] (every dtype's zero converts to zero). */
MQ_INTERNAL mq_tensor *mq_sparse_astype(mq_state *S, mq_tensor *t, mq_dtype dt);

/* --- structure (for the ops of sparse_ops.c, sparse_reduce.c, sparse_matmul.c) ------ */

/* The dense (row-major) position of each stored entry, ascending (CSC: in
 * its stored, column order); scratch. */
MQ_INTERNAL int64_t *mq_sparse_keys(mq_state *S, const mq_tensor *t);
/* Same layout, shape and stored positions (shared or equal index tensors). */
MQ_INTERNAL bool mq_sparse_same_structure(const mq_tensor *a, const mq_tensor *b);
/* A plain sparse tensor of [like]'s layout and shape storing [values] (n)
 * at the ascending dense positions [keys]. */
MQ_INTERNAL mq_tensor *mq_sparse_of_keys(mq_state *S, const mq_tensor *like, const int64_t *keys,
                                         int64_t n, mq_tensor *values);

/* --- binary ops (sparse_ops.c) --------------------------------------------------- */

/* [t]'s stored values as a 1-D strided tensor, masked by its mask's values;
 * differentiable (a new tensor with a node when t requires grad). */
MQ_INTERNAL mq_tensor *mq_sparse_values(mq_state *S, const mq_tensor *t);
/* A sparse tensor of [like]'s structure from the 1-D result [r] of an op on
 * stored values (r's mask, if any, becomes the sparse mask); when r
 * requires grad the result records it (its stored values stay plain). */
MQ_INTERNAL mq_tensor *mq_sparse_like(mq_state *S, const mq_tensor *like, mq_tensor *r);
/* a op b where a or b is sparse and the other sparse of the same structure,
 * dense (read at the stored positions; it may not broadcast the sparse
 * one) or 0-d. A plain sparse operand stays sparse only under ops that
 * keep its unstored zeros zero; plus and minus with a dense tensor give a
 * strided result. [name] prefixes errors. */
MQ_INTERNAL mq_tensor *mq_sparse_binary(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b,
                                        const char *name);
/* The same with a dying operand (mq_binary_spare): a dense left operand of
 * add or sub with a plain sparse one takes the result in place, O(nnz). */
MQ_INTERNAL mq_tensor *mq_sparse_binary_spare(mq_state *S, mq_binop op, mq_tensor *a,
                                              mq_tensor *b, const char *name, mq_tensor *spare);
/* [a', b'] on one structure: the positions stored in both ([both]: torch's
 * intersection, valid where valid in both), or in either (a position one
 * lacks holds 0: valid in a plain tensor, masked out in a masked one). */
MQ_INTERNAL mq_list *mq_sparse_merge(mq_state *S, mq_tensor *a, mq_tensor *b, bool both,
                                     const char *name);

/* --- reductions (sparse_reduce.c) ------------------------------------- */

typedef enum mq_sparse_red {
  MQ_SRED_SUM, MQ_SRED_MEAN, MQ_SRED_AMAX, MQ_SRED_AMIN, MQ_SRED_PROD, MQ_SRED_COUNT
} mq_sparse_red;
/* "sum", "mean", ... for messages ("reduction" for no such op). */
MQ_INTERNAL const char *mq_sparse_red_name(int op);
/* The reduction over the dims set in [dims] (bit d: dim d), as a strided
 * tensor of the remaining dims (kept as 1 with [keepdim]); a masked [t]
 * gives a masked result, out where a slice has no valid entry. A plain
 * [t]'s unstored entries are zeros and count. O(nnz + result). */
MQ_INTERNAL mq_tensor *mq_sparse_reduce(mq_state *S, mq_sparse_red op, mq_tensor *t,
                                        uint32_t dims, bool keepdim, const char *name);
/* --- softmax (sparse_softmax.c) ------------------------------------------------------ */

/* The stored entries of [t] grouped by their coordinates other than [dim]
 * (normalized): group i is entries order[start[i]] .. order[start[i+1]-1]
 * (order NULL: the entry numbers themselves), each group's in ascending
 * order along dim. Scratch; O(nnz) when the groups are runs as stored (CSR
 * rows, COO's last dim), else O(nnz log nnz). */
typedef struct mq_sparse_groups {
  const int64_t *order;
  const int64_t *start; /* n + 1 */
  int64_t n;
} mq_sparse_groups;
MQ_INTERNAL void mq_sparse_group(mq_state *S, const mq_tensor *t, int dim, mq_sparse_groups *g);
/* softmax / log_softmax of a masked sparse [t] along any [dim], over the
 * valid entries of each group; the result has [t]'s structure and mask.
 * [dt] < 0: t's float dtype. */
MQ_INTERNAL mq_tensor *mq_sparse_softmax(mq_state *S, mq_tensor *t, int dim, bool lg, int dt,
                                         const char *name);

/* --- products (sparse_matmul.c) ---------------------------------------------------- */

/* a @ b with a sparse 2-D and b strided 1-D or 2-D (SpMM): a strided result;
 * masked-out entries contribute nothing and an output with no valid pair is
 * masked out, as for strided matmul. */
MQ_INTERNAL mq_tensor *mq_sparse_matmul(mq_state *S, mq_tensor *a, mq_tensor *b);
/* Which operand of a recorded SP_MATMUL is sparse (its node's op). */
enum { MQ_SPMM_SPARSE_LEFT = 0, MQ_SPMM_SPARSE_RIGHT = 1 };
/* C<M> = a @ b (SDDMM): a (m, k) and b (k, n) strided and plain, computed only
 * at the stored entries of the sparse (m, n) [mask]; the result has mask's
 * structure, masked by its valid entries (a bool mask's true values, else
 * every stored entry). */
MQ_INTERNAL mq_tensor *mq_sparse_masked_matmul(mq_state *S, mq_tensor *a, mq_tensor *b,
                                               mq_tensor *mask);

/* --- CSC (sparse_csc.c): the CSR of the transpose ------------------------------- */

/* A CSR tensor in CSC or a CSC one in CSR, same logical tensor: entries
 * regrouped by their other index (stable counting sort, O(nnz + m + n)),
 * with its mask; the gradient follows each entry. */
MQ_INTERNAL mq_tensor *mq_sparse_regroup(mq_state *S, mq_tensor *t);
/* A CSC (m, n) tensor as the CSR (n, m) tensor of its transpose, or back:
 * the same index tensors, values and mask, O(1); torch's t() of either. */
MQ_INTERNAL mq_tensor *mq_sparse_flip(mq_state *S, mq_tensor *t);
/* A CSC tensor in COO, without its CSR form (a tall matrix's rows + 1
 * pointers): its (row, column) pairs put in the dense order by sparse_coo's
 * sort, O(nnz log nnz + columns); each entry's value, mask and gradient
 * follow it. */
MQ_INTERNAL mq_tensor *mq_sparse_csc_coo(mq_state *S, mq_tensor *t);
/* mq_sparse_reduce, mq_sparse_softmax and mq_sparse_merge of CSC input,
 * on its flip. */
MQ_INTERNAL mq_tensor *mq_sparse_csc_reduce(mq_state *S, mq_sparse_red op, mq_tensor *t,
                                            uint32_t dims, bool keepdim, const char *name);
MQ_INTERNAL mq_tensor *mq_sparse_csc_softmax(mq_state *S, mq_tensor *t, int dim, bool lg, int dt,
                                             const char *name);
MQ_INTERNAL mq_list *mq_sparse_csc_merge(mq_state *S, mq_tensor *a, mq_tensor *b, bool both,
                                         const char *name);

/* --- selection (sparse_index.c) ---------------------------------------------------- */

/* x[items] (tensor.h's items; one 1-D int tensor item at most), select,
 * narrow and index_select (a plain 1-D integer index; a negative entry
 * counts from the end, as in torch's sparse index_select): the stored
 * entries that are selected, with their mask and gradient. A result with
 * no dim is a strided 0-d tensor, a 1-D result of CSR or CSC is COO (as
 * torch), a 2-D one keeps the layout, more dims are COO. */
MQ_INTERNAL mq_tensor *mq_sparse_index(mq_state *S, mq_tensor *t, const mq_index_item *items,
                                       int n);
MQ_INTERNAL mq_tensor *mq_sparse_select(mq_state *S, mq_tensor *t, int64_t dim, int64_t index);
MQ_INTERNAL mq_tensor *mq_sparse_narrow(mq_state *S, mq_tensor *t, int64_t dim, int64_t start,
                                        int64_t length);
MQ_INTERNAL mq_tensor *mq_sparse_index_select(mq_state *S, mq_tensor *t, int64_t dim,
                                              mq_tensor *index);

/* --- printing ---------------------------------------------------------------------- */

#endif
