/* lib_sparse.c - builtins for sparse layouts: constructors, conversions,
 * accessors, and the dispatch of generic builtins that take sparse input. */
#include <stdio.h>

#include "../core/dict.h"
#include "../runtime/kernels/ops.h"
#include "../runtime/sparse/sparse.h"
#include "stdlib.h"

#define RET(t) return mq_objv(t)

/* A sparse argument (what the accessors of stored entries need). */
static mq_tensor *sparse_arg(mq_state *S, mq_value v, const char *fn, int layout) {
  mq_tensor *t = mq_arg_tensor_any(S, v, "x");
  if (!t->sparse || (layout && t->layout != layout))
    mq_error(S, "%s: x must be a %s tensor, not a %s one", fn,
             layout ? mq_layout_name((mq_layout)layout) : "sparse",
             mq_layout_name((mq_layout)t->layout));
  return t;
}

/* An optional size argument: NULL for none. */
static const int64_t *size_arg(mq_state *S, mq_value v, int64_t *buf, int *ndim) {
  if (v.type == MQ_NONE) return NULL;
  mq_list *l = mq_list_new(S, 1); /* the form of a *shape parameter */
  mq_list_push(S, l, v);
  *ndim = mq_arg_shape(S, mq_objv(l), buf, "size");
  return buf;
}

static int dtype_arg(mq_state *S, mq_value v) {
  return v.type == MQ_NONE ? -1 : (int)mq_arg_dtype(S, v, MQ_DT_F32);
}

/* --- constructors and conversions ------------------------------------------------- */

static mq_value lib_sparse_coo(mq_state *S, mq_value *args) {
  int64_t buf[MQ_MAX_DIMS];
  int nd = 0;
  const int64_t *size = size_arg(S, args[2], buf, &nd);
  RET(mq_sparse_coo(S, mq_arg_tensor(S, args[0], "indices"), mq_arg_tensor(S, args[1], "values"),
                    nd, size, dtype_arg(S, args[3]), "sparse_coo"));
}

/* sparse_csr's and sparse_csc's size: 2 dims. */
static const int64_t *size2_arg(mq_state *S, mq_value v, int64_t *buf, const char *fn,
                                const char *name) {
  int nd = 2;
  const int64_t *size = size_arg(S, v, buf, &nd);
  if (size && nd > 2)
    mq_error(S, "%s: size must have 2 dims, got %d: %s is 2-D in masq (no batched "
                "%s); a batch of sparse matrices is a %d-D sparse_coo tensor (sparse_coo, or "
                "to_sparse_coo(x)), whose sums and softmax take any dim", fn, nd, name, name, nd);
  if (size && nd != 2) mq_error(S, "%s: size must have 2 dims, got %d", fn, nd);
  return size;
}

static mq_value lib_sparse_csr(mq_state *S, mq_value *args) {
  int64_t buf[MQ_MAX_DIMS];
  const int64_t *size = size2_arg(S, args[3], buf, "sparse_csr", "CSR");
  RET(mq_sparse_csr(S, mq_arg_tensor(S, args[0], "crow_indices"),
                    mq_arg_tensor(S, args[1], "col_indices"), mq_arg_tensor(S, args[2], "values"),
                    size, dtype_arg(S, args[4]), "sparse_csr"));
}

/* sparse_csc(ccol_indices, row_indices, values, size, dtype): sparse_csr's
 * arguments by columns */
static mq_value lib_sparse_csc(mq_state *S, mq_value *args) {
  int64_t buf[MQ_MAX_DIMS];
  const int64_t *size = size2_arg(S, args[3], buf, "sparse_csc", "CSC");
  mq_tensor *ccol = mq_arg_tensor(S, args[0], "ccol_indices");
  mq_tensor *row = mq_arg_tensor(S, args[1], "row_indices");
  RET(mq_sparse_csc(S, ccol, row, mq_arg_tensor(S, args[2], "values"), size,
                    dtype_arg(S, args[4]), "sparse_csc"));
}

