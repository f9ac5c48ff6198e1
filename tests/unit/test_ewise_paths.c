/* test_ewise_paths.c - every elementwise kernel on each of its stride
 * paths (runtime/kernels/elementwise.c, unary.c, binary.c).
 *
 * A kernel is instantiated per op and dtype from one element expression,
 * and each instantiation has a loop per stride pattern of its operands:
 * contiguous, one operand broadcast (stride 0: a tensor with a number,
 * or a number with a tensor) and strided. The goldens and the conformance
 * suite pin the values on the paths a script happens to take; here every
 * op row of ops_unary.h and ops_binary.h, in every dtype it has a kernel
 * for, runs on every path over edge values (signed zeros, NaN, infinities,
 * huge and tiny numbers, INT64_MIN, shift amounts past 63, zero divisors
 * in masked-out slots), and each path must give the contiguous path's
 * bits (NaN: any NaN). Binary ops run on every pair of edge values, so
 * each branch inside an element expression (a NaN test, a zero divisor)
 * is taken on every path.
 *
 * where's select, in each dtype and on each of its paths, is checked
 * against c ? a : b written out.
 *
 * The conversions between the ten dtypes (100 kernels) are checked against
 * the rules written out here (an int wraps around; a float goes to an int
 * through truncation, NaN and out of range giving INT64_MIN; a half type
 * rounds from float32), on their paths: contiguous, a broadcast source, a
 * strided source into a strided destination and into a contiguous one. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../runtime/tensor/half.h"
#include "../../runtime/tensor/internal.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/tensor/tensor.h"

#include "unit.h"

/* --- values ------------------------------------------------------------------ */

static const double fvals[] = {0.0,   -0.0,  1.0,    -1.0,   0.5,    -0.5,   2.0,    3.0,
                               -2.0,  2.5,   -7.25,  0.75,   1e30,   -1e-30, 1e-40,  100.0,
                               -63.0, 710.0, INFINITY, -INFINITY, NAN, 0.999, -1.5, 64.0};
#define NF ((int64_t)(sizeof fvals / sizeof fvals[0]))
static const int64_t ivals[] = {0,  1,  -1, 2,  3,  -2, 7,         -7,        63, 64,
                                65, -64, 100, -3, INT64_MAX, INT64_MIN, 5,  -100,
                                1 << 20, -(1 << 20), 2, 9, -9, 31};
#define NI ((int64_t)(sizeof ivals / sizeof ivals[0]))
#define NV NF /* both lists have this many entries */
_Static_assert(sizeof fvals / sizeof fvals[0] == sizeof ivals / sizeof ivals[0], "one length");

/* Value k of the list for a compute dtype (bool: mixed). */
static uint8_t bval(int k) { return (uint8_t)((k * 7 + k / 3) & 1); }
static void put(mq_dtype dt, void *base, int64_t at, int k) {
  switch (dt) {
  case MQ_DT_BOOL: ((uint8_t *)base)[at] = bval(k); break;
  case MQ_DT_I64: ((int64_t *)base)[at] = ivals[k]; break;
  case MQ_DT_F32: ((float *)base)[at] = (float)fvals[k]; break;
  default: ((double *)base)[at] = fvals[k]; break;
  }
}

/* Whether the element at a equals the one at b: the same bits, or both NaN
 * (which NaN comes out of an operation on NaNs is the compiler's choice;
 * no result of masq depends on it). */
static bool same_elem(mq_dtype dt, const void *a, const void *b) {
  size_t es = mq_dtype_size(dt);
  if (memcmp(a, b, es) == 0) return true;
  if (dt == MQ_DT_F32) {
    float x, y;
    memcpy(&x, a, 4), memcpy(&y, b, 4);
    return isnan(x) && isnan(y);
  }
  if (dt == MQ_DT_F64) {
    double x, y;
    memcpy(&x, a, 8), memcpy(&y, b, 8);
    return isnan(x) && isnan(y);
  }
  return false;
}

