/* test_hostile.c - scripts built to hurt the host: chains as long as the
 * source, nesting at and beyond the limit, and computations that never
 * reach a loop. Each must end in the right answer or a clean error on a
 * host thread with a 256 KiB stack, interrupt when the host's hook says so,
 * and leave a state that still works. */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <time.h>

#include "check.h"

/* The host thread's stack. AddressSanitizer's redzones make every frame
 * several times bigger, so its build (make test runs both) gets more. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MQ_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(MQ_TEST_ASAN)
enum { HOST_STACK = 1024 * 1024 };
#else
enum { HOST_STACK = 256 * 1024 };
#endif

/* A source of [n] copies of [unit] between [head] and [tail]. */
static char *repeat(const char *head, const char *unit, int n, const char *tail) {
  size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
  char *s = malloc(hl + ul * (size_t)n + tl + 1), *p = s;
  memcpy(p, head, hl);
  p += hl;
  for (int i = 0; i < n; i++, p += ul) memcpy(p, unit, ul);
  memcpy(p, tail, tl + 1);
  return s;
}

/* [n] copies of [open], then [mid], then [n] copies of [close]. */
static char *nest(const char *head, const char *open, const char *mid, const char *close, int n,
                  const char *tail) {
  char *inner = repeat("", close, n, tail);
  size_t ml = strlen(mid), il = strlen(inner);
  char *with_mid = malloc(ml + il + 1);
  memcpy(with_mid, mid, ml);
  memcpy(with_mid + ml, inner, il + 1);
  char *s = repeat(head, open, n, with_mid);
  free(inner);
  free(with_mid);
  return s;
}

static double number(masq_state *M, const char *name) {
  double v = -12345;
  if (masq_get_number(M, name, &v) != MASQ_OK)
    fprintf(stderr, "number(%s): %s", name, masq_last_error(M)->rendered);
  return v;
}

/* Runs [src] (freed here); it must end in [want] with a message holding
 * [text] (MASQ_OK: x must then be [x]), and the state must still work. */
static void expect(masq_state *M, char *src, masq_status want, const char *text, double x) {
  masq_status st = eval(M, src);
  const masq_error *e = masq_last_error(M);
  if (st == want && (want == MASQ_OK ? number(M, "x") == x : strstr(e->message, text) != NULL)) {
    passed++;
  } else {
    failed++;
    fprintf(stderr, "test_hostile: '%.60s...' returned %d (%s), expected %d (%s)\n", src, (int)st,
            e->message ? e->message : "", (int)want, text);
  }
  free(src);
  CHECK_OK(M, eval(M, "x = 1 + 1"));
  CHECK(number(M, "x") == 2);
}

/* --- the chains and nests, on a small stack ----------------------------- */

