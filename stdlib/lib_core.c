/* lib_core.c - the first builtins: masks, creation, info, print (the math
 * is in lib_math.c). Each is a thin binding of a runtime operation; the
 * signature string is the binding spec and the help text. */
#include <math.h>

#include "../runtime/autograd/autograd.h"
#include "../runtime/kernels/update.h"
#include "../runtime/tensor/parallel.h"
#include "../runtime/sparse/sparse.h"
#include "../vm/globals.h"
#include "../vm/table.h"
#include "stdlib.h"

#define T(i, what) mq_arg_tensor(S, args[i], what)
#define TA(i, what) mq_arg_tensor_any(S, args[i], what)
#define RET(t) return mq_objv(t)

/* --- masks ------------------------------------------------------------------- */

static mq_value lib_masked(mq_state *S, mq_value *args) {
  if (mq_is_sparse(args[0]) || mq_is_sparse(args[1])) {
    mq_tensor *t = mq_sparse_masked(S, TA(0, "data"), args[1].type == MQ_NONE ? NULL : TA(1, "mask"));
    RET(mq_arg_bool(S, args[2], "requires_grad") ? mq_ag_leaf(S, t, true, "masked") : t);
  }
  if (args[1].type == MQ_NONE)
    mq_error(S, "masked: a strided tensor needs a mask (only a sparse one is its own mask)");
  /* the mask as stored: it must be bool, and the error names a uint8 one uint8 */
  mq_tensor *data = mq_arg_tensor_stored(S, args[0], "data"),
            *t = mq_masked(S, data, mq_arg_tensor_stored(S, args[1], "mask"));
  if (data->requires_grad) /* torch warns too (its advice: detach) */
    mq_warn_once(S, MQ_WARN_MASKED_GRAD,
                 "masked() starts a new graph: no gradient will reach its data, which requires "
                 "grad; use as_masked(data, mask) to keep the graph (warned once)");
  RET(mq_arg_bool(S, args[2], "requires_grad") ? mq_ag_leaf(S, t, true, "masked") : t);
}
static mq_value lib_get_data(mq_state *S, mq_value *args) {
  if (mq_is_sparse(args[0])) RET(mq_sparse_get_data(S, TA(0, "x")));
  RET(mq_get_data(S, mq_arg_tensor_stored(S, args[0], "x")));
}
static mq_value lib_get_mask(mq_state *S, mq_value *args) {
  if (mq_is_sparse(args[0])) RET(mq_sparse_get_mask(S, TA(0, "x")));
  RET(mq_get_mask(S, T(0, "x")));
}
static mq_value lib_to_tensor(mq_state *S, mq_value *args) {
  if (mq_is_obj(args[0], MQ_O_TABLE)) { /* its numeric columns side by side */
    int n;
    mq_tensor *x = mq_table_to_tensor(S, mq_as_table(args[0]), NULL, &n);
    RET(args[1].type == MQ_NONE ? x : mq_to_tensor(S, x, mq_arg_number(S, args[1], "fill")));
  }
  if (args[1].type == MQ_NONE) mq_error(S, "to_tensor() missing argument 'fill'");
  RET(mq_to_tensor(S, T(0, "x"), mq_arg_number(S, args[1], "fill")));
}
static mq_value lib_is_masked(mq_state *S, mq_value *args) {
  const mq_tensor *t = mq_as_tensor_any(args[0]);
  return mq_bool(t && t->mask != NULL);
}

/* --- creation ------------------------------------------------------------------ */

static mq_value tensor_value(mq_state *S, mq_value *args) {
  if (args[1].type != MQ_NONE && mq_arg_dtype(S, args[1], MQ_DT_F32) == MQ_DT_F64 &&
      !mq_is_tensor(args[0]))
    RET(mq_tensor_from_value_f64(S, args[0], "data"));
  mq_tensor *t = mq_arg_tensor_stored(S, args[0], "data");
  mq_dtype dt = mq_arg_dtype(S, args[1], (mq_dtype)t->dtype);
  if (dt != t->dtype && dt != MQ_DT_BOOL && !mq_dtype_is_float(dt)) {
    /* tensor([300], dtype=int8): torch refuses a written number that does
     * not fit; a literal list arrives here as a tensor, so a tensor's
     * values are checked too (torch wraps those: to(x, int8) still does) */
    const char *p = mq_tensor_data(t);
    size_t es = mq_dtype_size((mq_dtype)t->dtype);
    for (int64_t k = 0; k < t->numel; k++) {
      if ((k & 0xffff) == 0xffff) mq_poll(S);
      mq_check_number_fits(S, dt, mq_elem_f64((mq_dtype)t->dtype, p + (size_t)k * es),
                           !mq_dtype_is_float((mq_dtype)t->dtype), "tensor");
    }
  }
  if (t->weak) {
    /* tensor(3) is an ordinary 0-d tensor, not a weak scalar: it promotes
     * like any tensor. */
    if (dt == MQ_DT_I64 && t->dtype == MQ_DT_I64)
      RET(mq_tensor_scalar_i64(S, *(const int64_t *)mq_tensor_data(t)));
    RET(mq_tensor_scalar(S, dt, mq_tensor_item(S, t)));
  }
  RET(mq_astype(S, t, dt));
}
/* always a leaf, as torch.tensor: a copy of a tensor's values, not of its history */
static mq_value lib_tensor(mq_state *S, mq_value *args) {
  mq_tensor *t = mq_as_tensor(tensor_value(S, args));
  RET(mq_ag_leaf(S, t, mq_arg_bool(S, args[2], "requires_grad"), "tensor"));
}

