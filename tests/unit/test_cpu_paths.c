/* test_cpu_paths.c - the CPU paths of the float32 reductions (runtime/tensor/cpu.h)
 * give the same bits: for every path this CPU runs, the row sums (in double,
 * before any rounding to float32 could hide a difference), the squared
 * deviations of var and std (in double), and the pieces of sum, amax and
 * amin, with their valid counts, over rows of every length from 0 to past
 * two pieces (none a multiple of the lanes, some), masks none, random,
 * all valid and all masked out, and data of mixed magnitudes with NaN,
 * infinities and zeros of both signs. The portable path is checked against
 * the lanes written out here (entry i into lane i % 16, or i % 4), so every
 * path is checked against the definition. Matrix products too: every
 * path against their definition (gemm.h), written out here. Also:
 * MASQ_CPU picks a new state's path, unless the CPU lacks it. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/tensor/cpu.h"
#include "../../runtime/tensor/half.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/tensor/shape.h"
#include "../../runtime/kernels/reduce.h"
#include "../../runtime/kernels/vmath.h"

#include "unit.h"

static uint64_t rng = 987654321;
static uint64_t next(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 33;
}
static double unit_rand(void) { return (double)(next() & 0xffffff) / 16777216.0; }

/* The same bits, or both NaN: which NaN an operation on NaNs gives (its
 * sign and payload) is left open by IEEE 754 and is the compiler's choice
 * of operand order on x86 (the first operand's), even between two copies
 * of the same C loop; no result of masq depends on it (a NaN prints as
 * nan). Every other bit, the sign of a zero included, must match. */
static bool same_bits(const void *a, const void *b, size_t n) {
  if (memcmp(a, b, n) == 0) return true;
  if (n == sizeof(double)) {
    double x, y;
    memcpy(&x, a, n), memcpy(&y, b, n);
    return isnan(x) && isnan(y);
  }
  float x, y;
  memcpy(&x, a, n), memcpy(&y, b, n);
  return isnan(x) && isnan(y);
}

/* Data kind d: 0 mixed magnitudes (1e-30 .. 1e30, both signs, cancelling),
 * 1 the same with NaN, inf and -inf sprinkled in, 2 zeros of both signs. */
static float value(int d, int64_t i) {
  double u = unit_rand() - 0.5;
  float v = (float)(u * exp(unit_rand() * 60 - 30));
  if (i % 53 == 7) v = 1e30f;
  if (i % 53 == 30) v = -1e30f;
  if (d == 1 && i % 101 == 13) v = NAN;
  if (d == 1 && i % 67 == 3) v = INFINITY;
  if (d == 1 && i % 71 == 5) v = -INFINITY;
  if (d == 2) v = (next() & 1) ? 0.0f : -0.0f;
  return v;
}

/* The lanes written out: the sum of a piece, and the squared deviations. */
static double ref_sum(const float *x, const uint8_t *m, int64_t n) {
  double d[16] = {0};
  for (int64_t i = 0; i < n; i++)
    if (!m || m[i]) d[i % 16] += (double)x[i];
  return (((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]))) +
         (((d[8] + d[9]) + (d[10] + d[11])) + ((d[12] + d[13]) + (d[14] + d[15])));
}
static double ref_sqdev(const float *x, const uint8_t *m, int64_t n, double mean) {
  double l[4] = {0};
  for (int64_t i = 0; i < n; i++)
    if (!m || m[i]) {
      double d = (double)x[i] - mean;
      l[i % 4] += d * d;
    }
  return (l[0] + l[1]) + (l[2] + l[3]);
}

/* The half conversions by arrays (half.h) on every path, against half.h's
 * scalar functions byte for byte: all 65536 patterns of each half type
 * widening; narrowing, every float32 whose top 16 bits are anything and
 * whose low 16 bits are one of the values where a rounding turns (half
 * way for bfloat16, and for float16 at each of its subnormals' rounding
 * points) or a random one; the AVX-512 path's bfloat16 both by
 * AVX512_BF16's instruction (if the CPU has it) and without it; and
 * every length up to past two vectors from an odd start (the tails). The
 * definition itself on the values where an instruction would differ: a
 * signalling float16 NaN keeps its payload widening, a NaN narrows to
 * float16 0x7E00 with its sign and to bfloat16 0xFFFF, a float32
 * subnormal rounds to the nearest bfloat16 (not to zero). */
