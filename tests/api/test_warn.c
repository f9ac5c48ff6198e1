/* test_warn.c - warnings reach the host's write_err hook, located, once
 * per state: masked() of data that requires grad (stdlib/lib_habits.c). */
#include "check.h"

static int count(const char *text, const char *what) {
  int n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

/* A state whose print() output goes to [out] and eprint()/warnings to [err]. */
static masq_state *open_both(capture *out, capture *err) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = capture_write;
  cfg.write_ud = out;
  cfg.write_err = capture_write;
  cfg.write_err_ud = err;
  capture_reset(out);
  capture_reset(err);
  return masq_open(&cfg);
}

static const char script[] =
    "x = tensor([1., 2], requires_grad=true)\n"
    "m = masked(x, [true, false])\n"
    "m = masked(x * 2, [true, false])\n"
    "print(m.requires_grad)\n";

static void test_once_per_state(void) {
  capture out, err;
  masq_state *M = open_both(&out, &err);
  CHECK_OK(M, eval(M, script));
  CHECK(strcmp(out.text, "false\n") == 0); /* print's output is apart */
  CHECK(count(err.text, "warning: masked() starts a new graph") == 1);
  CHECK(count(err.text, "use as_masked(data, mask)") == 1);
  CHECK(strncmp(err.text, "<test>:2:5: warning:", 20) == 0); /* at the call */
  CHECK(strstr(err.text, "m = masked(x, [true, false])") != NULL);
  /* once per state: a later eval stays quiet */
  size_t len = err.len;
  CHECK_OK(M, eval(M, script));
  CHECK(err.len == len);
  masq_close(M);
  /* another state warns again */
  M = open_both(&out, &err);
  CHECK_OK(M, eval(M, script));
  CHECK(count(err.text, "warning:") == 1);
  masq_close(M);
}

static void test_no_warning_without_grad(void) {
  capture out, err;
  masq_state *M = open_both(&out, &err);
  CHECK_OK(M, eval(M, "m = masked(tensor([1., 2]), [true, false])\n"
                      "a = as_masked(tensor([1., 2], requires_grad=true), [true, false])\n"));
  CHECK(err.len == 0);
  masq_close(M);
}

int main(void) {
  test_once_per_state();
  test_no_warning_without_grad();
  printf("test_warn: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
