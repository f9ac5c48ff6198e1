/* test_builtins.c - the library's signatures (vm/builtin.h) are well formed.
 *
 * masq_open parses them without checking (the host's go through
 * api_host.c's checker instead): a malformed row must fail here. Every row
 * of every group is checked by a strict reader of the notation, and what
 * open bound for it is compared with what that reader found. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../vm/builtin.h"
#include "../../vm/globals.h"

static int passed, failed;

/* What the strict reader found in a signature. */
typedef struct reading {
  int nparams, rest, kwrest;
  char names[MQ_MAX_PARAMS][32];
  bool required[MQ_MAX_PARAMS];
  char why[120]; /* empty when the signature is well formed */
} reading;

/* [max]: the longest name plus one (parameter names fill reading.names;
 * a builtin's own name, binary_cross_entropy_with_logits, may be longer) */
static bool ident(const char *s, size_t n, size_t max) {
  if (n == 0 || n >= max || isdigit((unsigned char)s[0])) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_') return false;
  return true;
}

static bool good_default(const char *s, size_t n) {
  if ((n == 4 && !memcmp(s, "none", 4)) || (n == 4 && !memcmp(s, "true", 4)) ||
      (n == 5 && !memcmp(s, "false", 5)))
    return true;
  /* A quoted default (print's sep=" ", delimiter=",") is bound as that
   * string (library_rows checks it). */
  if (n >= 2 && s[0] == '"' && s[n - 1] == '"') return true;
  char tmp[32], *end;
  if (n == 0 || n >= sizeof tmp) return false;
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  strtod(tmp, &end);
  return *end == '\0';
}

#define BAD(...)                                      \
  do {                                                \
    snprintf(r->why, sizeof r->why, __VA_ARGS__);     \
    return;                                           \
  } while (0)

/* "name(a, b=1, *rest, c=none, **names)": one space after each comma, none
 * elsewhere but around nothing; a *rest and a **names at most once each,
 * **names last; no required parameter after an optional one before *rest. */
static void read_sig(const char *sig, reading *r) {
  memset(r, 0, sizeof *r);
  r->rest = r->kwrest = -1;
  const char *paren = strchr(sig, '(');
  if (!paren) BAD("no '('");
  if (!ident(sig, (size_t)(paren - sig), 64)) BAD("the name is not a name");
  const char *p = paren + 1;
  bool optional = false;
  while (*p != ')') {
    if (r->nparams) {
      if (p[0] != ',' || p[1] != ' ') BAD("expected ', ' before parameter %d", r->nparams + 1);
      p += 2;
    }
    if (r->nparams == MQ_MAX_PARAMS) BAD("more than %d parameters", MQ_MAX_PARAMS);
    if (r->kwrest >= 0) BAD("a parameter after **%s", r->names[r->kwrest]);
    int i = r->nparams++, stars = p[0] == '*' ? p[1] == '*' ? 2 : 1 : 0;
    p += stars;
    if (stars == 1 && r->rest >= 0) BAD("two *rest parameters");
    if (stars == 1) r->rest = i;
    if (stars == 2) r->kwrest = i;
    const char *start = p;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    if (!ident(start, (size_t)(p - start), sizeof r->names[0])) BAD("parameter %d has no name", i + 1);
    memcpy(r->names[i], start, (size_t)(p - start));
    for (int j = 0; j < i; j++)
      if (!strcmp(r->names[j], r->names[i])) BAD("'%s' is named twice", r->names[i]);
    if (*p == '=') {
      if (stars) BAD("*%s has a default", r->names[i]);
      const char *v = ++p;
      if (*p == '"') { /* to the closing quote, over escapes */
        for (p++; *p && *p != '"'; p++)
          if (*p == '\\' && p[1]) p++;
        if (*p) p++;
      }
      while (*p && *p != ',' && *p != ')') p++;
      if (!good_default(v, (size_t)(p - v))) BAD("the default of '%s' is not one", r->names[i]);
      optional = true;
    } else if (!stars) {
      if (optional && r->rest < 0) BAD("'%s' has no default but follows one that has", r->names[i]);
      r->required[i] = true;
    }
    if (*p != ',' && *p != ')') BAD("expected ',' or ')' after '%s'", r->names[i]);
  }
  if (p[1] != '\0') BAD("text after the ')'");
}

static void check(bool ok, const char *sig, const char *what) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL \"%s\": %s\n", sig, what);
}

/* The reader itself rejects what it must: else the check below proves
 * nothing. */
