/* lib_text.c - Python's habits for text and sequences: the string methods
 * (split, join, strip, replace, find, ...), sorted/reversed, enumerate/zip,
 * and min/max of plain numbers.
 *
 * split, count, min and max are also tensor builtins. Their rows here are
 * overloads (vm/builtin.h, MQ_BK_ON_STRING / MQ_BK_ON_SCALARS): the binder
 * calls them instead of the tensor rows when the first argument is a
 * string (split, count) or every argument is a plain number or a string
 * (min(3, 4)), and the tensor meanings are untouched otherwise. Strings are
 * bytes, as everywhere in masq: upper/lower and the whitespace of split and
 * strip are ASCII's. */
#include <math.h>

#include "../core/checked.h"
#include "../core/strfind.h"
#include "../vm/seqops.h"
#include "../vm/walk.h"
#include "stdlib.h"

/* Python's ASCII whitespace (str.split() with no separator, str.strip()). */
static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static const mq_string *str_arg(mq_state *S, mq_value v, const char *fn, const char *what) {
  if (!mq_is_obj(v, MQ_O_STRING))
    mq_error(S, "%s(): %s must be a string (got %s)", fn, what, mq_value_type_name(v));
  return mq_as_string(v);
}

static mq_value new_str(mq_state *S, const char *s, size_t n) {
  return mq_objv(mq_string_new(S, s, n));
}

/* A search for [sub] (core/strfind.h: linear whatever the strings, and it
 * polls); [back] for rfind. */
static mq_finder finder(const mq_string *sub, bool back) {
  mq_finder f;
  mq_finder_init(&f, sub->chars, sub->len, back);
  return f;
}

/* --- split, join ----------------------------------------------------------------- */

static mq_value lib_split(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "split", "s");
  int64_t max = mq_arg_int(S, args[2], "maxsplit");
  mq_list *l = mq_list_new(S, 0);
  const char *p = s->chars, *end = p + s->len;
  if (args[1].type == MQ_NONE) { /* runs of whitespace; none empty, none at the ends */
    for (;;) {
      while (p < end && is_space(*p)) p++;
      if (p == end) break;
      const char *q = p;
      if (max >= 0 && l->len >= max) q = end;
      while (q < end && !is_space(*q)) q++; /* past maxsplit: the rest as it is */
      mq_list_push(S, l, new_str(S, p, (size_t)(q - p)));
      p = q;
      mq_poll(S);
    }
    return mq_objv(l);
  }
  const mq_string *sep = str_arg(S, args[1], "split", "sep");
  if (sep->len == 0) mq_error(S, "split(): empty separator");
  mq_finder f = finder(sep, false);
  for (size_t at = 0;;) {
    int64_t hit = max >= 0 && l->len >= max ? -1 : mq_find(S, &f, s->chars, s->len, at);
    size_t stop = hit < 0 ? s->len : (size_t)hit;
    mq_list_push(S, l, new_str(S, s->chars + at, stop - at));
    if (hit < 0) break;
    at = stop + sep->len;
    mq_poll(S);
  }
  return mq_objv(l);
}

static mq_list *items_of(mq_state *S, mq_value v, const char *fn) { return mq_walk_list(S, v, fn); }

static mq_value lib_join(mq_state *S, mq_value *args) {
  const mq_string *sep = str_arg(S, args[0], "join", "sep");
  const mq_list *l = items_of(S, args[1], "join");
  size_t len = 0;
  for (int i = 0; i < l->len; i++) {
    if (!mq_is_obj(l->items[i], MQ_O_STRING))
      mq_error(S, "join(): item %d must be a string (got %s)", i, mq_value_type_name(l->items[i]));
    size_t add = mq_as_string(l->items[i])->len + (i ? sep->len : 0);
    if (add > MQ_STRING_MAX - len)
      mq_error(S, "join(): the result is more than a string holds (%zu bytes)", MQ_STRING_MAX);
    len += add;
  }
  char *buf = mq_scratch(S, len ? len : 1), *w = buf;
  for (int i = 0; i < l->len; i++) {
    const mq_string *it = mq_as_string(l->items[i]);
    if (i) memcpy(w, sep->chars, sep->len), w += sep->len;
    memcpy(w, it->chars, it->len);
    w += it->len;
  }
  return new_str(S, buf, len);
}

