/* reduce.c - sum, mean, amax, amin over any set of dims, masked or plain.
 *
 * The input is made contiguous and its dims are merged into alternating
 * blocks of kept (K) and reduced (R) dims. If the last block is R, each
 * contiguous row reduces to one value folded into its output slot (a
 * pairwise sum for floats); if it is K, each row is added elementwise into an
 * accumulator row of the output (outer-dim reductions never gather). Sums
 * accumulate in double for floats, so float32 sums are as good as torch's.
 * Masked-out entries are replaced by the identity with a select (not a
 * multiply, which would let NaN under the mask through). */
#include <math.h>

#include "kernels.h"

/* One (op, input dtype) pair: the accumulator type and the two row kernels.
 * [m] is NULL for plain input; the test happens once per row. */
typedef struct red_kernel {
  size_t acc_size;
  void (*row)(void *acc, int64_t o, const void *x, const uint8_t *m, int64_t n);
  void (*acc_row)(void *acc, const void *x, const uint8_t *m, int64_t n);
} red_kernel;

/* --- sums ------------------------------------------------------------------ */

/* Pairwise summation (numpy's scheme), in double: leaves of <= 128
 * elements summed with 8 accumulators, leaves combined pairwise. The error
 * grows with log(n) and the result depends only on n. The accumulators are
 * separate variables, not an array, so they stay in registers. */
#define DEF_PAIRSUM(NAME, T, VAL)                                              \
  static double NAME(const T *x, const uint8_t *m, int64_t n) {                \
    if (n <= 128) {                                                            \
      double a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;   \
      int64_t i = 0;                                                           \
      for (; i + 8 <= n; i += 8) {                                             \
        a0 += VAL(i), a1 += VAL(i + 1), a2 += VAL(i + 2), a3 += VAL(i + 3);    \
        a4 += VAL(i + 4), a5 += VAL(i + 5), a6 += VAL(i + 6), a7 += VAL(i + 7); \
      }                                                                        \
      double s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));            \
      for (; i < n; i++) s += VAL(i);                                          \
      return s;                                                                \
    }                                                                          \
    int64_t h = n / 2;                                                         \
    h -= h % 8;                                                                \
    return NAME(x, m, h) + NAME(x + h, m ? m + h : m, n - h);                  \
  }

/* The select sees an already-loaded value, so the compiler can turn it
 * into a blend instead of a branch (a conditional load cannot be). */
static inline double sel0(uint8_t keep, double v) { return keep ? v : 0.0; }
#define PLAIN(i) ((double)x[i])
#define MASKED(i) sel0(m[i], (double)x[i])

/* Masked sums select into a small block first (a select loop vectorizes,
 * a select inside the accumulation does not), then sum the block plainly;
 * blocks of 128 keep the pairwise structure of psum. */
#define DEF_DSUM(E, T)                                                         \
  DEF_PAIRSUM(psum_##E, T, PLAIN)                                              \
  static double msum_##E(const T *x, const uint8_t *m, int64_t n) {            \
    if (n <= 128) {                                                            \
      T tmp[128];                                                              \
      for (int64_t i = 0; i < n; i++) {                                        \
        T v = x[i];                                                            \
        tmp[i] = m[i] ? v : (T)0;                                              \
      }                                                                        \
      return psum_##E(tmp, NULL, n);                                           \
    }                                                                          \
    int64_t h = n / 2;                                                         \
    h -= h % 8;                                                                \
    return msum_##E(x, m, h) + msum_##E(x + h, m + h, n - h);                  \
  }                                                                            \
  static void dsum_row_##E(void *acc, int64_t o, const void *xv, const uint8_t *m, int64_t n) { \
    const T *x = xv;                                                           \
    ((double *)acc)[o] += m ? msum_##E(x, m, n) : psum_##E(x, NULL, n);         \
  }                                                                            \
  static void dsum_acc_##E(void *accv, const void *xv, const uint8_t *m, int64_t n) { \
    double *acc = accv;                                                        \
    const T *x = xv;                                                           \
    if (m)                                                                     \
      for (int64_t i = 0; i < n; i++) acc[i] += MASKED(i);                     \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) acc[i] += PLAIN(i);                      \
  }                                                                            \
  static const red_kernel dsum_##E = {sizeof(double), dsum_row_##E, dsum_acc_##E};

DEF_DSUM(BOOL, uint8_t)
DEF_DSUM(I64, int64_t)
DEF_DSUM(F32, float)
DEF_DSUM(F64, double)

/* Exact integer sums (wrapping like torch's int64). */
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
  static const red_kernel isum_##E = {sizeof(int64_t), isum_row_##E, isum_acc_##E};

DEF_ISUM(BOOL, uint8_t)
DEF_ISUM(I64, int64_t)

/* --- extrema --------------------------------------------------------------- */

