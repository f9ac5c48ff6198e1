/* lib_shape.c - builtins for shapes and views, joining and splitting,
 * matmul and length masks: thin bindings of runtime/tensor/shape.h. */
#include "../core/checked.h"
#include "../runtime/kernels/ops.h"
#include "../runtime/tensor/shape.h"
#include "stdlib.h"

#define T(i, what) mq_arg_tensor(S, args[i], what)
/* views and copies keep a storage dtype as stored */
#define TS(i, what) mq_arg_tensor_stored(S, args[i], what)
#define RET(t) return mq_objv(t)

/* Ints given as f(x, 2, 3), f(x, [2, 3]) or f(x, some_list): [v] is an int,
 * a 0-d or 1-d int tensor, or a list of ints (a single list or tensor inside
 * a list is unwrapped, for *rest parameters). Scratch memory. */
int64_t *mq_int_list(mq_state *S, mq_value v, int *n, const char *what) {
  if (mq_is_obj(v, MQ_O_LIST) && mq_as_list(v)->len == 1) {
    mq_value inner = mq_as_list(v)->items[0];
    if (mq_is_obj(inner, MQ_O_LIST) || (mq_is_tensor(inner) && mq_as_tensor(inner)->ndim == 1))
      v = inner;
  }
  if (mq_is_tensor(v) && mq_as_tensor(v)->ndim > 0) {
    mq_tensor *t = mq_tensor_computable(S, mq_as_tensor(v)); /* int8 ... int32 count as ints */
    if (t->ndim == 1 && t->numel == 0 && !t->mask) { /* [] (a float32 tensor) */
      *n = 0;
      return mq_scratch(S, sizeof(int64_t));
    }
    if (t->ndim != 1 || t->dtype != MQ_DT_I64 || t->mask)
      mq_error(S, "%s must be ints or a list of ints, got a %s %s tensor", what,
               mq_dtype_name((mq_dtype)mq_as_tensor(v)->dtype), mq_shape_str(S, t->ndim, t->shape));
    /* a copy masq owns: callers check the ints, then use them (tensor.h:
     * mq_tensor_owned) */
    mq_tensor *c = mq_contiguous(S, mq_tensor_owned(S, t));
    *n = (int)(t->numel > INT32_MAX ? INT32_MAX : t->numel);
    return mq_tensor_data(c);
  }
  if (!mq_is_obj(v, MQ_O_LIST)) {
    int64_t *one = mq_scratch(S, sizeof *one);
    *one = mq_arg_int(S, v, what);
    *n = 1;
    return one;
  }
  mq_list *l = mq_as_list(v);
  int64_t *out = mq_scratch(S, (size_t)(l->len ? l->len : 1) * sizeof *out);
  for (int i = 0; i < l->len; i++) out[i] = mq_arg_int(S, l->items[i], what);
  *n = l->len;
  return out;
}

/* int_list for a shape or a list of dims, at most MQ_MAX_DIMS long. */
static int64_t *dims_list(mq_state *S, mq_value v, int *n, const char *what) {
  int64_t *d = mq_int_list(S, v, n, what);
  if (*n > MQ_MAX_DIMS)
    mq_error(S, "%s has %d entries; tensors have at most %d dimensions", what, *n, MQ_MAX_DIMS);
  return d;
}

