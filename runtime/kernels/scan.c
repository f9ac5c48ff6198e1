/* scan.c - operations along one dim: argmax/argmin, median, cumsum,
 * cumprod and logcumsumexp.
 *
 * The input is made contiguous and viewed as (outer, n, inner), n being the
 * dim (the flattened tensor is (1, numel, 1)). With inner == 1 each slice is
 * a contiguous row; otherwise a block's slices are its columns, handled a
 * whole row of columns at a time with per-column state, so nothing is
 * gathered (except by median, which must reorder each slice anyway). */
#include <math.h>

#include "../../core/checked.h"
#include "../tensor/internal.h"
#include "ops.h"

typedef struct layout {
  int64_t outer, n, inner;
  int ond;
  int64_t oshape[MQ_MAX_DIMS]; /* the reduced output's shape */
  const char *x;               /* contiguous data */
  const uint8_t *m;            /* contiguous mask, or NULL */
  mq_state *S;                 /* polled by the kernels ... */
  int64_t polled;              /* ... every MQ_POLL_ELEMS entries they go through */
} layout;

/* Counts [done] entries of work; polls for an interrupt every
 * MQ_POLL_ELEMS of them (a row may be 10^8 long, or rows 1 long). */
static inline void lay_poll(layout *L, int64_t done) {
  if ((L->polled += done) >= MQ_POLL_ELEMS) {
    L->polled = 0;
    mq_check_interrupt(L->S);
  }
}

/* dim < 0: the flattened tensor. */
static void layout_init(mq_state *S, layout *L, mq_tensor *t, int dim, bool keepdim) {
  L->S = S, L->polled = 0;
  L->outer = 1, L->inner = 1, L->ond = 0;
  if (dim < 0) {
    L->n = t->numel;
    if (keepdim)
      for (int d = 0; d < t->ndim; d++) L->oshape[L->ond++] = 1;
  } else {
    L->n = t->ndim ? t->shape[dim] : 1;
    for (int d = 0; d < t->ndim; d++) {
      if (d < dim) L->outer *= t->shape[d];
      if (d > dim) L->inner *= t->shape[d];
      if (d != dim || keepdim) L->oshape[L->ond++] = d == dim ? 1 : t->shape[d];
    }
  }
  L->x = mq_tensor_data(mq_contiguous(S, mq_get_data(S, t)));
  L->m = t->mask ? mq_tensor_data(mq_contiguous(S, t->mask)) : NULL;
}

/* The output mask "slice had a valid entry", from per-output flags. */
static void set_valid_mask(mq_state *S, const layout *L, mq_tensor *out, mq_tensor *t,
                           uint8_t *valid) {
  if (!t->mask) return;
  mq_tensor *mask = mq_tensor_new(S, MQ_DT_BOOL, L->ond, L->oshape);
  memcpy(mq_tensor_data(mask), valid, (size_t)out->numel);
  mq_tensor_set_mask(S, out, mask);
}

/* --- argmax / argmin ------------------------------------------------------------ */

/* NaN beats everything for both (torch), the first of equals wins. */
#define BETTER_MAX(v, b) ((v) > (b) || ((v) != (v) && (b) == (b)))
#define BETTER_MIN(v, b) ((v) < (b) || ((v) != (v) && (b) == (b)))

