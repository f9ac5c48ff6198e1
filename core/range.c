/* range.c - lazy integer ranges (see range.h). */
#include "range.h"

#include "checked.h"

mq_range *mq_range_new(mq_state *S, int64_t start, int64_t stop, int64_t step) {
  if (step == 0) mq_error(S, "range() step must not be 0");
  uint64_t len = mq_range_count(start, stop, step);
  if (len > (uint64_t)INT64_MAX)
    mq_error(S, "range(%lld, %lld, %lld) has %llu entries, more than %lld", (long long)start,
             (long long)stop, (long long)step, (unsigned long long)len, (long long)INT64_MAX);
  mq_range *r = mq_alloc(S, sizeof *r);
  r->hdr.rc = 1;
  r->hdr.type = MQ_O_RANGE;
  r->start = start;
  r->stop = stop;
  r->step = step;
  r->len = (int64_t)len;
  mq_pool_own(S, &r->hdr);
  return r;
}

mq_list *mq_range_list(mq_state *S, const mq_range *r) {
  if (r->len > MQ_LIST_MAX)
    mq_error(S, "a range of %lld entries is more than a list holds (%d)", (long long)r->len,
             MQ_LIST_MAX);
  mq_list *l = mq_list_new(S, (int)r->len);
  for (int64_t i = 0; i < r->len; i++) {
    mq_list_push(S, l, mq_int(mq_range_at(r, i)));
    if ((i & 0xffff) == 0xffff) mq_check_interrupt(S);
  }
  return l;
}

void mq_range_format(mq_state *S, mq_buf *b, const mq_range *r) {
  if (r->step == 1)
    mq_buf_printf(S, b, "range(%lld, %lld)", (long long)r->start, (long long)r->stop);
  else
    mq_buf_printf(S, b, "range(%lld, %lld, %lld)", (long long)r->start, (long long)r->stop,
                  (long long)r->step);
}
