/* reduce.c - reductions over any set of dims, masked or plain: sum, mean,
 * prod, amax, amin, all, any, count, logsumexp, and the block walk they
 * (and stats.c) share (see reduce.h).
 *
 * Masked-out entries are replaced by the identity with a select (not a
 * multiply, which would let NaN under the mask through). Float sums and
 * products accumulate in double (float sums in 16 lanes within pieces of
 * MQ_RED_PIECE entries, pieces pairwise), so float32 results are as good
 * as torch's. An output with no valid input is masked out; its hidden
 * data is the identity (NaN for mean), as in torch.masked.
 *
 * Speed: the float sums and extrema (the "fast kernels") are written so
 * that GCC and clang vectorize them at -O2 for baseline x86-64 (checked
 * with -fopt-info-vec and objdump), count the valid entries in the same
 * pass, and split across threads for large inputs (walk()); a result never
 * depends on the thread count. */
#include <math.h>

#include "parallel.h"
#include "reduce.h"

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
  static void NAME##_row_##E(void *acc, int64_t o, const void *xv, const uint8_t *m, int64_t n) { \
    const T *x = xv;                                                           \
    ((double *)acc)[o] += m ? msum_##NAME##_##E(x, m, n) : psum_##NAME##_##E(x, n); \
  }                                                                            \
  static void NAME##_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    double *acc = accv;                                                        \
    const T *x = xv;                                                           \
    if (m)                                                                     \
      for (int64_t i = 0; i < n; i++) {                                        \
        double v = F(x[i]);                                                    \
        acc[i] += m[i] ? v : 0.0;                                              \
      }                                                                        \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) acc[i] += F(x[i]);                       \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {.acc_size = sizeof(double), .row = NAME##_row_##E, \
                                          .acc_row = NAME##_acc_##E};

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

static inline double lanes_sum(const double *d) {
  return (((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]))) +
         (((d[8] + d[9]) + (d[10] + d[11])) + ((d[12] + d[13]) + (d[14] + d[15])));
}
static inline int64_t piece_len(int64_t n, int64_t p) {
  int64_t off = p * MQ_RED_PIECE;
  return n - off < MQ_RED_PIECE ? n - off : MQ_RED_PIECE;
}
static inline int64_t piece_count(int64_t n) { return n > 0 ? (n + MQ_RED_PIECE - 1) / MQ_RED_PIECE : 1; }

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
#define DEF_FSUM(E, T, SEL)                                                    \
  static void fsum_piece_##E(void *part, int64_t *cnt, const void *xv, const uint8_t *m, \
                             int64_t n) {                                      \
    const T *x = xv;                                                           \
    double d[LANES] = {0};                                                     \
    int64_t n16 = n - n % LANES, i = 0;                                        \
    if (m) {                                                                   \
      int64_t c = 0;                                                           \
      while (i < n16) {                                                        \
        int64_t e = n16 - i > FLUSH ? i + FLUSH : n16;                         \
        uint64_t w = 0;                                                        \
        for (; i < e; i += LANES) {                                            \
          for (int j = 0; j < LANES; j++) d[j] += (double)SEL(x[i + j], m[i + j], 0); \
          w += load8(m + i) + load8(m + i + 8);                                \
        }                                                                      \
        c += byte_sum(w);                                                      \
      }                                                                        \
      for (int j = 0; i < n; i++, j++) {                                       \
        d[j] += (double)SEL(x[i], m[i], 0);                                    \
        c += m[i];                                                             \
      }                                                                        \
      if (cnt) *cnt += c;                                                      \
    } else {                                                                   \
      for (; i < n16; i += LANES)                                              \
        for (int j = 0; j < LANES; j++) d[j] += (double)x[i + j];              \
      for (int j = 0; i < n; i++, j++) d[j] += (double)x[i];                   \
    }                                                                          \
    *(double *)part = lanes_sum(d);                                            \
  }                                                                            \
  static double fsum_tree_##E(const T *x, const uint8_t *m, int64_t n, int64_t a, int64_t b, \
                              int64_t *cnt) {                                  \
    if (b - a == 1) {                                                          \
      double p;                                                                \
      int64_t off = a * MQ_RED_PIECE;                                          \
      fsum_piece_##E(&p, cnt, x + off, m ? m + off : NULL, piece_len(n, a));   \
      return p;                                                                \
    }                                                                          \
    int64_t h = a + (b - a) / 2;                                               \
    return fsum_tree_##E(x, m, n, a, h, cnt) + fsum_tree_##E(x, m, n, h, b, cnt); \
  }                                                                            \
  static double fsum_##E(const T *x, const uint8_t *m, int64_t n, int64_t *cnt) { \
    return fsum_tree_##E(x, m, n, 0, piece_count(n), cnt);                     \
  }                                                                            \
  static void fsum_rowc_##E(void *acc, int64_t *cnt, int64_t o, const void *x, const uint8_t *m, \
                            int64_t n) {                                       \
    ((double *)acc)[o] += fsum_##E(x, m, n, cnt && m ? cnt + o : NULL);        \
  }                                                                            \
  static void fsum_row_##E(void *acc, int64_t o, const void *x, const uint8_t *m, int64_t n) { \
    fsum_rowc_##E(acc, NULL, o, x, m, n);                                      \
  }                                                                            \
  static void fsum_accc_##E(void *accv, uint32_t *cnt, const void *xv, const uint8_t *m, int64_t n) { \
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
  static void fsum_acc_##E(void *acc, const void *x, const uint8_t *m, int64_t n) { \
    fsum_accc_##E(acc, NULL, x, m, n);                                         \
  }                                                                            \
  static const mq_red_kernel dsum_##E = {sizeof(double), fsum_row_##E,  fsum_acc_##E,     \
                                         fsum_rowc_##E,  fsum_accc_##E, fsum_piece_##E, \
                                         fsum_merge,     fsum_combine};

