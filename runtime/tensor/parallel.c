/* parallel.c - a state's pool of worker threads for large kernels (see
 * parallel.h).
 *
 * The workers are started the first time a kernel splits, and live until
 * masq_close. A round is one mq_parallel_for: the caller publishes its
 * description (fn, ctx, the chunks) in the pool, opens it by storing the
 * round's number and its chunk count in one atomic word [claim], bumps
 * [gen] and wakes the workers. Everyone, the caller included, then claims
 * chunks by decrementing the count in [claim] with a compare-and-swap
 * that also checks the round number, and counts each finished chunk in
 * [finished]. The round ends when every claimed chunk is finished, not
 * when every worker has checked in: a worker the scheduler leaves asleep
 * behind other processes for milliseconds does not hold the caller up (it
 * wakes later, finds the round's chunks gone or a newer round, and claims
 * there or nothing). So the description lives in the pool, not on the
 * caller's stack, and is read only under a claim of its own round: a
 * claim that succeeds proves the round was still open, with a chunk left,
 * when the description was read, so the caller had not yet moved on.
 * Both sides spin a little before they sleep on a condition variable:
 * rounds often follow each other within microseconds (a reduction, then
 * its finishing pass, then the next statement's kernel), and waking a
 * sleeping thread costs about 100 us on this machine class (measured; a
 * KVM guest). */
#include "parallel.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define MAX_THREADS 64

/* Polls before sleeping: about 20-80 us of pause instructions. */
#define SPINS 2000

/* [claim]: the round number in the high 32 bits, the chunks not yet
 * claimed in the low 32 (a round has at most MAX_CHUNKS). */
#define MAX_CHUNKS (((uint64_t)1 << 32) - 1)
#define CLAIM(round, left) (((uint64_t)(uint32_t)(round) << 32) | (uint64_t)(left))

typedef struct worker {
  struct mq_workers *W;
  int index; /* 1 .. MAX_THREADS - 1: its thread number in a round */
  unsigned long start_gen; /* the round number when it was started */
  pthread_t th;
} worker;

struct mq_workers {
  pthread_mutex_t mu;
  pthread_cond_t wake; /* a new round, or quit */
  pthread_cond_t done; /* [finished] reached [target] */
  atomic_ulong gen;
  atomic_bool quit;
  _Atomic uint64_t claim;    /* CLAIM(round, chunks left) */
  atomic_llong finished;     /* the round's chunks finished */
  atomic_llong target;       /* the chunks the caller waits for */
  atomic_bool sleeping;      /* the caller waits on [done] */
  /* the round's description: written before [claim] opens the round and
   * read only under a claim of it (atomics, because a worker that lost
   * the race reads them while the next round's are written) */
  _Atomic(mq_range_fn) fn;
  _Atomic(void *) ctx;
  atomic_llong count, grain, nchunks;
  atomic_int n; /* threads 0 .. n-1 may take part (per-thread scratch) */
  int nworkers; /* started */
  pid_t pid;    /* the process that started them (see forked) */
  worker w[MAX_THREADS];
};

int mq_parallel_default_threads(void) {
  const char *e = getenv("MASQ_NUM_THREADS");
  if (e && *e) {
    char *end;
    long n = strtol(e, &end, 10);
    if (*end == 0 && n >= 1) return n > MAX_THREADS ? MAX_THREADS : (int)n;
  }
  return 0;
}

int mq_state_threads(mq_state *S) {
  /* Counting the processors reads a file in /sys: left to the first
   * kernel large enough to split, not done for every state opened. */
  if (!S->nthreads) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    S->nthreads = n < 1 ? 1 : n > 8 ? 8 : (int)n;
  }
  return S->nthreads;
}

int mq_parallel_threads_for(mq_state *S, int64_t work) {
  if (work < MQ_PAR_MIN_ELEMS) return 1;
  int n = mq_state_threads(S);
  if (n <= 1) return 1;
  /* at least MQ_PAR_MIN_ELEMS / 2 elements a thread */
  int64_t most = work / (MQ_PAR_MIN_ELEMS / 2);
  return most < n ? (int)most : n;
}

