/* ops.h - the ops that compute with tensors: elementwise (unary.c,
 * binary.c, elementwise.c), reductions (reduce.c), softmax (softmax.c),
 * statistics (stats.c), argmax and scans (scan.c), and matmul (matmul.c).
 * The elementwise ops, reductions and scans are rows of the X-macro lists
 * (ops_unary.h, ops_binary.h, ops_reduce.h), whose order is their enums'.
 * Every op takes strided tensors (sparse ones are sparse.h's), records its
 * autograd node (tape.h) and returns a new tensor the pool owns. */
#ifndef MQ_OPS_H
#define MQ_OPS_H

#include "ops_binary.h"
#include "ops_reduce.h"
#include "ops_unary.h"
#include "../tensor/tensor.h"

/* --- elementwise ---------------------------------------------------------- */

typedef enum mq_unop {
#define X(E, ...) MQ_UN_##E,
  MQ_UNARY_OPS(X)
#undef X
  MQ_UN__COUNT
} mq_unop;

typedef enum mq_binop {
#define X(E, ...) MQ_BIN_##E,
  MQ_BINARY_OPS(X)
#undef X
  MQ_BIN__COUNT
} mq_binop;

/* Unary op; the mask is kept. Integer/bool inputs to exp/log/sqrt compute in
 * float32. bitwise_not needs bool or int64. */
MQ_INTERNAL mq_tensor *mq_unary(mq_state *S, mq_unop op, mq_tensor *t);
/* A unary op with scalar parameters [prm] (up to 3): clamp (lo, hi; NaN
 * for none), round with digits (decimals), logit (eps, NaN for none),
 * nan_to_num (nan, posinf, neginf; NaN for the dtype's default). */
MQ_INTERNAL mq_tensor *mq_unary_p(mq_state *S, mq_unop op, mq_tensor *t, const double *prm);
/* mq_unary_p with a dying operand (x.exp_(): vm/vm.c, dying_operand): when
 * [spare] is [t] and mq_reusable says its storage may take the result, the
 * result is written there; the same bits either way. */
MQ_INTERNAL mq_tensor *mq_unary_spare(mq_state *S, mq_unop op, mq_tensor *t, const double *prm,
                                      mq_tensor *spare);
/* Whether unary [op] costs tens of cycles an entry (exp, erf, gelu ...):
 * the ops whose float kernels and derivatives skip a padding mask's
 * padding (tensor/spanrun.h: the result there is +0); cheap ops (neg,
 * relu, sqrt ...) compute every entry. */
MQ_INTERNAL bool mq_unary_costly(mq_unop op);
/* clamp(x, lo, hi) with number or tensor bounds (NULL: none); an int
 * tensor clamped to a float number becomes float32, as in torch. */
MQ_INTERNAL mq_tensor *mq_clamp(mq_state *S, mq_tensor *t, mq_tensor *lo, mq_tensor *hi);
/* Binary op with numpy broadcasting and torch's type promotion (weak
 * scalars included). Masks: two masked operands need equal masks (error says
 * how many positions differ); a plain operand takes the masked one's mask,
 * broadcast to the result shape. Comparisons give bool; div of ints gives
 * float32. */
MQ_INTERNAL mq_tensor *mq_binary(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b);
/* Reuse of a dying operand ("functional but in place", as Koka, Swift and
 * Lean do): mq_binary with [spare], an operand the caller knows nobody can
 * see after the op (vm/vm.c, dying_operand: the variable about to be
 * overwritten by the result is its one other holder). When [spare] is [a]
 * and mq_reusable says its storage may take the result, the result is
 * written there instead of into a fresh tensor; otherwise (or spare NULL)
 * this is mq_binary. The values are the same bits either way. */
MQ_INTERNAL mq_tensor *mq_binary_spare(mq_state *S, mq_binop op, mq_tensor *a, mq_tensor *b,
                                       mq_tensor *spare);
/* where(cond, a, b): cond plain bool; data and mask picked from a or b
 * (a plain branch counts as all valid), masks need not match. */
MQ_INTERNAL mq_tensor *mq_where(mq_state *S, mq_tensor *cond, mq_tensor *a, mq_tensor *b);
/* masked_fill(x, m, v): x with v where the plain bool m (broadcast to x) is
 * true; those positions become valid, the others keep x's mask. The dtype
 * stays x's. */
MQ_INTERNAL mq_tensor *mq_masked_fill(mq_state *S, mq_tensor *x, mq_tensor *m, mq_tensor *v);
/* --- reductions ----------------------------------------------------------- */

typedef enum mq_redop {
#define X(E, ...) MQ_RED_##E,
  MQ_REDUCE_OPS(X)
#undef X
  MQ_RED__COUNT
} mq_redop;

/* Reduces over the dims listed in [dims] ([ndims] of them, already
 * normalized and distinct), or over everything when ndims == 0 (a 0-d
 * result). Masked-out entries are ignored; an output position with no valid
 * input is masked out (data: the identity, NaN for mean, -inf for
 * logsumexp). A masked input gives a masked result; a plain input a plain
 * result. Result dtypes: sum and prod of ints int64; mean and logsumexp of
 * ints float32; all and any bool; count (the valid entries) is always a
 * plain int64 tensor, never masked. */
