/* range.h - range(start, stop, step) as a lazy value: three ints and a
 * length, whatever the length, so `for i in range(10 ** 12)` and
 * `r = range(2 ** 62)` take no memory. It is indexed, iterated and measured
 * in O(1); a tensor or a list is made from it only where one is needed
 * (tensor(r), list(r), r as a tensor operand). */
#ifndef MQ_RANGE_H
#define MQ_RANGE_H

#include "state.h"

typedef struct mq_range {
  mq_obj hdr;
  int64_t start, stop, step; /* as given, for printing */
  int64_t len;
} mq_range;

static inline mq_range *mq_as_range(mq_value v) { return (mq_range *)v.as.o; }

/* A new range (owned by the pool); step 0 or more than INT64_MAX entries
 * are errors. */
MQ_INTERNAL mq_range *mq_range_new(mq_state *S, int64_t start, int64_t stop, int64_t step);
/* Entry [i], 0 <= i < len. */
static inline int64_t mq_range_at(const mq_range *r, int64_t i) {
  /* start + i * step lies between start and stop, so the wrapping
   * arithmetic of uint64 gives the exact int64 */
  return (int64_t)((uint64_t)r->start + (uint64_t)i * (uint64_t)r->step);
}
/* The entries as a list; an error if there are more than a list holds. */
MQ_INTERNAL mq_list *mq_range_list(mq_state *S, const mq_range *r);
/* "range(0, 10)" or "range(0, 10, 2)", as Python prints it. */
MQ_INTERNAL void mq_range_format(mq_state *S, mq_buf *b, const mq_range *r);

#endif
