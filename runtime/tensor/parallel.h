/* parallel.h - running a kernel on several threads, for large tensors only.
 *
 * A kernel that splits its work calls mq_parallel_threads_for() with the number of
 * elements it will touch; below MQ_PAR_MIN_ELEMS, or when the state allows
 * one thread (set_num_threads(1), MASQ_NUM_THREADS=1), that is 1 and the
 * kernel runs on the calling thread alone. Then mq_parallel_for() cuts the
 * work into chunks that the calling thread and the state's worker threads
 * (started at the first split, joined by masq_close) claim one at a time.
 *
 * Rules for chunk functions: they never allocate, raise errors or poll for
 * interrupts (mq_parallel_for does), and write only their own part of the
 * output. Results must not depend on the number of threads: chunks are
 * fixed by the sizes alone, and partial results combine in a fixed order
 * (e.g. sums from fixed pieces, see reduce_kernels.c). */
#ifndef MQ_PARALLEL_H
#define MQ_PARALLEL_H

#include "../../core/state.h"

/* Work below this many elements stays on one thread: waking a sleeping
 * worker takes about 100 us on this machine class (a KVM guest; a spinning
 * one, under 1 us), and 10^5 elements of a cheap kernel take about 30 us. */
#define MQ_PAR_MIN_ELEMS ((int64_t)1 << 20)

/* A good chunk for mq_parallel_for, in elements of a cheap kernel: long
 * enough that claiming it costs nothing, short enough (tens of us) that
 * the threads finish together. */
#define MQ_PAR_GRAIN ((int64_t)1 << 16)

/* The number of threads to split [work] elements over (1: don't split). */
MQ_INTERNAL int mq_parallel_threads_for(mq_state *S, int64_t work);
/* The threads a large kernel may use: S->nthreads, which 0 leaves to the
 * number of online processors (at most 8), counted at the first need. */
MQ_INTERNAL int mq_state_threads(mq_state *S);
/* Runs fn(ctx, lo, hi, t) over the items [0, count) in chunks of [grain]
 * items (the last may be shorter), which the n threads claim one at a
 * time, so a thread slowed by another process on its core takes fewer
 * chunks instead of holding the others up at the end, and the call returns
 * when the chunks are done, whether or not every worker has woken. [t] is the
 * claiming thread's number (0 .. n-1), for per-thread scratch. The
 * calling thread polls for interrupts after each of its chunks, and once
 * one is due nobody claims more: mq_parallel_for then raises it. Which
 * thread runs a chunk must not change the result (chunks write disjoint
 * outputs, or partials merged afterwards in item order). */
typedef void (*mq_range_fn)(void *ctx, int64_t lo, int64_t hi, int t);
MQ_INTERNAL void mq_parallel_for(mq_state *S, int n, int64_t count, int64_t grain,
                                 mq_range_fn fn, void *ctx);
/* mq_parallel_for over items of uneven weight, such as the rows of a CSR
 * tensor: [off] holds count + 1 ascending offsets (crow), item i weighs
 * off[i + 1] - off[i] + 1, and the items are cut into contiguous runs of
 * about [grain] weight each, found by binary search in [off]. A row of
 * 10^5 entries then is a chunk of its own while rows of 10 go thousands
 * to a chunk, and the threads share the entries evenly rather than the
 * rows. The runs depend on [off] and [grain] alone; fn(ctx, lo, hi, t)
 * receives items (rows), never a split item. */
MQ_INTERNAL void mq_parallel_for_weighted(mq_state *S, int n, int64_t count, const int64_t *off,
                                          int64_t grain, mq_range_fn fn, void *ctx);
/* Stops and joins the state's workers (masq_close). */
MQ_INTERNAL void mq_parallel_close(mq_state *S);
/* The thread count a new state starts with: MASQ_NUM_THREADS if set (1 to
 * 64), else 0: the number of online processors (mq_state_threads). */
MQ_INTERNAL int mq_parallel_default_threads(void);

#endif
