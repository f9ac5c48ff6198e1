/* assert.c - the report of a broken contract (assert.h). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

void mq_assert_fail(const char *file, int line, const char *expr) {
  /* a bug in masq, not an error of the program it runs: nothing to unwind
   * to that could be trusted, so the checked builds stop here */
  fprintf(stderr, "masq: contract broken at %s:%d: %s\n", file, line, expr);
  fflush(stderr);
  abort();
}

bool mq_checks_enabled(void) {
#ifdef MQ_CHECKS
  return true;
#else
  return false;
#endif
}
