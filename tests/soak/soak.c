/* soak.c - many states at once, for a while, on everything that can go
 * wrong: `make soak` (SOAK_SECONDS, default 60; SOAK_THREADS, default 8).
 *
 * Each thread owns one state with a memory cap and an interrupt hook with a
 * per-eval deadline, and evaluates a random mix of good scripts, failing
 * ones (runtime and syntax errors), memory-hungry ones (until the cap),
 * endless ones (a busy loop, exponential recursion) and ones on the host's
 * shared buffers: every state wraps the same host memory (indices, bool
 * masks, lengths, floats; masq_tensor_wrap), which a host thread keeps
 * rewriting all along (docs/RELIABILITY.md, "Memory a host shares";
 * SOAK_NO_HOST_WRITER=1 leaves the buffers still). Built against the
 * sanitized library. It fails if
 *  - an eval returns a status masq.h does not document, or one its kind of
 *    script must not return;
 *  - a good script fails on a state right after a failed one (a stuck
 *    state), reported per kind of the failed script before it; and any
 *    script fails for memory while a memory-hungry script's leftovers fill
 *    the state (until an eval succeeds again): a failed eval must give back
 *    what it took, or the state is stuck for good (SOAK_NO_GLOBAL_HOARD=1
 *    leaves out the one script that leaves a global behind);
 *  - the resident set grows past a bound between the first quarter of the
 *    run and its end (what a leak looks like).
 * It prints evals per kind and per status, and the resident set size. */
#include <masq.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MEMORY_CAP = 32 << 20, DEADLINE_MS = 1000, MAX_THREADS = 64, NSTATUS = 8 };

typedef enum kind { GOOD, RUNTIME_ERROR, SYNTAX_ERROR, HUNGRY, ENDLESS, HOST, NKINDS } kind;

static const char *const kind_names[NKINDS] = {"good", "runtime error", "syntax error",
                                               "memory-hungry", "endless", "host memory"};

typedef struct script {
  kind kind;
  const char *name;
  const char *text;
  /* Bit per masq_status the script may end with, besides
   * MASQ_ERR_INTERRUPTED, which the deadline may give any script on a
   * loaded machine (counted, never a failure). */
  unsigned allowed;
} script;

#define BIT(s) (1u << (s))

static const script scripts[] = {
    {GOOD, "arithmetic", "x = masked([1.0, 2.0, 3.0], [true, false, true])\n"
                         "assert(item(sum(x * 2)) == 8, \"sum\")\n", BIT(MASQ_OK)},
    {GOOD, "softmax", "y = softmax(masked(randn(16, 16), rand(16, 16) > 0.3), 1)\n"
                      "s = sum(y, 1)\nprint(s)\n", BIT(MASQ_OK)},
    {GOOD, "autograd", "w = requires_grad(randn(8))\nfn f(v) = sum(v * v) / 2\n"
                       "backward(f(w))\nassert(item(sum(w.grad - w)) == 0, \"grad\")\n",
     BIT(MASQ_OK)},
    {GOOD, "functions", "fn fib(n) { if n < 2 { return n }\n return fib(n - 1) + fib(n - 2) }\n"
                        "assert(fib(15) == 610, \"fib\")\nl = []\n"
                        "for i in range(50) { append(l, format(\"{}\", i)) }\n", BIT(MASQ_OK)},
    {GOOD, "reductions", "m = masked(arange(64) * 1.0, arange(64) % 3 != 0)\n"
                         "print(mean(m), amax(m), var(reshape(m, [8, 8]), 0))\n", BIT(MASQ_OK)},
    {RUNTIME_ERROR, "broadcast", "z = ones(2) + ones(3)\n", BIT(MASQ_ERR_RUNTIME)},
    {RUNTIME_ERROR, "deep error", "fn g(n) {\n  if n == 0 { return undefined_thing }\n"
                                  "  return g(n - 1)\n}\ng(50)\n", BIT(MASQ_ERR_RUNTIME)},
    /* 10000 frames take memory: the cap may come first. */
    {RUNTIME_ERROR, "stack overflow", "fn down(n) = down(n + 1)\ndown(0)\n",
     BIT(MASQ_ERR_RUNTIME) | BIT(MASQ_ERR_MEMORY)},
    {SYNTAX_ERROR, "open bracket", "x = (1 +\n", BIT(MASQ_ERR_SYNTAX)},
    {SYNTAX_ERROR, "bad token", "fn f( = 1 }\n@@\n", BIT(MASQ_ERR_SYNTAX)},
    /* The list is a global: it stays bound after the failure unless the
     * failed eval is rolled back. */
    {HUNGRY, "global list", "hoard = []\nwhile true { append(hoard, ones(100000)) }\n",
     BIT(MASQ_ERR_MEMORY)},
    {HUNGRY, "local list", "fn grow() {\n  l = []\n  while true { append(l, ones(50000)) }\n}\n"
                           "grow()\n", BIT(MASQ_ERR_MEMORY)},
    {HUNGRY, "doubling", "fn dbl(x) = dbl(cat([x, x], 0))\ndbl(ones(1024))\n",
     BIT(MASQ_ERR_MEMORY)},
    {ENDLESS, "busy loop", "while true {}\n", BIT(MASQ_ERR_INTERRUPTED)},
    {ENDLESS, "exponential", "fn f(n) { if n == 0 { return 1 }\n return f(n - 1) + f(n - 1) }\n"
                             "f(60)\n", BIT(MASQ_ERR_INTERRUPTED)},
    /* The host rewrites these buffers while they run: an index it made
     * out of range is a runtime error; anything else must work. */
    {HOST, "host indices", "y = [x[ix], gather(x, 0, ix), index_select(x, 0, ix), one_hot(ix, 4096)]\n"
                           "s = sparse_coo(ix2, x, size=[4096, 4096])\ny = s @ ones(4096, 2)\n",
     BIT(MASQ_OK) | BIT(MASQ_ERR_RUNTIME)},
    {HOST, "host masks", "for i in range(20) { y = [x[m], xm[m], to_sparse_coo(xm), length_mask(lens)] }\n"
                         "y = [count(xm), sum(m), x[ix % 4096]]\n"
                         "w = requires_grad(x)\nbackward(sum(w[m]) + sum(scatter_add(w, 0, ix % 4096, x)))\n",
     BIT(MASQ_OK) | BIT(MASQ_ERR_RUNTIME)},
};
enum { NSCRIPTS = sizeof scripts / sizeof *scripts };

