/* lib_index.c - the builtins that order and move entries by index: max and
 * min with indices, sort, argsort, topk, kthvalue, quantile, nanquantile, gather, scatter, scatter_add,
 * index_select, one_hot, and allclose. Thin bindings of runtime/kernels/gather.h.
 * A pair of results (values and indices) is a list [values, indices], which
 * unpacks: `v, i = sort(x)`. */
#include <string.h>

#include "../runtime/kernels/gather.h"
#include "../runtime/kernels/ops.h"
#include "stdlib.h"

#define T(i, what) mq_arg_tensor(S, args[i], what)

static int dim_of(mq_state *S, mq_value v, const mq_tensor *t) {
  return mq_shape_norm_dim(S, mq_arg_int(S, v, "dim"), t->ndim);
}

static mq_value pair(mq_state *S, mq_tensor *values, mq_tensor *indices) {
  mq_list *l = mq_list_new(S, 2);
  mq_list_push(S, l, mq_objv(values));
  mq_list_push(S, l, mq_objv(indices));
  return mq_objv(l);
}

/* max(x): amax of everything; max(x, dim): [values, indices]; max(x, y)
 * with a tensor y: maximum(x, y), as torch.max(input, other) */
static mq_value extreme(mq_state *S, mq_value *args, bool max) {
  mq_tensor *x = T(0, "x");
  bool keepdim = mq_arg_bool(S, args[2], "keepdim");
  if (args[1].type == MQ_NONE) {
    if (keepdim) mq_error(S, "%s: keepdim= needs a dim", max ? "max" : "min");
    return mq_objv(mq_reduce(S, max ? MQ_RED_AMAX : MQ_RED_AMIN, x, 0, NULL, false));
  }
  if (mq_is_tensor(args[1])) { /* torch.max(input, other): elementwise */
    if (keepdim) mq_error(S, "%s: keepdim= needs a dim, not a tensor", max ? "max" : "min");
    return mq_objv(mq_binary(S, max ? MQ_BIN_MAXIMUM : MQ_BIN_MINIMUM, x, mq_arg_tensor(S, args[1], "y")));
  }
  if (!(args[1].type == MQ_INT || args[1].type == MQ_BOOL))
    mq_error(S, "%s: dim must be one int or none, got %s (for the elementwise %s of x and a "
                "number, write %s(x, y))",
             max ? "max" : "min", mq_value_a_type_name(args[1]), max ? "larger" : "smaller",
             max ? "maximum" : "minimum");
  mq_tensor *v, *i;
  mq_extreme_dim(S, x, dim_of(S, args[1], x), keepdim, max, &v, &i);
  return pair(S, v, i);
}
static mq_value lib_max(mq_state *S, mq_value *args) { return extreme(S, args, true); }
static mq_value lib_min(mq_state *S, mq_value *args) { return extreme(S, args, false); }

/* stable= and sorted= are torch's; masq's orders are always stable and
 * sorted, which is a valid answer to either value */
static mq_value lib_sort(mq_state *S, mq_value *args) {
  if (mq_is_obj(args[0], MQ_O_TABLE)) return mq_lib_table_sort(S, args); /* by a column */
  mq_tensor *x = T(0, "x"), *v, *i;
  (void)mq_arg_bool(S, args[3], "stable");
  mq_sort(S, x, dim_of(S, args[1], x), mq_arg_bool(S, args[2], "descending"), &v, &i);
  return pair(S, v, i);
}
static mq_value lib_argsort(mq_state *S, mq_value *args) {
  mq_tensor *x = T(0, "x"), *v, *i;
  (void)mq_arg_bool(S, args[3], "stable");
  mq_sort(S, x, dim_of(S, args[1], x), mq_arg_bool(S, args[2], "descending"), &v, &i);
  return mq_objv(i);
}
static mq_value lib_topk(mq_state *S, mq_value *args) {
  mq_tensor *x = T(0, "x"), *v, *i;
  if (x->dtype == MQ_DT_BOOL) mq_error(S, "topk is not defined for bool tensors, as in torch (long(x) converts)");
  int64_t k = mq_arg_int(S, args[1], "k");
  (void)mq_arg_bool(S, args[4], "sorted");
  mq_topk(S, x, k, dim_of(S, args[2], x), mq_arg_bool(S, args[3], "largest"), &v, &i);
  return pair(S, v, i);
}