static void check_widen(int cpu, bool bf, const uint16_t *h, const float *want, int64_t n) {
  float *o = malloc((size_t)n * sizeof *o + 1);
  mq_half_widen(cpu, bf, o, h, n);
  CHECK(memcmp(o, want, (size_t)n * sizeof *o) == 0);
  free(o);
}
static void check_narrow(int cpu, int native, bool bf, const float *x, const uint16_t *want, int64_t n) {
  uint16_t *o = malloc((size_t)n * sizeof *o + 1);
  mq_half_narrow_on(cpu, native, bf, o, x, n);
  CHECK(memcmp(o, want, (size_t)n * sizeof *o) == 0);
  free(o);
}

static void half_paths(void) {
  static const uint16_t lows[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2001, 0x3fff, 0x4000,
                                  0x7fff, 0x8000, 0x8001, 0xbfff, 0xc000, 0xefff, 0xf000, 0xffff};
  enum { NL = sizeof lows / sizeof *lows, PER = NL + 3 };
  int best = mq_cpu_state_best(), natives = best == MQ_CPU_AVX512 && mq_cpu_has_bf16() ? 2 : 1;
  int64_t nh = 65536, nf = 65536 * (int64_t)PER;
  /* a state may take the fastest path but AVX2 without F16C */
  CHECK(best == mq_cpu_best() || (best == MQ_CPU_PORTABLE && mq_cpu_best() == MQ_CPU_AVX2));
  uint16_t *h = malloc((size_t)nh * sizeof *h), *w16 = malloc((size_t)nf * sizeof *w16);
  float *w32 = malloc((size_t)nf * sizeof *w32), *x = malloc((size_t)nf * sizeof *x);
  for (int64_t i = 0; i < nh; i++) h[i] = (uint16_t)i;
  for (int64_t i = 0; i < nf; i++) {
    uint32_t lo = i % PER < NL ? lows[i % PER] : (uint32_t)(next() & 0xffff);
    x[i] = mq_bits_f32((uint32_t)(i / PER) << 16 | lo);
  }
  for (int bf = 0; bf < 2; bf++) {
    for (int64_t i = 0; i < nh; i++) w32[i] = bf ? mq_bf16_to_f32(h[i]) : mq_f16_to_f32(h[i]);
    for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++) {
      check_widen(cpu, bf, h, w32, nh);
      for (int64_t n = 0; n <= 40; n++) check_widen(cpu, bf, h + 0x7bf1, w32 + 0x7bf1, n);
    }
    for (int64_t i = 0; i < nf; i++) w16[i] = bf ? mq_f32_to_bf16(x[i]) : mq_f32_to_f16(x[i]);
    for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++)
      for (int native = 0; native < (cpu == MQ_CPU_AVX512 && bf ? natives : 1); native++) {
        check_narrow(cpu, native, bf, x, w16, nf);
        for (int64_t n = 0; n <= 40; n++) /* from 0x7f7f....: infinities and NaN within reach */
          check_narrow(cpu, native, bf, x + 0x7f7f * PER + 5, w16 + 0x7f7f * PER + 5, n);
      }
  }
  CHECK(mq_f32_bits(mq_f16_to_f32(0x7c01)) == 0x7f802000 && mq_f32_bits(mq_f16_to_f32(0xfd00)) == 0xffa00000);
  CHECK(mq_f32_to_f16(mq_bits_f32(0x7f800001)) == 0x7e00 && mq_f32_to_f16(mq_bits_f32(0xffc12345)) == 0xfe00);
  CHECK(mq_f32_to_bf16(mq_bits_f32(0x7f800001)) == 0xffff && mq_f32_to_bf16(mq_bits_f32(0xffc00000)) == 0xffff);
  CHECK(mq_f32_to_bf16(mq_bits_f32(0x00408000)) == 0x0040 && mq_f32_to_bf16(mq_bits_f32(0x80418000)) == 0x8042);
  CHECK(mq_f32_to_bf16(mq_bits_f32(0x00000001)) == 0x0000 && mq_f32_to_bf16(mq_bits_f32(0x007fffff)) == 0x0080);
  free(h), free(w16), free(w32), free(x);
}

/* The conversion kernels (astype; every widening and narrowing of a half
 * tensor) on every path: float32 with NaN and subnormals, float64 and
 * int64 to each half type and back, over a row of several blocks and an
 * odd tail, against half.h's scalar functions. */
