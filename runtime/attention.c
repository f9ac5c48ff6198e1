/* attention.c - softmax(masked(a @ b / c, m), -1) @ v over valid keys only
 * (see attention.h).
 *
 * Op by op, a @ b computes every score, masked keys included, and writes
 * them all; the division, softmax and the second product then read and
 * write full-size temporaries. Here the rows of a batch matrix are taken
 * a chunk at a time: the columns of b that some row of the chunk has
 * valid (the union of their mask rows: a padded key is in none) are
 * gathered once into a small contiguous block, and each row then
 *
 *   - sums its scores over those columns only, each one the same float64
 *     sum of the same products in the same k order as matmul.c's kernel
 *     (one term after the other; see dot), rounded to T, divided by
 *     c rounded to T, as binary.c does;
 *   - takes softmax.c's row max (the same kernel, reading the row with
 *     its mask), exp of its valid entries (op by op the masked-out ones
 *     are computed, then zeroed), softmax.c's row sum over the whole row,
 *     zeros included, and the same reciprocal and product;
 *   - adds p[j] * v[j, :] over its valid keys in order, as matmul.c does
 *     for a masked left operand.
 *
 * b's union columns and v's rows are widened to float64 once per chunk,
 * so the inner loops are multiply-adds of float64 rows (fma where the CPU
 * has it, for float32 operands: bitwise the same, see dot).
 *
 * A row with no valid key is NaN op by op after softmax and its product
 * row is 0, masked out: here it is written as that 0, masked out. Rows are
 * independent and computed the same way whoever computes them, so the
 * threads share them out and every result is bitwise the op-by-op one. */
#include "attention.h"

#include "../core/checked.h"
#include "kernels.h"
#include "parallel.h"
#include "shape.h"
#include "vexp.h"

typedef struct at_job {
  mq_dtype dt;
  int64_t n, K, m, dv; /* a: [n, K], b: [K, m], v: [m, dv] per batch matrix */
  int64_t rb;          /* rows per block: min(AT_RB, n) */
  int nb;              /* batch dims */
  const int64_t *bshape;
  const char *a, *v;   /* contiguous */
  const char *b;       /* any strides: bst over all its dims */
  const int64_t *bst;
  const uint8_t *mk;   /* the mask expanded to the scores' shape: mst */
  const int64_t *mst;
  char *o;             /* [.., n, dv] */
  uint8_t *om;
  double c;            /* the divisor, already rounded to T */
  bool fma;            /* the CPU has FMA (used for float32 only: see dot) */
  bool avx512;         /* and AVX-512F: 64 sums at a time (fma64) */
  char *scr;           /* per thread: scr_bytes */
  size_t scr_bytes;
} at_job;

/* Rows whose scores are computed together: b's union columns are read in
 * blocks that stay in L1 across them (scores_fma). A matrix of fewer rows
 * takes that many (J->rb), so the blocks stay proportional to the
 * scores op by op would store. */
#define AT_RB 64

/* Per-thread scratch, carved in this order (8-byte items first). */
typedef struct at_scr {
  int64_t *cols, *ks; /* m: the chunk's union of valid columns; rb * m: each row's
                         valid keys in it */
  double *acc, *p, *cv, *xa; /* rb * m: scores, probabilities; rb * dv: output rows;
                                rb * K: rows of a, all in float64 */
  double *kc, *vd;    /* K * m: b's union columns; m * dv: v's union rows, in float64 */
  void *srow, *prow; /* m T each */
  uint8_t *mbuf, *ubuf;   /* m each: a gathered mask row; the union */
} at_scr;

static at_scr carve(const at_job *J, int t) {
  at_scr s;
  size_t es = mq_dtype_size(J->dt), m = (size_t)J->m;
  char *p = J->scr + (size_t)t * J->scr_bytes;
  s.cols = (int64_t *)p, p += m * 8;
  size_t rb = (size_t)J->rb;
  s.ks = (int64_t *)p, p += rb * m * 8;
  s.acc = (double *)p, p += rb * m * 8;
  s.p = (double *)p, p += rb * m * 8;
  s.cv = (double *)p, p += rb * (size_t)J->dv * 8;
  s.xa = (double *)p, p += rb * (size_t)J->K * 8;
  s.kc = (double *)p, p += (size_t)J->K * m * 8;
  s.vd = (double *)p, p += m * (size_t)J->dv * 8;
  s.srow = p, p += m * es;
  s.prow = p, p += m * es;
  s.mbuf = (uint8_t *)p, p += m;
  s.ubuf = (uint8_t *)p;
  return s;
}

