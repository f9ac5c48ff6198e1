/* masq_bench.c - times masq's workloads in-process through the public API.
 *
 * It links libmasq.a and uses include/masq.h only: it opens one interpreter,
 * evaluates each workload's set-up script once (the data stays in globals),
 * then times repeated masq_eval() calls of the workload statement with
 * clock_gettime. That measures masq itself, parse and compile of the one
 * statement included (a few microseconds, reported separately as
 * "eval_overhead"), without process start-up.
 *
 * A workload whose set-up or statement fails (a builtin masq lacks, say) is
 * reported as NA with the error, never a crash.
 *
 * Usage:
 *   masq_bench [WORKLOAD...]        (default: all), RESULT lines on stdout
 *                                   as described in bench_util.h
 *   masq_bench -s SETUP -e CODE [NAME]
 *                                   time any statement CODE after running
 *                                   SETUP once: for experiments, e.g.
 *     masq_bench -s 'x = masked(rand(10000000), rand(10000000) < 2)' -e 'r = sum(x)' */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "masq.h"

typedef struct {
  const char *name;   /* the workload's id, shared with baseline.c and py_bench.py */
  const char *group;  /* set-up scripts run once per group */
  const char *code;   /* the timed statement */
} workload;

typedef struct {
  const char *group;
  const char *setup;
} setup;

/* Data: uniform [0, 1) float32 values, each valid with probability 1/2. */
static const setup SETUPS[] = {
    {"v", "seed(1)\n"
          "x = masked(rand(10000000), rand(10000000) < 0.5)\n"},
    {"m", "seed(2)\n"
          "y = masked(rand(1000, 10000), rand(1000, 10000) < 0.5)\n"},
    {"s", "seed(3)\n"
          "s1 = masked(rand(1000, 1000), rand(1000, 1000) < 0.5)\n"
          "s2 = masked(rand(4096, 512), rand(4096, 512) < 0.5)\n"},
    {"mm", "seed(4)\n"
           "ma = masked(rand(512, 512), rand(512, 512) < 0.5)\n"
           "mb = masked(rand(512, 512), rand(512, 512) < 0.5)\n"},
    {"fb", "seed(5)\n"
           "fx = requires_grad(masked(rand(1000, 1000), rand(1000, 1000) < 0.5))\n"
           "fw = rand(1000, 1000)\n"},
    {"t", "seed(6)\n"
          "st = masked(rand(4, 4), rand(4, 4) < 0.5)\n"},
    /* a 10^6 x 10^6 CSR tensor with 10 stored entries per row (10^7), the
     * same structure as baseline.c's and py_bench.py's */
    {"sp", "seed(7)\n"
           "k = arange(10000000)\n"
           "sp = sparse_csr(arange(0, 10000001, 10), (k % 10) * 100000 + ((k // 10) * 7) % 100000, "
           "rand(10000000), [1000000, 1000000])\n"
           "k = none\n"
           "msp = masked(sp)\n"
           "dn = rand(1000000, 16)\n"},
    /* masks that make work smaller (issue 16): the same 10^7 values under
     * an all-valid mask, an all-masked one, and a padding-shaped one (runs
     * of 4096 valid then 4096 masked: half the entries) */
    {"mk", "seed(8)\n"
           "xk = rand(10000000)\n"
           "ik = arange(10000000)\n"
           "kv = masked(xk, ik >= 0)\n"
           "km = masked(xk, ik < 0)\n"
           "kp = masked(xk, (ik % 8192) < 4096)\n"
           "ik = none\n"},
    {"none", ""},
};

