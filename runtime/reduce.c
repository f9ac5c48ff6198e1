/* reduce.c - reductions over any set of dims, masked or plain: sum, mean,
 * prod, amax, amin, all, any, count, logsumexp, and the block walk they
 * (and stats.c) share (see reduce.h).
 *
 * Masked-out entries are replaced by the identity with a select (not a
 * multiply, which would let NaN under the mask through). Float sums and
 * products accumulate in double, sums pairwise, so float32 results are as
 * good as torch's. An output with no valid input is masked out; its hidden
 * data is the identity (NaN for mean), as in torch.masked. */
#include <math.h>

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
  static const mq_red_kernel NAME##_##E = {sizeof(double), NAME##_row_##E, NAME##_acc_##E};

DEF_DSUM(dsum, BOOL, uint8_t, ID)
DEF_DSUM(dsum, I64, int64_t, ID)
DEF_DSUM(dsum, F32, float, ID)
DEF_DSUM(dsum, F64, double, ID)
DEF_DSUM(sumsq, F32, float, SQ)
DEF_DSUM(sumsq, F64, double, SQ)
DEF_DSUM(sumabs, F32, float, ABS)
DEF_DSUM(sumabs, F64, double, ABS)

const mq_red_kernel *mq_red_sumsq(mq_dtype dt) { return dt == MQ_DT_F32 ? &sumsq_F32 : &sumsq_F64; }
const mq_red_kernel *mq_red_sumabs(mq_dtype dt) { return dt == MQ_DT_F32 ? &sumabs_F32 : &sumabs_F64; }

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
  static const mq_red_kernel isum_##E = {sizeof(int64_t), isum_row_##E, isum_acc_##E};

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
  static const mq_red_kernel NAME##_##E = {sizeof(A), NAME##_row_##E, NAME##_acc_##E};

#define FMULT(a, b) ((a) * (b))
#define IMULT(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
DEF_PROD(iprod, BOOL, uint8_t, int64_t, IMULT)
DEF_PROD(iprod, I64, int64_t, int64_t, IMULT)
DEF_PROD(dprod, F32, float, double, FMULT)
DEF_PROD(dprod, F64, double, double, FMULT)

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
  static const mq_red_kernel NAME##_##E = {sizeof(T), NAME##_row_##E, NAME##_acc_##E};

DEF_EXT(amax, BOOL, uint8_t, PICK_MAXI, 0)
DEF_EXT(amax, I64, int64_t, PICK_MAXI, INT64_MIN)
DEF_EXT(amax, F32, float, PICK_MAX, -INFINITY)
DEF_EXT(amax, F64, double, PICK_MAX, -INFINITY)
DEF_EXT(amin, BOOL, uint8_t, PICK_MINI, 1)
DEF_EXT(amin, I64, int64_t, PICK_MINI, INT64_MAX)
DEF_EXT(amin, F32, float, PICK_MIN, INFINITY)
DEF_EXT(amin, F64, double, PICK_MIN, INFINITY)

double mq_rowsum_f32(const float *x, const uint8_t *m, int64_t n) {
  return m ? msum_dsum_F32(x, m, n) : psum_dsum_F32(x, n);
}
double mq_rowsum_f64(const double *x, const uint8_t *m, int64_t n) {
  return m ? msum_dsum_F64(x, m, n) : psum_dsum_F64(x, n);
}
float mq_rowmax_f32(const float *x, const uint8_t *m, int64_t n) { return amax_fold_F32(-INFINITY, x, m, n); }
double mq_rowmax_f64(const double *x, const uint8_t *m, int64_t n) { return amax_fold_F64(-INFINITY, x, m, n); }

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
  static const mq_red_kernel lse_##E = {sizeof(lse_acc), lse_row_##E, lse_acc_##E};

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

/* Folds contiguous [x] (elements of es bytes, mask m or NULL) into acc. */
static void walk(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc,
                 const char *x, size_t es, const uint8_t *m) {
  if (P->t->numel == 0) return;
  int nb = P->nb;
  int64_t s = P->bsize[nb - 1], ostr[MQ_MAX_DIMS], idx[MQ_MAX_DIMS], rows = 1;
  bool last_red = P->bred[nb - 1];
  int64_t os = last_red ? 1 : s;
  for (int b = nb - 2; b >= 0; b--) {
    ostr[b] = P->bred[b] ? 0 : os;
    if (!P->bred[b]) os *= P->bsize[b];
    rows *= P->bsize[b];
    idx[b] = 0;
  }
  int64_t o = 0, polled = 0;
  for (int64_t r = 0; r < rows; r++) {
    const char *xr = x + (size_t)(r * s) * es;
    const uint8_t *mr = m ? m + r * s : NULL;
    if (last_red) k->row(acc, o, xr, mr, s);
    else k->acc_row((char *)acc + (size_t)o * k->acc_size, xr, mr, s);
    for (int b = nb - 2; b >= 0; b--) {
      if (++idx[b] < P->bsize[b]) {
        o += ostr[b];
        break;
      }
      o -= ostr[b] * (P->bsize[b] - 1);
      idx[b] = 0;
    }
    if ((polled += s) >= MQ_POLL_ELEMS) {
      polled = 0;
      mq_check_interrupt(S);
    }
  }
}

void mq_red_fold(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc) {
  walk(S, P, k, acc, P->x, P->es, P->m);
}

void *mq_red_acc(mq_state *S, const mq_red_plan *P, size_t size) {
  return mq_scratch(S, (size_t)(P->on ? P->on : 1) * size);
}

int64_t *mq_red_counts(mq_state *S, const mq_red_plan *P) {
  if (!P->m) return NULL;
  int64_t *count = mq_red_acc(S, P, sizeof *count);
  memset(count, 0, (size_t)P->on * sizeof *count);
  walk(S, P, &isum_BOOL, count, (const char *)P->m, 1, NULL);
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
#define X(E, s) s,
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
  void *o = mq_tensor_data(out);
  int64_t on = P.on, *count = mq_red_counts(S, &P);

  if (op == MQ_RED_COUNT) { /* always defined, so never masked */
    for (int64_t i = 0; i < on; i++) ((int64_t *)o)[i] = count ? count[i] : P.R;
    return out;
  }
  const mq_red_kernel *k = kernels[op][dt];
  /* accumulate in place when the output has the accumulator's type */
  void *acc = out_dt == dt && k->acc_size == mq_dtype_size(dt) && op != MQ_RED_MEAN
                  ? o : mq_red_acc(S, &P, k->acc_size);
  acc_init(op, dt, acc, on);
  mq_red_fold(S, &P, k, acc);

  if (op == MQ_RED_MEAN) {
    const double *a = acc;
    if (out_dt == MQ_DT_F64)
      for (int64_t i = 0; i < on; i++) ((double *)o)[i] = a[i] / (double)(count ? count[i] : P.R);
    else
      for (int64_t i = 0; i < on; i++) ((float *)o)[i] = (float)(a[i] / (double)(count ? count[i] : P.R));
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
  mq_red_set_mask(S, &P, out, count);
  mq_ag_reduce(S, out, op, t, ndims, dims, keepdim);
  return out;
}
