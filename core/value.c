/* value.c - objects: freeing, strings, lists, names, printing (lists and
 * dicts), truthiness. */
#include "value.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "checked.h"
#include "dict.h"
#include "gc.h"
#include "range.h"
#include "state.h"

void mq_obj_free(mq_state *S, mq_obj *o) {
  /* A container dies through the collector, which calls its kind's free. */
  if (mq_gc_is_container(o->type)) mq_gc_free(S, o);
  else S->kinds[o->type].free(S, o);
}

void mq_list_free(mq_state *S, mq_list *l) {
  for (int i = 0; i < l->len; i++) mq_release(S, l->items[i]);
  mq_free(S, l->items, (size_t)l->cap * sizeof *l->items);
  mq_gc_dealloc(S, l, sizeof *l);
}

mq_string *mq_string_new(mq_state *S, const char *s, size_t len) {
  /* A host's length (masq_set_lstring) may be anything. */
  if (len > SIZE_MAX - sizeof(mq_string) - 1) mq_error(S, "size overflow in a string");
  mq_string *str = mq_alloc(S, sizeof(mq_string) + len + 1);
  str->hdr.rc = 1;
  str->hdr.type = MQ_O_STRING;
  str->len = len;
  if (len) memcpy(str->chars, s, len); /* s may be NULL for "" */
  str->chars[len] = '\0';
  mq_pool_own(S, &str->hdr);
  return str;
}

const char *mq_string_cstr(mq_state *S, const mq_string *s, const char *what) {
  if (memchr(s->chars, '\0', s->len)) mq_error(S, "%s contains a NUL byte", what);
  return s->chars;
}

/* Writes [s] as a string literal to [out], which has room for
 * quoted_size(s) bytes; returns the length written (no terminator). */
static size_t quote_to(char *out, const mq_string *s) {
  char *o = out;
  *o++ = '"';
  for (size_t i = 0; i < s->len; i++) {
    unsigned char c = (unsigned char)s->chars[i];
    const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\t' ? "\\t"
                    : c == '\r' ? "\\r" : c == '\0' ? "\\0" : NULL;
    if (esc) {
      memcpy(o, esc, 2);
      o += 2;
    } else if (c < 0x20 || c == 0x7f) {
      o += snprintf(o, 5, "\\x%02x", c);
    } else {
      *o++ = (char)c;
    }
  }
  *o++ = '"';
  return (size_t)(o - out);
}

/* Room for quote_to: 4 bytes per byte at most (\xHH), the quotes and a
 * terminator. */
static size_t quoted_size(mq_state *S, const mq_string *s) {
  if (s->len > (SIZE_MAX - 3) / 4) mq_error(S, "string too long to show");
  return s->len * 4 + 3;
}

const char *mq_string_quoted(mq_state *S, const mq_string *s) {
  char *out = mq_scratch(S, quoted_size(S, s));
  out[quote_to(out, s)] = '\0';
  return out;
}

void mq_string_quote(mq_state *S, mq_buf *b, const mq_string *s) {
  size_t need = quoted_size(S, s);
  if (need > SIZE_MAX - b->len) mq_error(S, "string too long to show");
  MQ_GROW(S, b->data, b->cap, b->len + need);
  b->len += quote_to(b->data + b->len, s);
  b->data[b->len] = '\0';
}

void *mq_container_new(mq_state *S, size_t size, uint8_t type) {
  mq_obj *o = mq_gc_alloc(S, size);
  o->rc = 1;
  o->type = type;
  mq_pool_own(S, o);
  return o;
}

mq_list *mq_list_new(mq_state *S, int cap) {
  mq_list *l = mq_container_new(S, sizeof *l, MQ_O_LIST);
  if (cap > 0) {
    l->items = mq_alloc(S, (size_t)cap * sizeof *l->items);
    l->cap = cap;
  }
  return l;
}

void mq_list_push(mq_state *S, mq_list *l, mq_value v) {
  if (l->len >= MQ_LIST_MAX) mq_error(S, "list is too long (more than %d items)", MQ_LIST_MAX);
  MQ_GROW(S, l->items, l->cap, l->len + 1);
  mq_retain(v);
  l->items[l->len++] = v;
}

const char *mq_value_type_name(mq_value v) {
  switch ((mq_vtype)v.type) {
  case MQ_NONE: return "none";
  case MQ_BOOL: return "bool";
  case MQ_INT: return "int";
  case MQ_FLOAT: return "float";
  case MQ_OBJ: break;
  }
  switch ((mq_otype)v.as.o->type) {
  case MQ_O_TENSOR: return "tensor";
  case MQ_O_STRING: return "string";
  case MQ_O_LIST: return "list";
  case MQ_O_FUNCTION:
  case MQ_O_CLOSURE:
  case MQ_O_BUILTIN: return "function";
  case MQ_O_RANGE: return "range";
  case MQ_O_SPARSE: return "sparse tensor";
  case MQ_O_ERROR: return "error";
  case MQ_O_DICT: return "dict";
  case MQ_O_ENUMERATE: return "enumerate";
  case MQ_O_ZIP: return "zip";
  case MQ_O_TABLE: return "table";
  }
  return "?";
}

