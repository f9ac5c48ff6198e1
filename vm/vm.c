/* vm.c - the dispatch loop.
 *
 * A plain switch, or computed goto where the compiler has it, chosen by the
 * three macros vmdispatch/vmcase/vmbreak (Lua's trick); the jump table is
 * generated from the same X-macro list as the opcode enum.
 *
 * Hot state (ip, sp) lives in locals. SAVE() writes it back to the frame and
 * state before anything that can raise an error, so an error can be located
 * (frame->ip) and the stack unwound (S->stack_len) from outside. */
#include "vm.h"

#include <math.h>

#include "../core/dict.h"
#include "../core/range.h"
#include "../runtime/tensor/intmath.h"
#include "../runtime/kernels/ops.h"
#include "../runtime/kernels/update.h"
#include "../runtime/tensor/shape.h"
#include "../runtime/sparse/sparse.h"
#include "../runtime/tensor/tensor.h"
#include "table.h"
#include "builtin.h"
#include "errval.h"
#include "fuse.h"
#include "globals.h"
#include "seqops.h"
#include "suggest.h"
#include "walk.h"

/* --- stack and frames ------------------------------------------------------ */

static void ensure_stack(mq_state *S, int need) {
  MQ_GROW(S, S->stack, S->stack_cap, need);
}

static void push_frame(mq_state *S, mq_closure *cl, mq_function *f, int base) {
  MQ_GROW(S, S->frames, S->frames_cap, S->nframes + 1);
  mq_vmframe *fr = &S->frames[S->nframes++];
  fr->cl = cl;
  fr->f = f;
  fr->ip = f->code;
  fr->base = base;
}

void mq_vm_unwind(mq_state *S, int stack_len, int nframes) {
  while (S->stack_len > stack_len) mq_release(S, S->stack[--S->stack_len]);
  while (S->nframes > nframes) {
    const mq_vmframe *fr = &S->frames[--S->nframes];
    if (!fr->cl) mq_obj_release(S, &fr->f->hdr); /* mq_vm_run's reference */
  }
}

bool mq_vm_error_span(mq_state *S, int level, const mq_source **src, mq_span *span) {
  if (level < 0 || level >= S->nframes) return false;
  mq_vmframe *fr = &S->frames[level];
  ptrdiff_t at = fr->ip - 1 - fr->f->code;
  if (at < 0 || at >= fr->f->code_len) return false;
  *src = fr->f->src;
  *span = fr->f->spans[at];
  return span->line > 0;
}

/* --- scalar arithmetic ------------------------------------------------------ */

static bool is_scalar(mq_value v) { return mq_is_number(v); }

static double as_double(mq_value v) {
  return v.type == MQ_FLOAT ? v.as.f : v.type == MQ_INT ? (double)v.as.i : (double)v.as.b;
}

static int64_t as_int(mq_value v) { return v.type == MQ_INT ? v.as.i : (int64_t)v.as.b; }

static const char *const token_text[] = {
#define X(n, s) s,
    MQ_BINOP_TOKENS(X)
#undef X
};

/* Python semantics on numbers: int op int stays int except `/`; bools act as
 * ints except that & | ^ of two bools is a bool. */
static mq_value scalar_binary(mq_state *S, int op, mq_value a, mq_value b) {
  bool both_bool = a.type == MQ_BOOL && b.type == MQ_BOOL;
  bool ints = a.type != MQ_FLOAT && b.type != MQ_FLOAT;
  if (ints) {
    int64_t x = as_int(a), y = as_int(b), r;
    /* Plain ints do not wrap (int64 tensors do, as in torch): a result
     * that does not fit is an error rather than a silently wrong number. */
    bool fits = true;
    switch (op) {
    case MQ_TOK_ADD: fits = !__builtin_add_overflow(x, y, &r); break;
    case MQ_TOK_SUB: fits = !__builtin_sub_overflow(x, y, &r); break;
    case MQ_TOK_MUL: fits = !__builtin_mul_overflow(x, y, &r); break;
    case MQ_TOK_DIV: return mq_float((double)x / (double)y);
    case MQ_TOK_FLOORDIV:
    case MQ_TOK_MOD:
      if (y == 0) mq_error(S, "integer division by zero");
      if (op == MQ_TOK_MOD) return mq_int(mq_imod_floor(x, y));
      fits = !(x == INT64_MIN && y == -1);
      r = mq_idiv_floor(x, y);
      break;
    case MQ_TOK_POW:
      if (y < 0) return mq_float(pow((double)x, (double)y));
      fits = mq_ipow_ok(x, y, &r);
      break;
    case MQ_TOK_LT: return mq_bool(x < y);
    case MQ_TOK_LE: return mq_bool(x <= y);
    case MQ_TOK_GT: return mq_bool(x > y);
    case MQ_TOK_GE: return mq_bool(x >= y);
    case MQ_TOK_EQ: return mq_bool(x == y);
    case MQ_TOK_NE: return mq_bool(x != y);
    case MQ_TOK_BAND: return both_bool ? mq_bool(x & y) : mq_int(x & y);
    case MQ_TOK_BOR: return both_bool ? mq_bool(x | y) : mq_int(x | y);
    case MQ_TOK_BXOR: return both_bool ? mq_bool(x ^ y) : mq_int(x ^ y);
    case MQ_TOK_SHL: /* Python's: a number, not a bit pattern (overflow is an error) */
    case MQ_TOK_SHR:
      if (y < 0) mq_error(S, "negative shift count %lld", (long long)y);
      if (op == MQ_TOK_SHR) return mq_int(y >= 64 ? (x < 0 ? -1 : 0) : x >> y);
      r = y >= 64 ? (x ? 1 : 0) : (int64_t)((uint64_t)x << y);
      fits = x == 0 || (y < 64 && r >> y == x);
      break;
    default: goto unsupported;
    }
    if (!fits && op == MQ_TOK_SHL)
      mq_error(S, "integer overflow in %lld << %lld: the result does not fit in 64 bits",
               (long long)x, (long long)y);
    if (!fits) { /* a negative left operand in parentheses: -2 ** 64 is -(2 ** 64) */
      const char *lparen = x < 0 ? "(" : "", *rparen = x < 0 ? ")" : "";
      mq_error(S, "integer overflow in %s%lld%s %s %lld; use %s%lld.0%s %s %lld for a float",
               lparen, (long long)x, rparen, token_text[op], (long long)y, lparen, (long long)x,
               rparen, token_text[op], (long long)y);
    }
    return mq_int(r);
  } else {
    double x = as_double(a), y = as_double(b);
    switch (op) {
    case MQ_TOK_ADD: return mq_float(x + y);
    case MQ_TOK_SUB: return mq_float(x - y);
    case MQ_TOK_MUL: return mq_float(x * y);
    case MQ_TOK_DIV: return mq_float(x / y);
    case MQ_TOK_FLOORDIV: return mq_float(floor(x / y));
    case MQ_TOK_MOD: {
      double r = fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return mq_float(r);
    }
    case MQ_TOK_POW: return mq_float(pow(x, y));
    case MQ_TOK_LT: return mq_bool(x < y);
    case MQ_TOK_LE: return mq_bool(x <= y);
    case MQ_TOK_GT: return mq_bool(x > y);
    case MQ_TOK_GE: return mq_bool(x >= y);
    case MQ_TOK_EQ: return mq_bool(x == y);
    case MQ_TOK_NE: return mq_bool(x != y);
    default: break;
    }
  }
unsupported:
  mq_error(S, "unsupported operand types for this operator: %s and %s", mq_value_type_name(a),
           mq_value_type_name(b));
}