/* Counts a finished chunk, and wakes the caller when it was the last one
 * it waits for. */
static void chunk_done(struct mq_workers *W) {
  if (atomic_fetch_add(&W->finished, 1) + 1 >= atomic_load(&W->target)) {
    pthread_mutex_lock(&W->mu);
    pthread_cond_signal(&W->done);
    pthread_mutex_unlock(&W->mu);
  }
}

/* Runs chunk [k] of [count] items in chunks of [grain] on thread [t]. */
static void run_chunk(mq_range_fn fn, void *ctx, int64_t count, int64_t grain, int64_t k, int t) {
  int64_t lo = k * grain;
  fn(ctx, lo, count - lo < grain ? count : lo + grain, t);
}

/* Thread [t]'s part of whichever round is open: chunks claimed one at a
 * time until none is left (or the round is not for thread t). The caller
 * (t = 0) passes its state: it polls for interrupts before each claim,
 * and one that is due takes the chunks left away from everyone. */
static void work(struct mq_workers *W, int t, mq_state *S) {
  uint64_t v = atomic_load_explicit(&W->claim, memory_order_acquire);
  for (;;) {
    /* the caller polls even when the workers took every chunk first */
    if (S && mq_interrupt_pending(S)) {
      v = atomic_exchange(&W->claim, v & ~MAX_CHUNKS);
      atomic_store(&W->target, atomic_load(&W->nchunks) - (int64_t)(v & MAX_CHUNKS));
      return;
    }
    int64_t left = (int64_t)(v & MAX_CHUNKS);
    if (left == 0) return;
    /* v's round, if the claim below succeeds (see the top of the file) */
    mq_range_fn fn = atomic_load_explicit(&W->fn, memory_order_relaxed);
    void *ctx = atomic_load_explicit(&W->ctx, memory_order_relaxed);
    int64_t count = atomic_load_explicit(&W->count, memory_order_relaxed);
    int64_t grain = atomic_load_explicit(&W->grain, memory_order_relaxed);
    int64_t nchunks = atomic_load_explicit(&W->nchunks, memory_order_relaxed);
    if (t >= atomic_load_explicit(&W->n, memory_order_relaxed)) return;
    if (!atomic_compare_exchange_weak_explicit(&W->claim, &v, v - 1, memory_order_acq_rel,
                                               memory_order_acquire))
      continue; /* v now holds the word as it is */
    run_chunk(fn, ctx, count, grain, nchunks - left, t);
    chunk_done(W);
    v = atomic_load_explicit(&W->claim, memory_order_acquire);
  }
}

static void *worker_main(void *p) {
  worker *me = p;
  struct mq_workers *W = me->W;
  unsigned long seen = me->start_gen;
  for (;;) {
    unsigned long g;
    int spins = 0;
    while ((g = atomic_load_explicit(&W->gen, memory_order_acquire)) == seen &&
           !atomic_load(&W->quit) && spins++ < SPINS)
      cpu_relax();
    if (g == seen && !atomic_load(&W->quit)) {
      pthread_mutex_lock(&W->mu);
      while ((g = atomic_load(&W->gen)) == seen && !atomic_load(&W->quit))
        pthread_cond_wait(&W->wake, &W->mu);
      pthread_mutex_unlock(&W->mu);
    }
    if (g == seen) return NULL; /* quit, and no round is open for us */
    seen = g;
    work(W, me->index, NULL);
  }
}

