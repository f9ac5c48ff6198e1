/* test_tensor.c - tensor handles: wrapping host memory without a copy,
 * copying it in, reading a handle's memory, reference counts, the release
 * callback, and every way a host can describe a tensor wrongly. */
#include <stdint.h>

#include "check.h"

static double number(masq_state *M, const char *expr) {
  char src[256];
  double v = -12345;
  snprintf(src, sizeof src, "result_ = %s", expr);
  if (eval(M, src) != MASQ_OK || masq_get_number(M, "result_", &v) != MASQ_OK)
    fprintf(stderr, "number(%s): %s", expr, masq_last_error(M)->rendered);
  return v;
}

static void test_wrap_zero_copy(void) {
  masq_state *M = masq_open(NULL);
  float x[2][3] = {{1, 2, 3}, {4, 5, 6}};
  int64_t shape[2] = {2, 3};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 2, .shape = shape, .data = x};
  masq_tensor *t = NULL;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  masq_tensor_desc info;
  CHECK_OK(M, masq_tensor_info(M, t, &info));
  CHECK(info.dtype == MASQ_FLOAT32 && info.ndim == 2);
  CHECK(info.shape[0] == 2 && info.shape[1] == 3);
  CHECK(info.strides[0] == 3 && info.strides[1] == 1);
  CHECK(info.data == (const void *)x); /* the host's memory itself */
  CHECK(info.valid == NULL);
  CHECK(info.flags == MASQ_TENSOR_HOST);

  CHECK_OK(M, masq_set_global(M, "x", t));
  CHECK(number(M, "sum(x)") == 21);
  x[1][2] = 60; /* between two calls the host may change its buffer */
  CHECK(number(M, "sum(x)") == 75);
  /* A view made by the script still points into the host buffer. */
  CHECK_OK(M, eval(M, "row = x[1]"));
  masq_tensor *row;
  CHECK_OK(M, masq_get_global(M, "row", &row));
  CHECK_OK(M, masq_tensor_info(M, row, &info));
  CHECK(info.data == (const void *)&x[1][0] && info.ndim == 1 && info.shape[0] == 3);
  CHECK(info.flags & MASQ_TENSOR_HOST);
  /* A computed tensor lives in masq's memory. */
  masq_tensor *sum;
  CHECK_OK(M, eval(M, "y = x + 1"));
  CHECK_OK(M, masq_get_global(M, "y", &sum));
  CHECK_OK(M, masq_tensor_info(M, sum, &info));
  CHECK(info.flags == 0 && ((const float *)info.data)[5] == 61);
  CHECK_OK(M, masq_tensor_release(M, sum));
  CHECK_OK(M, masq_tensor_release(M, row));
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
}

