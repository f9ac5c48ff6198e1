/* builtin.c - the table of builtins: signatures parsed once when bound,
 * arguments matched to parameters on every call, and argument converters.
 * The rows come from above (stdlib/ opens the library's, api/ adds the
 * host's); the VM calls them through here without knowing either. */
#include "builtin.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/checked.h"
#include "../runtime/sparse/sparse.h"
#include "globals.h"
#include "suggest.h"

/* --- signatures ------------------------------------------------------------ */

/* Every state binds some hundreds of builtins when it opens: their
 * signatures are parsed into one block (sized by a first pass), since a few
 * allocations each would be most of what opening costs. */

static const char *skip_space(const char *p) {
  while (*p == ' ') p++;
  return p;
}

/* Parses a default value: none, true, false, or a number (a quoted string
 * is made by put_string). */
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

/* The end of the default value at [p]: the ',' or ')' after it. A quoted
 * default ("mean", ",", "\n") may hold a comma; a backslash escapes its next
 * character, as in a string literal. */
static const char *default_end(const char *p) {
  if (*p == '"') {
    for (p++; *p && *p != '"'; p++)
      if (*p == '\\' && p[1]) p++;
    if (*p) p++;
  }
  while (*p && *p != ',' && *p != ')') p++;
  return p;
}

/* The bytes a string default of [n] characters (quotes included) takes in
 * a block: an mq_string, rounded up so that the next one stays aligned. */
static size_t string_default_size(size_t n) {
  size_t a = _Alignof(mq_string), size = sizeof(mq_string) + n + 1;
  return (size + a - 1) / a * a;
}

static int count_params(const char *paren) {
  int n = paren[1] != ')';
  for (const char *p = paren + 1; *p && *p != ')'; p++) {
    if (*p == '=') p = default_end(skip_space(p + 1)) - 1;
    else n += *p == ',';
  }
  return n;
}

/* What the signatures bound into a block need there. */
typedef struct sig_size {
  size_t params;  /* mq_param entries */
  size_t strings; /* bytes of string defaults (mq_string objects) */
  size_t chars;   /* bytes of strings */
} sig_size;

/* Adds what [def] needs: its parameters, its name, its help and its
 * parameters' names, each with its NUL. Every name in the parameter list is
 * followed by at least one character (',', ' ', '=' or the ')'), so the
 * list's length bounds the names with their NULs. */
static void measure(const mq_libfn *def, sig_size *z) {
  const char *sig = def->sig, *paren = strchr(sig, '(');
  size_t help = strlen(sig) + (def->doc && def->doc[0] ? strlen(" -- ") + strlen(def->doc) : 0);
  z->params += (size_t)count_params(paren);
  for (const char *p = paren + 1; (p = strchr(p, '=')) != NULL; p = default_end(p)) {
    p = skip_space(p + 1);
    if (*p == '"') z->strings += string_default_size((size_t)(default_end(p) - p));
  }
  z->chars += (size_t)(paren - sig) + 1 + help + 1 + strlen(paren + 1);
}

static char *put(char **chars, const char *s, size_t n) {
  char *r = *chars;
  memcpy(r, s, n);
  r[n] = '\0';
  *chars = r + n + 1;
  return r;
}

/* The string default "[s]" ([n] bytes up to the ',' or ')' after it) as a
 * string object in the block at [*strings], which it advances; \n, \t
 * and a backslash before any other character read as in a string literal. The
 * block holds its one reference for good: calls retain and release it, it
 * is never freed on its own, and every value that may hold it is gone
 * before the block (mq_builtin_close runs after them). */
static mq_value put_string(const char *s, size_t n, char **strings) {
  mq_string *str = (mq_string *)*strings;
  str->hdr.rc = 1;
  str->hdr.type = MQ_O_STRING;
  size_t len = 0;
  for (size_t i = 1; i < n && s[i] != '"'; i++) {
    char c = s[i];
    if (c == '\\' && i + 1 < n) {
      c = s[++i];
      c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
    }
    str->chars[len++] = c;
  }
  str->chars[len] = '\0';
  str->len = len;
  *strings += string_default_size(n); /* as measured */
  return mq_objv(str);
}

/* "name(a, b=1, *rest, c=none, d=\"x\", **names)" -> [b]'s parameter table,
 * in [*params], [*strings] and [*chars] (measured by measure), which it
 * advances. */
