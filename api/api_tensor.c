/* api_tensor.c - tensors across the boundary (include/masq.h): wrapping
 * host memory without a copy, copying it in, describing a handle's memory,
 * and the handles' reference counts.
 *
 * Every function validates what the host passes (NULLs, dtypes, shapes,
 * strides, alignment, handles) and answers MASQ_ERR_USAGE with a message:
 * C hosts get these wrong, and a masq_status is cheaper to debug than a
 * crash inside a kernel. */
#include "../core/checked.h"
#include "../runtime/tensor/internal.h"
#include "api_int.h"

_Static_assert(MASQ_BOOL == (int)MQ_DT_BOOL && MASQ_INT64 == (int)MQ_DT_I64 &&
                   MASQ_FLOAT32 == (int)MQ_DT_F32 && MASQ_FLOAT64 == (int)MQ_DT_F64 &&
                   MASQ_INT8 == (int)MQ_DT_I8 && MASQ_INT16 == (int)MQ_DT_I16 &&
                   MASQ_INT32 == (int)MQ_DT_I32 && MASQ_UINT8 == (int)MQ_DT_U8 &&
                   MASQ_FLOAT16 == (int)MQ_DT_F16 && MASQ_BFLOAT16 == (int)MQ_DT_BF16,
               "masq_dtype mirrors mq_dtype, so a dtype crosses the boundary as is");
_Static_assert(MASQ_MAX_DIMS == MQ_MAX_DIMS, "the public limit is the runtime's");

/* --- host memory ------------------------------------------------------------------ */

/* What the storages of one wrapped buffer (its data, and its mask if any)
 * point back to: the host's release callback, run when the last of them
 * goes. The storages' release hook gets no state, so this block carries the
 * allocator that frees it; it comes straight from the host allocator and is
 * not counted against memory_limit (a few dozen bytes per wrapped buffer). */
typedef struct host_buffer {
  mq_state *S; /* whose in_hook the release counts in (no call back into masq) */
  masq_alloc_fn alloc;
  void *alloc_ud;
  void (*release)(void *ud);
  void *release_ud;
  unsigned flags; /* MASQ_TENSOR_READONLY as the host passed it */
  int refs;       /* storages using the buffer */
} host_buffer;

static void release_buffer(void *ud) {
  host_buffer *hb = ud;
  if (--hb->refs > 0) return;
  if (hb->release) {
    mq_hook_enter(hb->S);
    hb->release(hb->release_ud);
    mq_hook_leave(hb->S);
  }
  hb->alloc(hb->alloc_ud, hb, sizeof *hb, 0);
}

/* The hook of a storage over host memory until a wrap succeeds (and of the
 * temporary views masq_tensor_new copies from): the memory is not masq's to
 * free, and nothing is owed to the host yet. */
static void release_nothing(void *ud) { (void)ud; }

/* Where a tensor without elements points when the host passed NULL. */
static const int64_t no_elements;

/* A pool-owned tensor over host memory, strides in elements (NULL:
 * C-contiguous). The layout has been validated. */
static mq_tensor *borrow(mq_state *S, mq_dtype dt, int ndim, const int64_t *shape,
                         const int64_t *strides, const void *data) {
  mq_tensor *t = mq_tensor_alloc(S, dt, ndim, shape);
  if (strides) memcpy(t->strides, strides, (size_t)ndim * sizeof *strides);
  else mq_tensor_set_contiguous(t);
  int64_t last = 0; /* the offset of the last element */
  for (int d = 0; d < ndim && t->numel; d++) last += t->strides[d] * (shape[d] - 1);
  mq_storage *st = mq_calloc(S, sizeof *st);
  st->rc = 1;
  st->data = (void *)(data ? data : &no_elements); /* masq never writes through it */
  st->nbytes = (size_t)(last + 1) * mq_dtype_size(dt);
  st->release = release_nothing;
  t->storage = st;
  return t;
}

/* --- validation ------------------------------------------------------------------------ */

/* Checks one buffer of a descriptor: non-negative strides, present unless
 * it may be absent, aligned, and every element addressable. */
