/* unit.h - what the internal unit tests (tests/unit/test_*.c) share: the
 * state S they run in, their pass and fail counts, CHECK, and unit_main, which
 * opens S, runs a file's tests inside the error boundary (an error that no
 * test expected counts as one failure) and prints the
 * "name: N passed, N failed" line that tests/run_units.sh reads. */
#ifndef MQ_TEST_UNIT_H
#define MQ_TEST_UNIT_H

#include <stdio.h>

#include "../../core/state.h"

static mq_state *S;
static int passed, failed;

/* Counts [c] as a pass, or prints where it failed. */
#define CHECK(c)                                                               \
  do {                                                                         \
    if (c) passed++;                                                           \
    else {                                                                     \
      failed++;                                                                \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                      \
    }                                                                          \
  } while (0)

static int unit_main(const char *name, void (*tests)(mq_state *, void *)) {
  S = masq_open(NULL);
  if (!S) {
    printf("%s: cannot open a state\n", name);
    return 1;
  }
  if (mq_protect(S, tests, NULL) != MASQ_OK) {
    failed++;
    printf("FAIL %s: unexpected error: %s\n", name,
           S->err_message.data ? S->err_message.data : "?");
  }
  masq_close(S);
  printf("%s: %d passed, %d failed\n", name, passed, failed);
  return failed ? 1 : 0;
}

#endif
