/* test_parser.c - the lexer and parser against expected trees and messages.
 *
 * Trees are compared in the compact form of mq_node_dump (its line breaks
 * and indentation folded into single spaces). Errors are compared as
 * "line:col-end_col: message" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/diag.h"
#include "../../lexer/keywords.h"
#include "../../parser/ast.h"

static int passed, failed;
static mq_state *S;

#define FAIL(...)                                                              \
  do {                                                                         \
    failed++;                                                                  \
    fprintf(stderr, "%s:%d: ", __FILE__, line);                                \
    fprintf(stderr, __VA_ARGS__);                                              \
    fputc('\n', stderr);                                                       \
  } while (0)

typedef struct result {
  mq_parse_status status;
  char tree[8192];   /* compact dump of the program */
  char spans[8192];  /* the same tree as KIND@line:col-end */
  char errors[2048]; /* one "line:col-end: message" per line */
} result;

static void on_error(void *ud, mq_span span, const char *message) {
  result *r = ud;
  size_t n = strlen(r->errors);
  snprintf(r->errors + n, sizeof r->errors - n, "%s%d:%d-%d: %s", n ? "\n" : "", span.line,
           span.col, span.end_col, message);
}

static void compact(char *out, size_t size, const char *dump) {
  size_t n = 0;
  for (const char *c = dump; *c && n + 1 < size; c++) {
    if (*c == '\n') {
      while (c[1] == ' ') c++;
      if (c[1] == '\0') break;
      out[n++] = ' ';
    } else {
      out[n++] = *c;
    }
  }
  out[n] = '\0';
}

static void span_dump(char *out, size_t size, const mq_node *n) {
  size_t len = strlen(out);
  if (!n) {
    snprintf(out + len, size - len, "_");
    return;
  }
  snprintf(out + len, size - len, "(%s@%d:%d-%d", mq_node_kind_name((mq_node_kind)n->kind),
           n->span.line, n->span.col, n->span.end_col);
  for (int i = 0; i < n->nkids; i++) {
    len = strlen(out);
    snprintf(out + len, size - len, " ");
    span_dump(out, size, n->kids[i]);
  }
  len = strlen(out);
  snprintf(out + len, size - len, ")");
}

static void run_n(result *r, const char *text, size_t len, bool partial) {
  memset(r, 0, sizeof *r);
  mq_source src = {.name = "<test>", .text = (char *)text, .len = len};
  mq_arena A;
  mq_arena_init(&A, S);
  mq_node *prog = (mq_node *)1;
  r->status = mq_parse(&A, &src, partial, on_error, r, &prog);
  if (r->status == MQ_PARSE_OK && prog) {
    mq_buf b = {0};
    mq_node_dump(S, &b, prog, 0);
    compact(r->tree, sizeof r->tree, b.data);
    mq_buf_free(S, &b);
    span_dump(r->spans, sizeof r->spans, prog);
  } else if (prog) {
    strcpy(r->tree, "<out not NULL>");
  }
  mq_arena_free(&A);
}

static void run(result *r, const char *text, bool partial) {
  run_n(r, text, strlen(text), partial);
}

static const char *status_name(mq_parse_status st) {
  return st == MQ_PARSE_OK ? "OK" : st == MQ_PARSE_ERROR ? "ERROR" : "INCOMPLETE";
}

/* The program's statements, compact, separated by spaces. */
static void check_stmts_at(int line, const char *text, const char *want) {
  result r;
  run(&r, text, false);
  char expect[8192];
  snprintf(expect, sizeof expect, "(BLOCK%s%s)", *want ? " " : "", want);
  if (r.status != MQ_PARSE_OK) FAIL("parse of %s: %s\n%s", text, status_name(r.status), r.errors);
  else if (strcmp(r.tree, expect) != 0) FAIL("parse of %s\n  got  %s\n  want %s", text, r.tree, expect);
  else passed++;
}
#define STMTS(text, want) check_stmts_at(__LINE__, text, want)
#define EXPR(text, want) check_stmts_at(__LINE__, text, "(EXPR_STMT " want ")")

