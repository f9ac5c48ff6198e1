/* test_reentry.c - host code that runs inside a call on the state and
 * calls back (docs/EMBEDDING.md, "Host functions"; docs/RELIABILITY.md):
 *
 * - an interrupt raised while a run nested in a host function runs is
 *   meant for the whole program: if the host function swallows the nested
 *   failure, the run outside still stops (it used to go on: the nested run
 *   consumed the request);
 * - masq_close() from a host function or a hook is refused (the call that
 *   is running fails with MASQ_ERR_USAGE, the state stays open) instead of
 *   freeing the state under the code that runs (a use-after-free);
 * - a hook (write, picture, interrupt, error, a wrapped buffer's release)
 *   that calls back into masq gets MASQ_ERR_USAGE: it is handed masq's own
 *   buffers, which a nested eval would reuse;
 * - a host function releasing its borrowed argument, or twice, is checked.
 *
 * Run under ASan by make test, which is what shows there is no
 * use-after-free. */
#include <stdbool.h>

#include "check.h"

typedef struct probe {
  masq_status inner; /* what the call back into masq returned */
  int calls;
  bool close, eval;  /* what the hook or host function does */
} probe;

static int64_t int_of(masq_state *M, const char *name) {
  int64_t v = -12345;
  CHECK_OK(M, masq_get_int(M, name, &v));
  return v;
}

/* --- an interrupt for the program, seen by a nested run ------------------------------ */

/* Asks for an interrupt, runs masq code (interrupted at once), and swallows
 * the failure: returns success. */
static masq_status swallow_eval(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                                masq_tensor **result) {
  probe *p = ud;
  masq_interrupt(M);
  p->inner = masq_eval(M, "i = 0\nwhile i < 10 { i = i + 1 }", 29, "<inner>", 0);
  return MASQ_OK;
}

static masq_status swallow_call(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                                masq_tensor **result) {
  probe *p = ud;
  masq_interrupt(M);
  p->inner = masq_call(M, "spin", 0, NULL, NULL);
  return MASQ_OK;
}

/* Runs masq code that calls [swallow_eval] and swallows that failure too. */
static masq_status outer_host(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                              masq_tensor **result) {
  probe *p = ud;
  p->calls++;
  masq_status st = masq_eval(M, "swallow_eval()", 14, "<middle>", 0);
  return st == MASQ_ERR_INTERRUPTED ? MASQ_OK : st;
}

/* Passes the nested interruption on. */
static masq_status pass_on(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                           masq_tensor **result) {
  masq_interrupt(M);
  return masq_eval(M, "1 + 1", 5, "<inner>", 0);
}

static void test_nested_interrupt(void) {
  probe p = {0};
  masq_state *M = masq_open(NULL);
  CHECK_OK(M, masq_register(M, "swallow_eval()", swallow_eval, &p, NULL));
  CHECK_OK(M, masq_register(M, "swallow_call()", swallow_call, &p, NULL));
  CHECK_OK(M, masq_register(M, "outer_host()", outer_host, &p, NULL));
  CHECK_OK(M, masq_register(M, "pass_on()", pass_on, &p, NULL));
  CHECK_OK(M, eval(M, "fn spin() { j = 0\n while j < 10 { j = j + 1 } }\nk = 0"));
  /* the nested eval stops, and so does the script around it */
  CHECK_ERR(M, eval(M, "swallow_eval()\nk = 1"), MASQ_ERR_INTERRUPTED, "interrupted");
  CHECK(p.inner == MASQ_ERR_INTERRUPTED);
  CHECK(int_of(M, "k") == 0);
  CHECK_ERR(M, eval(M, "swallow_call()\nk = 2"), MASQ_ERR_INTERRUPTED, "interrupted");
  CHECK(p.inner == MASQ_ERR_INTERRUPTED);
  CHECK(int_of(M, "k") == 0);
  /* two host functions deep, both swallowing */
  CHECK_ERR(M, eval(M, "outer_host()\nk = 3"), MASQ_ERR_INTERRUPTED, "interrupted");
  CHECK(p.calls == 1 && int_of(M, "k") == 0);
  /* passed on: stops at the call, and the request is used up */
  CHECK_ERR(M, eval(M, "pass_on()\nk = 4"), MASQ_ERR_INTERRUPTED, "interrupted");
  CHECK(masq_last_error(M)->line == 1);
  /* nothing stale afterwards: the next runs go to the end */
  CHECK_OK(M, eval(M, "spin()\nk = 5"));
  CHECK(int_of(M, "k") == 5);
  CHECK_OK(M, masq_call(M, "spin", 0, NULL, NULL));
  masq_close(M);
}

