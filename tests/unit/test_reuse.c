/* test_reuse.c - updates of a uniquely held tensor write into its storage
 * (vm/vm.c, dying_operand; runtime/tensor/tensor.h, mq_reusable): the count
 * S->reused says whether they did, so that each case can fail both ways.
 * What a script sees is the same either way (tests/lang/reuse_aliasing,
 * tests/lang/inplace_aliasing). */
#include <stdio.h>
#include <string.h>

#include "../../core/state.h"
#include "../../include/masq.h"

static int passed, failed;

/* Runs [setup] then [code] in a fresh state; the reuses [code] made, or -1. */
static long reuses(const char *setup, const char *code) {
  masq_state *M = masq_open(NULL);
  long n = -1;
  if (masq_eval(M, setup, strlen(setup), "<setup>", 0) == MASQ_OK) {
    long before = M->reused;
    if (masq_eval(M, code, strlen(code), "<code>", 0) == MASQ_OK) n = M->reused - before;
  }
  if (n < 0) printf("%s", masq_last_error(M)->rendered);
  masq_close(M);
  return n;
}

static void expect(const char *setup, const char *code, long want) {
  long got = reuses(setup, code);
  if (got == want) {
    passed++;
  } else {
    failed++;
    printf("FAIL reuse: %s | %s: %ld reuses, expected %ld\n", setup, code, got, want);
  }
}

