/* seqops.c - ==, `in` and slices of lists, strings and ranges; dict
 * lookups. */
#include "seqops.h"

#include "../core/checked.h"
#include "../core/dict.h"
#include "../core/range.h"
#include "../core/strfind.h"
#include "../runtime/sparse/sparse.h"
#include "builtin.h"
#include "suggest.h"

static bool equal_at(mq_state *S, mq_value a, mq_value b, int depth) {
  if (mq_is_number(a) && mq_is_number(b)) {
    if (a.type == MQ_FLOAT || b.type == MQ_FLOAT) {
      double x = a.type == MQ_FLOAT ? a.as.f : a.type == MQ_INT ? (double)a.as.i : (double)a.as.b;
      double y = b.type == MQ_FLOAT ? b.as.f : b.type == MQ_INT ? (double)b.as.i : (double)b.as.b;
      return x == y;
    }
    int64_t x = a.type == MQ_INT ? a.as.i : (int64_t)a.as.b, y = b.type == MQ_INT ? b.as.i : (int64_t)b.as.b;
    return x == y;
  }
  if (a.type != b.type) return false;
  if (a.type == MQ_NONE) return true;
  if (a.type != MQ_OBJ) return false;
  if (a.as.o == b.as.o) return true;
  if (mq_is_obj(a, MQ_O_STRING) && mq_is_obj(b, MQ_O_STRING)) {
    const mq_string *x = mq_as_string(a), *y = mq_as_string(b);
    return x->len == y->len && memcmp(x->chars, y->chars, x->len) == 0;
  }
  if (mq_is_obj(a, MQ_O_LIST) && mq_is_obj(b, MQ_O_LIST)) {
    const mq_list *x = mq_as_list(a), *y = mq_as_list(b);
    if (x->len != y->len) return false;
    if (depth >= MQ_EQ_MAX_DEPTH)
      mq_error(S, "cannot compare lists nested more than %d deep (a list holding itself?)", MQ_EQ_MAX_DEPTH);
    for (int i = 0; i < x->len; i++) {
      /* a step of the whole comparison, however its lists nest: sublists
       * shared 1000 wide at each of several levels make 1000^levels steps */
      mq_poll(S);
      if (!equal_at(S, x->items[i], y->items[i], depth + 1)) return false;
    }
    return true;
  }
  if (mq_is_obj(a, MQ_O_DICT) && mq_is_obj(b, MQ_O_DICT)) {
    /* the same keys with equal values, in any order (as in Python) */
    const mq_dict *x = mq_as_dict(a), *y = mq_as_dict(b);
    if (x->len != y->len) return false;
    if (depth >= MQ_EQ_MAX_DEPTH)
      mq_error(S, "cannot compare dicts nested more than %d deep (a dict holding itself?)", MQ_EQ_MAX_DEPTH);
    for (int i = 0; i < x->used; i++) {
      if (!mq_dentry_live(&x->entries[i])) continue;
      mq_poll(S); /* as for lists */
      int j = mq_dict_find(S, y, x->entries[i].key);
      if (j < 0 || !equal_at(S, x->entries[i].val, y->entries[j].val, depth + 1)) return false;
    }
    return true;
  }
  return false;
}

bool mq_values_equal(mq_state *S, mq_value a, mq_value b) { return equal_at(S, a, b, 0); }