/* The bytes of a row's mask at [mr] (stride [sj]) as a contiguous row. */
static const uint8_t *mask_row(const uint8_t *mr, int64_t sj, int64_t m, uint8_t *buf) {
  if (sj == 1) return mr;
  for (int64_t j = 0; j < m; j++) buf[j] = mr[j * sj];
  return buf;
}

/* t + x * y, rounded once: for float32 operands widened to float64 the
 * product is exact (24 + 24 bits), so fma gives the bits of a multiply
 * then an add, as matmul.c computes them; float64 has no such luck and
 * always takes the two operations. */
/* out[j] = sum over t < n of x[t] * row(t)[j], j < w, where row(t) is
 * rows + r * w with r = ks[t] (ks NULL: r = t): a row of a against b's
 * union columns (kc, rows in k order), or p against v's rows (vd, the
 * row's valid keys in order). float64 sums of exact products (float32
 * operands) or of rounded ones (float64), term after term in t order, as
 * matmul.c adds them. The plain version takes four terms per load of the
 * accumulator; the FMA one keeps 32 sums in registers across all the
 * terms. For float32 operands widened to float64 the product is exact
 * (24 + 24 bits), so fma rounds once where a multiply then an add rounds
 * twice, the first time not at all: the same bits. */
#define ROW(t) (rows + (ks ? ks[t] : (t)) * w)
MQ_WIDE static void dot(const double *x, const int64_t *ks, int64_t n, const double *rows,
                        int64_t w, double *out) {
  for (int64_t j = 0; j < w; j++) out[j] = 0;
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) {
    double x0 = x[t], x1 = x[t + 1], x2 = x[t + 2], x3 = x[t + 3];
    const double *r0 = ROW(t), *r1 = ROW(t + 1), *r2 = ROW(t + 2), *r3 = ROW(t + 3);
    for (int64_t j = 0; j < w; j++) {
      double u = out[j];
      u += x0 * r0[j];
      u += x1 * r1[j];
      u += x2 * r2[j];
      u += x3 * r3[j];
      out[j] = u;
    }
  }
  for (; t < n; t++) {
    const double *r = ROW(t);
    for (int64_t j = 0; j < w; j++) out[j] += x[t] * r[j];
  }
}

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#include <immintrin.h>
#define AT_FMA 1

/* The same sums by fma (dot_fma): blocks of 32 in eight registers (enough
 * independent chains to keep both FMA units busy), the last block
 * overlapping the one before (its sums computed twice, the same way);
 * narrower rows four sums at a time, then one. */
#define FMA_FN __attribute__((target("avx2,fma")))
#define FMA512_FN __attribute__((target("avx512f")))

/* out[j .. j + 8 L) of dot_fma in eight registers of L doubles (VT, the
 * intrinsics' prefix P): fma32 with AVX2, fma64 with AVX-512 where the
 * CPU has it (the same fma on each lane: the same bits). */