DEF_FSUM(F32, float, sel_f32)
DEF_FSUM(F64, double, sel_f64)

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
#define DEF_FEXT(NAME, E, T, U, SEL, PICK, FAST, FILL)                         \
  static void NAME##_piece_##E(void *part, int64_t *cnt, const void *xv, const uint8_t *m, \
                               int64_t n) {                                    \
    const T *x = xv;                                                           \
    T r[LANES], a;                                                             \
    int32_t nn[LANES] = {0}, nan = 0;                                          \
    U fill = FILL;                                                             \
    memcpy(&a, &fill, sizeof a);                                               \
    for (int j = 0; j < LANES; j++) r[j] = a;                                  \
    int64_t n16 = n - n % LANES, i = 0;                                        \
    if (m) {                                                                   \
      int64_t c = 0;                                                           \
      while (i < n16) {                                                        \
        int64_t e = n16 - i > FLUSH ? i + FLUSH : n16;                         \
        uint64_t w = 0;                                                        \
        for (; i < e; i += LANES) {                                            \
          for (int j = 0; j < LANES; j++) {                                    \
            T v = SEL(x[i + j], m[i + j], FILL);                               \
            r[j] = FAST(r[j], v);                                              \
            nn[j] |= v != v;                                                   \
          }                                                                    \
          w += load8(m + i) + load8(m + i + 8);                                \
        }                                                                      \
        c += byte_sum(w);                                                      \
      }                                                                        \
      for (int j = 0; j < LANES; j++) a = PICK(a, r[j]);                       \
      for (; i < n; i++) {                                                     \
        T v = SEL(x[i], m[i], FILL);                                           \
        a = PICK(a, v);                                                        \
        c += m[i];                                                             \
      }                                                                        \
      if (cnt) *cnt += c;                                                      \
    } else {                                                                   \
      for (; i < n16; i += LANES)                                              \
        for (int j = 0; j < LANES; j++) {                                      \
          T v = x[i + j];                                                      \
          r[j] = FAST(r[j], v);                                                \
          nn[j] |= v != v;                                                     \
        }                                                                      \
      for (int j = 0; j < LANES; j++) a = PICK(a, r[j]);                       \
      for (; i < n; i++) a = PICK(a, x[i]);                                    \
    }                                                                          \
    for (int j = 0; j < LANES; j++) nan |= nn[j];                              \
    *(T *)part = nan ? (T)NAN : a;                                             \
  }                                                                            \
  static void NAME##_merge_##E(void *acc, int64_t o, const void *parts, int64_t np) { \
    const T *p = parts;                                                        \
    T a = ((T *)acc)[o];                                                       \
    for (int64_t i = 0; i < np; i++) a = PICK(a, p[i]);                        \
    ((T *)acc)[o] = a;                                                         \
  }                                                                            \
  static T NAME##_fold_##E(T a, int64_t *cnt, const T *x, const uint8_t *m, int64_t n) { \
    for (int64_t p = 0, np = piece_count(n); p < np; p++) {                    \
      T v;                                                                     \
      int64_t off = p * MQ_RED_PIECE;                                          \
      NAME##_piece_##E(&v, cnt, x + off, m ? m + off : NULL, piece_len(n, p)); \
      a = PICK(a, v);                                                          \
    }                                                                          \
    return a;                                                                  \
  }                                                                            \
  static void NAME##_rowc_##E(void *acc, int64_t *cnt, int64_t o, const void *x, const uint8_t *m, \
                              int64_t n) {                                     \
    ((T *)acc)[o] = NAME##_fold_##E(((T *)acc)[o], cnt && m ? cnt + o : NULL, x, m, n); \
  }                                                                            \
  static void NAME##_row_##E(void *acc, int64_t o, const void *x, const uint8_t *m, int64_t n) { \
    NAME##_rowc_##E(acc, NULL, o, x, m, n);                                    \
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
  static void NAME##_acc_##E(void *acc, const void *x, const uint8_t *m, int64_t n) { \
    NAME##_accc_##E(acc, NULL, x, m, n);                                       \
  }                                                                            \
  static void NAME##_combine_##E(void *accv, const void *partv, int64_t n) {   \
    T *acc = accv;                                                             \
    const T *part = partv;                                                     \
    for (int64_t i = 0; i < n; i++) acc[i] = PICK(acc[i], part[i]);            \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {sizeof(T),          NAME##_row_##E,   NAME##_acc_##E, \
                                           NAME##_rowc_##E,    NAME##_accc_##E,  \
                                           NAME##_piece_##E,   NAME##_merge_##E, \
                                           NAME##_combine_##E};

DEF_FEXT(amax, F32, float, uint32_t, sel_f32, PICK_MAX, FAST_MAX, NEG_INF_F32)
DEF_FEXT(amax, F64, double, uint64_t, sel_f64, PICK_MAX, FAST_MAX, NEG_INF_F64)
DEF_FEXT(amin, F32, float, uint32_t, sel_f32, PICK_MIN, FAST_MIN, POS_INF_F32)
DEF_FEXT(amin, F64, double, uint64_t, sel_f64, PICK_MIN, FAST_MIN, POS_INF_F64)

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
    if (m)                                                                     \
      for (int64_t i = 0; i < n; i++) acc[i] += m[i] ? (uint64_t)x[i] : 0;     \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) acc[i] += (uint64_t)x[i];                \
  }                                                                            \
  static const mq_red_kernel isum_##E = {.acc_size = sizeof(int64_t), .row = isum_row_##E, \
                                        .acc_row = isum_acc_##E, .combine = isum_combine};

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
    if (m)                                                                     \
      for (int64_t i = 0; i < n; i++) {                                        \
        A v = (A)x[i];                                                         \
        acc[i] = MULT(acc[i], m[i] ? v : (A)1);                                \
      }                                                                        \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) acc[i] = MULT(acc[i], (A)x[i]);          \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {.acc_size = sizeof(A), .row = NAME##_row_##E, \
                                          .acc_row = NAME##_acc_##E};

#define FMULT(a, b) ((a) * (b))
#define IMULT(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
DEF_PROD(iprod, BOOL, uint8_t, int64_t, IMULT)
DEF_PROD(iprod, I64, int64_t, int64_t, IMULT)
DEF_PROD(dprod, F32, float, double, FMULT)
DEF_PROD(dprod, F64, double, double, FMULT)

/* --- extrema --------------------------------------------------------------- */

/* Extremum of a contiguous row, seeded with [a]. Eight independent
 * accumulators let the compiler vectorize the compare-and-select; NaN wins
 * in any order, so the result does not depend on the grouping. */
#define DEF_EXT(NAME, E, T, PICK, IDENT)                                       \
  static T NAME##_fold_##E(T a, const T *x, const uint8_t *m, int64_t n) {     \
    if (m) { /* select blocks into a buffer, then fold them plainly */       \
      T tmp[256];                                                              \
      for (int64_t i0 = 0; i0 < n; i0 += 256) {                                \
        int64_t len = n - i0 < 256 ? n - i0 : 256;                             \
        for (int64_t i = 0; i < len; i++) {                                    \
          T v = x[i0 + i];                                                     \
          tmp[i] = m[i0 + i] ? v : (T)(IDENT);                                 \
        }                                                                      \
        a = NAME##_fold_##E(a, tmp, NULL, len);                                \
      }                                                                        \
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
      T tmp[256];                                                              \
      for (int64_t i0 = 0; i0 < n; i0 += 256) {                                \
        int64_t len = n - i0 < 256 ? n - i0 : 256;                             \
        for (int64_t i = 0; i < len; i++) {                                    \
          T v = x[i0 + i];                                                     \
          tmp[i] = m[i0 + i] ? v : (T)(IDENT);                                 \
        }                                                                      \
        T *ac = acc + i0;                                                      \
        for (int64_t i = 0; i < len; i++) ac[i] = PICK(ac[i], tmp[i]);         \
      }                                                                        \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i++) acc[i] = PICK(acc[i], x[i]);             \
    }                                                                          \
  }                                                                            \
  static const mq_red_kernel NAME##_##E = {.acc_size = sizeof(T), .row = NAME##_row_##E, \
                                          .acc_row = NAME##_acc_##E};

