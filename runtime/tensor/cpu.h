/* cpu.h - the CPU paths of the kernels that have more than one: the
 * streaming float32 reductions (sum, mean, amax, amin: reduce_kernels.c)
 * and the squared deviations of var and std (stats.c), whose inner loops
 * also exist for AVX2 and AVX-512 (reduce_simd.c).
 *
 * Every path gives the same bits: a loop keeps a fixed number of lanes
 * (entry i into lane i % 16, or i % 4 for var), each lane is its own
 * sequence of IEEE operations (float -> double conversions, adds,
 * multiplies: no FMA, no reassociation), and the lanes combine in a fixed
 * order afterwards in plain C; the wider paths only do more lanes per
 * instruction. float32 softmax takes the path too: its exp (masq's own,
 * vexp.h), row max and row sum, and its backward's sum (softmax_simd.h);
 * and the matrix products (gemm.h), whose entries are fma chains on every
 * path (the portable one calls fma/fmaf), so the wide paths need FMA.
 * glibc's exp and log stay scalar (kernels.h). The float16 and bfloat16
 * conversions by arrays (half.h) too: F16C on the AVX2 path, AVX-512F's
 * forms of its instructions, and AVX512_BF16's rounding where the CPU has
 * it, on the AVX-512 path.
 *
 * A state takes the fastest path its CPU runs (S->cpu, set at open), or
 * the one MASQ_CPU names (portable, avx2, avx512) if the CPU runs it;
 * set_cpu_path() changes it, so a test can run one script on every path
 * and compare the results byte for byte. */
#ifndef MQ_CPU_H
#define MQ_CPU_H

#include "../../core/state.h"

typedef enum mq_cpu { MQ_CPU_PORTABLE, MQ_CPU_AVX2, MQ_CPU_AVX512, MQ_CPU__COUNT } mq_cpu;

/* x86-64 with gcc or clang: the paths beyond the portable one exist. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MQ_CPU_X86 1
#define MQ_TGT_AVX2 __attribute__((target("avx2")))
#define MQ_TGT_AVX512 __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq")))
#else
#define MQ_CPU_X86 0
#endif

/* The path's name ("portable", "avx2", "avx512"). */
MQ_INTERNAL const char *mq_cpu_name(int cpu);
/* The path named [name] (n bytes), or -1. */
MQ_INTERNAL int mq_cpu_parse(const char *name, size_t n);
/* The fastest path this CPU runs (MQ_CPU_PORTABLE off x86-64), for the
 * kernels that run without a state (vexp's rows). Cheap: call it per row. */
MQ_INTERNAL int mq_cpu_best(void);
/* The fastest path a state may take: mq_cpu_best's, but not AVX2 without
 * F16C, which that path's half conversions use (half.c; every AVX2 CPU
 * made has it). Under clang it asks CPUID (a trap in a VM, microseconds):
 * for opening a state and set_cpu_path, not per row. */
MQ_INTERNAL int mq_cpu_state_best(void);
/* The path a new state starts with: MASQ_CPU's, if a state may take it
 * here (an unknown name, or a path the CPU lacks, gives the fastest it
 * has: mq_cpu_state_best), else the fastest. */
MQ_INTERNAL int mq_cpu_default(void);

#endif