static void test_wrap_strided_and_masked(void) {
  masq_state *M = masq_open(NULL);
  /* A (2, 3, 2) batch whose mask is (2, 3), broadcast over the last dim
   * with a zero stride: one validity byte per time step. */
  double x[2][3][2] = {{{1, 10}, {2, 20}, {9, 90}}, {{3, 30}, {8, 80}, {8, 80}}};
  uint8_t valid[2][3] = {{1, 1, 0}, {1, 0, 0}}; /* 1 = valid (NOT numpy.ma) */
  int64_t shape[3] = {2, 3, 2}, vstrides[3] = {3, 1, 0};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT64, .ndim = 3, .shape = shape, .data = x,
                        .valid = &valid[0][0], .valid_strides = vstrides};
  masq_tensor *t;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "x", t));
  CHECK(number(M, "sum(x)") == 1 + 10 + 2 + 20 + 3 + 30);
  CHECK(number(M, "item(sum(x, [0, 1])[1])") == 60);
  CHECK(number(M, "is_masked(x)") == 1);
  valid[1][1] = 1; /* the mask is the host's memory too */
  CHECK(number(M, "sum(x)") == 66 + 8 + 80);

  masq_tensor_desc info;
  CHECK_OK(M, masq_tensor_info(M, t, &info));
  CHECK(info.valid == &valid[0][0]);
  CHECK(info.valid_strides[0] == 3 && info.valid_strides[1] == 1 && info.valid_strides[2] == 0);
  /* Dense on request: data and mask copied into C order. */
  masq_tensor *c;
  CHECK_OK(M, masq_tensor_contiguous(M, t, &c));
  CHECK(c != t);
  CHECK_OK(M, masq_tensor_info(M, c, &info));
  CHECK(info.data != (const void *)x && info.valid != &valid[0][0]);
  CHECK(info.strides[0] == 6 && info.valid_strides[2] == 1);
  CHECK(info.valid[2 * 3 + 1 * 2 + 1] == 1 && info.valid[0 * 6 + 2 * 2 + 0] == 0);
  CHECK(((const double *)info.data)[3] == 20);
  CHECK_OK(M, masq_tensor_release(M, c));

  /* A transposed view of a host matrix: strides in elements. */
  int64_t m[2][3] = {{1, 2, 3}, {4, 5, 6}};
  int64_t tshape[2] = {3, 2}, tstrides[2] = {1, 3};
  masq_tensor_desc td = {.dtype = MASQ_INT64, .ndim = 2, .shape = tshape, .strides = tstrides,
                         .data = m};
  masq_tensor *mt, *mc;
  CHECK_OK(M, masq_tensor_wrap(M, &td, &mt));
  CHECK_OK(M, masq_set_global(M, "m", mt));
  CHECK(number(M, "item(m[2, 1])") == 6 && number(M, "item(m[0, 1])") == 4);
  CHECK_OK(M, masq_tensor_contiguous(M, mt, &mc));
  CHECK_OK(M, masq_tensor_info(M, mc, &info));
  const int64_t *p = info.data;
  CHECK(p[0] == 1 && p[1] == 4 && p[2] == 2 && p[5] == 6);
  /* Already contiguous: the same tensor, one more reference. */
  masq_tensor *same;
  CHECK_OK(M, masq_tensor_contiguous(M, mc, &same));
  CHECK(same == mc);
  CHECK_OK(M, masq_tensor_release(M, same));
  CHECK_OK(M, masq_tensor_release(M, mc));
  CHECK_OK(M, masq_tensor_release(M, mt));
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
}

static void test_release_callback(void) {
  int calls = 0;
  float buf[4] = {1, 2, 3, 4};
  uint8_t valid[4] = {1, 1, 0, 1};
  int64_t shape[1] = {4};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = buf,
                        .valid = valid, .release = count_release, .release_ud = &calls};
  masq_state *M = masq_open(NULL);
  masq_tensor *t;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "x", t));
  CHECK_OK(M, masq_tensor_release(M, t));
  CHECK(calls == 0); /* the global still uses it */
  CHECK_OK(M, eval(M, "v = x[1:]\nmk = get_mask(x)\nx = none"));
  CHECK(calls == 0); /* a view and the mask alone still use it */
  CHECK_OK(M, eval(M, "v = none"));
  CHECK(calls == 0);
  CHECK_OK(M, eval(M, "mk = none"));
  CHECK(calls == 1); /* exactly when the last user went */
  CHECK_OK(M, eval(M, "z = 1 + 1"));
  CHECK(calls == 1);
  CHECK_ERR(M, masq_tensor_release(M, t), MASQ_ERR_USAGE, "not a tensor handle");

  /* Handles the host forgets are released by masq_close, callbacks once. */
  int calls2 = 0;
  d.release_ud = &calls2;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_tensor_retain(M, t));
  CHECK_OK(M, masq_set_global(M, "kept", t));
  masq_close(M);
  CHECK(calls2 == 1 && calls == 1);

  /* A failed wrap never calls it: the buffer is still the host's. */
  int calls3 = 0;
  M = masq_open(NULL);
  int64_t bad_strides[1] = {-1};
  d.release_ud = &calls3;
  d.strides = bad_strides;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "negative");
  CHECK(t == NULL);
  masq_close(M);
  CHECK(calls3 == 0);
}

