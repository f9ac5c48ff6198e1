/* reduce_kernels.c - the typed reduction kernels: one mq_red_kernel per
 * (op, input dtype) for sum, mean, prod, amax, amin, all, any and
 * logsumexp, the sums of squares and absolute values the norms use, and
 * the row sum and row max other kernels call (kernels.h). They only fold
 * contiguous runs into accumulator slots; reduce_walk.c decides which runs
 * go to which slots, on which threads, and reduce.c picks the kernel.
 *
 * Masked-out entries are replaced by the identity with a select (not a
 * multiply, which would let NaN under the mask through). Float sums and
 * products accumulate in double (float sums in 16 lanes within pieces of
 * MQ_RED_PIECE entries, pieces pairwise), so float32 results are as good
 * as torch's.
 *
 * Speed: the float sums and extrema (the "fast kernels") are written so
 * that GCC and clang vectorize them at -O2 for baseline x86-64 (checked
 * with -fopt-info-vec and objdump), count the valid entries in the same
 * pass, and compute pieces of a long row separately so the walk can split
 * it across threads; a result never depends on the thread count. */
#include <math.h>

#include "ops.h"
#include "reduce.h"
#include "reduce_simd.h"

/* acc[i] = OP(acc[i], v) over a row of slots, v = CONV(x[i]) where m (if
 * not NULL) has 1, else IDENT: the masked loop has its own select, apart
 * from the plain loop, so both vectorize. */
#define ACC_ROW(A, acc, x, m, n, CONV, OP, IDENT)                              \
  do {                                                                         \
    if (m)                                                                     \
      for (int64_t i = 0; i < n; i++) {                                        \
        A v = CONV(x[i]);                                                      \
        acc[i] = OP(acc[i], m[i] ? v : (A)(IDENT));                            \
      }                                                                        \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) acc[i] = OP(acc[i], CONV(x[i]));         \
  } while (0)
#define ADD(a, b) ((a) + (b))

/* --- sums ------------------------------------------------------------------ */

/* Pairwise summation (numpy's scheme), in double: leaves of <= 128
 * elements summed with 8 accumulators, leaves combined pairwise. The error
 * grows with log(n) and the result depends only on n. The accumulators are
 * separate variables, not an array, so they stay in registers. */
#define DEF_PAIRSUM(NAME, T, F)                                                \
  static double NAME(const T *x, int64_t n) {                                  \
    if (n <= 128) {                                                            \
      double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;   \
      int64_t i = 0;                                                           \
      for (; i + 8 <= n; i += 8) {                                             \
        a0 += F(x[i]), a1 += F(x[i + 1]), a2 += F(x[i + 2]), a3 += F(x[i + 3]); \
        a4 += F(x[i + 4]), a5 += F(x[i + 5]), a6 += F(x[i + 6]), a7 += F(x[i + 7]); \
      }                                                                        \
      double s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));            \
      for (; i < n; i++) s += F(x[i]);                                         \
      return s;                                                                \
    }                                                                          \
    int64_t h = n / 2;                                                         \
    h -= h % 8;                                                                \
    return NAME(x, h) + NAME(x + h, n - h);                                    \
  }

#define ID(v) ((double)(v))
#define SQ(v) ((double)(v) * (double)(v))
#define ABS(v) fabs((double)(v))

DEF_PAIRSUM(psum_dbl, double, ID)

/* Sums of F(x) over a row. Masked rows select into a block of 128 doubles
 * first (a select loop vectorizes, a select inside the accumulation does
 * not), then sum the block plainly: blocks keep the pairwise structure. */