/* --- strip, case, replace ------------------------------------------------------- */

/* Which bytes strip takes off: those of [chars], or whitespace if none. A
 * table, so that stripping costs the length of s, not that times the
 * length of chars. */
static void strip_set(const mq_string *chars, bool set[256]) {
  for (int c = 0; c < 256; c++) set[c] = !chars && is_space((char)c);
  for (size_t i = 0; chars && i < chars->len; i++) set[(unsigned char)chars->chars[i]] = true;
}

static mq_value strip_sides(mq_state *S, mq_value *args, const char *fn, bool left, bool right) {
  const mq_string *s = str_arg(S, args[0], fn, "s");
  const mq_string *chars = args[1].type == MQ_NONE ? NULL : str_arg(S, args[1], fn, "chars");
  bool set[256];
  strip_set(chars, set);
  size_t a = 0, b = s->len;
  while (left && a < b && set[(unsigned char)s->chars[a]]) a++;
  while (right && b > a && set[(unsigned char)s->chars[b - 1]]) b--;
  return new_str(S, s->chars + a, b - a);
}

static mq_value lib_strip(mq_state *S, mq_value *args) { return strip_sides(S, args, "strip", true, true); }
static mq_value lib_lstrip(mq_state *S, mq_value *args) { return strip_sides(S, args, "lstrip", true, false); }
static mq_value lib_rstrip(mq_state *S, mq_value *args) { return strip_sides(S, args, "rstrip", false, true); }

static mq_value change_case(mq_state *S, mq_value v, const char *fn, char from, int shift) {
  const mq_string *s = str_arg(S, v, fn, "s");
  char *buf = mq_scratch(S, s->len + 1);
  for (size_t i = 0; i < s->len; i++) {
    char c = s->chars[i];
    buf[i] = c >= from && c <= from + 25 ? (char)(c + shift) : c;
  }
  return new_str(S, buf, s->len);
}

static mq_value lib_upper(mq_state *S, mq_value *args) { return change_case(S, args[0], "upper", 'a', 'A' - 'a'); }
static mq_value lib_lower(mq_state *S, mq_value *args) { return change_case(S, args[0], "lower", 'A', 'a' - 'A'); }

/* Python's str.replace: at most [count] (all if negative) non-overlapping
 * occurrences from the left; an empty [old] matches before every
 * character and at the end. */
static mq_value lib_replace(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "replace", "s");
  const mq_string *old = str_arg(S, args[1], "replace", "old");
  const mq_string *new = str_arg(S, args[2], "replace", "new");
  int64_t count = mq_arg_int(S, args[3], "count");
  mq_buf *b = &S->out;
  b->len = 0;
  size_t at = 0;
  mq_finder f = finder(old, false); /* an empty one matches at every place up to the end */
  for (int64_t n = 0; count < 0 || n < count; n++) {
    int64_t hit = mq_find(S, &f, s->chars, s->len, at);
    if (hit < 0) break;
    mq_buf_putn(S, b, s->chars + at, (size_t)hit - at);
    mq_buf_putn(S, b, new->chars, new->len);
    at = (size_t)hit + old->len;
    if (!old->len) { /* the character after an empty match is kept */
      if (at < s->len) mq_buf_putn(S, b, s->chars + at, 1);
      at++;
    }
    mq_poll(S);
  }
  if (at < s->len) mq_buf_putn(S, b, s->chars + at, s->len - at);
  return new_str(S, b->len ? b->data : "", b->len);
}

/* --- searching -------------------------------------------------------------------- */

/* startswith/endswith: [what] a string or a list of strings (any of them). */
static mq_value affix(mq_state *S, mq_value *args, const char *fn, bool end) {
  const mq_string *s = str_arg(S, args[0], fn, "s");
  mq_value w = args[1];
  int n = mq_is_obj(w, MQ_O_LIST) ? mq_as_list(w)->len : 1;
  for (int i = 0; i < n; i++) {
    const mq_string *a =
        str_arg(S, mq_is_obj(w, MQ_O_LIST) ? mq_as_list(w)->items[i] : w, fn, end ? "suffix" : "prefix");
    if (a->len <= s->len && memcmp(s->chars + (end ? s->len - a->len : 0), a->chars, a->len) == 0)
      return mq_bool(true);
  }
  return mq_bool(false);
}

