/* repl.h - the interactive loop of the masq command. */
#ifndef MASQ_CLI_REPL_H
#define MASQ_CLI_REPL_H

#include <stdbool.h>

#include "masq.h"

typedef struct repl_options {
  /* stdin is a terminal: readline editing, history, Tab completion and the
   * banner. Off (masq -i on a pipe): plain prompts on stdout, for transcripts. */
  bool editing;
  bool color; /* colour the prompt (only with editing) */
} repl_options;

/* Reads, evaluates and echoes input on [M] until Ctrl-D or :quit. Errors are
 * printed and never end the loop. Returns the exit status (0). */
int repl_run(masq_state *M, const repl_options *opt);

#endif