static mq_value filled(mq_state *S, mq_value *args, double v) {
  int64_t shape[MQ_MAX_DIMS];
  int nd = mq_arg_shape(S, args[0], shape, "shape");
  RET(mq_tensor_full(S, mq_arg_dtype(S, args[1], MQ_DT_F32), nd, shape, v));
}
static mq_value lib_zeros(mq_state *S, mq_value *args) { return filled(S, args, 0); }
static mq_value lib_ones(mq_state *S, mq_value *args) { return filled(S, args, 1); }

static mq_value lib_arange(mq_state *S, mq_value *args) {
  /* arange(stop), arange(start, stop), arange(start, stop, step) */
  mq_value a = args[0], b = args[1], c = args[2];
  bool any_float = a.type == MQ_FLOAT || b.type == MQ_FLOAT || c.type == MQ_FLOAT;
  double start = 0, stop, step = 1;
  if (b.type == MQ_NONE) {
    stop = mq_arg_number(S, a, "stop");
  } else {
    start = mq_arg_number(S, a, "start");
    stop = mq_arg_number(S, b, "stop");
    if (c.type != MQ_NONE) step = mq_arg_number(S, c, "step");
  }
  mq_dtype dt = mq_arg_dtype(S, args[3], any_float ? MQ_DT_F32 : MQ_DT_I64);
  if (!any_float && dt == MQ_DT_I64) { /* exact beyond 2^53 */
    int64_t istart = 0, istop, istep = 1;
    if (b.type == MQ_NONE) {
      istop = mq_arg_int(S, a, "stop");
    } else {
      istart = mq_arg_int(S, a, "start");
      istop = mq_arg_int(S, b, "stop");
      if (c.type != MQ_NONE) istep = mq_arg_int(S, c, "step");
    }
    RET(mq_arange_i64(S, istart, istop, istep));
  }
  RET(mq_arange(S, start, stop, step, dt));
}

static mq_value random_tensor(mq_state *S, mq_value *args, bool normal) {
  int64_t shape[MQ_MAX_DIMS];
  int nd = mq_arg_shape(S, args[0], shape, "shape");
  mq_dtype dt = mq_arg_dtype(S, args[1], MQ_DT_F32);
  if (!mq_dtype_is_float(dt)) mq_error(S, "random tensors must have a float dtype");
  RET(normal ? mq_randn(S, nd, shape, dt) : mq_rand(S, nd, shape, dt));
}
static mq_value lib_rand(mq_state *S, mq_value *args) { return random_tensor(S, args, false); }
static mq_value lib_randn(mq_state *S, mq_value *args) { return random_tensor(S, args, true); }

static mq_value lib_seed(mq_state *S, mq_value *args) {
  mq_rng_seed(S, (uint64_t)mq_arg_int(S, args[0], "n"));
  return mq_none();
}

/* --- info ------------------------------------------------------------------------------ */

static mq_value lib_shape(mq_state *S, mq_value *args) {
  mq_tensor *t = TA(0, "x");
  mq_list *l = mq_list_new(S, t->ndim);
  for (int i = 0; i < t->ndim; i++) mq_list_push(S, l, mq_int(t->shape[i]));
  RET(l);
}
static mq_value lib_ndim(mq_state *S, mq_value *args) { return mq_int(TA(0, "x")->ndim); }
static mq_value lib_numel(mq_state *S, mq_value *args) { return mq_int(TA(0, "x")->numel); }
static mq_value lib_dtype(mq_state *S, mq_value *args) {
  const char *name = mq_dtype_name((mq_dtype)mq_arg_tensor_any_stored(S, args[0], "x")->dtype);
  RET(mq_string_new(S, name, strlen(name)));
}
static mq_value lib_item(mq_state *S, mq_value *args) {
  return mq_tensor_item_value(S, T(0, "x"));
}

