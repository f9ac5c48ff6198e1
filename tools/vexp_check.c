/* vexp_check.c - mq_vexpf (runtime/kernels/vexp.h) on all 2^32 float32 inputs:
 * every CPU path this machine runs gives the bits of the portable one
 * (NaNs included), and each result is compared with the correctly rounded
 * e^x and with glibc's expf. A run takes minutes (about 2^32 calls of
 * exp), so it is not part of make test (tests/unit/test_vexp.c samples);
 * run it after changing vexp.h:
 *
 *   make build/libmasq.a
 *   cc -std=c11 -O2 -Iinclude -o build/vexp_check tools/vexp_check.c \
 *      build/libmasq.a -lm -lz -pthread && build/vexp_check
 *
 * `build/vexp_check --hard` prints instead the inputs whose e^x lies
 * within 2^-44 of a midpoint (by expl), the table of
 * tests/unit/vexp_hard.h.
 *
 * The correctly rounded float32 is tests/unit/exp_ref.h's. Exits 1 if
 * the paths disagree or expl leaves a case unsettled; the misrounded
 * counts are printed, not judged. */
#include <stdio.h>

#include "../runtime/tensor/cpu.h"
#include "../runtime/kernels/vexp.h"
#include "../tests/unit/exp_ref.h"

/* The bit patterns of the inputs whose e^x lies within 2^-44 (relative)
 * of a midpoint between two float32s, eight a line. */
static int print_hard(void) {
  int n = 0;
  for (uint64_t b = 0; b < (1ull << 32); b++) {
    float x = mq_bits_f32((uint32_t)b), f;
    double d = isnan(x) ? 0 : exp((double)x);
    if (d == 0 || isinf(d) || ref_midpoint_gap(d, &f) > 0x1p-40) continue;
    if (ref_midpoint_gap(expl((long double)x), &f) < 0x1p-44) printf("0x%08xu,%s", (unsigned)b, ++n % 8 ? " " : "\n");
  }
  printf("\n%d inputs\n", n);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--hard") == 0) return print_hard();
  enum { BLOCK = 1 << 16 };
  static float x[BLOCK], y[MQ_CPU__COUNT + 1][BLOCK]; /* by path, then mq_vexpf_best */
  int best = mq_cpu_best();
  long path_diff = 0, miss_cr = 0, miss_glibc = 0, nan_diff = 0, shown = 0, near = 0, unsettled = 0;
  for (uint64_t b0 = 0; b0 < (1ull << 32); b0 += BLOCK) {
    for (int i = 0; i < BLOCK; i++) x[i] = mq_bits_f32((uint32_t)(b0 + (uint64_t)i));
    for (int c = 0; c <= best; c++) mq_vexpf_rows(c, y[c], x, 0.0f, BLOCK);
    mq_vexpf_best(y[MQ_CPU__COUNT], x, 0.0f, BLOCK);
    for (int i = 0; i < BLOCK; i++) {
      uint32_t v = mq_f32_bits(y[0][i]);
      for (int c = 1; c <= MQ_CPU__COUNT; c++)
        if ((c <= best || c == MQ_CPU__COUNT) && mq_f32_bits(y[c][i]) != v) {
          if (path_diff++ < 10) printf("path %d differs at x = %a\n", c, (double)x[i]);
        }
      if (mq_f32_bits(mq_vexpf(x[i])) != v) path_diff++; /* the scalar, inlined here */
      float g = expf(x[i]);
      if (isnan(x[i])) { /* NaN: glibc returns x + x, quiet, payload kept */
        if (mq_f32_bits(g) != v) nan_diff++;
        continue;
      }
      float cr = ref_exp(x[i], &near, &unsettled);
      if (mq_f32_bits(cr) != v) {
        miss_cr++;
        if (shown++ < 20) printf("misrounded: x = %a: %a, correctly rounded %a\n", (double)x[i],
                                 (double)y[0][i], (double)cr);
      }
      if (mq_f32_bits(g) != v) miss_glibc++;
    }
  }
  printf("paths run: portable..%s and the load-time pick; path differences: %ld\n", mq_cpu_name(best),
         path_diff);
  printf("NaN inputs whose bits differ from expf's: %ld\n", nan_diff);
  printf("misrounded (vs correctly rounded): %ld; differ from glibc expf: %ld\n", miss_cr, miss_glibc);
  printf("near-midpoint cases settled by expl: %ld; unsettled: %ld\n", near, unsettled);
  return path_diff || unsettled ? 1 : 0;
}
