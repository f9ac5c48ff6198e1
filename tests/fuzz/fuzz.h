/* fuzz.h - what the fuzz harnesses share: a state opened the way an
 * untrusted script would get one (output discarded, a memory limit, an
 * interrupt budget so endless loops end), and the checks every harness
 * makes after each input: statuses are documented ones, errors come with a
 * message, and the state still evaluates 1 + 1 to 2.
 *
 * A harness may abort() when a check fails (that is how libFuzzer learns of
 * the bug); the library never does. Each harness defines
 * LLVMFuzzerTestOneInput and is linked either with libFuzzer or with
 * replay.c, which runs the files named on its command line. */
#ifndef MASQ_FUZZ_H
#define MASQ_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "masq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input of a harness that reads it a byte at a time (the API call
 * sequences): fuzz_byte gives 0 once it runs out. */
typedef struct fuzz_input {
  const uint8_t *p;
  size_t n;
} fuzz_input;

static inline unsigned fuzz_byte(fuzz_input *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

/* Bytes a fuzzed state may hold: far more than any short script needs,
 * small enough that many states fit in libFuzzer's RSS limit. */
#define FUZZ_MEMORY_LIMIT ((size_t)64 << 20)
/* Interrupt polls before the hook stops a program. The VM polls every 1024
 * backward jumps and calls, and kernels poll per row, so this allows some
 * 50 000 rounds of a loop: plenty for any finite short script, and an
 * endless loop of tensor ops still ends within a second under ASan. */
#define FUZZ_POLL_BUDGET 48u

typedef struct fuzz_budget {
  unsigned polls, limit;
} fuzz_budget;

static inline int fuzz_interrupt_hook(void *ud) {
  fuzz_budget *b = ud;
  return ++b->polls > b->limit;
}

static inline void fuzz_discard(void *ud, const char *text, size_t len) {
  (void)ud;
  (void)text;
  (void)len;
}

static inline void fuzz_fail(const char *what, masq_state *M) {
  fprintf(stderr, "fuzz: %s\n", what);
  if (M) {
    const masq_error *e = masq_last_error(M);
    fprintf(stderr, "  last error (status %d): %s\n", (int)e->status,
            e->rendered ? e->rendered : "(no message)");
  }
  abort();
}

/* Opens a state like an untrusted script's: only [libs], output dropped,
 * FUZZ_MEMORY_LIMIT, and [budget] as the interrupt hook. */
static inline masq_state *fuzz_open(fuzz_budget *budget, unsigned libs) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.memory_limit = FUZZ_MEMORY_LIMIT;
  cfg.interrupt = fuzz_interrupt_hook;
  cfg.interrupt_ud = budget;
  cfg.write = fuzz_discard;
  cfg.libs = libs;
  budget->polls = 0;
  budget->limit = FUZZ_POLL_BUDGET;
  /* One kernel thread: the fuzzers share the machine (MASQ_NUM_THREADS
   * set by the caller wins). */
  setenv("MASQ_NUM_THREADS", "1", 0);
  masq_state *M = masq_open(&cfg);
  if (!M) fuzz_fail("masq_open failed with 64 MB to spare", NULL);
  return M;
}

/* A state shared by up to FUZZ_STATE_REUSE inputs in a row (opening one
 * costs about as much as running a short script, far more under ASan), so
 * what an input leaves behind meets the next one; every FUZZ_STATE_REUSE-th
 * input gets a fresh one. FUZZ_FRESH=1 in the environment gives every input
 * its own state, so that a crash reproduces from its input alone. */
#define FUZZ_STATE_REUSE 100

typedef struct fuzz_session {
  masq_state *M;
  fuzz_budget budget;
  unsigned runs;
  int fresh; /* -1 until FUZZ_FRESH is read */
} fuzz_session;

/* The state for the next input, with a fresh interrupt budget. */
static inline masq_state *fuzz_session_state(fuzz_session *s) {
  if (s->fresh < 0) {
    const char *e = getenv("FUZZ_FRESH");
    s->fresh = e && *e && strcmp(e, "0") != 0;
  }
  if (s->M && (s->fresh || ++s->runs % FUZZ_STATE_REUSE == 0)) {
    masq_close(s->M);
    s->M = NULL;
  }
  if (!s->M) s->M = fuzz_open(&s->budget, MASQ_LIB_DEFAULT);
  s->budget.polls = 0;
  return s->M;
}

/* Aborts unless [st] is a documented status and, for an error, the last
 * error repeats it with a message; a syntax or runtime error from running
 * source must also say where (line >= 1). [what] names the call. */
static inline void fuzz_check_status(masq_state *M, masq_status st, const char *what, int located) {
  if ((int)st < (int)MASQ_OK || (int)st > (int)MASQ_EXIT || st == MASQ_INCOMPLETE) {
    fprintf(stderr, "fuzz: %s returned undocumented status %d\n", what, (int)st);
    abort();
  }
  if (st == MASQ_OK) return;
  const masq_error *e = masq_last_error(M);
  if (st == MASQ_EXIT) { /* a script's exit(code): no message to render */
    if (e->status != st || e->exit_code < 0 || e->exit_code > 255 || !e->rendered || e->rendered[0])
      fuzz_fail("exit() without its code, or with a rendered message", M);
    return;
  }
  if (e->status != st) fuzz_fail("masq_last_error() has another status than the call", M);
  if (!e->message || !e->message[0] || !e->rendered || !e->rendered[0])
    fuzz_fail("an error without a message", M);
  if (located && (st == MASQ_ERR_SYNTAX || st == MASQ_ERR_RUNTIME) && e->line < 1)
    fuzz_fail("a syntax or runtime error without a location", M);
}

/* Does [M] still work? Evaluates 1 + 1 with a fresh budget and aborts
 * unless it gives 2. Returns 0 when the state is merely full (the script
 * filled the memory limit with globals), so the caller can open another.
 * A masq_interrupt() made while nothing ran may stop the first try. */
static inline int fuzz_state_works(masq_state *M, fuzz_budget *budget) {
  static const char probe[] = "fuzz_probe_ = 1 + 1";
  budget->polls = 0;
  masq_status st = masq_eval(M, probe, sizeof probe - 1, "<probe>", 0);
  if (st == MASQ_ERR_INTERRUPTED) st = masq_eval(M, probe, sizeof probe - 1, "<probe>", 0);
  if (st == MASQ_ERR_MEMORY) return 0;
  if (st != MASQ_OK) fuzz_fail("the state no longer evaluates 1 + 1", M);
  double two = 0;
  st = masq_get_number(M, "fuzz_probe_", &two);
  if (st == MASQ_ERR_MEMORY) return 0;
  if (st != MASQ_OK || two != 2) fuzz_fail("1 + 1 is no longer 2", M);
  return 1;
}

/* After an input: the state must still work; one merely full (the input
 * filled the memory limit with globals) is replaced, and a fresh one must
 * work. A FUZZ_FRESH session closes its state. */
static inline void fuzz_session_done(fuzz_session *s) {
  if (!fuzz_state_works(s->M, &s->budget)) {
    masq_close(s->M);
    s->M = fuzz_open(&s->budget, MASQ_LIB_DEFAULT);
    if (!fuzz_state_works(s->M, &s->budget)) fuzz_fail("a fresh state is out of memory", s->M);
  }
  if (s->fresh) {
    masq_close(s->M);
    s->M = NULL;
  }
}

#endif
