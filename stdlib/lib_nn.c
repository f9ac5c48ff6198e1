/* lib_nn.c - the training builtins: losses (mse_loss, binary_cross_entropy
 * with and without logits, cross_entropy), layer_norm, dropout, masked
 * attention, and the optimizer steps sgd_step, adagrad_step, adam_step and adamw_step.
 * Thin bindings of runtime/nn/nn.h and runtime/nn/attention.h; the signature is
 * the help text.
 *
 * An optimizer's state is a plain list, so that a script keeps it in one
 * variable and unpacks the step's result: `w, st = adam_step(w, w.grad, st)`.
 * sgd_step's is the momentum buffer (none without momentum), adagrad_step's
 * the sum of squares, adam_step's [m, v, step]; none starts from zeros. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/nn/attention.h"
#include "../runtime/autograd/autograd.h"
#include "../runtime/nn/nn.h"
#include "../runtime/tensor/shape.h"
#include "../runtime/sparse/sparse.h"
#include "stdlib.h"

#define T(i, what) mq_arg_tensor(S, args[i], what)

/* reduction=: "mean" (the default), "sum" or "none"; none is "mean" too,
 * as it was the default before signatures could hold strings */
static mq_nn_reduction reduction_arg(mq_state *S, mq_value v) {
  if (v.type == MQ_NONE) return MQ_NN_MEAN;
  const char *s = mq_is_obj(v, MQ_O_STRING) ? mq_as_string(v)->chars : "";
  if (!strcmp(s, "mean")) return MQ_NN_MEAN;
  if (!strcmp(s, "sum")) return MQ_NN_SUM;
  if (!strcmp(s, "none")) return MQ_NN_NONE;
  mq_error(S, "reduction must be \"mean\", \"sum\" or \"none\"");
}

static mq_value lib_mse_loss(mq_state *S, mq_value *args) {
  return mq_objv(mq_nn_mse_loss(S, T(0, "input"), T(1, "target"), reduction_arg(S, args[2])));
}
static mq_value lib_l1_loss(mq_state *S, mq_value *args) {
  return mq_objv(mq_nn_l1_loss(S, T(0, "input"), T(1, "target"), reduction_arg(S, args[2])));
}
static mq_value lib_bce(mq_state *S, mq_value *args) {
  mq_nn_reduction r = reduction_arg(S, args[2]);
  if (args[3].type == MQ_NONE) return mq_objv(mq_nn_bce(S, T(0, "input"), T(1, "target"), r));
  return mq_objv(mq_nn_scaled(S, "binary_cross_entropy", mq_nn_bce(S, T(0, "input"), T(1, "target"), MQ_NN_NONE),
                              T(3, "weight"), r));
}
static mq_value lib_bce_logits(mq_state *S, mq_value *args) {
  mq_tensor *pw = args[3].type == MQ_NONE ? NULL : T(3, "pos_weight");
  mq_nn_reduction r = reduction_arg(S, args[2]);
  if (args[4].type == MQ_NONE) return mq_objv(mq_nn_bce_logits(S, T(0, "input"), T(1, "target"), pw, r));
  return mq_objv(mq_nn_scaled(S, "binary_cross_entropy_with_logits",
                              mq_nn_bce_logits(S, T(0, "input"), T(1, "target"), pw, MQ_NN_NONE), T(4, "weight"), r));
}
/* cross_entropy and nll_loss: (input, target, dim, ignore_index, reduction,
 * weight), then cross_entropy's label_smoothing */
static mq_value class_loss(mq_state *S, mq_value *args, bool nll) {
  mq_tensor *x = T(0, "input");
  int64_t dim = mq_arg_int(S, args[2], "dim");
  if (x->ndim == 1 && dim == 1) dim = 0; /* unbatched (C) input, as torch */
  mq_tensor *t = T(1, "target");
  int64_t ignore = mq_arg_int(S, args[3], "ignore_index");
  mq_nn_reduction r = reduction_arg(S, args[4]);
  mq_tensor *w = args[5].type == MQ_NONE ? NULL : T(5, "weight");
  return mq_objv(nll ? mq_nn_nll_loss(S, x, t, (int)dim, ignore, w, r)
                     : mq_nn_cross_entropy_ls(S, x, t, (int)dim, ignore, w,
                                              mq_arg_number(S, args[6], "label_smoothing"), r));
}
static mq_value lib_cross_entropy(mq_state *S, mq_value *args) { return class_loss(S, args, false); }
static mq_value lib_nll_loss(mq_state *S, mq_value *args) { return class_loss(S, args, true); }