static void check_spans_at(int line, const char *text, const char *want) {
  result r;
  run(&r, text, false);
  if (r.status != MQ_PARSE_OK) FAIL("parse of %s: %s\n%s", text, status_name(r.status), r.errors);
  else if (strcmp(r.spans, want) != 0) FAIL("spans of %s\n  got  %s\n  want %s", text, r.spans, want);
  else passed++;
}
#define SPANS(text, want) check_spans_at(__LINE__, text, want)

static void check_errors_at(int line, const char *text, bool partial, mq_parse_status st,
                            const char *want) {
  result r;
  run(&r, text, partial);
  if (r.status != st) FAIL("status of %s: got %s, want %s\n%s", text, status_name(r.status), status_name(st), r.errors);
  else if (strcmp(r.errors, want) != 0) FAIL("errors of %s\n  got  %s\n  want %s", text, r.errors, want);
  else if (st != MQ_PARSE_OK && r.tree[0]) FAIL("%s: *out set on failure", text);
  else passed++;
}
#define ERRORS(text, want) check_errors_at(__LINE__, text, false, MQ_PARSE_ERROR, want)
#define INCOMPLETE(text) check_errors_at(__LINE__, text, true, MQ_PARSE_INCOMPLETE, "")
#define PARTIAL_ERROR(text, want) check_errors_at(__LINE__, text, true, MQ_PARSE_ERROR, want)
#define PARTIAL_OK(text) check_errors_at(__LINE__, text, true, MQ_PARSE_OK, "")

static void literals(void) {
  EXPR("1", "(INT 1)");
  EXPR("2.5", "(FLOAT 2.5)");
  EXPR("1e-3", "(FLOAT 0.001)");
  EXPR(".5", "(FLOAT 0.5)");
  EXPR("3.", "(FLOAT 3.0)");
  EXPR("1E3", "(FLOAT 1e+03)");
  EXPR("0.1", "(FLOAT 0.1)");
  EXPR("9223372036854775807", "(INT 9223372036854775807)");
  EXPR("true", "(TRUE)");
  EXPR("false", "(FALSE)");
  EXPR("none", "(NONE)");
  EXPR("\"abc\"", "(STRING \"abc\")");
  EXPR("'a\\n\\t\\\\\\\"\\'\\x41'", "(STRING \"a\\n\\t\\\\\\\"'A\")");
  EXPR("\"a\\0b\"", "(STRING \"a\\x00b\")");
  EXPR("''", "(STRING \"\")");
  EXPR("\"caf\xc3\xa9\"", "(STRING \"caf\xc3\xa9\")");
  EXPR("foo_1", "(NAME foo_1)");
  EXPR("_", "(NAME _)");
  EXPR("iffy", "(NAME iffy)");
  EXPR("[]", "(LIST)");
  EXPR("[1, 2]", "(LIST (INT 1) (INT 2))");
  EXPR("[[1, 2], [3, 4]]", "(LIST (LIST (INT 1) (INT 2)) (LIST (INT 3) (INT 4)))");
}

