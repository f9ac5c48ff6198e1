/* api_host.c - the host and scripts talking (include/masq.h): globals by
 * name, calling masq functions from C, and C functions callable from
 * scripts (host functions). Tensor handles themselves are in api_tensor.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/gc.h"
#include "../lexer/keywords.h"
#include "../runtime/tensor/tensor.h"
#include "../vm/builtin.h"
#include "../vm/globals.h"
#include "../vm/vm.h"
#include "api_int.h"

/* --- values as the host sees them --------------------------------------------------- */

typedef struct list_job {
  mq_value v;
  mq_tensor *t;
} list_job;

static void list_to_tensor(mq_state *S, void *ud) {
  list_job *job = ud;
  job->t = mq_tensor_from_value(S, job->v, "list");
}

/* [v] as a tensor for the host, NULL for none. A number becomes a weak 0-d
 * tensor that keeps its full value (float64, where a script's literal would
 * be float32) and still promotes like the number it was. Anything that is
 * not a tensor raises [st] with a message naming [what]. */
static mq_tensor *host_tensor(mq_state *S, mq_value v, const char *what, masq_status st) {
  mq_tensor *t;
  switch ((mq_vtype)v.type) {
  case MQ_NONE: return NULL;
  case MQ_BOOL: t = mq_tensor_scalar(S, MQ_DT_BOOL, v.as.b); break;
  case MQ_INT: t = mq_tensor_scalar_i64(S, v.as.i); break;
  case MQ_FLOAT: t = mq_tensor_scalar(S, MQ_DT_F64, v.as.f); break;
  case MQ_OBJ:
    if (mq_is_tensor(v)) return mq_as_tensor(v);
    if (mq_is_obj(v, MQ_O_LIST)) {
      list_job job = {v, NULL};
      masq_status why = mq_protect(S, list_to_tensor, &job);
      /* an interrupt stays one: the host's deadline or Ctrl-C ends the
       * conversion, and a host that falls back on reading the list item by
       * item (the Python module does) must not start on it */
      if (why == MASQ_ERR_INTERRUPTED) mq_throw(S, why, "%s", S->err_message.data);
      if (why != MASQ_OK)
        mq_throw(S, st, "%s is a list that does not make a tensor: %s", what,
                 S->err_message.data);
      return job.t;
    }
    /* fall through */
  default: mq_throw(S, st, "%s is %s, not a tensor or a number", what, mq_value_a_type_name(v));
  }
  t->weak = true;
  return t;
}

static bool is_identifier(const char *s, size_t n) {
  if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return false;
  for (size_t i = 0; i < n; i++)
    if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9')))
      return false;
  return !mq_keyword_help(s, n);
}

static void check_name(mq_state *S, const char *fn, const char *name) {
  mq_api_need(S, name, fn, "name");
  if (!is_identifier(name, strlen(name)))
    mq_throw(S, MASQ_ERR_USAGE,
             "%s: \"%s\" is not a name a script can use (letters, digits and _, not starting "
             "with a digit, not a keyword)",
             fn, name);
}

/* --- globals ---------------------------------------------------------------------------- */

typedef struct global_job {
  const char *fn, *name;
  mq_value value;    /* set: numbers */
  masq_tensor *t;    /* set: a tensor (NULL: none) */
  enum { SET_VALUE, SET_STRING, SET_STRINGS } kind; /* set: value/t, str, strs */
  const char *str;
  size_t len;          /* set_lstring: str's length */
  const char *const *strs;
  const size_t *lens;  /* set_lstrings: their lengths; NULL: strlen */
  int nstrs;
  masq_tensor **out; /* get */
  double *number;    /* get_number */
  int64_t *integer;  /* get_int */
  uint64_t *identity; /* get_identity */
  char *sbuf;        /* get_string: the host's buffer, its size, the length */
  size_t ssize;
  size_t *slen;
} global_job;

