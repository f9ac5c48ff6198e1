/* api.c - include/masq.h: every entry point is a protected boundary that
 * turns internal errors (longjmps) into a masq_status and a diagnostic.
 * This file has the state, eval and errors; tensor handles are in
 * api_tensor.c, globals, calls and host functions in api_host.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/random.h>
#endif
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim (masq_trim) */
#endif

#include "../core/diag.h"
#include "../core/gc.h"
#include "../lexer/keywords.h"
#include "../parser/ast.h"
#include "../parser/compiler.h"
#include "../runtime/tensor/cpu.h"
#include "../runtime/io/npy.h"
#include "../runtime/tensor/parallel.h"
#include "../runtime/print/print.h"
#include "../runtime/sparse/sparse.h"
#include "../runtime/tensor/tensor.h"
#include "../stdlib/stdlib.h"
#include "../vm/chunk.h"
#include "../vm/errval.h"
#include "../vm/globals.h"
#include "../vm/table.h"
#include "../vm/vm.h"
#include "../vm/walk.h"
#include "api_int.h"

static void *default_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(p);
    return NULL;
  }
  return realloc(p, nsize);
}

const char *masq_version(void) { return MASQ_VERSION_STRING; }

void masq_config_init(masq_config *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  cfg->libs = MASQ_LIB_DEFAULT;
}

/* splitmix64's finalizer: spreads the bits of a weak seed over the word. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* The dicts' hash key (core/dict.c): the system's random bytes, or, where
 * there are none to be had, the clocks, the process and the state's
 * address mixed (unguessable enough for a script, which sees none of
 * them). Per state: there is no global state to seed. */
static void seed_hash(mq_state *S) {
#ifdef __linux__
  if (getrandom(S->hash_key, sizeof S->hash_key, GRND_NONBLOCK) == (ssize_t)sizeof S->hash_key)
    return;
#endif
  struct timespec a, b;
  clock_gettime(CLOCK_REALTIME, &a);
  clock_gettime(CLOCK_MONOTONIC, &b);
  uint64_t z = mix64((uint64_t)a.tv_sec * 1000000007u + (uint64_t)a.tv_nsec);
  z = mix64(z ^ ((uint64_t)b.tv_sec << 32) ^ (uint64_t)b.tv_nsec ^ (uint64_t)getpid());
  S->hash_key[0] = z;
  S->hash_key[1] = mix64(z ^ (uint64_t)(uintptr_t)S);
}

static void open_library(mq_state *S, void *ud) {
  (void)ud;
  mq_stdlib_open(S);
  mq_rng_seed(S, 0);
}

masq_state *masq_open(const masq_config *cfg) {
  masq_config c;
  if (cfg) c = *cfg;
  else masq_config_init(&c);
  c.libs |= MASQ_LIB_CORE;
  if (!c.alloc) c.alloc = default_alloc;
  mq_state *S = c.alloc(c.alloc_ud, NULL, 0, sizeof *S);
  if (!S) return NULL;
  memset(S, 0, sizeof *S);
  S->cfg = c;
  S->mem_used = sizeof *S;
  seed_hash(S);
  mq_gc_init(S);
  /* The kinds of object and the calls up that the layers below need
   * (core/state.h): this is the one layer that sees them all. */
  mq_value_init_kinds(S);
  mq_tensor_init_kind(S);
  mq_sparse_init_kind(S);
  mq_chunk_init_kinds(S);
  mq_errval_init_kind(S);
  mq_zip_init_kind(S);
  mq_table_init_kind(S);
  mq_builtin_init_kind(S);
  S->hooks.host_call = mq_host_call;
  S->hooks.host_free = mq_hostfn_free;
  S->hooks.sparse_call = mq_sparse_builtin;
  S->hooks.import = mq_vm_import;
  S->print = MQ_PRINTOPTS_DEFAULT;
  S->nthreads = mq_parallel_default_threads();
  S->cpu = mq_cpu_default();
  if (mq_protect(S, open_library, NULL) != MASQ_OK) {
    masq_close(S);
    return NULL;
  }
  return S;
}

static const char close_refused[] =
    "masq_close: called while masq is running (from a host function or a hook); the state "
    "stays open: close it once the outermost call has returned";