/* The tensors of [v] as stored. */
static mq_tensor **stored_list(mq_state *S, mq_value v, int *n, const char *fn) {
  if (mq_is_tensor(v)) {
    mq_tensor *t = mq_as_tensor(v);
    if (t->ndim == 0)
      mq_error(S, "%s: expected a list of tensors, got a 0-d tensor", fn);
    *n = (int)(t->shape[0] > INT32_MAX ? INT32_MAX : t->shape[0]);
    mq_tensor **ts = mq_scratch(S, (size_t)(*n ? *n : 1) * sizeof *ts);
    for (int i = 0; i < *n; i++) {
      mq_poll(S); /* a view a row: 10^7 rows take a while */
      ts[i] = mq_select(S, t, 0, i);
    }
    return ts;
  }
  if (!mq_is_obj(v, MQ_O_LIST))
    mq_error(S, "%s: expected a list of tensors, got %s", fn, mq_value_a_type_name(v));
  mq_list *l = mq_as_list(v);
  mq_tensor **ts = mq_scratch(S, (size_t)(l->len ? l->len : 1) * sizeof *ts);
  for (int i = 0; i < l->len; i++) {
    mq_poll(S);
    ts[i] = mq_arg_tensor_stored(S, l->items[i], "tensors");
  }
  *n = l->len;
  return ts;
}

/* A list of tensors (a tensor stands for the list of its rows), each in
 * its compute dtype, with in *want the dtype torch's cat gives them (a
 * storage dtype if they have one: mq_narrow_back). */
static mq_tensor **tensor_list(mq_state *S, mq_value v, int *n, const char *fn, mq_dtype *want) {
  mq_tensor **ts = stored_list(S, v, n, fn);
  *want = *n > 0 ? mq_result_type(*n, ts) : MQ_DT_F32;
  for (int i = 0; i < *n; i++) ts[i] = mq_tensor_computable(S, ts[i]);
  return ts;
}

/* --- shapes and views ------------------------------------------------------ */

static mq_value lib_reshape(mq_state *S, mq_value *args) {
  int n;
  int64_t *shape = dims_list(S, args[1], &n, "shape");
  RET(mq_reshape(S, TS(0, "x"), n, shape));
}

static mq_value lib_flatten(mq_state *S, mq_value *args) {
  RET(mq_flatten(S, TS(0, "x"), mq_arg_int(S, args[1], "start_dim"),
                 mq_arg_int(S, args[2], "end_dim")));
}

static mq_value lib_squeeze(mq_state *S, mq_value *args) {
  int n = 0;
  int64_t *dims = args[1].type == MQ_NONE ? NULL : dims_list(S, args[1], &n, "dim");
  mq_tensor *t = TS(0, "x");
  if (args[1].type != MQ_NONE && n == 0) return mq_objv(t); /* squeeze(x, []) */
  RET(mq_squeeze(S, t, n, dims));
}

static mq_value lib_unsqueeze(mq_state *S, mq_value *args) {
  RET(mq_unsqueeze(S, TS(0, "x"), mq_arg_int(S, args[1], "dim")));
}

static mq_value lib_transpose(mq_state *S, mq_value *args) {
  RET(mq_transpose(S, TS(0, "x"), mq_arg_int(S, args[1], "dim0"), mq_arg_int(S, args[2], "dim1")));
}

static mq_value lib_permute(mq_state *S, mq_value *args) {
  int n;
  int64_t *dims = dims_list(S, args[1], &n, "dims");
  RET(mq_permute(S, TS(0, "x"), n, dims));
}

static mq_value lib_t(mq_state *S, mq_value *args) { RET(mq_t(S, TS(0, "x"))); }

static mq_value lib_expand(mq_state *S, mq_value *args) {
  int n;
  int64_t *shape = dims_list(S, args[1], &n, "shape");
  RET(mq_expand_sizes(S, TS(0, "x"), n, shape));
}

static mq_value lib_narrow(mq_state *S, mq_value *args) {
  RET(mq_narrow(S, TS(0, "x"), mq_arg_int(S, args[1], "dim"), mq_arg_int(S, args[2], "start"),
                mq_arg_int(S, args[3], "length")));
}

static mq_value lib_select(mq_state *S, mq_value *args) {
  RET(mq_select(S, TS(0, "x"), mq_arg_int(S, args[1], "dim"), mq_arg_int(S, args[2], "index")));
}

static mq_value lib_flip(mq_state *S, mq_value *args) {
  int n;
  int64_t *dims = dims_list(S, args[1], &n, "dims");
  RET(mq_flip(S, TS(0, "x"), n, dims));
}

