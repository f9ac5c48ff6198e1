/* rand_fill.h - what the property tests of the runtime that build random
 * tensors share (test_dim_ops.c, test_sparse_reduce.c,
 * test_sparse_matmul.c): a xorshift generator over the including file's
 * own seed [rng], and storing a value into a tensor of a compute dtype. */
#ifndef MQ_TEST_RAND_FILL_H
#define MQ_TEST_RAND_FILL_H

#include "../../runtime/tensor/tensor.h"

static uint64_t rng; /* the including file seeds it */

static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static int64_t below(int64_t n) { return (int64_t)(next() % (uint64_t)n); }

/* Entry [i] of the contiguous [t] (bool, int64, float32 or float64) := v. */
static void put_value(mq_tensor *t, int64_t i, double v) {
  switch ((mq_dtype)t->dtype) {
  case MQ_DT_BOOL: ((uint8_t *)mq_tensor_data(t))[i] = v != 0; break;
  case MQ_DT_I64: ((int64_t *)mq_tensor_data(t))[i] = (int64_t)v; break;
  case MQ_DT_F32: ((float *)mq_tensor_data(t))[i] = (float)v; break;
  default: ((double *)mq_tensor_data(t))[i] = v; break;
  }
}

#endif
