/* suggest.h - "did you mean" for a name that is not defined. */
#ifndef MQ_SUGGEST_H
#define MQ_SUGGEST_H

#include "chunk.h"

/* The name most like [name] that the code running in [f] (NULL: top-level
 * code) could have meant: a local of f or of a function around it, a defined
 * global (builtins included), or masq's spelling of another language's
 * constant (None -> none). NULL if none is close: an edit (a letter added,
 * dropped, changed, or two swapped) per 3 letters at most, letter case
 * aside. */
MQ_INTERNAL const char *mq_suggest_name(const mq_state *S, const mq_function *f, const char *name);

#endif
