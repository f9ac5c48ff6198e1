/* lexer.re - masq's scanner (re2c 3.0; generated into build/).
 *
 * One function, mq_lex, returns one token per call. The text must end with
 * a NUL sentinel at lim; `re2c:eof` checks the limit when it reads the
 * sentinel, so a NUL inside the text is an ordinary (bad) character. See
 * lexer.h for which newlines become tokens.
 */
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "lexer.h"

void mq_lexer_init(mq_lexer *lx, mq_arena *A, const char *text, size_t len) {
  memset(lx, 0, sizeof *lx);
  lx->A = A;
  lx->src = lx->cur = lx->tok = lx->line_start = (const unsigned char *)text;
  lx->lim = lx->src + len;
  lx->line = 1;
  lx->end = (mq_loc){1, 1, 1, 2, 0};
}

void mq_lexer_resync(mq_lexer *lx) {
  lx->depth = 0;
  lx->cont = false;
  /* Make sure the next newline is a token even if the error was at a '{'. */
  if (lx->last != TOK_NEWLINE && lx->last != TOK_SEMI) lx->last = TOK_MQ_YYerror;
}

/* --- helpers for the rules ------------------------------------------------ */

static void set_loc(const mq_lexer *lx, mq_loc *loc) {
  loc->first_line = loc->last_line = lx->line;
  loc->first_column = (int)(lx->tok - lx->line_start) + 1;
  loc->last_column = (int)(lx->cur - lx->line_start) + 1;
  loc->offset = (size_t)(lx->tok - lx->src);
}

/* After these a newline cannot end the statement. */
static bool continues_line(int t) {
  switch (t) {
  case TOK_PLUS: case TOK_MINUS: case TOK_STAR: case TOK_SLASH: case TOK_DSLASH:
  case TOK_PERCENT: case TOK_AT: case TOK_POW: case TOK_TILDE: case TOK_AMP: case TOK_PIPE:
  case TOK_CARET: case TOK_SHL: case TOK_SHR: case TOK_SHLEQ: case TOK_SHREQ: case TOK_LT: case TOK_LE: case TOK_GT: case TOK_GE: case TOK_EQ:
  case TOK_NE: case TOK_ASSIGN: case TOK_PLUSEQ: case TOK_MINUSEQ: case TOK_STAREQ:
  case TOK_SLASHEQ: case TOK_COMMA: case TOK_DOT: case TOK_AND: case TOK_OR:
  case TOK_NOT: case TOK_IN: case TOK_NOTIN:
    return true;
  default:
    return false;
  }
}

/* Statement starts after these: no NEWLINE is needed (or inserted). */
static bool separated(int t) {
  return t == 0 || t == TOK_NEWLINE || t == TOK_SEMI || t == TOK_LBRACE;
}

static int emit(mq_lexer *lx, const mq_loc *loc, int t) {
  lx->prev = lx->last;
  lx->prev_text = lx->text;
  lx->prev_text_end = lx->text_end;
  lx->last = t;
  lx->cont = continues_line(t);
  lx->synth = MQ_SYNTH_NONE;
  if (t != TOK_NEWLINE) {
    int width = loc->last_column - loc->first_column;
    lx->text = lx->src + loc->offset;
    lx->text_end = lx->text + width;
    lx->end = (mq_loc){loc->last_line, loc->last_column, loc->last_line, loc->last_column + 1,
                       loc->offset + (size_t)width};
  }
  return t;
}

/* A NEWLINE the grammar needs but the text does not have; [where] is
 * MQ_SYNTH_RBRACE or MQ_SYNTH_EOF. */
static int inserted_newline(mq_lexer *lx, int where) {
  lx->last = TOK_NEWLINE;
  lx->cont = false;
  lx->synth = where;
  return TOK_NEWLINE;
}

static int error(mq_lexer *lx, const mq_loc *loc, bool at_eof, const char *fmt, ...)
    MQ_PRINTF(4, 5);
static int error(mq_lexer *lx, const mq_loc *loc, bool at_eof, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(lx->err, sizeof lx->err, fmt, ap);
  va_end(ap);
  lx->err_at_eof = at_eof;
  return emit(lx, loc, TOK_MQ_YYerror);
}

