/* test_half_ops.c - elementwise ops and reductions of float16 and bfloat16
 * tensors, which run from the half data block by block (iter.h's
 * mq_ewise_run_half, reduce.c's reduce_half), give the bits of their
 * definition: the operands widened to float32, the float32 op, its result
 * rounded once to the half type (half.h).
 *
 * Every unary op (with three sets of parameters) and every binary op, on
 * each half type and each CPU path (runtime/tensor/cpu.h), over edge
 * values and random bit patterns (NaN, infinities, subnormals of both
 * types among them) several blocks long: contiguous, strided, masked, with
 * a broadcast row, a half scalar and a Python number. Reductions (sum,
 * mean, amax, amin, and the others that take the float32 copy) over all
 * dims, the last one or two, keepdim, the first (not the last: the float32
 * copy), masked and plain, and one row longer than a batch of pieces
 * (MQ_RED_BATCH * MQ_RED_PIECE); and one piece's partial result against
 * float32's piece, before rounding. The long cases again on two threads. A
 * NaN result may be any NaN (which one an operation on NaNs gives is the
 * compiler's choice); every other bit must match. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../runtime/kernels/ops.h"
#include "../../runtime/kernels/reduce.h"
#include "../../runtime/tensor/cpu.h"
#include "../../runtime/tensor/half.h"
#include "../../runtime/tensor/internal.h"
#include "../../runtime/tensor/shape.h"
#include "../../runtime/tensor/tensor.h"

#include "unit.h"

static uint64_t rng = 12345;
static uint64_t next(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 33;
}

static const double edges[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e-30, 1e-40, 65504.0,
                               65520.0, 6e-8, -3e-5, 100.0, 710.0, -88.0, INFINITY, -INFINITY, NAN,
                               0.999, 64.0, 2.0, -0.25};
#define NE ((int64_t)(sizeof edges / sizeof *edges))

/* A half tensor of [n] entries: the edge values, then random bit patterns
 * (every fourth one of small magnitude). */
static mq_tensor *half_data(mq_dtype h, int64_t n) {
  mq_tensor *t = mq_tensor_new(S, h, 1, &n);
  uint16_t *p = mq_tensor_data(t);
  for (int64_t i = 0; i < n; i++) {
    if (i < NE) p[i] = h == MQ_DT_BF16 ? mq_f32_to_bf16((float)edges[i]) : mq_f32_to_f16((float)edges[i]);
    else p[i] = (uint16_t)(i % 4 ? next() : (next() & 0x83ff) | 0x3800);
  }
  return t;
}

static mq_tensor *random_mask(int ndim, const int64_t *shape) {
  mq_tensor *m = mq_tensor_new(S, MQ_DT_BOOL, ndim, shape);
  for (int64_t i = 0; i < m->numel; i++) ((uint8_t *)mq_tensor_data(m))[i] = (uint8_t)(next() % 3 != 0);
  return m;
}

static bool same(const mq_tensor *a, const mq_tensor *b) {
  if (a->dtype != b->dtype || a->numel != b->numel || !mq_tensor_is_contiguous(a) || !mq_tensor_is_contiguous(b))
    return false;
  mq_dtype dt = (mq_dtype)a->dtype;
  size_t es = mq_dtype_size(dt);
  for (int64_t i = 0; i < a->numel; i++) {
    const char *x = (const char *)mq_tensor_data(a) + i * (int64_t)es, *y = (const char *)mq_tensor_data(b) + i * (int64_t)es;
    if (memcmp(x, y, es) == 0) continue;
    double u = mq_elem_f64(dt, x), v = mq_elem_f64(dt, y);
    if (!(isnan(u) && isnan(v))) return false;
  }
  if (!a->mask != !b->mask) return false;
  return !a->mask || memcmp(mq_tensor_data(mq_contiguous(S, a->mask)),
                            mq_tensor_data(mq_contiguous(S, b->mask)), (size_t)a->numel) == 0;
}

static int shown;
static void check_same(const char *what, int op, mq_dtype h, const mq_tensor *got, const mq_tensor *want) {
  bool ok = same(got, want);
  if (!ok && shown++ < 20)
    printf("FAIL half_ops: %s op %d on %s (path %s)\n", what, op, mq_dtype_name(h), mq_cpu_name(S->cpu));
  CHECK(ok);
}

/* The definition: computed on float32 copies, a float32 result rounded. */
static mq_tensor *f32(mq_tensor *t) { return mq_astype(S, t, mq_dtype_is_narrow((mq_dtype)t->dtype) ? MQ_DT_F32 : (mq_dtype)t->dtype); }
static mq_tensor *back(mq_tensor *r, mq_dtype h) {
  return mq_contiguous(S, r->dtype == MQ_DT_F32 ? mq_astype(S, r, h) : r);
}

/* Runs fn in an error boundary; false if it raised "not defined" and the
 * like (no kernel for the dtype), any other error fails. */
