/* lineedit.c - see lineedit.h.
 *
 * History file format: one entry per line, with '\' written as "\\" and a
 * newline inside an entry written as "\n". GNU readline's own history files
 * store an entry's newlines raw, so a multi-line entry would come back as
 * several entries; escaping keeps each entry whole, lets Up recall a
 * multi-line block as one unit, and keeps "one line = one entry" so trimming
 * the file by lines (histfile.c) trims it by entries. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* getline */
#endif

#include "lineedit.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "histfile.h"
#include "signals.h"

/* The shim's state. Readline is a process-wide singleton, so this is too. */
static struct {
  bool editing;
  char *history_path; /* owned; NULL: no history file */
  le_completion completion;
  /* Filled by on_line() while le_read waits. */
  bool done;
  char *line;
} g;

/* --- history file ------------------------------------------------------- */

/* Decodes the escapes of the file format in place. An unknown escape is kept
 * as it is, so a hand-edited file never loses characters. */
static void unescape(char *s) {
  char *out = s;
  for (; *s; s++) {
    if (s[0] == '\\' && (s[1] == 'n' || s[1] == '\\')) {
      *out++ = s[1] == 'n' ? '\n' : '\\';
      s++;
    } else {
      *out++ = *s;
    }
  }
  *out = '\0';
}

static void load_history(const char *path) {
  FILE *f = fopen(path, "r");
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int count = 0;
  if (!f) return;
  while ((n = getline(&line, &cap, f)) > 0) {
    if (line[n - 1] == '\n') line[n - 1] = '\0';
    unescape(line);
    add_history(line);
    count++;
  }
  free(line);
  fclose(f);
  if (count > LE_HISTORY_MAX) hist_trim(path, LE_HISTORY_MAX);
}

/* Appends [entry] as one escaped line with a single write(), so sessions
 * running side by side never interleave inside an entry (histfile.c). The
 * file is private (0600): history can hold anything that was typed. */
static void save_entry(const char *path, const char *entry) {
  size_t n = strlen(entry), len = 0;
  char *buf = malloc(2 * n + 2);
  if (!buf) return;
  for (const char *s = entry; *s; s++) {
    if (*s == '\n' || *s == '\\') {
      buf[len++] = '\\';
      buf[len++] = *s == '\n' ? 'n' : '\\';
    } else {
      buf[len++] = *s;
    }
  }
  buf[len++] = '\n';
  hist_append(path, buf, len); /* history is best effort */
  free(buf);
}

static bool is_blank(const char *s) {
  return s[strspn(s, " \t\r\n")] == '\0';
}

void le_add_history(const char *entry) {
  HIST_ENTRY *last;
  if (!g.editing || is_blank(entry)) return;
  last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
  if (last && strcmp(last->line, entry) == 0) return;
  add_history(entry);
  if (g.history_path) save_entry(g.history_path, entry);
}

/* --- completion --------------------------------------------------------- */

struct le_matches {
  char **v;
  size_t n, cap, next;
};

/* Candidates of the current Tab press; handed to readline one by one. */
static le_matches g_matches;

void le_match_add(le_matches *m, const char *candidate) {
  char *copy;
  if (m->n == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 16;
    char **v = realloc(m->v, cap * sizeof *v);
    if (!v) return; /* completion is best effort */
    m->v = v;
    m->cap = cap;
  }
  if ((copy = strdup(candidate))) m->v[m->n++] = copy;
}

/* Readline's generator protocol: [state] 0 starts over; each string returned
 * becomes readline's to free. */
static char *next_match(const char *text, int state) {
  (void)text;
  if (state == 0) g_matches.next = 0;
  return g_matches.next < g_matches.n ? g_matches.v[g_matches.next++] : NULL;
}

static char **attempt_completion(const char *text, int start, int end) {
  char **result;
  g_matches.n = 0;
  if (!g.completion.complete(g.completion.ud, rl_line_buffer, start, end, &g_matches))
    return NULL; /* readline falls back to file names */
  rl_attempted_completion_over = 1;  /* no file names when we found nothing */
  rl_completion_append_character = '\0';
  result = g_matches.n ? rl_completion_matches(text, next_match) : NULL;
  /* Strings the generator did not hand out are still ours. */
  while (g_matches.next < g_matches.n) free(g_matches.v[g_matches.next++]);
  g_matches.n = g_matches.next = 0;
  return result;
}

static char *word_breaks(void) {
  /* Readline's hook type returns a non-const char *; it only reads it. */
  return (char *)g.completion.breaks(g.completion.ud, rl_line_buffer, rl_point);
}

/* --- reading ------------------------------------------------------------ */

static void on_line(char *line) {
  /* Removing the handler here, not after the wait loop, keeps readline from
   * drawing the prompt twice. */
  rl_callback_handler_remove();
  g.line = line;
  g.done = true;
}