/* Creates the pool, or NULL if memory or the first thread is refused. */
static struct mq_workers *pool_open(mq_state *S) {
  size_t size = sizeof(struct mq_workers);
  if (S->cfg.memory_limit && S->mem_used + size > S->cfg.memory_limit) return NULL;
  struct mq_workers *W = S->cfg.alloc(S->cfg.alloc_ud, NULL, 0, size);
  if (!W) return NULL;
  S->mem_used += size;
  *W = (struct mq_workers){.pid = getpid()};
  atomic_init(&W->gen, 0);
  atomic_init(&W->quit, false);
  atomic_init(&W->claim, CLAIM(0, 0));
  atomic_init(&W->finished, 0);
  atomic_init(&W->target, 0);
  atomic_init(&W->fn, NULL);
  atomic_init(&W->ctx, NULL);
  atomic_init(&W->count, 0);
  atomic_init(&W->grain, 1);
  atomic_init(&W->nchunks, 0);
  atomic_init(&W->n, 0);
  if (pthread_mutex_init(&W->mu, NULL) != 0) goto fail_mu;
  if (pthread_cond_init(&W->wake, NULL) != 0) goto fail_wake;
  if (pthread_cond_init(&W->done, NULL) != 0) goto fail_done;
  return W;
fail_done:
  pthread_cond_destroy(&W->wake);
fail_wake:
  pthread_mutex_destroy(&W->mu);
fail_mu:
  S->cfg.alloc(S->cfg.alloc_ud, W, size, 0);
  S->mem_used -= size;
  return NULL;
}

/* Starts workers until there are [want] (fewer if the system refuses).
 * Called between rounds only. Workers block every signal, so a host's
 * (and the CLI's) handlers run on the threads it knows. */
