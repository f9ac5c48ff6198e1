/* attention_bwd.c - softmax(as_masked(a @ b / c, m), -1) @ v as one
 * autograd node, its backward over the valid keys only (attention_bwd.h).
 *
 * Op by op, the backward of attention is two matmul backwards over L x L
 * float64 gradients (the scores' and p's, every masked key included),
 * softmax's and the division's, each a full-size pass of its own. Here
 * each batch matrix is done by one thread, from the same union of valid
 * key columns the forward uses (attention.c): with g the gradient of the
 * result, for each query row i with a valid key and a valid g entry,
 *
 *   - the scores and p of its valid keys again, as the forward computes
 *     them (the same sums and division, softmax.c's row softmax);
 *   - dp[j] = sum_d g[i, d] v[j, d] over g's valid d in order (matmul's
 *     gradient of its left operand), s = sum_j dp[j] p[j] over the valid
 *     keys in order, ds[j] = p[j] (dp[j] - s) (softmax's), ds[j] / c (the
 *     division's);
 *   - da[i, :] = sum_j (ds[j] / c) k[j, :] over its valid keys in order;
 *
 * and then, for each key, db[:, j] = sum_i (ds[i, j] / c) a[i, :] and
 * dv[j, :] = sum_i p[i, j] g[i, :] in row order: over every row, the rows
 * that did not reach the key adding exact zeros (dense_keys), or, when an
 * operand is inf or NaN, over the rows that reached it only (list_keys),
 * as op by op then forms no term with a masked-out partner. Every sum is
 * the float64 sum op by op makes, of the same products (a multiply, then
 * an add: no fma, these products are not exact), in the same order; an
 * exact 0 added to a sum that starts at +0 leaves it as it was. The masks
 * are the ones op by op builds: an entry is valid where some valid term
 * reached it. So the gradients are bitwise the op-by-op ones, at any
 * thread count and on every CPU path (runtime/tensor/cpu.h): the wider paths only
 * keep more sums in registers (four rows of terms at a time with
 * AVX-512). Float32 operands get float32 gradients, those sums rounded
 * once at the end of each matrix (the bits a float32 leaf gets op by op),
 * and a float32 g is read as it is: no float64 copy of either. */
#include "attention_bwd.h"

#include <math.h>
#include <stdatomic.h>

#include "../../core/checked.h"
#include "../nn/attention.h"
#include "autograd.h"
#include "backward.h"
#include "../tensor/cpu.h"
#include "../tensor/internal.h"
#include "../tensor/parallel.h"
#include "../kernels/reduce.h"
#include "../tensor/shape.h"

/* --- the forward ------------------------------------------------------------ */

/* A float tensor mq_attention may take once detached: strided, no mask. */
static bool grad_operand(const mq_tensor *t) {
  return t->layout == 0 && !t->mask && t->ndim >= 2 &&
         (t->dtype == MQ_DT_F32 || t->dtype == MQ_DT_F64);
}

/* [t]'s data alone: a view with no history, not requiring grad. */
static mq_tensor *detached(mq_state *S, mq_tensor *t) {
  return mq_tensor_view(S, t, t->ndim, t->shape, t->strides, t->offset);
}

/* b as the product reads it: bt's last two dims swapped, a view. */
static mq_tensor *b_view(mq_state *S, mq_tensor *b, bool bt) {
  b = detached(S, b);
  return bt ? mq_transpose(S, b, -2, -1) : b;
}

mq_tensor *mq_attention_grad(mq_state *S, mq_tensor *a, mq_tensor *b, bool bt, mq_value c,
                             mq_tensor *m, mq_tensor *v) {
  if (!grad_operand(a) || !grad_operand(b) || !grad_operand(v)) return NULL;
  /* the backward, maybe in a later call, reads the mask the forward read */
  m = mq_tensor_owned(S, m);
  mq_tensor *out = mq_attention(S, detached(S, a), b_view(S, b, bt), c, m, detached(S, v));
  if (!out || !(a->requires_grad | b->requires_grad | v->requires_grad)) return out;
  mq_tensor *in[4] = {a, b, v, m}; /* the recorder of any node kind (autograd.h) */
  mq_gradnode *n = mq_ag_rec_sparse(S, out, MQ_AG_ATTENTION, bt, 3, 1, in);
  if (n) n->prm[0] = c.type == MQ_INT ? (double)c.as.i : c.as.f; /* mq_attention took it */
  return out;
}

/* --- the sums ----------------------------------------------------------------- */

/* out[j] = sum over t < n of x[t] * row(t)[j], j < w, where row(t) is
 * rows + r * w with r = ks[t] (ks NULL: r = t): each a float64 sum from +0
 * of products rounded, then added, in t order. The portable loop; the
 * AVX2 and AVX-512 ones keep blocks of 32 and 64 sums in registers across
 * all the terms (the same operations on each lane: the same bits). */
