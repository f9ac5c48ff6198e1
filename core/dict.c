/* dict.c - dicts (dict.h): entries in arrays in insertion order, found
 * through a table of entry indices probed linearly. A removal leaves a
 * hole in the entries and takes its slot out of the table by shifting the
 * slots after it back (no tombstones); the holes are squeezed out when
 * there are more of them than live entries, or when the entries would
 * otherwise grow. So insertion, lookup and removal cost O(1) on average
 * whatever the keys, and dict(d) and a rehash cost O(len). */
#include "dict.h"

#include "checked.h"
#include "gc.h"

/* Keys are strings, ints or bools; the error names what was given. */
static void check_key(mq_state *S, mq_value key) {
  if (key.type == MQ_INT || key.type == MQ_BOOL || mq_is_obj(key, MQ_O_STRING)) return;
  mq_error(S, "a dict key must be a string, an int or a bool, not %s", mq_value_a_type_name(key));
}

static int64_t int_key(mq_value k) { return k.type == MQ_INT ? k.as.i : (int64_t)k.as.b; }

/* --- SipHash-1-3 (Aumasson and Bernstein), under the state's key ------------ */

static uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

typedef struct sip {
  uint64_t v0, v1, v2, v3;
} sip;

static void sip_round(sip *s) {
  s->v0 += s->v1, s->v1 = rotl(s->v1, 13), s->v1 ^= s->v0, s->v0 = rotl(s->v0, 32);
  s->v2 += s->v3, s->v3 = rotl(s->v3, 16), s->v3 ^= s->v2;
  s->v0 += s->v3, s->v3 = rotl(s->v3, 21), s->v3 ^= s->v0;
  s->v2 += s->v1, s->v1 = rotl(s->v1, 17), s->v1 ^= s->v2, s->v2 = rotl(s->v2, 32);
}

static void sip_word(sip *s, uint64_t m) {
  s->v3 ^= m;
  sip_round(s);
  s->v0 ^= m;
}

/* The hash of [n] bytes: little-endian words, the last one padded and
 * carrying n's low byte, as the algorithm defines (the same on any CPU). */
static uint64_t siphash(const uint64_t key[2], const unsigned char *p, size_t n) {
  sip s = {key[0] ^ 0x736f6d6570736575u, key[1] ^ 0x646f72616e646f6du,
           key[0] ^ 0x6c7967656e657261u, key[1] ^ 0x7465646279746573u};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t m = 0;
    for (int b = 7; b >= 0; b--) m = m << 8 | p[i + (size_t)b];
    sip_word(&s, m);
  }
  uint64_t last = (uint64_t)n << 56;
  for (int b = 0; i + (size_t)b < n; b++) last |= (uint64_t)p[i + (size_t)b] << (8 * b);
  sip_word(&s, last);
  s.v2 ^= 0xff;
  for (int r = 0; r < 3; r++) sip_round(&s);
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

/* A string's bytes, or an int's eight bytes (little-endian), hashed. A
 * fixed function would let a script pick keys that all land in one chain
 * (the inverse of an invertible mix is a few lines); under a secret key it
 * cannot. */
static uint64_t hash_key(const mq_state *S, mq_value k) {
  if (mq_is_obj(k, MQ_O_STRING)) {
    const mq_string *s = mq_as_string(k);
    return siphash(S->hash_key, (const unsigned char *)s->chars, s->len);
  }
  uint64_t v = (uint64_t)int_key(k);
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  return siphash(S->hash_key, b, 8);
}

static bool same_key(mq_value a, mq_value b) {
  bool sa = mq_is_obj(a, MQ_O_STRING), sb = mq_is_obj(b, MQ_O_STRING);
  if (sa != sb) return false;
  if (!sa) return int_key(a) == int_key(b);
  const mq_string *x = mq_as_string(a), *y = mq_as_string(b);
  return x->len == y->len && memcmp(x->chars, y->chars, x->len) == 0;
}

/* --- the table --------------------------------------------------------------- */

/* The slot holding [key]'s entry, or the empty slot where it would go. */
static int probe(const mq_dict *d, mq_value key, uint64_t h) {
  size_t mask = (size_t)d->nslots - 1, i = (size_t)h & mask;
  while (d->slots[i]) {
    const mq_dentry *e = &d->entries[d->slots[i] - 1];
    if (e->hash == h && same_key(e->key, key)) break;
    i = (i + 1) & mask;
  }
  return (int)i;
}

/* Puts entry [e] (whose key is not in the table) in its slot. */
static void place(mq_dict *d, int e) {
  size_t mask = (size_t)d->nslots - 1, i = (size_t)d->entries[e].hash & mask;
  while (d->slots[i]) i = (i + 1) & mask;
  d->slots[i] = e + 1;
}

