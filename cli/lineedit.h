/* lineedit.h - how the REPL reads its input: GNU readline on a terminal,
 * plain lines from stdin otherwise (pipes, `masq -i` transcripts).
 *
 * A thin shim so that repl.c never touches readline: it keeps the Ctrl-C
 * handling (readline's callback interface driven by poll(), readline's own
 * signal handling off, so that Ctrl-C stays the REPL's), the history file
 * format, and completion plumbing in one place. libmasq itself never links a
 * line editor (readline is GPL; hosts embed the library). */
#ifndef MASQ_CLI_LINEEDIT_H
#define MASQ_CLI_LINEEDIT_H

#include <stdbool.h>

typedef enum le_status {
  LE_LINE,     /* a line was read                                      */
  LE_EOF,      /* Ctrl-D on an empty line, or the end of piped input;
                  the cursor has been moved to a new line               */
  LE_INTERRUPT /* Ctrl-C: the line being typed was thrown away          */
} le_status;

/* Candidates collected for one Tab press. */
typedef struct le_matches le_matches;
void le_match_add(le_matches *m, const char *candidate);

typedef struct le_completion {
  /* The characters that end the word to complete, given the whole [line]
   * and the cursor position [point]. NULL: readline's default set. */
  const char *(*breaks)(void *ud, const char *line, int point);
  /* Adds the candidates for the word line[start, end) (each must start with
   * that word). Returns false to ask for file-name completion instead. */
  bool (*complete)(void *ud, const char *line, int start, int end, le_matches *m);
  void *ud;
} le_completion;

typedef struct le_config {
  bool editing;             /* readline (stdin is a terminal), else plain     */
  const char *history_path; /* editing only. NULL: no history file           */
  le_completion completion; /* editing only. NULL complete: no completion    */
} le_config;

/* At most this many history entries are kept, in memory and in the file. */
#define LE_HISTORY_MAX 1000

/* Sets up input and loads the history file. */
void le_open(const le_config *cfg);

/* Shows [prompt] and reads one line into *line (malloc'd, without the
 * newline; the caller frees it). With editing off, the prompt goes to stdout
 * as plain text. A recalled multi-line history entry comes back as one line
 * with embedded newlines. */
le_status le_read(const char *prompt, char **line);

/* Whether more input is already waiting to be read (typed ahead or pasted):
 * always true without editing, where the input is a pipe or a file. */
bool le_input_pending(void);

/* Adds a finished entry (possibly several lines) to the history and appends
 * it to the history file at once, so a crash loses nothing. Blank entries and
 * immediate repeats are skipped. */
void le_add_history(const char *entry);

/* Trims the history file and frees everything le_open set up. */
void le_close(void);

#endif
