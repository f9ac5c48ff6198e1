/* convert.h - int(), float() and bool() of strings and plain numbers, as
 * Python's: the conversions a script needs for its command-line arguments. */
#ifndef MQ_CONVERT_H
#define MQ_CONVERT_H

#include "../../core/state.h"

/* [v] (a string or a plain number) converted to [kind]: 'i' int, 'f' float,
 * 'b' bool, in *out; false (nothing done) for any other value. A string
 * that does not spell such a value is an error quoting it. */
MQ_INTERNAL bool mq_convert_scalar(mq_state *S, mq_value v, char kind, mq_value *out);

#endif
