/* stdlib.c - binding the builtin table: signatures parsed once at open,
 * arguments matched to parameters on every call, and argument converters. */
#include "stdlib.h"

#include "../runtime/sparse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "../vm/chunk.h"
#include "../vm/globals.h"

/* The library's tables, one per family (lib_*.c). */
extern const mq_libfn mq_lib_core[];
extern const mq_libfn mq_lib_lang[];
extern const mq_libfn mq_lib_create[];
extern const mq_libfn mq_lib_shape[];
extern const mq_libfn mq_lib_math[];
extern const mq_constant mq_lib_constants[];
extern const mq_libfn mq_lib_io[];
extern const mq_libfn mq_lib_autograd[];
extern const mq_libfn mq_lib_sparse[];
extern const mq_libfn mq_lib_sparse_io[];
extern const mq_libfn mq_lib_sparse_ops[];

/* Every table of builtins with the library group (MASQ_LIB_*) it belongs
 * to; a group the host did not enable is not bound at all. */
static const struct {
  const mq_libfn *fns;
  unsigned group;
} tables[] = {
    {mq_lib_core, MASQ_LIB_CORE},
    {mq_lib_lang, MASQ_LIB_CORE},
    {mq_lib_create, MASQ_LIB_CORE},
    {mq_lib_shape, MASQ_LIB_CORE},
    {mq_lib_math, MASQ_LIB_CORE},
    {mq_lib_autograd, MASQ_LIB_CORE},
    {mq_lib_sparse, MASQ_LIB_CORE},
    {mq_lib_sparse_ops, MASQ_LIB_CORE},
    {mq_lib_io, MASQ_LIB_IO},
    {mq_lib_sparse_io, MASQ_LIB_IO},
};

/* --- signatures ------------------------------------------------------------ */

static const char *skip_space(const char *p) {
  while (*p == ' ') p++;
  return p;
}

/* Parses a default value: none, true, false, or a number. */
static mq_value parse_default(const char *s, size_t n) {
  if (n == 4 && memcmp(s, "none", 4) == 0) return mq_none();
  if (n == 4 && memcmp(s, "true", 4) == 0) return mq_bool(true);
  if (n == 5 && memcmp(s, "false", 5) == 0) return mq_bool(false);
  char tmp[32];
  if (n >= sizeof tmp) n = sizeof tmp - 1;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  if (strpbrk(tmp, ".eE")) return mq_float(strtod(tmp, NULL));
  return mq_int(strtoll(tmp, NULL, 10));
}

/* "name(a, b=1, *rest, c=none, **names)" -> the builtin's parameter table. */
static void bind_signature(mq_state *S, mq_builtin *b, const mq_libfn *def) {
  const char *sig = def->sig, *paren = strchr(sig, '(');
  size_t nlen = (size_t)(paren - sig);
  b->def = def;
  b->rest = -1;
  b->kwrest = -1;
  b->name_buf = mq_alloc(S, nlen + 1);
  memcpy(b->name_buf, sig, nlen);
  b->name_buf[nlen] = '\0';
  b->name = b->name_buf;
  /* A host function may come without a doc: then :help shows the
   * signature alone. */
  bool has_doc = def->doc && def->doc[0];
  size_t hlen = strlen(sig) + (has_doc ? strlen(" -- ") + strlen(def->doc) : 0) + 1;
  b->help = mq_alloc(S, hlen);
  snprintf(b->help, hlen, has_doc ? "%s -- %s" : "%s", sig, has_doc ? def->doc : "");
  int n = 0;
  for (const char *p = paren + 1; *p && *p != ')'; p++)
    if (*p == ',') n++;
  if (paren[1] != ')') n++;
  /* nparams first: mq_stdlib_close frees each table by it, also when a
   * later allocation here fails and leaves the rest NULL. */
  b->nparams = n;
  b->pnames = mq_calloc(S, (size_t)(n ? n : 1) * sizeof *b->pnames);
  b->defaults = mq_calloc(S, (size_t)(n ? n : 1) * sizeof *b->defaults);
  b->required = mq_calloc(S, (size_t)(n ? n : 1) * sizeof *b->required);
  const char *p = paren + 1;
  for (int i = 0; i < n; i++) {
    p = skip_space(p);
    if (p[0] == '*' && p[1] == '*') {
      b->kwrest = i;
      p += 2;
    } else if (*p == '*') {
      b->rest = i;
      p++;
    }
    const char *start = p;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    b->pnames[i] = mq_alloc(S, (size_t)(p - start) + 1);
    memcpy(b->pnames[i], start, (size_t)(p - start));
    b->pnames[i][p - start] = '\0';
    p = skip_space(p);
    if (*p == '=') {
      p = skip_space(p + 1);
      const char *v = p;
      while (*p && *p != ',' && *p != ')') p++;
      b->defaults[i] = parse_default(v, (size_t)(p - v));
    } else {
      b->required[i] = b->rest != i && b->kwrest != i;
    }
    if (*p == ',') p++;
  }
}

