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
 * has it, for float32 operands: bitwise the same, see dot), in register
 * tiles of several rows (attention_tile.c) on the AVX2 and AVX-512 paths
 * (S->cpu: set_cpu_path picks one, so a test compares them).
 *
 * A row with no valid key is NaN op by op after softmax and its product
 * row is 0, masked out: here it is written as that 0, masked out. Rows are
 * independent and computed the same way whoever computes them, so the
 * threads share them out and every result is bitwise the op-by-op one. */
#include "attention.h"

#include "../../core/checked.h"
#include "attention_tile.h"
#include "../tensor/internal.h"
#include "../kernels/ops.h"
#include "../tensor/parallel.h"
#include "../kernels/reduce.h"
#include "../tensor/shape.h"
#include "../kernels/vexp.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__PIC__)
/* float64: one call per valid score, through the GOT, not a PLT stub (a
 * jump less); float32 has its own exp (vexp.h). */
extern double exp(double) __attribute__((noplt));
#endif

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
  double rc;           /* 1 / c when that is exact in T (cmul): see exact_recip */
  bool cmul;
  int tile;            /* the CPU path of mq_tile_sums (float32 only: see dot), or -1:
                          dot */
  int cpu;             /* S->cpu: the path of the float32 row sums */
  char *scr;           /* per thread: scr_bytes */
  size_t scr_bytes;
} at_job;

/* Rows whose scores are computed together: b's union columns are read in
 * blocks that stay in L1 across them (mq_tile_sums). A matrix of fewer rows
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

/* out[j] = sum over t < n of x[t] * row(t)[j], j < w, where row(t) is
 * rows + r * w with r = ks[t] (ks NULL: r = t): a row of a against b's
 * union columns (kc, rows in k order), or p against v's rows (vd, the
 * row's valid keys in order). float64 sums of exact products (float32
 * operands) or of rounded ones (float64), term after term in t order, as
 * matmul.c adds them, four terms per load of the accumulator: the
 * portable path, and float64's (its products are rounded, so no fma). For
 * float32 operands widened to float64 the product is exact (24 + 24
 * bits), so the fma of mq_tile_sums rounds once where a multiply then an
 * add rounds twice, the first time not at all: the same bits. */
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

#undef ROW

/* The scores acc [n] divided by c into srow (or multiplied by rc, when
 * that is the same: exact_recip), and their max (n > 0), as softmax.c's
 * row max gives it: the max of the values whatever the grouping,
 * canonical NaN if any is NaN (its kernel's NaN); only the sign of a zero
 * max could differ, and no difference srow[j] - mx shows it. Sixteen
 * lanes, so the compare-and-select vectorizes. */
#define ROWMAX_LOOP(T, OP, c)                                                  \
  do {                                                                         \
    for (; j + 16 <= n; j += 16)                                               \
      for (int l = 0; l < 16; l++) {                                           \
        T v = (T)acc[j + l] OP c;                                              \
        srow[j + l] = v;                                                       \
        r[l] = v > r[l] ? v : r[l];                                            \
        nan |= v != v;                                                         \
      }                                                                        \
    for (int l = 0; j < n; j++, l++) {                                         \
      T v = (T)acc[j] OP c;                                                    \
      srow[j] = v;                                                             \
      r[l] = v > r[l] ? v : r[l];                                              \
      nan |= v != v;                                                           \
    }                                                                          \
  } while (0)
#define DEF_ROWMAX(E, T)                                                       \
  MQ_WIDE static T rowmax_##E(const at_job *J, const double *acc, int64_t n, T *srow) { \
    T r[16];                                                                   \
    int nan = 0;                                                               \
    for (int l = 0; l < 16; l++) r[l] = (T)-INFINITY;                          \
    int64_t j = 0;                                                             \
    if (J->cmul) ROWMAX_LOOP(T, *, (T)J->rc);                                  \
    else ROWMAX_LOOP(T, /, (T)J->c);                                           \
    T mx = r[0];                                                               \
    for (int l = 1; l < 16; l++) mx = r[l] > mx ? r[l] : mx;                   \
    return nan ? (T)NAN : mx;                                                  \
  }
DEF_ROWMAX(F32, float)
DEF_ROWMAX(F64, double)
/* float32 on the AVX-512 path: the same in its registers (attention_tile.c) */
static float rowmax_wide_F32(const at_job *J, const double *acc, int64_t n, float *srow) {
  float mx;
  if (mq_tile_divmax_f32(J->cpu, acc, (float)(J->cmul ? J->rc : J->c), J->cmul, n, srow, &mx))
    return mx;
  return rowmax_F32(J, acc, n, srow);
}
#define rowmax_wide_F64 rowmax_F64

