/* baseline.c - the hand-written C loop for every workload of bench/run.sh,
 * and this machine's memory bandwidth.
 *
 * Each kernel is what a careful programmer writes by hand for ONE workload:
 * plain loops over contiguous float32 data and a byte mask (1 = valid),
 * no library, no temporaries beyond the result, a `#pragma omp simd`
 * where a reduction must be allowed to reassociate (compiled with
 * -fopenmp-simd, which honours the pragmas and links no OpenMP runtime).
 * The semantics follow masq's (runtime/kernels/reduce.c, softmax.c, matmul.c):
 * float32 sums accumulate in double, a reduction over nothing valid is
 * masked out, masked-out entries never contribute (selected away with sel(),
 * NaN-safe, not multiplied by the mask). Results are written to buffers
 * allocated once, and a result keeps its input's mask (shared), which a
 * refcounted runtime can do too. Built with the same flags as masq (-O2
 * -fno-math-errno, no -march), so both get the same instruction set (SSE2
 * on x86-64). expf is declared `simd` below so GCC calls glibc's vector
 * expf (libmvec), as the runtime does.
 *
 * Usage:
 *   baseline                      every workload, RESULT lines (bench_util.h)
 *   baseline WORKLOAD...          only those
 *   baseline --spawn IMPL NAME -- CMD ARGS...
 *                                 time CMD started as a process (median of
 *                                 many runs): start-up of masq, python, ...
 */
#include <math.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench_util.h"

#if defined(__clang__)
/* clang reports each `omp simd` loop it leaves scalar (the expf loops: it
 * uses no libmvec); that is a missed optimization here, not an error. */
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
/* glibc ships vector variants of expf (libmvec) but declares them only under
 * -ffast-math; declaring them ourselves lets -O2 vectorize expf loops. */
float expf(float) __attribute__((simd("notinbranch")));
#endif

extern char **environ;

/* --- data ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static float rng_float(void) { return (float)(rng_next() >> 40) * (1.0f / 16777216.0f); }

static void *xmalloc(size_t n) {
  void *p = aligned_alloc(64, (n + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "baseline: out of memory\n");
    exit(1);
  }
  return p;
}

/* uniform [0, 1) data and a mask valid with probability 1/2, like
 * masked(rand(...), rand(...) < 0.5) in the masq scripts. */
static float *rand_data(size_t n) {
  float *x = xmalloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = rng_float();
  return x;
}
static uint8_t *rand_mask(size_t n) {
  uint8_t *m = xmalloc(n);
  for (size_t i = 0; i < n; i++) m[i] = rng_float() < 0.5f;
  return m;
}

/* Keeps results alive so the compiler cannot drop a kernel. */
static volatile double sink;
static void consume(const float *p, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i += 997) s += p[i];
  sink = s;
}
#define BARRIER() __asm__ __volatile__("" ::: "memory")

/* --- kernels ----------------------------------------------------------------- */

/* v where m is set, else [fill], by bit masking: a select on a byte mask next
 * to float or double data does not vectorize at -O2 on baseline x86-64
 * (GCC 12 reports "control flow in loop"); an AND/OR with a lane mask does,
 * and it is NaN-safe: a masked-out NaN never leaks through. */
static inline float sel(float v, uint8_t m, float fill) {
  uint32_t b, f, k = -(uint32_t)(m != 0);
  memcpy(&b, &v, 4);
  memcpy(&f, &fill, 4);
  b = (b & k) | (f & ~k);
  memcpy(&v, &b, 4);
  return v;
}

static double msum(const float *x, const uint8_t *m, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; i++) s += (double)sel(x[i], m[i], 0.0f);
  return s;
}

static int64_t count(const uint8_t *m, int64_t n) {
  int64_t c = 0;
#pragma omp simd reduction(+ : c)
  for (int64_t i = 0; i < n; i++) c += m[i];
  return c;
}

