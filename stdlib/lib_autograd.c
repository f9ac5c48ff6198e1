/* lib_autograd.c - gradients: leaves, backward, grad, grad mode.
 *
 * Tensors are values, so marking one as requiring grad cannot change it in
 * place as torch's requires_grad_() does: requires_grad(x) returns a new
 * leaf sharing x's data and mask (and cut from x's history), and the
 * gradients backward() computes accumulate into that leaf's .grad. Recording
 * is switched off and on with set_grad_enabled(false/true), torch's
 * function of the same name (the `with torch.no_grad():` of masq). */
#include "../runtime/autograd/autograd.h"
#include "../runtime/sparse/sparse.h"
#include "stdlib.h"

#define T(i, what) mq_arg_tensor(S, args[i], what)
#define TA(i, what) mq_arg_tensor_any(S, args[i], what)
/* a leaf of a storage dtype stays itself (not a conversion of itself) */
#define TAS(i, what) mq_arg_tensor_any_stored(S, args[i], what)
#define RET(t) return mq_objv(t)

static mq_value lib_requires_grad(mq_state *S, mq_value *args) {
  RET(mq_ag_leaf(S, TAS(0, "x"), mq_arg_bool(S, args[1], "flag"), "requires_grad"));
}

static mq_value lib_detach(mq_state *S, mq_value *args) {
  RET(mq_ag_leaf(S, TAS(0, "x"), false, "detach"));
}

static mq_value lib_is_leaf(mq_state *S, mq_value *args) { return mq_bool(!TAS(0, "x")->node); }

static mq_value lib_as_masked(mq_state *S, mq_value *args) {
  if (mq_is_sparse(args[0]) || mq_is_sparse(args[1]))
    RET(mq_sparse_as_masked(S, TA(0, "data"), args[1].type == MQ_NONE ? NULL : TA(1, "mask")));
  if (args[1].type == MQ_NONE)
    mq_error(S, "as_masked: a strided tensor needs a mask (only a sparse one is its own mask)");
  RET(mq_as_masked(S, mq_arg_tensor_stored(S, args[0], "data"), /* a mask as stored: must be bool */
                   mq_arg_tensor_stored(S, args[1], "mask")));
}

static mq_tensor *result_arg(mq_state *S, mq_value v, const char *who) {
  if (!mq_is_tensor(v)) mq_error(S, "%s: the result must be a tensor, not %s", who, mq_value_a_type_name(v));
  return mq_as_tensor(v);
}

/* A tensor of any layout (gradients of sparse tensors are sparse). */
static mq_tensor *input_arg(mq_value v) { return mq_as_tensor_any(v); }

static mq_value lib_backward(mq_state *S, mq_value *args) {
  mq_backward(S, result_arg(S, args[0], "backward"), mq_arg_bool(S, args[1], "retain"));
  return mq_none();
}

/* grad(x): x's accumulated gradient (x.grad), or none. grad(y, x) and
 * grad(y, [x1, x2]): gradients of y, returned, not accumulated. */
static mq_value lib_grad(mq_state *S, mq_value *args) {
  mq_value in = args[1];
  if (in.type == MQ_NONE) {
    mq_tensor *x = input_arg(args[0]);
    if (!x) x = result_arg(S, args[0], "grad");
    return x->grad ? mq_objv(x->grad) : mq_none();
  }
  mq_tensor *y = result_arg(S, args[0], "grad");
  bool retain = mq_arg_bool(S, args[2], "retain");
  if (input_arg(in)) {
    mq_tensor *x = input_arg(in), *g;
    mq_grad(S, y, &x, 1, retain, &g);
    RET(g);
  }
  if (!mq_is_obj(in, MQ_O_LIST))
    mq_error(S, "grad: inputs must be a tensor or a list of tensors, not %s", mq_value_a_type_name(in));
  mq_list *l = mq_as_list(in);
  mq_tensor **xs = mq_scratch(S, (size_t)(l->len ? l->len : 1) * sizeof *xs);
  mq_tensor **gs = mq_scratch(S, (size_t)(l->len ? l->len : 1) * sizeof *gs);
  for (int i = 0; i < l->len; i++) {
    xs[i] = input_arg(l->items[i]);
    if (!xs[i])
      mq_error(S, "grad: input %d must be a tensor, not %s", i + 1, mq_value_a_type_name(l->items[i]));
  }
  mq_grad(S, y, xs, l->len, retain, gs);
  mq_list *out = mq_list_new(S, l->len);
  for (int i = 0; i < l->len; i++) mq_list_push(S, out, mq_objv(gs[i]));
  RET(out);
}

static void clear_grad(mq_state *S, mq_value v) {
  mq_tensor *t = input_arg(v);
  if (!t) mq_error(S, "zero_grad: expected tensors, got %s", mq_value_a_type_name(v));
  if (t->grad) mq_obj_release(S, &t->grad->hdr);
  t->grad = NULL;
}

/* zero_grad(x, y, ...) or zero_grad([x, y]): forgets accumulated gradients
 * (torch's set_to_none: the next backward starts from nothing). */
static mq_value lib_zero_grad(mq_state *S, mq_value *args) {
  mq_list *l = mq_as_list(args[0]);
  for (int i = 0; i < l->len; i++) {
    mq_value v = l->items[i];
    if (mq_is_obj(v, MQ_O_LIST)) {
      mq_list *inner = mq_as_list(v);
      for (int j = 0; j < inner->len; j++) clear_grad(S, inner->items[j]);
    } else {
      clear_grad(S, v);
    }
  }
  return mq_none();
}

static mq_value lib_set_grad_enabled(mq_state *S, mq_value *args) {
  bool was = !S->no_grad;
  S->no_grad = !mq_arg_bool(S, args[0], "flag");
  return mq_bool(was);
}

static mq_value lib_is_grad_enabled(mq_state *S, mq_value *args) {
  (void)args;
  return mq_bool(!S->no_grad);
}

const mq_libfn mq_lib_autograd[] = {
    {"requires_grad(x, flag=true)", lib_requires_grad,
     "a new leaf with x's data and mask that requires grad (flag=false: one that does not)", MQ_BK_NONE, 0},
    {"detach(x)", lib_detach, "x's data and mask, cut from the graph that computed it", MQ_BK_NONE, 0},
    {"is_leaf(x)", lib_is_leaf, "true unless x was computed from tensors that require grad", MQ_BK_NONE, 0},
    {"as_masked(data, mask=none)", lib_as_masked,
     "like masked(data, mask), but gradients flow back to data (torch's as_masked_tensor); "
     "a sparse data without mask is its own mask", MQ_BK_NONE, 0},
    {"as_masked_tensor(data, mask)", lib_as_masked,
     "as_masked(data, mask) under torch.masked's name", MQ_BK_NONE, 0},
    {"backward(y, retain=false)", lib_backward,
     "add the gradient of the 0-d y to every leaf's .grad; frees y's graph unless retain", MQ_BK_NONE, 0},
    {"grad(y, inputs=none, retain=false)", lib_grad,
     "grad(x): x's accumulated gradient (x.grad) or none; grad(y, x) or grad(y, [x1, x2]): "
     "the gradients of y, without accumulating", MQ_BK_NONE, 0},
    {"zero_grad(*xs)", lib_zero_grad, "forget the accumulated gradients of the given tensors", MQ_BK_NONE, 0},
    {"set_grad_enabled(flag)", lib_set_grad_enabled,
     "turn recording for autograd on or off; returns the previous setting", MQ_BK_NONE, 0},
    {"is_grad_enabled()", lib_is_grad_enabled, "true while autograd records operations", MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