/* Element (i, j) of a 2-D tensor, or i of a 1-D one (j 0). */
static const void *at(const mq_tensor *t, int64_t i, int64_t j) {
  int64_t off = i * t->strides[0] + (t->ndim > 1 ? j * t->strides[1] : 0);
  return (const char *)mq_tensor_data(t) + off * (int64_t)mq_dtype_size((mq_dtype)t->dtype);
}

static int mismatches;

/* Compares got (i, j) with want (i, j), or want (j, i) when [swap]. */
static void compare(const char *what, const char *op, mq_dtype dt, const mq_tensor *want,
                    const mq_tensor *got, bool swap) {
  int64_t n0 = got->shape[0], n1 = got->ndim > 1 ? got->shape[1] : 1;
  bool ok = got->dtype == want->dtype && got->ndim == want->ndim;
  for (int64_t i = 0; ok && i < n0; i++)
    for (int64_t j = 0; ok && j < n1; j++)
      if (!same_elem((mq_dtype)got->dtype, at(got, i, j), swap ? at(want, j, i) : at(want, i, j))) {
        ok = false;
        if (mismatches++ < 20)
          printf("FAIL ewise_paths: %s of %s on %s differs from the contiguous path at (%lld, %lld)\n",
                 what, op, mq_dtype_name(dt), (long long)i, (long long)j);
      }
  CHECK(ok);
}

/* A view of [base] (n entries a row, rows rows) with the given strides. */
static mq_tensor *view2(mq_tensor *base, int64_t rows, int64_t n, int64_t s0, int64_t s1) {
  int64_t shape[2] = {rows, n}, st[2] = {s0, s1};
  return mq_tensor_view(S, base, 2, shape, st, 0);
}

/* Runs fn inside an error boundary: true if it returned, false if it
 * raised one of the errors that mean "no kernel for this dtype" (any other
 * error fails the test). */
static bool attempt(mq_pfunc fn, void *ud, const char *op, mq_dtype dt) {
  if (mq_protect(S, fn, ud) == MASQ_OK) return true;
  const char *m = S->err_message.data ? S->err_message.data : "";
  bool refused = strstr(m, "not defined") || strstr(m, "only defined") || strstr(m, "not supported");
  if (!refused) printf("FAIL ewise_paths: %s on %s: %s\n", op, mq_dtype_name(dt), m);
  CHECK(refused);
  return false;
}

/* --- unary ops ------------------------------------------------------------------ */

static const char *const un_names[] = {
#define X(E, name, ...) name,
    MQ_UNARY_OPS(X)
#undef X
};

typedef struct unary_case {
  mq_unop op;
  mq_dtype dt;
  const double *prm;
} unary_case;

/* The op on the values contiguous, then as a view with stride 3. */
static void unary_paths(mq_state *S_, void *ud) {
  const unary_case *c = ud;
  int64_t n = NV, n3 = 3 * NV;
  mq_tensor *dense = mq_tensor_new(S, c->dt, 1, &n), *wide = mq_tensor_new(S, c->dt, 1, &n3);
  for (int k = 0; k < NV; k++) put(c->dt, mq_tensor_data(dense), k, k), put(c->dt, mq_tensor_data(wide), 3 * k, k);
  int64_t st = 3;
  mq_tensor *strided = mq_tensor_view(S, wide, 1, &n, &st, 0);
  mq_tensor *want = mq_unary_p(S, c->op, dense, c->prm);
  compare("the strided path", un_names[c->op], c->dt, want, mq_unary_p(S, c->op, strided, c->prm),
          false);
}

static void test_unary(void) {
  static const double none[3] = {NAN, NAN, NAN}, some[3] = {0.5, 2.0, 1.0},
                      other[3] = {-1.0, 1e30, -3.0};
  const double *prms[3] = {none, some, other};
  for (int op = 0; op < MQ_UN__COUNT; op++)
    for (int dt = 0; dt < MQ_DT__COUNT; dt++)
      for (int p = 0; p < 3; p++) {
        unary_case c = {(mq_unop)op, (mq_dtype)dt, prms[p]};
        if (!attempt(unary_paths, &c, un_names[op], (mq_dtype)dt)) break;
      }
}

