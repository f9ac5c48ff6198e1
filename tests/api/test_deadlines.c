/* test_deadlines.c - a host's deadline holds whatever the script does
 * (docs/RELIABILITY.md, "Time: the interrupt hook"): the loops a script
 * controls without writing a loop - a substring search, == and sorted() of
 * lists that share sublists, a dict of keys chosen to collide, the kernels
 * of the builtins on big tensors - either finish fast or stop at the
 * deadline with MASQ_ERR_INTERRUPTED, located at the line that ran.
 *
 * Times are wall-clock on a shared machine, so every bound is generous
 * (seconds where the work takes milliseconds); each case is one that took
 * from several seconds to hours before it was fixed. */
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double deadline; /* 0: none */
static int past_deadline(void *ud) {
  (void)ud;
  return deadline > 0 && now() > deadline;
}

static masq_state *open_deadlined(void) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.interrupt = past_deadline;
  cfg.memory_limit = (size_t)1 << 31;
  return masq_open(&cfg);
}

/* Slack past a deadline (or a fast case's whole time) that no correct run
 * comes near, loaded machine and sanitizers included. */
#define SLACK 2.0

/* Runs [code] with a deadline [secs] from now; it must end with [want]
 * within secs + SLACK. An interruption must be located at line [line] of
 * the code (0: not checked). Returns the time it took. */
static double timed(masq_state *M, const char *code, double secs, masq_status want, int line) {
  double t0 = now();
  deadline = t0 + secs;
  masq_status st = eval(M, code);
  double took = now() - t0;
  deadline = 0;
  const masq_error *e = masq_last_error(M);
  bool ok = st == want && took < secs + SLACK && (!line || want != MASQ_ERR_INTERRUPTED || e->line == line);
  if (ok) passed++;
  else {
    failed++;
    fprintf(stderr, "FAIL %.60s...: status %d (want %d) after %.2f s (bound %.1f), line %d (want %d): %s\n",
            code, (int)st, (int)want, took, secs + SLACK, e->line, line, e->rendered ? e->rendered : "");
  }
  return took;
}

static void setup(masq_state *M, const char *code) { CHECK_OK(M, eval(M, code)); }

static int64_t get_int(masq_state *M, const char *name) {
  int64_t v = -12345;
  CHECK_OK(M, masq_get_int(M, name, &v));
  return v;
}

/* --- substring search ------------------------------------------------------------ */

/* A text of 'a's and a pattern of 'a's with one 'b' at an end: a naive
 * search compares the whole pattern at every place (2 * 10^11 steps). */
static void test_strings(void) {
  masq_state *M = open_deadlined();
  setup(M, "s = \"a\" * 2000000\n"
           "p = \"a\" * 100000 + \"b\"\n"
           "q = \"b\" + \"a\" * 100000\n"
           "t = s + \"b\" + s\n");
  timed(M, "r = find(s, p)", 1, MASQ_OK, 0);
  CHECK(get_int(M, "r") == -1);
  timed(M, "r = find(t, p)", 1, MASQ_OK, 0);
  CHECK(get_int(M, "r") == 2000000 - 100000);
  timed(M, "r = rfind(t, q)", 1, MASQ_OK, 0);
  CHECK(get_int(M, "r") == 2000000);
  timed(M, "r = rfind(s, q)", 1, MASQ_OK, 0);
  CHECK(get_int(M, "r") == -1);
  timed(M, "r = count(t, p) + count(s, p)", 1, MASQ_OK, 0);
  CHECK(get_int(M, "r") == 1);
  timed(M, "r = len(split(t, p)) + len(split(s, p))", 1, MASQ_OK, 0);
  CHECK(get_int(M, "r") == 3);
  timed(M, "r = len(replace(t, p, \"\")) + len(replace(s, p, \"x\"))", 1, MASQ_OK, 0);
  CHECK(get_int(M, "r") == 4000001 - 100001 + 2000000);
  timed(M, "r = len(partition(s, p)[0]) + (p in s) + (p in t)", 1, MASQ_OK, 0);
  CHECK(get_int(M, "r") == 2000000 + 1);
  timed(M, "r = index(t, p)", 1, MASQ_OK, 0);
  timed(M, "r = index(s, p)", 1, MASQ_ERR_RUNTIME, 0);
  timed(M, "r = len(strip(s, \"b\" * 1000000 + \"a\"))", 1, MASQ_OK, 0); /* a set, not a scan of chars */
  CHECK(get_int(M, "r") == 0);
  masq_close(M);
}

/* --- lists that share sublists ------------------------------------------------------- */