/* For floats NaN wins, as in torch. */
#define PICK_MAX(a, v) (((v) > (a) || (v) != (v)) ? (v) : (a))
#define PICK_MIN(a, v) (((v) < (a) || (v) != (v)) ? (v) : (a))
#define PICK_MAXI(a, v) ((v) > (a) ? (v) : (a))
#define PICK_MINI(a, v) ((v) < (a) ? (v) : (a))

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
  static const red_kernel NAME##_##E = {sizeof(T), NAME##_row_##E, NAME##_acc_##E};

DEF_EXT(amax, BOOL, uint8_t, PICK_MAXI, 0)
DEF_EXT(amax, I64, int64_t, PICK_MAXI, INT64_MIN)
DEF_EXT(amax, F32, float, PICK_MAX, -INFINITY)
DEF_EXT(amax, F64, double, PICK_MAX, -INFINITY)
DEF_EXT(amin, BOOL, uint8_t, PICK_MINI, 1)
DEF_EXT(amin, I64, int64_t, PICK_MINI, INT64_MAX)
DEF_EXT(amin, F32, float, PICK_MIN, INFINITY)
DEF_EXT(amin, F64, double, PICK_MIN, INFINITY)

double mq_rowsum_f32(const float *x, const uint8_t *m, int64_t n) {
  return m ? msum_F32(x, m, n) : psum_F32(x, NULL, n);
}
double mq_rowsum_f64(const double *x, const uint8_t *m, int64_t n) {
  return m ? msum_F64(x, m, n) : psum_F64(x, NULL, n);
}
float mq_rowmax_f32(const float *x, const uint8_t *m, int64_t n) { return amax_fold_F32(-INFINITY, x, m, n); }
double mq_rowmax_f64(const double *x, const uint8_t *m, int64_t n) { return amax_fold_F64(-INFINITY, x, m, n); }

static const red_kernel *const kernels[MQ_RED__COUNT][MQ_DT__COUNT] = {
    [MQ_RED_SUM] = {&isum_BOOL, &isum_I64, &dsum_F32, &dsum_F64},
    [MQ_RED_MEAN] = {&dsum_BOOL, &dsum_I64, &dsum_F32, &dsum_F64},
    [MQ_RED_AMAX] = {&amax_BOOL, &amax_I64, &amax_F32, &amax_F64},
    [MQ_RED_AMIN] = {&amin_BOOL, &amin_I64, &amin_F32, &amin_F64},
};

static const char *const red_names[] = {
#define X(E, s) s,
    MQ_REDUCE_OPS(X)
#undef X
};

/* Fills the accumulator with the op's identity. */
static void acc_init(mq_redop op, mq_dtype dt, void *acc, int64_t n) {
  if (op == MQ_RED_SUM || op == MQ_RED_MEAN) {
    memset(acc, 0, (size_t)n * kernels[op][dt]->acc_size); /* 0.0 and 0 are all-zero bits */
    return;
  }
  bool mx = op == MQ_RED_AMAX;
  switch (dt) {
  case MQ_DT_BOOL: memset(acc, mx ? 0 : 1, (size_t)n); break;
  case MQ_DT_I64: for (int64_t i = 0; i < n; i++) ((int64_t *)acc)[i] = mx ? INT64_MIN : INT64_MAX; break;
  case MQ_DT_F32: for (int64_t i = 0; i < n; i++) ((float *)acc)[i] = mx ? -INFINITY : INFINITY; break;
  default: for (int64_t i = 0; i < n; i++) ((double *)acc)[i] = mx ? -INFINITY : INFINITY; break;
  }
}

/* --- the block walk ------------------------------------------------------ */

typedef struct blocks {
  int n;
  int64_t size[MQ_MAX_DIMS];
  bool red[MQ_MAX_DIMS];
} blocks;

static void make_blocks(const mq_tensor *t, const bool *red, blocks *B) {
  B->n = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 1) continue;
    if (B->n && B->red[B->n - 1] == red[d]) {
      B->size[B->n - 1] *= t->shape[d];
    } else {
      B->size[B->n] = t->shape[d];
      B->red[B->n++] = red[d];
    }
  }
  if (B->n == 0) { /* one element: a kept block of 1 */
    B->size[0] = 1;
    B->red[0] = false;
    B->n = 1;
  }
}