static void check_buffer(mq_state *S, const char *fn, const char *what, const void *p,
                         const int64_t *strides, int ndim, const int64_t *shape, int64_t numel,
                         size_t esize, bool may_be_null) {
  if (!p && may_be_null) return; /* no buffer, so its strides mean nothing */
  /* The strides are kept, and masq_tensor_info() reports them as >= 0,
   * also when there is no element. */
  for (int d = 0; strides && d < ndim; d++)
    if (strides[d] < 0)
      mq_throw(S, MASQ_ERR_USAGE,
               "%s: %s stride %lld of dimension %d is negative; masq takes non-negative "
               "strides (flip the array in the host)",
               fn, what, (long long)strides[d], d);
  /* With nothing to address, kernels still scale the strides by the sizes
   * and by the element size, also a stride of a dimension of size 0. */
  for (int d = 0; strides && numel == 0 && d < ndim; d++)
    if (strides[d] > INT64_MAX / 16 / (shape[d] > 0 ? shape[d] : 1))
      mq_throw(S, MASQ_ERR_USAGE, "%s: %s strides reach past the address space", fn, what);
  if (!p) {
    if (numel == 0) return;
    mq_throw(S, MASQ_ERR_USAGE, "%s: %s is NULL for a tensor of %lld elements", fn, what,
             (long long)numel);
  }
  if ((uintptr_t)p % esize)
    mq_throw(S, MASQ_ERR_USAGE, "%s: %s (%p) is not aligned to %zu bytes", fn, what, p, esize);
  if (!strides || numel == 0) return;
  int64_t last = 0, limit = INT64_MAX / (int64_t)esize;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] > 1 && strides[d] > (limit - last) / (shape[d] - 1))
      mq_throw(S, MASQ_ERR_USAGE, "%s: %s strides reach past the address space", fn, what);
    last += strides[d] * (shape[d] - 1);
  }
}

static void check_desc(mq_state *S, const char *fn, const masq_tensor_desc *d, bool copy) {
  mq_api_need(S, d, fn, "desc");
  if ((unsigned)d->dtype > MASQ_BFLOAT16)
    mq_throw(S, MASQ_ERR_USAGE, "%s: unknown dtype %d (expected MASQ_BOOL ... MASQ_BFLOAT16)", fn,
             (int)d->dtype);
  if (d->ndim < 0 || d->ndim > MASQ_MAX_DIMS)
    mq_throw(S, MASQ_ERR_USAGE, "%s: ndim is %d; tensors have 0 to %d dimensions", fn, d->ndim,
             MASQ_MAX_DIMS);
  if (d->ndim > 0 && !d->shape)
    mq_throw(S, MASQ_ERR_USAGE, "%s: shape is NULL for a %d-d tensor", fn, d->ndim);
  if (d->flags & ~(MASQ_TENSOR_READONLY | MASQ_TENSOR_HOST))
    mq_throw(S, MASQ_ERR_USAGE, "%s: unknown flags 0x%x", fn, d->flags);
  /* The sizes' product with zeros counted as ones bounds every stride
   * times size a kernel computes, also for a tensor with no element. */
  int64_t numel = 1, span = 1;
  for (int k = 0; k < d->ndim; k++) {
    if (d->shape[k] < 0)
      mq_throw(S, MASQ_ERR_USAGE, "%s: dimension %d has negative size %lld", fn, k,
               (long long)d->shape[k]);
    if (!mq_mul_ok(span, d->shape[k] ? d->shape[k] : 1, &span) || span > INT64_MAX / 16)
      mq_throw(S, MASQ_ERR_USAGE, "%s: shape %s is too large", fn,
               mq_shape_str(S, d->ndim, d->shape));
    numel *= d->shape[k];
  }
  check_buffer(S, fn, "data", d->data, d->strides, d->ndim, d->shape, numel,
               mq_dtype_size((mq_dtype)d->dtype), copy);
  check_buffer(S, fn, "valid", d->valid, d->valid_strides, d->ndim, d->shape, numel, 1, true);
}

/* --- making tensors ---------------------------------------------------------------------- */

