/* suggest.h - "did you mean" for a name that is not defined, a keyword
 * argument a function does not have, a key a dict does not have. */
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

/* The word of [cands] ([n] of them; NULL entries skipped) most like [word],
 * by the same rule; NULL if none is close. For keyword arguments
 * (dimm= -> dim) and dict keys. */
MQ_INTERNAL const char *mq_suggest_word(const char *word, const char *const *cands, int n);

/* The error "[fn]() has no parameter named '[kw]'" of a function whose
 * parameters are [names] ([n]; NULL entries skipped): with numpy's or
 * pandas' name for one of them (axis= for dim=, ddof= for correction=),
 * says so; else "; did you mean '[like]'?" for the likeliest name. */
MQ_INTERNAL MQ_NORETURN void mq_unknown_keyword(mq_state *S, const char *fn, const char *kw,
                                                const char *const *names, int n);

/* What masq writes for a pandas or numpy function a user reaches for
 * (isna -> ~get_mask(x)), as a sentence; NULL for other names. */
MQ_INTERNAL const char *mq_habit_hint(const char *name);

/* The error of x.f or x.f(...) (a [call]) when no function f is defined:
 * "a tensor has no method 'sume' (x.sume(...) calls sume(x, ...), which is
 * not defined); did you mean 'sum'?", or for an error value's field names
 * on anything but an error value, which fields there are. [f] is the code
 * running, as for mq_suggest_name. */
MQ_INTERNAL MQ_NORETURN void mq_no_method(mq_state *S, const mq_function *f, const char *name,
                                          mq_value receiver, bool call);

#endif
