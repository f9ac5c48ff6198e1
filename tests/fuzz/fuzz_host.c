/* fuzz_host - a host that shares its buffers with masq (masq_tensor_wrap)
 * and rewrites them while masq uses them: between two calls, and in the
 * middle of one, from a host function the script calls (hmut()), all
 * driven by the input bytes, so an input replays exactly.
 *
 * The buffers hold what masq takes positions, lengths and counts from:
 * indices (1-D, 2-D COO, CSR parts), bool masks (as data and as the
 * validity of a float buffer), lengths and dims lists, an attention mask;
 * the writes put there what a careless or hostile host would (indices out
 * of range, negative, INT64_MAX; bool bytes 2 and 255; NaN). The scripts
 * build things from the buffers in one call (sparse tensors, autograd
 * graphs, masked views) and use them in the next, after the host wrote.
 *
 * Checks: every status is OK, a runtime error (an index out of range is
 * one), the memory limit or the interrupt budget; nothing reads or writes
 * outside its memory (ASan), every tensor masq hands back can be read
 * whole within its memory, and the state still computes 1 + 1.
 *
 * FUZZ_HOST_THREAD=1 adds a thread that keeps rewriting the buffers during
 * every call (not reproducible: for a long run, not for libFuzzer's
 * minimizing); tests/api/test_host_race.c does the same deterministic
 * amount of work under ASan and TSan in make test. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "fuzz.h"


/* The host's memory (one set, reset for each input). */
enum { N = 8 };
typedef struct host {
  int64_t ix2[2][N]; /* "ix2"; its first row is also "iv", its second "col" */
  int64_t crow[N + 1];
  int64_t lens[4];
  int64_t dims[3];
  uint8_t m[N];  /* "m", and the validity of "xm" */
  uint8_t am[N][N];
  float x[N]; /* "x" and "xm" */
  float q[N][N];
} host;

/* One wrapped view of the host's memory: a global of the state. */
typedef struct buffer {
  const char *name;
  masq_dtype dtype;
  int ndim;
  int64_t shape[2];
  size_t offset, bytes; /* where in host, and how many bytes it covers */
  int valid;            /* "xm": with m as its validity */
} buffer;

#define AT(f) offsetof(host, f)
static const buffer buffers[] = {
    {"ix2", MASQ_INT64, 2, {2, N}, AT(ix2), sizeof(int64_t) * 2 * N, 0},
    {"iv", MASQ_INT64, 1, {N}, AT(ix2), sizeof(int64_t) * N, 0},
    {"col", MASQ_INT64, 1, {N}, AT(ix2) + sizeof(int64_t) * N, sizeof(int64_t) * N, 0},
    {"crow", MASQ_INT64, 1, {N + 1}, AT(crow), sizeof(int64_t) * (N + 1), 0},
    {"lens", MASQ_INT64, 1, {4}, AT(lens), sizeof(int64_t) * 4, 0},
    {"dims", MASQ_INT64, 1, {3}, AT(dims), sizeof(int64_t) * 3, 0},
    {"m", MASQ_BOOL, 1, {N}, AT(m), N, 0},
    {"am", MASQ_BOOL, 2, {N, N}, AT(am), N * N, 0},
    {"x", MASQ_FLOAT32, 1, {N}, AT(x), sizeof(float) * N, 0},
    {"xm", MASQ_FLOAT32, 1, {N}, AT(x), sizeof(float) * N, 1},
    {"q", MASQ_FLOAT32, 2, {N, N}, AT(q), sizeof(float) * N * N, 0},
};
#define NBUFFERS (int)(sizeof buffers / sizeof *buffers)

typedef struct ctx {
  masq_state *M;
  fuzz_input in;
  fuzz_budget budget;
  host *h;
} ctx;

static void reset_host(host *h) {
  memset(h, 0, sizeof *h);
  for (int i = 0; i < N; i++) {
    h->ix2[0][i] = i;
    h->ix2[1][i] = (i * 3) % N;
    h->crow[i] = i;
    h->m[i] = (uint8_t)(i % 3 != 0);
    h->x[i] = (float)i / 2;
    for (int j = 0; j < N; j++) {
      h->am[i][j] = (uint8_t)(j <= i);
      h->q[i][j] = (float)((i * N + j) % 7) / 7;
    }
  }
  h->crow[N] = N;
  for (int i = 0; i < 4; i++) h->lens[i] = i + 1;
  h->dims[0] = 2, h->dims[1] = 0, h->dims[2] = 1;
}

