/* keywords.h - masq's keywords, each with the syntax `:help KEYWORD` shows.
 *
 * One list for the library: a name a host binds must not be a keyword
 * (api_host.c), and masq_doc() answers for keywords as for builtins
 * (api.c). The lexer spells each one out as a re2c rule; the parser unit
 * test checks that every keyword here lexes as one. */
#ifndef MQ_KEYWORDS_H
#define MQ_KEYWORDS_H

#include <string.h>

#define MQ_KEYWORDS(X)                                                         \
  X("true", "true, false: the bool constants")                                 \
  X("false", "true, false: the bool constants")                                \
  X("none", "none: no value (a missing argument, a function without return)") \
  X("fn", "fn name(a, b=1) { body } defines a function; fn(x) = expr and fn(x) { body } are function values") \
  X("return", "return expr (or return alone, none): leave the function with a value") \
  X("if", "if cond { ... } elif cond { ... } else { ... }")                    \
  X("elif", "if cond { ... } elif cond { ... } else { ... }")                  \
  X("else", "if cond { ... } elif cond { ... } else { ... }")                  \
  X("while", "while cond { ... }: repeat while cond is true (break, continue)") \
  X("for", "for x in range(n) { ... } (or a list, a dict's keys, or a tensor's first dim; break, continue); [f(x) for x in xs if cond], {k: v for k in xs}") \
  X("in", "for x in xs { ... }; x in xs, x not in xs: membership in a list (==), a string (substring), a range or a dict's keys; [f(x) for x in xs if c]") \
  X("break", "break: leave the innermost while or for loop")                   \
  X("continue", "continue: go on with the next round of the innermost loop")   \
  X("import", "import \"path.masq\": run a file once per session; its globals become yours") \
  X("global", "global a, b: inside a function, a and b are the globals (to assign them)") \
  X("try", "try { ... } catch e { ... }: run the block; a runtime error in it runs the catch block with e its error (e.message, e.line, e.col, e.file; raise(e) re-raises)") \
  X("catch", "try { ... } catch e { ... }: run the block; a runtime error in it runs the catch block with e its error (e.message, e.line, e.col, e.file; raise(e) re-raises)") \
  X("and", "a and b, a or b: short-circuit (b runs only if needed); not a")   \
  X("or", "a and b, a or b: short-circuit (b runs only if needed); not a")    \
  X("not", "a and b, a or b: short-circuit (b runs only if needed); not a")   \
  X("del", "del d[key]: remove the key and its value from dict d (del xs[i]: item i of list xs)") \
  X("no_grad", "no_grad { ... }: run the block with autograd recording nothing (torch.no_grad); the setting before comes back however the block ends")

/* The help line of keyword [name] (n bytes), or NULL if it is none. */
static inline const char *mq_keyword_help(const char *name, size_t n) {
#define X(k, help) if (sizeof(k) - 1 == n && memcmp(k, name, n) == 0) return help;
  MQ_KEYWORDS(X)
#undef X
  return NULL;
}

#endif
