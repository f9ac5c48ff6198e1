/* tensor.h - masked tensors: dtypes, storage, views, masks, and making
 * them. The ops that compute with them are ops.h's.
 *
 * Vocabulary (ggml's): a tensor has a dtype, a shape, strides (in elements)
 * and an offset into refcounted storage; views share storage. A masked
 * tensor additionally points at a validity mask: a plain bool tensor of the
 * same shape (possibly a broadcast view with zero strides), True = valid, as
 * in torch.masked. A plain tensor has mask == NULL.
 *
 * Tensors are values: no operation here changes a tensor it was given.
 *
 * Ownership: every function returning mq_tensor* returns a tensor owned by
 * the state's pool (core/state.h): valid until the current operation ends,
 * retained by whoever keeps it. It may also return one of its arguments
 * unchanged (e.g. contiguous() of a contiguous tensor); that is fine because
 * the caller retains whatever it keeps. Errors are raised with mq_error().
 */
#ifndef MQ_TENSOR_H
#define MQ_TENSOR_H

#include "../../core/state.h"

/* The compute dtypes: every kernel computes in one of these. Promotion order
 * is the enum order: bool < int64 < float32 < float64. */
#define MQ_DTYPES(X)                                                           \
  X(BOOL, bool, uint8_t, "bool")                                               \
  X(I64, int64, int64_t, "int64")                                              \
  X(F32, float32, float, "float32")                                            \
  X(F64, float64, double, "float64")

/* The storage dtypes: stored at their size, converted to their compute
 * dtype (ints -> int64, half types -> float32) at the entry of the ops that
 * accept them, results converted back to torch's promoted dtype (see
 * mq_narrow_back below). float16 and bfloat16 are stored as their bits. */
#define MQ_NARROW_DTYPES(X)                                                    \
  X(I8, int8, int8_t, "int8")                                                  \
  X(I16, int16, int16_t, "int16")                                              \
  X(I32, int32, int32_t, "int32")                                              \
  X(U8, uint8, uint8_t, "uint8")                                               \
  X(F16, float16, uint16_t, "float16")                                         \
  X(BF16, bfloat16, uint16_t, "bfloat16")

#define MQ_ALL_DTYPES(X) MQ_DTYPES(X) MQ_NARROW_DTYPES(X)

/* MQ_DT__COUNT counts the compute dtypes only: tables of kernels indexed by
 * dtype have that many rows, and a storage dtype (>= MQ_DT__COUNT) never
 * indexes them (checks such as `dt >= MQ_DT__COUNT` refuse it). */
typedef enum mq_dtype {
#define X(E, n, T, s) MQ_DT_##E,
  MQ_DTYPES(X)
#undef X
  MQ_DT__COUNT,
  MQ_DT__COUNT_PREV = MQ_DT__COUNT - 1, /* so storage dtypes start at MQ_DT__COUNT */
#define X(E, n, T, s) MQ_DT_##E,
  MQ_NARROW_DTYPES(X)
#undef X
  MQ_DT__ALL
} mq_dtype;

MQ_INTERNAL const char *mq_dtype_name(mq_dtype dt); /* "float32" */
MQ_INTERNAL size_t mq_dtype_size(mq_dtype dt);
static inline bool mq_dtype_is_narrow(mq_dtype dt) { return dt >= MQ_DT__COUNT; }
static inline bool mq_dtype_is_float(mq_dtype dt) {
  return dt == MQ_DT_F32 || dt == MQ_DT_F64 || dt == MQ_DT_F16 || dt == MQ_DT_BF16;
}
/* The float dtype an op that answers in floats (softmax, var, mean ...)
 * computes [dt] in: float64 stays float64, everything else, float16 and
 * bfloat16 included, is float32. Write this, not `mq_dtype_is_float(dt) ?
 * dt : MQ_DT_F32`, which lets a half type through to code that reads
 * "not float32" as float64 (the rand(dtype=float16) overflow). */
static inline mq_dtype mq_dtype_float_compute(mq_dtype dt) {
  return dt == MQ_DT_F64 ? MQ_DT_F64 : MQ_DT_F32;
}
/* The dtype a storage dtype computes in (a compute dtype is its own). */
static inline mq_dtype mq_dtype_compute(mq_dtype dt) {
  return !mq_dtype_is_narrow(dt) ? dt : mq_dtype_is_float(dt) ? MQ_DT_F32 : MQ_DT_I64;
}

/* A live read-only mapping of a whole file (mq_file_map, npy.h). masq never
 * rewrites a file in place (mq_file_write renames a new one over it), so
 * the pages stay what they were while the mapping lives. */
typedef struct mq_mapping {
  void *base;
  size_t len;
} mq_mapping;

