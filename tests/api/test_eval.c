/* test_eval.c - evaluating source text from a host: echo mode, syntax
 * errors with their location and carets, incomplete input for REPLs,
 * runtime errors, and the introspection calls a REPL uses. (Limits,
 * interrupts and allocator balance: test_limits.c.) */
#include "check.h"

static void test_eval_and_echo(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK(M != NULL);
  CHECK(strcmp(run(M, &c, "x = 1 + 2\nprint(x * 2)"), "6\n") == 0);
  capture_reset(&c);
  CHECK_OK(M, masq_eval(M, "x + 0.5", 7, "<test>", MASQ_EVAL_ECHO));
  CHECK(strcmp(c.text, "3.5\n") == 0);
  capture_reset(&c);
  CHECK_OK(M, masq_eval(M, "_ * 2", 5, "<test>", MASQ_EVAL_ECHO)); /* the last shown value */
  CHECK(strcmp(c.text, "7.0\n") == 0);
  CHECK(strcmp(run(M, &c, "x + 0.5"), "") == 0); /* no echo in script mode */
  masq_close(M);
}

/* MASQ_EVAL_RESULT: expression statements bind `_` as ECHO does, silently;
 * a host that sets `_` to none first reads the script's value there. */
static void test_result(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  int64_t i = 0;
  const char *src = "x = 20\nprint(1)\nx * 2 + 2\ny = 1";
  CHECK_OK(M, masq_eval(M, src, strlen(src), "<test>", MASQ_EVAL_RESULT));
  CHECK(strcmp(c.text, "1\n") == 0); /* print() prints; the value does not */
  CHECK_OK(M, masq_get_int(M, "_", &i));
  CHECK(i == 42);
  CHECK_OK(M, masq_set_global(M, "_", NULL));
  CHECK_OK(M, masq_eval(M, "y = 3\nprint(y)", 14, "<test>", MASQ_EVAL_RESULT));
  masq_tensor *t = (masq_tensor *)1;
  CHECK_OK(M, masq_get_global(M, "_", &t));
  CHECK(t == NULL); /* print() returned none: nothing kept */
  masq_close(M);
}

static void test_syntax_error(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK_ERR(M, eval(M, "softmax(masked(x, ), 0)"), MASQ_ERR_SYNTAX, "unexpected ')'");
  const masq_error *e = masq_last_error(M);
  CHECK(e->status == MASQ_ERR_SYNTAX);
  CHECK(e->line == 1 && e->column == 19);
  CHECK(e->rendered && strstr(e->rendered, "<test>:1:19: error: ") == e->rendered);
  CHECK(e->rendered && strstr(e->rendered, "\n    softmax(masked(x, ), 0)\n") != NULL);
  /* The state still works. */
  CHECK(strcmp(run(M, &c, "print(1)"), "1\n") == 0);
  CHECK(masq_last_error(M)->status == MASQ_OK);
  masq_close(M);
}

static void test_partial(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK(masq_eval(M, "x = [1,", 7, "<test>", MASQ_EVAL_PARTIAL) == MASQ_INCOMPLETE);
  CHECK_OK(M, masq_eval(M, "x = [1,\n 2]", 11, "<test>", MASQ_EVAL_PARTIAL | MASQ_EVAL_ECHO));
  CHECK(masq_eval(M, "x = [1,", 7, "<test>", 0) == MASQ_ERR_SYNTAX);
  CHECK(masq_eval(M, "x)", 2, "<test>", MASQ_EVAL_PARTIAL) == MASQ_ERR_SYNTAX);
  masq_close(M);
}

static void test_runtime_error(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK_ERR(M, eval(M, "a = masked([1.0, 2, 3], [true, false, true])\n"
                       "b = masked([1.0, 2, 3], [true, true, false])\n"
                       "print(1)\nc = a + b\nprint(2)"),
            MASQ_ERR_RUNTIME, "2 of 3 positions differ");
  const masq_error *e = masq_last_error(M);
  CHECK(e->line == 4 && e->column == 5 && e->end_column == 10);
  CHECK(strcmp(c.text, "1\n") == 0); /* stopped at the error */
  /* The failed eval is undone: the globals it assigned before the error too. */
  CHECK_ERR(M, eval(M, "a"), MASQ_ERR_RUNTIME, "undefined variable 'a'");
  CHECK_ERR(M, eval(M, "undefined_thing + 1"), MASQ_ERR_RUNTIME,
            "undefined variable 'undefined_thing'");
  masq_close(M);
}

static void test_introspection(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK(masq_doc(M, "softmax") != NULL);
  CHECK(masq_doc(M, "no_such_builtin") == NULL);
  CHECK(masq_doc(M, "while") && strstr(masq_doc(M, "while"), "while cond { ... }"));
  CHECK(masq_doc(M, "global") && strstr(masq_doc(M, "global"), "global a, b"));
  masq_close(M);
}

int main(void) {
  test_eval_and_echo();
  test_result();
  test_syntax_error();
  test_partial();
  test_runtime_error();
  test_introspection();
  return report("test_eval");
}