typedef struct tensor_job {
  const char *fn;                /* the API function, for messages */
  const masq_tensor_desc *desc;  /* in (wrap, new) */
  masq_tensor_desc *info;        /* out (info) */
  const mq_tensor *t;            /* the handle operated on */
  double value;                  /* in (scalar) */
  double *number;                /* out (item) */
  int64_t *integer;              /* out (item_int) */
  masq_tensor **out;             /* out: a new handle */
} tensor_job;

static void adopt(mq_storage *st, host_buffer *hb) {
  st->release = release_buffer;
  st->release_ud = hb;
  hb->refs++;
}

/* Whether [t] still reads the buffer the host wrapped (not masq's copy). */
static bool borrowed(const mq_tensor *t) { return t->storage->release == release_nothing; }

static void wrap_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  const masq_tensor_desc *d = job->desc;
  mq_api_need(S, job->out, job->fn, "out");
  check_desc(S, job->fn, d, false);
  mq_tensor *t = borrow(S, (mq_dtype)d->dtype, d->ndim, d->shape, d->strides, d->data);
  mq_tensor *m = d->valid ? borrow(S, MQ_DT_BOOL, d->ndim, d->shape, d->valid_strides, d->valid)
                          : NULL;
  /* Bool bytes other than 0 and 1 mean true (masq.h), but kernels add and
   * AND mask bytes: such a buffer is used through masq's 0/1 copy. */
  if (t->dtype == MQ_DT_BOOL) t = mq_bool_normalized(S, t);
  if (m) mq_tensor_set_mask(S, t, mq_bool_normalized(S, m));
  mq_handle_reserve(S, 1);
  host_buffer *hb = S->cfg.alloc(S->cfg.alloc_ud, NULL, 0, sizeof *hb);
  if (!hb) mq_throw(S, MASQ_ERR_MEMORY, "out of memory (allocating %zu bytes)", sizeof *hb);
  /* Nothing below can fail: from here on the host's release is ours to call. */
  *hb = (host_buffer){S, S->cfg.alloc, S->cfg.alloc_ud, d->release, d->release_ud,
                      d->flags & MASQ_TENSOR_READONLY, 0};
  if (borrowed(t)) adopt(t->storage, hb);
  if (t->mask && borrowed(t->mask)) adopt(t->mask->storage, hb);
  if (!hb->refs) { /* everything copied: masq is done with the buffer */
    hb->refs = 1;
    release_buffer(hb);
  }
  mq_handle_give(S, job->out, t);
}

static void new_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  const masq_tensor_desc *d = job->desc;
  mq_api_need(S, job->out, job->fn, "out");
  check_desc(S, job->fn, d, true);
  mq_dtype dt = (mq_dtype)d->dtype;
  mq_tensor *t;
  /* copies bool bytes as 0 and 1 (masq.h: MASQ_BOOL) */
  if (d->data) {
    t = mq_tensor_copy_owned(S, borrow(S, dt, d->ndim, d->shape, d->strides, d->data));
  } else {
    t = mq_tensor_new(S, dt, d->ndim, d->shape);
    memset(t->storage->data, 0, t->storage->nbytes);
  }
  if (d->valid)
    mq_tensor_set_mask(S, t, mq_tensor_copy_owned(S, borrow(S, MQ_DT_BOOL, d->ndim, d->shape,
                                                            d->valid_strides, d->valid)));
  mq_handle_give(S, job->out, t);
}

static void scalar_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  mq_api_need(S, job->out, job->fn, "out");
  mq_tensor *t = mq_tensor_scalar(S, MQ_DT_F64, job->value);
  t->weak = true; /* promotes like a number literal */
  mq_handle_give(S, job->out, t);
}

masq_status masq_tensor_wrap(masq_state *M, const masq_tensor_desc *desc, masq_tensor **out) {
  tensor_job job = {.fn = "masq_tensor_wrap", .desc = desc, .out = out};
  return mq_api_entry(M, wrap_protected, &job, job.out);
}

masq_status masq_tensor_new(masq_state *M, const masq_tensor_desc *desc, masq_tensor **out) {
  tensor_job job = {.fn = "masq_tensor_new", .desc = desc, .out = out};
  return mq_api_entry(M, new_protected, &job, job.out);
}