static void set_protected(mq_state *S, void *ud) {
  global_job *job = ud;
  check_name(S, job->fn, job->name);
  mq_value v = job->value;
  if (job->t) {
    mq_handle_check(S, job->t, job->fn, "t");
    v = mq_objv(job->t);
  } else if (job->kind == SET_STRING) {
    if (job->len) mq_api_need(S, job->str, job->fn, "s");
    v = mq_objv(mq_string_new(S, job->str, job->len));
  } else if (job->kind == SET_STRINGS) {
    if (job->nstrs < 0) mq_throw(S, MASQ_ERR_USAGE, "%s: n must not be negative, got %d", job->fn, job->nstrs);
    if (job->nstrs > 0) mq_api_need(S, job->strs, job->fn, "strs");
    mq_list *l = mq_list_new(S, job->nstrs);
    for (int i = 0; i < job->nstrs; i++) {
      if (!job->strs[i] && !(job->lens && job->lens[i] == 0))
        mq_throw(S, MASQ_ERR_USAGE, "%s: strs[%d] is NULL", job->fn, i);
      size_t n = job->lens ? job->lens[i] : strlen(job->strs[i]);
      mq_list_push(S, l, mq_objv(mq_string_new(S, job->strs[i], n)));
    }
    v = mq_objv(l);
  }
  int slot = mq_global_slot(S, job->name);
  mq_global_set(S, slot, v); /* the host's value: :vars lists it, del gives back a builtin's */
}

/* The value of the global the job names; raises if there is none. */
static mq_value global_value(mq_state *S, const global_job *job) {
  check_name(S, job->fn, job->name);
  int slot = mq_global_find(S, job->name);
  if (slot < 0 || !S->globals[slot].defined)
    mq_throw(S, MASQ_ERR_USAGE, "%s: there is no global named '%s'", job->fn, job->name);
  return S->globals[slot].value;
}

static void get_protected(mq_state *S, void *ud) {
  global_job *job = ud;
  mq_api_need(S, job->out, job->fn, "out");
  mq_api_reset_interrupt(S); /* a list's conversion polls, as a run does */
  char what[160];
  snprintf(what, sizeof what, "%s: global '%.64s'", job->fn, job->name ? job->name : "");
  mq_value v = global_value(S, job);
  mq_handle_give(S, job->out, host_tensor(S, v, what, MASQ_ERR_USAGE));
}

static void get_number_protected(mq_state *S, void *ud) {
  global_job *job = ud;
  mq_api_need(S, job->number, job->fn, "out");
  mq_value v = global_value(S, job);
  switch ((mq_vtype)v.type) {
  case MQ_BOOL: *job->number = v.as.b; return;
  case MQ_INT: *job->number = (double)v.as.i; return;
  case MQ_FLOAT: *job->number = v.as.f; return;
  default: break;
  }
  if (!mq_is_tensor(v))
    mq_throw(S, MASQ_ERR_USAGE, "%s: global '%s' is %s, not a number", job->fn, job->name,
             mq_value_a_type_name(v));
  *job->number = mq_tensor_item(S, mq_as_tensor(v));
}

static void get_int_protected(mq_state *S, void *ud) {
  global_job *job = ud;
  mq_api_need(S, job->integer, job->fn, "out");
  mq_value v = global_value(S, job);
  if (!mq_value_as_int(S, v, job->integer))
    mq_throw(S, MASQ_ERR_USAGE, "%s: global '%s' is %s, not an int (use masq_get_number)",
             job->fn, job->name, mq_is_tensor(v) ? "a float or multi-element tensor" : mq_value_a_type_name(v));
}

masq_status masq_get_int(masq_state *M, const char *name, int64_t *out) {
  global_job job = {.fn = "masq_get_int", .name = name, .integer = out};
  return mq_api_entry(M, get_int_protected, &job, NULL);
}

masq_status masq_set_global(masq_state *M, const char *name, masq_tensor *t) {
  global_job job = {.fn = "masq_set_global", .name = name, .value = mq_none(), .t = t};
  return mq_api_entry(M, set_protected, &job, NULL);
}

masq_status masq_set_number(masq_state *M, const char *name, double value) {
  global_job job = {.fn = "masq_set_number", .name = name, .value = mq_float(value)};
  return mq_api_entry(M, set_protected, &job, NULL);
}