static void pool_grow(struct mq_workers *W, int want) {
  if (W->nworkers >= want) return;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  while (W->nworkers < want) {
    worker *w = &W->w[W->nworkers + 1];
    *w = (worker){.W = W, .index = W->nworkers + 1, .start_gen = atomic_load(&W->gen)};
    if (pthread_create(&w->th, NULL, worker_main, w) != 0) break;
    W->nworkers++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* After fork() only the forking thread exists in the child: the pool's
 * workers stayed with the parent, and its mutex may be held by one of
 * them. The child forgets the pool (its memory is freed, nothing is joined
 * or destroyed) and starts its own at its next large kernel. */
static void forked(mq_state *S) {
  S->cfg.alloc(S->cfg.alloc_ud, S->workers, sizeof *S->workers, 0);
  S->mem_used -= sizeof *S->workers;
  S->workers = NULL;
}

void mq_parallel_close(mq_state *S) {
  struct mq_workers *W = S->workers;
  if (!W) return;
  if (W->pid != getpid()) { /* a child closing its parent's copy */
    forked(S);
    return;
  }
  pthread_mutex_lock(&W->mu);
  atomic_store(&W->quit, true);
  pthread_cond_broadcast(&W->wake);
  pthread_mutex_unlock(&W->mu);
  for (int i = 1; i <= W->nworkers; i++) pthread_join(W->w[i].th, NULL);
  pthread_cond_destroy(&W->done);
  pthread_cond_destroy(&W->wake);
  pthread_mutex_destroy(&W->mu);
  S->cfg.alloc(S->cfg.alloc_ud, W, sizeof *W, 0);
  S->mem_used -= sizeof *W;
  S->workers = NULL;
}

/* The pool for a round of [n] threads, started or grown as needed; NULL
 * when no worker can be had (the caller then does everything). */
static struct mq_workers *pool_for(mq_state *S, int n) {
  if (S->workers && S->workers->pid != getpid()) forked(S);
  if (!S->workers) S->workers = pool_open(S);
  struct mq_workers *W = S->workers;
  if (W) pool_grow(W, n - 1);
  return W && W->nworkers > 0 ? W : NULL;
}

void mq_parallel_for(mq_state *S, int n, int64_t count, int64_t grain, mq_range_fn fn, void *ctx) {
  if (grain < 1) grain = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  int64_t nchunks = count > 0 ? (count - 1) / grain + 1 : 0;
  if ((uint64_t)nchunks > MAX_CHUNKS) { /* never in practice: fewer, longer chunks */
    grain = (count - 1) / (int64_t)MAX_CHUNKS + 1;
    nchunks = (count - 1) / grain + 1;
  }
  struct mq_workers *W = n > 1 && nchunks > 1 ? pool_for(S, n) : NULL;
  if (!W) { /* all here, polling before each chunk */
    for (int64_t k = 0; k < nchunks && !mq_interrupt_pending(S); k++)
      run_chunk(fn, ctx, count, grain, k, 0);
    mq_check_interrupt(S);
    return;
  }
  /* open the round: its description, then the word that lets claims in */
  uint32_t round = (uint32_t)(atomic_load(&W->gen) + 1);
  atomic_store_explicit(&W->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&W->ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&W->count, count, memory_order_relaxed);
  atomic_store_explicit(&W->grain, grain, memory_order_relaxed);
  atomic_store_explicit(&W->nchunks, nchunks, memory_order_relaxed);
  atomic_store_explicit(&W->n, n, memory_order_relaxed);
  atomic_store(&W->finished, 0);
  atomic_store(&W->target, nchunks);
  atomic_store_explicit(&W->claim, CLAIM(round, nchunks), memory_order_release);
  atomic_fetch_add_explicit(&W->gen, 1, memory_order_release);
  pthread_mutex_lock(&W->mu);
  pthread_cond_broadcast(&W->wake);
  pthread_mutex_unlock(&W->mu);
  work(W, 0, S);
  /* the round ends when the chunks claimed are finished; workers that have
   * not woken yet are not waited for */
  for (int spins = 0; atomic_load(&W->finished) < atomic_load(&W->target) && spins < SPINS; spins++)
    cpu_relax();
  if (atomic_load(&W->finished) < atomic_load(&W->target)) {
    pthread_mutex_lock(&W->mu);
    while (atomic_load(&W->finished) < atomic_load(&W->target)) pthread_cond_wait(&W->done, &W->mu);
    pthread_mutex_unlock(&W->mu);
  }
  /* every claimed chunk ran once (an interrupt lowers the target to the
   * chunks claimed): a count past it is a chunk run twice */
  MQ_ASSERT(atomic_load(&W->finished) == atomic_load(&W->target));
  mq_check_interrupt(S);
}

/* --- items weighted by offsets ----------------------------------------------------- */

typedef struct weighted_job {
  const int64_t *off;
  int64_t count, grain;
  mq_range_fn fn;
  void *ctx;
} weighted_job;

/* The first item whose weighted start, off[i] - off[0] + i, is at least
 * [w]: every chunk c begins at first(c * grain). */
static int64_t weighted_first(const weighted_job *W, int64_t w) {
  int64_t lo = 0, hi = W->count; /* the answer is in [lo, hi] */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (W->off[mid] - W->off[0] + mid < w) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void weighted_chunks(void *p, int64_t lo, int64_t hi, int t) {
  const weighted_job *W = p;
  int64_t a = weighted_first(W, lo * W->grain);
  int64_t b = hi * W->grain >= W->off[W->count] - W->off[0] + W->count
                  ? W->count
                  : weighted_first(W, hi * W->grain);
  if (a < b) W->fn(W->ctx, a, b, t);
}

/* Whether off[0 .. count] never decreases (weighted_first searches it). */
MQ_CHECK_ONLY static bool nondecreasing(const int64_t *off, int64_t count) {
  for (int64_t i = 0; i < count; i++)
    if (off[i + 1] < off[i]) return false;
  return true;
}

void mq_parallel_for_weighted(mq_state *S, int n, int64_t count, const int64_t *off,
                              int64_t grain, mq_range_fn fn, void *ctx) {
  if (grain < 1) grain = 1;
  if (count <= 0) {
    mq_check_interrupt(S);
    return;
  }
  MQ_ASSERT(nondecreasing(off, count)); /* row offsets: a CSR's crow, a sorted run's starts */
  /* total weight: entries plus one per item (an empty row costs a little) */
  int64_t total = off[count] - off[0] + count;
  weighted_job W = {.off = off, .count = count, .grain = grain, .fn = fn, .ctx = ctx};
  mq_parallel_for(S, n, (total - 1) / grain + 1, 1, weighted_chunks, &W);
}
