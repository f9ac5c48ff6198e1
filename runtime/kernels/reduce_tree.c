/* reduce_tree.c - folding the pieces of a long row in bounded memory
 * (mq_red_fold_pieces, reduce.h).
 *
 * A row's result is its kernel's merge over the partials of all its
 * pieces. Holding every partial at once costs a slot per MQ_RED_PIECE
 * entries: for a row of 2^30 entries (a 4 GB float32 file, mapped) that
 * is 2 MB of partial sums and as much again of counts, so a reduction
 * could not stream through a file more than ~2000 times the memory limit.
 * Here at most MQ_RED_BATCH partials exist at a time, and the result has
 * the same bits:
 *
 *   - a row of at most MQ_RED_BATCH pieces is merged as before, all its
 *     partials at once;
 *   - a longer row descends the tree the float sums merge by (pieces
 *     [a, b) split at a + (b - a) / 2: reduce_kernels.c, parts_sum) down
 *     to subtrees of at most MQ_RED_BATCH pieces, computes each subtree's
 *     pieces in one batch, joins them with the kernel's combine along the
 *     same tree, and joins the subtrees likewise; the root then merges
 *     into the slot as one partial. For a sum that is exactly
 *     acc + parts_sum(all). The extrema merge their partials left to
 *     right; their combine picks the same one of two values whatever the
 *     bracketing (the larger, or the first of equals, or the last NaN),
 *     so the tree picks what the left-to-right fold picks.
 *
 * The descent recurses once per halving above a batch: at most
 * log2(2^63 / MQ_RED_PIECE / MQ_RED_BATCH) < 43 levels. */
#include "reduce.h"

/* One partial, whatever a piece kernel keeps (a float, double or int64). */
typedef union slot {
  double d;
  int64_t i;
  char bytes[16];
} slot;

typedef struct tree {
  const mq_red_kernel *k;
  char *parts;
  int64_t *pcnt, count;
  mq_red_pieces_fn fn;
  void *ctx;
} tree;

/* Joins partials [a, b) of [p] along the merge tree into p[a]. */
static void join(const mq_red_kernel *k, char *p, int64_t a, int64_t b) {
  if (b - a < 2) return;
  int64_t h = a + (b - a) / 2;
  join(k, p, a, h);
  join(k, p, h, b);
  k->combine(p + (size_t)a * k->acc_size, p + (size_t)h * k->acc_size, 1);
}

/* The partial of pieces [a, b) of the row into [out]. */
static void subtree(tree *T, int64_t a, int64_t b, slot *out) {
  const mq_red_kernel *k = T->k;
  if (b - a <= MQ_RED_BATCH) {
    T->fn(T->ctx, a, b, T->parts, T->pcnt);
    for (int64_t p = 0; p < b - a; p++) T->count += T->pcnt[p];
    join(k, T->parts, 0, b - a);
    memcpy(out, T->parts, k->acc_size);
    return;
  }
  int64_t h = a + (b - a) / 2;
  slot right;
  subtree(T, a, h, out);
  subtree(T, h, b, &right);
  k->combine(out, &right, 1);
}

int64_t mq_red_fold_pieces(const mq_red_kernel *k, void *acc, int64_t o, int64_t np, char *parts,
                           int64_t *pcnt, mq_red_pieces_fn fn, void *ctx) {
  tree T = {k, parts, pcnt, 0, fn, ctx};
  if (np <= MQ_RED_BATCH) {
    fn(ctx, 0, np, parts, pcnt);
    k->merge(acc, o, parts, np);
    for (int64_t p = 0; p < np; p++) T.count += pcnt[p];
    return T.count;
  }
  slot root;
  subtree(&T, 0, np, &root);
  k->merge(acc, o, &root, 1);
  return T.count;
}