/* --- binary ops ----------------------------------------------------------------- */

static const char *const bin_names[] = {
#define X(E, name, ...) name,
    MQ_BINARY_OPS(X)
#undef X
};

typedef struct binary_case {
  mq_binop op;
  mq_dtype dt;
} binary_case;

/* x op y for every pair (x, y) of the values, x = value i and y = value j
 * at (i, j): both operands contiguous; x a row's number and y a tensor
 * (stride 0, 1); the transpose of that, with y the number; both strided
 * (transposed storage); y strided with x contiguous or a number. For an int divisor or exponent, y's mask leaves
 * out zeros and negatives, which the kernels still compute on. */
static void binary_paths(mq_state *S_, void *ud) {
  const binary_case *c = ud;
  mq_dtype dt = c->dt;
  int64_t sq[2] = {NV, NV}, n = NV;
  mq_tensor *xs = mq_tensor_new(S, dt, 2, sq), *ys = mq_tensor_new(S, dt, 2, sq);
  mq_tensor *xt = mq_tensor_new(S, dt, 2, sq), *yt = mq_tensor_new(S, dt, 2, sq);
  mq_tensor *vals = mq_tensor_new(S, dt, 1, &n);
  for (int i = 0; i < NV; i++) {
    put(dt, mq_tensor_data(vals), i, i);
    for (int j = 0; j < NV; j++) {
      put(dt, mq_tensor_data(xs), i * NV + j, i), put(dt, mq_tensor_data(ys), i * NV + j, j);
      put(dt, mq_tensor_data(xt), j * NV + i, i), put(dt, mq_tensor_data(yt), j * NV + i, j);
    }
  }
  mq_tensor *mask = NULL;
  if (dt != MQ_DT_F32 && dt != MQ_DT_F64) {
    mask = mq_tensor_new(S, MQ_DT_BOOL, 2, sq);
    uint8_t *m = mq_tensor_data(mask);
    for (int i = 0; i < NV; i++)
      for (int j = 0; j < NV; j++) m[i * NV + j] = dt == MQ_DT_BOOL ? bval(j) : ivals[j] > 0;
  }
  mq_tensor *rowx = view2(vals, NV, NV, 1, 0), *coly = view2(vals, NV, NV, 0, 1);
  mq_tensor *sx = view2(xt, NV, NV, 1, NV), *sy = view2(yt, NV, NV, 1, NV);
  mq_tensor *want, *got;
  /* y as the row's number: the transposed pairs, (y_i, x_j) at (i, j) */
  mq_tensor *rowy = view2(vals, NV, NV, 0, 1), *colx = view2(vals, NV, NV, 1, 0);
  if (mask) {
    mq_tensor *mt = mq_tensor_new(S, MQ_DT_BOOL, 2, sq);
    uint8_t *m = mq_tensor_data(mt);
    for (int i = 0; i < NV; i++)
      for (int j = 0; j < NV; j++) m[i * NV + j] = dt == MQ_DT_BOOL ? bval(i) : ivals[i] > 0;
    mq_tensor_set_mask(S, ys, mask), mq_tensor_set_mask(S, coly, mask), mq_tensor_set_mask(S, sy, mask);
    mq_tensor_set_mask(S, colx, mt);
  }
  want = mq_binary(S, c->op, xs, ys);
  got = mq_binary(S, c->op, rowx, coly);
  compare("x a number, y a tensor", bin_names[c->op], dt, mq_get_data(S, want), mq_get_data(S, got), false);
  got = mq_binary(S, c->op, rowy, colx);
  compare("x a tensor, y a number", bin_names[c->op], dt, mq_get_data(S, want), mq_get_data(S, got), true);
  got = mq_binary(S, c->op, sx, sy);
  compare("the strided path", bin_names[c->op], dt, mq_get_data(S, want), mq_get_data(S, got), false);
  /* one operand strided, the other contiguous or a number */
  got = mq_binary(S, c->op, xs, sy);
  compare("x contiguous, y strided", bin_names[c->op], dt, mq_get_data(S, want), mq_get_data(S, got),
          false);
  got = mq_binary(S, c->op, rowx, sy);
  compare("x a number, y strided", bin_names[c->op], dt, mq_get_data(S, want), mq_get_data(S, got),
          false);
}