static const int8_t token_to_binop[MQ_TOK__COUNT] = {
    [MQ_TOK_ADD] = MQ_BIN_ADD, [MQ_TOK_SUB] = MQ_BIN_SUB,   [MQ_TOK_MUL] = MQ_BIN_MUL,
    [MQ_TOK_DIV] = MQ_BIN_DIV, [MQ_TOK_POW] = MQ_BIN_POW,   [MQ_TOK_LT] = MQ_BIN_LT,
    [MQ_TOK_LE] = MQ_BIN_LE,   [MQ_TOK_GT] = MQ_BIN_GT,     [MQ_TOK_GE] = MQ_BIN_GE,
    [MQ_TOK_EQ] = MQ_BIN_EQ,   [MQ_TOK_NE] = MQ_BIN_NE,     [MQ_TOK_BAND] = MQ_BIN_BAND,
    [MQ_TOK_BOR] = MQ_BIN_BOR, [MQ_TOK_BXOR] = MQ_BIN_BXOR,
    [MQ_TOK_SHL] = MQ_BIN_SHL, [MQ_TOK_SHR] = MQ_BIN_SHR,
    [MQ_TOK_FLOORDIV] = MQ_BIN_FLOORDIV, [MQ_TOK_MOD] = MQ_BIN_REM, [MQ_TOK_MATMUL] = -1,
    [MQ_TOK_IN] = -1,
};


/* A tensor of any layout: a sparse operand takes the tensor path, where
 * mq_tensor_from_value refuses it, rather than comparing by identity. */
static bool tensor_like(mq_value v) { return mq_is_tensor(v) || mq_is_obj(v, MQ_O_SPARSE); }

/* An operator with a sparse operand (runtime/sparse/sparse.h): the ops on stored
 * values, or SpMM for @. */
static mq_value sparse_binary(mq_state *S, int op, mq_value a, mq_value b, mq_tensor *spare) {
  mq_tensor *x = mq_is_sparse(a) ? mq_as_tensor_any(a) : mq_tensor_from_value(S, a, "left operand");
  mq_tensor *y = mq_is_sparse(b) ? mq_as_tensor_any(b) : mq_tensor_from_value(S, b, "right operand");
  if (op == MQ_TOK_MATMUL) return mq_objv(mq_sparse_matmul(S, x, y));
  int bop = token_to_binop[op];
  if (bop < 0) mq_error(S, "operator '%s' is not supported on tensors yet", token_text[op]);
  return mq_objv(mq_sparse_binary_spare(S, (mq_binop)bop, x, y, token_text[op], spare));
}

/* [spare]: a dying left operand (dying_operand), or NULL. */
static mq_value binary(mq_state *S, int op, mq_value a, mq_value b, mq_tensor *spare) {
  if (op == MQ_TOK_IN) return mq_bool(mq_contains(S, b, a));
  if (is_scalar(a) && is_scalar(b)) return scalar_binary(S, op, a, b);
  bool tensors = (tensor_like(a) || is_scalar(a) || mq_is_obj(a, MQ_O_LIST)) &&
                 (tensor_like(b) || is_scalar(b) || mq_is_obj(b, MQ_O_LIST)) &&
                 (tensor_like(a) || tensor_like(b));
  if (tensors && (mq_is_sparse(a) || mq_is_sparse(b))) return sparse_binary(S, op, a, b, spare);
  if (tensors) {
    if (op == MQ_TOK_MATMUL)
      return mq_objv(mq_matmul(S, mq_tensor_from_value_stored(S, a, "left operand"),
                               mq_tensor_from_value_stored(S, b, "right operand")));
    int bop = token_to_binop[op];
    if (bop < 0) mq_error(S, "operator '%s' is not supported on tensors", token_text[op]);
    /* as stored: mq_binary promotes storage dtypes as torch does */
    return mq_objv(mq_binary_spare(S, (mq_binop)bop, mq_tensor_from_value_stored(S, a, "left operand"),
                                   mq_tensor_from_value_stored(S, b, "right operand"), spare));
  }
  if (op == MQ_TOK_EQ) return mq_bool(mq_values_equal(S, a, b));
  if (op == MQ_TOK_NE) return mq_bool(!mq_values_equal(S, a, b));
  if (op == MQ_TOK_ADD && mq_is_obj(a, MQ_O_STRING) && mq_is_obj(b, MQ_O_STRING)) {
    mq_string *x = mq_as_string(a), *y = mq_as_string(b);
    char *tmp = mq_scratch(S, x->len + y->len);
    memcpy(tmp, x->chars, x->len);
    memcpy(tmp + x->len, y->chars, y->len);
    return mq_objv(mq_string_new(S, tmp, x->len + y->len));
  }
  if (op == MQ_TOK_MUL && mq_is_obj(a, MQ_O_STRING) && (b.type == MQ_INT || b.type == MQ_BOOL))
    return mq_string_repeat(S, mq_as_string(a), b.type == MQ_INT ? b.as.i : b.as.b);
  if (op == MQ_TOK_MUL && mq_is_obj(b, MQ_O_STRING) && (a.type == MQ_INT || a.type == MQ_BOOL))
    return mq_string_repeat(S, mq_as_string(b), a.type == MQ_INT ? a.as.i : a.as.b);
  mq_error(S, "unsupported operand types for '%s': %s and %s", token_text[op], mq_value_type_name(a),
           mq_value_type_name(b));
}

static mq_value negate(mq_state *S, mq_value v) {
  switch ((mq_vtype)v.type) {
  case MQ_INT:
    if (v.as.i == INT64_MIN) mq_error(S, "integer overflow in -(%lld)", (long long)v.as.i);
    return mq_int(-v.as.i);
  case MQ_FLOAT: return mq_float(-v.as.f);
  case MQ_BOOL: return mq_int(-(int64_t)v.as.b);
  default: break;
  }
  if (mq_is_tensor(v)) return mq_objv(mq_unary(S, MQ_UN_NEG, mq_as_tensor(v)));
  if (mq_is_sparse(v)) return mq_objv(mq_sparse_unary(S, MQ_UN_NEG, mq_as_tensor_any(v), "-"));
  mq_error(S, "cannot negate %s", mq_value_a_type_name(v));
}

static mq_value bitnot(mq_state *S, mq_value v) {
  if (v.type == MQ_BOOL) return mq_bool(!v.as.b);
  if (v.type == MQ_INT) return mq_int(~v.as.i);
  if (mq_is_tensor(v)) return mq_objv(mq_unary(S, MQ_UN_BITNOT, mq_as_tensor(v)));
  if (mq_is_sparse(v)) return mq_objv(mq_sparse_unary(S, MQ_UN_BITNOT, mq_as_tensor_any(v), "~"));
  mq_error(S, "'~' needs a bool or int value or tensor, not %s", mq_value_a_type_name(v));
}

/* --- indexing ----------------------------------------------------------------- */

/* l[a:b:c] or s[a:b:c]: the bounds the slice item has, in order. */
static mq_value slice_value(mq_state *S, mq_value obj, uint8_t kind, const mq_value *vals) {
  bool has[3];
  mq_value bound[3] = {mq_none(), mq_none(), mq_none()};
  for (int p = 0, v = 0; p < 3; p++)
    if ((has[p] = (kind >> p) & 1)) bound[p] = vals[v++];
  return mq_slice_seq(S, obj, has, bound);
}

static void index_items(mq_state *S, const uint8_t *kinds, int nitems, mq_value *vals,
                        mq_index_item *items);

/* How many values an index's items pushed: one per plain item, one per
 * bound a slice has. */