#define DEF_DSUM(NAME, E, T, F)                                                \
  DEF_PAIRSUM(psum_##NAME##_##E, T, F)                                         \
  static double msum_##NAME##_##E(const T *x, const uint8_t *m, int64_t n) {   \
    if (n <= 128) {                                                            \
      double tmp[128];                                                         \
      for (int64_t i = 0; i < n; i++) {                                        \
        double v = F(x[i]);                                                    \
        tmp[i] = m[i] ? v : 0.0;                                               \
      }                                                                        \
      return psum_dbl(tmp, n);                                                 \
    }                                                                          \
    int64_t h = n / 2;                                                         \
    h -= h % 8;                                                                \
    return msum_##NAME##_##E(x, m, h) + msum_##NAME##_##E(x + h, m + h, n - h); \
  }                                                                            \
  /* msum with the mask 1 on [lo, hi) (relative to x) and 0 elsewhere */     \
  static double spansum_##NAME##_##E(const T *x, int64_t n, int64_t lo, int64_t hi) { \
    if (lo < 0) lo = 0;                                                        \
    if (hi > n) hi = n;                                                        \
    if (lo >= hi) return 0.0; /* psum of zeros */                              \
    if (n <= 128) {                                                            \
      double tmp[128];                                                         \
      for (int64_t i = 0; i < n; i++) tmp[i] = 0.0;                            \
      for (int64_t i = lo; i < hi; i++) tmp[i] = F(x[i]);                      \
      return psum_dbl(tmp, n);                                                 \
    }                                                                          \
    int64_t h = n / 2;                                                         \
    h -= h % 8;                                                                \
    return spansum_##NAME##_##E(x, h, lo, hi) + spansum_##NAME##_##E(x + h, n - h, lo - h, hi - h); \
  }                                                                            \
  static void NAME##_rowspan_##E(void *acc, int64_t o, const void *xv, int64_t n, int64_t lo, \
                                 int64_t hi) {                                 \
    ((double *)acc)[o] += spansum_##NAME##_##E(xv, n, lo, hi);                 \
  }                                                                            \
  static void NAME##_row_##E(void *acc, int64_t o, const void *xv, const uint8_t *m, int64_t n) { \
    const T *x = xv;                                                           \
    ((double *)acc)[o] += m ? msum_##NAME##_##E(x, m, n) : psum_##NAME##_##E(x, n); \
  }                                                                            \
  static void NAME##_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    double *acc = accv;                                                        \
    const T *x = xv;                                                           \
    ACC_ROW(double, acc, x, m, n, F, ADD, 0.0);                                \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {.acc_size = sizeof(double), .row = NAME##_row_##E, \
                                          .acc_row = NAME##_acc_##E,                  \
                                          .row_span = NAME##_rowspan_##E};

DEF_DSUM(dsum, BOOL, uint8_t, ID)
DEF_DSUM(dsum, I64, int64_t, ID)
DEF_DSUM(sumsq, F32, float, SQ)
DEF_DSUM(sumsq, F64, double, SQ)
DEF_DSUM(sumabs, F32, float, ABS)
DEF_DSUM(sumabs, F64, double, ABS)

const mq_red_kernel *mq_red_sumsq(mq_dtype dt) { return dt == MQ_DT_F32 ? &sumsq_F32 : &sumsq_F64; }
const mq_red_kernel *mq_red_sumabs(mq_dtype dt) { return dt == MQ_DT_F32 ? &sumabs_F32 : &sumabs_F64; }

/* --- fast float kernels: sums and extrema of float32 and float64 --------- */

/* These run at memory speed. A select on a byte mask next to float data
 * compiles to a branch per entry at -O2 (GCC: "control flow in loop"),
 * which a random mask mispredicts half the time; selecting on the bit
 * pattern (the bits where m is 1, else those of [fill]) vectorizes, and a
 * masked-out NaN never gets through. Mask bytes are 0 or 1. */
#define DEF_SEL(NAME, T, U)                                                    \
  static inline T NAME(T v, uint8_t m, U fill) {                               \
    U b, k = (U)0 - (U)m;                                                      \
    memcpy(&b, &v, sizeof b);                                                  \
    b = (b & k) | (fill & ~k);                                                 \
    memcpy(&v, &b, sizeof v);                                                  \
    return v;                                                                  \
  }
DEF_SEL(sel_f32, float, uint32_t)
DEF_SEL(sel_f64, double, uint64_t)
#define NEG_INF_F32 UINT32_C(0xff800000)
#define POS_INF_F32 UINT32_C(0x7f800000)
#define NEG_INF_F64 UINT64_C(0xfff0000000000000)
#define POS_INF_F64 UINT64_C(0x7ff0000000000000)

/* Valid entries are counted in the same pass, eight mask bytes at a time
 * in the byte lanes of a word, flushed before a lane can pass 255. */
static inline uint64_t load8(const uint8_t *p) {
  uint64_t w;
  memcpy(&w, p, 8);
  return w;
}
static inline int64_t byte_sum(uint64_t w) {
  w = (w & UINT64_C(0x00ff00ff00ff00ff)) + ((w >> 8) & UINT64_C(0x00ff00ff00ff00ff));
  w = (w & UINT64_C(0x0000ffff0000ffff)) + ((w >> 16) & UINT64_C(0x0000ffff0000ffff));
  return (int64_t)((w & 0xffffffffu) + (w >> 32));
}

/* Sixteen independent lanes, written as an array indexed by the inner
 * loop: GCC and clang turn the inner loop into vector operations, and
 * since each lane is its own sequence of IEEE operations the result is the
 * same whatever the vector width. */
#define LANES 16
#define FLUSH 1024 /* entries between two flushes of the byte counters: <= 128 a lane */

/* The whole blocks of sixteen entries of x[0, n), from entry i (0) on:
 * BODY for each lane j of a block, with v (of type T) the lane's entry,
 * or SEL's [fill] where the mask m (if not NULL) has 0; with a mask, the
 * valid entries are added to c in the same pass. Leaves i at the tail
 * (fewer than sixteen entries), which each kernel folds its own way. */
#define LANE_BLOCKS(T, x, m, n, i, c, SEL, FILL, BODY)                         \
  do {                                                                         \
    int64_t n16_ = (n) - (n) % LANES;                                          \
    if (m) {                                                                   \
      while (i < n16_) {                                                       \
        int64_t e_ = n16_ - i > FLUSH ? i + FLUSH : n16_;                      \
        uint64_t w_ = 0;                                                       \
        for (; i < e_; i += LANES) {                                           \
          for (int j = 0; j < LANES; j++) {                                    \
            T v = SEL(x[i + j], m[i + j], FILL);                               \
            BODY;                                                              \
          }                                                                    \
          w_ += load8(m + i) + load8(m + i + 8);                               \
        }                                                                      \
        c += byte_sum(w_);                                                     \
      }                                                                        \
    } else {                                                                   \
      for (; i < n16_; i += LANES)                                             \
        for (int j = 0; j < LANES; j++) {                                      \
          T v = x[i + j];                                                      \
          BODY;                                                                \
        }                                                                      \
    }                                                                          \
  } while (0)

/* The fast kernels' row and acc_row: their row_cnt and acc_row_cnt
 * without counting. */
#define DEF_NOCOUNT(NAME, E)                                                   \
  static void NAME##_row_##E(void *acc, int64_t o, const void *x, const uint8_t *m, int64_t n) { \
    NAME##_rowc_##E(acc, NULL, o, x, m, n);                                    \
  }                                                                            \
  static void NAME##_acc_##E(void *acc, const void *x, const uint8_t *m, int64_t n) { \
    NAME##_accc_##E(acc, NULL, x, m, n);                                       \
  }

static inline double lanes_sum(const double *d) {
  return (((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]))) +
         (((d[8] + d[9]) + (d[10] + d[11])) + ((d[12] + d[13]) + (d[14] + d[15])));
}

/* Pairwise over the pieces' partial sums [a, b): the tree depends only on
 * the number of pieces. */
static double parts_sum(const double *p, int64_t a, int64_t b) {
  if (b - a == 1) return p[a];
  int64_t h = a + (b - a) / 2;
  return parts_sum(p, a, h) + parts_sum(p, h, b);
}
static void fsum_merge(void *acc, int64_t o, const void *parts, int64_t np) {
  ((double *)acc)[o] += parts_sum(parts, 0, np);
}

static void fsum_combine(void *accv, const void *partv, int64_t n) {
  double *acc = accv;
  const double *part = partv;
  for (int64_t i = 0; i < n; i++) acc[i] += part[i];
}

