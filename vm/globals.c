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

int mq_global_slot(mq_state *S, const char *name) {
  int slot = mq_global_find(S, name);
  if (slot >= 0) return slot;
  if (S->nglobals >= 65535) mq_error(S, "too many global variables (limit 65535)");
  if ((S->nglobals + 1) * 2 > S->gindex_cap) {
    int cap = S->gindex_cap ? S->gindex_cap * 2 : 256;
    int *idx = mq_calloc(S, (size_t)cap * sizeof *idx);
    mq_free(S, S->gindex, (size_t)S->gindex_cap * sizeof *S->gindex);
    S->gindex = idx;
    S->gindex_cap = cap;
    for (int i = 0; i < S->nglobals; i++) index_insert(S, i);
  }
  MQ_GROW(S, S->globals, S->globals_cap, S->nglobals + 1);
  char *copy = mq_strdup(S, name);
  slot = S->nglobals++;
  S->globals[slot] = (mq_global){copy, mq_none(), false, false};
  index_insert(S, slot);
  return slot;
}

void mq_global_set(mq_state *S, int slot, mq_value v) {
  mq_global *g = &S->globals[slot];
  mq_retain(v);
  mq_value old = g->value;
  g->value = v;
  g->defined = true;
  mq_release(S, old);
}

void mq_globals_free(mq_state *S) {
  for (int i = 0; i < S->nglobals; i++) {
    mq_release(S, S->globals[i].value);
    mq_strfree(S, S->globals[i].name);
  }
  mq_free(S, S->globals, (size_t)S->globals_cap * sizeof *S->globals);
  mq_free(S, S->gindex, (size_t)S->gindex_cap * sizeof *S->gindex);
  S->globals = NULL;
  S->gindex = NULL;
  S->nglobals = S->globals_cap = S->gindex_cap = 0;
}