const char *mq_value_a_type_name(mq_value v) {
  static const char *const with_article[][2] = {
      {"none", "none"},   {"int", "an int"},     {"error", "an error"},
      {"enumerate", "an enumerate"}, {"bool", "a bool"}, {"float", "a float"},
      {"tensor", "a tensor"}, {"string", "a string"}, {"list", "a list"},
      {"function", "a function"}, {"range", "a range"}, {"sparse tensor", "a sparse tensor"},
      {"dict", "a dict"}, {"zip", "a zip"}, {"table", "a table"},
  };
  const char *name = mq_value_type_name(v);
  for (size_t i = 0; i < sizeof with_article / sizeof *with_article; i++)
    if (strcmp(with_article[i][0], name) == 0) return with_article[i][1];
  return name;
}

/* Shortest text that reads back as the same double, laid out as Python's
 * repr: fixed notation for exponents -4..15, scientific otherwise. */
static void format_float(mq_state *S, mq_buf *b, double f) {
  if (isnan(f)) { mq_buf_puts(S, b, "nan"); return; }
  if (isinf(f)) { mq_buf_puts(S, b, f > 0 ? "inf" : "-inf"); return; }
  char sci[40];
  int prec = 1;
  for (; prec <= 17; prec++) {
    snprintf(sci, sizeof sci, "%.*e", prec - 1, f);
    if (strtod(sci, NULL) == f) break;
  }
  /* sci is "-d.ddde+XX": collect the digits and the exponent. */
  char digits[24];
  int nd = 0, exp10 = atoi(strchr(sci, 'e') + 1);
  for (const char *p = sci; *p && *p != 'e'; p++)
    if (*p >= '0' && *p <= '9') digits[nd++] = *p;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  if (signbit(f)) mq_buf_putc(S, b, '-');
  if (exp10 < -4 || exp10 >= 16) {
    mq_buf_putc(S, b, digits[0]);
    if (nd > 1) {
      mq_buf_putc(S, b, '.');
      mq_buf_putn(S, b, digits + 1, (size_t)(nd - 1));
    }
    mq_buf_printf(S, b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
  } else if (exp10 < 0) {
    mq_buf_puts(S, b, "0.");
    for (int i = 0; i < -exp10 - 1; i++) mq_buf_putc(S, b, '0');
    mq_buf_putn(S, b, digits, (size_t)nd);
  } else {
    for (int i = 0; i <= exp10; i++) mq_buf_putc(S, b, i < nd ? digits[i] : '0');
    mq_buf_putc(S, b, '.');
    if (nd > exp10 + 1) mq_buf_putn(S, b, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
    else mq_buf_putc(S, b, '0');
  }
}

/* A list item that is not a list. */
static void format_item(mq_state *S, mq_buf *b, mq_value item) {
  if (mq_is_obj(item, MQ_O_STRING)) {
    mq_string_quote(S, b, mq_as_string(item));
  } else {
    mq_value_format(S, b, item);
  }
}

/* Lists and dicts nest this deep in print; deeper ones print as [...] or
 * {...} (as Python's reprlib does past its maxlevel). */
#define MQ_PRINT_DEPTH 1000

typedef struct print_level {
  const mq_obj *o; /* a list or a dict */
  int next;        /* the item (entry) to print next */
  bool shown;      /* one is printed already: the next takes a ", " */
} print_level;

static bool is_seq_container(mq_value v) {
  return mq_is_obj(v, MQ_O_LIST) || mq_is_obj(v, MQ_O_DICT);
}

/* The items of a list, or the entries of a dict, holes included. */
static int container_len(const mq_obj *o) {
  return o->type == MQ_O_LIST ? ((const mq_list *)o)->len : ((const mq_dict *)o)->used;
}

/* Prints nested lists and dicts without recursion: the levels being
 * printed are an explicit stack. A container that contains itself,
 * directly or not, prints as [...] or {...} where it recurs, as in Python:
 * l = [1]; append(l, l) is [1, [...]]. A dict prints as {"a": 1, 2: [3]}.
 * Stops, unclosed, once more than [max] bytes are printed. */
static void format_container(mq_state *S, mq_buf *b, const mq_obj *root, size_t max) {
  print_level small[32], *stack = small;
  int depth = 0, cap = (int)(sizeof small / sizeof small[0]);
  size_t start = b->len;
  mq_buf_putc(S, b, root->type == MQ_O_LIST ? '[' : '{');
  stack[depth++] = (print_level){root, 0, false};
  while (depth > 0 && b->len - start <= max) {
    mq_poll(S); /* a list holding one sublist 1000 times, 1000 deep, prints for ever */
    print_level *top = &stack[depth - 1];
    bool dict = top->o->type == MQ_O_DICT;
    if (top->next >= container_len(top->o)) {
      mq_buf_putc(S, b, dict ? '}' : ']');
      depth--;
      continue;
    }
    if (dict && !mq_dentry_live(&((const mq_dict *)top->o)->entries[top->next])) {
      top->next++; /* a removed key's hole */
      continue;
    }
    if (top->shown) mq_buf_puts(S, b, ", ");
    top->shown = true;
    mq_value item;
    if (dict) {
      const mq_dentry *e = &((const mq_dict *)top->o)->entries[top->next++];
      format_item(S, b, e->key);
      mq_buf_puts(S, b, ": ");
      item = e->val;
    } else {
      item = ((const mq_list *)top->o)->items[top->next++];
    }
    if (!is_seq_container(item)) {
      format_item(S, b, item);
      continue;
    }
    const mq_obj *inner = item.as.o;
    bool recurs = depth >= MQ_PRINT_DEPTH;
    for (int i = 0; i < depth && !recurs; i++) recurs = stack[i].o == inner;
    if (recurs) {
      mq_buf_puts(S, b, inner->type == MQ_O_LIST ? "[...]" : "{...}");
      continue;
    }
    if (depth == cap) { /* the pool frees it when the operation ends */
      print_level *deep = mq_scratch(S, MQ_PRINT_DEPTH * sizeof *deep);
      memcpy(deep, stack, (size_t)depth * sizeof *deep);
      stack = deep;
      cap = MQ_PRINT_DEPTH;
    }
    mq_buf_putc(S, b, inner->type == MQ_O_LIST ? '[' : '{');
    stack[depth++] = (print_level){inner, 0, false};
  }
}

void mq_value_format_head(mq_state *S, mq_buf *b, mq_value v, size_t max) {
  if (is_seq_container(v)) format_container(S, b, v.as.o, max);
  else mq_value_format(S, b, v);
}

void mq_value_format(mq_state *S, mq_buf *b, mq_value v) {
  switch ((mq_vtype)v.type) {
  case MQ_NONE: mq_buf_puts(S, b, "none"); return;
  case MQ_BOOL: mq_buf_puts(S, b, v.as.b ? "true" : "false"); return;
  case MQ_INT: mq_buf_printf(S, b, "%lld", (long long)v.as.i); return;
  case MQ_FLOAT: format_float(S, b, v.as.f); return;
  case MQ_OBJ: break;
  }
  S->kinds[v.as.o->type].format(S, b, v.as.o);
}

bool mq_value_truthy(mq_state *S, mq_value v) {
  switch ((mq_vtype)v.type) {
  case MQ_NONE: return false;
  case MQ_BOOL: return v.as.b;
  case MQ_INT: return v.as.i != 0;
  case MQ_FLOAT: return v.as.f != 0.0;
  case MQ_OBJ: break;
  }
  const mq_kind *k = &S->kinds[v.as.o->type];
  return k->truthy ? k->truthy(S, v.as.o) : true;
}

/* --- the kinds core defines ------------------------------------------------ */

static void string_free(mq_state *S, mq_obj *o) {
  mq_free(S, o, sizeof(mq_string) + ((mq_string *)o)->len + 1);
}
static void string_format(mq_state *S, mq_buf *b, mq_obj *o) {
  mq_buf_putn(S, b, ((mq_string *)o)->chars, ((mq_string *)o)->len);
}
static bool string_truthy(mq_state *S, mq_obj *o) { return ((mq_string *)o)->len > 0; }

static void list_free(mq_state *S, mq_obj *o) { mq_list_free(S, (mq_list *)o); }
static void container_format(mq_state *S, mq_buf *b, mq_obj *o) { format_container(S, b, o, SIZE_MAX); }
static bool list_truthy(mq_state *S, mq_obj *o) { return ((mq_list *)o)->len > 0; }
static void list_traverse(mq_state *S, mq_obj *o, mq_visit fn) {
  mq_list *l = (mq_list *)o;
  for (int i = 0; i < l->len; i++) fn(S, l->items[i]);
}
static void list_clear(mq_state *S, mq_obj *o) {
  mq_list *l = (mq_list *)o;
  while (l->len > 0) mq_release(S, l->items[--l->len]);
}

static void range_free(mq_state *S, mq_obj *o) { mq_free(S, o, sizeof(mq_range)); }
static void range_format(mq_state *S, mq_buf *b, mq_obj *o) {
  mq_range_format(S, b, (mq_range *)o);
}
static bool range_truthy(mq_state *S, mq_obj *o) { return ((mq_range *)o)->len > 0; }

void mq_value_init_kinds(mq_state *S) {
  S->kinds[MQ_O_STRING] = (mq_kind){string_free, string_format, string_truthy, NULL, NULL};
  S->kinds[MQ_O_LIST] = (mq_kind){list_free, container_format, list_truthy, list_traverse, list_clear};
  S->kinds[MQ_O_RANGE] = (mq_kind){range_free, range_format, range_truthy, NULL, NULL};
  mq_dict_init_kind(S); /* prints through container_format, set just above */
}