static mq_value lib_startswith(mq_state *S, mq_value *args) { return affix(S, args, "startswith", false); }
static mq_value lib_endswith(mq_state *S, mq_value *args) { return affix(S, args, "endswith", true); }

static mq_value lib_find(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "find", "s");
  const mq_string *sub = str_arg(S, args[1], "find", "sub");
  int64_t start = mq_arg_int(S, args[2], "start");
  if (start < 0) start = start + (int64_t)s->len < 0 ? 0 : start + (int64_t)s->len;
  if ((uint64_t)start > s->len) return mq_int(-1);
  mq_finder f = finder(sub, false);
  return mq_int(mq_find(S, &f, s->chars, s->len, (size_t)start));
}

static mq_value lib_count(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "count", "s");
  const mq_string *sub = str_arg(S, args[1], "count", "sub");
  if (!sub->len) return mq_int((int64_t)s->len + 1);
  mq_finder f = finder(sub, false);
  int64_t n = 0;
  for (int64_t at = mq_find(S, &f, s->chars, s->len, 0); at >= 0;
       at = mq_find(S, &f, s->chars, s->len, (size_t)at + sub->len))
    n++;
  return mq_int(n);
}

/* --- more of str's methods ------------------------------------------------------ */

static mq_value lib_rfind(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "rfind", "s");
  const mq_string *sub = str_arg(S, args[1], "rfind", "sub");
  mq_finder f = finder(sub, true);
  return mq_int(mq_rfind(S, &f, s->chars, s->len));
}

static mq_value lib_index(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "index", "s");
  mq_finder f = finder(str_arg(S, args[1], "index", "sub"), false);
  int64_t at = mq_find(S, &f, s->chars, s->len, 0);
  if (at < 0) mq_error(S, "index(): substring not found");
  return mq_int(at);
}

/* Python's bytes.splitlines: at \n, \r\n and \r, the ends dropped; no
 * empty last line for a trailing end of line. */
static mq_value lib_splitlines(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "splitlines", "s");
  mq_list *l = mq_list_new(S, 0);
  for (size_t a = 0, i = 0; i < s->len; a = i) {
    while (i < s->len && s->chars[i] != '\n' && s->chars[i] != '\r') i++;
    mq_list_push(S, l, new_str(S, s->chars + a, i - a));
    if (i < s->len) i += s->chars[i] == '\r' && i + 1 < s->len && s->chars[i + 1] == '\n' ? 2 : 1;
    mq_poll(S);
  }
  return mq_objv(l);
}

/* Whether [s] is not empty and every byte is in the ASCII class [cls]:
 * 'd' digits, 'a' letters, 'n' either, 's' whitespace. */
static mq_value all_of(mq_state *S, mq_value v, const char *fn, char cls) {
  const mq_string *s = str_arg(S, v, fn, "s");
  for (size_t i = 0; i < s->len; i++) {
    char c = s->chars[i];
    bool digit = c >= '0' && c <= '9', alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    bool ok = cls == 'd' ? digit : cls == 'a' ? alpha : cls == 'n' ? digit || alpha : is_space(c);
    if (!ok) return mq_bool(false);
  }
  return mq_bool(s->len > 0);
}

static mq_value lib_isdigit(mq_state *S, mq_value *args) { return all_of(S, args[0], "isdigit", 'd'); }
static mq_value lib_isalpha(mq_state *S, mq_value *args) { return all_of(S, args[0], "isalpha", 'a'); }
static mq_value lib_isalnum(mq_state *S, mq_value *args) { return all_of(S, args[0], "isalnum", 'n'); }
static mq_value lib_isspace(mq_state *S, mq_value *args) { return all_of(S, args[0], "isspace", 's'); }

