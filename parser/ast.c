/* ast.c - syntax tree nodes and the tree dump. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ast.h"

/* --- nodes ---------------------------------------------------------------- */

mq_node *mq_node_new(mq_arena *A, mq_node_kind kind, mq_span span) {
  mq_node *n = mq_arena_alloc(A, sizeof *n);
  memset(n, 0, sizeof *n);
  n->kind = (uint8_t)kind;
  n->span = span;
  return n;
}

/* The capacity of kids[] is not stored: it is the smallest power of two
 * that is at least 4 and at least nkids, so it is full exactly when nkids
 * is such a power. */
void mq_node_add(mq_arena *A, mq_node *n, mq_node *kid) {
  int k = n->nkids;
  if (k == 0 || (k >= 4 && (k & (k - 1)) == 0)) {
    int cap = k == 0 ? 4 : k * 2;
    mq_node **kids = mq_arena_alloc(A, sizeof *kids * (size_t)cap);
    if (k) memcpy(kids, n->kids, sizeof *kids * (size_t)k);
    n->kids = kids;
  }
  n->kids[n->nkids++] = kid;
}

const char *mq_attr_callee(const mq_node *n) {
  if (n->kind == MQ_N_ATTR && strcmp(n->str, "requires_grad") == 0) return "requires_grad_of";
  if (n->kind == MQ_N_ATTR && strcmp(n->str, "grad") == 0) return "grad_of";
  return n->str;
}

const char *mq_node_kind_name(mq_node_kind k) {
  static const char *const names[] = {
#define X(k) #k,
      MQ_NODE_KINDS(X)
#undef X
  };
  return (unsigned)k < MQ_N__COUNT ? names[k] : "?";
}

static const char *binop_text(int op) {
  static const char *const text[] = {
#define X(n, s) s,
      MQ_BINOP_TOKENS(X)
#undef X
  };
  return (unsigned)op < MQ_TOK__COUNT ? text[op] : "?";
}

/* --- dump ----------------------------------------------------------------- */

static void put_string(mq_state *S, mq_buf *b, const char *s, int64_t len) {
  mq_buf_putc(S, b, '"');
  for (int64_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
    case '\n': mq_buf_puts(S, b, "\\n"); break;
    case '\t': mq_buf_puts(S, b, "\\t"); break;
    case '\r': mq_buf_puts(S, b, "\\r"); break;
    case '\\': mq_buf_puts(S, b, "\\\\"); break;
    case '"': mq_buf_puts(S, b, "\\\""); break;
    default:
      if (c < 0x20 || c == 0x7f) mq_buf_printf(S, b, "\\x%02x", c);
      else mq_buf_putc(S, b, (char)c);
    }
  }
  mq_buf_putc(S, b, '"');
}

/* The shortest %g form that reads back as the same double. */
static void put_double(mq_state *S, mq_buf *b, double v) {
  char tmp[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (strtod(tmp, NULL) == v || isnan(v)) break;
  }
  mq_buf_puts(S, b, tmp);
  if (isfinite(v) && !strpbrk(tmp, ".e")) mq_buf_puts(S, b, ".0");
}

/* Trees deeper than this print `...` there: the dump recurses. */
#define DUMP_MAX_DEPTH 100

/* One node per line, two spaces of indent per level:
 *
 *   (CALL
 *     (NAME f)
 *     (INT 1))
 *
 * A NULL child prints as `_`, a subtree below DUMP_MAX_DEPTH as `...`. A node without children stays on one line,
 * and the top call (depth 0) ends with a newline. */
void mq_node_dump(mq_state *S, mq_buf *b, const mq_node *n, int depth) {
  for (int i = 0; i < depth; i++) mq_buf_puts(S, b, "  ");
  if (!n) {
    mq_buf_putc(S, b, '_');
  } else if (depth > DUMP_MAX_DEPTH) {
    mq_buf_puts(S, b, "...");
  } else {
    mq_buf_printf(S, b, "(%s", mq_node_kind_name((mq_node_kind)n->kind));
    switch (n->kind) {
    case MQ_N_INT: mq_buf_printf(S, b, " %lld", (long long)n->ival); break;
    case MQ_N_FLOAT: mq_buf_putc(S, b, ' '); put_double(S, b, n->fval); break;
    case MQ_N_STRING: mq_buf_putc(S, b, ' '); put_string(S, b, n->str, n->ival); break;
    case MQ_N_UNARY:
      mq_buf_puts(S, b, n->op == '!' ? " not" : n->op == '~' ? " ~" : " -");
      break;
    case MQ_N_BINARY: mq_buf_printf(S, b, " %s", binop_text(n->op)); break;
    case MQ_N_IMPORT: mq_buf_putc(S, b, ' '); put_string(S, b, n->str, (int64_t)strlen(n->str)); break;
    default:
      if (n->str) mq_buf_printf(S, b, " %s", n->str);
    }
    for (int i = 0; i < n->nkids; i++) {
      mq_buf_putc(S, b, '\n');
      mq_node_dump(S, b, n->kids[i], depth + 1);
    }
    mq_buf_putc(S, b, ')');
  }
  if (depth == 0) mq_buf_putc(S, b, '\n');
}
