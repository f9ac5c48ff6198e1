/* globals.c - global slots with an open-addressing name index (FNV-1a). */
#include "globals.h"

static uint32_t hash_name(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

int mq_global_find(const mq_state *S, const char *name) {
  if (!S->gindex_cap) return -1;
  uint32_t mask = (uint32_t)S->gindex_cap - 1;
  for (uint32_t i = hash_name(name) & mask;; i = (i + 1) & mask) {
    int e = S->gindex[i];
    if (!e) return -1;
    if (strcmp(S->globals[e - 1].name, name) == 0) return e - 1;
  }
}

static void index_insert(mq_state *S, int slot) {
  uint32_t mask = (uint32_t)S->gindex_cap - 1;
  uint32_t i = hash_name(S->globals[slot].name) & mask;
  while (S->gindex[i]) i = (i + 1) & mask;
  S->gindex[i] = slot + 1;
}

/* Grows the name index to at least [cap] buckets (a power of two). */
static void index_grow(mq_state *S, int cap) {
  int *idx = mq_calloc(S, (size_t)cap * sizeof *idx);
  mq_free(S, S->gindex, (size_t)S->gindex_cap * sizeof *S->gindex);
  S->gindex = idx;
  S->gindex_cap = cap;
  for (int i = 0; i < S->nglobals; i++) index_insert(S, i);
}

/* Room for [n] slots in all: the index stays at most half full. */
static void reserve(mq_state *S, int n) {
  if (n > 65535) mq_error(S, "too many global variables (limit 65535)");
  if (n * 2 > S->gindex_cap) {
    int cap = S->gindex_cap ? S->gindex_cap : 256;
    while (n * 2 > cap) cap *= 2;
    index_grow(S, cap);
  }
  MQ_GROW(S, S->globals, S->globals_cap, n);
}

void mq_globals_reserve(mq_state *S, int n) { reserve(S, S->nglobals + n); }

static int new_slot(mq_state *S, const char *name, bool borrowed) {
  int slot = mq_global_find(S, name);
  if (slot >= 0) return slot;
  reserve(S, S->nglobals + 1);
  char *own = borrowed ? (char *)name : mq_strdup(S, name);
  slot = S->nglobals++;
  S->globals[slot] = (mq_global){own, mq_none(), false, borrowed, false, mq_none(), 0};
  index_insert(S, slot);
  return slot;
}

int mq_global_slot(mq_state *S, const char *name) { return new_slot(S, name, false); }

int mq_global_slot_borrowed(mq_state *S, const char *name) { return new_slot(S, name, true); }

void mq_global_set(mq_state *S, int slot, mq_value v) {
  mq_global *g = &S->globals[slot];
  if (S->undo_base && g->logged < S->undo_base) {
    MQ_GROW(S, S->undo, S->undo_cap, S->undo_len + 1); /* may throw: nothing changed yet */
    S->undo[S->undo_len++] = (mq_undo){slot, g->logged, g->value, g->defined};
    g->logged = S->undo_len;
    mq_retain(v);
    g->value = v; /* the old value's reference moved to the log */
    g->defined = true;
    return;
  }
  mq_retain(v);
  mq_value old = g->value;
  g->value = v;
  g->defined = true;
  mq_release(S, old);
}

void mq_global_bind_lib(mq_state *S, int slot, mq_value v) {
  mq_global_set(S, slot, v);
  mq_global *g = &S->globals[slot];
  mq_retain(v);
  mq_release(S, g->lib);
  g->lib = v;
  g->builtin = true;
}

/* Whether two values are the same one: the same object, or equal scalars. */
static bool same_value(mq_value a, mq_value b) {
  if (a.type != b.type) return false;
  switch ((mq_vtype)a.type) {
  case MQ_OBJ: return a.as.o == b.as.o;
  case MQ_FLOAT: return memcmp(&a.as.f, &b.as.f, sizeof a.as.f) == 0; /* nan too */
  case MQ_INT: return a.as.i == b.as.i;
  case MQ_BOOL: return a.as.b == b.as.b;
  default: return true;
  }
}

bool mq_global_is_user(const mq_global *g) {
  return g->defined && (!g->builtin || !same_value(g->value, g->lib));
}

void mq_global_del(mq_state *S, int slot) {
  mq_global *g = &S->globals[slot];
  if (g->builtin) {
    if (!mq_global_is_user(g))
      mq_error(S, "'%s' is a builtin, not a variable: del gives it back only after an assignment "
               "shadowed it",
               g->name);
    mq_global_set(S, slot, g->lib);
    return;
  }
  if (!g->defined) mq_error(S, "undefined variable '%s'", g->name);
  mq_global_set(S, slot, mq_none()); /* logs the old value, as a store does */
  g->defined = false;
}

mq_txn mq_globals_begin(mq_state *S) {
  mq_txn txn = {S->undo_base, S->imports ? S->imports->len : 0};
  S->undo_base = S->undo_len + 1;
  return txn;
}

static void commit(mq_state *S, int outer_base) {
  S->undo_base = outer_base;
  if (outer_base) return; /* the outer eval may still roll these back */
  for (int i = 0; i < S->undo_len; i++) {
    S->globals[S->undo[i].slot].logged = 0;
    mq_release(S, S->undo[i].old);
  }
  S->undo_len = 0;
}

static void rollback(mq_state *S, int outer_base) {
  int first = S->undo_base - 1;
  for (int i = S->undo_len - 1; i >= first; i--) {
    const mq_undo *u = &S->undo[i];
    mq_global *g = &S->globals[u->slot];
    mq_value made = g->value;
    g->value = u->old;
    g->defined = u->defined;
    g->logged = u->prev_logged;
    mq_release(S, made);
  }
  S->undo_len = first;
  S->undo_base = outer_base;
}

void mq_globals_free(mq_state *S) {
  for (int i = 0; i < S->nglobals; i++) {
    mq_release(S, S->globals[i].value);
    mq_release(S, S->globals[i].lib);
    if (!S->globals[i].borrowed) mq_strfree(S, S->globals[i].name);
  }
  mq_free(S, S->globals, (size_t)S->globals_cap * sizeof *S->globals);
  mq_free(S, S->gindex, (size_t)S->gindex_cap * sizeof *S->gindex);
  for (int i = 0; i < S->undo_len; i++) mq_release(S, S->undo[i].old);
  mq_free(S, S->undo, (size_t)S->undo_cap * sizeof *S->undo);
  S->undo = NULL;
  S->undo_len = S->undo_cap = S->undo_base = 0;
  S->globals = NULL;
  S->gindex = NULL;
  S->nglobals = S->globals_cap = S->gindex_cap = 0;
}

/* Forgets the imports made since [len] (paths and their code). */
static void forget_imports(mq_state *S, int len) {
  mq_list *l = S->imports;
  while (l && l->len > len) mq_release(S, l->items[--l->len]);
}

void mq_globals_end(mq_state *S, mq_txn txn, bool committed) {
  if (committed) {
    commit(S, txn.outer_base);
  } else {
    rollback(S, txn.outer_base);
    forget_imports(S, txn.imports_len);
  }
}
