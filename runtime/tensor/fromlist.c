/* fromlist.c - nested lists of numbers as tensors: tensor(l), a list
 * literal of numbers, a list as an operand, a list global the host reads.
 *
 * A nested list costs its number of paths, not its number of objects: one
 * list appended 1000 times to a list, that one 1000 times to another, and
 * so on four levels up, is 4000 objects holding 10^12 numbers. So nothing
 * here walks the items before it knows the walk is affordable:
 *
 *   - the shape is read down the first item at each depth (at most
 *     MQ_MAX_DIMS steps), and a list of more than MQ_POLL_ELEMS elements
 *     gets its tensor allocated, in the smallest dtype its numbers may
 *     give, before anything else is looked at: a list too big to be a
 *     tensor fails there at once, with the memory limit's (or the
 *     allocator's) error;
 *   - a list that has elements then costs at most its elements times its
 *     depth to check and to fill, and the walks poll by the work done
 *     across the whole walk (a count kept per list never fires when every
 *     list is 1000 wide);
 *   - an item that is the very list the item before it was is not walked
 *     again: it has been checked, and its numbers are copied from the
 *     block just filled.
 *
 * A shape with a 0 in it (lists of empty lists) has no elements to pay
 * for its lists; there the polls are what stops a long walk. */
#include "internal.h"

typedef struct list_walk {
  const char *what; /* names the list in errors */
  int ndim;
  int64_t shape[MQ_MAX_DIMS];
  int64_t block[MQ_MAX_DIMS + 1]; /* elements under one item of a list at each depth */
  bool any_float, any_int, any_bool;
  int64_t work; /* steps since the last poll, across the whole walk */
} list_walk;

/* [n] more steps walked: a poll at every MQ_POLL_ELEMS of them, however the
 * lists that hold them nest. */
static void walked(mq_state *S, list_walk *w, int64_t n) {
  w->work += n;
  if (w->work >= MQ_POLL_ELEMS) {
    w->work = 0;
    mq_check_interrupt(S);
  }
}

static bool same_object(mq_value a, mq_value b) {
  return a.type == MQ_OBJ && b.type == MQ_OBJ && a.as.o == b.as.o;
}

/* Whether [v] is a number (noting its kind) rather than a list; anything
 * else is an error. */
static bool item_is_scalar(mq_state *S, mq_value v, list_walk *w) {
  switch ((mq_vtype)v.type) {
  case MQ_BOOL: w->any_bool = true; return true;
  case MQ_INT: w->any_int = true; return true;
  case MQ_FLOAT: w->any_float = true; return true;
  default: break;
  }
  if (mq_is_tensor(v)) {
    mq_tensor *t = mq_as_tensor(v);
    if (t->ndim != 0)
      mq_error(S, "%s: a list may hold numbers and lists, not a %d-d tensor (use stack())",
               w->what, t->ndim);
    if (t->mask) mq_error(S, "%s: a list may not hold a masked tensor", w->what);
    /* by category: an int8 element counts as an int (it made the list a
     * float32 tensor, an audit finding) */
    if (t->dtype == MQ_DT_BOOL) w->any_bool = true;
    else if (mq_dtype_is_float((mq_dtype)t->dtype)) w->any_float = true;
    else w->any_int = true;
    return true;
  }
  if (mq_is_obj(v, MQ_O_LIST)) return false;
  mq_error(S, "%s: a list may hold numbers and lists, not %s", w->what, mq_value_a_type_name(v));
}

/* The shape, from the first item at each depth; the rest of the list must
 * agree with it (check_list). */
static void read_shape(mq_state *S, const mq_list *l, list_walk *w) {
  for (;;) {
    if (w->ndim == MQ_MAX_DIMS)
      mq_error(S, "%s: list nested deeper than %d levels", w->what, MQ_MAX_DIMS);
    w->shape[w->ndim++] = l->len;
    if (l->len == 0 || item_is_scalar(S, l->items[0], w)) return;
    l = mq_as_list(l->items[0]);
  }
}

/* Checks that list [l], at [depth], has the shape's width there and holds
 * numbers at the last depth and lists above it; notes the kinds of
 * numbers. */
static void check_list(mq_state *S, const mq_list *l, int depth, list_walk *w) {
  if (l->len != w->shape[depth])
    mq_error(S, "ragged nested list: expected %lld elements at depth %d, got %d",
             (long long)w->shape[depth], depth, l->len);
  walked(S, w, (int64_t)l->len + 1);
  bool leaf = depth + 1 == w->ndim;
  for (int i = 0; i < l->len; i++) {
    mq_value v = l->items[i];
    if (!leaf && i > 0 && same_object(v, l->items[i - 1])) continue; /* checked just now */
    bool scalar = item_is_scalar(S, v, w);
    if (scalar != leaf)
      mq_error(S, "ragged nested list: expected %s at depth %d, got %s", leaf ? "a number" : "a list",
               depth + 1, scalar ? "a number" : "a list");
    if (!scalar) check_list(S, mq_as_list(v), depth + 1, w);
  }
}