#define DEF_ARG(NAME, T, BETTER)                                               \
  static void NAME(layout *L, int64_t *out, uint8_t *valid, T *bv, int64_t *bi) { \
    const T *x = (const T *)L->x;                                              \
    const uint8_t *m = L->m;                                                   \
    int64_t n = L->n, inner = L->inner;                                        \
    for (int64_t b = 0; b < L->outer; b++) {                                   \
      const T *xb = x + b * n * inner;                                         \
      const uint8_t *mb = m ? m + b * n * inner : NULL;                        \
      if (inner == 1) {                                                        \
        int64_t best = -1, lo = 0, hi = n; /* a padded row: its span only */  \
        T v0 = 0;                                                              \
        if (mb) mq_valid_span(mb, n, &lo, &hi);                                \
        for (int64_t i0 = lo; i0 < hi; i0 += MQ_POLL_ELEMS) {                  \
          int64_t i1 = hi - i0 > MQ_POLL_ELEMS ? i0 + MQ_POLL_ELEMS : hi;      \
          for (int64_t i = i0; i < i1; i++) {                                  \
            if (mb && !mb[i]) continue;                                        \
            if (best < 0 || BETTER(xb[i], v0)) best = i, v0 = xb[i];           \
          }                                                                    \
          lay_poll(L, i1 - i0);                                                \
        }                                                                      \
        lay_poll(L, 1);                                                        \
        out[b] = best < 0 ? 0 : best;                                          \
        valid[b] = best >= 0;                                                  \
        continue;                                                              \
      }                                                                        \
      for (int64_t c = 0; c < inner; c++) bi[c] = -1, bv[c] = 0;               \
      for (int64_t j = 0; j < n; j++) {                                        \
        const T *xr = xb + j * inner;                                          \
        const uint8_t *mr = mb ? mb + j * inner : NULL;                        \
        for (int64_t c = 0; c < inner; c++) {                                  \
          T v = xr[c];                                                         \
          bool take = (!mr || mr[c]) && (bi[c] < 0 || BETTER(v, bv[c]));       \
          bv[c] = take ? v : bv[c];                                            \
          bi[c] = take ? j : bi[c];                                            \
        }                                                                      \
        lay_poll(L, inner);                                                    \
      }                                                                        \
      for (int64_t c = 0; c < inner; c++) {                                    \
        out[b * inner + c] = bi[c] < 0 ? 0 : bi[c];                            \
        valid[b * inner + c] = bi[c] >= 0;                                     \
      }                                                                        \
    }                                                                          \
  }

