/* test_alloc.c - the allocator contract of masq.h: every free and realloc
 * passes the exact size of the block it was given, nothing is freed twice
 * or without having been allocated, and masq_close gives back every block.
 * A tracking allocator records each live block with its size and checks
 * each call against the record while a broad workload runs. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "check.h"

#define SLOTS ((size_t)1 << 20) /* open addressing: far more than live blocks */
#define TOMBSTONE ((void *)1)

typedef struct block {
  void *ptr;
  size_t size;
} block;

typedef struct tracker {
  block *table;
  size_t live;
  long fail_in; /* > 0: the allocation this many calls from now fails */
  bool fail_again; /* the next growing request fails too */
  int wrong_size, unknown, reported;
} tracker;

static size_t slot_of(const void *p) {
  uintptr_t h = (uintptr_t)p;
  h ^= h >> 17;
  h *= 0x9e3779b97f4a7c15u;
  return (size_t)(h >> 7) & (SLOTS - 1);
}

static block *find(tracker *t, const void *p) {
  for (size_t i = slot_of(p), n = 0; n < SLOTS; i = (i + 1) & (SLOTS - 1), n++) {
    if (t->table[i].ptr == p) return &t->table[i];
    if (!t->table[i].ptr) return NULL;
  }
  return NULL;
}

static void insert(tracker *t, void *p, size_t size) {
  for (size_t i = slot_of(p);; i = (i + 1) & (SLOTS - 1))
    if (!t->table[i].ptr || t->table[i].ptr == TOMBSTONE) {
      t->table[i] = (block){p, size};
      t->live++;
      return;
    }
}

/* Checks that [p] is live with [osize] bytes and forgets it. */
static void forget(tracker *t, void *p, size_t osize) {
  block *b = find(t, p);
  if (!b) {
    if (t->reported++ < 5) fprintf(stderr, "test_alloc: %p freed but not live\n", p);
    t->unknown++;
    return;
  }
  if (b->size != osize) {
    if (t->reported++ < 5)
      fprintf(stderr, "test_alloc: block of %zu bytes released as %zu\n", b->size, osize);
    t->wrong_size++;
  }
  b->ptr = TOMBSTONE;
  t->live--;
}

static void *tracking_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  tracker *t = ud;
  if (ptr) forget(t, ptr, osize);
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  /* The chosen request fails, and so does the one after it: the library
   * retries a failed request once after collecting cycles. */
  if (t->fail_in > 0 && --t->fail_in == 0 && nsize > osize) {
    t->fail_again = true;
    if (ptr) insert(t, ptr, osize); /* a failed resize leaves the block as it was */
    return NULL;
  }
  if (t->fail_again && nsize > osize) {
    t->fail_again = false;
    if (ptr) insert(t, ptr, osize);
    return NULL;
  }
  void *q = realloc(ptr, nsize);
  if (q) insert(t, q, nsize);
  else if (ptr) insert(t, ptr, osize); /* realloc failed: the old block lives on */
  return q;
}

static void discard(void *ud, const char *s, size_t n) {
  (void)ud, (void)s, (void)n;
}

static masq_status twice(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                         masq_tensor **result) {
  return masq_call(M, "double_it", argc, argv, result);
}

static const char workload[] =
    "x = masked(arange(6.0), arange(6) > 1, requires_grad=true)\n"
    "y = sum(x * x)\n"
    "backward(y)\n"
    "g = x.grad\n"
    "fn make_adder(k, scale=2) {\n"
    "  fn adder(v) = (v + k) * scale\n"
    "  return adder\n"
    "}\n"
    "fn double_it(t) = t * 2\n"
    "a = make_adder(3)(ones(4))\n"
    "h = host_twice(arange(3.0))\n"
    "l = []\n"
    "for i in range(50) { append(l, zeros(i)) }\n";

/* Fails the k-th allocation of compiling and running a script with nested
 * functions and parameters, for every k until it succeeds: the blocks freed
 * on the way out must still come back with their exact sizes, and all. */
static void test_failing_allocations(tracker *t) {
  static const char src[] =
      "fn outer(a, b=1, c=2) {\n"
      "  fn inner(x) = x + a + b + c\n"
      "  l = []\n"
      "  for i in range(40) { append(l, inner(i)) }\n"
      "  return l\n"
      "}\n"
      "y = outer(ones(3))\n";
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = tracking_alloc;
  cfg.alloc_ud = t;
  cfg.write = discard;
  int failures = 0;
  for (long k = 1; k < 100000; k++) {
    masq_state *M = masq_open(&cfg);
    if (!M) break;
    t->fail_in = k;
    masq_status st = eval(M, src);
    t->fail_in = 0;
    t->fail_again = false;
    if (st != MASQ_OK) failures++;
    if (st != MASQ_OK && st != MASQ_ERR_MEMORY) {
      fprintf(stderr, "test_alloc: failing allocation %ld gave status %d: %s", k, (int)st,
              masq_last_error(M)->rendered);
      CHECK(st == MASQ_ERR_MEMORY);
    }
    masq_close(M);
    if (t->live || st == MASQ_OK) break;
  }
  CHECK(failures > 10);
  CHECK(t->live == 0);
}

int main(void) {
  tracker t = {.table = calloc(SLOTS, sizeof(block))};
  if (!t.table) return 1;
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = tracking_alloc;
  cfg.alloc_ud = &t;
  cfg.libs = MASQ_LIB_ALL;
  cfg.write = discard;
  masq_state *M = masq_open(&cfg);
  CHECK(M != NULL);

  CHECK_OK(M, masq_eval_file(M, "examples/tour.masq"));
  CHECK_OK(M, masq_register(M, "host_twice(t)", twice, NULL, "calls double_it"));
  CHECK_OK(M, eval(M, workload));
  char dir[] = "/tmp/masq_alloc_XXXXXX", src[256], path[64];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/m.npz", dir);
  snprintf(src, sizeof src,
           "save(\"%s\", masked(arange(5.0), arange(5) > 1), compress=true)\n"
           "z = load(\"%s\")\n",
           path, path);
  CHECK_OK(M, eval(M, src));
  unlink(path);
  rmdir(dir);
  CHECK_ERR(M, eval(M, "ones(2) + ones(3)"), MASQ_ERR_RUNTIME, "broadcast");
  CHECK_ERR(M, eval(M, "fn f(p, q) { return p + }"), MASQ_ERR_SYNTAX, "");
  CHECK_ERR(M, eval(M, "undefined_name + 1"), MASQ_ERR_RUNTIME, "");
  CHECK_ERR(M, masq_call(M, "no_such_function", 0, NULL, NULL), MASQ_ERR_USAGE, "no function");
  CHECK_ERR(M, masq_call(M, "double_it", 0, NULL, NULL), MASQ_ERR_RUNTIME, "");
  masq_close(M);

  CHECK(t.live == 0);
  if (t.live) fprintf(stderr, "test_alloc: %zu blocks never freed\n", t.live);
  test_failing_allocations(&t);
  CHECK(t.wrong_size == 0);
  CHECK(t.unknown == 0);
  free(t.table);
  printf("test_alloc: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
