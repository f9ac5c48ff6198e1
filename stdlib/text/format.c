/* format.c - format()'s mini-language (format.h), written out by hand: no
 * text of the script ever reaches printf as a format. The C library only
 * turns a double into digits, through literal formats with a checked
 * precision. */
#include "format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../vm/builtin.h"

/* --- the field being formatted, for error messages ---------------------------- */

typedef struct field {
  const char *text; /* between the braces */
  size_t len;
} field;

/* Raises "format: field {TEXT}: MESSAGE", the field shown with its bytes
 * outside printable ASCII escaped, and cut if long. */
static MQ_NORETURN MQ_PRINTF(3, 4) void field_error(mq_state *S, const field *f,
                                                     const char *fmt, ...) {
  char shown[64 * 4 + 4], message[512];
  size_t n = 0;
  for (size_t i = 0; i < f->len && n + 8 < sizeof shown; i++) {
    unsigned char c = (unsigned char)f->text[i];
    if (i == 64) {
      memcpy(shown + n, "...", 3);
      n += 3;
      break;
    }
    if (c >= 0x20 && c < 0x7f) {
      shown[n++] = (char)c;
    } else {
      snprintf(shown + n, sizeof shown - n, "\\x%02x", c);
      n += 4;
    }
  }
  shown[n] = '\0';
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  mq_error(S, "format: field {%s}: %s", shown, message);
}

/* --- the spec ------------------------------------------------------------------ */

typedef struct spec {
  char fill[4]; /* one UTF-8 character */
  int fill_len; /* 0: none given */
  char align;   /* '<' '>' '^' '=' or 0 */
  char sign;    /* '+' '-' ' ' or 0 */
  bool alt, zero;
  int width;     /* -1: none */
  char group;    /* ',' '_' or 0 */
  int precision; /* -1: none */
  char type;     /* one of TYPES, or 0 */
} spec;

static const char TYPES[] = "dxXobeEfFgG%s";

static bool is_align(char c) { return c == '<' || c == '>' || c == '^' || c == '='; }

/* Bytes of the UTF-8 character at p (1 for a stray byte), within [end). */
static size_t char_len(const char *p, const char *end) {
  unsigned char c = (unsigned char)*p;
  size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
  if (n > (size_t)(end - p)) return 1;
  for (size_t i = 1; i < n; i++)
    if (((unsigned char)p[i] & 0xc0) != 0x80) return 1;
  return n;
}

/* Characters (not bytes) of UTF-8 text: what width and precision count. */
static size_t count_chars(const char *s, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xc0) != 0x80;
  return k;
}

/* A width or precision: decimal digits at *p, at most MQ_FORMAT_MAX_WIDTH. */
static int parse_count(mq_state *S, const field *f, const char **p, const char *end,
                       const char *what) {
  const char *start = *p;
  int64_t v = 0;
  while (*p < end && **p >= '0' && **p <= '9') {
    if (v <= MQ_FORMAT_MAX_WIDTH) v = v * 10 + (**p - '0');
    (*p)++;
  }
  if (v > MQ_FORMAT_MAX_WIDTH)
    field_error(S, f, "%s %.*s is more than the limit %d", what, (int)(*p - start), start,
                MQ_FORMAT_MAX_WIDTH);
  return (int)v;
}

static spec parse_spec(mq_state *S, const field *f, const char *p, const char *end) {
  spec sp = {.width = -1, .precision = -1};
  const char *start = p;
  if (p < end) {
    size_t n = char_len(p, end);
    if (p + n < end && is_align(p[n])) {
      memcpy(sp.fill, p, n);
      sp.fill_len = (int)n;
      sp.align = p[n];
      p += n + 1;
    } else if (is_align(*p)) {
      sp.align = *p++;
    }
  }
  if (p < end && (*p == '+' || *p == '-' || *p == ' ')) sp.sign = *p++;
  if (p < end && *p == '#') sp.alt = *p++ == '#';
  if (p < end && *p == '0') sp.zero = *p++ == '0';
  if (p < end && *p >= '0' && *p <= '9') sp.width = parse_count(S, f, &p, end, "width");
  if (p < end && (*p == ',' || *p == '_')) sp.group = *p++;
  if (p < end && (*p == ',' || *p == '_')) field_error(S, f, "give one of ',' and '_', once");
  if (p < end && *p == '.') {
    p++;
    if (p == end || *p < '0' || *p > '9') field_error(S, f, "'.' must be followed by a precision");
    sp.precision = parse_count(S, f, &p, end, "precision");
  }
  if (p < end) {
    unsigned char c = (unsigned char)*p;
    if (!c || !strchr(TYPES, c)) {
      if (c >= 0x20 && c < 0x7f && p + 1 == end)
        field_error(S, f, "unknown type '%c' (use one of %s)", c, TYPES);
      field_error(S, f, "bad spec (unexpected text at byte %d of it)", (int)(p - start) + 1);
    }
    sp.type = *p++;
  }
  if (p < end)
    field_error(S, f, "bad spec (unexpected text after the type '%c')", sp.type);
  return sp;
}