/* What a careless or hostile host writes, by the type of the element. */
static void write_element(ctx *c, const buffer *b, size_t at, unsigned kind) {
  char *p = (char *)c->h + b->offset;
  switch (b->dtype) {
  case MASQ_INT64: {
    static const int64_t ints[] = {-1, 0, 1, 2, 3, 7, 8, 9, -8, 1000000, INT64_MAX, INT64_MIN};
    int64_t v = ints[kind % (sizeof ints / sizeof *ints)];
    memcpy(p + at * 8, &v, 8);
    break;
  }
  case MASQ_BOOL: {
    static const uint8_t bools[] = {0, 1, 2, 255, 128, 1, 0};
    p[at] = (char)bools[kind % sizeof bools];
    break;
  }
  default: {
    static const float floats[] = {0.0f, 1.0f, -1.0f, -0.0f, 1e30f, 0.5f};
    float v = kind % 8 == 6 ? NAN : kind % 8 == 7 ? INFINITY : floats[kind % 8 % 6];
    memcpy(p + at * 4, &v, 4);
  }
  }
}

/* One write the input chooses: a buffer, an element, a value. */
static void mutate(ctx *c) {
  const buffer *b = &buffers[fuzz_byte(&c->in) % NBUFFERS];
  size_t size = b->dtype == MASQ_BOOL ? 1 : b->dtype == MASQ_INT64 ? 8 : 4;
  size_t at = fuzz_byte(&c->in) % (b->bytes / size);
  write_element(c, b, at, fuzz_byte(&c->in));
}

/* hmut(n=1): the host writes n times in the middle of a call. */
static masq_status host_mutate(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                               masq_tensor **result) {
  ctx *c = ud;
  double n = 1;
  if (argc > 0 && argv[0] && masq_tensor_item(M, argv[0], &n) != MASQ_OK) n = 1;
  for (int i = 0; i < (n > 0 && n < 16 ? (int)n : 1); i++) mutate(c);
  return masq_tensor_scalar(M, 0, result);
}

/* Wraps buffer [b] as its global ([copy]: masq_tensor_new, global "cp"). */
static void bind(ctx *c, const buffer *b, int copy) {
  masq_tensor_desc d = {.dtype = b->dtype, .ndim = b->ndim, .shape = b->shape,
                        .data = (const char *)c->h + b->offset};
  if (b->valid) d.valid = c->h->m;
  masq_tensor *t = NULL;
  masq_status st = copy ? masq_tensor_new(c->M, &d, &t) : masq_tensor_wrap(c->M, &d, &t);
  fuzz_check_status(c->M, st, copy ? "masq_tensor_new" : "masq_tensor_wrap", 0);
  if (st != MASQ_OK && st != MASQ_ERR_MEMORY && st != MASQ_ERR_INTERRUPTED)
    fuzz_fail("a valid buffer was refused", c->M);
  if (!t) return;
  st = masq_set_global(c->M, copy ? "cp" : b->name, t);
  fuzz_check_status(c->M, st, "masq_set_global", 0);
  masq_tensor_release(c->M, t);
}