/* The softmax of one row from its scores acc [nv] (before the division)
 * over the union columns cols, its mask mr [m] and its nk valid keys ks
 * (union indices; NULL: all nv; nk > 0): their probabilities, in float64,
 * in p. The row is laid out over [0, m) as op by op has it (zeros where
 * masked out) but read only up to just after its last valid key, hi: the
 * max is the max of the valid entries however they are grouped (any NaN
 * gives NaN; grouping could only pick the sign of a zero max, which no
 * difference srow[j] - mx shows), and the sum's lanes (entry i into lane
 * i % 16, in one piece when m <= MQ_RED_PIECE) would only add exact zeros
 * beyond hi. [dense]: the row's valid keys are the union's and the union
 * is columns [0, nv) (a key mask of a padded batch), so the row is
 * contiguous: nothing scattered, nothing masked in [0, nv); prow beyond nv
 * stays 0 from the chunk's start. */
#define DEF_ATTN_ROW(NAME, T, EXP, EXPROW, ROWMAX, MAXM, ROWSUM)                     \
  MQ_WIDE static void NAME(const at_job *J, const at_scr *s, const double *acc, \
                           const uint8_t *mr, int64_t nv, const int64_t *ks, int64_t nk, \
                           bool dense, double *p) {                            \
    int64_t m = J->m;                                                          \
    const int64_t *cols = s->cols;                                             \
    T *srow = s->srow, *prow = s->prow;                                        \
    if (dense) { /* the max as the scores are divided: see rowmax */         \
      T mx = ROWMAX(J, acc, nv, srow);                                         \
      EXPROW(J, prow, srow, mx, nv);                                           \
      T inv = (T)(1.0 / ROWSUM(J, prow, m <= MQ_RED_PIECE ? nv : m));          \
      for (int64_t j = 0; j < nv; j++) p[j] = (double)(prow[j] * inv);         \
      return;                                                                  \
    }                                                                          \
    T *tmp = prow;                                                             \
    if (J->cmul)                                                               \
      for (int64_t jj = 0; jj < nv; jj++) tmp[jj] = (T)acc[jj] * (T)J->rc;     \
    else                                                                       \
      for (int64_t jj = 0; jj < nv; jj++) tmp[jj] = (T)acc[jj] / (T)J->c;      \
    memset(srow, 0, (size_t)m * sizeof(T)); /* masked out: never used */       \
    for (int64_t jj = 0; jj < nv; jj++) srow[cols[jj]] = tmp[jj];              \
    int64_t hi = cols[ks ? ks[nk - 1] : nk - 1] + 1;                           \
    T mx = MAXM(srow, mr, hi);                                                 \
    memset(prow, 0, (size_t)m * sizeof(T));                                    \
    for (int64_t q = 0; q < nk; q++) {                                         \
      int64_t j = cols[ks ? ks[q] : q];                                        \
      prow[j] = EXP(srow[j] - mx);                                             \
    }                                                                          \
    T inv = (T)(1.0 / ROWSUM(J, prow, m <= MQ_RED_PIECE ? hi : m));            \
    for (int64_t q = 0; q < nk; q++) p[q] = (double)(prow[cols[ks ? ks[q] : q]] * inv); \
  }
#define SUM_F32(J, x, n) mq_kernel_rowsum_cnt_f32((J)->cpu, x, NULL, n, NULL)
#define SUM_F64(J, x, n) mq_kernel_rowsum_f64(x, NULL, n)
#define EXPROW_F32(J, o, x, c, n) mq_vexpf_rows((J)->cpu, o, x, c, n)
#define EXPROW_F64(J, o, x, c, n)                                              \
  for (int64_t j_ = 0; j_ < (n); j_++) (o)[j_] = exp((x)[j_] - (c))
DEF_ATTN_ROW(softmax_F32, float, mq_vexpf, EXPROW_F32, rowmax_wide_F32, mq_kernel_rowmax_f32, SUM_F32)
DEF_ATTN_ROW(softmax_F64, double, exp, EXPROW_F64, rowmax_wide_F64, mq_kernel_rowmax_f64, SUM_F64)

/* The products p @ v of nr rows (row i: nk[i] keys ks[i], weights
 * p + i * m) against v's union rows vd [nv, dv] into cv [nr, dv]; a row
 * with no key gets 0. Consecutive rows with the same keys (all of them,
 * under a key mask) go to mq_tile_sums together; ks NULL is every union
 * row in order. */
