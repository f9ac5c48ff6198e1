/* fuzz_dis - source bytes -> masq_disassemble (what `masq --dis` and the
 * REPL's :dis do): parse, compile and print the bytecode without running
 * it. The state must still work afterwards. Every input gets a fresh state
 * (disassembly defines nothing, so one is as good as another). */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_budget budget;
  masq_state *M = fuzz_open(&budget, MASQ_LIB_DEFAULT);
  masq_status st = masq_disassemble(M, (const char *)data, size, "fuzz.masq");
  fuzz_check_status(M, st, "masq_disassemble", 1);
  if (st == MASQ_OK) {
    /* What disassembles must also compile when run (it may fail at run
     * time, but never as a syntax error). */
    budget.polls = 0;
    st = masq_eval(M, (const char *)data, size, "fuzz.masq", 0);
    fuzz_check_status(M, st, "masq_eval", 1);
    if (st == MASQ_ERR_SYNTAX) fuzz_fail("disassembled but does not compile", M);
  }
  if (!fuzz_state_works(M, &budget)) fuzz_fail("out of memory after disassembling", M);
  masq_close(M);
  return 0;
}
