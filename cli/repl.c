/* repl.c - the interactive loop: prompts, continuation lines, :commands and
 * Tab completion. Input comes through lineedit.h, code runs through run.h. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* strndup */
#endif

#include "repl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lineedit.h"
#include "run.h"

#define PROMPT "masq> "
#define PROMPT_CONTINUE "  ...> "
/* Readline needs the escape codes bracketed by \001 and \002 so it does not
 * count them in the prompt's width. */
#define COLOR_PROMPT "\001\033[1;32m\002masq>\001\033[0m\002 "
#define COLOR_PROMPT_CONTINUE "  \001\033[2m\002...>\001\033[0m\002 "

#define BANNER "masq " MASQ_VERSION_STRING \
  " \xe2\x80\x94 masked tensor expressions. :help for help, Ctrl-D to exit.\n"

/* Characters that end an identifier, for completing names in expressions. */
#define IDENT_BREAKS " \t\n\"'`~!@#$%^&*()-=+[]{}\\|;:,.<>/?"

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q) {
    fputs("masq: out of memory\n", stderr);
    exit(1);
  }
  return q;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xrealloc(NULL, n), s, n);
}

static const char *skip_space(const char *s) {
  return s + strspn(s, " \t");
}

static bool is_blank(const char *s) {
  return s[strspn(s, " \t\r\n")] == '\0';
}

/* --- :commands ---------------------------------------------------------- */

typedef enum arg_kind { ARG_NONE, ARG_NAME, ARG_FILE, ARG_CODE } arg_kind;

/* A command's handler; returns true to leave the REPL. [arg] is trimmed. */
typedef bool (*command_fn)(masq_state *M, const char *arg);

typedef struct command {
  const char *name, *alias;
  arg_kind arg;
  const char *usage, *help;
  command_fn run;
} command;

static bool cmd_help(masq_state *M, const char *arg);
static bool cmd_vars(masq_state *M, const char *arg);
static bool cmd_load(masq_state *M, const char *arg);
static bool cmd_dis(masq_state *M, const char *arg);
static bool cmd_time(masq_state *M, const char *arg);
static bool cmd_quit(masq_state *M, const char *arg);

/* The one list the dispatcher, :help and Tab completion all read. */
static const command commands[] = {
  {"help", NULL, ARG_NAME, ":help [NAME]", "this overview, what builtin NAME does, keyword NAME's syntax, or the builtins that mention a word", cmd_help},
  {"vars", NULL, ARG_NONE, ":vars", "list your variables with their shapes", cmd_vars},
  {"load", NULL, ARG_FILE, ":load FILE", "run a script in this session", cmd_load},
  {"dis", NULL, ARG_CODE, ":dis CODE", "show the bytecode CODE compiles to", cmd_dis},
  {"time", NULL, ARG_CODE, ":time CODE", "run CODE and say how long it took (wall clock)", cmd_time},
  {"quit", "q", ARG_NONE, ":quit, :q", "leave (so does Ctrl-D)", cmd_quit},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name, size_t len) {
  for (size_t i = 0; i < NCOMMANDS; i++) {
    const command *c = &commands[i];
    if ((strlen(c->name) == len && memcmp(c->name, name, len) == 0) ||
        (c->alias && strlen(c->alias) == len && memcmp(c->alias, name, len) == 0))
      return c;
  }
  return NULL;
}

static const char overview[] =
    "masq evaluates expressions over masked tensors: every element has a value\n"
    "and a flag saying whether it is valid, and operations skip invalid ones.\n"
    "\n"
    "  x = [[1, 2], [3, 4]]     make a tensor and name it\n"
    "  x * 2 + 1                operators: + - * / // % ** @  == != < <= > >=\n"
    "  m = masked(x, x > 1)     hide the entries where the mask is false\n"
    "  sum(m, 1)                builtins skip hidden entries (:help sum)\n"
    "  _                        the last result shown\n"
    "\n"
    "A line with an open bracket or block continues on the next one (  ...>),\n"
    "and so does an if block, for an else on the next line; an empty line ends\n"
    "it. A string ends on its line. Tab completes names (after x. the builtins\n"
    "that take a tensor), Up/Down walk the history, Ctrl-C stops a computation\n"
    "or discards the line, Ctrl-L clears the screen. A pasted session runs\n"
    "line by line as typed, without its masq> and ...> prompts and output lines.\n"
    "\n"
    "Commands (at the start of a line):\n";