/* Float sums, in double: within a piece, sixteen double lanes, each
 * summing every sixteenth entry; pieces pairwise (the same tree as
 * parts_sum). Accuracy: at most 256 terms in a lane, then log2(pieces)
 * levels. */
#define DEF_FSUM_BLOCKS(E, T, SEL)                                             \
  static inline int64_t fsum_blocks_##E(const T *x, const uint8_t *m, int64_t n, double *d) { \
    int64_t i = 0, c = 0;                                                      \
    LANE_BLOCKS(T, x, m, n, i, c, SEL, 0, d[j] += (double)v);                  \
    return c;                                                                  \
  }
DEF_FSUM_BLOCKS(F32, float, sel_f32)
DEF_FSUM_BLOCKS(F64, double, sel_f64)

/* The kernel of each CPU path (cpu.h) is this one with BLOCKS, the loop
 * over the whole blocks of sixteen entries, of that path: the same lanes,
 * so the same bits (reduce_simd.h). */
#define DEF_FSUM(E, T, SEL, BLOCKS)                                            \
  static void fsum_piece_##E(void *part, int64_t *cnt, const void *xv, const uint8_t *m, \
                             int64_t n) {                                      \
    const T *x = xv;                                                           \
    double d[LANES] = {0};                                                     \
    int64_t i = n - n % LANES, c = BLOCKS(x, m, i, d);                         \
    if (m) {                                                                   \
      for (int j = 0; i < n; i++, j++) {                                       \
        d[j] += (double)SEL(x[i], m[i], 0);                                    \
        c += m[i];                                                             \
      }                                                                        \
      if (cnt) *cnt += c;                                                      \
    } else {                                                                   \
      for (int j = 0; i < n; i++, j++) d[j] += (double)x[i];                   \
    }                                                                          \
    *(double *)part = lanes_sum(d);                                            \
  }                                                                            \
  static double fsum_tree_##E(const T *x, const uint8_t *m, int64_t n, int64_t a, int64_t b, \
                              int64_t *cnt) {                                  \
    if (b - a == 1) {                                                          \
      double p;                                                                \
      int64_t off = a * MQ_RED_PIECE;                                          \
      fsum_piece_##E(&p, cnt, x + off, m ? m + off : NULL, mq_red_piece_len(n, a));   \
      return p;                                                                \
    }                                                                          \
    int64_t h = a + (b - a) / 2;                                               \
    return fsum_tree_##E(x, m, n, a, h, cnt) + fsum_tree_##E(x, m, n, h, b, cnt); \
  }                                                                            \
  static double fsum_##E(const T *x, const uint8_t *m, int64_t n, int64_t *cnt) { \
    return fsum_tree_##E(x, m, n, 0, mq_red_piece_count(n), cnt);              \
  }                                                                            \
  static void fsum_rowc_##E(void *acc, int64_t *cnt, int64_t o, const void *x, const uint8_t *m, \
                            int64_t n) {                                       \
    ((double *)acc)[o] += fsum_##E(x, m, n, cnt && m ? cnt + o : NULL);        \
  }                                                                            \
  MQ_WIDE static void fsum_accc_##E(void *accv, uint32_t *cnt, const void *xv, const uint8_t *m, \
                                    int64_t n) {                               \
    double *acc = accv;                                                        \
    const T *x = xv;                                                           \
    if (m) {                                                                   \
      for (int64_t i = 0; i < n; i++) acc[i] += (double)SEL(x[i], m[i], 0);    \
      if (cnt)                                                                 \
        for (int64_t i = 0; i < n; i++) cnt[i] += m[i];                        \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i++) acc[i] += (double)x[i];                  \
    }                                                                          \
  }                                                                            \
  /* runs of valid entries, lane by lane in order of i as the piece adds \
   * them (a masked-out entry adds +0.0 to a lane that is never -0.0) */     \
  static void fsum_runs_##E(void *part, const void *xv, int64_t n, const int64_t *r, int nr) { \
    const T *x = xv;                                                           \
    double d[LANES] = {0};                                                     \
    (void)n;                                                                   \
    for (int k = 0; k < nr; k++) {                                             \
      int64_t i = r[2 * k], b = r[2 * k + 1];                                  \
      for (; i < b && i % LANES; i++) d[i % LANES] += (double)x[i];            \
      int64_t e = i < b ? i + (b - i) / LANES * LANES : i;                     \
      if (e > i) BLOCKS(x + i, NULL, e - i, d);                                \
      for (i = e; i < b; i++) d[i % LANES] += (double)x[i];                    \
    }                                                                          \
    *(double *)part = lanes_sum(d);                                            \
  }                                                                            \
  DEF_NOCOUNT(fsum, E)                                                         \
  static const mq_red_kernel dsum_##E = {sizeof(double), fsum_row_##E,  fsum_acc_##E,     \
                                         fsum_rowc_##E,  fsum_accc_##E, fsum_piece_##E, \
                                         fsum_merge,     fsum_combine,  fsum_runs_##E};

DEF_FSUM(F32, float, sel_f32, fsum_blocks_F32)
DEF_FSUM(F64, double, sel_f64, fsum_blocks_F64)
#if MQ_CPU_X86
DEF_FSUM(F32_avx2, float, sel_f32, mq_simd_fsum_f32_avx2)
DEF_FSUM(F32_avx512, float, sel_f32, mq_simd_fsum_f32_avx512)
#endif

/* For floats NaN wins, as in torch. */
#define PICK_MAX(a, v) (((v) > (a) || (v) != (v)) ? (v) : (a))
#define PICK_MIN(a, v) (((v) < (a) || (v) != (v)) ? (v) : (a))
#define PICK_MAXI(a, v) ((v) > (a) ? (v) : (a))
#define PICK_MINI(a, v) ((v) < (a) ? (v) : (a))

/* Float extrema: sixteen lanes a piece; a row folds its pieces in order
 * (so the sign of a zero extremum, the one thing the grouping could
 * change, depends on the sizes only). The lanes use the plain compare
 * FAST (one maxps/minps instruction; it drops a NaN v) and note NaNs on
 * the side: a piece that saw one is NaN, and a row of slots that saw one
 * is folded again with PICK, which keeps NaNs (a slot that FAST left
 * alone because v was NaN then takes it). */
