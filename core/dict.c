/* dict.c - dicts (dict.h): entries in arrays in insertion order, found
 * through a table of entry indices probed linearly. A removal closes the
 * hole in the entries and indexes them all again (linear in the dict's
 * size), so the entries never have holes and the table never has
 * tombstones. */
#include "dict.h"

#include "checked.h"
#include "gc.h"

/* Keys are strings, ints or bools; the error names what was given. */
static void check_key(mq_state *S, mq_value key) {
  if (key.type == MQ_INT || key.type == MQ_BOOL || mq_is_obj(key, MQ_O_STRING)) return;
  mq_error(S, "a dict key must be a string, an int or a bool, not a %s", mq_value_type_name(key));
}

static int64_t int_key(mq_value k) { return k.type == MQ_INT ? k.as.i : (int64_t)k.as.b; }

/* FNV-1a over a string's bytes; an int's bits mixed as in splitmix64. */
static uint64_t hash_key(mq_value k) {
  if (mq_is_obj(k, MQ_O_STRING)) {
    const mq_string *s = mq_as_string(k);
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < s->len; i++) h = (h ^ (unsigned char)s->chars[i]) * 1099511628211u;
    return h;
  }
  uint64_t z = (uint64_t)int_key(k) + 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static bool same_key(mq_value a, mq_value b) {
  bool sa = mq_is_obj(a, MQ_O_STRING), sb = mq_is_obj(b, MQ_O_STRING);
  if (sa != sb) return false;
  if (!sa) return int_key(a) == int_key(b);
  const mq_string *x = mq_as_string(a), *y = mq_as_string(b);
  return x->len == y->len && memcmp(x->chars, y->chars, x->len) == 0;
}

/* The slot holding [key]'s entry, or the empty slot where it would go. */
static int probe(const mq_dict *d, mq_value key, uint64_t h) {
  size_t mask = (size_t)d->nslots - 1, i = (size_t)h & mask;
  while (d->slots[i] && !same_key(d->entries[d->slots[i] - 1].key, key)) i = (i + 1) & mask;
  return (int)i;
}

mq_dict *mq_dict_new(mq_state *S, int cap) {
  mq_dict *d = mq_container_new(S, sizeof *d, MQ_O_DICT);
  if (cap > 0) {
    d->entries = mq_alloc(S, (size_t)cap * sizeof *d->entries);
    d->cap = cap;
  }
  return d;
}

int mq_dict_find(mq_state *S, const mq_dict *d, mq_value key) {
  check_key(S, key);
  if (d->len == 0) return -1;
  int32_t e = d->slots[probe(d, key, hash_key(key))];
  return e - 1;
}

/* A table of at least [need] * 3 / 2 slots, the entries indexed again. */
static void rehash(mq_state *S, mq_dict *d, int need) {
  size_t n = 8;
  while (n < (size_t)need + (size_t)need / 2 + 1) n *= 2;
  if (n > (size_t)INT32_MAX) mq_error(S, "dict is too large");
  int32_t *slots = mq_calloc(S, n * sizeof *slots);
  if (d->slots) mq_free(S, d->slots, (size_t)d->nslots * sizeof *d->slots);
  d->slots = slots;
  d->nslots = (int)n;
  for (int e = 0; e < d->len; e++) d->slots[probe(d, d->entries[e].key, hash_key(d->entries[e].key))] = e + 1;
}

void mq_dict_set(mq_state *S, mq_dict *d, mq_value key, mq_value val) {
  check_key(S, key);
  uint64_t h = hash_key(key);
  if (d->len > 0) {
    int32_t e = d->slots[probe(d, key, h)];
    if (e) {
      mq_retain(val);
      mq_release(S, d->entries[e - 1].val);
      d->entries[e - 1].val = val;
      return;
    }
  }
  if (d->len >= MQ_LIST_MAX - 1) mq_error(S, "dict is too large (more than %d entries)", MQ_LIST_MAX - 1);
  MQ_GROW(S, d->entries, d->cap, d->len + 1);
  if ((int64_t)(d->len + 1) * 3 > (int64_t)d->nslots * 2) rehash(S, d, d->len + 1);
  mq_retain(key);
  mq_retain(val);
  d->entries[d->len] = (mq_dentry){key, val};
  d->slots[probe(d, key, h)] = ++d->len;
}

void mq_dict_remove(mq_state *S, mq_dict *d, int e) {
  mq_dentry gone = d->entries[e];
  memmove(&d->entries[e], &d->entries[e + 1], (size_t)(d->len - e - 1) * sizeof *d->entries);
  d->len--;
  memset(d->slots, 0, (size_t)d->nslots * sizeof *d->slots);
  for (int i = 0; i < d->len; i++) d->slots[probe(d, d->entries[i].key, hash_key(d->entries[i].key))] = i + 1;
  mq_release(S, gone.key);
  mq_release(S, gone.val);
}

mq_list *mq_dict_list(mq_state *S, const mq_dict *d, int what) {
  mq_list *l = mq_list_new(S, d->len);
  for (int i = 0; i < d->len; i++) {
    const mq_dentry *e = &d->entries[i];
    if (what != MQ_DICT_ITEMS) {
      mq_list_push(S, l, what == MQ_DICT_KEYS ? e->key : e->val);
      continue;
    }
    mq_list *kv = mq_list_new(S, 2);
    mq_list_push(S, kv, e->key);
    mq_list_push(S, kv, e->val);
    mq_list_push(S, l, mq_objv(kv));
  }
  return l;
}

/* --- the kind's hooks ------------------------------------------------------- */

static void dict_free(mq_state *S, mq_obj *o) {
  mq_dict *d = (mq_dict *)o;
  for (int i = 0; i < d->len; i++) {
    mq_release(S, d->entries[i].key);
    mq_release(S, d->entries[i].val);
  }
  mq_free(S, d->entries, (size_t)d->cap * sizeof *d->entries);
  if (d->slots) mq_free(S, d->slots, (size_t)d->nslots * sizeof *d->slots);
  mq_gc_dealloc(S, d, sizeof *d);
}

static bool dict_truthy(mq_state *S, mq_obj *o) { return ((mq_dict *)o)->len > 0; }

static void dict_traverse(mq_state *S, mq_obj *o, mq_visit fn) {
  mq_dict *d = (mq_dict *)o;
  for (int i = 0; i < d->len; i++) {
    fn(S, d->entries[i].key);
    fn(S, d->entries[i].val);
  }
}

/* Empties [o]: the table is cleared first, so that the dict is consistent
 * (and empty) while the releases run. */
static void dict_clear(mq_state *S, mq_obj *o) {
  mq_dict *d = (mq_dict *)o;
  if (d->slots) memset(d->slots, 0, (size_t)d->nslots * sizeof *d->slots);
  while (d->len > 0) {
    d->len--;
    mq_release(S, d->entries[d->len].key);
    mq_release(S, d->entries[d->len].val);
  }
}

void mq_dict_init_kind(mq_state *S) {
  /* printing is value.c's, which prints lists and dicts nested in each other */
  S->kinds[MQ_O_DICT] = (mq_kind){dict_free, S->kinds[MQ_O_LIST].format, dict_truthy,
                                  dict_traverse, dict_clear};
}