static int item_values(const uint8_t *kinds, int nitems) {
  int n = 0;
  for (int i = 0; i < nitems; i++)
    if (kinds[i] == MQ_IXB_VALUE) n++;
    else if (kinds[i] & MQ_IXB_SLICE)
      n += (kinds[i] & 1) + ((kinds[i] >> 1) & 1) + ((kinds[i] >> 2) & 1);
  return n;
}

static mq_value table_index(mq_state *S, const mq_table *t, const uint8_t *kinds, int nitems,
                            mq_value *vals);
static mq_value index_value(mq_state *S, mq_value obj, const uint8_t *kinds, int nitems,
                            mq_value *vals) {
  bool seq = mq_is_obj(obj, MQ_O_LIST) || mq_is_obj(obj, MQ_O_STRING);
  if (seq && nitems == 1 && (kinds[0] & MQ_IXB_SLICE)) return slice_value(S, obj, kinds[0], vals);
  if (seq) {
    const char *what = mq_is_obj(obj, MQ_O_LIST) ? "list" : "string";
    int64_t len = mq_is_obj(obj, MQ_O_LIST) ? mq_as_list(obj)->len : (int64_t)mq_as_string(obj)->len;
    if (nitems != 1 || kinds[0] != MQ_IXB_VALUE || vals[0].type != MQ_INT)
      mq_error(S, "a %s is indexed by one int or a slice", what);
    int64_t i = vals[0].as.i;
    if (i < 0) i += len;
    if (i < 0 || i >= len)
      mq_error(S, "index %lld is out of range for a %s of length %lld", (long long)vals[0].as.i,
               what, (long long)len);
    if (mq_is_obj(obj, MQ_O_LIST)) return mq_as_list(obj)->items[i];
    return mq_objv(mq_string_new(S, mq_as_string(obj)->chars + i, 1));
  }
  if (mq_is_obj(obj, MQ_O_RANGE)) {
    const mq_range *r = mq_as_range(obj);
    if (nitems != 1 || kinds[0] != MQ_IXB_VALUE || vals[0].type != MQ_INT)
      mq_error(S, "a range is indexed by one int");
    int64_t i = vals[0].as.i;
    if (i < 0 && i >= -r->len) i += r->len;
    if (i < 0 || i >= r->len)
      mq_error(S, "index %lld is out of range for a range of length %lld",
               (long long)vals[0].as.i, (long long)r->len);
    return mq_int(mq_range_at(r, i));
  }
  if (mq_is_obj(obj, MQ_O_DICT)) {
    if (nitems != 1 || kinds[0] != MQ_IXB_VALUE) mq_error(S, "a dict is indexed by one key");
    return mq_dict_get(S, mq_as_dict(obj), vals[0]);
  }
  if (mq_is_obj(obj, MQ_O_TABLE)) return table_index(S, mq_as_table(obj), kinds, nitems, vals);
  if (!mq_is_tensor(obj) && !mq_is_sparse(obj))
    mq_error(S, "%s cannot be indexed", mq_value_a_type_name(obj));
  mq_index_item items[256];
  index_items(S, kinds, nitems, vals, items);
  if (mq_is_sparse(obj)) return mq_objv(mq_sparse_index(S, mq_as_tensor_any(obj), items, nitems));
  return mq_objv(mq_index(S, mq_as_tensor(obj), items, nitems));
}

/* t[...] on a table: one key (vm/table.h), or one slice of rows. */
static mq_value table_index(mq_state *S, const mq_table *t, const uint8_t *kinds, int nitems,
                            mq_value *vals) {
  if (nitems == 1 && kinds[0] == MQ_IXB_VALUE) return mq_table_index(S, t, vals[0]);
  if (nitems != 1 || !(kinds[0] & MQ_IXB_SLICE))
    mq_error(S, "a table is indexed by one thing: a column name, a list of names, rows (a "
                "slice, a bool mask, positions); t[rows][name] picks both");
  mq_index_item it;
  index_items(S, kinds, nitems, vals, &it);
  int64_t start, step, len;
  mq_index_slice(S, &it, t->nrows, &start, &step, &len);
  return mq_objv(mq_table_slice(S, t, start, step, len));
}

/* The items of x[...] on a tensor, from INDEX's kinds and values. */
static void index_items(mq_state *S, const uint8_t *kinds, int nitems, mq_value *vals,
                        mq_index_item *items) {
  int v = 0;
  for (int i = 0; i < nitems; i++) {
    mq_index_item *it = &items[i];
    memset(it, 0, sizeof *it);
    if (kinds[i] == MQ_IXB_ELLIPSIS) {
      it->kind = MQ_IX_ELLIPSIS;
    } else if (kinds[i] == MQ_IXB_VALUE) {
      mq_value x = vals[v++];
      if (x.type == MQ_NONE) {
        it->kind = MQ_IX_NEWAXIS;
      } else if (x.type == MQ_BOOL || mq_is_obj(x, MQ_O_LIST) ||
                 (mq_is_tensor(x) && (mq_as_tensor(x)->ndim > 0 || mq_as_tensor(x)->mask ||
                                      mq_as_tensor(x)->dtype != MQ_DT_I64))) {
        /* advanced indexing; only a plain 0-d int tensor acts as an int */
        if (mq_is_tensor(x) && mq_as_tensor(x)->dtype == MQ_DT_U8) /* torch: a mask, masq: positions */
          mq_error(S, "an index of dtype uint8 is ambiguous: torch takes it as a mask "
                      "(deprecated), masq would take positions; write bool(index) or long(index)");
        it->kind = MQ_IX_TENSOR;
        it->tensor = mq_tensor_from_value(S, x, "index");
      } else {
        it->kind = MQ_IX_INT;
        it->start = mq_arg_int(S, x, "index");
      }
    } else {
      it->kind = MQ_IX_SLICE;
      bool *has[3] = {&it->has_start, &it->has_stop, &it->has_step};
      int64_t *dst[3] = {&it->start, &it->stop, &it->step};
      for (int p = 0; p < 3; p++) {
        if (!(kinds[i] & (1 << p))) continue;
        mq_value x = vals[v++];
        if (x.type == MQ_NONE) continue;
        *has[p] = true;
        *dst[p] = mq_arg_int(S, x, "slice bound");
      }
    }
  }
}

/* xs[i] op= v and d[k] op= v ([aug]), [v] the computed xs[i] op v: a
 * tensor element [old] takes it as torch's in-place op would (x op= v). */
static mq_value element_update(mq_state *S, mq_value old, mq_value v, bool aug) {
  if (!aug || !mq_is_tensor(old) || !mq_is_tensor(v)) return v;
  return mq_objv(mq_update_fit(S, mq_as_tensor(old), mq_as_tensor(v), MQ_UPD_OP, NULL));
}

/* obj[items] = v (STORE_INDEX): a list's or dict's item changed in place,
 * the list or dict itself the result; a tensor's new value (mq_index_put),
 * which only a variable or an element stored after can take ([stored]).
 * [spare]: obj when it is dying (dying_operand). */
