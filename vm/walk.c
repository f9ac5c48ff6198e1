/* walk.c - items of what `for` walks, and the lazy enumerate and zip
 * (walk.h). */
#include "walk.h"

#include "../core/checked.h"
#include "../core/dict.h"
#include "../core/gc.h"
#include "../core/range.h"
#include "../runtime/sparse/sparse.h"
#include "../runtime/tensor/shape.h"
#include "../runtime/tensor/tensor.h"

/* Item [i] of a zip: the list [start + i, a_i, b_i, ...], or done when
 * one source is (the shortest ends it). */
static mq_value zip_item(mq_state *S, const mq_zip *z, int64_t i, bool *done) {
  if (z->srcs.type != MQ_OBJ) { /* cleared by the collector */
    *done = true;
    return mq_none();
  }
  const mq_list *srcs = mq_as_list(z->srcs);
  bool counted = z->hdr.type == MQ_O_ENUMERATE;
  if (counted && z->start > 0 && i > INT64_MAX - z->start)
    mq_error(S, "enumerate(): the count passes the largest int64");
  mq_list *row = mq_list_new(S, srcs->len + counted);
  if (counted) mq_list_push(S, row, mq_int(z->start + i));
  for (int j = 0; j < srcs->len; j++) {
    /* a step of the whole item: a zip of zips that share sources, 32
     * deep, makes 2^32 lists for one item */
    mq_poll(S);
    mq_value v = mq_walk_item(S, srcs->items[j], i, done);
    if (*done) return mq_none();
    mq_list_push(S, row, v);
  }
  *done = srcs->len == 0;
  return mq_objv(row);
}

static bool is_zip(mq_value v) {
  return mq_is_obj(v, MQ_O_ZIP) || mq_is_obj(v, MQ_O_ENUMERATE);
}

mq_value mq_walk_item(mq_state *S, mq_value seq, int64_t i, bool *done) {
  *done = false;
  if (mq_is_obj(seq, MQ_O_LIST)) {
    mq_list *l = mq_as_list(seq);
    if (i >= l->len) {
      *done = true;
      return mq_none();
    }
    return l->items[i];
  }
  if (mq_is_tensor(seq) || mq_is_sparse(seq)) {
    mq_tensor *t = mq_as_tensor_any(seq);
    if (t->ndim == 0) mq_error(S, "cannot iterate over a 0-d tensor");
    if (i >= t->shape[0]) {
      *done = true;
      return mq_none();
    }
    mq_index_item it = {MQ_IX_INT, false, false, false, i, 0, 0, NULL};
    return mq_objv(t->sparse ? mq_sparse_index(S, t, &it, 1) : mq_index(S, t, &it, 1));
  }
  if (mq_is_obj(seq, MQ_O_RANGE)) {
    const mq_range *r = mq_as_range(seq);
    if (i >= r->len) {
      *done = true;
      return mq_none();
    }
    return mq_int(mq_range_at(r, i));
  }
  if (mq_is_obj(seq, MQ_O_STRING)) { /* its characters (bytes), as indexing gives them */
    const mq_string *s = mq_as_string(seq);
    if (i >= (int64_t)s->len) {
      *done = true;
      return mq_none();
    }
    return mq_objv(mq_string_new(S, s->chars + i, 1));
  }
  if (mq_is_obj(seq, MQ_O_DICT)) { /* its keys, in insertion order */
    mq_dict *d = mq_as_dict(seq);
    if (i >= d->len) {
      *done = true;
      return mq_none();
    }
    mq_dict_compact(d); /* so the i-th live entry is entries[i] */
    return d->entries[i].key;
  }
  if (is_zip(seq)) return zip_item(S, (const mq_zip *)seq.as.o, i, done);
  if (mq_is_obj(seq, MQ_O_TABLE))
    mq_error(S, "cannot iterate over a table: `for c in t.columns` walks its column names, "
                "t[i] is its row i");
  mq_error(S, "cannot iterate over %s", mq_value_a_type_name(seq));
}