void masq_close(masq_state *S) {
  if (!S) return;
  if (S->host_depth > 0 || S->in_hook > 0) {
    /* Freeing the state under the code that is running would be a
     * use-after-free: the call that is running fails instead. */
    S->close_refused = true; /* reported by the call that is running */
    return;
  }
  mq_parallel_close(S);
  mq_vm_unwind(S, 0, 0);
  mq_pool_drain(S, 0);
  mq_host_free(S); /* the handles the host did not release */
  mq_globals_free(S);
  if (S->imports) mq_obj_release(S, &S->imports->hdr);
  mq_gc_collect(S, true); /* the cycles nothing else holds any more */
  mq_builtin_close(S);    /* after every value that may hold a builtin */
  mq_source_free_all(S);     /* after the functions that refer to them */
  mq_free(S, S->stack, (size_t)S->stack_cap * sizeof *S->stack);
  mq_free(S, S->frames, (size_t)S->frames_cap * sizeof *S->frames);
  mq_free(S, S->handlers, (size_t)S->handlers_cap * sizeof *S->handlers);
  mq_free(S, S->pool, S->pool_cap * sizeof *S->pool);
  mq_buf_free(S, &S->err_message);
  mq_buf_free(S, &S->err_rendered);
  mq_buf_free(S, &S->out);
  mq_strfree(S, S->err_chunk);
  mq_bigcache_flush(S); /* last: everything freed above may have landed there */
  S->cfg.alloc(S->cfg.alloc_ud, S, sizeof *S, 0);
}

size_t masq_trim(masq_state *S) {
  if (!S) return 0;
  size_t before = S->mem_used;
  mq_bigcache_flush(S);
  if (S->host_depth == 0 && S->in_hook == 0) mq_gc_collect(S, true); /* not under a call that runs */
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  return before > S->mem_used ? before - S->mem_used : 0;
}

/* --- errors ----------------------------------------------------------------------- */

void mq_api_clear_error(mq_state *S) {
  S->err.status = MASQ_OK;
  S->err.message = S->err.rendered = S->err.chunkname = NULL;
  S->err.line = S->err.column = S->err.end_column = 0;
  S->err.exit_code = 0;
  S->err_has_span = false;
}

/* The error hook, for an error that ends a top-level call. */
static void report(mq_state *S) {
  if (!S->cfg.error || S->nframes > 0) return;
  mq_hook_enter(S);
  S->cfg.error(S->cfg.error_ud, S->err.rendered);
  mq_hook_leave(S);
}

bool mq_api_refused(mq_state *S) {
  if (S->in_hook == 0) return false;
  if (S->err.status == MASQ_OK) /* not over the error the error hook is reporting */
    S->err = (masq_error){.status = MASQ_ERR_USAGE,
                        .message = "called from inside a hook (write, write_err, picture, "
                                   "columns, interrupt, error or a buffer's release), which may "
                                   "not call back into masq",
                        .rendered = "error: a hook called back into masq\n"};
  return true;
}

typedef struct error_job {
  masq_status status;
  const mq_source *src;
  const mq_span *span;
  const char *message; /* NULL: the message of the error just caught */
  const char *extra;   /* appended to the rendered text (the traceback) */
} error_job;

static void record_error(mq_state *S, void *ud) {
  error_job *job = ud;
  const char *msg = job->message ? job->message : S->err_message.data;
  mq_diag_set_error(S, job->status, job->src, job->span, msg ? msg : "error");
  if (job->extra) {
    mq_buf_puts(S, &S->err_rendered, job->extra);
    S->err.rendered = S->err_rendered.data;
  }
}

/* Records an error, located at [span] if known. Rendering allocates; if even
 * that fails we fall back to static text. */