#define DEF_ARGS(E, N_, T, S_)                                                 \
  DEF_ARG(argmax_##E, T, BETTER_MAX)                                           \
  DEF_ARG(argmin_##E, T, BETTER_MIN)
MQ_DTYPES(DEF_ARGS)

mq_tensor *mq_argext(mq_state *S, mq_tensor *t, int dim, bool keepdim, bool max) {
  const char *name = max ? "argmax" : "argmin";
  layout L;
  layout_init(S, &L, t, dim, keepdim);
  if (L.n == 0 && !t->mask)
    mq_error(S, "%s of an empty tensor has no value", name);
  mq_tensor *out = mq_tensor_new(S, MQ_DT_I64, L.ond, L.oshape);
  uint8_t *valid = mq_scratch(S, (size_t)(out->numel ? out->numel : 1));
  size_t es = mq_dtype_size((mq_dtype)t->dtype);
  void *bv = mq_scratch(S, (size_t)(L.inner ? L.inner : 1) * es);
  int64_t *bi = mq_scratch(S, (size_t)(L.inner ? L.inner : 1) * sizeof *bi), *o = mq_tensor_data(out);
  switch ((mq_dtype)t->dtype) {
#define X(E, N_, T, S_)                                                        \
  case MQ_DT_##E:                                                              \
    if (max) argmax_##E(&L, o, valid, bv, bi);                                 \
    else argmin_##E(&L, o, valid, bv, bi);                                     \
    break;
    MQ_DTYPES(X)
#undef X
  default: mq_error(S, "bad dtype");
  }
  set_valid_mask(S, &L, out, t, valid);
  return out;
}

/* --- median ------------------------------------------------------------------------ */

/* The lower median of the valid entries of each slice (torch's choice for
 * an even count): gathered into a buffer, then Hoare's quickselect. A NaN
 * among them makes the median NaN, as in torch. A quickselect that has
 * not converged after 2 log2(n) + 8 rounds (a pivot chosen badly again and
 * again: inputs exist that make the middle pivot quadratic) heap-sorts what
 * is left instead, so a slice costs O(n log n) at worst; both poll. */
#define DEF_MEDIAN(E, T, IS_NAN)                                               \
  static void sift_##E(T *a, int64_t n, int64_t i) { /* max-heap of a[0..n) */ \
    for (;;) {                                                                 \
      int64_t l = 2 * i + 1, r = l + 1, w = i;                                 \
      if (l < n && a[w] < a[l]) w = l;                                         \
      if (r < n && a[w] < a[r]) w = r;                                         \
      if (w == i) return;                                                      \
      T tmp = a[i];                                                            \
      a[i] = a[w], a[w] = tmp, i = w;                                          \
    }                                                                          \
  }                                                                            \
  static void heapsort_##E(layout *L, T *a, int64_t n) {                       \
    for (int64_t i = n / 2; i-- > 0;) sift_##E(a, n, i);                      \
    for (int64_t end = n - 1; end > 0; end--) {                                \
      T tmp = a[0];                                                            \
      a[0] = a[end], a[end] = tmp;                                             \
      sift_##E(a, end, 0);                                                     \
      if ((end & 4095) == 0) lay_poll(L, 4096 * 16); /* ~ log n steps each */ \
    }                                                                          \
  }                                                                            \
  static T select_##E(layout *L, T *a, int64_t n, int64_t k) {                 \
    int64_t lo = 0, hi = n - 1, rounds = 8;                                    \
    for (int64_t m = n; m > 1; m /= 2) rounds += 2;                            \
    while (lo < hi) {                                                          \
      if (rounds-- == 0) {                                                     \
        heapsort_##E(L, a + lo, hi - lo + 1);                                  \
        break;                                                                 \
      }                                                                        \
      lay_poll(L, hi - lo + 1);                                                \
      T pivot = a[lo + (hi - lo) / 2];                                         \
      int64_t i = lo, j = hi, swaps = 0;                                       \
      while (i <= j) {                                                         \
        if ((++swaps & (MQ_POLL_ELEMS - 1)) == 0) lay_poll(L, MQ_POLL_ELEMS);  \
        while (a[i] < pivot) i++;                                              \
        while (a[j] > pivot) j--;                                              \
        if (i <= j) {                                                          \
          T tmp = a[i];                                                        \
          a[i++] = a[j];                                                       \
          a[j--] = tmp;                                                        \
        }                                                                      \
      }                                                                        \
      if (k <= j) hi = j;                                                      \
      else if (k >= i) lo = i;                                                 \
      else break;                                                              \
    }                                                                          \
    return a[k];                                                               \
  }                                                                            \
  static void median_##E(layout *L, T *out, uint8_t *valid, T *buf) {          \
    const T *x = (const T *)L->x;                                              \
    int64_t n = L->n, inner = L->inner;                                        \
    for (int64_t b = 0; b < L->outer; b++)                                     \
      for (int64_t c = 0; c < inner; c++) {                                    \
        int64_t base = b * n * inner + c, cnt = 0;                            \
        bool nan = false;                                                      \
        for (int64_t j = 0; j < n; j++) {                                      \
          if ((j & (MQ_POLL_ELEMS - 1)) == MQ_POLL_ELEMS - 1) lay_poll(L, MQ_POLL_ELEMS); \
          if (L->m && !L->m[base + j * inner]) continue;                       \
          T v = x[base + j * inner];                                           \
          nan |= IS_NAN(v);                                                    \
          buf[cnt++] = v;                                                      \
        }                                                                      \
        lay_poll(L, n % MQ_POLL_ELEMS + 1);                                    \
        int64_t o = b * inner + c;                                             \
        valid[o] = cnt > 0;                                                    \
        out[o] = cnt == 0 || nan ? (T)NAN_OR_ZERO(T) : select_##E(L, buf, cnt, (cnt - 1) / 2); \
      }                                                                        \
  }

#define FLOAT_NAN(v) ((v) != (v))
#define NO_NAN(v) ((void)(v), false)
#define NAN_OR_ZERO(T) ((T)0.5 == 0 ? 0 : NAN)
DEF_MEDIAN(I64, int64_t, NO_NAN)
DEF_MEDIAN(F32, float, FLOAT_NAN)
DEF_MEDIAN(F64, double, FLOAT_NAN)

mq_tensor *mq_median(mq_state *S, mq_tensor *t, int dim, bool keepdim) {
  if (t->dtype == MQ_DT_BOOL) t = mq_astype(S, t, MQ_DT_I64);
  layout L;
  layout_init(S, &L, t, dim, keepdim);
  if (L.n == 0 && !t->mask) mq_error(S, "median of an empty tensor has no value");
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)t->dtype, L.ond, L.oshape);
  uint8_t *valid = mq_scratch(S, (size_t)(out->numel ? out->numel : 1));
  void *buf = mq_scratch(S, (size_t)(L.n ? L.n : 1) * mq_dtype_size((mq_dtype)t->dtype));
  void *o = mq_tensor_data(out);
  if (t->dtype == MQ_DT_I64) median_I64(&L, o, valid, buf);
  else if (t->dtype == MQ_DT_F32) median_F32(&L, o, valid, buf);
  else median_F64(&L, o, valid, buf);
  set_valid_mask(S, &L, out, t, valid);
  mq_ag_median(S, out, t, dim, keepdim);
  return out;
}

