/* value.h - the values a masq program handles.
 *
 * Numbers and booleans are unboxed. Everything else is a refcounted object
 * (tensor, string, list, function, builtin) behind an mq_obj header. Numbers
 * written in source are "weak" scalars, as Python numbers are to torch: they
 * do not widen a tensor's dtype within its category (float32 tensor * 2.5 is
 * float32; int64 tensor * 2.5 is float32).
 */
#ifndef MQ_VALUE_H
#define MQ_VALUE_H

#include "common.h"

typedef enum mq_vtype {
  MQ_NONE,  /* `none`: no value (also a new axis in an index) */
  MQ_BOOL,
  MQ_INT,   /* int64 */
  MQ_FLOAT, /* double */
  MQ_OBJ
} mq_vtype;

typedef enum mq_otype {
  MQ_O_TENSOR,
  MQ_O_STRING,
  MQ_O_LIST,
  MQ_O_FUNCTION, /* compiled code of a masq function (vm/chunk.h) */
  MQ_O_CLOSURE,  /* a callable masq function: code + captured values */
  MQ_O_BUILTIN,  /* a C function from the state's table (vm/builtin.h) */
  MQ_O_RANGE,    /* range(start, stop, step), lazy (core/range.h); holds no references */
  MQ_O_SPARSE,   /* a sparse-layout tensor (runtime/sparse/sparse.h): an mq_tensor kept apart
                    from the strided-only code that mq_is_tensor() admits */
  MQ_O_ERROR,    /* a caught error: message and location (vm/errval.h) */
  MQ_O_DICT,     /* keys to values, insertion-ordered (core/dict.h) */
  MQ_O_ENUMERATE, /* enumerate(xs), lazy (vm/walk.h) */
  MQ_O_ZIP,       /* zip(xs, ys), lazy (vm/walk.h) */
  MQ_O_TABLE      /* named columns of one length (vm/table.h) */
} mq_otype;
#define MQ_O_NKINDS (MQ_O_TABLE + 1)

typedef struct mq_obj {
  uint32_t rc;
  uint8_t type; /* mq_otype */
} mq_obj;

/* What precedes every container object (list, closure, function) in memory:
 * its links in a generation of the cycle collector (core/gc.c) and the
 * collector's count for it, or the generation it is in between collections. */
typedef struct mq_gchead {
  struct mq_gchead *prev, *next;
  int64_t refs;
} mq_gchead;

typedef struct mq_value {
  uint8_t type; /* mq_vtype */
  union {
    bool b;
    int64_t i;
    double f;
    mq_obj *o;
  } as;
} mq_value;

typedef struct mq_string {
  mq_obj hdr;
  size_t len;
  char chars[]; /* NUL-terminated */
} mq_string;

typedef struct mq_list {
  mq_obj hdr;
  int len, cap;
  mq_value *items;
} mq_list;

static inline mq_value mq_none(void) { mq_value v; v.type = MQ_NONE; v.as.i = 0; return v; }
static inline mq_value mq_bool(bool b) { mq_value v; v.type = MQ_BOOL; v.as.i = 0; v.as.b = b; return v; }
static inline mq_value mq_int(int64_t i) { mq_value v; v.type = MQ_INT; v.as.i = i; return v; }
static inline mq_value mq_float(double f) { mq_value v; v.type = MQ_FLOAT; v.as.f = f; return v; }
static inline mq_value mq_objv(void *o) { mq_value v; v.type = MQ_OBJ; v.as.o = (mq_obj *)o; return v; }

static inline bool mq_is_obj(mq_value v, mq_otype t) {
  return v.type == MQ_OBJ && v.as.o->type == t;
}
static inline bool mq_is_tensor(mq_value v) { return mq_is_obj(v, MQ_O_TENSOR); }
static inline bool mq_is_number(mq_value v) {
  return v.type == MQ_INT || v.type == MQ_FLOAT || v.type == MQ_BOOL;
}
static inline mq_tensor *mq_as_tensor(mq_value v) { return (mq_tensor *)v.as.o; }
static inline mq_string *mq_as_string(mq_value v) { return (mq_string *)v.as.o; }
static inline mq_list *mq_as_list(mq_value v) { return (mq_list *)v.as.o; }

/* What core does with an object depends on its kind, and most kinds are
 * defined above core (tensors in runtime/, functions, closures and builtins
 * in vm/). So each kind's behaviour is a row of hooks in S->kinds, set at
 * open by the layer that defines the kind (core/value.c sets strings, lists
 * and ranges), and core calls no layer above it. */