static void half_astype_paths(void) {
  int best = mq_cpu_state_best(), saved = S->cpu;
  int64_t n = 5000;
  mq_tensor *f = mq_tensor_new(S, MQ_DT_F32, 1, &n), *d = mq_tensor_new(S, MQ_DT_F64, 1, &n);
  mq_tensor *k = mq_tensor_new(S, MQ_DT_I64, 1, &n);
  float *fp = mq_tensor_data(f);
  for (int64_t i = 0; i < n; i++) {
    uint32_t b = (uint32_t)next() << 1 ^ (uint32_t)next();
    fp[i] = mq_bits_f32(i % 7 == 0 ? b & 0x807fffff : b); /* some subnormals */
    ((double *)mq_tensor_data(d))[i] = (double)fp[i] * (1 + 0x1p-30);
    ((int64_t *)mq_tensor_data(k))[i] = (int64_t)(next() << 20) - ((int64_t)1 << 52);
  }
  mq_tensor *src[3] = {f, d, k};
  for (int bf = 0; bf < 2; bf++) {
    mq_dtype h = bf ? MQ_DT_BF16 : MQ_DT_F16;
    for (int s = 0; s < 3; s++) {
      uint16_t *want = malloc((size_t)n * 2);
      float *back = malloc((size_t)n * 4);
      for (int64_t i = 0; i < n; i++) {
        double v = mq_elem_f64((mq_dtype)src[s]->dtype, (char *)mq_tensor_data(src[s]) + i * mq_dtype_size((mq_dtype)src[s]->dtype));
        float x = src[s]->dtype == MQ_DT_I64 ? (float)((int64_t *)mq_tensor_data(k))[i] : (float)v;
        want[i] = bf ? mq_f32_to_bf16(x) : mq_f32_to_f16(x);
        back[i] = bf ? mq_bf16_to_f32(want[i]) : mq_f16_to_f32(want[i]);
      }
      for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++) {
        S->cpu = cpu;
        mq_tensor *t = mq_astype(S, src[s], h);
        CHECK(memcmp(mq_tensor_data(t), want, (size_t)n * 2) == 0);
        mq_tensor *w = mq_astype(S, t, MQ_DT_F32), *w64 = mq_astype(S, t, MQ_DT_F64);
        CHECK(memcmp(mq_tensor_data(w), back, (size_t)n * 4) == 0);
        bool ok = true;
        for (int64_t i = 0; i < n && ok; i++) {
          double x = ((double *)mq_tensor_data(w64))[i], y = (double)back[i];
          ok = memcmp(&x, &y, sizeof x) == 0;
        }
        CHECK(ok);
      }
      free(want), free(back);
    }
  }
  S->cpu = saved;
}

static int paths_run;

static void one_row(const float *x, const uint8_t *m, int64_t n) {
  int best = mq_cpu_best();
  int64_t c0 = 0;
  double s0 = mq_kernel_rowsum_cnt_f32(MQ_CPU_PORTABLE, x, m, n, &c0);
  double mean = n ? s0 / (double)(m ? (c0 ? c0 : 1) : n) : 0;
  double q0 = mq_kernel_sqdev_f32(MQ_CPU_PORTABLE, x, m, n, mean);
  if (n <= MQ_RED_PIECE) { /* one piece: the lanes alone decide */
    double r = ref_sum(x, m, n);
    CHECK(same_bits(&s0, &r, sizeof r));
  }
  double rq = ref_sqdev(x, m, n, mean);
  CHECK(same_bits(&q0, &rq, sizeof rq));
  const mq_red_kernel *k0[3] = {mq_red_kernels[MQ_RED_SUM][MQ_DT_F32], mq_red_kernels[MQ_RED_AMAX][MQ_DT_F32],
                                mq_red_kernels[MQ_RED_AMIN][MQ_DT_F32]};
  int64_t len = n < MQ_RED_PIECE ? n : MQ_RED_PIECE;
  for (int cpu = MQ_CPU_PORTABLE + 1; cpu <= best; cpu++) {
    int64_t c = 0;
    double s = mq_kernel_rowsum_cnt_f32(cpu, x, m, n, &c);
    CHECK(same_bits(&s, &s0, sizeof s));
    CHECK(c == c0);
    double q = mq_kernel_sqdev_f32(cpu, x, m, n, mean);
    CHECK(same_bits(&q, &q0, sizeof q));
    for (int op = 0; op < 3; op++) {
      const mq_red_kernel *kp = mq_red_kernel_on(k0[op], cpu);
      CHECK(kp != k0[op]); /* a kernel of its own on this path */
      double p0 = 0, p1 = 0; /* room for a double or a float */
      int64_t n0 = 0, n1 = 0;
      k0[op]->piece(&p0, &n0, x, m, len);
      kp->piece(&p1, &n1, x, m, len);
      CHECK(same_bits(&p0, &p1, op == 0 ? sizeof(double) : sizeof(float)));
      CHECK(n0 == n1);
    }
    paths_run |= 1 << cpu;
  }
}

