/* fuzz_eval - source bytes -> masq_eval in a sandboxed state (no file
 * access), with a memory limit and an interrupt budget; afterwards the
 * state must still evaluate 1 + 1 to 2. States are shared by runs of
 * inputs (fuzz.h: fuzz_session). Inputs of odd length run with
 * MASQ_EVAL_ECHO, so values are also printed. */
#include "fuzz.h"

static fuzz_session session = {.fresh = -1};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  masq_state *M = fuzz_session_state(&session);
  int flags = size & 1 ? MASQ_EVAL_ECHO : 0;
  masq_status st = masq_eval(M, (const char *)data, size, "fuzz.masq", flags);
  fuzz_check_status(M, st, "masq_eval", 1);
  fuzz_session_done(&session);
  return 0;
}
