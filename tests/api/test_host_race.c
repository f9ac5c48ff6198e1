/* test_host_race.c - a host thread keeps rewriting buffers that masq uses
 * in place (masq_tensor_wrap) while two states, each on its own thread and
 * with its own worker threads, compute with them: what a Python thread
 * may do to a numpy array while another evaluates with the GIL released.
 *
 * The values masq computes from memory that changes under it may be any
 * (docs/RELIABILITY.md, "Memory a host shares"); what must hold is that
 * nothing reads or writes outside its memory (ASan), masq's own state has
 * no data race (TSan: make tsan), every call ends with a documented
 * status (an index the writer made out of range is a runtime error), and
 * both states still work afterwards. The writer covers every kind of
 * position masq takes from data: index, gather and scatter positions,
 * bool masks (counted, then used), lengths, dims lists, sparse indices,
 * attention masks, and bool bytes other than 0 and 1.
 *
 * ThreadSanitizer reports the writer's stores against masq's reads of the
 * same bytes: those are the host's races, inherent to sharing memory
 * without a copy, and are suppressed by the writer's function name only
 * (__tsan_default_suppressions below); a race between masq's own threads
 * never has the writer on its stacks and is still reported. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "check.h"

/* The writer's races on the host's own buffers, and nothing else: TSan
 * matches a pattern against the functions on both stacks of a report and
 * against the name of the global the race is on. The writer's stack may be
 * lost ("failed to restore the stack"), but the buffers are one global,
 * which masq never writes: a race on it is always the writer's. */
__attribute__((visibility("default"))) const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void) {
  return "race:host_writer_main\nrace:host_shared_buffers\n";
}

enum { N = 64, BIG = 1 << 20, ROWS = 6, ROUNDS = 8 };

/* The host's memory, shared by both states. */
typedef struct host {
  int64_t ix[N];       /* positions into x: the writer puts any int64 there */
  int64_t ix2[2][N];   /* COO indices of an (N, N) matrix */
  int64_t crow[N + 1]; /* CSR row pointers, and col indices */
  int64_t col[N];
  int64_t lens[ROWS];  /* lengths for length_mask */
  int64_t perm[3];     /* a dims list */
  int64_t sizes[3];    /* split sizes */
  uint8_t m[N];        /* a bool mask: any byte */
  uint8_t am[N][N];    /* an attention mask */
  float x[N];
  uint8_t valid[N];
  float big[BIG];
  uint8_t bigvalid[BIG];
} host;

static host host_shared_buffers; /* zero-initialized, then set up by init_host */
static atomic_int stop;
static pthread_t writer;
static int writer_started;
static pthread_barrier_t ready; /* both states wrapped and ran every script once */

static void init_host(host *h) {
  for (int i = 0; i < N; i++) {
    h->ix[i] = i;
    h->ix2[0][i] = h->ix2[1][i] = i;
    h->crow[i] = i;
    h->col[i] = i;
    h->m[i] = (uint8_t)(i & 1);
    h->x[i] = (float)i;
    h->valid[i] = (uint8_t)(i % 3 != 0);
    for (int j = 0; j < N; j++) h->am[i][j] = (uint8_t)(j <= i);
  }
  h->crow[N] = N;
  for (int r = 0; r < ROWS; r++) h->lens[r] = r;
  h->perm[0] = 2, h->perm[1] = 0, h->perm[2] = 1;
  h->sizes[0] = 1, h->sizes[1] = 1, h->sizes[2] = 2;
  for (int i = 0; i < BIG; i++) h->big[i] = 1, h->bigvalid[i] = 1;
}

static unsigned next_random(unsigned *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* An int64 a careless host may write: in range, just out, negative, huge. */
static int64_t any_position(unsigned r) {
  switch (r % 8) {
  case 0: return -1;
  case 1: return N;
  case 2: return INT64_MAX;
  case 3: return INT64_MIN;
  case 4: return 1000000;
  default: return (int64_t)(r >> 8) % N;
  }
}

/* The host thread: rewrites the buffers, a few bytes at a time, until
 * told to stop. Plain stores, as a host's own code makes them. */
static void *host_writer_main(void *arg) {
  host *h = arg;
  unsigned s = 2463534242u;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    unsigned r = next_random(&s), k = (r >> 4) % N;
    switch (r % 12) {
    case 0: h->ix[k] = any_position(next_random(&s)); break;
    case 1: h->ix2[r >> 20 & 1][k] = any_position(next_random(&s)); break;
    case 2: h->crow[k] = any_position(next_random(&s)); break;
    case 3: h->col[k] = any_position(next_random(&s)); break;
    case 4: h->lens[k % ROWS] = any_position(next_random(&s)); break;
    case 5: h->perm[k % 3] = (int64_t)(next_random(&s) % 5) - 1; break;
    case 6: h->sizes[k % 3] = any_position(next_random(&s)); break;
    case 7: h->m[k] = (uint8_t)(r >> 24); break; /* 0, 1, 2, 255, ... */
    case 8: h->am[k][(r >> 12) % N] = (uint8_t)(r >> 24 & 3); break;
    case 9: h->valid[k] = (uint8_t)(r >> 24 & 3); break;
    case 10: h->x[k] = (float)(int)(r >> 8) / 7.0f; break;
    default: { /* its first entries only: TSan keeps every racy address it saw */
      size_t at = (size_t)next_random(&s) % 1024;
      h->bigvalid[at] = (uint8_t)(r >> 24 & 1);
      h->big[at] = (float)(r & 255);
    }
    }
  }
  return NULL;
}