bool mq_contains(mq_state *S, mq_value seq, mq_value item) {
  if (mq_is_obj(seq, MQ_O_LIST)) {
    const mq_list *l = mq_as_list(seq);
    for (int i = 0; i < l->len; i++)
      if (mq_values_equal(S, l->items[i], item)) return true;
    return false;
  }
  if (mq_is_obj(seq, MQ_O_STRING)) {
    if (!mq_is_obj(item, MQ_O_STRING))
      mq_error(S, "'in <string>' needs a string on the left, not %s", mq_value_type_name(item));
    const mq_string *h = mq_as_string(seq), *n = mq_as_string(item);
    mq_finder f;
    mq_finder_init(&f, n->chars, n->len, false);
    return mq_find(S, &f, h->chars, h->len, 0) >= 0;
  }
  if (mq_is_obj(seq, MQ_O_RANGE)) {
    const mq_range *r = mq_as_range(seq);
    int64_t v;
    if (item.type == MQ_INT) v = item.as.i;
    else if (item.type == MQ_BOOL) v = item.as.b;
    else if (item.type == MQ_FLOAT && item.as.f == (double)(int64_t)item.as.f && item.as.f < 9.3e18 && item.as.f > -9.3e18) v = (int64_t)item.as.f;
    else return false;
    if (r->len == 0) return false;
    /* within [start, last] and on a step: in uint64, whose wrapping is exact */
    int64_t last = mq_range_at(r, r->len - 1);
    if (r->step > 0 ? (v < r->start || v > last) : (v > r->start || v < last)) return false;
    uint64_t off = r->step > 0 ? (uint64_t)v - (uint64_t)r->start : (uint64_t)r->start - (uint64_t)v;
    uint64_t step = r->step > 0 ? (uint64_t)r->step : 0 - (uint64_t)r->step;
    return off % step == 0;
  }
  if (mq_is_obj(seq, MQ_O_DICT)) return mq_dict_find(S, mq_as_dict(seq), item) >= 0;
  if (mq_is_tensor(seq) || mq_is_obj(seq, MQ_O_SPARSE))
    mq_error(S, "'in' of a tensor is ambiguous with masks; write any(t == x)");
  mq_error(S, "'in' needs a list, a string, a range or a dict on the right, not %s", mq_value_type_name(seq));
}

/* Python's slice.indices: the start and the count of a slice of a
 * sequence of [len] items. */
static int64_t slice_span(mq_state *S, int64_t len, const bool has[3], const mq_value bound[3],
                          int64_t *start, int64_t *step) {
  *step = has[2] && bound[2].type != MQ_NONE ? mq_arg_int(S, bound[2], "slice step") : 1;
  if (*step == 0) mq_error(S, "slice step cannot be zero");
  bool back = *step < 0;
  int64_t lo = back ? -1 : 0, hi = back ? len - 1 : len, b[2];
  for (int i = 0; i < 2; i++) {
    if (!has[i] || bound[i].type == MQ_NONE) {
      b[i] = i == 0 ? (back ? hi : lo) : (back ? lo : hi);
      continue;
    }
    int64_t v = mq_arg_int(S, bound[i], i == 0 ? "slice start" : "slice stop");
    if (v < 0) v = v < -len ? lo : v + len;
    b[i] = v < lo ? lo : v > hi ? hi : v;
  }
  *start = b[0];
  /* the step's size in uint64: -step overflows for a step of -2^63 */
  uint64_t mag = back ? 0 - (uint64_t)*step : (uint64_t)*step;
  int64_t dist = back ? b[0] - b[1] : b[1] - b[0]; /* bounds within [-1, len] */
  return dist > 0 ? (int64_t)((uint64_t)(dist - 1) / mag) + 1 : 0;
}

mq_value mq_slice_seq(mq_state *S, mq_value seq, const bool has[3], const mq_value bound[3]) {
  int64_t start, step, n;
  if (mq_is_obj(seq, MQ_O_LIST)) {
    const mq_list *l = mq_as_list(seq);
    n = slice_span(S, l->len, has, bound, &start, &step);
    mq_list *out = mq_list_new(S, (int)n);
    for (int64_t k = 0; k < n; k++) mq_list_push(S, out, l->items[start + k * step]);
    return mq_objv(out);
  }
  const mq_string *s = mq_as_string(seq);
  if (s->len > (size_t)INT64_MAX) mq_error(S, "string too long to slice");
  n = slice_span(S, (int64_t)s->len, has, bound, &start, &step);
  char *buf = mq_scratch(S, (size_t)n + 1);
  for (int64_t k = 0; k < n; k++) buf[k] = s->chars[start + k * step];
  return mq_objv(mq_string_new(S, buf, (size_t)n));
}