/* :help WORD when WORD names no builtin or keyword: the builtins whose
 * name or help mentions it (`:help csv` finds load_csv and save_csv), each
 * as its signature, so a topic leads somewhere. */
typedef struct help_search {
  masq_state *M;
  const char *word;
  int found;
} help_search;

/* Whether [hay] contains [needle], ignoring ASCII case. */
static bool mentions(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; hay++) {
    size_t i = 0;
    while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
      i++;
    if (i == n) return true;
  }
  return false;
}

static void help_match(void *ud, const char *name) {
  help_search *h = ud;
  const char *doc = masq_doc(h->M, name);
  if (!doc || (!mentions(name, h->word) && !mentions(doc, h->word))) return;
  if (!h->found++)
    printf("no builtin or keyword named '%s'; the builtins that mention it:\n", h->word);
  const char *end = strstr(doc, " -- ");
  int len = end ? (int)(end - doc) : (int)strlen(doc);
  if (len > 76) printf("  %.73s...\n", doc);
  else printf("  %.*s\n", len, doc);
}

static bool cmd_help(masq_state *M, const char *arg) {
  const char *doc;
  if (*arg == ':') {
    const command *c = find_command(arg + 1, strlen(arg + 1));
    if (!c) {
      fprintf(stderr, "unknown command '%s' (try :help)\n", arg);
      return false;
    }
    printf("%s  %s\n", c->usage, c->help);
    return false;
  }
  if (*arg) {
    if ((doc = masq_doc(M, arg))) {
      printf("%s\n", doc);
      return false;
    }
    help_search h = {M, arg, 0};
    masq_complete(M, "", help_match, &h);
    if (!h.found) fprintf(stderr, "no builtin or keyword named '%s'\n", arg);
    return false;
  }
  fputs(overview, stdout);
  for (size_t i = 0; i < NCOMMANDS; i++)
    printf("  %-14s %s\n", commands[i].usage, commands[i].help);
  return false;
}

typedef struct var_list {
  char **names, **summaries;
  size_t n, cap;
} var_list;

static void add_var(void *ud, const char *name, const char *summary) {
  var_list *v = ud;
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 16;
    v->names = xrealloc(v->names, v->cap * sizeof *v->names);
    v->summaries = xrealloc(v->summaries, v->cap * sizeof *v->summaries);
  }
  v->names[v->n] = xstrdup(name);
  v->summaries[v->n] = xstrdup(summary ? summary : "");
  v->n++;
}

/* Names longer than this don't push every summary to the right. */
enum { VARS_NAME_COLUMN = 16 };

static bool cmd_vars(masq_state *M, const char *arg) {
  var_list v = {0};
  int width = 0;
  (void)arg;
  masq_globals(M, add_var, &v);
  if (v.n == 0) puts("(no variables)");
  for (size_t i = 0; i < v.n; i++) {
    int len = (int)strlen(v.names[i]);
    if (len > width && len <= VARS_NAME_COLUMN) width = len;
  }
  for (size_t i = 0; i < v.n; i++) {
    printf("%-*s  %s\n", width, v.names[i], v.summaries[i]);
    free(v.names[i]);
    free(v.summaries[i]);
  }
  free(v.names);
  free(v.summaries);
  return false;
}

/* :load takes a file name as typed, optionally in quotes, with ~/ for $HOME. */
static char *expand_path(const char *arg) {
  size_t len = strlen(arg);
  const char *home = getenv("HOME");
  char *path;
  if (len >= 2 && (arg[0] == '"' || arg[0] == '\'') && arg[len - 1] == arg[0]) {
    arg++;
    len -= 2;
  }
  if (len >= 2 && arg[0] == '~' && arg[1] == '/' && home) {
    path = xrealloc(NULL, strlen(home) + len);
    sprintf(path, "%s%.*s", home, (int)len - 1, arg + 1);
    return path;
  }
  path = xrealloc(NULL, len + 1);
  memcpy(path, arg, len);
  path[len] = '\0';
  return path;
}

static bool cmd_load(masq_state *M, const char *arg) {
  char *path = expand_path(arg);
  run_file(M, path);
  free(path);
  return false;
}