/* Refcounted memory shared by views. If [release] is set the memory belongs
 * to a host (masq.h wrap); release(release_ud) is called when the last view
 * goes away instead of freeing it. Memory masq did not allocate (a host's,
 * a mapped file's) is never written: see mq_storage_foreign. */
typedef struct mq_storage {
  uint32_t rc;
  size_t nbytes;
  void *data;
  void (*release)(void *ud);
  void *release_ud;
  /* set when the memory is a read-only file mapping (load(mmap=true),
   * runtime/io/npy.h): unmapped instead of freed, never written, not counted
   * against the memory limit */
  mq_mapping *map;
  /* the validity summary of a mask's storage (runtime/tensor/masksum.h), built on
   * first use; NULL until then, and always for host memory */
  struct mq_masksum *msum;
  /* the row spans of a mask's storage (runtime/tensor/maskspan.h), likewise */
  struct mq_maskspan *mspan;
} mq_storage;

struct mq_gradnode; /* autograd's record of an op (runtime/autograd/autograd.h) */

struct mq_tensor {
  mq_obj hdr;
  uint8_t dtype; /* mq_dtype */
  uint8_t ndim;
  bool weak;     /* a 0-d tensor made from a number literal: promotes like a
                    Python scalar (does not widen a tensor's dtype) */
  bool requires_grad;
  uint8_t layout; /* mq_layout (layout.h): 0 strided, else sparse */
  int64_t numel;
  int64_t shape[MQ_MAX_DIMS];
  int64_t strides[MQ_MAX_DIMS]; /* in elements; 0 for broadcast dims */
  int64_t offset;               /* in elements */
  mq_storage *storage;
  mq_tensor *mask; /* NULL: plain; else plain bool, same shape, True = valid */
  /* autograd: the accumulated gradient of a leaf, the op that made a
   * non-leaf (both NULL outside autograd) */
  mq_tensor *grad;
  struct mq_gradnode *node;
  struct mq_sparse *sparse; /* a sparse layout's stored entries (layout.h), else NULL */
};

/* Whether [st] is memory masq did not allocate: a host's buffer or a
 * mapped file. Such memory is never written, summarized or reused. */
static inline bool mq_storage_foreign(const mq_storage *st) { return st->release || st->map; }

/* Foreign memory may change between two calls and, from another host
 * thread, during one (runtime/tensor/foreign.c). An op that takes positions,
 * lengths or counts from a tensor's data or mask reads them from
 * mq_tensor_owned(S, t): [t] itself when masq owns its data and mask, else
 * a plain view whose foreign parts are copied (contiguous, each element
 * read once, bool bytes made 0 or 1), so that what it checks is what it
 * uses, now and in autograd's replay. Read the data and mask only: the
 * copy has no autograd history (record it on [t]). */
MQ_INTERNAL mq_tensor *mq_tensor_owned(mq_state *S, mq_tensor *t);
/* [t]'s data (its mask ignored) as a new contiguous tensor: each element
 * read once, bool bytes made 0 or 1. */
MQ_INTERNAL mq_tensor *mq_tensor_copy_owned(mq_state *S, mq_tensor *t);
/* A bool tensor with every byte 0 or 1: [t] itself when it is, else such a
 * copy (a byte other than 0 is true: masq.h, MASQ_BOOL). */
MQ_INTERNAL mq_tensor *mq_bool_normalized(mq_state *S, mq_tensor *t);

/* Address of element 0 of the view. */
static inline void *mq_tensor_data(const mq_tensor *t) {
  return (char *)t->storage->data + (size_t)t->offset * mq_dtype_size((mq_dtype)t->dtype);
}

/* The element of dtype [dt] at [p] as a double (exact for every dtype but
 * int64 beyond 2^53). */
MQ_INTERNAL double mq_elem_f64(mq_dtype dt, const void *p);

/* --- creation ------------------------------------------------------------ */

/* A new contiguous plain tensor, uninitialized. */
MQ_INTERNAL mq_tensor *mq_tensor_new(mq_state *S, mq_dtype dt, int ndim, const int64_t *shape);
/* Filled with [value] (converted to dt). */
MQ_INTERNAL mq_tensor *mq_tensor_full(mq_state *S, mq_dtype dt, int ndim, const int64_t *shape,
                                      double value);
/* A 0-d tensor. */
MQ_INTERNAL mq_tensor *mq_tensor_scalar(mq_state *S, mq_dtype dt, double value);
MQ_INTERNAL mq_tensor *mq_tensor_scalar_i64(mq_state *S, int64_t value);
/* An int64 tensor filled with [value] exactly (a double holds only 53 bits). */
MQ_INTERNAL mq_tensor *mq_tensor_full_i64(mq_state *S, int ndim, const int64_t *shape,
                                          int64_t value);
/* A view of [base]'s storage with the given geometry; the mask (if any) is
 * NOT carried over: set it with mq_tensor_set_mask(). */