static masq_status fail_with(mq_state *S, masq_status st, const mq_source *src,
                             const mq_span *span, const char *message, const char *extra) {
  if (st == MASQ_EXIT) { /* not an error: nothing to render or report */
    S->err.status = MASQ_EXIT;
    S->err.message = S->err_message.data ? S->err_message.data : "exit";
    S->err.rendered = "";
    S->err.chunkname = NULL;
    S->err.line = S->err.column = S->err.end_column = 0;
    S->err.exit_code = S->exit_code;
    return st;
  }
  error_job job = {st, src, span, message, extra};
  if (mq_protect(S, record_error, &job) != MASQ_OK) {
    S->err.status = st;
    S->err.message = S->err.rendered = "error: out of memory while reporting an error\n";
    S->err.line = S->err.column = S->err.end_column = 0;
  }
  /* Only errors that end a top-level call are reported as they happen; a
   * host function calling back into masq may handle a failure itself. */
  report(S);
  return st;
}

static masq_status fail(mq_state *S, masq_status st, const mq_source *src, const mq_span *span) {
  return fail_with(S, st, src, span, NULL, NULL);
}

masq_status mq_api_finish(mq_state *S, masq_status st) {
  if (!S->close_refused || S->host_depth > 0 || S->in_hook > 0) return st;
  S->close_refused = false;
  return st == MASQ_OK ? fail_with(S, MASQ_ERR_USAGE, NULL, NULL, close_refused, NULL) : st;
}

const masq_error *masq_last_error(const masq_state *S) {
  static const masq_error no_state = {MASQ_ERR_USAGE, "the state is NULL",
                                      "error: the state is NULL\n", NULL, 0, 0, 0};
  return S ? &S->err : &no_state;
}

void mq_api_need(mq_state *S, const void *p, const char *fn, const char *what) {
  if (!p) mq_throw(S, MASQ_ERR_USAGE, "%s: %s is NULL", fn, what);
}

masq_status mq_api_run(mq_state *S, mq_pfunc fn, void *ud) {
  mq_api_clear_error(S);
  size_t mark = mq_pool_mark(S);
  masq_status st = mq_protect(S, fn, ud);
  mq_pool_drain(S, mark);
  return mq_api_finish(S, st == MASQ_OK ? st : fail(S, st, NULL, NULL));
}

void masq_interrupt(masq_state *S) {
  if (S) S->interrupted = 1;
}

/* --- eval ----------------------------------------------------------------------------- */

/* The callers of the frame that failed, innermost first: where each call
 * was made, with its own caret. */
typedef struct traceback_job {
  int first_frame; /* frames below this belong to an outer eval */
  mq_buf text;
} traceback_job;

static void traceback(mq_state *S, void *ud) {
  traceback_job *tb = ud;
  /* Deep recursion: the innermost calls and the outermost, a count between. */
  enum { INNER = 5, OUTER = 3 };
  int top = S->nframes - 1, ncallers = top - tb->first_frame;
  for (int level = top; level > tb->first_frame; level--) {
    int from_top = top - level;
    if (ncallers > INNER + OUTER && from_top == INNER) {
      mq_buf_printf(S, &tb->text, "... %d more calls ...\n", ncallers - INNER - OUTER);
      level = tb->first_frame + OUTER + 1;
    }
    const mq_vmframe *callee = &S->frames[level];
    const mq_source *src;
    mq_span span;
    if (!mq_vm_error_span(S, level - 1, &src, &span)) continue;
    char what[160];
    if (callee->cl) snprintf(what, sizeof what, "in %s(), called from here", callee->f->name);
    else snprintf(what, sizeof what, "in '%s', imported here",
                  callee->f->src ? callee->f->src->name : "?");
    mq_diag_render(S, &tb->text, src, span, "note", what, S->cfg.color);
  }
}

typedef struct syntax_errors {
  mq_state *S;
  const mq_source *src;
  int count;
  mq_buf rendered;
  mq_buf first_message;
  mq_span first_span;
} syntax_errors;

static void report_syntax(void *ud, mq_span span, const char *message) {
  syntax_errors *e = ud;
  if (e->count++ == 0) {
    mq_buf_puts(e->S, &e->first_message, message);
    e->first_span = span;
  }
  mq_diag_render(e->S, &e->rendered, e->src, span, "error", message, e->S->cfg.color);
}

typedef struct eval_job {
  const char *text;
  size_t len;
  const char *name;
  int flags;
  const char *purpose; /* NULL: run; "dis": disassemble */
  mq_source *src;
  masq_status parse_status;
  syntax_errors errs;
  mq_arena arena;
  int stack_len, nframes;
  mq_function *fn;
} eval_job;