static void parse_signature(mq_builtin *b, const mq_libfn *def, mq_param **params,
                            char **strings, char **chars) {
  const char *sig = def->sig, *paren = strchr(sig, '(');
  b->def = def;
  b->rest = -1;
  b->kwrest = -1;
  b->name = put(chars, sig, (size_t)(paren - sig));
  /* A host function may come without a doc: then :help shows the
   * signature alone. */
  char *help = *chars, *h = help;
  size_t slen = strlen(sig);
  memcpy(h, sig, slen);
  h += slen;
  if (def->doc && def->doc[0]) {
    size_t dlen = strlen(def->doc);
    memcpy(h, " -- ", 4);
    memcpy(h + 4, def->doc, dlen);
    h += 4 + dlen;
  }
  *h = '\0';
  *chars = h + 1;
  b->help = help;
  int n = count_params(paren);
  mq_param *ps = *params;
  *params += n;
  b->nparams = n;
  b->params = ps;
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
    ps[i] = (mq_param){put(chars, start, (size_t)(p - start)), mq_none(), false};
    p = skip_space(p);
    if (*p == '=') {
      p = skip_space(p + 1);
      const char *v = p;
      p = default_end(p);
      ps[i].dflt = *v == '"' ? put_string(v, (size_t)(p - v), strings)
                             : parse_default(v, (size_t)(p - v));
    } else {
      ps[i].required = b->rest != i && b->kwrest != i;
    }
    if (*p == ',') p++;
  }
}

/* A block for [z]: the parameters first (they hold values), then
 * [nobjs] builtin objects, then the string defaults from an aligned offset
 * (strings_at), then the other strings. */
static size_t strings_at(sig_size z, size_t nobjs) {
  size_t a = _Alignof(mq_string);
  size_t n = z.params * sizeof(mq_param) + nobjs * sizeof(mq_builtin_obj);
  return (n + a - 1) / a * a;
}

static size_t block_size(mq_state *S, sig_size z, size_t nobjs) {
  mq_ck_zmul(S, z.params, sizeof(mq_param), "the builtins' parameters");
  mq_ck_zmul(S, nobjs, sizeof(mq_builtin_obj), "the builtins");
  return strings_at(z, nobjs) + z.strings + z.chars;
}

/* Binds the name of builtin [index] in the globals to its object: [o], in
 * the library's block, whose names outlive the globals (which keep them
 * without a copy), or NULL for a host function's, allocated here. */
static void bind_global(mq_state *S, int index, mq_builtin_obj *o) {
  const char *name = S->builtins[index].name;
  int slot = o ? mq_global_slot_borrowed(S, name) : mq_global_slot(S, name);
  if (!o) o = mq_alloc(S, sizeof *o);
  o->hdr.rc = 0;
  o->hdr.type = MQ_O_BUILTIN;
  o->index = index;
  mq_global_bind_lib(S, slot, mq_objv(o));
}

static bool is_overload(const mq_builtin *b) {
  return b->def && (b->def->kind == MQ_BK_ON_STRING || b->def->kind == MQ_BK_ON_SCALARS);
}

/* Builtin [i], if it is an overload of an earlier row of the same name:
 * links the two and gives the overload the help of both (masq_doc finds
 * the newest row first), "base sig -- base doc. On a string: `sig`: doc".
 * Returns whether it did: the name then stays bound to the earlier row. */
static bool link_overload(mq_state *S, int i) {
  mq_builtin *ov = &S->builtins[i];
  if (!is_overload(ov)) return false;
  int base = 0;
  while (base < i && strcmp(S->builtins[base].name, ov->name) != 0) base++;
  if (base == i) return false;
  mq_builtin *b = &S->builtins[base];
  const char *when = ov->def->kind == MQ_BK_ON_STRING ? "On a string" : "On two or more plain numbers or strings";
  size_t n = strlen(b->help) + strlen(when) + strlen(ov->def->sig) + strlen(ov->def->doc) + 16;
  char *help = mq_alloc(S, n);
  snprintf(help, n, "%s. %s: `%s`: %s", b->help, when, ov->def->sig, ov->def->doc);
  ov->own = help;
  ov->own_size = n;
  ov->help_both = help;
  ov->twin = base + 1;
  b->twin = i + 1;
  return true;
}

/* The row of overloaded [b] (b->twin) that this call's arguments select:
 * the overload when they fit its kind, else the tensor builtin. */