masq_status masq_set_int(masq_state *M, const char *name, int64_t value) {
  global_job job = {.fn = "masq_set_int", .name = name, .value = mq_int(value)};
  return mq_api_entry(M, set_protected, &job, NULL);
}

masq_status masq_set_string(masq_state *M, const char *name, const char *s) {
  /* s NULL: a length of 1 makes set_protected report it. */
  global_job job = {.fn = "masq_set_string", .name = name, .value = mq_none(), .kind = SET_STRING,
                    .str = s, .len = s ? strlen(s) : 1};
  return mq_api_entry(M, set_protected, &job, NULL);
}

masq_status masq_set_lstring(masq_state *M, const char *name, const char *s, size_t len) {
  global_job job = {.fn = "masq_set_lstring", .name = name, .value = mq_none(), .kind = SET_STRING,
                    .str = s, .len = len};
  return mq_api_entry(M, set_protected, &job, NULL);
}

masq_status masq_set_strings(masq_state *M, const char *name, int n, const char *const *strs) {
  global_job job = {.fn = "masq_set_strings", .name = name, .value = mq_none(), .kind = SET_STRINGS,
                    .strs = strs, .nstrs = n};
  return mq_api_entry(M, set_protected, &job, NULL);
}

masq_status masq_set_lstrings(masq_state *M, const char *name, int n, const char *const *strs,
                              const size_t *lens) {
  global_job job = {.fn = "masq_set_lstrings", .name = name, .value = mq_none(), .kind = SET_STRINGS,
                    .strs = strs, .lens = lens, .nstrs = n};
  return mq_api_entry(M, set_protected, &job, NULL);
}

masq_status masq_get_global(masq_state *M, const char *name, masq_tensor **out) {
  global_job job = {.fn = "masq_get_global", .name = name, .out = out};
  return mq_api_entry(M, get_protected, &job, out);
}

static void get_string_protected(mq_state *S, void *ud) {
  global_job *job = ud;
  if (job->ssize > 0) mq_api_need(S, job->sbuf, job->fn, "buf");
  mq_value v = global_value(S, job);
  if (!mq_is_obj(v, MQ_O_STRING))
    mq_throw(S, MASQ_ERR_USAGE, "%s: global '%s' is %s, not a string", job->fn, job->name,
             mq_value_a_type_name(v));
  const mq_string *str = (const mq_string *)v.as.o;
  if (job->slen) *job->slen = str->len;
  if (job->ssize == 0) return;
  size_t n = str->len < job->ssize - 1 ? str->len : job->ssize - 1;
  memcpy(job->sbuf, str->chars, n);
  job->sbuf[n] = '\0';
}

masq_status masq_get_string(masq_state *M, const char *name, char *buf, size_t size, size_t *len) {
  global_job job = {.fn = "masq_get_string", .name = name, .sbuf = buf, .ssize = size, .slen = len};
  return mq_api_entry(M, get_string_protected, &job, NULL);
}

masq_status masq_get_number(masq_state *M, const char *name, double *out) {
  global_job job = {.fn = "masq_get_number", .name = name, .number = out};
  return mq_api_entry(M, get_number_protected, &job, NULL);
}

static void get_identity_protected(mq_state *S, void *ud) {
  global_job *job = ud;
  mq_api_need(S, job->identity, job->fn, "id");
  mq_value v = global_value(S, job);
  *job->identity = v.type == MQ_OBJ ? (uint64_t)(uintptr_t)v.as.o : 0; /* the GC never moves objects */
}

masq_status masq_get_identity(masq_state *M, const char *name, uint64_t *id) {
  global_job job = {.fn = "masq_get_identity", .name = name, .identity = id};
  if (id) *id = 0;
  return mq_api_entry(M, get_identity_protected, &job, NULL);
}

/* --- calling masq from C ------------------------------------------------------------------ */

typedef struct call_job {
  const char *name;
  int argc;
  masq_tensor *const *argv;
  masq_tensor **result;
  mq_function *fn; /* the call's code; our own reference */
} call_job;