/* normalized_shape: an int (the last dim's size) or a list of the trailing
 * sizes; it must match x's. Returns how many dims. */
static int normalized_dims(mq_state *S, mq_value v, const mq_tensor *x) {
  int64_t shape[MQ_MAX_DIMS];
  int nd;
  if (mq_is_number(v)) {
    shape[0] = mq_arg_int(S, v, "normalized_shape"), nd = 1;
  } else { /* a literal [2, 3] is a tensor, a computed list a list: as zeros([2, 3]) */
    mq_list *l = mq_list_new(S, 1);
    mq_list_push(S, l, v);
    nd = mq_arg_shape(S, mq_objv(l), shape, "normalized_shape");
  }
  if (nd < 1 || nd > x->ndim || memcmp(shape, x->shape + x->ndim - nd, (size_t)nd * sizeof *shape))
    mq_error(S, "layer_norm: normalized_shape %s is not the trailing shape of the input %s",
             mq_shape_str(S, nd, shape), mq_shape_str(S, x->ndim, x->shape));
  return nd;
}

static mq_value lib_layer_norm(mq_state *S, mq_value *args) {
  mq_tensor *x = T(0, "x");
  int nd = normalized_dims(S, args[1], x);
  mq_tensor *w = args[2].type == MQ_NONE ? NULL : T(2, "weight");
  mq_tensor *b = args[3].type == MQ_NONE ? NULL : T(3, "bias");
  return mq_objv(mq_nn_layer_norm(S, x, nd, w, b, mq_arg_number(S, args[4], "eps")));
}

static mq_value lib_dropout(mq_state *S, mq_value *args) {
  mq_tensor *x = T(0, "x");
  double p = mq_arg_number(S, args[1], "p");
  int64_t seed = mq_arg_int(S, args[2], "seed");
  if (!mq_arg_bool(S, args[3], "training")) return mq_objv(x);
  return mq_objv(mq_nn_dropout(S, x, p, seed));
}

/* --- optimizer steps ------------------------------------------------------------ */

/* w: plain float; g: w's shape, masked or plain, or sparse: its stored
 * (valid) entries are the gradient, the others none, as seed 003's sparse
 * Adagrad (a missing gradient is an error, never a zero one). */
static mq_tensor *param_arg(mq_state *S, const char *who, mq_value *args, mq_tensor **g) {
  mq_tensor *w = T(0, "w");
  if (!mq_dtype_is_float((mq_dtype)w->dtype) || w->mask)
    mq_error(S, "%s: w must be a plain float tensor", who);
  if (args[1].type == MQ_NONE)
    mq_error(S, "%s: g is none: w has no gradient (did backward reach it?)", who);
  if (mq_is_sparse(args[1])) {
    mq_tensor *s = mq_arg_tensor_any(S, args[1], "g");
    *g = mq_sparse_to_dense(S, s->mask ? s : mq_sparse_masked(S, s, NULL));
  } else {
    *g = T(1, "g");
  }
  if ((*g)->ndim != w->ndim || memcmp((*g)->shape, w->shape, (size_t)w->ndim * sizeof *w->shape))
    mq_error(S, "%s: g has shape %s but w has shape %s", who, mq_shape_str(S, (*g)->ndim, (*g)->shape),
             mq_shape_str(S, w->ndim, w->shape));
  return w;
}

/* A state tensor: w's shape (any float dtype; the step computes in w's). */
static mq_tensor *state_tensor(mq_state *S, const char *who, mq_value v, const mq_tensor *w) {
  if (!mq_is_tensor(v)) mq_error(S, "%s: the state must hold tensors, got %s", who, mq_value_a_type_name(v));
  mq_tensor *t = mq_tensor_computable(S, mq_as_tensor(v));
  if (t->mask || t->ndim != w->ndim || memcmp(t->shape, w->shape, (size_t)w->ndim * sizeof *w->shape))
    mq_error(S, "%s: the state's tensors must be plain and of w's shape %s, got %s", who,
             mq_shape_str(S, w->ndim, w->shape), mq_shape_str(S, t->ndim, t->shape));
  return t;
}