/* --- the values ---------------------------------------------------------------- */

typedef enum vkind {
  V_INT,
  V_FLOAT,
  V_TEXT,   /* strings, bools, none, lists, functions: their printed text */
  V_TENSOR, /* a tensor of several elements: as print shows it */
} vkind;

typedef struct fvalue {
  vkind kind;
  int64_t i;
  double f;
  mq_value v;    /* V_TEXT, V_TENSOR */
  bool is_bool;  /* V_TEXT: a bool, which numeric types take as 0 or 1 */
  bool masked;   /* a one-element tensor whose element is masked out */
} fvalue;

/* A one-element tensor is its element, read exactly (int64 stays exact). */
static fvalue tensor_value(mq_tensor *t) {
  fvalue fv = {.kind = V_TENSOR, .v = mq_objv(t)};
  if (t->numel != 1) return fv;
  const void *d = mq_tensor_data(t);
  fv.masked = t->mask && !*(const uint8_t *)mq_tensor_data(t->mask);
  switch ((mq_dtype)t->dtype) {
  case MQ_DT_BOOL:
    fv.kind = V_TEXT;
    fv.is_bool = true;
    fv.v = mq_bool(*(const uint8_t *)d != 0);
    break;
  case MQ_DT_I64: fv.kind = V_INT, fv.i = *(const int64_t *)d; break;
  case MQ_DT_F32: fv.kind = V_FLOAT, fv.f = *(const float *)d; break;
  case MQ_DT_F64: fv.kind = V_FLOAT, fv.f = *(const double *)d; break;
  case MQ_DT_I8: case MQ_DT_I16: case MQ_DT_I32: case MQ_DT_U8:
    fv.kind = V_INT, fv.i = (int64_t)mq_elem_f64((mq_dtype)t->dtype, d);
    break;
  case MQ_DT_F16: case MQ_DT_BF16: fv.kind = V_FLOAT, fv.f = mq_elem_f64((mq_dtype)t->dtype, d); break;
  case MQ_DT__ALL: break;
  }
  return fv;
}

static fvalue classify(mq_value v) {
  fvalue fv = {.kind = V_TEXT, .v = v};
  if (v.type == MQ_INT) fv.kind = V_INT, fv.i = v.as.i;
  else if (v.type == MQ_FLOAT) fv.kind = V_FLOAT, fv.f = v.as.f;
  else if (v.type == MQ_BOOL) fv.is_bool = true;
  else if (mq_is_tensor(v)) fv = tensor_value(mq_as_tensor(v));
  return fv;
}

/* "a list", "an int", "none": a value's type as a message names it. */
static const char *article(const char *type_name) {
  if (strcmp(type_name, "none") == 0) return "";
  return strchr("aeiou", type_name[0]) ? "an " : "a ";
}

static bool is_int_type(char t) { return t && strchr("dxXob", t); }
static bool is_float_type(char t) { return t && strchr("eEfFgG%", t); }

/* Checks the spec against the value as Python does, and settles the
 * value's kind: a bool under a numeric type is the int 0 or 1, an int under
 * a float type is that float. */