static const char *const snippets[] = {
    "s = sparse_coo(ix2, x, size=[8, 8])",
    "s = sparse_coo(ix2, xm)",
    "c = sparse_csr(crow, col, x, size=[8, 8])",
    "k = sparse_coo(ix2, m, size=[8, 8])",
    "d = to_dense(s)",
    "d = to_dense(c)",
    "d = [s @ q, c @ q, sum(s, 0), sum(c, 1), to_dense(to_sparse_csr(s)), to_sparse_coo(c)]",
    "d = softmax(masked(s), 1)",
    "d = count(masked(s, k))",
    "d = to_dense(masked(s, k)) + to_dense(k)",
    "y = x[m]",
    "y = xm[m]",
    "y = q[am]",
    "y = x[iv]",
    "y = q[iv, col]",
    "y = [gather(x, 0, iv), index_select(x, 0, iv), scatter(x, 0, iv, x)]",
    "y = scatter_add(xm, 0, iv, x)",
    "y = one_hot(iv, 8)",
    "y = one_hot(iv)",
    "y = [length_mask(lens), length_mask(lens, 4)]",
    "y = [permute(z, dims), flip(z, dims), sum(z, dims), zeros(dims)]",
    "y = [split(arange(10), lens), reshape(arange(6), dims)]",
    "w = requires_grad(x)\nl = sum(w[m] * 2) + sum(gather(w, 0, iv)) + sum(index_select(w, 0, iv))",
    "w = requires_grad(x)\nl = sum(scatter(w, 0, iv, x)) + sum(scatter_add(w, 0, iv, x))",
    "a = requires_grad(q)\nl = sum(softmax(as_masked(a @ transpose(q, 0, 1) / 4, am), -1) @ q)",
    "w = requires_grad(x)\nl = sum(to_dense(sparse_coo(ix2, w, size=[8, 8])))",
    "backward(l)",
    "g = [grad_of(w), grad_of(a)]",
    "y = softmax(masked(q @ transpose(q, 0, 1) / 4, am), -1) @ q",
    "y = nll_loss(log_softmax(q, 1), iv) + cross_entropy(q, iv)",
    "y = [sum(xm), count(xm), mean(xm), amax(xm), median(xm), sort(xm), topk(xm, 2), cumsum(xm, 0)]",
    "y = [sum(m), count(m), any(m), mean(to(m, float32)), ~m, m & m, m == true, where(m, x, 0.0)]",
    "y = [to_sparse_coo(xm), to_sparse_coo(masked(q, am)), sum(cp), count(cp)]",
    "print(xm, m, summary(xm))\ny = describe(masked(q, am))",
    "s = sparse_coo(ix2, x, size=[8, 8])\nhmut(3)\nd = to_dense(s)",
    "c = sparse_csr(crow, col, x, size=[8, 8])\nhmut(3)\nd = c @ q",
    "w = requires_grad(x)\nl = sum(w[m])\nhmut(2)\nbackward(l)\ny = x[m]",
    "w = requires_grad(x)\nl = sum(gather(w, 0, iv))\nhmut(2)\nbackward(l)",
    "y = masked(q, am)\nhmut(4)\nz2 = [count(y), sum(y, 1), softmax(y, 1)]",
};
#define NSNIPPETS (int)(sizeof snippets / sizeof *snippets)

/* FUZZ_HOST_VERBOSE=1: each call's source and status, to see what an
 * input does (on replay). */
static int verbose = -1;

static void eval_src(ctx *c, const char *src, size_t len) {
  c->budget.polls = 0;
  masq_status st = masq_eval(c->M, src, len, "host.masq", 0);
  if (verbose) {
    const masq_error *e = masq_last_error(c->M);
    fprintf(stderr, "<%.*s>: %d %s\n", (int)len, src, (int)st, st ? e->message : "");
  }
  fuzz_check_status(c->M, st, "masq_eval", 1);
  /* a script may also fail at a syntax error (the input's own source) */
  if (st == MASQ_ERR_USAGE) fuzz_fail("masq_eval: a usage error from a script", c->M);
}

/* Reads every element of global [name] (if a tensor) through the layout
 * masq reports, so that ASan sees a pointer outside its memory. */