#define ROW(t) (rows + (ks ? ks[t] : (t)) * w)
static void sums(const double *x, const int64_t *ks, int64_t n, const double *rows, int64_t w,
                 double *out) {
  for (int64_t j = 0; j < w; j++) out[j] = 0;
  for (int64_t t = 0; t < n; t++) {
    const double *r = ROW(t);
    double xt = x[t];
    for (int64_t j = 0; j < w; j++) out[j] += xt * r[j];
  }
}

#if MQ_CPU_X86
#include <immintrin.h>

#define AB_CAT_(a, b) a##b
#define AB_CAT(a, b) AB_CAT_(a, b)
#define V(f) AB_CAT(P, f)
#define MA8(u, x, r, i) u##i = V(_add_pd)(u##i, V(_mul_pd)(x, V(_loadu_pd)((r) + L * i)))
/* out[j .. j + 8 L) of sums in eight registers of L doubles */
#define DEF_BLOCK(NAME, ATTR)                                                  \
  ATTR static void NAME(const double *x, const int64_t *ks, int64_t n, const double *rows, \
                        int64_t w, int64_t j, double *out) {                   \
    VT u0 = V(_setzero_pd)(), u1 = u0, u2 = u0, u3 = u0, u4 = u0, u5 = u0, u6 = u0, u7 = u0; \
    for (int64_t t = 0; t < n; t++) {                                          \
      VT xv = V(_set1_pd)(x[t]);                                               \
      const double *r = ROW(t) + j;                                            \
      MA8(u, xv, r, 0), MA8(u, xv, r, 1), MA8(u, xv, r, 2), MA8(u, xv, r, 3);  \
      MA8(u, xv, r, 4), MA8(u, xv, r, 5), MA8(u, xv, r, 6), MA8(u, xv, r, 7);  \
    }                                                                          \
    out += j;                                                                  \
    V(_storeu_pd)(out, u0), V(_storeu_pd)(out + L, u1);                        \
    V(_storeu_pd)(out + 2 * L, u2), V(_storeu_pd)(out + 3 * L, u3);            \
    V(_storeu_pd)(out + 4 * L, u4), V(_storeu_pd)(out + 5 * L, u5);            \
    V(_storeu_pd)(out + 6 * L, u6), V(_storeu_pd)(out + 7 * L, u7);            \
  }
#define VT __m256d
#define P _mm256
#define L 4
DEF_BLOCK(block32, MQ_TGT_AVX2)
#undef VT
#undef P
#undef L
#define VT __m512d
#define P _mm512
#define L 8
DEF_BLOCK(block64, MQ_TGT_AVX512)
#undef VT
#undef P
#undef L
#undef V

/* sums by blocks of [bw] columns (the last overlapping the one before: its
 * sums computed twice, the same way), then four at a time, then one. AVX2
 * code: block64 alone is AVX-512, called only on that path. */
MQ_TGT_AVX2 static void sums_wide(int cpu, const double *x, const int64_t *ks, int64_t n,
                                    const double *rows, int64_t w, double *out) {
  int64_t j = 0, bw = cpu == MQ_CPU_AVX512 ? 64 : 32;
  for (; w >= bw; j += bw) {
    if (j + bw > w) j = w - bw;
    if (bw == 64) block64(x, ks, n, rows, w, j, out);
    else block32(x, ks, n, rows, w, j, out);
    if (j + bw == w) return;
  }
  for (; j + 4 <= w; j += 4) {
    __m256d u = _mm256_setzero_pd();
    for (int64_t t = 0; t < n; t++)
      u = _mm256_add_pd(u, _mm256_mul_pd(_mm256_set1_pd(x[t]), _mm256_loadu_pd(ROW(t) + j)));
    _mm256_storeu_pd(out + j, u);
  }
  for (; j < w; j++) {
    double u = 0;
    for (int64_t t = 0; t < n; t++) u += x[t] * ROW(t)[j];
    out[j] = u;
  }
}
#endif
#undef ROW

static void sums_on(int cpu, const double *x, const int64_t *ks, int64_t n, const double *rows,
                    int64_t w, double *out) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512 || cpu == MQ_CPU_AVX2) {
    sums_wide(cpu, x, ks, n, rows, w, out);
    return;
  }
#endif
  (void)cpu;
  sums(x, ks, n, rows, w, out);
}

#if MQ_CPU_X86
/* out + r os [j .. j + 32) of sums for four rows of terms, x[r xs + t xt]
 * (r < 4), in sixteen registers: each row of [rows] is loaded once for
 * the four. */