#define FAST_MAX(a, v) ((v) > (a) ? (v) : (a))
#define FAST_MIN(a, v) ((v) < (a) ? (v) : (a))
#define DEF_FEXT_BLOCKS(NAME, E, T, SEL, FAST, FILL)                           \
  static inline int64_t NAME##_blocks_##E(const T *x, const uint8_t *m, int64_t n, T *r, \
                                          int32_t *nan) {                      \
    int32_t nn[LANES] = {0};                                                   \
    int64_t i = 0, c = 0;                                                      \
    LANE_BLOCKS(T, x, m, n, i, c, SEL, FILL, r[j] = FAST(r[j], v); nn[j] |= v != v); \
    for (int j = 0; j < LANES; j++) *nan |= nn[j];                             \
    return c;                                                                  \
  }
DEF_FEXT_BLOCKS(amax, F32, float, sel_f32, FAST_MAX, NEG_INF_F32)
DEF_FEXT_BLOCKS(amax, F64, double, sel_f64, FAST_MAX, NEG_INF_F64)
DEF_FEXT_BLOCKS(amin, F32, float, sel_f32, FAST_MIN, POS_INF_F32)
DEF_FEXT_BLOCKS(amin, F64, double, sel_f64, FAST_MIN, POS_INF_F64)

/* An extremum's start: x (from xv), the lanes r and the result a at the
 * fill (the identity), no NaN seen. */
#define EXT_LANES(T, U, FILL)                                                  \
  const T *x = xv;                                                             \
  T r[LANES], a;                                                               \
  int32_t nan = 0;                                                             \
  U fill = FILL;                                                               \
  memcpy(&a, &fill, sizeof a);                                                 \
  for (int j = 0; j < LANES; j++) r[j] = a

