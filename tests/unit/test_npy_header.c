/* test_npy_header.c - the .npy reader (runtime/io/npy.c) on headers written
 * out here: the forms numpy writes or reads (keys in any order, a trailing
 * comma or none, tabs and newlines, Python 2's "3L", format versions 1 to
 * 3, '=' and '|' byte orders, every dtype masq reads) give the shape,
 * dtype and values they say; each way a header can be wrong gives its own
 * message, naming the file (tests/io's fixtures and tests/errors cover a
 * few of these through load(); this covers every one of them). */
#include <stdio.h>
#include <string.h>

#include "../../runtime/io/npy.h"
#include "../../runtime/tensor/tensor.h"

#include "unit.h"

/* A .npy image: the magic, version [major], the header [dict] (padded
 * with spaces to [pad] more bytes), then [ndata] bytes of data. */
static size_t image(uint8_t *out, int major, const char *dict, size_t pad, const uint8_t *data,
                    size_t ndata) {
  size_t k = strlen(dict), pre = major == 1 ? 10 : 12, hlen = k + pad;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (uint8_t)major, out[7] = 0;
  for (int i = 0; i < (major == 1 ? 2 : 4); i++) out[8 + i] = (uint8_t)(hlen >> (8 * i));
  memcpy(out + pre, dict, k);
  memset(out + pre + k, ' ', pad);
  if (ndata) memcpy(out + pre + hlen, data, ndata);
  return pre + hlen + ndata;
}

typedef struct parse_call {
  const uint8_t *p;
  size_t n;
  mq_tensor *t;
} parse_call;
static void run_parse(mq_state *S_, void *ud) {
  parse_call *c = ud;
  c->t = mq_npy_parse(S, c->p, c->n, "'x.npy'");
}

static uint8_t buf[1 << 15];

/* [dict] with [ndata] bytes of data must fail with [want] in the message. */
static void refused(int major, const char *dict, size_t ndata, const char *want) {
  static const uint8_t zeros[64];
  size_t n = image(buf, major, dict, 1, zeros, ndata);
  parse_call c = {buf, n, NULL};
  bool ok = mq_protect(S, run_parse, &c) != MASQ_OK && strstr(S->err_message.data, want) &&
            strstr(S->err_message.data, "'x.npy'");
  if (!ok)
    printf("FAIL npy_header: %s -> %s, expected \"%s\"\n", dict,
           c.t ? "no error" : S->err_message.data, want);
  CHECK(ok);
}

/* [dict] with [data] must load as dtype [dt], shape [shape] (nd dims),
 * its first entry [first] (as a double). */
static void loads(int major, const char *dict, const uint8_t *data, size_t ndata, mq_dtype dt, int nd,
                  const int64_t *shape, double first) {
  size_t n = image(buf, major, dict, 3, data, ndata);
  parse_call c = {buf, n, NULL};
  bool ok = mq_protect(S, run_parse, &c) == MASQ_OK && c.t->dtype == dt && c.t->ndim == nd;
  for (int d = 0; ok && d < nd; d++) ok = c.t->shape[d] == shape[d];
  if (ok && c.t->numel) ok = mq_elem_f64(dt, mq_tensor_data(c.t)) == first;
  if (!ok)
    printf("FAIL npy_header: %s -> %s\n", dict, c.t ? "a different tensor" : S->err_message.data);
  CHECK(ok);
}