DEF_EXT(amax, BOOL, uint8_t, PICK_MAXI, 0)
DEF_EXT(amax, I64, int64_t, PICK_MAXI, INT64_MIN)
DEF_EXT(amin, BOOL, uint8_t, PICK_MINI, 1)
DEF_EXT(amin, I64, int64_t, PICK_MINI, INT64_MAX)

double mq_rowsum_f32(const float *x, const uint8_t *m, int64_t n) { return fsum_F32(x, m, n, NULL); }
double mq_rowsum_f64(const double *x, const uint8_t *m, int64_t n) { return fsum_F64(x, m, n, NULL); }
float mq_rowmax_f32(const float *x, const uint8_t *m, int64_t n) {
  return amax_fold_F32(-INFINITY, NULL, x, m, n);
}
double mq_rowmax_f64(const double *x, const uint8_t *m, int64_t n) {
  return amax_fold_F64(-INFINITY, NULL, x, m, n);
}

/* --- logsumexp ------------------------------------------------------------------ */

/* A running (max M, sum S of exp(x - M)) per slot, so one pass suffices in
 * any layout. Merging a part (m, s): the larger max wins and rescales the
 * other sum. Equal maxes add (which also keeps inf + inf from becoming
 * NaN); a NaN part makes the slot NaN. */
typedef struct lse_acc {
  double M, S;
} lse_acc;

