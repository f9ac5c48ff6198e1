/* lib_dict.c - builtins on dicts (core/dict.h): their keys and entries as
 * lists, a lookup with a default, and dict() from pairs. values(d) is the
 * sparse tensors' values() (lib_sparse.c), which takes a dict too. */
#include "../core/dict.h"
#include "../vm/seqops.h"
#include "stdlib.h"

static mq_dict *arg_dict(mq_state *S, mq_value v, const char *fn) {
  if (!mq_is_obj(v, MQ_O_DICT)) mq_error(S, "%s() needs a dict, not %s", fn, mq_value_a_type_name(v));
  return mq_as_dict(v);
}

static mq_value lib_keys(mq_state *S, mq_value *args) {
  return mq_objv(mq_dict_list(S, arg_dict(S, args[0], "keys"), MQ_DICT_KEYS));
}

static mq_value lib_items(mq_state *S, mq_value *args) {
  return mq_objv(mq_dict_list(S, arg_dict(S, args[0], "items"), MQ_DICT_ITEMS));
}

static mq_value lib_get(mq_state *S, mq_value *args) {
  const mq_dict *d = arg_dict(S, args[0], "get");
  int e = mq_dict_find(S, d, args[1]);
  return e >= 0 ? d->entries[e].val : args[2];
}

/* pop(d, key) or pop(d, key, default): as Python's dict.pop, the default
 * positional and optional (none is a default like any other, so "no
 * default" is an empty *default). */
static mq_value lib_pop(mq_state *S, mq_value *args) {
  mq_dict *d = arg_dict(S, args[0], "pop");
  const mq_list *dflt = mq_as_list(args[2]);
  if (dflt->len > 1) mq_error(S, "pop() takes at most 3 arguments (%d given)", 2 + dflt->len);
  int e = mq_dict_find(S, d, args[1]);
  if (e < 0) return dflt->len ? dflt->items[0] : mq_dict_get(S, d, args[1]);
  /* the pool keeps the value alive once the dict lets go of it */
  mq_value v = d->entries[e].val;
  if (v.type == MQ_OBJ) {
    mq_retain(v);
    mq_pool_own(S, v.as.o);
  }
  mq_dict_remove(S, d, e);
  return v;
}

static mq_value lib_dict(mq_state *S, mq_value *args) {
  mq_value src = args[0];
  mq_dict *d = mq_dict_new(S, 0);
  if (src.type == MQ_NONE) return mq_objv(d);
  if (mq_is_obj(src, MQ_O_DICT)) {
    const mq_dict *from = mq_as_dict(src);
    for (int i = 0; i < from->used; i++)
      if (mq_dentry_live(&from->entries[i])) mq_dict_set(S, d, from->entries[i].key, from->entries[i].val);
    return mq_objv(d);
  }
  if (!mq_is_obj(src, MQ_O_LIST))
    mq_error(S, "dict() needs a list of [key, value] pairs or a dict, not %s",
             mq_value_a_type_name(src));
  const mq_list *l = mq_as_list(src);
  for (int i = 0; i < l->len; i++) {
    mq_poll(S);
    mq_value kv = l->items[i];
    if (!mq_is_obj(kv, MQ_O_LIST) || mq_as_list(kv)->len != 2)
      mq_error(S, "dict(): item %d is not a [key, value] pair", i);
    mq_dict_set(S, d, mq_as_list(kv)->items[0], mq_as_list(kv)->items[1]);
  }
  return mq_objv(d);
}

const mq_libfn mq_lib_dict[] = {
    {"keys(d)", lib_keys, "a new list of the keys of dict d, in insertion order", MQ_BK_NONE, 0},
    {"items(d)", lib_items, "a new list of the [key, value] pairs of dict d, in insertion order",
     MQ_BK_NONE, 0},
    {"get(d, key, default=none)", lib_get, "d[key] if dict d has key, else default", MQ_BK_NONE, 0},
    {"pop(d, key, *default)", lib_pop,
     "remove key from dict d and return its value; a missing key returns the default if one "
     "is given (pop(d, key, 0)), else is an error",
     MQ_BK_NONE, 0},
    {"dict(pairs=none)", lib_dict,
     "a new dict: empty, from a list of [key, value] pairs, or a copy of a dict", MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