/* A number of the list (a bool, an int, a float or a 0-d tensor). */
static double leaf_f64(mq_value v) {
  switch ((mq_vtype)v.type) {
  case MQ_BOOL: return v.as.b;
  case MQ_INT: return (double)v.as.i;
  case MQ_FLOAT: return v.as.f;
  default: break;
  }
  const mq_tensor *t = mq_as_tensor(v);
  return mq_elem_f64((mq_dtype)t->dtype, mq_tensor_data(t));
}

static int64_t leaf_i64(mq_value v) {
  if (v.type == MQ_INT) return v.as.i;
  if (v.type == MQ_OBJ && mq_as_tensor(v)->dtype == MQ_DT_I64)
    return *(const int64_t *)mq_tensor_data(mq_as_tensor(v));
  return (int64_t)leaf_f64(v); /* bools and the narrow ints: exact in a double */
}

/* Copies [n] elements of [t] from [from] to [to] (after them), polling. */
static void copy_block(mq_state *S, list_walk *w, mq_tensor *t, int64_t from, int64_t to, int64_t n) {
  size_t es = mq_dtype_size((mq_dtype)t->dtype);
  char *d = mq_tensor_data(t);
  for (int64_t k = 0; k < n; k += MQ_POLL_ELEMS) {
    int64_t m = n - k < MQ_POLL_ELEMS ? n - k : MQ_POLL_ELEMS;
    memcpy(d + (size_t)(to + k) * es, d + (size_t)(from + k) * es, (size_t)m * es);
    walked(S, w, m);
  }
}

/* Writes the numbers of the checked list [l], at [depth], to [t] from
 * element *pos on. */
static void fill_list(mq_state *S, const mq_list *l, int depth, list_walk *w, mq_tensor *t,
                      int64_t *pos) {
  walked(S, w, (int64_t)l->len + 1);
  if (depth + 1 < w->ndim) {
    int64_t block = w->block[depth + 1];
    for (int i = 0; i < l->len; i++) {
      if (i > 0 && same_object(l->items[i], l->items[i - 1])) { /* the same numbers again */
        copy_block(S, w, t, *pos - block, *pos, block);
        *pos += block;
      } else {
        fill_list(S, mq_as_list(l->items[i]), depth + 1, w, t, pos);
      }
    }
    return;
  }
  void *data = mq_tensor_data(t);
  for (int i = 0; i < l->len; i++, (*pos)++) {
    mq_value v = l->items[i];
    switch ((mq_dtype)t->dtype) {
    case MQ_DT_BOOL: ((uint8_t *)data)[*pos] = leaf_f64(v) != 0; break;
    case MQ_DT_I64: ((int64_t *)data)[*pos] = leaf_i64(v); break;
    case MQ_DT_F32: ((float *)data)[*pos] = (float)leaf_f64(v); break;
    default: ((double *)data)[*pos] = leaf_f64(v); break;
    }
  }
}

mq_tensor *mq_tensor_from_list(mq_state *S, const mq_list *l, const char *what, bool f64) {
  list_walk w;
  memset(&w, 0, sizeof w);
  w.what = what;
  read_shape(S, l, &w);
  if (!mq_shape_fits(w.ndim, w.shape))
    mq_error(S, "%s: nested lists of shape %s are more numbers than a tensor holds", what,
             mq_shape_str(S, w.ndim, w.shape));
  int64_t numel = 1;
  for (int d = 0; d < w.ndim; d++) numel *= w.shape[d]; /* no overflow: it fits */
  bool cheap = numel <= MQ_POLL_ELEMS; /* the walks cost little, whatever the list */
  /* The size check before the walk: the tensor in the smallest dtype the
   * first number allows (a bool: bool; an int: float32, as a float among
   * the ints would make it). */
  size_t mark = mq_pool_mark(S);
  mq_dtype least = f64 ? MQ_DT_F64 : w.any_bool ? MQ_DT_BOOL : MQ_DT_F32;
  mq_tensor *t = cheap ? NULL : mq_tensor_new(S, least, w.ndim, w.shape);
  check_list(S, l, 0, &w);
  /* torch.tensor's rule: any float -> float32; else any int -> int64 (bools
   * count as ints then); all bools -> bool; no numbers at all -> float32. */
  mq_dtype dt = f64 ? MQ_DT_F64
                : w.any_float ? MQ_DT_F32
                : w.any_int ? MQ_DT_I64
                : w.any_bool ? MQ_DT_BOOL
                             : MQ_DT_F32;
  if (!t || t->dtype != dt) {
    if (t) mq_pool_drain(S, mark); /* only t was pooled since */
    t = mq_tensor_new(S, dt, w.ndim, w.shape);
  }
  if (t->numel == 0) return t;
  w.block[w.ndim] = 1;
  for (int d = w.ndim - 1; d >= 0; d--) w.block[d] = w.shape[d] * w.block[d + 1];
  int64_t pos = 0;
  fill_list(S, l, 0, &w, t, &pos);
  return t;
}
