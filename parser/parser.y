/* parser.y - the masq grammar (Bison 3.8, pure push parser).
 *
 * Tokens come from lexer/lexer.re; the tree built here is described in
 * parser/ast.h. Three habits keep the grammar small:
 *
 *  - Binary operators are one `expr` rule each, ordered by the precedence
 *    declarations below; only postfix forms (calls, indexing, attributes)
 *    and atoms get their own nonterminals.
 *  - Statement separators are NEWLINE or ';'. The lexer makes every
 *    statement end with one: it drops newlines inside ( ) and [ ] and after
 *    an operator, and it inserts a NEWLINE before a '}' or the end of input
 *    that would otherwise end a statement.
 *  - Syntax errors are collected, not printed: yyreport_syntax_error words
 *    them (parse.error custom) and mq_parse hands them to the caller once it
 *    knows whether the input was merely incomplete (REPL).
 */
%require "3.8"
%define api.pure full
%define api.push-pull push
%define api.prefix {mq_yy}
%define api.token.prefix {TOK_}
%define api.value.type union
%define api.location.type {mq_loc}
%define api.header.include {"parser.h"}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%parse-param {mq_parser *p}

%code requires {
  #include "ast.h"

  typedef struct mq_parser mq_parser;

  /* Bison's four location fields (1-based lines, 1-based byte columns,
   * last_column exclusive) plus the byte offset of the first byte, so a
   * construct that spans lines can be cut at the end of its first line. */
  typedef struct mq_loc {
    int first_line, first_column, last_line, last_column;
    size_t offset;
  } mq_loc;

  /* A decoded string literal; the bytes live in the parse arena. */
  typedef struct mq_lexstr {
    char *s;
    size_t n;
  } mq_lexstr;
}

%code {
  #include <stdio.h>
  #include "../core/diag.h"
  #include "../lexer/lexer.h"

  /* Spans of nonterminals: first symbol's start to the last one's end. An
   * empty rule gets an empty location at the end of the previous symbol. */
  #define YYLLOC_DEFAULT(Cur, Rhs, N)                                          \
    do {                                                                       \
      if (N) {                                                                 \
        (Cur).first_line = YYRHSLOC(Rhs, 1).first_line;                        \
        (Cur).first_column = YYRHSLOC(Rhs, 1).first_column;                    \
        (Cur).offset = YYRHSLOC(Rhs, 1).offset;                                \
        (Cur).last_line = YYRHSLOC(Rhs, N).last_line;                          \
        (Cur).last_column = YYRHSLOC(Rhs, N).last_column;                      \
      } else {                                                                 \
        (Cur).first_line = (Cur).last_line = YYRHSLOC(Rhs, 0).last_line;       \
        (Cur).first_column = (Cur).last_column = YYRHSLOC(Rhs, 0).last_column; \
        (Cur).offset = YYRHSLOC(Rhs, 0).offset;                                \
      }                                                                        \
    } while (0)

  /* One collected diagnostic. */
  typedef struct parse_error {
    struct parse_error *next;
    mq_span span;
    char *message;
    bool at_eof; /* caused by reaching the end of input */
  } parse_error;

  struct mq_parser {
    mq_arena *A;
    const mq_source *src;
    mq_lexer lx;
    bool partial;
    parse_error *errors, **tail;
    int nerrors;
    int nsyntax;        /* syntax errors so far (lexer resync trigger) */
    mq_node *program;   /* set when the whole input was reduced */
    mq_yypstate *ps;    /* freed by mq_parse even if an allocation throws */
  };

  static mq_span span_of(const mq_parser *p, const mq_loc *l);
  static mq_span span_join(const mq_parser *p, const mq_loc *a, const mq_loc *b);
  static void add_error(mq_parser *p, mq_span span, const char *message, bool at_eof);
  static void semantic_error(mq_parser *p, mq_span span, const char *fmt, ...)
      MQ_PRINTF(3, 4);
  static mq_node *leaf(mq_parser *p, mq_node_kind k, const mq_loc *l);
  static mq_node *unary(mq_parser *p, int op, mq_node *x, const mq_loc *l);
  static mq_node *binary(mq_parser *p, mq_binop_token op, mq_node *a, mq_node *b,
                         const mq_loc *l);
  static mq_node *pair(mq_parser *p, mq_node_kind k, mq_node *a, mq_node *b, const mq_loc *l);
  static mq_node *del_item(mq_parser *p, mq_node *target, const mq_loc *l);
  static mq_node *assignment(mq_parser *p, mq_node *target, mq_node *value, const mq_loc *l);
  static mq_node *augmented(mq_parser *p, mq_binop_token op, mq_node *target, mq_node *value,
                            const mq_loc *l);
  static void add_arg(mq_parser *p, mq_node *call, mq_node *arg);
  static void add_param(mq_parser *p, mq_node *params, mq_node *param);

  #define NODE(k, l) mq_node_new(p->A, MQ_N_##k, span_of(p, &(l)))
  #define SPAN(l) span_of(p, &(l))

  static void mq_yyerror(const mq_loc *loc, mq_parser *p, const char *msg);
}

/* Literals and names. */
%token <int64_t> INT "number"
%token <double> FLOAT "decimal number"  /* described as "number" too */
%token <mq_lexstr> STRING "string"
%token <char *> IDENT "identifier"

/* Separators. Closing brackets come before ',' so expected lists read
 * "expecting ')' or ','". */