static double mmean(const float *x, const uint8_t *m, int64_t n, int *valid) {
  double s = msum(x, m, n);
  int64_t c = count(m, n);
  *valid = c > 0;
  return c ? s / (double)c : NAN;
}

static float mamax(const float *x, const uint8_t *m, int64_t n, int *valid) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t i = 0; i < n; i++) {
    float v = sel(x[i], m[i], -INFINITY);
    mx = v > mx ? v : mx;
  }
  *valid = count(m, n) > 0;
  return mx;
}

/* Reductions along dim 0 of rows x cols (output: cols): walk the rows in
 * memory order, accumulating a row of doubles that stays in cache. */
static void sum_dim0(const float *x, const uint8_t *m, int64_t rows, int64_t cols, double *acc,
                     int64_t *cnt, float *out, uint8_t *om, int mean) {
  for (int64_t j = 0; j < cols; j++) acc[j] = 0, cnt[j] = 0;
  for (int64_t i = 0; i < rows; i++) {
    const float *xr = x + i * cols;
    const uint8_t *mr = m + i * cols;
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) acc[j] += (double)sel(xr[j], mr[j], 0.0f);
    if (mean)
#pragma omp simd
      for (int64_t j = 0; j < cols; j++) cnt[j] += mr[j];
  }
  if (!mean)
    for (int64_t i = 0; i < rows; i++)
#pragma omp simd
      for (int64_t j = 0; j < cols; j++) cnt[j] += m[i * cols + j];
  for (int64_t j = 0; j < cols; j++) {
    om[j] = cnt[j] > 0;
    out[j] = (float)(mean ? (cnt[j] ? acc[j] / (double)cnt[j] : NAN) : acc[j]);
  }
}

static void amax_dim0(const float *x, const uint8_t *m, int64_t rows, int64_t cols, float *out,
                      uint8_t *om) {
  for (int64_t j = 0; j < cols; j++) out[j] = -INFINITY, om[j] = 0;
  for (int64_t i = 0; i < rows; i++) {
    const float *xr = x + i * cols;
    const uint8_t *mr = m + i * cols;
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) {
      float v = sel(xr[j], mr[j], -INFINITY);
      out[j] = v > out[j] ? v : out[j];
      om[j] |= mr[j];
    }
  }
}

static void red_dim1(int kind, const float *x, const uint8_t *m, int64_t rows, int64_t cols,
                     float *out, uint8_t *om) {
  for (int64_t i = 0; i < rows; i++) {
    const float *xr = x + i * cols;
    const uint8_t *mr = m + i * cols;
    int v = 1;
    if (kind == 0) {
      out[i] = (float)msum(xr, mr, cols);
      v = count(mr, cols) > 0;
    } else if (kind == 1) {
      out[i] = (float)mmean(xr, mr, cols, &v);
    } else {
      out[i] = mamax(xr, mr, cols, &v);
    }
    om[i] = (uint8_t)v;
  }
}

/* exp(x) * 2 + 1: one pass; the result keeps the input's mask (shared, as a
 * refcounted runtime can share it), so only the data is written. */
static void exp21(const float *x, float *out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) out[i] = expf(x[i]) * 2.0f + 1.0f;
}

/* Masked softmax along dim 1: per row max over valid, exp, sum, scale.
 * Masked-out outputs hold 0 (hidden); the output mask is the input's. */
static void softmax_rows(const float *x, const uint8_t *m, int64_t rows, int64_t cols, float *out) {
  for (int64_t i = 0; i < rows; i++) {
    const float *xr = x + i * cols;
    const uint8_t *mr = m + i * cols;
    float *o = out + i * cols;
    int any;
    float mx = mamax(xr, mr, cols, &any);
    if (!any) mx = 0;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < cols; j++) {
      float e = sel(expf(xr[j] - mx), mr[j], 0.0f);
      o[j] = e;
      s += (double)e;
    }
    float inv = s > 0 ? (float)(1.0 / s) : 0.0f;
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) o[j] *= inv;
  }
}