MQ_INTERNAL mq_tensor *mq_reduce(mq_state *S, mq_redop op, mq_tensor *t, int ndims,
                                 const int *dims, bool keepdim);

/* Softmax along [dim] over the valid entries of each slice; masked-out
 * entries of a partly valid slice hold 0, a fully masked slice holds NaN and
 * stays masked out. The result keeps the input's mask. Ints compute in
 * float32. */
MQ_INTERNAL mq_tensor *mq_softmax(mq_state *S, mq_tensor *t, int dim);
/* log of the same: masked-out entries of a partly valid slice hold -inf. */
MQ_INTERNAL mq_tensor *mq_log_softmax(mq_state *S, mq_tensor *t, int dim);
/* x / max(norm_p(x along dim), eps) over the valid entries; masked-out
 * entries hold 0 and stay masked out. */
MQ_INTERNAL mq_tensor *mq_normalize(mq_state *S, mq_tensor *t, double p, int dim, double eps);

/* Statistics over dims (as mq_reduce): the variance with [correction]
 * (0: population, as torch.masked; 1: sample) or its square root. */
MQ_INTERNAL mq_tensor *mq_var(mq_state *S, mq_tensor *t, int ndims, const int *dims,
                              double correction, bool keepdim, bool std);
/* The p-norm of the valid entries (p may be inf or -inf; 0 counts the
 * nonzero ones). */
MQ_INTERNAL mq_tensor *mq_norm(mq_state *S, mq_tensor *t, double p, int ndims, const int *dims,
                               bool keepdim);
/* Along one dim, or over the flattened tensor when dim < 0. argmax/argmin
 * give int64 indices of the first extremum (NaN counts as the largest);
 * median gives the lower median of the valid entries (NaN if one is). */
MQ_INTERNAL mq_tensor *mq_argext(mq_state *S, mq_tensor *t, int dim, bool keepdim, bool max);
MQ_INTERNAL mq_tensor *mq_median(mq_state *S, mq_tensor *t, int dim, bool keepdim);
/* torch.quantile (nanquantile with [skip_nan]) of the valid entries along
 * [dim] (over all of x without [has_dim]), for each of the nq values of q
 * (a tensor q, [qvec], puts their dim first, as torch); a slice with no
 * valid entry is masked out. x float32 or float64. */
typedef enum mq_qinterp { MQ_QI_LINEAR, MQ_QI_LOWER, MQ_QI_HIGHER, MQ_QI_MIDPOINT, MQ_QI_NEAREST } mq_qinterp;
MQ_INTERNAL mq_tensor *mq_quantile(mq_state *S, mq_tensor *x, const double *q, int64_t nq, bool qvec,
                                   bool has_dim, int64_t dim, bool keepdim, mq_qinterp how,
                                   bool skip_nan);
/* The one rule of the interpolations: in values sorted ascending whose
 * last place is [last], the q-quantile is lerp(v[below], v[above], w)
 * (torch's lerp; numpy's _lerp), the rank computed in float32 when [f32];
 * [at_last]: the rank is the last place (quantile of a slice holding NaN). */
typedef struct mq_qpick {
  int64_t below, above;
  double w;
} mq_qpick;
MQ_INTERNAL mq_qpick mq_quantile_pick(double q, int64_t last, mq_qinterp how, bool f32, bool at_last);
/* Running sum or product along [dim]; masked-out entries count as the
 * identity and stay masked out. Ints and bools accumulate as int64. */
MQ_INTERNAL mq_tensor *mq_cumulative(mq_state *S, mq_tensor *t, int dim, bool prod);
/* log(cumsum(exp(x))) along [dim], computed without overflow: masked-out
 * entries add nothing and stay masked out. Floats keep their dtype, ints
 * and bools answer in float32 (torch refuses them). */
MQ_INTERNAL mq_tensor *mq_logcumsumexp(mq_state *S, mq_tensor *t, int dim);

/* matmul with torch.matmul's shape rules (1-d operands, batch broadcast).
 * Masked: an output entry sums the products of the valid pairs only (a
 * masked-out entry contributes nothing, even if it holds inf or NaN); an
 * entry with no valid pair is masked out (data 0). Each entry is the
 * GEMM's chain (gemm.h), float32 accumulating in float32. */
MQ_INTERNAL mq_tensor *mq_matmul(mq_state *S, mq_tensor *a, mq_tensor *b);
/* mq_matmul(a, b) for a caller that masks the result with [keep] (a bool
 * tensor broadcasting to its shape) straight away: rows and columns of a
 * batch matrix outside the span of keep's valid entries are not computed
 * and hold 0. The entries inside are mq_matmul's bits. */
MQ_INTERNAL mq_tensor *mq_matmul_within(mq_state *S, mq_tensor *a, mq_tensor *b, mq_tensor *keep);

#endif