/* Ctrl-C at the prompt: leave what was typed on screen followed by ^C, as a
 * shell does, and forget it. */
static void discard_line(void) {
  rl_point = rl_end;
  rl_redisplay();
  fputs("^C", rl_outstream);
  rl_crlf();
  rl_free_line_state();
  rl_callback_sigcleanup();
  rl_replace_line("", 0);
  rl_callback_handler_remove();
}

/* Whether readline itself moved to a new line when it read EOF: 8.2 does
 * when bracketed paste is on, because switching that mode off ends in "\r"
 * (and 8.1 left the cursor on the prompt at column 0 then). */
static int readline_ended_line(void) {
#if RL_READLINE_VERSION >= 0x0802
  const char *paste = rl_variable_value("enable-bracketed-paste");
  return paste && strcmp(paste, "on") == 0;
#else
  return 0;
#endif
}

/* Ctrl-Z at the prompt: give the terminal back before stopping, and take
 * it again and redraw the line after fg. (Readline would do this itself if
 * it handled signals, but then Ctrl-C would not be ours.) */
static void suspend(void) {
  rl_cleanup_after_signal();
  sig_stop();
  rl_reset_after_signal();
  rl_forced_update_display();
}

static le_status wait_for_line(void) {
  struct pollfd pfd;
  while (!g.done) {
    /* A signal may also land while readline processes a key, when no
     * poll() is there to be interrupted, so look at the flags first. */
    if (sig_take_interrupt()) {
      discard_line();
      return LE_INTERRUPT;
    }
    if (sig_take_stop()) suspend();
    if (sig_take_resize()) rl_resize_terminal();
    pfd.fd = fileno(rl_instream);
    pfd.events = POLLIN;
    if (poll(&pfd, 1, -1) < 0) {
      if (errno == EINTR) continue;
      rl_callback_handler_remove();
      return LE_EOF;
    }
    rl_callback_read_char();
  }
  return g.line ? LE_LINE : LE_EOF;
}

static le_status read_edited(const char *prompt, char **out) {
  le_status st;
  if (sig_take_resize()) rl_reset_screen_size();
  g.done = false;
  g.line = NULL;
  sig_catch_stop(1);
  rl_callback_handler_install(prompt, on_line);
  st = wait_for_line();
  sig_catch_stop(0);
  if (st != LE_LINE) {
    if (st == LE_EOF && !readline_ended_line()) fputc('\n', rl_outstream);
    return st;
  }
  *out = g.line;
  return LE_LINE;
}

static le_status read_plain(const char *prompt, char **out) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  fputs(prompt, stdout);
  fflush(stdout);
  errno = 0;
  n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    if (errno == EINTR && sig_take_interrupt()) {
      clearerr(stdin);
      fputc('\n', stdout);
      return LE_INTERRUPT;
    }
    fputc('\n', stdout);
    return LE_EOF;
  }
  if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
  if (n > 0 && line[n - 1] == '\r') line[--n] = '\0';
  *out = line;
  return LE_LINE;
}

bool le_input_pending(void) {
  struct pollfd pfd = {0, POLLIN, 0};
  if (!g.editing) return true; /* a pipe: all of it was written beforehand */
  pfd.fd = fileno(rl_instream);
  return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
}

le_status le_read(const char *prompt, char **line) {
  *line = NULL;
  return g.editing ? read_edited(prompt, line) : read_plain(prompt, line);
}

/* --- setup -------------------------------------------------------------- */

void le_open(const le_config *cfg) {
  memset(&g, 0, sizeof g);
  g.editing = cfg->editing;
  if (!g.editing) return;
  g.completion = cfg->completion;

  rl_readline_name = "masq"; /* for $if masq in ~/.inputrc */
  rl_catch_signals = 0;      /* Ctrl-C is ours (signals.h)          */
  rl_catch_sigwinch = 0;     /* so is SIGWINCH: see read_edited     */
  rl_change_environment = 0; /* don't export LINES/COLUMNS into the library's environment */
  if (g.completion.complete) {
    rl_attempted_completion_function = attempt_completion;
    rl_completer_quote_characters = "\"'";
    if (g.completion.breaks) rl_completion_word_break_hook = word_breaks;
  } else {
    rl_bind_key('\t', rl_insert);
  }

  stifle_history(LE_HISTORY_MAX);
  if (cfg->history_path && *cfg->history_path) {
    g.history_path = strdup(cfg->history_path);
    if (g.history_path) load_history(g.history_path);
  }
}

void le_close(void) {
  if (!g.editing) return;
  if (g.history_path) hist_trim(g.history_path, LE_HISTORY_MAX);
  free(g.history_path);
  clear_history();
  free(g_matches.v);
  memset(&g_matches, 0, sizeof g_matches);
  memset(&g, 0, sizeof g);
}