/* --- per thread -------------------------------------------------------------- */

typedef struct worker {
  pthread_t thread;
  unsigned seed;
  struct timespec deadline;
  long by_kind[NKINDS][NSTATUS];
  long wrong_status, undocumented;
  long stuck_after[NKINDS]; /* good scripts that failed right after a failed one */
  long stuck_full;          /* evals that failed for memory a hungry one left taken */
  char first_problem[512];
} worker;

static atomic_int stop;

/* --- the host's shared buffers ------------------------------------------------ */

enum { HN = 4096 };
static struct {
  int64_t ix[HN], ix2[2][HN], lens[8];
  uint8_t m[HN];
  float x[HN];
} host_shared_buffers; /* every state wraps these; the writer rewrites them */

static void init_host_buffers(void) {
  for (int i = 0; i < HN; i++) {
    host_shared_buffers.ix[i] = host_shared_buffers.ix2[0][i] = host_shared_buffers.ix2[1][i] = i;
    host_shared_buffers.m[i] = (uint8_t)(i & 1);
    host_shared_buffers.x[i] = (float)i;
  }
  for (int i = 0; i < 8; i++) host_shared_buffers.lens[i] = i;
}

/* A host thread's plain stores, until the run ends. Indices are out of
 * range one write in 256, so that the scripts on them often work too;
 * mask bytes are any. */
static void *host_writer_main(void *arg) {
  (void)arg;
  unsigned s = 0x2545f491u;
  while (!atomic_load(&stop)) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    unsigned k = (s >> 8) % HN;
    int64_t at = (s & 255) == 0 ? ((s >> 16 & 1) ? INT64_MIN : HN) : (int64_t)((s >> 20) % HN);
    switch (s >> 28 & 7) {
    case 0: host_shared_buffers.ix[k] = at; break;
    case 1: host_shared_buffers.ix2[s >> 27 & 1][k] = at; break;
    case 2: host_shared_buffers.lens[k % 8] = at; break;
    case 3: case 4: host_shared_buffers.m[k] = (uint8_t)(s >> 16); break;
    default: host_shared_buffers.x[k] = (float)(s >> 12 & 1023) / 8;
    }
  }
  return NULL;
}

/* Binds the shared buffers as globals of [M]: MASQ_OK, or the first
 * failure (the memory limit, when a memory-hungry script left it full). */