static mq_value lib_diagonal(mq_state *S, mq_value *args) {
  RET(mq_diagonal(S, TS(0, "x"), mq_arg_int(S, args[1], "offset"), mq_arg_int(S, args[2], "dim1"),
                  mq_arg_int(S, args[3], "dim2")));
}

/* --- joining and splitting ---------------------------------------------------- */

static mq_value lib_cat(mq_state *S, mq_value *args) {
  int n;
  mq_dtype want;
  mq_tensor **ts = tensor_list(S, args[0], &n, "cat", &want);
  RET(mq_narrow_back(S, mq_cat(S, n, ts, mq_arg_int(S, args[1], "dim")), want));
}

static mq_value lib_stack(mq_state *S, mq_value *args) {
  int n;
  mq_dtype want;
  mq_tensor **ts = tensor_list(S, args[0], &n, "stack", &want);
  RET(mq_narrow_back(S, mq_stack(S, n, ts, mq_arg_int(S, args[1], "dim")), want));
}

/* The pieces of [t] along [d] of the given sizes, as a list of views. */
static mq_value pieces(mq_state *S, mq_tensor *t, int d, int64_t n, const int64_t *sizes,
                       int64_t each) {
  if (n > MQ_LIST_MAX)
    mq_error(S, "%lld pieces are more than a list holds (%d)", (long long)n, MQ_LIST_MAX);
  mq_list *l = mq_list_new(S, 0);
  for (int64_t i = 0, pos = 0; i < n; i++) {
    int64_t len = sizes ? sizes[i] : each;
    if (len > t->shape[d] - pos) len = t->shape[d] - pos; /* the last one may be short */
    mq_list_push(S, l, mq_objv(mq_narrow(S, t, d, pos, len)));
    pos += len;
  }
  RET(l);
}

static mq_value lib_split(mq_state *S, mq_value *args) {
  mq_tensor *t = TS(0, "x");
  if (t->ndim == 0) mq_error(S, "split: cannot split a 0-d tensor");
  int d = mq_shape_norm_dim(S, mq_arg_int(S, args[2], "dim"), t->ndim);
  int64_t size = t->shape[d];
  mq_value s = args[1];
  if (s.type == MQ_INT || (mq_is_tensor(s) && mq_as_tensor(s)->ndim == 0)) {
    int64_t each = mq_arg_int(S, s, "size");
    if (each <= 0) mq_error(S, "split: the size must be positive, got %lld", (long long)each);
    int64_t n = size == 0 ? 1 : mq_ceil_div(size, each);
    return pieces(S, t, d, n, NULL, each);
  }
  int n;
  int64_t *sizes = mq_int_list(S, s, &n, "sizes"), total = 0;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) mq_error(S, "split: sizes must not be negative, got %lld", (long long)sizes[i]);
    if (!mq_add_ok(total, sizes[i], &total))
      mq_error(S, "split: the sizes add up to more than %lld", (long long)INT64_MAX);
  }
  if (total != size)
    mq_error(S, "split: the sizes add up to %lld but dimension %d has size %lld", (long long)total,
             d, (long long)size);
  return pieces(S, t, d, n, sizes, 0);
}

static mq_value lib_chunk(mq_state *S, mq_value *args) {
  mq_tensor *t = TS(0, "x");
  if (t->ndim == 0) mq_error(S, "chunk: cannot split a 0-d tensor");
  int64_t chunks = mq_arg_int(S, args[1], "n");
  if (chunks <= 0) mq_error(S, "chunk: n must be positive, got %lld", (long long)chunks);
  int d = mq_shape_norm_dim(S, mq_arg_int(S, args[2], "dim"), t->ndim);
  int64_t size = t->shape[d];
  /* torch's rule: pieces of ceil(size / n); fewer than n when they run out;
   * an empty dim gives n empty pieces */
  if (size == 0) return pieces(S, t, d, chunks, NULL, 0);
  int64_t each = mq_ceil_div(size, chunks);
  return pieces(S, t, d, mq_ceil_div(size, each), NULL, each);
}