/* Binds entry [index] of S->builtins to its name in the globals. */
static void bind_global(mq_state *S, int index) {
  int slot = mq_global_slot(S, S->builtins[index].name);
  mq_builtin_obj *o = mq_alloc(S, sizeof *o);
  o->hdr.rc = 0;
  o->hdr.type = MQ_O_BUILTIN;
  o->index = index;
  mq_global_set(S, slot, mq_objv(o));
  S->globals[slot].builtin = true;
}

void mq_stdlib_open(mq_state *S) {
  /* Exactly as many entries as get bound: the array's size is always
   * nbuiltins entries (mq_stdlib_new_entry grows it, close frees that much). */
  int total = 0;
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
    if (S->cfg.libs & tables[t].group)
      for (const mq_libfn *d = tables[t].fns; d->sig; d++) total++;
  S->builtins = mq_calloc(S, (size_t)total * sizeof *S->builtins);
  S->nbuiltins = total; /* zeroed entries free as nothing if binding fails */
  int index = 0;
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
    if (!(S->cfg.libs & tables[t].group)) continue;
    for (const mq_libfn *d = tables[t].fns; d->sig; d++, index++) {
      bind_signature(S, &S->builtins[index], d);
      bind_global(S, index);
    }
  }
  if (S->cfg.libs & MASQ_LIB_CORE)
    for (const mq_constant *c = mq_lib_constants; c->name; c++) {
      int slot = mq_global_slot(S, c->name);
      mq_global_set(S, slot, mq_float(c->value));
      S->globals[slot].builtin = true;
    }
}

int mq_stdlib_new_entry(mq_state *S) {
  size_t size = sizeof *S->builtins;
  S->builtins = mq_realloc(S, S->builtins, (size_t)S->nbuiltins * size,
                           (size_t)(S->nbuiltins + 1) * size);
  memset(&S->builtins[S->nbuiltins], 0, size);
  return S->nbuiltins++;
}

void mq_stdlib_bind(mq_state *S, int index, const mq_libfn *def) {
  bind_signature(S, &S->builtins[index], def);
  bind_global(S, index);
}

void mq_stdlib_close(mq_state *S) {
  for (int i = 0; i < S->nbuiltins; i++) {
    mq_builtin *b = &S->builtins[i];
    int n = b->nparams ? b->nparams : 1;
    if (b->pnames)
      for (int j = 0; j < b->nparams; j++) mq_strfree(S, b->pnames[j]);
    if (b->pnames) mq_free(S, b->pnames, (size_t)n * sizeof *b->pnames);
    if (b->defaults) mq_free(S, b->defaults, (size_t)n * sizeof *b->defaults);
    if (b->required) mq_free(S, b->required, (size_t)n * sizeof *b->required);
    mq_strfree(S, b->name_buf);
    mq_strfree(S, b->help);
    if (b->host) mq_hostfn_free(S, b->host);
  }
  mq_free(S, S->builtins, (size_t)S->nbuiltins * sizeof *S->builtins);
  S->builtins = NULL;
  S->nbuiltins = 0;
}

/* --- calls --------------------------------------------------------------------- */

mq_value mq_builtin_call(mq_state *S, const mq_builtin *b, mq_value *argv, int nargs, int nkw,
                         const mq_list *kwnames) {
  mq_value args[MQ_MAX_PARAMS];
  bool given[MQ_MAX_PARAMS] = {0};
  int npos = nargs - nkw, nfixed = b->rest >= 0 ? b->rest : b->nparams;
  if (b->kwrest >= 0 && b->rest < 0) nfixed = b->kwrest;
  mq_list *rest = NULL, *kwrest = NULL;
  if (b->rest >= 0) {
    rest = mq_list_new(S, npos > nfixed ? npos - nfixed : 0);
    args[b->rest] = mq_objv(rest);
    given[b->rest] = true;
  }
  if (b->kwrest >= 0) {
    kwrest = mq_list_new(S, 0);
    args[b->kwrest] = mq_objv(kwrest);
    given[b->kwrest] = true;
  }
  for (int i = 0; i < npos; i++) {
    if (i < nfixed) {
      args[i] = argv[i];
      given[i] = true;
    } else if (rest) {
      mq_list_push(S, rest, argv[i]);
    } else {
      mq_error(S, "%s() takes %d argument%s but %d were given", b->name, b->nparams,
               b->nparams == 1 ? "" : "s", npos);
    }
  }
  for (int k = 0; k < nkw; k++) {
    const char *kw = mq_as_string(kwnames->items[k])->chars;
    int j = 0;
    while (j < b->nparams && (j == b->rest || j == b->kwrest || strcmp(b->pnames[j], kw) != 0))
      j++;
    if (j == b->nparams && kwrest) {
      mq_list_push(S, kwrest, kwnames->items[k]);
      mq_list_push(S, kwrest, argv[npos + k]);
      continue;
    }
    if (j == b->nparams) mq_error(S, "%s() has no parameter named '%s'", b->name, kw);
    if (given[j]) mq_error(S, "%s() got two values for '%s'", b->name, kw);
    args[j] = argv[npos + k];
    given[j] = true;
  }
  for (int j = 0; j < b->nparams; j++) {
    if (given[j]) continue;
    if (b->required[j]) mq_error(S, "%s() missing argument '%s'", b->name, b->pnames[j]);
    args[j] = b->defaults[j];
  }
  mq_value r;
  if (!b->host && b->nparams > 0 &&
      (mq_is_sparse(args[0]) || (b->nparams > 1 && mq_is_sparse(args[1]))) &&
      mq_sparse_builtin(S, b, args, &r))
    return r;
  return b->host ? mq_host_call(S, b, args) : b->def->fn(S, args);
}