static void products(const at_job *J, const at_scr *s, int64_t nr, const int64_t *nk,
                     const int64_t *const *ks) {
  int64_t m = J->m, dv = J->dv;
  for (int64_t i = 0, e; i < nr; i = e) {
    for (e = i + 1; e < nr && ks[e] == ks[i] && nk[e] == nk[i];) e++;
    if (!nk[i]) continue;
    if (J->tile >= 0) {
      mq_tile_sums(J->tile, s->p + i * m, m, ks[i], nk[i], e - i, s->vd, dv, s->cv + i * dv, dv);
      continue;
    }
    for (int64_t r = i; r < e; r++) dot(s->p + r * m, ks[r], nk[r], s->vd, dv, s->cv + r * dv);
  }
}

/* float32 rows to float64 (exact) and back (one rounding each), in
 * vectors where the CPU has them. */
MQ_WIDE static void widen(const float *x, int64_t n, double *y) {
  for (int64_t i = 0; i < n; i++) y[i] = (double)x[i];
}
MQ_WIDE static void narrow(const double *x, int64_t n, float *y) {
  for (int64_t i = 0; i < n; i++) y[i] = (float)x[i];
}

/* b's columns [cols] (nv of them) of the batch matrix at [b] into kc
 * [K, nv], and v's rows [cols] of the matrix at [v] into vd [nv, dv], as
 * float64 (exact): done once per chunk, read by every row of it. When b
 * is a transpose of the keys (k stride 1), float32 keys are transposed 8
 * x 8 in AVX-512 registers where that is the path (mq_tile_gather_t). */
#define DEF_GATHER(E, T, GATHER_T, WIDEN)                                      \
  static void gather_##E(const at_job *J, const T *b, const T *v, const int64_t *cols, \
                         int64_t nv, double *kc, double *vd) {                 \
    int64_t K = J->K, dv = J->dv, sk = J->bst[J->nb], sj = J->bst[J->nb + 1]; \
    if (!(sk == 1 && GATHER_T(J, b, sj, cols, nv, K, kc)))                     \
      for (int64_t k = 0; k < K; k++)                                          \
        for (int64_t jj = 0; jj < nv; jj++) kc[k * nv + jj] = (double)b[k * sk + cols[jj] * sj]; \
    for (int64_t jj = 0; jj < nv; jj++) WIDEN(v + cols[jj] * dv, dv, vd + jj * dv); \
  }
#define GATHER_T_F32(J, b, sj, cols, nv, K, kc) mq_tile_gather_t((J)->cpu, b, sj, cols, nv, K, kc)
#define GATHER_T_F64(J, b, sj, cols, nv, K, kc) false
#define WIDEN_F32 widen
#define WIDEN_F64(x, n, y) memcpy(y, x, (size_t)(n) * sizeof(double))
DEF_GATHER(F32, float, GATHER_T_F32, WIDEN_F32)
DEF_GATHER(F64, double, GATHER_T_F64, WIDEN_F64)

/* The scores of nr rows of a (xa, float64) against b's nv union columns
 * (kc) into acc [nr, nv]. */
static void scores(const at_job *J, const at_scr *s, int64_t nr, int64_t nv) {
  int64_t K = J->K;
  if (J->tile >= 0) {
    mq_tile_sums(J->tile, s->xa, K, NULL, K, nr, s->kc, nv, s->acc, nv);
    return;
  }
  for (int64_t i = 0; i < nr; i++) dot(s->xa + i * K, NULL, K, s->kc, nv, s->acc + i * nv);
}