/* --- cumsum / cumprod ------------------------------------------------------------- */

/* Running values in the accumulator type A (double for floats, wrapping
 * int64 for ints); masked-out entries contribute the identity, and hold
 * the running value (under their mask). A contiguous row keeps its value
 * in a register and stops combining at its last valid entry: past it the
 * value holds (OP with the identity changes no running value: a sum from
 * +0 is never -0, and x * 1 is x). */
#define DEF_CUM(NAME, T, A, TO, ID, OP)                                        \
  static void NAME##_rows(layout *L, TO *o) {                                  \
    const T *x = (const T *)L->x;                                              \
    int64_t n = L->n;                                                          \
    for (int64_t b = 0; b < L->outer; b++) {                                   \
      const T *xr = x + b * n;                                                 \
      const uint8_t *mr = L->m ? L->m + b * n : NULL;                          \
      TO *orow = o + b * n;                                                    \
      int64_t lo = 0, hi = n;                                                  \
      A a = (A)(ID);                                                           \
      if (mr) mq_valid_span(mr, n, &lo, &hi);                                  \
      for (int64_t j0 = 0; j0 < n; j0 += MQ_POLL_ELEMS) { /* a long row polls */ \
        int64_t j1 = n - j0 > MQ_POLL_ELEMS ? j0 + MQ_POLL_ELEMS : n;          \
        int64_t c0 = lo < j0 ? j0 : lo > j1 ? j1 : lo, c1 = hi < j1 ? hi : j1, j = j0; \
        for (; j < c0; j++) orow[j] = (TO)a;                                   \
        if (mr)                                                                \
          for (; j < c1; j++) {                                                \
            a = OP(a, mr[j] ? (A)xr[j] : (A)(ID));                             \
            orow[j] = (TO)a;                                                   \
          }                                                                    \
        else                                                                   \
          for (; j < c1; j++) {                                                \
            a = OP(a, (A)xr[j]);                                               \
            orow[j] = (TO)a;                                                   \
          }                                                                    \
        for (; j < j1; j++) orow[j] = (TO)a;                                   \
        lay_poll(L, j1 - j0);                                                  \
      }                                                                        \
      lay_poll(L, 1);                                                          \
    }                                                                          \
  }                                                                            \
  static void NAME(layout *L, TO *o, A *acc) {                                 \
    const T *x = (const T *)L->x;                                              \
    const uint8_t *m = L->m;                                                   \
    int64_t n = L->n, inner = L->inner;                                        \
    if (inner == 1) {                                                          \
      NAME##_rows(L, o);                                                       \
      return;                                                                  \
    }                                                                          \
    for (int64_t b = 0; b < L->outer; b++) {                                   \
      int64_t base = b * n * inner;                                            \
      for (int64_t c = 0; c < inner; c++) acc[c] = (A)(ID);                    \
      for (int64_t j = 0; j < n; j++) {                                        \
        const T *xr = x + base + j * inner;                                    \
        TO *orow = o + base + j * inner;                                       \
        if (m) {                                                               \
          const uint8_t *mr = m + base + j * inner;                            \
          for (int64_t c = 0; c < inner; c++) {                                \
            A v = (A)xr[c];                                                    \
            acc[c] = OP(acc[c], mr[c] ? v : (A)(ID));                          \
            orow[c] = (TO)acc[c];                                              \
          }                                                                    \
        } else {                                                               \
          for (int64_t c = 0; c < inner; c++) {                                \
            acc[c] = OP(acc[c], (A)xr[c]);                                     \
            orow[c] = (TO)acc[c];                                              \
          }                                                                    \
        }                                                                      \
        lay_poll(L, inner);                                                    \
      }                                                                        \
    }                                                                          \
  }