%token NEWLINE "newline" SEMI "';'"
%token RPAREN "')'" RBRACK "']'" RBRACE "'}'" COMMA "','"
%token LPAREN "'('" LBRACK "'['" LBRACE "'{'" LDICT "dict '{'"
%token DOT "'.'" COLON "':'" ELLIPSIS "'...'" ASSIGN "'='"
%token PLUSEQ "'+='" MINUSEQ "'-='" STAREQ "'*='" SLASHEQ "'/='"
%token SHLEQ "'<<='" SHREQ "'>>='"
%token DSLASHEQ "'//='" PERCENTEQ "'%='" POWEQ "'**='" AMPEQ "'&='" PIPEEQ "'|='" CARETEQ "'^='"

/* Operators. */
%token PLUS "'+'" MINUS "'-'" STAR "'*'" SLASH "'/'" DSLASH "'//'" PERCENT "'%'"
%token AT "'@'" POW "'**'" TILDE "'~'" AMP "'&'" PIPE "'|'" CARET "'^'"
%token SHL "'<<'" SHR "'>>'"
%token LT "'<'" LE "'<='" GT "'>'" GE "'>='" EQ "'=='" NE "'!='"

/* Keywords. */
%token TRUE "keyword 'true'" FALSE "keyword 'false'" NONE "keyword 'none'"
%token FN "keyword 'fn'" RETURN "keyword 'return'" IF "keyword 'if'"
%token ELIF "keyword 'elif'" ELSE "keyword 'else'" WHILE "keyword 'while'"
%token FOR "keyword 'for'" IN "keyword 'in'" BREAK "keyword 'break'"
%token CONTINUE "keyword 'continue'" IMPORT "keyword 'import'" GLOBAL "keyword 'global'"
%token TRY "keyword 'try'" CATCH "keyword 'catch'" NOGRAD "keyword 'no_grad'" DEL "keyword 'del'"
%token AND "keyword 'and'" OR "keyword 'or'" NOT "keyword 'not'" NOTIN "'not in'"

%token YYEOF 0 "end of input"

%nterm <mq_node *> body block stmt else_part targets rhs rhs_list global_names for_names
%nterm <mq_node *> params param_list param expr postfix primary
%nterm <mq_node *> args arg_list arg subscripts subscript opt_expr items pairs comp_if comp_fors comp_for

/* Lowest to highest. An anonymous `fn(x) = body` takes everything to its
 * right; `not` binds looser than comparisons; `**` binds tighter than a
 * unary minus on its left (-2**2 == -(2**2)); `x.f(` is a method call. */
%precedence LAMBDA
%left OR
%left AND
%precedence NOT
%nonassoc LT LE GT GE EQ NE IN NOTIN
%left PIPE
%left CARET
%left AMP
%left SHL SHR
%left PLUS MINUS
%left STAR SLASH DSLASH PERCENT AT
%precedence UNARY
%right POW
%precedence DOTNAME
%precedence LPAREN

%%

program:
    body                                { $1->span = (mq_span){1, 1, 2};
                                          p->program = $1; }
  ;

/* Statements, each followed by a separator. `error sep` resumes after the
 * next newline or ';' (or before the '}' of the enclosing block, since the
 * lexer puts a NEWLINE there). */
body:
    %empty                              { $$ = mq_node_new(p->A, MQ_N_BLOCK, (mq_span){0, 0, 0}); }
  | body sep                            { $$ = $1; }
  | body stmt sep                       { $$ = $1; mq_node_add(p->A, $$, $2); }
  | body error sep                      { $$ = $1; yyerrok; }
  ;

sep: NEWLINE | SEMI ;

block:
    LBRACE body RBRACE                  { $$ = $2; $$->span = SPAN(@$); }
  ;

stmt:
    expr                                { $$ = NODE(EXPR_STMT, @$); mq_node_add(p->A, $$, $1); }
  | expr ASSIGN rhs                     { $$ = assignment(p, $1, $3, &@$); }
  | targets ASSIGN rhs                  { $$ = assignment(p, $1, $3, &@$); }
  | expr PLUSEQ expr                    { $$ = augmented(p, MQ_TOK_ADD, $1, $3, &@$); }
  | expr MINUSEQ expr                   { $$ = augmented(p, MQ_TOK_SUB, $1, $3, &@$); }
  | expr STAREQ expr                    { $$ = augmented(p, MQ_TOK_MUL, $1, $3, &@$); }
  | expr SLASHEQ expr                   { $$ = augmented(p, MQ_TOK_DIV, $1, $3, &@$); }
  | expr SHLEQ expr                     { $$ = augmented(p, MQ_TOK_SHL, $1, $3, &@$); }
  | expr SHREQ expr                     { $$ = augmented(p, MQ_TOK_SHR, $1, $3, &@$); }
  | expr DSLASHEQ expr                  { $$ = augmented(p, MQ_TOK_FLOORDIV, $1, $3, &@$); }
  | expr PERCENTEQ expr                 { $$ = augmented(p, MQ_TOK_MOD, $1, $3, &@$); }
  | expr POWEQ expr                     { $$ = augmented(p, MQ_TOK_POW, $1, $3, &@$); }
  | expr AMPEQ expr                     { $$ = augmented(p, MQ_TOK_BAND, $1, $3, &@$); }
  | expr PIPEEQ expr                    { $$ = augmented(p, MQ_TOK_BOR, $1, $3, &@$); }
  | expr CARETEQ expr                   { $$ = augmented(p, MQ_TOK_BXOR, $1, $3, &@$); }
  | FN IDENT LPAREN params RPAREN block {
      $$ = NODE(FN, @$); $$->str = $2;
      $4->span = span_join(p, &@3, &@5);
      mq_node_add(p->A, $$, $4); mq_node_add(p->A, $$, $6);
    }
  | FN IDENT LPAREN params RPAREN ASSIGN expr {
      $$ = NODE(FN, @$); $$->str = $2;
      $4->span = span_join(p, &@3, &@5);
      mq_node_add(p->A, $$, $4); mq_node_add(p->A, $$, $7);
    }
  | RETURN                              { $$ = NODE(RETURN, @$); mq_node_add(p->A, $$, NULL); }
  | RETURN expr                         { $$ = NODE(RETURN, @$); mq_node_add(p->A, $$, $2); }
  | IF expr block else_part {
      $$ = NODE(IF, @$);
      mq_node_add(p->A, $$, $2); mq_node_add(p->A, $$, $3); mq_node_add(p->A, $$, $4);
    }
  | WHILE expr block                    { $$ = pair(p, MQ_N_WHILE, $2, $3, &@$); }
  | FOR IDENT IN expr block             { $$ = pair(p, MQ_N_FOR, $4, $5, &@$); $$->str = $2; }
  | FOR for_names IN expr block         { $$ = pair(p, MQ_N_FOR, $4, $5, &@$);
                                          mq_node_add(p->A, $$, $2); }
  | BREAK                               { $$ = NODE(BREAK, @$); }
  | CONTINUE                            { $$ = NODE(CONTINUE, @$); }
  | IMPORT STRING                       { $$ = NODE(IMPORT, @$); $$->str = $2.s; $$->ival = (int64_t)$2.n; }
  | GLOBAL global_names                 { $$ = $2; $$->span = SPAN(@$); }
  | TRY block CATCH IDENT block         { $$ = pair(p, MQ_N_TRY, $2, $5, &@$); $$->str = $4; }
  | TRY block CATCH block               { $$ = pair(p, MQ_N_TRY, $2, $4, &@$); }
  | NOGRAD block                        { $$ = NODE(NO_GRAD, @$); mq_node_add(p->A, $$, $2); }
  | DEL expr                            { $$ = del_item(p, $2, &@$); }
  ;