int64_t mq_walk_length(mq_state *S, mq_value v) {
  if (mq_is_obj(v, MQ_O_LIST)) return mq_as_list(v)->len;
  if ((mq_is_tensor(v) || mq_is_sparse(v)) && mq_as_tensor_any(v)->ndim > 0)
    return mq_as_tensor_any(v)->shape[0];
  if (mq_is_obj(v, MQ_O_RANGE)) return mq_as_range(v)->len;
  if (mq_is_obj(v, MQ_O_DICT)) return mq_as_dict(v)->len;
  if (mq_is_obj(v, MQ_O_STRING)) return (int64_t)mq_as_string(v)->len;
  if (!is_zip(v)) return -1;
  if (((const mq_zip *)v.as.o)->srcs.type != MQ_OBJ) return 0;
  const mq_list *srcs = mq_as_list(((const mq_zip *)v.as.o)->srcs);
  int64_t n = srcs->len ? INT64_MAX : 0;
  for (int j = 0; j < srcs->len; j++) { /* the shortest; the depth bounds this recursion */
    mq_value src = srcs->items[j], before = j > 0 ? srcs->items[j - 1] : mq_none();
    if (src.type == MQ_OBJ && before.type == MQ_OBJ && src.as.o == before.as.o) continue; /* zip(z, z) */
    mq_poll(S); /* sources shared in turns, 32 deep, are still 2^32 of them */
    int64_t len = mq_walk_length(S, src);
    if (len < n) n = len;
  }
  return n;
}

/* The error for [v], which cannot be iterated, from builtin [fn]. */
static MQ_NORETURN void not_iterable(mq_state *S, mq_value v, const char *fn) {
  mq_error(S, "%s(): cannot iterate over a value of type %s%s", fn, mq_value_type_name(v),
           mq_is_tensor(v) ? " (0-d)" : "");
}

mq_list *mq_walk_list(mq_state *S, mq_value v, const char *fn) {
  int64_t n = mq_walk_length(S, v);
  if (n < 0) not_iterable(S, v, fn);
  if (n > MQ_LIST_MAX)
    mq_error(S, "%s(): %lld items are more than a list holds (%d)", fn, (long long)n, MQ_LIST_MAX);
  mq_list *l = mq_list_new(S, (int)n);
  for (int64_t i = 0;; i++) {
    bool done;
    mq_value item = mq_walk_item(S, v, i, &done);
    if (done) return l;
    mq_list_push(S, l, item);
    mq_poll(S);
  }
}

mq_value mq_zip_new(mq_state *S, const mq_list *seqs, bool counted, int64_t start, const char *fn) {
  mq_list *srcs = mq_list_new(S, seqs->len);
  int depth = 1;
  for (int j = 0; j < seqs->len; j++) {
    mq_value v = seqs->items[j];
    if (!is_zip(v) && mq_walk_length(S, v) < 0) not_iterable(S, v, fn); /* a zip's length is a walk */
    if (mq_is_obj(v, MQ_O_DICT)) /* the keys it has now, as `for k in d` walks them */
      v = mq_objv(mq_dict_list(S, mq_as_dict(v), MQ_DICT_KEYS));
    if (is_zip(v) && ((const mq_zip *)v.as.o)->depth + 1 > depth)
      depth = ((const mq_zip *)v.as.o)->depth + 1;
    mq_list_push(S, srcs, v);
  }
  if (depth > MQ_ZIP_MAX_DEPTH)
    mq_error(S, "%s(): enumerate and zip nested more than %d deep", fn, MQ_ZIP_MAX_DEPTH);
  mq_zip *z = mq_container_new(S, sizeof *z, counted ? MQ_O_ENUMERATE : MQ_O_ZIP);
  z->srcs = mq_objv(srcs);
  mq_retain(z->srcs);
  z->start = start;
  z->depth = depth;
  return mq_objv(z);
}

/* --- the kinds' hooks --------------------------------------------------------- */

static void zip_free(mq_state *S, mq_obj *o) {
  mq_release(S, ((mq_zip *)o)->srcs);
  mq_gc_dealloc(S, o, sizeof(mq_zip));
}

static void zip_format(mq_state *S, mq_buf *b, mq_obj *o) {
  mq_buf_puts(S, b, o->type == MQ_O_ENUMERATE ? "<enumerate object>" : "<zip object>");
}

static void zip_traverse(mq_state *S, mq_obj *o, mq_visit fn) { fn(S, ((mq_zip *)o)->srcs); }

/* Leaves [o] without sources: it then iterates as empty. */
static void zip_clear(mq_state *S, mq_obj *o) {
  mq_zip *z = (mq_zip *)o;
  mq_value srcs = z->srcs;
  z->srcs = mq_none();
  mq_release(S, srcs);
}

void mq_zip_init_kind(mq_state *S) {
  S->kinds[MQ_O_ZIP] = S->kinds[MQ_O_ENUMERATE] =
      (mq_kind){zip_free, zip_format, NULL, zip_traverse, zip_clear};
}
