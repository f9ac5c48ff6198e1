/* pkgconfig_host.c - the smallest real host, built by install_test.sh
 * against an installed masq with nothing but `pkg-config --cflags --libs
 * masq`. It wraps a buffer, runs a script on it, changes the buffer and
 * runs the script again: the second result proves masq read the host's
 * memory in place rather than a copy. Prints "nocopy: N passed, N failed". */
#include <masq.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;
#define CHECK(c) ((c) ? passed++ : (failed++, fprintf(stderr, "CHECK failed: %s\n", #c)))

static double run(masq_state *M, const char *src) {
  double v = -1;
  if (masq_eval(M, src, strlen(src), "<host>", 0) != MASQ_OK ||
      masq_get_number(M, "result", &v) != MASQ_OK)
    fputs(masq_last_error(M)->rendered, stderr);
  return v;
}

int main(void) {
  CHECK(strcmp(masq_version(), MASQ_VERSION_STRING) == 0);
  masq_state *M = masq_open(NULL);
  float buf[4] = {1, 2, 3, 4};
  uint8_t valid[4] = {1, 1, 1, 0}; /* 1 = valid: the last one is ignored */
  int64_t shape[1] = {4};
  masq_tensor_desc d = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = buf,
                        .valid = valid};
  masq_tensor *t;
  CHECK(masq_tensor_wrap(M, &d, &t) == MASQ_OK);
  CHECK(masq_set_global(M, "x", t) == MASQ_OK);
  CHECK(run(M, "result = sum(x * 10)") == 60);
  buf[0] = 101; /* in place, between two evaluations */
  CHECK(run(M, "result = sum(x * 10)") == 1060);
  masq_tensor_desc info;
  CHECK(masq_tensor_info(M, t, &info) == MASQ_OK && info.data == (const void *)buf);
  CHECK(masq_tensor_release(M, t) == MASQ_OK);
  masq_close(M);
  printf("nocopy: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
