/* test_host_shared.c - memory a tensor does not own (masq_tensor_wrap)
 * changes between two calls, and masq neither crashes nor reads what it
 * checked in an earlier call as if it were still true (docs/RELIABILITY.md,
 * "Memory a host shares"). Each test wraps a buffer, uses it in one
 * evaluation, rewrites it as a careless or hostile host may, and uses what
 * the first evaluation made in the next: a sparse tensor built from it, an
 * autograd graph recorded from it. Under ASan every one of them read or
 * wrote out of bounds before the fix. Also: bool bytes other than 0 and 1
 * mean true, everywhere (masq_tensor_wrap and masq_tensor_new copy them as
 * 1). The same changes made by another thread during a call are
 * test_host_race.c's. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

/* Wraps [data] (and [valid], or NULL) as global [name]; the state keeps
 * the only reference. */
static void wrap(masq_state *M, const char *name, masq_dtype dt, int ndim, const int64_t *shape,
                 const void *data, const uint8_t *valid) {
  masq_tensor_desc d = {.dtype = dt, .ndim = ndim, .shape = shape, .data = data, .valid = valid};
  masq_tensor *t = NULL;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, name, t));
  CHECK_OK(M, masq_tensor_release(M, t));
}

/* The number [src] leaves in global r (-12345 if it fails). */
static double number(masq_state *M, const char *src) {
  double v = -12345;
  if (eval(M, src) != MASQ_OK) {
    fprintf(stderr, "unexpected error in <%s>: %s", src, masq_last_error(M)->rendered);
    return v;
  }
  CHECK_OK(M, masq_get_number(M, "r", &v));
  return v;
}

/* A sparse tensor keeps what it was built from as it was built: indices
 * out of range afterwards must not move its entries (to_dense wrote at
 * the new positions, out of the dense buffer). */
static void test_sparse_coo_indices(void) {
  masq_state *M = masq_open(NULL);
  int64_t ix[2][3] = {{0, 1, 2}, {0, 1, 2}}, ishape[2] = {2, 3}, vshape[1] = {3};
  float v[3] = {1, 2, 3};
  wrap(M, "ix", MASQ_INT64, 2, ishape, ix, NULL);
  wrap(M, "v", MASQ_FLOAT32, 1, vshape, v, NULL);
  CHECK_OK(M, eval(M, "s = sparse_coo(ix, v, size=[3, 3])\nu = sparse_coo(ix, v)"));
  ix[0][2] = 1000000; /* far past the end of a dense (3, 3) */
  ix[1][0] = -7;
  v[1] = 20; /* the values too are the tensor's own */
  CHECK(number(M, "r = item(to_dense(s)[2, 2])") == 3);
  CHECK(number(M, "r = item(sum(to_dense(s)))") == 6);
  CHECK(number(M, "r = item(sum(to_dense(u)))") == 6);
  CHECK(number(M, "r = item(indices(s)[0, 2])") == 2);
  CHECK(number(M, "r = item(sum(s @ ones(3, 2)))") == 12);
  CHECK(number(M, "r = item(sum(softmax(masked(s), 1)))") == 3);
  /* a new tensor from the changed buffer is checked as it is now */
  CHECK_ERR(M, eval(M, "t = sparse_coo(ix, v, size=[3, 3])"), MASQ_ERR_RUNTIME, "out of range");
  masq_close(M);
}

static void test_sparse_csr_parts(void) {
  masq_state *M = masq_open(NULL);
  int64_t crow[4] = {0, 1, 2, 3}, col[3] = {2, 0, 1}, cshape[1] = {4}, nshape[1] = {3};
  double v[3] = {1, 2, 3};
  wrap(M, "crow", MASQ_INT64, 1, cshape, crow, NULL);
  wrap(M, "col", MASQ_INT64, 1, nshape, col, NULL);
  wrap(M, "v", MASQ_FLOAT64, 1, nshape, v, NULL);
  CHECK_OK(M, eval(M, "s = sparse_csr(crow, col, v, size=[3, 3])"));
  crow[1] = 1000; /* rows overlap and run past the entries */
  crow[3] = -1;
  col[0] = 999;
  CHECK(number(M, "r = item(to_dense(s)[0, 2])") == 1);
  CHECK(number(M, "r = item(sum(to_dense(s)))") == 6);
  CHECK(number(M, "r = item(to_dense(sum(s, 1))[2])") == 3);
  CHECK(number(M, "r = item(sum(to_dense(to_sparse_coo(s))))") == 6);
  CHECK(number(M, "r = item(sum(s @ ones(3)))") == 6);
  masq_close(M);
}

