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
 *   masq_bench @masked @dense @steps  the rows of a set: the masked rows
 *                                   (WORKLOADS), issue 30's dense building
 *                                   blocks and whole steps (peer_rows.h)
 *   masq_bench @padding             issue 31's padding rows (pad_rows.h)
 *   masq_bench --save DIR [WORKLOAD...]
 *                                   no timing: writes the inputs and one
 *                                   result of each peer row to DIR for
 *                                   bench/peers.py's check (peer_rows.h)
 *   masq_bench -s SETUP -e CODE [NAME]
 *                                   time any statement CODE after running
 *                                   SETUP once: for experiments, e.g.
 *     masq_bench -s 'x = masked(rand(10000000), rand(10000000) < 2)' -e 'r = sum(x)' */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "bench_util.h"
#include "masq.h"
#include "pad_rows.h"
#include "peer_rows.h"

typedef struct {
  const char *name;   /* the workload's id, shared with baseline.c and py_bench.py */
  const char *group;  /* set-up scripts run once per group */
  const char *code;   /* the timed statement */
} workload;

typedef struct {
  const char *group;
  const char *setup;
} setup;

/* The padding lengths of the attention and pooling workloads (py_bench.py
 * has the same lists). */
#define ATTN_LENS "[239, 130, 175, 95, 173, 154, 228, 222, 202, 183, 181, 244, 153, 145, 124, 101]"
#define POOL_LENS                                                              \
  "[450, 333, 133, 370, 511, 143, 405, 436, 228, 86, 80, 361, 330, 253, 493, 242, 349, 331, " \
  "288, 273, 307, 413, 244, 407, 288, 500, 324, 465, 346, 178, 123, 86, 311, 115, 106, 101, " \
  "324, 431, 70, 260, 309, 500, 293, 205, 393, 377, 361, 390, 327, 380, 382, 164, 394, 124, " \
  "488, 85, 456, 297, 232, 199, 222, 105, 334, 133]"

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
     * same structure as baseline.c's and py_bench.py's: entry j of row r is
     * in column j * 100000 + (7 r) % 100000, built as a (10^6, 1) + (1, 10)
     * broadcast so that the only 10^7-sized temporary is the column array
     * itself (an arange(10^7) expression made five 80 MB temporaries) */
    {"sp", "seed(7)\n"
           "col = (((arange(1000000) * 7) % 100000).reshape(1000000, 1) + "
           "(arange(10) * 100000).reshape(1, 10)).reshape(-1)\n"
           "sp = sparse_csr(arange(0, 10000001, 10), col, rand(10000000), [1000000, 1000000])\n"
           "col = none\n"
           "msp = masked(sp)\n"
           "dn = rand(1000000, 16)\n"},
    /* seed 003's masked Adagrad on 10^7 parameters with a gradient at 1%
     * of them (every 100th), once with the gradient sparse (COO) and once
     * densified (a masked strided tensor with the same valid entries);
     * param and state_sum evolve from one step to the next, as in training */
    {"ada", "seed(8)\n"
            "eps = 1e-10\n"
            "clr = 0.1\n"
            "gi = (arange(100000) * 100 + 37).reshape(1, 100000)\n"
            "mask = sparse_coo(gi, full([100000], true), [10000000])\n"
            "masked_grad = masked(sparse_coo(gi, rand(100000) + 0.5, [10000000]), mask)\n"
            "gi = none\n"
            "dense_grad = to_dense(masked_grad)\n"
            "dense_mask = get_mask(dense_grad)\n"
            "param = rand(10000000)\n"
            "state_sum = full_like(param, 0.5)\n"},
    /* issue 16: attention on a padded batch (B=16, H=4, L=256, D=64) whose
     * key lengths were drawn uniform in [64, 256] once (seed(16)); padded
     * mean pooling of 64x512x256 with lengths drawn uniform in [64, 512]
     * once (seed(17)). The lengths are literals so py_bench.py uses the
     * same ones. */
    {"at", "seed(16)\n"
           "q = rand(16, 4, 256, 64)\n"
           "k = rand(16, 4, 256, 64)\n"
           "v = rand(16, 4, 256, 64)\n"
           "aw = rand(16, 4, 256, 64)\n"
           "alen = tensor(" ATTN_LENS ")\n"
           "kmask = reshape(arange(256), 1, 1, 1, 256) < reshape(alen, 16, 1, 1, 1)\n"
           "kall = reshape(arange(256), 1, 1, 1, 256) < full([16, 1, 1, 1], 256)\n"
           "qg = requires_grad(q)\n"
           "kg = requires_grad(k)\n"
           "vg = requires_grad(v)\n"},
    {"pl", "seed(17)\n"
           "px = rand(64, 512, 256)\n"
           "plen = tensor(" POOL_LENS ")\n"
           "pm = reshape(arange(512), 1, 512, 1) < reshape(plen, 64, 1, 1)\n"},
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
    /* the normalization chain of issue 16 on 4096x1024 */
    {"nc", "seed(9)\n"
           "nx = masked(rand(4096, 1024), rand(4096, 1024) < 0.5)\n"},
    /* the scaling row: masked sums of 10^4 * 2^k entries, k = 0..13 */
    {"sc", "seed(10)\n"
           "sc0 = masked(rand(10000), rand(10000) < 0.5)\n"
           "sc1 = masked(rand(20000), rand(20000) < 0.5)\n"
           "sc2 = masked(rand(40000), rand(40000) < 0.5)\n"
           "sc3 = masked(rand(80000), rand(80000) < 0.5)\n"
           "sc4 = masked(rand(160000), rand(160000) < 0.5)\n"
           "sc5 = masked(rand(320000), rand(320000) < 0.5)\n"
           "sc6 = masked(rand(640000), rand(640000) < 0.5)\n"
           "sc7 = masked(rand(1280000), rand(1280000) < 0.5)\n"
           "sc8 = masked(rand(2560000), rand(2560000) < 0.5)\n"
           "sc9 = masked(rand(5120000), rand(5120000) < 0.5)\n"
           "sc10 = masked(rand(10240000), rand(10240000) < 0.5)\n"
           "sc11 = masked(rand(20480000), rand(20480000) < 0.5)\n"
           "sc12 = masked(rand(40960000), rand(40960000) < 0.5)\n"
           "sc13 = masked(rand(81920000), rand(81920000) < 0.5)\n"},
    {"none", ""},
};