static void operators(void) {
  EXPR("1 + 2 * 3", "(BINARY + (INT 1) (BINARY * (INT 2) (INT 3)))");
  EXPR("(1 + 2) * 3", "(BINARY * (BINARY + (INT 1) (INT 2)) (INT 3))");
  EXPR("a - b - c", "(BINARY - (BINARY - (NAME a) (NAME b)) (NAME c))");
  EXPR("a / b // c % d @ e",
       "(BINARY @ (BINARY % (BINARY // (BINARY / (NAME a) (NAME b)) (NAME c)) (NAME d)) (NAME e))");
  EXPR("2 ** 3 ** 2", "(BINARY ** (INT 2) (BINARY ** (INT 3) (INT 2)))");
  EXPR("-2 ** 2", "(UNARY - (BINARY ** (INT 2) (INT 2)))");
  EXPR("2 ** -1", "(BINARY ** (INT 2) (UNARY - (INT 1)))");
  EXPR("-x * y", "(BINARY * (UNARY - (NAME x)) (NAME y))");
  EXPR("~m & k", "(BINARY & (UNARY ~ (NAME m)) (NAME k))");
  EXPR("+x", "(NAME x)");
  EXPR("- -x", "(UNARY - (UNARY - (NAME x)))");
  EXPR("a | b ^ c & d", "(BINARY | (NAME a) (BINARY ^ (NAME b) (BINARY & (NAME c) (NAME d))))");
  EXPR("a & b == c", "(BINARY == (BINARY & (NAME a) (NAME b)) (NAME c))");
  EXPR("a + 1 < b", "(BINARY < (BINARY + (NAME a) (INT 1)) (NAME b))");
  EXPR("a <= b", "(BINARY <= (NAME a) (NAME b))");
  EXPR("a > b", "(BINARY > (NAME a) (NAME b))");
  EXPR("a >= b", "(BINARY >= (NAME a) (NAME b))");
  EXPR("a != b", "(BINARY != (NAME a) (NAME b))");
  EXPR("not a == b", "(UNARY not (BINARY == (NAME a) (NAME b)))");
  EXPR("not a and b", "(AND (UNARY not (NAME a)) (NAME b))");
  EXPR("a or b and c", "(OR (NAME a) (AND (NAME b) (NAME c)))");
  EXPR("a and b or c", "(OR (AND (NAME a) (NAME b)) (NAME c))");
  EXPR("x @ w + b", "(BINARY + (BINARY @ (NAME x) (NAME w)) (NAME b))");
}

static void postfix(void) {
  EXPR("softmax(masked(x, m), 0)",
       "(CALL (NAME softmax) (CALL (NAME masked) (NAME x) (NAME m)) (INT 0))");
  EXPR("f()", "(CALL (NAME f))");
  EXPR("f(a, b, dim=1, keep=true)",
       "(CALL (NAME f) (NAME a) (NAME b) (KWARG dim (INT 1)) (KWARG keep (TRUE)))");
  EXPR("f(a == b)", "(CALL (NAME f) (BINARY == (NAME a) (NAME b)))");
  EXPR("f(x)(y)", "(CALL (CALL (NAME f) (NAME x)) (NAME y))");
  EXPR("x.sum(0)", "(METHOD sum (NAME x) (INT 0))");
  EXPR("x.T", "(ATTR T (NAME x))");
  EXPR("x.shape[0]", "(INDEX (ATTR shape (NAME x)) (INT 0))");
  EXPR("x.a.b(1).c", "(ATTR c (METHOD b (ATTR a (NAME x)) (INT 1)))");
  EXPR("(x.f)(1)", "(CALL (ATTR f (NAME x)) (INT 1))");
  EXPR("-x.f()", "(UNARY - (METHOD f (NAME x)))");
  EXPR("x[i]", "(INDEX (NAME x) (NAME i))");
  EXPR("x[i, j]", "(INDEX (NAME x) (NAME i) (NAME j))");
  EXPR("x[-1]", "(INDEX (NAME x) (UNARY - (INT 1)))");
  EXPR("x[a:b]", "(INDEX (NAME x) (SLICE (NAME a) (NAME b) _))");
  EXPR("x[a:b:s]", "(INDEX (NAME x) (SLICE (NAME a) (NAME b) (NAME s)))");
  EXPR("x[:]", "(INDEX (NAME x) (SLICE _ _ _))");
  EXPR("x[::2]", "(INDEX (NAME x) (SLICE _ _ (INT 2)))");
  EXPR("x[a:]", "(INDEX (NAME x) (SLICE (NAME a) _ _))");
  EXPR("x[:b]", "(INDEX (NAME x) (SLICE _ (NAME b) _))");
  EXPR("x[1::]", "(INDEX (NAME x) (SLICE (INT 1) _ _))");
  EXPR("x[..., 0]", "(INDEX (NAME x) (ELLIPSIS) (INT 0))");
  EXPR("x[:, none]", "(INDEX (NAME x) (SLICE _ _ _) (NONE))");
  EXPR("x[i][j]", "(INDEX (INDEX (NAME x) (NAME i)) (NAME j))");
  EXPR("[1, 2][0]", "(INDEX (LIST (INT 1) (INT 2)) (INT 0))");
  EXPR("'ab'.upper()", "(METHOD upper (STRING \"ab\"))");
  EXPR("fn(x) = x * 2", "(FN (PARAMS (PARAM x _)) (BINARY * (NAME x) (INT 2)))");
  EXPR("map(fn(x) = x + 1, xs)",
       "(CALL (NAME map) (FN (PARAMS (PARAM x _)) (BINARY + (NAME x) (INT 1))) (NAME xs))");
  EXPR("f(fn(a, b) {\n  c = a + b\n  return c\n}, 1)",
       "(CALL (NAME f) (FN (PARAMS (PARAM a _) (PARAM b _)) (BLOCK (ASSIGN (NAME c) "
       "(BINARY + (NAME a) (NAME b))) (RETURN (NAME c)))) (INT 1))");
}

