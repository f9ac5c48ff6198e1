/* lib_math.c - the math builtins: unary and binary elementwise functions
 * (torch.masked's lists and their aliases), reductions, normalizations,
 * where and masked_fill, intersect, and the constants nan, inf and pi.
 * Thin bindings of runtime/tensor/tensor.h; the signature is the help text. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../runtime/autograd/autograd.h"
#include "../runtime/kernels/ops.h"
#include "../runtime/kernels/update.h"
#include "../runtime/sparse/sparse.h"
#include "stdlib.h"

#define T(i, what) mq_arg_tensor(S, args[i], what)
#define TS(i, what) mq_arg_tensor_stored(S, args[i], what)
/* An operand combined with others: a float number keeps its full value as
 * a weak float64 scalar (it still promotes as float32). */
#define TW(i, what) mq_tensor_from_value(S, args[i], what)
/* The same as stored, for mq_binary to promote as torch does (an int
 * operand of a float16 tensor is rounded to float16 first). */
#define TWS(i, what) mq_tensor_from_value_stored(S, args[i], what)
#define RET(t) return mq_objv(t)

/* --- unary: from the rows of runtime/kernels/ops_unary.h ------------------------- */

/* The [n] number parameters after x (none: NaN, which the op reads as
 * absent), named in errors as in the signature [sig]. */
static void number_params(mq_state *S, mq_value *args, int n, const char *sig, double *prm) {
  const char *p = strchr(sig, ',');
  for (int i = 0; i < 3; i++) prm[i] = NAN;
  for (int i = 0; i < n && p; i++) {
    p += 2; /* ", " */
    size_t len = strcspn(p, "=,)");
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)len, p);
    if (args[1 + i].type != MQ_NONE) prm[i] = mq_arg_number(S, args[1 + i], name);
    p = strchr(p, ',');
  }
}