static mq_value lib_to_sparse_coo(mq_state *S, mq_value *args) {
  RET(mq_to_sparse_coo(S, mq_arg_tensor_any(S, args[0], "x")));
}
static mq_value lib_to_sparse_csr(mq_state *S, mq_value *args) {
  RET(mq_to_sparse_csr(S, mq_arg_tensor_any(S, args[0], "x")));
}
static mq_value lib_to_sparse_csc(mq_state *S, mq_value *args) {
  RET(mq_to_sparse_csc(S, mq_arg_tensor_any(S, args[0], "x")));
}
static mq_value lib_to_dense(mq_state *S, mq_value *args) {
  RET(mq_sparse_to_dense(S, mq_arg_tensor_any(S, args[0], "x")));
}
static mq_value lib_coalesce(mq_state *S, mq_value *args) {
  RET(sparse_arg(S, args[0], "coalesce", MQ_LAYOUT_COO));
}
static mq_value lib_is_coalesced(mq_state *S, mq_value *args) {
  sparse_arg(S, args[0], "is_coalesced", MQ_LAYOUT_COO);
  return mq_bool(true);
}

/* --- accessors ------------------------------------------------------------------------ */

static mq_value lib_layout(mq_state *S, mq_value *args) {
  const char *name = mq_layout_name((mq_layout)mq_arg_tensor_any(S, args[0], "x")->layout);
  RET(mq_string_new(S, name, strlen(name)));
}
static mq_value lib_is_sparse(mq_state *S, mq_value *args) {
  return mq_bool(mq_arg_tensor_any(S, args[0], "x")->layout != MQ_LAYOUT_STRIDED);
}
static mq_value lib_is_sparse_coo(mq_state *S, mq_value *args) {
  return mq_bool(mq_arg_tensor_any(S, args[0], "x")->layout == MQ_LAYOUT_COO);
}
static mq_value lib_is_sparse_csr(mq_state *S, mq_value *args) {
  return mq_bool(mq_arg_tensor_any(S, args[0], "x")->layout == MQ_LAYOUT_CSR);
}
static mq_value lib_indices(mq_state *S, mq_value *args) {
  RET(sparse_arg(S, args[0], "indices", MQ_LAYOUT_COO)->sparse->indices);
}
static mq_value lib_crow_indices(mq_state *S, mq_value *args) {
  RET(sparse_arg(S, args[0], "crow_indices", MQ_LAYOUT_CSR)->sparse->crow);
}
static mq_value lib_col_indices(mq_state *S, mq_value *args) {
  RET(sparse_arg(S, args[0], "col_indices", MQ_LAYOUT_CSR)->sparse->indices);
}
static mq_value lib_ccol_indices(mq_state *S, mq_value *args) {
  RET(sparse_arg(S, args[0], "ccol_indices", MQ_LAYOUT_CSC)->sparse->crow);
}
static mq_value lib_row_indices(mq_state *S, mq_value *args) {
  RET(sparse_arg(S, args[0], "row_indices", MQ_LAYOUT_CSC)->sparse->indices);
}
/* A masked tensor's values come masked by the mask's values; gradients
 * flow back to x. */
static mq_value lib_values(mq_state *S, mq_value *args) {
  if (mq_is_obj(args[0], MQ_O_DICT)) RET(mq_dict_list(S, mq_as_dict(args[0]), MQ_DICT_VALUES));
  RET(mq_sparse_values(S, sparse_arg(S, args[0], "values", 0)));
}
static mq_value lib_nnz(mq_state *S, mq_value *args) {
  return mq_int(sparse_arg(S, args[0], "nnz", 0)->sparse->nnz);
}

/* --- generic builtins on sparse input ------------------------------------------------ */

/* t(x), x.T and transpose(x, 0, 1) of a CSR tensor are the CSC tensor
 * with the same stored arrays, and back (torch's t()), O(1). */
static bool transpose_builtin(mq_state *S, const mq_builtin *b, mq_value *args, mq_tensor *t,
                              mq_value *out) {
  if (t->layout != MQ_LAYOUT_CSR && t->layout != MQ_LAYOUT_CSC) return false;
  if (strcmp(b->name, "transpose") == 0 && b->nparams == 3) {
    int64_t d0 = mq_shape_norm_dim(S, mq_arg_int(S, args[1], "dim0"), 2);
    int64_t d1 = mq_shape_norm_dim(S, mq_arg_int(S, args[2], "dim1"), 2);
    *out = mq_objv(d0 == d1 ? t : mq_sparse_flip(S, t));
    return true;
  }
  if ((strcmp(b->name, "t") != 0 && strcmp(b->name, "T") != 0) || b->nparams != 1) return false;
  *out = mq_objv(mq_sparse_flip(S, t));
  return true;
}

