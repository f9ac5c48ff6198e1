/* lib_lang.c - builtins of the language itself rather than of tensors:
 * lists, strings, formatting, assertions. */
#include <stdio.h>
#include <time.h>

#include "../core/checked.h"
#include "../core/dict.h"
#include "../core/range.h"
#include "../runtime/tensor/layout.h"
#include "../runtime/tensor/shape.h"
#include "../vm/errval.h"
#include "../vm/walk.h"
#include "text/convert.h"
#include "text/format.h"
#include "../vm/table.h"
#include "stdlib.h"

static mq_value lib_len(mq_state *S, mq_value *args) {
  mq_value v = args[0];
  if (mq_is_obj(v, MQ_O_LIST)) return mq_int(mq_as_list(v)->len);
  if (mq_is_obj(v, MQ_O_STRING)) return mq_int((int64_t)mq_as_string(v)->len);
  if (mq_is_tensor(v) || mq_is_sparse(v)) {
    mq_tensor *t = mq_as_tensor_any(v);
    if (t->ndim == 0) mq_error(S, "len() of a 0-d tensor");
    return mq_int(t->shape[0]);
  }
  if (mq_is_obj(v, MQ_O_RANGE)) return mq_int(mq_as_range(v)->len);
  if (mq_is_obj(v, MQ_O_DICT)) return mq_int(mq_as_dict(v)->len);
  if (mq_is_obj(v, MQ_O_TABLE)) return mq_int(mq_as_table(v)->nrows); /* its rows, as pandas' */
  mq_error(S, "len() of %s", mq_value_a_type_name(v));
}

static mq_value lib_range(mq_state *S, mq_value *args) {
  int64_t start = 0, stop, step = mq_arg_int(S, args[2], "step");
  if (args[1].type == MQ_NONE) {
    stop = mq_arg_int(S, args[0], "stop");
  } else {
    start = mq_arg_int(S, args[0], "start");
    stop = mq_arg_int(S, args[1], "stop");
  }
  return mq_objv(mq_range_new(S, start, stop, step));
}

static mq_value lib_list(mq_state *S, mq_value *args) {
  mq_value v = args[0];
  if (mq_is_obj(v, MQ_O_RANGE)) return mq_objv(mq_range_list(S, mq_as_range(v)));
  if (mq_is_obj(v, MQ_O_LIST)) {
    mq_list *src = mq_as_list(v), *l = mq_list_new(S, src->len);
    for (int i = 0; i < src->len; i++) {
      mq_poll(S);
      mq_list_push(S, l, src->items[i]);
    }
    return mq_objv(l);
  }
  if (mq_is_tensor(v) && mq_as_tensor(v)->ndim > 0) { /* its rows, as `for` gives them */
    mq_tensor *t = mq_as_tensor(v);
    if (t->shape[0] > MQ_LIST_MAX)
      mq_error(S, "a tensor of %lld rows is more than a list holds (%d)", (long long)t->shape[0],
               MQ_LIST_MAX);
    mq_list *l = mq_list_new(S, (int)t->shape[0]);
    for (int64_t i = 0; i < t->shape[0]; i++) {
      mq_poll(S); /* a view each: 10^7 rows take seconds */
      mq_list_push(S, l, mq_objv(mq_select(S, t, 0, i)));
    }
    return mq_objv(l);
  }
  /* a string's characters, a dict's keys, enumerate, zip */
  return mq_objv(mq_walk_list(S, v, "list"));
}

static mq_value lib_append(mq_state *S, mq_value *args) {
  if (!mq_is_obj(args[0], MQ_O_LIST)) mq_error(S, "append() needs a list, not %s", mq_value_a_type_name(args[0]));
  mq_list_push(S, mq_as_list(args[0]), args[1]);
  return mq_none();
}

static mq_value lib_str(mq_state *S, mq_value *args) {
  if (mq_is_obj(args[0], MQ_O_STRING)) return args[0];
  mq_buf *b = &S->out;
  b->len = 0;
  mq_value_format(S, b, args[0]);
  return mq_objv(mq_string_new(S, b->data, b->len));
}

/* Python's int(): a string of digits, a number (a float truncated toward
 * zero), or a one-element tensor's value. */
static mq_value lib_int(mq_state *S, mq_value *args) {
  mq_value r, v = args[0];
  if (mq_is_tensor(v)) {
    mq_tensor *t = mq_as_tensor(v);
    if (t->numel != 1)
      mq_error(S, "int() of a tensor of %lld elements; long(x) converts it to int64",
               (long long)t->numel);
    v = mq_tensor_item_value(S, t);
  }
  if (mq_convert_scalar(S, v, 'i', &r)) return r;
  mq_error(S, "int() needs a string, a number or a one-element tensor, not %s", mq_value_type_name(v));
}