/* --- masq_close from inside ------------------------------------------------------------ */

static masq_status closer(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                          masq_tensor **result) {
  masq_close(M);
  return masq_tensor_scalar(M, 1, result); /* the state is still there to use */
}

static void test_close_from_host_function(void) {
  masq_state *M = masq_open(NULL);
  CHECK_OK(M, masq_register(M, "closer()", closer, NULL, NULL));
  CHECK_OK(M, eval(M, "k = 0"));
  CHECK_ERR(M, eval(M, "closer()\nk = 1"), MASQ_ERR_USAGE, "closer() called masq_close()");
  CHECK(masq_last_error(M)->line == 1);
  CHECK(int_of(M, "k") == 0);
  CHECK_ERR(M, masq_call(M, "closer", 0, NULL, NULL), MASQ_ERR_USAGE, "masq_close");
  CHECK_OK(M, eval(M, "k = 2"));
  CHECK(int_of(M, "k") == 2);
  masq_close(M);
}

/* --- hooks that call back ---------------------------------------------------------------- */

static masq_state *hooked; /* the state the hooks below call back into */

static void write_hook(void *ud, const char *s, size_t n) {
  probe *p = ud;
  p->calls++;
  if (p->eval) p->inner = masq_eval(hooked, "print(2)", 8, "<hook>", 0);
  if (p->close) masq_close(hooked);
  (void)s, (void)n; /* still readable: nothing reused the buffer under it */
}

static int interrupt_hook(void *ud) {
  probe *p = ud;
  p->calls++;
  if (p->eval) p->inner = masq_eval(hooked, "1", 1, "<hook>", 0);
  if (p->close) masq_close(hooked);
  return 0;
}

static void picture_hook(void *ud, const char *text, size_t tn, const char *svg, size_t sn) {
  probe *p = ud;
  p->calls++;
  if (p->eval) p->inner = masq_eval(hooked, "print(3)", 8, "<hook>", 0);
  if (p->close) masq_close(hooked);
}

static void error_hook(void *ud, const char *rendered) {
  probe *p = ud;
  p->calls++;
  if (p->eval) p->inner = masq_eval(hooked, "1", 1, "<hook>", 0);
  if (p->close) masq_close(hooked);
}

static masq_state *open_hooked(probe *w, probe *i, probe *pic, probe *err) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = write_hook;
  cfg.write_ud = w;
  cfg.interrupt = interrupt_hook;
  cfg.interrupt_ud = i;
  cfg.picture = picture_hook;
  cfg.picture_ud = pic;
  cfg.error = error_hook;
  cfg.error_ud = err;
  hooked = masq_open(&cfg);
  return hooked;
}

