/* test_grad_bytes.c - a float32 backward stays in float32 where its
 * derivatives have float32 kernels (runtime/autograd/backward.h): no
 * float64 copy of a float32 gradient, no float64 gradient of a float32
 * operand. The bytes an evaluation allocates say which (alloc_count.h):
 * each case's float32 tensors are N entries, and a float64 copy of one is
 * 8 N bytes, so each bound below sits between what the float32 form
 * allocates and what one float64 copy more would (measured when these
 * came: 8 N against 16 N and 24 N before). The values are the gradient checks' (test_gradcheck.c,
 * test_grad_f32.c, tests/lang). */
#include <stdbool.h>

#include "alloc_count.h"

static int passed, failed;

/* [code] after [setup] allocates under [below] * N bytes (with N float32
 * entries per tensor: 4 N bytes each) */
static void expect_under(const char *what, const char *setup, const char *code, double n,
                         double below) {
  size_t got = allocated(setup, code);
  double x = (double)got / n;
  if (got > 0 && x < below) {
    passed++;
  } else {
    failed++;
    printf("FAIL grad_bytes: %s: %zu bytes (%.2f N), expected under %.1f N\n", what, got, x, below);
  }
}

int main(void) {
  /* one thread: per-thread blocks counted once */
  const char *set = "set_num_threads(1)\n"
                    "x = rand(2048, 256)\ny = rand(2048, 256)\nw = rand(2048, 256)\n"
                    "c = rand(2048, 256) < 0.5\nb = requires_grad(zeros(256))\n"
                    "xg = requires_grad(x)\n";
  const double n = 2048.0 * 256;
  /* the forward: x + b and the product (8 N); the backward reuses their
   * buffers (the state's cache) for the add's gradient, summed over the
   * rows into 256 doubles, not from a float64 copy of it (8 N more) */
  expect_under("a broadcast bias's gradient", set, "r = grad(sum((x + b) * w), b)", n, 12);
  /* where's (and masked_fill's) selection of a float32 gradient: float32,
   * not a float64 copy of g and a float64 part (16 N more) */
  expect_under("where's gradient", set, "r = grad(sum(where(c, xg, y) * w), xg)", n, 12);
  expect_under("masked_fill's gradient", set, "r = grad(sum(masked_fill(xg, c, 0.0) * w), xg)", n, 12);
  /* a float32 op under a float64 gradient (cumsum's, which has no float32
   * kernel): its float32 operands read as they are, not copied to float64
   * (8 N each: 40 N against 56 N for exp, 48 N for mul before) */
  expect_under("exp's under a float64 gradient", set, "r = grad(sum(cumsum(exp(xg), 1)), xg)", n, 44);
  expect_under("mul's under a float64 gradient", set, "r = grad(sum(cumsum(xg * y, 1)), xg)", n, 44);
  /* a view's (and cat's) gradient: each element moved back in float32
   * (the element numbers the op is replayed on are int64, 16 N; 24 N
   * against 32 N before, and cat, of two 2 N operands, 74 N against 114 N) */
  expect_under("a transpose's gradient", set,
               "wt = contiguous(transpose(w, 0, 1))\nr = grad(sum(transpose(xg, 0, 1) * wt), xg)", n, 32);
  expect_under("cat's gradient", set, "r = grad(sum(cat([xg, xg], 0) * cat([w, y], 0)), xg)", n, 94);
  /* cross_entropy's pick of the target classes (nn/pick.h): log_softmax
   * forward and backward and the logits' gradient, N each; op by op the
   * one-hot comparison, the where and the sum's and where's derivatives
   * made one or two more each (24 N before, 14 N after) */
  const char *ce = "set_num_threads(1)\nx = requires_grad(randn(2048, 256))\n"
                   "y = masked(randint(0, 256, 2048), rand(2048) < 0.8)\n";
  expect_under("cross_entropy's gradient", ce, "r = grad(cross_entropy(x, y), x)", n, 19);
  printf("test_grad_bytes: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