static void eval_protected(mq_state *S, void *ud) {
  eval_job *job = ud;
  job->src = mq_source_new(S, job->name, job->text, job->len);
  mq_arena_init(&job->arena, S);
  mq_node *program = NULL;
  job->errs.S = S;
  job->errs.src = job->src;
  mq_parse_status ps = mq_parse(&job->arena, job->src, (job->flags & MASQ_EVAL_PARTIAL) != 0,
                                report_syntax, &job->errs, &program);
  if (ps == MQ_PARSE_INCOMPLETE) {
    job->parse_status = MASQ_INCOMPLETE;
    return;
  }
  if (ps == MQ_PARSE_ERROR) {
    job->parse_status = MASQ_ERR_SYNTAX;
    return;
  }
  job->fn = mq_compile(S, program, job->src, (job->flags & (MASQ_EVAL_ECHO | MASQ_EVAL_RESULT)) != 0);
  /* Our own reference: an error drains the pool, and the function must
   * outlive that so the error can be located in its code. */
  job->fn->hdr.rc++;
  mq_arena_free(&job->arena);
  if (job->purpose) {
    S->out.len = 0;
    mq_chunk_disassemble(S, &S->out, job->fn);
    mq_write(S, S->out.data, S->out.len);
    return;
  }
  int echo = (job->flags & MASQ_EVAL_ECHO)     ? MQ_ECHO_PRINT | MQ_ECHO_KEEP
             : (job->flags & MASQ_EVAL_RESULT) ? MQ_ECHO_KEEP
                                               : 0;
  mq_value r = mq_vm_run(S, job->fn, echo);
  mq_release(S, r);
}

masq_status mq_api_fail_run(mq_state *S, masq_status st, const mq_source *src, int stack_len,
                            int nframes, size_t mark) {
  mq_span span;
  bool located = false;
  traceback_job tb = {nframes, {0}};
  if (S->err_has_span) {
    span = S->err_span;
    if (S->err_src) src = S->err_src; /* raise(e) of an error from elsewhere */
    located = true;
  } else if (mq_vm_error_span(S, S->nframes - 1, &src, &span)) {
    located = true;
    if (mq_protect(S, traceback, &tb) != MASQ_OK) tb.text.len = 0;
  }
  mq_source_retain(src); /* the error value holding it may go with the stack */
  mq_vm_unwind(S, stack_len, nframes);
  mq_pool_drain(S, mark);
  fail_with(S, st, src, located ? &span : NULL, NULL, tb.text.len ? tb.text.data : NULL);
  mq_source_release(S, src);
  mq_buf_free(S, &tb.text);
  return st;
}

static masq_status run_eval(mq_state *S, eval_job *job) {
  if (!S) return MASQ_ERR_USAGE;
  if (mq_api_refused(S)) return MASQ_ERR_USAGE;
  mq_api_clear_error(S);
  if (!job->text) {
    if (job->len)
      return fail_with(S, MASQ_ERR_USAGE, NULL, NULL, "masq_eval: source is NULL", NULL);
    job->text = ""; /* no source, no code */
  }
  mq_api_reset_interrupt(S);
  size_t mark = mq_pool_mark(S);
  job->stack_len = S->stack_len;
  job->nframes = S->nframes;
  mq_arena_init(&job->arena, S);
  mq_txn txn = mq_globals_begin(S);
  masq_status st = mq_protect(S, eval_protected, job);
  mq_arena_free(&job->arena);
  masq_status result = st;
  if (st != MASQ_OK) {
    mq_api_fail_run(S, st, job->src, job->stack_len, job->nframes, mark);
  } else if (job->parse_status == MASQ_ERR_SYNTAX) {
    result = MASQ_ERR_SYNTAX;
    mq_buf_free(S, &S->err_message);
    S->err_message = job->errs.first_message;
    job->errs.first_message = (mq_buf){0};
    mq_buf_free(S, &S->err_rendered);
    S->err_rendered = job->errs.rendered;
    job->errs.rendered = (mq_buf){0};
    mq_strfree(S, S->err_chunk);
    S->err_chunk = job->src->name; /* the error outlives the source */
    job->src->name = NULL;
    S->err.status = MASQ_ERR_SYNTAX;
    S->err.message = S->err_message.data;
    S->err.rendered = S->err_rendered.data;
    S->err.chunkname = S->err_chunk;
    S->err.line = job->errs.first_span.line;
    S->err.column = job->errs.first_span.col;
    S->err.end_column = job->errs.first_span.end_col;
    report(S);
  } else if (job->parse_status == MASQ_INCOMPLETE) {
    result = MASQ_INCOMPLETE;
  }
  mq_buf_free(S, &job->errs.rendered);
  mq_buf_free(S, &job->errs.first_message);
  if (job->fn) mq_obj_release(S, &job->fn->hdr);
  mq_source_release(S, job->src);
  mq_pool_drain(S, mark);
  mq_globals_end(S, txn, st == MASQ_OK || st == MASQ_EXIT);
  mq_gc_step(S);
  return mq_api_finish(S, result);
}