#define MA4(u, xv, l) u = _mm512_add_pd(u, _mm512_mul_pd(xv, l))
#define ST4(o, u0, u1, u2, u3) \
  _mm512_storeu_pd(o, u0), _mm512_storeu_pd(o + 8, u1), _mm512_storeu_pd(o + 16, u2), \
      _mm512_storeu_pd(o + 24, u3)
MQ_TGT_AVX512 static void block4(const double *x, int64_t xs, int64_t xt, const int64_t *ks,
                                 int64_t n, const double *rows, int64_t w, int64_t j, double *out,
                                 int64_t os) {
  __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  __m512d c0 = a0, c1 = a0, c2 = a0, c3 = a0, d0 = a0, d1 = a0, d2 = a0, d3 = a0;
  for (int64_t t = 0; t < n; t++) {
    const double *r = rows + (ks ? ks[t] : t) * w + j, *xr = x + t * xt;
    __m512d l0 = _mm512_loadu_pd(r), l1 = _mm512_loadu_pd(r + 8);
    __m512d l2 = _mm512_loadu_pd(r + 16), l3 = _mm512_loadu_pd(r + 24);
    __m512d x0 = _mm512_set1_pd(xr[0]), x1 = _mm512_set1_pd(xr[xs]);
    __m512d x2 = _mm512_set1_pd(xr[2 * xs]), x3 = _mm512_set1_pd(xr[3 * xs]);
    MA4(a0, x0, l0), MA4(a1, x0, l1), MA4(a2, x0, l2), MA4(a3, x0, l3);
    MA4(b0, x1, l0), MA4(b1, x1, l1), MA4(b2, x1, l2), MA4(b3, x1, l3);
    MA4(c0, x2, l0), MA4(c1, x2, l1), MA4(c2, x2, l2), MA4(c3, x2, l3);
    MA4(d0, x3, l0), MA4(d1, x3, l1), MA4(d2, x3, l2), MA4(d3, x3, l3);
  }
  out += j;
  ST4(out, a0, a1, a2, a3), ST4(out + os, b0, b1, b2, b3);
  ST4(out + 2 * os, c0, c1, c2, c3), ST4(out + 3 * os, d0, d1, d2, d3);
}
#undef MA4
#undef ST4
#endif

/* sums for nr <= 4 rows of terms x[r xs + t xt] (the same ks, n) into
 * out + r os, each the sum sums_on makes; tmp [n] is scratch. */
static void sums4(int cpu, int nr, const double *x, int64_t xs, int64_t xt, const int64_t *ks,
                  int64_t n, const double *rows, int64_t w, double *out, int64_t os, double *tmp) {
#if MQ_CPU_X86
  if (cpu == MQ_CPU_AVX512 && nr == 4 && w >= 32) {
    for (int64_t j = 0;; j += 32) { /* the last block overlapping the one before */
      if (j + 32 > w) j = w - 32;
      block4(x, xs, xt, ks, n, rows, w, j, out, os);
      if (j + 32 == w) return;
    }
  }
#endif
  for (int r = 0; r < nr; r++) {
    const double *xr = x + r * xs;
    if (xt != 1) {
      for (int64_t t = 0; t < n; t++) tmp[t] = xr[t * xt];
      xr = tmp;
    }
    sums_on(cpu, xr, ks, n, rows, w, out + r * os);
  }
}

/* --- one batch matrix ------------------------------------------------------- */

typedef struct ab_job {
  mq_dtype dt;
  int64_t n, K, m, dv; /* a: [n, K], b: [K, m], v: [m, dv] per batch matrix */
  int nb, cpu;
  const int64_t *bshape;
  const char *a, *v;   /* contiguous */
  const char *b;       /* any strides: bst */
  const int64_t *bst;
  const uint8_t *mk;   /* the mask expanded to the scores' shape: mst */
  const int64_t *mst;
  const double *g;     /* the result's gradient [.., n, dv], contiguous float64, */
  const float *g32;    /* or float32, read with stride gs (0: one value for all) */
  int64_t gs;
  const uint8_t *gm;   /* its mask, or NULL */
  double c;            /* the divisor, rounded to T */
  double inv;          /* 1 / c when c is a power of two (exact), else 0 */
  double *ga, *gb, *gv; /* the gradients (NULL: not wanted), 0 where masked out; */
  float *ga32, *gb32, *gv32; /* or (f32, the operands' dtype) rounded once into these */
  bool f32;
  int64_t bk, bj;       /* b[k, j]'s place in its gradient: k bk + j bj (b or bt's layout) */
  uint8_t *ma, *mb, *mv;
  char *scr;           /* per thread: scr_bytes */
  size_t scr_bytes;
  /* One matrix may take seconds (2-d attention of thousands of rows):
   * the calling thread polls for interrupts between row blocks and, when
   * one is due, tells every thread to stop (the gradients are dropped). */
  mq_state *S;
  atomic_bool *stop;
} ab_job;

