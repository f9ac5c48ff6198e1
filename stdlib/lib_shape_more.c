/* lib_shape_more.c - builtins for triangles, tiling, rolling, differences,
 * bmm and einsum, .T and size(): thin bindings of runtime/kernels/shape_more.h. */
#include <ctype.h>

#include "../runtime/tensor/shape.h"
#include "../runtime/kernels/shape_more.h"
#include "stdlib.h"

#define T(i, what) mq_arg_tensor(S, args[i], what)
#define TS(i, what) mq_arg_tensor_stored(S, args[i], what) /* kept as stored */
#define RET(t) return mq_objv(t)

static mq_value lib_tril(mq_state *S, mq_value *args) {
  RET(mq_tri(S, T(0, "x"), mq_arg_int(S, args[1], "diagonal"), false));
}

static mq_value lib_triu(mq_state *S, mq_value *args) {
  RET(mq_tri(S, T(0, "x"), mq_arg_int(S, args[1], "diagonal"), true));
}

static mq_value lib_repeat(mq_state *S, mq_value *args) {
  int64_t sizes[MQ_MAX_DIMS];
  int n = mq_arg_shape(S, args[1], sizes, "sizes");
  RET(mq_repeat(S, T(0, "x"), n, sizes));
}

static mq_value lib_roll(mq_state *S, mq_value *args) {
  mq_tensor *t = T(0, "x");
  int ns, nd = 0;
  int64_t *shifts = mq_int_list(S, args[1], &ns, "shifts");
  int64_t *dims = args[2].type == MQ_NONE ? NULL : mq_int_list(S, args[2], &nd, "dims");
  if (dims && nd != ns)
    mq_error(S, "roll: %d shift%s for %d dim%s: give one shift per dim", ns, ns == 1 ? "" : "s",
             nd, nd == 1 ? "" : "s");
  RET(mq_roll(S, t, ns, shifts, dims));
}

static mq_value lib_diff(mq_state *S, mq_value *args) {
  mq_tensor *pre = args[3].type == MQ_NONE ? NULL : T(3, "prepend");
  mq_tensor *app = args[4].type == MQ_NONE ? NULL : T(4, "append");
  RET(mq_diff(S, T(0, "x"), mq_arg_int(S, args[1], "n"), mq_arg_int(S, args[2], "dim"), pre, app));
}

/* as stored, like matmul: a bfloat16 bmm runs the bfloat16 products */
static mq_value lib_bmm(mq_state *S, mq_value *args) { RET(mq_bmm(S, TS(0, "a"), TS(1, "b"))); }

/* A one-operand spec that sums over a label: one its output lacks (the
 * implicit output has the labels written once). */
static bool einsum_sums(const char *s, size_t len) {
  int in[128] = {0};
  bool out[128] = {0}, explicit_out = false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '-' && i + 1 < len && s[i + 1] == '>') {
      explicit_out = true;
      for (size_t j = i + 2; j < len; j++) out[(unsigned char)s[j] & 127] = true;
      break;
    }
    if (isalpha(c)) in[c]++;
  }
  for (int c = 0; c < 128; c++)
    if (in[c] && (explicit_out ? !out[c] : in[c] > 1)) return true;
  return false;
}

static mq_value lib_einsum(mq_state *S, mq_value *args) {
  if (!mq_is_obj(args[0], MQ_O_STRING))
    mq_error(S, "einsum: the spec must be a string such as \"ij,jk->ik\", not %s",
             mq_value_a_type_name(args[0]));
  const mq_string *spec = mq_as_string(args[0]);
  mq_list *l = mq_as_list(args[1]);
  /* einsum("ij,jk", [a, b]) as torch also accepts */
  if (l->len == 1 && mq_is_obj(l->items[0], MQ_O_LIST)) l = mq_as_list(l->items[0]);
  mq_tensor **ops = mq_scratch(S, (size_t)(l->len ? l->len : 1) * sizeof *ops);
  for (int i = 0; i < l->len; i++) ops[i] = mq_arg_tensor_stored(S, l->items[i], "operands");
  mq_dtype first = l->len ? (mq_dtype)ops[0]->dtype : MQ_DT_F32;
  for (int i = 0; i < l->len; i++) ops[i] = mq_tensor_computable(S, ops[i]);
  mq_tensor *r = mq_einsum(S, spec->chars, spec->len, l->len, ops);
  /* torch's dtype for storage dtypes: the operand's, except that one
   * operand summed over a label is a sum (int8 -> int64) */
  if (mq_dtype_is_float(first) || !(l->len == 1 && einsum_sums(spec->chars, spec->len)))
    r = mq_narrow_back(S, r, first);
  RET(r);
}

static mq_value lib_T(mq_state *S, mq_value *args) { RET(mq_reverse_dims(S, TS(0, "x"))); }

static mq_value lib_size(mq_state *S, mq_value *args) {
  mq_tensor *t = T(0, "x");
  if (args[1].type != MQ_NONE) {
    if (t->ndim == 0) mq_error(S, "size: a 0-d tensor has no dims (its size is [])");
    return mq_int(t->shape[mq_shape_norm_dim(S, mq_arg_int(S, args[1], "dim"), t->ndim)]);
  }
  mq_list *l = mq_list_new(S, t->ndim);
  for (int d = 0; d < t->ndim; d++) mq_list_push(S, l, mq_int(t->shape[d]));
  RET(l);
}

const mq_libfn mq_lib_shape_more[] = {
    {"tril(x, diagonal=0)", lib_tril,
     "x with the entries above the diagonal set to 0 (their validity kept)", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"triu(x, diagonal=0)", lib_triu,
     "x with the entries below the diagonal set to 0 (their validity kept)", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"repeat(x, *sizes)", lib_repeat,
     "x tiled sizes[i] times along dim i (more sizes than dims add leading dims)", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"roll(x, shifts, dims=none)", lib_roll,
     "entries moved shifts places along dims, wrapping around (no dims: the flattened x)",
     MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"diff(x, n=1, dim=-1, prepend=none, append=none)", lib_diff,
     "the n-th forward difference along dim, prepend and append joined first; valid where both entries are", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"bmm(a, b)", lib_bmm, "batched matrix product of two 3-d tensors (matmul's masks)", MQ_BK_NONE, 0, MQ_KEEP_DTYPE},
    {"einsum(spec, *operands)", lib_einsum,
     "Einstein summation, e.g. einsum(\"bij,bjk->bik\", a, b); masked: sums the valid terms",
     MQ_BK_NONE, 0},
    {"T(x)", lib_T, "x.T: the dims reversed (the transpose of a matrix)", MQ_BK_NONE, 0},
    {"size(x, dim=none)", lib_size, "the shape as a list of ints, or the size of dim", MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