/* Folds contiguous [x] (elements of es bytes, mask m or NULL) into acc. */
static void walk(mq_state *S, const red_kernel *k, void *acc, const char *x, size_t es,
                 const uint8_t *m, const blocks *B) {
  int nb = B->n;
  int64_t s = B->size[nb - 1], ostr[MQ_MAX_DIMS], idx[MQ_MAX_DIMS], rows = 1;
  bool last_red = B->red[nb - 1];
  int64_t os = last_red ? 1 : s;
  for (int b = nb - 2; b >= 0; b--) {
    ostr[b] = B->red[b] ? 0 : os;
    if (!B->red[b]) os *= B->size[b];
    rows *= B->size[b];
    idx[b] = 0;
  }
  int64_t o = 0, polled = 0;
  for (int64_t r = 0; r < rows; r++) {
    const char *xr = x + (size_t)(r * s) * es;
    const uint8_t *mr = m ? m + r * s : NULL;
    if (last_red) k->row(acc, o, xr, mr, s);
    else k->acc_row((char *)acc + (size_t)o * k->acc_size, xr, mr, s);
    for (int b = nb - 2; b >= 0; b--) {
      if (++idx[b] < B->size[b]) {
        o += ostr[b];
        break;
      }
      o -= ostr[b] * (B->size[b] - 1);
      idx[b] = 0;
    }
    if ((polled += s) >= MQ_POLL_ELEMS) {
      polled = 0;
      mq_check_interrupt(S);
    }
  }
}

/* --- the op -------------------------------------------------------------- */

mq_tensor *mq_reduce(mq_state *S, mq_redop op, mq_tensor *t, int ndims, const int *dims,
                     bool keepdim) {
  if ((unsigned)op >= MQ_RED__COUNT) mq_error(S, "bad reduction");
  mq_dtype dt = (mq_dtype)t->dtype;
  bool red[MQ_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) red[d] = ndims == 0;
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < 0 || dims[i] >= (t->ndim ? t->ndim : 1))
      mq_error(S, "%s: dimension %d out of range for a %d-d tensor", red_names[op], dims[i], t->ndim);
    if (t->ndim == 0) continue;
    if (red[dims[i]]) mq_error(S, "%s: dimension %d appears twice", red_names[op], dims[i]);
    red[dims[i]] = true;
  }

  int64_t oshape[MQ_MAX_DIMS], R = 1;
  int ond = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (red[d]) {
      R *= t->shape[d];
      if (keepdim) oshape[ond++] = 1;
    } else {
      oshape[ond++] = t->shape[d];
    }
  }
  if (R == 0 && !t->mask && (op == MQ_RED_AMAX || op == MQ_RED_AMIN))
    mq_error(S, "%s of an empty tensor", red_names[op]);

  mq_dtype out_dt = dt;
  if (op == MQ_RED_SUM && !mq_dtype_is_float(dt)) out_dt = MQ_DT_I64;
  if (op == MQ_RED_MEAN && !mq_dtype_is_float(dt)) out_dt = MQ_DT_F32;
  mq_tensor *out = mq_tensor_new(S, out_dt, ond, oshape);
  int64_t on = out->numel;

  const red_kernel *k = kernels[op][dt];
  void *acc = out->dtype == dt && k->acc_size == mq_dtype_size(dt) && op != MQ_RED_MEAN
                  ? mq_tensor_data(out) /* accumulate in place when types agree */
                  : mq_scratch(S, (size_t)(on ? on : 1) * k->acc_size);
  acc_init(op, dt, acc, on);

  blocks B;
  make_blocks(t, red, &B);
  mq_tensor *x = mq_contiguous(S, mq_get_data(S, t));
  const uint8_t *m = NULL;
  if (t->mask) m = mq_tensor_data(mq_contiguous(S, t->mask));
  if (t->numel) walk(S, k, acc, mq_tensor_data(x), mq_dtype_size(dt), m, &B);

  /* Valid counts per output: the mask summed the same way. */
  int64_t *count = NULL;
  if (t->mask) {
    count = mq_scratch(S, (size_t)(on ? on : 1) * sizeof *count);
    memset(count, 0, (size_t)on * sizeof *count);
    if (t->numel) walk(S, &isum_BOOL, count, (const char *)m, 1, NULL, &B);
  }

  void *o = mq_tensor_data(out);
  if (op == MQ_RED_MEAN) {
    const double *a = acc;
    if (out_dt == MQ_DT_F64)
      for (int64_t i = 0; i < on; i++) ((double *)o)[i] = a[i] / (double)(count ? count[i] : R);
    else
      for (int64_t i = 0; i < on; i++) ((float *)o)[i] = (float)(a[i] / (double)(count ? count[i] : R));
  } else if (acc != o) {
    if (out_dt == MQ_DT_F32) /* float sums accumulated in double */
      for (int64_t i = 0; i < on; i++) ((float *)o)[i] = (float)((const double *)acc)[i];
    else
      memcpy(o, acc, (size_t)on * mq_dtype_size(out_dt));
  }

  if (t->mask) {
    mq_tensor *mask = mq_tensor_new(S, MQ_DT_BOOL, ond, oshape);
    uint8_t *mv = mq_tensor_data(mask);
    for (int64_t i = 0; i < on; i++) mv[i] = count[i] > 0;
    mq_tensor_set_mask(S, out, mask);
  }
  return out;
}