static bool cmd_dis(masq_state *M, const char *arg) {
  if (masq_disassemble(M, arg, strlen(arg), "<stdin>") != MASQ_OK) run_report(M);
  return false;
}

static bool cmd_time(masq_state *M, const char *arg) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  masq_status st = run_source(M, arg, strlen(arg), "<stdin>", MASQ_EVAL_ECHO);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  if (st != MASQ_OK) return false; /* run_source reported the error */
  if (s >= 1) printf("took %.3g s\n", s);
  else if (s >= 1e-3) printf("took %.3g ms\n", s * 1e3);
  else printf("took %.3g us\n", s * 1e6);
  return false;
}

static bool cmd_quit(masq_state *M, const char *arg) {
  (void)M;
  (void)arg;
  return true;
}

/* Runs the :command on [line] (which starts with ':' after any blanks).
 * Returns true to leave the REPL. */
static bool run_command(masq_state *M, const char *line) {
  const char *name = skip_space(line) + 1;
  size_t len = strcspn(name, " \t");
  const command *c = find_command(name, len);
  const char *arg = skip_space(name + len);
  size_t arglen = strlen(arg);
  char *trimmed;
  bool quit;
  if (!c) {
    fprintf(stderr, "unknown command ':%.*s' (try :help)\n", (int)len, name);
    return false;
  }
  while (arglen > 0 && strchr(" \t\r\n", arg[arglen - 1])) arglen--;
  if (c->arg == ARG_NONE && arglen > 0) {
    fprintf(stderr, "usage: %s\n", c->usage);
    return false;
  }
  if ((c->arg == ARG_FILE || c->arg == ARG_CODE) && arglen == 0) {
    fprintf(stderr, "usage: %s\n", c->usage);
    return false;
  }
  trimmed = xrealloc(NULL, arglen + 1);
  memcpy(trimmed, arg, arglen);
  trimmed[arglen] = '\0';
  quit = c->run(M, trimmed);
  free(trimmed);
  return quit;
}

/* --- Tab completion ----------------------------------------------------- */

/* Whether line[0, point) ends inside a string literal. */
static bool in_string(const char *line, int point) {
  char quote = 0;
  for (int i = 0; i < point && line[i]; i++) {
    if (quote && line[i] == '\\' && i + 1 < point)
      i++;
    else if (quote && line[i] == quote)
      quote = 0;
    else if (!quote && (line[i] == '"' || line[i] == '\''))
      quote = line[i];
  }
  return quote != 0;
}

/* Offset of the end of the command name in a :command line. */
static int command_name_end(const char *line) {
  const char *s = skip_space(line);
  return (int)(s - line) + 1 + (int)strcspn(s + 1, " \t");
}

/* Whether the word at [start] follows a '.' after a value (a name, a call or
 * an index: `x.`, `f(x).`, `x[0].`), making it a method name; not after a
 * number's decimal point (`1.`). */
static bool after_value_dot(const char *line, int start) {
  int i = start - 1;
  if (i < 1 || line[i] != '.') return false;
  char c = line[i - 1];
  if (c == ')' || c == ']') return true;
  while (i > 0 && (isalnum((unsigned char)line[i - 1]) || line[i - 1] == '_')) i--;
  return i < start - 1 && !isdigit((unsigned char)line[i]);
}

static const char *word_breaks(void *ud, const char *line, int point) {
  (void)ud;
  if (*skip_space(line) == ':')
    /* The command name is the word after ':'; its argument (a file name or
     * a builtin) is split at blanks only, so paths stay whole. */
    return point <= command_name_end(line) ? " \t:" : " \t";
  return IDENT_BREAKS;
}

static void add_match(void *ud, const char *name) {
  le_match_add(ud, name);
}

