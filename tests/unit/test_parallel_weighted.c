/* test_parallel_weighted.c - mq_parallel_for_weighted (runtime/tensor/parallel.h)
 * hands every item to exactly one call, in contiguous runs whose weight
 * (entries + one per item) is about the grain: empty items, one item
 * heavier than many grains, and no items at all; on 1, 2 and 3 threads. */
#include <stdatomic.h>
#include <stdlib.h>

#include "../../runtime/tensor/parallel.h"
#include "unit.h"

enum { MAXN = 5000 };

typedef struct visit {
  const int64_t *off;
  int64_t grain;
  atomic_int seen[MAXN];     /* calls that covered each item */
  atomic_int runs, too_big;  /* calls; runs of more than a grain and a row */
} visit;

static void count_items(void *ctx, int64_t lo, int64_t hi, int t) {
  (void)t;
  visit *V = ctx;
  atomic_fetch_add(&V->runs, 1);
  for (int64_t i = lo; i < hi; i++) atomic_fetch_add(&V->seen[i], 1);
  /* a run longer than one item never weighs more than two grains: it
   * starts at a chunk boundary and its last item starts before the next */
  int64_t w = V->off[hi] - V->off[lo] + (hi - lo);
  int64_t last = V->off[hi] - V->off[hi - 1] + 1;
  if (hi - lo > 1 && w - last > V->grain) atomic_fetch_add(&V->too_big, 1);
}

/* Runs the splitter over offsets [off] (n + 1) and checks the cover. */
static void check_cover(const int64_t *off, int64_t n, int64_t grain, int threads) {
  static visit V;
  V.off = off;
  V.grain = grain;
  for (int64_t i = 0; i < MAXN; i++) atomic_store(&V.seen[i], 0);
  atomic_store(&V.runs, 0);
  atomic_store(&V.too_big, 0);
  mq_parallel_for_weighted(S, threads, n, off, grain, count_items, &V);
  int once = 1;
  for (int64_t i = 0; i < n; i++) once &= atomic_load(&V.seen[i]) == 1;
  CHECK(once);
  CHECK(atomic_load(&V.too_big) == 0);
  int64_t total = n ? off[n] - off[0] + n : 0;
  CHECK(atomic_load(&V.runs) <= (total + grain - 1) / grain);
}

static void tests(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  static int64_t off[MAXN + 1];
  /* rows of 0..6 entries, one of 100000 at item 1234, offsets not from 0 */
  off[0] = 77;
  for (int64_t i = 0; i < MAXN; i++) off[i + 1] = off[i] + (i == 1234 ? 100000 : i % 7);
  for (int threads = 1; threads <= 3; threads++) {
    check_cover(off, MAXN, 1000, threads);
    check_cover(off, MAXN, 1, threads);
    check_cover(off, MAXN, 1 << 30, threads); /* one chunk */
    check_cover(off, 1, 10, threads);
    check_cover(off, 0, 10, threads); /* nothing to do, no call */
  }
  /* all items empty: each weighs 1 */
  static int64_t zero[MAXN + 1];
  check_cover(zero, MAXN, 64, 2);
  /* the runs are the same whatever the thread count: with one thread the
   * calls come in order, so their count is the number of non-empty chunks */
  static visit V;
  V.off = off;
  V.grain = 1000;
  atomic_store(&V.runs, 0);
  mq_parallel_for_weighted(S, 1, MAXN, off, 1000, count_items, &V);
  int r1 = atomic_load(&V.runs);
  atomic_store(&V.runs, 0);
  mq_parallel_for_weighted(S, 2, MAXN, off, 1000, count_items, &V);
  CHECK(atomic_load(&V.runs) == r1);
  CHECK(r1 > 10);
}

int main(void) { return unit_main("test_parallel_weighted", tests); }