static masq_status wrap_host_buffers(masq_state *M) {
  int64_t n[1] = {HN}, two[2] = {2, HN}, eight[1] = {8};
  struct {
    const char *name;
    masq_dtype dt;
    int ndim;
    const int64_t *shape;
    const void *data;
    const uint8_t *valid;
  } b[] = {{"ix", MASQ_INT64, 1, n, host_shared_buffers.ix, NULL},
           {"ix2", MASQ_INT64, 2, two, host_shared_buffers.ix2, NULL},
           {"lens", MASQ_INT64, 1, eight, host_shared_buffers.lens, NULL},
           {"m", MASQ_BOOL, 1, n, host_shared_buffers.m, NULL},
           {"x", MASQ_FLOAT32, 1, n, host_shared_buffers.x, NULL},
           {"xm", MASQ_FLOAT32, 1, n, host_shared_buffers.x, host_shared_buffers.m}};
  for (size_t i = 0; i < sizeof b / sizeof *b; i++) {
    masq_tensor_desc d = {.dtype = b[i].dt, .ndim = b[i].ndim, .shape = b[i].shape,
                          .data = b[i].data, .valid = b[i].valid};
    masq_tensor *t;
    masq_status st = masq_tensor_wrap(M, &d, &t);
    if (st != MASQ_OK) return st;
    st = masq_set_global(M, b[i].name, t);
    masq_tensor_release(M, t);
    if (st != MASQ_OK) return st;
  }
  return MASQ_OK;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int past_deadline(void *ud) {
  worker *w = ud;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec > w->deadline.tv_sec ||
         (t.tv_sec == w->deadline.tv_sec && t.tv_nsec >= w->deadline.tv_nsec);
}

static void discard(void *ud, const char *s, size_t n) {
  (void)ud;
  (void)s;
  (void)n;
}

static unsigned next_random(unsigned *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* Keeps the first problem of a thread: [what], then [detail]'s first line
 * (not a format: clang's -Wformat-nonliteral refused the one this took). */
static void note(worker *w, const char *what, const char *detail) {
  if (w->first_problem[0]) return;
  snprintf(w->first_problem, sizeof w->first_problem, "%s%s", what, detail);
  char *nl = strchr(w->first_problem, '\n');
  if (nl) *nl = '\0';
}

static void *work(void *arg) {
  worker *w = arg;
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.memory_limit = MEMORY_CAP;
  cfg.interrupt = past_deadline;
  cfg.interrupt_ud = w;
  cfg.write = discard;
  masq_state *M = masq_open(&cfg);
  if (!M || wrap_host_buffers(M) != MASQ_OK) {
    note(w, M ? "wrapping the host's buffers failed: " : "masq_open failed", M ? masq_last_error(M)->rendered : "");
    w->undocumented++;
    if (M) masq_close(M);
    return NULL;
  }
  int previous_failed = 0, hungry_failed = 0;
  kind previous = GOOD;
  int no_hoard = getenv("SOAK_NO_GLOBAL_HOARD") != NULL;
  while (!atomic_load(&stop)) {
    const script *s = &scripts[next_random(&w->seed) % NSCRIPTS];
    if (no_hoard && strcmp(s->name, "global list") == 0) continue;
    /* the globals a script may have replaced: the host's views again */
    masq_status wst = s->kind == HOST ? wrap_host_buffers(M) : MASQ_OK;
    if (wst == MASQ_ERR_MEMORY) continue; /* a hungry script's leftovers: its own check */
    if (wst != MASQ_OK) {
      w->undocumented++;
      note(w, "wrapping the host's buffers failed: ", masq_last_error(M)->rendered);
      continue;
    }
    clock_gettime(CLOCK_MONOTONIC, &w->deadline);
    w->deadline.tv_nsec += DEADLINE_MS * 1000000L;
    if (w->deadline.tv_nsec >= 1000000000L) {
      w->deadline.tv_sec++;
      w->deadline.tv_nsec -= 1000000000L;
    }
    masq_status st = masq_eval(M, s->text, strlen(s->text), s->name, 0);
    char what[128];
    if ((unsigned)st >= NSTATUS || st == MASQ_ERR_USAGE || st == MASQ_INCOMPLETE) {
      w->undocumented++;
      snprintf(what, sizeof what, "%s: undocumented status: ", s->name);
      note(w, what, masq_last_error(M)->rendered);
      continue;
    }
    w->by_kind[s->kind][st]++;
    if (st != MASQ_ERR_INTERRUPTED && !(s->allowed & BIT(st))) {
      if (st == MASQ_ERR_MEMORY && hungry_failed) {
        w->stuck_full++;
      } else if (s->kind == GOOD && previous_failed) {
        w->stuck_after[previous]++;
      } else {
        w->wrong_status++;
        snprintf(what, sizeof what, "%s: unexpected ", s->name);
        note(w, what, masq_last_error(M)->rendered);
      }
    }
    previous_failed = st != MASQ_OK;
    previous = s->kind;
    if (st == MASQ_OK) hungry_failed = 0;
    if (s->kind == HUNGRY && st == MASQ_ERR_MEMORY) hungry_failed = 1;
  }
  masq_close(M);
  return NULL;
}

/* --- the run ---------------------------------------------------------------------- */

static long rss_kb(void) {
  long pages = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static long env_long(const char *name, long fallback) {
  const char *v = getenv(name);
  return v && *v ? atol(v) : fallback;
}

int main(void) {
  long seconds = env_long("SOAK_SECONDS", 60), nthreads = env_long("SOAK_THREADS", 8);
  /* Growth allowed from the first quarter to the end: the caps of all
   * states (any of them may be full at one moment and empty at the
   * other), plus slack for the allocator's and the sanitizer's caches. */
  long bound_kb = env_long("SOAK_RSS_GROWTH_KB", nthreads * (MEMORY_CAP >> 10) + 64L * 1024);
  if (nthreads < 1 || nthreads > MAX_THREADS || seconds < 1) {
    fprintf(stderr, "soak: SOAK_THREADS must be 1..%d and SOAK_SECONDS >= 1\n", MAX_THREADS);
    return 2;
  }
  static worker workers[MAX_THREADS];
  init_host_buffers();
  pthread_t writer;
  int writing = !getenv("SOAK_NO_HOST_WRITER") && pthread_create(&writer, NULL, host_writer_main, NULL) == 0;
  long rss_start = rss_kb();
  double t0 = now_s();
  for (long i = 0; i < nthreads; i++) {
    workers[i].seed = 0x9e3779b9u * (unsigned)(i + 1);
    if (pthread_create(&workers[i].thread, NULL, work, &workers[i]) != 0) {
      fprintf(stderr, "soak: cannot start thread %ld\n", i);
      return 2;
    }
  }
  long rss_quarter = -1, rss_peak = rss_start;
  while (now_s() - t0 < (double)seconds) {
    nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);
    long r = rss_kb();
    if (r > rss_peak) rss_peak = r;
    if (rss_quarter < 0 && now_s() - t0 >= (double)seconds / 4) rss_quarter = r;
  }
  long rss_end = rss_kb();
  atomic_store(&stop, 1);
  for (long i = 0; i < nthreads; i++) pthread_join(workers[i].thread, NULL);
  if (writing) pthread_join(writer, NULL);
  long rss_closed = rss_kb();
  double elapsed = now_s() - t0;

  long by_kind[NKINDS][NSTATUS] = {{0}}, total = 0, wrong = 0, undocumented = 0;
  long stuck[NKINDS] = {0}, stuck_total = 0, stuck_full = 0;
  for (long i = 0; i < nthreads; i++) {
    for (int k = 0; k < NKINDS; k++) {
      for (int s = 0; s < NSTATUS; s++) {
        by_kind[k][s] += workers[i].by_kind[k][s];
        total += workers[i].by_kind[k][s];
      }
      stuck[k] += workers[i].stuck_after[k];
      stuck_total += workers[i].stuck_after[k];
    }
    wrong += workers[i].wrong_status;
    stuck_full += workers[i].stuck_full;
    undocumented += workers[i].undocumented;
    if (workers[i].first_problem[0])
      fprintf(stderr, "soak: thread %ld: %s\n", i, workers[i].first_problem);
  }
  static const char *const status_names[NSTATUS] = {"ok", "runtime", "usage", "syntax",
                                                    "memory", "interrupted", "incomplete"};
  printf("soak: %ld threads, %.0f s, %ld evals (%.0f/s), memory cap %d MB, deadline %d ms\n",
         nthreads, elapsed, total, (double)total / elapsed, MEMORY_CAP >> 20, DEADLINE_MS);
  for (int k = 0; k < NKINDS; k++) {
    printf("  %-14s", kind_names[k]);
    for (int s = 0; s < NSTATUS; s++)
      if (by_kind[k][s]) printf(" %s %ld", status_names[s], by_kind[k][s]);
    printf("\n");
  }
  printf("  RSS: %ld kB at start, %ld kB after a quarter, %ld kB at the end, peak %ld kB, "
         "%ld kB with the states closed\n", rss_start, rss_quarter, rss_end, rss_peak,
         rss_closed);
  int fail = 0;
  if (undocumented) {
    printf("FAIL: %ld evals returned an undocumented status\n", undocumented);
    fail = 1;
  }
  if (wrong) {
    printf("FAIL: %ld evals ended with a status their script must not give\n", wrong);
    fail = 1;
  }
  if (stuck_total) {
    printf("FAIL: %ld good scripts failed right after a failed one on the same state:", stuck_total);
    for (int k = 0; k < NKINDS; k++)
      if (stuck[k]) printf(" %ld after %s", stuck[k], kind_names[k]);
    printf("\n");
    fail = 1;
  }
  if (stuck_full) {
    printf("FAIL: %ld evals failed for memory that a failed memory-hungry script left taken "
           "(a failed eval must give it back)\n", stuck_full);
    fail = 1;
  }
  if (rss_quarter >= 0 && rss_end - rss_quarter > bound_kb) {
    printf("FAIL: RSS grew by %ld kB from the first quarter to the end (bound %ld kB)\n",
           rss_end - rss_quarter, bound_kb);
    fail = 1;
  }
  printf("soak: %s\n", fail ? "FAILED" : "passed");
  return fail;
}
