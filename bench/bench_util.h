/* bench_util.h - timing helpers shared by bench/masq_bench.c and
 * bench/baseline.c (header-only, static functions).
 *
 * Every figure is the MEDIAN of several timed repetitions after one untimed
 * warm-up run: the median shrugs off the odd repetition slowed by another
 * process on a shared machine. A workload runs at least BENCH_MIN_REPS
 * times and keeps repeating until BENCH_MIN_SECONDS have passed (at most
 * BENCH_MAX_REPS times), so fast workloads get many samples and slow ones
 * do not make `make bench` take forever. The environment variables
 * BENCH_REPS (a fixed repetition count) and BENCH_QUICK=1 (3 repetitions,
 * for a smoke test) override this.
 *
 * Output protocol, one line per figure, read by bench/run.sh:
 *   RESULT <impl> <workload> <median s|NA> <min s|NA> [note...]
 * (tab-separated). NA carries a short reason in the note. The minimum is
 * kept too: on a loaded machine noise only ever adds time, so the minimum
 * is the better estimate of the unloaded cost (run.sh BENCH_STAT=min). */
#ifndef MASQ_BENCH_UTIL_H
#define MASQ_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_MIN_REPS 5
#define BENCH_MAX_REPS 41
#define BENCH_MIN_SECONDS 0.4
#define BENCH_MAX_SAMPLES 64

/* BENCH_CLOCK=cpu times with the process's CPU time instead of the wall
 * clock: on a machine whose cores other processes keep busy, the time a
 * one-thread workload actually ran, which the wall clock buries under the
 * time it waited (not for the 2T/1T column: it adds the threads' times). */
static double bench_now(void) {
  struct timespec ts;
  const char *c = getenv("BENCH_CLOCK");
  clock_gettime(c && strcmp(c, "cpu") == 0 ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The repetition policy described above: min reps, min time, max reps. */
static int bench_fixed_reps(void) {
  const char *q = getenv("BENCH_QUICK");
  if (q && *q && strcmp(q, "0") != 0) return 3;
  const char *r = getenv("BENCH_REPS");
  if (r && *r) {
    int n = atoi(r);
    if (n < 1) n = 1;
    if (n > BENCH_MAX_SAMPLES) n = BENCH_MAX_SAMPLES;
    return n;
  }
  return 0;
}

/* ... with at least [min_reps] repetitions instead of BENCH_MIN_REPS */
static inline int bench_more_min(int done, double elapsed, int min_reps) {
  int fixed = bench_fixed_reps();
  if (fixed) return done < fixed;
  if (done < min_reps) return 1;
  return done < BENCH_MAX_REPS && elapsed < BENCH_MIN_SECONDS;
}

static inline int bench_more(int done, double elapsed) {
  return bench_more_min(done, elapsed, BENCH_MIN_REPS);
}

/* Prints the median and minimum of [n] samples (sorts [v]). */
static void bench_result(const char *impl, const char *workload, double *v, int n,
                         const char *note) {
  double med = bench_median(v, n); /* sorts */
  printf("RESULT\t%s\t%s\t%.9g\t%.9g\t%s\n", impl, workload, med, v[0], note ? note : "");
  fflush(stdout);
}

static void bench_na(const char *impl, const char *workload, const char *why) {
  printf("RESULT\t%s\t%s\tNA\tNA\t%s\n", impl, workload, why);
  fflush(stdout);
}

#endif