/* The string keys of [d] closest to [key], for a did-you-mean. */
static const char *close_key(mq_state *S, const mq_dict *d, const mq_string *key) {
  const char **names = mq_scratch(S, (size_t)(d->used ? d->used : 1) * sizeof *names);
  for (int i = 0; i < d->used; i++) /* a hole's none is no string: skipped */
    names[i] = mq_is_obj(d->entries[i].key, MQ_O_STRING) ? mq_as_string(d->entries[i].key)->chars : NULL;
  return mq_suggest_word(key->chars, names, d->used);
}

/* The error for a [key] that [d] does not have, with a did-you-mean. */
static MQ_NORETURN void no_key(mq_state *S, const mq_dict *d, mq_value key) {
  if (key.type == MQ_BOOL) mq_error(S, "no key %s in the dict", key.as.b ? "true" : "false");
  if (!mq_is_obj(key, MQ_O_STRING)) mq_error(S, "no key %lld in the dict", (long long)key.as.i);
  const mq_string *k = mq_as_string(key);
  const char *like = d->len <= 100000 ? close_key(S, d, k) : NULL;
  if (like)
    mq_error(S, "no key %s in the dict; did you mean %s?", mq_string_quoted(S, k),
             mq_string_quoted(S, mq_string_new(S, like, strlen(like))));
  mq_error(S, "no key %s in the dict", mq_string_quoted(S, k));
}

mq_value mq_dict_get(mq_state *S, const mq_dict *d, mq_value key) {
  int e = mq_dict_find(S, d, key);
  if (e < 0) no_key(S, d, key);
  return d->entries[e].val;
}

void mq_del_item(mq_state *S, mq_value obj, mq_value index) {
  if (mq_is_obj(obj, MQ_O_DICT)) {
    mq_dict *d = mq_as_dict(obj);
    int e = mq_dict_find(S, d, index);
    if (e < 0) no_key(S, d, index);
    mq_dict_remove(S, d, e);
    return;
  }
  if (!mq_is_obj(obj, MQ_O_LIST)) {
    if (mq_is_tensor(obj) || mq_is_sparse(obj))
      mq_error(S, "tensors are values and cannot be changed in place (del x[i]); "
                  "select the entries to keep instead, e.g. x[mask]");
    mq_error(S, "%s does not support item deletion (del works on dicts and lists)",
             mq_value_a_type_name(obj));
  }
  mq_list *l = mq_as_list(obj);
  int64_t i = mq_arg_int(S, index, "index"), at = i < 0 ? i + l->len : i;
  if (at < 0 || at >= l->len)
    mq_error(S, "index %lld is out of range for a list of length %d", (long long)i, l->len);
  mq_value gone = l->items[at];
  memmove(&l->items[at], &l->items[at + 1], (size_t)(l->len - at - 1) * sizeof *l->items);
  l->len--;
  mq_release(S, gone); /* after: the list is whole if that frees anything */
}

mq_value mq_string_repeat(mq_state *S, const mq_string *s, int64_t n) {
  if (n <= 0 || s->len == 0) return mq_objv(mq_string_new(S, "", 0));
  size_t len = mq_ck_zmul(S, s->len, (size_t)n, "string repetition");
  if (len > MQ_STRING_MAX)
    mq_error(S, "string repetition: %zu bytes are more than a string holds (%zu)", len, MQ_STRING_MAX);
  char *tmp = mq_scratch(S, len);
  memcpy(tmp, s->chars, s->len);
  for (size_t done = s->len; done < len; done *= 2) { /* doubling: log n copies */
    memcpy(tmp + done, tmp, done < len - done ? done : len - done);
    mq_check_interrupt(S); /* a copy of up to a gigabyte each */
  }
  return mq_objv(mq_string_new(S, tmp, len));
}