/* `global a, b`: NAME nodes under one GLOBAL. */
global_names:
    IDENT {
      $$ = NODE(GLOBAL, @$);
      mq_node *n = NODE(NAME, @1); n->str = $1; mq_node_add(p->A, $$, n);
    }
  | global_names COMMA IDENT {
      $$ = $1;
      mq_node *n = NODE(NAME, @3); n->str = $3; mq_node_add(p->A, $$, n);
    }
  ;

/* `for k, v in items(d)`: a LIST of at least two NAME nodes, each item
 * unpacked into them as `k, v = item` would. */
for_names:
    IDENT COMMA IDENT {
      $$ = NODE(LIST, @$);
      mq_node *a = NODE(NAME, @1); a->str = $1; mq_node_add(p->A, $$, a);
      mq_node *b = NODE(NAME, @3); b->str = $3; mq_node_add(p->A, $$, b);
    }
  | for_names COMMA IDENT {
      $$ = $1; $$->span = SPAN(@$);
      mq_node *n = NODE(NAME, @3); n->str = $3; mq_node_add(p->A, $$, n);
    }
  ;

else_part:
    %empty                              { $$ = NULL; }
  | ELSE block                          { $$ = $2; }
  | ELIF expr block else_part {
      $$ = NODE(IF, @$);
      mq_node_add(p->A, $$, $2); mq_node_add(p->A, $$, $3); mq_node_add(p->A, $$, $4);
    }
  ;

/* `a, b = ...`: at least two targets. */
targets:
    expr COMMA expr                     { $$ = pair(p, MQ_N_LIST, $1, $3, &@$); }
  | targets COMMA expr                  { $$ = $1; $$->span = SPAN(@$); mq_node_add(p->A, $$, $3); }
  ;

/* `... = b, a` assigns the list [b, a]. */
rhs:
    expr
  | rhs_list
  ;

rhs_list:
    expr COMMA expr                     { $$ = pair(p, MQ_N_LIST, $1, $3, &@$); }
  | rhs_list COMMA expr                 { $$ = $1; $$->span = SPAN(@$); mq_node_add(p->A, $$, $3); }
  ;

params:
    %empty                              { $$ = mq_node_new(p->A, MQ_N_PARAMS, (mq_span){0, 0, 0}); }
  | param_list
  ;

param_list:
    param                               { $$ = mq_node_new(p->A, MQ_N_PARAMS, $1->span);
                                          add_param(p, $$, $1); }
  | param_list COMMA param              { $$ = $1; add_param(p, $$, $3); }
  ;

param:
    IDENT                               { $$ = NODE(PARAM, @$); $$->str = $1; mq_node_add(p->A, $$, NULL); }
  | IDENT ASSIGN expr                   { $$ = NODE(PARAM, @$); $$->str = $1; mq_node_add(p->A, $$, $3); }
  ;