static mq_value lib_type(mq_state *S, mq_value *args) {
  const char *name = mq_value_type_name(args[0]);
  return mq_objv(mq_string_new(S, name, strlen(name)));
}

static mq_value lib_format(mq_state *S, mq_value *args) {
  if (!mq_is_obj(args[0], MQ_O_STRING))
    mq_error(S, "format() needs a format string first, not %s", mq_value_type_name(args[0]));
  mq_buf *b = &S->out;
  b->len = 0;
  mq_format(S, b, mq_as_string(args[0]), mq_as_list(args[1]), mq_as_list(args[2]));
  return mq_objv(mq_string_new(S, b->data, b->len));
}

static mq_value lib_assert(mq_state *S, mq_value *args) {
  if (mq_value_truthy(S, args[0])) return mq_none();
  if (mq_is_obj(args[1], MQ_O_STRING)) {
    /* The message is the string's text, its NUL bytes shown as \0 since
     * error messages are C strings. */
    const mq_string *m = mq_as_string(args[1]);
    mq_buf *b = &S->out;
    b->len = 0;
    for (const char *p = m->chars, *end = p + m->len; p < end; p++) {
      if (*p) mq_buf_putc(S, b, *p);
      else mq_buf_puts(S, b, "\\0");
    }
    mq_error(S, "assertion failed: %s", b->len ? b->data : "");
  }
  mq_error(S, "assertion failed");
}

/* The text of a message argument: a string as it is, anything else as
 * print shows it. */
static const char *message_text(mq_state *S, mq_value v) {
  if (mq_is_obj(v, MQ_O_STRING)) return mq_as_string(v)->chars;
  mq_buf *b = &S->out;
  b->len = 0;
  mq_value_format(S, b, v);
  return b->data ? b->data : "";
}

static mq_value lib_error(mq_state *S, mq_value *args) {
  mq_error(S, "%s", message_text(S, args[0]));
}

static mq_value lib_raise(mq_state *S, mq_value *args) {
  if (mq_is_errval(args[0])) mq_errval_raise(S, (const mq_errval *)args[0].as.o);
  if (mq_is_obj(args[0], MQ_O_STRING)) mq_error(S, "%s", mq_as_string(args[0])->chars);
  mq_error(S, "raise(): expected an error (from catch e) or a message string, got %s",
           mq_value_type_name(args[0]));
}

/* Python's time.perf_counter: seconds on the monotonic clock, from an
 * unspecified start; only differences mean something. */
static mq_value lib_perf_counter(mq_state *S, mq_value *args) {
  (void)S, (void)args;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return mq_float((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
}

const mq_libfn mq_lib_lang[] = {
    {"len(x)", lib_len, "the length of a list, string or dict, the first dim of a tensor, the rows of a table", MQ_BK_NONE, 0},
    {"perf_counter()", lib_perf_counter,
     "seconds on a monotonic clock (Python's time.perf_counter): t1 - t0 times a step", MQ_BK_NONE, 0},
    {"range(start, stop=none, step=1)", lib_range,
     "the ints from start to stop (exclusive) as a lazy range; range(n) is 0 .. n-1", MQ_BK_NONE, 0},
    {"list(x)", lib_list, "a new list of what `for` walks: the entries of a range or a list, the rows of a tensor, "
     "a string's characters, a dict's keys, the items of enumerate and zip", MQ_BK_NONE, 0},
    {"append(list, value)", lib_append, "add value at the end of list (changes the list)", MQ_BK_NONE, 0},
    {"int(x)", lib_int,
     "a string (\"42\", \" -7 \") or number as an int (a float truncated toward zero), "
     "or a one-element tensor's value", MQ_BK_NONE, 0},
    {"str(x)", lib_str, "x as a string, as print shows it", MQ_BK_NONE, 0},
    {"type(x)", lib_type, "the type name: \"tensor\", \"int\", \"float\", \"list\", ...", MQ_BK_NONE, 0},
    {"format(fmt, *values, **names)", lib_format,
     "fmt with its fields filled, as Python's str.format: {} the next value, {0} value 0, "
     "{name} a keyword argument; a spec as in {:>8.3f}, {:+,d}, {:^10}, {:#x}", MQ_BK_NONE, 0},
    {"assert(cond, message=none)", lib_assert, "raise an error unless cond is true", MQ_BK_NONE, 0},
    {"error(message)", lib_error,
     "raise a runtime error with this message, located at the call (try/catch can catch it)",
     MQ_BK_NONE, 0},
    {"raise(e)", lib_raise,
     "raise error e (from catch e) again, with its own message and location; a string: as error()",
     MQ_BK_NONE, 0},
    {NULL, NULL, NULL, MQ_BK_NONE, 0},
};
