/* test_sizes.c - every builtin that takes a size, a dim, an index or a count,
 * and the int arithmetic of the VM and of int64 tensors, driven with the
 * extreme ints (INT64_MAX, INT64_MIN, -1, 2^62, and 0 and 3 around them).
 * Each call must either work or fail with a runtime or memory error and a
 * message: under UBSan (make test runs this again sanitized, with
 * -fno-sanitize-recover) any overflow in the size arithmetic aborts it. */
#include <stdbool.h>
#include <stdint.h>

#include "check.h"

static const char *const values[] = {
    "9223372036854775807", "(-9223372036854775807 - 1)", "-1", "4611686018427387904", "0", "3",
};
#define NVALUES (int)(sizeof values / sizeof *values)

/* A and B stand for two of the values (every pair of them is tried). */
static const char *const calls[] = {
    "zeros(A, B)", "ones(A)", "zeros(0, A, B)", "full([A, B], 1)", "full([2], A)",
    "rand(A, B)", "randn(B, A)", "randint(A, B, [3])", "randint(-1, A, B)", "eye(A, B)",
    "linspace(0, 1, A)", "arange(A)", "arange(A, B)", "arange(A, B, 4611686018427387904)",
    "arange(0, A, B)", "arange(A, B, A)", "reshape(arange(12), A, B)", "reshape(zeros(0), 0, A, B)",
    "view(arange(12), A, -1)", "flatten(zeros(2, 3, 4), A, B)", "squeeze(zeros(1, 2), A)",
    "unsqueeze(zeros(2), A)", "transpose(zeros(2, 3), A, B)", "permute(zeros(2, 3), A, B)",
    "expand(zeros(1, 3), A, B)", "broadcast_to(zeros(1), [A])", "narrow(arange(10), 0, A, B)",
    "narrow(arange(10), A, 0, 1)", "select(arange(10), 0, A)", "select(zeros(2, 2), A, B)",
    "flip(arange(3), A)", "cat([arange(3), arange(3)], A)", "stack([arange(3)], A)",
    "split(arange(10), A)", "split(arange(10), [A, B])", "split(arange(10), 2, A)",
    "chunk(arange(10), A)", "chunk(zeros(0), A)", "chunk(arange(10), 2, A)",
    "length_mask(tensor([A]), B)", "length_mask(tensor([3]), A)",
    "sum(arange(6), A)", "amax(zeros(2, 3), [A, B])", "argmax(arange(3), A)",
    "cumsum(arange(3), A)", "softmax(zeros(3), A)", "median(arange(3), A)", "var(arange(3.0), A)",
    "norm(arange(3.0), 2, A)", "count(zeros(2), A)", "logsumexp(zeros(2), A)",
    "arange(10)[A]", "arange(10)[A:B]", "arange(10)[A:B:4611686018427387904]",
    "reshape(arange(12), 6, 2)[::A]", "reshape(arange(12), 6, 2)[A::B, 0]",
    "arange(10)[::B]", "arange(10)[tensor([A])]", "arange(10)[tensor([A, B])]",
    "zeros(2, 3)[A, B]", "[1, 2, 3][A]", "range(A, B)", "len(range(A, B))", "range(A)[B]",
    "range(A, B, A)[B]", "list(range(A, B))", "tensor(range(A, B, 4611686018427387904))",
    "A + B", "A - B", "A * B", "A // B", "A % B", "A ** B", "-A", "A / B",
    "tensor([A]) + B", "tensor([A]) - tensor([B])", "tensor([A]) * B", "tensor([A]) // tensor([B])",
    "tensor([A]) % tensor([B])", "tensor([A]) ** tensor([B])", "-tensor([A])", "abs(tensor([A]))",
    "square(tensor([A]))", "bitwise_left_shift(tensor([A]), B)", "bitwise_right_shift(tensor([A]), B)",
    "div(tensor([A]), tensor([B]), rounding_mode=\"floor\")", "fmod(tensor([A]), tensor([B]))",
    "item(tensor([A]))", "item(sum(tensor([A, B])))", "prod(tensor([A, B]))",
    "cumprod(tensor([A, B]), 0)", "cumsum(tensor([A, B]), 0)", "mean(tensor([A, B]))",
    "median(tensor([A, B]))", "amin(tensor([A, B]))", "argmin(tensor([A, B]))",
    "long(tensor([A * 1.0, B * 1e30]))", "str(tensor([A, B]))",
    "str(masked(tensor([A, B]), [true, false]))", "seed(A)", "clamp(tensor([A]), B, A)",
    "masked_fill(tensor([1, 2]), tensor([true, false]), A)", "full_like(tensor([B]), A)",
    "matmul(zeros(2, 3), zeros(3, 2))[A]", "t(zeros(2, 3))[B]",
};
#define NCALLS (int)(sizeof calls / sizeof *calls)

