/* vmath.c - vmath.h's functions over rows, one copy of the same C per CPU
 * path (portable, AVX2, AVX-512): the compiler vectorizes each for its
 * target, and since every step is one IEEE operation on doubles (fma
 * only where written, and then on every path; no reassociation, picks by
 * bit masks) each lane rounds as the scalar code does, so the paths give
 * the same bits. */
#include "../tensor/internal.h" /* first: gcc's vectorizer cost model */
#include "../tensor/cpu.h"
#include "vmath.h"

/* The element functions: float32 in, the value in double. */
MQ_VM_INLINE double f_erf(double x) { return mq_vm_erf(x); }
MQ_VM_INLINE double f_tanh(double x) { return mq_vm_tanh(x); }
/* x Phi(x) = x (1 - Phi(-a)) for x >= 0 and x Phi(-a) below, a = |x|, with
 * Phi(-a) = q = e^(-a^2/2) E(a): x - x q in one fma, no cancellation (q <=
 * 1/2). Past the tail's end q is taken 0: x, -0, or NaN at -inf (torch's
 * -inf * 0). */
MQ_VM_INLINE double f_gelu(double x) {
  double a = mq_vm_abs(x), ac = mq_vm_pick(a < MQ_VM_NTAIL_END, a, MQ_VM_NTAIL_END);
  double q = mq_vm_exp_deg(-0.5 * (ac * ac), 9) * mq_vm_ntail_e(ac);
  bool neg = mq_vm_bits(x) >> 63;
  double y = mq_vm_pick(neg, x * q, mq_vm_fma(-x, q, x));
  y = mq_vm_pick(a < MQ_VM_NTAIL_END, y, mq_vm_pick(neg, x * 0.0, x));
  return mq_vm_pick(x != x, x, y);
}
MQ_VM_INLINE double f_gelu_tanh(double x) {
  double oms;
  return x * mq_vm_sigmoid(2.0 * mq_vm_gelu_u(x), &oms);
}
MQ_VM_INLINE double f_silu(double x) {
  double oms;
  return x * mq_vm_sigmoid(x, &oms);
}

/* The derivatives f'(x), in double. */
MQ_VM_INLINE double d_erf(double x) { /* 2/sqrt(pi) e^(-x^2) */
  return 0x1.20dd750429b6dp+0 * mq_vm_exp_all(-(x * x));
}
/* Phi(x) + x phi(x): with q as in f_gelu and phi(a) = e^(-a^2/2) / sqrt(2 pi),
 * Phi(-a) - a phi(a) = e^(-a^2/2) (E(a) - a / sqrt(2 pi)) = w for x < 0, and
 * 1 - w above; -0 and 1 past the tail's end, NaN at the infinities (as
 * before: inf * 0). */
MQ_VM_INLINE double d_gelu(double x) {
  double a = mq_vm_abs(x), ac = mq_vm_pick(a < MQ_VM_NTAIL_END, a, MQ_VM_NTAIL_END);
  double w = mq_vm_exp_deg(-0.5 * (ac * ac), 9) *
             mq_vm_fma(-ac, 0.39894228040143267794, mq_vm_ntail_e(ac));
  bool neg = mq_vm_bits(x) >> 63;
  double d = mq_vm_pick(neg, w, 1.0 - w);
  d = mq_vm_pick(a < MQ_VM_NTAIL_END, d, mq_vm_pick(neg, -0.0, 1.0));
  return mq_vm_pick(a == (double)INFINITY || x != x, (double)NAN, d);
}
/* 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x) with 1 + t = 2 s, 1 - t^2 = 4 s (1 - s),
 * s = sigmoid(2 u) */
MQ_VM_INLINE double d_gelu_tanh(double x) {
  double oms, s = mq_vm_sigmoid(2.0 * mq_vm_gelu_u(x), &oms);
  double du = MQ_VM_GELU_BETA * (1.0 + 3.0 * MQ_VM_GELU_KAPPA * (x * x));
  return s + 2.0 * x * (s * oms) * du;
}
MQ_VM_INLINE double d_silu(double x) { /* s (1 + x (1 - s)) */
  double oms, s = mq_vm_sigmoid(x, &oms);
  return s * (1.0 + x * oms);
}

#define FWD_LOOP(F) \
  for (int64_t i = 0; i < n; i++) o[i] = (float)F((double)x[i]);
#define GRAD_LOOP(D)                                                           \
  if (gs)                                                                      \
    for (int64_t i = 0; i < n; i++) o[i] = (float)((double)g[i] * D((double)x[i])); \
  else {                                                                       \
    const double g0 = (double)g[0];                                            \
    for (int64_t i = 0; i < n; i++) o[i] = (float)(g0 * D((double)x[i]));     \
  }

/* One copy of both loops, for one path */
#define VMATH_PATH(SFX, ATTR)                                                  \
  ATTR void fwd_##SFX(int f, float *o, const float *x, int64_t n) {           \
    switch (f) {                                                               \
    case MQ_VACT_ERF: FWD_LOOP(f_erf) break;                                   \
    case MQ_VACT_TANH: FWD_LOOP(f_tanh) break;                                 \
    case MQ_VACT_GELU: FWD_LOOP(f_gelu) break;                                 \
    case MQ_VACT_GELU_TANH: FWD_LOOP(f_gelu_tanh) break;                       \
    default: FWD_LOOP(f_silu) break;                                           \
    }                                                                          \
  }                                                                            \
  ATTR void grad_##SFX(int f, float *o, const float *x, const float *g, int64_t gs, int64_t n) { \
    switch (f) {                                                               \
    case MQ_VACT_ERF: GRAD_LOOP(d_erf) break;                                  \
    case MQ_VACT_GELU: GRAD_LOOP(d_gelu) break;                                \
    case MQ_VACT_GELU_TANH: GRAD_LOOP(d_gelu_tanh) break;                      \
    default: GRAD_LOOP(d_silu) break;                                          \
    }                                                                          \
  }

VMATH_PATH(portable, static)
#if MQ_CPU_X86
/* with fma (mq_vm_fma): every CPU of these paths has it */
VMATH_PATH(avx2, __attribute__((target("avx2,fma"))) static)
VMATH_PATH(avx512, __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq,fma"))) static)
#endif

void mq_vact_rows(int cpu, int f, float *o, const float *x, int64_t n) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) fwd_avx512(f, o, x, n);
  else if (cpu == MQ_CPU_AVX2) fwd_avx2(f, o, x, n);
  else
#endif
    fwd_portable(f, o, x, n);
}

void mq_vact_grad_rows(int cpu, int f, float *o, const float *x, const float *g, int64_t gs,
                       int64_t n) {
  MQ_ASSERT(f != MQ_VACT_TANH);
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) grad_avx512(f, o, x, g, gs, n);
  else if (cpu == MQ_CPU_AVX2) grad_avx2(f, o, x, g, gs, n);
  else
#endif
    grad_portable(f, o, x, g, gs, n);
}
