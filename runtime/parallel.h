/* parallel.h - running a kernel on several threads, for large tensors only.
 *
 * A kernel that splits its work calls mq_threads_for() with the number of
 * elements it will touch; below MQ_PAR_MIN_ELEMS, or when the state allows
 * one thread (set_num_threads(1), MASQ_NUM_THREADS=1), that is 1 and the
 * kernel runs on the calling thread as before. Otherwise mq_parallel()
 * runs task(ctx, i, n) for i = 0 .. n-1, task 0 on the calling thread and
 * the others on threads started for the call, and returns when all are
 * done.
 *
 * Rules for tasks: they never allocate, raise errors or poll for
 * interrupts (the caller polls after mq_parallel returns), and write only
 * their own part of the output. Results must not depend on the number of
 * threads: split work at boundaries fixed by the sizes alone (e.g. sums
 * are combined from fixed pieces in a fixed order, see reduce.c). */
#ifndef MQ_PARALLEL_H
#define MQ_PARALLEL_H

#include "../vm/state.h"

/* Work below this many elements stays on one thread: starting a thread
 * costs 15-50 us here, about what 10^5 elements of a cheap kernel take. */
#define MQ_PAR_MIN_ELEMS ((int64_t)1 << 20)

typedef void (*mq_task_fn)(void *ctx, int i, int n);

/* The number of tasks to split [work] elements into (1: don't split). */
MQ_INTERNAL int mq_threads_for(const mq_state *S, int64_t work);
/* Runs the n tasks; if a thread cannot be started, its task runs on the
 * calling thread instead (never an error). */
MQ_INTERNAL void mq_parallel(mq_state *S, int n, mq_task_fn task, void *ctx);
/* The start of part i of n of [0, len), rounded down to a multiple of
 * [align] (so parts don't share cache lines or pieces). */
static inline int64_t mq_part_start(int64_t len, int i, int n, int64_t align) {
  if (i >= n) return len;
  int64_t s = (int64_t)((double)len * i / n);
  s -= s % align;
  return s;
}
/* The thread count a new state starts with: MASQ_NUM_THREADS if set (1 to
 * 64), else the number of online processors (at most 8). */
MQ_INTERNAL int mq_default_threads(void);

#endif