/* Per-thread scratch, carved in this order (8-byte items first). */
typedef struct ab_scr {
  int64_t *cols, *ks, *gd, *cnt; /* m: union columns; 2 m: the valid keys in them (shared, a row's);
                                    dv: its valid g entries; m: rows per key */
  int64_t *krow;                 /* n: the rows that reached a key (list_keys) */
  double *xa, *kc, *kr, *vt, *gz; /* n K: a; K m: b's union columns; m K: the same as
                                     rows; dv m: v's union rows transposed; n dv: g,
                                     0 where masked out */
  double *acc, *p, *dp, *ds, *gx, *o; /* 4 m, m, 4 m, 4 m, dv, 4 max(K, dv, m) */
  double *kx, *px;               /* n * m: ds / c and p of each row, 0 where nothing flowed */
  double *sa, *sb, *sv;          /* n K, K m, m dv (f32 only): the matrix's gradients in
                                    double before their rounding */
  double *xt;                    /* 2 max(n, m): a column of terms (sums4), a key's (list_keys) */
  char *srow, *prow;             /* m T each */
  uint8_t *mbuf, *ubuf, *gfull, *reached; /* m, m, n: whether row i has all of g valid,
                                             n: whether anything flowed through it */
} ab_scr;

/* Carves thread [t]'s scratch out of J->scr (8-byte items first); with
 * J->scr NULL only counts its bytes (the caller has checked m * n). */
static size_t carve(const ab_job *J, int t, ab_scr *s) {
  size_t m = (size_t)J->m, n = (size_t)J->n, K = (size_t)J->K, dv = (size_t)J->dv;
  size_t kd = K > dv ? K : dv, w = kd > m ? kd : m, es = mq_dtype_size(J->dt), at = 0;
  char *base = J->scr ? J->scr + (size_t)t * J->scr_bytes : NULL;
#define TAKE(f, T, count) (s->f = base ? (T *)(void *)(base + at) : NULL, at += (count) * sizeof(T))
  TAKE(cols, int64_t, m), TAKE(ks, int64_t, 2 * m), TAKE(gd, int64_t, dv), TAKE(cnt, int64_t, m);
  TAKE(krow, int64_t, n);
  TAKE(xa, double, n * K), TAKE(kc, double, K * m), TAKE(kr, double, m * K);
  TAKE(vt, double, dv * m), TAKE(gz, double, n * dv);
  TAKE(acc, double, 4 * m), TAKE(p, double, m), TAKE(dp, double, 4 * m), TAKE(ds, double, 4 * m);
  TAKE(gx, double, dv), TAKE(o, double, 4 * w);
  TAKE(kx, double, m * n), TAKE(px, double, m * n), TAKE(xt, double, 2 * (n > m ? n : m));
  size_t f32 = J->f32;
  TAKE(sa, double, f32 * n * K), TAKE(sb, double, f32 * K * m), TAKE(sv, double, f32 * m * dv);
  TAKE(srow, char, m * es), TAKE(prow, char, m * es);
  TAKE(mbuf, uint8_t, m), TAKE(ubuf, uint8_t, m), TAKE(gfull, uint8_t, n), TAKE(reached, uint8_t, n);
#undef TAKE
  return (at + 63) & ~(size_t)63;
}

/* The probabilities of a row's nk valid keys ks (union indices) from its
 * scores acc over the nv union columns: the score rounded to T and divided
 * by c (binary.c's division), the row laid out as op by op (0 outside the
 * union) and softmax.c's own row softmax, so p is op by op's to the bit
 * (and the fused forward's, which is too). */
#define DEF_PROBS(NAME, T, ROW)                                                \
  static void NAME(const ab_job *J, const ab_scr *s, const double *acc, const int64_t *ks, \
                   const uint8_t *mr, int64_t nv, int64_t nk) {                \
    int64_t m = J->m;                                                          \
    T *srow = (T *)(void *)s->srow, *prow = (T *)(void *)s->prow, c = (T)J->c; \
    memset(srow, 0, (size_t)m * sizeof(T));                                    \
    for (int64_t jj = 0; jj < nv; jj++) srow[s->cols[jj]] = (T)acc[jj] / c;    \
    ROW(J->cpu, prow, srow, mr, m);                                            \
    for (int64_t q = 0; q < nk; q++) s->p[q] = (double)prow[s->cols[ks[q]]];   \
  }
DEF_PROBS(probs_F32, float, mq_softmax_row_f32)
DEF_PROBS(probs_F64, double, mq_softmax_row_f64)

/* b's union columns (kc [K, nv], kr [nv, K]), v's union rows transposed
 * (vt [dv, nv]) and the rows of a (xa [n, K]), as float64 (exact). */