expr:
    postfix
  | expr OR expr                        { $$ = pair(p, MQ_N_OR, $1, $3, &@$); }
  | expr AND expr                       { $$ = pair(p, MQ_N_AND, $1, $3, &@$); }
  | NOT expr                            { $$ = unary(p, '!', $2, &@$); }
  | expr LT expr                        { $$ = binary(p, MQ_TOK_LT, $1, $3, &@$); }
  | expr LE expr                        { $$ = binary(p, MQ_TOK_LE, $1, $3, &@$); }
  | expr GT expr                        { $$ = binary(p, MQ_TOK_GT, $1, $3, &@$); }
  | expr GE expr                        { $$ = binary(p, MQ_TOK_GE, $1, $3, &@$); }
  | expr EQ expr                        { $$ = binary(p, MQ_TOK_EQ, $1, $3, &@$); }
  | expr NE expr                        { $$ = binary(p, MQ_TOK_NE, $1, $3, &@$); }
  | expr IN expr                        { $$ = binary(p, MQ_TOK_IN, $1, $3, &@$); }
  | expr NOTIN expr                     { $$ = unary(p, '!', binary(p, MQ_TOK_IN, $1, $3, &@$), &@$); }
  | expr PIPE expr                      { $$ = binary(p, MQ_TOK_BOR, $1, $3, &@$); }
  | expr CARET expr                     { $$ = binary(p, MQ_TOK_BXOR, $1, $3, &@$); }
  | expr AMP expr                       { $$ = binary(p, MQ_TOK_BAND, $1, $3, &@$); }
  | expr SHL expr                       { $$ = binary(p, MQ_TOK_SHL, $1, $3, &@$); }
  | expr SHR expr                       { $$ = binary(p, MQ_TOK_SHR, $1, $3, &@$); }
  | expr PLUS expr                      { $$ = binary(p, MQ_TOK_ADD, $1, $3, &@$); }
  | expr MINUS expr                     { $$ = binary(p, MQ_TOK_SUB, $1, $3, &@$); }
  | expr STAR expr                      { $$ = binary(p, MQ_TOK_MUL, $1, $3, &@$); }
  | expr SLASH expr                     { $$ = binary(p, MQ_TOK_DIV, $1, $3, &@$); }
  | expr DSLASH expr                    { $$ = binary(p, MQ_TOK_FLOORDIV, $1, $3, &@$); }
  | expr PERCENT expr                   { $$ = binary(p, MQ_TOK_MOD, $1, $3, &@$); }
  | expr AT expr                        { $$ = binary(p, MQ_TOK_MATMUL, $1, $3, &@$); }
  | MINUS expr %prec UNARY              { $$ = unary(p, '-', $2, &@$); }
  | TILDE expr %prec UNARY              { $$ = unary(p, '~', $2, &@$); }
  | PLUS expr %prec UNARY               { $$ = $2; $$->span = SPAN(@$); }
  | expr POW expr                       { $$ = binary(p, MQ_TOK_POW, $1, $3, &@$); }
  | FN LPAREN params RPAREN ASSIGN expr %prec LAMBDA {
      $$ = NODE(FN, @$);
      $3->span = span_join(p, &@2, &@4);
      mq_node_add(p->A, $$, $3); mq_node_add(p->A, $$, $6);
    }
  | FN LPAREN params RPAREN block {
      $$ = NODE(FN, @$);
      $3->span = span_join(p, &@2, &@4);
      mq_node_add(p->A, $$, $3); mq_node_add(p->A, $$, $5);
    }
  ;

/* Calls, methods and indexing build their node in the argument list, with
 * a NULL first child that the postfix rule fills in. */
postfix:
    primary
  | postfix LPAREN args RPAREN          { $$ = $3; $$->span = SPAN(@$); $$->kids[0] = $1; }
  | postfix DOT IDENT LPAREN args RPAREN {
      $$ = $5; $$->kind = MQ_N_METHOD; $$->str = $3; $$->span = SPAN(@$); $$->kids[0] = $1;
    }
  | postfix DOT IDENT %prec DOTNAME     { $$ = NODE(ATTR, @$); $$->str = $3; mq_node_add(p->A, $$, $1); }
  | postfix LBRACK subscripts RBRACK    { $$ = $3; $$->span = SPAN(@$); $$->kids[0] = $1; }
  ;

args:
    %empty                              { $$ = mq_node_new(p->A, MQ_N_CALL, (mq_span){0, 0, 0});
                                          mq_node_add(p->A, $$, NULL); }
  | arg_list
  ;

arg_list:
    arg                                 { $$ = mq_node_new(p->A, MQ_N_CALL, $1->span);
                                          mq_node_add(p->A, $$, NULL); add_arg(p, $$, $1); }
  | arg_list COMMA arg                  { $$ = $1; add_arg(p, $$, $3); }
  ;

arg:
    expr
  | IDENT ASSIGN expr                   { $$ = NODE(KWARG, @$); $$->str = $1; mq_node_add(p->A, $$, $3); }
  ;

subscripts:
    subscript                           { $$ = mq_node_new(p->A, MQ_N_INDEX, $1->span);
                                          mq_node_add(p->A, $$, NULL); mq_node_add(p->A, $$, $1); }
  | subscripts COMMA subscript          { $$ = $1; mq_node_add(p->A, $$, $3); }
  ;

/* A slice always has three children (start, stop, step), NULL if left out. */
subscript:
    expr
  | ELLIPSIS                            { $$ = NODE(ELLIPSIS, @$); }
  | opt_expr COLON opt_expr {
      $$ = mq_node_new(p->A, MQ_N_SLICE, span_join(p, $1 ? &@1 : &@2, $3 ? &@3 : &@2));
      mq_node_add(p->A, $$, $1); mq_node_add(p->A, $$, $3); mq_node_add(p->A, $$, NULL);
    }
  | opt_expr COLON opt_expr COLON opt_expr {
      $$ = mq_node_new(p->A, MQ_N_SLICE, span_join(p, $1 ? &@1 : &@2, $5 ? &@5 : &@4));
      mq_node_add(p->A, $$, $1); mq_node_add(p->A, $$, $3); mq_node_add(p->A, $$, $5);
    }
  ;

opt_expr:
    %empty                              { $$ = NULL; }
  | expr
  ;