static void *chains(void *arg) {
  (void)arg;
  masq_state *M = masq_open(NULL);
  enum { N = 100000 };
  /* left-associative and postfix chains compile and run with a loop */
  expect(M, repeat("x = 0", " + 1", N, ""), MASQ_OK, "", N);
  expect(M, repeat("x = 1", " and 1", N, ""), MASQ_OK, "", 1);
  expect(M, repeat("x = 0", " or 0", N, " or 5"), MASQ_OK, "", 5);
  expect(M, repeat("x = (-7)", ".abs", N, ""), MASQ_OK, "", 7);
  expect(M, repeat("fn f(v) = f\nx = f", "(1)", N, " == f"), MASQ_OK, "", 1);
  /* a list holding itself, for an index chain without a deep list */
  expect(M, repeat("a = [0, 's']\na[0] = a\nx = len(a", "[0]", N, ")\na[0] = 0"), MASQ_OK, "", 2);
  /* unary chains: as deep as the parser goes, then its clean error */
  expect(M, repeat("x = ", "- ", 5000, "3"), MASQ_OK, "", 3);
  expect(M, repeat("x = ", "not ", 5001, "false"), MASQ_OK, "", 1);
  expect(M, repeat("x = ", "-", N, "3"), MASQ_ERR_SYNTAX, "nested too deeply", 0);
  /* real nesting: fine at 150 levels, a located error beyond the limit */
  const int depths[] = {150, 2000};
  for (int i = 0; i < 2; i++) {
    int n = depths[i];
    bool ok = n < 200;
    masq_status st = ok ? MASQ_OK : MASQ_ERR_SYNTAX;
    const char *msg = "expression nested too deeply (more than 200 levels)";
    expect(M, nest("x = ", "(1 + ", "0", ")", n, ""), st, msg, n);
    expect(M, nest("x = ", "1 ** ", "1", "", n, ""), st, msg, 1);
    expect(M, nest("fn f(v) = v + 1\nx = ", "f(", "0", ")", n, ""), st, msg, n);
    expect(M, nest("y = ", "[", "1", ", 's']", n, "\nx = 5"), st, msg, 5);
    expect(M, nest("x = 0\n", "if true {\n", "x = 3\n", "}\n", n, ""), st, msg, 3);
    expect(M, nest("x = 0\n", "while x < 1 {\n", "x = 4\n", "}\n", n, ""), st, msg, 4);
    expect(M, nest("fn f0() = 6\n", "fn f() {\n", "x = 6\n", "}\n", n / 20, "x = f0()"), MASQ_OK,
           "", 6);
  }
  /* a list nested deeper than a tensor has dims stays a list, and is no
   * tensor; one holding itself too */
  expect(M, strdup("a = 1\nfor i in range(300) { a = [a] }\nx = len(a)"), MASQ_OK, "", 1);
  expect(M, strdup("a = [0, 's']\na[0] = a\nb = [a]\na[0] = 0\nx = len(b)"), MASQ_OK, "", 1);
  expect(M, strdup("a = 1\nfor i in range(300) { b = []\n append(b, a)\n a = b }\nx = tensor(a)"),
         MASQ_ERR_RUNTIME, "nested deeper than 8 levels", 0);
  masq_close(M);
  return NULL;
}

/* A host function that calls back into masq, which calls it again. */
static masq_status call_back(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                             masq_tensor **result) {
  return masq_call(M, "g", argc, argv, result);
}

/* Runs inside runs, on a small stack: a host function calling back into
 * the script that called it, and imports importing the next. */
static void *reentry(void *arg) {
  (void)arg;
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  masq_state *M = masq_open(&cfg);
  CHECK_OK(M, masq_register(M, "call_back", call_back, NULL, NULL));
  expect(M, strdup("fn g(v) = call_back(v)\nx = g(1)"), MASQ_ERR_RUNTIME, "stack overflow", 0);
  enum { FILES = 100 };
  for (int i = 0; i < FILES; i++) {
    char path[64], text[128];
    snprintf(path, sizeof path, "/tmp/masq_hostile_%d.masq", i);
    snprintf(text, sizeof text, i + 1 < FILES ? "import \"masq_hostile_%d.masq\"\n" : "x = 1\n",
             i + 1);
    FILE *f = fopen(path, "w");
    if (f) {
      fputs(text, f);
      fclose(f);
    }
  }
  expect(M, strdup("import \"/tmp/masq_hostile_0.masq\""), MASQ_ERR_RUNTIME, "stack overflow", 0);
  for (int i = 0; i < FILES; i++) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/masq_hostile_%d.masq", i);
    remove(path);
  }
  masq_close(M);
  return NULL;
}

static void *on_host_thread(void *arg) {
  chains(arg);
  reentry(arg);
  return NULL;
}

static void on_small_stack(void *(*fn)(void *)) {
  pthread_attr_t attr;
  pthread_t th;
  pthread_attr_init(&attr);
  CHECK(pthread_attr_setstacksize(&attr, HOST_STACK) == 0);
  CHECK(pthread_create(&th, &attr, fn, NULL) == 0);
  pthread_join(th, NULL);
  pthread_attr_destroy(&attr);
}

/* --- interrupts --------------------------------------------------------- */

/* The hook says stop on its [left]-th call from now (0: never), and counts
 * its calls in [calls]. */
typedef struct budget {
  long left, calls;
} budget;

static int spend(void *ud) {
  budget *b = ud;
  b->calls++;
  return b->left > 0 && --b->left == 0;
}

