/* lib_sparse_ops.c - generic builtins (binary ops, reductions, softmax,
 * matmul, intersect) on sparse input, and the builtins only sparse tensors
 * have: union and masked_matmul. mq_sparse_builtin (lib_sparse.c) sends
 * every call with a sparse first or second argument here first. */
#include "../runtime/kernels/gather.h"
#include "../runtime/kernels/ops.h"
#include "../runtime/sparse/sparse.h"
#include "../runtime/tensor/shape.h"
#include "stdlib.h"

#define RET(t) return mq_objv(t)
#define RET_IN(out, t)                                                         \
  do {                                                                         \
    *(out) = mq_objv(t);                                                       \
    return true;                                                               \
  } while (0)

/* A builtin argument of any layout; a float number is a weak scalar. */
static mq_tensor *any_arg(mq_state *S, mq_value v, const char *what) {
  return mq_is_sparse(v) ? mq_as_tensor_any(v) : mq_tensor_from_value(S, v, what);
}

static const struct {
  const char *name;
  mq_binop op;
} binops[] = {
    {"add", MQ_BIN_ADD}, {"sub", MQ_BIN_SUB}, {"subtract", MQ_BIN_SUB},
    {"mul", MQ_BIN_MUL}, {"multiply", MQ_BIN_MUL}, {"div", MQ_BIN_DIV},
    {"divide", MQ_BIN_DIV}, {"true_divide", MQ_BIN_DIV}, {"pow", MQ_BIN_POW},
    {"float_power", MQ_BIN_FLOAT_POWER}, {"floor_divide", MQ_BIN_FLOORDIV},
    {"remainder", MQ_BIN_REM}, {"fmod", MQ_BIN_FMOD}, {"maximum", MQ_BIN_MAXIMUM},
    {"minimum", MQ_BIN_MINIMUM}, {"fmax", MQ_BIN_FMAX}, {"fmin", MQ_BIN_FMIN},
    {"atan2", MQ_BIN_ATAN2}, {"arctan2", MQ_BIN_ATAN2}, {"hypot", MQ_BIN_HYPOT},
    {"copysign", MQ_BIN_COPYSIGN}, {"xlogy", MQ_BIN_XLOGY}, {"nextafter", MQ_BIN_NEXTAFTER},
    {"logaddexp2", MQ_BIN_LOGADDEXP2}, {"eq", MQ_BIN_EQ}, {"ne", MQ_BIN_NE},
    {"not_equal", MQ_BIN_NE}, {"lt", MQ_BIN_LT}, {"less", MQ_BIN_LT}, {"le", MQ_BIN_LE},
    {"less_equal", MQ_BIN_LE}, {"gt", MQ_BIN_GT}, {"greater", MQ_BIN_GT}, {"ge", MQ_BIN_GE},
    {"greater_equal", MQ_BIN_GE}, {"logical_and", MQ_BIN_LAND}, {"logical_or", MQ_BIN_LOR},
    {"logical_xor", MQ_BIN_LXOR}, {"bitwise_and", MQ_BIN_BAND}, {"bitwise_or", MQ_BIN_BOR},
    {"bitwise_xor", MQ_BIN_BXOR}, {"bitwise_left_shift", MQ_BIN_SHL},
    {"bitwise_right_shift", MQ_BIN_SHR},
};

