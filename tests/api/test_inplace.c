/* test_inplace.c - torch's in-place spellings (x.add_(y), x[i] = v,
 * x[i] += v) update the script's variable and nothing else a host can see:
 * a wrapped buffer (docs/RELIABILITY.md, "Memory a host shares"), a handle
 * the host holds to the old value, a handle taken from masq_get_global
 * before the update. Each would show the new values if an update wrote
 * into shared storage (vm/vm.c, dying_operand; runtime/kernels/update.h). */
#include "check.h"

/* The float32 entries of the handle [t] (contiguous, 3 of them) equal [want]. */
static int holds(masq_state *M, const masq_tensor *t, const float *want) {
  masq_tensor_desc d;
  if (masq_tensor_info(M, t, &d) != MASQ_OK || d.dtype != MASQ_FLOAT32 || d.ndim != 1 ||
      d.shape[0] != 3)
    return 0;
  const float *p = d.data;
  for (int i = 0; i < 3; i++)
    if (p[i * d.strides[0]] != want[i]) return 0;
  return 1;
}

/* [src] run, then the number it left in global r (-12345 if it failed). */
static double run_r(masq_state *M, const char *src) {
  double v = -12345;
  CHECK_OK(M, eval(M, src));
  CHECK_OK(M, masq_get_number(M, "r", &v));
  return v;
}

/* A wrapped buffer is the host's: the updates make a copy, every time. */
static void test_wrapped_buffer(void) {
  masq_state *M = masq_open(NULL);
  float buf[3] = {1, 2, 3}, same[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = buf};
  masq_tensor *t = NULL;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "x", t));
  CHECK_OK(M, masq_tensor_release(M, t)); /* the global is the only holder */
  CHECK_OK(M, eval(M, "x[0] = 5\nx.add_(1)\nx[1:3] += 10\nx.mul_(2)\nx.zero_()\nx.copy_(tensor([7, 8, 9]))"));
  CHECK(buf[0] == 1 && buf[1] == 2 && buf[2] == 3);
  CHECK(run_r(M, "r = item(sum(x))") == 24);
  /* x op= v, torch's in-place op, is an update too */
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "x", t));
  CHECK_OK(M, masq_tensor_release(M, t));
  CHECK_OK(M, eval(M, "for i in range(3) { x += 1\n x *= 2 }"));
  CHECK(memcmp(buf, same, sizeof buf) == 0);
  CHECK(run_r(M, "r = item(sum(x))") == 90);
  /* in a function, on a local bound to the wrapped tensor */
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "h", t));
  CHECK_OK(M, masq_tensor_release(M, t));
  CHECK(run_r(M, "fn f(a) {\n for i in range(3) { a[i] = -1\n a.neg_() }\n return a }\nr = item(sum(f(h)))") == 1);
  CHECK(memcmp(buf, same, sizeof buf) == 0);
  masq_close(M);
}

/* A handle the host keeps, to a tensor masq owns, sees its values as they
 * were, whatever the script does to the variable bound to it. */
static void test_host_handles(void) {
  masq_state *M = masq_open(NULL);
  float v[3] = {1, 2, 3}, old[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = v};
  masq_tensor *t = NULL, *g = NULL;
  CHECK_OK(M, masq_tensor_new(M, &d, &t)); /* masq's own copy */
  CHECK_OK(M, masq_set_global(M, "x", t));
  CHECK_OK(M, eval(M, "x.add_(1)\nx[0] = 9\nx[x > 2] *= 2"));
  CHECK(holds(M, t, old));
  CHECK_OK(M, masq_get_global(M, "x", &g));
  float now[3] = {18, 6, 8};
  CHECK(holds(M, g, now));
  CHECK_OK(M, eval(M, "for i in range(3) { x[i] = 0\n x.sub_(1) }"));
  CHECK(holds(M, g, now)); /* taken before: unchanged */
  CHECK(holds(M, t, old));
  CHECK(run_r(M, "r = item(sum(x))") == -6);
  CHECK_OK(M, eval(M, "for i in range(3) { x += 1 }"));
  CHECK(holds(M, g, now));
  CHECK(holds(M, t, old));
  CHECK(run_r(M, "r = item(sum(x))") == 3);
  CHECK_OK(M, masq_tensor_release(M, g));
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
}

int main(void) {
  test_wrapped_buffer();
  test_host_handles();
  printf("test_inplace: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
