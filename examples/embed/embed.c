/* embed.c - a host program that runs masq on its own arrays.
 *
 * The host has a batch of padded sequences and their lengths in plain C
 * arrays. It hands them to masq without copying, registers one C function
 * the script uses, calls the script's masked_mean() and reads the result.
 * Then it changes its buffer in place and calls again: masq sees the new
 * values, because it never copied them.
 *
 *   cc embed.c $(pkg-config --cflags --libs masq) -o embed
 *   ./embed examples/embed/pool.masq
 */
#include <masq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 3, TIME = 4, FEATURES = 2 };

/* lengths_mask(lengths, T): a (batch, T) bool tensor, true for the first
 * lengths[b] steps of each row. Arguments are borrowed; the result is a
 * new reference that masq takes over. */
static masq_status lengths_mask(masq_state *M, void *ud, int argc, masq_tensor *const *argv,
                                masq_tensor **result) {
  (void)ud;
  (void)argc; /* the signature "lengths_mask(lengths, T)" guarantees 2 */
  masq_tensor_desc len;
  masq_status st;
  if ((st = masq_tensor_info(M, argv[0], &len)) != MASQ_OK) return st;
  if (len.dtype != MASQ_INT64 || len.ndim != 1)
    return masq_errorf(M, "lengths_mask: lengths must be a 1-d int64 tensor");
  double steps;
  if ((st = masq_tensor_item(M, argv[1], &steps)) != MASQ_OK) return st;

  int64_t shape[2] = {len.shape[0], (int64_t)steps};
  uint8_t *valid = malloc((size_t)(shape[0] * shape[1]) + 1);
  if (!valid) return masq_errorf(M, "lengths_mask: out of memory");
  for (int64_t b = 0; b < shape[0]; b++) {
    /* info gives strides in elements: the lengths may be a strided view */
    int64_t n = ((const int64_t *)len.data)[b * len.strides[0]];
    for (int64_t i = 0; i < shape[1]; i++) valid[b * shape[1] + i] = i < n;
  }
  masq_tensor_desc out = {.dtype = MASQ_BOOL, .ndim = 2, .shape = shape, .data = valid};
  st = masq_tensor_new(M, &out, result); /* copies: our buffer can go */
  free(valid);
  return st;
}

static void print_result(masq_state *M, masq_tensor *r) {
  masq_tensor *c;
  masq_tensor_desc d;
  /* A dense layout is simplest to read; for a result that already is one,
   * this is the same tensor. */
  if (masq_tensor_contiguous(M, r, &c) != MASQ_OK || masq_tensor_info(M, c, &d) != MASQ_OK) {
    fputs(masq_last_error(M)->rendered, stdout);
    return;
  }
  const float *mean = d.data;
  for (int64_t b = 0; b < d.shape[0]; b++) {
    printf("  sequence %lld:", (long long)b);
    for (int64_t f = 0; f < d.shape[1]; f++) {
      int64_t i = b * d.shape[1] + f;
      if (!d.valid || d.valid[i]) printf(" %6.2f", mean[i]); /* valid: 1 = use it */
      else printf("     --");
    }
    printf("\n");
  }
  masq_tensor_release(M, c);
}

static void released(void *ud) { printf("masq released the host's %s\n", (const char *)ud); }

int main(int argc, char **argv) {
  const char *script = argc > 1 ? argv[1] : "examples/embed/pool.masq";
  float x[BATCH][TIME][FEATURES] = {
      {{1, 10}, {2, 20}, {3, 30}, {4, 40}},  /* length 4 */
      {{5, 50}, {7, 70}, {0, 0}, {0, 0}},    /* length 2, then padding */
      {{0, 0}, {0, 0}, {0, 0}, {0, 0}},      /* length 0: all padding */
  };
  int64_t lengths[BATCH] = {4, 2, 0};

  masq_config cfg;
  masq_config_init(&cfg);
  cfg.memory_limit = 64 << 20; /* a budget for the script's own tensors */
  masq_state *M = masq_open(&cfg);
  if (!M) return 1;

  /* Zero-copy views of the host's arrays. x's buffer is announced through
   * a release callback, called once masq no longer needs it. */
  int64_t xshape[3] = {BATCH, TIME, FEATURES}, lshape[1] = {BATCH};
  masq_tensor_desc xd = {.dtype = MASQ_FLOAT32, .ndim = 3, .shape = xshape, .data = x,
                         .release = released, .release_ud = "batch buffer"};
  masq_tensor_desc ld = {.dtype = MASQ_INT64, .ndim = 1, .shape = lshape, .data = lengths};
  masq_tensor *xt, *lt, *mean;
  if (masq_tensor_wrap(M, &xd, &xt) != MASQ_OK || masq_tensor_wrap(M, &ld, &lt) != MASQ_OK ||
      masq_register(M, "lengths_mask(lengths, T)", lengths_mask, NULL,
                    "a (batch, T) validity mask from sequence lengths") != MASQ_OK ||
      masq_eval_file(M, script) != MASQ_OK) {
    fputs(masq_last_error(M)->rendered, stderr);
    masq_close(M);
    return 1;
  }

  masq_tensor *args[2] = {xt, lt};
  printf("masked_mean(x, lengths):\n");
  if (masq_call(M, "masked_mean", 2, args, &mean) == MASQ_OK) {
    print_result(M, mean);
    masq_tensor_release(M, mean);
  }

  /* Change the host buffer in place: the next call sees the new values. */
  for (int t = 0; t < TIME; t++) x[0][t][0] *= 100;
  printf("after x[0, :, 0] *= 100 in C:\n");
  if (masq_call(M, "masked_mean", 2, args, &mean) == MASQ_OK) {
    print_result(M, mean);
    masq_tensor_release(M, mean);
  }

  /* A host error reads like any masq error: located, with carets. */
  const char *bad = "lengths_mask(tensor([1.5, 2.0]), 3)";
  if (masq_eval(M, bad, strlen(bad), "<bad>", 0) != MASQ_OK)
    printf("%s", masq_last_error(M)->rendered);

  masq_tensor_release(M, lt);
  masq_tensor_release(M, xt); /* masq is done with x: the callback runs now */
  masq_close(M);
  return 0;
}