/* BLOCKS: the whole blocks of sixteen, on one CPU path (see DEF_FSUM). */
#define DEF_FEXT(NAME, E, T, U, SEL, PICK, FAST, FILL, BLOCKS)                 \
  static void NAME##_piece_##E(void *part, int64_t *cnt, const void *xv, const uint8_t *m, \
                               int64_t n) {                                    \
    EXT_LANES(T, U, FILL);                                                     \
    int64_t i = n - n % LANES, c = BLOCKS(x, m, i, r, &nan);                   \
    for (int j = 0; j < LANES; j++) a = PICK(a, r[j]);                         \
    if (m) {                                                                   \
      for (; i < n; i++) {                                                     \
        T v = SEL(x[i], m[i], FILL);                                           \
        a = PICK(a, v);                                                        \
        c += m[i];                                                             \
      }                                                                        \
      if (cnt) *cnt += c;                                                      \
    } else {                                                                   \
      for (; i < n; i++) a = PICK(a, x[i]);                                    \
    }                                                                          \
    *(T *)part = nan ? (T)NAN : a;                                             \
  }                                                                            \
  static void NAME##_merge_##E(void *acc, int64_t o, const void *parts, int64_t np) { \
    const T *p = parts;                                                        \
    T a = ((T *)acc)[o];                                                       \
    for (int64_t i = 0; i < np; i++) a = PICK(a, p[i]);                        \
    ((T *)acc)[o] = a;                                                         \
  }                                                                            \
  static T NAME##_fold_##E(T a, int64_t *cnt, const T *x, const uint8_t *m, int64_t n) { \
    for (int64_t p = 0, np = mq_red_piece_count(n); p < np; p++) {             \
      T v;                                                                     \
      int64_t off = p * MQ_RED_PIECE;                                          \
      NAME##_piece_##E(&v, cnt, x + off, m ? m + off : NULL, mq_red_piece_len(n, p)); \
      a = PICK(a, v);                                                          \
    }                                                                          \
    return a;                                                                  \
  }                                                                            \
  static void NAME##_rowc_##E(void *acc, int64_t *cnt, int64_t o, const void *x, const uint8_t *m, \
                              int64_t n) {                                     \
    ((T *)acc)[o] = NAME##_fold_##E(((T *)acc)[o], cnt && m ? cnt + o : NULL, x, m, n); \
  }                                                                            \
  static void NAME##_accc_##E(void *accv, uint32_t *cnt, const void *xv, const uint8_t *m, \
                              int64_t n) {                                     \
    T *acc = accv;                                                             \
    const T *x = xv;                                                           \
    int32_t nan = 0;                                                           \
    if (m && cnt) {                                                            \
      for (int64_t i = 0; i < n; i++) {                                        \
        T v = SEL(x[i], m[i], FILL);                                           \
        acc[i] = FAST(acc[i], v);                                              \
        nan |= v != v;                                                         \
        cnt[i] += m[i];                                                        \
      }                                                                        \
    } else if (m) {                                                            \
      for (int64_t i = 0; i < n; i++) {                                        \
        T v = SEL(x[i], m[i], FILL);                                           \
        acc[i] = FAST(acc[i], v);                                              \
        nan |= v != v;                                                         \
      }                                                                        \
    }                                                                          \
    if (m) {                                                                   \
      if (nan)                                                                 \
        for (int64_t i = 0; i < n; i++) {                                      \
          T v = SEL(x[i], m[i], FILL);                                         \
          acc[i] = PICK(acc[i], v);                                            \
        }                                                                      \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i++) {                                        \
        T v = x[i];                                                            \
        acc[i] = FAST(acc[i], v);                                              \
        nan |= v != v;                                                         \
      }                                                                        \
      if (nan)                                                                 \
        for (int64_t i = 0; i < n; i++) acc[i] = PICK(acc[i], x[i]);           \
    }                                                                          \
  }                                                                            \
  /* runs of valid entries: the whole blocks' part into the lanes in order \
   * of i, the tail's after the lanes, as the piece folds them (a          \
   * masked-out entry's fill leaves a lane or the result as it was) */       \
  static void NAME##_runs_##E(void *part, const void *xv, int64_t n, const int64_t *rr, int nr) { \
    EXT_LANES(T, U, FILL);                                                     \
    int64_t n16 = n - n % LANES;                                               \
    for (int k = 0; k < nr; k++) {                                             \
      int64_t i = rr[2 * k], b = rr[2 * k + 1] < n16 ? rr[2 * k + 1] : n16;    \
      for (; i < b && i % LANES; i++) {                                        \
        r[i % LANES] = FAST(r[i % LANES], x[i]);                               \
        nan |= x[i] != x[i];                                                   \
      }                                                                        \
      int64_t e = i < b ? i + (b - i) / LANES * LANES : i;                     \
      if (e > i) BLOCKS(x + i, NULL, e - i, r, &nan);                          \
      for (i = e; i < b; i++) {                                                \
        r[i % LANES] = FAST(r[i % LANES], x[i]);                               \
        nan |= x[i] != x[i];                                                   \
      }                                                                        \
    }                                                                          \
    for (int j = 0; j < LANES; j++) a = PICK(a, r[j]);                         \
    for (int k = 0; k < nr; k++)                                               \
      for (int64_t i = rr[2 * k] > n16 ? rr[2 * k] : n16; i < rr[2 * k + 1]; i++) a = PICK(a, x[i]); \
    *(T *)part = nan ? (T)NAN : a;                                             \
  }                                                                            \
  DEF_NOCOUNT(NAME, E)                                                         \
  static void NAME##_combine_##E(void *accv, const void *partv, int64_t n) {   \
    T *acc = accv;                                                             \
    const T *part = partv;                                                     \
    for (int64_t i = 0; i < n; i++) acc[i] = PICK(acc[i], part[i]);            \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {sizeof(T),          NAME##_row_##E,   NAME##_acc_##E, \
                                           NAME##_rowc_##E,    NAME##_accc_##E,  \
                                           NAME##_piece_##E,   NAME##_merge_##E, \
                                           NAME##_combine_##E, NAME##_runs_##E};

DEF_FEXT(amax, F32, float, uint32_t, sel_f32, PICK_MAX, FAST_MAX, NEG_INF_F32, amax_blocks_F32)
DEF_FEXT(amax, F64, double, uint64_t, sel_f64, PICK_MAX, FAST_MAX, NEG_INF_F64, amax_blocks_F64)
DEF_FEXT(amin, F32, float, uint32_t, sel_f32, PICK_MIN, FAST_MIN, POS_INF_F32, amin_blocks_F32)
DEF_FEXT(amin, F64, double, uint64_t, sel_f64, PICK_MIN, FAST_MIN, POS_INF_F64, amin_blocks_F64)
#if MQ_CPU_X86
DEF_FEXT(amax, F32_avx2, float, uint32_t, sel_f32, PICK_MAX, FAST_MAX, NEG_INF_F32, mq_simd_fmax_f32_avx2)
DEF_FEXT(amin, F32_avx2, float, uint32_t, sel_f32, PICK_MIN, FAST_MIN, POS_INF_F32, mq_simd_fmin_f32_avx2)
DEF_FEXT(amax, F32_avx512, float, uint32_t, sel_f32, PICK_MAX, FAST_MAX, NEG_INF_F32, mq_simd_fmax_f32_avx512)
DEF_FEXT(amin, F32_avx512, float, uint32_t, sel_f32, PICK_MIN, FAST_MIN, POS_INF_F32, mq_simd_fmin_f32_avx512)
#endif

/* The kernel [k] on CPU path [cpu]: the float32 sums and extrema have one
 * per path (the same bits on each), every other kernel is its own. */
const mq_red_kernel *mq_red_kernel_on(const mq_red_kernel *k, int cpu) {
#if MQ_CPU_X86
  static const mq_red_kernel *const paths[][MQ_CPU__COUNT] = {
      {&dsum_F32, &dsum_F32_avx2, &dsum_F32_avx512},
      {&amax_F32, &amax_F32_avx2, &amax_F32_avx512},
      {&amin_F32, &amin_F32_avx2, &amin_F32_avx512},
  };
  if (cpu > MQ_CPU_PORTABLE && cpu < MQ_CPU__COUNT)
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
      if (paths[i][0] == k) return paths[i][cpu];
#endif
  return k;
}

/* Exact integer sums (wrapping like torch's int64). */
static void isum_combine(void *accv, const void *partv, int64_t n) {
  uint64_t *acc = accv;
  const uint64_t *part = partv;
  for (int64_t i = 0; i < n; i++) acc[i] += part[i];
}
#define DEF_ISUM(E, T)                                                         \
  static void isum_row_##E(void *acc, int64_t o, const void *xv, const uint8_t *m, int64_t n) { \
    const T *x = xv;                                                           \
    uint64_t s = 0;                                                            \
    if (m)                                                                     \
      for (int64_t i = 0; i < n; i++) s += m[i] ? (uint64_t)x[i] : 0;          \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) s += (uint64_t)x[i];                     \
    ((int64_t *)acc)[o] = (int64_t)((uint64_t)((int64_t *)acc)[o] + s);        \
  }                                                                            \
  static void isum_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    uint64_t *acc = accv;                                                      \
    const T *x = xv;                                                           \
    ACC_ROW(uint64_t, acc, x, m, n, (uint64_t), ADD, 0);                       \
  }                                                                            \
  /* a padded row: its valid span only (wrapping sums in any order) */     \
  static void isum_rowspan_##E(void *acc, int64_t o, const void *xv, int64_t n, int64_t lo, \
                               int64_t hi) {                                   \
    (void)n;                                                                   \
    isum_row_##E(acc, o, (const T *)xv + lo, NULL, hi - lo);                   \
  }                                                                            \
  static const mq_red_kernel isum_##E = {.acc_size = sizeof(int64_t), .row = isum_row_##E, \
                                        .acc_row = isum_acc_##E, .combine = isum_combine, \
                                        .row_span = isum_rowspan_##E};

DEF_ISUM(BOOL, uint8_t)
DEF_ISUM(I64, int64_t)

/* --- products ---------------------------------------------------------------- */

