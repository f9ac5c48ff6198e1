/* test_repl_support.c - what a REPL host asks of the library beyond eval:
 * MASQ_EVAL_PARTIAL waiting for an else after an if block, open strings
 * being errors at once, masq_complete_methods for x.NAME, and the window a
 * long line's error shows. */
#include "check.h"

static void test_partial_if(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  const char *if_only = "if 1 > 2 { print(1) }\n";
  const char *with_else = "if 1 > 2 { print(1) }\nelse { print(2) }\n";
  const char *with_elif = "if 1 > 2 { print(1) }\nelif false { print(3) }\n";
  CHECK(masq_eval(M, if_only, strlen(if_only), "<test>", MASQ_EVAL_PARTIAL) == MASQ_INCOMPLETE);
  CHECK(masq_eval(M, with_elif, strlen(with_elif), "<test>", MASQ_EVAL_PARTIAL) ==
        MASQ_INCOMPLETE);
  CHECK(c.len == 0); /* nothing ran */
  CHECK_OK(M, masq_eval(M, with_else, strlen(with_else), "<test>", MASQ_EVAL_PARTIAL));
  CHECK(strcmp(c.text, "2\n") == 0);
  capture_reset(&c);
  /* Without PARTIAL (the REPL's empty line) the if runs as it is. */
  CHECK_OK(M, masq_eval(M, if_only, strlen(if_only), "<test>", 0));
  /* A statement after the if completes the input. */
  const char *then_more = "if true { y = 1 }\nz = 2\n";
  CHECK_OK(M, masq_eval(M, then_more, strlen(then_more), "<test>", MASQ_EVAL_PARTIAL));
  /* Only a top-level if waits: inside a function body it is complete. */
  CHECK_OK(M, masq_eval(M, "fn f() { if true { 1 } }\n", 25, "<test>", MASQ_EVAL_PARTIAL));
  masq_close(M);
}

static void test_open_string(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  /* A string ends on its line, so more lines cannot complete it. */
  CHECK_ERR(M, masq_eval(M, "s = \"abc\n", 9, "<test>", MASQ_EVAL_PARTIAL), MASQ_ERR_SYNTAX,
            "unterminated string");
  masq_close(M);
}

typedef struct names {
  char text[8192];
  size_t len;
} names;

static void add_name(void *ud, const char *name) {
  names *n = ud;
  n->len += (size_t)snprintf(n->text + n->len, sizeof n->text - n->len, " %s ", name);
}

static masq_status host_fn(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                           masq_tensor **result) {
  (void)M, (void)ud, (void)argc, (void)argv, (void)result;
  return MASQ_OK;
}

static void test_complete_methods(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  names n = {{0}, 0};
  CHECK_OK(M, masq_register(M, "zap(x, k=1)", host_fn, NULL, "tensor first"));
  CHECK_OK(M, masq_register(M, "zebra(n)", host_fn, NULL, "not a tensor"));
  CHECK_OK(M, eval(M, "zonk = 3"));
  masq_complete_methods(M, "z", add_name, &n);
  CHECK(strstr(n.text, " zeros_like ") != NULL); /* zeros_like(x, ...) */
  CHECK(strstr(n.text, " zap ") != NULL);        /* a host function, by its signature */
  CHECK(strstr(n.text, " zeros ") == NULL);      /* zeros(*shape, ...) */
  CHECK(strstr(n.text, " zero_grad ") == NULL);  /* zero_grad(*xs) */
  CHECK(strstr(n.text, " zebra ") == NULL);
  CHECK(strstr(n.text, " zonk ") == NULL); /* a variable is no method */
  n.len = 0;
  n.text[0] = '\0';
  masq_complete_methods(M, "matm", add_name, &n); /* matmul(a, b) */
  CHECK(strcmp(n.text, " matmul ") == 0);
  masq_complete_methods(NULL, "", add_name, &n); /* no crash */
  masq_close(M);
}

static void test_long_line_window(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  char src[400];
  snprintf(src, sizeof src, "y = [%s] + nope + [%s]",
           "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22",
           "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22");
  CHECK_ERR(M, eval(M, src), MASQ_ERR_RUNTIME, "undefined variable 'nope'");
  const char *r = masq_last_error(M)->rendered;
  CHECK(masq_last_error(M)->column == (int)(strstr(src, "nope") - src) + 1);
  /* "    …" + a window + "…", and the carets 24 columns + 1 for the "…" in */
  CHECK(r && strstr(r, "\n    \xe2\x80\xa6") && strstr(r, "] + nope + ["));
  CHECK(r && strstr(r, "\xe2\x80\xa6\n    ") && strstr(r, "\n                             ^^^^\n"));
  masq_close(M);
}

int main(void) {
  test_partial_if();
  test_open_string();
  test_complete_methods();
  test_long_line_window();
  return report("test_repl_support");
}