static mq_value lib_kthvalue(mq_state *S, mq_value *args) {
  mq_tensor *x = T(0, "x"), *v, *i;
  mq_kthvalue(S, x, mq_arg_int(S, args[1], "k"), dim_of(S, args[2], x),
              mq_arg_bool(S, args[3], "keepdim"), &v, &i);
  return pair(S, v, i);
}

int mq_arg_qinterp(mq_state *S, mq_value v, const char *who) {
  static const char *const modes[] = {"linear", "lower", "higher", "midpoint", "nearest"};
  const char *how = mq_is_obj(v, MQ_O_STRING) ? mq_as_string(v)->chars : "";
  int mode = 0;
  while (mode < 5 && strcmp(how, modes[mode])) mode++;
  if (mode == 5)
    mq_error(S, "%s: interpolation must be \"linear\", \"lower\", \"higher\", \"midpoint\" or "
                "\"nearest\"", who);
  return mode;
}

/* quantile(x, q, dim, keepdim, interpolation): q a number, a list or a
 * 0-d or 1-d tensor (a 1-d one's dim comes first in the result, as torch) */
static mq_value quantile(mq_state *S, mq_value *args, bool skip_nan) {
  const char *who = skip_nan ? "nanquantile" : "quantile";
  mq_tensor *x = T(0, "x");
  double one;
  const double *q = &one;
  int64_t nq = 1;
  bool qvec = false;
  if (mq_is_number(args[1])) one = mq_arg_number(S, args[1], "q");
  else {
    mq_tensor *qt = T(1, "q");
    if (qt->mask || qt->ndim > 1)
      mq_error(S, "%s: q must be a number or a plain 0-d or 1-d tensor, got a %s%d-d tensor", who,
               qt->mask ? "masked " : "", qt->ndim);
    qvec = qt->ndim == 1;
    nq = qt->numel;
    double *qd = mq_tensor_data(mq_contiguous(S, mq_astype(S, qt, MQ_DT_F64)));
    if (qt->dtype == MQ_DT_F32 && x->dtype == MQ_DT_F64) /* a literal list: its numbers */
      for (int64_t k = 0; k < nq; k++) qd[k] = mq_literal_of_f32(qd[k]);
    q = qd;
  }
  int mode = mq_arg_qinterp(S, args[4], who);
  bool has_dim = args[2].type != MQ_NONE;
  int64_t dim = has_dim ? mq_arg_int(S, args[2], "dim") : 0;
  return mq_objv(mq_quantile(S, x, q, nq, qvec, has_dim, dim, mq_arg_bool(S, args[3], "keepdim"),
                             (mq_qinterp)mode, skip_nan));
}
static mq_value lib_quantile(mq_state *S, mq_value *args) { return quantile(S, args, false); }
static mq_value lib_nanquantile(mq_state *S, mq_value *args) { return quantile(S, args, true); }

static mq_value lib_gather(mq_state *S, mq_value *args) {
  mq_tensor *x = T(0, "x");
  return mq_objv(mq_gather(S, x, dim_of(S, args[1], x), T(2, "index")));
}

/* src: a tensor of x's dtype, or a number (torch's value=), which fills
 * index's shape */
static mq_value scatters(mq_state *S, mq_value *args, bool add) {
  mq_tensor *x = T(0, "x"), *index = T(2, "index");
  int dim = dim_of(S, args[1], x);
  mq_tensor *src;
  if (mq_is_number(args[3])) {
    src = mq_astype(S, mq_tensor_from_value(S, args[3], "src"), (mq_dtype)x->dtype);
    src = mq_expand(S, src, index->ndim, index->shape);
  } else {
    src = T(3, "src");
  }
  return mq_objv(mq_scatter(S, x, dim, index, src, add));
}
static mq_value lib_scatter(mq_state *S, mq_value *args) { return scatters(S, args, false); }
static mq_value lib_scatter_add(mq_state *S, mq_value *args) { return scatters(S, args, true); }