static inline void lse_merge(lse_acc *a, double m, double s) {
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
      lse_merge((lse_acc *)acc + o, mx, 1);                                    \
      return;                                                                  \
    }                                                                          \
    if (m)                                                                     \
      for (int64_t i = 0; i < n; i++) {                                        \
        double e = exp((double)x[i] - mx);                                     \
        s += m[i] ? e : 0.0;                                                   \
      }                                                                        \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) s += exp((double)x[i] - mx);             \
    lse_merge((lse_acc *)acc + o, mx, s);                                      \
  }                                                                            \
  static void lse_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    lse_acc *acc = accv;                                                       \
    const T *x = xv;                                                           \
    for (int64_t i = 0; i < n; i++)                                            \
      if (!m || m[i]) lse_merge(&acc[i], (double)x[i], 1);                     \
  }                                                                            \
  static const mq_red_kernel lse_##E = {.acc_size = sizeof(lse_acc), .row = lse_row_##E, \
                                       .acc_row = lse_acc_##E};

DEF_LSE(F32, float, mq_rowmax_f32)
DEF_LSE(F64, double, mq_rowmax_f64)

/* --- the block walk ------------------------------------------------------ */

void mq_red_plan_init(mq_state *S, mq_red_plan *P, const char *name, mq_tensor *t, mq_dtype dt,
                      int ndims, const int *dims, bool keepdim) {
  bool red[MQ_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) red[d] = ndims == 0;
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < 0 || dims[i] >= (t->ndim ? t->ndim : 1))
      mq_error(S, "%s: dimension %d out of range for a %d-d tensor", name, dims[i], t->ndim);
    if (t->ndim == 0) continue;
    if (red[dims[i]]) mq_error(S, "%s: dimension %d appears twice", name, dims[i]);
    red[dims[i]] = true;
  }
  P->t = t;
  P->ond = 0;
  P->R = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (red[d]) {
      P->R *= t->shape[d];
      if (keepdim) P->oshape[P->ond++] = 1;
    } else {
      P->oshape[P->ond++] = t->shape[d];
    }
  }
  P->on = 1;
  for (int d = 0; d < P->ond; d++) P->on *= P->oshape[d];
  P->x = mq_tensor_data(mq_contiguous(S, mq_astype(S, mq_get_data(S, t), dt)));
  P->es = mq_dtype_size(dt);
  P->m = t->mask ? mq_tensor_data(mq_contiguous(S, t->mask)) : NULL;
  P->nb = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 1) continue;
    if (P->nb && P->bred[P->nb - 1] == red[d]) {
      P->bsize[P->nb - 1] *= t->shape[d];
    } else {
      P->bsize[P->nb] = t->shape[d];
      P->bred[P->nb++] = red[d];
    }
  }
  if (P->nb == 0) { /* one element: a kept block of 1 */
    P->bsize[0] = 1;
    P->bred[0] = false;
    P->nb = 1;
  }
}

/* A walk over the rows of the merged blocks: row r of [s] entries folds
 * into slot o(r) (last block reduced) or into slots o(r) .. o(r) + s - 1. */
typedef struct walk_ctx {
  const mq_red_plan *P;
  const mq_red_kernel *k;
  void *acc;
  int64_t *cnt; /* count valid entries here (fused kernels only), or NULL */
  const char *x;
  size_t es;
  const uint8_t *m;
  int nb;
  bool last_red;
  int64_t s, rows, ostr[MQ_MAX_DIMS];
  int64_t cgroup; /* columns a thread claims at a time (a multiple of 64) */
  /* rows of slots in groups of rb rows: group g > 0 folds into its own
   * slots at gacc + (g - 1) * slots (and counts at gcnt likewise) */
  int64_t rb, slots, ngroups;
  char *gacc, *ident;
  int64_t *gcnt;
  /* one long row split into pieces: its start, partials and counts */
  int64_t np;
  const char *row_x;
  const uint8_t *row_m;
  char *parts;
  int64_t *pcnt;
} walk_ctx;

/* Folds rows [r0, r1), and of each the entries [c0, c1) when the last
 * block is kept (the whole row when it is reduced; c1 - c0 <= TILE
 * then); polls S for interrupts unless S is NULL (a worker thread). */