masq_status masq_eval(masq_state *S, const char *source, size_t len, const char *chunkname,
                      int flags) {
  eval_job job;
  memset(&job, 0, sizeof job);
  job.text = source;
  job.len = len;
  job.name = chunkname ? chunkname : "<string>";
  job.flags = flags;
  return run_eval(S, &job);
}

masq_status masq_disassemble(masq_state *S, const char *source, size_t len,
                             const char *chunkname) {
  eval_job job;
  memset(&job, 0, sizeof job);
  job.text = source;
  job.len = len;
  job.name = chunkname ? chunkname : "<string>";
  job.purpose = "dis";
  return run_eval(S, &job);
}

typedef struct file_job {
  const char *path;
  FILE *fp; /* closed by the caller, also when reading fails */
  char *text;
  size_t len, cap;
} file_job;

static void read_file(mq_state *S, void *ud) {
  file_job *fj = ud;
  for (;;) {
    if (fj->len + 4096 + 1 > fj->cap) {
      size_t nc = fj->cap ? fj->cap * 2 : 8192;
      fj->text = mq_realloc(S, fj->text, fj->cap, nc);
      fj->cap = nc;
    }
    size_t n = fread(fj->text + fj->len, 1, fj->cap - fj->len - 1, fj->fp);
    fj->len += n;
    if (n == 0) break;
  }
  if (ferror(fj->fp)) mq_throw(S, MASQ_ERR_USAGE, "cannot read '%s': %s", fj->path, strerror(errno));
  fj->text[fj->len] = '\0';
}

masq_status masq_eval_file(masq_state *S, const char *path) {
  if (!S) return MASQ_ERR_USAGE;
  if (mq_api_refused(S)) return MASQ_ERR_USAGE;
  mq_api_clear_error(S);
  if (!path) return fail_with(S, MASQ_ERR_USAGE, NULL, NULL, "masq_eval_file: path is NULL", NULL);
  bool irregular;
  file_job fj = {path, mq_file_open_regular(path, &irregular), NULL, 0, 0};
  masq_status st;
  if (!fj.fp) {
    char msg[512];
    snprintf(msg, sizeof msg, "cannot open '%s': %s", path,
             irregular ? "not a regular file" : strerror(errno));
    return fail_with(S, MASQ_ERR_USAGE, NULL, NULL, msg, NULL);
  }
  st = mq_protect(S, read_file, &fj);
  fclose(fj.fp);
  if (st == MASQ_OK) st = masq_eval(S, fj.text, fj.len, path, 0);
  else st = fail(S, st, NULL, NULL);
  mq_free(S, fj.text, fj.cap);
  return st;
}

/* --- introspection for the REPL ---------------------------------------------------------- */

void masq_complete(masq_state *S, const char *prefix, void (*fn)(void *ud, const char *name),
                   void *ud) {
  if (!S || !fn) return;
  if (!prefix) prefix = "";
  size_t n = strlen(prefix);
  for (int i = 0; i < S->nglobals; i++) {
    const mq_global *g = &S->globals[i];
    if (g->defined && strncmp(g->name, prefix, n) == 0) fn(ud, g->name);
  }
}

