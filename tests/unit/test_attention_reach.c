/* test_attention_reach.c - softmax(masked(a @ b / c, m), -1) @ v runs as
 * one pass over the valid keys (runtime/nn/attention.c) where it should, and
 * op by op where it must not: the bytes an evaluation allocates say which
 * (op by op makes the scores, a full-size temporary, several times; the
 * fused pass makes none), so each case can fail both ways. That the values
 * are bitwise the op-by-op ones is tests/lang/attention_fused, and the
 * gradients tests/lang/attention_grad; for the attention builtin, which
 * takes the same pass, tests/lang/attention_builtin. */
#include <stdbool.h>

#include "alloc_count.h"

static int passed, failed;

#define SCORES ((size_t)8 * 512 * 512 * 4) /* bytes of the float32 scores */

/* [code] allocates under half the scores (fused: the result, its mask and
 * per-thread blocks) or at least the scores (op by op, which reuses freed
 * buffers of the same size for its other temporaries). */
static void expect_within(const char *setup, const char *code, bool fused, double below,
                          double from) {
  size_t got = allocated(setup, code);
  double x = (double)got / (double)SCORES;
  bool ok = got > 0 && (fused ? x < below : x >= from);
  if (ok) {
    passed++;
  } else {
    failed++;
    printf("FAIL attention_reach: %s | %s: %zu bytes (%.2f x), expected %s %.1f x\n", setup, code,
           got, x, fused ? "<" : ">=", fused ? below : from);
  }
}

static void expect(const char *setup, const char *code, bool fused) {
  expect_within(setup, code, fused, 0.5, 1);
}

/* With a backward, always op by op: the float32 gradients of the scores,
 * p and more make over 6 x. */
static void expect_grad(const char *setup, const char *code, bool fused) {
  expect_within(setup, code, fused, 4, 6);
}

int main(void) {
  const char *set = "q = rand(8, 512, 32)\nk = rand(8, 512, 32)\nv = rand(8, 512, 32)\n"
                    "kt = transpose(k, -2, -1)\n"
                    "m = reshape(arange(512), 1, 1, 512) < reshape(arange(8) * 64 + 32, 8, 1, 1)\n"
                    "rm = rand(8, 512, 512) < 0.3\n";
  const char *attn = "r = softmax(masked(q @ transpose(k, -2, -1) / 8, m), -1) @ v";
  expect(set, attn, true);
  expect(set, "r = softmax(masked(q @ kt / 8.0, rm), -1) @ v", true);
  expect(set, "c = 8\nr = softmax(masked(q @ kt / c, m), -1) @ v", true);
  /* a 0-d tensor divisor, as `for c in [8, 3]` gives: its number */
  expect(set, "for c in [8] { r = softmax(masked(q @ kt / c, m), -1) @ v }", true);
  expect(set, "c = double(tensor(8))\nr = softmax(masked(q @ kt / c, m), -1) @ v", true);
  expect(set, "c = requires_grad(tensor(8.0))\nr = softmax(as_masked(q @ kt / c, m), -1) @ v",
         false); /* a recording divisor: op by op */
  expect(set, "f = fn(a, b, w) = softmax(masked(a @ transpose(b, 1, 2) / 8, m), -1) @ w\n"
              "r = f(q, k, v)", true);
  expect(set, "r = softmax(masked(double(q) @ kt / 8, m), -1) @ v", false); /* a call: not a variable */
  /* fallbacks: p split off; a masked or recording operand; a rebound name;
   * softmax along another dim */
  expect(set, "p = softmax(masked(q @ kt / 8, m), -1)\nr = p @ v", false);
  expect(set, "v = masked(v, rand(8, 512, 32) < 0.9)\nr = softmax(masked(q @ kt / 8, m), -1) @ v",
         false);
  /* recording: op by op, whose products the GEMM runs over the valid
   * keys (runtime/nn/attention.h: mq_attention_try); masked drops the
   * graph, op by op, saying so */
  expect(set, "q = requires_grad(q)\nr = softmax(as_masked(q @ kt / 8, m), -1) @ v", false);
  expect(set, "r = softmax(as_masked(q @ kt / 8, m), -1) @ v", true);
  expect_grad(set, "q = requires_grad(q)\np = softmax(as_masked(q @ kt / 8, m), -1)\nr = grad(sum(p @ v), q)",
              false);
  expect(set, "q = requires_grad(q)\nr = softmax(masked(q @ kt / 8, m), -1) @ v", false);
  expect(set, "masked = as_masked\nr = softmax(masked(q @ kt / 8, m), -1) @ v", false);
  expect(set, "r = softmax(masked(q @ kt / 8, m), 1) @ v", false);
  /* near misses of the pattern, each op by op: a dim that is not a literal,
   * keyword arguments, another call where transpose or softmax or masked
   * go, expressions where variables go, a rebound softmax */
  expect(set, "d = -1\nr = softmax(masked(q @ transpose(k, -2, d) / 8, m), -1) @ v", false);
  expect(set, "r = softmax(masked(q @ transpose(k, dim0=-2, dim1=-1) / 8, m), -1) @ v", false);
  expect(set, "r = softmax(masked(q @ flip(kt, 1) / 8, m), -1) @ v", false);
  expect(set, "r = softmax(masked(q @ kt / 8, m), dim=-1) @ v", false);
  expect(set, "r = log_softmax(masked(q @ kt / 8, m), -1) @ v", false);
  expect(set, "r = softmax(to_tensor(q @ kt / 8, 0.0), -1) @ v", false);
  expect(set, "r = softmax(masked(q @ kt / (4 * 2), m), -1) @ v", false);
  expect(set, "r = softmax(masked((q * 1) @ kt / 8, m), -1) @ v", false);
  expect(set, "r = softmax(masked(q @ kt / 8, m), -1) @ (v * 1)", false);
  expect(set, "r = softmax(masked(q @ kt * 8, m), -1) @ v", false);
  expect(set, "softmax = log_softmax\nr = softmax(masked(q @ kt / 8, m), -1) @ v", false);
  /* a captured variable is a leaf too */
  expect(set, "fn f(a) { g = fn() = softmax(masked(a @ kt / 8, m), -1) @ v\n return g() }\nr = f(q)",
         true);
  /* the attention builtin takes the same pass (runtime/nn/attention.h:
   * mq_attention_try), op by op under grad and for what that does not
   * take */
  expect(set, "r = attention(q, k, v, m, 8)", true);
  expect(set, "r = attention(q, k, v, rm)", true);
  expect(set, "r = attention(q, k, masked(v, rand(8, 512, 32) < 0.9), m, 8)", false);
  expect_grad(set, "q = requires_grad(q)\nr = grad(sum(attention(q, k, v, m, 8)), q)", false);
  expect_grad(set, "c = requires_grad(tensor(8.0))\nq = requires_grad(q)\n"
                   "r = grad(sum(attention(q, k, v, m, c)), q)",
              false);
  printf("test_attention_reach: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
