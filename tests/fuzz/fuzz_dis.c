/* fuzz_dis - source bytes -> masq_disassemble (what `masq --dis` and the
 * REPL's :dis do): parse, compile and print the bytecode without running
 * it; what disassembles must then also compile when run. The state must
 * still work afterwards. States are shared by runs of inputs (fuzz.h:
 * fuzz_session), so disassembly meets globals earlier inputs defined. */
#include "fuzz.h"

static fuzz_session session = {.fresh = -1};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  masq_state *M = fuzz_session_state(&session);
  masq_status st = masq_disassemble(M, (const char *)data, size, "fuzz.masq");
  fuzz_check_status(M, st, "masq_disassemble", 1);
  if (st == MASQ_OK) {
    /* It may fail at run time, but never as a syntax error. */
    session.budget.polls = 0;
    st = masq_eval(M, (const char *)data, size, "fuzz.masq", 0);
    fuzz_check_status(M, st, "masq_eval", 1);
    if (st == MASQ_ERR_SYNTAX) fuzz_fail("disassembled but does not compile", M);
  }
  fuzz_session_done(&session);
  return 0;
}
