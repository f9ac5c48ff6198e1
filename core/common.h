/* common.h - what every internal file of masq includes first.
 *
 * Naming: the public API is masq_ (include/masq.h). Internal cross-file symbols
 * are tagged MQ_INTERNAL, so the shared library never exports them, and named
 *   mq_<op>        for a tensor op, after the builtin it implements (mq_softmax,
 *                  mq_matmul, mq_reshape, or its family: mq_unary, mq_reduce);
 *   mq_<module>_   for infrastructure, after its module or the object it
 *                  manages (mq_chunk_emit, mq_gc_collect, mq_iter_init,
 *                  mq_value_truthy, mq_string_new, mq_tensor_view, ...).
 * The state's primitives that every file calls (mq_alloc, mq_free,
 * mq_error, mq_throw, mq_scratch, mq_buf_*, mq_rng_*) keep their short
 * names. Static inline helpers in a header follow the same rule; file-static
 * helpers carry no prefix. */
#ifndef MQ_COMMON_H
#define MQ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "masq.h"

#if defined(__GNUC__) || defined(__clang__)
#define MQ_INTERNAL __attribute__((visibility("hidden"))) extern
#define MQ_NORETURN __attribute__((noreturn))
#define MQ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define MQ_LIKELY(x) __builtin_expect(!!(x), 1)
#define MQ_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* For a per-element function called with a constant op in one loop per op:
 * inlined, its switch folds away (no dispatch inside the loop). */
#define MQ_ALWAYS_INLINE inline __attribute__((always_inline))
/* For a function with big locals called from a recursion: inlined, its
 * frame would be part of every level's. */
#define MQ_NOINLINE __attribute__((noinline))
#else
#define MQ_INTERNAL extern
#define MQ_NORETURN _Noreturn
#define MQ_PRINTF(f, a)
#define MQ_LIKELY(x) (x)
#define MQ_UNLIKELY(x) (x)
#define MQ_ALWAYS_INLINE inline
#define MQ_NOINLINE
#endif

/* A tensor has at most this many dimensions. Shapes and strides live inline in
 * the tensor struct, so views cost one allocation; torch allows 64, but no
 * masked-tensor program we know of goes past 6. */
#define MQ_MAX_DIMS 8

typedef struct mq_state mq_state;   /* the interpreter; masq_state in masq.h */
typedef struct mq_tensor mq_tensor; /* runtime/tensor/tensor.h */

#include "assert.h" /* MQ_ASSERT, everywhere */

#endif
