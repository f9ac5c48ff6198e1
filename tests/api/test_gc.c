/* test_gc.c - reference cycles are collected: a host with a memory cap can
 * run cycle-making scripts forever, the memory comes back to where it was,
 * masq_close frees what is left, and freeing or printing a deep structure
 * works on a small thread stack. */
#include <pthread.h>

#include "check.h"

/* A state with [cap] bytes of memory, allocating through [c]. */
static masq_state *open_counted(counting *c, size_t cap) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = counting_alloc;
  cfg.alloc_ud = c;
  cfg.memory_limit = cap;
  return masq_open(&cfg);
}

/* A list that contains itself, each holding 8 KB, 10 000 times (80 MB)
 * under a 4 MB cap: only collecting lets every eval succeed. */
static void test_cycles_under_a_cap(void) {
  counting c = {0, 0};
  masq_state *M = open_counted(&c, (size_t)4 << 20);
  CHECK(M != NULL);
  int failures = 0;
  for (int i = 0; i < 10000; i++)
    if (eval(M, "l = [zeros(2000)]; append(l, l)") != MASQ_OK) failures++;
  CHECK(failures == 0);
  masq_close(M);
  CHECK(c.live == 0 && c.bytes == 0);
}

/* Each call makes a cycle and drops it: after every call the memory in use
 * is back at its baseline, to the byte. */
static void test_memory_returns_to_baseline(void) {
  counting c = {0, 0};
  masq_state *M = open_counted(&c, (size_t)8 << 20);
  CHECK_OK(M, eval(M, "fn cyc() {\n"
                      "  l = [zeros(1000), \"x\"]\n"
                      "  f = fn() = l\n"
                      "  append(l, l)\n"
                      "  append(l, f)\n"
                      "  return 0\n"
                      "}"));
  CHECK_OK(M, masq_call(M, "cyc", 0, NULL, NULL));
  size_t baseline = c.bytes;
  int drifted = 0, failures = 0;
  for (int i = 0; i < 10000; i++) {
    if (masq_call(M, "cyc", 0, NULL, NULL) != MASQ_OK) failures++;
    if (c.bytes != baseline) drifted++;
  }
  CHECK(failures == 0);
  CHECK(drifted == 0);
  masq_close(M);
}

/* A host that evaluates line after line keeps no memory for them: a line's
 * source text lives only as long as functions defined in it, and a failed
 * line leaves nothing either. */
static void test_evals_return_to_baseline(void) {
  counting c = {0, 0};
  masq_state *M = open_counted(&c, (size_t)8 << 20);
  size_t baseline = 0;
  int drifted = 0;
  for (int i = -1; i < 1000; i++) { /* round -1 sizes the error buffers */
    if (i == 0) baseline = c.bytes;
    CHECK_OK(M, eval(M, "x = 1"));
    CHECK_OK(M, eval(M, "x = x + 1  # a line long enough to notice if its text stayed"));
    CHECK(eval(M, "x = x + \"s\"") == MASQ_ERR_RUNTIME);
    CHECK(eval(M, "x = (") == MASQ_ERR_SYNTAX);
    if (i >= 0 && c.bytes != baseline) drifted++;
  }
  CHECK(drifted == 0);
  /* a function keeps its line, for the carets of errors raised in it */
  CHECK_OK(M, eval(M, "fn bad(v) = v + \"s\""));
  CHECK(eval(M, "bad(1)") == MASQ_ERR_RUNTIME);
  CHECK(strstr(masq_last_error(M)->rendered, "fn bad(v) = v + \"s\"") != NULL);
  masq_close(M);
  CHECK(c.live == 0 && c.bytes == 0);
}

/* Within one eval, with fewer new containers than a collection waits for,
 * hitting the cap collects and retries instead of failing. */
static void test_collects_at_the_cap(void) {
  counting c = {0, 0};
  masq_state *M = open_counted(&c, (size_t)2 << 20);
  CHECK_OK(M, eval(M, "for i in range(300) { l = [zeros(25000)]; append(l, l) }"));
  masq_close(M);
  CHECK(c.live == 0);
}

