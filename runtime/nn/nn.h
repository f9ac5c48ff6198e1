/* nn.h - losses, layer_norm and dropout (torch.nn.functional's) over masked
 * tensors, and the optimizer steps (optim.c).
 *
 * The losses are compositions of differentiable ops, so gradients flow to
 * every float operand. A masked-out entry of the input or of the target (or
 * a class target equal to ignore_index) is left out: out of the sum and of
 * the mean's count, as torch's ignore_index. Their reduced result is masked
 * out when nothing is valid (never NaN); with plain operands and nothing
 * ignored, every result is plain, as torch's. */
#ifndef MQ_NN_H
#define MQ_NN_H

#include "../tensor/tensor.h"

typedef enum mq_nn_reduction { MQ_NN_NONE, MQ_NN_MEAN, MQ_NN_SUM } mq_nn_reduction;

/* (x - t)**2; x and t of one shape. */
MQ_INTERNAL mq_tensor *mq_nn_mse_loss(mq_state *S, mq_tensor *x, mq_tensor *t, mq_nn_reduction r);
/* |x - t|; as mse_loss. */
MQ_INTERNAL mq_tensor *mq_nn_l1_loss(mq_state *S, mq_tensor *x, mq_tensor *t, mq_nn_reduction r);
/* -(t log x + (1 - t) log(1 - x)), each log at least -100 (torch's clamp);
 * valid entries of x must lie in [0, 1]. */
MQ_INTERNAL mq_tensor *mq_nn_bce(mq_state *S, mq_tensor *x, mq_tensor *t, mq_nn_reduction r);
/* The same of sigmoid(x), computed stably from the logits x. */
/* [pos_weight] (NULL: none) multiplies the positive term, broadcast
 * against x (one per class of the last dim), as torch's. */
MQ_INTERNAL mq_tensor *mq_nn_bce_logits(mq_state *S, mq_tensor *x, mq_tensor *t,
                                        mq_tensor *pos_weight, mq_nn_reduction r);
/* torch's weight= of the BCE losses: [loss], an unreduced loss of the
 * input's shape, times [w] (plain, float, broadcasting to that shape),
 * then reduced by r: the mean stays over the valid entries, not the
 * weights (torch's). [who] names the loss in errors. */
MQ_INTERNAL mq_tensor *mq_nn_scaled(mq_state *S, const char *who, mq_tensor *loss, mq_tensor *w,
                                    mq_nn_reduction r);
/* -log_softmax(x, dim) at the target class (an int64 target: x's shape
 * without dim, entries in [0, C) or ignore_index) or -sum(t * log_softmax)
 * along dim (a float target of x's shape: probabilities). */
/* [weight] (NULL: none) is a plain 1-D float tensor of one weight per
 * class: each class target's loss is scaled by its class's weight and the
 * mean divides by the sum of the weights of the valid targets (torch's);
 * a probability target's class terms are scaled (its mean stays over the
 * positions). */
MQ_INTERNAL mq_tensor *mq_nn_cross_entropy(mq_state *S, mq_tensor *x, mq_tensor *t, int dim,
                                           int64_t ignore_index, mq_tensor *weight,
                                           mq_nn_reduction r);
/* The same with torch's label_smoothing [smoothing] in [0, 1]: (1 - e) of
 * the loss plus e times the mean of -log_softmax(x) * weight over the
 * valid classes (a probability target: t(1 - e) + e / C as the target). */
MQ_INTERNAL mq_tensor *mq_nn_cross_entropy_ls(mq_state *S, mq_tensor *x, mq_tensor *t, int dim,
                                              int64_t ignore_index, mq_tensor *weight,
                                              double smoothing, mq_nn_reduction r);
/* -x[target] along dim: x holds log-probabilities; t as cross_entropy's
 * int64 classes. */
MQ_INTERNAL mq_tensor *mq_nn_nll_loss(mq_state *S, mq_tensor *x, mq_tensor *t, int dim,
                                      int64_t ignore_index, mq_tensor *weight, mq_nn_reduction r);
/* (x - mean) / sqrt(var + eps) over the valid entries of the last [nd]
 * dims, times [w] plus [b] (NULL: none; plain, of those dims' shape). */
MQ_INTERNAL mq_tensor *mq_nn_layer_norm(mq_state *S, mq_tensor *x, int nd, mq_tensor *w,
                                        mq_tensor *b, double eps);
/* The same op by op (as many autograd nodes), checked operands: what
 * mq_nn_layer_norm runs where the fused kernel (layer_norm.h) does not
 * take the operands (half types, mixed dtypes), and what tests compare the
 * fused kernel with. */
MQ_INTERNAL mq_tensor *mq_nn_layer_norm_ops(mq_state *S, mq_tensor *x, int nd, mq_tensor *w,
                                            mq_tensor *b, double eps);
/* x times a noise of 0 (probability p) or 1 / (1 - p), drawn from a hash of
 * (seed, flat index): the same at any thread count. The mask is kept. */
MQ_INTERNAL mq_tensor *mq_nn_dropout(mq_state *S, mq_tensor *x, double p, int64_t seed);

/* --- optimizer steps (optim.c) ------------------------------------------------
 * Pure functions: w, g and the state are read, new tensors returned. Only
 * the valid entries of the gradient g (masked or plain, w's shape) change
 * the parameters and the state; elsewhere both are copied. */

/* SGD with momentum (0: none, [buf] unused, may be NULL), dampening,
 * Nesterov momentum and weight decay, torch.optim.SGD's; [buf] NULL starts
 * the momentum buffer at g, as torch's first step. */
typedef struct mq_sgd_opts {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
} mq_sgd_opts;
MQ_INTERNAL void mq_optim_sgd(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *buf,
                              const mq_sgd_opts *o, mq_tensor **w_out, mq_tensor **buf_out);
/* Adagrad: sum += g*g; w -= lr * g / (sqrt(sum) + eps); [sum] NULL: zeros. */
MQ_INTERNAL void mq_optim_adagrad(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *sum,
                                  double lr, double eps, double weight_decay, mq_tensor **w_out,
                                  mq_tensor **sum_out);
/* Adam step number [step] (1 for the first) from the moments m and v (NULL:
 * zeros); with amsgrad, also from the largest second moment so far [vmax]
 * (NULL: zeros; *vmax_out NULL without amsgrad). [decoupled]: AdamW, whose
 * weight decay scales the parameter by 1 - lr * weight_decay instead of
 * adding to the gradient. */
typedef struct mq_adam_opts {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, decoupled;
} mq_adam_opts;
MQ_INTERNAL void mq_optim_adam(mq_state *S, mq_tensor *w, mq_tensor *g, mq_tensor *m,
                               mq_tensor *v, mq_tensor *vmax, int64_t step, const mq_adam_opts *o,
                               mq_tensor **w_out, mq_tensor **m_out, mq_tensor **v_out,
                               mq_tensor **vmax_out);

#endif
