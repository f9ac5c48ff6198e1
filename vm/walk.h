/* walk.h - what `for` walks, and the lazy enumerate and zip.
 *
 * Iteration is by position: item i of a sequence, until the sequence says
 * it is done (FOR_ITER keeps [seq, i] on the stack). A list gives its
 * items, a string its characters (1-byte strings), a range its ints, a
 * dict its keys, a tensor its rows along dim 0; enumerate(xs) and
 * zip(xs, ys) are lazy views of their sources that give [i, x] and
 * [x, y] pairs, made only as the loop reaches them, so
 * `for i, x in enumerate(range(10 ** 12))` takes no memory. Like a range,
 * and unlike Python's one-pass iterators, they can be walked again. */
#ifndef MQ_WALK_H
#define MQ_WALK_H

#include "../core/state.h"

/* enumerate(xs, start) and zip(*seqs): [srcs] the sources (a list, dicts
 * already turned into lists of their keys), [counted] whether each item
 * starts with its count from [start]. */
typedef struct mq_zip {
  mq_obj hdr; /* MQ_O_ENUMERATE or MQ_O_ZIP; a container (core/gc.h) */
  mq_value srcs;
  int64_t start;
  int depth; /* 1 + the deepest enumerate/zip among the sources */
} mq_zip;

/* How deep enumerate and zip may be nested in each other: walking them
 * recurses once per level. */
#define MQ_ZIP_MAX_DEPTH 32

/* Item [i] of [seq] (borrowed or owned by the pool), or *done when i is
 * past its end; an error for what cannot be iterated. */
MQ_INTERNAL mq_value mq_walk_item(mq_state *S, mq_value seq, int64_t i, bool *done);
/* How many items `for` would visit, or -1 for what cannot be iterated (a
 * number, a 0-d tensor, a function...). */
MQ_INTERNAL int64_t mq_walk_length(mq_state *S, mq_value seq);
/* The items of [v] as a new list; an error naming [fn] for what cannot
 * be iterated or has more items than a list holds. */
MQ_INTERNAL mq_list *mq_walk_list(mq_state *S, mq_value v, const char *fn);
/* A new enumerate (counted) or zip of the iterables in [seqs] (owned by
 * the pool); [fn] names the builtin in errors. */
MQ_INTERNAL mq_value mq_zip_new(mq_state *S, const mq_list *seqs, bool counted, int64_t start,
                                const char *fn);
/* Sets the hooks of the enumerate and zip kinds. */
MQ_INTERNAL void mq_zip_init_kind(mq_state *S);

#endif
