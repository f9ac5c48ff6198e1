/* dict.h - dicts: hashed, insertion-ordered maps from keys to values.
 *
 * Keys are strings, ints and bools (true is the key 1 and false the key 0,
 * as in Python, because true == 1); any other key is an error that names
 * its type. Keys are hashed with SipHash under a key of the state's own,
 * drawn at masq_open: a script cannot choose keys that collide (30 000 of
 * them would make every insertion and lookup walk all the others).
 * Entries keep the order they were first inserted in, which is how a dict
 * prints, iterates and lists its keys. A dict is a container of the cycle
 * collector (core/gc.h): d["me"] = d is freed with the rest. */
#ifndef MQ_DICT_H
#define MQ_DICT_H

#include "state.h"

typedef struct mq_dentry {
  mq_value key, val; /* key none: a removed entry (a hole) */
  uint64_t hash;     /* the key's, kept so the table is rebuilt without rehashing */
} mq_dentry;

/* Entries are kept in insertion order with holes where keys were removed
 * (none is never a key); holes are squeezed out before they outnumber
 * the live entries, so removal costs O(1) amortized. */
typedef struct mq_dict {
  mq_obj hdr;
  int len;                 /* live entries */
  int used, cap;           /* entries used (live and holes) and allocated */
  mq_dentry *entries;      /* in insertion order */
  int32_t *slots;          /* open addressing: entry index + 1, 0 for empty */
  int nslots;              /* 0 or a power of two, more than len * 3 / 2 */
} mq_dict;

/* Whether entry [e] holds a key (is not a hole): every walk over
 * entries[0..used) skips the others. */
static inline bool mq_dentry_live(const mq_dentry *e) { return e->key.type != MQ_NONE; }

static inline mq_dict *mq_as_dict(mq_value v) { return (mq_dict *)v.as.o; }

/* A new empty dict with room for [cap] entries, owned by the pool. */
MQ_INTERNAL mq_dict *mq_dict_new(mq_state *S, int cap);
/* The entry index of [key] (into entries[0..used)), or -1 if absent; an
 * error if [key] cannot be a key. Valid until the dict next changes. */
MQ_INTERNAL int mq_dict_find(mq_state *S, const mq_dict *d, mq_value key);
/* d[key] = val (both retained): replaces the value of an existing key in
 * place, else appends an entry. Allocates before it changes anything, so
 * a failure leaves [d] as it was. */
MQ_INTERNAL void mq_dict_set(mq_state *S, mq_dict *d, mq_value key, mq_value val);
/* Removes entry [e] (an index mq_dict_find gave), keeping the order of the
 * others, and releases its key and value once [d] is consistent again.
 * Never allocates. */
MQ_INTERNAL void mq_dict_remove(mq_state *S, mq_dict *d, int e);
/* Squeezes the holes out, so that entries[0..len) are the live ones in
 * order (for code that walks a dict by position). Never allocates. */
MQ_INTERNAL void mq_dict_compact(mq_dict *d);
/* A new list (pool-owned) of [d]'s keys, values or [key, value] pairs, in
 * insertion order. */
enum { MQ_DICT_KEYS, MQ_DICT_VALUES, MQ_DICT_ITEMS };
MQ_INTERNAL mq_list *mq_dict_list(mq_state *S, const mq_dict *d, int what);
/* Sets the kind hooks of dicts (free, print, truth, collector). */
MQ_INTERNAL void mq_dict_init_kind(mq_state *S);

#endif