/* Masked matmul with masq's semantics (runtime/kernels/matmul.c): C[i,j] sums
 * A[i,k]*B[k,j] over the k where both are valid, in double; C[i,j] masked
 * out when no k is. B is copied once with its masked-out entries zeroed
 * (exact for finite A), then an i-k-j loop with the accumulator row in
 * cache; the output mask is an OR of B's mask rows over the valid k. */
static void matmul_masked(int64_t M, int64_t K, int64_t N, const float *A, const uint8_t *mA,
                          const float *B, const uint8_t *mB, float *C, uint8_t *mC, double *acc,
                          float *Bz) {
#pragma omp simd
  for (int64_t i = 0; i < K * N; i++) Bz[i] = sel(B[i], mB[i], 0.0f);
  for (int64_t i = 0; i < M; i++) {
    uint8_t *mc = mC + i * N;
    for (int64_t j = 0; j < N; j++) acc[j] = 0, mc[j] = 0;
    for (int64_t k = 0; k < K; k++) {
      if (!mA[i * K + k]) continue;
      const double a = A[i * K + k];
      const float *b = Bz + k * N;
      const uint8_t *mb = mB + k * N;
#pragma omp simd
      for (int64_t j = 0; j < N; j++) acc[j] += a * (double)b[j];
#pragma omp simd
      for (int64_t j = 0; j < N; j++) mc[j] |= mb[j];
    }
    for (int64_t j = 0; j < N; j++) C[i * N + j] = (float)acc[j];
  }
}

/* Forward and backward of L = sum(softmax(x, 1) * w) over the valid
 * entries: forward stores s = softmax(x) and each row's dot(s, w); backward
 * gives dL/dx = s * (w - dot) on valid entries (0 elsewhere). */
static double softmax_fwd_bwd(const float *x, const uint8_t *m, const float *w, int64_t rows,
                              int64_t cols, float *s, double *dots, float *g) {
  softmax_rows(x, m, rows, cols, s);
  double L = 0;
  for (int64_t i = 0; i < rows; i++) {
    const float *sr = s + i * cols, *wr = w + i * cols;
    const uint8_t *mr = m + i * cols;
    double d = 0;
#pragma omp simd reduction(+ : d)
    for (int64_t j = 0; j < cols; j++) d += (double)sel(sr[j] * wr[j], mr[j], 0.0f);
    dots[i] = d;
    L += d;
  }
  for (int64_t i = 0; i < rows; i++) {
    const float *sr = s + i * cols, *wr = w + i * cols;
    const uint8_t *mr = m + i * cols;
    float *gr = g + i * cols;
    float d = (float)dots[i];
#pragma omp simd
    for (int64_t j = 0; j < cols; j++) gr[j] = sel(sr[j] * (wr[j] - d), mr[j], 0.0f);
  }
  return L;
}

/* The small-tensor step: y = (x * 2 + 1) on 4x4 into a temporary, then its
 * masked sum. */
static __attribute__((noinline)) double small_step(const float *x, const uint8_t *m) {
  float t[16];
  for (int i = 0; i < 16; i++) t[i] = x[i] * 2.0f + 1.0f;
  return msum(t, m, 16);
}

/* The normalization chain (x - mean(x, 1, keepdim)) / std(x, 1, keepdim)
 * over the valid entries of each row (population std, as masq's default):
 * one pass for the sum and count, one for the squared deviations, one that
 * writes; a row with nothing valid, or with std 0 (x - mean then is 0 or
 * masked), follows IEEE as masq's does (0/0 is NaN only where valid). */
static void norm_chain(const float *x, const uint8_t *m, int64_t rows, int64_t cols, float *out) {
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = x + r * cols;
    const uint8_t *mr = m + r * cols;
    float *o = out + r * cols;
    int64_t c = count(mr, cols);
    if (c == 0) continue; /* every entry of the row is masked out */
    float mean = (float)(msum(xr, mr, cols) / (double)c);
    double ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int64_t j = 0; j < cols; j++) {
      double d = (double)sel(xr[j] - mean, mr[j], 0.0f);
      ss += d * d;
    }
    float sd = (float)sqrt(ss / (double)c);
    for (int64_t j = 0; j < cols; j++) o[j] = (xr[j] - mean) / sd;
  }
}