#define DEF_GATHER(E, T)                                                       \
  static void gather_##E(const ab_job *J, const ab_scr *s, const T *a, const T *b, const T *v, \
                         int64_t nv) {                                         \
    int64_t K = J->K, dv = J->dv, sk = J->bst[J->nb], sj = J->bst[J->nb + 1]; \
    for (int64_t jj = 0; jj < nv; jj++) /* b's columns: k's rows, read in order */ \
      for (int64_t k = 0; k < K; k++) s->kr[jj * K + k] = (double)b[k * sk + s->cols[jj] * sj]; \
    for (int64_t k = 0; k < K; k++)                                            \
      for (int64_t jj = 0; jj < nv; jj++) s->kc[k * nv + jj] = s->kr[jj * K + k]; \
    for (int64_t jj = 0; jj < nv; jj++)                                        \
      for (int64_t d = 0; d < dv; d++) s->vt[d * nv + jj] = (double)v[s->cols[jj] * dv + d]; \
    for (int64_t e = 0; e < J->n * K; e++) s->xa[e] = (double)a[e];            \
  }
DEF_GATHER(F32, float)
DEF_GATHER(F64, double)

/* Whether x[0, n) holds no inf or NaN: on the bits, so that it vectorizes. */
static bool all_finite(const double *x, int64_t n) {
  uint64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    uint64_t b;
    memcpy(&b, x + i, sizeof b);
    bad |= (b & UINT64_C(0x7ff0000000000000)) == UINT64_C(0x7ff0000000000000);
  }
  return !bad;
}

/* Whether key j is valid in row i of the matrix at mask offset [moff]. */
static bool key_of(const ab_job *J, int64_t moff, int64_t i, int64_t j) {
  return J->mk[moff + i * J->mst[J->nb] + j * J->mst[J->nb + 1]] != 0;
}

/* out[o so + cols[jj] sc] = sum over the rows i of x[i w + o] src[i, jj]
 * for o < w and the keys jj something reached (db^T = a^T (ds / c): x a,
 * src ds / c; dv^T = g^T p). */
static void dense_key_sums(const ab_job *J, const ab_scr *s, const double *x, int64_t w,
                           const double *src, int64_t nv, double *out, int64_t so, int64_t sc) {
  for (int64_t o = 0; o < w; o += 4) {
    int nr = w - o < 4 ? (int)(w - o) : 4;
    sums4(J->cpu, nr, x + o, 1, w, NULL, J->n, src, nv, s->o, nv, s->xt);
    for (int r = 0; r < nr; r++)
      for (int64_t jj = 0; jj < nv; jj++)
        if (s->cnt[jj]) out[(o + r) * so + s->cols[jj] * sc] = s->o[r * nv + jj];
  }
}

/* The keys' gradients (b's columns, v's rows) with every operand finite
 * that a term not formed op by op meets here: db^T = a^T (ds / c) and
 * dv^T = g^T p as sums over all the rows of the matrix in order, the rows
 * and keys nothing reached adding exact zeros (a finite number times +0:
 * the sum stays as it was). */
static void dense_keys(const ab_job *J, const ab_scr *s, int64_t nv, double *gb, double *gv) {
  if (gb) dense_key_sums(J, s, s->xa, J->K, s->kx, nv, gb, J->bk, J->bj);
  if (gv) dense_key_sums(J, s, s->gz, J->dv, s->px, nv, gv, 1, J->dv);
}

/* The same sums over the rows that reached each key only (a NaN or inf
 * somewhere: op by op then forms no term with a masked-out partner). */
static void list_keys(const ab_job *J, const ab_scr *s, int64_t nv, int64_t moff, double *gb,
                      double *gv) {
  int64_t n = J->n, K = J->K, dv = J->dv;
  for (int64_t jj = 0; jj < nv; jj++) {
    int64_t cn = 0, j = s->cols[jj];
    for (int64_t i = 0; i < n; i++) {
      if (!s->reached[i] || !key_of(J, moff, i, j)) continue;
      s->krow[cn] = i, s->xt[cn] = s->kx[i * nv + jj], s->xt[n + cn] = s->px[i * nv + jj];
      cn++;
    }
    if (!cn) continue;
    if (gb) {
      sums_on(J->cpu, s->xt, s->krow, cn, s->xa, K, s->o);
      for (int64_t k = 0; k < K; k++) gb[k * J->bk + j * J->bj] = s->o[k];
    }
    if (gv) sums_on(J->cpu, s->xt + n, s->krow, cn, s->gz, dv, gv + j * dv);
  }
}

/* Batch matrix [bi]'s gradients into J's outputs (zeroed, masked out
 * where nothing reached). */