/* Float products in double; int products wrap in int64. Eight partial
 * products keep the row loop vectorizable. */
#define DEF_PROD(NAME, E, T, A, MULT)                                          \
  static void NAME##_row_##E(void *acc, int64_t o, const void *xv, const uint8_t *m, int64_t n) { \
    const T *x = xv;                                                           \
    A p[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                         \
    int64_t i = 0;                                                             \
    if (m) {                                                                   \
      for (; i + 8 <= n; i += 8)                                               \
        for (int j = 0; j < 8; j++) {                                          \
          A v = (A)x[i + j];                                                   \
          p[j] = MULT(p[j], m[i + j] ? v : (A)1);                              \
        }                                                                      \
      for (; i < n; i++) p[0] = MULT(p[0], m[i] ? (A)x[i] : (A)1);             \
    } else {                                                                   \
      for (; i + 8 <= n; i += 8)                                               \
        for (int j = 0; j < 8; j++) p[j] = MULT(p[j], (A)x[i + j]);            \
      for (; i < n; i++) p[0] = MULT(p[0], (A)x[i]);                           \
    }                                                                          \
    A r = ((A *)acc)[o];                                                       \
    for (int j = 0; j < 8; j++) r = MULT(r, p[j]);                             \
    ((A *)acc)[o] = r;                                                         \
  }                                                                            \
  static void NAME##_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    A *acc = accv;                                                             \
    const T *x = xv;                                                           \
    ACC_ROW(A, acc, x, m, n, (A), MULT, 1);                                    \
  }                                                                            \
  /* [lo, hi) only, each entry in the lane row() gives it (i % 8 in the    \
   * whole blocks of eight, lane 0 after them), in the same order: the      \
   * entries outside multiply their lanes by 1 there, which is exact */      \
  static void NAME##_rowspan_##E(void *acc, int64_t o, const void *xv, int64_t n, int64_t lo, \
                                 int64_t hi) {                                 \
    const T *x = xv;                                                           \
    A p[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                         \
    int64_t n8 = n - n % 8, b = hi < n8 ? hi : n8, i = lo;                     \
    for (; i < b && i % 8; i++) p[i % 8] = MULT(p[i % 8], (A)x[i]);            \
    for (; i + 8 <= b; i += 8)                                                 \
      for (int j = 0; j < 8; j++) p[j] = MULT(p[j], (A)x[i + j]);              \
    for (; i < b; i++) p[i % 8] = MULT(p[i % 8], (A)x[i]);                     \
    for (; i < hi; i++) p[0] = MULT(p[0], (A)x[i]);                            \
    A r = ((A *)acc)[o];                                                       \
    for (int j = 0; j < 8; j++) r = MULT(r, p[j]);                             \
    ((A *)acc)[o] = r;                                                         \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {.acc_size = sizeof(A), .row = NAME##_row_##E, \
                                          .acc_row = NAME##_acc_##E,           \
                                          .row_span = NAME##_rowspan_##E};

#define FMULT(a, b) ((a) * (b))
#define IMULT(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
DEF_PROD(iprod, BOOL, uint8_t, int64_t, IMULT)
DEF_PROD(iprod, I64, int64_t, int64_t, IMULT)
DEF_PROD(dprod, F32, float, double, FMULT)
DEF_PROD(dprod, F64, double, double, FMULT)

/* --- extrema --------------------------------------------------------------- */

/* The blocks of at most 256 entries of x[0, n) (of type T), each
 * selected into tmp[0, len) (x where m is 1, else IDENT) and then folded
 * by BODY, which sees the block's start i0: a select loop vectorizes, a
 * select inside the fold does not. */
#define SEL_BLOCKS(T, x, m, n, IDENT, BODY)                                    \
  do {                                                                         \
    T tmp[256];                                                                \
    for (int64_t i0 = 0; i0 < n; i0 += 256) {                                  \
      int64_t len = n - i0 < 256 ? n - i0 : 256;                               \
      for (int64_t i = 0; i < len; i++) {                                      \
        T v = x[i0 + i];                                                       \
        tmp[i] = m[i0 + i] ? v : (T)(IDENT);                                   \
      }                                                                        \
      BODY;                                                                    \
    }                                                                          \
  } while (0)

/* Extremum of a contiguous row, seeded with [a]. Eight independent
 * accumulators let the compiler vectorize the compare-and-select; NaN wins
 * in any order, so the result does not depend on the grouping. */
#define DEF_EXT(NAME, E, T, PICK, IDENT)                                       \
  static T NAME##_fold_##E(T a, const T *x, const uint8_t *m, int64_t n) {     \
    if (m) {                                                                   \
      SEL_BLOCKS(T, x, m, n, IDENT, a = NAME##_fold_##E(a, tmp, NULL, len));   \
      return a;                                                                \
    }                                                                          \
    T r[8] = {a, a, a, a, a, a, a, a};                                         \
    int64_t i = 0;                                                             \
    for (; i + 8 <= n; i += 8)                                                 \
      for (int j = 0; j < 8; j++) r[j] = PICK(r[j], x[i + j]);                 \
    for (int j = 0; j < 8; j++) a = PICK(a, r[j]);                             \
    for (; i < n; i++) a = PICK(a, x[i]);                                      \
    return a;                                                                  \
  }                                                                            \
  static void NAME##_row_##E(void *acc, int64_t o, const void *x, const uint8_t *m, int64_t n) { \
    ((T *)acc)[o] = NAME##_fold_##E(((T *)acc)[o], x, m, n);                   \
  }                                                                            \
  static void NAME##_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    T *acc = accv;                                                             \
    const T *x = xv;                                                           \
    if (m) {                                                                   \
      SEL_BLOCKS(T, x, m, n, IDENT, T *ac = acc + i0;                          \
                 for (int64_t i = 0; i < len; i++) ac[i] = PICK(ac[i], tmp[i])); \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i++) acc[i] = PICK(acc[i], x[i]);             \
    }                                                                          \
  }                                                                            \
  /* a padded row: its valid span only (an integer extremum is the same in \
   * any order) */                                                            \
  static void NAME##_rowspan_##E(void *acc, int64_t o, const void *x, int64_t n, int64_t lo, \
                                 int64_t hi) {                                 \
    (void)n;                                                                   \
    ((T *)acc)[o] = NAME##_fold_##E(((T *)acc)[o], (const T *)x + lo, NULL, hi - lo); \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {.acc_size = sizeof(T), .row = NAME##_row_##E, \
                                          .acc_row = NAME##_acc_##E,           \
                                          .row_span = NAME##_rowspan_##E};

DEF_EXT(amax, BOOL, uint8_t, PICK_MAXI, 0)
DEF_EXT(amax, I64, int64_t, PICK_MAXI, INT64_MIN)
DEF_EXT(amin, BOOL, uint8_t, PICK_MINI, 1)
DEF_EXT(amin, I64, int64_t, PICK_MINI, INT64_MAX)

/* A float32 row whose valid entries are exactly [lo, hi): its pieces
 * outside give the identity (+0.0, -inf), those across read as runs. */
static inline int64_t span_of_piece(int64_t n, int64_t p, int64_t lo, int64_t hi, int64_t *rr) {
  int64_t off = p * MQ_RED_PIECE, len = mq_red_piece_len(n, p);
  rr[0] = lo > off ? lo - off : 0;
  rr[1] = hi < off + len ? hi - off : len;
  return len;
}
#define DEF_SPAN_ROW(E)                                                        \
  static double fsum_span_##E(const float *x, int64_t n, int64_t lo, int64_t hi, int64_t a, \
                              int64_t b) {                                     \
    if (b - a == 1) {                                                          \
      int64_t rr[2], len = span_of_piece(n, a, lo, hi, rr);                    \
      double p = 0.0;                                                          \
      if (rr[0] < rr[1]) fsum_runs_##E(&p, x + a * MQ_RED_PIECE, len, rr, 1);  \
      return p;                                                                \
    }                                                                          \
    int64_t h = a + (b - a) / 2;                                               \
    return fsum_span_##E(x, n, lo, hi, a, h) + fsum_span_##E(x, n, lo, hi, h, b); \
  }                                                                            \
  static float amax_span_##E(const float *x, int64_t n, int64_t lo, int64_t hi) { \
    float a = -INFINITY;                                                       \
    for (int64_t p = 0, np = mq_red_piece_count(n); p < np; p++) {             \
      int64_t rr[2], len = span_of_piece(n, p, lo, hi, rr);                    \
      if (rr[0] >= rr[1]) continue;                                            \
      float v;                                                                 \
      amax_runs_##E(&v, x + p * MQ_RED_PIECE, len, rr, 1);                     \
      a = PICK_MAX(a, v);                                                      \
    }                                                                          \
    return a;                                                                  \
  }
