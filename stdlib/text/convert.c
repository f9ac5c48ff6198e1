/* convert.c - int(), float() and bool() of strings and plain numbers. */
#include "convert.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* The string's text without surrounding blanks, as a C string in scratch
 * memory; a NUL byte inside makes it unreadable (NULL). */
static char *trimmed(mq_state *S, const mq_string *s) {
  size_t a = 0, b = s->len;
  while (a < b && blank(s->chars[a])) a++;
  while (b > a && blank(s->chars[b - 1])) b--;
  if (memchr(s->chars + a, '\0', b - a)) return NULL;
  char *t = mq_scratch(S, b - a + 1);
  memcpy(t, s->chars + a, b - a);
  t[b - a] = '\0';
  return t;
}

/* The error for a string that is not [what]: the string quoted, with its
 * control bytes, quotes and backslashes escaped; a long one is not shown. */
static MQ_NORETURN void bad_string(mq_state *S, const mq_string *s, const char *fn, const char *what) {
  if (s->len > 40) mq_error(S, "%s(): this string of %zu bytes is not %s", fn, s->len, what);
  char q[4 * 40 + 1], *o = q;
  for (size_t i = 0; i < s->len; i++) {
    unsigned char c = (unsigned char)s->chars[i];
    if (c == '"' || c == '\\') *o++ = '\\', *o++ = (char)c;
    else if (c < 0x20 || c == 0x7f) o += snprintf(o, 5, "\\x%02x", c);
    else *o++ = (char)c;
  }
  *o = '\0';
  mq_error(S, "%s(): cannot convert \"%s\" to %s", fn, q, what);
}

static int64_t parse_int(mq_state *S, const mq_string *s) {
  char *t = trimmed(S, s);
  const char *p = t;
  if (!p || !*p) bad_string(S, s, "int", "an int");
  bool neg = *p == '-';
  if (*p == '+' || *p == '-') p++;
  if (*p < '0' || *p > '9') bad_string(S, s, "int", "an int");
  uint64_t mag = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; *p; p++) {
    if (*p == '_' && p[1] >= '0' && p[1] <= '9' && p[-1] >= '0' && p[-1] <= '9') continue;
    if (*p < '0' || *p > '9') bad_string(S, s, "int", "an int");
    unsigned d = (unsigned)(*p - '0');
    if (mag > (lim - d) / 10) mq_error(S, "int(): \"%s\" is out of the range of an int (int64)", t);
    mag = mag * 10 + d;
  }
  return neg ? (int64_t)(0 - mag) : (int64_t)mag;
}

static double parse_float(mq_state *S, const mq_string *s) {
  char *t = trimmed(S, s);
  if (!t || !*t) bad_string(S, s, "float", "a float");
  /* strtod also reads hex floats and "nan(...)", which Python's float()
   * refuses; digits, a point, an exponent, inf and nan are what it takes */
  for (const char *p = t; *p; p++)
    if (*p == 'x' || *p == 'X' || *p == '(' || *p == '_') bad_string(S, s, "float", "a float");
  char *end;
  errno = 0;
  double d = strtod(t, &end);
  if (*end || end == t) bad_string(S, s, "float", "a float");
  return d; /* past the range of a double: inf, as Python's float("1e999") */
}

static bool parse_bool(mq_state *S, const mq_string *s) {
  char *t = trimmed(S, s);
  if (t && strcmp(t, "true") == 0) return true;
  if (t && strcmp(t, "false") == 0) return false;
  bad_string(S, s, "bool", "a bool (\"true\" or \"false\")");
}

static int64_t float_to_int(mq_state *S, double d) {
  if (isnan(d) || isinf(d)) mq_error(S, "int(): cannot convert %s to an int", isnan(d) ? "nan" : d > 0 ? "inf" : "-inf");
  double t = trunc(d);
  if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0))
    mq_error(S, "int(): %g is out of the range of an int (int64)", d);
  return (int64_t)t;
}

bool mq_convert_scalar(mq_state *S, mq_value v, char kind, mq_value *out) {
  if (mq_is_obj(v, MQ_O_STRING)) {
    const mq_string *s = mq_as_string(v);
    *out = kind == 'i' ? mq_int(parse_int(S, s)) : kind == 'f' ? mq_float(parse_float(S, s))
                                                                : mq_bool(parse_bool(S, s));
    return true;
  }
  if (!mq_is_number(v)) return false;
  double d = v.type == MQ_FLOAT ? v.as.f : v.type == MQ_INT ? (double)v.as.i : (double)v.as.b;
  switch (kind) {
  case 'i': *out = v.type == MQ_FLOAT ? mq_int(float_to_int(S, v.as.f))
                   : mq_int(v.type == MQ_INT ? v.as.i : (int64_t)v.as.b);
    break;
  case 'f': *out = mq_float(d); break;
  default: *out = mq_bool(v.type == MQ_INT ? v.as.i != 0 : d != 0); break;
  }
  return true;
}