#define UN_SIG(name, params) name "(x" params ")"
/* x.exp_(): a dying x takes the result (vm/builtin.h, mq_take_spare) */
#define UN_BIND_B0(E, sig)                                                     \
  static mq_value lib_un_##E(mq_state *S, mq_value *args) {                    \
    mq_tensor *spare = mq_take_spare(S);                                       \
    RET(mq_unary_spare(S, MQ_UN_##E, TS(0, "x"), NULL, spare));                \
  }
#define UN_BIND_PARAMS(E, sig, n)                                              \
  static mq_value lib_un_##E(mq_state *S, mq_value *args) {                    \
    mq_tensor *spare = mq_take_spare(S);                                       \
    double prm[3];                                                             \
    number_params(S, args, n, sig, prm);                                       \
    RET(mq_unary_spare(S, MQ_UN_##E, TS(0, "x"), prm, spare));                 \
  }
#define UN_BIND_B1(E, sig) UN_BIND_PARAMS(E, sig, 1)
#define UN_BIND_B2(E, sig) UN_BIND_PARAMS(E, sig, 2)
#define UN_BIND_B3(E, sig) UN_BIND_PARAMS(E, sig, 3)
#define UN_BIND_BH(E, sig)
#define UN_BIND_BN(E, sig)
#define X(E, name, params, bind, ...) UN_BIND_##bind(E, UN_SIG(name, params))
MQ_UNARY_OPS(X)
#undef X

/* round(x, decimals): decimals 0 is the plain rounding */
static mq_value lib_un_ROUND(mq_state *S, mq_value *args) {
  int64_t d = mq_arg_int(S, args[1], "decimals");
  double prm[3] = {(double)d, NAN, NAN};
  RET(mq_unary_p(S, d ? MQ_UN_ROUND_DEC : MQ_UN_ROUND, TS(0, "x"), prm));
}
/* clamp(x, min, max): numbers or tensors */
static mq_value lib_un_CLAMP(mq_state *S, mq_value *args) {
  mq_tensor *lo = args[1].type == MQ_NONE ? NULL : TW(1, "min");
  mq_tensor *hi = args[2].type == MQ_NONE ? NULL : TW(2, "max");
  mq_tensor *x = TS(0, "x"), *b[2] = {lo, hi};
  for (int i = 0; i < 2; i++) /* an int bound must fit an int x (int8, 300: torch's error) */
    if (b[i] && b[i]->weak && b[i]->ndim == 0 && !mq_dtype_is_float((mq_dtype)b[i]->dtype))
      mq_check_number_fits(S, (mq_dtype)x->dtype, mq_tensor_item(S, b[i]), true, "clamp");
  RET(mq_clamp(S, T(0, "x"), lo, hi));
}

/* hardtanh(x, min_val, max_val): for an int x torch truncates the bounds
 * toward zero (clamp's int kernel would round them toward the inside) */
static mq_value lib_un_HARDTANH(mq_state *S, mq_value *args) {
  double prm[3];
  number_params(S, args, 2, "hardtanh(x, min_val, max_val)", prm);
  mq_tensor *x = TS(0, "x");
  if (!mq_dtype_is_float((mq_dtype)x->dtype)) prm[0] = trunc(prm[0]), prm[1] = trunc(prm[1]);
  RET(mq_unary_p(S, MQ_UN_HARDTANH, x, prm));
}

/* gelu(x, approximate): none or "none" the erf form, "tanh" torch's tanh form */
static mq_value lib_un_GELU(mq_state *S, mq_value *args) {
  const char *a = mq_is_obj(args[1], MQ_O_STRING) ? mq_as_string(args[1])->chars : NULL;
  if (args[1].type != MQ_NONE && (!a || (strcmp(a, "none") && strcmp(a, "tanh"))))
    mq_error(S, "gelu: approximate must be \"none\" or \"tanh\"");
  RET(mq_unary(S, a && !strcmp(a, "tanh") ? MQ_UN_GELU_TANH : MQ_UN_GELU, T(0, "x")));
}

/* --- binary ------------------------------------------------------------------- */

#define BIN_SIG(name, params) name "(x" params ")"
/* mq_binary on x and y, for every row: the B0 rows' builtins, and aliases
 * that bind plainly an op whose own builtin does more (true_divide) */
#if defined(__GNUC__) || defined(__clang__)
#define MAYBE_UNUSED __attribute__((unused))
#else
#define MAYBE_UNUSED
#endif
#define X(E, name, params, bind, ...)                                          \
  MAYBE_UNUSED static mq_value plain_bin_##E(mq_state *S, mq_value *args) {   \
    mq_tensor *spare = mq_take_spare(S); /* x.mul_(y): a dying x takes it */   \
    RET(mq_binary_spare(S, MQ_BIN_##E, TWS(0, "x"), TWS(1, "y"), spare));      \
  }
MQ_BINARY_OPS(X)
#undef X

/* torch's alpha: x + alpha * y (alpha a number, weak like any literal, so
 * an int alpha keeps int tensors int). */
static mq_value add_scaled(mq_state *S, mq_value *args, mq_binop op) {
  mq_tensor *spare = mq_take_spare(S); /* a dying x takes the result (vm/builtin.h) */
  if (!mq_is_number(args[2])) mq_error(S, "alpha must be a number, not %s", mq_value_a_type_name(args[2]));
  if (args[2].type == MQ_INT && args[2].as.i == 1) /* as stored: promoted as the operators are */
    RET(mq_binary_spare(S, op, TWS(0, "x"), TWS(1, "y"), spare));
  mq_tensor *y = mq_binary(S, MQ_BIN_MUL, TW(1, "y"), mq_tensor_from_value(S, args[2], "alpha"));
  RET(mq_binary_spare(S, op, TW(0, "x"), y, spare));
}
static mq_value lib_bin_ADD(mq_state *S, mq_value *args) { return add_scaled(S, args, MQ_BIN_ADD); }
static mq_value lib_bin_SUB(mq_state *S, mq_value *args) { return add_scaled(S, args, MQ_BIN_SUB); }

/* torch.masked.logaddexp: a masked-out entry of x (input_mask) or y
 * (other_mask) counts as -inf, logaddexp's identity, so the result is the
 * other operand there; where both are masked out, so is the result. A
 * masked operand is valid where its own mask and its mask argument (if
 * any) both are, as re-masking is. */
static mq_value lib_bin_LOGADDEXP(mq_state *S, mq_value *args) {
  mq_tensor *x = TW(0, "x"), *y = TW(1, "y");
  if (args[2].type == MQ_NONE && args[3].type == MQ_NONE) RET(mq_binary(S, MQ_BIN_LOGADDEXP, x, y));
  mq_tensor *identity = mq_tensor_from_value(S, mq_float(-INFINITY), "identity");
  mq_tensor *valid = NULL;
  bool all = false; /* an operand valid everywhere: so is the result */
  mq_tensor *operand[2] = {x, y};
  for (int i = 0; i < 2; i++) {
    mq_tensor *m = operand[i]->mask ? mq_get_mask(S, operand[i]) : NULL;
    if (args[2 + i].type != MQ_NONE) {
      mq_tensor *arg = T(2 + i, i ? "other_mask" : "input_mask");
      m = m ? mq_binary(S, MQ_BIN_BAND, m, arg) : arg;
    }
    if (!m) {
      all = true;
      continue;
    }
    operand[i] = mq_where(S, m, mq_get_data(S, operand[i]), identity);
    valid = valid ? mq_binary(S, MQ_BIN_BOR, valid, m) : m;
  }
  if (all) valid = mq_tensor_from_value(S, mq_bool(true), "mask");
  mq_tensor *r = mq_binary(S, MQ_BIN_LOGADDEXP, operand[0], operand[1]);
  RET(mq_as_masked(S, r, valid)); /* differentiable, as torch.masked.logaddexp */
}

static mq_value lib_bin_DIV(mq_state *S, mq_value *args) {
  mq_tensor *spare = mq_take_spare(S); /* x.div_(y): a dying x takes the result */
  mq_binop op = MQ_BIN_DIV;
  if (mq_is_obj(args[2], MQ_O_STRING)) {
    const mq_string *mode = mq_as_string(args[2]);
    if (mq_string_is(mode, "trunc")) op = MQ_BIN_DIVTRUNC;
    else if (mq_string_is(mode, "floor")) op = MQ_BIN_FLOORDIV;
    else mq_error(S, "div: rounding_mode must be none, \"trunc\" or \"floor\", got %s",
                  mq_string_quoted(S, mode));
  } else if (args[2].type != MQ_NONE) {
    mq_error(S, "div: rounding_mode must be none, \"trunc\" or \"floor\", not %s",
             mq_value_a_type_name(args[2]));
  }
  RET(mq_binary_spare(S, op, TWS(0, "x"), TWS(1, "y"), spare));
}

/* --- reductions --------------------------------------------------------------------- */

/* dim: none (everything), an int, or a list of ints. A list holds dims, not
 * sizes: each may be negative (counted from the end). A literal [0, -1]
 * arrives as an int64 tensor, a computed one as a list. */
static int reduce_dims(mq_state *S, mq_value v, const mq_tensor *t, int *dims) {
  if (v.type == MQ_NONE) return 0;
  int n = 0;
  if (mq_is_obj(v, MQ_O_LIST)) {
    mq_list *l = mq_as_list(v);
    if (l->len > MQ_MAX_DIMS)
      mq_error(S, "dim lists %d dims; a tensor has at most %d", l->len, MQ_MAX_DIMS);
    for (int i = 0; i < l->len; i++) dims[n++] = mq_shape_norm_dim(S, mq_arg_int(S, l->items[i], "dim"), t->ndim);
  } else if (mq_is_tensor(v) && mq_as_tensor(v)->ndim == 1) {
    mq_tensor *list = mq_as_tensor(v);
    if (mq_dtype_is_float((mq_dtype)list->dtype))
      mq_error(S, "dim must be an int or a list of ints, not a list of %s", mq_dtype_name((mq_dtype)list->dtype));
    if (list->numel > MQ_MAX_DIMS)
      mq_error(S, "dim lists %lld dims; a tensor has at most %d", (long long)list->numel, MQ_MAX_DIMS);
    mq_tensor *c = mq_contiguous(S, mq_tensor_owned(S, mq_astype(S, list, MQ_DT_I64)));
    const int64_t *d = mq_tensor_data(c);
    for (int64_t i = 0; i < list->numel; i++) dims[n++] = mq_shape_norm_dim(S, d[i], t->ndim);
  } else {
    dims[n++] = mq_shape_norm_dim(S, mq_arg_int(S, v, "dim"), t->ndim);
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (dims[i] == dims[j]) mq_error(S, "dimension %d appears twice in dim", dims[i]);
  return n; /* [] (torch.masked's ()): every dim, as none */
}

/* dim for the ops along one dim: none (the flattened tensor: -1) or an int. */
static int one_dim(mq_state *S, mq_value v, const mq_tensor *t, const char *fn) {
  if (v.type == MQ_NONE) return -1;
  if (!(v.type == MQ_INT || v.type == MQ_BOOL || (mq_is_tensor(v) && mq_as_tensor(v)->ndim == 0)))
    mq_error(S, "%s: dim must be one int or none (%s works along a single dim), got %s", fn, fn,
             mq_is_tensor(v) ? "a list of dims" : mq_value_a_type_name(v));
  return mq_shape_norm_dim(S, mq_arg_int(S, v, "dim"), t->ndim);
}

/* x converted to dtype= when given (sum, mean, prod, cumsum, softmax ...),
 * then to its compute dtype: the kernels behind these builtins read bool,
 * int64, float32 and float64 only (given float16, softmax and var wrote
 * doubles into 2-byte storage, cumsum failed with "bad dtype": audit
 * findings). The builtin answers in the storage dtype through answer_in. */
static mq_tensor *with_dtype(mq_state *S, mq_tensor *t, mq_value dtype) {
  if (dtype.type == MQ_NONE) return t;
  return mq_tensor_computable(S, mq_astype(S, t, mq_arg_dtype(S, dtype, (mq_dtype)t->dtype)));
}
/* [r] stored in dtype= when that is a storage dtype and r came out in its
 * compute dtype, as torch answers: softmax(x, dtype=float16) is float16,
 * cumsum(x, 0, dtype=int8) int8. */
static mq_value answer_in(mq_state *S, mq_tensor *r, mq_value dtype) {
  if (dtype.type == MQ_NONE) RET(r);
  RET(mq_narrow_back(S, r, mq_arg_dtype(S, dtype, (mq_dtype)r->dtype)));
}

/* torch.masked's functional forms: x converted to dtype= when given, and
 * with mask= the masked tensor as_masked(x, mask); a masked x keeps what
 * is valid in both masks (torch 1.13 reads its own mask alone). */
static mq_tensor *masked_by(mq_state *S, mq_tensor *t, mq_value *args, int mask_arg) {
  if (mask_arg < 0 || args[mask_arg].type == MQ_NONE) return t;
  if (mq_is_sparse(args[mask_arg])) { /* torch's _input_mask: to x's layout, then bool */
    mq_tensor *m = mq_as_tensor_any(args[mask_arg]);
    if (m->mask) mq_error(S, "mask= must be a plain tensor, got a masked %s one",
                          mq_layout_name((mq_layout)m->layout));
    return mq_as_masked(S, t, mq_astype(S, mq_sparse_to_dense(S, m), MQ_DT_BOOL));
  }
  return mq_as_masked(S, t, TS(mask_arg, "mask")); /* as stored: bool, or named as given */
}
static mq_tensor *functional_input_of(mq_state *S, mq_tensor *x, mq_value *args, int dtype_arg,
                                      int mask_arg) {
  return masked_by(S, with_dtype(S, x, args[dtype_arg]), args, mask_arg);
}
static mq_tensor *functional_input(mq_state *S, mq_value *args, int dtype_arg, int mask_arg) {
  return functional_input_of(S, T(0, "x"), args, dtype_arg, mask_arg);
}

/* RP: (x, dim, keepdim); RF: (x, dim, keepdim, dtype, mask) */
#define RED_SIG_RP(name) name "(x, dim=none, keepdim=false)"
#define RED_SIG_RF(name) name "(x, dim=none, keepdim=false, dtype=none, mask=none)"
/* as stored: mq_reduce answers in torch's dtype for a storage dtype */
#define RED_INPUT_RP TS(0, "x")
#define RED_INPUT_RF functional_input_of(S, TS(0, "x"), args, 3, 4)
#define RED_DTYPE_RP mq_none()
#define RED_DTYPE_RF args[3]
#define X(E, name, bind, ...)                                                  \
  static mq_value lib_red_##E(mq_state *S, mq_value *args) {                   \
    mq_tensor *t = RED_INPUT_##bind;                                           \
    int dims[MQ_MAX_DIMS], n = reduce_dims(S, args[1], t, dims);               \
    return answer_in(S, mq_reduce(S, MQ_RED_##E, t, n, dims, mq_arg_bool(S, args[2], "keepdim")), \
                     RED_DTYPE_##bind);                                        \
  }
MQ_REDUCE_OPS(X)
#undef X

int mq_arg_reduce_dims(mq_state *S, mq_value v, const mq_tensor *t, int *dims) {
  return reduce_dims(S, v, t, dims);
}

/* (x, dim, correction, keepdim, unbiased, dtype, mask): unbiased=true is
 * torch's spelling of correction=1 */
static mq_value var_std(mq_state *S, mq_value *args, bool std) {
  mq_tensor *t = functional_input(S, args, 5, 6);
  int dims[MQ_MAX_DIMS], n = reduce_dims(S, args[1], t, dims);
  double correction = 0;
  if (args[4].type != MQ_NONE) {
    if (args[2].type != MQ_NONE) mq_error(S, "give correction= or unbiased=, not both");
    correction = mq_arg_bool(S, args[4], "unbiased");
  } else if (args[2].type != MQ_NONE) {
    correction = mq_arg_number(S, args[2], "correction");
  }
  return answer_in(S, mq_var(S, t, n, dims, correction, mq_arg_bool(S, args[3], "keepdim"), std),
                   args[5]);
}
static mq_value lib_var(mq_state *S, mq_value *args) { return var_std(S, args, false); }
static mq_value lib_std(mq_state *S, mq_value *args) { return var_std(S, args, true); }

static mq_value lib_norm(mq_state *S, mq_value *args) {
  mq_tensor *t = functional_input(S, args, 4, 5);
  int dims[MQ_MAX_DIMS], n = reduce_dims(S, args[2], t, dims);
  return answer_in(S, mq_norm(S, t, mq_arg_number(S, args[1], "p"), n, dims,
                              mq_arg_bool(S, args[3], "keepdim")), args[4]);
}

static mq_value argext(mq_state *S, mq_value *args, bool max) {
  mq_tensor *t = functional_input(S, args, 3, 4);
  if (t->dtype == MQ_DT_BOOL) /* torch's too: no order of bools to search */
    mq_error(S, "%s is not defined for bool tensors, as in torch (long(x) converts)",
             max ? "argmax" : "argmin");
  int d = one_dim(S, args[1], t, max ? "argmax" : "argmin");
  RET(mq_argext(S, t, t->ndim ? d : -1, mq_arg_bool(S, args[2], "keepdim"), max));
}
static mq_value lib_argmax(mq_state *S, mq_value *args) { return argext(S, args, true); }
static mq_value lib_argmin(mq_state *S, mq_value *args) { return argext(S, args, false); }

/* median(x, dim, keepdim, mask, interpolation): "lower" is torch's (the
 * values and, along a dim, the indices); another interpolation is the
 * 0.5-quantile's, values only ("midpoint" and "linear": pandas' and
 * numpy's median, the mean of the two middle entries of an even count). */
static mq_value lib_median(mq_state *S, mq_value *args) {
  mq_tensor *t = masked_by(S, T(0, "x"), args, 3);
  int d = one_dim(S, args[1], t, "median");
  int how = mq_arg_qinterp(S, args[4], "median");
  if (how != MQ_QI_LOWER) {
    if (!mq_dtype_is_float((mq_dtype)t->dtype)) t = mq_astype(S, t, MQ_DT_F64);
    else if (mq_dtype_is_narrow((mq_dtype)t->dtype)) t = mq_astype(S, t, mq_dtype_compute((mq_dtype)t->dtype));
    const double half = 0.5;
    RET(mq_quantile(S, t, &half, 1, false, args[1].type != MQ_NONE && t->ndim, d,
                    mq_arg_bool(S, args[2], "keepdim"), (mq_qinterp)how, false));
  }
  mq_value r = mq_objv(mq_median(S, t, t->ndim ? d : -1, mq_arg_bool(S, args[2], "keepdim")));
  if (t->dtype != MQ_DT_BOOL) return r;
  /* torch.masked.median keeps bool (the values; the indices stay int64) */
  if (mq_is_tensor(r)) RET(mq_astype(S, mq_as_tensor(r), MQ_DT_BOOL));
  mq_list *l = mq_as_list(r), *n = mq_list_new(S, l->len);
  mq_list_push(S, n, mq_objv(mq_astype(S, mq_as_tensor(l->items[0]), MQ_DT_BOOL)));
  for (int i = 1; i < l->len; i++) mq_list_push(S, n, l->items[i]);
  RET(n);
}

/* cumsum/cumprod; with mask= (torch.masked's form) an int x keeps its
 * dtype, as torch.masked.cumsum answers (plain torch widens to int64). */
static mq_value scan(mq_state *S, mq_value *args, bool prod) {
  mq_tensor *x = TS(0, "x");
  mq_tensor *t = functional_input_of(S, mq_tensor_computable(S, x), args, 2, 3);
  mq_tensor *r = mq_cumulative(S, t, mq_shape_norm_dim(S, mq_arg_int(S, args[1], "dim"), t->ndim),
                               prod);
  if (args[2].type == MQ_NONE && args[3].type != MQ_NONE && x->dtype != MQ_DT_BOOL &&
      !mq_dtype_is_float((mq_dtype)x->dtype))
    RET(mq_narrow_back(S, r, (mq_dtype)x->dtype));
  return answer_in(S, r, args[2]);
}
#define X(E, name, prod, ...) \
  static mq_value lib_scan_##E(mq_state *S, mq_value *args) { return scan(S, args, prod); }
MQ_SCAN_OPS(X)
#undef X

static mq_value lib_logcumsumexp(mq_state *S, mq_value *args) {
  mq_tensor *t = T(0, "x");
  RET(mq_logcumsumexp(S, t, mq_shape_norm_dim(S, mq_arg_int(S, args[1], "dim"), t->ndim)));
}

/* --- normalizations ------------------------------------------------------------------ */

static mq_value softmaxes(mq_state *S, mq_value *args, int kind) {
  mq_tensor *t = functional_input(S, args, 2, 3);
  int d = mq_shape_norm_dim(S, mq_arg_int(S, args[1], "dim"), t->ndim);
  if (kind == 2) { /* softmin(x) = softmax(-x) */
    if (!mq_dtype_is_float((mq_dtype)t->dtype)) t = mq_astype(S, t, MQ_DT_F32);
    t = mq_unary(S, MQ_UN_NEG, t);
  }
  return answer_in(S, kind == 1 ? mq_log_softmax(S, t, d) : mq_softmax(S, t, d), args[2]);
}
static mq_value lib_softmax(mq_state *S, mq_value *args) { return softmaxes(S, args, 0); }
static mq_value lib_log_softmax(mq_state *S, mq_value *args) { return softmaxes(S, args, 1); }
static mq_value lib_softmin(mq_state *S, mq_value *args) { return softmaxes(S, args, 2); }

static mq_value lib_normalize(mq_state *S, mq_value *args) {
  RET(mq_normalize(S, masked_by(S, T(0, "x"), args, 4), mq_arg_number(S, args[1], "p"), (int)mq_arg_int(S, args[2], "dim"),
                   mq_arg_number(S, args[3], "eps")));
}

/* --- selection and masks ----------------------------------------------------------- */

static mq_value lib_where(mq_state *S, mq_value *args) {
  /* a storage dtype's result comes back in torch's dtype (int8 stays int8) */
  mq_tensor *ab[2] = {mq_tensor_from_value_stored(S, args[1], "a"),
                      mq_tensor_from_value_stored(S, args[2], "b")};
  mq_dtype want = mq_result_type(2, ab);
  for (int i = 0; i < 2; i++) /* a number must fit the result's dtype (int8, 300: torch's error) */
    if (ab[i]->weak && ab[i]->ndim == 0)
      mq_check_number_fits(S, want, mq_tensor_item(S, ab[i]), !mq_dtype_is_float((mq_dtype)ab[i]->dtype),
                           "where");
  RET(mq_narrow_back(S, mq_where(S, TS(0, "cond"), mq_tensor_computable(S, ab[0]),
                                 mq_tensor_computable(S, ab[1])), want));
}
static mq_value lib_masked_fill(mq_state *S, mq_value *args) {
  mq_tensor *v = TW(2, "value");
  if (v->weak && v->ndim == 0) /* a number must fit x's dtype as stored (int8, 300: torch's error) */
    mq_check_number_fits(S, (mq_dtype)TS(0, "x")->dtype, mq_tensor_item(S, v),
                         !mq_dtype_is_float((mq_dtype)v->dtype), "masked_fill");
  RET(mq_masked_fill(S, T(0, "x"), TS(1, "mask"), v)); /* mask as stored: bool */
}

/* intersect(a, b): both operands restricted to the positions valid in both
 * (numpy.ma's rule for binary ops, on request), broadcast to one shape. */
static mq_value lib_intersect(mq_state *S, mq_value *args) {
  mq_tensor *a = T(0, "a"), *b = T(1, "b");
  int64_t shape[MQ_MAX_DIMS];
  int nd = mq_broadcast_shapes(S, a->ndim, a->shape, b->ndim, b->shape, shape);
  mq_tensor *mask = mq_binary(S, MQ_BIN_BAND, mq_get_mask(S, a), mq_get_mask(S, b));
  mq_list *l = mq_list_new(S, 2);
  /* as_masked: gradients flow through to a and b */
  mq_list_push(S, l, mq_objv(mq_as_masked(S, mq_expand(S, mq_get_data(S, a), nd, shape), mask)));
  mq_list_push(S, l, mq_objv(mq_as_masked(S, mq_expand(S, mq_get_data(S, b), nd, shape), mask)));
  RET(l);
}

/* --- the table --------------------------------------------------------------------- */

/* Every unary builtin is its op to the compiler (MQ_BK_UNARY); it fuses
 * the one-parameter ones whose op fuses (mq_builtin_unop, fuse.c). */
#define UN_ROW_B0(E, name, params, doc) {UN_SIG(name, params), lib_un_##E, doc, MQ_BK_UNARY, MQ_UN_##E},
#define UN_ROW_B1 UN_ROW_B0
#define UN_ROW_B2 UN_ROW_B0
#define UN_ROW_B3 UN_ROW_B0
#define UN_ROW_BH(E, name, params, doc) \
  {UN_SIG(name, params), lib_un_##E, doc, MQ_BK_UNARY, MQ_UN_##E, MQ_KEEP_PROMOTE},
#define UN_ROW_BN(E, name, params, doc)
#define UN_ROW(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, dom, fuse, conf, doc) \
  UN_ROW_##bind(E, name, params, doc)
#define UN_ALIAS(alias, E, params, doc) \
  {UN_SIG(alias, params), lib_un_##E, doc, MQ_BK_UNARY, MQ_UN_##E, UN_KEEP_##E},
#define UN_KEEP_CLAMP MQ_KEEP_PROMOTE /* clip: as clamp's row (BH) */
#define UN_KEEP_ACOS 0
#define UN_KEEP_ACOSH 0
#define UN_KEEP_ASIN 0
#define UN_KEEP_ASINH 0
#define UN_KEEP_ATAN 0
#define UN_KEEP_ATANH 0
#define UN_KEEP_ABS 0
#define UN_KEEP_TRUNC 0
#define UN_KEEP_NEG 0
#define UN_KEEP_SIGN 0

#define BIN_FN_B0(E) plain_bin_##E
#define BIN_FN_BH(E) lib_bin_##E
#define BIN_ROW_B0(E, name, params, doc) {BIN_SIG(name, params), BIN_FN_B0(E), doc, MQ_BK_NONE, 0, MQ_KEEP_PROMOTE},
#define BIN_ROW_BH(E, name, params, doc) {BIN_SIG(name, params), BIN_FN_BH(E), doc, MQ_BK_NONE, 0, MQ_KEEP_PROMOTE},
#define BIN_ROW_BN(E, name, params, doc)
#define BIN_ROW(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, da, db, fuse, conf, doc) \
  BIN_ROW_##bind(E, name, params, doc)
#define BIN_ALIAS(alias, E, bind, params, doc) \
  {BIN_SIG(alias, params), BIN_FN_##bind(E), doc, MQ_BK_NONE, 0, MQ_KEEP_PROMOTE},

#define RED_KIND_1 MQ_BK_REDUCE
#define RED_KIND_0 MQ_BK_NONE
#define RED_ROW(E, name, bind, deriv, fuse, conf, in, res, ident, doc)         \
  {RED_SIG_##bind(name), lib_red_##E, doc, RED_KIND_##fuse, MQ_RED_##E},
#define SCAN_ROW(E, name, prod, conf, doc) \
  {name "(x, dim, dtype=none, mask=none)", lib_scan_##E, doc, MQ_BK_NONE, 0, MQ_KEEP_FLOAT},

const mq_libfn mq_lib_math[] = {
    /* unary: torch.masked's 62 names for real dtypes, and relu, isinf,
     * isfinite, logical_not, and the activations softplus ... logsigmoid */
    MQ_UNARY_OPS(UN_ROW)
    MQ_UNARY_ALIASES(UN_ALIAS)

    /* binary: torch.masked's 36 names, and hypot, copysign, xlogy, float_power, logical ops */
    MQ_BINARY_OPS(BIN_ROW)
    MQ_BINARY_ALIASES(BIN_ALIAS)

    /* reductions: dim is none (everything), an int or a list of ints */
    MQ_REDUCE_OPS(RED_ROW)
    {"argmax(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_argmax,
     "int64 index of the largest valid entry (of the flattened tensor if dim is none)", MQ_BK_NONE, 0},
    {"argmin(x, dim=none, keepdim=false, dtype=none, mask=none)", lib_argmin,
     "int64 index of the smallest valid entry (of the flattened tensor if dim is none)", MQ_BK_NONE, 0},
    {"norm(x, p=2, dim=none, keepdim=false, dtype=none, mask=none)", lib_norm,
     "p-norm of the valid entries (p may be inf, -inf, or 0 to count nonzeros)", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"var(x, dim=none, correction=none, keepdim=false, unbiased=none, dtype=none, mask=none)", lib_var,
     "variance of the valid entries: divides by count - correction (default 0: population, "
     "as torch.masked and numpy's ddof=0; pandas' var, summary and describe use 1)",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"std(x, dim=none, correction=none, keepdim=false, unbiased=none, dtype=none, mask=none)", lib_std,
     "standard deviation of the valid entries (correction as in var: default 0, numpy's ddof=0; "
     "pandas' std, summary and describe use 1)", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"median(x, dim=none, keepdim=false, mask=none, interpolation=\"lower\")", lib_median,
     "lower median of the valid entries along one dim (or of all), as torch; "
     "interpolation=\"midpoint\" is pandas' and numpy's (the mean of the two middle entries "
     "of an even count), values only; any of quantile's interpolations", MQ_BK_NONE, 0,
     MQ_KEEP_DTYPE},

    /* scans along one dim */
    MQ_SCAN_OPS(SCAN_ROW)
    {"logcumsumexp(x, dim)", lib_logcumsumexp,
     "log of the running sum of exp along dim, without overflow; masked-out entries add nothing "
     "and stay masked", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},

    /* normalizations along a dim; a fully masked slice stays masked out */
    {"softmax(x, dim, dtype=none, mask=none)", lib_softmax,
     "softmax over the valid entries along dim; a fully masked slice stays masked", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"log_softmax(x, dim, dtype=none, mask=none)", lib_log_softmax,
     "log of softmax over the valid entries along dim, computed stably", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"softmin(x, dim, dtype=none, mask=none)", lib_softmin, "softmax(-x) over the valid entries along dim",
     MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"normalize(x, p=2.0, dim=1, eps=1e-12, mask=none)", lib_normalize,
     "x divided by the p-norm of its valid entries along dim (at least eps)", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},

    /* selection */
    {"where(cond, a, b)", lib_where,
     "a where cond is true, else b; the mask is picked the same way (a plain branch is valid)",
     MQ_BK_NONE, 0},
    {"masked_fill(x, mask, value)", lib_masked_fill,
     "x with value where mask is true; those entries become valid", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"intersect(a, b)", lib_intersect,
     "[a, b] restricted to the positions valid in both, broadcast to one shape", MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};

const mq_constant mq_lib_constants[] = {
    {"nan", NAN},
    {"inf", INFINITY},
    {"pi", 3.14159265358979323846},
    {NULL, 0},
};