static void rows(void) {
  static const int64_t lens[] = {0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 31, 32, 33, 63, 100, 1031,
                                 4095, 4096, 4097, 8192, 8193, 12347};
  int64_t most = 12347;
  float *x = malloc((size_t)most * sizeof *x);
  uint8_t *m = malloc((size_t)most);
  for (int d = 0; d < 3; d++)
    for (int mk = 0; mk < 4; mk++) /* no mask, random, all valid, all masked out */
      for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
        int64_t n = lens[l];
        for (int64_t i = 0; i < n; i++) {
          x[i] = value(d, i);
          m[i] = mk == 1 ? (uint8_t)(next() & 1) : mk == 2;
        }
        one_row(x, mk ? m : NULL, n);
        /* a row that does not start on a block of the lanes */
        if (n > 3) one_row(x + 3, mk ? m + 3 : NULL, n - 3);
      }
  free(x);
  free(m);
#if MQ_CPU_X86
  /* every path the CPU runs was compared (none beyond portable elsewhere) */
  CHECK(paths_run == ((1 << (mq_cpu_best() + 1)) - 2) || mq_cpu_best() == MQ_CPU_PORTABLE);
#endif
}

/* Entry (i, j) of a product by its definition (runtime/kernels/gemm.h):
 * a chain of fma over k in order from +0, a masked-out entry taking part
 * as 0, a term whose pair is not valid and holds an inf or NaN skipped. */
static double chain_at(const mq_tensor *a, const uint8_t *ma, const mq_tensor *b,
                       const uint8_t *mb, int64_t i, int64_t j, bool f64) {
  int64_t K = a->shape[1], m = b->shape[1];
  double c = 0;
  float cf = 0;
  for (int64_t k = 0; k < K; k++) {
    bool va = !ma || ma[i * K + k], vb = !mb || mb[k * m + j];
    double x = f64 ? ((double *)mq_tensor_data(a))[i * K + k] : ((float *)mq_tensor_data(a))[i * K + k];
    double y = f64 ? ((double *)mq_tensor_data(b))[k * m + j] : ((float *)mq_tensor_data(b))[k * m + j];
    x = va ? x : 0, y = vb ? y : 0;
    if (!(va && vb) && !(isfinite(x) && isfinite(y))) continue;
    if (f64) c = fma(x, y, c);
    else cf = fmaf((float)x, (float)y, cf);
  }
  return f64 ? c : cf;
}

/* A bfloat16 product's entry (i, j) by its definition (gemm.h): pairs of
 * steps from the start of the k span where both operands have a valid
 * entry, restarting every 256 steps, each pair the step of vdpbf16ps
 * written out (odd element first, fma, subnormals read and flushed as 0);
 * 0 outside the spans of valid rows and columns. */
static float flush0(float x) { return x != 0 && fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }
static float bf16_chain_at(const uint16_t *a, const uint8_t *ma, const uint16_t *b,
                           const uint8_t *mb, int64_t n, int64_t K, int64_t m, int64_t i, int64_t j) {
  int64_t k0 = K, k1 = 0, ak0 = K, ak1 = 0, bk0 = K, bk1 = 0;
  bool row = false, col = false;
  for (int64_t r = 0; r < n; r++)
    for (int64_t k = 0; k < K; k++)
      if (!ma || ma[r * K + k]) {
        ak0 = k < ak0 ? k : ak0, ak1 = k + 1 > ak1 ? k + 1 : ak1;
        row |= r == i;
      }
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < m; c++)
      if (!mb || mb[k * m + c]) {
        bk0 = k < bk0 ? k : bk0, bk1 = k + 1 > bk1 ? k + 1 : bk1;
        col |= c == j;
      }
  k0 = ak0 > bk0 ? ak0 : bk0, k1 = ak1 < bk1 ? ak1 : bk1;
  float acc = 0;
  if (!row || !col) return 0;
  for (int64_t s0 = k0; s0 < k1; s0 += 256)
    for (int64_t k = s0; k < s0 + 256 && k < k1; k += 2) {
      float x[2] = {0, 0}, y[2] = {0, 0};
      for (int e = 0; e < 2 && k + e < s0 + 256 && k + e < k1; e++) {
        bool va = !ma || ma[i * K + k + e], vb = !mb || mb[(k + e) * m + j];
        float xa = va ? mq_bf16_to_f32(a[i * K + k + e]) : 0, yb = vb ? mq_bf16_to_f32(b[(k + e) * m + j]) : 0;
        if (!(va && vb) && !(isfinite(xa) && isfinite(yb))) xa = yb = 0;
        x[e] = flush0(xa), y[e] = flush0(yb);
      }
      acc = flush0(fmaf(x[1], y[1], flush0(acc)));
      acc = flush0(fmaf(x[0], y[0], acc));
    }
  return acc;
}

