/* test_fuse_reach.c - fused trees with call leaves and broadcast leaves
 * (vm/fuse.h) make no full-size temporaries: the bytes an evaluation
 * allocates say whether the tree ran fused (one full-size result) or op by
 * op (a temporary per op), so each case can fail both ways. That the
 * values are bitwise the op-by-op ones is tests/lang/fusion_broadcast. */
#include <stdbool.h>

#include "alloc_count.h"

static int passed, failed;

#define FULL ((size_t)512 * 2048 * 4) /* bytes of x */

/* [code] allocates under 1.5 full-size tensors (fused) or at least two. */
static void expect(const char *setup, const char *code, bool fused) {
  size_t got = allocated(setup, code);
  bool ok = got > 0 && (fused ? got < FULL * 3 / 2 : got >= FULL * 2);
  if (ok) {
    passed++;
  } else {
    failed++;
    printf("FAIL fuse_reach: %s | %s: %zu bytes (%.2f x), expected %s\n", setup, code, got,
           (double)got / (double)FULL, fused ? "< 1.5 x" : ">= 2 x");
  }
}

int main(void) {
  const char *x = "x = rand(512, 2048, dtype=\"float32\")";
  const char *xm = "x = masked(rand(512, 2048, dtype=\"float32\"), rand(512, 2048) < 0.7)";
  const char *norm = "r = (x - mean(x, 1, keepdim=true)) / std(x, 1, keepdim=true)";
  expect(x, norm, true);
  expect(xm, norm, true); /* row masks all valid: x's mask rides along */
  expect(x, "t = x - mean(x, 1, keepdim=true)\nr = t / std(x, 1, keepdim=true)", false);
  expect(x, "r = x * 2 - mean(x)", true);
  expect(xm, "r = x * 2 - mean(x)", true);
  expect(x, "r = exp(x - amax(x, 0, keepdim=true)) * 0.5", true);
  expect(x, "f = fn(v) = (v - mean(v, 1, keepdim=true)) / std(v, 1, keepdim=true)\nr = f(x)", true);
  /* fallbacks: a statistic of another dtype; masks of rows entirely masked
   * out combined with x's (a new mask, op by op) */
  expect(x, "r = (x - double(mean(x, 1, keepdim=true))) * 2", false);
  expect("x = masked(rand(512, 2048, dtype=\"float32\"), reshape(arange(512), [512, 1]) != 3)",
         norm, false);
  printf("test_fuse_reach: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