static void ab_matrix(const ab_job *J, const ab_scr *s, int64_t bi, int t) {
  int64_t n = J->n, K = J->K, m = J->m, dv = J->dv, es = (int64_t)mq_dtype_size(J->dt);
  int64_t si = J->mst[J->nb], sj = J->mst[J->nb + 1];
  int64_t boff, moff; /* element offsets of batch bi */
  mq_batch_offsets(J->nb, J->bshape, bi, J->bst, &boff, J->mst, &moff);
  double *ga = J->ga ? J->ga + bi * n * K : NULL, *gb = J->gb ? J->gb + bi * K * m : NULL;
  double *gv = J->gv ? J->gv + bi * m * dv : NULL;
  if (J->f32) /* the matrix's sums in the thread's scratch, rounded at the end */
    ga = J->ga32 ? s->sa : NULL, gb = J->gb32 ? s->sb : NULL, gv = J->gv32 ? s->sv : NULL;
  uint8_t *ma = J->ma ? J->ma + bi * n * K : NULL, *mb = J->mb ? J->mb + bi * K * m : NULL;
  uint8_t *mv = J->mv ? J->mv + bi * m * dv : NULL;
  if (ga) memset(ga, 0, (size_t)(n * K) * 8), memset(ma, 0, (size_t)(n * K));
  if (gb) memset(gb, 0, (size_t)(K * m) * 8), memset(mb, 0, (size_t)(K * m));
  if (gv) memset(gv, 0, (size_t)(m * dv) * 8), memset(mv, 0, (size_t)(m * dv));
  /* the union of the rows' valid keys, as the forward takes it */
  memset(s->ubuf, 0, (size_t)m);
  for (int64_t i = 0; i < (si == 0 ? (n > 0) : n); i++) {
    const uint8_t *mr = mq_attn_mask_row(J->mk + moff + i * si, sj, m, s->mbuf);
    for (int64_t j = 0; j < m; j++) s->ubuf[j] |= mr[j];
  }
  int64_t nv = 0;
  for (int64_t j = 0; j < m; j++) {
    s->cols[nv] = j;
    nv += s->ubuf[j] != 0;
  }
  if (!nv) return;
  const char *a = J->a + bi * n * K * es, *b = J->b + boff * es, *v = J->v + bi * m * dv * es;
  if (J->dt == MQ_DT_F32)
    gather_F32(J, s, (const float *)a, (const float *)b, (const float *)v, nv);
  else
    gather_F64(J, s, (const double *)a, (const double *)b, (const double *)v, nv);
  /* g as gz: float64, 0 where masked out (g itself in the rows the sums
   * read it from, whose entries are all valid) */
  const uint8_t *gm = J->gm ? J->gm + bi * n * dv : NULL;
  if (J->g32) {
    const float *g = J->g32 + bi * n * dv * J->gs;
    for (int64_t e = 0; e < n * dv; e++) s->gz[e] = !gm || gm[e] ? (double)g[e * J->gs] : 0;
  } else {
    const double *g = J->g + bi * n * dv;
    for (int64_t e = 0; e < n * dv; e++) s->gz[e] = !gm || gm[e] ? g[e] : 0;
  }
  const double *g = s->gz;
  memset(s->cnt, 0, (size_t)nv * sizeof *s->cnt);
  for (int64_t i = 0; i < n; i++) { /* the rows with every g entry valid */
    int64_t nd = 0;
    for (int64_t d = 0; d < dv; d++) nd += !gm || gm[i * dv + d];
    s->gfull[i] = nd == dv;
  }
  /* a key mask (the same row for every query): one list of valid keys */
  bool shared = si == 0;
  int64_t nk = 0;
  if (shared)
    nk = mq_attn_valid_keys(mq_attn_mask_row(J->mk + moff, sj, m, s->mbuf), s->cols, nv, s->ks);
  for (int64_t i0 = 0; i0 < n; i0 += 4) { /* four rows at a time where they allow */
    if (i0 % 256 == 0) {
      if (t == 0 && mq_interrupt_pending(J->S)) atomic_store(J->stop, true);
      if (atomic_load_explicit(J->stop, memory_order_relaxed)) return;
    }
    int64_t nr = n - i0 < 4 ? n - i0 : 4;
    sums4(J->cpu, (int)nr, s->xa + i0 * K, K, 1, NULL, K, s->kc, nv, s->acc, m, s->xt);
    bool full = nr == 4;
    for (int64_t r = 0; r < nr; r++) full &= s->gfull[i0 + r] != 0;
    if (full) /* dp of every union column: g's rows against v's union rows */
      sums4(J->cpu, 4, g + i0 * dv, dv, 1, NULL, dv, s->vt, nv, s->dp, m, s->xt);
    bool all = shared && nr == 4;
    for (int64_t r = 0; r < nr; r++) {
      int64_t i = i0 + r, nd = 0, *ks = shared ? s->ks : s->ks + m;
      const uint8_t *mr = mq_attn_mask_row(J->mk + moff + i * si, sj, m, s->mbuf);
      double *dsr = s->kx + i * nv, *pr = s->px + i * nv; /* row i of ds / c and p, 0 elsewhere */
      double *dp = s->dp + r * m, *ds = s->ds + r * m;
      memset(dsr, 0, (size_t)nv * sizeof *dsr);
      memset(pr, 0, (size_t)nv * sizeof *pr);
      if (!shared) nk = mq_attn_valid_keys(mr, s->cols, nv, ks);
      for (int64_t d = 0; d < dv; d++) {
        s->gd[nd] = d, s->gx[nd] = g[i * dv + d];
        nd += !gm || gm[i * dv + d];
      }
      s->reached[i] = nk && nd;
      all &= s->reached[i] != 0;
      if (!nk || !nd) continue; /* no p (a NaN row, masked out), or no gradient: nothing flows */
      if (J->dt == MQ_DT_F32) probs_F32(J, s, s->acc + r * m, ks, mr, nv, nk);
      else probs_F64(J, s, s->acc + r * m, ks, mr, nv, nk);
      if (!full) sums_on(J->cpu, s->gx, s->gd, nd, s->vt, nv, dp);
      double sum = 0;
      for (int64_t q = 0; q < nk; q++) sum += dp[ks[q]] * s->p[q];
      for (int64_t q = 0; q < nk; q++) ds[q] = s->p[q] * (dp[ks[q]] - sum);
      if (J->inv) /* x / c is x * (1 / c) to the bit when 1 / c is exact */
        for (int64_t q = 0; q < nk; q++) ds[q] *= J->inv;
      else
        for (int64_t q = 0; q < nk; q++) ds[q] /= J->c;
      for (int64_t q = 0; q < nk; q++) {
        int64_t jj = ks[q];
        dsr[jj] = ds[q], pr[jj] = s->p[q], s->cnt[jj]++;
      }
      if (ga && !(shared && nr == 4)) sums_on(J->cpu, ds, ks, nk, s->kr, K, ga + i * K);
      if (ga) memset(ma + i * K, 1, (size_t)K);
    }
    if (ga && shared && nr == 4) {
      if (all) {
        sums4(J->cpu, 4, s->ds, m, 1, s->ks, nk, s->kr, K, ga + i0 * K, K, s->xt);
      } else {
        for (int64_t r = 0; r < nr; r++)
          if (s->reached[i0 + r]) sums_on(J->cpu, s->ds + r * m, s->ks, nk, s->kr, K, ga + (i0 + r) * K);
      }
    }
  }
  /* a, g's valid entries and p finite: the partners of every term the
   * dense sums add as an exact 0 */
  if (all_finite(s->xa, n * K) && all_finite(s->gz, n * dv) && all_finite(s->px, n * nv))
    dense_keys(J, s, nv, gb, gv);
  else list_keys(J, s, nv, moff, gb, gv);
  for (int64_t jj = 0; jj < nv; jj++) { /* the masks: where a valid term reached */
    int64_t j = s->cols[jj];
    if (!s->cnt[jj]) continue;
    if (gb)
      for (int64_t k = 0; k < K; k++) mb[k * J->bk + j * J->bj] = 1;
    if (!gv) continue;
    int64_t i = 0; /* v's row j: valid where a row that reached it has g valid */
    while (i < n && !(s->reached[i] && s->gfull[i] && key_of(J, moff, i, j))) i++;
    if (i < n) {
      memset(mv + j * dv, 1, (size_t)dv);
      continue;
    }
    for (i = 0; i < n; i++)
      if (s->reached[i] && key_of(J, moff, i, j))
        for (int64_t d = 0; d < dv; d++) mv[j * dv + d] |= gm[i * dv + d];
  }
}