static void read_back(ctx *c, const char *name) {
  masq_tensor *t = NULL;
  if (masq_get_global(c->M, name, &t) != MASQ_OK || !t) return;
  masq_tensor_desc d;
  if (masq_tensor_info(c->M, t, &d) == MASQ_OK) {
    static const size_t sizes[] = {1, 8, 4, 8, 1, 2, 4, 1, 2, 2};
    size_t es = (unsigned)d.dtype <= MASQ_BFLOAT16 ? sizes[d.dtype] : 1;
    int64_t n = 1, idx[MASQ_MAX_DIMS] = {0};
    for (int i = 0; i < d.ndim; i++) n *= d.shape[i];
    volatile uint8_t sink = 0;
    for (int64_t k = 0; k < n && k < 100000; k++) {
      int64_t off = 0, voff = 0;
      for (int i = 0; i < d.ndim; i++) {
        off += idx[i] * d.strides[i];
        if (d.valid) voff += idx[i] * d.valid_strides[i];
      }
      for (size_t b = 0; b < es; b++) sink ^= ((const uint8_t *)d.data)[off * (int64_t)es + (int64_t)b];
      if (d.valid) sink ^= d.valid[voff];
      for (int i = d.ndim - 1; i >= 0 && ++idx[i] == d.shape[i]; i--) idx[i] = 0;
    }
    (void)sink;
  }
  masq_tensor_release(c->M, t);
}

static void run_ops(ctx *c) {
  static const char *const results[] = {"d", "y", "g", "s", "c", "k", "z2", "cp"};
  while (c->in.n) {
    unsigned op = fuzz_byte(&c->in);
    switch (op % 8) {
    case 0: case 1: {
      const char *src = snippets[fuzz_byte(&c->in) % NSNIPPETS];
      eval_src(c, src, strlen(src));
      break;
    }
    case 2: mutate(c); break;
    case 3:
      for (unsigned k = fuzz_byte(&c->in) % 16; k > 0; k--) mutate(c);
      break;
    case 4: bind(c, &buffers[fuzz_byte(&c->in) % NBUFFERS], 0); break;
    case 5: bind(c, &buffers[fuzz_byte(&c->in) % NBUFFERS], 1); break;
    case 6: read_back(c, results[fuzz_byte(&c->in) % 8]); break;
    default: { /* source from the input itself */
      size_t len = fuzz_byte(&c->in) % 64;
      if (len > c->in.n) len = c->in.n;
      const char *src = (const char *)c->in.p;
      c->in.p += len;
      c->in.n -= len;
      eval_src(c, src, len);
    }
    }
  }
}

/* FUZZ_HOST_THREAD=1: a thread rewriting the buffers during the calls. */
static atomic_int writer_stop;
static void *host_writer(void *arg) {
  host *h = arg;
  unsigned s = 88172645u;
  while (!atomic_load_explicit(&writer_stop, memory_order_relaxed)) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    ((uint8_t *)h)[s % sizeof *h] = (uint8_t)(s >> 24);
  }
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static host h;
  if (verbose < 0) {
    const char *v = getenv("FUZZ_HOST_VERBOSE");
    verbose = v && *v && strcmp(v, "0") != 0;
  }
  ctx c;
  memset(&c, 0, sizeof c);
  c.in = (fuzz_input){data, size};
  c.h = &h;
  reset_host(&h);
  c.M = fuzz_open(&c.budget, MASQ_LIB_DEFAULT);
  masq_status st = masq_register(c.M, "hmut(n=1)", host_mutate, &c, NULL);
  if (st != MASQ_OK) fuzz_fail("masq_register", c.M);
  for (int i = 0; i < NBUFFERS; i++) bind(&c, &buffers[i], 0);
  static const char setup[] = "z = zeros(2, 3, 4)\ncp = x\nl = sum(x)\nw = x\na = q\n"
                              "s = sparse_coo(ix2, x, size=[8, 8])\n"
                              "c = sparse_csr(crow, col, x, size=[8, 8])\n"
                              "k = sparse_coo(ix2, m, size=[8, 8])";
  eval_src(&c, setup, sizeof setup - 1);
  const char *e = getenv("FUZZ_HOST_THREAD");
  pthread_t writer;
  int threaded = e && *e && strcmp(e, "0") != 0;
  atomic_store(&writer_stop, 0);
  if (threaded && pthread_create(&writer, NULL, host_writer, &h) != 0) threaded = 0;
  run_ops(&c);
  if (threaded) {
    atomic_store(&writer_stop, 1);
    pthread_join(writer, NULL);
  }
  if (!fuzz_state_works(c.M, &c.budget)) fuzz_fail("the state is out of memory at the end", c.M);
  masq_close(c.M);
  return 0;
}