/* A step's tensor [t] in [dt], the storage dtype of the parameters as given
 * (torch keeps a float16 parameter and its state float16; the step computed
 * in float32 and rounds once), still a leaf requiring grad as it did. */
static mq_tensor *as_given(mq_state *S, mq_tensor *t, mq_dtype dt) {
  if (!mq_dtype_is_narrow(dt)) return t;
  bool rg = t->requires_grad;
  t->requires_grad = false; /* a new leaf of the step's: the conversion is not recorded */
  t = mq_astype(S, t, dt);
  t->requires_grad = rg;
  return t;
}

static mq_dtype given_dtype(mq_value *args) { return (mq_dtype)mq_as_tensor(args[0])->dtype; }

/* [w, state] in the dtype of the w given (args[0]); adam's list state
 * converts its own tensors. */
static mq_value pair(mq_state *S, mq_value *args, mq_tensor *w, mq_value state) {
  mq_dtype dt = given_dtype(args);
  mq_list *l = mq_list_new(S, 2);
  mq_list_push(S, l, mq_objv(as_given(S, w, dt)));
  if (mq_is_tensor(state)) state = mq_objv(as_given(S, mq_as_tensor(state), dt));
  mq_list_push(S, l, state);
  return mq_objv(l);
}

static mq_value lib_sgd_step(mq_state *S, mq_value *args) {
  mq_tensor *g, *w = param_arg(S, "sgd_step", args, &g);
  mq_sgd_opts o = {mq_arg_number(S, args[2], "lr"), mq_arg_number(S, args[3], "momentum"),
                   mq_arg_number(S, args[6], "dampening"), mq_arg_number(S, args[5], "weight_decay"),
                   mq_arg_bool(S, args[7], "nesterov")};
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    mq_error(S, "sgd_step: nesterov needs a momentum and zero dampening (as torch.optim.SGD)");
  mq_tensor *buf = NULL, *nw, *nb;
  if (args[4].type != MQ_NONE) buf = state_tensor(S, "sgd_step", args[4], w);
  mq_optim_sgd(S, w, g, buf, &o, &nw, &nb);
  return pair(S, args, nw, nb ? mq_objv(nb) : mq_none());
}

static mq_value lib_adagrad_step(mq_state *S, mq_value *args) {
  mq_tensor *g, *w = param_arg(S, "adagrad_step", args, &g);
  mq_tensor *sum = args[2].type == MQ_NONE ? NULL : state_tensor(S, "adagrad_step", args[2], w), *nw, *ns;
  mq_optim_adagrad(S, w, g, sum, mq_arg_number(S, args[3], "lr"), mq_arg_number(S, args[4], "eps"),
                   mq_arg_number(S, args[5], "weight_decay"), &nw, &ns);
  return pair(S, args, nw, mq_objv(ns));
}

/* A number a literal list turned into a float32 tensor entry: the shortest
 * decimal that reads back as it, read as a double, so that betas=[0.9, 0.999]
 * is torch's 0.9 and 0.999 and not their float32 roundings (which move the
 * moments by about 1e-7 relative, as torch's float32 roundoff allows only
 * 1e-8 or so). */
double mq_literal_of_f32(double v) {
  char t[32];
  for (int p = 1; p <= 9; p++) {
    snprintf(t, sizeof t, "%.*g", p, v);
    if (strtof(t, NULL) == (float)v) return strtod(t, NULL);
  }
  return v;
}

/* adam_step and adamw_step: the state [m, v, step], with amsgrad
 * [m, v, step, vmax] */