/* The table indexed again from the entries (after they moved). */
static void reindex(mq_dict *d) {
  memset(d->slots, 0, (size_t)d->nslots * sizeof *d->slots);
  for (int e = 0; e < d->used; e++) place(d, e);
}

/* Moves the live entries down over the holes, in order (the table is then
 * stale: the caller indexes it again). */
static void squeeze(mq_dict *d) {
  int w = 0;
  for (int e = 0; e < d->used; e++)
    if (mq_dentry_live(&d->entries[e])) d->entries[w++] = d->entries[e];
  d->used = w;
}

void mq_dict_compact(mq_dict *d) {
  if (d->used == d->len) return;
  squeeze(d);
  if (d->slots) reindex(d);
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
  int32_t e = d->slots[probe(d, key, hash_key(S, key))];
  return e - 1;
}

/* A table of at least [need] * 3 / 2 slots, the live entries indexed
 * again (and the holes squeezed out). */
static void rehash(mq_state *S, mq_dict *d, int need) {
  size_t n = 8;
  while (n < (size_t)need + (size_t)need / 2 + 1) n *= 2;
  if (n > (size_t)INT32_MAX) mq_error(S, "dict is too large");
  int32_t *slots = mq_calloc(S, n * sizeof *slots);
  if (d->slots) mq_free(S, d->slots, (size_t)d->nslots * sizeof *d->slots);
  d->slots = slots;
  d->nslots = (int)n;
  squeeze(d);
  reindex(d);
}

void mq_dict_set(mq_state *S, mq_dict *d, mq_value key, mq_value val) {
  check_key(S, key);
  uint64_t h = hash_key(S, key);
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
  /* Out of room: squeeze the holes out if they are a quarter of the entries
   * (so the squeeze is paid for by as many removals), else grow. */
  if (d->used == d->cap && (d->used - d->len) * 4 >= d->used) mq_dict_compact(d);
  MQ_GROW(S, d->entries, d->cap, d->used + 1);
  if ((int64_t)(d->len + 1) * 3 > (int64_t)d->nslots * 2) rehash(S, d, d->len + 1);
  mq_retain(key);
  mq_retain(val);
  d->entries[d->used] = (mq_dentry){key, val, h};
  d->slots[probe(d, key, h)] = ++d->used;
  d->len++;
}

void mq_dict_remove(mq_state *S, mq_dict *d, int e) {
  mq_dentry gone = d->entries[e];
  /* its slot, then the slots after it in the run shifted back over the gap
   * when their home allows (Knuth's deletion for linear probing) */
  size_t mask = (size_t)d->nslots - 1, i = (size_t)gone.hash & mask;
  while (d->slots[i] != e + 1) i = (i + 1) & mask;
  for (size_t j = (i + 1) & mask; d->slots[j]; j = (j + 1) & mask) {
    size_t home = (size_t)d->entries[d->slots[j] - 1].hash & mask;
    /* it stays if its home is cyclically in (i, j] */
    bool stays = i < j ? home > i && home <= j : home > i || home <= j;
    if (stays) continue;
    d->slots[i] = d->slots[j];
    i = j;
  }
  d->slots[i] = 0;
  d->entries[e] = (mq_dentry){mq_none(), mq_none(), 0};
  d->len--;
  while (d->used > 0 && !mq_dentry_live(&d->entries[d->used - 1])) d->used--; /* a hole at the end */
  if (d->used - d->len > 8 && d->used - d->len > d->len) mq_dict_compact(d);
  mq_release(S, gone.key);
  mq_release(S, gone.val);
}

mq_list *mq_dict_list(mq_state *S, const mq_dict *d, int what) {
  mq_list *l = mq_list_new(S, d->len);
  for (int i = 0; i < d->used; i++) {
    const mq_dentry *e = &d->entries[i];
    if (!mq_dentry_live(e)) continue;
    mq_poll(S);
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
  for (int i = 0; i < d->used; i++) { /* a hole's none releases nothing */
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
  for (int i = 0; i < d->used; i++) { /* a hole's none is no reference */
    fn(S, d->entries[i].key);
    fn(S, d->entries[i].val);
  }
}

/* Empties [o]: the table is cleared first, so that the dict is consistent
 * (and empty) while the releases run. */
static void dict_clear(mq_state *S, mq_obj *o) {
  mq_dict *d = (mq_dict *)o;
  if (d->slots) memset(d->slots, 0, (size_t)d->nslots * sizeof *d->slots);
  d->len = 0;
  while (d->used > 0) {
    d->used--;
    mq_release(S, d->entries[d->used].key);
    mq_release(S, d->entries[d->used].val);
  }
}

void mq_dict_init_kind(mq_state *S) {
  /* printing is value.c's, which prints lists and dicts nested in each other */
  S->kinds[MQ_O_DICT] = (mq_kind){dict_free, S->kinds[MQ_O_LIST].format, dict_truthy,
                                  dict_traverse, dict_clear};
}
