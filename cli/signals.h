/* signals.h - the CLI's signal handling: Ctrl-C and terminal resizes.
 *
 * libmasq never installs signal handlers (masq.h); the CLI does, and this is
 * the only place with the static state a handler needs. Ctrl-C: SIGINT is
 * caught without SA_RESTART, so a blocked poll() or read() at the prompt
 * returns EINTR and the line editor sees the flag; while code runs, the handler also calls
 * masq_interrupt(), which masq.h allows from a signal handler, and the
 * library stops at its next safe point with MASQ_ERR_INTERRUPTED. */
#ifndef MASQ_CLI_SIGNALS_H
#define MASQ_CLI_SIGNALS_H

#include "masq.h"

/* Catches SIGINT and SIGWINCH, ignores SIGXFSZ; [M] is the interpreter
 * Ctrl-C interrupts. */
void sig_install(masq_state *M);

/* Bracket every call that runs masq code. Ctrl-C in between interrupts [M];
 * a third Ctrl-C the program has not answered kills the process, so a stuck
 * kernel can always be left. sig_end_eval() clears the Ctrl-C flag and
 * returns whether Ctrl-C was pressed. */
void sig_begin_eval(void);
int sig_end_eval(void);

/* Whether Ctrl-C (resp. a terminal resize) happened since the last call;
 * clears the flag. */
int sig_take_interrupt(void);
int sig_take_resize(void);

/* While the line editor has the terminal in raw mode, Ctrl-Z must not stop
 * the process before the terminal is given back. Between sig_catch_stop(1)
 * and sig_catch_stop(0), SIGTSTP only sets a flag (if our parent lets us be
 * stopped at all); sig_stop() then stops the process as Ctrl-Z would and
 * returns when it is continued (fg). */
void sig_catch_stop(int on);
int sig_take_stop(void);
void sig_stop(void);

/* Ends the process the way an uncaught SIGINT would, so a calling shell sees
 * "killed by SIGINT" (status 130) and stops its own loop too (Python 3.8+
 * does the same). */
_Noreturn void sig_die_interrupted(void);

#endif