static void check_fit(mq_state *S, const field *f, spec *sp, fvalue *fv) {
  char t = sp->type;
  if (fv->kind == V_TEXT && fv->is_bool && (is_int_type(t) || is_float_type(t)))
    fv->kind = V_INT, fv->i = fv->v.as.b;
  if (fv->kind == V_TENSOR && (sp->fill_len || sp->align || sp->sign || sp->alt || sp->zero ||
                               sp->width >= 0 || sp->group || sp->precision >= 0 || t))
    field_error(S, f, "a tensor of %lld elements takes no spec (format its items instead)",
                (long long)mq_as_tensor(fv->v)->numel);
  if (fv->kind == V_INT && is_float_type(t)) fv->kind = V_FLOAT, fv->f = (double)fv->i;
  const char *name = fv->kind == V_INT ? "an int" : fv->kind == V_FLOAT ? "a float" : NULL;
  if (fv->kind == V_INT && sp->precision >= 0)
    field_error(S, f, "precision is not allowed with an int");
  if (name && t == 's') field_error(S, f, "type 's' formats text, not %s", name);
  if (fv->kind == V_FLOAT && is_int_type(t))
    field_error(S, f, "type '%c' formats ints, not a float", t);
  if (fv->kind == V_TEXT) {
    const char *what = mq_value_type_name(fv->v), *a = article(what);
    if (t && t != 's') field_error(S, f, "type '%c' formats numbers, not %s%s", t, a, what);
    if (sp->sign) field_error(S, f, "a sign is not allowed with %s%s", a, what);
    if (sp->alt) field_error(S, f, "'#' is not allowed with %s%s", a, what);
    if (sp->group) field_error(S, f, "'%c' is not allowed with %s%s", sp->group, a, what);
    if (sp->align == '=') field_error(S, f, "'=' alignment is not allowed with %s%s", a, what);
  }
  if (sp->group == ',' && t && strchr("xXob", t))
    field_error(S, f, "',' is not allowed with type '%c' (use '_')", t);
  if (sp->zero) {
    if (!sp->fill_len) sp->fill[0] = '0', sp->fill_len = 1;
    if (!sp->align && fv->kind != V_TEXT) sp->align = '=';
  }
}

/* --- text surgery in the output buffer ------------------------------------ */

/* Opens [n] bytes at [pos] of [b], moving what follows; returns the gap. */
static char *open_gap(mq_state *S, mq_buf *b, size_t pos, size_t n) {
  MQ_GROW(S, b->data, b->cap, b->len + n + 1);
  memmove(b->data + pos + n, b->data + pos, b->len - pos + 1);
  b->len += n;
  return b->data + pos;
}

static void cut(mq_buf *b, size_t pos, size_t n) {
  memmove(b->data + pos, b->data + pos + n, b->len - pos - n + 1);
  b->len -= n;
}

static void put_fill(mq_state *S, mq_buf *b, size_t pos, const spec *sp, size_t count) {
  const char *fill = sp->fill_len ? sp->fill : " ";
  size_t fl = sp->fill_len ? (size_t)sp->fill_len : 1;
  char *gap = open_gap(S, b, pos, count * fl);
  for (size_t i = 0; i < count; i++) memcpy(gap + i * fl, fill, fl);
}

/* Pads the text from [start] to the spec's width; '=' pads after the sign
 * and prefix, which take [head] bytes. */
static void pad(mq_state *S, mq_buf *b, size_t start, size_t head, const spec *sp,
                char default_align) {
  size_t have = count_chars(b->data + start, b->len - start);
  if (sp->width < 0 || (size_t)sp->width <= have) return;
  size_t n = (size_t)sp->width - have, before;
  switch (sp->align ? sp->align : default_align) {
  case '<': before = 0; break;
  case '^': before = n / 2; break;
  case '=': put_fill(S, b, start + head, sp, n); return;
  default: before = n; break;
  }
  put_fill(S, b, b->len, sp, n - before);
  put_fill(S, b, start, sp, before);
}

/* Groups the [ndigits] digits at [pos] by [size] with [sep]; with zero
 * padding ('0' fill, '=' alignment) adds leading zeros, grouped too, until
 * the number is [min_len] bytes long. */
static void group_digits(mq_state *S, mq_buf *b, size_t pos, size_t ndigits, size_t size,
                         char sep, size_t min_len) {
  size_t n = ndigits;
  while (n + (n - 1) / size < min_len) n++;
  if (n > ndigits) memset(open_gap(S, b, pos, n - ndigits), '0', n - ndigits);
  /* Right to left, so that each insertion leaves the places still to
   * come where they were. */
  for (size_t k = size; k < n; k += size) *open_gap(S, b, pos + n - k, 1) = sep;
}

