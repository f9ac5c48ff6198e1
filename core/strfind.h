/* strfind.h - substring search in linear time, for every string method
 * that searches (find, rfind, index, count, split, replace, partition,
 * `in`).
 *
 * Why not a byte-by-byte memcmp at each place: a script controls both
 * strings, and 'a' * 10**6 searched for 'a' * 10**5 + 'b' costs 10^11
 * comparisons that way. This is Crochemore and Perrin's Two-Way
 * algorithm: at most about 2n comparisons for a text of n bytes, whatever
 * the pattern, in O(1) memory (nothing to allocate, so nothing to fail),
 * and it polls the interrupt hook as it goes. */
#ifndef MQ_STRFIND_H
#define MQ_STRFIND_H

#include "state.h"

/* A pattern made ready for searching: its critical factorization, worked
 * out once and reused by every search for it (count and split search
 * many times). Borrows the pattern's bytes. */
typedef struct mq_finder {
  const unsigned char *pat;
  size_t m;
  int64_t ell;     /* the left part of the factorization is pat[0..ell] */
  size_t period;   /* how far to shift after a full match (or a mismatch on the left) */
  bool periodic;   /* the left part repeats with the right part's period */
  bool back;       /* searches from the end (rfind) */
} mq_finder;

/* Prepares [pat] of [m] bytes; [back]: for mq_rfind instead of mq_find. */
MQ_INTERNAL void mq_finder_init(mq_finder *f, const char *pat, size_t m, bool back);

/* The first place at or after [from] where f's pattern starts in
 * hay[0..n), or -1. An empty pattern is found at [from] (if from <= n). */
MQ_INTERNAL int64_t mq_find(mq_state *S, const mq_finder *f, const char *hay, size_t n, size_t from);

/* The last place where f's pattern (prepared with back) starts in
 * hay[0..n), or -1; an empty pattern is found at n. */
MQ_INTERNAL int64_t mq_rfind(mq_state *S, const mq_finder *f, const char *hay, size_t n);

#endif