static void test_new_copies(void) {
  masq_state *M = masq_open(NULL);
  float buf[3] = {1, 2, 3};
  uint8_t valid[3] = {1, 0, 1};
  int64_t shape[1] = {3};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = buf,
                        .valid = valid};
  masq_tensor *t, *z;
  CHECK_OK(M, masq_tensor_new(M, &d, &t));
  buf[0] = 100;
  valid[1] = 1;
  CHECK_OK(M, masq_set_global(M, "x", t));
  CHECK(number(M, "sum(x)") == 4); /* the copy did not see the change */
  masq_tensor_desc info;
  CHECK_OK(M, masq_tensor_info(M, t, &info));
  CHECK(info.data != (const void *)buf && info.flags == 0 && info.valid && info.valid[1] == 0);
  /* No data: zeros. */
  d.data = NULL;
  d.valid = NULL;
  CHECK_OK(M, masq_tensor_new(M, &d, &z));
  CHECK_OK(M, masq_set_global(M, "z", z));
  CHECK(number(M, "sum(z == 0)") == 3);
  CHECK_OK(M, masq_tensor_release(M, z));
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
}

static void test_scalars_and_items(void) {
  masq_state *M = masq_open(NULL);
  masq_tensor *s, *r;
  CHECK_OK(M, masq_tensor_scalar(M, 0.1, &s));
  double v;
  CHECK_OK(M, masq_tensor_item(M, s, &v));
  CHECK(v == 0.1); /* float64: the host's value exactly */
  masq_tensor_desc info;
  CHECK_OK(M, masq_tensor_info(M, s, &info));
  CHECK(info.dtype == MASQ_FLOAT64 && info.ndim == 0);
  /* ... yet it promotes like a number literal: float32 stays float32. */
  CHECK_OK(M, eval(M, "fn scale(a, b) = a * b\nf = ones(2)"));
  masq_tensor *f, *args[2];
  CHECK_OK(M, masq_get_global(M, "f", &f));
  args[0] = f;
  args[1] = s;
  CHECK_OK(M, masq_call(M, "scale", 2, args, &r));
  CHECK_OK(M, masq_tensor_info(M, r, &info));
  CHECK(info.dtype == MASQ_FLOAT32);
  CHECK(((const float *)info.data)[1] == 0.1f);
  CHECK_ERR(M, masq_tensor_item(M, r, &v), MASQ_ERR_RUNTIME, "one element");
  CHECK_OK(M, masq_tensor_release(M, r));
  CHECK_OK(M, masq_tensor_release(M, f));
  /* A masked-out element has no value. */
  float one = 5;
  uint8_t invalid = 0;
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .data = &one, .valid = &invalid};
  masq_tensor *m;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &m));
  CHECK_ERR(M, masq_tensor_item(M, m, &v), MASQ_ERR_RUNTIME, "masked out");
  CHECK_ERR(M, masq_tensor_item(M, m, NULL), MASQ_ERR_USAGE, "out is NULL");
  CHECK_OK(M, masq_tensor_release(M, m));
  CHECK_OK(M, masq_tensor_release(M, s));
  masq_close(M);
}

static void test_dtypes_and_empty(void) {
  masq_state *M = masq_open(NULL);
  uint8_t b[3] = {1, 0, 1};
  int64_t shape[2] = {3, 0}, n3[1] = {3};
  masq_tensor_desc bd = {.dtype = MASQ_BOOL, .ndim = 1, .shape = n3, .data = b};
  masq_tensor_desc ed = {.dtype = MASQ_FLOAT32, .ndim = 2, .shape = shape, .data = NULL};
  masq_tensor *bt, *et;
  CHECK_OK(M, masq_tensor_wrap(M, &bd, &bt));
  CHECK_OK(M, masq_tensor_wrap(M, &ed, &et)); /* no elements: no data needed */
  CHECK_OK(M, masq_set_global(M, "b", bt));
  CHECK_OK(M, masq_set_global(M, "e", et));
  CHECK(number(M, "sum(b)") == 2);
  CHECK(number(M, "numel(e)") == 0 && number(M, "shape(e)[0]") == 3);
  CHECK(number(M, "ndim(e)") == 2);
  CHECK_OK(M, masq_tensor_release(M, bt));
  CHECK_OK(M, masq_tensor_release(M, et));
  masq_close(M);
}

static void test_readonly_flag(void) {
  masq_state *M = masq_open(NULL);
  const float table[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = table,
                        .flags = MASQ_TENSOR_READONLY};
  masq_tensor *t, *v;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "t", t));
  CHECK_OK(M, eval(M, "v = t[::2]"));
  CHECK_OK(M, masq_get_global(M, "v", &v));
  masq_tensor_desc info;
  CHECK_OK(M, masq_tensor_info(M, v, &info));
  CHECK(info.flags == (MASQ_TENSOR_READONLY | MASQ_TENSOR_HOST)); /* views carry it */
  CHECK(info.strides[0] == 2 && ((const float *)info.data)[2] == 3);
  CHECK_OK(M, masq_tensor_release(M, v));
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
}

