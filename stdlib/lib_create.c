/* lib_create.c - making tensors (full, linspace, eye, randint, the *_like
 * family) and converting them (to, float, double, long, bool, clone,
 * contiguous). */
#include <math.h>

#include "../runtime/kernels/ops.h"
#include "../runtime/kernels/update.h"
#include "../runtime/tensor/layout.h"
#include "text/convert.h"
#include "stdlib.h"

#define RET(t) return mq_objv(t)

/* A shape from one list/tensor argument or from several ints. */
static int shape_arg(mq_state *S, mq_value v, int64_t *shape) {
  if (mq_is_obj(v, MQ_O_LIST)) return mq_arg_shape(S, v, shape, "shape");
  mq_list *wrap = mq_list_new(S, 1);
  mq_list_push(S, wrap, v);
  return mq_arg_shape(S, mq_objv(wrap), shape, "shape");
}

/* The dtype a fill value asks for when none is given: torch.full infers it. */
static mq_dtype value_dtype(mq_value v) {
  return v.type == MQ_BOOL ? MQ_DT_BOOL : v.type == MQ_INT ? MQ_DT_I64 : MQ_DT_F32;
}

/* [value] everywhere; an int value fills an int64 tensor exactly. */
static mq_tensor *full_of(mq_state *S, mq_dtype dt, int nd, const int64_t *shape, mq_value value,
                          const char *who) {
  if (dt == MQ_DT_I64 && value.type == MQ_INT) return mq_tensor_full_i64(S, nd, shape, value.as.i);
  double f = mq_arg_number(S, value, "value");
  if (value.type == MQ_INT || value.type == MQ_FLOAT) /* int8, 300: torch's error */
    mq_check_number_fits(S, dt, f, value.type == MQ_INT, who);
  return mq_tensor_full(S, dt, nd, shape, f);
}

static mq_value lib_full(mq_state *S, mq_value *args) {
  int64_t shape[MQ_MAX_DIMS];
  int nd = shape_arg(S, args[0], shape);
  RET(full_of(S, mq_arg_dtype(S, args[2], value_dtype(args[1])), nd, shape, args[1], "full"));
}

static mq_value lib_linspace(mq_state *S, mq_value *args) {
  double a = mq_arg_number(S, args[0], "start"), b = mq_arg_number(S, args[1], "end");
  int64_t n = mq_arg_int(S, args[2], "steps");
  if (n < 0) mq_error(S, "linspace: steps must be non-negative, got %lld", (long long)n);
  mq_dtype dt = mq_arg_dtype(S, args[3], MQ_DT_F32);
  mq_tensor *t = mq_tensor_new(S, MQ_DT_F64, 1, &n);
  double *d = mq_tensor_data(t);
  /* torch's rule: the first half counts up from start, the second down from
   * end, so both ends are exact. */
  double step = n > 1 ? (b - a) / (double)(n - 1) : 0;
  for (int64_t i = 0; i < n; i++)
    d[i] = n == 1 || i < n / 2 ? a + step * (double)i : b - step * (double)(n - 1 - i);
  RET(mq_astype(S, t, dt));
}

static mq_value lib_eye(mq_state *S, mq_value *args) {
  int64_t n = mq_arg_int(S, args[0], "n");
  int64_t m = args[1].type == MQ_NONE ? n : mq_arg_int(S, args[1], "m");
  if (n < 0 || m < 0) mq_error(S, "eye: sizes must be non-negative, got %lld and %lld", (long long)n, (long long)m);
  int64_t shape[2] = {n, m};
  mq_tensor *t = mq_tensor_full(S, MQ_DT_F64, 2, shape, 0);
  double *d = mq_tensor_data(t);
  for (int64_t i = 0; i < n && i < m; i++) d[i * m + i] = 1;
  RET(mq_astype(S, t, mq_arg_dtype(S, args[2], MQ_DT_F32)));
}