static const workload WORKLOADS[] = {
    {"sum_all", "v", "r = sum(x)"},
    {"mean_all", "v", "r = mean(x)"},
    {"amax_all", "v", "r = amax(x)"},
    {"exp_2_1", "v", "r = exp(x) * 2 + 1"},
    {"sum_dim0", "m", "r = sum(y, 0)"},
    {"sum_dim1", "m", "r = sum(y, 1)"},
    {"mean_dim0", "m", "r = mean(y, 0)"},
    {"mean_dim1", "m", "r = mean(y, 1)"},
    {"amax_dim0", "m", "r = amax(y, 0)"},
    {"amax_dim1", "m", "r = amax(y, 1)"},
    {"softmax_1000", "s", "r = softmax(s1, 1)"},
    {"softmax_4096x512", "s", "r = softmax(s2, 1)"},
    {"matmul_512", "mm", "r = ma @ mb"},
    {"softmax_fwd_bwd", "fb", "r = grad(sum(softmax(fx, 1) * fw), fx)"},
    {"sp_rowsum", "sp", "r = sum(sp, 1)"},
    {"sp_softmax", "sp", "r = softmax(msp, 1)"},
    {"sp_spmm", "sp", "r = sp @ dn"},
    /* the seed's four lines as a training loop runs them, 50 steps a
     * sample (run.sh reports one step): the updates of state_sum and param
     * reuse their storage from the second step on (the first store of a
     * global in an eval is kept for its rollback, a copy of 10^7 that a
     * training loop pays once: at 10 steps a sample it is a third of the
     * sparse step's time), so the sparse step is O(nnz). The sparse form reads state_sum at the stored positions with
     * mask * state_sum (O(nnz)) where the seed converts all of it with
     * to_sparse() (O(numel), 10^7 stored entries) */
    {"ada_sparse", "ada",
     "for step in range(50) {\n"
     "  state_sum = state_sum + masked_grad.pow(2).get_data()\n"
     "  std2 = masked(mask * state_sum, mask)\n"
     "  std2 = std2.sqrt().add(eps)\n"
     "  param = param.add((masked_grad / std2).get_data(), alpha=-clr)\n"
     "}\n"},
    {"ada_dense", "ada",
     "for step in range(50) {\n"
     "  state_sum = state_sum + dense_grad.pow(2).get_data()\n"
     "  std2 = masked(state_sum, dense_mask)\n"
     "  std2 = std2.sqrt().add(eps)\n"
     "  param = param.add((dense_grad / std2).get_data(), alpha=-clr)\n"
     "}\n"},
    {"mk_sum_valid", "mk", "r = sum(kv)"},
    {"mk_sum_pad", "mk", "r = sum(kp)"},
    {"mk_sum_masked", "mk", "r = sum(km)"},
    {"mk_mean_valid", "mk", "r = mean(kv)"},
    {"mk_mean_pad", "mk", "r = mean(kp)"},
    {"mk_mean_masked", "mk", "r = mean(km)"},
    {"mk_amax_valid", "mk", "r = amax(kv)"},
    {"mk_amax_pad", "mk", "r = amax(kp)"},
    {"mk_amax_masked", "mk", "r = amax(km)"},
    {"attn_fwd", "at", "r = softmax(masked(q @ transpose(k, -2, -1) / 8, kmask), -1) @ v"},
    {"attn_fwd_valid", "at", "r = softmax(masked(q @ transpose(k, -2, -1) / 8, kall), -1) @ v"},
    /* as_masked: gradients flow back through the mask to the scores */
    {"attn_fwd_bwd", "at",
     "r = grad(sum((softmax(as_masked(qg @ transpose(kg, -2, -1) / 8, kmask), -1) @ vg) * aw), "
     "[qg, kg, vg])"},
    {"pool_mean", "pl", "r = mean(masked(px, pm), 1)"},
    /* 1000 iterations per sample; run.sh reports the time per iteration */
    {"small_loop", "t", "for i in range(1000) { r = (st * 2 + 1).sum() }"},
    {"norm_chain", "nc", "r = (nx - mean(nx, 1, keepdim=true)) / std(nx, 1, keepdim=true)"},
    /* the scaling row: each sample sums 2^(13-k) times 10^4 * 2^k entries
     * (8.2 * 10^7 in all), so the small sizes are not just call overhead;
     * run.sh reports the time per element */
    {"scale_00", "sc", "for i in range(8192) { r = sum(sc0) }"},
    {"scale_01", "sc", "for i in range(4096) { r = sum(sc1) }"},
    {"scale_02", "sc", "for i in range(2048) { r = sum(sc2) }"},
    {"scale_03", "sc", "for i in range(1024) { r = sum(sc3) }"},
    {"scale_04", "sc", "for i in range(512) { r = sum(sc4) }"},
    {"scale_05", "sc", "for i in range(256) { r = sum(sc5) }"},
    {"scale_06", "sc", "for i in range(128) { r = sum(sc6) }"},
    {"scale_07", "sc", "for i in range(64) { r = sum(sc7) }"},
    {"scale_08", "sc", "for i in range(32) { r = sum(sc8) }"},
    {"scale_09", "sc", "for i in range(16) { r = sum(sc9) }"},
    {"scale_10", "sc", "for i in range(8) { r = sum(sc10) }"},
    {"scale_11", "sc", "for i in range(4) { r = sum(sc11) }"},
    {"scale_12", "sc", "for i in range(2) { r = sum(sc12) }"},
    {"scale_13", "sc", "for i in range(1) { r = sum(sc13) }"},
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

/* set-up groups: SETUPS, then PEER_SETUPS, then PAD_SETUPS */
#define N_GROUPS (COUNT(SETUPS) + COUNT(PEER_SETUPS) + COUNT(PAD_SETUPS))
static int group_state[N_GROUPS]; /* 0 not run, 1 ok, -1 failed */
static char group_error[N_GROUPS][200];

/* The set-up script of group [g] (an index below N_GROUPS) and its name. */
static const char *group_name(size_t g) {
  if (g < COUNT(SETUPS)) return SETUPS[g].group;
  g -= COUNT(SETUPS);
  return g < COUNT(PEER_SETUPS) ? PEER_SETUPS[g].group : PAD_SETUPS[g - COUNT(PEER_SETUPS)].group;
}
static const char *group_setup(size_t g) {
  if (g < COUNT(SETUPS)) return SETUPS[g].setup;
  g -= COUNT(SETUPS);
  return g < COUNT(PEER_SETUPS) ? PEER_SETUPS[g].setup : PAD_SETUPS[g - COUNT(PEER_SETUPS)].setup;
}

/* Peak memory. Each set-up group runs in an interpreter of its own (main
 * closes the previous one), and the kernel's high-water mark of resident
 * memory (VmHWM) is reset when it opens (writing 5 to /proc/self/clear_refs,
 * Linux >= 4.0), so the peak_mb of a RESULT note is the process's peak
 * since its group's interpreter opened: set-up and every workload of the
 * group so far, the interpreter itself included. -1 where /proc lacks it. */
static void reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return;
  fputs("5", f);
  fclose(f);
}