primary:
    INT                                 { $$ = NODE(INT, @$); $$->ival = $1; }
  | FLOAT                               { $$ = NODE(FLOAT, @$); $$->fval = $1; }
  | STRING                              { $$ = NODE(STRING, @$); $$->str = $1.s; $$->ival = (int64_t)$1.n; }
  | TRUE                                { $$ = NODE(TRUE, @$); }
  | FALSE                               { $$ = NODE(FALSE, @$); }
  | NONE                                { $$ = NODE(NONE, @$); }
  | IDENT                               { $$ = NODE(NAME, @$); $$->str = $1; }
  | LPAREN expr RPAREN                  { $$ = $2; }
  | LBRACK RBRACK                       { $$ = NODE(LIST, @$); }
  | LPAREN RPAREN                       { $$ = NODE(LIST, @$); } /* Python's (): torch's dim=() */
  | LBRACK items RBRACK                 { $$ = $2; $$->span = SPAN(@$); }
  | LBRACK expr comp_fors RBRACK {
      $$ = $3; $$->kind = MQ_N_LISTCOMP; $$->span = SPAN(@$); $$->kids[0] = $2;
    }
  | LDICT RBRACE                        { $$ = NODE(DICT, @$); }
  | LDICT pairs RBRACE                  { $$ = $2; $$->span = SPAN(@$); }
  | LDICT expr COLON expr comp_fors RBRACE {
      $$ = $5; $$->kind = MQ_N_DICTCOMP; $$->span = SPAN(@$); $$->kids[0] = $2;
      $$->kids[1] = $4;
    }
  ;

items:
    expr                                { $$ = mq_node_new(p->A, MQ_N_LIST, $1->span); mq_node_add(p->A, $$, $1); }
  | items COMMA expr                    { $$ = $1; mq_node_add(p->A, $$, $3); }
  ;

/* A dict literal's entries: key and value children, one pair after the other. */
pairs:
    expr COLON expr                     { $$ = pair(p, MQ_N_DICT, $1, $3, &@$); }
  | pairs COMMA expr COLON expr         { $$ = $1; mq_node_add(p->A, $$, $3); mq_node_add(p->A, $$, $5); }
  ;

/* The `for x in xs if c` clauses of a comprehension, as COMP_FOR children
 * of a node whose two first children (NULL here) the primary rule fills in
 * with the element (and a dict's value) and whose kind it sets. */
comp_fors:
    comp_for                            { $$ = mq_node_new(p->A, MQ_N_LISTCOMP, $1->span);
                                          mq_node_add(p->A, $$, NULL); mq_node_add(p->A, $$, NULL);
                                          mq_node_add(p->A, $$, $1); }
  | comp_fors comp_for                  { $$ = $1; mq_node_add(p->A, $$, $2); }
  ;

comp_for:
    FOR IDENT IN expr comp_if           { $$ = pair(p, MQ_N_COMP_FOR, $4, $5, &@$); $$->str = $2; }
  | FOR for_names IN expr comp_if       { $$ = pair(p, MQ_N_COMP_FOR, $4, $5, &@$);
                                          mq_node_add(p->A, $$, $2); }
  ;

/* The filter of a comprehension clause: `if cond`, or nothing (NULL). */
comp_if:
    %empty                              { $$ = NULL; }
  | IF expr                             { $$ = $2; }
  ;

%%

/* --- building nodes ------------------------------------------------------ */

/* A location as a node span. A construct that spans lines is cut at the end
 * of its first line (trailing blanks dropped), as mq_span requires. */
static mq_span span_of(const mq_parser *p, const mq_loc *l) {
  mq_span s = {l->first_line, l->first_column, l->last_column};
  if (l->last_line != l->first_line) {
    const char *b = p->src->text + l->offset;
    const char *e = memchr(b, '\n', p->src->len - l->offset);
    if (!e) e = p->src->text + p->src->len;
    while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    s.end_col = l->first_column + (int)(e - b);
  }
  if (s.end_col <= s.col) s.end_col = s.col + 1;
  return s;
}

static mq_span span_join(const mq_parser *p, const mq_loc *a, const mq_loc *b) {
  mq_loc l = *a;
  l.last_line = b->last_line;
  l.last_column = b->last_column;
  return span_of(p, &l);
}

static mq_node *leaf(mq_parser *p, mq_node_kind k, const mq_loc *l) {
  return mq_node_new(p->A, k, span_of(p, l));
}

static mq_node *unary(mq_parser *p, int op, mq_node *x, const mq_loc *l) {
  mq_node *n = leaf(p, MQ_N_UNARY, l);
  n->op = (uint8_t)op;
  mq_node_add(p->A, n, x);
  return n;
}

static mq_node *pair(mq_parser *p, mq_node_kind k, mq_node *a, mq_node *b, const mq_loc *l) {
  mq_node *n = leaf(p, k, l);
  mq_node_add(p->A, n, a);
  mq_node_add(p->A, n, b);
  return n;
}

static mq_node *binary(mq_parser *p, mq_binop_token op, mq_node *a, mq_node *b,
                       const mq_loc *l) {
  mq_node *n = pair(p, MQ_N_BINARY, a, b, l);
  n->op = (uint8_t)op;
  return n;
}

/* Targets are a name, an index, or a LIST of names (`a, b = ...`). */
/* A name or an item: what can be assigned to. */
static void check_target(mq_parser *p, const mq_node *target) {
  if (target->kind != MQ_N_NAME && target->kind != MQ_N_INDEX)
    semantic_error(p, target->span, "cannot assign to %s",
                   target->kind == MQ_N_CALL || target->kind == MQ_N_METHOD ? "a function call"
                   : target->kind == MQ_N_ATTR                              ? "an attribute"
                                                                            : "this expression");
}

static mq_node *assignment(mq_parser *p, mq_node *target, mq_node *value, const mq_loc *l) {
  if (target->kind == MQ_N_LIST) {
    for (int i = 0; i < target->nkids; i++)
      if (target->kids[i]->kind != MQ_N_NAME)
        semantic_error(p, target->kids[i]->span, "can only unpack into names");
  } else {
    check_target(p, target);
  }
  return pair(p, MQ_N_ASSIGN, target, value, l);
}