#define FADD(a, b) ((a) + (b))
#define FMUL(a, b) ((a) * (b))
#define IADD(a, b) ((int64_t)((uint64_t)(a) + (uint64_t)(b)))
#define IMUL(a, b) ((int64_t)((uint64_t)(a) * (uint64_t)(b)))
#define DEF_CUMS(E, T, A, TO, ADD, MUL)                                        \
  DEF_CUM(cumsum_##E, T, A, TO, 0, ADD)                                        \
  DEF_CUM(cumprod_##E, T, A, TO, 1, MUL)
DEF_CUMS(BOOL, uint8_t, int64_t, int64_t, IADD, IMUL)
DEF_CUMS(I64, int64_t, int64_t, int64_t, IADD, IMUL)
DEF_CUMS(F32, float, double, float, FADD, FMUL)
DEF_CUMS(F64, double, double, double, FADD, FMUL)

mq_tensor *mq_cumulative(mq_state *S, mq_tensor *t, int dim, bool prod) {
  mq_dtype dt = (mq_dtype)t->dtype;
  mq_dtype out_dt = mq_dtype_is_float(dt) ? dt : MQ_DT_I64;
  layout L;
  layout_init(S, &L, t, t->ndim ? dim : -1, false);
  mq_tensor *out = mq_tensor_new(S, out_dt, t->ndim, t->shape);
  void *o = mq_tensor_data(out), *acc = mq_scratch(S, (size_t)(L.inner ? L.inner : 1) * 8);
  switch (dt) {
#define X(E, N_, T, S_)                                                        \
  case MQ_DT_##E:                                                              \
    if (prod) cumprod_##E(&L, o, acc);                                         \
    else cumsum_##E(&L, o, acc);                                               \
    break;
    MQ_DTYPES(X)
#undef X
  default: mq_error(S, "bad dtype");
  }
  if (t->mask) mq_tensor_set_mask(S, out, mq_contiguous(S, t->mask));
  mq_ag_cumulative(S, out, t, dim, prod);
  return out;
}

/* --- logcumsumexp ----------------------------------------------------------------- */

/* The running log(sum(exp)) of a slice kept as a max m and a sum s of
 * exp(v - m), so that nothing overflows. An entry equal to m adds 1
 * rather than exp(m - m), which is NaN when m is infinite (torch's inf for
 * a run of infs); -inf adds nothing. */
static inline void lse_add(double *m, double *s, double v) {
  if (v > *m) *s = *s * exp(*m - v) + 1, *m = v;
  else if (v == *m) *s += 1;
  else if (v == v) *s += exp(v - *m);
  else *m = v, *s = 1; /* NaN: stays NaN from here on */
}

#define DEF_LCSE(E, T)                                                         \
  static void lcse_##E(layout *L, T *o, double *acc) {                         \
    const T *x = (const T *)L->x;                                              \
    const uint8_t *m = L->m;                                                   \
    int64_t n = L->n, inner = L->inner;                                        \
    double *mx = acc, *sm = acc + inner;                                       \
    for (int64_t b = 0; b < L->outer; b++) {                                   \
      int64_t base = b * n * inner;                                            \
      for (int64_t c = 0; c < inner; c++) mx[c] = -INFINITY, sm[c] = 0;        \
      for (int64_t j = 0; j < n; j++) {                                        \
        int64_t r = base + j * inner;                                          \
        for (int64_t c = 0; c < inner; c++) {                                  \
          if (!m || m[r + c]) lse_add(&mx[c], &sm[c], (double)x[r + c]);       \
          o[r + c] = (T)(mx[c] + log(sm[c]));                                  \
        }                                                                      \
        lay_poll(L, inner);                                                    \
      }                                                                        \
    }                                                                          \
  }
DEF_LCSE(F32, float)
DEF_LCSE(F64, double)

mq_tensor *mq_logcumsumexp(mq_state *S, mq_tensor *t, int dim) {
  mq_dtype dt = mq_dtype_float_compute((mq_dtype)t->dtype);
  if (t->dtype != dt) t = mq_astype(S, t, dt); /* ints and bools as float32 */
  layout L;
  layout_init(S, &L, t, t->ndim ? dim : -1, false);
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)t->dtype, t->ndim, t->shape);
  double *acc = mq_scratch(S, mq_ck_zmul(S, (size_t)(L.inner ? L.inner : 1), 2 * sizeof(double),
                                         "logcumsumexp"));
  if (t->dtype == MQ_DT_F32) lcse_F32(&L, mq_tensor_data(out), acc);
  else lcse_F64(&L, mq_tensor_data(out), acc);
  if (t->mask) mq_tensor_set_mask(S, out, mq_contiguous(S, t->mask));
  if (MQ_UNLIKELY(t->requires_grad)) mq_ag_rec_dim(S, out, MQ_AG_LOGCUMSUMEXP, 0, t, dim);
  return out;
}
