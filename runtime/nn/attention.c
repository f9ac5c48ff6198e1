/* attention.c - softmax(masked(a @ b / c, m), -1) @ v over valid keys only
 * (see attention.h).
 *
 * Op by op, a @ b computes every score, masked keys included, and writes
 * them all; the division, softmax and the second product then read and
 * write full-size temporaries. Here the rows of a batch matrix are taken
 * a chunk at a time: the columns of b that some row of the chunk has
 * valid (the union of their mask rows: a padded key is in none) are
 * gathered once into a small contiguous block, and the chunk's rows
 *
 *   - get their scores over those columns only, by the GEMM (gemm.h:
 *     mq_gemm_serial), each the chain of fma in k order that matmul
 *     computes, divided by c rounded to T, as binary.c does;
 *   - each take softmax.c's row max (the same kernel, reading the row
 *     with its mask), exp of its valid entries (op by op the masked-out
 *     ones are computed, then zeroed), softmax.c's row sum over the whole
 *     row, zeros included, and the same reciprocal and product;
 *   - get p @ v by the GEMM over the union's keys, a key a row has masked
 *     out taking part as p = 0, as matmul takes a masked-out entry of its
 *     left operand (an exact 0 leaves a chain from +0 as it was); with an
 *     inf or NaN among v's rows, such a row adds its valid keys only, as
 *     matmul then does.
 *
 * A row with no valid key is NaN op by op after softmax and its product
 * row is 0, masked out: here it is written as that 0, masked out. Rows are
 * independent and computed the same way whoever computes them, so the
 * threads share them out and every result is bitwise the op-by-op one. */
#include "attention.h"

#include "../../core/checked.h"
#include "../kernels/gemm.h"
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
  int cpu;             /* S->cpu: the path of the GEMM and the float32 row sums */
  char *scr;           /* per thread: scr_bytes, the GEMM's gemm_bytes first */
  size_t scr_bytes, gemm_bytes;
} at_job;

/* Rows whose scores are computed together: one product of the GEMM. A
 * matrix of fewer rows takes that many (J->rb), so the blocks stay
 * proportional to the scores op by op would store. */
#define AT_RB 64

/* Per-thread scratch, carved in this order (8-byte items first). */
typedef struct at_scr {
  int64_t *cols, *ks; /* m: the chunk's union of valid columns; rb * m: each row's
                         valid keys in it */
  void *acc, *pf;     /* rb * m T each: the scores, the probabilities (0 at a masked key) */
  void *kc, *vd;      /* K * m T: b's union columns; m * dv T: v's union rows */
  void *srow, *prow;  /* m T each */
  void *gemm;         /* the GEMM's packing buffers */
  uint8_t *mbuf, *ubuf; /* m each: a gathered mask row; the union */
} at_scr;

static at_scr carve(const at_job *J, int t) {
  at_scr s;
  size_t es = mq_dtype_size(J->dt), m = (size_t)J->m, rb = (size_t)J->rb;
  char *p = J->scr + (size_t)t * J->scr_bytes;
  s.gemm = p, p += J->gemm_bytes;
  s.cols = (int64_t *)p, p += m * 8;
  s.ks = (int64_t *)p, p += rb * m * 8;
  s.acc = p, p += rb * m * es;
  s.pf = p, p += rb * m * es;
  s.kc = p, p += (size_t)J->K * m * es;
  s.vd = p, p += m * (size_t)J->dv * es;
  s.srow = p, p += m * es;
  s.prow = p, p += m * es;
  s.mbuf = (uint8_t *)p, p += m;
  s.ubuf = (uint8_t *)p;
  return s;
}

/* The bytes carve takes (a multiple of 64: the GEMM's buffers come first). */
static size_t scr_bytes(mq_state *S, const at_job *J) {
  size_t es = mq_dtype_size(J->dt), m = (size_t)J->m, rb = (size_t)J->rb;
  size_t kv = mq_ck_zmul(S, (size_t)(J->K + J->dv), m, "attention scratch");
  size_t per = m * (8 + rb * 8 + 2 * rb * es + 2 * es + 2) + mq_ck_zmul(S, kv, es, "attention scratch");
  return (J->gemm_bytes + per + 63) & ~(size_t)63;
}

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
        T v = acc[j + l] OP c;                                                 \
        srow[j + l] = v;                                                       \
        r[l] = v > r[l] ? v : r[l];                                            \
        nan |= v != v;                                                         \
      }                                                                        \
    for (int l = 0; j < n; j++, l++) {                                         \
      T v = acc[j] OP c;                                                       \
      srow[j] = v;                                                             \
      r[l] = v > r[l] ? v : r[l];                                              \
      nan |= v != v;                                                           \
    }                                                                          \
  } while (0)