static bool complete(void *ud, const char *line, int start, int end, le_matches *m) {
  masq_state *M = ud;
  const char *s = skip_space(line);
  char *word = strndup(line + start, (size_t)(end - start));
  size_t wlen;
  bool handled = true;
  if (!word) return true;
  wlen = strlen(word);
  if (*s == ':' && start == (int)(s - line) + 1) {
    for (size_t i = 0; i < NCOMMANDS; i++)
      if (strncmp(commands[i].name, word, wlen) == 0) le_match_add(m, commands[i].name);
  } else if (*s == ':') {
    const command *c = find_command(s + 1, strcspn(s + 1, " \t"));
    if (c && c->arg == ARG_FILE)
      handled = false;
    else if (c && c->arg != ARG_NONE)
      masq_complete(M, word, add_match, m);
  } else if (in_string(line, start)) {
    handled = false; /* a file name, e.g. for load("...") */
  } else if (after_value_dot(line, start)) {
    masq_complete_methods(M, word, add_match, m); /* x.NAME is NAME(x) */
  } else {
    masq_complete(M, word, add_match, m);
  }
  free(word);
  return handled;
}

/* --- words a newcomer tries ------------------------------------------------ */

static void find_global(void *ud, const char *name, const char *summary) {
  const char **want = ud;
  (void)summary;
  if (*want && strcmp(*want, name) == 0) *want = NULL;
}

/* The hint for a line that is only `exit`, `quit` or `help` (as Python
 * gives one), unless the user has a variable of that name; else NULL. */
static const char *newcomer_hint(masq_state *M, const char *line) {
  static const struct { const char *word, *hint; } hints[] = {
      {"exit", "(:quit or Ctrl-D to leave; exit(code) leaves with a status)"},
      {"quit", "(:quit or Ctrl-D to leave)"},
      {"help", "(:help for help, :help NAME for a builtin or keyword)"},
  };
  const char *s = skip_space(line);
  size_t n = strcspn(s, " \t\r\n");
  if (!is_blank(s + n)) return NULL;
  for (size_t i = 0; i < sizeof hints / sizeof hints[0]; i++) {
    if (strlen(hints[i].word) != n || memcmp(hints[i].word, s, n) != 0) continue;
    const char *want = hints[i].word;
    masq_globals(M, find_global, &want); /* a variable of that name wins */
    return want ? hints[i].hint : NULL;
  }
  return NULL;
}

/* --- pasted transcripts ------------------------------------------------------ */

/* Julia's prompt pasting: a line that starts with the prompt "masq> " is
 * taken from a pasted session. The prompt is dropped, and so are the
 * continuation prompts "...> " of the lines after it; the lines without a
 * prompt were that session's output and are skipped, for as long as the
 * paste lasts (more input is already waiting). A line of a bracketed paste
 * may hold several lines; each is handled the same way. */
static const char *after_prompt(const char *s, bool pasting) {
  const char *t;
  if (strncmp(s, "masq>", 5) == 0 && (s[5] == ' ' || s[5] == '\0')) return s + 5 + (s[5] == ' ');
  t = skip_space(s);
  if (pasting && strncmp(t, "...>", 4) == 0 && (t[4] == ' ' || t[4] == '\0'))
    return t + 4 + (t[4] == ' ');
  return NULL;
}

/* Rewrites [line] (one or more lines joined by '\n') without prompts and
 * output lines, updating *pasting; returns false if nothing is left. */
static bool strip_transcript(char *line, bool *pasting) {
  char *out = line, *p = line;
  bool kept = false;
  for (;;) {
    char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    char save = p[n];
    const char *code;
    p[n] = '\0';
    code = after_prompt(p, *pasting);
    if (code) *pasting = true;
    else if (!*pasting) code = p;
    p[n] = save;
    if (code) {
      size_t len = n - (size_t)(code - p);
      if (kept) *out++ = '\n';
      memmove(out, code, len);
      out += len;
      kept = true;
    }
    if (!nl) break;
    p = nl + 1;
  }
  *out = '\0';
  return kept;
}

/* --- the loop ----------------------------------------------------------- */

/* The source of the entry being typed: one or more lines, each ending in
 * '\n'. */
typedef struct text {
  char *data;
  size_t len, cap;
} text;

static void text_append_line(text *t, const char *line) {
  size_t n = strlen(line);
  if (t->len + n + 2 > t->cap) {
    t->cap = 2 * (t->len + n + 2);
    t->data = xrealloc(t->data, t->cap);
  }
  memcpy(t->data + t->len, line, n);
  t->len += n;
  t->data[t->len++] = '\n';
  t->data[t->len] = '\0';
}

/* The finished entry as one history item: without the trailing newline and
 * the blank line that may have forced it through. */