static double peak_mb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  double kb = -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = atof(line + 6);
  fclose(f);
  return kb < 0 ? -1 : kb / 1024;
}

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
  for (size_t g = 0; g < N_GROUPS; g++) {
    if (strcmp(group_name(g), group) != 0) continue;
    if (group_state[g] == 0) {
      const char *src = group_setup(g);
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
 * (target: two threads >= 1.6x one thread); "masq" is one thread. The
 * sparse kernels split rows over threads too: their 2T figure is shown,
 * with no target. */
static int ten7(const char *name) {
  static const char *const names[] = {"sum_all",  "mean_all",  "amax_all",  "sum_dim0",
                                      "sum_dim1", "mean_dim0", "mean_dim1", "amax_dim0",
                                      "amax_dim1", "exp_2_1",  "sp_rowsum", "sp_softmax",
                                      "sp_spmm"};
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

/* The process's minor page faults so far (a fresh result's pages). */
static long minor_faults(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_minflt : 0;
}

/* Times [w] in each of the [ncf] configurations, one repetition of each in
 * turn: a spell of load on the machine then falls on all of them alike,
 * so their ratio (2T/1T) compares like with like. */
static void time_workload(masq_state *M, const workload *w, const config *cf, int ncf,
                          int min_reps, int count) {
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
  long faults[2] = {0, 0};                     /* minor page faults, per configuration */
  double elapsed = 0;
  int n = 0;
  while (bench_more_min(n, elapsed / ncf, min_reps) && n < BENCH_MAX_SAMPLES) {
    for (int c = 0; c < ncf; c++) {
      set_threads(M, cf[c].threads);
      long f0 = minor_faults();
      double t0 = bench_now();
      masq_status st = masq_eval(M, w->code, len, "<bench>", 0);
      double dt = bench_now() - t0;
      faults[c] += minor_faults() - f0;
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
    if (!count) { /* the peer rows: page faults a run, as py_bench.py's */
      char note[40];
      snprintf(note, sizeof note, "minflt=%ld", faults[c] / n);
      bench_result(cf[c].impl, w->name, samples[c], n, note);
      continue;
    }
    set_threads(M, cf[c].threads);
    n_allocs = 0, n_bytes = 0; /* one more evaluation, counted, not timed */
    masq_eval(M, w->code, len, "<bench>", 0);
    char note[160];
    int k = snprintf(note, sizeof note, "allocs=%ld bytes=%zu peak_mb=%.1f", n_allocs, n_bytes,
                     peak_mb());
    if (c > 0) snprintf(note + k, sizeof note - (size_t)k, " speedup=%.4f", speedup[c]);
    bench_result(cf[c].impl, w->name, samples[c], n, note);
  }
}

static void run_workload(masq_state *M, const workload *w) {
  static const config both[] = {{1, "masq"}, {2, "masq-2t"}};
  time_workload(M, w, both, ten7(w->name) ? 2 : 1, BENCH_MIN_REPS, 1);
  set_threads(M, 1);
}

/* A peer row: one and two threads alternately, best of at least 3 (a
 * 2048^2 product takes seconds), no extra evaluation for the counts. */
static void run_peer_row(masq_state *M, const peer_row *p) {
  static const config both[] = {{1, "masq"}, {2, "masq-2t"}};
  workload w = {p->name, p->group, p->code};
  time_workload(M, &w, both, 2, 3, 0);
  set_threads(M, 1);
}

/* The peer rows' steps (the rest are dense building blocks). */
static int is_step(const char *name) {
  return strncmp(name, "train", 5) == 0 || strncmp(name, "encoder", 7) == 0;
}

/* Whether the arguments select [name], of the set [set] ("masked",
 * "dense" or "steps"): by name or by @set; no argument selects all. */
static int selected(int argc, char **argv, const char *name, const char *set) {
  if (argc <= 1) return 1;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0 || (argv[i][0] == '@' && strcmp(argv[i] + 1, set) == 0))
      return 1;
  return 0;
}

static const char *peer_set(const peer_row *p) { return is_step(p->name) ? "steps" : "dense"; }

/* A fresh state; with [io], save and load too (--save). */
static masq_state *open_state_io(int io) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = counting_alloc;
  if (io) cfg.libs = MASQ_LIB_ALL;
  masq_state *M = masq_open(&cfg);
  if (!M) fprintf(stderr, "masq_bench: masq_open failed\n");
  memset(group_state, 0, sizeof group_state);
  reset_peak();
  return M;
}

static masq_state *open_state(void) { return open_state_io(0); }

/* [code] of the format [fmt], or 0 if it does not fit */
#define FORMAT_CODE(code, ...) (snprintf(code, sizeof code, __VA_ARGS__) < (int)sizeof code)

/* Runs [code] in M; on an error says which [what] of [row] failed. */
static int eval_or_say(masq_state *M, const char *code, const char *row, const char *what) {
  if (masq_eval(M, code, strlen(code), "<bench save>", 0) == MASQ_OK) return 1;
  char why[256];
  error_line(M, what, why, sizeof why);
  fprintf(stderr, "masq_bench --save: %s: %s\n", row, why);
  return 0;
}

/* --save DIR: each selected peer row's inputs (once per group) and result,
 * as float32 .npy files for bench/peers.py's check. Each group in a fresh
 * state, so a step's check sees the set-up's parameters. */
static int save_peer_rows(const char *dir, int argc, char **argv) {
  if (strpbrk(dir, "\"\\")) {
    fprintf(stderr, "masq_bench --save: the directory's name may not hold a quote or backslash\n");
    return 2;
  }
  mkdir(dir, 0777); /* if it is not there yet; a failure shows at the first save */
  masq_state *M = NULL;
  const char *group = NULL;
  int failed = 0;
  char code[1024];
  for (size_t i = 0; i < COUNT(PEER_ROWS); i++) {
    const peer_row *p = &PEER_ROWS[i];
    if (!selected(argc, argv, p->name, peer_set(p))) continue;
    if (!group || strcmp(group, p->group) != 0) {
      if (M) masq_close(M);
      if (!(M = open_state_io(1))) return 1;
      group = p->group;
      char why[256];
      if (!run_setup(M, group, why, sizeof why)) {
        fprintf(stderr, "masq_bench --save: %s: %s\n", p->name, why);
        failed = 1;
        continue;
      }
      const peer_setup *ps = NULL;
      for (size_t g = 0; g < COUNT(PEER_SETUPS); g++)
        if (strcmp(PEER_SETUPS[g].group, group) == 0) ps = &PEER_SETUPS[g];
      for (const char *n = ps ? ps->saves : ""; *n;) { /* each name of the list */
        int len = (int)strcspn(n, " ");
        if (!FORMAT_CODE(code, "save(\"%s/in_%s_%.*s.npy\", to(detach(%.*s), float32))", dir,
                         group, len, n, len, n)) {
          fprintf(stderr, "masq_bench --save: the directory's name is too long\n");
          masq_close(M);
          return 2;
        }
        failed |= !eval_or_say(M, code, p->name, "saving an input failed");
        n += len;
        n += strspn(n, " ");
      }
    }
    if (!eval_or_say(M, p->check ? p->check : p->code, p->name, "failed")) {
      failed = 1;
      continue;
    }
    if (FORMAT_CODE(code, "save(\"%s/%s.npy\", to(detach(r), float32))", dir, p->name))
      failed |= !eval_or_say(M, code, p->name, "saving the result failed");
  }
  if (M) masq_close(M);
  return failed;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "--save") == 0) return save_peer_rows(argv[2], argc - 2, argv + 2);
  masq_state *M = open_state();
  if (!M) return 1;
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
  const char *group = NULL; /* the set-up group M holds */
  for (size_t i = 0; i < COUNT(WORKLOADS); i++) {
    if (!selected(argc, argv, WORKLOADS[i].name, "masked")) continue;
    if (group && strcmp(group, WORKLOADS[i].group) != 0) { /* a fresh interpreter */
      masq_close(M);
      if (!(M = open_state())) return 1;
    }
    group = WORKLOADS[i].group;
    run_workload(M, &WORKLOADS[i]);
  }
  for (size_t i = 0; i < COUNT(PEER_ROWS); i++) {
    if (!selected(argc, argv, PEER_ROWS[i].name, peer_set(&PEER_ROWS[i]))) continue;
    if (group && strcmp(group, PEER_ROWS[i].group) != 0) {
      masq_close(M);
      if (!(M = open_state())) return 1;
    }
    group = PEER_ROWS[i].group;
    run_peer_row(M, &PEER_ROWS[i]);
  }
  for (size_t i = 0; i < COUNT(PAD_ROWS); i++) { /* one thread, as the masked rows */
    if (!selected(argc, argv, PAD_ROWS[i].name, "padding")) continue;
    if (group && strcmp(group, PAD_ROWS[i].group) != 0) {
      masq_close(M);
      if (!(M = open_state())) return 1;
    }
    group = PAD_ROWS[i].group;
    workload w = {PAD_ROWS[i].name, PAD_ROWS[i].group, PAD_ROWS[i].code};
    run_workload(M, &w);
  }
  masq_close(M);
  return 0;
}