static mq_value lib_capitalize(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "capitalize", "s");
  char *buf = mq_scratch(S, s->len + 1);
  for (size_t i = 0; i < s->len; i++) {
    char c = s->chars[i];
    bool up = i == 0;
    buf[i] = up && c >= 'a' && c <= 'z' ? (char)(c - 32) : !up && c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
  }
  return new_str(S, buf, s->len);
}

/* [s] padded with [fill] to [width] bytes: [left] of the padding before
 * it, the rest after; [s] itself when it is as wide already. */
static mq_value pad(mq_state *S, const mq_string *s, int64_t width, char fill, int64_t left,
                    const char *fn) {
  if (width <= (int64_t)s->len) return new_str(S, s->chars, s->len);
  if ((uint64_t)width > MQ_STRING_MAX)
    mq_error(S, "%s(): a width of %lld is more than a string holds (%zu bytes)", fn, (long long)width,
             MQ_STRING_MAX);
  char *buf = mq_scratch(S, (size_t)width);
  memset(buf, fill, (size_t)width);
  memcpy(buf + left, s->chars, s->len);
  return new_str(S, buf, (size_t)width);
}

static char fill_arg(mq_state *S, mq_value v, const char *fn) {
  const mq_string *f = str_arg(S, v, fn, "fillchar");
  if (f->len != 1) mq_error(S, "%s(): fillchar must be one character, not %zu", fn, f->len);
  return f->chars[0];
}

static mq_value justify(mq_state *S, mq_value *args, const char *fn, int how) {
  const mq_string *s = str_arg(S, args[0], fn, "s");
  int64_t width = mq_arg_int(S, args[1], "width");
  char fill = fill_arg(S, args[2], fn);
  int64_t marg = width > (int64_t)s->len ? width - (int64_t)s->len : 0;
  /* center: as CPython, the odd byte goes left when width is odd */
  int64_t left = how < 0 ? 0 : how > 0 ? marg : marg / 2 + (marg & width & 1);
  return pad(S, s, width, fill, left, fn);
}

static mq_value lib_ljust(mq_state *S, mq_value *args) { return justify(S, args, "ljust", -1); }
static mq_value lib_rjust(mq_state *S, mq_value *args) { return justify(S, args, "rjust", 1); }
static mq_value lib_center(mq_state *S, mq_value *args) { return justify(S, args, "center", 0); }

/* zfill: zeros on the left, after a leading sign. */
static mq_value lib_zfill(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "zfill", "s");
  int64_t width = mq_arg_int(S, args[1], "width");
  int64_t marg = width > (int64_t)s->len ? width - (int64_t)s->len : 0;
  mq_string *r = mq_as_string(pad(S, s, width, '0', marg, "zfill"));
  if (marg && s->len && (s->chars[0] == '+' || s->chars[0] == '-')) {
    r->chars[0] = s->chars[0];
    r->chars[marg] = '0';
  }
  return mq_objv(r);
}

static mq_value lib_partition(mq_state *S, mq_value *args) {
  const mq_string *s = str_arg(S, args[0], "partition", "s");
  const mq_string *sep = str_arg(S, args[1], "partition", "sep");
  if (sep->len == 0) mq_error(S, "partition(): empty separator");
  mq_finder f = finder(sep, false);
  int64_t at = mq_find(S, &f, s->chars, s->len, 0);
  size_t a = at < 0 ? s->len : (size_t)at, b = at < 0 ? s->len : a + sep->len;
  mq_list *l = mq_list_new(S, 3);
  mq_list_push(S, l, new_str(S, s->chars, a));
  mq_list_push(S, l, new_str(S, s->chars + a, b - a));
  mq_list_push(S, l, new_str(S, s->chars + b, s->len - b));
  return mq_objv(l);
}

/* --- ordering ------------------------------------------------------------------------ */

/* -1, 0 or 1 as int [i] is below, equal to or above double [f], exactly
 * (no rounding of i to a double); 2 when f is NaN (unordered). */
static int cmp_int_float(int64_t i, double f) {
  if (isnan(f)) return 2;
  if (f >= 9223372036854775808.0) return -1;
  if (f < -9223372036854775808.0) return 1;
  double t = trunc(f);
  int64_t ti = (int64_t)t;
  if (i != ti) return i < ti ? -1 : 1;
  return f > t ? -1 : f < t ? 1 : 0;
}