MQ_INTERNAL mq_tensor *mq_tensor_view(mq_state *S, const mq_tensor *base, int ndim,
                                      const int64_t *shape, const int64_t *strides,
                                      int64_t offset);
/* Attaches [mask] (plain bool, same shape as t, retained) to a tensor that was
 * just created and has no mask yet. */
MQ_INTERNAL void mq_tensor_set_mask(mq_state *S, mq_tensor *t, mq_tensor *mask);
/* Converts a value to a tensor: a tensor as is; a number or bool to a weak
 * 0-d tensor (int -> int64, float -> float32, bool -> bool); a list of
 * numbers (nested, rectangular) to a tensor. [what] names the argument in
 * errors ("x", "mask"). */
MQ_INTERNAL mq_tensor *mq_tensor_from_value(mq_state *S, mq_value v, const char *what);
/* The same, but a tensor of a storage dtype (int8 ... bfloat16) comes as
 * stored; mq_tensor_from_value converts it to its compute dtype, so that an
 * op that does not handle storage dtypes never sees one. */
MQ_INTERNAL mq_tensor *mq_tensor_from_value_stored(mq_state *S, mq_value v, const char *what);
/* [t] converted to its compute dtype if it has a storage dtype: an op that
 * has not said it takes storage dtypes computes in the compute dtype (and
 * returns it). */
MQ_INTERNAL mq_tensor *mq_tensor_computable(mq_state *S, mq_tensor *t);
/* A number or nested list as a float64 tensor made from the numbers
 * themselves, not from their float32 rounding. */
MQ_INTERNAL mq_tensor *mq_tensor_from_value_f64(mq_state *S, mq_value v, const char *what);
/* A nested list of numbers as a tensor (fromlist.c), by torch.tensor's
 * dtype rule or, [f64], in float64. Its cost is bounded by the tensor's
 * size, which is allocated before the list is walked, however the list
 * shares its sublists; the walk polls. */
MQ_INTERNAL mq_tensor *mq_tensor_from_list(mq_state *S, const mq_list *l, const char *what, bool f64);
/* Whether a shape of sizes >= 0 is one a tensor may have: its element count
 * (and its strides) far from overflowing an int64. */
MQ_INTERNAL bool mq_shape_fits(int ndim, const int64_t *shape);

MQ_INTERNAL mq_tensor *mq_arange(mq_state *S, double start, double stop, double step,
                                 mq_dtype dt);
/* arange of ints, exact over the whole int64 range. */
MQ_INTERNAL mq_tensor *mq_arange_i64(mq_state *S, int64_t start, int64_t stop, int64_t step);
MQ_INTERNAL mq_tensor *mq_rand(mq_state *S, int ndim, const int64_t *shape, mq_dtype dt);
MQ_INTERNAL mq_tensor *mq_randn(mq_state *S, int ndim, const int64_t *shape, mq_dtype dt);

/* --- geometry ------------------------------------------------------------ */

MQ_INTERNAL bool mq_tensor_is_contiguous(const mq_tensor *t);
/* [t] itself if contiguous, else a contiguous copy (mask copied too). */
MQ_INTERNAL mq_tensor *mq_contiguous(mq_state *S, mq_tensor *t);
/* [t] converted to [dt] (the mask is kept). */
MQ_INTERNAL mq_tensor *mq_astype(mq_state *S, mq_tensor *t, mq_dtype dt);
/* Broadcasts shapes a and b (numpy rules) into out; error shows both. */
MQ_INTERNAL int mq_broadcast_shapes(mq_state *S, int na, const int64_t *a, int nb,
                                    const int64_t *b, int64_t *out);
/* A view of [t] broadcast to [shape] (zero strides; mask follows). */
MQ_INTERNAL mq_tensor *mq_expand(mq_state *S, mq_tensor *t, int ndim, const int64_t *shape);
/* "(2, 3)" into a small buffer, for messages. */
MQ_INTERNAL const char *mq_shape_str(mq_state *S, int ndim, const int64_t *shape);
/* Normalizes a possibly negative [dim] for a tensor of [ndim] dims; error
 * "dimension 5 out of range for a 2-d tensor (expected -2 to 1)". */
MQ_INTERNAL int mq_shape_norm_dim(mq_state *S, int64_t dim, int ndim);

/* Indexing: one item per entry of x[...]. */
typedef enum mq_index_kind {
  MQ_IX_INT,      /* select: removes the dim */
  MQ_IX_SLICE,    /* start/stop/step with has_* flags (python semantics, clamped) */
  MQ_IX_NEWAXIS,  /* `none` */
  MQ_IX_ELLIPSIS, /* `...` */
  MQ_IX_TENSOR    /* advanced: an int64 tensor gathers, a bool tensor selects */
} mq_index_kind;
typedef struct mq_index_item {
  uint8_t kind;
  bool has_start, has_stop, has_step;
  int64_t start, stop, step; /* for INT: start is the index */
  mq_tensor *tensor;         /* for TENSOR: plain int64 or bool */
} mq_index_item;
/* Returns a view; the mask is indexed the same way. Out-of-range ints, step
 * <= 0, too many indices are errors. With TENSOR items (numpy/torch advanced
 * indexing, ints applied first as in torch) the result is a copy. */