static int start_host_writer(pthread_t *th) {
  return pthread_create(th, NULL, host_writer_main, &host_shared_buffers);
}

/* What each state runs, one eval each, again and again. Every script may
 * fail with a runtime error (the writer makes positions out of range) or
 * succeed with any value; nothing else. */
static const char *const scripts[] = {
    "y = x[m]",
    "y = xm[m]",
    "y = x[ix]",
    "y = x[m, none]",
    "y = gather(x, 0, ix)",
    "y = index_select(x, 0, ix)",
    "y = scatter(x, 0, ix, x)",
    "y = scatter_add(x, 0, ix, xm)",
    "y = one_hot(ix, 64)",
    "y = one_hot(ix % 64)",
    "y = length_mask(lens)",
    "y = length_mask(lens, 5)",
    "y = permute(z, perm)",
    "y = flip(z, perm)",
    "y = split(arange(4), sizes)",
    "y = reshape(arange(2), sizes)",
    "y = zeros(sizes)",
    "s = sparse_coo(ix2, x, size=[64, 64])\ny = to_dense(s)\ny = sum(s, 1)",
    "s = sparse_coo(ix2, x)\ny = softmax(masked(s), 0)",
    "s = sparse_csr(crow, col, x, size=[64, 64])\ny = sum(to_dense(s)) + sum(s @ ones(64, 2))",
    "k = sparse_coo(ix2 % 64, m, size=[64, 64])\n"
    "y = count(masked(sparse_coo(ix2 % 64, x, size=[64, 64]), k))",
    "y = to_sparse_coo(xm)\ny = to_dense(to_sparse_csr(masked(q, am)))",
    "y = softmax(masked(q @ transpose(q, 0, 1) / 8, am), -1) @ q",
    "w = requires_grad(q)\n"
    "backward(sum(softmax(as_masked(w @ transpose(q, 0, 1) / 8, am), -1) @ q))",
    "w = requires_grad(x)\nbackward(sum(w[m] * 2) + sum(gather(w, 0, ix % 64)))",
    "y = nll_loss(log_softmax(q, 1), ix)",
    "y = [sum(xm), count(xm), mean(xm), amax(xm), median(xm), sort(xm), topk(xm, 3)]",
    "y = [cumsum(xm, 0), softmax(xm, 0), where(m, x, 0.0), to_tensor(xm, 0), get_mask(xm) & m]",
    "y = [sum(bm), count(bm), mean(bm), softmax(bm, 0)[0], where(bigvalid, big, 0.0)[0]]",
    "y = [sum(m), count(m), any(m), all(m), sum(m * 1), sum(to(m, int64))]",
    "y = format(\"{}\", xm) + str(summary(xm))",
    "print(xm, m, describe(xm))\nhist(xm)\nheatmap(masked(q, am))",
};
enum { NSCRIPTS = sizeof scripts / sizeof *scripts };

static void wrap(masq_state *M, const char *name, masq_dtype dt, int ndim, const int64_t *shape,
                 const void *data, const uint8_t *valid, int *ok) {
  masq_tensor_desc d = {.dtype = dt, .ndim = ndim, .shape = shape, .data = data, .valid = valid};
  masq_tensor *t = NULL;
  *ok &= masq_tensor_wrap(M, &d, &t) == MASQ_OK && masq_set_global(M, name, t) == MASQ_OK &&
         masq_tensor_release(M, t) == MASQ_OK;
}

/* One state: wraps the host's buffers, then runs the scripts. */
typedef struct runner {
  int starts_writer; /* the one that starts the writer once both are ready */
  int ok;           /* every wrap worked, every status was an allowed one */
  long evals, errors;
  char problem[512];
} runner;