#define AT_CAT_(a, b) a##b
#define AT_CAT(a, b) AT_CAT_(a, b)
#define V(f) AT_CAT(P, f) /* P expanded first: _mm256_fmadd_pd, _mm512_fmadd_pd */
#define FMA8(u, x, r, i) u##i = V(_fmadd_pd)(x, V(_loadu_pd)((r) + L * i), u##i)
#define DEF_FMA_BLOCK(NAME, ATTR)                                              \
  ATTR static inline void NAME(const double *x, const int64_t *ks, int64_t n, \
                               const double *rows, int64_t w, int64_t j, double *out) { \
    VT u0 = V(_setzero_pd)(), u1 = u0, u2 = u0, u3 = u0, u4 = u0, u5 = u0, u6 = u0, u7 = u0; \
    for (int64_t t = 0; t < n; t++) {                                          \
      VT xv = V(_set1_pd)(x[t]);                                               \
      const double *r = ROW(t) + j;                                            \
      FMA8(u, xv, r, 0), FMA8(u, xv, r, 1), FMA8(u, xv, r, 2), FMA8(u, xv, r, 3); \
      FMA8(u, xv, r, 4), FMA8(u, xv, r, 5), FMA8(u, xv, r, 6), FMA8(u, xv, r, 7); \
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
DEF_FMA_BLOCK(fma32, FMA_FN)
#undef VT
#undef P
#undef L
#define VT __m512d
#define P _mm512
#define L 8
DEF_FMA_BLOCK(fma64, FMA512_FN)
#undef VT
#undef P
#undef L
#undef V

/* Rows of x [nr, n] (row i: keys ks[i] or, ks NULL, all n; nk[i] of
 * them, none skipped when nk is NULL) against rows [.., w] into out
 * [nr, w], for w >= 64: blocks of 64 columns outer (the last overlapping
 * the one before), so a block of rows stays in L1 while every row reads it. */
FMA512_FN static void blocks512(const double *x, int64_t xs, const int64_t *const *ks,
                                const int64_t *nk, int64_t n, int64_t nr, const double *rows,
                                int64_t w, double *out) {
  for (int64_t j = 0;; j += 64) {
    if (j + 64 > w) j = w - 64;
    for (int64_t i = 0; i < nr; i++) {
      int64_t ni = nk ? nk[i] : n;
      if (ni) fma64(x + i * xs, ks ? ks[i] : NULL, ni, rows, w, j, out + i * w);
    }
    if (j + 64 == w) return;
  }
}

FMA_FN static void dot_fma(const double *x, const int64_t *ks, int64_t n, const double *rows,
                           int64_t w, double *out) {
  int64_t j = 0;
  for (; w >= 32; j += 32) {
    if (j + 32 > w) j = w - 32;
    fma32(x, ks, n, rows, w, j, out);
    if (j + 32 == w) return;
  }
  for (; j + 4 <= w; j += 4) {
    __m256d u0 = _mm256_setzero_pd();
    for (int64_t t = 0; t < n; t++) u0 = _mm256_fmadd_pd(_mm256_set1_pd(x[t]), _mm256_loadu_pd(ROW(t) + j), u0);
    _mm256_storeu_pd(out + j, u0);
  }
  for (; j < w; j++) {
    double u = 0;
    for (int64_t t = 0; t < n; t++) u = __builtin_fma(x[t], ROW(t)[j], u);
    out[j] = u;
  }
}

/* dot_fma for nr rows of x [nr, K] against the same rows kc [K, w]: blocks
 * of 32 columns outer, so that a block of kc (K * 32 doubles) stays in L1
 * while every row reads it; each sum is the one dot_fma makes. */
FMA_FN static void scores_fma(const double *x, int64_t nr, int64_t K, const double *kc, int64_t w,
                              double *out, bool z) {
  if (z && w >= 64) {
    blocks512(x, K, NULL, NULL, K, nr, kc, w, out);
    return;
  }
  if (w < 32) {
    for (int64_t i = 0; i < nr; i++) dot_fma(x + i * K, NULL, K, kc, w, out + i * w);
    return;
  }
  for (int64_t j = 0;; j += 32) {
    if (j + 32 > w) j = w - 32;
    for (int64_t i = 0; i < nr; i++) fma32(x + i * K, NULL, K, kc, w, j, out + i * w);
    if (j + 32 == w) return;
  }
}
#endif
#undef ROW

/* The valid keys of mask row mr [m] as indices into the union columns
 * cols [nv], in ks; returns how many. */
static int64_t valid_keys(const uint8_t *mr, const int64_t *cols, int64_t nv, int64_t *ks) {
  int64_t nk = 0;
  for (int64_t jj = 0; jj < nv; jj++) {
    ks[nk] = jj;
    nk += mr[cols[jj]] != 0;
  }
  return nk;
}

/* The softmax of one row from its scores acc [nv] (before the division)
 * over the union columns cols, its mask mr [m] and its nk valid keys ks
 * (union indices; nk > 0): their probabilities, in float64, in p. */
#define DEF_ATTN_ROW(NAME, T, EXP, ROWMAX, ROWSUM)                             \
  static void NAME(const at_job *J, const at_scr *s, const double *acc, const uint8_t *mr, \
                   int64_t nv, const int64_t *ks, int64_t nk, double *p) {     \
    int64_t m = J->m;                                                          \
    const int64_t *cols = s->cols;                                             \
    T *srow = s->srow, *prow = s->prow, *tmp = s->prow, c = (T)J->c;           \
    for (int64_t jj = 0; jj < nv; jj++) tmp[jj] = (T)acc[jj] / c; /* vectorizes */ \
    if (nv == m) { /* every column: cols is the identity */                    \
      memcpy(srow, tmp, (size_t)m * sizeof(T));                                \
    } else {                                                                   \
      memset(srow, 0, (size_t)m * sizeof(T)); /* masked-out: never read */    \
      for (int64_t jj = 0; jj < nv; jj++) srow[cols[jj]] = tmp[jj];            \
    }                                                                          \
    T mx = ROWMAX(srow, mr, m);                                                \
    memset(prow, 0, (size_t)m * sizeof(T));                                    \
    for (int64_t q = 0; q < nk; q++) {                                         \
      int64_t j = cols[ks[q]];                                                 \
      prow[j] = EXP(srow[j] - mx);                                             \
    }                                                                          \
    T inv = (T)(1.0 / ROWSUM(prow, NULL, m));                                  \
    for (int64_t q = 0; q < nk; q++) p[q] = (double)(prow[cols[ks[q]]] * inv); \
  }
DEF_ATTN_ROW(softmax_F32, float, mq_vexpf, mq_kernel_rowmax_f32, mq_kernel_rowsum_f32)
DEF_ATTN_ROW(softmax_F64, double, exp, mq_kernel_rowmax_f64, mq_kernel_rowsum_f64)

/* The products p @ v of nr rows (row i: nk[i] keys ks[i], weights
 * p + i * m) against v's union rows vd [nv, dv] into cv [nr, dv]; a row
 * with no key gets 0. With fma (float32), blocks of 32 columns outer, so a
 * block of vd stays in L1 while every row reads it. */
static void products(const at_job *J, const at_scr *s, int64_t nr, const int64_t *nk,
                     const int64_t *const *ks) {
  int64_t m = J->m, dv = J->dv;
#ifdef AT_FMA
  if (J->avx512 && J->dt == MQ_DT_F32 && dv >= 64) {
    blocks512(s->p, m, ks, nk, 0, nr, s->vd, dv, s->cv);
    return;
  }
  if (J->fma && J->dt == MQ_DT_F32 && dv >= 32) {
    for (int64_t j = 0;; j += 32) {
      if (j + 32 > dv) j = dv - 32;
      for (int64_t i = 0; i < nr; i++)
        if (nk[i]) fma32(s->p + i * m, ks[i], nk[i], s->vd, dv, j, s->cv + i * dv);
      if (j + 32 == dv) break;
    }
    return;
  }
#endif
  for (int64_t i = 0; i < nr; i++) {
    if (!nk[i]) continue;
#ifdef AT_FMA
    if (J->fma && J->dt == MQ_DT_F32) {
      dot_fma(s->p + i * m, ks[i], nk[i], s->vd, dv, s->cv + i * dv);
      continue;
    }
#endif
    dot(s->p + i * m, ks[i], nk[i], s->vd, dv, s->cv + i * dv);
  }
}

/* b's columns [cols] (nv of them) of the batch matrix at [b] into kc
 * [K, nv], and v's rows [cols] of the matrix at [v] into vd [nv, dv], as
 * float64 (exact): done once per chunk, read by every row of it. */
#define DEF_GATHER(E, T)                                                       \
  static void gather_##E(const at_job *J, const T *b, const T *v, const int64_t *cols, \
                         int64_t nv, double *kc, double *vd) {                 \
    int64_t K = J->K, dv = J->dv, sk = J->bst[J->nb], sj = J->bst[J->nb + 1]; \
    for (int64_t k = 0; k < K; k++)                                            \
      for (int64_t jj = 0; jj < nv; jj++) kc[k * nv + jj] = (double)b[k * sk + cols[jj] * sj]; \
    for (int64_t jj = 0; jj < nv; jj++)                                        \
      for (int64_t d = 0; d < dv; d++) vd[jj * dv + d] = (double)v[cols[jj] * dv + d]; \
  }
DEF_GATHER(F32, float)
DEF_GATHER(F64, double)

/* The scores of nr rows of a (xa, float64) against b's nv union columns
 * (kc) into acc [nr, nv]. */
static void scores(const at_job *J, const at_scr *s, int64_t nr, int64_t nv) {
  int64_t K = J->K;
#ifdef AT_FMA
  if (J->fma && J->dt == MQ_DT_F32) { /* float32 only: see dot */
    scores_fma(s->xa, nr, K, s->kc, nv, s->acc, J->avx512);
    return;
  }
#endif
  for (int64_t i = 0; i < nr; i++) dot(s->xa + i * K, NULL, K, s->kc, nv, s->acc + i * nv);
}

static void at_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const at_job *J = ctx;
  at_scr s = carve(J, t);
  int64_t n = J->n, K = J->K, m = J->m, dv = J->dv, es = (int64_t)mq_dtype_size(J->dt);
  int64_t si = J->mst[J->nb], sj = J->mst[J->nb + 1];
  for (int64_t q = lo; q < hi;) {
    int64_t bi = q / n, i0 = q % n, i1 = n - i0 < hi - q ? n : i0 + (hi - q);
    int64_t boff = 0, moff = 0, rest = bi; /* element offsets of batch bi */
    for (int d = J->nb - 1; d >= 0; d--) {
      int64_t k = rest % J->bshape[d];
      rest /= J->bshape[d];
      boff += k * J->bst[d];
      moff += k * J->mst[d];
    }
    /* the columns some row of the chunk has valid (one row when the mask
     * is the same for every row, as a key mask is) */
    memset(s.ubuf, 0, (size_t)m);
    for (int64_t i = i0; i < (si == 0 ? i0 + 1 : i1); i++) {
      const uint8_t *mr = mask_row(J->mk + moff + i * si, sj, m, s.mbuf);
      for (int64_t j = 0; j < m; j++) s.ubuf[j] |= mr[j];
    }
    int64_t nv = 0;
    for (int64_t j = 0; j < m; j++) {
      s.cols[nv] = j;
      nv += s.ubuf[j] != 0;
    }
    const char *b = J->b + boff * es, *v = J->v + bi * m * dv * es;
    if (J->dt == MQ_DT_F32) gather_F32(J, (const float *)b, (const float *)v, s.cols, nv, s.kc, s.vd);
    else gather_F64(J, (const double *)b, (const double *)v, s.cols, nv, s.kc, s.vd);
    for (int64_t r0 = i0; r0 < i1; r0 += J->rb) {
      int64_t nr = i1 - r0 < J->rb ? i1 - r0 : J->rb;
      const char *a = J->a + (bi * n + r0) * K * es;
      if (J->dt == MQ_DT_F32)
        for (int64_t e = 0; e < nr * K; e++) s.xa[e] = (double)((const float *)a)[e];
      else
        memcpy(s.xa, a, (size_t)(nr * K) * sizeof(double));
      scores(J, &s, nr, nv);
      int64_t nk[AT_RB];
      const int64_t *ks[AT_RB];
      for (int64_t i = 0; i < nr; i++) {
        const uint8_t *mr = mask_row(J->mk + moff + (r0 + i) * si, sj, m, s.mbuf);
        if (si == 0 && i > 0) { /* the same mask row as the row before */
          nk[i] = nk[0], ks[i] = ks[0];
        } else {
          ks[i] = s.ks + i * m;
          nk[i] = valid_keys(mr, s.cols, nv, s.ks + i * m);
        }
        if (!nk[i]) continue; /* op by op: a NaN row of p, whose product is 0 */
        const double *acc = s.acc + i * nv;
        if (J->dt == MQ_DT_F64) softmax_F64(J, &s, acc, mr, nv, ks[i], nk[i], s.p + i * m);
        else softmax_F32(J, &s, acc, mr, nv, ks[i], nk[i], s.p + i * m);
      }
      products(J, &s, nr, nk, ks);
      for (int64_t i = 0; i < nr; i++) {
        int64_t r = bi * n + r0 + i;
        const double *cv = s.cv + i * dv;
        memset(J->om + r * dv, nk[i] != 0, (size_t)dv);
        if (J->dt == MQ_DT_F64) {
          double *o = (double *)J->o + r * dv;
          for (int64_t d = 0; d < dv; d++) o[d] = nk[i] ? cv[d] : 0;
        } else {
          float *o = (float *)J->o + r * dv;
          for (int64_t d = 0; d < dv; d++) o[d] = nk[i] ? (float)cv[d] : 0;
        }
      }
    }
    q += i1 - i0;
  }
}