static void statements(void) {
  STMTS("", "");
  STMTS("\n\n# nothing\n", "");
  STMTS("x = 1", "(ASSIGN (NAME x) (INT 1))");
  STMTS("x[i] = 2", "(ASSIGN (INDEX (NAME x) (NAME i)) (INT 2))");
  STMTS("a, b = f()", "(ASSIGN (LIST (NAME a) (NAME b)) (CALL (NAME f)))");
  STMTS("a, b = b, a", "(ASSIGN (LIST (NAME a) (NAME b)) (LIST (NAME b) (NAME a)))");
  STMTS("x = 1; y = 2;", "(ASSIGN (NAME x) (INT 1)) (ASSIGN (NAME y) (INT 2))");
  STMTS("x = 1\n\n\ny = 2\n", "(ASSIGN (NAME x) (INT 1)) (ASSIGN (NAME y) (INT 2))");
  STMTS("#!/usr/bin/env masq\nx # comment\n", "(EXPR_STMT (NAME x))");
  STMTS("x = 1\r\ny = 2\r\n", "(ASSIGN (NAME x) (INT 1)) (ASSIGN (NAME y) (INT 2))");
  STMTS("f(1,\n  2)\n", "(EXPR_STMT (CALL (NAME f) (INT 1) (INT 2)))");
  STMTS("x = [\n  1,  # one\n  2,\n]\n", "(ASSIGN (NAME x) (LIST (INT 1) (INT 2)))");
  STMTS("f(\n  a,\n  b=2,\n)", "(EXPR_STMT (CALL (NAME f) (NAME a) (KWARG b (INT 2))))");
  STMTS("y = a +\n  b", "(ASSIGN (NAME y) (BINARY + (NAME a) (NAME b)))");
  STMTS("fn f(a, b=2) {\n  return a + b\n}",
        "(FN f (PARAMS (PARAM a _) (PARAM b (INT 2))) (BLOCK (RETURN (BINARY + (NAME a) (NAME b)))))");
  STMTS("fn g() { return }", "(FN g (PARAMS) (BLOCK (RETURN _)))");
  STMTS("fn sq(x) = x ** 2", "(FN sq (PARAMS (PARAM x _)) (BINARY ** (NAME x) (INT 2)))");
  STMTS("fn f() {}", "(FN f (PARAMS) (BLOCK))");
  STMTS("return 1", "(RETURN (INT 1))");
  STMTS("if a { x }", "(IF (NAME a) (BLOCK (EXPR_STMT (NAME x))) _)");
  STMTS("if a { x } else { y }",
        "(IF (NAME a) (BLOCK (EXPR_STMT (NAME x))) (BLOCK (EXPR_STMT (NAME y))))");
  STMTS("if a {\n  x\n} elif b {\n  y\n} else {\n  z\n}",
        "(IF (NAME a) (BLOCK (EXPR_STMT (NAME x))) (IF (NAME b) (BLOCK (EXPR_STMT (NAME y))) "
        "(BLOCK (EXPR_STMT (NAME z)))))");
  STMTS("if a {\n  x\n}\nelif b {\n  y\n}\n\n# then\nelse {\n  z\n}\nw",
        "(IF (NAME a) (BLOCK (EXPR_STMT (NAME x))) (IF (NAME b) (BLOCK (EXPR_STMT (NAME y))) "
        "(BLOCK (EXPR_STMT (NAME z))))) (EXPR_STMT (NAME w))");
  STMTS("if a { x }\nelsewhere", "(IF (NAME a) (BLOCK (EXPR_STMT (NAME x))) _) (EXPR_STMT (NAME elsewhere))");
  STMTS("while i < n { i = i + 1; continue }",
        "(WHILE (BINARY < (NAME i) (NAME n)) (BLOCK (ASSIGN (NAME i) (BINARY + (NAME i) (INT 1))) (CONTINUE)))");
  STMTS("for x in xs {\n  if x { break }\n}",
        "(FOR x (NAME xs) (BLOCK (IF (NAME x) (BLOCK (BREAK)) _)))");
  STMTS("for k, v in items(d) { }", "(FOR (CALL (NAME items) (NAME d)) (BLOCK) (LIST (NAME k) (NAME v)))");
  STMTS("del d[\"k\"]", "(DEL (INDEX (NAME d) (STRING \"k\")))");
  STMTS("[k for k, v in d]", "(EXPR_STMT (LISTCOMP (NAME k) _ (COMP_FOR (NAME d) _ (LIST (NAME k) (NAME v)))))");
  STMTS("import \"lib/nn.masq\"", "(IMPORT \"lib/nn.masq\")");
  /* '{' opens a block after a name, a literal, a closing bracket, else,
   * try, catch or no_grad; anywhere else a dict */
  STMTS("{}", "(EXPR_STMT (DICT))");
  STMTS("{\"a\": 1}", "(EXPR_STMT (DICT (STRING \"a\") (INT 1)))");
  STMTS("if {} { x }", "(IF (DICT) (BLOCK (EXPR_STMT (NAME x))) _)");
  STMTS("if f({1: 2}) {}", "(IF (CALL (NAME f) (DICT (INT 1) (INT 2))) (BLOCK) _)");
  STMTS("if x == {} {}", "(IF (BINARY == (NAME x) (DICT)) (BLOCK) _)");
  STMTS("d = {\n  \"a\": 1,\n  \"b\": {}\n}\ny",
        "(ASSIGN (NAME d) (DICT (STRING \"a\") (INT 1) (STRING \"b\") (DICT))) (EXPR_STMT (NAME y))");
  STMTS("fn f() = {1: 2}", "(FN f (PARAMS) (DICT (INT 1) (INT 2)))");
  STMTS("fn f() { return {} }", "(FN f (PARAMS) (BLOCK (RETURN (DICT))))");
  STMTS("x = [a for a in b if a]", "(ASSIGN (NAME x) (LISTCOMP (NAME a) _ (COMP_FOR a (NAME b) (NAME a))))");
  STMTS("x = {k: 1 for k in b}", "(ASSIGN (NAME x) (DICTCOMP (NAME k) (INT 1) (COMP_FOR k (NAME b) _)))");
  STMTS("[a + c for a in b if a for c in d]",
        "(EXPR_STMT (LISTCOMP (BINARY + (NAME a) (NAME c)) _ (COMP_FOR a (NAME b) (NAME a)) (COMP_FOR c (NAME d) _)))");
  STMTS("no_grad { x }", "(NO_GRAD (BLOCK (EXPR_STMT (NAME x))))");
}