static void at_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const at_job *J = ctx;
  at_scr s = carve(J, t);
  int64_t n = J->n, K = J->K, m = J->m, dv = J->dv, es = (int64_t)mq_dtype_size(J->dt);
  int64_t si = J->mst[J->nb], sj = J->mst[J->nb + 1];
  for (int64_t q = lo; q < hi;) {
    int64_t bi = q / n, i0 = q % n, i1 = n - i0 < hi - q ? n : i0 + (hi - q);
    int64_t boff, moff; /* element offsets of batch bi */
    mq_batch_offsets(J->nb, J->bshape, bi, J->bst, &boff, J->mst, &moff);
    /* the columns some row of the chunk has valid (one row when the mask
     * is the same for every row, as a key mask is) */
    memset(s.ubuf, 0, (size_t)m);
    for (int64_t i = i0; i < (si == 0 ? i0 + 1 : i1); i++) {
      const uint8_t *mr = mq_attn_mask_row(J->mk + moff + i * si, sj, m, s.mbuf);
      for (int64_t j = 0; j < m; j++) s.ubuf[j] |= mr[j];
    }
    int64_t nv = 0;
    for (int64_t j = 0; j < m; j++) {
      s.cols[nv] = j;
      nv += s.ubuf[j] != 0;
    }
    /* the union is columns [0, nv) (a padded key mask): rows whose keys
     * are all of it take the dense softmax, whose prow stays 0 beyond nv */
    bool ident = nv == 0 || s.cols[nv - 1] == nv - 1;
    memset(s.prow, 0, (size_t)(m * es));
    const char *b = J->b + boff * es, *v = J->v + bi * m * dv * es;
    if (J->dt == MQ_DT_F32) gather_F32(J, (const float *)b, (const float *)v, s.cols, nv, s.kc, s.vd);
    else gather_F64(J, (const double *)b, (const double *)v, s.cols, nv, s.kc, s.vd);
    for (int64_t r0 = i0; r0 < i1; r0 += J->rb) {
      int64_t nr = i1 - r0 < J->rb ? i1 - r0 : J->rb;
      const char *a = J->a + (bi * n + r0) * K * es;
      if (J->dt == MQ_DT_F32)
        widen((const float *)a, nr * K, s.xa);
      else
        memcpy(s.xa, a, (size_t)(nr * K) * sizeof(double));
      scores(J, &s, nr, nv);
      int64_t nk[AT_RB];
      const int64_t *ks[AT_RB]; /* NULL: every union column */
      for (int64_t i = 0; i < nr; i++) {
        const uint8_t *mr = mq_attn_mask_row(J->mk + moff + (r0 + i) * si, sj, m, s.mbuf);
        if (si == 0 && i > 0) { /* the same mask row as the row before */
          nk[i] = nk[0], ks[i] = ks[0];
        } else {
          int64_t *l = s.ks + i * m;
          nk[i] = mq_attn_valid_keys(mr, s.cols, nv, l);
          ks[i] = nk[i] == nv ? NULL : l;
          /* the same keys as the row before: products takes them together */
          if (i > 0 && ks[i] && ks[i - 1] && nk[i] == nk[i - 1] &&
              memcmp(l, ks[i - 1], (size_t)nk[i] * sizeof *l) == 0)
            ks[i] = ks[i - 1];
        }
        if (!nk[i]) continue; /* op by op: a NaN row of p, whose product is 0 */
        const double *acc = s.acc + i * nv;
        bool dense = ident && !ks[i];
        if (J->dt == MQ_DT_F64) softmax_F64(J, &s, acc, mr, nv, ks[i], nk[i], dense, s.p + i * m);
        else softmax_F32(J, &s, acc, mr, nv, ks[i], nk[i], dense, s.p + i * m);
      }
      products(J, &s, nr, nk, ks);
      for (int64_t i = 0; i < nr; i++) {
        int64_t r = bi * n + r0 + i;
        memset(J->om + r * dv, nk[i] != 0, (size_t)dv);
        if (!nk[i]) memset(J->o + r * dv * es, 0, (size_t)(dv * es));
        else if (J->dt == MQ_DT_F64) memcpy((double *)J->o + r * dv, s.cv + i * dv, (size_t)dv * 8);
        else narrow(s.cv + i * dv, dv, (float *)J->o + r * dv);
      }
    }
    q += i1 - i0;
  }
}

/* Whether x / c is x * r for every x of dtype dt, with r = 1 / c: when
 * r is exact in dt (c a power of two whose reciprocal dt holds), both are
 * the one rounding of the same number (NaN, infinities and zeros alike).
 * A multiply is several times cheaper than a divide; the scale 1 / sqrt(d)
 * of attention is such a c for d = 4, 16, 64, 256. */
static bool exact_recip(double c, mq_dtype dt, double *r) {
  int e;
  if (!isfinite(c) || c == 0 || fabs(frexp(c, &e)) != 0.5) return false;
  double q = 1 / c;
  if (dt == MQ_DT_F32) q = (double)(float)q;
  if (!isfinite(q) || q == 0 || q * c != 1) return false; /* powers of two: exact */
  *r = q;
  return true;
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
  /* a row's valid keys come from its mask row twice (their union, then
   * each row's): from one copy of a host's mask (tensor.h: mq_tensor_owned) */
  m = mq_tensor_owned(S, m);
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
    J.tile = dt == MQ_DT_F32 && mq_tile_ok(S->cpu) ? S->cpu : -1;
    J.cpu = S->cpu;
    J.cmul = exact_recip(cd, dt, &J.rc);
    /* chunks of a matrix's rows (at least 32, at least 4 chunks per
     * thread): a chunk gathers its matrix's valid columns once */
    int64_t grain = rows / (4 * nt) < n ? rows / (4 * nt) : n;
    if (grain < 32) grain = 32;
    mq_parallel_for(S, nt, rows, grain, at_range, &J);
  }
  mq_tensor_set_mask(S, out, om);
  return out;
}