static mq_value lib_randint(mq_state *S, mq_value *args) {
  int64_t low = mq_arg_int(S, args[0], "low"), high = mq_arg_int(S, args[1], "high");
  if (high <= low) mq_error(S, "randint: high (%lld) must be greater than low (%lld)", (long long)high, (long long)low);
  int64_t shape[MQ_MAX_DIMS];
  int nd = mq_arg_shape(S, args[2], shape, "shape");
  mq_tensor *t = mq_tensor_new(S, MQ_DT_I64, nd, shape);
  int64_t *d = mq_tensor_data(t);
  uint64_t span = (uint64_t)high - (uint64_t)low;
  for (int64_t i = 0; i < t->numel; i++) {
    if ((i & 0xFFFF) == 0xFFFF) mq_check_interrupt(S);
    /* Rejection sampling: every value in [low, high) equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % span, r;
    do r = mq_rng_next(S); while (r >= limit);
    d[i] = (int64_t)((uint64_t)low + r % span);
  }
  RET(mq_astype(S, t, mq_arg_dtype(S, args[3], MQ_DT_I64)));
}

/* --- the *_like family: the shape (and the mask, if any) of x ------------- */

static mq_tensor *keep_mask(mq_state *S, mq_tensor *like, mq_tensor *t) {
  if (like->mask) mq_tensor_set_mask(S, t, mq_contiguous(S, like->mask));
  return t;
}

static mq_value like(mq_state *S, mq_value *args, mq_value value, mq_value dtype) {
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  /* x's dtype as stored: the value must fit it (int8 x, 300: torch's error) */
  mq_dtype dt = mq_arg_dtype(S, dtype, (mq_dtype)mq_arg_tensor_stored(S, args[0], "x")->dtype);
  RET(keep_mask(S, x, full_of(S, dt, x->ndim, x->shape, value, "full_like")));
}
static mq_value lib_zeros_like(mq_state *S, mq_value *args) { return like(S, args, mq_int(0), args[1]); }
static mq_value lib_ones_like(mq_state *S, mq_value *args) { return like(S, args, mq_int(1), args[1]); }
static mq_value lib_full_like(mq_state *S, mq_value *args) { return like(S, args, args[1], args[2]); }

static mq_value random_like(mq_state *S, mq_value *args, bool normal) {
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  mq_dtype dt = mq_arg_dtype(S, args[1], mq_dtype_is_float((mq_dtype)x->dtype) ? (mq_dtype)x->dtype : MQ_DT_F32);
  if (!mq_dtype_is_float(dt)) mq_error(S, "random tensors must have a float dtype, not %s", mq_dtype_name(dt));
  mq_tensor *t = normal ? mq_randn(S, x->ndim, x->shape, dt) : mq_rand(S, x->ndim, x->shape, dt);
  RET(keep_mask(S, x, t));
}
static mq_value lib_rand_like(mq_state *S, mq_value *args) { return random_like(S, args, false); }
static mq_value lib_randn_like(mq_state *S, mq_value *args) { return random_like(S, args, true); }

/* --- conversions ---------------------------------------------------------- */

static mq_value lib_to(mq_state *S, mq_value *args) {
  mq_tensor *x = mq_arg_tensor_stored(S, args[0], "x");
  if (args[1].type == MQ_NONE) mq_error(S, "to() needs a dtype, such as \"float64\"");
  RET(mq_astype(S, x, mq_arg_dtype(S, args[1], (mq_dtype)x->dtype)));
}
#define CONVERT(name, DT)                                                      \
  static mq_value lib_##name(mq_state *S, mq_value *args) {                    \
    RET(mq_astype(S, mq_arg_tensor_stored(S, args[0], "x"), DT));              \
  }
CONVERT(double, MQ_DT_F64)
CONVERT(long, MQ_DT_I64)

/* float() and bool() of a string or a plain number are Python's; of a
 * tensor, torch's x.float() and x.bool(). */
static mq_value lib_float(mq_state *S, mq_value *args) {
  mq_value r;
  if (mq_convert_scalar(S, args[0], 'f', &r)) return r;
  RET(mq_astype(S, mq_arg_tensor(S, args[0], "x"), MQ_DT_F32));
}
static mq_value lib_bool(mq_state *S, mq_value *args) {
  mq_value r;
  if (mq_convert_scalar(S, args[0], 'b', &r)) return r;
  RET(mq_astype(S, mq_arg_tensor(S, args[0], "x"), MQ_DT_BOOL));
}

/* Tensors are values, so a copy is only observable through autograd: x * 1
 * in x's own dtype is an exact copy (-0.0, NaN and inf included) whose
 * gradient flows back to x, as torch's clone does. */
static mq_value lib_clone(mq_state *S, mq_value *args) {
  mq_tensor *x = mq_arg_tensor(S, args[0], "x");
  mq_tensor *one = mq_tensor_scalar(S, (mq_dtype)x->dtype, 1);
  one->weak = true;
  RET(mq_binary(S, MQ_BIN_MUL, x, one));
}

static mq_value lib_contiguous(mq_state *S, mq_value *args) {
  RET(mq_contiguous(S, mq_arg_tensor(S, args[0], "x")));
}

/* torch's is_contiguous: whether x's data (a transposed view's is not) is
 * laid out row-major without gaps; sparse tensors have no such layout. */
static mq_value lib_is_contiguous(mq_state *S, mq_value *args) {
  if (mq_is_sparse(args[0]))
    mq_error(S, "is_contiguous: a sparse tensor has no strides (to_dense(x) has)");
  return mq_bool(mq_tensor_is_contiguous(mq_arg_tensor(S, args[0], "x")));
}

const mq_libfn mq_lib_create[] = {
    {"full(shape, value, dtype=none)", lib_full,
     "a tensor of the given shape filled with value (dtype from the value: int64, float32, bool)", MQ_BK_NONE, 0},
    {"linspace(start, end, steps, dtype=none)", lib_linspace,
     "steps evenly spaced values from start to end, both included", MQ_BK_NONE, 0},
    {"eye(n, m=none, dtype=none)", lib_eye, "an n x m identity matrix (m defaults to n)", MQ_BK_NONE, 0},
    {"randint(low, high, *shape, dtype=none)", lib_randint,
     "uniform random ints in [low, high)", MQ_BK_NONE, 0},
    {"zeros_like(x, dtype=none)", lib_zeros_like, "zeros shaped like x; a masked x's mask is kept", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"ones_like(x, dtype=none)", lib_ones_like, "ones shaped like x; a masked x's mask is kept", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"full_like(x, value, dtype=none)", lib_full_like,
     "value everywhere, shaped like x; a masked x's mask is kept", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"rand_like(x, dtype=none)", lib_rand_like,
     "uniform random numbers shaped like x; a masked x's mask is kept", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"randn_like(x, dtype=none)", lib_randn_like,
     "normal random numbers shaped like x; a masked x's mask is kept", MQ_BK_NONE, 0, MQ_KEEP_FLOAT},
    {"to(x, dtype)", lib_to, "x converted to dtype (\"bool\", \"uint8\", \"int8\" ... \"float64\")", MQ_BK_NONE, 0},
    {"float(x)", lib_float,
     "a string (\"0.5\", \"1e-3\", \"inf\") or number as a float; a tensor converted to float32", MQ_BK_NONE, 0},
    {"double(x)", lib_double, "x converted to float64", MQ_BK_NONE, 0},
    {"long(x)", lib_long, "x converted to int64", MQ_BK_NONE, 0},
    {"bool(x)", lib_bool,
     "\"true\" or \"false\", or a number (nonzero is true), as a bool; a tensor converted to bool", MQ_BK_NONE, 0},
    {"clone(x)", lib_clone, "a copy of x (gradients flow back to x)", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"contiguous(x)", lib_contiguous, "x laid out contiguously in memory (same values)", MQ_BK_NONE, 0,
     MQ_KEEP_DTYPE},
    {"is_contiguous(x)", lib_is_contiguous,
     "true when x's data is laid out row-major without gaps (false for a transposed view)",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