static void emit(mq_state *S, mq_function *f, int op, int operand, int nbytes) {
  const mq_span nowhere = {0, 0, 0}; /* errors here are the host's: no source line */
  mq_chunk_emit(S, f, (uint8_t)op, nowhere);
  for (int i = 0; i < nbytes; i++) mq_chunk_emit(S, f, (uint8_t)(operand >> (8 * i)), nowhere);
}

/* Runs `name(argv...)` as a tiny compiled function, the arguments as its
 * constants: the VM's own CALL then checks arity and keywords, enforces the
 * call depth, polls interrupts and builds the traceback, for script
 * functions, builtins and host functions alike. */
static void call_protected(mq_state *S, void *ud) {
  call_job *job = ud;
  mq_api_need(S, job->name, "masq_call", "fname");
  if (job->argc < 0 || job->argc > 255)
    mq_throw(S, MASQ_ERR_USAGE, "masq_call: argc is %d; 0 to 255 arguments are possible",
             job->argc);
  if (job->argc > 0) mq_api_need(S, job->argv, "masq_call", "argv");
  for (int i = 0; i < job->argc; i++) {
    char what[32];
    snprintf(what, sizeof what, "argv[%d]", i);
    mq_handle_check(S, job->argv[i], "masq_call", what);
  }
  int slot = mq_global_find(S, job->name);
  if (slot < 0 || !S->globals[slot].defined)
    mq_throw(S, MASQ_ERR_USAGE, "masq_call: there is no function named '%s'", job->name);
  mq_value callee = S->globals[slot].value;
  if (!mq_is_obj(callee, MQ_O_CLOSURE) && !mq_is_obj(callee, MQ_O_BUILTIN))
    mq_throw(S, MASQ_ERR_USAGE, "masq_call: '%s' is %s, not a function", job->name,
             mq_value_a_type_name(callee));

  mq_function *f = mq_function_new(S, "<masq_call>", NULL);
  /* Our own reference, as eval's: an error drains the pool, and the code
   * must outlive that while the error is located. */
  f->hdr.rc++;
  job->fn = f;
  emit(S, f, MQ_OP_GET_GLOBAL, slot, 2);
  for (int i = 0; i < job->argc; i++)
    emit(S, f, MQ_OP_CONST, mq_chunk_const(S, f, mq_objv(job->argv[i])), 2);
  emit(S, f, MQ_OP_CALL, job->argc, 1);
  emit(S, f, MQ_OP_RETURN, 0, 0);
  f->nslots = job->argc + 2;

  mq_value r = mq_vm_run(S, f, 0);
  if (r.type == MQ_OBJ) mq_pool_own(S, r.as.o); /* the pool takes the returned reference */
  if (job->result) {
    char what[160];
    snprintf(what, sizeof what, "masq_call: the result of %.64s()", job->name);
    mq_handle_give(S, job->result, host_tensor(S, r, what, MASQ_ERR_USAGE));
  }
}

masq_status masq_call(masq_state *M, const char *fname, int argc, masq_tensor *const *argv,
                      masq_tensor **result) {
  if (result) *result = NULL;
  if (!M) return MASQ_ERR_USAGE;
  if (mq_api_refused(M)) return MASQ_ERR_USAGE;
  mq_api_clear_error(M);
  mq_api_reset_interrupt(M);
  call_job job = {fname, argc, argv, result, NULL};
  size_t mark = mq_pool_mark(M);
  int stack_len = M->stack_len, nframes = M->nframes;
  mq_txn txn = mq_globals_begin(M);
  masq_status st = mq_protect(M, call_protected, &job);
  if (st != MASQ_OK) mq_api_fail_run(M, st, NULL, stack_len, nframes, mark);
  mq_pool_drain(M, mark);
  mq_globals_end(M, txn, st == MASQ_OK || st == MASQ_EXIT);
  if (job.fn) mq_obj_release(M, &job.fn->hdr);
  mq_gc_step(M);
  return mq_api_finish(M, st);
}

/* --- host functions ----------------------------------------------------------------------- */

struct mq_hostfn {
  masq_cfunction fn;
  void *ud;
  char *sig; /* "name(params)" as bound: a bare name gets "(*args)" */
  char *doc;
  mq_libfn def; /* points at sig and doc; the builtin entry points here */
};