static int64_t int_of(mq_value v) { return v.type == MQ_INT ? v.as.i : v.as.b; }

/* A plain 0-d tensor (a row of a 1-d tensor) as its number, so that
 * sorted(tensor([3, 1, 2])) sorts numbers; anything else as it is. */
static mq_value plain_item(mq_state *S, mq_value v) {
  if (mq_is_tensor(v) && mq_as_tensor(v)->ndim == 0 && !mq_as_tensor(v)->mask)
    return mq_tensor_item_value(S, mq_as_tensor(v));
  return v;
}

/* How deep less() follows lists in lists (Python's comparison of lists
 * recurses without a bound; the C stack has one). */
#define LESS_MAX_DEPTH 64

static int cmp_at(mq_state *S, mq_value a, mq_value b, const char *fn, int depth);

/* -1, 0 or 1 as list a is less than, neither, or greater than list b:
 * the first items that differ decide, else the shorter one is less, as
 * Python compares lists. Each pair of items is compared once (three-way),
 * so nested lists cost their size, not 2^depth. */
static int list_cmp(mq_state *S, const mq_list *a, const mq_list *b, const char *fn, int depth) {
  if (a == b) return 0; /* as ==: a list is equal to itself (seqops.c) */
  if (depth >= LESS_MAX_DEPTH) mq_error(S, "%s(): lists nested more than %d deep", fn, LESS_MAX_DEPTH);
  for (int k = 0; k < a->len && k < b->len; k++) {
    mq_poll(S); /* every step, however the lists nest: as == polls (seqops.c) */
    int c = cmp_at(S, a->items[k], b->items[k], fn, depth + 1);
    if (c) return c;
  }
  return (a->len > b->len) - (a->len < b->len);
}

/* a < b for two numbers (exactly, ints against floats too), two strings
 * (bytewise) or two lists (list_cmp); [fn] names the caller in the error
 * for anything else. */
static bool less(mq_state *S, mq_value a, mq_value b, const char *fn) {
  return cmp_at(S, a, b, fn, 0) < 0;
}

/* -1 if a < b, 1 if b < a, else 0 (equal, or a NaN: neither is less). */
static int cmp_at(mq_state *S, mq_value a, mq_value b, const char *fn, int depth) {
  a = plain_item(S, a);
  b = plain_item(S, b);
  if (mq_is_number(a) && mq_is_number(b)) {
    if (a.type != MQ_FLOAT && b.type != MQ_FLOAT) {
      int64_t x = int_of(a), y = int_of(b);
      return (x > y) - (x < y);
    }
    if (a.type == MQ_FLOAT && b.type == MQ_FLOAT) return (a.as.f > b.as.f) - (a.as.f < b.as.f);
    if (b.type == MQ_FLOAT) { /* cmp_int_float: -1, 0, 1, or something else for NaN */
      int c = cmp_int_float(int_of(a), b.as.f);
      return c == -1 || c == 1 ? c : 0;
    }
    int c = cmp_int_float(int_of(b), a.as.f);
    return c == -1 || c == 1 ? -c : 0;
  }
  if (mq_is_obj(a, MQ_O_STRING) && mq_is_obj(b, MQ_O_STRING)) {
    const mq_string *x = mq_as_string(a), *y = mq_as_string(b);
    int c = memcmp(x->chars, y->chars, x->len < y->len ? x->len : y->len);
    if (c) return c < 0 ? -1 : 1;
    return (x->len > y->len) - (x->len < y->len);
  }
  if (mq_is_obj(a, MQ_O_LIST) && mq_is_obj(b, MQ_O_LIST))
    return list_cmp(S, mq_as_list(a), mq_as_list(b), fn, depth);
  mq_error(S, "%s(): cannot compare %s with %s (numbers with numbers, strings with strings, lists "
              "with lists)",
           fn, mq_value_type_name(a), mq_value_type_name(b));
}

/* Stable merge sort of [n] values (Python's sorted is stable), by less();
 * [tmp] has room for n. reverse keeps equal items in their order, as
 * Python's reverse=True does. */
