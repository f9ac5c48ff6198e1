/* test_errpaths.c - the errors a script meets at the edges of the
 * builtins and the VM's operators, each with its exact message, and the
 * state going on working after each. */
#include "check.h"

typedef struct err_case {
  const char *src, *message;
} err_case;

static const err_case cases[] = {
    /* builtins given the wrong kind of value */
    {"print(list(3))", "list(): cannot iterate over a value of type int"},
    {"print(format(3))", "format() needs a format string first, not int"},
    {"assert(false)", "assertion failed"},
    {"f = len\nprint(f(tensor(3)))", "len() of a 0-d tensor"},
    {"f = len\nprint(f(none))", "len() of none"},
    {"print(zeros(tensor([2.0, 3.0])))", "shape must be ints or a list of ints"},
    {"print(zeros([1, 1, 1, 1, 1, 1, 1, 1, 1]))",
     "shape has 9 dimensions; at most 8 are supported"},
    {"print(cat([tensor(1)]))",
     "cat: 0-d tensors cannot be concatenated (use stack to join them into a 1-d tensor)"},
    {"x = tensor([1.0], requires_grad=true)\nprint(grad(sum(x * 2), 3))",
     "grad: inputs must be a tensor or a list of tensors, not an int"},
    {"x = tensor([1.0], requires_grad=true)\nprint(grad(sum(x * 2), [x, 3]))",
     "grad: input 2 must be a tensor, not an int"},
    {"zero_grad(3)", "zero_grad: expected tensors, got an int"},
    {"x = tensor([1.0], requires_grad=true)\nzero_grad(x, [x, 2])",
     "zero_grad: expected tensors, got an int"},
    /* operators on values the VM does not take */
    {"a = \"x\"\nprint(a - 1)", "unsupported operand types for '-': string and int"},
    {"print(-\"a\")", "cannot negate a string"},
    {"print(~\"a\")", "'~' needs a bool or int value or tensor, not a string"},
    {"l = [1, \"a\"]\nprint(l[0, 1])", "a list is indexed by one int or a slice"},
    {"l = [1, \"a\"]\nprint(l[5])", "index 5 is out of range for a list of length 2"},
    {"r = range(5)\nprint(r[0, 1])", "a range is indexed by one int"},
    {"for x in 3 { print(x) }", "cannot iterate over an int"},
    {"a, b = 3", "cannot unpack an int"},
    {"l = [1, \"a\"]\nl[5] = 2", "index 5 is out of range for a list of length 2"},
    {"s = \"ab\"\ns[0] = \"c\"", "a string does not support item assignment"},
    {"for i in range(0, 5, 0) { print(i) }", "range() step must not be 0"},
    {"for i in range(0.5, 5, 1) { print(i) }", "range() takes ints, not float, int and int"},
};

static void test_errors(void) {
  masq_state *M = masq_open(NULL);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    masq_status st = eval(M, cases[i].src);
    const char *m = masq_last_error(M)->message;
    CHECK(st == MASQ_ERR_RUNTIME && m && strcmp(m, cases[i].message) == 0);
    if (st != MASQ_ERR_RUNTIME || !m || strcmp(m, cases[i].message) != 0)
      fprintf(stderr, "  %s\n  gave %d \"%s\"\n  not \"%s\"\n", cases[i].src, (int)st,
              m ? m : "", cases[i].message);
    CHECK_OK(M, eval(M, "x = 1 + 1"));
  }
  masq_close(M);
}

/* The VM's arithmetic on plain numbers, every operator, in variables so
 * the compiler cannot fold them. */
static void test_number_ops(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  CHECK(strcmp(run(M, &c,
                   "a = 1.5\nb = 0.5\nm = -1.25\n"
                   "print(a - b, a // b, a % b, m % b, a ** b > 1.2, a <= b, a > b, a >= b, "
                   "a == b, a != b)"),
               "1.0 3.0 0.0 0.25 true false true true false true\n") == 0);
  CHECK(strcmp(run(M, &c,
                   "i = 3\nj = 5\nt = true\nf = false\n"
                   "print(i >= j, i & j, i | j, i ^ j, t & f, t | f, t ^ t, -t, -f)"),
               "false 1 7 6 false true false -1 0\n") == 0);
  masq_close(M);
}

int main(void) {
  test_errors();
  test_number_ops();
  return report("test_errpaths");
}