/* --- argument converters ----------------------------------------------------- */

mq_tensor *mq_arg_tensor(mq_state *S, mq_value v, const char *what) {
  /* A float number is a weak float64 scalar, so that x64 * 0.1 uses 0.1 and
   * not its float32 rounding; a builtin taking it as its tensor gets the
   * float32 tensor a literal means (exp(2.5) is float32, as tensor(2.5)). */
  if (v.type == MQ_FLOAT) {
    mq_tensor *t = mq_tensor_scalar(S, MQ_DT_F32, v.as.f);
    t->weak = true;
    return t;
  }
  return mq_tensor_from_value(S, v, what);
}

mq_tensor *mq_arg_tensor_any(mq_state *S, mq_value v, const char *what) {
  return mq_is_sparse(v) ? mq_as_tensor_any(v) : mq_arg_tensor(S, v, what);
}

int64_t mq_arg_int(mq_state *S, mq_value v, const char *what) {
  int64_t i;
  if (mq_value_as_int(S, v, &i)) return i;
  mq_error(S, "%s must be an int, not a %s", what, mq_type_name(v));
}

double mq_arg_number(mq_state *S, mq_value v, const char *what) {
  if (v.type == MQ_INT) return (double)v.as.i;
  if (v.type == MQ_FLOAT) return v.as.f;
  if (v.type == MQ_BOOL) return v.as.b;
  if (mq_is_tensor(v) && mq_as_tensor(v)->numel == 1) return mq_tensor_item(S, mq_as_tensor(v));
  mq_error(S, "%s must be a number, not a %s", what, mq_type_name(v));
}

bool mq_arg_bool(mq_state *S, mq_value v, const char *what) {
  if (v.type == MQ_BOOL) return v.as.b;
  mq_error(S, "%s must be true or false, not a %s", what, mq_type_name(v));
}

int mq_arg_shape(mq_state *S, mq_value v, int64_t *shape, const char *what) {
  mq_list *l = mq_as_list(v);
  /* zeros([2, 3]) and zeros(2, 3) both work; a literal [2, 3] arrives as a
   * tensor, a computed one as a list. */
  if (l->len == 1 && (mq_is_obj(l->items[0], MQ_O_LIST) || mq_is_tensor(l->items[0]))) {
    mq_value inner = l->items[0];
    if (mq_is_tensor(inner)) {
      mq_tensor *t = mq_as_tensor(inner);
      if (t->ndim != 1 || mq_dtype_is_float((mq_dtype)t->dtype))
        mq_error(S, "%s must be ints or a list of ints", what);
      if (t->numel > MQ_MAX_DIMS)
        mq_error(S, "%s has %lld dimensions; at most %d are supported", what,
                 (long long)t->numel, MQ_MAX_DIMS);
      mq_tensor *c = mq_contiguous(S, mq_astype(S, t, MQ_DT_I64));
      const int64_t *d = mq_tensor_data(c);
      for (int64_t i = 0; i < t->numel; i++) {
        if (d[i] < 0) mq_error(S, "%s cannot have a negative size (%lld)", what, (long long)d[i]);
        shape[i] = d[i];
      }
      return (int)t->numel;
    }
    l = mq_as_list(inner);
  }
  if (l->len > MQ_MAX_DIMS)
    mq_error(S, "%s has %d dimensions; at most %d are supported", what, l->len, MQ_MAX_DIMS);
  for (int i = 0; i < l->len; i++) {
    shape[i] = mq_arg_int(S, l->items[i], what);
    if (shape[i] < 0) mq_error(S, "%s cannot have a negative size (%lld)", what, (long long)shape[i]);
  }
  return l->len;
}

mq_dtype mq_arg_dtype(mq_state *S, mq_value v, mq_dtype dflt) {
  if (v.type == MQ_NONE) return dflt;
  if (mq_is_obj(v, MQ_O_STRING)) {
    const mq_string *s = mq_as_string(v);
    for (int d = 0; d < MQ_DT__COUNT; d++)
      if (mq_string_is(s, mq_dtype_name((mq_dtype)d))) return (mq_dtype)d;
    if (mq_string_is(s, "float")) return MQ_DT_F32;
    if (mq_string_is(s, "double")) return MQ_DT_F64;
    if (mq_string_is(s, "long") || mq_string_is(s, "int")) return MQ_DT_I64;
    mq_error(S, "unknown dtype %s (expected \"bool\", \"int64\", \"float32\" or \"float64\")",
             mq_string_quoted(S, s));
  }
  mq_error(S, "dtype must be a string such as \"float64\", not a %s", mq_type_name(v));
}
