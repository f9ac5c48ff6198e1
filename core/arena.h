/* arena.h - a bump allocator: many small blocks freed in one go (the
 * lexer's strings and the parser's nodes live in one for a parse). It is
 * here, below both, so that neither calls the other for memory. */
#ifndef MQ_ARENA_H
#define MQ_ARENA_H

#include "state.h"

/* A bump allocator for one parse. Chunks come from the state's allocator. */
typedef struct mq_arena {
  mq_state *S;
  struct mq_arena_chunk *chunks;
} mq_arena;

MQ_INTERNAL void mq_arena_init(mq_arena *A, mq_state *S);
MQ_INTERNAL void *mq_arena_alloc(mq_arena *A, size_t n);
MQ_INTERNAL char *mq_arena_strndup(mq_arena *A, const char *s, size_t n);
MQ_INTERNAL void mq_arena_free(mq_arena *A);

#endif
