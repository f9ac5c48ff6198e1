/* handles.c - the registry of references the host holds (see api_int.h):
 * a hash set of tensor pointers with counts, open addressing with linear
 * probing and backward-shift deletion (no tombstones, so lookups stay short
 * however many handles come and go). */
#include "api_int.h"

#include "../runtime/tensor/tensor.h"

mq_host *mq_host_get(mq_state *S) {
  if (!S->host) S->host = mq_calloc(S, sizeof *S->host);
  return S->host;
}

/* Pointers are 16-byte aligned: drop the low bits, then mix (Murmur3's
 * finalizer) so neighbouring allocations spread over the table. */
static size_t bucket(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p >> 4;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdu;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

static mq_handle *find(const mq_host *H, const void *t) {
  if (!H || !H->cap) return NULL;
  for (size_t i = bucket(t, H->cap);; i = (i + 1) & (H->cap - 1)) {
    if (!H->handles[i].t) return NULL;
    if (H->handles[i].t == t) return &H->handles[i];
  }
}

static void insert(mq_host *H, mq_tensor *t, uint32_t refs) {
  size_t i = bucket(t, H->cap);
  while (H->handles[i].t) i = (i + 1) & (H->cap - 1);
  H->handles[i] = (mq_handle){t, refs};
  H->nhandles++;
}

void mq_handle_reserve(mq_state *S, size_t n) {
  mq_host *H = mq_host_get(S);
  if ((H->nhandles + n) * 2 <= H->cap) return;
  size_t cap = H->cap ? H->cap : 16;
  while ((H->nhandles + n) * 2 > cap) cap *= 2;
  /* The new table is complete before the old one goes: a failed allocation
   * leaves the registry as it was. */
  mq_handle *old = H->handles;
  size_t old_cap = H->cap;
  H->handles = mq_calloc(S, cap * sizeof *H->handles);
  H->cap = cap;
  H->nhandles = 0;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].t) insert(H, old[i].t, old[i].refs);
  mq_free(S, old, old_cap * sizeof *old);
}

void mq_handle_add(mq_state *S, mq_tensor *t) {
  mq_handle *h = find(S->host, t);
  if (!h) {
    mq_handle_reserve(S, 1);
    insert(S->host, t, 0);
    h = find(S->host, t);
  }
  h->refs++;
  t->hdr.rc++;
}

void mq_handle_give(mq_state *S, masq_tensor **out, mq_tensor *t) {
  if (t) mq_handle_add(S, t);
  *out = t;
}

bool mq_handle_held(const mq_state *S, const void *t) { return t && find(S->host, t) != NULL; }

/* Removes the entry at [i], moving later entries of the same probe run back
 * so that every entry stays reachable from its bucket. */
static void erase(mq_host *H, size_t i) {
  size_t mask = H->cap - 1;
  H->handles[i].t = NULL;
  H->nhandles--;
  for (size_t j = (i + 1) & mask; H->handles[j].t; j = (j + 1) & mask) {
    size_t home = bucket(H->handles[j].t, H->cap);
    /* Entry j may fill the hole at i unless its home lies cyclically in
     * (i, j]. */
    bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
    if (stays) continue;
    H->handles[i] = H->handles[j];
    H->handles[j].t = NULL;
    i = j;
  }
}

bool mq_handle_drop(mq_state *S, mq_tensor *t, bool release) {
  mq_handle *h = find(S->host, t);
  if (!h) return false;
  if (--h->refs == 0) erase(S->host, (size_t)(h - S->host->handles));
  /* Last: freeing may run a host release callback. */
  if (release) mq_obj_release(S, &t->hdr);
  return true;
}

void mq_handle_check(mq_state *S, const void *t, const char *fn, const char *what) {
  mq_api_need(S, t, fn, what);
  if (!mq_handle_held(S, t))
    mq_throw(S, MASQ_ERR_USAGE,
             "%s: %s is not a tensor handle of this state (already released, or never "
             "returned by masq)",
             fn, what);
}

void mq_host_free(mq_state *S) {
  mq_host *H = S->host;
  if (!H) return;
  /* Detach first: release callbacks run below, and whatever they might
   * (wrongly) ask of the registry must find it empty, not half freed. */
  S->host = NULL;
  for (size_t i = 0; i < H->cap; i++) {
    mq_handle h = H->handles[i];
    for (uint32_t k = 0; h.t && k < h.refs; k++) mq_obj_release(S, &h.t->hdr);
  }
  mq_free(S, H->handles, H->cap * sizeof *H->handles);
  mq_free(S, H, sizeof *H);
}