static void test_binary(void) {
  for (int op = 0; op < MQ_BIN__COUNT; op++)
    for (int dt = 0; dt < MQ_DT__COUNT; dt++) {
      binary_case c = {(mq_binop)op, (mq_dtype)dt};
      attempt(binary_paths, &c, bin_names[op], (mq_dtype)dt);
    }
}

/* --- conversions ---------------------------------------------------------------- */

/* A source value: an integer, or a float (a half type's as float32). */
typedef struct val {
  bool isf;
  double f;
  int64_t i;
} val;

static val load(mq_dtype dt, const void *p) {
  val v = {false, 0, 0};
  switch (dt) {
  case MQ_DT_BOOL: v.i = *(const uint8_t *)p; break;
  case MQ_DT_I64: memcpy(&v.i, p, 8); break;
  case MQ_DT_I8: v.i = *(const int8_t *)p; break;
  case MQ_DT_I16: { int16_t x; memcpy(&x, p, 2); v.i = x; } break;
  case MQ_DT_I32: { int32_t x; memcpy(&x, p, 4); v.i = x; } break;
  case MQ_DT_U8: v.i = *(const uint8_t *)p; break;
  case MQ_DT_F32: { float x; memcpy(&x, p, 4); v.isf = true, v.f = x; } break;
  case MQ_DT_F64: memcpy(&v.f, p, 8), v.isf = true; break;
  case MQ_DT_F16: { uint16_t h; memcpy(&h, p, 2); v.isf = true, v.f = mq_f16_to_f32(h); } break;
  default: { uint16_t h; memcpy(&h, p, 2); v.isf = true, v.f = mq_bf16_to_f32(h); } break;
  }
  return v;
}

/* The value stored in dtype dt, by the rules in the header comment. */
static void store(mq_dtype dt, val v, void *p) {
  int64_t i = v.i;
  if (v.isf) i = v.f >= -9223372036854775808.0 && v.f < 9223372036854775808.0 ? (int64_t)v.f : INT64_MIN;
  uint64_t u = (uint64_t)i;
  float f = v.isf ? (float)v.f : (float)v.i;
  switch (dt) {
  case MQ_DT_BOOL: *(uint8_t *)p = v.isf ? v.f != 0 : v.i != 0; break;
  case MQ_DT_I64: memcpy(p, &i, 8); break;
  case MQ_DT_I8: *(int8_t *)p = (int8_t)(u & 0xff); break;
  case MQ_DT_I16: { int16_t x = (int16_t)(u & 0xffff); memcpy(p, &x, 2); } break;
  case MQ_DT_I32: { int32_t x = (int32_t)(u & 0xffffffff); memcpy(p, &x, 4); } break;
  case MQ_DT_U8: *(uint8_t *)p = (uint8_t)(u & 0xff); break;
  case MQ_DT_F32: memcpy(p, &f, 4); break;
  case MQ_DT_F64: { double d = v.isf ? v.f : (double)v.i; memcpy(p, &d, 8); } break;
  case MQ_DT_F16: { uint16_t h = mq_f32_to_f16(f); memcpy(p, &h, 2); } break;
  default: { uint16_t b = mq_f32_to_bf16(f); memcpy(p, &b, 2); } break;
  }
}

/* Source values: the float list (with float64-only ones, 1e300 and 2^63,
 * and the ints' extremes as floats) and the int list, each stored in the
 * source dtype by the same rules. */
static const double conv_f[] = {0.0, -0.0, 0.4, -0.6, 1.5, -1.5, 127.9, 128.0, 255.0, 256.0,
                                -129.0, 32768.0, 65504.0, 65520.0, 1e10, -1e10, 3e38, 1e300,
                                9.3e18, -9.3e18, 1e-40, NAN, INFINITY, -INFINITY};