static mq_value store_value(mq_state *S, mq_value obj, const uint8_t *kinds, int nitems,
                            mq_value *vals, mq_value v, int how, mq_tensor *spare) {
  bool stored = how & MQ_STORE_STORED, aug = how & MQ_STORE_AUG;
  bool one = nitems == 1 && kinds[0] == MQ_IXB_VALUE;
  if (mq_is_obj(obj, MQ_O_DICT)) {
    if (!one) mq_error(S, "only one key can be assigned to, as in d[key] = v");
    mq_dict *d = mq_as_dict(obj);
    if (aug) {
      int e = mq_dict_find(S, d, vals[0]);
      if (e >= 0) v = element_update(S, d->entries[e].val, v, aug);
    }
    mq_dict_set(S, d, vals[0], v);
    return obj;
  }
  if (mq_is_obj(obj, MQ_O_TABLE)) {
    if (!one || !mq_is_obj(vals[0], MQ_O_STRING))
      mq_error(S, "a table's columns are assigned by name, as in t[\"name\"] = column");
    mq_table *t = mq_as_table(obj);
    if (aug) v = element_update(S, mq_table_column(S, t, mq_table_find(S, t, vals[0], "t[name]")), v, aug);
    mq_table_set(S, t, mq_as_string(vals[0]), v, MQ_CSV_NUM, "t[name] = column");
    return obj;
  }
  if (mq_is_obj(obj, MQ_O_LIST)) {
    if (!one) mq_error(S, "only one index of a list can be assigned to, as in xs[i] = v");
    mq_list *l = mq_as_list(obj);
    int64_t i = mq_arg_int(S, vals[0], "index"), at = i < 0 ? i + l->len : i;
    if (at < 0 || at >= l->len)
      mq_error(S, "index %lld is out of range for a list of length %d", (long long)i, l->len);
    v = element_update(S, l->items[at], v, aug);
    mq_retain(v);
    mq_release(S, l->items[at]);
    l->items[at] = v;
    return obj;
  }
  if (!mq_is_tensor(obj))
    mq_error(S, "%s does not support item assignment", mq_value_a_type_name(obj));
  if (!stored)
    mq_error(S, "tensors are values: x[i] = v updates a variable (or a list's or dict's "
                "element) holding x, and this x is neither; write y = x, then y[i] = v");
  mq_index_item items[256];
  index_items(S, kinds, nitems, vals, items);
  mq_tensor *x = mq_as_tensor(obj);
  return mq_objv(mq_index_put(S, x, items, nitems, mq_tensor_from_value_stored(S, v, "value"),
                              how & MQ_STORE_AUG ? MQ_UPD_AUG : 0, spare));
}

/* A nested list whose leaves are all numbers (or bools), looked at from
 * [depth] lists deep. A list nested deeper than a tensor has dims cannot
 * be one and stays a list, like one holding strings (so this looks no
 * deeper, and a list holding itself ends here too). */
static bool numeric_nest_at(mq_state *S, mq_value v, int depth) {
  if (is_scalar(v)) return true;
  if (!mq_is_obj(v, MQ_O_LIST) || depth >= MQ_MAX_DIMS) return false;
  mq_list *l = mq_as_list(v);
  if (l->len == 0) return false;
  for (int i = 0; i < l->len; i++) {
    mq_value item = l->items[i];
    /* the list the item before was: its answer is known (a list appended
     * 1000 times at each of four levels is 10^12 leaves, 4000 lists) */
    mq_value before = i > 0 ? l->items[i - 1] : mq_none();
    if (item.type == MQ_OBJ && before.type == MQ_OBJ && item.as.o == before.as.o) continue;
    mq_poll(S); /* sublists shared in turns still make 1000^depth leaves */
    if (!numeric_nest_at(S, item, depth + 1)) return false;
  }
  return true;
}

static bool numeric_nest(mq_state *S, mq_value v) { return numeric_nest_at(S, v, 0); }

static void echo_value(mq_state *S, mq_value v, int echo) {
  if (v.type == MQ_NONE) return;
  if (!(echo & MQ_ECHO_PRINT)) {
    mq_global_set(S, mq_global_slot(S, "_"), v);
    return;
  }
  S->out.len = 0;
  mq_value_format(S, &S->out, v);
  mq_buf_putc(S, &S->out, '\n');
  mq_write(S, S->out.data, S->out.len);
  mq_global_set(S, mq_global_slot(S, "_"), v);
}

/* --- calls ------------------------------------------------------------------------ */

/* Matches [argc] arguments at [args] (the last [nkw] named by [names]) to
 * [cl]'s parameters and rewrites them in place as exactly nparams values;
 * the stack must have room for them. Checks everything before moving. */
static void bind_args(mq_state *S, const mq_closure *cl, mq_value *args, int argc, int nkw,
                      const mq_list *names) {
  const mq_function *fn = cl->fn;
  int np = fn->nparams, npos = argc - nkw, first_default = np - fn->ndefaults;
  mq_value bound[256];
  bool given[256] = {0};
  if (npos > np)
    mq_error(S, "%s() takes %d argument%s but %d were given", fn->name, np, np == 1 ? "" : "s",
             npos);
  for (int i = 0; i < npos; i++) {
    bound[i] = args[i];
    given[i] = true;
  }
  for (int k = 0; k < nkw; k++) {
    const char *kw = mq_as_string(names->items[k])->chars;
    int j = 0;
    while (j < np && strcmp(fn->param_names[j], kw) != 0) j++;
    if (j == np)
      mq_unknown_keyword(S, fn->name, kw, (const char *const *)fn->param_names, np);
    if (given[j]) mq_error(S, "%s() got two values for '%s'", fn->name, kw);
    bound[j] = args[npos + k];
    given[j] = true;
  }
  for (int j = 0; j < np; j++) {
    if (given[j]) continue;
    if (j < first_default) mq_error(S, "%s() missing argument '%s'", fn->name, fn->param_names[j]);
    bound[j] = cl->vals[fn->nupvals + (j - first_default)];
    mq_retain(bound[j]);
  }
  memcpy(args, bound, (size_t)np * sizeof *args);
}

static int64_t sequence_length(mq_state *S, mq_value v) {
  int64_t n = mq_walk_length(S, v);
  if (n < 0) mq_error(S, "cannot unpack %s", mq_value_a_type_name(v));
  return n;
}

/* --- reuse of dying operands -------------------------------------------------------- */

/* "Functional but in place" (Koka's FBIP, Swift's and Lean's unique
 * buffers): in `x = x + g` or `x = x.add(g, alpha=a)`, the old x is dead
 * once the result is stored, so the op may write the result into x's
 * storage instead of a fresh one (O(nnz) instead of O(numel) when g is
 * sparse). Tensors stay values: that is only allowed when nothing but x's
 * variable and this operand's stack entry holds x.
 *
 * The design: no move, no compiler help. The compiler already emits
 * GET x; <the rest>; BINARY or CALL; SET x for such a statement. At the op
 * the VM looks at the instruction after it, which runs right after the op
 * (nothing comes between: no poll, see the CALL case): if it is SET_LOCAL
 * or SET_GLOBAL of a variable that holds the very object of the operand,
 * and the object's count is 2 (that variable and this stack entry: no
 * other variable, list, closure, view's base, graph, handle or pool holds
 * it), the operand is dying. The variable is never cleared, so an op that
 * fails leaves x holding its old value untouched: the runtime decides to
 * write in place only after every check that can fail (mq_reusable, which
 * also wants the storage to be the only view of masq-owned memory), and
 * runs the in-place kernel with interrupts deferred
 * (S->defer_interrupts). Reading x elsewhere in the expression is fine:
 * a read still on the stack at the op counts, a finished one is done.
 *
 * A global inside an eval's transaction (vm/globals.h) must already be in
 * the undo log: the first store of an eval moves the slot's old value into
 * the log for a rollback to put back, so that old value must stay as it
 * is; later stores of the eval log nothing and their old value is dead. */
static mq_tensor *dying_operand(mq_state *S, const uint8_t *next, const mq_value *slots,
                                mq_value v) {
  if (!mq_is_tensor(v) || v.as.o->rc != 2) return NULL;
  const mq_value *holder = NULL;
  if (next[0] == MQ_OP_SET_LOCAL) {
    holder = &slots[next[1]];
  } else if (next[0] == MQ_OP_SET_GLOBAL) {
    const mq_global *g = &S->globals[next[1] | (next[2] << 8)];
    if (!g->defined || (S->undo_base && g->logged < S->undo_base)) return NULL;
    holder = &g->value;
  }
  if (!holder || holder->type != MQ_OBJ || holder->as.o != v.as.o) return NULL;
  return mq_as_tensor(v);
}

