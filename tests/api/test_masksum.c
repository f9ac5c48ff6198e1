/* test_masksum.c - validity summaries never go stale (runtime/tensor/masksum.h).
 * The one memory that changes under masq is a buffer the host wrapped (it
 * may write it between two calls): reductions of a wrapped mask must see
 * its bytes as they are at each call, whatever summaries earlier calls
 * could have built. A copied buffer (masq_tensor_new) is masq's own and
 * does not follow the host's later writes. */
#include <stdint.h>

#include "check.h"

#define N (3 * 4096 + 10)

static double number(masq_state *M, const char *src) {
  double v = -1;
  CHECK_OK(M, eval(M, src));
  CHECK_OK(M, masq_get_number(M, "r", &v));
  return v;
}

static void test_wrapped_mask_changes(void) {
  static float data[N];
  static uint8_t valid[N];
  for (int i = 0; i < N; i++) data[i] = 1, valid[i] = 1;
  int64_t shape[1] = {N};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = data,
                        .valid = valid};
  masq_state *M = masq_open(NULL);
  masq_tensor *wrapped, *copied;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &wrapped));
  CHECK_OK(M, masq_tensor_new(M, &d, &copied));
  CHECK_OK(M, masq_set_global(M, "w", wrapped));
  CHECK_OK(M, masq_set_global(M, "c", copied));
  CHECK(number(M, "r = item(sum(w))") == N);
  CHECK(number(M, "r = item(count(w))") == N);
  CHECK(number(M, "r = item(sum(c))") == N);
  /* every entry of the first block masked out, then the second half of the
   * next: in place, between two evaluations */
  for (int i = 0; i < 4096; i++) valid[i] = 0;
  for (int i = 4096 + 2048; i < 2 * 4096; i++) valid[i] = 0;
  double want = N - 4096 - 2048;
  CHECK(number(M, "r = item(sum(w))") == want);
  CHECK(number(M, "r = item(mean(w))") == 1);
  CHECK(number(M, "r = item(count(w))") == want);
  CHECK(number(M, "r = item(sum(w[4096:]))") == want);
  CHECK(number(M, "r = item(sum(c))") == N); /* the copy kept its bytes */
  /* and back: everything valid again, then nothing */
  for (int i = 0; i < N; i++) valid[i] = 1;
  CHECK(number(M, "r = item(sum(w))") == N);
  CHECK(number(M, "r = item(amax(w))") == 1);
  for (int i = 0; i < N; i++) valid[i] = 0;
  CHECK(number(M, "r = item(count(w))") == 0);
  CHECK(number(M, "r = is_masked(sum(w)) and not item(get_mask(sum(w)))") == 1);
  CHECK_OK(M, masq_tensor_release(M, wrapped));
  CHECK_OK(M, masq_tensor_release(M, copied));
  masq_close(M);
}

/* The row spans of padded rows (runtime/tensor/maskspan.h) likewise: a
 * wrapped [R, L] mask padded to lengths, then the host changes the lengths;
 * sums along the rows, softmax and layer_norm see the new ones. */
#define PR 6
#define PL 100
static void test_wrapped_padding_changes(void) {
  static float data[PR * PL];
  static uint8_t valid[PR * PL];
  for (int i = 0; i < PR * PL; i++) data[i] = 1;
  for (int r = 0; r < PR; r++)
    for (int j = 0; j < PL; j++) valid[r * PL + j] = j < 10 * r;
  int64_t shape[2] = {PR, PL};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 2, .shape = shape, .data = data,
                        .valid = valid};
  masq_state *M = masq_open(NULL);
  masq_tensor *wrapped;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &wrapped));
  CHECK_OK(M, masq_set_global(M, "w", wrapped));
  CHECK(number(M, "r = item(sum(sum(w, 1)))") == 10 * (0 + 1 + 2 + 3 + 4 + 5));
  CHECK(number(M, "r = item(sum(softmax(w, 1)))") == PR - 1); /* row 0: no valid entry */
  CHECK(number(M, "r = item(count(layer_norm(w, [100])))") == 150);
  for (int r = 0; r < PR; r++) /* every row now 50 long */
    for (int j = 0; j < PL; j++) valid[r * PL + j] = j < 50;
  CHECK(number(M, "r = item(sum(sum(w, 1)))") == PR * 50);
  CHECK(number(M, "r = item(sum(amax(w, 1)))") == PR);
  CHECK(number(M, "r = item(sum(softmax(w, 1)))") == PR);
  CHECK(number(M, "r = item(count(layer_norm(w, [100])))") == PR * 50);
  CHECK_OK(M, masq_tensor_release(M, wrapped));
  masq_close(M);
}

int main(void) {
  test_wrapped_mask_changes();
  test_wrapped_padding_changes();
  printf("test_masksum: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