static void spans(void) {
  SPANS("softmax(masked(x, m), 0)",
        "(BLOCK@1:1-2 (EXPR_STMT@1:1-25 (CALL@1:1-25 (NAME@1:1-8) (CALL@1:9-21 (NAME@1:9-15) "
        "(NAME@1:16-17) (NAME@1:19-20)) (INT@1:23-24))))");
  SPANS("y = (a + b) * c", "(BLOCK@1:1-2 (ASSIGN@1:1-16 (NAME@1:1-2) (BINARY@1:5-16 "
                           "(BINARY@1:6-11 (NAME@1:6-7) (NAME@1:10-11)) (NAME@1:15-16))))");
  SPANS("x.f(1)[2:]", "(BLOCK@1:1-2 (EXPR_STMT@1:1-11 (INDEX@1:1-11 (METHOD@1:1-7 (NAME@1:1-2) "
                      "(INT@1:5-6)) (SLICE@1:8-10 (INT@1:8-9) _ _))))");
  SPANS("x[:]", "(BLOCK@1:1-2 (EXPR_STMT@1:1-5 (INDEX@1:1-5 (NAME@1:1-2) (SLICE@1:3-4 _ _ _))))");
  SPANS("-a.b", "(BLOCK@1:1-2 (EXPR_STMT@1:1-5 (UNARY@1:1-5 (ATTR@1:2-5 (NAME@1:2-3)))))");
  SPANS("f(k=1)", "(BLOCK@1:1-2 (EXPR_STMT@1:1-7 (CALL@1:1-7 (NAME@1:1-2) (KWARG@1:3-6 (INT@1:5-6)))))");
  SPANS("\tx = 'h\xc3\xa9'", "(BLOCK@1:1-2 (ASSIGN@1:2-11 (NAME@1:2-3) (STRING@1:6-11)))");
  SPANS("f(a,  \n  b)", "(BLOCK@1:1-2 (EXPR_STMT@1:1-5 (CALL@1:1-5 (NAME@1:1-2) (NAME@1:3-4) (NAME@2:3-4))))");
  SPANS("if a {\n  b\n}", "(BLOCK@1:1-2 (IF@1:1-7 (NAME@1:4-5) (BLOCK@1:6-7 (EXPR_STMT@2:3-4 (NAME@2:3-4))) _))");
  SPANS("fn f(a, b=1) = a", "(BLOCK@1:1-2 (FN@1:1-17 (PARAMS@1:5-13 (PARAM@1:6-7 _) "
                            "(PARAM@1:9-12 (INT@1:11-12))) (NAME@1:16-17)))");
  SPANS("a, b = 1, 2", "(BLOCK@1:1-2 (ASSIGN@1:1-12 (LIST@1:1-5 (NAME@1:1-2) (NAME@1:4-5)) "
                       "(LIST@1:8-12 (INT@1:8-9) (INT@1:11-12))))");
}

