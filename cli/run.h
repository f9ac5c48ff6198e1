/* run.h - running masq code for the CLI and reporting how it went; shared by
 * the script runner (main.c) and the REPL (repl.c). */
#ifndef MASQ_CLI_RUN_H
#define MASQ_CLI_RUN_H

#include <stddef.h>

#include "masq.h"

/* The masq_config.write hook: program output goes to stdout, and we remember
 * whether it ended a line (see run_fresh_line). */
void run_write(void *ud, const char *text, size_t len);

/* Ends a line that program output left open, so a prompt or message that
 * follows starts at column 0. Also flushes stdout. */
void run_fresh_line(void);

/* masq_eval / masq_eval_file with Ctrl-C routed to [M]. Any failure except
 * MASQ_INCOMPLETE is reported on stderr before returning. run_file reports a
 * file it cannot read as "masq: cannot open ..." and returns MASQ_ERR_USAGE. */
masq_status run_source(masq_state *M, const char *src, size_t len, const char *name,
                       int flags);
masq_status run_file(masq_state *M, const char *path);

/* Prints the rendered text of [M]'s last error (once; the library was opened
 * with no error hook, so nobody else prints it). */
void run_report(masq_state *M);

/* Prints "masq: cannot open 'path': reason" (errno) to stderr. */
void run_report_open_error(const char *path);

/* The process exit status for a run that ended with [st]: 0 ok, 1 runtime
 * (also memory and interrupted), 2 the CLI's own usage and I/O errors,
 * 3 syntax, the script's code for exit(code). Death by SIGINT is handled by the caller (sig_die_interrupted). */
int run_exit_code(masq_state *M, masq_status st);

#endif
