/* cpu.c - which CPU path a state's kernels take (cpu.h). */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#if MQ_CPU_X86 && defined(__clang__)
#include <cpuid.h>
#endif

static const char *const names[MQ_CPU__COUNT] = {"portable", "avx2", "avx512"};

const char *mq_cpu_name(int cpu) { return cpu >= 0 && cpu < MQ_CPU__COUNT ? names[cpu] : "?"; }

int mq_cpu_parse(const char *name, size_t n) {
  for (int c = 0; c < MQ_CPU__COUNT; c++)
    if (strlen(names[c]) == n && memcmp(names[c], name, n) == 0) return c;
  return -1;
}

int mq_cpu_best(void) {
#if MQ_CPU_X86
  /* the checks read what the compiler's run-time library found at start-up
   * (CPUID, and whether the kernel saves the wide registers) */
  __builtin_cpu_init();
  /* the wide paths' products and activations are fma chains (gemm.h,
   * vmath.h): no FMA, no wide path (some VMs hide it behind AVX2) */
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return MQ_CPU_PORTABLE;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return MQ_CPU_AVX512;
  return MQ_CPU_AVX2;
#else
  return MQ_CPU_PORTABLE;
#endif
}

int mq_cpu_state_best(void) {
  int best = mq_cpu_best();
#if MQ_CPU_X86
  if (best == MQ_CPU_AVX2) { /* its half conversions use F16C (half.c) */
#ifdef __clang__ /* clang 14 has no name for it in __builtin_cpu_supports */
    unsigned a, b, c, d;
    bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
#else
    bool f16c = __builtin_cpu_supports("f16c");
#endif
    if (!f16c) best = MQ_CPU_PORTABLE;
  }
#endif
  return best;
}

int mq_cpu_default(void) {
  int best = mq_cpu_state_best();
  const char *e = getenv("MASQ_CPU");
  int want = e ? mq_cpu_parse(e, strlen(e)) : -1;
  return want >= 0 && want <= best ? want : best;
}
