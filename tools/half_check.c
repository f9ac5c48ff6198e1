/* half_check.c - the half conversions by arrays (runtime/tensor/half.h) on
 * all 2^32 float32 inputs: narrowing to float16 and to bfloat16 on every
 * CPU path this machine runs (and, on the AVX-512 path, with and without
 * AVX512_BF16's instruction) gives half.h's scalar bits; and all 65536
 * patterns of each half type widen to them. About a minute, so not part
 * of make test (tests/unit/test_cpu_paths.c sweeps 1.4 million inputs);
 * run it after changing half.h or half.c:
 *
 *   make build/libmasq.a
 *   cc -std=c11 -O2 -Iinclude -o build/half_check tools/half_check.c \
 *      build/libmasq.a -lm -lz -pthread && build/half_check
 *
 * Exits 1 on any difference, naming the first few blocks. */
#include <stdio.h>

#include "../runtime/tensor/cpu.h"
#include "../runtime/tensor/half.h"

enum { BLOCK = 1 << 16 };

int main(void) {
  static float x[BLOCK], wf[BLOCK];
  static uint16_t h[BLOCK], want[BLOCK], got[BLOCK];
  int best = mq_cpu_state_best(), natives = best == MQ_CPU_AVX512 && mq_cpu_has_bf16() ? 2 : 1;
  long bad = 0, runs = 0;
  for (int bf = 0; bf < 2; bf++) {
    for (uint32_t i = 0; i < BLOCK; i++) {
      h[i] = (uint16_t)i;
      wf[i] = bf ? mq_bf16_to_f32(h[i]) : mq_f16_to_f32(h[i]);
    }
    for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++) {
      mq_half_widen(cpu, bf, x, h, BLOCK);
      runs++;
      if (memcmp(x, wf, sizeof x) != 0 && bad++ < 5)
        printf("%s widening differs on the %s path\n", bf ? "bfloat16" : "float16", mq_cpu_name(cpu));
    }
  }
  for (uint64_t hi = 0; hi < BLOCK; hi++)
    for (int bf = 0; bf < 2; bf++) {
      for (uint32_t i = 0; i < BLOCK; i++) {
        x[i] = mq_bits_f32((uint32_t)hi << 16 | i);
        want[i] = bf ? mq_f32_to_bf16(x[i]) : mq_f32_to_f16(x[i]);
      }
      for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++)
        for (int native = 0; native < (cpu == MQ_CPU_AVX512 && bf ? natives : 1); native++) {
          mq_half_narrow_on(cpu, native, bf, got, x, BLOCK);
          runs++;
          if (memcmp(got, want, sizeof got) != 0 && bad++ < 5)
            printf("%s narrowing of 0x%04xXXXX differs on the %s path%s\n", bf ? "bfloat16" : "float16",
                   (unsigned)hi, mq_cpu_name(cpu), native ? " (AVX512_BF16)" : "");
        }
    }
  printf("half_check: %ld of %ld runs of 65536 differ (paths up to %s%s)\n", bad, runs, mq_cpu_name(best),
         natives > 1 ? ", AVX512_BF16" : "");
  return bad != 0;
}
