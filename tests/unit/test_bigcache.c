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
   * in all), then 24 from 1 MiB, made and freed once in the setup */
  static const char *const cases[][2] = {{"40 buffers made again", "32768 + 1024 * i) for i in range(40)"},
                                         {"24 buffers of 1 MiB made again", "262144 + 1024 * i) for i in range(24)"}};
  for (int c = 0; c < 2; c++) {
    char set[300];
    snprintf(set, sizeof set, "fn step() {\n  ts = [zeros(%s]\n  return len(ts)\n}\nstep()\n", cases[c][1]);
    expect_under(cases[c][0], set, "n = step()", 1 << 20);
  }
  printf("test_bigcache: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