#define TILE 16384
static void walk_rows(mq_state *S, const walk_ctx *W, int64_t r0, int64_t r1, int64_t c0,
                      int64_t c1) {
  const mq_red_plan *P = W->P;
  const mq_red_kernel *k = W->k;
  int nb = W->nb;
  int64_t s = W->s, idx[MQ_MAX_DIMS], o = 0, rest = r0, polled = 0;
  /* rows of slots count in 32 bits per tile, added to cnt whenever the
   * rows move to other slots (and long before 32 bits could overflow) */
  uint32_t tcnt[TILE];
  int64_t pending = 0;
  bool tiled = W->cnt && !W->last_red;
  if (tiled) memset(tcnt, 0, (size_t)(c1 - c0) * sizeof *tcnt);
  for (int b = nb - 2; b >= 0; b--) { /* the block indices of row r0 */
    idx[b] = rest % P->bsize[b];
    rest /= P->bsize[b];
    o += idx[b] * W->ostr[b];
  }
  for (int64_t r = r0; r < r1; r++) {
    const char *xr = W->x + (size_t)(r * s + c0) * W->es;
    const uint8_t *mr = W->m ? W->m + r * s + c0 : NULL;
    if (W->last_red) {
      if (W->cnt) k->row_cnt(W->acc, W->cnt, o, xr, mr, s);
      else k->row(W->acc, o, xr, mr, s);
    } else {
      void *a = (char *)W->acc + (size_t)(o + c0) * k->acc_size;
      if (tiled) k->acc_row_cnt(a, tcnt, xr, mr, c1 - c0);
      else k->acc_row(a, xr, mr, c1 - c0);
    }
    int64_t o0 = o;
    for (int b = nb - 2; b >= 0; b--) {
      if (++idx[b] < P->bsize[b]) {
        o += W->ostr[b];
        break;
      }
      o -= W->ostr[b] * (P->bsize[b] - 1);
      idx[b] = 0;
    }
    if (tiled && (o != o0 || r + 1 == r1 || ++pending == INT32_MAX)) {
      for (int64_t i = 0; i < c1 - c0; i++) W->cnt[o0 + c0 + i] += tcnt[i];
      memset(tcnt, 0, (size_t)(c1 - c0) * sizeof *tcnt);
      pending = 0;
    }
    if (S && (polled += c1 - c0) >= MQ_POLL_ELEMS) {
      polled = 0;
      mq_check_interrupt(S);
    }
  }
}

/* Thread chunks: rows [lo, hi) (each its own output slot), column
 * groups [lo, hi) of every row, or pieces [lo, hi) of one long row. */
static void range_rows(void *ctx, int64_t lo, int64_t hi, int t) {
  walk_rows(NULL, ctx, lo, hi, 0, ((const walk_ctx *)ctx)->s);
}
/* Columns [c0, c1) of every row (rows of slots: the last block is kept),
 * in tiles of TILE columns, for the 32-bit counters on the stack. Tiles
 * are wide: a narrow one (slots kept in L1) reads each row in pieces on
 * pages of their own, which costs far more in TLB and prefetch misses
 * than it saves (measured: 2x slower at 1024 columns). */
static void walk_cols(mq_state *S, const walk_ctx *W, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  for (int64_t t = c0; t < c1; t += TILE) walk_rows(S, W, r0, r1, t, c1 - t > TILE ? t + TILE : c1);
}
static void range_cols(void *ctx, int64_t lo, int64_t hi, int t) {
  const walk_ctx *W = ctx;
  int64_t c1 = hi * W->cgroup < W->s ? hi * W->cgroup : W->s;
  walk_cols(NULL, W, 0, W->rows, lo * W->cgroup, c1);
}
static void range_groups(void *ctx, int64_t lo, int64_t hi, int t) {
  const walk_ctx *W = ctx;
  for (int64_t g = lo; g < hi; g++) {
    walk_ctx G = *W;
    if (g > 0) { /* its own slots, from the identity */
      size_t ab = (size_t)W->slots * W->k->acc_size;
      G.acc = W->gacc + (size_t)(g - 1) * ab;
      memcpy(G.acc, W->ident, ab);
      G.cnt = W->gcnt ? W->gcnt + (g - 1) * W->slots : NULL;
      if (G.cnt) memset(G.cnt, 0, (size_t)W->slots * sizeof *G.cnt);
    }
    int64_t r0 = g * W->rb, r1 = W->rows - r0 < W->rb ? W->rows : r0 + W->rb;
    walk_cols(NULL, &G, r0, r1, 0, W->s);
  }
}
/* Slots [lo, hi): the groups' slots and counts folded in group order. */
static void range_combine(void *ctx, int64_t lo, int64_t hi, int t) {
  const walk_ctx *W = ctx;
  size_t as = W->k->acc_size;
  for (int64_t g = 1; g < W->ngroups; g++) {
    W->k->combine((char *)W->acc + (size_t)lo * as, W->gacc + (size_t)((g - 1) * W->slots + lo) * as,
                  hi - lo);
    if (W->cnt)
      for (int64_t i = lo; i < hi; i++) W->cnt[i] += W->gcnt[(g - 1) * W->slots + i];
  }
}
static void range_pieces(void *ctx, int64_t lo, int64_t hi, int t) {
  const walk_ctx *W = ctx;
  const mq_red_kernel *k = W->k;
  for (int64_t p = lo; p < hi; p++) {
    int64_t off = p * MQ_RED_PIECE, len = W->s - off < MQ_RED_PIECE ? W->s - off : MQ_RED_PIECE;
    W->pcnt[p] = 0;
    k->piece(W->parts + (size_t)p * k->acc_size, &W->pcnt[p], W->row_x + (size_t)off * W->es,
             W->row_m ? W->row_m + off : NULL, len);
  }
}

/* Rows of slots, large enough to split, fold in groups of whole rows:
 * every thread then reads long contiguous runs, as the other reductions
 * do, and keeps its own slots (in cache, for a few thousand). The groups
 * are fixed by the sizes alone (at most ROW_GROUPS of at least
 * MIN_GROUP_ROWS rows), each starts from the identity and they combine
 * in order afterwards, so one thread gives the same result as eight.
 * Only for up to GROUP_SLOTS slots: each group has its own. */