/* --- products and masks ----------------------------------------------------------- */

static mq_value lib_matmul(mq_state *S, mq_value *args) {
  RET(mq_matmul(S, TS(0, "a"), TS(1, "b")));
}

static mq_value lib_length_mask(mq_state *S, mq_value *args) {
  int64_t max_len = -1;
  if (args[1].type != MQ_NONE) {
    max_len = mq_arg_int(S, args[1], "max_len");
    if (max_len < 0)
      mq_error(S, "length_mask: max_len must not be negative, got %lld", (long long)max_len);
  }
  RET(mq_length_mask(S, T(0, "lengths"), max_len));
}

const mq_libfn mq_lib_shape[] = {
    {"reshape(x, *shape)", lib_reshape,
     "x with a new shape of the same size (one dim may be -1); the mask follows", MQ_BK_NONE, 0},
    {"view(x, *shape)", lib_reshape, "same as reshape (tensors are values: views are never written)", MQ_BK_NONE, 0},
    {"flatten(x, start_dim=0, end_dim=-1)", lib_flatten, "merge dims start_dim..end_dim into one", MQ_BK_NONE, 0},
    {"squeeze(x, dim=none)", lib_squeeze, "drop dims of size 1 (all, or those listed in dim)", MQ_BK_NONE, 0},
    {"unsqueeze(x, dim)", lib_unsqueeze, "insert a dim of size 1 at dim", MQ_BK_NONE, 0},
    {"transpose(x, dim0, dim1)", lib_transpose, "swap two dims", MQ_BK_NONE, 0},
    {"permute(x, *dims)", lib_permute, "reorder the dims: dim i of the result is dims[i] of x", MQ_BK_NONE, 0},
    {"t(x)", lib_t, "transpose of a tensor of at most 2 dims", MQ_BK_NONE, 0},
    {"expand(x, *shape)", lib_expand,
     "broadcast x to shape without copying; -1 keeps a dim's size", MQ_BK_NONE, 0},
    {"broadcast_to(x, shape)", lib_expand, "broadcast x to shape without copying", MQ_BK_NONE, 0},
    {"narrow(x, dim, start, length)", lib_narrow, "length entries of dim from start", MQ_BK_NONE, 0},
    {"select(x, dim, index)", lib_select, "entry index of dim, which is removed", MQ_BK_NONE, 0},
    {"flip(x, *dims)", lib_flip, "reverse the order along dims", MQ_BK_NONE, 0},
    {"diagonal(x, offset=0, dim1=0, dim2=1)", lib_diagonal,
     "the entries (i, i + offset) of dims dim1 and dim2 as a last dim (a view; mask alike)", MQ_BK_NONE, 0},
    {"cat(tensors, dim=0)", lib_cat,
     "join tensors along an existing dim; plain ones count as all valid next to masked ones", MQ_BK_NONE, 0},
    {"stack(tensors, dim=0)", lib_stack, "join same-shaped tensors along a new dim", MQ_BK_NONE, 0},
    {"split(x, size_or_sizes, dim=0)", lib_split,
     "a list of pieces along dim: of one size (the last may be shorter) or of the listed sizes", MQ_BK_NONE, 0},
    {"chunk(x, n, dim=0)", lib_chunk, "a list of at most n nearly equal pieces along dim", MQ_BK_NONE, 0},
    {"matmul(a, b)", lib_matmul,
     "matrix product (a @ b), batched; masked: sums the valid pairs, none valid is masked out", MQ_BK_NONE, 0},
    {"length_mask(lengths, max_len=none)", lib_length_mask,
     "bool mask (..., max_len), true where position < length; max_len defaults to the longest", MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
