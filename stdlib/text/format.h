/* format.h - format()'s mini-language: Python's str.format over masq values.
 *
 * Fields: {} (the next value), {0} (value 0), {name} (a keyword argument),
 * {{ and }} for literal braces, and an optional spec after ':' - inside
 * which {}, {0} or {name} may stand for an int or string value:
 *
 *   [[fill]align][sign][#][0][width][,|_][.precision][type]
 *
 * with align < > ^ =, sign + - space, and type one of d x X o b (ints),
 * e E f F g G % (numbers), s (text), or none. Width and precision are at
 * most MQ_FORMAT_MAX_WIDTH. Anything else is an error naming the field. */
#ifndef MQ_FORMAT_H
#define MQ_FORMAT_H

#include "../../core/state.h"

#define MQ_FORMAT_MAX_WIDTH 10000

/* Appends [fmt] with its fields filled to [out]: positional [values], and
 * [names] as a list name, value, name, value, ... (a **names parameter). */
MQ_INTERNAL void mq_format(mq_state *S, mq_buf *out, const mq_string *fmt, const mq_list *values,
                           const mq_list *names);

#endif