int main(void) {
  const char *v = "x = rand(1000)\ns = sparse_coo([[3, 7]], [1.0, 2.0], [1000])";
  /* globals: the first store of an eval is logged for its rollback */
  expect(v, "x = x + 1", 0);
  expect(v, "for i in range(4) { x = x + 1 }", 3);
  expect(v, "for i in range(4) { x = x.add(s, alpha=-0.5) }", 3);
  expect(v, "for i in range(4) { x = x + s; x = x - s }", 7);
  expect(v, "for i in range(4) { x = add(x, x, alpha=2) }", 0); /* x twice */
  expect(v, "for i in range(4) { x = x * 2 + 1 }", 0); /* fused: one fresh pass (vm/fuse.h) */
  /* locals */
  expect(v, "f = fn(a) { b = a * 1\n for i in range(4) { b = b + 1 }\n return b }\nr = f(x)", 4);
  /* the first a is x's too; the next ones are the function's own */
  expect(v, "f = fn(a) { for i in range(4) { a = a + 1 }\n return a }\nr = f(x)", 3);
  /* other holders: a second name, a list, a view, a closure, a graph */
  expect(v, "for i in range(4) { y = x; x = x + 1 }", 0);
  expect(v, "l = [x]\nfor i in range(4) { x = x + 1; l = [x] }", 0);
  expect(v, "for i in range(4) { w = x[0:2]; x = x + 1 }", 0);
  /* the closure keeps the first b: only the later ones are reused */
  expect(v, "f = fn(a) { b = a * 1\n g = fn() = b\n for i in range(4) { b = b + 1 }\n return g }\nr = f(x)",
         3);
  expect("x = requires_grad(rand(10))", "for i in range(4) { x = x + 1 }", 0);
  expect("x = rand(10)\nw = requires_grad(rand(10))", "for i in range(4) { x = x + w }", 0);
  /* dtype or shape changes, broadcasting into x, bool */
  expect(v, "for i in range(4) { x = x + 1.0 }", 3);
  expect("x = none", "for i in range(4) { x = arange(10)\n x = x + 0.5 }", 0);
  expect("x = none", "for i in range(4) { x = rand(10)\n x = x + rand(2, 10) }", 0);
  expect("x = none", "for i in range(4) { x = rand(10)\n x = x + rand(10) }", 4);
  expect("x = rand(10) < 0.5", "for i in range(4) { x = x | true }", 0);
  /* dense + sparse: float updates in one pass, int64 through the gathered sum */
  expect("x = rand(10, dtype=\"float64\")\ns = sparse_coo([[3]], [1.0], [10])",
         "for i in range(4) { x = x + s }", 3);
  expect("x = rand(10)\ns = sparse_coo([[3]], rand(1, dtype=\"float64\"), [10])",
         "for i in range(4) { x = x + s }", 3); /* the first float64 result is new */
  expect("x = none\ns = sparse_coo([[3]], rand(1, dtype=\"float64\"), [10])",
         "for i in range(4) { x = rand(10)\n x = x + s }", 0);
  expect("x = arange(10)\ns = sparse_coo([[3]], [7], [10])", "for i in range(4) { x = x - s }", 3);
  expect("x = masked(rand(10), rand(10) < 0.5)\ns = sparse_coo([[3]], [1.0], [10])",
         "for i in range(4) { x = x.add(s, alpha=3) }", 3);
  expect("x = rand(10)\ns = sparse_coo([[3]], [1.0], [10])", "for i in range(4) { x = s + x }", 0);
  /* masked: the mask is shared, never written */
  expect("x = masked(rand(10), rand(10) < 0.5)", "for i in range(4) { x = x * 2 }", 3);
  /* torch's in-place spellings (x.add_(y), x.exp_(), x[i] = v, x[i] += v:
   * vm/vm.c's CALL_UPDATE and STORE_INDEX, runtime/kernels/update.h) */
  v = "x = rand(1000)";
  /* a global's first store in an eval is logged for its rollback: 3 of 4 */
  expect(v, "for i in range(4) { x.add_(1) }", 3);
  expect(v, "for i in range(4) { x.sub_(1, alpha=2) }", 3);
  expect(v, "for i in range(4) { x.mul_(x) }", 0); /* x twice: read by the op */
  /* the unary rows, with and without parameters, masked too */
  expect(v, "for i in range(4) { x.exp_()\n x.neg_()\n x.sigmoid_() }", 11);
  expect(v, "for i in range(4) { x.leaky_relu_(0.1) }", 3);
  expect("x = masked(rand(10), rand(10) < 0.5)", "for i in range(4) { x.sqrt_() }", 3);
  expect("x = arange(10)", "for i in range(4) { x.abs_() }", 3);
  expect("x = requires_grad(rand(10)) * 1", "for i in range(4) { x.exp_() }", 0);
  expect(v, "for i in range(4) { y = x; x.exp_() }", 0);
  expect(v, "for i in range(4) { x[i] = 5 }", 3);
  expect(v, "for i in range(4) { x[i] += 5 }", 3);
  /* x op= v on a tensor (UPDATE_BINARY): torch's in-place op, reusing too */
  expect(v, "for i in range(4) { x += 1 }", 3);
  expect(v, "for i in range(4) { x -= 0.5\n x *= 2 }", 7);
  expect(v, "for i in range(4) { y = x; x += 1 }", 0);
  expect("x = masked(rand(10), rand(10) < 0.5)", "for i in range(4) { x *= 2 }", 3);
  expect("x = rand(10)\ns = sparse_coo([[3]], [1.0], [10])", "for i in range(4) { x += s }", 3);
  expect("x = requires_grad(rand(10)) * 1", "for i in range(4) { x += 1 }", 0);
  expect(v, "for i in range(4) { x[0:10] = rand(10) }", 3);
  expect(v, "for i in range(4) { x[x > 0.5] = 0 }", 3);
  expect("x = rand(100, 10)", "for i in range(4) { x[i, 2:5] = rand(3) }", 3);
  /* a view of x's storage made for the positions must not stop it */
  expect("x = rand(1000000)", "for i in range(4) { x[i] = 5\n x[..., i] = 1 }", 7);
  /* a function's locals: every one of them */
  expect(v, "f = fn(a) { b = a * 1\n for i in range(4) { b[i] = 1\n b.div_(2) }\n return b }\nr = f(x)",
         8);
  /* other holders: a second name, a list, a view, a closure, autograd */
  expect(v, "for i in range(4) { y = x; x[i] = 1 }", 0);
  expect(v, "for i in range(4) { y = x; x.add_(1) }", 0);
  expect(v, "l = [x]\nfor i in range(4) { x[i] = 1; l = [x] }", 0);
  expect(v, "for i in range(4) { w = x[0:2]; x[i] = 1 }", 0);
  expect(v, "for i in range(4) { w = x[0:2]; x.add_(1) }", 0);
  expect(v, "f = fn() { b = x * 1\n g = fn() = b\n for i in range(4) { b[i] = 0 }\n return g }\nr = f()", 3);
  expect("x = requires_grad(rand(10)) * 1", "for i in range(4) { x[i] = 1 }", 0);
  expect("x = rand(10)\nw = requires_grad(rand(1))", "for i in range(4) { x[i] = w[0] }", 0);
  /* masked x, masked v: the scatter into a copy (masks are never written) */
  expect("x = masked(rand(10), rand(10) < 0.5)", "for i in range(4) { x[i] = 1 }", 0);
  /* dtype changes, bool storages */
  expect("x = arange(10)", "for i in range(4) { x[i] = 2.5 }", 3);
  expect("x = rand(10) < 0.5", "for i in range(4) { x[i] = true }", 0);
  /* elements of lists and dicts: the container holds them */
  expect("xs = [rand(10)]\nd = {\"w\": rand(10)}", "for i in range(4) { xs[0].add_(1); d[\"w\"][i] = 0 }",
         0);
  printf("test_reuse: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