/* del d[k]: an item; del name: a global variable (the compiler checks). */
static mq_node *del_item(mq_parser *p, mq_node *target, const mq_loc *l) {
  if (target->kind != MQ_N_INDEX && target->kind != MQ_N_NAME)
    semantic_error(p, target->span,
                   "del removes an item or a variable, as in del d[key] or del x; it cannot "
                   "delete this expression");
  mq_node *n = mq_node_new(p->A, MQ_N_DEL, SPAN(*l));
  mq_node_add(p->A, n, target);
  return n;
}

/* x += v: a name or one item x[i] (what plain assignment takes, less
 * unpacking). */
static mq_node *augmented(mq_parser *p, mq_binop_token op, mq_node *target, mq_node *value,
                          const mq_loc *l) {
  check_target(p, target);
  mq_node *n = pair(p, MQ_N_AUG_ASSIGN, target, value, l);
  n->op = (uint8_t)op;
  return n;
}

/* Keyword arguments come last and at most once each. */
static void add_arg(mq_parser *p, mq_node *call, mq_node *arg) {
  mq_node *prev = call->kids[call->nkids - 1];
  if (arg->kind != MQ_N_KWARG) {
    if (prev && prev->kind == MQ_N_KWARG)
      semantic_error(p, arg->span, "positional argument follows keyword argument");
  } else {
    for (int i = 1; i < call->nkids; i++)
      if (call->kids[i]->kind == MQ_N_KWARG && strcmp(call->kids[i]->str, arg->str) == 0)
        semantic_error(p, arg->span, "keyword argument '%s' repeated", arg->str);
  }
  mq_node_add(p->A, call, arg);
}

/* Parameters are distinct, and defaults come last. */
static void add_param(mq_parser *p, mq_node *params, mq_node *param) {
  for (int i = 0; i < params->nkids; i++)
    if (strcmp(params->kids[i]->str, param->str) == 0)
      semantic_error(p, param->span, "duplicate parameter '%s'", param->str);
  if (params->nkids > 0 && params->kids[params->nkids - 1]->kids[0] && !param->kids[0])
    semantic_error(p, param->span, "parameter '%s' without a default follows one with a default",
                   param->str);
  mq_node_add(p->A, params, param);
}

/* --- diagnostics --------------------------------------------------------- */

static void add_error(mq_parser *p, mq_span span, const char *message, bool at_eof) {
  parse_error *e = mq_arena_alloc(p->A, sizeof *e);
  e->next = NULL;
  e->span = span;
  e->message = mq_arena_strndup(p->A, message, strlen(message));
  e->at_eof = at_eof;
  *p->tail = e;
  p->tail = &e->next;
  p->nerrors++;
}

static void semantic_error(mq_parser *p, mq_span span, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  add_error(p, span, msg, false);
}

/* Only "memory exhausted" comes here: the parser stack hit YYMAXDEPTH. */
static void mq_yyerror(const mq_loc *loc, mq_parser *p, const char *msg) {
  bool deep = strcmp(msg, "memory exhausted") == 0;
  add_error(p, span_of(p, loc), deep ? "expression nested too deeply" : msg, false);
  p->nsyntax++;
}

static bool starts_expression(yysymbol_kind_t k) {
  switch (k) {
  case YYSYMBOL_INT: case YYSYMBOL_FLOAT: case YYSYMBOL_STRING: case YYSYMBOL_IDENT:
  case YYSYMBOL_TRUE: case YYSYMBOL_FALSE: case YYSYMBOL_NONE: case YYSYMBOL_LPAREN:
  case YYSYMBOL_LBRACK: case YYSYMBOL_MINUS: case YYSYMBOL_PLUS: case YYSYMBOL_TILDE:
  case YYSYMBOL_NOT: case YYSYMBOL_FN: case YYSYMBOL_LDICT:
    return true;
  default:
    return false;
  }
}

/* Tokens that continue a complete expression: binary operators and postfix
 * openers. Nobody wants them listed after "expecting". */
static bool continues_expression(yysymbol_kind_t k) {
  switch (k) {
  case YYSYMBOL_PLUS: case YYSYMBOL_MINUS: case YYSYMBOL_STAR: case YYSYMBOL_SLASH:
  case YYSYMBOL_DSLASH: case YYSYMBOL_PERCENT: case YYSYMBOL_AT: case YYSYMBOL_POW:
  case YYSYMBOL_AMP: case YYSYMBOL_PIPE: case YYSYMBOL_CARET: case YYSYMBOL_SHL:
  case YYSYMBOL_SHR: case YYSYMBOL_LT:
  case YYSYMBOL_LE: case YYSYMBOL_GT: case YYSYMBOL_GE: case YYSYMBOL_EQ: case YYSYMBOL_NE:
  case YYSYMBOL_AND: case YYSYMBOL_OR: case YYSYMBOL_LPAREN: case YYSYMBOL_LBRACK:
  case YYSYMBOL_DOT: case YYSYMBOL_IN: case YYSYMBOL_NOTIN:
    return true;
  default:
    return false;
  }
}

static bool is_closer(yysymbol_kind_t k) {
  return k == YYSYMBOL_RPAREN || k == YYSYMBOL_RBRACK || k == YYSYMBOL_RBRACE;
}

static const char *symbol_words(yysymbol_kind_t k) {
  return k == YYSYMBOL_FLOAT ? "number" : yysymbol_name(k);
}