/* --- numbers ------------------------------------------------------------------- */

static void put_sign(mq_state *S, mq_buf *b, bool negative, const spec *sp) {
  if (negative) mq_buf_putc(S, b, '-');
  else if (sp->sign == '+' || sp->sign == ' ') mq_buf_putc(S, b, sp->sign);
}

static void put_int_digits(mq_state *S, mq_buf *b, int64_t v, char type) {
  unsigned base = type == 'x' || type == 'X' ? 16 : type == 'o' ? 8 : type == 'b' ? 2 : 10;
  const char *digits = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  /* The magnitude in unsigned arithmetic, so that INT64_MIN has one. */
  uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  char tmp[64];
  size_t n = 0;
  do {
    tmp[sizeof tmp - ++n] = digits[m % base];
    m /= base;
  } while (m);
  mq_buf_putn(S, b, tmp + sizeof tmp - n, n);
}

/* Drops the zeros ending the fraction of the number at [pos] (before
 * its exponent, if any), and the point if nothing is left after it. */
static void strip_zeros(mq_buf *b, size_t pos) {
  char *s = b->data + pos, *point = strchr(s, '.');
  if (!point) return;
  char *e = strpbrk(s, "eE"), *end = e ? e : b->data + b->len, *last = end;
  while (last > point + 1 && last[-1] == '0') last--;
  if (last == point + 1) last = point;
  cut(b, (size_t)(last - b->data), (size_t)(end - last));
}

/* The digits of |x| >= 0 (finite) for a float type or none. */
static void put_float_digits(mq_state *S, mq_buf *b, double x, const spec *sp) {
  int p = sp->precision, places = p < 0 ? 6 : p;
  size_t pos = b->len;
  switch (sp->type) {
  case 'f': case 'F': case '%':
    mq_buf_printf(S, b, sp->alt ? "%#.*f" : "%.*f", places, sp->type == '%' ? x * 100 : x);
    return;
  case 'e': case 'E':
    mq_buf_printf(S, b, sp->alt ? "%#.*e" : "%.*e", places, x);
    break;
  case 'g': case 'G':
    mq_buf_printf(S, b, sp->alt ? "%#.*g" : "%.*g", places, x);
    break;
  default: break;
  }
  if (sp->type) {
    char *e = strchr(b->data + pos, 'e');
    if (e && (sp->type == 'E' || sp->type == 'G')) *e = 'E';
    return;
  }
  if (p < 0) {
    /* No type and no precision: the shortest text that reads back as x,
     * which is how print shows a float. */
    mq_value_format(S, b, mq_float(x));
  } else {
    /* No type with a precision: as 'g', but fixed notation keeps a digit
     * after the point, so it takes one digit less before going to
     * exponents (Python's rule: 1.0 with .1 is 1e+00). */
    if (p == 0) p = 1;
    mq_buf_printf(S, b, "%.*e", p - 1, x);
    int exp10 = atoi(strchr(b->data + pos, 'e') + 1);
    if (exp10 >= -4 && exp10 < p - 1) {
      b->len = pos;
      mq_buf_printf(S, b, "%.*f", p - 1 - exp10, x);
    }
    if (!sp->alt) strip_zeros(b, pos);
    if (!strpbrk(b->data + pos, ".e")) mq_buf_puts(S, b, ".0");
  }
  if (sp->alt && !strchr(b->data + pos, '.')) {
    size_t digits = strspn(b->data + pos, "0123456789");
    *open_gap(S, b, pos + digits, 1) = '.';
  }
}