/* By the builtins' convention (docs/HACKING.md, "How to add a builtin") a
 * first parameter named x, a, y or data takes a tensor; so do host
 * functions registered with such a signature. */
static bool tensor_first(const mq_builtin *b) {
  static const char *const names[] = {"x", "a", "y", "data"};
  if (b->nparams < 1 || b->rest == 0 || b->kwrest == 0) return false;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(b->params[0].name, names[i]) == 0) return true;
  return false;
}

void masq_complete_methods(masq_state *S, const char *prefix,
                           void (*fn)(void *ud, const char *name), void *ud) {
  if (!S || !fn) return;
  if (!prefix) prefix = "";
  size_t n = strlen(prefix);
  for (int i = 0; i < S->nglobals; i++) {
    const mq_global *g = &S->globals[i];
    if (!g->defined || strncmp(g->name, prefix, n) != 0 || !mq_is_obj(g->value, MQ_O_BUILTIN))
      continue;
    const mq_builtin_obj *o = (const mq_builtin_obj *)g->value.as.o;
    if (tensor_first(&S->builtins[o->index])) fn(ud, g->name);
  }
}

const char *masq_doc(masq_state *S, const char *name) {
  if (!S || !name) return NULL;
  /* Newest first: a host function registered under a builtin's name
   * replaces it. An entry whose registration failed has no help yet. */
  for (int i = S->nbuiltins - 1; i >= 0; i--) {
    const mq_builtin *b = &S->builtins[i];
    if (b->help && strcmp(b->name, name) == 0) return b->help_both ? b->help_both : b->help;
  }
  return mq_keyword_help(name, strlen(name));
}

typedef struct globals_job {
  int index;
  mq_buf summary;
} globals_job;

static void summarize(mq_state *S, void *ud) {
  globals_job *job = ud;
  mq_value v = S->globals[job->index].value;
  job->summary.len = 0;
  if (mq_is_tensor(v)) {
    mq_tensor_summary(S, &job->summary, mq_as_tensor(v));
  } else {
    mq_buf_printf(S, &job->summary, "%s ", mq_value_type_name(v));
    size_t at = job->summary.len;
    /* Quoted, a string stays on one line and keeps its NUL bytes visible. */
    if (mq_is_obj(v, MQ_O_STRING)) mq_string_quote(S, &job->summary, mq_as_string(v));
    else if (mq_is_obj(v, MQ_O_TABLE)) mq_table_shape(S, &job->summary, mq_as_table(v));
    else mq_value_format_head(S, &job->summary, v, 60); /* no more than is shown */
    if (job->summary.len - at > 60) {
      job->summary.len = at + 57;
      mq_buf_puts(S, &job->summary, "...");
    }
  }
}

void masq_globals(masq_state *S, void (*fn)(void *ud, const char *name, const char *summary),
                  void *ud) {
  if (!S || !fn || mq_api_refused(S)) return;
  globals_job job = {0, {0}};
  for (int i = 0; i < S->nglobals; i++) {
    const mq_global *g = &S->globals[i];
    if (!mq_global_is_user(g)) continue;
    job.index = i;
    if (mq_protect(S, summarize, &job) == MASQ_OK) fn(ud, g->name, job.summary.data);
  }
  mq_buf_free(S, &job.summary);
}

/* --- import -------------------------------------------------------------------------------- */

typedef struct import_job {
  mq_source *src;
  mq_arena arena;
  syntax_errors errs;
  mq_function *fn;
} import_job;

static void import_compile(mq_state *S, void *ud) {
  import_job *ij = ud;
  mq_node *program = NULL;
  ij->errs.S = S;
  ij->errs.src = ij->src;
  if (mq_parse(&ij->arena, ij->src, false, report_syntax, &ij->errs, &program) != MQ_PARSE_OK)
    mq_throw(S, MASQ_ERR_SYNTAX, "cannot import '%s': %s:%d:%d: %s", ij->src->name, ij->src->name,
             ij->errs.first_span.line, ij->errs.first_span.col, ij->errs.first_message.data);
  ij->fn = mq_compile(S, program, ij->src, false);
}