static bool is_name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Skips blanks, newlines and comments from [c]; sets *newline if it crossed
 * a line break. */
static const unsigned char *skip_space(const mq_lexer *lx, const unsigned char *c, bool *newline) {
  for (; c < lx->lim; c++) {
    if (*c == '#') {
      while (c < lx->lim && *c != '\n') c++;
      if (c == lx->lim) break;
    }
    if (*c == '\n') *newline = true;
    else if (*c != ' ' && *c != '\t' && *c != '\r' && *c != '\f' && *c != '\v') break;
  }
  return c;
}

/* `not` then `in` on the same line: the one operator `not in`, whose
 * token then spans both words. */
static bool not_in(mq_lexer *lx) {
  const unsigned char *c = lx->cur;
  while (c < lx->lim && (*c == ' ' || *c == '\t')) c++;
  if (c == lx->cur || lx->lim - c < 2 || c[0] != 'i' || c[1] != 'n' ||
      (lx->lim - c > 2 && is_name_char(c[2])))
    return false;
  lx->cur = c + 2;
  return true;
}

/* `}` NEWLINE `else`: the else belongs to the if (and a `catch` to its try). */
static bool else_follows(const mq_lexer *lx) {
  bool nl = false;
  const unsigned char *c = skip_space(lx, lx->cur, &nl);
  size_t left = (size_t)(lx->lim - c);
  if (left >= 5 && memcmp(c, "catch", 5) == 0 && (left == 5 || !is_name_char(c[5]))) return true;
  return left >= 4 && (memcmp(c, "else", 4) == 0 || memcmp(c, "elif", 4) == 0) &&
         (left == 4 || !is_name_char(c[4]));
}

/* A ',' whose closing bracket is on a later line is dropped, so lists and
 * argument lists written one item per line may end with a comma. On one
 * line, `f(x, )` is a missing argument and stays an error. */
static bool trailing_comma(const mq_lexer *lx) {
  bool nl = false;
  const unsigned char *c = skip_space(lx, lx->cur, &nl);
  return nl && c < lx->lim && (*c == ')' || *c == ']' || *c == '}');
}

/* A '{' after these opens a block (`if x {`, `fn(a) {`, `else {`); after
 * anything else (an operator, '(', ',', '=', `return`, the start of a
 * statement) it opens a dict, where no block could begin. */
static bool opens_block(int last) {
  switch (last) {
  case TOK_IDENT: case TOK_INT: case TOK_FLOAT: case TOK_STRING: case TOK_TRUE: case TOK_FALSE:
  case TOK_NONE: case TOK_RPAREN: case TOK_RBRACK: case TOK_RBRACE: case TOK_ELSE: case TOK_TRY:
  case TOK_CATCH: case TOK_NOGRAD:
    return true;
  default:
    return false;
  }
}

/* A dict's '{' is saved with this bit set: its '}' inserts no NEWLINE. */
#define DICT_BRACE 0x40000000

static void push_brace(mq_lexer *lx) {
  if (lx->nbraces == lx->braces_cap) {
    int cap = lx->braces_cap ? lx->braces_cap * 2 : 16;
    int *b = mq_arena_alloc(lx->A, sizeof *b * (size_t)cap);
    if (lx->nbraces) memcpy(b, lx->braces, sizeof *b * (size_t)lx->nbraces);
    lx->braces = b;
    lx->braces_cap = cap;
  }
  lx->braces[lx->nbraces++] = lx->depth;
  lx->depth = 0;
}

static int integer(mq_lexer *lx, MQ_YYSTYPE *val, const mq_loc *loc) {
  int64_t v = 0;
  for (const unsigned char *c = lx->tok; c < lx->cur; c++) {
    int d = *c - '0';
    if (v > (INT64_MAX - d) / 10)
      return error(lx, loc, false, "integer literal '%.*s' is too large",
                   (int)(lx->cur - lx->tok), (const char *)lx->tok);
    v = v * 10 + d;
  }
  val->TOK_INT = v;
  return emit(lx, loc, TOK_INT);
}