#define ROW_GROUPS 8
#define MIN_GROUP_ROWS 16
#define GROUP_SLOTS ((int64_t)1 << 16)
static void fold_groups(mq_state *S, walk_ctx *W, int nt) {
  const mq_red_kernel *k = W->k;
  int64_t ng = W->rows / MIN_GROUP_ROWS < ROW_GROUPS ? W->rows / MIN_GROUP_ROWS : ROW_GROUPS;
  W->rb = (W->rows + ng - 1) / ng;
  ng = (W->rows + W->rb - 1) / W->rb;
  W->ngroups = ng;
  W->slots = W->P->on;
  size_t ab = (size_t)W->slots * k->acc_size;
  /* group 0 folds into W->acc itself; the others copy the identity first
   * (each on its own thread), and all are combined slot range by slot
   * range, in group order */
  W->ident = mq_scratch(S, ab);
  memcpy(W->ident, W->acc, ab);
  W->gacc = mq_scratch(S, (size_t)(ng - 1) * ab);
  W->gcnt = W->cnt ? mq_scratch(S, (size_t)((ng - 1) * W->slots) * sizeof *W->cnt) : NULL;
  mq_parallel_for(S, nt, ng, 1, range_groups, W);
  mq_parallel_for(S, nt, W->slots, MQ_PAR_GRAIN / ng, range_combine, W);
}

/* Folds contiguous [x] (elements of es bytes, mask m or NULL) into acc,
 * counting valid entries into [cnt] if it is not NULL (then the kernel
 * must have row_cnt and acc_row_cnt). Large inputs run on threads; the
 * result is the same either way. */
static void walk(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc,
                 int64_t *cnt, const char *x, size_t es, const uint8_t *m) {
  if (P->t->numel == 0) return;
  walk_ctx W = {.P = P, .k = k, .acc = acc, .cnt = cnt, .x = x, .es = es, .m = m, .nb = P->nb};
  int nb = P->nb;
  W.s = P->bsize[nb - 1];
  W.last_red = P->bred[nb - 1];
  W.rows = 1;
  int64_t os = W.last_red ? 1 : W.s;
  for (int b = nb - 2; b >= 0; b--) {
    W.ostr[b] = P->bred[b] ? 0 : os;
    if (!P->bred[b]) os *= P->bsize[b];
    W.rows *= P->bsize[b];
  }
  int nt = mq_threads_for(S, W.rows * W.s);
  if (nt > 1 && W.last_red && k->piece && W.rows < 2 * nt && W.s >= 2 * MQ_RED_PIECE) {
    /* a few long rows: each split into pieces, computed in parallel and
     * merged in order, exactly as row_cnt would */
    W.np = (W.s + MQ_RED_PIECE - 1) / MQ_RED_PIECE;
    W.parts = mq_scratch(S, (size_t)W.np * k->acc_size);
    W.pcnt = mq_scratch(S, (size_t)W.np * sizeof *W.pcnt);
    for (int64_t r = 0; r < W.rows; r++) {
      int64_t rest = r, o = 0;
      for (int b = nb - 2; b >= 0; b--) {
        o += (rest % P->bsize[b]) * W.ostr[b];
        rest /= P->bsize[b];
      }
      W.row_x = x + (size_t)(r * W.s) * es;
      W.row_m = m ? m + r * W.s : NULL;
      mq_parallel_for(S, mq_threads_for(S, W.s), W.np, MQ_PAR_GRAIN / MQ_RED_PIECE, range_pieces, &W);
      k->merge(acc, o, W.parts, W.np);
      if (cnt && m) {
        int64_t c = 0;
        for (int64_t p = 0; p < W.np; p++) c += W.pcnt[p];
        cnt[o] += c;
      }
    }
    return;
  }
  if (nt > 1 && W.last_red && nb <= 2 && W.rows >= nt) { /* row r folds into slot r */
    mq_parallel_for(S, nt, W.rows, W.s >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / W.s, range_rows, &W);
    return;
  }
  if (!W.last_red && k->combine && W.rows * W.s >= MQ_PAR_MIN_ELEMS && W.rows >= 2 * MIN_GROUP_ROWS &&
      (int64_t)P->on <= GROUP_SLOTS) {
    fold_groups(S, &W, nt);
    return;
  }
  if (nt > 1 && !W.last_red && W.s >= 64 * nt) { /* disjoint slots per column group */
    /* two groups a thread, so one held up by another process can be
     * made up for; not more: a thread then reads shorter runs of each row,
     * which the prefetchers follow badly (measured on 1000x10000: groups
     * of 640 columns made two threads no faster than one) */
    int64_t g = (W.s + 2 * nt - 1) / (2 * nt);
    W.cgroup = (g + 63) / 64 * 64;
    mq_parallel_for(S, nt, (W.s + W.cgroup - 1) / W.cgroup, 1, range_cols, &W);
    return;
  }
  if (W.last_red) walk_rows(S, &W, 0, W.rows, 0, W.s);
  else walk_cols(S, &W, 0, W.rows, 0, W.s);
}

void mq_red_fold(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc) {
  walk(S, P, k, acc, NULL, P->x, P->es, P->m);
}

