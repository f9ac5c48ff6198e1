/* suggest.c - "did you mean" for a name that is not defined. */
#include "suggest.h"

#include "table.h"

#include <ctype.h>
#include <stdlib.h>

#include "errval.h"

#define MAX_NAME 64

/* The optimal string alignment distance (Levenshtein plus swaps of two
 * neighbours), letter case ignored, or [cap] + 1 when it is more than cap. */
static int distance(const char *a, const char *b, int cap) {
  int n = (int)strlen(a), m = (int)strlen(b);
  if (n > MAX_NAME || m > MAX_NAME || abs(n - m) > cap) return cap + 1;
  int d[MAX_NAME + 1][MAX_NAME + 1];
  for (int i = 0; i <= n; i++) d[i][0] = i;
  for (int j = 0; j <= m; j++) d[0][j] = j;
  for (int i = 1; i <= n; i++)
    for (int j = 1; j <= m; j++) {
      int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
      int v = d[i - 1][j - 1] + !same;
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
          tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m] > cap ? cap + 1 : d[n][m];
}

typedef struct best {
  const char *name;
  int dist, cap;
  bool exact_case; /* the best differs only in letter case */
} best;

static void consider(best *b, const char *want, const char *cand) {
  if (!cand || strcmp(want, cand) == 0) return;
  int d = distance(want, cand, b->cap);
  if (d > b->cap) return;
  bool ci = d == 0; /* the same but for case: the likeliest */
  if (!b->name || (ci && !b->exact_case) || (!b->exact_case && d < b->dist)) {
    b->name = cand;
    b->dist = d;
    b->exact_case = ci;
  }
}

const char *mq_suggest_name(const mq_state *S, const mq_function *f, const char *name) {
  static const char *const aliases[][2] = {
      {"None", "none"}, {"null", "none"}, {"nil", "none"}, {"NULL", "none"},
      {"True", "true"}, {"False", "false"}, {"self", NULL},
  };
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    if (strcmp(name, aliases[i][0]) == 0) return aliases[i][1];
  int len = (int)strlen(name);
  best b = {NULL, 0, len / 3, false};
  if (f)
    for (int i = 0; i < f->nnames; i++) consider(&b, name, f->names[i]);
  for (int i = 0; i < S->nglobals; i++)
    if (S->globals[i].defined) consider(&b, name, S->globals[i].name);
  return b.name;
}

const char *mq_suggest_word(const char *word, const char *const *cands, int n) {
  best b = {NULL, 0, (int)strlen(word) / 3, false};
  for (int i = 0; i < n; i++) consider(&b, word, cands[i]);
  return b.name;
}

/* numpy's and pandas' keyword arguments and masq's (torch's) for them, with
 * why; a habit applies only where the function has the parameter. */
static const struct {
  const char *from, *to, *why;
} kw_habits[] = {
    {"axis", "dim", "numpy's and pandas' axis= is dim= in masq, as in torch"},
    {"keepdims", "keepdim", "numpy's keepdims= is keepdim=, as in torch"},
    {"ddof", "correction",
     "numpy's and pandas' ddof= is correction=, as in torch; std and var default to "
     "correction=0 (numpy's ddof=0), while summary and describe use 1 (pandas' std)"},
    {"skipna", "mask", "masked-out entries are always skipped (a valid NaN is not: "
                       "mask=~isnan(x) skips it too)"},
};

void mq_unknown_keyword(mq_state *S, const char *fn, const char *kw, const char *const *names,
                        int n) {
  for (size_t h = 0; h < sizeof kw_habits / sizeof *kw_habits; h++) {
    if (strcmp(kw, kw_habits[h].from) != 0) continue;
    for (int i = 0; i < n; i++)
      if (names[i] && strcmp(names[i], kw_habits[h].to) == 0)
        mq_error(S, "%s() has no parameter named '%s': %s", fn, kw, kw_habits[h].why);
  }
  const char *like = mq_suggest_word(kw, names, n);
  if (like) mq_error(S, "%s() has no parameter named '%s'; did you mean '%s'?", fn, kw, like);
  mq_error(S, "%s() has no parameter named '%s'", fn, kw);
}

const char *mq_habit_hint(const char *name) {
  static const char *const names[][2] = {
      {"isna", "pandas' isna(x) is ~get_mask(x): a missing entry is a masked-out one"},
      {"isnull", "pandas' isnull(x) is ~get_mask(x): a missing entry is a masked-out one"},
      {"notna", "pandas' notna(x) is get_mask(x): the valid entries"},
      {"notnull", "pandas' notnull(x) is get_mask(x): the valid entries"},
  };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(name, names[i][0]) == 0) return names[i][1];
  return NULL;
}

void mq_no_method(mq_state *S, const mq_function *f, const char *name, mq_value receiver,
                  bool call) {
  const char *type = mq_value_type_name(receiver);
  const char *a = strchr("aeiou", type[0]) ? "an" : "a";
  if (!call && mq_errval_is_field(name))
    mq_error(S, "%s %s has no field '%s' (message, line, col and file are the fields of a caught "
                "error)", a, type, name);
  if (!call && mq_is_obj(receiver, MQ_O_TABLE)) { /* pandas' df.co2 */
    const mq_table *t = mq_as_table(receiver);
    for (int j = 0; j < t->ncols; j++)
      if (strcmp(t->names[j]->chars, name) == 0 && t->names[j]->len == strlen(name))
        mq_error(S, "a table's columns are picked by name in brackets: t[\"%s\"], not t.%s", name,
                 name);
  }
  const char *habit = mq_habit_hint(name);
  if (habit)
    mq_error(S, "%s %s has no %s '%s'; %s", a, type, call ? "method" : "attribute", name, habit);
  const char *like = mq_suggest_name(S, f, name);
  if (call)
    mq_error(S, "%s %s has no method '%s' (x.%s(...) calls %s(x, ...), which is not defined)%s%s%s",
             a, type, name, name, name, like ? "; did you mean '" : "", like ? like : "",
             like ? "'?" : "");
  mq_error(S, "%s %s has no attribute '%s' (x.%s is %s(x), which is not defined)%s%s%s", a, type,
           name, name, name, like ? "; did you mean '" : "", like ? like : "", like ? "'?" : "");
}