static void tests(mq_state *S_, void *ud) {
  static const uint8_t one_f4[] = {0, 0, 0x80, 0x3f}, b2[] = {2, 0}, minus_one[] = {0xff, 0xff, 0xff, 0xff};
  static const uint8_t u2[] = {0x34, 0x12}, f2[] = {0x00, 0x3c}, i8v[8] = {7};
  int64_t s1[] = {1}, s12[] = {1, 2}, s0[] = {0};
  /* what numpy writes and reads */
  loads(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", one_f4, 4, MQ_DT_F32, 1, s1, 1);
  loads(2, "{'shape': (1,), 'descr': '<f4', 'fortran_order': False}", one_f4, 4, MQ_DT_F32, 1, s1, 1);
  loads(3, "{\"descr\":\t\"<f4\",\n\"fortran_order\": True,\r\"shape\": (1L,)}", one_f4, 4, MQ_DT_F32, 1,
        s1, 1);
  loads(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (1, 2), }", b2, 2, MQ_DT_BOOL, 2, s12, 1);
  loads(1, "{'descr': '=i4', 'fortran_order': False, 'shape': (1,), }", minus_one, 4, MQ_DT_I32, 1, s1,
        -1);
  loads(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }", minus_one, 1, MQ_DT_I8, 1, s1,
        -1);
  loads(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", u2, 2, MQ_DT_I64, 1, s1, 0x1234);
  loads(1, "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }", minus_one, 4, MQ_DT_I64, 1, s1,
        4294967295.0);
  loads(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }", minus_one, 1, MQ_DT_U8, 1, s1,
        255);
  loads(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }", f2, 2, MQ_DT_F16, 1, s1, 1);
  loads(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", i8v, 8, MQ_DT_I64, 0, NULL, 7);
  loads(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (0,), }", NULL, 0, MQ_DT_I64, 1, s0, 0);

  /* every way the header can be wrong */
  refused(1, "['descr']", 0, "malformed header: expected '{' at byte 0");
  refused(1, "{descr: '<f4'}", 0, "expected a quoted string");
  refused(1, "{'descr", 0, "expected a closing quote");
  refused(1, "{'des\\'cr': 1}", 0, "expected a closing quote");
  refused(1, "{'descr' '<f4'}", 0, "expected ':' after a key");
  refused(1, "{'descr': '<f4' 'shape': ()}", 0, "expected ',' or '}'");
  refused(1, "{'descr': '<f4'} x", 0, "expected only padding after '}'");
  refused(1, "{'fortran_order': Maybe}", 0, "expected True or False for 'fortran_order'");
  refused(1, "{'fortran_order': Fals}", 0, "expected True or False for 'fortran_order'");
  refused(1, "{'shape': [1]}", 0, "expected a tuple for 'shape'");
  refused(1, "{'shape': (a,)}", 0, "expected a dimension size in 'shape'");
  refused(1, "{'shape': (1,", 0, "expected a dimension size in 'shape'");
  refused(1, "{'shape': (1", 0, "expected ',' or ')' in 'shape'");
  refused(1, "{'shape': (1 2)}", 0, "expected ',' or ')' in 'shape'");
  refused(1, "{'shape': (99999999999999999999,)}", 0, "a dimension too large for masq");
  refused(1, "{'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1)}", 0, "more than 8 dimensions");
  refused(1, "{'descr': [('a', '<f4')]}", 0, "holds a structured array");
  refused(1, "{'dtype': '<f4'}", 0, "an unexpected key 'dtype'");
  refused(1, "{'fortran_order': False, 'shape': ()}", 0, "a header without 'descr'");
  refused(1, "{'descr': '<f4', 'shape': ()}", 0, "a header without 'fortran_order'");
  refused(1, "{'descr': '<f4', 'fortran_order': False}", 0, "a header without 'shape'");
  refused(1, "{'descr': '<c8', 'fortran_order': False, 'shape': ()}", 0, "dtype '<c8'");
  refused(1, "{'descr': '<f4x', 'fortran_order': False, 'shape': ()}", 0, "dtype '<f4x'");
  refused(1, "{'descr': '<f', 'fortran_order': False, 'shape': ()}", 0, "dtype '<f'");
  refused(1, "{'descr': '<f9', 'fortran_order': False, 'shape': ()}", 0, "dtype '<f9'");
  refused(1, "{'descr': '<f0', 'fortran_order': False, 'shape': ()}", 0, "dtype '<f0'");
  refused(1, "{'descr': '<f4000000000000000000', 'fortran_order': False, 'shape': ()}", 0,
          "dtype '<f4000000000000'");
  refused(1, "{'descr': '>f4', 'fortran_order': False, 'shape': ()}", 4, "big-endian data ('>f4')");
  refused(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2)}", 8, "Fortran order");
  refused(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4)}", 0,
          "an impossible shape");
  refused(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 4,
          "truncated: header says 8 bytes of data, file has 4");
  refused(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 8,
          "has 8 bytes after its header; its header says 4 bytes of data");

  /* the preamble */
  struct {
    const char *bytes;
    size_t n;
    const char *want;
  } pre[] = {
      {"\x93NUMPX\x01\x00\x00\x00", 10, "is not a .npy file"},
      {"\x93NUM", 4, "is truncated: it ends after 4 bytes, inside the .npy preamble"},
      {"\x93NUMPY\x01", 7, "is truncated: it ends after 7 bytes"},
      {"\x93NUMPY\x02\x00\x00\x00", 10, "is truncated: it ends after 10 bytes"},
      {"\x93NUMPY\x04\x00\x00\x00\x00\x00", 12, "format version 4.0"},
      {"\x93NUMPY\x00\x00\x00\x00\x00\x00", 12, "format version 0.0"},
      {"\x93NUMPY\x02\x00\x20\x4e\x00\x00", 12, "has a header of 20000 bytes; the limit is 10000"},
      {"\x93NUMPY\x01\x00\x40\x00{}", 12, "is truncated: its header needs 74 bytes, the file has 12"},
  };
  for (size_t i = 0; i < sizeof pre / sizeof *pre; i++) {
    parse_call c = {(const uint8_t *)pre[i].bytes, pre[i].n, NULL};
    bool ok = mq_protect(S, run_parse, &c) != MASQ_OK && strstr(S->err_message.data, pre[i].want);
    if (!ok) printf("FAIL npy_header: preamble %zu: %s\n", i, c.t ? "no error" : S->err_message.data);
    CHECK(ok);
  }
}

int main(void) { return unit_main("test_npy_header", tests); }