static mq_value adam_like(mq_state *S, mq_value *args, const char *who, bool decoupled) {
  mq_tensor *g, *w = param_arg(S, who, args, &g), *m = NULL, *v = NULL, *vmax = NULL;
  bool amsgrad = mq_arg_bool(S, args[8], "amsgrad");
  int64_t step = 0;
  if (args[2].type != MQ_NONE) {
    mq_list *st = mq_is_obj(args[2], MQ_O_LIST) ? mq_as_list(args[2]) : NULL;
    if (!st || st->len != 3 + amsgrad || st->items[2].type != MQ_INT)
      mq_error(S, "%s: the state must be none or %s, as %s returned it", who,
               amsgrad ? "[m, v, step, vmax] (amsgrad)" : "[m, v, step]", who);
    m = state_tensor(S, who, st->items[0], w);
    v = state_tensor(S, who, st->items[1], w);
    step = st->items[2].as.i;
    if (amsgrad) vmax = state_tensor(S, who, st->items[3], w);
  }
  step = args[6].type == MQ_NONE ? step + 1 : mq_arg_int(S, args[6], "step");
  if (step < 1) mq_error(S, "%s: step must be at least 1, got %lld", who, (long long)step);
  double beta[2] = {0.9, 0.999};
  if (args[4].type != MQ_NONE) { /* a literal [0.9, 0.99] is a tensor, a computed one a list */
    mq_list *b = mq_is_obj(args[4], MQ_O_LIST) ? mq_as_list(args[4]) : NULL;
    mq_tensor *bt = mq_is_tensor(args[4]) ? mq_as_tensor(args[4]) : NULL;
    if (!(b && b->len == 2) && !(bt && bt->ndim == 1 && bt->numel == 2 && !bt->mask))
      mq_error(S, "%s: betas must be a list of two numbers", who);
    for (int i = 0; i < 2; i++) {
      if (b) beta[i] = mq_arg_number(S, b->items[i], "betas");
      else beta[i] = mq_tensor_item(S, mq_select(S, bt, 0, i));
      if (!b && bt->dtype == MQ_DT_F32) beta[i] = mq_literal_of_f32(beta[i]);
    }
  }
  for (int i = 0; i < 2; i++)
    if (!(beta[i] >= 0 && beta[i] < 1)) mq_error(S, "%s: betas must be in [0, 1), got %g", who, beta[i]);
  mq_adam_opts o = {mq_arg_number(S, args[3], "lr"), beta[0], beta[1], mq_arg_number(S, args[5], "eps"),
                    mq_arg_number(S, args[7], "weight_decay"), amsgrad, decoupled};
  mq_tensor *nw, *nm, *nv, *nx;
  mq_optim_adam(S, w, g, m, v, vmax, step, &o, &nw, &nm, &nv, &nx);
  /* the state in w's dtype, as torch; state_dtype=float32 keeps a half w's
   * moments in float32, where v (g squared, ~1e-8) does not underflow */
  mq_dtype sdt = given_dtype(args);
  if (args[9].type != MQ_NONE) {
    mq_dtype want = mq_arg_dtype(S, args[9], MQ_DT_F32);
    if (want != sdt && want != (mq_dtype)w->dtype)
      mq_error(S, "%s: state_dtype must be w's dtype (%s)%s, not %s", who, mq_dtype_name(sdt),
               mq_dtype_is_narrow(sdt) ? " or float32" : "", mq_dtype_name(want));
    sdt = want;
  }
  mq_list *st = mq_list_new(S, 3 + amsgrad);
  mq_list_push(S, st, mq_objv(as_given(S, nm, sdt)));
  mq_list_push(S, st, mq_objv(as_given(S, nv, sdt)));
  mq_list_push(S, st, mq_int(step));
  if (nx) mq_list_push(S, st, mq_objv(as_given(S, nx, sdt)));
  return pair(S, args, nw, mq_objv(st));
}
static mq_value lib_adam_step(mq_state *S, mq_value *args) { return adam_like(S, args, "adam_step", false); }
static mq_value lib_adamw_step(mq_state *S, mq_value *args) { return adam_like(S, args, "adamw_step", true); }

/* --- attention -------------------------------------------------------------- */

/* q, k or v: a float32 or float64 tensor of at least 2 dims (a storage
 * dtype is refused rather than answered in another dtype than the
 * expression's). */
