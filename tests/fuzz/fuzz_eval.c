/* fuzz_eval - source bytes -> masq_eval in a sandboxed state (no file
 * access), with a memory limit and an interrupt budget; afterwards the
 * state must still evaluate 1 + 1 to 2.
 *
 * One state serves up to STATE_REUSE inputs in a row (opening one costs
 * about as much as running a short script), so what a script leaves behind
 * (globals, print options, a half-built value) meets the next one; every
 * STATE_REUSE-th input gets a fresh state. FUZZ_FRESH=1 in the environment
 * gives every input its own state, which makes a crash reproduce from its
 * input alone. Inputs of odd length run with MASQ_EVAL_ECHO, so values are
 * also printed. */
#include "fuzz.h"

#define STATE_REUSE 100

static masq_state *state;
static fuzz_budget budget;
static unsigned runs;

static void close_state(void) {
  masq_close(state);
  state = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int fresh = -1;
  if (fresh < 0) {
    const char *e = getenv("FUZZ_FRESH");
    fresh = e && *e && strcmp(e, "0") != 0;
  }
  if (state && (fresh || ++runs % STATE_REUSE == 0)) close_state();
  if (!state) state = fuzz_open(&budget, MASQ_LIB_DEFAULT);
  budget.polls = 0;
  int flags = size & 1 ? MASQ_EVAL_ECHO : 0;
  masq_status st = masq_eval(state, (const char *)data, size, "fuzz.masq", flags);
  fuzz_check_status(state, st, "masq_eval", 1);
  if (!fuzz_state_works(state, &budget)) {
    close_state();
    state = fuzz_open(&budget, MASQ_LIB_DEFAULT);
    if (!fuzz_state_works(state, &budget)) fuzz_fail("a fresh state is out of memory", state);
  }
  if (fresh) close_state();
  return 0;
}
