/* iter.h - walking several same-shaped tensors row by row, and running a
 * typed kernel over such a walk, on threads when it is long.
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

#include "internal.h"

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

/* [t]'s mask broadcast to [shape] (contiguous bytes), or NULL if plain. */
MQ_INTERNAL const uint8_t *mq_mask_bytes_to(mq_state *S, mq_tensor *t, int nd, const int64_t *shape);
/* For every position of [shape] in row-major order, the offset
 * sum(index[d] * strides[d]), in scratch memory. */
MQ_INTERNAL int64_t *mq_iter_offsets(mq_state *S, int nd, const int64_t *shape,
                                     const int64_t *strides);

/* Counts a row of [n] elements toward the next poll of S for interrupts,
 * every MQ_POLL_ELEMS elements (never when S is NULL: a worker thread, see
 * mq_ewise_run). A function rather than part of ROWS_BEGIN: one check,
 * not one per kernel that the macros instantiate (hundreds), which would
 * each need a test on threads and past MQ_POLL_ELEMS to be seen taking
 * both ways. Inlined, it costs what the macro's own test did. */
static inline void mq_rows_poll(mq_state *S, int64_t *polled, int64_t n) {
  if (S && (*polled += n) >= MQ_POLL_ELEMS) {
    *polled = 0;
    mq_check_interrupt(S);
  }
}

/* Walks the rows of an iterator, polling S for interrupts now and then. */
#define ROWS_BEGIN(S, it)                                                      \
  {                                                                            \
    int64_t polled_ = 0;                                                       \
    for (int64_t r_ = 0; r_ < (it)->rows; r_++, mq_iter_next(it)) {            \
      mq_rows_poll(S, &polled_, (it)->n);
#define ROWS_END                                                               \
  }                                                                            \
  }

/* A typed elementwise kernel. [prm] holds the op's scalar parameters
 * (clamp bounds, rounding digits, ...); kernels without any ignore it.
 * S is NULL on a worker thread: a kernel uses it only to poll. */
typedef void (*mq_ewise_fn)(mq_state *S, mq_iter *it, const double *prm);

/* Runs kernel [k] over the walk [it] (fresh from mq_iter_init): on the
 * calling thread, or for a million elements or more split by elements
 * (one row) or rows among the state's threads (runtime/tensor/parallel.h). Each
 * element's result is the same either way. */
MQ_INTERNAL void mq_ewise_run(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm);

/* An operand's kind for mq_ewise_run_half: stored as it is given to the
 * kernel, or float16 or bfloat16 bits the kernel sees as float32. */
enum { MQ_HALF_NONE, MQ_HALF_F16, MQ_HALF_BF16 };

/* Runs float32 kernel [k] over [it] whose operand i is stored as half[i]
 * says: block by block (in L1), a half operand is widened to float32, the
 * kernel runs, and a half output is rounded back, so a half op reads and
 * writes its half tensors once, with no float32 copies of them. The bits
 * of widening the operands, running [k], and narrowing its result, on any
 * thread count and CPU path. Only for kernels whose element i depends on
 * element i of the operands alone (every elementwise kernel). */
MQ_INTERNAL void mq_ewise_run_half(mq_state *S, mq_ewise_fn k, mq_iter *it, const double *prm,
                                   const uint8_t *half);

#endif