/* A sparse mask's stored values: a count taken when it was built sizes
 * what a later op fills by the values. */
static void test_sparse_bool_values(void) {
  masq_state *M = masq_open(NULL);
  int64_t ix[2][3] = {{0, 1, 2}, {0, 1, 2}}, ishape[2] = {2, 3}, vshape[1] = {3};
  uint8_t mv[3] = {1, 0, 1};
  wrap(M, "ix", MASQ_INT64, 2, ishape, ix, NULL);
  wrap(M, "mv", MASQ_BOOL, 1, vshape, mv, NULL);
  CHECK_OK(M, eval(M, "mk = sparse_coo(ix, mv, size=[3, 3])\n"
                      "d = sparse_coo(ix, [5.0, 6.0, 7.0], size=[3, 3])"));
  mv[1] = 1;
  CHECK(number(M, "r = item(count(masked(d, mk)))") == 2);
  CHECK(number(M, "r = item(sum(masked(d, mk)))") == 12);
  CHECK(number(M, "r = item(sum(to_dense(masked(d, mk)) @ ones(3)))") == 12);
  masq_close(M);
}

/* Autograd replays what the forward did: a bool index recounted in
 * backward (the host set every byte) gave more positions than the
 * gradient has entries. */
static void test_index_mask_backward(void) {
  masq_state *M = masq_open(NULL);
  float x[4] = {1, 2, 3, 4};
  uint8_t m[4] = {1, 0, 1, 0};
  int64_t shape[1] = {4};
  wrap(M, "x", MASQ_FLOAT32, 1, shape, x, NULL);
  wrap(M, "m", MASQ_BOOL, 1, shape, m, NULL);
  CHECK_OK(M, eval(M, "w = requires_grad(x)\ny = w[m]\nl = sum(y * y)"));
  m[1] = m[3] = 1;
  CHECK_OK(M, eval(M, "backward(l)\ng = w.grad"));
  CHECK(number(M, "r = item(sum(g))") == 2 * (1 + 3));
  CHECK(number(M, "r = item(g[2]) == 6 and item(g[1]) == 0") == 1);
  /* indexing again takes the mask as it is now */
  CHECK(number(M, "r = item(numel(x[m]))") == 4);
  masq_close(M);
}

/* gather, scatter and index_select record their index for backward,
 * which walked it again and found it out of range (an error at best). */
static void test_gather_index_backward(void) {
  masq_state *M = masq_open(NULL);
  float x[4] = {1, 2, 3, 4};
  int64_t ix[2] = {3, 1}, shape[1] = {4}, ishape[1] = {2};
  wrap(M, "x", MASQ_FLOAT32, 1, shape, x, NULL);
  wrap(M, "ix", MASQ_INT64, 1, ishape, ix, NULL);
  CHECK_OK(M, eval(M, "w = requires_grad(x)\n"
                      "l = sum(gather(w, 0, ix) * 10) + sum(index_select(w, 0, ix))\n"
                      "k = sum(scatter(w, 0, ix, [5.0, 6.0]))"));
  ix[0] = 1000; /* out of range */
  ix[1] = -1;
  CHECK_OK(M, eval(M, "backward(l)\ng = w.grad"));
  CHECK(number(M, "r = item(g[3])") == 11);
  CHECK(number(M, "r = item(g[1])") == 11);
  CHECK(number(M, "r = item(sum(g))") == 22);
  CHECK_OK(M, eval(M, "zero_grad(w)\nbackward(k)\ng = w.grad"));
  /* entries 0 and 2 kept, 3 and 1 overwritten */
  CHECK(number(M, "r = item(g[0]) == 1 and item(g[2]) == 1 and item(sum(g)) == 2") == 1);
  /* a new gather checks the index as it is now */
  CHECK_ERR(M, eval(M, "gather(x, 0, ix)"), MASQ_ERR_RUNTIME, "out of range");
  masq_close(M);
}

/* Fused attention records its mask for backward, which derived the keys
 * again from the host's bytes. */
