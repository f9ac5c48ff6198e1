/* seqops.h - what lists, strings, ranges and dicts do under ==, `in`,
 * slices and lookups. */
#ifndef MQ_SEQOPS_H
#define MQ_SEQOPS_H

#include "../core/state.h"

/* a == b for values that are not both tensors: numbers by value (1 == 1.0,
 * true == 1), strings by their bytes, lists item by item (at most
 * MQ_EQ_MAX_DEPTH lists deep: deeper is an error), dicts by their keys
 * and values in any order, anything else (tensors
 * in a list, functions) by identity. */
#define MQ_EQ_MAX_DEPTH 200
MQ_INTERNAL bool mq_values_equal(mq_state *S, mq_value a, mq_value b);

/* `item in seq`: an item of a list equal to it (mq_values_equal), a
 * substring of a string, an int of a range, a key of a dict. Other containers are an error
 * that says what to write instead. */
MQ_INTERNAL bool mq_contains(mq_state *S, mq_value seq, mq_value item);

/* seq[start:stop:step] of a list or a string, Python's rules (negative
 * bounds count from the end, out-of-range bounds are clipped, a negative
 * step walks backward); has[i] false: the bound is absent (none counts as
 * absent). A new list or string. */
MQ_INTERNAL mq_value mq_slice_seq(mq_state *S, mq_value seq, const bool has[3], const mq_value bound[3]);

/* d[key]: its value (not retained), or the error "no key "aple" in the
 * dict; did you mean "apple"?" (the hint from the string keys). */
/* The longest string that repetition (and join) make: a bound checked
 * before allocating, so "a" * 10 ** 18 is a clean error everywhere (a
 * failed allocation of that size is not clean under a sanitizer). */
#define MQ_STRING_MAX ((size_t)INT32_MAX)

/* s * n (or n * s, n an int or a bool): s repeated n times, "" for n <= 0,
 * as Python; the size is checked before anything is allocated (a clean
 * size error, never a wrapped length). */
MQ_INTERNAL mq_value mq_string_repeat(mq_state *S, const mq_string *s, int64_t n);

struct mq_dict;
MQ_INTERNAL mq_value mq_dict_get(mq_state *S, const struct mq_dict *d, mq_value key);

/* del obj[index]: removes a dict's key (missing: mq_dict_get's error) or a
 * list's item (an int, negative from the end); anything else is an error. */
MQ_INTERNAL void mq_del_item(mq_state *S, mq_value obj, mq_value index);

#endif