struct mq_buf;
typedef void (*mq_visit)(mq_state *S, mq_value v);
typedef struct mq_kind {
  void (*free)(mq_state *S, mq_obj *o);                    /* its count reached 0 */
  void (*format)(mq_state *S, struct mq_buf *b, mq_obj *o); /* as print shows it */
  bool (*truthy)(mq_state *S, mq_obj *o);                  /* NULL: always true */
  /* Containers only (core/gc.h): calls fn on every value [o] holds; and
   * releases them all, leaving [o] empty but valid. */
  void (*traverse)(mq_state *S, mq_obj *o, mq_visit fn);
  void (*clear)(mq_state *S, mq_obj *o);
} mq_kind;

/* Sets the kinds of S->kinds that core defines (string, list, range, dict). */
MQ_INTERNAL void mq_value_init_kinds(mq_state *S);

/* Reference counting. Retaining a non-object is a no-op. */
static inline void mq_retain(mq_value v) { if (v.type == MQ_OBJ) v.as.o->rc++; }
MQ_INTERNAL void mq_obj_free(mq_state *S, mq_obj *o);
static inline void mq_obj_release(mq_state *S, mq_obj *o) {
  MQ_ASSERT(!o || o->rc > 0); /* released more often than retained */
  if (o && --o->rc == 0) mq_obj_free(S, o);
}
static inline void mq_release(mq_state *S, mq_value v) {
  if (v.type == MQ_OBJ) mq_obj_release(S, v.as.o);
}

/* New objects are owned by the pool (core/state.h); retain to keep them. */
/* A zeroed container of [size] bytes and kind [type] (list, dict), tracked
 * by the collector, its one reference the pool's. */
MQ_INTERNAL void *mq_container_new(mq_state *S, size_t size, uint8_t type);
MQ_INTERNAL mq_string *mq_string_new(mq_state *S, const char *s, size_t len);
MQ_INTERNAL mq_list *mq_list_new(mq_state *S, int cap);
/* Releases the items and frees [l] (mq_obj_free's part for lists). */
MQ_INTERNAL void mq_list_free(mq_state *S, mq_list *l);
/* Appends [v] (retained) to [l]. */
MQ_INTERNAL void mq_list_push(mq_state *S, mq_list *l, mq_value v);

/* Strings carry their length and may hold NUL bytes: text goes by len, never
 * by strlen or "%s". */
/* Whether [s] is exactly the C string [lit] (an embedded NUL never matches). */
static inline bool mq_string_is(const mq_string *s, const char *lit) {
  size_t n = strlen(lit);
  return s->len == n && memcmp(s->chars, lit, n) == 0;
}
/* [s] as a C string for an interface that stops at NUL (a path, a name); an
 * error "[what] contains a NUL byte" if it holds one. */
MQ_INTERNAL const char *mq_string_cstr(mq_state *S, const mq_string *s, const char *what);
/* [s] as a string literal that reads back as [s] ("a\0b", quotes
 * included): appended to [b] (how a list prints its strings), or as a C
 * string in pool-owned memory (for messages). */
struct mq_buf;
MQ_INTERNAL void mq_string_quote(mq_state *S, struct mq_buf *b, const mq_string *s);
MQ_INTERNAL const char *mq_string_quoted(mq_state *S, const mq_string *s);

/* "tensor", "int", "float", "bool", "none", "string", "list", "function",
 * "range", "sparse tensor", "error", "dict". */
MQ_INTERNAL const char *mq_value_type_name(mq_value v);
/* The same with its article, for messages: "an int", "a string", "none". */
MQ_INTERNAL const char *mq_value_a_type_name(mq_value v);

/* Appends the printed form of [v] as print() shows it. */
struct mq_buf;
MQ_INTERNAL void mq_value_format(mq_state *S, struct mq_buf *b, mq_value v);
/* The same, except that a list or dict stops, unclosed, once more than
 * [max] bytes of it are printed: a summary costs what it shows, not what
 * the value holds (a list that shares its sublists may hold 2^60 items). */
MQ_INTERNAL void mq_value_format_head(mq_state *S, struct mq_buf *b, mq_value v, size_t max);

/* Truthiness for `if`/`while`/`assert`: false, none, 0 and 0.0 are false; a
 * tensor must have one element, valid, and is true when non-zero (an error
 * otherwise). */
MQ_INTERNAL bool mq_value_truthy(mq_state *S, mq_value v);

#endif