static void test_attention_mask_backward(void) {
  masq_state *M = masq_open(NULL);
  uint8_t m[2][3] = {{1, 1, 0}, {1, 0, 0}};
  int64_t mshape[2] = {2, 3};
  wrap(M, "m", MASQ_BOOL, 2, mshape, m, NULL);
  CHECK_OK(M, eval(M, "a = requires_grad(arange(8.0).reshape(2, 4) / 8)\n"
                      "b = arange(12.0).reshape(4, 3) / 12\nv = arange(6.0).reshape(3, 2)\n"
                      "l = sum(softmax(as_masked(a @ b / 2, m), -1) @ v)\n"
                      "ref = grad(sum(softmax(as_masked(a @ b / 2, m & true), -1) @ v), a)"));
  m[0][2] = m[1][1] = m[1][2] = 1;
  CHECK_OK(M, eval(M, "backward(l)"));
  CHECK(number(M, "r = allclose(a.grad, ref)") == 1);
  masq_close(M);
}

/* Bool bytes other than 0 and 1 (numpy's view of other bytes as bool, a C
 * host's `valid[i] = flags & 4`) mean true everywhere: counts, sums,
 * logic, indexing. masq_tensor_wrap copies such a buffer as 0 and 1. */
static void test_bool_bytes(void) {
  masq_state *M = masq_open(NULL);
  uint8_t b[4] = {1, 2, 255, 0}, ok[4] = {1, 1, 0, 0};
  float x[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  wrap(M, "b", MASQ_BOOL, 1, shape, b, NULL);
  wrap(M, "x", MASQ_FLOAT32, 1, shape, x, b);
  wrap(M, "z", MASQ_FLOAT32, 1, shape, x, ok);
  CHECK(number(M, "r = item(sum(b))") == 3);
  CHECK(number(M, "r = item(count(x))") == 3);
  CHECK(number(M, "r = item(mean(x))") == 2);
  CHECK(number(M, "r = item(sum(to(b, float32)))") == 3);
  CHECK(number(M, "r = item(sum(b & true))") == 3);
  CHECK(number(M, "r = item(sum(b == true))") == 3);
  CHECK(number(M, "r = item(sum(~b))") == 1);
  CHECK(number(M, "r = item(cumsum(b, 0)[3])") == 3);
  CHECK(number(M, "r = item(sum(x[b]))") == 6);
  CHECK(number(M, "r = item(sum(get_mask(x) ^ b))") == 0);
  CHECK(number(M, "r = item(sum(get_mask(x) * 1))") == 3);
  /* the buffers were copied, so the host's later writes are not seen */
  masq_tensor *t;
  masq_tensor_desc info;
  CHECK_OK(M, masq_get_global(M, "x", &t));
  CHECK_OK(M, masq_tensor_info(M, t, &info));
  CHECK(info.data == (const void *)x && info.valid != b && info.valid[1] == 1);
  CHECK((info.flags & MASQ_TENSOR_HOST) != 0);
  CHECK_OK(M, masq_tensor_release(M, t));
  CHECK_OK(M, masq_get_global(M, "b", &t));
  CHECK_OK(M, masq_tensor_info(M, t, &info));
  CHECK(info.data != (const void *)b && info.flags == 0);
  CHECK_OK(M, masq_tensor_release(M, t));
  b[3] = 1;
  CHECK(number(M, "r = item(sum(b))") == 3);
  /* a buffer of 0 and 1 stays the host's, zero-copy */
  ok[3] = 1;
  CHECK(number(M, "r = item(count(z))") == 3);
  /* masq_tensor_new copies as 0 and 1 too */
  masq_tensor_desc d = {.dtype = MASQ_BOOL, .ndim = 1, .shape = shape, .data = b};
  CHECK_OK(M, masq_tensor_new(M, &d, &t));
  CHECK_OK(M, masq_set_global(M, "c", t));
  CHECK_OK(M, masq_tensor_info(M, t, &info));
  CHECK(((const uint8_t *)info.data)[2] == 1);
  CHECK_OK(M, masq_tensor_release(M, t));
  CHECK(number(M, "r = item(sum(c))") == 4); /* b is {1, 2, 255, 1} by now */
  masq_close(M);
}

/* A buffer copied entirely at the wrap (bool bytes other than 0 and 1) is
 * no longer used by masq: its release callback runs at once. */
static void test_bool_bytes_release(void) {
  masq_state *M = masq_open(NULL);
  uint8_t b[3] = {0, 7, 1};
  int64_t shape[1] = {3};
  int released = 0;
  masq_tensor_desc d = {.dtype = MASQ_BOOL, .ndim = 1, .shape = shape, .data = b,
                        .release = count_release, .release_ud = &released};
  masq_tensor *t;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK(released == 1);
  CHECK_OK(M, masq_set_global(M, "b", t));
  CHECK(number(M, "r = item(sum(b))") == 2);
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
  CHECK(released == 1);
}

/* Host memory is never summarized (runtime/tensor/masksum.h), so what an earlier
 * call learned about a mask does not decide what the next one skips; see
 * also test_masksum.c. Here through where, to_tensor and a masked softmax,
 * after calls that would have built a summary of a mask masq owns. */
static void test_mask_summaries_current(void) {
  enum { N = 3 * 4096 };
  static float x[N];
  static uint8_t valid[N];
  for (int i = 0; i < N; i++) x[i] = 1, valid[i] = 1;
  masq_state *M = masq_open(NULL);
  int64_t shape[1] = {N};
  wrap(M, "x", MASQ_FLOAT32, 1, shape, x, valid);
  CHECK(number(M, "r = item(sum(to_tensor(x, 0)))") == N);
  CHECK(number(M, "r = item(sum(where(get_mask(x), 1.0, 0.0)))") == N);
  for (int i = 4096; i < 2 * 4096; i++) valid[i] = 0;
  CHECK(number(M, "r = item(sum(to_tensor(x, 0)))") == N - 4096);
  CHECK(number(M, "r = item(sum(where(get_mask(x), 1.0, 0.0)))") == N - 4096);
  CHECK(number(M, "r = item(count(softmax(x, 0)))") == N - 4096);
  masq_close(M);
}

/* A file mapped by load(path, mmap=true) is shared memory too: another
 * program may rewrite it in place (same size) between two calls. */
static void test_mapped_file_changes(void) {
  char dir[] = "/tmp/masq_shared_XXXXXX", path[64], src[256];
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  snprintf(path, sizeof path, "%s/ix.npy", dir);
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.libs = MASQ_LIB_ALL;
  masq_state *M = masq_open(&cfg);
  snprintf(src, sizeof src, "save(\"%s\", [[0, 1, 2], [0, 1, 2]])\nix = load(\"%s\", mmap=true)",
           path, path);
  CHECK_OK(M, eval(M, src));
  CHECK_OK(M, eval(M, "s = sparse_coo(ix, [1.0, 2.0, 3.0], size=[3, 3])\nm = ix[0] == 1"));
  /* the last index, in place: the data of a .npy ends the file */
  FILE *f = fopen(path, "r+b");
  int64_t far = 1000000;
  CHECK(f && fseek(f, -(long)sizeof far, SEEK_END) == 0 && fwrite(&far, sizeof far, 1, f) == 1);
  if (f) fclose(f);
  CHECK(number(M, "r = item(ix[1, 2])") == 1000000); /* the mapping shows the new bytes */
  CHECK(number(M, "r = item(sum(to_dense(s)))") == 6);
  CHECK(number(M, "r = item(to_dense(s)[2, 2])") == 3);
  CHECK_ERR(M, eval(M, "sparse_coo(ix, [1.0, 2.0, 3.0], size=[3, 3])"), MASQ_ERR_RUNTIME,
            "out of range");
  masq_close(M);
  unlink(path);
  rmdir(dir);
}

/* Every test, or those named on the command line (to see each fail on its
 * own under ASan). */
int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*run)(void);
  } tests[] = {
#define T(name) {#name, test_##name}
      T(sparse_coo_indices), T(sparse_csr_parts),      T(sparse_bool_values),
      T(index_mask_backward), T(gather_index_backward), T(attention_mask_backward),
      T(bool_bytes),         T(bool_bytes_release),    T(mask_summaries_current),
      T(mapped_file_changes),
#undef T
  };
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) {
    int chosen = argc < 2;
    for (int a = 1; a < argc; a++) chosen |= strcmp(argv[a], tests[i].name) == 0;
    if (chosen) tests[i].run();
  }
  return report("test_host_shared");
}
