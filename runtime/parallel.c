/* parallel.c - a state's pool of worker threads for large kernels (see
 * parallel.h).
 *
 * The workers are started the first time a kernel splits, and live until
 * masq_close. A round: the caller publishes task/ctx/n, bumps the round
 * number [gen] (release) and wakes the workers; worker k runs task k
 * (those beyond n have nothing to do) and every worker counts itself off
 * [pending], so no worker can still be reading a round's fields when the
 * caller publishes the next one. Both sides spin a little before they
 * sleep on a condition variable: rounds often follow each other within
 * microseconds (a reduction, then its finishing pass, then the next
 * statement's kernel), and waking a sleeping thread costs about 100 us
 * on this machine class (measured; a KVM guest). */
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

typedef void (*mq_task_fn)(void *ctx, int i, int n);
/* Polls before sleeping: about 20-80 us of pause instructions. */
#define SPINS 2000

typedef struct worker {
  struct mq_workers *W;
  int index; /* 1 .. MAX_THREADS - 1: the task it runs */
  unsigned long start_gen; /* the round number when it was started */
  pthread_t th;
} worker;

struct mq_workers {
  pthread_mutex_t mu;
  pthread_cond_t wake; /* a new round, or quit */
  pthread_cond_t done; /* pending reached 0 */
  atomic_ulong gen;
  atomic_int pending;
  atomic_bool quit;
  /* the round's work, written before gen is bumped */
  mq_task_fn task;
  void *ctx;
  int n;
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
    if (g == seen) return NULL; /* quit, and no round is waiting for us */
    seen = g;
    if (me->index < W->n) W->task(W->ctx, me->index, W->n);
    if (atomic_fetch_sub(&W->pending, 1) == 1) {
      pthread_mutex_lock(&W->mu);
      pthread_cond_signal(&W->done);
      pthread_mutex_unlock(&W->mu);
    }
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
  atomic_init(&W->pending, 0);
  atomic_init(&W->quit, false);
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

/* Runs task(ctx, i, n) for i = 0 .. n-1, task 0 on the calling thread and
 * the others on the workers; if a worker cannot be started, its task runs
 * on the calling thread instead (never an error). Not reentrant. */
static void run_round(mq_state *S, int n, mq_task_fn task, void *ctx) {
  if (n > MAX_THREADS) n = MAX_THREADS;
  if (n <= 1) {
    task(ctx, 0, 1);
    return;
  }
  if (S->workers && S->workers->pid != getpid()) forked(S);
  if (!S->workers) S->workers = pool_open(S);
  struct mq_workers *W = S->workers;
  if (W) pool_grow(W, n - 1);
  if (!W || W->nworkers == 0) { /* no threads to be had: all here */
    for (int i = 0; i < n; i++) task(ctx, i, n);
    return;
  }
  W->task = task;
  W->ctx = ctx;
  W->n = n;
  atomic_store(&W->pending, W->nworkers);
  atomic_fetch_add_explicit(&W->gen, 1, memory_order_release);
  pthread_mutex_lock(&W->mu);
  pthread_cond_broadcast(&W->wake);
  pthread_mutex_unlock(&W->mu);
  task(ctx, 0, n);
  for (int i = W->nworkers + 1; i < n; i++) task(ctx, i, n); /* no worker for these */
  for (int spins = 0; atomic_load_explicit(&W->pending, memory_order_acquire) > 0 && spins < SPINS;
       spins++)
    cpu_relax();
  if (atomic_load_explicit(&W->pending, memory_order_acquire) > 0) {
    pthread_mutex_lock(&W->mu);
    while (atomic_load(&W->pending) > 0) pthread_cond_wait(&W->done, &W->mu);
    pthread_mutex_unlock(&W->mu);
  }
}

/* --- ranges claimed chunk by chunk ----------------------------------------------- */

typedef struct range_job {
  mq_state *S;
  mq_range_fn fn;
  void *ctx;
  int64_t count, grain;
  atomic_llong next; /* the first item nobody has claimed */
} range_job;

static void range_task(void *p, int i, int n) {
  range_job *J = p;
  (void)n;
  for (;;) {
    /* The calling thread polls before each claim, so it polls at least once
     * even when the workers take every chunk; an interrupt lets nobody claim
     * more. */
    if (i == 0 && mq_interrupt_pending(J->S)) {
      atomic_store(&J->next, J->count);
      return;
    }
    int64_t lo = atomic_fetch_add_explicit(&J->next, J->grain, memory_order_relaxed);
    if (lo >= J->count) return;
    int64_t hi = J->count - lo < J->grain ? J->count : lo + J->grain;
    J->fn(J->ctx, lo, hi, i);
  }
}

void mq_parallel_for(mq_state *S, int n, int64_t count, int64_t grain, mq_range_fn fn, void *ctx) {
  if (grain < 1) grain = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  if (n > 1 && count <= grain) n = 1;
  range_job J = {.S = S, .fn = fn, .ctx = ctx, .count = count, .grain = grain};
  atomic_init(&J.next, 0);
  run_round(S, n, range_task, &J);
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

void mq_parallel_for_weighted(mq_state *S, int n, int64_t count, const int64_t *off,
                              int64_t grain, mq_range_fn fn, void *ctx) {
  if (grain < 1) grain = 1;
  if (count <= 0) {
    mq_check_interrupt(S);
    return;
  }
  /* total weight: entries plus one per item (an empty row costs a little) */
  int64_t total = off[count] - off[0] + count;
  weighted_job W = {.off = off, .count = count, .grain = grain, .fn = fn, .ctx = ctx};
  mq_parallel_for(S, n, (total - 1) / grain + 1, 1, weighted_chunks, &W);
}