masq_status masq_tensor_scalar(masq_state *M, double value, masq_tensor **out) {
  tensor_job job = {.fn = "masq_tensor_scalar", .value = value, .out = out};
  return mq_api_entry(M, scalar_protected, &job, job.out);
}

/* --- reading handles ----------------------------------------------------------------------- */

static void info_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  mq_handle_check(S, job->t, job->fn, "t");
  mq_api_need(S, job->info, job->fn, "out");
  const mq_tensor *t = job->t;
  masq_tensor_desc *d = job->info;
  memset(d, 0, sizeof *d);
  d->dtype = (masq_dtype)t->dtype;
  d->ndim = t->ndim;
  d->shape = t->shape;
  d->strides = t->strides;
  d->data = mq_tensor_data(t);
  if (t->mask) {
    d->valid = mq_tensor_data(t->mask);
    d->valid_strides = t->mask->strides;
  }
  if (t->storage->release == release_buffer)
    d->flags = MASQ_TENSOR_HOST | ((const host_buffer *)t->storage->release_ud)->flags;
  if (t->storage->map) d->flags = MASQ_TENSOR_READONLY; /* a file mapped read-only */
}

static void contiguous_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  mq_api_need(S, job->out, job->fn, "out");
  mq_handle_check(S, job->t, job->fn, "t");
  mq_handle_give(S, job->out, mq_contiguous(S, (mq_tensor *)job->t));
}

static void item_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  mq_handle_check(S, job->t, job->fn, "t");
  mq_api_need(S, job->number, job->fn, "out");
  *job->number = mq_tensor_item(S, (mq_tensor *)job->t);
}

static void item_int_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  mq_handle_check(S, job->t, job->fn, "t");
  mq_api_need(S, job->integer, job->fn, "out");
  mq_tensor *t = (mq_tensor *)job->t;
  if (mq_dtype_is_float((mq_dtype)t->dtype))
    mq_throw(S, MASQ_ERR_USAGE, "%s: the tensor is %s, not int64 or bool (use masq_tensor_item)",
             job->fn, mq_dtype_name((mq_dtype)t->dtype));
  if (!mq_value_as_int(S, mq_objv(t), job->integer)) /* more than one element */
    mq_tensor_item(S, t);                            /* raises the usual error */
}

static void retain_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  mq_handle_check(S, job->t, job->fn, "t");
  mq_handle_add(S, (mq_tensor *)job->t);
}

static void release_protected(mq_state *S, void *ud) {
  tensor_job *job = ud;
  mq_handle_check(S, job->t, job->fn, "t");
  mq_handle_drop(S, (mq_tensor *)job->t, true);
}

masq_status masq_tensor_info(masq_state *M, const masq_tensor *t, masq_tensor_desc *out) {
  tensor_job job = {.fn = "masq_tensor_info", .t = t, .info = out};
  return mq_api_entry(M, info_protected, &job, job.out);
}

masq_status masq_tensor_contiguous(masq_state *M, masq_tensor *t, masq_tensor **out) {
  tensor_job job = {.fn = "masq_tensor_contiguous", .t = t, .out = out};
  return mq_api_entry(M, contiguous_protected, &job, job.out);
}

masq_status masq_tensor_item(masq_state *M, const masq_tensor *t, double *out) {
  tensor_job job = {.fn = "masq_tensor_item", .t = t, .number = out};
  return mq_api_entry(M, item_protected, &job, job.out);
}

masq_status masq_tensor_item_int(masq_state *M, const masq_tensor *t, int64_t *out) {
  tensor_job job = {.fn = "masq_tensor_item_int", .t = t, .integer = out};
  return mq_api_entry(M, item_int_protected, &job, NULL);
}

masq_status masq_tensor_retain(masq_state *M, masq_tensor *t) {
  tensor_job job = {.fn = "masq_tensor_retain", .t = t};
  return mq_api_entry(M, retain_protected, &job, job.out);
}

masq_status masq_tensor_release(masq_state *M, masq_tensor *t) {
  if (M && !t && !M->in_hook) {
    mq_api_clear_error(M);
    return MASQ_OK; /* like free(NULL) */
  }
  tensor_job job = {.fn = "masq_tensor_release", .t = t};
  return mq_api_entry(M, release_protected, &job, job.out);
}