/* out[0, n) = x[0, n) rounded to float32 */
static void round32(float *out, const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = (float)x[i];
}

static void ab_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const ab_job *J = ctx;
  ab_scr s;
  carve(J, t, &s);
  int64_t n = J->n, K = J->K, m = J->m, dv = J->dv;
  for (int64_t bi = lo; bi < hi; bi++) {
    ab_matrix(J, &s, bi, t);
    if (!J->f32) continue;
    if (J->ga32) round32(J->ga32 + bi * n * K, s.sa, n * K);
    if (J->gb32) round32(J->gb32 + bi * K * m, s.sb, K * m);
    if (J->gv32) round32(J->gv32 + bi * m * dv, s.sv, m * dv);
  }
}

/* A new gradient of [t]'s shape with a mask, or NULL when t does not
 * require grad: float64 (*d), or float32 (*d32) when [f32]. */
static mq_tensor *grad_for(mq_state *S, mq_tensor *t, bool f32, double **d, float **d32,
                           uint8_t **mk) {
  *d = NULL, *d32 = NULL, *mk = NULL;
  if (!t->requires_grad) return NULL;
  mq_tensor *r = f32 ? mq_bw_gnew32(S, t->ndim, t->shape) : mq_ag_gnew(S, t->ndim, t->shape);
  *mk = mq_ag_new_mask(S, r);
  if (f32) *d32 = mq_bw_f(r);
  else *d = mq_bw_d(r);
  return r;
}