static void merge_sort(mq_state *S, mq_value *v, mq_value *tmp, int n, bool rev) {
  for (int width = 1; width < n; width *= 2) {
    for (int lo = 0; lo < n - width; lo += 2 * width) {
      int mid = lo + width, hi = mid + width < n ? mid + width : n, i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        mq_poll(S); /* a step: numbers compare without polling */
        bool right_first = rev ? less(S, v[i], v[j], "sorted") : less(S, v[j], v[i], "sorted");
        tmp[k++] = right_first ? v[j++] : v[i++];
      }
      while (i < mid) tmp[k++] = v[i++];
      while (j < hi) tmp[k++] = v[j++];
      memcpy(v + lo, tmp + lo, (size_t)(hi - lo) * sizeof *v);
    }
    mq_poll(S);
    if (width > n / 2) break;
  }
}

static mq_value lib_sorted(mq_state *S, mq_value *args) {
  bool rev = mq_arg_bool(S, args[1], "reverse");
  mq_list *l = items_of(S, args[0], "sorted");
  for (int i = 0; i < l->len; i++) {
    mq_poll(S);
    mq_value old = l->items[i];
    l->items[i] = plain_item(S, old);
    if (l->items[i].type != MQ_OBJ) mq_release(S, old); /* the list's reference to the row */
  }
  for (int i = 1; i < l->len; i++) { /* types */
    mq_poll(S);
    (void)less(S, l->items[0], l->items[i], "sorted");
  }
  if (l->len > 1) {
    mq_value *tmp = mq_scratch(S, mq_ck_zmul(S, (size_t)l->len, sizeof *tmp, "sorted()"));
    merge_sort(S, l->items, tmp, l->len, rev);
  }
  return mq_objv(l);
}

static mq_value lib_reversed(mq_state *S, mq_value *args) {
  mq_list *l = items_of(S, args[0], "reversed");
  for (int i = 0, j = l->len - 1; i < j; i++, j--) {
    mq_value t = l->items[i];
    l->items[i] = l->items[j];
    l->items[j] = t;
  }
  return mq_objv(l);
}

/* min(a, b, *rest) of plain numbers or strings: the first smallest (or
 * largest) value itself, as Python's min and max. */
static mq_value extreme(mq_state *S, mq_value *args, const char *fn, bool max) {
  mq_value best = args[0];
  const mq_list *rest = mq_as_list(args[2]);
  for (int i = -1; i < rest->len; i++) {
    mq_value v = i < 0 ? args[1] : rest->items[i];
    if (max ? less(S, best, v, fn) : less(S, v, best, fn)) best = v;
  }
  return best;
}

static mq_value lib_min(mq_state *S, mq_value *args) { return extreme(S, args, "min", false); }
static mq_value lib_max(mq_state *S, mq_value *args) { return extreme(S, args, "max", true); }

/* --- enumerate, zip ------------------------------------------------------------------ */

static mq_value lib_enumerate(mq_state *S, mq_value *args) {
  mq_list *one = mq_list_new(S, 1);
  mq_list_push(S, one, args[0]);
  return mq_zip_new(S, one, true, mq_arg_int(S, args[1], "start"), "enumerate");
}

static mq_value lib_zip(mq_state *S, mq_value *args) {
  return mq_zip_new(S, mq_as_list(args[0]), false, 0, "zip");
}