/* --- in-place spellings ----------------------------------------------------------- */

/* x.f_(args) (CALL_UPDATE): f(x, args), called as CALL would, fitted to x
 * (runtime/kernels/update.h); x.copy_(src) (MQ_UPD_SRC) calls nothing.
 * [at] is the callee, the arguments after it; x is at[1]. A builtin
 * that takes [dying] x's storage sets *spare. */
static mq_value update_call(mq_state *S, mq_value *at, int argc, int nkw, const mq_list *kwnames,
                            int flags, mq_tensor **spare, mq_tensor *dying) {
  mq_value callee = at[0], x = at[1], r;
  const char *name = "copy";
  if (!(flags & MQ_UPD_SRC)) {
    if (!mq_is_obj(callee, MQ_O_BUILTIN))
      mq_error(S, "x.f_(...) updates x with the builtin f, and this f is a %s; write x = f(x, ...)",
               mq_value_type_name(callee));
    name = flags & MQ_UPD_FILL   ? "fill" /* as the user spelled it, not the callee */
           : flags & MQ_UPD_ZERO ? "zero"
                                 : S->builtins[((mq_builtin_obj *)callee.as.o)->index].name;
  }
  if (!mq_is_tensor(x))
    mq_error(S, "%s_: x.%s_(...) updates a tensor variable, and x is %s", name, name,
             mq_value_a_type_name(x));
  if (flags & MQ_UPD_SRC) {
    if (argc != 2 || nkw) mq_error(S, "copy_: x.copy_(src) takes one argument, the tensor to copy");
    r = at[2];
  } else {
    if ((flags & MQ_UPD_FILL) && argc == 2 && mq_is_tensor(at[2]) && mq_as_tensor(at[2])->ndim != 0)
      mq_error(S, "fill_: the value must be a number or a 0-d tensor, not a %d-d one (torch's rule)",
               mq_as_tensor(at[2])->ndim);
    const mq_builtin *b = &S->builtins[((mq_builtin_obj *)callee.as.o)->index];
    *spare = dying;
    r = mq_builtin_call(S, b, at + 1, argc, nkw, kwnames, dying);
  }
  if (!mq_is_tensor(r) && !(flags & MQ_UPD_SRC))
    mq_error(S, "%s_: %s(x, ...) gives %s, not a tensor x can take", name, name,
             mq_value_a_type_name(r));
  mq_tensor *t = mq_update_fit(S, mq_as_tensor(x), mq_tensor_from_value_stored(S, r, "src"), flags,
                               name);
  return mq_objv(t);
}

/* x op= v (UPDATE_BINARY): x op v, and when x is a tensor, torch's
 * x.__iadd__ and kin, the in-place op: the result fitted to x as x.add_(v)
 * fits it. Other values (numbers, strings, lists, sparse tensors) take
 * x op v as it comes. [dying]: x when nothing else holds it. */
static mq_value update_binary(mq_state *S, int op, mq_value x, mq_value v, mq_tensor *dying) {
  mq_value r = binary(S, op, x, v, dying);
  if (!mq_is_tensor(x)) return r;
  if (!mq_is_tensor(r))
    mq_error(S, "x %s= v: x %s v gives %s, not a tensor x can take", token_text[op], token_text[op],
             mq_value_a_type_name(r));
  return mq_objv(mq_update_fit(S, mq_as_tensor(x), mq_as_tensor(r), MQ_UPD_OP, token_text[op]));
}

/* --- the loop -------------------------------------------------------------------- */

#if defined(__GNUC__) && !defined(MQ_NO_COMPUTED_GOTO)
#define vmdispatch(o) goto *jump_table[o];
#define vmcase(l) L_##l:
#define vmbreak vmdispatch(*ip++)
#else
#define vmdispatch(o) switch (o)
#define vmcase(l) case MQ_OP_##l:
#define vmbreak break
#endif

#define READ_U8() (*ip++)
#define READ_U16() (ip += 2, (unsigned)(ip[-2] | (ip[-1] << 8)))
/* The compiler counted each frame's slots (nslots: locals and the deepest
 * temporaries), and the stack was grown to hold them: a push past them is
 * a miscounted instruction effect (opcodes.h). */
#define PUSH(v) (MQ_ASSERT(sp - slots < fr->f->nslots + 1), *sp++ = (v))
#define POP() (MQ_ASSERT(sp > slots), *--sp)
#define TOP() (sp[-1])
#define SAVE() (fr->ip = ip, S->stack_len = (int)(sp - S->stack))
/* Caches the innermost frame's state in locals (after calls and returns,
 * and whenever the frame or value stacks may have moved). */
#define LOAD_FRAME()                                                           \
  (fr = &S->frames[S->nframes - 1], ip = fr->ip, slots = S->stack + fr->base, \
   consts = fr->f->consts)
/* Replaces the top [n] values with [v] (retained), releasing them after. */
#define REPLACE_TOP(n, v)                                                      \
  do {                                                                         \
    mq_value r_ = (v);                                                         \
    mq_retain(r_);                                                             \
    for (int k_ = 1; k_ <= (n); k_++) mq_release(S, sp[-k_]);                 \
    sp -= (n);                                                                 \
    PUSH(r_);                                                                  \
    S->stack_len = (int)(sp - S->stack);                                       \
    mq_pool_drain(S, mark);                                                    \
  } while (0)

/* Ends the innermost handler; a no_grad block's puts back the autograd
 * flag it saved. */
static void pop_handler(mq_state *S) {
  MQ_ASSERT(S->nhandlers > 0);
  const mq_handler *h = &S->handlers[--S->nhandlers];
  if (h->grad_block) S->no_grad = h->no_grad;
}

/* Every run of the VM starts with a frame of top-level code, the only kind
 * without a closure. */
static int nested_runs(const mq_state *S) {
  int n = 0;
  for (int i = 0; i < S->nframes; i++) n += S->frames[i].cl == NULL;
  return n;
}

/* One run of the loop: where it began, and its result. */
typedef struct run_ctx {
  mq_function *f;
  int echo; /* MQ_ECHO_* bits */
  int entry;   /* frames below belong to the code that started the run */
  int hbase;   /* try blocks below belong to outer runs */
  size_t mark; /* the pool's mark when the run began */
  mq_value result;
} run_ctx;

/* Runs from the innermost frame's saved place until the run's first frame
 * returns (c->result) or an error is thrown. */