static const int64_t conv_i[] = {0, 1, -1, 127, 128, 255, 256, -129, 32767, 32768, 65535,
                                 2147483648LL, -2147483649LL, 9007199254740993LL, INT64_MAX,
                                 INT64_MIN, 16777217, -16777217, 3, -3, 70000, -70000, 2, 5};
#define NC ((int64_t)(sizeof conv_f / sizeof conv_f[0]))
_Static_assert(sizeof conv_f / sizeof conv_f[0] == sizeof conv_i / sizeof conv_i[0], "one length");

static void test_conversions(void) {
  for (int sd = 0; sd < MQ_DT__ALL; sd++) {
    mq_dtype src = (mq_dtype)sd;
    size_t ss = mq_dtype_size(src);
    int64_t n = 2 * NC, n3 = 3 * n;
    mq_tensor *a = mq_tensor_new(S, src, 1, &n), *a3 = mq_tensor_new(S, src, 1, &n3);
    for (int64_t k = 0; k < n; k++) {
      val v = k < NC ? (val){true, conv_f[k], 0} : (val){false, 0, conv_i[k - NC]};
      store(src, v, (char *)mq_tensor_data(a) + k * (int64_t)ss);
      store(src, v, (char *)mq_tensor_data(a3) + 3 * k * (int64_t)ss);
    }
    for (int dd = 0; dd < MQ_DT__ALL; dd++) {
      mq_dtype dst = (mq_dtype)dd;
      size_t ds = mq_dtype_size(dst);
      char want[8], gotb[8];
      /* contiguous, against the rules */
      mq_tensor *o = mq_tensor_new(S, dst, 1, &n);
      mq_kernel_convert(S, o, a);
      bool ok = true;
      for (int64_t k = 0; k < n && ok; k++) {
        store(dst, load(src, (char *)mq_tensor_data(a) + k * (int64_t)ss), want);
        memcpy(gotb, (char *)mq_tensor_data(o) + k * (int64_t)ds, ds);
        ok = memcmp(want, gotb, ds) == 0 ||
             ((dst == MQ_DT_F32 || dst == MQ_DT_F64) && same_elem(dst, want, gotb));
        if (!ok)
          printf("FAIL ewise_paths: %s -> %s, entry %lld\n", mq_dtype_name(src), mq_dtype_name(dst),
                 (long long)k);
      }
      CHECK(ok);
      /* a broadcast source: row i is a fill with entry i */
      int64_t sq[2] = {n, n}, bst[2] = {1, 0};
      mq_tensor *b = mq_tensor_new(S, dst, 2, sq);
      mq_kernel_convert(S, b, mq_tensor_view(S, a, 2, sq, bst, 0));
      ok = true;
      for (int64_t i = 0; i < n && ok; i++)
        for (int64_t j = 0; j < n && ok; j++) ok = same_elem(dst, at(b, i, j), at(o, i, 0));
      CHECK(ok);
      /* strided source (stride 3) into a strided destination (stride 2) */
      int64_t n2 = 2 * n, s3 = 3, s2 = 2;
      mq_tensor *o2 = mq_tensor_new(S, dst, 1, &n2);
      mq_tensor *ov = mq_tensor_view(S, o2, 1, &n, &s2, 0);
      mq_kernel_convert(S, ov, mq_tensor_view(S, a3, 1, &n, &s3, 0));
      ok = true;
      for (int64_t k = 0; k < n && ok; k++) ok = same_elem(dst, at(ov, k, 0), at(o, k, 0));
      CHECK(ok);
      /* strided source into a contiguous destination */
      mq_tensor *oc = mq_tensor_new(S, dst, 1, &n);
      mq_kernel_convert(S, oc, mq_tensor_view(S, a3, 1, &n, &s3, 0));
      ok = true;
      for (int64_t k = 0; k < n && ok; k++) ok = same_elem(dst, at(oc, k, 0), at(o, k, 0));
      CHECK(ok);
    }
  }
}