/* bfloat16 matmul: every path (vdpbf16ps where the CPU has AVX-512 BF16,
 * the definition written out in C elsewhere) gives bf16_chain_at's float32
 * sums rounded to bfloat16, with subnormals, infinities and NaN, masked
 * operands on either side, odd sizes and past a block of k. */
static void matmul_bf16_paths(void) {
  /* (25, 40, 45) and (14, 258, 33): full panels of A read in place, K even */
  static const int64_t dims[][3] = {{1, 1, 1},   {3, 5, 2},    {13, 37, 35},  {2, 301, 33},
                                    {30, 7, 70}, {41, 9, 3},   {25, 40, 45},  {14, 258, 33}};
  int best = mq_cpu_best(), saved = S->cpu;
  for (size_t c = 0; c < sizeof dims / sizeof *dims; c++)
    for (int d = 0; d < 3; d++)
      for (int mk = 0; mk < 4; mk++) {
        int64_t n = dims[c][0], K = dims[c][1], m = dims[c][2];
        int64_t sa[2] = {n, K}, sb[2] = {K, m};
        mq_tensor *a = mq_tensor_new(S, MQ_DT_BF16, 2, sa), *b = mq_tensor_new(S, MQ_DT_BF16, 2, sb);
        mq_tensor *ma = mq_tensor_new(S, MQ_DT_BOOL, 2, sa), *mb = mq_tensor_new(S, MQ_DT_BOOL, 2, sb);
        uint16_t *pa = mq_tensor_data(a), *pb = mq_tensor_data(b);
        for (int64_t i = 0; i < a->numel; i++) {
          /* kind 2: subnormal bfloat16 and products that underflow float32 */
          pa[i] = d == 2 ? (uint16_t)((next() & 0x8000) | (next() % 3 == 0 ? next() & 0x7f : 0x0c00 | (next() & 0xff)))
                         : mq_f32_to_bf16(value(d, i));
          ((uint8_t *)mq_tensor_data(ma))[i] = (uint8_t)(next() % 3 != 0);
        }
        for (int64_t i = 0; i < b->numel; i++) {
          pb[i] = d == 2 ? (uint16_t)((next() & 0x8000) | 0x1000 | (next() & 0xff)) : mq_f32_to_bf16(value(d, i + 7));
          ((uint8_t *)mq_tensor_data(mb))[i] = (uint8_t)(next() % 4 != 0);
        }
        const uint8_t *qa = mk & 1 ? mq_tensor_data(ma) : NULL, *qb = mk & 2 ? mq_tensor_data(mb) : NULL;
        mq_tensor *x = mk & 1 ? mq_masked(S, a, ma) : a, *y = mk & 2 ? mq_masked(S, b, mb) : b;
        for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++) {
          S->cpu = cpu;
          mq_tensor *r = mq_get_data(S, mq_matmul(S, x, y));
          bool ok = r->dtype == MQ_DT_BF16;
          for (int64_t i = 0; i < n && ok; i++)
            for (int64_t j = 0; j < m && ok; j++) {
              uint16_t want = mq_f32_to_bf16(bf16_chain_at(pa, qa, pb, qb, n, K, m, i, j));
              uint16_t got = ((uint16_t *)mq_tensor_data(r))[i * m + j];
              ok = got == want || (isnan(mq_bf16_to_f32(got)) && isnan(mq_bf16_to_f32(want)));
            }
          CHECK(ok);
        }
      }
  S->cpu = saved;
}

/* float32 and float64 matmul (runtime/kernels/gemm.c): every path gives
 * the definition's bits (chain_at), NaN aside, for sizes past a tile and a
 * block of k, with infinities and NaN, masked operands on either side, a
 * transposed right operand (read through its strides), at 1 and 2
 * threads. */