static void test_refcounts(void) {
  masq_state *M = masq_open(NULL);
  masq_tensor *s;
  CHECK_OK(M, masq_tensor_scalar(M, 1, &s));
  CHECK_OK(M, masq_tensor_retain(M, s));
  CHECK_OK(M, masq_tensor_retain(M, s));
  CHECK_OK(M, masq_tensor_release(M, s));
  CHECK_OK(M, masq_tensor_release(M, s));
  double v;
  CHECK_OK(M, masq_tensor_item(M, s, &v)); /* one reference left */
  CHECK_OK(M, masq_tensor_release(M, s));
  CHECK_ERR(M, masq_tensor_release(M, s), MASQ_ERR_USAGE, "already released");
  CHECK_ERR(M, masq_tensor_retain(M, s), MASQ_ERR_USAGE, "not a tensor handle");
  CHECK_ERR(M, masq_tensor_item(M, s, &v), MASQ_ERR_USAGE, "not a tensor handle");
  CHECK_OK(M, masq_tensor_release(M, NULL)); /* like free(NULL) */
  /* A pointer masq never returned is caught without being read. */
  int local = 0;
  masq_tensor_desc info;
  CHECK_ERR(M, masq_tensor_info(M, (masq_tensor *)&local, &info), MASQ_ERR_USAGE,
            "masq_tensor_info: t is not a tensor handle");
  CHECK_ERR(M, masq_tensor_info(M, NULL, &info), MASQ_ERR_USAGE, "t is NULL");
  /* Handles of another state are foreign here. */
  masq_state *M2 = masq_open(NULL);
  masq_tensor *other;
  CHECK_OK(M2, masq_tensor_scalar(M2, 2, &other));
  CHECK_ERR(M, masq_set_global(M, "o", other), MASQ_ERR_USAGE, "not a tensor handle");
  masq_close(M2);
  masq_close(M);
}

/* Many handles at once, retained and released in a scrambled order: every
 * live one stays usable and every released one is recognized as such. */
static void test_many_handles(void) {
  enum { N = 500 };
  masq_state *M = masq_open(NULL);
  masq_tensor *h[N];
  int refs[N], bad = 0;
  for (int i = 0; i < N; i++) {
    bad += masq_tensor_scalar(M, i, &h[i]) != MASQ_OK;
    refs[i] = 1 + (i % 3 == 0);
    if (i % 3 == 0) bad += masq_tensor_retain(M, h[i]) != MASQ_OK;
  }
  uint32_t x = 12345;
  for (int round = 0; round < 2 * N; round++) {
    x = x * 1103515245u + 12345u;
    int i = (int)((x >> 8) % N);
    if (refs[i] == 0) {
      bad += masq_tensor_release(M, h[i]) != MASQ_ERR_USAGE;
      continue;
    }
    bad += masq_tensor_release(M, h[i]) != MASQ_OK;
    refs[i]--;
    for (int k = 0; k < N; k += 37) { /* spot checks */
      double v;
      masq_status st = masq_tensor_item(M, h[k], &v);
      bad += refs[k] ? st != MASQ_OK || v != k : st != MASQ_ERR_USAGE;
    }
  }
  CHECK(bad == 0);
  masq_close(M); /* the rest */
}