static int decimal(mq_lexer *lx, MQ_YYSTYPE *val, const mq_loc *loc) {
  /* strtod reads the locale's decimal point; masq's is always '.'. */
  char small[64];
  size_t n = (size_t)(lx->cur - lx->tok);
  char *s = n < sizeof small ? small : mq_arena_alloc(lx->A, n + 1);
  memcpy(s, lx->tok, n);
  s[n] = '\0';
  const char *point = localeconv()->decimal_point;
  if (point && point[0] && point[0] != '.' && point[1] == '\0') {
    char *dot = strchr(s, '.');
    if (dot) *dot = point[0];
  }
  val->TOK_FLOAT = strtod(s, NULL);
  return emit(lx, loc, TOK_FLOAT);
}

/* A number glued to letters ("12ab", "1e5x") is one malformed token. */
static int number(mq_lexer *lx, MQ_YYSTYPE *val, mq_loc *loc, bool is_decimal) {
  if (is_name_char(*lx->cur)) {
    while (lx->cur < lx->lim && is_name_char(*lx->cur)) lx->cur++;
    set_loc(lx, loc);
    return error(lx, loc, false, "malformed number '%.*s'", (int)(lx->cur - lx->tok),
                 (const char *)lx->tok);
  }
  set_loc(lx, loc);
  return is_decimal ? decimal(lx, val, loc) : integer(lx, val, loc);
}