static void *run_state(void *arg) {
  runner *w = arg;
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.memory_limit = (size_t)256 << 20;
  cfg.write = capture_write; /* into a buffer nobody reads */
  capture sink;
  cfg.write_ud = &sink;
  sink.len = 0;
  masq_state *M = masq_open(&cfg);
  w->ok = M != NULL;
  if (!M) {
    pthread_barrier_wait(&ready);
    return NULL;
  }
  int64_t n[1] = {N}, n1[1] = {N + 1}, nn[2] = {N, N}, two[2] = {2, N}, rows[1] = {ROWS};
  int64_t three[1] = {3}, big[1] = {BIG};
  wrap(M, "ix", MASQ_INT64, 1, n, host_shared_buffers.ix, NULL, &w->ok);
  wrap(M, "ix2", MASQ_INT64, 2, two, host_shared_buffers.ix2, NULL, &w->ok);
  wrap(M, "crow", MASQ_INT64, 1, n1, host_shared_buffers.crow, NULL, &w->ok);
  wrap(M, "col", MASQ_INT64, 1, n, host_shared_buffers.col, NULL, &w->ok);
  wrap(M, "lens", MASQ_INT64, 1, rows, host_shared_buffers.lens, NULL, &w->ok);
  wrap(M, "perm", MASQ_INT64, 1, three, host_shared_buffers.perm, NULL, &w->ok);
  wrap(M, "sizes", MASQ_INT64, 1, three, host_shared_buffers.sizes, NULL, &w->ok);
  wrap(M, "m", MASQ_BOOL, 1, n, host_shared_buffers.m, NULL, &w->ok);
  wrap(M, "am", MASQ_BOOL, 2, nn, host_shared_buffers.am, NULL, &w->ok);
  wrap(M, "x", MASQ_FLOAT32, 1, n, host_shared_buffers.x, NULL, &w->ok);
  wrap(M, "xm", MASQ_FLOAT32, 1, n, host_shared_buffers.x, host_shared_buffers.valid, &w->ok);
  wrap(M, "bm", MASQ_FLOAT32, 1, big, host_shared_buffers.big, host_shared_buffers.bigvalid, &w->ok);
  wrap(M, "big", MASQ_FLOAT32, 1, big, host_shared_buffers.big, NULL, &w->ok);
  wrap(M, "bigvalid", MASQ_BOOL, 1, big, host_shared_buffers.bigvalid, NULL, &w->ok);
  if (w->ok && eval(M, "set_num_threads(3)\nz = zeros(2, 3, 4)\nq = reshape(arange(4096.0) / 4096, [64, 64])") != MASQ_OK)
    w->ok = 0;
  /* before the writer starts, every script works */
  for (int i = 0; w->ok && i < NSCRIPTS; i++)
    if (eval(M, scripts[i]) != MASQ_OK) {
      snprintf(w->problem, sizeof w->problem, "<%s> failed on quiet buffers: %s", scripts[i],
               masq_last_error(M)->rendered);
      w->ok = 0;
    }
  pthread_barrier_wait(&ready);
  if (w->starts_writer) writer_started = start_host_writer(&writer) == 0;
  for (int round = 0; w->ok && round < ROUNDS; round++)
    for (int i = 0; i < NSCRIPTS; i++) {
      sink.len = 0;
      masq_status st = eval(M, scripts[i]);
      w->evals++;
      if (st == MASQ_OK) continue;
      w->errors++;
      /* out of range (runtime), or a one_hot of 10^6 classes (memory) */
      if (st == MASQ_ERR_RUNTIME || st == MASQ_ERR_MEMORY) continue;
      snprintf(w->problem, sizeof w->problem, "<%s> gave status %d: %s", scripts[i], (int)st,
               masq_last_error(M)->rendered);
      w->ok = 0;
    }
  double two_ = 0;
  if (w->ok && (eval(M, "r = 1 + 1") != MASQ_OK || masq_get_number(M, "r", &two_) != MASQ_OK ||
                two_ != 2))
    w->ok = 0;
  masq_close(M);
  return NULL;
}

static void test_two_states_and_a_writer(void) {
  init_host(&host_shared_buffers);
  pthread_t other;
  runner a = {.starts_writer = 1}, b = {0};
  pthread_barrier_init(&ready, NULL, 2);
  CHECK(pthread_create(&other, NULL, run_state, &b) == 0);
  run_state(&a);
  pthread_join(other, NULL);
  atomic_store(&stop, 1);
  CHECK(writer_started);
  if (writer_started) pthread_join(writer, NULL);
  pthread_barrier_destroy(&ready);
  CHECK(a.ok && b.ok);
  CHECK(a.evals == ROUNDS * NSCRIPTS && b.evals == ROUNDS * NSCRIPTS);
  if (a.problem[0]) fprintf(stderr, "state a: %s\n", a.problem);
  if (b.problem[0]) fprintf(stderr, "state b: %s\n", b.problem);
}

int main(void) {
  test_two_states_and_a_writer();
  return report("test_host_race");
}