static void put_number(mq_state *S, mq_buf *b, const fvalue *fv, const spec *sp) {
  size_t start = b->len;
  bool upper = sp->type && strchr("FEG", sp->type);
  if (fv->kind == V_INT) {
    put_sign(S, b, fv->i < 0, sp);
    if (sp->alt && sp->type && strchr("xXob", sp->type)) {
      mq_buf_putc(S, b, '0');
      mq_buf_putc(S, b, sp->type);
    }
  } else {
    put_sign(S, b, !isnan(fv->f) && signbit(fv->f), sp);
  }
  size_t head = b->len - start, body = b->len;
  if (fv->kind == V_INT) {
    put_int_digits(S, b, fv->i, sp->type);
  } else if (isnan(fv->f) || isinf(fv->f)) {
    mq_buf_puts(S, b, isnan(fv->f) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"));
  } else {
    put_float_digits(S, b, fabs(fv->f), sp);
  }
  if (fv->kind == V_FLOAT && sp->type == '%') mq_buf_putc(S, b, '%');
  size_t ndigits = fv->kind == V_INT ? b->len - body : strspn(b->data + body, "0123456789");
  if (sp->group && ndigits) {
    bool zero_pad = sp->align == '=' && sp->fill_len == 1 && sp->fill[0] == '0';
    size_t rest = b->len - body - ndigits, min_len = 0;
    if (zero_pad && (size_t)sp->width > head + rest) min_len = (size_t)sp->width - head - rest;
    size_t size = sp->type && strchr("xXob", sp->type) ? 4 : 3;
    group_digits(S, b, body, ndigits, size, sp->group, min_len);
  }
  pad(S, b, start, head, sp, '>');
}

/* --- one field ------------------------------------------------------------------ */

static void put_value(mq_state *S, mq_buf *b, const field *f, spec sp, mq_value v) {
  fvalue fv = classify(v);
  check_fit(S, f, &sp, &fv);
  size_t start = b->len;
  if (fv.masked) {
    /* A masked-out element has no digits: it shows as print shows it,
     * padded to the width like a number. */
    mq_buf_puts(S, b, "--");
    pad(S, b, start, 0, &sp, '>');
    return;
  }
  if (fv.kind == V_INT || fv.kind == V_FLOAT) {
    put_number(S, b, &fv, &sp);
    return;
  }
  if (mq_is_obj(fv.v, MQ_O_STRING)) mq_buf_putn(S, b, mq_as_string(fv.v)->chars, mq_as_string(fv.v)->len);
  else mq_value_format(S, b, fv.v);
  if (sp.precision >= 0) {
    size_t keep = 0, chars = 0;
    while (start + keep < b->len && chars < (size_t)sp.precision)
      keep += char_len(b->data + start + keep, b->data + b->len), chars++;
    b->len = start + keep;
    b->data[b->len] = '\0';
  }
  pad(S, b, start, 0, &sp, '<');
}

/* --- fields and the format string ------------------------------------------- */

typedef struct fstate {
  const mq_list *values, *names;
  int next;       /* automatic numbering: the next value */
  int mode;       /* 0: not yet known, 1: automatic, 2: manual */
  bool *used;     /* per value, then per name */
} fstate;

static bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* The value [name] (text from [p] to [end]) refers to. */
static mq_value lookup(mq_state *S, const field *f, fstate *st, const char *p, const char *end) {
  size_t n = (size_t)(end - p);
  if (n == 0 || (*p >= '0' && *p <= '9')) {
    int mode = n == 0 ? 1 : 2;
    if (st->mode && st->mode != mode)
      field_error(S, f, "cannot mix automatic fields {} with numbered ones {0}");
    st->mode = mode;
    int64_t index = 0;
    if (n == 0) {
      index = st->next++;
    } else {
      for (const char *q = p; q < end; q++) {
        if (*q < '0' || *q > '9') field_error(S, f, "bad field name (use {}, {0} or {name})");
        if (index < INT32_MAX) index = index * 10 + (*q - '0');
      }
    }
    if (index >= st->values->len)
      field_error(S, f, "there is no value %lld: %d value%s given", (long long)index,
                  st->values->len, st->values->len == 1 ? " was" : "s were");
    st->used[index] = true;
    return st->values->items[index];
  }
  if (!is_ident_start(*p)) field_error(S, f, "bad field name (use {}, {0} or {name})");
  for (const char *q = p; q < end; q++)
    if (!is_ident_start(*q) && !(*q >= '0' && *q <= '9'))
      field_error(S, f, "bad field name (use {}, {0} or {name})");
  for (int k = 0; st->names && k + 1 < st->names->len; k += 2) {
    const mq_string *name = mq_as_string(st->names->items[k]);
    if (name->len == n && memcmp(name->chars, p, n) == 0) {
      st->used[st->values->len + k / 2] = true;
      return st->names->items[k + 1];
    }
  }
  field_error(S, f, "no keyword argument %.*s was given", (int)n, p);
}

/* The spec of [f] from [p] to [end], its {} fields replaced by their int or
 * string values (Python's nested fields, one level deep). */
static spec nested_spec(mq_state *S, const field *f, fstate *st, const char *p, const char *end) {
  if (!memchr(p, '{', (size_t)(end - p))) return parse_spec(S, f, p, end);
  size_t cap = 0, len = 0;
  for (const char *q = p; q < end; q++) cap += *q == '{' ? 32 : 1;
  char *text = mq_scratch(S, cap + 1);
  for (const char *q = p; q < end; q++) {
    if (*q != '{') {
      text[len++] = *q;
      continue;
    }
    const char *close = memchr(q, '}', (size_t)(end - q));
    if (!close) field_error(S, f, "'{' inside the spec without a matching '}'");
    mq_value v = lookup(S, f, st, q + 1, close);
    if (v.type == MQ_INT) {
      len += (size_t)snprintf(text + len, 32, "%lld", (long long)v.as.i);
    } else if (mq_is_obj(v, MQ_O_STRING) && mq_as_string(v)->len <= 32) {
      memcpy(text + len, mq_as_string(v)->chars, mq_as_string(v)->len);
      len += mq_as_string(v)->len;
    } else {
      field_error(S, f, "a field inside the spec must be an int or a short string, not %s",
                  mq_value_a_type_name(v));
    }
    q = close;
  }
  return parse_spec(S, f, text, text + len);
}

/* Formats the field whose text (between its braces) is [f]. */
static void put_field(mq_state *S, mq_buf *b, const field *f, fstate *st) {
  const char *p = f->text, *end = p + f->len, *colon = memchr(p, ':', f->len);
  const char *name_end = colon ? colon : end;
  if (memchr(p, '!', (size_t)(name_end - p)))
    field_error(S, f, "conversions such as !r are not supported");
  /* Look the value up first: with automatic numbering, a nested field in
   * the spec takes the value after this one, as in Python. */
  mq_value v = lookup(S, f, st, p, name_end);
  spec sp = colon ? nested_spec(S, f, st, colon + 1, end) : parse_spec(S, f, end, end);
  put_value(S, b, f, sp, v);
}

void mq_format(mq_state *S, mq_buf *out, const mq_string *fmt, const mq_list *values,
               const mq_list *names) {
  int nnames = names ? names->len / 2 : 0;
  fstate st = {values, names, 0, 0, mq_scratch(S, (size_t)(values->len + nnames) + 1)};
  memset(st.used, 0, (size_t)(values->len + nnames) + 1);
  const char *s = fmt->chars, *end = s + fmt->len;
  for (const char *p = s; p < end; p++) {
    if (*p == '}') {
      if (p + 1 == end || p[1] != '}')
        mq_error(S, "format: '}' at byte %d has no '{' before it (write '}}' for a '}')",
                 (int)(p - s) + 1);
      mq_buf_putc(S, out, *p++);
      continue;
    }
    if (*p != '{') {
      const char *brace = p;
      while (brace < end && *brace != '{' && *brace != '}') brace++;
      mq_buf_putn(S, out, p, (size_t)(brace - p));
      p = brace - 1;
      continue;
    }
    if (p + 1 < end && p[1] == '{') {
      mq_buf_putc(S, out, *p++);
      continue;
    }
    /* The field ends at the '}' that closes it; braces inside nest once. */
    const char *q = p + 1;
    int depth = 1;
    for (; q < end; q++) {
      if (*q == '{' && ++depth > 2)
        mq_error(S, "format: the field at byte %d nests '{' too deep", (int)(p - s) + 1);
      if (*q == '}' && --depth == 0) break;
    }
    if (q == end)
      mq_error(S, "format: '{' at byte %d has no '}' after it (write '{{' for a '{')",
               (int)(p - s) + 1);
    field f = {p + 1, (size_t)(q - p - 1)};
    put_field(S, out, &f, &st);
    p = q;
  }
  for (int i = 0; i < values->len; i++)
    if (!st.used[i])
      mq_error(S, "format: value %d is not used by any field (%d value%s given)", i,
               values->len, values->len == 1 ? " was" : "s were");
  for (int k = 0; k < nnames; k++)
    if (!st.used[values->len + k])
      mq_error(S, "format: keyword argument %s is not used by any field",
               mq_as_string(names->items[2 * k])->chars);
}
