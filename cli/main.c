/* main.c - the masq command: option parsing and the script runner.
 *
 * Exit status (masq(1)): 0 ok, 1 runtime error (also out of memory and an
 * interrupt by other means), 2 usage or I/O error of the command itself,
 * 3 syntax error, the script's own code for exit(code), and death by SIGINT
 * (130 in the shell) after Ctrl-C. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE
#endif

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "masq.h"
#include "repl.h"
#include "run.h"
#include "signals.h"

#define USAGE_LINE "usage: masq [options] [script [args...]]\n"

static const char usage_text[] =
    USAGE_LINE
    "\n"
    "  script          run the file; '-' reads the script from stdin\n"
    "  args            the script's arguments: the list of strings `args`\n"
    "  -e CODE         run CODE, printing the value of each expression (repeatable)\n"
    "  -i              start the REPL after the script or -e, even if stdin is a pipe\n"
    "  --dis FILE      print the bytecode FILE compiles to\n"
    "  --builtins      list every builtin with its signature (Markdown)\n"
    "  --color[=WHEN]  colour errors and masked values: auto (default), always, never\n"
    "  -h, --help      show this help and exit\n"
    "  -v, --version   show the version and exit\n"
    "  --              end of options\n"
    "\n"
    "Without a script or -e, masq starts the REPL when stdin is a terminal and\n"
    "runs stdin as a script otherwise.\n"
    "\n"
    "Exit status: 0 ok, 1 runtime error, 2 usage or I/O error, 3 syntax error,\n"
    "130 interrupted; a script's exit(code) ends with its code.\n"
    "Environment: MASQ_HISTORY (REPL history file; empty: no history), NO_COLOR.\n";

typedef enum color_mode { COLOR_AUTO, COLOR_ALWAYS, COLOR_NEVER } color_mode;

typedef struct options {
  const char **exprs; /* -e arguments, in order */
  int nexprs;
  const char *script; /* NULL: none; "-": stdin */
  /* The script's arguments (argv after the script name, NULL-terminated):
   * the script sees them as the list of strings `args`. */
  char **script_args;
  const char *dis; /* --dis FILE */
  bool builtins;    /* --builtins */
  bool interactive; /* -i */
  color_mode color;
} options;

/* The message is [before], the argument at fault, [after]. */
static int usage_error(const char *before, const char *arg, const char *after) {
  fprintf(stderr, "masq: %s%s%s", before, arg, after);
  fputs("\n" USAGE_LINE "Try 'masq --help' for more information.\n", stderr);
  return 2;
}

/* Matches "--name" and "--name=VALUE"; for the first form, VALUE is the next
 * argument if [takes_next], else NULL. Returns 0 if [arg] is another option,
 * -1 if the value is missing, 1 on a match. */
static int long_option(const char *arg, const char *name, bool takes_next, int argc,
                       char **argv, int *i, const char **value) {
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0) return 0;
  if (arg[n] == '=') {
    *value = arg + n + 1;
    return 1;
  }
  if (arg[n] != '\0') return 0;
  *value = NULL;
  if (!takes_next) return 1;
  if (*i + 1 >= argc) return -1;
  *value = argv[++*i];
  return 1;
}

/* Fills [o] from the command line. Returns -1 to go on, or the exit status
 * (after --help, --version or a usage error). Options stop at the script name,
 * as in lua and python: what follows belongs to the script. */
static int parse_args(int argc, char **argv, options *o) {
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *value;
    int m;
    if (a[0] != '-' || strcmp(a, "-") == 0) break; /* the script */
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage_text, stdout);
      return 0;
    }
    if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) {
      puts("masq " MASQ_VERSION_STRING);
      return 0;
    }
    if (strcmp(a, "-i") == 0) {
      o->interactive = true;
    } else if (strcmp(a, "--builtins") == 0) {
      o->builtins = true;
    } else if (strcmp(a, "-e") == 0) {
      if (i + 1 >= argc) return usage_error("option '", a, "' needs an argument");
      o->exprs[o->nexprs++] = argv[++i];
    } else if ((m = long_option(a, "--dis", true, argc, argv, &i, &value)) != 0) {
      if (m < 0) return usage_error("option '", a, "' needs an argument");
      o->dis = value;
    } else if ((m = long_option(a, "--color", false, argc, argv, &i, &value)) != 0) {
      if (!value || strcmp(value, "always") == 0)
        o->color = COLOR_ALWAYS;
      else if (strcmp(value, "auto") == 0)
        o->color = COLOR_AUTO;
      else if (strcmp(value, "never") == 0)
        o->color = COLOR_NEVER;
      else
        return usage_error("--color takes auto, always or never, not '", value, "'");
    } else {
      return usage_error("unknown option '", a, "'");
    }
  }
  if (i < argc) {
    o->script = argv[i];
    o->script_args = argv + i + 1;
  }
  return -1;
}