/* --- memory bandwidth ------------------------------------------------------------ */

/* Read bandwidth: sum an array of 64-bit integers (integer adds vectorize
 * without reassociation concerns). */
static uint64_t bw_read(const uint64_t *p, size_t n) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) /* n is a multiple of 4 */
    s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
  return s0 + s1 + s2 + s3;
}

/* --- driver ------------------------------------------------------------------ */

static int selected(int argc, char **argv, const char *name) {
  if (argc <= 1) return 1;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

#define TIME(NAME, SETUP, BODY)                                                \
  do {                                                                         \
    if (!selected(argc, argv, NAME)) break;                                    \
    double samples[BENCH_MAX_SAMPLES], elapsed = 0;                            \
    int n_ = 0;                                                                \
    SETUP;                                                                     \
    BODY; /* warm-up */                                                        \
    while (bench_more(n_, elapsed) && n_ < BENCH_MAX_SAMPLES) {                \
      double t0_ = bench_now();                                                \
      BODY;                                                                    \
      BARRIER();                                                               \
      samples[n_] = bench_now() - t0_;                                         \
      elapsed += samples[n_++];                                                \
    }                                                                          \
    bench_result("c", NAME, samples, n_, "");                    \
  } while (0)

static int spawn_main(int argc, char **argv) {
  /* --spawn IMPL NAME -- CMD ARGS... */
  if (argc < 6 || strcmp(argv[4], "--") != 0) {
    fprintf(stderr, "usage: baseline --spawn IMPL NAME -- CMD ARGS...\n");
    return 2;
  }
  const char *impl = argv[2], *name = argv[3];
  char **cmd = argv + 5;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1 /* O_WRONLY */, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 1, 0);
  double samples[BENCH_MAX_SAMPLES], elapsed = 0;
  int n = 0, fixed = bench_fixed_reps();
  /* Start-up is short and noisy: more samples than the kernels get. */
  int want = fixed ? fixed : 41;
  for (int i = -2; i < want; i++) { /* two warm-up runs (page cache) */
    pid_t pid;
    double t0 = bench_now();
    if (posix_spawnp(&pid, cmd[0], &fa, NULL, cmd, environ) != 0) {
      bench_na(impl, name, "could not start the command");
      return 0;
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      bench_na(impl, name, "the command failed");
      return 0;
    }
    double dt = bench_now() - t0;
    if (i >= 0) samples[n++] = dt, elapsed += dt;
    if (n >= 5 && elapsed > 5.0) break; /* a slow start (python + torch) */
  }
  posix_spawn_file_actions_destroy(&fa);
  bench_result(impl, name, samples, n, "");
  return 0;
}

/* --- sparse: a 10^6 x 10^6 CSR matrix, 10 entries per row ------------------------ */

#define SP_ROWS 1000000
#define SP_PER 10

static void sp_rowsum(const int64_t *crow, const float *v, float *out) {
  for (int64_t r = 0; r < SP_ROWS; r++) {
    double s = 0;
    for (int64_t k = crow[r]; k < crow[r + 1]; k++) s += (double)v[k];
    out[r] = (float)s;
  }
}

static void sp_softmax(const int64_t *crow, const float *v, float *out) {
  for (int64_t r = 0; r < SP_ROWS; r++) {
    int64_t a = crow[r], b = crow[r + 1];
    float mx = -INFINITY;
    for (int64_t k = a; k < b; k++) mx = v[k] > mx ? v[k] : mx;
    double s = 0;
    for (int64_t k = a; k < b; k++) {
      out[k] = expf(v[k] - mx);
      s += (double)out[k];
    }
    float inv = (float)(1.0 / s);
    for (int64_t k = a; k < b; k++) out[k] *= inv;
  }
}

