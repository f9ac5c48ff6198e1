/* test_bigcache.c - a state reuses the tensor buffers it freed (the cache
 * of core/state.h, mq_alloc_big): a loop that makes and frees the same
 * dozens of buffers each time around, as a training step's backward does,
 * asks the host allocator for none of them after the first time. Each
 * would otherwise be fresh pages (glibc maps blocks this large or trims
 * them off the heap when freed), and their page faults were a fifth of a
 * padded encoder step (issue 30). Counted with alloc_count.h. */
#include <stdbool.h>

#include "alloc_count.h"

static int passed, failed;

static void expect_under(const char *what, const char *setup, const char *code, size_t below) {
  size_t got = allocated(setup, code);
  if (got > 0 && got < below) {
    passed++;
  } else {
    failed++;
    printf("FAIL bigcache: %s: %zu bytes allocated, expected under %zu\n", what, got, below);
  }
}

int main(void) {
  /* 40 float32 buffers of distinct sizes from 128 KiB to 284 KiB (8 MiB
   * in all), made and freed once in the setup */
  const char *set = "fn step() {\n"
                    "  ts = [zeros(32768 + 1024 * i) for i in range(40)]\n"
                    "  return len(ts)\n"
                    "}\n"
                    "step()\n";
  expect_under("40 buffers made again", set, "n = step()", 1 << 20);
  /* and more than 16 distinct sizes of 1 MiB and more */
  const char *big = "fn step() {\n"
                    "  ts = [zeros(262144 + 1024 * i) for i in range(24)]\n"
                    "  return len(ts)\n"
                    "}\n"
                    "step()\n";
  expect_under("24 buffers of 1 MiB made again", big, "n = step()", 1 << 20);
  printf("test_bigcache: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