static const workload WORKLOADS[] = {
    {"sum_all", "v", "r = sum(x)"},
    {"mean_all", "v", "r = mean(x)"},
    {"amax_all", "v", "r = amax(x)"},
    {"sum_dim0", "m", "r = sum(y, 0)"},
    {"sum_dim1", "m", "r = sum(y, 1)"},
    {"mean_dim0", "m", "r = mean(y, 0)"},
    {"mean_dim1", "m", "r = mean(y, 1)"},
    {"amax_dim0", "m", "r = amax(y, 0)"},
    {"amax_dim1", "m", "r = amax(y, 1)"},
    {"exp_2_1", "v", "r = exp(x) * 2 + 1"},
    {"softmax_1000", "s", "r = softmax(s1, 1)"},
    {"softmax_4096x512", "s", "r = softmax(s2, 1)"},
    {"matmul_512", "mm", "r = ma @ mb"},
    {"softmax_fwd_bwd", "fb", "r = grad(sum(softmax(fx, 1) * fw), fx)"},
    {"sp_rowsum", "sp", "r = sum(sp, 1)"},
    {"sp_softmax", "sp", "r = softmax(msp, 1)"},
    {"sp_spmm", "sp", "r = sp @ dn"},
    {"mk_sum_valid", "mk", "r = sum(kv)"},
    {"mk_sum_pad", "mk", "r = sum(kp)"},
    {"mk_sum_masked", "mk", "r = sum(km)"},
    {"mk_mean_valid", "mk", "r = mean(kv)"},
    {"mk_mean_pad", "mk", "r = mean(kp)"},
    {"mk_mean_masked", "mk", "r = mean(km)"},
    {"mk_amax_valid", "mk", "r = amax(kv)"},
    {"mk_amax_pad", "mk", "r = amax(kp)"},
    {"mk_amax_masked", "mk", "r = amax(km)"},
    /* 1000 iterations per sample; run.sh reports the time per iteration */
    {"small_loop", "t", "for i in range(1000) { r = (st * 2 + 1).sum() }"},
    /* not a benchmarked workload: the fixed cost of one masq_eval call
     * (lex, parse, compile, run `r = 1`), to subtract mentally above */
    {"eval_overhead", "none", "r = 1"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The allocator hook counts what one evaluation allocates (heap blocks and
 * bytes, reallocs that grow counted as allocations), reported in the note
 * of each RESULT line as "allocs=N bytes=M": per-op allocation is one of
 * the costs the benchmark watches
 * (docs/PERFORMANCE.md). Counting costs two additions per call. */
static long n_allocs;
static size_t n_bytes;
static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  if (nsize > osize || !ptr) {
    n_allocs++;
    n_bytes += nsize - (ptr ? osize : 0);
  }
  return realloc(ptr, nsize);
}

static int group_state[COUNT(SETUPS)]; /* 0 not run, 1 ok, -1 failed */
static char group_error[COUNT(SETUPS)][200];

/* The first line of the last error, for an NA note. */
static void error_line(masq_state *M, const char *what, char *buf, size_t n) {
  const masq_error *e = masq_last_error(M);
  const char *msg = e && e->message ? e->message : "unknown error";
  snprintf(buf, n, "%s: %s", what, msg);
  char *nl = strchr(buf, '\n');
  if (nl) *nl = 0;
  for (char *p = buf; *p; p++)
    if (*p == '\t') *p = ' ';
}

static int run_setup(masq_state *M, const char *group, char *why, size_t n) {
  if (strcmp(group, "custom") == 0) return 1; /* -s ran already */
  for (size_t g = 0; g < COUNT(SETUPS); g++) {
    if (strcmp(SETUPS[g].group, group) != 0) continue;
    if (group_state[g] == 0) {
      const char *src = SETUPS[g].setup;
      masq_status st = masq_eval(M, src, strlen(src), "<bench setup>", 0);
      if (st == MASQ_OK) {
        group_state[g] = 1;
      } else {
        group_state[g] = -1;
        error_line(M, "set-up failed", group_error[g], sizeof group_error[g]);
      }
    }
    if (group_state[g] < 0) snprintf(why, n, "%s", group_error[g]);
    return group_state[g] > 0;
  }
  snprintf(why, n, "no set-up group %s", group);
  return 0;
}

/* Sets the number of threads masq's kernels may use (set_num_threads). */
static void set_threads(masq_state *M, int n) {
  char code[64];
  snprintf(code, sizeof code, "set_num_threads(%d)", n);
  if (masq_eval(M, code, strlen(code), "<bench threads>", 0) != MASQ_OK)
    fprintf(stderr, "masq_bench: %s failed\n", code);
}

/* The 10^7 workloads, timed again on two threads as impl "masq-2t"
 * (target: two threads >= 1.6x one thread); "masq" is one thread. */
static int ten7(const char *name) {
  static const char *const names[] = {"sum_all",  "mean_all",  "amax_all",  "sum_dim0",
                                      "sum_dim1", "mean_dim0", "mean_dim1", "amax_dim0",
                                      "amax_dim1", "exp_2_1"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(name, names[i]) == 0) return 1;
  return 0;
}

/* One configuration a workload is timed in: a thread count and the impl
 * name its RESULT line carries. */
typedef struct {
  int threads;
  const char *impl;
} config;

/* Reports every configuration of [w] as NA with the current error. */
static void all_na(masq_state *M, const workload *w, const config *cf, int ncf, const char *what) {
  char why[256];
  error_line(M, what, why, sizeof why);
  for (int c = 0; c < ncf; c++) bench_na(cf[c].impl, w->name, why);
}

/* Times [w] in each of the [ncf] configurations, one repetition of each in
 * turn: a spell of load on the machine then falls on all of them alike,
 * so their ratio (2T/1T) compares like with like. */
static void time_workload(masq_state *M, const workload *w, const config *cf, int ncf) {
  char why[256];
  if (!run_setup(M, w->group, why, sizeof why)) {
    for (int c = 0; c < ncf; c++) bench_na(cf[c].impl, w->name, why);
    return;
  }
  size_t len = strlen(w->code);
  for (int c = 0; c < ncf; c++) { /* warm-up, which also starts the threads */
    set_threads(M, cf[c].threads);
    if (masq_eval(M, w->code, len, "<bench>", 0) != MASQ_OK) {
      all_na(M, w, cf, ncf, "failed");
      return;
    }
  }
  static double samples[2][BENCH_MAX_SAMPLES]; /* [configuration][repetition] */
  double elapsed = 0;
  int n = 0;
  while (bench_more(n, elapsed / ncf) && n < BENCH_MAX_SAMPLES) {
    for (int c = 0; c < ncf; c++) {
      set_threads(M, cf[c].threads);
      double t0 = bench_now();
      masq_status st = masq_eval(M, w->code, len, "<bench>", 0);
      double dt = bench_now() - t0;
      if (st != MASQ_OK) {
        all_na(M, w, cf, ncf, "failed");
        return;
      }
      samples[c][n] = dt;
      elapsed += dt;
    }
    n++;
  }
  /* The speed-up of configuration c over the first, as the median of the
   * ratios of repetitions timed side by side: the machine's speed drifts
   * (up to 2x within seconds on a shared host), and a ratio of two
   * neighbouring samples cancels what a ratio of two medians would not. */
  double speedup[2] = {1, 1};
  for (int c = 1; c < ncf; c++) {
    double r[BENCH_MAX_SAMPLES];
    for (int i = 0; i < n; i++) r[i] = samples[0][i] / samples[c][i];
    speedup[c] = bench_median(r, n);
  }
  for (int c = 0; c < ncf; c++) {
    set_threads(M, cf[c].threads);
    n_allocs = 0, n_bytes = 0; /* one more evaluation, counted, not timed */
    masq_eval(M, w->code, len, "<bench>", 0);
    char note[128];
    int k = snprintf(note, sizeof note, "allocs=%ld bytes=%zu", n_allocs, n_bytes);
    if (c > 0) snprintf(note + k, sizeof note - (size_t)k, " speedup=%.4f", speedup[c]);
    bench_result(cf[c].impl, w->name, samples[c], n, note);
  }
}

static void run_workload(masq_state *M, const workload *w) {
  static const config both[] = {{1, "masq"}, {2, "masq-2t"}};
  time_workload(M, w, both, ten7(w->name) ? 2 : 1);
  set_threads(M, 1);
}

static int selected(int argc, char **argv, const char *name) {
  if (argc <= 1) return 1;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

int main(int argc, char **argv) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = counting_alloc;
  masq_state *M = masq_open(&cfg);
  if (!M) {
    fprintf(stderr, "masq_bench: masq_open failed\n");
    return 1;
  }
  if (argc >= 5 && strcmp(argv[1], "-s") == 0 && strcmp(argv[3], "-e") == 0) {
    if (masq_eval(M, argv[2], strlen(argv[2]), "<setup>", 0) != MASQ_OK) {
      fprintf(stderr, "%s\n", masq_last_error(M)->rendered);
      masq_close(M);
      return 1;
    }
    workload w = {argc > 5 ? argv[5] : "custom", "custom", argv[4]};
    run_workload(M, &w);
    masq_close(M);
    return 0;
  }
  for (size_t i = 0; i < COUNT(WORKLOADS); i++)
    if (selected(argc, argv, WORKLOADS[i].name)) run_workload(M, &WORKLOADS[i]);
  masq_close(M);
  return 0;
}