static masq_state *open_with_budget(budget *b) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.interrupt = spend;
  cfg.interrupt_ud = b;
  return masq_open(&cfg);
}

/* Compiling is linear in the source: a 200 000-term sum polls the hook a
 * few times per thousand nodes looked at, and a compiler that looked at
 * each subtree again (quadratic) would poll millions of times. */
static void test_linear_compile(void) {
  budget b = {100000, 0};
  masq_state *M = open_with_budget(&b);
  char *src = repeat("x = y", " * 2 + y", 200000, "");
  CHECK_OK(M, eval(M, "y = 1"));
  CHECK_OK(M, eval(M, src));
  CHECK(number(M, "x") == 400001);
  CHECK(b.calls < 100000 || !fprintf(stderr, "%ld hook calls\n", b.calls));
  free(src);
  masq_close(M);
}

/* "x = 0 + 0.5 + 1.5 + ..." with [n] terms after the 0, distinct or all
 * the same. */
static char *constants(int n, bool distinct) {
  char *s = malloc(16 * (size_t)n + 8), *p = s;
  p += sprintf(p, "x = 0");
  for (int i = 0; i < n; i++) p += sprintf(p, " + %d.5", distinct ? i : 0);
  return s;
}

/* CPU seconds [M] takes to run [src], which must work. */
static double cpu_to_run(masq_state *M, const char *src) {
  clock_t t0 = clock();
  CHECK_OK(M, eval(M, src));
  return (double)(clock() - t0) / CLOCKS_PER_SEC;
}

/* Adding a constant to a function is O(1) however many it has: 60 000
 * distinct ones compile about as fast as 60 000 copies of one (searching
 * them one by one took 50 times as long), and one past the limit is an
 * error. */
static void test_many_constants(void) {
  masq_state *M = masq_open(NULL);
  char *same = constants(60000, false), *distinct = constants(60000, true);
  double t_same = cpu_to_run(M, same), t_distinct = cpu_to_run(M, distinct);
  CHECK(number(M, "x") == 1800000000.0);
  CHECK(t_distinct < 3 * t_same + 0.05 ||
        !fprintf(stderr, "constants: %.3f s distinct, %.3f s the same\n", t_distinct, t_same));
  free(distinct);
  distinct = constants(70000, true);
  CHECK_ERR(M, eval(M, distinct), MASQ_ERR_SYNTAX,
            "too many constants in one function (limit 65535)");
  CHECK_OK(M, eval(M, "x = 1 + 1"));
  CHECK(number(M, "x") == 2);
  free(same);
  free(distinct);
  masq_close(M);
}

/* Every place time goes polls the hook: with an interrupt due at once,
 * each of these stops promptly, and the state goes on working. */
static void test_interrupt_everywhere(void) {
  budget b = {0, 0};
  masq_state *M = open_with_budget(&b);
  char *big_sum = repeat("x = 0", " + 1", 300000, "");
  char *big_script = repeat("", "x = 1\n", 300000, "");
  char *scripts[] = {
      /* recursion without a loop */
      "fn f(n) { if n > 0 { return f(n - 1) + f(n - 1) }\n return 1 }\nx = f(40)",
      /* parsing and compiling a huge script */
      big_sum,
      big_script,
      /* printing a tensor in full, plain and masked */
      "set_printoptions(threshold=100000000)\nx = str(ones(3000000))",
      "set_printoptions(threshold=100000000)\nx = str(masked(ones(3000000), true))",
      /* a long list made, then made a tensor */
      "a = list(range(3000000))\nx = tensor(a)",
  };
  for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++) {
    b.left = 2;
    CHECK_ERR(M, eval(M, scripts[i]), MASQ_ERR_INTERRUPTED, "interrupted");
    b.left = 0;
    CHECK_OK(M, eval(M, "x = 1 + 1"));
    CHECK(number(M, "x") == 2);
  }
  free(big_sum);
  free(big_script);
  masq_close(M);
}

int main(void) {
  on_small_stack(on_host_thread);
  test_linear_compile();
  test_many_constants();
  test_interrupt_everywhere();
  printf("test_hostile: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