static void errors(void) {
  ERRORS("softmax(masked(x, ), 0)", "1:19-20: unexpected ')', expecting an expression");
  ERRORS("1e+", "1:1-4: malformed number '1e+'");
  ERRORS("x = 1e", "1:5-7: malformed number '1e'");
  ERRORS("x = 12ab + 1", "1:5-9: malformed number '12ab'");
  ERRORS("\"abc", "1:1-5: unterminated string");
  ERRORS("x = 'abc\ny = 1", "1:5-9: unterminated string");
  ERRORS("x = '\\q'", "1:6-8: invalid escape '\\q'");
  ERRORS("x = '\\x4'", "1:6-8: invalid escape '\\x' (expected two hex digits)");
  ERRORS("$", "1:1-2: unexpected character '$'");
  ERRORS("x = 1 $ 2 $", "1:7-8: unexpected character '$'");
  ERRORS("x = \xc3\xa9", "1:5-7: unexpected character '\xc3\xa9'");
  ERRORS("x = \x01", "1:5-6: unexpected byte 0x01");
  ERRORS("99999999999999999999", "1:1-21: integer literal '99999999999999999999' is too large");
  ERRORS("f(1 2)", "1:5-6: unexpected number, expecting ')' or ','");
  ERRORS("f(1 2)\nx = 1\ng(3 4)\n",
         "1:5-6: unexpected number, expecting ')' or ','\n3:5-6: unexpected number, expecting ')' or ','");
  ERRORS("f(1 2\nx = )\ny = 1", "1:5-6: unexpected number, expecting ')' or ','\n"
                                "2:5-6: unexpected ')', expecting an expression");
  ERRORS("[1, 2", "1:6-7: unexpected end of input, expecting ']' or ','");
  ERRORS("f(x", "1:4-5: unexpected end of input, expecting ')', ',' or '='");
  ERRORS("fn f() {", "1:9-10: unexpected end of input, expecting '}'");
  ERRORS("if x {\n  y = 1\n", "2:8-9: unexpected end of input, expecting '}'");
  ERRORS("if x", "1:5-6: unexpected end of input, expecting '{'");
  ERRORS("if x { y", "1:9-10: unexpected end of input, expecting '}'");
  ERRORS("if x\n{ y }", "1:5-6: unexpected newline, expecting '{'\n2:5-6: unexpected '}', expecting ':'");
  ERRORS("x = 1 +", "1:8-9: unexpected end of input, expecting an expression");
  ERRORS("foo bar", "1:5-8: unexpected identifier 'bar'");
  ERRORS("x = if", "1:5-7: unexpected keyword 'if', expecting an expression");
  /* a '{' at the start of a statement opens a dict (no bare blocks) */
  ERRORS("{ x }", "1:5-6: unexpected '}', expecting ':'");
  ERRORS("{\"a\": 1, \"b\"}", "1:13-14: unexpected '}', expecting ':'");
  ERRORS("x = {1: 2", "1:10-11: unexpected end of input, expecting '}', ',' or keyword 'for'");
  ERRORS("no_grad x = 1", "1:9-10: unexpected identifier 'x', expecting '{'");
  ERRORS("f(x, )\n", "1:6-7: unexpected ')', expecting an expression");
  ERRORS("{ x = }", "1:5-6: unexpected '=', expecting ':'");
  ERRORS("if a { x = }", "1:12-13: unexpected '}', expecting an expression");
  ERRORS("if a { if b }", "1:13-14: unexpected '}', expecting '{'");
  ERRORS("a < b < c", "1:7-8: unexpected '<'");
  ERRORS("f() = 1", "1:1-4: cannot assign to a function call");
  ERRORS("x.a = 1", "1:1-4: cannot assign to an attribute");
  ERRORS("1 = 1", "1:1-2: cannot assign to this expression");
  ERRORS("a, b[0] = 1, 2", "1:4-8: can only unpack into names");
  ERRORS("f(a=1, b)", "1:8-9: positional argument follows keyword argument");
  ERRORS("f(a=1, a=2)", "1:8-11: keyword argument 'a' repeated");
  ERRORS("fn f(a, a) = 1", "1:9-10: duplicate parameter 'a'");
  ERRORS("fn f(a=1, b) = 1", "1:11-12: parameter 'b' without a default follows one with a default");
  ERRORS("x[]", "1:3-4: unexpected ']', expecting an expression, ':' or '...'");
  ERRORS("x = 1\n)\ny = (\n", "2:1-2: unexpected ')'\n3:6-7: unexpected end of input, expecting an expression or ')'");
  ERRORS("if a { f(1 2) }\nz = ", "1:12-13: unexpected number, expecting ')' or ','\n"
                                 "2:4-5: unexpected end of input, expecting an expression");
  ERRORS("x = ;", "1:5-6: unexpected ';', expecting an expression");
  ERRORS("return return", "1:8-14: unexpected keyword 'return'");
  ERRORS("for 1 in x {}", "1:5-6: unexpected number, expecting identifier");
  ERRORS("x = 1 y = 2", "1:7-8: unexpected identifier 'y'");
  ERRORS("import x", "1:8-9: unexpected identifier 'x', expecting string");
  ERRORS("x = 'a' 'b'", "1:9-12: unexpected string");
  ERRORS("x = 1.5.3", "1:8-10: unexpected number");
  ERRORS("elsewhere = 1\nelse", "2:1-5: unexpected keyword 'else'");
  ERRORS("fn f() {}\nelse {}", "2:1-5: unexpected keyword 'else'");
  ERRORS("a.b.c(", "1:7-8: unexpected end of input, expecting an expression or ')'");

  /* A NUL inside the text is a bad byte, not the end. */
  int line = __LINE__;
  result r;
  run_n(&r, "x = 1\0y", 7, false);
  if (r.status != MQ_PARSE_ERROR || strcmp(r.errors, "1:6-7: unexpected byte 0x00") != 0)
    FAIL("embedded NUL: %s %s", status_name(r.status), r.errors);
  else passed++;
}