DEF_SPAN_ROW(F32)
#if MQ_CPU_X86
DEF_SPAN_ROW(F32_avx2)
DEF_SPAN_ROW(F32_avx512)
#endif

double mq_kernel_rowsum_span_f32(int cpu, const float *x, int64_t n, int64_t lo, int64_t hi) {
  int64_t np = mq_red_piece_count(n);
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) return fsum_span_F32_avx512(x, n, lo, hi, 0, np);
  if (cpu == MQ_CPU_AVX2) return fsum_span_F32_avx2(x, n, lo, hi, 0, np);
#endif
  (void)cpu;
  return fsum_span_F32(x, n, lo, hi, 0, np);
}
float mq_kernel_rowmax_span_f32(int cpu, const float *x, int64_t n, int64_t lo, int64_t hi) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) return amax_span_F32_avx512(x, n, lo, hi);
  if (cpu == MQ_CPU_AVX2) return amax_span_F32_avx2(x, n, lo, hi);
#endif
  (void)cpu;
  return amax_span_F32(x, n, lo, hi);
}

double mq_kernel_rowsum_f32(const float *x, const uint8_t *m, int64_t n) { return fsum_F32(x, m, n, NULL); }
double mq_kernel_rowsum_cnt_f32(int cpu, const float *x, const uint8_t *m, int64_t n, int64_t *cnt) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) return fsum_F32_avx512(x, m, n, cnt);
  if (cpu == MQ_CPU_AVX2) return fsum_F32_avx2(x, m, n, cnt);
#endif
  return fsum_F32(x, m, n, cnt);
}
double mq_kernel_rowsum_cnt_f64(const double *x, const uint8_t *m, int64_t n, int64_t *cnt) {
  return fsum_F64(x, m, n, cnt);
}
double mq_kernel_rowsum_f64(const double *x, const uint8_t *m, int64_t n) { return fsum_F64(x, m, n, NULL); }
float mq_kernel_rowmax_f32(const float *x, const uint8_t *m, int64_t n) {
  return amax_fold_F32(-INFINITY, NULL, x, m, n);
}
float mq_kernel_rowmax_on_f32(int cpu, const float *x, const uint8_t *m, int64_t n) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512) return amax_fold_F32_avx512(-INFINITY, NULL, x, m, n);
  if (cpu == MQ_CPU_AVX2) return amax_fold_F32_avx2(-INFINITY, NULL, x, m, n);
#endif
  return mq_kernel_rowmax_f32(x, m, n);
}
double mq_kernel_rowmax_f64(const double *x, const uint8_t *m, int64_t n) {
  return amax_fold_F64(-INFINITY, NULL, x, m, n);
}

/* --- logsumexp ------------------------------------------------------------------ */

/* lse_F32's padded rows (below), defined after the kernels */
static void lse_rowspan_F32(void *acc, int64_t o, const void *xv, int64_t n, int64_t lo, int64_t hi);
#define LSE_SPAN_F32 lse_rowspan_F32
#define LSE_SPAN_F64 NULL

/* A running (max M, sum S of exp(x - M)) per slot (mq_red_lse), so one
 * pass suffices in any layout. Merging a part (m, s): the larger max wins and rescales the
 * other sum. Equal maxes add (which also keeps inf + inf from becoming
 * NaN); a NaN part makes the slot NaN. */