static void test_hooks(void) {
  probe w = {0}, i = {0}, pic = {0}, err = {0};
  masq_state *M = open_hooked(&w, &i, &pic, &err);
  /* an eval from the write hook is refused; the print goes on */
  w.eval = true;
  CHECK_OK(M, eval(M, "print(1)\nk = 1"));
  CHECK(w.calls == 1 && w.inner == MASQ_ERR_USAGE && int_of(M, "k") == 1);
  w.eval = false;
  /* masq_close from the write hook: the eval fails, the state stays */
  w.close = true;
  CHECK_ERR(M, eval(M, "print(1)\nk = 2"), MASQ_ERR_USAGE, "masq_close");
  w.close = false;
  CHECK_OK(M, eval(M, "k = 3"));
  /* from the interrupt hook (polled in a loop) */
  i.eval = true;
  CHECK_OK(M, eval(M, "j = 0\nwhile j < 5000 { j = j + 1 }"));
  CHECK(i.calls > 0 && i.inner == MASQ_ERR_USAGE);
  i.eval = false;
  i.close = true;
  CHECK_ERR(M, eval(M, "j = 0\nwhile j < 5000 { j = j + 1 }"), MASQ_ERR_USAGE, "masq_close");
  i.close = false;
  /* from the picture hook */
  pic.eval = true;
  CHECK_OK(M, eval(M, "hist(tensor([1.0, 2.0, 2.5]))"));
  CHECK(pic.calls == 1 && pic.inner == MASQ_ERR_USAGE);
  pic.eval = false;
  pic.close = true;
  CHECK_ERR(M, eval(M, "hist(tensor([1.0, 2.0, 2.5]))"), MASQ_ERR_USAGE, "masq_close");
  pic.close = false;
  /* from the error hook: the failing eval keeps its own error (the hook
   * has seen the failures above too: they were errors of top-level calls) */
  CHECK(err.calls == 3);
  err.calls = 0;
  err.eval = err.close = true;
  CHECK_ERR(M, eval(M, "1 + undefined_name"), MASQ_ERR_RUNTIME, "undefined_name");
  CHECK(err.calls == 1 && err.inner == MASQ_ERR_USAGE);
  err.eval = err.close = false;
  /* and through it all the state works */
  CHECK_OK(M, eval(M, "k = 4\nprint(k)"));
  CHECK(int_of(M, "k") == 4);
  masq_close(M);
}

/* --- a wrapped buffer's release ---------------------------------------------------------- */

static void release_hook(void *ud) {
  probe *p = ud;
  p->calls++;
  if (p->eval) p->inner = masq_eval(hooked, "1", 1, "<release>", 0);
  if (p->close) masq_close(hooked);
}

static void test_release_hook(void) {
  probe r = {0, 0, true, true};
  hooked = masq_open(NULL);
  masq_state *M = hooked;
  static double data[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  masq_tensor_desc d = {MASQ_FLOAT64, 1, shape, NULL, data, NULL, NULL, 0, release_hook, &r};
  masq_tensor *t = NULL;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_ERR(M, masq_tensor_release(M, t), MASQ_ERR_USAGE, "masq_close");
  CHECK(r.calls == 1 && r.inner == MASQ_ERR_USAGE);
  CHECK_OK(M, eval(M, "k = 1"));
  masq_close(M);
}

/* --- handles released by a host function ------------------------------------------------ */

/* Releases its borrowed argument (a host's mistake, but a checked one):
 * the first release gives back the reference the call lent, a second is
 * MASQ_ERR_USAGE unless the host holds the tensor otherwise too. */
static masq_status release_arg(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                               masq_tensor **result) {
  probe *p = ud;
  p->inner = masq_tensor_release(M, argv[0]);
  if (p->eval) return masq_tensor_release(M, argv[0]) == MASQ_ERR_USAGE ? MASQ_OK : MASQ_ERR_RUNTIME;
  return MASQ_OK;
}

static void test_released_arguments(void) {
  probe p = {0, 0, false, true};
  masq_state *M = masq_open(NULL);
  CHECK_OK(M, masq_register(M, "release_arg(x)", release_arg, &p, NULL));
  CHECK_OK(M, eval(M, "x = tensor([1.0, 2.0])\nrelease_arg(x)\ny = sum(x)"));
  CHECK(p.inner == MASQ_OK);
  /* through masq_call the host holds the tensor twice: the release takes
   * one of its references, and the handle it passed is checked after */
  p.eval = false;
  masq_tensor *t = NULL;
  CHECK_OK(M, masq_tensor_scalar(M, 4, &t));
  CHECK_OK(M, masq_call(M, "release_arg", 1, &t, NULL));
  double v = 0;
  masq_status st = masq_tensor_item(M, t, &v);
  CHECK((st == MASQ_OK && v == 4) || st == MASQ_ERR_USAGE);
  if (st == MASQ_OK) CHECK_OK(M, masq_tensor_release(M, t));
  CHECK_OK(M, eval(M, "z = y + 1"));
  masq_close(M);
}

int main(void) {
  test_nested_interrupt();
  test_close_from_host_function();
  test_hooks();
  test_release_hook();
  test_released_arguments();
  printf("test_reentry: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