bool mq_sparse_builtin(mq_state *S, const mq_builtin *b, mq_value *args, mq_value *out) {
  if (mq_sparse_ops_builtin(S, b, args, out)) return true;
  mq_tensor *t = mq_as_tensor_any(args[0]);
  if (!t) return false;
  if (transpose_builtin(S, b, args, t, out)) return true;
  int op = mq_builtin_unop(b);
  if (op >= 0) {
    *out = mq_objv(mq_sparse_unary(S, (mq_unop)op, t, b->name));
    return true;
  }
  if (strcmp(b->name, "count") == 0 && b->nparams == 3 && args[1].type == MQ_NONE &&
      !mq_arg_bool(S, args[2], "keepdim")) {
    *out = mq_objv(mq_tensor_scalar_i64(S, mq_sparse_count(S, t)));
    return true;
  }
  return false;
}

const mq_libfn mq_lib_sparse[] = {
    {"sparse_coo(indices, values, size=none, dtype=none)", lib_sparse_coo,
     "a sparse COO tensor: values at the positions in the columns of indices (ndim x nnz); "
     "duplicates are summed; size defaults to the largest index + 1 in each dim"},
    {"sparse_csr(crow_indices, col_indices, values, size=none, dtype=none)", lib_sparse_csr,
     "a 2-D sparse CSR tensor: row r holds values[crow[r]:crow[r+1]] at col_indices"},
    {"sparse_csc(ccol_indices, row_indices, values, size=none, dtype=none)", lib_sparse_csc,
     "a 2-D sparse CSC tensor: column c holds values[ccol[c]:ccol[c+1]] at row_indices"},
    {"to_sparse(x)", lib_to_sparse_coo,
     "x in the sparse_coo layout (a strided x stores its nonzeros, a masked one its valid "
     "entries)"},
    {"to_sparse_coo(x)", lib_to_sparse_coo, "the same as to_sparse(x)"},
    {"to_sparse_csr(x)", lib_to_sparse_csr, "a 2-D x in the sparse_csr layout"},
    {"to_sparse_csc(x)", lib_to_sparse_csc, "a 2-D x in the sparse_csc layout"},
    {"to_dense(x)", lib_to_dense,
     "x in the strided layout (unstored entries 0, masked out if masked)"},
    {"coalesce(x)", lib_coalesce, "x itself: sparse_coo tensors are always coalesced"},
    {"is_coalesced(x)", lib_is_coalesced, "true: sparse_coo tensors are always coalesced"},
    {"layout(x)", lib_layout, "\"strided\", \"sparse_coo\", \"sparse_csr\" or \"sparse_csc\""},
    {"is_sparse(x)", lib_is_sparse, "true for the sparse_coo, sparse_csr and sparse_csc layouts"},
    {"is_sparse_coo(x)", lib_is_sparse_coo, "true for the sparse_coo layout"},
    {"is_sparse_csr(x)", lib_is_sparse_csr, "true for the sparse_csr layout"},
    {"indices(x)", lib_indices, "the indices (ndim x nnz, int64) of a sparse_coo tensor"},
    {"crow_indices(x)", lib_crow_indices, "the row pointers (rows + 1) of a sparse_csr tensor"},
    {"col_indices(x)", lib_col_indices, "the column of each stored entry of a sparse_csr tensor"},
    {"ccol_indices(x)", lib_ccol_indices,
     "the column pointers (columns + 1) of a sparse_csc tensor"},
    {"row_indices(x)", lib_row_indices, "the row of each stored entry of a sparse_csc tensor"},
    {"values(x)", lib_values,
     "the stored values of a sparse tensor (masked if x is); of a dict: a new list of its values"},
    {"nnz(x)", lib_nnz, "the number of stored entries of a sparse tensor (count(x): valid ones)"},
    {NULL, NULL, NULL},
};