const mq_libfn mq_lib_text[] = {
    {"split(s, sep=none, maxsplit=-1)", lib_split,
     "the pieces of string s between the separators, as Python's str.split: no sep splits at runs "
     "of whitespace and drops empty pieces; at most maxsplit splits (-1: all)", MQ_BK_ON_STRING, 0},
    {"join(sep, items)", lib_join, "the strings of items with sep between them: \",\".join(xs)",
     MQ_BK_NONE, 0},
    {"strip(s, chars=none)", lib_strip,
     "s without the leading and trailing characters in chars (none: whitespace)", MQ_BK_NONE, 0},
    {"lstrip(s, chars=none)", lib_lstrip, "s without the leading characters in chars (none: whitespace)",
     MQ_BK_NONE, 0},
    {"rstrip(s, chars=none)", lib_rstrip, "s without the trailing characters in chars (none: whitespace)",
     MQ_BK_NONE, 0},
    {"upper(s)", lib_upper, "s with the ASCII letters in upper case", MQ_BK_NONE, 0},
    {"lower(s)", lib_lower, "s with the ASCII letters in lower case", MQ_BK_NONE, 0},
    {"replace(s, old, new, count=-1)", lib_replace,
     "s with the first count occurrences of old replaced by new (-1: all)", MQ_BK_NONE, 0},
    {"startswith(s, prefix)", lib_startswith,
     "whether s begins with prefix (a string, or a list of strings: any of them)", MQ_BK_NONE, 0},
    {"endswith(s, suffix)", lib_endswith,
     "whether s ends with suffix (a string, or a list of strings: any of them)", MQ_BK_NONE, 0},
    {"find(s, sub, start=0)", lib_find, "the first index of sub in s at or after start, or -1",
     MQ_BK_NONE, 0},
    {"count(s, sub)", lib_count, "the number of non-overlapping occurrences of sub in string s",
     MQ_BK_ON_STRING, 0},
    {"rfind(s, sub)", lib_rfind, "the last index of sub in s, or -1", MQ_BK_NONE, 0},
    {"index(s, sub)", lib_index, "the first index of sub in s; an error when it is absent",
     MQ_BK_NONE, 0},
    {"splitlines(s)", lib_splitlines, "the lines of s, split at \\n, \\r\\n and \\r, without them",
     MQ_BK_NONE, 0},
    {"isdigit(s)", lib_isdigit, "whether s is not empty and all ASCII digits", MQ_BK_NONE, 0},
    {"isalpha(s)", lib_isalpha, "whether s is not empty and all ASCII letters", MQ_BK_NONE, 0},
    {"isalnum(s)", lib_isalnum, "whether s is not empty and all ASCII letters or digits",
     MQ_BK_NONE, 0},
    {"isspace(s)", lib_isspace, "whether s is not empty and all ASCII whitespace", MQ_BK_NONE, 0},
    {"capitalize(s)", lib_capitalize, "s with its first letter in upper case, the others in lower",
     MQ_BK_NONE, 0},
    {"ljust(s, width, fillchar=\" \")", lib_ljust, "s padded on the right to width bytes",
     MQ_BK_NONE, 0},
    {"rjust(s, width, fillchar=\" \")", lib_rjust, "s padded on the left to width bytes",
     MQ_BK_NONE, 0},
    {"center(s, width, fillchar=\" \")", lib_center, "s padded on both sides to width bytes",
     MQ_BK_NONE, 0},
    {"zfill(s, width)", lib_zfill, "s padded with zeros on the left (after a sign) to width bytes",
     MQ_BK_NONE, 0},
    {"partition(s, sep)", lib_partition,
     "[before, sep, after] around the first sep in s ([s, \"\", \"\"] without one)", MQ_BK_NONE, 0},
    {"sorted(items, reverse=false)", lib_sorted,
     "a new list of the items (a list, string, range, dict's keys, 1-d tensor's values, "
     "enumerate, zip) in ascending order, stable; numbers, strings or lists (compared item "
     "by item), not mixed", MQ_BK_NONE, 0},
    {"reversed(items)", lib_reversed,
     "a new list of the items `for` visits (a list's, a string's characters, a tensor's rows...) last first",
     MQ_BK_NONE, 0},
    {"min(a, b, *rest)", lib_min, "the smallest of two or more numbers or strings, as Python's min",
     MQ_BK_ON_SCALARS, 0},
    {"max(a, b, *rest)", lib_max, "the largest of two or more numbers or strings, as Python's max",
     MQ_BK_ON_SCALARS, 0},
    {"enumerate(items, start=0)", lib_enumerate,
     "the [start + i, item] pairs of the items `for` visits, made lazily as a loop reaches "
     "them: for i, v in enumerate(xs); list(...) makes them a list", MQ_BK_NONE, 0},
    {"zip(*seqs)", lib_zip,
     "the [a, b, ...] lists of the items at the same place, up to the shortest, made lazily "
     "as a loop reaches them: for a, b in zip(xs, ys); list(...) makes them a list",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