static void matmul_paths(void) {
  static const int64_t dims[][3] = {{1, 1, 1}, {3, 5, 2}, {4, 37, 20}, {2, 130, 33},
                                    {13, 300, 35}, {200, 7, 70}, {70, 40, 3}};
  int best = mq_cpu_best(), saved = S->cpu, threads = S->nthreads;
  for (size_t c = 0; c < sizeof dims / sizeof *dims; c++)
    for (int d = 0; d < 2; d++)
      for (int mk = 0; mk < 6; mk++) /* 4, 5: a's mask a padded batch's, whole rows */
        for (int f64 = 0; f64 < 2; f64++) {
          mq_dtype dt = f64 ? MQ_DT_F64 : MQ_DT_F32;
          int64_t sa[2] = {dims[c][0], dims[c][1]}, sb[2] = {dims[c][1], dims[c][2]};
          mq_tensor *a = mq_tensor_new(S, dt, 2, sa), *b = mq_tensor_new(S, dt, 2, sb);
          mq_tensor *ma = mq_tensor_new(S, MQ_DT_BOOL, 2, sa), *mb = mq_tensor_new(S, MQ_DT_BOOL, 2, sb);
          for (int64_t i = 0; i < a->numel; i++) {
            if (f64) ((double *)mq_tensor_data(a))[i] = value(d, i);
            else ((float *)mq_tensor_data(a))[i] = value(d, i);
            ((uint8_t *)mq_tensor_data(ma))[i] =
                (uint8_t)(mk & 4 ? i / sa[1] < sa[0] * 2 / 3 + 1 : next() % 3 != 0);
          }
          for (int64_t i = 0; i < b->numel; i++) {
            if (f64) ((double *)mq_tensor_data(b))[i] = value(d, i + 7);
            else ((float *)mq_tensor_data(b))[i] = value(d, i + 7);
            ((uint8_t *)mq_tensor_data(mb))[i] = (uint8_t)(next() % 4 != 0);
          }
          bool am = mk & 5, bm = mk & 2;
          const uint8_t *pa = am ? mq_tensor_data(ma) : NULL, *pb = bm ? mq_tensor_data(mb) : NULL;
          mq_tensor *x = am ? mq_masked(S, a, ma) : a, *y = bm ? mq_masked(S, b, mb) : b;
          /* x and y again, read through a transpose of a transposed copy */
          mq_tensor *xt = mq_transpose(S, mq_contiguous(S, mq_transpose(S, x, 0, 1)), 0, 1);
          mq_tensor *yt = mq_transpose(S, mq_contiguous(S, mq_transpose(S, y, 0, 1)), 0, 1);
          for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++)
            for (int nt = 1; nt <= 2; nt++) {
              S->cpu = cpu, S->nthreads = nt;
              mq_tensor *r = mq_get_data(S, mq_matmul(S, (cpu + nt) % 2 ? xt : x, cpu == best ? yt : y));
              bool ok = true;
              for (int64_t i = 0; i < sa[0] && ok; i++)
                for (int64_t j = 0; j < sb[1] && ok; j++) {
                  double want = chain_at(a, pa, b, pb, i, j, f64);
                  if (f64) ok = same_bits((double *)mq_tensor_data(r) + i * sb[1] + j, &want, 8);
                  else {
                    float w = (float)want;
                    ok = same_bits((float *)mq_tensor_data(r) + i * sb[1] + j, &w, 4);
                  }
                }
              CHECK(ok);
            }
        }
  S->cpu = saved, S->nthreads = threads;
}

/* float32 erf, tanh, gelu (both forms), silu and their derivatives
 * (runtime/kernels/vmath.h): every path gives the portable path's bits, on
 * rows of every length up to past a few vectors, over magnitudes from
 * subnormal to huge with the cases' borders, zeros of both signs, NaN and
 * infinities, the gradient as an array and as one value. */
static void vmath_paths(void) {
  enum { N = 301 };
  float x[N], g[N], y0[N], y[N];
  int best = mq_cpu_best();
  for (int d = 0; d < 4; d++) {
    for (int i = 0; i < N; i++) {
      x[i] = d < 3 ? value(d, i) : (float)((unit_rand() - 0.5) * 40); /* d 3: where the cases meet */
      g[i] = (float)(unit_rand() - 0.5);
    }
    for (int n = 0; n <= N; n += n < 40 ? 1 : 37)
      for (int f = 0; f < MQ_VACT__COUNT; f++)
        for (int k = 0; k < (f == MQ_VACT_TANH ? 1 : 3); k++) { /* forward, gradient array, one gradient */
          if (k == 0) mq_vact_rows(MQ_CPU_PORTABLE, f, y0, x, n);
          else mq_vact_grad_rows(MQ_CPU_PORTABLE, f, y0, x, g, k == 1, n);
          for (int cpu = MQ_CPU_PORTABLE + 1; cpu <= best; cpu++) {
            if (k == 0) mq_vact_rows(cpu, f, y, x, n);
            else mq_vact_grad_rows(cpu, f, y, x, g, k == 1, n);
            bool ok = true;
            for (int i = 0; i < n && ok; i++) ok = same_bits(y + i, y0 + i, sizeof(float));
            CHECK(ok);
          }
        }
  }
}