#define DEF_ROWMAX(E, T)                                                       \
  MQ_WIDE static T rowmax_##E(const at_job *J, const T *acc, int64_t n, T *srow) { \
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
/* The softmax of one row from its scores acc [nv] (before the division)
 * over the union columns cols, its mask mr [m] and its nk valid keys ks
 * (union indices; NULL: all nv; nk > 0): their probabilities in pf [nv],
 * 0 at the keys it has masked out. The row is laid out over [0, m) as op by op has it (zeros where
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
  MQ_WIDE static void NAME(const at_job *J, const at_scr *s, const T *acc,    \
                           const uint8_t *mr, int64_t nv, const int64_t *ks, int64_t nk, \
                           bool dense, T *pf) {                                \
    int64_t m = J->m;                                                          \
    const int64_t *cols = s->cols;                                             \
    T *srow = s->srow, *prow = s->prow;                                        \
    if (dense) { /* the max as the scores are divided: see rowmax */         \
      T mx = ROWMAX(J, acc, nv, srow);                                         \
      EXPROW(J, prow, srow, mx, nv);                                           \
      T inv = (T)(1.0 / ROWSUM(J, prow, m <= MQ_RED_PIECE ? nv : m));          \
      for (int64_t j = 0; j < nv; j++) pf[j] = prow[j] * inv;                  \
      return;                                                                  \
    }                                                                          \
    T *tmp = prow;                                                             \
    if (J->cmul)                                                               \
      for (int64_t jj = 0; jj < nv; jj++) tmp[jj] = acc[jj] * (T)J->rc;        \
    else                                                                       \
      for (int64_t jj = 0; jj < nv; jj++) tmp[jj] = acc[jj] / (T)J->c;         \
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
    memset(pf, 0, (size_t)nv * sizeof(T));                                     \
    for (int64_t q = 0; q < nk; q++) {                                         \
      int64_t jj = ks ? ks[q] : q;                                             \
      pf[jj] = prow[cols[jj]] * inv;                                           \
    }                                                                          \
  }
#define SUM_F32(J, x, n) mq_kernel_rowsum_cnt_f32((J)->cpu, x, NULL, n, NULL)
#define SUM_F64(J, x, n) mq_kernel_rowsum_f64(x, NULL, n)
#define EXPROW_F32(J, o, x, c, n) mq_vexpf_rows((J)->cpu, o, x, c, n)
#define EXPROW_F64(J, o, x, c, n)                                              \
  for (int64_t j_ = 0; j_ < (n); j_++) (o)[j_] = exp((x)[j_] - (c))
DEF_ATTN_ROW(softmax_F32, float, mq_vexpf, EXPROW_F32, rowmax_F32, mq_kernel_rowmax_f32, SUM_F32)
DEF_ATTN_ROW(softmax_F64, double, exp, EXPROW_F64, rowmax_F64, mq_kernel_rowmax_f64, SUM_F64)

/* Row i's product with its valid keys only (ks: union indices; NULL:
 * every union key) into o [dv], each a chain of fma from +0 over them in
 * order: what matmul gives with an inf or NaN among v's rows, whose
 * product with a masked-out p it never forms. */
#define DEF_ROW_PRODUCT(E, T, FMA)                                             \
  static void row_product_##E(const T *pf, const int64_t *ks, int64_t nk, const T *vd, \
                              int64_t dv, T *o) {                              \
    for (int64_t d = 0; d < dv; d++) o[d] = 0;                                 \
    for (int64_t q = 0; q < nk; q++) {                                         \
      int64_t jj = ks ? ks[q] : q;                                             \
      for (int64_t d = 0; d < dv; d++) o[d] = FMA(pf[jj], vd[jj * dv + d], o[d]); \
    }                                                                          \
  }
DEF_ROW_PRODUCT(F32, float, fmaf)
DEF_ROW_PRODUCT(F64, double, fma)