static mq_tensor *attention_operand(mq_state *S, mq_value v, const char *what) {
  mq_tensor *t = mq_arg_tensor_stored(S, v, what);
  if (t->dtype != MQ_DT_F32 && t->dtype != MQ_DT_F64)
    mq_error(S, "attention: %s must be a float32 or float64 tensor, got %s", what,
             mq_dtype_name((mq_dtype)t->dtype));
  if (t->ndim < 2)
    mq_error(S, "attention: %s must have at least 2 dims, got shape %s", what,
             mq_shape_str(S, t->ndim, t->shape));
  return t;
}

/* Whether the batch dims (all but the last two) of q, k and v broadcast
 * together, as the two products need. */
static bool batches_broadcast(const mq_tensor *const t[3]) {
  for (int back = 3;; back++) {
    int64_t size = 1;
    bool any = false;
    for (int i = 0; i < 3; i++) {
      if (t[i]->ndim < back) continue;
      int64_t n = t[i]->shape[t[i]->ndim - back];
      any = true;
      if (n != 1 && size != 1 && n != size) return false;
      if (n != 1) size = n;
    }
    if (!any) return true;
  }
}

/* Whether [m]'s shape broadcasts to [s]'s without growing it. */
static bool broadcasts_to(const mq_tensor *m, const mq_tensor *s) {
  if (m->ndim > s->ndim) return false;
  for (int d = 0; d < m->ndim; d++) {
    int64_t ms = m->shape[d], ss = s->shape[s->ndim - m->ndim + d];
    if (ms != ss && ms != 1) return false;
  }
  return true;
}

/* attention(q, k, v, mask, div) is softmax(as_masked(q @ transpose(k, -2,
 * -1) / div, mask), -1) @ v, the expression's own operations: over the
 * valid keys only through mq_attention_try, the entry the compiler's fused
 * form of the expression runs too (the same bits, one node under
 * autograd), else op by op, as the expression runs when that declines:
 * so a masked q or k (a padded batch's second layer) gives the scores the
 * product leaves valid, re-masked by mask (valid where both are). */
static mq_value lib_attention(mq_state *S, mq_value *args) {
  mq_tensor *q = attention_operand(S, args[0], "q"), *k = attention_operand(S, args[1], "k");
  mq_tensor *v = attention_operand(S, args[2], "v"), *m = mq_arg_tensor_stored(S, args[3], "mask");
  if (m->mask) mq_error(S, "attention: the mask must be a plain bool tensor, not a masked one");
  if (m->dtype != MQ_DT_BOOL)
    mq_error(S, "attention: the mask must be a plain bool tensor, not one of dtype %s",
             mq_dtype_name((mq_dtype)m->dtype));
  int64_t e = q->shape[q->ndim - 1], keys = k->shape[k->ndim - 2];
  if (k->shape[k->ndim - 1] != e)
    mq_error(S, "attention: q and k must have the same last dim (the features), got %lld and %lld",
             (long long)e, (long long)k->shape[k->ndim - 1]);
  if (v->shape[v->ndim - 2] != keys)
    mq_error(S, "attention: v must have one row per key: k has %lld keys, v %lld rows",
             (long long)keys, (long long)v->shape[v->ndim - 2]);
  const mq_tensor *qkv[3] = {q, k, v};
  if (!batches_broadcast(qkv))
    mq_error(S, "attention: the batch dims of q %s, k %s and v %s do not broadcast",
             mq_shape_str(S, q->ndim, q->shape), mq_shape_str(S, k->ndim, k->shape),
             mq_shape_str(S, v->ndim, v->shape));
  mq_value c = args[4].type == MQ_NONE ? mq_float(sqrt((double)e)) : args[4];
  if (c.type != MQ_INT && c.type != MQ_FLOAT && !mq_is_tensor(c))
    mq_error(S, "attention: div must be a number or a tensor, not %s", mq_value_a_type_name(c));
  mq_tensor *r = mq_attention_try(S, q, k, true, -2, -1, c, m, v, true);
  if (r) return mq_objv(r);
  /* scores outside the mask's span are masked straight away: not computed */
  mq_tensor *s = mq_matmul_within(S, q, mq_transpose(S, k, -2, -1), m);
  s = mq_binary(S, MQ_BIN_DIV, s, mq_tensor_from_value_stored(S, c, "div"));
  if (!broadcasts_to(m, s))
    mq_error(S, "attention: a mask of shape %s does not broadcast to the scores' shape %s",
             mq_shape_str(S, m->ndim, m->shape), mq_shape_str(S, s->ndim, s->shape));
  return mq_objv(mq_matmul(S, mq_softmax(S, mq_as_masked(S, s, m), s->ndim - 1), v));
}

