/* pick.h - cross_entropy's and nll_loss's pick of each position's target
 * class out of the log-probabilities, as one op (and one autograd node,
 * MQ_AG_PICK, whose derivative is autograd/backward_pick.c).
 *
 * Op by op the pick is a one-hot comparison against every class, a where
 * and a sum along the class dim: three passes over the (positions x
 * classes) scores forward and two more backward, each with a temporary of
 * that size. This reads one entry per position and writes one. */
#ifndef MQ_NN_PICK_H
#define MQ_NN_PICK_H

#include "../tensor/tensor.h"

/* p[i] = x at class t[i] along [dim] for every position i (x's shape
 * without dim), of x's dtype: the bits sum(where(t == classes, x, 0), dim)
 * gives (x[c] + 0, so -0 becomes +0), and +0 where t[i] is no class of
 * [0, C) (ignore_index, or a masked-out target's data). x: plain float32 or
 * float64, or bool (a mask: any(t == classes & x, dim)); t: plain int64.
 * Records the node when x requires grad. NULL when these operands are not
 * taken (another dtype, a mask on x or t): the caller then picks op by op. */
MQ_INTERNAL mq_tensor *mq_nn_pick(mq_state *S, mq_tensor *x, mq_tensor *t, int dim);

#endif