void mq_hostfn_free(mq_state *S, struct mq_hostfn *h) {
  mq_strfree(S, h->sig);
  mq_strfree(S, h->doc);
  mq_free(S, h, sizeof *h);
}

/* Why host signature [sig] is malformed: "masq_register: bad signature
 * "f(a=1, b)": parameter 'b' ...". [fmt] is ours, never the host's. */
static MQ_NORETURN void bad_signature(mq_state *S, const char *sig, const char *fmt, ...)
    MQ_PRINTF(3, 4);
static void bad_signature(mq_state *S, const char *sig, const char *fmt, ...) {
  char why[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  mq_throw(S, MASQ_ERR_USAGE,
           "masq_register: bad signature \"%s\": %s (expected a name, or a name with "
           "parameters like \"clip(x, lo=0, hi=none, *rest)\")",
           sig, why);
}

/* Checks default [s] of [n] bytes for parameter [pname]: none, true, false
 * or a decimal number that fits (vm/builtin.c's parse_default reads it with
 * strtoll, or strtod if it has '.', 'e' or 'E', so no hex, inf or nan). */
static void check_default(mq_state *S, const char *sig, const char *s, size_t n,
                          const char *pname, int plen) {
  if ((n == 4 && !memcmp(s, "none", 4)) || (n == 4 && !memcmp(s, "true", 4)) ||
      (n == 5 && !memcmp(s, "false", 5)))
    return;
  char tmp[32], *end;
  if (n == 0) bad_signature(S, sig, "parameter '%.*s' has '=' but no default", plen, pname);
  if (n >= sizeof tmp)
    bad_signature(S, sig, "the default of '%.*s' is longer than %d characters", plen, pname,
                  (int)sizeof tmp - 1);
  bool ok = strspn(s, "0123456789+-.eE") >= n;
  if (ok) {
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    errno = 0;
    if (strpbrk(tmp, ".eE")) strtod(tmp, &end);
    else strtoll(tmp, &end, 10);
    ok = *end == '\0';
    if (ok && errno == ERANGE)
      bad_signature(S, sig, "the default of '%.*s' is out of range", plen, pname);
  }
  if (!ok)
    bad_signature(S, sig,
                  "the default of '%.*s' is not none, true, false or a decimal number", plen,
                  pname);
}

/* Checks a host signature against the notation the binder assumes (it
 * trusts the library's own tables): "name" or "name(a, b=1, *rest, c=2)",
 * spaces allowed around the punctuation only, "()" for no parameters.
 * Before *rest, a parameter without a default cannot follow one with a
 * default (Python's rule: a positional call could never use that default);
 * after it, parameters are keyword-only. Returns true for a bare name. */
static bool check_signature(mq_state *S, const char *sig) {
  const char *p = sig, *start = p;
  while (*p && *p != '(') p++;
  if (!is_identifier(start, (size_t)(p - start)))
    bad_signature(S, sig, "the function's name is not a name a script can use");
  if (!*p) return true;
  p++;
  int n = 0, nrest = 0, ndefault = 0;
  const char *names[MQ_MAX_PARAMS];
  size_t lens[MQ_MAX_PARAMS];
  if (*p != ')')
    for (;;) {
      while (*p == ' ') p++;
      if (!*p) bad_signature(S, sig, "no ')' after the parameters");
      if (n == MQ_MAX_PARAMS)
        bad_signature(S, sig, "more than %d parameters", MQ_MAX_PARAMS);
      bool rest = *p == '*';
      if (rest && p[1] == '*')
        bad_signature(S, sig, "host functions take no **names parameter");
      if (rest && ++nrest > 1) bad_signature(S, sig, "more than one *rest parameter");
      start = p += rest;
      while (*p && *p != ',' && *p != ')' && *p != '=' && *p != ' ') p++;
      size_t full = (size_t)(p - start);
      int len = (int)(full < 64 ? full : 64); /* as much as a message shows */
      if (full == 0) bad_signature(S, sig, "parameter %d has no name", n + 1);
      if (!is_identifier(start, full))
        bad_signature(S, sig, "'%.*s' is not a name a script can use", len, start);
      for (int i = 0; i < n; i++)
        if (lens[i] == full && !memcmp(names[i], start, full))
          bad_signature(S, sig, "parameter '%.*s' is named twice", len, start);
      names[n] = start;
      lens[n++] = full;
      while (*p == ' ') p++;
      if (*p == '=') {
        if (rest) bad_signature(S, sig, "*%.*s cannot have a default", len, start);
        p++;
        while (*p == ' ') p++;
        const char *v = p;
        while (*p && *p != ',' && *p != ')') p++;
        check_default(S, sig, v, (size_t)(p - v), start, len);
        ndefault++;
      } else if (!rest && ndefault && !nrest) {
        bad_signature(S, sig,
                      "parameter '%.*s' has no default but follows one that has (put it "
                      "first, or after *rest)",
                      len, start);
      }
      if (*p == ')') break;
      if (!*p) bad_signature(S, sig, "no ')' after the parameters");
      if (*p != ',')
        bad_signature(S, sig, "expected ',' or ')' after parameter '%.*s'", len, start);
      p++;
    }
  if (p[1] != '\0') bad_signature(S, sig, "text after the closing ')'");
  return false;
}

typedef struct register_job {
  const char *sig, *doc;
  masq_cfunction fn;
  void *ud;
} register_job;

static void register_protected(mq_state *S, void *ud) {
  register_job *job = ud;
  mq_api_need(S, job->sig, "masq_register", "signature");
  if (!job->fn) mq_throw(S, MASQ_ERR_USAGE, "masq_register: fn is NULL");
  bool bare = check_signature(S, job->sig);
  mq_host_get(S); /* masq_errorf() writes here; it cannot allocate */
  int index = mq_builtin_new_entry(S);
  struct mq_hostfn *h = mq_calloc(S, sizeof *h);
  S->builtins[index].host = h; /* owned by the entry from now on, whatever fails */
  h->fn = job->fn;
  h->ud = job->ud;
  /* Exactly strlen + 1 bytes: mq_strfree gives back that much. */
  size_t n = strlen(job->sig) + (bare ? strlen("(*args)") : 0) + 1;
  h->sig = mq_alloc(S, n);
  snprintf(h->sig, n, bare ? "%s(*args)" : "%s", job->sig);
  h->doc = mq_strdup(S, job->doc ? job->doc : "");
  h->def = (mq_libfn){h->sig, NULL, h->doc};
  mq_builtin_bind(S, index, &h->def);
}

masq_status masq_register(masq_state *M, const char *signature, masq_cfunction fn, void *ud,
                          const char *doc) {
  register_job job = {signature, doc, fn, ud};
  return mq_api_entry(M, register_protected, &job, NULL);
}

masq_status masq_errorf(masq_state *M, const char *fmt, ...) {
  if (!M || !M->host) return MASQ_ERR_RUNTIME;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(M->host->error, sizeof M->host->error, fmt ? fmt : "error", ap);
  va_end(ap);
  M->host->error_set = true;
  return MASQ_ERR_RUNTIME;
}

/* The argument [vals[k]] of parameter [i] (item [item] of a *rest
 * parameter, else -1) of [b], for the host; argv[0..k) are the arguments
 * before it. A list passed again (f(b, b)) is the tensor made of it the
 * first time: converted once, however big, and the host sees one tensor
 * twice, as for f(t, t). A call has at most 255 positional arguments and
 * MQ_MAX_PARAMS parameters, so the scan is cheap. */
static mq_tensor *host_arg(mq_state *S, const mq_builtin *b, int i, int item, const mq_value *vals,
                           mq_tensor *const *argv, int k) {
  mq_value v = vals[k];
  if (mq_is_obj(v, MQ_O_LIST))
    for (int j = 0; j < k; j++)
      if (vals[j].type == MQ_OBJ && vals[j].as.o == v.as.o) return argv[j];
  char what[160];
  if (item >= 0)
    snprintf(what, sizeof what, "%s(): argument %d", b->name, i + item + 1);
  else
    snprintf(what, sizeof what, "%s(): argument '%s'", b->name, b->params[i].name);
  return host_tensor(S, v, what, MASQ_ERR_RUNTIME);
}

mq_value mq_host_call(mq_state *S, const mq_builtin *b, mq_value *args) {
  /* Everything we need from [b] is read now: the host function may register
   * more, which moves the builtins table. */
  const struct mq_hostfn *h = b->host;
  const char *name = b->name; /* a string of its own: does not move */
  int argc = 0;
  for (int i = 0; i < b->nparams; i++) argc += i == b->rest ? mq_as_list(args[i])->len : 1;
  mq_tensor **argv = mq_scratch(S, (size_t)(argc ? argc : 1) * sizeof *argv);
  mq_value *vals = mq_scratch(S, (size_t)(argc ? argc : 1) * sizeof *vals);
  for (int i = 0, k = 0; i < b->nparams; i++) {
    if (i != b->rest) {
      vals[k] = args[i];
      argv[k] = host_arg(S, b, i, -1, vals, argv, k);
      k++;
      continue;
    }
    const mq_list *rest = mq_as_list(args[i]);
    for (int j = 0; j < rest->len; j++, k++) {
      vals[k] = rest->items[j];
      argv[k] = host_arg(S, b, i, j, vals, argv, k);
    }
  }

  /* The host holds the arguments during the call (so it may retain them,
   * and every pointer it hands back can be checked). From the reservation
   * to the end of the call nothing raises: those references must be given
   * back. */
  mq_handle_reserve(S, (size_t)argc);
  for (int k = 0; k < argc; k++)
    if (argv[k]) mq_handle_add(S, argv[k]);
  mq_host *H = S->host;
  H->error_set = false;
  mq_api_clear_error(S);
  masq_tensor *result = NULL;
  S->host_depth++; /* runs nested in it keep an outer run's interrupt (core/state.c) */
  masq_status st = h->fn(S, h->ud, argc, argv, &result);
  S->host_depth--;
  for (int k = 0; k < argc; k++)
    if (argv[k]) mq_handle_drop(S, argv[k], true);
  if (S->close_refused) { /* masq_close from inside: the script stops here */
    S->close_refused = false;
    if (result && mq_handle_held(S, result)) mq_handle_drop(S, result, true);
    mq_throw(S, MASQ_ERR_USAGE,
             "%s() called masq_close() on the state that is running it; the state stays open "
             "(close it once the outermost call has returned)",
             name);
  }
  /* An interrupt the host function passes on stops this run: it is
   * consumed here, as a poll would (core/state.c), once no host function
   * is left outside. */
  if (st == MASQ_ERR_INTERRUPTED && S->host_depth == 0) S->interrupted = 0;

  if (st != MASQ_OK) {
    if (result && mq_handle_held(S, result)) mq_handle_drop(S, result, true);
    char msg[1024];
    if (H->error_set) snprintf(msg, sizeof msg, "%s", H->error);
    else if (S->err.status != MASQ_OK && S->err.message) /* a call back into masq failed */
      snprintf(msg, sizeof msg, "%s", S->err.message);
    else
      snprintf(msg, sizeof msg, "%s() failed (status %d) without a message", name, (int)st);
    /* exit() in masq code the host function ran (masq_call) still ends
     * the whole run, with its code, if the host passes the status on */
    if (st == MASQ_EXIT && S->err.status == MASQ_EXIT) S->exit_code = S->err.exit_code;
    mq_throw(S, st == MASQ_ERR_MEMORY || st == MASQ_ERR_INTERRUPTED || st == MASQ_EXIT ? st
                                                                         : MASQ_ERR_RUNTIME,
             "%s", msg);
  }
  if (!result) return mq_none();
  if (!mq_handle_held(S, result))
    mq_throw(S, MASQ_ERR_USAGE,
             "%s() returned a pointer that is not a tensor handle it holds (to return an "
             "argument, masq_tensor_retain() it first)",
             name);
  mq_handle_drop(S, result, false); /* the host's reference ... */
  mq_pool_own(S, &result->hdr);     /* ... is the pool's now */
  return mq_objv(result);
}