void mq_bw_attention(mq_state *S, mq_tensor *t, mq_tensor *g, mq_tensor **gin) {
  mq_gradnode *node = t->node;
  mq_tensor *a = node->in[0], *bt = node->in[1], *v = node->in[2], *m = node->in[3];
  mq_tensor *b = b_view(S, bt, node->op); /* bt itself, or (op) bt transposed */
  int nd = a->ndim, nb = nd - 2;
  int64_t sshape[MQ_MAX_DIMS], nbatch = 1;
  memcpy(sshape, a->shape, sizeof sshape[0] * (size_t)nd);
  sshape[nb + 1] = b->shape[nb + 1];
  for (int d = 0; d < nb; d++) nbatch *= a->shape[d];
  mq_dtype dt = (mq_dtype)a->dtype;
  atomic_bool stop;
  atomic_init(&stop, false);
  ab_job J = {.S = S, .stop = &stop, .dt = dt, .n = a->shape[nb], .K = a->shape[nb + 1], .m = b->shape[nb + 1],
              .dv = v->shape[nb + 1], .nb = nb, .cpu = S->cpu, .bshape = sshape,
              .c = dt == MQ_DT_F32 ? (double)(float)node->prm[0] : node->prm[0]};
  int ex;
  if (isfinite(J.c) && fabs(frexp(J.c, &ex)) == 0.5 && isnormal(1 / J.c)) J.inv = 1 / J.c;
  J.bk = node->op ? 1 : J.m, J.bj = node->op ? J.K : 1;
  /* float32 operands get float32 gradients: op by op's sums (in double)
   * rounded once, as a float32 sum's or mean's are (backward.h) */
  J.f32 = dt == MQ_DT_F32;
  mq_tensor *ga = grad_for(S, a, J.f32, &J.ga, &J.ga32, &J.ma);
  mq_tensor *gb = grad_for(S, bt, J.f32, &J.gb, &J.gb32, &J.mb);
  mq_tensor *gv = grad_for(S, v, J.f32, &J.gv, &J.gv32, &J.mv);
  mq_tensor *mx = mq_expand(S, m, nd, sshape);
  a = mq_contiguous(S, a), v = mq_contiguous(S, v);
  J.a = mq_tensor_data(a), J.v = mq_tensor_data(v), J.b = mq_tensor_data(b), J.bst = b->strides;
  J.mk = mq_tensor_data(mx), J.mst = mx->strides;
  if (g->dtype == MQ_DT_F32) J.g32 = mq_bw_f(g), J.gs = mq_bw_gstride(g);
  else J.g = mq_bw_d(g);
  J.gm = mq_ag_maskp(S, g);
  if (nbatch > 0 && J.n > 0) {
    int64_t work = INT64_MAX, per = 1;
    if (!mq_mul_ok(J.n, J.m, &per) || !mq_mul_ok(per, J.K + J.dv, &per) ||
        !mq_mul_ok(per, nbatch, &work))
      work = INT64_MAX;
    int nt = mq_parallel_threads_for(S, work);
    if (nt > nbatch) nt = (int)nbatch;
    ab_scr s;
    (void)mq_ck_zmul(S, mq_ck_zmul(S, (size_t)J.m, (size_t)J.n, "attention scratch"), 64,
                     "attention scratch"); /* the largest items: a few of m * n doubles */
    J.scr_bytes = carve(&J, 0, &s);
    J.scr = mq_scratch(S, mq_ck_zmul(S, J.scr_bytes, (size_t)nt, "attention scratch"));
    mq_parallel_for(S, nt, nbatch, 1, ab_range, &J);
  } else { /* nothing reached any entry */
    mq_tensor *r[3] = {ga, gb, gv};
    uint8_t *rm[3] = {J.ma, J.mb, J.mv};
    for (int i = 0; i < 3; i++)
      if (r[i]) memset(mq_tensor_data(r[i]), 0, (size_t)r[i]->numel * mq_dtype_size((mq_dtype)r[i]->dtype)),
            memset(rm[i], 0, (size_t)r[i]->numel);
  }
  gin[0] = ga, gin[1] = gb, gin[2] = gv;
}
