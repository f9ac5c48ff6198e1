/* ast.h - the syntax tree the Bison parser builds and the compiler walks.
 *
 * One node shape for every construct (kind, operator, span, a name or a
 * number, and an array of children), allocated in an arena that is freed
 * in one go after compilation. The table below says what each kind keeps
 * where; "?" marks a child that may be NULL.
 */
#ifndef MQ_AST_H
#define MQ_AST_H

#include "../core/arena.h"
#include "../core/state.h"
#include "../vm/opcodes.h"

/*  kind            fields                 children                              */
#define MQ_NODE_KINDS(X)                                                          \
  X(INT)        /* ival                    -                                  */  \
  X(FLOAT)      /* fval                    -                                  */  \
  X(TRUE)       /*                         -                                  */  \
  X(FALSE)      /*                         -                                  */  \
  X(NONE)       /*                         -                                  */  \
  X(STRING)     /* str (unescaped), ival = byte length                        */  \
  X(NAME)       /* str                     -                                  */  \
  X(LIST)       /*                         items...                           */  \
  X(DICT)       /*                         key, value, key, value...          */  \
  X(LISTCOMP)   /*                         element, NULL, COMP_FOR...         */  \
  X(DICTCOMP)   /*                         key, value, COMP_FOR...            */  \
  X(COMP_FOR)   /* str = loop variable (NULL: names)  iterable, cond?, names? (LIST of NAME) */ \
  X(UNARY)      /* op: '-' '~' '!'(not)    operand                            */  \
  X(BINARY)     /* op: mq_binop_token      lhs, rhs                           */  \
  X(AND)        /* `and` (short-circuit)   lhs, rhs                           */  \
  X(OR)         /* `or`  (short-circuit)   lhs, rhs                           */  \
  X(CALL)       /*                         callee, args... (ARG nodes or exprs)*/ \
  X(KWARG)      /* str = keyword name      value                              */  \
  X(METHOD)     /* str = method name       receiver, args...  (x.f(a))        */  \
  X(ATTR)       /* str = attribute name    receiver           (x.f)           */  \
  X(INDEX)      /*                         object, items...                   */  \
  X(SLICE)      /*                         start?, stop?, step?               */  \
  X(ELLIPSIS)   /*                         -                                  */  \
  X(ASSIGN)     /*                         target (NAME, INDEX or LIST of NAME), value */ \
  X(AUG_ASSIGN) /* op: mq_binop_token (+= -= *= /=)  target (NAME or INDEX), value */ \
  X(EXPR_STMT)  /*                         expr                               */  \
  X(BLOCK)      /*                         statements...                      */  \
  X(IF)         /*                         cond, then BLOCK, else? (BLOCK or IF) */ \
  X(WHILE)      /*                         cond, body BLOCK                   */  \
  X(FOR)        /* str = loop variable (NULL: names)  iterable, body BLOCK, names? (LIST of NAME) */ \
  X(FN)         /* str = name (NULL: anonymous)  PARAMS, body (BLOCK, or expr for `= expr`) */ \
  X(PARAMS)     /*                         PARAM...                           */  \
  X(PARAM)      /* str = name              default?                           */  \
  X(RETURN)     /*                         value?                             */  \
  X(BREAK)      /*                         -                                  */  \
  X(CONTINUE)   /*                         -                                  */  \
  X(IMPORT)     /* str = path              -                                  */  \
  X(GLOBAL)     /*                         NAME...  (`global a, b`)           */ \
  X(TRY)        /* str = error variable (NULL: none)  body BLOCK, handler BLOCK */ \
  X(NO_GRAD)    /*                         body BLOCK                         */  \
  X(DEL)        /*                         target INDEX (del d[k])            */

typedef enum mq_node_kind {
#define X(k) MQ_N_##k,
  MQ_NODE_KINDS(X)
#undef X
  MQ_N__COUNT
} mq_node_kind;

typedef struct mq_node mq_node;
struct mq_node {
  uint8_t kind; /* mq_node_kind */
  uint8_t op;   /* UNARY: '-', '~', '!'; BINARY: mq_binop_token */
  mq_span span; /* whole construct; for CALL the callee through ')' */
  char *str;
  int64_t ival;
  double fval;
  int nkids;
  mq_node **kids;
};

MQ_INTERNAL mq_node *mq_node_new(mq_arena *A, mq_node_kind kind, mq_span span);
/* Appends [kid] (may be NULL, kept as a NULL child) to [n]'s children. */
MQ_INTERNAL void mq_node_add(mq_arena *A, mq_node *n, mq_node *kid);
MQ_INTERNAL const char *mq_node_kind_name(mq_node_kind k);
/* Debug dump as an S-expression, one node per line with indentation. */
MQ_INTERNAL void mq_node_dump(mq_state *S, mq_buf *b, const mq_node *n, int depth);
/* The function that x.name ([n] a METHOD or ATTR node) calls: name, except
 * for torch's attributes whose masq function of the same name does
 * something else. x.requires_grad is a bool, as in torch; the call
 * requires_grad(x), or x.requires_grad(), sets it (torch's
 * requires_grad_()). x.grad is the gradient even where a script has its
 * own global named grad. */
MQ_INTERNAL const char *mq_attr_callee(const mq_node *n);

/* --- parsing ------------------------------------------------------------ */

/* One source text kept alive for diagnostics (core/diag.h owns the type). */
struct mq_source;

typedef enum mq_parse_status {
  MQ_PARSE_OK,
  MQ_PARSE_ERROR,     /* at least one syntax error was reported */
  MQ_PARSE_INCOMPLETE /* partial mode: input ends inside brackets, a block or a string,
                         or after an `if` block an `else` may still follow */
} mq_parse_status;

/* Called once per syntax error, in source order. */
typedef void (*mq_parse_report)(void *ud, mq_span span, const char *message);

/* Parses the whole of [src] (NUL-terminated at src->text[src->len]) into a
 * BLOCK of statements allocated in [A]. Every syntax error is passed to
 * [report] (the parser recovers at the next newline and goes on). In
 * [partial] mode an error caused by reaching the end of input (an open
 * bracket, an unterminated string, a trailing binary operator) returns
 * MQ_PARSE_INCOMPLETE without reporting anything; so does input that parses
 * but ends with an `if` statement without `else`, which the next line may
 * continue (`}` NEWLINE `else` belongs to the if, as in a script). */
MQ_INTERNAL mq_parse_status mq_parse(mq_arena *A, const struct mq_source *src, bool partial,
                                     mq_parse_report report, void *ud, mq_node **out);

#endif