/* --- output ------------------------------------------------------------------------------ */

/* print's text (values, sep, end) in S->out. */
static void print_text(mq_state *S, mq_value *args) {
  mq_list *l = mq_as_list(args[0]);
  S->out.len = 0;
  for (int i = 0; i < l->len; i++) {
    mq_poll(S);
    if (i && mq_is_obj(args[1], MQ_O_STRING)) mq_value_format(S, &S->out, args[1]);
    else if (i) mq_buf_putc(S, &S->out, ' ');
    mq_value_format(S, &S->out, l->items[i]);
  }
  if (mq_is_obj(args[2], MQ_O_STRING)) mq_value_format(S, &S->out, args[2]);
  else mq_buf_putc(S, &S->out, '\n');
}

/* print's file=: "stdout" (the write hook) or "stderr" (write_err), as
 * Python's file=sys.stderr; no other file, so printing opens nothing. */
static mq_value lib_print(mq_state *S, mq_value *args) {
  bool err = false;
  if (args[3].type != MQ_NONE) {
    const mq_string *f = mq_is_obj(args[3], MQ_O_STRING) ? mq_as_string(args[3]) : NULL;
    err = f && f->len == 6 && memcmp(f->chars, "stderr", 6) == 0;
    if (!err && !(f && f->len == 6 && memcmp(f->chars, "stdout", 6) == 0))
      mq_error(S, "print(): file must be \"stdout\" or \"stderr\" (files are written with save)");
  }
  print_text(S, args);
  (err ? mq_write_err : mq_write)(S, S->out.data, S->out.len);
  return mq_none();
}

static mq_value lib_eprint(mq_state *S, mq_value *args) {
  print_text(S, args);
  mq_write_err(S, S->out.data, S->out.len);
  return mq_none();
}

/* Ends the run with MASQ_EXIT: not an error, so no try catches it, and the
 * host (never the process) decides what it means; the CLI exits with it. */
static mq_value lib_exit(mq_state *S, mq_value *args) {
  int64_t code = mq_arg_int(S, args[0], "code");
  if (code < 0 || code > 255) mq_error(S, "exit(): the code must be from 0 to 255, got %lld", (long long)code);
  S->exit_code = (int)code;
  mq_throw(S, MASQ_EXIT, "exit(%d)", (int)code);
}

/* --- print options --------------------------------------------------------------- */

/* An int option from [lo] to [hi], or [keep] when none. */
static int64_t option(mq_state *S, mq_value v, const char *name, int64_t lo, int64_t hi, int64_t keep) {
  if (v.type == MQ_NONE) return keep;
  int64_t n = mq_arg_int(S, v, name);
  if (n < lo || n > hi)
    mq_error(S, "set_printoptions: %s must be from %lld to %lld, got %lld", name, (long long)lo,
             (long long)hi, (long long)n);
  return n;
}

static mq_value lib_set_printoptions(mq_state *S, mq_value *args) {
  mq_printopts po = S->print;
  if (args[5].type != MQ_NONE) { /* a profile first, as torch: the other arguments refine it */
    const mq_string *p = mq_is_obj(args[5], MQ_O_STRING) ? mq_as_string(args[5]) : NULL;
    po = MQ_PRINTOPTS_DEFAULT;
    if (p && mq_string_is(p, "short")) po.precision = 2, po.edgeitems = 2;
    else if (p && mq_string_is(p, "full")) po.threshold = INT64_MAX;
    else if (!p || !mq_string_is(p, "default"))
      mq_error(S, "set_printoptions: profile must be \"default\", \"short\" or \"full\"");
  }
  po.precision = (int)option(S, args[0], "precision", 0, 16, po.precision);
  if (args[1].type == MQ_FLOAT && args[1].as.f == INFINITY)
    po.threshold = INT64_MAX; /* threshold=inf: never summarize */
  else
    po.threshold = option(S, args[1], "threshold", 0, INT64_MAX, po.threshold);
  po.edgeitems = (int)option(S, args[2], "edgeitems", 1, 1000, po.edgeitems);
  po.linewidth = (int)option(S, args[3], "linewidth", 20, 100000, po.linewidth);
  if (args[4].type != MQ_NONE) po.sci_mode = mq_arg_bool(S, args[4], "sci_mode");
  else if (args[5].type != MQ_NONE) po.sci_mode = -1;
  S->print = po;
  return mq_none();
}

/* --- threads ------------------------------------------------------------------- */