/* b's columns [cols] (nv of them) of the batch matrix at [b] into kc
 * [K, nv], and v's rows [cols] of the matrix at [v] into vd [nv, dv]:
 * done once per chunk, read by every row of it. Whether vd is all finite. */
#define DEF_GATHER(E, T)                                                       \
  static bool gather_##E(const at_job *J, const T *b, const T *v, const int64_t *cols, \
                         int64_t nv, T *kc, T *vd) {                           \
    int64_t K = J->K, dv = J->dv, sk = J->bst[J->nb], sj = J->bst[J->nb + 1]; \
    for (int64_t k = 0; k < K; k++)                                            \
      for (int64_t jj = 0; jj < nv; jj++) kc[k * nv + jj] = b[k * sk + cols[jj] * sj]; \
    bool finite = true;                                                        \
    for (int64_t jj = 0; jj < nv; jj++) {                                      \
      memcpy(vd + jj * dv, v + cols[jj] * dv, (size_t)dv * sizeof(T));        \
      for (int64_t d = 0; d < dv; d++) finite &= isfinite(vd[jj * dv + d]) != 0; \
    }                                                                          \
    return finite;                                                             \
  }
DEF_GATHER(F32, float)
DEF_GATHER(F64, double)

static void at_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const at_job *J = ctx;
  at_scr s = carve(J, t);
  int64_t n = J->n, K = J->K, m = J->m, dv = J->dv, es = (int64_t)mq_dtype_size(J->dt);
  int64_t si = J->mst[J->nb], sj = J->mst[J->nb + 1];
  bool f32 = J->dt == MQ_DT_F32;
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
    bool finite = f32 ? gather_F32(J, (const float *)b, (const float *)v, s.cols, nv, s.kc, s.vd)
                      : gather_F64(J, (const double *)b, (const double *)v, s.cols, nv, s.kc, s.vd);
    for (int64_t r0 = i0; r0 < i1; r0 += J->rb) {
      int64_t nr = i1 - r0 < J->rb ? i1 - r0 : J->rb;
      const char *a = J->a + (bi * n + r0) * K * es;
      char *o = J->o + (bi * n + r0) * dv * es;
      int64_t nk[AT_RB];
      const int64_t *ks[AT_RB]; /* NULL: every union column */
      int64_t rlo = nr, rhi = 0; /* the rows with a valid key: only they are computed */
      for (int64_t i = 0; i < nr; i++) {
        const uint8_t *mr = mq_attn_mask_row(J->mk + moff + (r0 + i) * si, sj, m, s.mbuf);
        int64_t vlo, vhi;
        if (si == 0 && i > 0) { /* the same mask row as the row before */
          nk[i] = nk[0], ks[i] = ks[0];
        } else if (ident && !mq_valid_span(mr, nv, &vlo, &vhi)) { /* a padded query: none */
          nk[i] = 0, ks[i] = NULL;
        } else if (ident && vlo == 0 && vhi == nv && !memchr(mr, 0, (size_t)nv)) { /* all of them */
          nk[i] = nv, ks[i] = NULL;
        } else {
          int64_t *l = s.ks + i * m;
          nk[i] = mq_attn_valid_keys(mr, s.cols, nv, l);
          ks[i] = nk[i] == nv ? NULL : l;
        }
        if (nk[i] && i < rlo) rlo = i;
        if (nk[i]) rhi = i + 1;
      }
      if (rlo < rhi)
        mq_gemm_serial(J->cpu, J->dt, rhi - rlo, nv, K, a + rlo * K * es, K, s.kc, nv, s.acc, nv, s.gemm);
      for (int64_t i = 0; i < nr; i++) {
        const uint8_t *mr = mq_attn_mask_row(J->mk + moff + (r0 + i) * si, sj, m, s.mbuf);
        char *pf = (char *)s.pf + i * nv * es;
        if (!nk[i]) { /* op by op: a NaN row of p, whose product is 0 */
          memset(pf, 0, (size_t)(nv * es));
          continue;
        }
        const char *acc = (const char *)s.acc + (i - rlo) * nv * es;
        bool dense = ident && !ks[i];
        if (f32) softmax_F32(J, &s, (const float *)acc, mr, nv, ks[i], nk[i], dense, (float *)pf);
        else softmax_F64(J, &s, (const double *)acc, mr, nv, ks[i], nk[i], dense, (double *)pf);
      }
      if (rlo < rhi)
        mq_gemm_serial(J->cpu, J->dt, rhi - rlo, dv, nv, (const char *)s.pf + rlo * nv * es, nv, s.vd,
                       dv, o + rlo * dv * es, dv, s.gemm);
      for (int64_t i = 0; i < nr; i++) {
        char *orow = o + i * dv * es;
        memset(J->om + (bi * n + r0 + i) * dv, nk[i] != 0, (size_t)dv);
        if (!nk[i]) memset(orow, 0, (size_t)(dv * es));
        else if (!finite && ks[i]) { /* an inf or NaN key row: no term with a masked-out p */
          const char *pf = (const char *)s.pf + i * nv * es;
          if (f32) row_product_F32((const float *)pf, ks[i], nk[i], s.vd, dv, (float *)orow);
          else row_product_F64((const double *)pf, ks[i], nk[i], s.vd, dv, (double *)orow);
        }
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
    int64_t rb = n < AT_RB ? n : AT_RB;
    int64_t per_row = 1, work = INT64_MAX;
    if (!mq_mul_ok(K + dv, mm, &per_row) || per_row < 1) per_row = 1;
    if (!mq_mul_ok(rows, per_row, &work)) work = INT64_MAX;
    int nt = mq_parallel_threads_for(S, work);
    at_job J = {.dt = dt, .n = n, .rb = rb, .K = K, .m = mm, .dv = dv, .nb = nb, .bshape = sshape,
                .a = mq_tensor_data(a), .v = mq_tensor_data(v), .b = mq_tensor_data(b),
                .bst = b->strides, .mk = mq_tensor_data(mx), .mst = mx->strides,
                .o = mq_tensor_data(out), .om = mq_tensor_data(om), .c = cd, .cpu = S->cpu};
    /* the GEMM's buffers: the scores (rb x m over K) and p @ v (rb x dv over m) */
    size_t g1 = mq_gemm_serial_bytes(S->cpu, dt, rb, mm, K), g2 = mq_gemm_serial_bytes(S->cpu, dt, rb, dv, mm);
    J.gemm_bytes = g1 > g2 ? g1 : g2;
    J.scr_bytes = scr_bytes(S, &J);
    J.scr = mq_scratch(S, mq_ck_zmul(S, J.scr_bytes, (size_t)nt, "attention scratch") + 64);
    J.scr += (64 - (uintptr_t)J.scr % 64) % 64;
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

/* The divisor as a number: a number, or a 0-d tensor of plain data (no
 * mask, no gradient), which is what `for d in [8, 3]` or `tensor(8)`
 * gives; op by op divides by either alike (a 0-d operand does not promote
 * the scores' dtype), so the number gives the same bits. */
static bool divisor(mq_state *S, mq_value v, mq_value *c) {
  if (v.type == MQ_INT || v.type == MQ_FLOAT) {
    *c = v;
    return true;
  }
  if (!mq_is_tensor(v)) return false;
  mq_tensor *t = mq_as_tensor(v);
  if (t->layout != 0 || t->ndim != 0 || t->mask || t->requires_grad || t->node ||
      t->dtype == MQ_DT_BOOL)
    return false;
  *c = mq_tensor_item_value(S, t);
  return true;
}

mq_tensor *mq_attention_try(mq_state *S, mq_tensor *a, mq_tensor *b, bool tr, int d0, int d1,
                            mq_value c, mq_tensor *m, mq_tensor *v, bool keep_graph) {
  mq_value cn;
  if (a->layout || b->layout || m->layout || v->layout || !divisor(S, c, &cn)) return NULL;
  if (tr) { /* transpose(b, d0, d1), a view, when its dims are valid */
    if (d0 < -b->ndim || d0 >= b->ndim || d1 < -b->ndim || d1 >= b->ndim) return NULL;
    d0 += d0 < 0 ? b->ndim : 0, d1 += d1 < 0 ? b->ndim : 0;
  }
  /* under grad, op by op: the GEMM's products skip what the masks leave
   * out, and the backward is theirs (measured faster than one node whose
   * backward ran its own float64 sums) */
  (void)keep_graph;
  if (a->requires_grad | b->requires_grad | v->requires_grad) return NULL;
  if (tr) b = mq_transpose(S, b, d0, d1);
  return mq_attention(S, a, b, cn, m, v);
}
