/* signals.c - see signals.h. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* SIGWINCH is not in POSIX.1-2008 */
#endif

#include "signals.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Set once before the handler is installed and never changed afterwards. */
static masq_state *g_state;
static volatile sig_atomic_t g_interrupt;  /* Ctrl-C since the last take   */
static volatile sig_atomic_t g_resize;     /* SIGWINCH since the last take */
static volatile sig_atomic_t g_evaluating; /* masq code is running         */
static volatile sig_atomic_t g_unanswered; /* Ctrl-Cs during this run      */
static volatile sig_atomic_t g_stop;       /* Ctrl-Z at the prompt         */
static int g_may_stop;                     /* SIGTSTP was not ignored      */

/* Ctrl-Cs while code runs before the CLI gives up waiting for the library. */
enum { GIVE_UP_AFTER = 3 };

static void on_sigint(int sig) {
  int saved_errno = errno;
  g_interrupt = 1;
  if (g_evaluating) {
    masq_interrupt(g_state);
    if (++g_unanswered >= GIVE_UP_AFTER) {
      static const char msg[] = "\nmasq: not responding to Ctrl-C; quitting\n";
      ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
      (void)ignored;
      signal(sig, SIG_DFL);
      raise(sig);
    }
  }
  errno = saved_errno;
}

static void on_sigwinch(int sig) {
  (void)sig;
  g_resize = 1;
}

static void on_sigtstp(int sig) {
  (void)sig;
  g_stop = 1;
}

static void catch(int sig, void (*fn)(int), int flags) {
  struct sigaction sa;
  sa.sa_handler = fn;
  sa.sa_flags = flags;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

void sig_install(masq_state *M) {
  struct sigaction old;
  g_state = M;
  /* A parent that ignores SIGINT (a background job of a non-interactive
   * shell, nohup) wants it to stay ignored. Otherwise, no SA_RESTART: the
   * wait for input must end when Ctrl-C is pressed. */
  if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
    catch(SIGINT, on_sigint, 0);
  /* SA_RESTART: a resize must not make the library's own reads fail. The
   * prompt still notices, because poll() is never restarted. */
  catch(SIGWINCH, on_sigwinch, SA_RESTART);
  g_may_stop = sigaction(SIGTSTP, NULL, &old) == 0 && old.sa_handler == SIG_DFL;
  /* A write past the file size limit (ulimit -f) then fails with EFBIG,
   * which the history file handles (histfile.c), instead of ending the
   * process. (The library checks the limit before it writes.) */
  catch(SIGXFSZ, SIG_IGN, 0);
}

void sig_catch_stop(int on) {
  if (!g_may_stop) return;
  g_stop = 0;
  if (on)
    catch(SIGTSTP, on_sigtstp, 0); /* no SA_RESTART: end the wait for a key */
  else
    catch(SIGTSTP, SIG_DFL, 0);
}

int sig_take_stop(void) {
  int seen = g_stop != 0;
  g_stop = 0;
  return seen;
}

void sig_stop(void) {
  catch(SIGTSTP, SIG_DFL, 0);
  raise(SIGTSTP); /* returns once we are continued */
  catch(SIGTSTP, on_sigtstp, 0);
}

void sig_begin_eval(void) {
  g_interrupt = 0;
  g_unanswered = 0;
  g_evaluating = 1;
}

int sig_end_eval(void) {
  int pressed = g_interrupt != 0;
  g_evaluating = 0;
  g_interrupt = 0;
  return pressed;
}

int sig_take_interrupt(void) {
  int seen = g_interrupt != 0;
  g_interrupt = 0;
  return seen;
}

int sig_take_resize(void) {
  int seen = g_resize != 0;
  g_resize = 0;
  return seen;
}

_Noreturn void sig_die_interrupted(void) {
  fflush(stdout);
  signal(SIGINT, SIG_DFL);
  raise(SIGINT);
  exit(130); /* only if SIGINT is blocked or ignored by our parent */
}