static int hex_digit(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A string literal; lx->cur is just past the opening quote. Strings end on
 * their line; the bytes between the quotes are kept as they are except for
 * the escapes \n \t \r \\ \" \' \0 \xHH. */
static int string(mq_lexer *lx, MQ_YYSTYPE *val, mq_loc *loc) {
  unsigned char quote = lx->tok[0];
  const unsigned char *s = lx->cur, *e = s;
  while (e < lx->lim && *e != quote && *e != '\n')
    e += (*e == '\\' && e + 1 < lx->lim && e[1] != '\n') ? 2 : 1;
  if (e >= lx->lim || *e != quote) {
    lx->cur = e;
    set_loc(lx, loc);
    return error(lx, loc, e >= lx->lim, "unterminated string");
  }
  lx->cur = e + 1;
  set_loc(lx, loc);

  char *out = mq_arena_alloc(lx->A, (size_t)(e - s) + 1);
  size_t n = 0;
  for (const unsigned char *c = s; c < e; c++) {
    if (*c != '\\') {
      out[n++] = (char)*c;
      continue;
    }
    int h1, h2;
    switch (*++c) {
    case 'n': out[n++] = '\n'; break;
    case 't': out[n++] = '\t'; break;
    case 'r': out[n++] = '\r'; break;
    case '0': out[n++] = '\0'; break;
    case '\\': case '"': case '\'': out[n++] = (char)*c; break;
    case 'x':
      if (c + 2 < e && (h1 = hex_digit(c[1])) >= 0 && (h2 = hex_digit(c[2])) >= 0) {
        out[n++] = (char)(h1 * 16 + h2);
        c += 2;
        break;
      }
      /* fall through */
    default: {
      int t = *c == 'x'                 ? error(lx, loc, false, "invalid escape '\\x' (expected two hex digits)")
              : *c >= 0x20 && *c < 0x7f ? error(lx, loc, false, "invalid escape '\\%c'", *c)
                                        : error(lx, loc, false, "invalid escape in string");
      /* Point at the escape rather than the whole string. */
      loc->first_column = (int)(c - 1 - lx->line_start) + 1;
      loc->last_column = loc->first_column + 2;
      loc->offset = (size_t)(c - 1 - lx->src);
      return t;
    }
    }
  }
  out[n] = '\0';
  val->TOK_STRING = (mq_lexstr){out, n};
  return emit(lx, loc, TOK_STRING);
}

static int bad_character(mq_lexer *lx, mq_loc *loc) {
  set_loc(lx, loc);
  int n = (int)(lx->cur - lx->tok);
  unsigned char c = lx->tok[0];
  if (n > 1) return error(lx, loc, false, "unexpected character '%.*s'", n, (const char *)lx->tok);
  if (c == '!') return error(lx, loc, false, "unexpected character '!'; did you mean 'not' (or '!=')?");
  if (c >= 0x20 && c < 0x7f) return error(lx, loc, false, "unexpected character '%c'", c);
  return error(lx, loc, false, "unexpected byte 0x%02X", c);
}

/* --- the scanner ----------------------------------------------------------- */

#define TOKEN(t)                                                               \
  do {                                                                         \
    set_loc(lx, loc);                                                          \
    return emit(lx, loc, (t));                                                 \
  } while (0)

int mq_lex(mq_lexer *lx, MQ_YYSTYPE *val, mq_loc *loc) {
  if (lx->pending) {
    int t = lx->pending;
    lx->pending = 0;
    *loc = lx->pending_loc;
    return emit(lx, loc, t);
  }
  for (;;) {
    const unsigned char *marker = lx->cur;
    lx->tok = lx->cur;
    /*!re2c
      re2c:api:style = free-form;
      re2c:define:YYCTYPE = "unsigned char";
      re2c:define:YYCURSOR = "lx->cur";
      re2c:define:YYLIMIT = "lx->lim";
      re2c:define:YYMARKER = "marker";
      re2c:yyfill:enable = 0;
      re2c:eof = 0;

      digits   = [0-9]+;
      exponent = [eE] [+-]? digits;
      integer  = digits;
      decimal  = digits "." [0-9]* exponent? | "." digits exponent? | digits exponent;
      badexp   = (digits ("." [0-9]*)? | "." digits) [eE] [+-]?;
      name     = [A-Za-z_][A-Za-z0-9_]*;
      utf8     = [\xc2-\xdf][\x80-\xbf] | [\xe0-\xef][\x80-\xbf]{2}
               | [\xf0-\xf4][\x80-\xbf]{3};

      $ {
        *loc = lx->end;
        if (!lx->eof_newline && lx->depth == 0 && !lx->cont && !separated(lx->last)) {
          lx->eof_newline = true;
          return inserted_newline(lx, MQ_SYNTH_EOF);
        }
        lx->synth = MQ_SYNTH_NONE;
        return TOK_YYEOF;
      }

      [ \t\r\f\v]+ { continue; }
      "#" [^\n]*   { continue; }
      "\n" {
        set_loc(lx, loc);
        lx->line++;
        lx->line_start = lx->cur;
        if (lx->depth > 0 || lx->cont || separated(lx->last)) continue;
        if (lx->last == TOK_RBRACE && else_follows(lx)) continue;
        return emit(lx, loc, TOK_NEWLINE);
      }

      integer { return number(lx, val, loc, false); }
      decimal { return number(lx, val, loc, true); }
      badexp  {
        set_loc(lx, loc);
        return error(lx, loc, false, "malformed number '%.*s'", (int)(lx->cur - lx->tok),
                     (const char *)lx->tok);
      }
      ["'] { return string(lx, val, loc); }

      "true"     { TOKEN(TOK_TRUE); }
      "false"    { TOKEN(TOK_FALSE); }
      "none"     { TOKEN(TOK_NONE); }
      "fn"       { TOKEN(TOK_FN); }
      "return"   { TOKEN(TOK_RETURN); }
      "if"       { TOKEN(TOK_IF); }
      "elif"     { TOKEN(TOK_ELIF); }
      "else"     { TOKEN(TOK_ELSE); }
      "while"    { TOKEN(TOK_WHILE); }
      "for"      { TOKEN(TOK_FOR); }
      "in"       { TOKEN(TOK_IN); }
      "break"    { TOKEN(TOK_BREAK); }
      "continue" { TOKEN(TOK_CONTINUE); }
      "import"   { TOKEN(TOK_IMPORT); }
      "global"   { TOKEN(TOK_GLOBAL); }
      "try"      { TOKEN(TOK_TRY); }
      "catch"    { TOKEN(TOK_CATCH); }
      "no_grad"  { TOKEN(TOK_NOGRAD); }
      "del"      { TOKEN(TOK_DEL); }
      "and"      { TOKEN(TOK_AND); }
      "or"       { TOKEN(TOK_OR); }
      "not"      { if (not_in(lx)) { TOKEN(TOK_NOTIN); } TOKEN(TOK_NOT); }
      name {
        set_loc(lx, loc);
        val->TOK_IDENT = mq_arena_strndup(lx->A, (const char *)lx->tok, (size_t)(lx->cur - lx->tok));
        return emit(lx, loc, TOK_IDENT);
      }

      "(" { lx->depth++; TOKEN(TOK_LPAREN); }
      "[" { lx->depth++; TOKEN(TOK_LBRACK); }
      ")" { if (lx->depth > 0) lx->depth--; TOKEN(TOK_RPAREN); }
      "]" { if (lx->depth > 0) lx->depth--; TOKEN(TOK_RBRACK); }
      "{" {
        if (opens_block(lx->last)) { push_brace(lx); TOKEN(TOK_LBRACE); }
        /* inside a dict, as inside ( ), newlines are blanks */
        push_brace(lx);
        lx->braces[lx->nbraces - 1] |= DICT_BRACE;
        lx->depth = 1;
        TOKEN(TOK_LDICT);
      }
      "}" {
        set_loc(lx, loc);
        bool dict = lx->nbraces > 0 && (lx->braces[lx->nbraces - 1] & DICT_BRACE);
        bool needs_newline = !dict && lx->depth == 0 && !lx->cont && !separated(lx->last);
        lx->depth = lx->nbraces > 0 ? lx->braces[--lx->nbraces] & ~DICT_BRACE : 0;
        if (needs_newline) {
          lx->pending = TOK_RBRACE;
          lx->pending_loc = *loc;
          return inserted_newline(lx, MQ_SYNTH_RBRACE);
        }
        return emit(lx, loc, TOK_RBRACE);
      }
      "," {
        set_loc(lx, loc);
        if (lx->depth > 0 && trailing_comma(lx)) continue;
        return emit(lx, loc, TOK_COMMA);
      }
      ";"   { TOKEN(TOK_SEMI); }
      "."   { TOKEN(TOK_DOT); }
      "..." { TOKEN(TOK_ELLIPSIS); }
      ":"   { TOKEN(TOK_COLON); }
      "="   { TOKEN(TOK_ASSIGN); }
      "+="  { TOKEN(TOK_PLUSEQ); }
      "-="  { TOKEN(TOK_MINUSEQ); }
      "*="  { TOKEN(TOK_STAREQ); }
      "/="  { TOKEN(TOK_SLASHEQ); }
      "<<=" { TOKEN(TOK_SHLEQ); }
      "//=" { TOKEN(TOK_DSLASHEQ); }
      "%="  { TOKEN(TOK_PERCENTEQ); }
      "**=" { TOKEN(TOK_POWEQ); }
      "&="  { TOKEN(TOK_AMPEQ); }
      "|="  { TOKEN(TOK_PIPEEQ); }
      "^="  { TOKEN(TOK_CARETEQ); }
      ">>=" { TOKEN(TOK_SHREQ); }
      "+"   { TOKEN(TOK_PLUS); }
      "-"   { TOKEN(TOK_MINUS); }
      "*"   { TOKEN(TOK_STAR); }
      "**"  { TOKEN(TOK_POW); }
      "/"   { TOKEN(TOK_SLASH); }
      "//"  { TOKEN(TOK_DSLASH); }
      "%"   { TOKEN(TOK_PERCENT); }
      "@"   { TOKEN(TOK_AT); }
      "~"   { TOKEN(TOK_TILDE); }
      "&"   { TOKEN(TOK_AMP); }
      "|"   { TOKEN(TOK_PIPE); }
      "^"   { TOKEN(TOK_CARET); }
      "<<"  { TOKEN(TOK_SHL); }
      ">>"  { TOKEN(TOK_SHR); }
      "<"   { TOKEN(TOK_LT); }
      "<="  { TOKEN(TOK_LE); }
      ">"   { TOKEN(TOK_GT); }
      ">="  { TOKEN(TOK_GE); }
      "=="  { TOKEN(TOK_EQ); }
      "!="  { TOKEN(TOK_NE); }

      utf8 { return bad_character(lx, loc); }
      *    { return bad_character(lx, loc); }
    */
  }
}
