/* parallel.c - a thread per task for large kernels (see parallel.h). */
#include "parallel.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 64

int mq_default_threads(void) {
  const char *e = getenv("MASQ_NUM_THREADS");
  if (e && *e) {
    char *end;
    long n = strtol(e, &end, 10);
    if (*end == 0 && n >= 1) return n > MAX_THREADS ? MAX_THREADS : (int)n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

int mq_threads_for(const mq_state *S, int64_t work) {
  int n = S->nthreads;
  if (n <= 1 || work < MQ_PAR_MIN_ELEMS) return 1;
  /* at least MQ_PAR_MIN_ELEMS / 2 elements a thread */
  int64_t most = work / (MQ_PAR_MIN_ELEMS / 2);
  return most < n ? (int)most : n;
}

typedef struct job {
  mq_task_fn task;
  void *ctx;
  int i, n;
} job;

static void *run_job(void *p) {
  job *j = p;
  j->task(j->ctx, j->i, j->n);
  return NULL;
}

void mq_parallel(mq_state *S, int n, mq_task_fn task, void *ctx) {
  (void)S;
  if (n > MAX_THREADS) n = MAX_THREADS;
  if (n <= 1) {
    task(ctx, 0, 1);
    return;
  }
  pthread_t th[MAX_THREADS];
  job jobs[MAX_THREADS];
  bool started[MAX_THREADS];
  for (int i = 1; i < n; i++) {
    jobs[i] = (job){task, ctx, i, n};
    started[i] = pthread_create(&th[i], NULL, run_job, &jobs[i]) == 0;
  }
  task(ctx, 0, n);
  for (int i = 1; i < n; i++) {
    if (started[i]) pthread_join(th[i], NULL);
    else task(ctx, i, n); /* no thread: do its part here */
  }
}
