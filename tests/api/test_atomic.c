/* test_atomic.c - a failed masq_eval or masq_call leaves the globals as they
 * were before it: bindings it made are undone and what only they held is
 * freed, so the state keeps working. */
#include "check.h"

static double number(masq_state *M, const char *name) {
  double v = -12345;
  if (masq_get_number(M, name, &v) != MASQ_OK) return -12345;
  return v;
}

static void test_memory_cap(void) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.memory_limit = (size_t)32 << 20;
  masq_state *M = masq_open(&cfg);
  CHECK_OK(M, eval(M, "l = 7\nkeep = 1"));
  /* Fills the cap through a global, then fails. */
  CHECK_ERR(M, eval(M, "keep = 2\nl = []\nfor i in range(100000000) { append(l, zeros(1000)) }"),
            MASQ_ERR_MEMORY, "memory limit");
  CHECK(number(M, "l") == 7);
  CHECK(number(M, "keep") == 1);
  CHECK_OK(M, eval(M, "s = sum(ones(10))"));
  CHECK(number(M, "s") == 10);
  /* Again: the memory of the first attempt really came back. */
  CHECK_ERR(M, eval(M, "l = []\nfor i in range(100000000) { append(l, zeros(1000)) }"),
            MASQ_ERR_MEMORY, "memory limit");
  CHECK_OK(M, eval(M, "big = zeros(4000000)"));
  masq_close(M);
}

static void test_new_globals_undefined(void) {
  masq_state *M = masq_open(NULL);
  CHECK_ERR(M, eval(M, "fresh = 1\nfn helper(x) = x + 1\nfresh = 2\nboom = ones(2) + ones(3)"),
            MASQ_ERR_RUNTIME, "broadcast");
  CHECK_ERR(M, eval(M, "fresh"), MASQ_ERR_RUNTIME, "undefined variable 'fresh'");
  CHECK_ERR(M, eval(M, "helper(1)"), MASQ_ERR_RUNTIME, "undefined variable 'helper'");
  /* A successful eval keeps what it defined; a later failure undoes only its own. */
  CHECK_OK(M, eval(M, "fn helper(x) = x + 1\nv = helper(1)"));
  CHECK_ERR(M, eval(M, "v = 100\nfn helper(x) = x * 0\nundefined_thing"), MASQ_ERR_RUNTIME, "");
  CHECK_OK(M, eval(M, "w = helper(v)"));
  CHECK(number(M, "w") == 3);
  masq_close(M);
}

/* A host function that runs a nested eval, which succeeds, and then fails. */
static masq_status nested(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                          masq_tensor **result) {
  masq_status st = eval(M, "inner = 5\nouter_seen = 1");
  if (st != MASQ_OK) return st;
  if (*(int *)ud) return masq_errorf(M, "host gives up");
  return MASQ_OK;
}

static void test_nested_and_call(void) {
  masq_state *M = masq_open(NULL);
  int give_up = 1;
  CHECK_OK(M, masq_register(M, "nested()", nested, &give_up, NULL));
  CHECK_OK(M, eval(M, "inner = 1\nfn set_and_fail() {\n  global inner\n  inner = 9\n"
                      "  return ones(2) + ones(3)\n}"));
  /* The nested eval committed into the outer one, which then failed. */
  CHECK_ERR(M, eval(M, "x = 3\nnested()"), MASQ_ERR_RUNTIME, "host gives up");
  CHECK(number(M, "inner") == 1);
  CHECK_ERR(M, eval(M, "outer_seen"), MASQ_ERR_RUNTIME, "undefined");
  give_up = 0;
  CHECK_OK(M, eval(M, "nested()"));
  CHECK(number(M, "inner") == 5);
  CHECK_ERR(M, masq_call(M, "set_and_fail", 0, NULL, NULL), MASQ_ERR_RUNTIME, "broadcast");
  CHECK(number(M, "inner") == 5);
  masq_close(M);
}

int main(void) {
  test_memory_cap();
  test_new_globals_undefined();
  test_nested_and_call();
  printf("test_atomic: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