int64_t *mq_red_fold_count(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc) {
  if (!P->m) {
    walk(S, P, k, acc, NULL, P->x, P->es, NULL);
    return NULL;
  }
  if (!k->row_cnt || !k->acc_row_cnt) {
    walk(S, P, k, acc, NULL, P->x, P->es, P->m);
    return mq_red_counts(S, P);
  }
  int64_t *count = mq_red_acc(S, P, sizeof *count);
  memset(count, 0, (size_t)(P->on ? P->on : 1) * sizeof *count);
  walk(S, P, k, acc, count, P->x, P->es, P->m);
  return count;
}

void *mq_red_acc(mq_state *S, const mq_red_plan *P, size_t size) {
  return mq_scratch(S, (size_t)(P->on ? P->on : 1) * size);
}

int64_t *mq_red_counts(mq_state *S, const mq_red_plan *P) {
  if (!P->m) return NULL;
  int64_t *count = mq_red_acc(S, P, sizeof *count);
  memset(count, 0, (size_t)P->on * sizeof *count);
  walk(S, P, &isum_BOOL, count, NULL, (const char *)P->m, 1, NULL);
  return count;
}

void mq_red_set_mask(mq_state *S, const mq_red_plan *P, mq_tensor *out, const int64_t *count) {
  if (!count) return;
  mq_tensor *mask = mq_tensor_new(S, MQ_DT_BOOL, P->ond, P->oshape);
  uint8_t *mv = mq_tensor_data(mask);
  for (int64_t i = 0; i < P->on; i++) mv[i] = count[i] > 0;
  mq_tensor_set_mask(S, out, mask);
}

/* --- the ops ----------------------------------------------------------------- */

static const mq_red_kernel *const kernels[MQ_RED__COUNT][MQ_DT__COUNT] = {
    [MQ_RED_SUM] = {&isum_BOOL, &isum_I64, &dsum_F32, &dsum_F64},
    [MQ_RED_MEAN] = {&dsum_BOOL, &dsum_I64, &dsum_F32, &dsum_F64},
    [MQ_RED_AMAX] = {&amax_BOOL, &amax_I64, &amax_F32, &amax_F64},
    [MQ_RED_AMIN] = {&amin_BOOL, &amin_I64, &amin_F32, &amin_F64},
    [MQ_RED_PROD] = {&iprod_BOOL, &iprod_I64, &dprod_F32, &dprod_F64},
    [MQ_RED_ALL] = {&amin_BOOL},
    [MQ_RED_ANY] = {&amax_BOOL},
    [MQ_RED_LOGSUMEXP] = {NULL, NULL, &lse_F32, &lse_F64},
};

static const char *const red_names[] = {
#define X(E, s, ...) s,
    MQ_REDUCE_OPS(X)
#undef X
};

/* Fills the accumulator with the op's identity. */
static void acc_init(mq_redop op, mq_dtype dt, void *acc, int64_t n) {
  switch (op) {
  case MQ_RED_SUM: case MQ_RED_MEAN:
    memset(acc, 0, (size_t)n * kernels[op][dt]->acc_size); /* 0.0 and 0 are all-zero bits */
    return;
  case MQ_RED_PROD:
    for (int64_t i = 0; i < n; i++) {
      if (mq_dtype_is_float(dt)) ((double *)acc)[i] = 1;
      else ((int64_t *)acc)[i] = 1;
    }
    return;
  case MQ_RED_LOGSUMEXP:
    for (int64_t i = 0; i < n; i++) ((lse_acc *)acc)[i] = (lse_acc){-INFINITY, 0};
    return;
  default: break;
  }
  bool mx = op == MQ_RED_AMAX || op == MQ_RED_ANY;
  switch (dt) {
  case MQ_DT_BOOL: memset(acc, mx ? 0 : 1, (size_t)n); break;
  case MQ_DT_I64: for (int64_t i = 0; i < n; i++) ((int64_t *)acc)[i] = mx ? INT64_MIN : INT64_MAX; break;
  case MQ_DT_F32: for (int64_t i = 0; i < n; i++) ((float *)acc)[i] = mx ? -INFINITY : INFINITY; break;
  default: for (int64_t i = 0; i < n; i++) ((double *)acc)[i] = mx ? -INFINITY : INFINITY; break;
  }
}

/* The dtype an op reads its input as, and the one it answers in. */
static mq_dtype read_dtype(mq_redop op, mq_dtype dt) {
  if (op == MQ_RED_ALL || op == MQ_RED_ANY) return MQ_DT_BOOL;
  if (op == MQ_RED_LOGSUMEXP && !mq_dtype_is_float(dt)) return MQ_DT_F32;
  return dt;
}
static mq_dtype out_dtype(mq_redop op, mq_dtype dt) {
  switch (op) {
  case MQ_RED_SUM: case MQ_RED_PROD: return mq_dtype_is_float(dt) ? dt : MQ_DT_I64;
  case MQ_RED_MEAN: case MQ_RED_LOGSUMEXP: return mq_dtype_is_float(dt) ? dt : MQ_DT_F32;
  case MQ_RED_ALL: case MQ_RED_ANY: return MQ_DT_BOOL;
  case MQ_RED_COUNT: return MQ_DT_I64;
  default: return dt;
  }
}