const mq_libfn mq_lib_nn[] = {
    /* losses: a masked-out entry of input or target is ignored (out of the
     * sum and of the mean's count); nothing valid: a masked-out result */
    {"mse_loss(input, target, reduction=\"mean\")", lib_mse_loss,
     "(input - target)**2 over the valid entries; reduction \"mean\", \"sum\" or \"none\"",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"l1_loss(input, target, reduction=\"mean\")", lib_l1_loss,
     "|input - target| over the valid entries; reduction as mse_loss's", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"binary_cross_entropy(input, target, reduction=\"mean\", weight=none)", lib_bce,
     "-(t log(p) + (1 - t) log(1 - p)) of probabilities p, each log at least -100 (as torch); "
     "weight: a plain tensor broadcasting to input's shape that scales each entry's loss",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"binary_cross_entropy_with_logits(input, target, reduction=\"mean\", pos_weight=none, weight=none)",
     lib_bce_logits,
     "binary_cross_entropy of sigmoid(input), computed stably from the logits; pos_weight "
     "scales the positive term (one weight per class of the last dim), weight each entry's loss",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"cross_entropy(input, target, dim=1, ignore_index=-100, reduction=\"mean\", weight=none, "
     "label_smoothing=0.0)",
     lib_cross_entropy,
     "-log_softmax(input, dim) at int64 class targets (or summed against float probabilities); "
     "weight: one per class, the mean divides by the valid targets' weights (torch's); "
     "label_smoothing e: (1 - e) of that plus e of the mean over the valid classes",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"nll_loss(input, target, dim=1, ignore_index=-100, reduction=\"mean\", weight=none)",
     lib_nll_loss,
     "-input at int64 class targets along dim (input: log-probabilities, as log_softmax gives); "
     "weight as cross_entropy's",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"layer_norm(x, normalized_shape, weight=none, bias=none, eps=1e-5)", lib_layer_norm,
     "(x - mean) / sqrt(var + eps) over the valid entries of the trailing dims, * weight + bias",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"dropout(x, p, seed, training=true)", lib_dropout,
     "x with entries zeroed with probability p, the rest scaled by 1 / (1 - p); from seed alone",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"attention(q, k, v, mask, div=none)", lib_attention,
     "softmax(as_masked(q @ transpose(k, -2, -1) / div, mask), -1) @ v, computed over the "
     "valid keys only; div defaults to sqrt of q's last dim; a query with no valid key is "
     "masked out", MQ_BK_NONE, 0},
    /* optimizer steps: [new w, new state]; only valid gradient entries update */
    {"sgd_step(w, g, lr, momentum=0, state=none, weight_decay=0, dampening=0, nesterov=false)",
     lib_sgd_step,
     "torch.optim.SGD's step: [w, state], state the momentum buffer (none without momentum)",
     MQ_BK_NONE, 0},
    {"adagrad_step(w, g, state=none, lr=0.01, eps=1e-10, weight_decay=0)", lib_adagrad_step,
     "torch.optim.Adagrad's step: [w, state], state the sum of squared gradients", MQ_BK_NONE, 0},
    {"adam_step(w, g, state=none, lr=0.001, betas=none, eps=1e-8, step=none, weight_decay=0, "
     "amsgrad=false, state_dtype=none)",
     lib_adam_step, "torch.optim.Adam's step: [w, [m, v, step]] ([m, v, step, vmax] with "
     "amsgrad); betas default [0.9, 0.999]",
     MQ_BK_NONE, 0},
    {"adamw_step(w, g, state=none, lr=0.001, betas=none, eps=1e-8, step=none, weight_decay=0.01, "
     "amsgrad=false, state_dtype=none)",
     lib_adamw_step, "torch.optim.AdamW's step (decoupled weight decay): [w, [m, v, step]] "
     "([m, v, step, vmax] with amsgrad)",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