static void reader_rejects(void) {
  static const char *const bad[] = {
      "f",        "f(a",          "f(a,b)",    "f(a, a)",       "f(a=1, b)",  "f(*a, *b)",
      "f(**k, a)", "f(*a=1)",     "f(a=x)",    "f(a=\"x)", "f(a) junk",     "1f(a)",      "f(a, )",
      "f(a=)",    "f(a b)",       "f(a=1.5.)",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    reading r;
    read_sig(bad[i], &r);
    check(r.why[0] != '\0', bad[i], "accepted a malformed signature");
  }
  static const char *const good[] = {"f()", "f(x, dim=none, keepdim=false)", "f(*shape, dtype=none)",
                                     "f(fmt, *values, **names)", "f(a=1, *r, b)", "f(a=-1.5e3)",
                                     "f(a=\",\", b=\"\\\"\\n\")"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    reading r;
    read_sig(good[i], &r);
    check(r.why[0] == '\0', good[i], r.why);
  }
}

/* A quoted default is bound as the string it spells, escapes read. */
static void string_defaults(const mq_builtin *b, const char *sig) {
  for (int j = 0; j < b->nparams; j++) {
    char want[64];
    const char *eq = strstr(sig, b->params[j].name);
    size_t len = strlen(b->params[j].name), n = 0;
    while (eq && (eq[len] != '=' || (eq > sig && (isalnum((unsigned char)eq[-1]) || eq[-1] == '_'))))
      eq = strstr(eq + 1, b->params[j].name);
    if (!eq || eq[len + 1] != '"') continue;
    for (const char *p = eq + len + 2; *p && *p != '"' && n + 1 < sizeof want; p++) {
      char c = *p;
      if (c == '\\' && p[1]) c = *++p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
      want[n++] = c;
    }
    want[n] = '\0';
    mq_value v = b->params[j].dflt;
    check(mq_is_obj(v, MQ_O_STRING) && mq_as_string(v)->len == n &&
              !memcmp(mq_as_string(v)->chars, want, n),
          sig, "a quoted default is not bound as its string");
  }
}

/* Every bound library builtin: well formed, and bound as read. */
static void library_rows(mq_state *S) {
  check(S->nlibbuiltins > 100 && S->nlibbuiltins == S->nbuiltins, "(library)",
        "the library's builtins are not all bound");
  for (int i = 0; i < S->nlibbuiltins; i++) {
    const mq_builtin *b = &S->builtins[i];
    const char *sig = b->def->sig;
    reading r;
    read_sig(sig, &r);
    check(r.why[0] == '\0', sig, r.why);
    if (r.why[0]) continue;
    check(b->nparams == r.nparams && b->rest == r.rest && b->kwrest == r.kwrest, sig,
          "bound with other parameters than it declares");
    for (int j = 0; j < r.nparams && j < b->nparams; j++)
      check(!strcmp(b->params[j].name, r.names[j]) && b->params[j].required == r.required[j],
            sig, "a parameter bound differently");
    string_defaults(b, sig);
    check(!strncmp(sig, b->name, strlen(b->name)) && sig[strlen(b->name)] == '(', sig,
          "bound under another name");
    size_t n = strlen(sig);
    check(b->def->doc && b->def->doc[0] && !strncmp(b->help, sig, n) &&
              !strncmp(b->help + n, " -- ", 4) && !strcmp(b->help + n + 4, b->def->doc),
          sig, "its help is not \"sig -- doc\"");
    /* a unary row is its op applied to x, then its number parameters with
     * defaults; the compiler fuses the calls f(x) of those (vm/fuse.h) */
    if (b->def->kind == MQ_BK_UNARY) {
      check(r.nparams >= 1 && !strcmp(r.names[0], "x") && r.required[0] && r.rest < 0 &&
                r.kwrest < 0,
            sig, "a unary row takes x, then defaulted parameters");
      for (int j = 1; j < r.nparams; j++)
        check(!r.required[j], sig, "a unary row takes x, then defaulted parameters");
    }
    int slot = mq_global_find(S, b->name);
    check(slot >= 0 && S->globals[slot].builtin, sig, "not bound in the globals");
    /* an overload (split, count, min, max of lib_text.c) is linked to the
     * tensor row of its name, which keeps the name */
    if (b->def->kind == MQ_BK_ON_STRING || b->def->kind == MQ_BK_ON_SCALARS) {
      const mq_builtin *base = b->twin ? &S->builtins[b->twin - 1] : NULL;
      check(base && base->twin == i + 1 && !strcmp(base->name, b->name) && b->help_both &&
                !strncmp(b->help_both, base->help, strlen(base->help)),
            sig, "an overload not linked to the row it overloads");
      check(slot >= 0 && mq_is_obj(S->globals[slot].value, MQ_O_BUILTIN) &&
                ((const mq_builtin_obj *)S->globals[slot].value.as.o)->index == b->twin - 1,
            sig, "an overload took the name of the row it overloads");
    }
  }
}

int main(void) {
  masq_config c;
  masq_config_init(&c);
  c.libs = MASQ_LIB_ALL;
  mq_state *S = masq_open(&c);
  if (!S) {
    printf("test_builtins: cannot open a state\n");
    return 1;
  }
  reader_rejects();
  library_rows(S);
  masq_close(S);
  printf("test_builtins: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