static bool attempt(mq_pfunc fn, void *ud) {
  if (mq_protect(S, fn, ud) == MASQ_OK) return true;
  const char *m = S->err_message.data ? S->err_message.data : "";
  bool refused = strstr(m, "not defined") || strstr(m, "only defined") || strstr(m, "not supported");
  if (!refused) printf("FAIL half_ops: %s\n", m);
  CHECK(refused);
  return false;
}

typedef struct hcase {
  int op;
  mq_dtype h;
  const double *prm;
  int64_t n;
} hcase;

static void unary_case(mq_state *S_, void *ud) {
  const hcase *c = ud;
  mq_tensor *t = half_data(c->h, c->n);
  int64_t n3 = c->n / 3, st = 3;
  mq_tensor *strided = mq_tensor_view(S, t, 1, &n3, &st, 0);
  mq_tensor *masked = mq_masked(S, t, random_mask(1, &c->n));
  mq_tensor *ins[3] = {t, strided, masked};
  for (int k = 0; k < 3; k++) {
    mq_tensor *want = back(mq_unary_p(S, (mq_unop)c->op, f32(ins[k]), c->prm), c->h);
    check_same("unary", c->op, c->h, mq_contiguous(S, mq_unary_p(S, (mq_unop)c->op, ins[k], c->prm)), want);
  }
}

static void binary_case(mq_state *S_, void *ud) {
  const hcase *c = ud;
  int64_t n = c->n, rows = 3, shape[2] = {rows, n / rows}, row = n / rows;
  mq_tensor *a = half_data(c->h, n), *b = half_data(c->h, n);
  mq_tensor *a2 = mq_reshape(S, a, 2, shape), *b2 = mq_reshape(S, b, 2, shape);
  mq_tensor *brow = mq_narrow(S, b2, 0, 1, 1); /* (1, row), broadcast over the rows */
  mq_tensor *bs = mq_tensor_scalar(S, c->h, 0), *num = mq_tensor_scalar(S, MQ_DT_F64, 0.3);
  num->weak = true;
  *(uint16_t *)mq_tensor_data(bs) = ((const uint16_t *)mq_tensor_data(b))[7];
  (void)row;
  mq_tensor *masked = mq_masked(S, a2, random_mask(2, shape));
  mq_tensor *xs[5] = {a2, masked, a2, a2, num}, *ys[5] = {b2, b2, brow, bs, a2};
  for (int k = 0; k < 5; k++) {
    /* the number as the half type first, as torch (float_power: all in float64) */
    mq_tensor *x = xs[k] == num && c->op != MQ_BIN_FLOAT_POWER ? mq_astype(S, num, c->h) : xs[k];
    mq_tensor *want = back(mq_binary(S, (mq_binop)c->op, f32(x), f32(ys[k])), c->h);
    check_same("binary", c->op, c->h, mq_contiguous(S, mq_binary(S, (mq_binop)c->op, xs[k], ys[k])), want);
  }
}

static void test_elementwise(void) {
  static const double none[3] = {NAN, NAN, NAN}, some[3] = {0.5, 2.0, 1.0}, other[3] = {-1.0, 1e30, -3.0};
  const double *prms[3] = {none, some, other};
  int best = mq_cpu_state_best(), saved = S->cpu;
  for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++) {
    S->cpu = cpu;
    for (int h = 0; h < 2; h++) {
      mq_dtype dt = h ? MQ_DT_BF16 : MQ_DT_F16;
      for (int op = 0; op < MQ_UN__COUNT; op++)
        for (int p = 0; p < 3; p++) {
          hcase c = {op, dt, prms[p], 1501};
          if (!attempt(unary_case, &c)) break;
        }
      for (int op = 0; op < MQ_BIN__COUNT; op++) {
        hcase c = {op, dt, NULL, 1503};
        attempt(binary_case, &c);
      }
    }
  }
  S->cpu = saved;
}

/* --- reductions ---------------------------------------------------------- */

static void reduce_case(mq_state *S_, void *ud) {
  const hcase *c = ud;
  int64_t shape[3] = {3, 5, c->n / 15};
  mq_tensor *t = mq_reshape(S, half_data(c->h, shape[0] * shape[1] * shape[2]), 3, shape);
  mq_tensor *ins[2] = {t, mq_masked(S, t, random_mask(3, shape))};
  static const int d2[] = {2}, d12[] = {1, 2}, d0[] = {0}, d012[] = {0, 1, 2};
  const int *dims[] = {NULL, d2, d12, d0, d012, d2};
  int nd[] = {0, 1, 2, 1, 3, 1};
  for (int k = 0; k < 2; k++)
    for (int v = 0; v < 6; v++) {
      bool keep = v == 5;
      mq_tensor *got = mq_reduce(S, (mq_redop)c->op, ins[k], nd[v], dims[v], keep);
      mq_tensor *want = mq_reduce(S, (mq_redop)c->op, f32(ins[k]), nd[v], dims[v], keep);
      if (want->dtype != got->dtype) want = mq_astype(S, want, (mq_dtype)got->dtype);
      check_same("reduce", c->op, c->h, mq_contiguous(S, got), mq_contiguous(S, want));
    }
}

