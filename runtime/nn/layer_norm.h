/* layer_norm.h - layer_norm as one fused kernel, forward and backward.
 *
 * Op by op (nn.c's composition) layer_norm is nine passes over the input
 * and as many autograd nodes, whose backward runs in float64 on fresh
 * temporaries. Here the forward is one pass per row (the row stays in
 * L1 between its three sweeps) and records ONE node (MQ_AG_LAYER_NORM),
 * whose backward (autograd/layer_norm_bwd.c) gives dx, dweight and dbias
 * in one more pass per row.
 *
 * What it computes, per row of C entries (the last nd dims), over its
 * valid entries (all of them when x is plain), N of them:
 *
 *   mean = sum(x) / N, var = sum((x - mean)^2) / N (two passes over the row,
 *   no cancellation), rstd = 1 / sqrt(var + eps), all in double: each sum
 *   in 8 lanes (entry j into lane j % 8) combined in a fixed order, so the
 *   compiler vectorizes it and the result is the same on every path and
 *   for every thread count (a row is one thread's); y = (x - mean) rstd w + b
 *   in double, rounded once to x's dtype. Sums in double because a float32
 *   row of 1024 summed in float32 loses ~10 bits to rounding (torch's
 *   float32 layer_norm does that); the loads are float32 and the arithmetic
 *   is register-bound, so double costs nothing measurable. A row with no
 *   valid entry has mean and var 0 (its result is masked out): nn.c's.
 *
 * The backward, with g the gradient of y (g-valid: where it flowed), over
 * each row's entries valid in x: xhat = (x - mean) rstd, gw = g w where g
 * is valid (else 0), a = sum(gw) / N, c = sum(gw xhat) / N (8 lanes as
 * above), dx = rstd (gw - a - xhat c); dweight = sum over rows of g xhat,
 * dbias = sum of g (entries valid in both), each summed in double per
 * block of rows (a number of rows fixed by C alone) and the blocks added in
 * order: the same bits at any thread count. The masks are op by op's,
 * when x or g is masked: dx is valid where x is, in the rows some valid
 * entry of g reached; dweight and dbias in the columns some entry valid in
 * both reached. */
#ifndef MQ_LAYER_NORM_H
#define MQ_LAYER_NORM_H

#include "../tensor/tensor.h"

/* layer_norm over the last [nd] dims, fused, recording the node when
 * gradients are recorded; NULL when the fused kernel does not take these
 * operands (nothing was done): x float32 or float64 and strided, w and b
 * (NULL: none) of x's dtype. The caller has checked the shapes. */
MQ_INTERNAL mq_tensor *mq_nn_layer_norm_fused(mq_state *S, mq_tensor *x, int nd, mq_tensor *w,
                                              mq_tensor *b, double eps);

/* The backward's arithmetic on contiguous arrays of x's dtype [dt] (rows
 * of C entries): x, its mask xm (NULL: plain), g and its mask gm, w (NULL:
 * ones), st (mean and rstd per row, the forward's). Writes dx (NULL: not
 * wanted; its masked-out entries 0) with its mask dxm (when x or g is
 * masked), and dw, db (NULL: not wanted; in double),
 * with wm (when not NULL) 1 where a valid entry reached the column. */
typedef struct mq_ln_grad {
  int dt;
  int64_t rows, C;
  const void *x, *g, *w;
  const uint8_t *xm, *gm;
  const double *st;
  void *dx;
  uint8_t *dxm; /* dx's mask, when x or g is masked */
  /* each row of x's and g's masks all valid, all masked out or mixed
   * (mq_ms_state, runtime/tensor/masksum.h), or NULL: a row x masks out
   * gets dx 0 masked out without a pass; one valid in both is read as
   * plain rows (the same bits) */
  const uint8_t *xrst, *grst;
  double *dw, *db;
  uint8_t *wm;
} mq_ln_grad;
MQ_INTERNAL void mq_nn_layer_norm_grad(mq_state *S, const mq_ln_grad *J);

#endif