static void sp_spmm(const int64_t *crow, const int64_t *col, const float *v, const float *d,
                    float *out) {
  for (int64_t r = 0; r < SP_ROWS; r++) {
    float acc[16] = {0};
    for (int64_t k = crow[r]; k < crow[r + 1]; k++) {
      const float *row = d + col[k] * 16;
      for (int j = 0; j < 16; j++) acc[j] += v[k] * row[j];
    }
    memcpy(out + r * 16, acc, sizeof acc);
  }
}

static void sparse_workloads(int argc, char **argv) {
  if (!selected(argc, argv, "sp_rowsum") && !selected(argc, argv, "sp_softmax") &&
      !selected(argc, argv, "sp_spmm"))
    return;
  int64_t nnz = (int64_t)SP_ROWS * SP_PER;
  int64_t *crow = xmalloc((SP_ROWS + 1) * sizeof *crow), *col = xmalloc((size_t)nnz * sizeof *col);
  for (int64_t r = 0; r <= SP_ROWS; r++) crow[r] = r * SP_PER;
  for (int64_t k = 0; k < nnz; k++) col[k] = (k % 10) * 100000 + ((k / 10) * 7) % 100000;
  float *v = rand_data((size_t)nnz), *d = rand_data((size_t)SP_ROWS * 16);
  /* the softmax writes nnz floats, the SpMM rows x 16 (more) */
  size_t nout = (size_t)nnz > (size_t)SP_ROWS * 16 ? (size_t)nnz : (size_t)SP_ROWS * 16;
  float *out = xmalloc(nout * sizeof *out);
  TIME("sp_rowsum", (void)0, sp_rowsum(crow, v, out); consume(out, SP_ROWS));
  TIME("sp_softmax", (void)0, sp_softmax(crow, v, out); consume(out, (size_t)nnz));
  TIME("sp_spmm", (void)0, sp_spmm(crow, col, v, d, out); consume(out, (size_t)SP_ROWS * 16));
  free(crow), free(col), free(v), free(d), free(out);
}

/* The scaling row: the masked sum of 10^4 * 2^k entries (prefixes of one
 * array of 8.2 * 10^7), 2^(13-k) times a sample like masq_bench.c's. */
