/* iter.h - walking several same-shaped tensors row by row.
 *
 * Kernels are written as "for every row: a typed inner loop". The iterator
 * merges dims that are contiguous for every operand at once and drops size-1
 * dims, so a contiguous (or row-broadcast) operation becomes one long row and
 * the inner loop is a plain `for (i..n) o[i] = f(a[i], b[i])` that the
 * compiler vectorizes. Pointer bookkeeping happens once per row, never per
 * element. Operands may have different dtypes (a bool output with float
 * inputs), so pointers move by byte strides. */
#ifndef MQ_ITER_H
#define MQ_ITER_H

#include "tensor.h"

#define MQ_ITER_MAXOPS 4

typedef struct mq_iter {
  int nops, nd;   /* nd >= 1 after merging */
  int64_t n;      /* length of the inner row */
  int64_t rows;   /* number of rows (0 when the tensors are empty) */
  int64_t is[MQ_ITER_MAXOPS]; /* inner strides, in elements */
  int64_t es[MQ_ITER_MAXOPS]; /* element sizes, in bytes */
  char *p[MQ_ITER_MAXOPS];    /* start of the current row of each operand */
  /* outer dims (all but the inner one), innermost last */
  int64_t shape[MQ_MAX_DIMS];
  int64_t bst[MQ_ITER_MAXOPS][MQ_MAX_DIMS]; /* byte strides */
  int64_t idx[MQ_MAX_DIMS];
} mq_iter;

/* Sets up a walk over [nops] tensors of identical shape (broadcast them
 * first with mq_expand). */
MQ_INTERNAL void mq_iter_init(mq_iter *it, int nops, mq_tensor *const *ts);

/* The part of the walk [it] (fresh from mq_iter_init) that covers items
 * [lo, hi): elements of its one row when it has one row, else rows. */
MQ_INTERNAL void mq_iter_part(const mq_iter *it, int64_t lo, int64_t hi, mq_iter *part);

/* Moves the row pointers to the next row. */
static inline void mq_iter_next(mq_iter *it) {
  for (int d = it->nd - 2; d >= 0; d--) {
    if (++it->idx[d] < it->shape[d]) {
      for (int k = 0; k < it->nops; k++) it->p[k] += it->bst[k][d];
      return;
    }
    it->idx[d] = 0;
    for (int k = 0; k < it->nops; k++) it->p[k] -= it->bst[k][d] * (it->shape[d] - 1);
  }
}

#endif