/* Turns the folded accumulator [acc] into the result [out] of [op] (means
 * divide by [count], or by P->R when it is NULL) and sets out's mask from
 * [count] (NULL: all valid). */
static void finish(mq_state *S, mq_redop op, const mq_red_plan *P, mq_tensor *out, const void *acc,
                   const int64_t *count) {
  void *o = mq_tensor_data(out);
  mq_dtype out_dt = (mq_dtype)out->dtype;
  int64_t on = P->on;
  if (op == MQ_RED_MEAN) {
    const double *a = acc;
    if (out_dt == MQ_DT_F64)
      for (int64_t i = 0; i < on; i++) ((double *)o)[i] = a[i] / (double)(count ? count[i] : P->R);
    else
      for (int64_t i = 0; i < on; i++) ((float *)o)[i] = (float)(a[i] / (double)(count ? count[i] : P->R));
  } else if (op == MQ_RED_LOGSUMEXP) {
    const lse_acc *a = acc;
    for (int64_t i = 0; i < on; i++) {
      double v = a[i].S != a[i].S ? NAN : a[i].M == -INFINITY ? -INFINITY : log(a[i].S) + a[i].M;
      if (out_dt == MQ_DT_F64) ((double *)o)[i] = v;
      else ((float *)o)[i] = (float)v;
    }
  } else if (acc != o) {
    if (out_dt == MQ_DT_F32) /* float sums and products accumulated in double */
      for (int64_t i = 0; i < on; i++) ((float *)o)[i] = (float)((const double *)acc)[i];
    else
      memcpy(o, acc, (size_t)on * mq_dtype_size(out_dt));
  }
  mq_red_set_mask(S, P, out, count);
}

/* The accumulator of [out]: the output itself when it has the
 * accumulator's type, else scratch; holding the identity. */
static void *acc_for(mq_state *S, mq_redop op, mq_dtype dt, const mq_red_plan *P, mq_tensor *out) {
  const mq_red_kernel *k = kernels[op][dt];
  void *acc = out->dtype == dt && k->acc_size == mq_dtype_size(dt) && op != MQ_RED_MEAN
                  ? mq_tensor_data(out) : mq_red_acc(S, P, k->acc_size);
  acc_init(op, dt, acc, P->on);
  return acc;
}

mq_tensor *mq_reduce(mq_state *S, mq_redop op, mq_tensor *t, int ndims, const int *dims,
                     bool keepdim) {
  if ((unsigned)op >= MQ_RED__COUNT) mq_error(S, "bad reduction");
  mq_dtype dt = read_dtype(op, (mq_dtype)t->dtype), out_dt = out_dtype(op, (mq_dtype)t->dtype);
  mq_red_plan P;
  mq_red_plan_init(S, &P, red_names[op], t, dt, ndims, dims, keepdim);
  if (P.R == 0 && !t->mask && (op == MQ_RED_AMAX || op == MQ_RED_AMIN))
    mq_error(S, "%s of an empty tensor has no value (reduce a non-empty tensor, or mask it)",
             red_names[op]);
  mq_tensor *out = mq_tensor_new(S, out_dt, P.ond, P.oshape);
  if (op == MQ_RED_COUNT) { /* always defined, so never masked */
    int64_t *count = mq_red_counts(S, &P);
    for (int64_t i = 0; i < P.on; i++) ((int64_t *)mq_tensor_data(out))[i] = count ? count[i] : P.R;
    return out;
  }
  void *acc = acc_for(S, op, dt, &P, out);
  finish(S, op, &P, out, acc, mq_red_fold_count(S, &P, kernels[op][dt], acc));
  mq_ag_reduce(S, out, op, t, ndims, dims, keepdim);
  return out;
}

const mq_red_kernel *mq_red_piece_kernel(mq_redop op, mq_dtype dt) {
  if ((unsigned)op >= MQ_RED__COUNT || (unsigned)dt >= MQ_DT__COUNT || op == MQ_RED_COUNT) return NULL;
  const mq_red_kernel *k = kernels[op][dt];
  return k && k->piece && k->merge && read_dtype(op, dt) == dt ? k : NULL;
}

mq_tensor *mq_reduce_pieces(mq_state *S, mq_redop op, mq_dtype dt, const void *parts,
                            const int64_t *pcnt, int64_t rows, int64_t ppr, int64_t rlen, int ond,
                            const int64_t *oshape) {
  const mq_red_kernel *k = kernels[op][dt];
  mq_red_plan P = {.ond = ond, .on = rows, .R = rlen};
  memcpy(P.oshape, oshape, (size_t)ond * sizeof *oshape);
  mq_tensor *out = mq_tensor_new(S, out_dtype(op, dt), ond, P.oshape);
  void *acc = acc_for(S, op, dt, &P, out);
  int64_t *count = pcnt ? mq_red_acc(S, &P, sizeof *count) : NULL;
  for (int64_t r = 0; r < rows; r++) {
    k->merge(acc, r, (const char *)parts + (size_t)(r * ppr) * k->acc_size, ppr);
    if (count) {
      count[r] = 0;
      for (int64_t p = 0; p < ppr; p++) count[r] += pcnt[r * ppr + p];
    }
  }
  finish(S, op, &P, out, acc, count);
  return out;
}