static void default_path(void) {
  int best = mq_cpu_best();
  setenv("MASQ_CPU", "portable", 1);
  CHECK(mq_cpu_default() == MQ_CPU_PORTABLE);
  setenv("MASQ_CPU", "avx2", 1);
  CHECK(mq_cpu_default() == (best >= MQ_CPU_AVX2 ? MQ_CPU_AVX2 : best));
  setenv("MASQ_CPU", "avx512", 1);
  CHECK(mq_cpu_default() == best);
  setenv("MASQ_CPU", "sse9", 1); /* unknown: the fastest */
  CHECK(mq_cpu_default() == best);
  setenv("MASQ_CPU", "portable", 1);
  masq_state *M = masq_open(NULL);
  CHECK(M && ((mq_state *)M)->cpu == MQ_CPU_PORTABLE);
  masq_close(M);
  unsetenv("MASQ_CPU");
  CHECK(mq_cpu_default() == best);
  CHECK(S->cpu == best); /* opened without MASQ_CPU */
  CHECK(mq_cpu_parse("avx2", 4) == MQ_CPU_AVX2 && mq_cpu_parse("avx", 3) == -1);
  CHECK(strcmp(mq_cpu_name(MQ_CPU_AVX512), "avx512") == 0);
}

/* Padded rows (runtime/tensor/maskspan.h): a piece read as runs of valid
 * entries without its mask (mq_red_kernel.runs), and a row read only over
 * its span (mq_kernel_rowsum/rowmax_span_f32), give the bits of the piece
 * and the row read with the mask, on every path; random runs of random
 * starts and ends (not on the lanes), data with NaN, infinities and zeros
 * of both signs. */
static void padded_runs(void) {
  enum { N = MQ_RED_PIECE + 37 };
  float *x = malloc(N * sizeof *x);
  uint8_t *m = malloc(N);
  const mq_red_kernel *k0[3] = {mq_red_kernels[MQ_RED_SUM][MQ_DT_F32], mq_red_kernels[MQ_RED_AMAX][MQ_DT_F32],
                                mq_red_kernels[MQ_RED_AMIN][MQ_DT_F32]};
  for (int trial = 0; trial < 300; trial++) {
    int d = trial % 3;
    int64_t n = trial % 5 == 0 ? MQ_RED_PIECE : (int64_t)(next() % MQ_RED_PIECE) + 1;
    for (int64_t i = 0; i < n; i++) x[i] = value(d, i);
    int64_t runs[16];
    int nr = (int)(next() % 5), k = 0;
    int64_t at = 0;
    memset(m, 0, (size_t)n);
    for (int q = 0; q < nr && at < n; q++) { /* sorted, disjoint, not adjacent */
      int64_t a = at + (int64_t)(next() % (uint64_t)(n - at)), b = a + 1 + (int64_t)(next() % (uint64_t)(n - a));
      if (trial % 7 == 0) a = 0, b = n; /* the whole piece */
      runs[2 * k] = a, runs[2 * k + 1] = b;
      memset(m + a, 1, (size_t)(b - a));
      k++;
      at = b + 1;
    }
    for (int cpu = MQ_CPU_PORTABLE; cpu <= mq_cpu_best(); cpu++)
      for (int op = 0; op < 3; op++) {
        const mq_red_kernel *kp = mq_red_kernel_on(k0[op], cpu);
        double p0 = 0, p1 = 0;
        int64_t c = 0;
        kp->piece(&p0, &c, x, m, n);
        kp->runs(&p1, x, n, runs, k);
        CHECK(same_bits(&p0, &p1, op == 0 ? sizeof(double) : sizeof(float)));
      }
    /* one span across pieces of a longer row */
    int64_t len = (int64_t)(next() % N) + 1, lo = (int64_t)(next() % (uint64_t)len);
    int64_t hi = lo + (int64_t)(next() % (uint64_t)(len - lo + 1));
    for (int64_t i = 0; i < len; i++) {
      x[i] = value(d, i);
      m[i] = i >= lo && i < hi;
    }
    for (int cpu = MQ_CPU_PORTABLE; cpu <= mq_cpu_best(); cpu++) {
      double s0 = mq_kernel_rowsum_cnt_f32(cpu, x, m, len, NULL), s1 = mq_kernel_rowsum_span_f32(cpu, x, len, lo, hi);
      float m0 = mq_kernel_rowmax_on_f32(cpu, x, m, len), m1 = mq_kernel_rowmax_span_f32(cpu, x, len, lo, hi);
      CHECK(same_bits(&s0, &s1, sizeof s0));
      CHECK(same_bits(&m0, &m1, sizeof m0));
    }
  }
  free(x);
  free(m);
}