static void run_loop(mq_state *S, run_ctx *c) {
  mq_function *f = c->f;
  const int echo = c->echo;
  const int entry = c->entry;
  const size_t mark = c->mark;
  mq_vmframe *fr;
  const uint8_t *ip;
  mq_value *slots, *consts, *sp = S->stack + S->stack_len;
  int argc = 0, nkw = 0;
  const mq_list *kwnames = NULL;
  LOAD_FRAME();

#if defined(__GNUC__) && !defined(MQ_NO_COMPUTED_GOTO)
  static const void *const jump_table[MQ_OP__COUNT] = {
#define OP(name, nbytes, effect, doc) &&L_##name,
      MQ_OPCODES(OP)
#undef OP
  };
#endif

  for (;;) {
    uint8_t op = *ip++;
    vmdispatch(op) {
      vmcase(CONST) {
        mq_value v = consts[READ_U16()];
        mq_retain(v);
        PUSH(v);
        vmbreak;
      }
      vmcase(NONE) { PUSH(mq_none()); vmbreak; }
      vmcase(TRUE) { PUSH(mq_bool(true)); vmbreak; }
      vmcase(FALSE) { PUSH(mq_bool(false)); vmbreak; }
      vmcase(POP) {
        mq_value v = POP();
        mq_release(S, v);
        vmbreak;
      }
      vmcase(GET_GLOBAL) {
        mq_global *g = &S->globals[READ_U16()];
        if (MQ_UNLIKELY(!g->defined)) {
          SAVE();
          const char *habit = mq_habit_hint(g->name);
          if (habit) mq_error(S, "undefined variable '%s'; %s", g->name, habit);
          const char *like = mq_suggest_name(S, fr->cl ? fr->f : NULL, g->name);
          if (like) mq_error(S, "undefined variable '%s'; did you mean '%s'?", g->name, like);
          mq_error(S, "undefined variable '%s'", g->name);
        }
        mq_retain(g->value);
        PUSH(g->value);
        vmbreak;
      }
      vmcase(GET_METHOD) {
        mq_global *g = &S->globals[READ_U16()];
        bool call = READ_U8();
        if (MQ_UNLIKELY(!g->defined)) {
          SAVE();
          mq_no_method(S, fr->cl ? fr->f : NULL, g->name, TOP(), call);
        }
        if (MQ_UNLIKELY(call && g->builtin && !mq_is_obj(g->value, MQ_O_BUILTIN) &&
                        !mq_is_obj(g->value, MQ_O_CLOSURE) && mq_global_is_user(g))) {
          SAVE(); /* x.sum() after sum = 2: the variable hides the builtin */
          mq_error(S,
                   "x.%s(...) calls %s(x, ...), and '%s' is now a variable holding %s that "
                   "hides the builtin (del %s gives it back)",
                   g->name, g->name, g->name, mq_value_a_type_name(g->value), g->name);
        }
        mq_retain(g->value);
        PUSH(g->value);
        vmbreak;
      }
      vmcase(DEL_INDEX) {
        SAVE();
        mq_del_item(S, sp[-2], sp[-1]);
        mq_release(S, POP());
        mq_release(S, POP());
        vmbreak;
      }
      vmcase(DEL_GLOBAL) {
        unsigned slot = READ_U16();
        SAVE();
        mq_global_del(S, (int)slot);
        vmbreak;
      }
      vmcase(SET_GLOBAL) {
        unsigned slot = READ_U16();
        /* Still on the stack while the store may fail (growing the undo
         * log), so that an error's unwinding releases it. */
        SAVE();
        mq_global_set(S, (int)slot, TOP());
        mq_release(S, POP());
        vmbreak;
      }
      vmcase(GET_LOCAL) {
        mq_value v = slots[READ_U8()];
        mq_retain(v);
        PUSH(v);
        vmbreak;
      }
      vmcase(SET_LOCAL) {
        mq_value *slot = &slots[READ_U8()];
        mq_value old = *slot;
        *slot = POP();
        mq_release(S, old);
        vmbreak;
      }
      vmcase(GET_UPVAL) {
        mq_value v = fr->cl->vals[READ_U8()];
        mq_retain(v);
        PUSH(v);
        vmbreak;
      }
      vmcase(SELF) {
        mq_value v = mq_objv(fr->cl);
        mq_retain(v);
        PUSH(v);
        vmbreak;
      }
      vmcase(CLOSURE) {
        mq_function *fn = (mq_function *)consts[READ_U16()].as.o;
        SAVE();
        mq_closure *cl = mq_closure_new(S, fn);
        /* Defaults move from the stack into the closure. */
        sp -= fn->ndefaults;
        memcpy(cl->vals + fn->nupvals, sp, (size_t)fn->ndefaults * sizeof *sp);
        for (int i = 0; i < fn->nupvals; i++) {
          uint8_t kind = READ_U8(), index = READ_U8();
          mq_value v = kind == MQ_CAP_LOCAL   ? slots[index]
                       : kind == MQ_CAP_UPVAL ? fr->cl->vals[index]
                                              : mq_objv(fr->cl);
          mq_retain(v);
          cl->vals[i] = v;
        }
        REPLACE_TOP(0, mq_objv(cl));
        vmbreak;
      }
      vmcase(NEG) {
        SAVE();
        REPLACE_TOP(1, negate(S, TOP()));
        vmbreak;
      }
      vmcase(BITNOT) {
        SAVE();
        REPLACE_TOP(1, bitnot(S, TOP()));
        vmbreak;
      }
      vmcase(NOT) {
        SAVE();
        REPLACE_TOP(1, mq_bool(!mq_value_truthy(S, TOP())));
        vmbreak;
      }
      vmcase(BINARY) {
        int bop = READ_U8();
        SAVE();
        REPLACE_TOP(2, binary(S, bop, sp[-2], sp[-1], dying_operand(S, ip, slots, sp[-2])));
        vmbreak;
      }
      vmcase(UPDATE_BINARY) {
        int bop = READ_U8();
        SAVE();
        REPLACE_TOP(2, update_binary(S, bop, sp[-2], sp[-1], dying_operand(S, ip, slots, sp[-2])));
        vmbreak;
      }
      vmcase(FUSED) {
        unsigned k = READ_U16(), dist = READ_U16();
        const mq_string *prog = mq_as_string(consts[k]);
        const uint8_t *code = (const uint8_t *)prog->chars;
        mq_value leaves[MQ_FUSE_MAX_LEAVES];
        int nleaves = prog->len ? code[0] & MQ_FUSE_LEAF_COUNT : MQ_FUSE_MAX_LEAVES + 1;
        bool ok = nleaves <= MQ_FUSE_MAX_LEAVES && prog->len >= 1 + 3 * (size_t)nleaves;
        for (int i = 0; ok && i < nleaves; i++) {
          const uint8_t *e = code + 1 + 3 * i;
          unsigned idx = (unsigned)e[1] | ((unsigned)e[2] << 8);
          switch (e[0]) {
          case MQ_FL_LOCAL: leaves[i] = slots[idx]; break;
          case MQ_FL_UPVAL: leaves[i] = fr->cl->vals[idx]; break;
          case MQ_FL_CONST: leaves[i] = consts[idx]; break;
          case MQ_FL_GLOBAL:
            ok = (int)idx < S->nglobals && S->globals[idx].defined;
            if (ok) leaves[i] = S->globals[idx].value;
            break;
          default: ok = false; break;
          }
        }
        if (ok && (code[0] & MQ_FUSE_CHECK)) { /* the ops so far cannot fail: on */
          SAVE();
          if (mq_fuse_check(S, code, prog->len, leaves)) ip += dist;
        } else if (ok) {
          SAVE();
          mq_tensor *t = mq_fuse_run(S, code, prog->len, leaves);
          if (t) {
            REPLACE_TOP(0, mq_objv(t));
            ip += dist;
          }
        }
        vmbreak;
      }
      vmcase(LIST) {
        unsigned n = READ_U16();
        SAVE();
        mq_list *l = mq_list_new(S, (int)n);
        for (unsigned i = 0; i < n; i++) mq_list_push(S, l, sp[(int)i - (int)n]);
        REPLACE_TOP((int)n, mq_objv(l));
        vmbreak;
      }
      vmcase(TENSORIZE) {
        SAVE(); /* numeric_nest polls */
        if (numeric_nest(S, TOP())) {
          REPLACE_TOP(1, mq_objv(mq_tensor_from_value(S, TOP(), "list")));
        }
        vmbreak;
      }
      vmcase(INDEX) {
        int nitems = READ_U8();
        const uint8_t *kinds = ip;
        ip += nitems;
        int nvals = item_values(kinds, nitems);
        SAVE();
        mq_value r = index_value(S, sp[-nvals - 1], kinds, nitems, sp - nvals);
        REPLACE_TOP(nvals + 1, r);
        vmbreak;
      }
      vmcase(STORE_INDEX) {
        int how = READ_U8();
        int nitems = READ_U8();
        const uint8_t *kinds = ip;
        ip += nitems;
        int nvals = item_values(kinds, nitems);
        SAVE();
        mq_value obj = sp[-nvals - 2];
        mq_tensor *spare = how & MQ_STORE_STORED ? dying_operand(S, ip, slots, obj) : NULL;
        mq_value r = store_value(S, obj, kinds, nitems, sp - nvals - 1, sp[-1], how, spare);
        REPLACE_TOP(nvals + 2, r);
        vmbreak;
      }
      vmcase(UNPACK) {
        int n = READ_U8();
        SAVE();
        mq_value v = TOP();
        int64_t len = sequence_length(S, v);
        if (len != n)
          mq_error(S, "cannot unpack %lld values into %d names", (long long)len, n);
        /* Items go on the stack last first, so the first one is on top. */
        for (int i = n - 1; i >= 0; i--) {
          bool done;
          mq_value item = mq_walk_item(S, v, i, &done);
          mq_retain(item);
          PUSH(item);
          S->stack_len++;
        }
        memmove(sp - n - 1, sp - n, (size_t)n * sizeof *sp); /* drop the sequence */
        sp--;
        S->stack_len = (int)(sp - S->stack);
        mq_release(S, v);
        mq_pool_drain(S, mark);
        vmbreak;
      }
      vmcase(FOR_ITER) {
        unsigned d = READ_U16();
        SAVE();
        if (MQ_UNLIKELY(mq_is_obj(sp[-2], MQ_O_DICT))) {
          /* the keys it has now: adding keys in the loop visits none of them */
          mq_value keys = mq_objv(mq_dict_list(S, mq_as_dict(sp[-2]), MQ_DICT_KEYS));
          mq_retain(keys);
          mq_release(S, sp[-2]);
          sp[-2] = keys;
        }
        bool done;
        mq_value item = mq_walk_item(S, sp[-2], sp[-1].as.i, &done);
        if (done) {
          ip += d;
        } else {
          sp[-1].as.i++;
          REPLACE_TOP(0, item);
        }
        vmbreak;
      }
      vmcase(FOR_RANGE) {
        unsigned d = READ_U16();
        if (MQ_UNLIKELY(sp[-3].type != MQ_INT || sp[-2].type != MQ_INT || sp[-1].type != MQ_INT ||
                        sp[-1].as.i == 0)) {
          SAVE();
          if (sp[-1].type == MQ_INT && sp[-1].as.i == 0) mq_error(S, "range() step must not be 0");
          mq_error(S, "range() takes ints, not %s, %s and %s", mq_value_type_name(sp[-3]),
                   mq_value_type_name(sp[-2]), mq_value_type_name(sp[-1]));
        }
        int64_t cur = sp[-3].as.i, stop = sp[-2].as.i, step = sp[-1].as.i;
        if (step > 0 ? cur >= stop : cur <= stop) {
          ip += d;
        } else {
          /* past the end of int64 is past stop: a wrapped cur would loop on */
          if (__builtin_add_overflow(cur, step, &sp[-3].as.i)) sp[-3].as.i = stop;
          PUSH(mq_int(cur));
        }
        vmbreak;
      }
      vmcase(CALL) {
        argc = READ_U8();
        nkw = 0;
        kwnames = NULL;
        goto call_value;
      }
      vmcase(CALL_KW) {
        argc = READ_U8();
        kwnames = mq_as_list(consts[READ_U16()]);
        nkw = kwnames->len;
      call_value:
        SAVE();
        /* recursion without a loop never reaches a LOOP: poll here too */
        mq_poll(S);
        {
          mq_value callee = sp[-argc - 1];
          if (mq_is_obj(callee, MQ_O_BUILTIN)) {
            const mq_builtin *b = &S->builtins[((mq_builtin_obj *)callee.as.o)->index];
            int top = (int)(sp - S->stack);
            mq_tensor *spare = argc > 0 ? dying_operand(S, ip, slots, sp[-argc]) : NULL;
            mq_value r = mq_builtin_call(S, b, sp - argc, argc, nkw, kwnames, spare);
            /* A host function may have run masq code (masq_call), which can
             * move the stack and the frames: find our place again. */
            LOAD_FRAME();
            sp = S->stack + top;
            REPLACE_TOP(argc + 1, r);
            /* not between a reusing op and its store: the next poll takes it */
            if (S->interrupted && !spare) mq_check_interrupt(S);
            vmbreak;
          }
          if (!mq_is_obj(callee, MQ_O_CLOSURE))
            mq_error(S, "cannot call a value of type %s", mq_value_type_name(callee));
          mq_closure *cl = (mq_closure *)callee.as.o;
          mq_function *fn = cl->fn;
          if (S->nframes - entry >= MQ_MAX_CALL_DEPTH)
            mq_error(S, "stack overflow: more than %d nested calls", MQ_MAX_CALL_DEPTH);
          int callee_base = (int)(sp - S->stack) - argc;
          ensure_stack(S, callee_base + fn->nslots + 1);
          sp = S->stack + callee_base + argc;
          bind_args(S, cl, S->stack + callee_base, argc, nkw, kwnames);
          sp = S->stack + callee_base + fn->nparams;
          /* the callee's locals (fr is still the caller's: no PUSH) */
          for (int i = fn->nparams; i < fn->nlocals; i++) *sp++ = mq_none();
          S->stack_len = (int)(sp - S->stack);
          push_frame(S, cl, fn, callee_base);
          LOAD_FRAME();
          if (S->interrupted) mq_check_interrupt(S);
        }
        vmbreak;
      }
      vmcase(ECHO) {
        SAVE();
        mq_value v = TOP();
        if (echo) echo_value(S, v, echo);
        sp--;
        S->stack_len--;
        mq_release(S, v);
        mq_pool_drain(S, mark);
        vmbreak;
      }
      vmcase(JUMP) {
        unsigned d = READ_U16();
        ip += d;
        vmbreak;
      }
      vmcase(JUMP_IF_FALSE) {
        unsigned d = READ_U16();
        SAVE();
        mq_value v = TOP();
        bool t = mq_value_truthy(S, v);
        sp--;
        mq_release(S, v);
        if (!t) ip += d;
        vmbreak;
      }
      vmcase(JUMP_IF_FALSE_KEEP) {
        unsigned d = READ_U16();
        SAVE();
        if (!mq_value_truthy(S, TOP())) ip += d;
        else mq_release(S, POP());
        vmbreak;
      }
      vmcase(JUMP_IF_TRUE_KEEP) {
        unsigned d = READ_U16();
        SAVE();
        if (mq_value_truthy(S, TOP())) ip += d;
        else mq_release(S, POP());
        vmbreak;
      }
      vmcase(LOOP) {
        unsigned d = READ_U16();
        /* The flag every time; the host's hook every 1024 iterations.
         * Before jumping, so that an interrupt is located at the loop. */
        if (mq_poll_due(S)) {
          SAVE();
          mq_check_interrupt(S);
        }
        ip -= d;
        vmbreak;
      }
      vmcase(IMPORT) {
        const mq_string *path = mq_as_string(consts[READ_U16()]);
        SAVE();
        int saved = S->stack_len;
        S->hooks.import(S, mq_string_cstr(S, path, "the import path"), fr->f->src);
        LOAD_FRAME();
        sp = S->stack + saved;
        vmbreak;
      }
      vmcase(RETURN) {
        mq_value r = POP();
        mq_value *frame_base = S->stack + fr->base;
        while (sp > frame_base) mq_release(S, *--sp);
        /* a return from inside try blocks ends them */
        while (S->nhandlers > c->hbase && S->handlers[S->nhandlers - 1].nframes >= S->nframes)
          pop_handler(S);
        S->nframes--;
        if (S->nframes == entry) {
          S->stack_len = (int)(sp - S->stack);
          mq_obj_release(S, &f->hdr);
          c->result = r;
          return;
        }
        mq_release(S, *--sp); /* the callee */
        PUSH(r);
        S->stack_len = (int)(sp - S->stack);
        LOAD_FRAME();
        mq_pool_drain(S, mark);
        vmbreak;
      }
      vmcase(TRY) {
        unsigned d = READ_U16();
        SAVE();
        MQ_GROW(S, S->handlers, S->handlers_cap, S->nhandlers + 1);
        S->handlers[S->nhandlers++] = (mq_handler){S->nframes, S->stack_len,
                                                   (int)(ip + d - fr->f->code), S->no_grad, false};
        vmbreak;
      }
      vmcase(NO_GRAD) {
        SAVE();
        MQ_GROW(S, S->handlers, S->handlers_cap, S->nhandlers + 1);
        S->handlers[S->nhandlers++] = (mq_handler){S->nframes, S->stack_len, -1, S->no_grad, true};
        S->no_grad = true;
        vmbreak;
      }
      vmcase(END_TRY) {
        pop_handler(S);
        vmbreak;
      }
      vmcase(DICT) {
        int n = (int)READ_U16();
        SAVE();
        mq_dict *d = mq_dict_new(S, n);
        for (int i = 0; i < n; i++) mq_dict_set(S, d, sp[2 * (i - n)], sp[2 * (i - n) + 1]);
        REPLACE_TOP(2 * n, mq_objv(d));
        vmbreak;
      }
      vmcase(APPEND) {
        int below = READ_U8();
        SAVE();
        mq_list_push(S, mq_as_list(sp[-2 - below]), TOP());
        mq_release(S, POP());
        S->stack_len--;
        vmbreak;
      }
      vmcase(DICT_SET) {
        int below = READ_U8();
        SAVE();
        mq_dict_set(S, mq_as_dict(sp[-3 - below]), sp[-2], sp[-1]);
        mq_release(S, POP());
        mq_release(S, POP());
        S->stack_len -= 2;
        vmbreak;
      }
      vmcase(FIELD) {
        unsigned k = READ_U16(), d = READ_U16();
        if (mq_is_errval(TOP())) {
          SAVE();
          mq_value v;
          mq_errval_field(S, (const mq_errval *)TOP().as.o, mq_as_string(consts[k])->chars, &v);
          REPLACE_TOP(1, v);
          ip += d;
        }
        vmbreak;
      }
      vmcase(DUPN) {
        int n = READ_U8();
        for (int i = 0; i < n; i++) {
          mq_value v = sp[-n];
          mq_retain(v);
          PUSH(v);
        }
        vmbreak;
      }
      vmcase(CALL_UPDATE) {
        argc = READ_U8();
        unsigned k = READ_U16();
        int flags = READ_U8();
        kwnames = k == 0xffff ? NULL : mq_as_list(consts[k]);
        nkw = kwnames ? kwnames->len : 0;
        SAVE();
        mq_poll(S);
        int top = (int)(sp - S->stack);
        mq_tensor *spare = NULL;
        mq_value r = update_call(S, sp - argc - 1, argc, nkw, kwnames, flags, &spare,
                                 dying_operand(S, ip, slots, sp[-argc]));
        LOAD_FRAME();
        sp = S->stack + top;
        REPLACE_TOP(argc + 1, r);
        /* not between a reusing op and its store: the next poll takes it */
        if (S->interrupted && !spare) mq_check_interrupt(S);
        vmbreak;
      }
      vmcase(DUP2) {
        mq_value a = sp[-2], b = sp[-1];
        mq_retain(a);
        mq_retain(b);
        PUSH(a);
        PUSH(b);
        vmbreak;
      }
      vmcase(SWAP) {
        mq_value t = sp[-1];
        sp[-1] = sp[-2];
        sp[-2] = t;
        vmbreak;
      }
    }
  }
}