/* The lookahead in plain words. A NEWLINE the lexer inserted is described as
 * the token it stands in front of. */
static int describe_lookahead(const mq_parser *p, yysymbol_kind_t tok, char *buf, size_t size) {
  const mq_lexer *lx = &p->lx;
  if (tok == YYSYMBOL_NEWLINE && lx->synth != MQ_SYNTH_NONE)
    tok = lx->synth == MQ_SYNTH_RBRACE ? YYSYMBOL_RBRACE : YYSYMBOL_YYEOF;
  if (tok == YYSYMBOL_IDENT) {
    int n = (int)(lx->text_end - lx->text);
    return snprintf(buf, size, "identifier '%.*s%s'", n > 40 ? 37 : n, (const char *)lx->text,
                    n > 40 ? "..." : "");
  }
  return snprintf(buf, size, "%s", symbol_words(tok));
}

/* Whether nothing but blanks and comments follows the last token. */
static bool only_space_left(const mq_lexer *lx) {
  for (const unsigned char *c = lx->cur; c < lx->lim; c++) {
    if (*c == '#')
      while (c < lx->lim && *c != '\n') c++;
    else if (*c != ' ' && *c != '\t' && *c != '\r' && *c != '\n' && *c != '\f' && *c != '\v')
      return false;
  }
  return true;
}

/* Words of other languages that end up as a name before the error, and
 * what masq says instead. */
static const struct {
  const char *word, *instead, *why;
} foreign_words[] = {
    {"def", "fn", "fn name(a, b) { ... } defines a function"},
    {"function", "fn", "fn name(a, b) { ... } defines a function"},
    {"func", "fn", "fn name(a, b) { ... } defines a function"},
    {"fun", "fn", "fn name(a, b) { ... } defines a function"},
    {"lambda", "fn", "fn(x) = expr is a function value"},
    {"elseif", "elif", NULL},
    {"elsif", "elif", NULL},
    {"except", "catch", "try { ... } catch e { ... }"},
    {"rescue", "catch", "try { ... } catch e { ... }"},
    {"raise", "raise(e)", "raise is a function"},
    {"throw", "error(message)", "error(message) and raise(e) are functions"},
    {"print", "print(...)", "print is a function"},
    {"let", NULL, "there are no declarations, assign with name = value"},
    {"var", NULL, "there are no declarations, assign with name = value"},
    {"const", NULL, "there are no declarations, assign with name = value"},
    {"local", NULL, "a name a function assigns is its local"},
};

/* A did-you-mean for a syntax error at [tok] right after a word of another
 * language: appended to [msg] after `else if` or `&&`; for a word (`def
 * f(x)`), the whole message, written over [msg] from its start. */
static int foreign_hint(const mq_lexer *lx, yysymbol_kind_t tok, char *msg, size_t size) {
  if (lx->prev == TOK_ELSE && tok == YYSYMBOL_IF)
    return snprintf(msg, size, "; did you mean 'elif'? (or else { if ... })");
  if (lx->prev == TOK_AMP && tok == YYSYMBOL_AMP) return snprintf(msg, size, "; did you mean 'and'?");
  if (lx->prev == TOK_PIPE && tok == YYSYMBOL_PIPE) return snprintf(msg, size, "; did you mean 'or'?");
  if (lx->prev != TOK_IDENT || !lx->prev_text) return 0;
  size_t n = (size_t)(lx->prev_text_end - lx->prev_text);
  for (size_t i = 0; i < sizeof foreign_words / sizeof *foreign_words; i++) {
    const char *w = foreign_words[i].word;
    if (strlen(w) != n || memcmp(w, lx->prev_text, n) != 0) continue;
    const char *instead = foreign_words[i].instead, *why = foreign_words[i].why;
    if (!instead) return snprintf(msg, size, "'%s' is not a masq keyword: %s", w, why);
    return snprintf(msg, size, "'%s' is not a masq keyword; did you mean '%s'?%s%s%s", w, instead,
                    why ? " (" : "", why ? why : "", why ? ")" : "");
  }
  return 0;
}

/* parse.error custom: "unexpected X, expecting A, B or C". Expression
 * starters collapse into "an expression", operators are left out, and more
 * than four alternatives are not listed (except the closing brackets at the
 * end of input, which is what an unfinished construct is missing). Where
 * the statement could have ended, nothing is listed: after `f(1))` the
 * list would be "newline, ';', ',' or '='", which helps nobody. A word of
 * another language just before adds what masq says instead. */
