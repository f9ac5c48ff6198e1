/* reduce.h - the machinery reductions share (reduce.c, stats.c).
 *
 * A reduction folds the contiguous data of its input into one accumulator
 * slot per output element. The dims are merged into alternating blocks of
 * kept (K) and reduced (R) dims; if the last block is R, each contiguous row
 * folds into one slot (row); if it is K, each row folds elementwise into a
 * row of slots (acc_row), so outer-dim reductions never gather. */
#ifndef MQ_REDUCE_H
#define MQ_REDUCE_H

#include "kernels.h"

/* One (op, input dtype) pair. acc points at the slots (acc_size bytes
 * each); [m] is the row's mask, NULL for plain input (tested once per
 * row, not per element). */
typedef struct mq_red_kernel {
  size_t acc_size;
  void (*row)(void *acc, int64_t o, const void *x, const uint8_t *m, int64_t n);
  void (*acc_row)(void *acc, const void *x, const uint8_t *m, int64_t n);
} mq_red_kernel;

typedef struct mq_red_plan {
  mq_tensor *t;          /* the input */
  const char *x;         /* its data, contiguous, in the dtype read */
  size_t es;             /* the size of one element of x */
  const uint8_t *m;      /* its mask, contiguous, or NULL */
  int ond;               /* the output's shape */
  int64_t oshape[MQ_MAX_DIMS];
  int64_t on, R;         /* output elements; input elements per output */
  int nb;                /* merged blocks, size-1 dims dropped */
  int64_t bsize[MQ_MAX_DIMS];
  bool bred[MQ_MAX_DIMS];
} mq_red_plan;

/* Plans reducing [t] (read as dtype [dt]) over [dims] ([ndims] of them,
 * normalized; 0 = all). [name] is for messages. */
MQ_INTERNAL void mq_red_plan_init(mq_state *S, mq_red_plan *P, const char *name, mq_tensor *t,
                                  mq_dtype dt, int ndims, const int *dims, bool keepdim);
/* Folds the input into [acc] (already holding the identity). */
MQ_INTERNAL void mq_red_fold(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc);
/* Valid entries per output slot (scratch), or NULL for a plain input. */
MQ_INTERNAL int64_t *mq_red_counts(mq_state *S, const mq_red_plan *P);
/* Gives [out] the mask "count > 0" when the input was masked. */
MQ_INTERNAL void mq_red_set_mask(mq_state *S, const mq_red_plan *P, mq_tensor *out,
                                 const int64_t *count);
/* Scratch for [P->on] slots of [size] bytes (at least one slot). */
MQ_INTERNAL void *mq_red_acc(mq_state *S, const mq_red_plan *P, size_t size);

/* Sums, in double, of x*x and of |x| for a float dtype (the norms). */
MQ_INTERNAL const mq_red_kernel *mq_red_sumsq(mq_dtype dt);
MQ_INTERNAL const mq_red_kernel *mq_red_sumabs(mq_dtype dt);

#endif