/* The error just thrown, if a try block of this run catches it: the value
 * `catch e` binds, made before the unwinding may free the source it is
 * located in, then the stack, frames and pool as they were at the try. */
static bool catch_error(mq_state *S, run_ctx *c, masq_status st) {
  /* the no_grad blocks the error leaves, caught or not */
  while (S->nhandlers > c->hbase && S->handlers[S->nhandlers - 1].grad_block) pop_handler(S);
  if (st != MASQ_ERR_RUNTIME || S->nhandlers <= c->hbase) return false;
  const mq_source *src = NULL;
  mq_span span = {0, 0, 0};
  if (S->err_has_span) {
    span = S->err_span;
    src = S->err_src ? S->err_src : S->frames[S->nframes - 1].f->src;
  } else if (!mq_vm_error_span(S, S->nframes - 1, &src, &span)) {
    src = NULL;
    span = (mq_span){0, 0, 0};
  }
  const char *msg = S->err_message.data ? S->err_message.data : "error";
  mq_errval *e = mq_errval_new(S, msg, strlen(msg), src, span);
  mq_handler h = S->handlers[--S->nhandlers];
  e->hdr.rc++;
  mq_vm_unwind(S, h.stack_len, h.nframes);
  mq_pool_drain(S, c->mark);
  MQ_ASSERT(S->stack_len < S->stack_cap);
  S->stack[S->stack_len++] = mq_objv(e); /* the compiler counted this slot */
  S->frames[h.nframes - 1].ip = S->frames[h.nframes - 1].f->code + h.catch_pc;
  S->no_grad = h.no_grad;
  S->err_has_span = S->pending_span = false;
  S->err_src = NULL;
  return true;
}