MQ_INTERNAL mq_tensor *mq_index(mq_state *S, mq_tensor *t, const mq_index_item *items, int n);
/* An int item on dim [dim] of [size], Python's rules: the position (an
 * error if out of range). */
MQ_INTERNAL int64_t mq_index_int(mq_state *S, const mq_index_item *it, int64_t size, int dim);
/* A slice item on a dim of [size], Python's rules: its first position, step
 * (an error if not positive) and number of positions. */
MQ_INTERNAL void mq_index_slice(mq_state *S, const mq_index_item *it, int64_t size,
                                int64_t *start, int64_t *step, int64_t *len);

/* --- masks --------------------------------------------------------------- */

/* masked(data, mask): mask must be bool and broadcastable to data's shape
 * (an extension of torch, which wants equal shapes). A masked data keeps
 * what is valid in both masks (their AND; torch refuses masked data). */
MQ_INTERNAL mq_tensor *mq_masked(mq_state *S, mq_tensor *data, mq_tensor *mask);
MQ_INTERNAL mq_tensor *mq_get_data(mq_state *S, mq_tensor *t); /* plain view */
/* The mask as a plain bool tensor; all True for a plain tensor. */
MQ_INTERNAL mq_tensor *mq_get_mask(mq_state *S, mq_tensor *t);
/* Plain tensor with masked-out entries replaced by [fill] (dtype of data). */
MQ_INTERNAL mq_tensor *mq_to_tensor(mq_state *S, mq_tensor *t, double fill);

/* --- results' dtypes, and reusing a dying operand's storage ------------- */

/* Whether dying [t] may take a result of dtype [dt] and [shape] in its
 * storage: a strided, contiguous, non-bool tensor of that dtype and shape
 * that is the only view of a storage masq allocated (not host memory a
 * host wrapped, so never written behind the host's back), outside
 * autograd (not requiring grad, no grad, no node: a graph may read its
 * values later). Bool storages are left alone: they are what masks are
 * made of, and validity summaries cached on a mask storage (wt-summary,
 * runtime/tensor/masksum.h) would go stale; admitting them needs
 * mq_masksum_drop(storage) before the write. A mask is never written in
 * place: a reused result shares or copies its mask as a fresh one would. */
MQ_INTERNAL bool mq_reusable(const mq_tensor *t, mq_dtype dt, int nd, const int64_t *shape);
/* A new plain tensor object over dying [t]'s storage (same geometry), for
 * the result to be written into; counts S->reused. */
MQ_INTERNAL mq_tensor *mq_reuse(mq_state *S, mq_tensor *t);
/* torch's result_type over [n] operands: dimensioned tensors, then 0-d
 * tensors, then weak scalars (the default dtype of their category); a lower
 * tier only counts when its category (bool < int < float) is higher. */
MQ_INTERNAL mq_dtype mq_result_type(int n, mq_tensor *const *ts);
/* torch.promote_types over every dtype (storage dtypes included). */
MQ_INTERNAL mq_dtype mq_promote_types(mq_dtype a, mq_dtype b);
/* An op's result [r], computed on the compute dtypes of operands whose
 * torch result dtype is [want]: converted to [want] when it is a storage
 * dtype and [r] has its compute dtype (int8 + int8 is int8, float16 * 2 is
 * float16); left alone when the op chose its own dtype (a comparison's
 * bool, int8 / int8's float32, sum(int8)'s int64). */
MQ_INTERNAL mq_tensor *mq_narrow_back(mq_state *S, mq_tensor *r, mq_dtype want);

/* --- scalars -------------------------------------------------- */

/* The single element of a one-element tensor as a double; errors if it has
 * more than one element or is masked out. */
MQ_INTERNAL double mq_tensor_item(mq_state *S, mq_tensor *t);
/* The same as a VM value of the tensor's kind: a bool, an exact int for
 * int64, else a float. */
MQ_INTERNAL mq_value mq_tensor_item_value(mq_state *S, mq_tensor *t);
/* [v] as an exact int64 when it is an int, a bool, or a one-element int64 or
 * bool tensor (an error if that element is masked out); false otherwise. */
MQ_INTERNAL bool mq_value_as_int(mq_state *S, mq_value v, int64_t *out);
/* Frees a tensor whose refcount reached zero (its kind's free: print/kinds.c). */
MQ_INTERNAL void mq_tensor_free(mq_state *S, mq_tensor *t);

#endif
