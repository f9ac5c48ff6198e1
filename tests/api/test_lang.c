/* test_lang.c - what a host sees of try/catch, exit() and eprint():
 * the memory limit and interrupts are never caught by a script; exit()
 * ends an eval with MASQ_EXIT and its code and never the process; eprint
 * goes through the write_err hook; errors from masq code a host function
 * runs (masq_call) are caught by the script's try around the host call. */
#include "check.h"

static int errors_reported;
static void count_error(void *ud, const char *rendered) {
  (void)ud;
  (void)rendered;
  errors_reported++;
}

static int polls;
static int stop_after_100(void *ud) {
  (void)ud;
  return ++polls > 100;
}

/* Calls the script's function named by the global `callee`, passing its
 * status on. */
static masq_status call_back(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                             masq_tensor **result) {
  (void)ud;
  (void)argc;
  (void)argv;
  return masq_call(M, "callee", 0, NULL, result);
}

/* A state printing into [out], with a memory limit and an interrupt hook. */
static masq_state *open_limited(capture *out, size_t limit, int (*interrupt)(void *)) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = capture_write;
  cfg.write_ud = out;
  cfg.memory_limit = limit;
  cfg.interrupt = interrupt;
  capture_reset(out);
  return masq_open(&cfg);
}

static void test_memory_not_caught(void) {
  capture out;
  masq_state *M = open_limited(&out, 8u << 20, NULL);
  CHECK_ERR(M, eval(M, "try { x = zeros(100000000) } catch e { print(\"caught\") }"),
            MASQ_ERR_MEMORY, "memory limit");
  CHECK(strstr(out.text, "caught") == NULL);
  /* a runtime error is caught, and the state works after both */
  CHECK_OK(M, eval(M, "try { zeros(3) + zeros(4) } catch e { print(\"caught\", e.line) }"));
  CHECK(strcmp(out.text, "caught 1\n") == 0);
  masq_close(M);
}

static void test_interrupt_not_caught(void) {
  capture out;
  masq_state *M = open_limited(&out, 0, stop_after_100);
  polls = 0;
  CHECK_ERR(M, eval(M, "n = 0\ntry { while true { n = n + 1 } } catch e { print(\"caught\") }"),
            MASQ_ERR_INTERRUPTED, "interrupted");
  CHECK(out.len == 0);
  masq_close(M);
}

static void test_exit(void) {
  capture out, err;
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = capture_write;
  cfg.write_ud = &out;
  cfg.write_err = capture_write;
  cfg.write_err_ud = &err;
  cfg.error = count_error;
  capture_reset(&out);
  capture_reset(&err);
  masq_state *M = masq_open(&cfg);
  errors_reported = 0;
  masq_status st = eval(M, "kept = 5\neprint(\"usage: tool N\")\ntry { exit(3) } catch e { print(\"caught\") }\nprint(\"after\")");
  CHECK(st == MASQ_EXIT);
  CHECK(masq_last_error(M)->status == MASQ_EXIT);
  CHECK(masq_last_error(M)->exit_code == 3);
  CHECK(strcmp(masq_last_error(M)->rendered, "") == 0);
  CHECK(errors_reported == 0); /* not an error: the error hook is not called */
  CHECK(out.len == 0);
  CHECK(strcmp(err.text, "usage: tool N\n") == 0);
  /* the eval's globals are kept, and the state goes on */
  int64_t kept = 0;
  CHECK_OK(M, masq_get_int(M, "kept", &kept));
  CHECK(kept == 5);
  CHECK_OK(M, eval(M, "print(kept + 1)"));
  CHECK(strcmp(out.text, "6\n") == 0);
  CHECK(masq_last_error(M)->exit_code == 0);
  /* exit() in masq code a host function runs ends the outer eval too */
  CHECK_OK(M, masq_register(M, "call_back", call_back, NULL, NULL));
  CHECK(eval(M, "fn callee() { exit(4) }\ncall_back()\nprint(\"not reached\")") == MASQ_EXIT);
  CHECK(masq_last_error(M)->exit_code == 4);
  CHECK(strcmp(out.text, "6\n") == 0);
  /* a bad code is an error */
  CHECK_ERR(M, eval(M, "exit(256)"), MASQ_ERR_RUNTIME, "from 0 to 255");
  CHECK(errors_reported == 1);
  masq_close(M);
}

static void test_catch_through_host(void) {
  capture out;
  masq_state *M = open_capturing(&out);
  CHECK_OK(M, masq_register(M, "call_back", call_back, NULL, NULL));
  CHECK_OK(M, eval(M, "fn callee() { error(\"in callee\") }\n"
                      "for i in range(3) {\n"
                      "  try { call_back() } catch e { print(i, e.message) }\n"
                      "}\n"));
  CHECK(strcmp(out.text, "0 in callee\n1 in callee\n2 in callee\n") == 0);
  /* a try inside the function masq_call runs catches there */
  capture_reset(&out);
  CHECK_OK(M, eval(M, "fn callee() { try { error(\"x\") } catch e { return 7 } }\nprint(call_back())"));
  CHECK(strcmp(out.text, "tensor(7)\n") == 0); /* numbers reach a host as tensors */
  /* an uncaught error still fails the eval with the callee's message */
  CHECK_ERR(M, eval(M, "fn callee() { error(\"deep\") }\ncall_back()"), MASQ_ERR_RUNTIME, "deep");
  masq_close(M);
}

int main(void) {
  test_memory_not_caught();
  test_interrupt_not_caught();
  test_exit();
  test_catch_through_host();
  printf("test_lang: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
