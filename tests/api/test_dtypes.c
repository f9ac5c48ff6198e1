/* test_dtypes.c - the storage dtypes (MASQ_INT8 ... MASQ_BFLOAT16) across
 * the API: wrapped without a copy at their size, copied in, computed on as
 * torch promotes them, read back with their dtype; an unknown dtype is a
 * usage error. */
#include <stdint.h>

#include "check.h"

static void test_wrap_int8_and_float16(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  int8_t x[4] = {100, -100, 7, -128};
  uint16_t h[3] = {0x3e00, 0xc000, 0x7bff}; /* 1.5, -2.0, 65504 as float16 bits */
  int64_t n4 = 4, n3 = 3;
  masq_tensor_desc dx = {.dtype = MASQ_INT8, .ndim = 1, .shape = &n4, .data = x};
  masq_tensor_desc dh = {.dtype = MASQ_FLOAT16, .ndim = 1, .shape = &n3, .data = h};
  masq_tensor *tx = NULL, *th = NULL;
  CHECK_OK(M, masq_tensor_wrap(M, &dx, &tx));
  CHECK_OK(M, masq_tensor_wrap(M, &dh, &th));
  CHECK_OK(M, masq_set_global(M, "x", tx));
  CHECK_OK(M, masq_set_global(M, "h", th));
  CHECK(strcmp(run(M, &c, "print(dtype(x), x + x, sum(x))"),
               "int8 tensor([-56,  56,  14,   0], dtype=int8) tensor(-121)\n") == 0);
  CHECK(strcmp(run(M, &c, "print(h * 2)"), "tensor([ 3., -4., inf], dtype=float16)\n") == 0);
  /* a view keeps pointing at the host's int8 bytes */
  masq_tensor *row = NULL;
  masq_tensor_desc info;
  CHECK_OK(M, eval(M, "v = x[1:]"));
  CHECK_OK(M, masq_get_global(M, "v", &row));
  CHECK_OK(M, masq_tensor_info(M, row, &info));
  CHECK(info.dtype == MASQ_INT8 && info.data == (const void *)&x[1] && info.shape[0] == 3);
  CHECK_OK(M, masq_tensor_release(M, row));
  /* a computed float16 result: 2 bytes an element */
  masq_tensor *y = NULL;
  CHECK_OK(M, eval(M, "y = h + 1"));
  CHECK_OK(M, masq_get_global(M, "y", &y));
  CHECK_OK(M, masq_tensor_info(M, y, &info));
  CHECK(info.dtype == MASQ_FLOAT16 && ((const uint16_t *)info.data)[0] == 0x4100); /* 2.5 */
  double v = 0;
  int64_t i = 0;
  CHECK_OK(M, eval(M, "e = y[1]"));
  masq_tensor *e = NULL;
  CHECK_OK(M, masq_get_global(M, "e", &e));
  CHECK_OK(M, masq_tensor_item(M, e, &v));
  CHECK(v == -1.0);
  CHECK_OK(M, eval(M, "k = x[3]"));
  masq_tensor *k = NULL;
  CHECK_OK(M, masq_get_global(M, "k", &k));
  CHECK_OK(M, masq_tensor_item_int(M, k, &i));
  CHECK(i == -128);
  CHECK_OK(M, masq_tensor_release(M, k));
  CHECK_OK(M, masq_tensor_release(M, e));
  CHECK_OK(M, masq_tensor_release(M, y));
  CHECK_OK(M, masq_tensor_release(M, th));
  CHECK_OK(M, masq_tensor_release(M, tx));
  masq_close(M);
}

static void test_new_uint8_and_bad_dtype(void) {
  capture c;
  masq_state *M = open_capturing(&c);
  uint8_t px[3] = {200, 3, 255};
  int64_t n = 3;
  masq_tensor_desc d = {.dtype = MASQ_UINT8, .ndim = 1, .shape = &n, .data = px};
  masq_tensor *t = NULL;
  CHECK_OK(M, masq_tensor_new(M, &d, &t));
  px[0] = 0; /* a copy: the host may change its buffer */
  CHECK_OK(M, masq_set_global(M, "p", t));
  CHECK(strcmp(run(M, &c, "print(p + p, p + tensor([1, 1, 1], dtype=int8))"),
               "tensor([144,   6, 254], dtype=uint8) tensor([201,   4, 256], dtype=int16)\n") == 0);
  masq_tensor *u = NULL;
  masq_tensor_desc bad = {.dtype = (masq_dtype)10, .ndim = 1, .shape = &n, .data = px};
  CHECK_ERR(M, masq_tensor_wrap(M, &bad, &u), MASQ_ERR_USAGE, "unknown dtype 10");
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
}

int main(void) {
  test_wrap_int8_and_float16();
  test_new_uint8_and_bad_dtype();
  return report("test_dtypes");
}