static void test_bad_descriptions(void) {
  masq_state *M = masq_open(NULL);
  float buf[8] = {0};
  int64_t shape[2] = {2, 3}, neg[2] = {2, -3}, huge[2] = {INT64_MAX / 2, 4};
  int64_t negstride[2] = {-3, 1}, bigstride[2] = {INT64_MAX / 2, 1};
  masq_tensor *t = (masq_tensor *)buf; /* must come back NULL */
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 2, .shape = shape, .data = buf};
  CHECK_ERR(M, masq_tensor_wrap(M, NULL, &t), MASQ_ERR_USAGE, "desc is NULL");
  CHECK(t == NULL);
  CHECK_ERR(M, masq_tensor_wrap(M, &d, NULL), MASQ_ERR_USAGE, "out is NULL");
  d.dtype = (masq_dtype)10; /* 7 became MASQ_UINT8 */
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "unknown dtype 10");
  d.dtype = MASQ_FLOAT32;
  d.ndim = 9;
  CHECK_ERR(M, masq_tensor_new(M, &d, &t), MASQ_ERR_USAGE, "0 to 8 dimensions");
  d.ndim = -1;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "ndim is -1");
  d.ndim = 2;
  d.shape = NULL;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "shape is NULL");
  d.shape = neg;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "negative size -3");
  d.shape = huge;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "too large");
  d.shape = shape;
  d.strides = negstride;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "stride -3 of dimension 0");
  d.strides = bigstride;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "address space");
  {
    /* No element, so no byte is addressed, but a dimension of size 0 with a
     * stride near 2^62 would still overflow when kernels scale it by the
     * element size. */
    int64_t zshape[2] = {0, 2}, zstrides[2] = {INT64_MAX / 2, 1};
    masq_tensor_desc z = d;
    z.shape = zshape;
    z.strides = zstrides;
    CHECK_ERR(M, masq_tensor_wrap(M, &z, &t), MASQ_ERR_USAGE, "data strides reach past the address space");
    CHECK_ERR(M, masq_tensor_new(M, &z, &t), MASQ_ERR_USAGE, "data strides reach past the address space");
    zstrides[0] = 8;
    CHECK_OK(M, masq_tensor_wrap(M, &z, &t));
    masq_tensor_release(M, t);
  }
  d.strides = NULL;
  d.data = (const char *)buf + 1;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "not aligned to 4 bytes");
  d.data = NULL;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "data is NULL");
  d.data = buf;
  d.valid_strides = negstride;
  d.valid = (const uint8_t *)buf;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "valid stride -3");
  d.valid = NULL;
  d.valid_strides = NULL;
  d.flags = 0x80;
  CHECK_ERR(M, masq_tensor_wrap(M, &d, &t), MASQ_ERR_USAGE, "unknown flags");
  CHECK(t == NULL);
  d.flags = 0;
  CHECK_ERR(M, masq_tensor_scalar(M, 1, NULL), MASQ_ERR_USAGE, "out is NULL");
  masq_tensor_desc info;
  CHECK_ERR(M, masq_tensor_contiguous(M, NULL, &t), MASQ_ERR_USAGE, "t is NULL");
  /* After all that the state is fine. */
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_ERR(M, masq_tensor_info(M, t, NULL), MASQ_ERR_USAGE, "out is NULL");
  CHECK_OK(M, masq_tensor_info(M, t, &info));
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
}

/* A wrapped tensor whose only holder is the variable being updated
 * (x = x + 1, the shape whose result may go into a dying operand's
 * storage, docs/LANGUAGE.md) is still never written: the host's buffer
 * keeps its values. The first eval leaves the tensor in a list alone (the
 * host dropped its handle, the global is cleared); in the second, the
 * function takes it out of the list, so its local is the one holder, as
 * in tests/unit/test_reuse.c, where the same program reuses. */
static void test_wrap_never_updated_in_place(void) {
  masq_state *M = masq_open(NULL);
  float x[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = x};
  masq_tensor *t = NULL;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "x", t));
  CHECK_OK(M, masq_tensor_release(M, t));
  CHECK_OK(M, eval(M, "l = [x]\nx = none"));
  CHECK_OK(M, eval(M, "s = sparse_coo([[1]], [10.0], [4])\n"
                      "f = fn(l) { a = l[0]; l[0] = 0\n"
                      "  for i in range(3) { a = a + 1; a = a.add(s, alpha=2); a = a - s }\n"
                      "  return a }\n"
                      "r = f(l)"));
  CHECK(x[0] == 1 && x[1] == 2 && x[2] == 3 && x[3] == 4);
  CHECK(number(M, "r[1]") == 35 && number(M, "r[0]") == 4);
  masq_close(M);
}

int main(void) {
  test_wrap_zero_copy();
  test_wrap_strided_and_masked();
  test_release_callback();
  test_new_copies();
  test_scalars_and_items();
  test_dtypes_and_empty();
  test_readonly_flag();
  test_refcounts();
  test_many_handles();
  test_bad_descriptions();
  test_wrap_never_updated_in_place();
  return report("test_tensor");
}
