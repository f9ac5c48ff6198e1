/* run.c - see run.h. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif

#include "run.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "signals.h"

/* Whether the last program output ended with a newline (or there was none). */
static int g_at_line_start = 1;

void run_write(void *ud, const char *text, size_t len) {
  (void)ud;
  if (len == 0) return;
  fwrite(text, 1, len, stdout);
  g_at_line_start = text[len - 1] == '\n';
}

void run_fresh_line(void) {
  if (!g_at_line_start) fputc('\n', stdout);
  g_at_line_start = 1;
  fflush(stdout);
}

void run_report(masq_state *M) {
  const masq_error *e = masq_last_error(M);
  if (e->status == MASQ_EXIT) return; /* exit() is not an error */
  const char *text = e->rendered && *e->rendered ? e->rendered
                     : e->message && *e->message ? e->message
                                                 : "error: unknown error";
  size_t n = strlen(text);
  /* Keep stdout and stderr in order when both go to one terminal or file,
   * and don't glue the message to a half-written line on the screen (in a
   * file, the program's output stays exactly what it wrote). */
  if (isatty(STDOUT_FILENO))
    run_fresh_line();
  else
    fflush(stdout);
  fputs(text, stderr);
  if (text[n - 1] != '\n') fputc('\n', stderr);
}

void run_report_open_error(const char *path) {
  fflush(stdout);
  fprintf(stderr, "masq: cannot open '%s': %s\n", path, strerror(errno));
}

static void after_eval(void) {
  /* A terminal echoes Ctrl-C as "^C" where the cursor is; what we print
   * next belongs on a line of its own. */
  if (sig_end_eval() && isatty(STDIN_FILENO)) g_at_line_start = 0;
}

masq_status run_source(masq_state *M, const char *src, size_t len, const char *name,
                       int flags) {
  masq_status st;
  sig_begin_eval();
  st = masq_eval(M, src, len, name, flags);
  after_eval();
  if (st != MASQ_OK && st != MASQ_INCOMPLETE) run_report(M);
  return st;
}

/* Checks [path] before handing it to the library, so the CLI can tell "no
 * such file" (exit 2, like python and grep) from an error in the script. */
static int readable_file(const char *path) {
  struct stat sb;
  FILE *f = fopen(path, "r");
  int err = 0;
  if (!f) return 0;
  if (fstat(fileno(f), &sb) != 0)
    err = errno;
  else if (S_ISDIR(sb.st_mode))
    err = EISDIR;
  fclose(f);
  errno = err;
  return err == 0;
}

masq_status run_file(masq_state *M, const char *path) {
  masq_status st;
  if (!readable_file(path)) {
    run_report_open_error(path);
    return MASQ_ERR_USAGE;
  }
  sig_begin_eval();
  st = masq_eval_file(M, path);
  after_eval();
  if (st != MASQ_OK) run_report(M);
  return st;
}

int run_exit_code(masq_state *M, masq_status st) {
  switch (st) {
  case MASQ_OK: return 0;
  case MASQ_EXIT: return masq_last_error(M)->exit_code;
  case MASQ_ERR_USAGE: return 2;
  case MASQ_ERR_SYNTAX:
  case MASQ_INCOMPLETE: return 3;
  case MASQ_ERR_RUNTIME:
  case MASQ_ERR_MEMORY:
  case MASQ_ERR_INTERRUPTED: break;
  }
  return 1;
}