/* [call] with A and B replaced. */
static void expand_call(char *out, size_t cap, const char *call, const char *a, const char *b) {
  size_t n = 0;
  n += (size_t)snprintf(out, cap, "x = ");
  for (const char *p = call; *p && n + 64 < cap; p++) {
    const char *v = *p == 'A' ? a : *p == 'B' ? b : NULL;
    bool name_char = p > call && ((p[-1] >= 'a' && p[-1] <= 'z') || p[-1] == '_');
    if (v && !name_char) n += (size_t)snprintf(out + n, cap - n, "%s", v);
    else out[n++] = *p;
  }
  out[n] = '\0';
}

static void discard(void *ud, const char *text, size_t len) { (void)ud, (void)text, (void)len; }

/* The C API hands int64 values over exactly, beyond 2^53 too. */
static void test_exact_ints(void) {
  masq_state *M = masq_open(NULL);
  CHECK_OK(M, eval(M, "a = 9007199254740993\nb = amax(tensor([1, 9223372036854775807]))\n"
                      "c = tensor([-9223372036854775807 - 1])[0]\nf = 1.5\nv = tensor([1, 2])\n"
                      "m = masked(tensor([3]), [false])\nflag = true"));
  int64_t i = 0;
  CHECK_OK(M, masq_get_int(M, "a", &i));
  CHECK(i == 9007199254740993);
  CHECK_OK(M, masq_get_int(M, "b", &i));
  CHECK(i == INT64_MAX);
  CHECK_OK(M, masq_get_int(M, "c", &i));
  CHECK(i == INT64_MIN);
  CHECK_OK(M, masq_get_int(M, "flag", &i));
  CHECK(i == 1);
  CHECK_ERR(M, masq_get_int(M, "f", &i), MASQ_ERR_USAGE, "not an int");
  CHECK_ERR(M, masq_get_int(M, "v", &i), MASQ_ERR_USAGE, "not an int");
  CHECK_ERR(M, masq_get_int(M, "m", &i), MASQ_ERR_RUNTIME, "masked out");
  masq_tensor *t = NULL;
  CHECK_OK(M, masq_get_global(M, "b", &t));
  CHECK_OK(M, masq_tensor_item_int(M, t, &i));
  CHECK(i == INT64_MAX);
  masq_tensor_release(M, t);
  CHECK_OK(M, masq_get_global(M, "f", &t));
  CHECK_ERR(M, masq_tensor_item_int(M, t, &i), MASQ_ERR_USAGE, "not int64");
  masq_tensor_release(M, t);
  CHECK_OK(M, masq_get_global(M, "v", &t));
  CHECK_ERR(M, masq_tensor_item_int(M, t, &i), MASQ_ERR_RUNTIME, "one element");
  masq_tensor_release(M, t);
  masq_close(M);
}

int main(void) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.memory_limit = (size_t)64 << 20; /* a valid huge size fails here, not in malloc */
  cfg.write = discard;
  masq_state *M = masq_open(&cfg);
  char src[512];
  for (int c = 0; c < NCALLS; c++)
    for (int i = 0; i < NVALUES; i++)
      for (int j = 0; j < NVALUES; j++) {
        expand_call(src, sizeof src, calls[c], values[i], values[j]);
        masq_status st = eval(M, src);
        bool clean = st == MASQ_OK || ((st == MASQ_ERR_RUNTIME || st == MASQ_ERR_MEMORY) &&
                                       masq_last_error(M)->message[0] != '\0');
        if (!clean) fprintf(stderr, "%s: status %d\n", src, (int)st);
        CHECK(clean);
      }
  /* the state still works after all of that */
  CHECK_OK(M, eval(M, "x = sum(arange(4))"));
  masq_close(M);
  test_exact_ints();
  printf("sizes: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