/* Whether two results hold the same bits (NaNs alike, as same_bits), in
 * their data and their masks. */
static bool same_result(mq_tensor *a, mq_tensor *b) {
  if (a->dtype != b->dtype || a->numel != b->numel || !a->mask != !b->mask) return false;
  mq_tensor *da = mq_contiguous(S, mq_get_data(S, a)), *db = mq_contiguous(S, mq_get_data(S, b));
  size_t es = mq_dtype_size((mq_dtype)a->dtype);
  for (int64_t i = 0; i < a->numel; i++)
    if (!same_bits((char *)mq_tensor_data(da) + i * es, (char *)mq_tensor_data(db) + i * es, es)) return false;
  return !a->mask || memcmp(mq_tensor_data(mq_contiguous(S, a->mask)),
                            mq_tensor_data(mq_contiguous(S, b->mask)), (size_t)a->numel) == 0;
}

/* The ops that read padded rows by their spans (maskspan.h) on every path:
 * rows padded to lengths 0, all, odd ones and random ones, NaN and inf
 * where masked out; each op under the contiguous mask (spans) against the
 * same mask as a transposed view (none, read entry by entry), and every
 * path against the portable one. */
#define PAD_OPS 12
static mq_tensor *pad_op(int op, mq_tensor *t) {
  int d1 = 1;
  switch (op) {
  case 0: return mq_reduce(S, MQ_RED_SUM, t, 1, &d1, false);
  case 1: return mq_reduce(S, MQ_RED_MEAN, t, 1, &d1, false);
  case 2: return mq_reduce(S, MQ_RED_AMAX, t, 1, &d1, false);
  case 3: return mq_reduce(S, MQ_RED_SUM, t, 0, NULL, false);
  case 4: return mq_reduce(S, MQ_RED_AMIN, t, 1, &(int){0}, false);
  case 5: return mq_var(S, t, 1, &d1, 1.0, false, false);
  case 6: return mq_norm(S, t, 2.0, 1, &d1, false);
  case 7: return mq_softmax(S, t, 1);
  case 8: return mq_log_softmax(S, t, 1);
  case 9: return mq_softmax(S, t, 0);
  case 10: return mq_reduce(S, MQ_RED_LOGSUMEXP, t, 1, &d1, false);
  default: return mq_var(S, t, 1, &(int){0}, 0.0, false, true);
  }
}
static void padded_ops_paths(void) {
  int best = mq_cpu_state_best(), saved = S->cpu;
  int64_t R = 41, L = 4133, sh[2] = {R, L}, tsh[2] = {L, R};
  mq_tensor *x = mq_tensor_new(S, MQ_DT_F32, 2, sh), *m = mq_tensor_new(S, MQ_DT_BOOL, 2, sh);
  mq_tensor *mt = mq_tensor_new(S, MQ_DT_BOOL, 2, tsh);
  float *xp = mq_tensor_data(x);
  uint8_t *mp = mq_tensor_data(m), *tp = mq_tensor_data(mt);
  for (int64_t r = 0; r < R; r++) {
    static const int64_t fixed[] = {0, 1, 4133, 4133, 4095, 4096, 4097, 4132, 1033, 17, 4133};
    int64_t len = r < 11 ? fixed[r] : (int64_t)(next() % (uint64_t)(L + 1));
    for (int64_t j = 0; j < L; j++) {
      bool v = j < len;
      float u = (float)(unit_rand() * 2 - 1); /* moderate: every entry counts in a variance */
      xp[r * L + j] = v ? (r % 4 == 3 ? u : value(r % 3, j)) : (j % 2 ? NAN : INFINITY);
      mp[r * L + j] = tp[j * R + r] = v;
    }
  }
  mq_tensor *a = mq_masked(S, x, m), *b = mq_masked(S, x, mq_transpose(S, mt, 0, 1));
  for (int op = 0; op < PAD_OPS; op++) {
    mq_tensor *ref = NULL;
    for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++) {
      S->cpu = cpu;
      mq_tensor *got = pad_op(op, a);
      CHECK(same_result(got, pad_op(op, b)));
      if (ref) CHECK(same_result(got, ref));
      else ref = got;
    }
  }
  S->cpu = saved;
}

static void all_tests(mq_state *S_, void *ud) {
  rows();
  padded_runs();
  padded_ops_paths();
  half_paths();
  half_astype_paths();
  matmul_paths();
  matmul_bf16_paths();
  vmath_paths();
  default_path();
}

int main(void) {
  unsetenv("MASQ_CPU");
  return unit_main("test_cpu_paths", all_tests);
}