/* a and b: 1000 wide at each of four levels, every level one list shared
 * 1000 times, equal but not the same: 10^12 leaves to compare. */
static const char *shared_lists =
    "fn widen(x) {\n"
    "  w = []\n"
    "  for i in range(1000) { append(w, x) }\n"
    "  return w\n"
    "}\n"
    "a = widen(widen(widen(list(range(1000)))))\n"
    "b = widen(widen(widen(list(range(1000)))))\n"
    "da = {\"k\": a}\n"
    "db = {\"k\": b}\n"
    "pair = []\n"
    "append(pair, a)\n"
    "append(pair, b)\n";

static void test_shared_lists(void) {
  masq_state *M = open_deadlined();
  setup(M, shared_lists);
  timed(M, "x = 1\ny = a == b", 0.2, MASQ_ERR_INTERRUPTED, 2);
  timed(M, "y = a != b", 0.2, MASQ_ERR_INTERRUPTED, 1);
  timed(M, "y = da == db", 0.2, MASQ_ERR_INTERRUPTED, 1);
  timed(M, "y = b in pair", 0.2, MASQ_ERR_INTERRUPTED, 1);
  timed(M, "y = sorted(pair)", 0.2, MASQ_ERR_INTERRUPTED, 1);
  timed(M, "y = [a]", 0.2, MASQ_ERR_INTERRUPTED, 1); /* a tensor literal? looks at every leaf */
  timed(M, "y = str(a)", 0.2, MASQ_ERR_INTERRUPTED, 1);
  /* a list is equal to itself without looking inside, as in Python */
  timed(M, "p = []\nappend(p, a)\nappend(p, a)\ny = a == a and da == da and sorted(p) == p", 5,
        MASQ_OK, 0);
  CHECK(get_int(M, "y") == 1);
  masq_close(M);
}

/* --- dicts of colliding keys ------------------------------------------------------------ */

/* The inverse of x ^= x >> s. */
static uint64_t unshift(uint64_t y, int s) {
  uint64_t x = y;
  for (int i = 0; i < 64 / s + 1; i++) x = y ^ (x >> s);
  return x;
}

/* The inverse of an odd number mod 2^64 (Newton's iteration). */
static uint64_t inverse(uint64_t a) {
  uint64_t x = a;
  for (int i = 0; i < 6; i++) x *= 2 - a * x;
  return x;
}

/* The int whose hash under masq's former fixed function (splitmix64's
 * finalizer of k + 0x9e3779b97f4a7c15) is [h]. */
static int64_t key_hashing_to(uint64_t h) {
  uint64_t z = unshift(h, 31);
  z *= inverse(0x94d049bb133111ebu);
  z = unshift(z, 27);
  z *= inverse(0xbf58476d1ce4e5b9u);
  z = unshift(z, 30);
  return (int64_t)(z - 0x9e3779b97f4a7c15u);
}

/* 30 000 keys whose old hashes agree in their low 32 bits: every one went
 * to the same slot, so each insertion, growth, copy and removal walked all
 * the others (and a removal indexed every entry again). */
static void test_colliding_keys(void) {
  enum { N = 30000 };
  size_t cap = (size_t)N * 24 + 64, len = 0;
  char *src = malloc(cap);
  len += (size_t)snprintf(src + len, cap - len, "ks = [");
  int n = 0;
  for (uint64_t i = 1; n < N; i++) {
    int64_t k = key_hashing_to(i << 32);
    if (k == INT64_MIN) continue; /* no literal for it */
    len += (size_t)snprintf(src + len, cap - len, "%s%lld", n++ ? ", " : "", (long long)k);
  }
  snprintf(src + len, cap - len, "]\n");
  masq_state *M = open_deadlined();
  setup(M, src); /* an int64 tensor */
  free(src);
  timed(M, "d = {}\n"
         "for k in ks { d[int(k)] = 1 }\n"
         "e = dict(d)\n"
         "same = e == d\n"
         "for k in ks { del e[int(k)] }\n"
         "n = len(d) + len(e) + same\n",
      10, MASQ_OK, 0);
  CHECK(get_int(M, "n") == N + 1);
  masq_close(M);
}

/* Runs the tests named on the command line, or all of them. */
int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {{"strings", test_strings}, {"shared_lists", test_shared_lists},
               {"colliding_keys", test_colliding_keys}};
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
    bool wanted = argc < 2;
    for (int a = 1; a < argc; a++) wanted |= strcmp(argv[a], tests[i].name) == 0;
    if (wanted) tests[i].fn();
  }
  printf("test_deadlines: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