mq_value mq_vm_run(mq_state *S, mq_function *f, int echo) {
  if (nested_runs(S) >= MQ_MAX_NESTED_RUNS)
    mq_error(S, "stack overflow: more than %d nested imports or host calls into masq",
             MQ_MAX_NESTED_RUNS);
  int base = S->stack_len;
  run_ctx c = {f, echo, S->nframes, S->nhandlers, 0, mq_none()};
  ensure_stack(S, base + f->nslots + 1);
  push_frame(S, NULL, f, base);
  /* The frame holds the code it runs until it returns or is unwound: an
   * error drains the pool, which may own [f] (an imported module), before
   * the error is located in f's code. */
  f->hdr.rc++;
  c.mark = mq_pool_mark(S);
  /* A bare boundary, not mq_protect: an error that no try of this run
   * catches goes on out with the pool and frames as they are, so the
   * eval can locate it. */
  mq_jmp guard;
  guard.prev = S->errjmp;
  guard.status = MASQ_OK;
  S->errjmp = &guard;
  for (;;) {
    if (setjmp(guard.buf) == 0) {
      run_loop(S, &c);
      break;
    }
    S->errjmp = &guard;
    masq_status st = guard.status;
    guard.status = MASQ_OK;
    if (!catch_error(S, &c, st)) {
      S->errjmp = guard.prev;
      while (S->nhandlers > c.hbase) pop_handler(S);
      mq_rethrow(S, st);
    }
  }
  S->errjmp = guard.prev;
  return c.result;
}