/* Colour when both output streams are terminals (values go to stdout, errors
 * to stderr, and the library has one switch for both), unless NO_COLOR is set
 * to anything non-empty (no-color.org) or the terminal is dumb. */
static bool want_color(color_mode mode) {
  const char *no_color = getenv("NO_COLOR"), *term = getenv("TERM");
  if (mode != COLOR_AUTO) return mode == COLOR_ALWAYS;
  return isatty(STDOUT_FILENO) && isatty(STDERR_FILENO) && !(no_color && *no_color) &&
         term && strcmp(term, "dumb") != 0;
}

/* The pictures' width (masq_config.columns): COLUMNS when set to a number,
 * else the size of the terminal on standard output, else 0 (the library's
 * default). Asked at each picture, so a resized window counts. */
static int term_columns(void *ud) {
  (void)ud;
  const char *env = getenv("COLUMNS");
  if (env && *env) {
    char *end;
    long n = strtol(env, &end, 10);
    if (*end == '\0' && n > 0 && n < 100000) return (int)n;
  }
  struct winsize ws;
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) return ws.ws_col;
  return 0;
}

/* Reads all of [f] into a NUL-terminated malloc'd buffer. Returns false and
 * sets errno on failure; Ctrl-C while waiting for a pipe ends the process. */
static bool read_all(FILE *f, char **data, size_t *len) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      errno = ENOMEM;
      return false;
    }
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    cap *= 2;
    char *bigger = realloc(buf, cap);
    if (!bigger) free(buf);
    buf = bigger;
  }
  if (ferror(f)) {
    int err = errno;
    free(buf);
    if (sig_take_interrupt()) sig_die_interrupted();
    errno = err;
    return false;
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return true;
}

/* Reads [path] ("-": stdin), reporting a failure the way run_file does. */
static char *read_source(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  char *data = NULL;
  bool ok = f && read_all(f, &data, len);
  if (f && f != stdin) {
    int err = errno;
    fclose(f);
    errno = err;
  }
  if (!ok) {
    run_report_open_error(path);
    return NULL;
  }
  return data;
}

static masq_status run_stdin(masq_state *M) {
  size_t len;
  char *src = read_source("-", &len);
  masq_status st;
  if (!src) return MASQ_ERR_USAGE;
  st = run_source(M, src, len, "<stdin>", 0);
  free(src);
  return st;
}

static int disassemble(masq_state *M, const char *path) {
  size_t len;
  char *src = read_source(path, &len);
  masq_status st;
  if (!src) return 2;
  /* masq_eval_file skips a "#!" line but masq_disassemble takes plain
   * source: blank the line out, keeping line numbers. */
  if (src[0] == '#' && src[1] == '!')
    for (char *p = src; *p && *p != '\n'; p++) *p = ' ';
  /* Compiling a big script takes a while: Ctrl-C must stop it. */
  sig_begin_eval();
  st = masq_disassemble(M, src, len, strcmp(path, "-") == 0 ? "<stdin>" : path);
  sig_end_eval();
  if (st != MASQ_OK) run_report(M);
  free(src);
  if (st == MASQ_ERR_INTERRUPTED) sig_die_interrupted();
  return run_exit_code(M, st);
}