/* A binary builtin: (x, y), add/sub's (x, y, alpha), div's (x, y, rounding_mode). */
static bool binary_builtin(mq_state *S, const mq_builtin *b, mq_value *args, mq_value *out) {
  int i = 0, n = (int)(sizeof binops / sizeof *binops);
  while (i < n && strcmp(binops[i].name, b->name) != 0) i++;
  if (i == n) return false;
  mq_binop op = binops[i].op;
  mq_tensor *spare = mq_take_spare(S); /* a dying x takes the result (vm/builtin.h) */
  mq_tensor *x = any_arg(S, args[0], "x"), *y = any_arg(S, args[1], "y");
  if (b->nparams == 3 && strcmp(b->params[2].name, "alpha") == 0) {
    if (!mq_is_number(args[2]))
      mq_error(S, "alpha must be a number, not %s", mq_value_a_type_name(args[2]));
    if (!(args[2].type == MQ_INT && args[2].as.i == 1)) {
      mq_tensor *alpha = mq_tensor_from_value(S, args[2], "alpha");
      y = y->sparse ? mq_sparse_binary(S, MQ_BIN_MUL, y, alpha, b->name)
                    : mq_binary(S, MQ_BIN_MUL, y, alpha);
    }
  } else if (b->nparams == 3 && args[2].type != MQ_NONE) {
    const char *mode = mq_is_obj(args[2], MQ_O_STRING) ? mq_as_string(args[2])->chars : "";
    if (strcmp(mode, "trunc") == 0) op = MQ_BIN_DIVTRUNC;
    else if (strcmp(mode, "floor") == 0) op = MQ_BIN_FLOORDIV;
    else return false; /* the strided builtin explains */
  }
  *out = mq_objv(x->sparse || y->sparse ? mq_sparse_binary_spare(S, op, x, y, b->name, spare)
                                        : mq_binary_spare(S, op, x, y, spare));
  return true;
}

/* [plain_sparse]: torch.masked answers a plain sparse input without mask=
 * along dims in its layout, storing the slices that hold a stored entry
 * (only sum, whose unstored zeros add nothing: torch asks the others for a
 * mask, and masq answers them strided). [to_float]: an int input under
 * mask= is reduced in float32, as the strided form answers (torch's
 * total / count). */
static const struct {
  const char *name;
  mq_sparse_red op;
  bool plain_sparse, to_float;
} reds[] = {
    {"sum", MQ_SRED_SUM, true, false},    {"mean", MQ_SRED_MEAN, false, true},
    {"amax", MQ_SRED_AMAX, false, false}, {"amin", MQ_SRED_AMIN, false, false},
    {"prod", MQ_SRED_PROD, false, false}, {"count", MQ_SRED_COUNT, false, false},
};

/* Whole reductions that read a masked tensor's valid values alone. */
static const char *const whole_on_values[] = {"sum", "mean", "amax", "amin", "prod", "count",
                                              "all", "any", "std", "var", "norm", "logsumexp",
                                              "median", NULL};

/* The index of [b]'s parameter [name], -1 if none. */
static int param(const mq_builtin *b, const char *name) {
  for (int j = 1; j < b->nparams; j++)
    if (strcmp(b->params[j].name, name) == 0) return j;
  return -1;
}

/* torch.masked's keyword mask= of [b] (not masked()'s or masked_matmul's
 * operand): its index, -1 if none. */
static int mask_param(const mq_builtin *b) {
  int mk = param(b, "mask");
  return mk >= 2 && !b->params[mk].required ? mk : -1;
}

/* mask= on a sparse x: torch.masked's x under the mask (mq_sparse_where);
 * x itself without one. */
static mq_tensor *sparse_input(mq_state *S, const mq_builtin *b, mq_value *args) {
  mq_tensor *t = mq_as_tensor_any(args[0]);
  int mk = mask_param(b);
  if (mk < 0 || args[mk].type == MQ_NONE) return t;
  return mq_sparse_where(S, t, any_arg(S, args[mk], "mask"), b->name);
}

/* [b] on the strided copy of [t] (x under its mask=): the
 * ops torch.masked refuses on a sparse input, which masq answers in the
 * strided layout, as for a strided x (DIFFERENCES.md). */
static mq_value on_dense(mq_state *S, const mq_builtin *b, mq_value *args, mq_tensor *t) {
  mq_value a2[MQ_MAX_PARAMS];
  memcpy(a2, args, (size_t)b->nparams * sizeof *a2);
  a2[0] = mq_objv(mq_sparse_to_dense(S, t));
  for (int j = 1; j < b->nparams; j++)
    if (strcmp(b->params[j].name, "mask") == 0) a2[j] = mq_none();
  return b->def->fn(S, a2);
}