static const mq_builtin *pick_overload(mq_state *S, const mq_builtin *b, const mq_value *argv,
                                       int npos, int nkw, const mq_list *kwnames) {
  const mq_builtin *ov = is_overload(b) ? b : &S->builtins[b->twin - 1];
  const mq_builtin *base = ov == b ? &S->builtins[b->twin - 1] : b;
  if (ov->def->kind == MQ_BK_ON_STRING) {
    mq_value first = mq_none();
    if (npos > 0) first = argv[0];
    for (int k = 0; npos == 0 && k < nkw; k++) /* split(s="a b") */
      if (strcmp(mq_as_string(kwnames->items[k])->chars, ov->params[0].name) == 0) first = argv[k];
    return mq_is_obj(first, MQ_O_STRING) ? ov : base;
  }
  if (npos < 2 || nkw > 0) return base;
  for (int i = 0; i < npos; i++) /* mixed ones too: the overload says it cannot compare them */
    if (!mq_is_number(argv[i]) && !mq_is_obj(argv[i], MQ_O_STRING)) return base;
  return ov;
}

void mq_builtin_open(mq_state *S, const mq_libfn *const *tables, int ntables) {
  sig_size z = {0, 0, 0};
  int n = 0;
  for (int t = 0; t < ntables; t++)
    for (const mq_libfn *d = tables[t]; d->sig; d++, n++) measure(d, &z);
  /* The table first, zeroed: close frees it by nbuiltins whatever fails
   * after. */
  S->builtins = mq_calloc(S, mq_ck_zmul(S, (size_t)n, sizeof *S->builtins, "the builtins"));
  S->nbuiltins = n;
  size_t size = block_size(S, z, (size_t)n);
  char *block = mq_alloc(S, size);
  S->builtin_block = block;
  S->builtin_block_size = size;
  S->nlibbuiltins = n; /* their objects are in the block */
  mq_param *params = (mq_param *)block;
  mq_builtin_obj *objs = (mq_builtin_obj *)(block + z.params * sizeof(mq_param));
  char *strings = block + strings_at(z, (size_t)n), *chars = strings + z.strings;
  int index = 0;
  for (int t = 0; t < ntables; t++)
    for (const mq_libfn *d = tables[t]; d->sig; d++, index++)
      parse_signature(&S->builtins[index], d, &params, &strings, &chars);
  mq_globals_reserve(S, n);
  for (int i = 0; i < n; i++)
    if (!link_overload(S, i)) bind_global(S, i, &objs[i]);
}

int mq_builtin_new_entry(mq_state *S) {
  size_t size = sizeof *S->builtins;
  S->builtins = mq_realloc(S, S->builtins, (size_t)S->nbuiltins * size,
                           (size_t)(S->nbuiltins + 1) * size);
  memset(&S->builtins[S->nbuiltins], 0, size);
  return S->nbuiltins++;
}

void mq_builtin_bind(mq_state *S, int index, const mq_libfn *def) {
  mq_builtin *b = &S->builtins[index];
  sig_size z = {0, 0, 0};
  measure(def, &z);
  size_t size = block_size(S, z, 0);
  char *block = mq_alloc(S, size);
  b->own = block;
  b->own_size = size;
  mq_param *params = (mq_param *)block;
  char *strings = block + strings_at(z, 0), *chars = strings + z.strings;
  parse_signature(b, def, &params, &strings, &chars);
  bind_global(S, index, NULL);
}

void mq_builtin_close(mq_state *S) {
  for (int i = 0; i < S->nbuiltins; i++) {
    mq_builtin *b = &S->builtins[i];
    mq_free(S, b->own, b->own_size);
    if (b->host) S->hooks.host_free(S, b->host);
  }
  mq_free(S, S->builtins, (size_t)S->nbuiltins * sizeof *S->builtins);
  mq_free(S, S->builtin_block, S->builtin_block_size);
  S->builtins = NULL;
  S->builtin_block = NULL;
  S->nbuiltins = S->nlibbuiltins = 0;
  S->builtin_block_size = 0;
}

/* --- calls --------------------------------------------------------------------- */

/* The storage dtype of the first tensor among [args] (a list argument, as
 * einsum's operands, searched too), or -1. */
static int first_storage_dtype(const mq_builtin *b, const mq_value *args) {
  for (int i = 0; i < b->nparams; i++) {
    mq_value v = args[i];
    if (mq_is_obj(v, MQ_O_LIST) && mq_as_list(v)->len > 0) v = mq_as_list(v)->items[0];
    if (mq_is_tensor(v)) {
      mq_dtype dt = (mq_dtype)mq_as_tensor(v)->dtype;
      return mq_dtype_is_narrow(dt) ? (int)dt : -1;
    }
  }
  return -1;
}