/* One row of more pieces than a batch holds, plain and masked. */
static void long_case(mq_state *S_, void *ud) {
  const hcase *c = ud;
  int64_t n = c->n;
  mq_tensor *t = half_data(c->h, n);
  mq_tensor *ins[2] = {t, mq_masked(S, t, random_mask(1, &n))};
  for (int k = 0; k < 2; k++) {
    mq_tensor *got = mq_reduce(S, (mq_redop)c->op, ins[k], 0, NULL, false);
    mq_tensor *want = mq_reduce(S, (mq_redop)c->op, f32(ins[k]), 0, NULL, false);
    if (want->dtype != got->dtype) want = mq_astype(S, want, (mq_dtype)got->dtype);
    check_same("long reduce", c->op, c->h, got, want);
    /* and elementwise, split among threads when S has several */
    mq_tensor *e = mq_unary(S, MQ_UN_EXP, ins[k]), *ew = back(mq_unary(S, MQ_UN_EXP, f32(ins[k])), c->h);
    check_same("long exp", MQ_UN_EXP, c->h, mq_contiguous(S, e), ew);
  }
}

/* One piece, the partial and count of mq_red_half_piece on every path
 * against the portable float32 piece on the data widened: bit for bit
 * before any rounding to a half type could hide a difference (in the
 * order the lanes add up, say), over lengths with and without a tail,
 * data of mixed magnitudes and signs, plain and masked. */
static void test_pieces(void) {
  static const int64_t lens[] = {0, 1, 5, 15, 16, 17, 33, 100, 1000, 4095, 4096};
  static const mq_redop ops[] = {MQ_RED_SUM, MQ_RED_MEAN, MQ_RED_AMAX, MQ_RED_AMIN};
  static uint16_t x[MQ_RED_PIECE];
  static float w[MQ_RED_PIECE];
  static uint8_t m[MQ_RED_PIECE];
  int best = mq_cpu_state_best();
  for (int bf = 0; bf < 2; bf++)
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
      for (int mk = 0; mk < 4; mk++) { /* plain, masked; the same with NaN and inf */
        int64_t n = lens[l];
        for (int64_t i = 0; i < n; i++) {
          /* bfloat16 over 64 binades, whose sums in double round (float16's
           * are exact, whatever the order); every bit pattern now and then */
          uint16_t r = (uint16_t)next();
          x[i] = (uint16_t)(mk >= 2 && i % 97 == 3 ? r
                            : bf ? (r & 0x807f) | (uint16_t)((64 + r % 64) << 7) : (r & 0x8fff) | 0x2000);
          w[i] = bf ? mq_bf16_to_f32(x[i]) : mq_f16_to_f32(x[i]);
          m[i] = (uint8_t)(next() % 4 != 0);
        }
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
          const mq_red_kernel *k = mq_red_kernels[ops[o]][MQ_DT_F32];
          double want = 0, got = 0; /* room for a double or a float partial */
          int64_t cw = 0;
          k->piece(&want, &cw, w, mk % 2 ? m : NULL, n);
          for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++) {
            int64_t cg = 0;
            got = 0;
            mq_red_half_piece(cpu, ops[o], bf, &got, &cg, x, mk % 2 ? m : NULL, n);
            /* a NaN partial may be any NaN (which one an add of NaNs gives
             * differs between the float32 paths already) */
            float gf, wf;
            memcpy(&gf, &got, sizeof gf), memcpy(&wf, &want, sizeof wf);
            bool nan = k->acc_size == sizeof(double) ? isnan(got) && isnan(want) : isnan(gf) && isnan(wf);
            bool ok = (memcmp(&got, &want, k->acc_size) == 0 || nan) && cg == cw;
            if (!ok && shown++ < 20)
              printf("FAIL half_ops: piece of op %d, %s, n %lld, mask %d, path %s\n", ops[o],
                     bf ? "bfloat16" : "float16", (long long)n, mk, mq_cpu_name(cpu));
            CHECK(ok);
          }
        }
      }
}

static void test_reductions(void) {
  int best = mq_cpu_state_best(), saved = S->cpu, threads = S->nthreads;
  for (int cpu = MQ_CPU_PORTABLE; cpu <= best; cpu++) {
    S->cpu = cpu;
    for (int h = 0; h < 2; h++) {
      mq_dtype dt = h ? MQ_DT_BF16 : MQ_DT_F16;
      for (int op = 0; op < MQ_RED__COUNT; op++) {
        hcase c = {op, dt, NULL, 15 * 1000};
        attempt(reduce_case, &c);
      }
      for (int nt = 1; nt <= 2; nt++) {
        S->nthreads = nt;
        hcase c = {MQ_RED_SUM, dt, NULL, (int64_t)MQ_RED_BATCH * MQ_RED_PIECE + 3 * MQ_RED_PIECE + 77};
        attempt(long_case, &c);
        c.op = MQ_RED_AMAX;
        attempt(long_case, &c);
      }
    }
  }
  S->cpu = saved, S->nthreads = threads;
}

static void all_tests(mq_state *S_, void *ud) {
  test_elementwise();
  test_pieces();
  test_reductions();
}

int main(void) { return unit_main("test_half_ops", all_tests); }