/* argmax/argmin of a whole masked sparse tensor: the flat index into the
 * dense shape of the first extreme valid entry (torch's answer for COO);
 * masked out when no entry is valid. */
static mq_tensor *whole_argext(mq_state *S, mq_tensor *t, bool max, bool keepdim) {
  /* the first extreme in dense order: a CSC tensor's entries are in column order */
  if (t->layout == MQ_LAYOUT_CSC) t = mq_sparse_regroup(S, t);
  mq_tensor *ext = mq_argext(S, mq_sparse_values(S, t), -1, false, max);
  mq_tensor *valid = ext->mask ? mq_get_mask(S, ext) : NULL;
  int64_t k = (int64_t)mq_tensor_item(S, mq_get_data(S, ext)), flat = 0;
  if ((!valid || mq_tensor_item(S, valid) != 0) && k >= 0 && k < t->sparse->nnz)
    flat = mq_sparse_keys(S, t)[k];
  mq_tensor *at = mq_tensor_scalar_i64(S, flat);
  if (valid) at = mq_masked(S, at, valid); /* as a strided masked tensor's argmax */
  if (!keepdim) return at;
  int64_t ones[MQ_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) ones[d] = 1;
  return mq_reshape(S, at, t->ndim, ones);
}

/* A plain sparse [t] reduced along [dims] in torch.masked's sparse layout:
 * the slices holding a stored entry (the structure of the reduction of t
 * as its own mask), their values read from the plain reduction, so the
 * gradient stays plain (an unstored input entry is a zero, not a masked
 * one). */
static mq_tensor *plain_in_layout(mq_state *S, mq_sparse_red op, mq_tensor *t, uint32_t dims,
                                  bool keepdim, const char *who) {
  mq_tensor *shape = mq_to_sparse_coo(
      S, mq_sparse_reduce(S, op, mq_sparse_masked(S, t, NULL), dims, keepdim, who));
  mq_tensor *dense = mq_sparse_reduce(S, op, t, dims, keepdim, who);
  int64_t n = shape->sparse->nnz, *keys = mq_sparse_keys(S, shape);
  mq_tensor *at = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  if (n) memcpy(mq_tensor_data(at), keys, (size_t)n * sizeof *keys);
  int64_t numel = dense->numel;
  mq_tensor *vals = mq_index_select(S, mq_reshape(S, dense, 1, &numel), 0, at);
  return mq_sparse_like(S, mq_sparse_get_data(S, shape), vals);
}

