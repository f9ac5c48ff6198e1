/* layout.h - a tensor's layout: strided (a storage with strides), or one
 * of the sparse layouts whose stored entries (struct mq_sparse) a tensor
 * holds and frees with itself (tensor.c). What builds sparse tensors and
 * computes with them is sparse.h's; this is what every tensor must know
 * about them. */
#ifndef MQ_LAYOUT_H
#define MQ_LAYOUT_H

#include "tensor.h"

/* CSC is stored as the CSR of the transpose: crow holds ccol_indices
 * (columns + 1), indices the row_indices, values in column order. */
typedef enum mq_layout { MQ_LAYOUT_STRIDED, MQ_LAYOUT_COO, MQ_LAYOUT_CSR, MQ_LAYOUT_CSC } mq_layout;

typedef struct mq_sparse {
  mq_tensor *indices; /* COO: int64 (ndim, nnz); CSR: col_indices, CSC: row_indices (nnz) */
  mq_tensor *crow;    /* CSR: int64 (rows + 1); CSC: ccol (columns + 1); NULL for COO */
  mq_tensor *values;  /* (nnz), the tensor's dtype, plain, contiguous */
  int64_t nnz;
} mq_sparse;

/* "strided", "sparse_coo", "sparse_csr", "sparse_csc". */
MQ_INTERNAL const char *mq_layout_name(mq_layout l);

static inline bool mq_is_sparse(mq_value v) { return mq_is_obj(v, MQ_O_SPARSE); }
/* A strided or sparse tensor value as the struct both use (NULL otherwise). */
static inline mq_tensor *mq_as_tensor_any(mq_value v) {
  return mq_is_tensor(v) || mq_is_sparse(v) ? (mq_tensor *)v.as.o : NULL;
}

/* The error strided-only code raises for a sparse operand [what]. */
MQ_INTERNAL MQ_NORETURN void mq_sparse_refuse(mq_state *S, const mq_tensor *t, const char *what);

#endif