static int yyreport_syntax_error(const yypcontext_t *ctx, mq_parser *p) {
  yysymbol_kind_t tok = yypcontext_token(ctx);
  const mq_loc *loc = yypcontext_location(ctx);
  bool at_eof = tok == YYSYMBOL_YYEOF || (tok == YYSYMBOL_NEWLINE && p->lx.synth == MQ_SYNTH_EOF);
  /* `try { ... }` and a newline at the end of the input: the catch may
   * follow on the next line the REPL reads */
  if (tok == YYSYMBOL_NEWLINE && !at_eof && only_space_left(&p->lx)) {
    yysymbol_kind_t one[2];
    int k = yypcontext_expected_tokens(ctx, one, 2);
    at_eof = k == 1 && one[0] == YYSYMBOL_CATCH;
  }

  char msg[480];
  int n = snprintf(msg, sizeof msg, "unexpected ");
  n += describe_lookahead(p, tok, msg + n, sizeof msg - (size_t)n);

  yysymbol_kind_t expected[YYNTOKENS];
  int nexp = yypcontext_expected_tokens(ctx, expected, YYNTOKENS);
  if (nexp < 0) return nexp; /* LAC ran out of stack */
  bool expr = false, cont = false, may_end = false;
  for (int i = 0; i < nexp; i++) {
    if (expected[i] == YYSYMBOL_INT) expr = true;
    if (expected[i] == YYSYMBOL_STAR) cont = true;
    if (expected[i] == YYSYMBOL_NEWLINE) may_end = true;
  }
  const char *alt[YYNTOKENS + 1];
  int nalt = 0;
  if (expr) alt[nalt++] = "an expression";
  for (int i = 0; i < nexp; i++) {
    yysymbol_kind_t k = expected[i];
    if ((expr && starts_expression(k)) || (cont && continues_expression(k))) continue;
    alt[nalt++] = symbol_words(k);
  }
  if (nalt > 4 && at_eof) {
    nalt = 0;
    for (int i = 0; i < nexp; i++)
      if (is_closer(expected[i])) alt[nalt++] = symbol_words(expected[i]);
  }
  if (nalt > 0 && nalt <= 4 && !(may_end && !at_eof)) {
    for (int i = 0; i < nalt && n < (int)sizeof msg; i++)
      n += snprintf(msg + n, sizeof msg - (size_t)n, "%s%s",
                    i == 0 ? ", expecting " : i == nalt - 1 ? " or " : ", ", alt[i]);
  }
  mq_span span = span_of(p, loc);
  bool word = p->lx.prev == TOK_IDENT;
  if (word) n = 0;
  if (n < (int)sizeof msg && foreign_hint(&p->lx, tok, msg + n, sizeof msg - (size_t)n) > 0 && word) {
    /* underline the foreign word itself when it is on the same line */
    ptrdiff_t back = p->lx.text - p->lx.prev_text;
    if (back > 0 && back < span.col) {
      span.col -= (int)back;
      span.end_col = span.col + (int)(p->lx.prev_text_end - p->lx.prev_text);
    }
  }
  add_error(p, span, msg, at_eof);
  p->nsyntax++;
  return 0;
}

/* --- driver -------------------------------------------------------------- */

static void parse_all(mq_state *S, void *ud) {
  mq_parser *p = ud;
  p->ps = mq_yypstate_new();
  if (!p->ps) mq_throw(S, MASQ_ERR_MEMORY, "out of memory");
  int status;
  do {
    MQ_YYSTYPE value;
    mq_loc loc;
    memset(&value, 0, sizeof value);
    int tok = mq_lex(&p->lx, &value, &loc);
    /* a huge script takes a while to parse: the host may want to stop it */
    mq_poll(S);
    int before = p->nsyntax;
    if (tok == TOK_MQ_YYerror) {
      add_error(p, span_of(p, &loc), p->lx.err, p->lx.err_at_eof);
      p->nsyntax++;
    }
    status = mq_yypush_parse(p->ps, tok, &value, &loc, p);
    /* After a syntax error the statement ends at the next newline, even if
     * it left a bracket open. */
    if (p->nsyntax != before) mq_lexer_resync(&p->lx);
  } while (status == YYPUSH_MORE);
}

/* Whether the last statement of [program] is an `if` (with any `elif`s)
 * that has no `else` yet. */
static bool else_may_follow(const mq_node *program) {
  const mq_node *n = program->nkids ? program->kids[program->nkids - 1] : NULL;
  while (n && n->kind == MQ_N_IF) {
    if (n->nkids < 3 || !n->kids[2]) return true;
    n = n->kids[2]; /* an elif is an IF in the else slot; else a BLOCK */
  }
  return false;
}

mq_parse_status mq_parse(mq_arena *A, const mq_source *src, bool partial,
                         mq_parse_report report, void *ud, mq_node **out) {
  mq_state *S = A->S;
  mq_parser p;
  memset(&p, 0, sizeof p);
  p.A = A;
  p.src = src;
  p.partial = partial;
  p.tail = &p.errors;
  *out = NULL;
  mq_lexer_init(&p.lx, A, src->text, src->len);

  /* Allocation failures throw; the Bison stacks are not in the arena, so
   * catch, free them, and throw again. */
  masq_status st = mq_protect(S, parse_all, &p);
  if (p.ps) mq_yypstate_delete(p.ps);
  if (st != MASQ_OK)
    mq_throw(S, st, "%s", S->err_message.data ? S->err_message.data : "out of memory");

  if (p.nerrors == 0 && p.program) {
    *out = p.program;
    /* An `if` closed at the end of the input may still get its `else` on
     * the next line, as in a script: a REPL waits for that line. */
    return partial && else_may_follow(p.program) ? MQ_PARSE_INCOMPLETE : MQ_PARSE_OK;
  }
  if (partial) {
    bool only_eof = p.nerrors > 0;
    for (parse_error *e = p.errors; e; e = e->next) only_eof = only_eof && e->at_eof;
    if (only_eof) return MQ_PARSE_INCOMPLETE;
  }

  /* Report in source order, at most one error per line: the rest of a line
   * after an error is usually noise from the same mistake. */
  parse_error **v = mq_arena_alloc(A, sizeof *v * (size_t)(p.nerrors ? p.nerrors : 1));
  int nv = 0;
  for (parse_error *e = p.errors; e; e = e->next) {
    int j = nv++;
    while (j > 0 && (v[j - 1]->span.line > e->span.line ||
                     (v[j - 1]->span.line == e->span.line && v[j - 1]->span.col > e->span.col))) {
      v[j] = v[j - 1];
      j--;
    }
    v[j] = e;
  }
  int last_line = -1;
  for (int i = 0; i < nv; i++) {
    if (v[i]->span.line == last_line) continue;
    last_line = v[i]->span.line;
    report(ud, v[i]->span, v[i]->message);
  }
  return MQ_PARSE_ERROR;
}