static bool reduce_builtin(mq_state *S, const mq_builtin *b, mq_value *args, mq_value *out) {
  int dim = param(b, "dim"), kd = param(b, "keepdim"), mk = mask_param(b), dt = param(b, "dtype");
  if (dim < 0 || dim > 2 || kd < 0 || !mq_is_sparse(args[0])) return false;
  bool with_mask = mk >= 0 && args[mk].type != MQ_NONE;
  mq_tensor *t = sparse_input(S, b, args);
  if (dt >= 0 && args[dt].type != MQ_NONE) {
    t = mq_sparse_astype(S, t, mq_arg_dtype(S, args[dt], (mq_dtype)t->dtype));
  }
  bool keepdim = mq_arg_bool(S, args[kd], "keepdim");
  uint32_t dims = 0;
  if (args[dim].type != MQ_NONE) {
    int ds[MQ_MAX_DIMS], nd = mq_arg_reduce_dims(S, args[dim], t, ds);
    for (int k = 0; k < nd; k++) dims |= 1u << ds[k];
  }
  if (dims == 0) dims = (uint32_t)((1u << t->ndim) - 1); /* none, [] : every dim */
  bool whole = dims == (uint32_t)((1u << t->ndim) - 1);
  int i = 0, n = (int)(sizeof reds / sizeof *reds);
  while (i < n && strcmp(reds[i].name, b->name) != 0) i++;
  bool plain = i < n && reds[i].plain_sparse && !t->mask && args[dim].type != MQ_NONE;
  if (i < n && (with_mask || plain)) { /* torch's result layout: x's, CSR's (CSC's) kept 2-D */
    if (with_mask && reds[i].to_float && !mq_dtype_is_float((mq_dtype)t->dtype))
      t = mq_sparse_astype(S, t, MQ_DT_F32);
    mq_tensor *r = plain ? plain_in_layout(S, reds[i].op, t, dims, keepdim, b->name)
                         : mq_sparse_reduce(S, reds[i].op, t, dims, keepdim, b->name);
    r = r->ndim != 2                     ? mq_to_sparse_coo(S, r)
        : t->layout == MQ_LAYOUT_CSR ? mq_to_sparse_csr(S, r)
        : t->layout == MQ_LAYOUT_CSC ? mq_to_sparse_csc(S, r)
                                     : mq_to_sparse_coo(S, r);
    *out = mq_objv(r);
    return true;
  }
  bool arg = strcmp(b->name, "argmax") == 0 || strcmp(b->name, "argmin") == 0;
  if (whole && t->mask && arg && args[dim].type == MQ_NONE) {
    *out = mq_objv(whole_argext(S, t, b->name[4] == 'a', keepdim));
    return true;
  }
  if (whole && t->mask && !keepdim) {
    for (int k = 0; whole_on_values[k]; k++)
      if (strcmp(whole_on_values[k], b->name) == 0) {
        mq_value a2[MQ_MAX_PARAMS];
        memcpy(a2, args, (size_t)b->nparams * sizeof *a2);
        a2[0] = mq_objv(mq_sparse_values(S, t));
        a2[dim] = mq_none(); /* none, [] or every dim listed: all of values */
        if (dt >= 0) a2[dt] = mq_none();
        if (mk >= 0) a2[mk] = mq_none();
        *out = b->def->fn(S, a2);
        return true;
      }
  }
  if (i == n && (with_mask || t->mask)) { /* var(masked(s), 1) as var(s, 1, mask=m) */
    *out = on_dense(S, b, args, t);
    return true;
  }
  if (i == n)
    mq_error(S, "%s: not supported on a plain %s tensor (as torch.masked, which asks for "
                "a mask); sum, mean, amax, amin, prod and count are, every reduction is on a "
                "masked one (masked(x), or mask=), or to_dense(x)",
             b->name, mq_layout_name((mq_layout)t->layout));
  *out = mq_objv(mq_sparse_reduce(S, reds[i].op, t, dims, keepdim, b->name));
  return true;
}

static bool softmax_builtin(mq_state *S, const mq_builtin *b, mq_value *args, mq_value *out) {
  int kind = strcmp(b->name, "softmax") == 0     ? 0
             : strcmp(b->name, "log_softmax") == 0 ? 1
             : strcmp(b->name, "softmin") == 0     ? 2
                                                   : -1;
  if (kind < 0 || !mq_is_sparse(args[0])) return false;
  mq_tensor *t = sparse_input(S, b, args);
  int dt = args[2].type == MQ_NONE ? -1 : (int)mq_arg_dtype(S, args[2], MQ_DT_F32);
  if (kind == 2) {
    if (!mq_dtype_is_float((mq_dtype)t->dtype)) t = mq_sparse_astype(S, t, MQ_DT_F32);
    t = mq_sparse_unary(S, MQ_UN_NEG, t, b->name);
  }
  *out = mq_objv(mq_sparse_softmax(S, t, (int)mq_arg_int(S, args[1], "dim"), kind == 1, dt,
                                   b->name));
  return true;
}