/* A builtin row's keep (builtin.h, MQ_KEEP_*) applied to its result [r]. */
static mq_value keep_storage_dtype(mq_state *S, const mq_builtin *b, mq_value *args, mq_value r) {
  int dt = first_storage_dtype(b, args);
  if (b->def->keep == MQ_KEEP_PROMOTE) {
    mq_tensor *ts[MQ_MAX_PARAMS];
    int n = 0;
    bool narrow = false; /* most calls have no storage dtype: nothing to make */
    for (int i = 0; i < b->nparams; i++)
      narrow |= mq_is_tensor(args[i]) && mq_dtype_is_narrow((mq_dtype)mq_as_tensor(args[i])->dtype);
    for (int i = 0; narrow && i < b->nparams; i++) {
      if (mq_is_tensor(args[i])) ts[n++] = mq_as_tensor(args[i]);
      else if (args[i].type == MQ_INT || args[i].type == MQ_FLOAT)
        ts[n++] = mq_tensor_from_value(S, args[i], "number"); /* weak */
    }
    dt = n ? (int)mq_result_type(n, ts) : -1;
    if (dt >= 0 && !mq_dtype_is_narrow((mq_dtype)dt)) dt = -1;
  }
  if (dt < 0 || (b->def->keep == MQ_KEEP_FLOAT && !mq_dtype_is_float((mq_dtype)dt))) return r;
  for (int i = 0; i < b->nparams; i++) /* an explicit dtype= decides */
    if (strcmp(b->params[i].name, "dtype") == 0 && args[i].type != MQ_NONE) return r;
  if (mq_is_tensor(r)) return mq_objv(mq_narrow_back(S, mq_as_tensor(r), (mq_dtype)dt));
  mq_list *l = mq_is_obj(r, MQ_O_LIST) ? mq_as_list(r) : NULL;
  if (l && l->len > 0 && mq_is_tensor(l->items[0])) { /* [values, indices]: a new list */
    mq_list *n = mq_list_new(S, l->len);
    mq_list_push(S, n, mq_objv(mq_narrow_back(S, mq_as_tensor(l->items[0]), (mq_dtype)dt)));
    for (int i = 1; i < l->len; i++) mq_list_push(S, n, l->items[i]);
    return mq_objv(n);
  }
  return r;
}

mq_value mq_builtin_call(mq_state *S, const mq_builtin *b, mq_value *argv, int nargs, int nkw,
                         const mq_list *kwnames, mq_tensor *spare) {
  if (b->twin) b = pick_overload(S, b, argv, nargs - nkw, nkw, kwnames);
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
    while (j < b->nparams &&
           (j == b->rest || j == b->kwrest || strcmp(b->params[j].name, kw) != 0))
      j++;
    if (j == b->nparams && kwrest) {
      mq_list_push(S, kwrest, kwnames->items[k]);
      mq_list_push(S, kwrest, argv[npos + k]);
      continue;
    }
    if (j == b->nparams) {
      const char *names[MQ_MAX_PARAMS];
      for (int i = 0; i < b->nparams; i++)
        names[i] = i == b->rest || i == b->kwrest ? NULL : b->params[i].name;
      mq_unknown_keyword(S, b->name, kw, names, b->nparams);
    }
    if (given[j]) mq_error(S, "%s() got two values for '%s'", b->name, kw);
    args[j] = argv[npos + k];
    given[j] = true;
  }
  for (int j = 0; j < b->nparams; j++) {
    if (given[j]) continue;
    if (b->params[j].required)
      mq_error(S, "%s() missing argument '%s'", b->name, b->params[j].name);
    args[j] = b->params[j].dflt;
  }
  mq_value r;
  /* set for every call, so that a builtin that takes it never sees one
   * meant for another call */
  S->spare = spare;
  if (!b->host && b->nparams > 0 &&
      (mq_is_sparse(args[0]) || (b->nparams > 1 && mq_is_sparse(args[1]))) &&
      S->hooks.sparse_call && S->hooks.sparse_call(S, b, args, &r))
    return r;
  if (b->host) return S->hooks.host_call(S, b, args);
  r = b->def->fn(S, args);
  return b->def->keep ? keep_storage_dtype(S, b, args, r) : r;
}

int mq_builtin_unop(const mq_builtin *b) {
  if (b->host || !b->def || b->nparams != 1 || b->rest >= 0) return -1;
  return b->def->kind == MQ_BK_UNARY ? b->def->op : -1;
}

int mq_builtin_redop(const mq_builtin *b) {
  if (b->host || !b->def) return -1;
  return b->def->kind == MQ_BK_REDUCE ? b->def->op : -1;
}

/* --- builtins as values ------------------------------------------------------- */

/* The library's builtin objects are in S->builtin_block, freed with it. */
static void builtin_free(mq_state *S, mq_obj *o) {
  if (((mq_builtin_obj *)o)->index >= S->nlibbuiltins) mq_free(S, o, sizeof(mq_builtin_obj));
}