static inline void lse_merge(mq_red_lse *a, double m, double s) {
  if (m == -INFINITY) return; /* nothing valid, or only -inf: adds 0 */
  if (m == a->M) a->S += s;
  else if (m > a->M) a->S = a->S * exp(a->M - m) + s, a->M = m;
  else a->S += s * exp(m - a->M); /* NaN m lands here and poisons S */
}

#define DEF_LSE(E, T, ROWMAX)                                                  \
  static void lse_row_##E(void *acc, int64_t o, const void *xv, const uint8_t *m, int64_t n) { \
    const T *x = xv;                                                           \
    double mx = (double)ROWMAX(x, m, n), s = 0;                                \
    if (mx == INFINITY || mx == -INFINITY || mx != mx) {                       \
      /* the sum does not matter: M decides (or NaN does) */                   \
      lse_merge((mq_red_lse *)acc + o, mx, 1);                                 \
      return;                                                                  \
    }                                                                          \
    if (m)                                                                     \
      for (int64_t i = 0; i < n; i++) {                                        \
        double e = exp((double)x[i] - mx);                                     \
        s += m[i] ? e : 0.0;                                                   \
      }                                                                        \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) s += exp((double)x[i] - mx);             \
    lse_merge((mq_red_lse *)acc + o, mx, s);                                   \
  }                                                                            \
  static void lse_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    mq_red_lse *acc = accv;                                                    \
    const T *x = xv;                                                           \
    for (int64_t i = 0; i < n; i++)                                            \
      if (!m || m[i]) lse_merge(&acc[i], (double)x[i], 1);                     \
  }                                                                            \
  static const mq_red_kernel lse_##E = {.acc_size = sizeof(mq_red_lse), .row = lse_row_##E, \
                                       .acc_row = lse_acc_##E, .row_span = LSE_SPAN_##E};

DEF_LSE(F32, float, mq_kernel_rowmax_f32)
DEF_LSE(F64, double, mq_kernel_rowmax_f64)

/* lse_row_F32 of a padded row (valid entries exactly [lo, hi)), reading
 * only the span: the max as the masked one (reduce.h), the sum of exps
 * over the span alone (a masked-out entry added +0.0) */
static void lse_rowspan_F32(void *acc, int64_t o, const void *xv, int64_t n, int64_t lo, int64_t hi) {
  const float *x = xv;
  double mx = (double)mq_kernel_rowmax_span_f32(MQ_CPU_PORTABLE, x, n, lo, hi), s = 0;
  if (mx == INFINITY || mx == -INFINITY || mx != mx) {
    lse_merge((mq_red_lse *)acc + o, mx, 1);
    return;
  }
  for (int64_t i = lo; i < hi; i++) s += exp((double)x[i] - mx);
  lse_merge((mq_red_lse *)acc + o, mx, s);
}

/* --- all and any of numbers ------------------------------------------------- */

/* Each entry read as x != 0 (NaN is true, -0.0 false, as in torch), folded
 * into a bool slot: no bool copy of the input is made first, so all(x) of
 * a mapped file needs no memory in proportion to it. A row stops at the
 * entry that settles its slot (DONE: any's first true, all's first false),
 * and a padded row reads its valid span only. */
#define DEF_TRUTH(NAME, E, T, PICK, DONE)                                      \
  static void NAME##_row_##E(void *acc, int64_t o, const void *xv, const uint8_t *m, int64_t n) { \
    const T *x = xv;                                                           \
    uint8_t a = ((uint8_t *)acc)[o];                                           \
    for (int64_t i = 0; i < n && a != (DONE); i++)                             \
      if (!m || m[i]) a = PICK(a, (uint8_t)(x[i] != 0));                       \
    ((uint8_t *)acc)[o] = a;                                                   \
  }                                                                            \
  static void NAME##_rowspan_##E(void *acc, int64_t o, const void *xv, int64_t n, int64_t lo, \
                                 int64_t hi) {                                 \
    (void)n;                                                                   \
    NAME##_row_##E(acc, o, (const T *)xv + lo, NULL, hi - lo);                 \
  }                                                                            \
  static void NAME##_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    uint8_t *acc = accv;                                                       \
    const T *x = xv;                                                           \
    for (int64_t i = 0; i < n; i++)                                            \
      if (!m || m[i]) acc[i] = PICK(acc[i], (uint8_t)(x[i] != 0));             \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {.acc_size = 1, .row = NAME##_row_##E,     \
                                          .acc_row = NAME##_acc_##E,           \
                                          .row_span = NAME##_rowspan_##E};

DEF_TRUTH(all, I64, int64_t, PICK_MINI, 0)
DEF_TRUTH(all, F32, float, PICK_MINI, 0)
DEF_TRUTH(all, F64, double, PICK_MINI, 0)
DEF_TRUTH(any, I64, int64_t, PICK_MAXI, 1)
DEF_TRUTH(any, F32, float, PICK_MAXI, 1)
DEF_TRUTH(any, F64, double, PICK_MAXI, 1)

/* --- the table ------------------------------------------------------------- */

const mq_red_kernel *const mq_red_kernels[MQ_RED__COUNT][MQ_DT__COUNT] = {
    [MQ_RED_SUM] = {&isum_BOOL, &isum_I64, &dsum_F32, &dsum_F64},
    [MQ_RED_MEAN] = {&dsum_BOOL, &dsum_I64, &dsum_F32, &dsum_F64},
    [MQ_RED_AMAX] = {&amax_BOOL, &amax_I64, &amax_F32, &amax_F64},
    [MQ_RED_AMIN] = {&amin_BOOL, &amin_I64, &amin_F32, &amin_F64},
    [MQ_RED_PROD] = {&iprod_BOOL, &iprod_I64, &dprod_F32, &dprod_F64},
    [MQ_RED_ALL] = {&amin_BOOL, &all_I64, &all_F32, &all_F64},
    [MQ_RED_ANY] = {&amax_BOOL, &any_I64, &any_F32, &any_F64},
    [MQ_RED_LOGSUMEXP] = {NULL, NULL, &lse_F32, &lse_F64},
};