static void deep(void) {
  size_t n = 20000;
  char *text = malloc(2 * n + 2);
  memset(text, '(', n);
  text[n] = '1';
  memset(text + n + 1, ')', n);
  text[2 * n + 1] = '\0';
  int line = __LINE__;
  result r;
  run(&r, text, false);
  if (r.status != MQ_PARSE_ERROR || !strstr(r.errors, "expression nested too deeply"))
    FAIL("deep nesting: %s %s", status_name(r.status), r.errors);
  else passed++;
  /* Moderately deep is fine. */
  memset(text, '(', 1000);
  text[1000] = '1';
  memset(text + 1001, ')', 1000);
  text[2001] = '\0';
  run(&r, text, false);
  if (r.status != MQ_PARSE_OK) FAIL("1000 parens: %s %s", status_name(r.status), r.errors);
  else passed++;
  free(text);
}

static void partial(void) {
  INCOMPLETE("f(1,");
  INCOMPLETE("f(1,\n");
  INCOMPLETE("[1, 2");
  INCOMPLETE("[1, 2\n");
  INCOMPLETE("fn f() {");
  INCOMPLETE("fn f() {\n  x = 1\n");
  INCOMPLETE("\"abc");
  INCOMPLETE("x = 1 +");
  INCOMPLETE("x = 1 +\n");
  INCOMPLETE("if x");
  INCOMPLETE("if x {} else");
  INCOMPLETE("x = f(\n  1,\n  2");
  INCOMPLETE("d = {\n  \"a\": 1,");
  INCOMPLETE("no_grad {");
  PARTIAL_ERROR("f(1))", "1:5-6: unexpected ')'");
  PARTIAL_ERROR("f(1))\n", "1:5-6: unexpected ')'");
  PARTIAL_ERROR("\"abc\n", "1:1-5: unterminated string");
  PARTIAL_ERROR("f(1 2)\nf(1,", "1:5-6: unexpected number, expecting ')' or ','\n"
                                "2:5-6: unexpected end of input, expecting an expression");
  PARTIAL_OK("x = 1\n");
  PARTIAL_OK("fn f(x) {\n  return x\n}\n");
  PARTIAL_OK("");
}