/* A plain float tensor of at least 2 dims, outside autograd. */
static bool plain_operand(const mq_tensor *t) {
  return t->layout == 0 && !t->mask && t->ndim >= 2 && !t->requires_grad && !t->node &&
         (t->dtype == MQ_DT_F32 || t->dtype == MQ_DT_F64);
}

mq_tensor *mq_attention(mq_state *S, mq_tensor *a, mq_tensor *b, mq_value c, mq_tensor *m,
                        mq_tensor *v) {
  if (!plain_operand(a) || !plain_operand(b) || !plain_operand(v) || b->dtype != a->dtype ||
      v->dtype != a->dtype || b->ndim != a->ndim || v->ndim != a->ndim)
    return NULL;
  if ((c.type != MQ_INT && c.type != MQ_FLOAT) || m->layout != 0 || m->mask || m->dtype != MQ_DT_BOOL || m->ndim > a->ndim)
    return NULL;
  int nd = a->ndim, nb = nd - 2;
  for (int d = 0; d < nb; d++)
    if (b->shape[d] != a->shape[d] || v->shape[d] != a->shape[d]) return NULL;
  int64_t n = a->shape[nb], K = a->shape[nb + 1], mm = b->shape[nb + 1], dv = v->shape[nb + 1];
  if (b->shape[nb] != K || v->shape[nb] != mm) return NULL;
  int64_t sshape[MQ_MAX_DIMS];
  memcpy(sshape, a->shape, sizeof sshape[0] * (size_t)nb);
  sshape[nb] = n, sshape[nb + 1] = mm;
  for (int d = 0; d < m->ndim; d++) { /* m broadcasts to the scores' shape */
    int64_t ms = m->shape[d], ss = sshape[nd - m->ndim + d];
    if (ms != ss && ms != 1) return NULL;
  }
  mq_dtype dt = (mq_dtype)a->dtype;
  /* the divisor as binary.c rounds a number for a tensor of dtype dt */
  double cd = c.type == MQ_INT ? (double)c.as.i : c.as.f;
  if (c.type == MQ_INT && (c.as.i > (1 << 24) || c.as.i < -(1 << 24))) return NULL;
  if (dt == MQ_DT_F32) cd = (double)(float)cd;

  a = mq_contiguous(S, a);
  v = mq_contiguous(S, v);
  mq_tensor *mx = mq_expand(S, m, nd, sshape);
  int64_t oshape[MQ_MAX_DIMS];
  memcpy(oshape, sshape, sizeof oshape[0] * (size_t)nd);
  oshape[nb + 1] = dv;
  mq_tensor *out = mq_tensor_new(S, dt, nd, oshape);
  mq_tensor *om = mq_tensor_new(S, MQ_DT_BOOL, nd, oshape);
  int64_t rows = dv > 0 ? out->numel / dv : 0;
  if (rows > 0) {
    size_t es = mq_dtype_size(dt), z = (size_t)mm;
    /* per thread: 3 rb + 1 int64/double rows of m, rb * (K + dv)
     * doubles, K * m and m * dv doubles, 2 m of T, 2 m bytes: each a few
     * times an operand's size */
    int64_t rb = n < AT_RB ? n : AT_RB;
    size_t per = z * ((size_t)(3 * rb + 1) * 8 + 2 * es + 2) + (size_t)(rb * (K + dv)) * 8 +
                 mq_ck_zmul(S, mq_ck_zmul(S, (size_t)(K + dv), z, "attention scratch"), 8,
                            "attention scratch");
    per = (per + 63) & ~(size_t)63;
    int64_t per_row = 1, work = INT64_MAX;
    if (!mq_mul_ok(K + dv, mm, &per_row) || per_row < 1) per_row = 1;
    if (!mq_mul_ok(rows, per_row, &work)) work = INT64_MAX;
    int nt = mq_parallel_threads_for(S, work);
    at_job J = {.dt = dt, .n = n, .rb = rb, .K = K, .m = mm, .dv = dv, .nb = nb, .bshape = sshape,
                .a = mq_tensor_data(a), .v = mq_tensor_data(v), .b = mq_tensor_data(b),
                .bst = b->strides, .mk = mq_tensor_data(mx), .mst = mx->strides,
                .o = mq_tensor_data(out), .om = mq_tensor_data(om), .c = cd,
                .scr = mq_scratch(S, mq_ck_zmul(S, per, (size_t)nt, "attention scratch")),
                .scr_bytes = per};
#ifdef AT_FMA
    J.fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    J.avx512 = J.fma && __builtin_cpu_supports("avx512f");
#endif
    /* chunks of a matrix's rows (at least 32, at least 4 chunks per
     * thread): a chunk gathers its matrix's valid columns once */
    int64_t grain = rows / (4 * nt) < n ? rows / (4 * nt) : n;
    if (grain < 32) grain = 32;
    mq_parallel_for(S, nt, rows, grain, at_range, &J);
  }
  mq_tensor_set_mask(S, out, om);
  return out;
}