/* Cycles still alive at close (globals, closures, functions) are freed. */
static void test_close_frees_cycles(void) {
  counting c = {0, 0};
  masq_state *M = open_counted(&c, 0);
  CHECK_OK(M, eval(M, "l = [\"a\"]; append(l, l)\n"
                      "fn mk() { m = [1, \"b\"]; g = fn() = m; append(m, g); return g }\n"
                      "h = mk()\n"
                      "pair = [[], []]; append(pair[0], pair[1]); append(pair[1], pair[0])"));
  masq_close(M);
  CHECK(c.live == 0 && c.bytes == 0);
}

enum { SMALL_STACK = 256 * 1024 };

typedef struct deep_job {
  capture out;
  masq_status built, printed, freed, chained;
} deep_job;

/* On a 256 KiB stack: a 300 000-deep list is built, printed (to depth
 * 1000) and freed; a chain of a million closures is freed. */
static void *deep_work(void *arg) {
  deep_job *job = arg;
  masq_state *M = open_capturing(&job->out);
  if (!M) return NULL;
  job->built = eval(M, "d = []\nfor i in range(300000) { d = [d] }");
  job->printed = eval(M, "print(len(str(d)))");
  job->freed = eval(M, "d = 0");
  job->chained = eval(M, "fn chain(n) {\n"
                         "  f = fn() = 0\n"
                         "  for i in range(n) { g = f; f = fn() = g() }\n"
                         "  return f\n"
                         "}\n"
                         "c = chain(1000000)\n"
                         "c = 0");
  masq_close(M);
  return NULL;
}

static void test_deep_on_a_small_stack(void) {
  deep_job job;
  memset(&job, 0, sizeof job);
  job.built = job.printed = job.freed = job.chained = MASQ_ERR_USAGE;
  pthread_attr_t attr;
  pthread_t th;
  CHECK(pthread_attr_init(&attr) == 0);
  CHECK(pthread_attr_setstacksize(&attr, SMALL_STACK) == 0);
  CHECK(pthread_create(&th, &attr, deep_work, &job) == 0);
  pthread_join(th, NULL);
  pthread_attr_destroy(&attr);
  CHECK(job.built == MASQ_OK);
  CHECK(job.printed == MASQ_OK && strcmp(job.out.text, "2005\n") == 0);
  CHECK(job.freed == MASQ_OK);
  CHECK(job.chained == MASQ_OK);
}

/* Dicts are containers too: one holding itself (and a list holding it),
 * each with 8 KB, 10 000 times under a 4 MB cap; then a call that makes
 * such a cycle leaves the memory at its baseline. */
static void test_dict_cycles(void) {
  counting c = {0, 0};
  masq_state *M = open_counted(&c, (size_t)4 << 20);
  CHECK(M != NULL);
  int failures = 0;
  for (int i = 0; i < 10000; i++)
    if (eval(M, "d = {\"x\": zeros(2000)}; d[\"me\"] = d; d[\"l\"] = [d]") != MASQ_OK) failures++;
  CHECK(failures == 0);
  CHECK_OK(M, eval(M, "fn cyc() {\n"
                      "  d = {1: zeros(500), \"f\": fn() = d}\n"
                      "  d[\"self\"] = [d, {k: d for k in range(3)}]\n"
                      "  return 0\n"
                      "}"));
  CHECK_OK(M, masq_call(M, "cyc", 0, NULL, NULL));
  size_t baseline = c.bytes;
  int drifted = 0;
  for (int i = 0; i < 2000; i++) {
    if (masq_call(M, "cyc", 0, NULL, NULL) != MASQ_OK) failures++;
    if (c.bytes != baseline) drifted++;
  }
  CHECK(failures == 0);
  CHECK(drifted == 0);
  masq_close(M);
  CHECK(c.live == 0 && c.bytes == 0);
}

int main(void) {
  test_cycles_under_a_cap();
  test_dict_cycles();
  test_memory_returns_to_baseline();
  test_evals_return_to_baseline();
  test_collects_at_the_cap();
  test_close_frees_cycles();
  test_deep_on_a_small_stack();
  return report("gc");
}