static void dump_format(void) {
  int line = __LINE__;
  mq_source src = {.name = "<test>", .text = (char *)"f(x, 2)", .len = 7};
  mq_arena A;
  mq_arena_init(&A, S);
  mq_node *prog = NULL;
  result r;
  memset(&r, 0, sizeof r);
  if (mq_parse(&A, &src, false, on_error, &r, &prog) != MQ_PARSE_OK) {
    FAIL("dump parse");
  } else {
    mq_buf b = {0};
    mq_node_dump(S, &b, prog, 0);
    const char *want = "(BLOCK\n  (EXPR_STMT\n    (CALL\n      (NAME f)\n      (NAME x)\n      (INT 2))))\n";
    if (strcmp(b.data, want) != 0) FAIL("dump:\n%s", b.data);
    else passed++;
    mq_buf_free(S, &b);
  }
  mq_arena_free(&A);
  if (strcmp(mq_node_kind_name(MQ_N_IMPORT), "IMPORT") != 0) FAIL("kind name");
  else passed++;
}

/* Every keyword the library knows (lexer/keywords.h: names a host may not
 * bind, :help KEYWORD) is one the lexer knows: alone, it never parses as a
 * name; and one name that is not a keyword does. */
static void keywords(void) {
  static const char *const words[] = {
#define X(k, help) k,
      MQ_KEYWORDS(X)
#undef X
      "globals"};
  for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
    result r;
    run(&r, words[i], false);
    char name[64];
    snprintf(name, sizeof name, "(BLOCK (EXPR_STMT (NAME %s)))", words[i]);
    bool is_name = r.status == MQ_PARSE_OK && strcmp(r.tree, name) == 0;
    bool keyword = mq_keyword_help(words[i], strlen(words[i])) != NULL;
    int line = __LINE__;
    if (is_name == keyword) FAIL("'%s': the lexer and lexer/keywords.h disagree", words[i]);
    else passed++;
  }
}

int main(void) {
  S = (mq_state *)masq_open(NULL);
  if (!S) {
    fprintf(stderr, "test_parser: masq_open failed\n");
    return 1;
  }
  literals();
  operators();
  postfix();
  statements();
  spans();
  errors();
  deep();
  partial();
  dump_format();
  keywords();
  masq_close((masq_state *)S);
  printf("test_parser: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