static void remember(text *t) {
  while (t->len > 0 && strchr(" \t\r\n", t->data[t->len - 1])) t->len--;
  t->data[t->len] = '\0';
  le_add_history(t->data);
}

/* The history file: $MASQ_HISTORY if set (empty turns history off), else
 * ~/.masq_history. NULL: none. */
static char *history_path(void) {
  const char *env = getenv("MASQ_HISTORY");
  const char *home = getenv("HOME");
  static const char name[] = "/.masq_history";
  char *path;
  if (env) return *env ? xstrdup(env) : NULL;
  if (!home || !*home) return NULL;
  path = xrealloc(NULL, strlen(home) + sizeof name);
  strcpy(path, home);
  strcat(path, name);
  return path;
}

/* One line as typed at the prompt: a command, a blank line, a newcomer's
 * hint, or a line of the entry in [buf], which runs once it is complete.
 * Returns whether the REPL should stop (:quit, exit(code)). */
static bool enter_line(masq_state *M, text *buf, const char *line, masq_status *st) {
  const char *hint;
  if (buf->len == 0 && *skip_space(line) == ':') {
    le_add_history(line);
    return run_command(M, line);
  }
  if (buf->len == 0 && is_blank(line)) return false;
  if (buf->len == 0 && (hint = newcomer_hint(M, line))) {
    puts(hint);
    le_add_history(line);
    return false;
  }
  /* An empty line while continuing asks for the real error. */
  bool force = buf->len > 0 && is_blank(line);
  text_append_line(buf, line);
  *st = run_source(M, buf->data, buf->len, "<stdin>",
                   MASQ_EVAL_ECHO | (force ? 0 : MASQ_EVAL_PARTIAL));
  if (*st == MASQ_INCOMPLETE) return false;
  remember(buf);
  buf->len = 0;
  return *st == MASQ_EXIT; /* exit(code) leaves the REPL with that status */
}

int repl_run(masq_state *M, const repl_options *opt) {
  bool colored = opt->color && opt->editing;
  const char *prompt = colored ? COLOR_PROMPT : PROMPT;
  const char *prompt_continue = colored ? COLOR_PROMPT_CONTINUE : PROMPT_CONTINUE;
  char *hist = opt->editing ? history_path() : NULL;
  le_config cfg = {opt->editing, hist, {word_breaks, complete, M}};
  text buf = {0};
  masq_status st = MASQ_OK;
  bool pasting = false; /* inside a pasted transcript */

  le_open(&cfg);
  if (opt->editing) fputs(BANNER, stdout);
  for (;;) {
    char *line;
    le_status s;

    run_fresh_line();
    s = le_read(buf.len ? prompt_continue : prompt, &line);
    if (s == LE_INTERRUPT) { /* Ctrl-C abandons the whole entry */
      buf.len = 0;
      continue;
    }
    if (s == LE_EOF) {
      if (buf.len == 0) break;
      /* Ctrl-D or the end of piped input inside an entry: run it as it is
       * so the real error shows. A pipe then ends the loop at the next
       * read; a terminal gets a fresh prompt. */
      st = run_source(M, buf.data, buf.len, "<stdin>", MASQ_EVAL_ECHO);
      remember(&buf);
      buf.len = 0;
      if (st == MASQ_EXIT) break;
      continue;
    }
    {
      /* Only what arrived with the line still belongs to a paste. */
      bool more = le_input_pending();
      bool keep = (!pasting && strncmp(line, "masq>", 5) != 0 && !strchr(line, '\n')) ||
                  strip_transcript(line, &pasting);
      pasting = pasting && more;
      if (!keep) { /* an output line of the pasted session */
        free(line);
        continue;
      }
    }
    /* A bracketed paste arrives as one read of several lines: each runs as
     * if typed, so an error stops its own entry only, as README promises. */
    bool quit = false;
    for (char *p = line;;) {
      char *nl = strchr(p, '\n');
      if (nl) *nl = '\0';
      quit = enter_line(M, &buf, p, &st);
      if (quit || !nl) break;
      run_fresh_line();
      p = nl + 1;
    }
    free(line);
    if (quit) break;
  }
  run_fresh_line();
  le_close();
  free(hist);
  free(buf.data);
  return st == MASQ_EXIT ? masq_last_error(M)->exit_code : 0;
}
