/* arena.c - a bump allocator over the state's allocator (core/arena.h). */
#include "arena.h"

/* Chunks are taken from the state's allocator and bumped through; nothing is
 * freed until mq_arena_free. A request bigger than half a chunk gets a chunk
 * of its own, linked behind the current one so the current one's free space
 * is not wasted. */
#define CHUNK_BYTES 8192
#define ALIGN _Alignof(max_align_t)

struct mq_arena_chunk {
  struct mq_arena_chunk *next;
  size_t size, used; /* bytes of data[] */
  _Alignas(max_align_t) unsigned char data[];
};

void mq_arena_init(mq_arena *A, mq_state *S) {
  A->S = S;
  A->chunks = NULL;
}

void *mq_arena_alloc(mq_arena *A, size_t n) {
  if (n > SIZE_MAX / 2) mq_throw(A->S, MASQ_ERR_MEMORY, "out of memory");
  n = n ? (n + ALIGN - 1) & ~(size_t)(ALIGN - 1) : ALIGN;
  struct mq_arena_chunk *c = A->chunks;
  if (!c || c->size - c->used < n) {
    bool own = n > CHUNK_BYTES / 2;
    size_t size = own ? n : CHUNK_BYTES;
    struct mq_arena_chunk *fresh = mq_alloc(A->S, sizeof *fresh + size);
    fresh->size = size;
    fresh->used = 0;
    if (own && c) {
      fresh->next = c->next;
      c->next = fresh;
    } else {
      fresh->next = c;
      A->chunks = fresh;
    }
    c = fresh;
  }
  void *p = c->data + c->used;
  c->used += n;
  return p;
}

char *mq_arena_strndup(mq_arena *A, const char *s, size_t n) {
  char *d = mq_arena_alloc(A, n + 1);
  if (n) memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

void mq_arena_free(mq_arena *A) {
  struct mq_arena_chunk *c = A->chunks;
  while (c) {
    struct mq_arena_chunk *next = c->next;
    mq_free(A->S, c, sizeof *c + c->size);
    c = next;
  }
  A->chunks = NULL;
}