/* --- where ----------------------------------------------------------------------- */

/* where(c, a, b) in each compute dtype against c ? a : b written out, on
 * the select's paths: all contiguous, b a number (stride 0), all strided
 * (a view with stride 2 of each), a strided, b strided. */
static void test_where(void) {
  int64_t n = NV, n2 = 2 * NV, two = 2;
  mq_tensor *c = mq_tensor_new(S, MQ_DT_BOOL, 1, &n), *c2 = mq_tensor_new(S, MQ_DT_BOOL, 1, &n2);
  for (int k = 0; k < NV; k++)
    ((uint8_t *)mq_tensor_data(c))[k] = ((uint8_t *)mq_tensor_data(c2))[2 * k] = bval(k);
  for (int dt = 0; dt < MQ_DT__COUNT; dt++) {
    mq_tensor *a = mq_tensor_new(S, (mq_dtype)dt, 1, &n), *b = mq_tensor_new(S, (mq_dtype)dt, 1, &n);
    mq_tensor *a2 = mq_tensor_new(S, (mq_dtype)dt, 1, &n2), *b2 = mq_tensor_new(S, (mq_dtype)dt, 1, &n2);
    for (int k = 0; k < NV; k++) {
      put((mq_dtype)dt, mq_tensor_data(a), k, k), put((mq_dtype)dt, mq_tensor_data(a2), 2 * k, k);
      put((mq_dtype)dt, mq_tensor_data(b), k, NV - 1 - k);
      put((mq_dtype)dt, mq_tensor_data(b2), 2 * k, NV - 1 - k);
    }
    int64_t zero = 0;
    mq_tensor *bnum = mq_tensor_view(S, b, 1, &n, &zero, 0); /* b's entry 0 everywhere */
    mq_tensor *sc = mq_tensor_view(S, c2, 1, &n, &two, 0), *sa = mq_tensor_view(S, a2, 1, &n, &two, 0),
              *sb = mq_tensor_view(S, b2, 1, &n, &two, 0);
    mq_tensor *o1 = mq_tensor_new(S, (mq_dtype)dt, 1, &n), *o2 = mq_tensor_new(S, (mq_dtype)dt, 1, &n),
              *o3 = mq_tensor_new(S, (mq_dtype)dt, 1, &n);
    mq_kernel_where(S, o1, c, a, b);
    mq_kernel_where(S, o2, c, a, bnum);
    mq_kernel_where(S, o3, sc, sa, sb);
    mq_tensor *o4 = mq_tensor_new(S, (mq_dtype)dt, 1, &n), *o5 = mq_tensor_new(S, (mq_dtype)dt, 1, &n);
    mq_kernel_where(S, o4, c, sa, b);
    mq_kernel_where(S, o5, c, a, sb);
    bool ok = true;
    for (int64_t k = 0; k < n && ok; k++) {
      bool pick = ((uint8_t *)mq_tensor_data(c))[k];
      ok = memcmp(at(o1, k, 0), pick ? at(a, k, 0) : at(b, k, 0), mq_dtype_size((mq_dtype)dt)) == 0 &&
           memcmp(at(o2, k, 0), pick ? at(a, k, 0) : at(b, 0, 0), mq_dtype_size((mq_dtype)dt)) == 0 &&
           memcmp(at(o3, k, 0), at(o1, k, 0), mq_dtype_size((mq_dtype)dt)) == 0 &&
           memcmp(at(o4, k, 0), at(o1, k, 0), mq_dtype_size((mq_dtype)dt)) == 0 &&
           memcmp(at(o5, k, 0), at(o1, k, 0), mq_dtype_size((mq_dtype)dt)) == 0;
    }
    CHECK(ok);
  }
}

static void tests(mq_state *S_, void *ud) {
  test_where();
  test_conversions();
  test_unary();
  test_binary();
}

int main(void) { return unit_main("test_ewise_paths", tests); }