static mq_value lib_index_select(mq_state *S, mq_value *args) {
  mq_tensor *x = T(0, "x");
  return mq_objv(mq_index_select(S, x, dim_of(S, args[1], x), T(2, "index")));
}

static mq_value lib_one_hot(mq_state *S, mq_value *args) {
  int64_t classes = mq_arg_int(S, args[1], "num_classes");
  if (classes < -1)
    mq_error(S, "one_hot: num_classes must be -1 (inferred) or at least 0, got %lld",
             (long long)classes);
  return mq_objv(mq_one_hot(S, T(0, "index"), classes));
}

static mq_value lib_allclose(mq_state *S, mq_value *args) {
  double rtol = mq_arg_number(S, args[2], "rtol"), atol = mq_arg_number(S, args[3], "atol");
  if (!(rtol >= 0) || !(atol >= 0))
    mq_error(S, "allclose: rtol and atol must be non-negative numbers");
  return mq_bool(mq_allclose(S, mq_tensor_from_value(S, args[0], "a"),
                             mq_tensor_from_value(S, args[1], "b"), rtol, atol,
                             mq_arg_bool(S, args[4], "equal_nan")));
}

const mq_libfn mq_lib_index[] = {
    {"max(x, dim=none, keepdim=false)", lib_max,
     "largest valid entry (as amax); with dim: [values, indices] along dim, a slice with no "
     "valid entry masked out; with a tensor for dim: maximum(x, dim)",
     MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"min(x, dim=none, keepdim=false)", lib_min,
     "smallest valid entry (as amin); with dim: [values, indices] along dim, a slice with no "
     "valid entry masked out; with a tensor for dim: minimum(x, dim)",
     MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"sort(x, dim=-1, descending=false, stable=true)", lib_sort,
     "[values, indices] sorted along dim (always stable, NaN largest); masked-out entries last; "
     "sort(t, \"name\") of a table: its rows by that column",
     MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"argsort(x, dim=-1, descending=false, stable=true)", lib_argsort,
     "the int64 indices that sort x along dim (masked-out entries last, masked out)",
     MQ_BK_NONE, 0},
    {"topk(x, k, dim=-1, largest=true, sorted=true)", lib_topk,
     "[values, indices] of the k largest (or smallest) valid entries along dim; missing ones "
     "masked out",
     MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"kthvalue(x, k, dim=-1, keepdim=false)", lib_kthvalue,
     "[values, indices] of the k-th smallest valid entry along dim (k from 1); a slice with "
     "fewer than k valid entries masked out",
     MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"quantile(x, q, dim=none, keepdim=false, interpolation=\"linear\")", lib_quantile,
     "the q-quantiles of the valid entries along dim (of all without dim), as torch.quantile: "
     "q a number or a 1-d tensor (its dim first); a valid NaN gives NaN",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"nanquantile(x, q, dim=none, keepdim=false, interpolation=\"linear\")", lib_nanquantile,
     "quantile of the valid entries that are not NaN, as torch.nanquantile",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"gather(x, dim, index)", lib_gather,
     "x at int64 index along dim (result: index's shape); masks travel with the values",
     MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"scatter(x, dim, index, src)", lib_scatter,
     "x with src (a tensor or a number) written at index along dim; a later index wins",
     MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"scatter_add(x, dim, index, src)", lib_scatter_add,
     "x with the valid entries of src added at index along dim", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"index_select(x, dim, index)", lib_index_select,
     "the slices of x at the 1-d int64 index along dim", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"one_hot(index, num_classes=-1)", lib_one_hot,
     "int64 one-hot rows of shape index.shape + (num_classes,); -1: largest index + 1",
     MQ_BK_NONE, 0},
    {"allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=false)", lib_allclose,
     "true if |a - b| <= atol + rtol * |b| at every valid entry (a plain operand takes the "
     "other's mask; different masks: false)",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