static mq_value lib_set_num_threads(mq_state *S, mq_value *args) {
  int64_t n = mq_arg_int(S, args[0], "n");
  if (n < 1 || n > 64) mq_error(S, "set_num_threads: n must be from 1 to 64, got %lld", (long long)n);
  S->nthreads = (int)n;
  return mq_none();
}
static mq_value lib_get_num_threads(mq_state *S, mq_value *args) {
  return mq_int(mq_state_threads(S));
}

const mq_libfn mq_lib_core[] = {
    {"masked(data, mask=none, requires_grad=false)", lib_masked,
     "a masked tensor: data where mask is true, masked out (--) elsewhere; mask broadcasts; "
     "a masked data stays valid where both masks are; "
     "a sparse data without mask is its own mask (unstored entries masked out)", MQ_BK_NONE, 0},
    {"masked_tensor(data, mask, requires_grad=false)", lib_masked,
     "masked(data, mask, requires_grad) under torch.masked's name", MQ_BK_NONE, 0},
    {"get_data(x)", lib_get_data, "the data of a masked tensor, masked-out entries included", MQ_BK_NONE, 0},
    {"get_mask(x)", lib_get_mask, "the validity mask as a bool tensor (true = valid)", MQ_BK_NONE, 0},
    {"to_tensor(x, fill=none)", lib_to_tensor, "a plain tensor with masked-out entries set to fill; of a table, its numeric and date columns as one masked (rows, columns) tensor (filled if fill is given)", MQ_BK_NONE, 0},
    {"is_masked(x)", lib_is_masked, "true if x is a masked tensor", MQ_BK_NONE, 0},
    {"tensor(data, dtype=none, requires_grad=false)", lib_tensor, "a tensor from a number or nested list", MQ_BK_NONE, 0},
    {"zeros(*shape, dtype=none)", lib_zeros, "a tensor of zeros (float32 unless dtype is given)", MQ_BK_NONE, 0},
    {"ones(*shape, dtype=none)", lib_ones, "a tensor of ones (float32 unless dtype is given)", MQ_BK_NONE, 0},
    {"arange(start, stop=none, step=none, dtype=none)", lib_arange,
     "evenly spaced values in [start, stop); arange(n) is 0 .. n-1", MQ_BK_NONE, 0},
    {"rand(*shape, dtype=none)", lib_rand, "uniform random numbers in [0, 1)", MQ_BK_NONE, 0},
    {"randn(*shape, dtype=none)", lib_randn, "standard normal random numbers", MQ_BK_NONE, 0},
    {"seed(n)", lib_seed, "reseed the random generator of rand and randn", MQ_BK_NONE, 0},
    {"shape(x)", lib_shape, "the shape as a list of ints", MQ_BK_NONE, 0},
    {"ndim(x)", lib_ndim, "the number of dimensions", MQ_BK_NONE, 0},
    {"dim(x)", lib_ndim, "the number of dimensions (torch's x.dim(), same as ndim)", MQ_BK_NONE, 0},
    {"numel(x)", lib_numel, "the number of elements", MQ_BK_NONE, 0},
    {"dtype(x)", lib_dtype, "the dtype name: \"bool\", \"int64\", \"float32\", \"float16\" ...", MQ_BK_NONE, 0},
    {"item(x)", lib_item, "the value of a one-element tensor as a number", MQ_BK_NONE, 0},
    {"print(*values, sep=\" \", end=\"\\n\", file=none)", lib_print,
     "print values separated by sep; file=\"stderr\" prints to standard error", MQ_BK_NONE, 0},
    {"eprint(*values, sep=\" \", end=\"\\n\")", lib_eprint,
     "print to standard error (the host's write_err hook): usage, warnings", MQ_BK_NONE, 0},
    {"exit(code=0)", lib_exit,
     "end the program with this status (0 to 255); a host gets MASQ_EXIT, the process goes on", MQ_BK_NONE, 0},
    {"set_printoptions(precision=none, threshold=none, edgeitems=none, linewidth=none, "
     "sci_mode=none, profile=none)",
     lib_set_printoptions,
     "how tensors print, as torch's: digits after the point (4), the element count above which "
     "dims are summarized with ... (1000; inf: never), entries shown at each end (3), line width (80), "
     "scientific notation (none: chosen from the values); profile \"default\", \"short\" or "
     "\"full\" resets the rest first; masked floats print in fields of precision + 4", MQ_BK_NONE, 0},
    {"set_num_threads(n)", lib_set_num_threads,
     "threads large kernels may use (1 to 64; results are the same for any n); "
     "starts at $MASQ_NUM_THREADS or the number of processors (at most 8)", MQ_BK_NONE, 0},
    {"get_num_threads()", lib_get_num_threads, "threads large kernels may use (set_num_threads)", MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
