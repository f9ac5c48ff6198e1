/* test_shadow.c - globals named like builtins (issue 33): masq_globals
 * lists them (a REPL's :vars), `del name` gives the builtin back, whether
 * a script or the host bound the name, and a failed eval rolls a del back
 * with the rest of its globals. */
#include "check.h"

typedef struct names {
  char list[256];
} names;

static void add_name(void *ud, const char *name, const char *summary) {
  names *n = ud;
  (void)summary;
  if (strcmp(name, "_") == 0) return;
  size_t len = strlen(n->list);
  snprintf(n->list + len, sizeof n->list - len, "%s%s", len ? " " : "", name);
}

static const char *listed(masq_state *M, names *n) {
  n->list[0] = '\0';
  masq_globals(M, add_name, n);
  return n->list;
}

int main(void) {
  names n;
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK(strcmp(listed(M, &n), "") == 0); /* the library's names are not the user's */
  CHECK_OK(M, eval(M, "mean = 5\nt = 3\nx = 1\npi = 3"));
  /* in slot order: the library's names first, in the order it bound them */
  CHECK(strcmp(listed(M, &n), "t mean pi x") == 0);
  CHECK_OK(M, eval(M, "del mean\ndel pi\nprint(mean(tensor([1.0, 3])), pi)"));
  CHECK(strcmp(c.text, "tensor(2.) 3.141592653589793\n") == 0);
  CHECK(strstr(listed(M, &n), "mean") == NULL && strstr(listed(M, &n), "pi") == NULL);
  /* a failed eval's del is undone with the rest of it: t stays bound */
  CHECK_ERR(M, eval(M, "del t\nerror(\"after the del\")"), MASQ_ERR_RUNTIME, "after the del");
  capture_reset(&c);
  CHECK_OK(M, eval(M, "print(t)"));
  CHECK(strcmp(c.text, "3\n") == 0);
  /* the host's value under a builtin's name: listed, and del restores */
  CHECK_OK(M, masq_set_int(M, "sum", 7));
  CHECK(strstr(listed(M, &n), "sum") != NULL);
  capture_reset(&c);
  CHECK_OK(M, eval(M, "del sum\nprint(sum(tensor([1, 2])))"));
  CHECK(strcmp(c.text, "tensor(3)\n") == 0);
  CHECK_ERR(M, eval(M, "del sum"), MASQ_ERR_RUNTIME, "'sum' is a builtin, not a variable");
  masq_close(M);
  return report("test_shadow");
}