static void builtin_format(mq_state *S, mq_buf *b, mq_obj *o) {
  mq_buf_printf(S, b, "<builtin %s>", S->builtins[((mq_builtin_obj *)o)->index].name);
}

void mq_builtin_init_kind(mq_state *S) {
  S->kinds[MQ_O_BUILTIN] = (mq_kind){.free = builtin_free, .format = builtin_format};
}

/* --- argument converters ----------------------------------------------------- */

mq_tensor *mq_arg_tensor(mq_state *S, mq_value v, const char *what) {
  return mq_tensor_computable(S, mq_arg_tensor_stored(S, v, what));
}

mq_tensor *mq_arg_tensor_stored(mq_state *S, mq_value v, const char *what) {
  /* A float number is a weak float64 scalar, so that x64 * 0.1 uses 0.1 and
   * not its float32 rounding; a builtin taking it as its tensor gets the
   * float32 tensor a literal means (exp(2.5) is float32, as tensor(2.5)). */
  if (v.type == MQ_FLOAT) {
    mq_tensor *t = mq_tensor_scalar(S, MQ_DT_F32, v.as.f);
    t->weak = true;
    return t;
  }
  return mq_tensor_from_value_stored(S, v, what);
}

mq_tensor *mq_arg_tensor_any(mq_state *S, mq_value v, const char *what) {
  return mq_is_sparse(v) ? mq_as_tensor_any(v) : mq_arg_tensor(S, v, what);
}

mq_tensor *mq_arg_tensor_any_stored(mq_state *S, mq_value v, const char *what) {
  return mq_is_sparse(v) ? mq_as_tensor_any(v) : mq_arg_tensor_stored(S, v, what);
}

int64_t mq_arg_int(mq_state *S, mq_value v, const char *what) {
  int64_t i;
  if (mq_value_as_int(S, v, &i)) return i;
  mq_error(S, "%s must be an int, not %s", what, mq_value_a_type_name(v));
}

double mq_arg_number(mq_state *S, mq_value v, const char *what) {
  if (v.type == MQ_INT) return (double)v.as.i;
  if (v.type == MQ_FLOAT) return v.as.f;
  if (v.type == MQ_BOOL) return v.as.b;
  if (mq_is_tensor(v) && mq_as_tensor(v)->numel == 1) return mq_tensor_item(S, mq_as_tensor(v));
  mq_error(S, "%s must be a number, not %s", what, mq_value_a_type_name(v));
}

bool mq_arg_bool(mq_state *S, mq_value v, const char *what) {
  if (v.type == MQ_BOOL) return v.as.b;
  mq_error(S, "%s must be true or false, not %s", what, mq_value_a_type_name(v));
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
      /* checked, then kept: from one copy of a host's ints (mq_tensor_owned) */
      mq_tensor *c = mq_contiguous(S, mq_tensor_owned(S, mq_astype(S, t, MQ_DT_I64)));
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
    for (int d = 0; d < MQ_DT__ALL; d++)
      if (mq_string_is(s, mq_dtype_name((mq_dtype)d))) return (mq_dtype)d;
    if (mq_string_is(s, "half")) return MQ_DT_F16;
    if (mq_string_is(s, "float")) return MQ_DT_F32;
    if (mq_string_is(s, "double")) return MQ_DT_F64;
    if (mq_string_is(s, "long") || mq_string_is(s, "int")) return MQ_DT_I64;
    mq_error(S, "unknown dtype %s (expected \"bool\", \"uint8\", \"int8\", \"int16\", \"int32\", "
                "\"int64\", \"float16\", \"bfloat16\", \"float32\" or \"float64\")",
             mq_string_quoted(S, s));
  }
  /* dtype=bool, dtype=float: a conversion builtin stands for its dtype, as
   * torch.bool and torch.float do (float32, float64 and int64 are
   * constants holding their names, stdlib/lib_habits.c) */
  static const struct {
    const char *name;
    mq_dtype dt;
  } conv[] = {{"bool", MQ_DT_BOOL}, {"float", MQ_DT_F32}, {"double", MQ_DT_F64},
              {"long", MQ_DT_I64}, {"int", MQ_DT_I64}};
  if (mq_is_obj(v, MQ_O_BUILTIN)) {
    const mq_builtin *b = &S->builtins[((const mq_builtin_obj *)v.as.o)->index];
    for (size_t i = 0; b->def && i < sizeof conv / sizeof *conv; i++)
      if (strcmp(b->name, conv[i].name) == 0) return conv[i].dt;
  }
  mq_error(S, "dtype must be a dtype such as float64 or \"float64\", not %s", mq_value_a_type_name(v));
}