/* Reads, compiles and runs the module at path [full]. */
static void import_file(mq_state *S, const char *full) {
  bool irregular;
  file_job fj = {full, mq_file_open_regular(full, &irregular), NULL, 0, 0};
  if (!fj.fp)
    mq_error(S, "cannot import '%s': %s", full, irregular ? "not a regular file" : strerror(errno));
  masq_status st = mq_protect(S, read_file, &fj);
  fclose(fj.fp);
  if (st != MASQ_OK) {
    mq_free(S, fj.text, fj.cap);
    mq_throw(S, st, "%s", S->err_message.data);
  }
  import_job ij;
  memset(&ij, 0, sizeof ij);
  mq_jmp guard; /* frees the file text if making the source fails */
  guard.prev = S->errjmp;
  S->errjmp = &guard;
  if (setjmp(guard.buf) == 0) {
    ij.src = mq_source_new(S, full, fj.text, fj.len);
    S->errjmp = guard.prev;
  } else {
    S->errjmp = guard.prev;
    mq_free(S, fj.text, fj.cap);
    mq_throw(S, guard.status, "%s", S->err_message.data);
  }
  mq_free(S, fj.text, fj.cap);
  mq_arena_init(&ij.arena, S);
  st = mq_protect(S, import_compile, &ij);
  mq_arena_free(&ij.arena);
  mq_buf_free(S, &ij.errs.rendered);
  mq_source_release(S, ij.src); /* the compiled code holds its own reference */
  if (st != MASQ_OK) {
    mq_buf_free(S, &ij.errs.first_message);
    mq_throw(S, st, "%s", S->err_message.data);
  }
  mq_buf_free(S, &ij.errs.first_message);
  /* The state keeps the file's code, as it keeps its path: an error in it
   * is located after the eval's pool has let go of it. */
  mq_list_push(S, S->imports, mq_objv(ij.fn));
  mq_release(S, mq_vm_run(S, ij.fn, 0));
}

/* S->imports holds the paths imported (strings) and their code (functions). */
static int find_import(const mq_list *imports, const char *full) {
  for (int i = 0; i < imports->len; i++)
    if (mq_is_obj(imports->items[i], MQ_O_STRING) &&
        strcmp(mq_as_string(imports->items[i])->chars, full) == 0)
      return i;
  return -1;
}

void mq_vm_import(mq_state *S, const char *path, const mq_source *from) {
  if (!(S->cfg.libs & MASQ_LIB_IO))
    mq_error(S, "import is disabled: the host did not enable file access (MASQ_LIB_IO)");
  char full[4096];
  const char *slash = from ? strrchr(from->name, '/') : NULL;
  int n;
  if (path[0] != '/' && slash)
    n = snprintf(full, sizeof full, "%.*s/%s", (int)(slash - from->name), from->name, path);
  else
    n = snprintf(full, sizeof full, "%s", path);
  if (n < 0 || (size_t)n >= sizeof full)
    mq_error(S, "cannot import '%.64s...': the path is longer than %d bytes", path,
             (int)sizeof full - 1);
  if (!S->imports) {
    S->imports = mq_list_new(S, 4);
    S->imports->hdr.rc++; /* the state's own reference */
  }
  if (find_import(S->imports, full) >= 0) return;
  /* Listed while it runs, so a module that imports itself stops there;
   * forgotten if it fails, so that a later import tries again. */
  mq_list_push(S, S->imports, mq_objv(mq_string_new(S, full, strlen(full))));
  /* A bare boundary, not mq_protect: the pool must keep the module's code
   * until the error has been located in it. */
  mq_jmp guard;
  guard.prev = S->errjmp;
  guard.status = MASQ_OK;
  S->errjmp = &guard;
  if (setjmp(guard.buf) == 0) import_file(S, full);
  S->errjmp = guard.prev;
  masq_status st = guard.status;
  if (st != MASQ_OK) {
    mq_list *l = S->imports;
    int i = find_import(l, full);
    mq_value gone = l->items[i];
    memmove(&l->items[i], &l->items[i + 1], (size_t)(l->len - i - 1) * sizeof *l->items);
    l->len--;
    mq_release(S, gone);
    S->pending_span = S->err_has_span; /* keep the failure's own location */
    mq_throw(S, st, "%s", S->err_message.data ? S->err_message.data : "import failed");
  }
}