/* -e, then the script, then the REPL, as the options ask. */
static int run(masq_state *M, const options *o, bool color) {
  masq_status st = MASQ_OK;
  bool tty = isatty(STDIN_FILENO);
  bool have_code = o->nexprs > 0 || o->script;
  if (o->script) {
    int n = 0;
    while (o->script_args[n]) n++;
    st = masq_set_strings(M, "args", n, (const char *const *)o->script_args);
    if (st != MASQ_OK) run_report(M);
  }
  for (int i = 0; i < o->nexprs && st == MASQ_OK; i++)
    st = run_source(M, o->exprs[i], strlen(o->exprs[i]), "<expr>", MASQ_EVAL_ECHO);
  if (st == MASQ_OK && o->script)
    st = strcmp(o->script, "-") == 0 ? run_stdin(M) : run_file(M, o->script);
  else if (!have_code && !tty && !o->interactive)
    st = run_stdin(M);
  if (o->interactive || (!have_code && tty)) {
    repl_options r = {tty, color};
    return repl_run(M, &r); /* like python -i: errors above don't stop it */
  }
  /* The library only stops with this status because Ctrl-C asked it to. */
  if (st == MASQ_ERR_INTERRUPTED) sig_die_interrupted();
  return run_exit_code(M, st);
}

/* --builtins: the reference list of docs/BUILTINS.md, generated from the
 * library's own table so it cannot drift (make test compares the two). */
typedef struct name_list {
  char **names;
  int n, cap;
} name_list;

static void collect_name(void *ud, const char *name) {
  name_list *l = ud;
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 256;
    char **p = realloc(l->names, (size_t)cap * sizeof *p);
    if (!p) return;
    l->names = p;
    l->cap = cap;
  }
  l->names[l->n] = strdup(name);
  if (l->names[l->n]) l->n++;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_builtins(masq_state *M) {
  name_list l = {0};
  masq_complete(M, "", collect_name, &l);
  qsort(l.names, (size_t)l.n, sizeof *l.names, by_name);
  puts("# masq builtins\n");
  puts("Generated by `masq --builtins` from the builtin table; `make test` checks");
  puts("that this file is current. In the REPL, `:help NAME` shows one entry.\n");
  int nconst = 0;
  for (int i = 0; i < l.n; i++) {
    const char *doc = masq_doc(M, l.names[i]);
    const char *sep = doc ? strstr(doc, " -- ") : NULL;
    if (!doc) {
      nconst++;
      continue;
    }
    if (sep) printf("- `%.*s`: %s\n", (int)(sep - doc), doc, sep + 4);
    else printf("- `%s`\n", doc);
  }
  if (nconst) {
    printf("\nConstants:");
    for (int i = 0, k = 0; i < l.n; i++)
      if (!masq_doc(M, l.names[i])) printf("%s `%s`", k++ ? "," : "", l.names[i]);
    printf("\n");
  }
  for (int i = 0; i < l.n; i++) free(l.names[i]);
  free(l.names);
  return 0;
}

/* Output that never arrived is a failure, as in coreutils' close_stdout:
 * `masq script > /dev/full` must not exit 0. Everything the command prints
 * to stdout (values, print(), --help, --builtins) is checked here, once. */
static int close_stdout(int status) {
  bool flushed = fflush(stdout) == 0;
  int err = errno;
  if (flushed && !ferror(stdout)) return status;
  if (flushed) fputs("masq: error writing to standard output\n", stderr);
  else fprintf(stderr, "masq: error writing to standard output: %s\n", strerror(err));
  return status ? status : 2;
}

int main(int argc, char **argv) {
  options o = {0};
  masq_config cfg;
  masq_state *M;
  bool color;
  int status;

  o.exprs = calloc((size_t)argc, sizeof *o.exprs);
  if (!o.exprs) return 1;
  status = parse_args(argc, argv, &o);
  if (status >= 0) {
    free(o.exprs);
    return close_stdout(status);
  }

  color = want_color(o.color);
  masq_config_init(&cfg);
  cfg.write = run_write;
  cfg.color = color;
  cfg.columns = term_columns;
  cfg.libs = MASQ_LIB_ALL; /* the command line runs its own user's files */
  M = masq_open(&cfg);
  if (!M) {
    fputs("masq: out of memory\n", stderr);
    free(o.exprs);
    return 1;
  }
  sig_install(M);
  status = o.builtins ? list_builtins(M) : o.dis ? disassemble(M, o.dis) : run(M, &o, color);
  masq_close(M);
  free(o.exprs);
  return close_stdout(status);
}