static void scale_workloads(int argc, char **argv) {
  int any = 0;
  for (int k = 0; k < 14; k++) {
    char name[16];
    snprintf(name, sizeof name, "scale_%02d", k);
    any |= selected(argc, argv, name);
  }
  if (!any) return;
  const int64_t big = (int64_t)10000 << 13;
  float *x = rand_data((size_t)big);
  uint8_t *m = rand_mask((size_t)big);
  for (int k = 0; k < 14; k++) {
    char name[16];
    snprintf(name, sizeof name, "scale_%02d", k);
    int64_t n = (int64_t)10000 << k, reps = (int64_t)1 << (13 - k);
    TIME(name, (void)0, for (int64_t i = 0; i < reps; i++) {
      sink = msum(x, m, n);
      BARRIER();
    });
  }
  free(x), free(m);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--spawn") == 0) return spawn_main(argc, argv);

  const int64_t N = 10000000, R = 1000, C = 10000;

  if (selected(argc, argv, "bw_read") || selected(argc, argv, "bw_read_50mb")) {
    /* DRAM: 512 MiB, far beyond any cache. The 10^7 workloads touch 50 MB
     * (4 B of data and 1 B of mask per entry), which may stay in a large
     * L3 (this machine class reports 260 MiB, shared with its neighbours):
     * bw_read_50mb streams that much again and again, their real floor. */
    size_t n = (size_t)64 << 20, n50 = 50000000 / sizeof(uint64_t);
    uint64_t *p = xmalloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = i;
    uint64_t s = 0;
    TIME("bw_read", (void)0, s += bw_read(p, n));
    TIME("bw_read_50mb", (void)0, s += bw_read(p, n50));
    sink = (double)s;
    free(p);
  }

  sparse_workloads(argc, argv);
  float *x = rand_data((size_t)N);
  uint8_t *m = rand_mask((size_t)N);
  float *out = xmalloc((size_t)N * sizeof *out);
  uint8_t *om = xmalloc((size_t)N);
  double *acc = xmalloc((size_t)C * sizeof *acc);
  int64_t *cnt = xmalloc((size_t)C * sizeof *cnt);
  int v;

  /* the 1000x10000 matrix is the same 10^7 values viewed as rows */
  TIME("sum_all", (void)0, sink = msum(x, m, N));
  TIME("mean_all", (void)0, sink = mmean(x, m, N, &v));
  TIME("amax_all", (void)0, sink = mamax(x, m, N, &v));
  TIME("sum_dim0", (void)0, sum_dim0(x, m, R, C, acc, cnt, out, om, 0); consume(out, C));
  TIME("sum_dim1", (void)0, red_dim1(0, x, m, R, C, out, om); consume(out, R));
  TIME("mean_dim0", (void)0, sum_dim0(x, m, R, C, acc, cnt, out, om, 1); consume(out, C));
  TIME("mean_dim1", (void)0, red_dim1(1, x, m, R, C, out, om); consume(out, R));
  TIME("amax_dim0", (void)0, amax_dim0(x, m, R, C, out, om); consume(out, C));
  TIME("amax_dim1", (void)0, red_dim1(2, x, m, R, C, out, om); consume(out, R));
  TIME("exp_2_1", (void)0, exp21(x, out, N); consume(out, N));
  TIME("softmax_1000", (void)0, softmax_rows(x, m, 1000, 1000, out); consume(out, 1000000));
  TIME("softmax_4096x512", (void)0, softmax_rows(x, m, 4096, 512, out); consume(out, 4096 * 512));
  {
    /* the operands are different parts of the big arrays */
    const float *A = x, *B = x + 512 * 512;
    const uint8_t *mA = m, *mB = m + 512 * 512;
    float *Bz = out + 512 * 512;
    TIME("matmul_512", (void)0, matmul_masked(512, 512, 512, A, mA, B, mB, out, om, acc, Bz);
         consume(out, 512 * 512));
  }
  {
    const float *w = x + 1000000;
    float *s = out, *g = out + 1000000;
    double *dots = acc;
    TIME("softmax_fwd_bwd", (void)0,
         sink = softmax_fwd_bwd(x, m, w, 1000, 1000, s, dots, g); consume(g, 1000000));
  }
  {
    /* reported per iteration, like the masq figure */
    double s = 0;
    TIME("small_loop", (void)0, for (int i = 0; i < 1000; i++) {
      s += small_step(x + (i & 7), m);
      BARRIER();
    });
    sink = s;
  }
  {
    /* masks that make work smaller: the careful loop reads every entry and
     * its mask byte whatever the mask holds (it keeps no summary) */
    static const char *const kinds[] = {"valid", "pad", "masked"};
    uint8_t *mk = xmalloc((size_t)N);
    for (int k = 0; k < 3; k++) {
      for (int64_t i = 0; i < N; i++) mk[i] = k == 0 ? 1 : k == 1 ? (i % 8192) < 4096 : 0;
      char name[32];
      snprintf(name, sizeof name, "mk_sum_%s", kinds[k]);
      TIME(name, (void)0, sink = msum(x, mk, N));
      snprintf(name, sizeof name, "mk_mean_%s", kinds[k]);
      TIME(name, (void)0, sink = mmean(x, mk, N, &v));
      snprintf(name, sizeof name, "mk_amax_%s", kinds[k]);
      TIME(name, (void)0, sink = mamax(x, mk, N, &v));
    }
    free(mk);
  }
  TIME("norm_chain", (void)0, norm_chain(x, m, 4096, 1024, out); consume(out, 4096 * 1024));
  free(x), free(m), free(out), free(om), free(acc), free(cnt);
  scale_workloads(argc, argv);
  return 0;
}