/* Conversions keep the structure: every dtype's zero converts to zero. */
static bool convert_builtin(mq_state *S, const mq_builtin *b, mq_value *args, mq_value *out) {
  static const struct {
    const char *name;
    mq_dtype dt;
  } convs[] = {{"float", MQ_DT_F32}, {"double", MQ_DT_F64}, {"long", MQ_DT_I64}, {"bool", MQ_DT_BOOL}};
  if (!mq_is_sparse(args[0])) return false;
  mq_tensor *t = mq_as_tensor_any(args[0]);
  int dt = -1;
  if (strcmp(b->name, "to") == 0 && b->nparams == 2) dt = (int)mq_arg_dtype(S, args[1], MQ_DT_F32);
  for (size_t i = 0; i < sizeof convs / sizeof *convs && b->nparams == 1; i++)
    if (strcmp(b->name, convs[i].name) == 0) dt = (int)convs[i].dt;
  if (dt < 0) return false;
  *out = mq_objv(mq_sparse_astype(S, t, (mq_dtype)dt));
  return true;
}

/* select, narrow and index_select of a sparse x (sparse_index.c). */
static bool select_builtin(mq_state *S, const mq_builtin *b, mq_value *args, mq_value *out) {
  if (!mq_is_sparse(args[0])) return false;
  mq_tensor *x = mq_as_tensor_any(args[0]);
  if (strcmp(b->name, "select") == 0 && b->nparams == 3)
    RET_IN(out, mq_sparse_select(S, x, mq_arg_int(S, args[1], "dim"), mq_arg_int(S, args[2], "index")));
  if (strcmp(b->name, "narrow") == 0 && b->nparams == 4)
    RET_IN(out, mq_sparse_narrow(S, x, mq_arg_int(S, args[1], "dim"), mq_arg_int(S, args[2], "start"),
                                 mq_arg_int(S, args[3], "length")));
  if (strcmp(b->name, "index_select") == 0 && b->nparams == 3)
    RET_IN(out, mq_sparse_index_select(S, x, mq_arg_int(S, args[1], "dim"),
                                       mq_arg_tensor(S, args[2], "index")));
  return false;
}

bool mq_sparse_ops_builtin(mq_state *S, const mq_builtin *b, mq_value *args, mq_value *out) {
  if (convert_builtin(S, b, args, out)) return true;
  if (select_builtin(S, b, args, out)) return true;
  if (b->nparams >= 2 && (strcmp(b->name, "intersect") == 0 || strcmp(b->name, "union") == 0)) {
    *out = mq_objv(mq_sparse_merge(S, any_arg(S, args[0], "a"), any_arg(S, args[1], "b"),
                                   b->name[0] == 'i', b->name));
    return true;
  }
  if (strcmp(b->name, "matmul") == 0) {
    *out = mq_objv(mq_sparse_matmul(S, any_arg(S, args[0], "a"), any_arg(S, args[1], "b")));
    return true;
  }
  if (b->nparams >= 2 && b->nparams <= 3 && binary_builtin(S, b, args, out)) return true;
  if (softmax_builtin(S, b, args, out) || reduce_builtin(S, b, args, out)) return true;
  int mk = mask_param(b); /* normalize, cumsum, median ...: strided, under the mask */
  if (mk < 0 || args[mk].type == MQ_NONE || !mq_is_sparse(args[0])) return false;
  *out = on_dense(S, b, args, sparse_input(S, b, args));
  return true;
}

/* --- builtins of sparse tensors only ------------------------------------------------- */

static mq_value lib_union(mq_state *S, mq_value *args) {
  RET(mq_sparse_merge(S, any_arg(S, args[0], "a"), any_arg(S, args[1], "b"), false, "union"));
}

static mq_value lib_masked_matmul(mq_state *S, mq_value *args) {
  RET(mq_sparse_masked_matmul(S, any_arg(S, args[0], "a"), any_arg(S, args[1], "b"),
                              any_arg(S, args[2], "mask")));
}

const mq_libfn mq_lib_sparse_ops[] = {
    {"union(a, b)", lib_union,
     "[a, b] of two sparse tensors on the positions stored in either (a plain one's new "
     "entries hold 0, a masked one's are masked out)"},
    {"masked_matmul(a, b, mask)", lib_masked_matmul,
     "a @ b computed only at the valid stored entries of the sparse mask (SDDMM): a masked "
     "sparse tensor of mask's structure"},
    {NULL, NULL, NULL},
};
