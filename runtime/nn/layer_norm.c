/* layer_norm.c - layer_norm's fused rows, forward and backward
 * (layer_norm.h says what they compute). */
#include "layer_norm.h"

#include <math.h>
#include <string.h>

#include "../../core/checked.h"
#include "../tensor/cpu.h"
#include "../tensor/internal.h" /* the kernels' settings: vectorizer cost model */
#include "../tensor/parallel.h"
#include "../tensor/masksum.h"
#include "../tensor/maskspan.h"

#if defined(__GNUC__) || defined(__clang__)
#define LN_INLINE static inline __attribute__((always_inline)) /* into each path's loop */
#else
#define LN_INLINE static inline
#endif

/* The 8 lanes of a row sum, combined in one fixed order. */
LN_INLINE double lanes(const double l[8]) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

static int64_t count_valid(const uint8_t *m, int64_t C) {
  int64_t n = 0;
  for (int64_t j = 0; j < C; j++) n += m[j];
  return n;
}

typedef struct fwd_job {
  int dt, cpu;
  int64_t C;
  const void *x, *w, *b;
  const uint8_t *m;
  /* each row all valid, all masked out or mixed (mq_ms_state), from the
   * mask's spans (maskspan.h), or NULL: an all-valid row is read without
   * the mask, a masked-out one's statistics (0 and 0) are not computed */
  const uint8_t *rst;
  void *y;
  double *st, eps;
} fwd_job;

/* One block of rows of the backward: dx of each row, and the block's own
 * sums of dw and db (in order of its rows) in its slot of the partials. */
typedef struct grad_job {
  const mq_ln_grad *G;
  int cpu;
  int64_t per;     /* rows per block */
  const void *w;   /* G->w, or ones */
  const uint8_t *xm, *gm; /* the masks, or a row of ones where one is plain (masked: either is) */
  double *pw, *pb; /* partials, [blocks][C] each */
  uint8_t *pm;     /* the blocks' valid columns, [blocks][C] (NULL: unmasked) */
} grad_job;

/* The loops over a row, in [T] (float or double), written once and built
 * for each CPU path (the same operations in each, so the same bits).
 *
 * Sums over a row's valid entries (m NULL: all) of x, and of (x - mean)^2;
 * a masked-out entry adds +0 (selected, never multiplied: its data may be
 * NaN), which leaves a lane as it was (a lane starts at +0, so it is
 * never -0). Entry j goes to lane j % 8. */
#define LANE_LOOP(C, BODY)                                                     \
  {                                                                            \
    int64_t j0 = 0;                                                            \
    for (; j0 + 8 <= (C); j0 += 8)                                             \
      for (int k = 0; k < 8; k++) {                                            \
        const int64_t j = j0 + k;                                              \
        BODY                                                                   \
      }                                                                        \
    for (int k = 0; j0 + k < (C); k++) {                                       \
      const int64_t j = j0 + k;                                                \
      BODY                                                                     \
    }                                                                          \
  }

#define DEF_ROWS(T, SFX, ATTR)                                                 \
  ATTR static void fwd_rows_##SFX(const fwd_job *J, int64_t lo, int64_t hi) { \
    const int64_t C = J->C;                                                    \
    const T *w = J->w, *b = J->b;                                              \
    for (int64_t r = lo; r < hi; r++) {                                        \
      const T *x = (const T *)J->x + r * C;                                    \
      const uint8_t rs = J->rst ? J->rst[r] : MQ_MS_MIXED;                     \
      const uint8_t *m = J->m && rs == MQ_MS_MIXED ? J->m + r * C : NULL;      \
      T *y = (T *)J->y + r * C;                                                \
      int64_t n = m ? count_valid(m, C) : rs == MQ_MS_MASKED ? 0 : C;          \
      double l[8] = {0}, q[8] = {0};                                           \
      if (m) LANE_LOOP(C, l[k] += m[j] ? (double)x[j] : 0.0;)                  \
      else if (n) LANE_LOOP(C, l[k] += (double)x[j];)                          \
      double mean = n ? lanes(l) / (double)n : 0.0;                            \
      if (m) LANE_LOOP(C, double d = (double)x[j] - mean; q[k] += m[j] ? d * d : 0.0;) \
      else if (n) LANE_LOOP(C, double d = (double)x[j] - mean; q[k] += d * d;) \
      double var = n ? lanes(q) / (double)n : 0.0;                             \
      double rstd = 1.0 / sqrt(var + J->eps);                                  \
      J->st[2 * r] = mean, J->st[2 * r + 1] = rstd;                            \
      if (w && b)                                                              \
        for (int64_t j = 0; j < C; j++)                                        \
          y[j] = (T)(((double)x[j] - mean) * rstd * (double)w[j] + (double)b[j]); \
      else if (w)                                                              \
        for (int64_t j = 0; j < C; j++) y[j] = (T)(((double)x[j] - mean) * rstd * (double)w[j]); \
      else if (b)                                                              \
        for (int64_t j = 0; j < C; j++) y[j] = (T)(((double)x[j] - mean) * rstd + (double)b[j]); \
      else                                                                     \
        for (int64_t j = 0; j < C; j++) y[j] = (T)(((double)x[j] - mean) * rstd); \
    }                                                                          \
  }                                                                            \
  ATTR static void grad_block_##SFX(const grad_job *K, int64_t blk) {          \
    const mq_ln_grad *G = K->G;                                                \
    const int64_t C = G->C, r1 = (blk + 1) * K->per < G->rows ? (blk + 1) * K->per : G->rows; \
    const T *w = K->w;                                                         \
    double *pw = K->pw + blk * C, *pb = K->pb + blk * C;                       \
    uint8_t *pm = K->pm ? K->pm + blk * C : NULL;                              \
    memset(pw, 0, (size_t)C * sizeof *pw);                                     \
    memset(pb, 0, (size_t)C * sizeof *pb);                                     \
    if (pm) memset(pm, 0, (size_t)C);                                          \
    for (int64_t r = blk * K->per; r < r1; r++) {                              \
      const T *x = (const T *)G->x + r * C, *g = (const T *)G->g + r * C;      \
      const double mean = G->st[2 * r], rstd = G->st[2 * r + 1];               \
      double la[8] = {0}, lc[8] = {0};                                         \
      T *dx = G->dx ? (T *)G->dx + r * C : NULL;                               \
      const uint8_t xs = G->xrst ? G->xrst[r] : MQ_MS_MIXED;                   \
      if (pm && xs == MQ_MS_MASKED) { /* x's row masked out: dx 0, masked out */ \
        if (dx) {                                                              \
          memset(dx, 0, (size_t)C * sizeof *dx);                               \
          memset(G->dxm + r * C, 0, (size_t)C);                                \
        }                                                                      \
        continue;                                                              \
      }                                                                        \
      /* valid in x and g: the plain loops (a select that keeps every entry \
       * folds the same), then the masks all 1 */                             \
      const bool full = pm && xs == MQ_MS_VALID && (!G->gm || (G->grst && G->grst[r] == MQ_MS_VALID)); \
      if (!pm || full) { /* plain: every entry valid */                        \
        LANE_LOOP(C, double h = ((double)x[j] - mean) * rstd; double gj = (double)g[j]; \
                  double gw = gj * (double)w[j]; la[k] += gw; lc[k] += gw * h; \
                  pw[j] += gj * h; pb[j] += gj;)                               \
        const double a = lanes(la) / (double)C, c = lanes(lc) / (double)C;     \
        if (dx)                                                                \
          for (int64_t j = 0; j < C; j++) {                                    \
            double h = ((double)x[j] - mean) * rstd, gw = (double)g[j] * (double)w[j]; \
            dx[j] = (T)(rstd * ((gw - a) - h * c));                            \
          }                                                                    \
        if (full) {                                                            \
          memset(pm, 1, (size_t)C);                                            \
          if (dx) memset(G->dxm + r * C, 1, (size_t)C);                        \
        }                                                                      \
        continue;                                                              \
      }                                                                        \
      const uint8_t *xm = K->xm + r * C, *gm = K->gm + r * C;                  \
      const int64_t n = count_valid(xm, C);                                    \
      LANE_LOOP(C, bool v = xm[j] & gm[j]; double h = ((double)x[j] - mean) * rstd; \
                double gj = (double)g[j]; double gw = gj * (double)w[j];       \
                la[k] += v ? gw : 0.0; lc[k] += v ? gw * h : 0.0;              \
                pw[j] += v ? gj * h : 0.0; pb[j] += v ? gj : 0.0; pm[j] |= v;) \
      const double a = n ? lanes(la) / (double)n : 0.0, c = n ? lanes(lc) / (double)n : 0.0; \
      uint8_t any = 0; /* a row no gradient reached: its dx masked out */     \
      for (int64_t j = 0; j < C; j++) any |= xm[j] & gm[j];                    \
      if (dx) {                                                                \
        uint8_t *dxm = G->dxm + r * C;                                         \
        for (int64_t j = 0; j < C; j++) {                                      \
          bool v = xm[j] & gm[j];                                              \
          double h = ((double)x[j] - mean) * rstd, gw = (double)g[j] * (double)w[j]; \
          double d = rstd * (((v ? gw : 0.0) - a) - h * c);                    \
          dxm[j] = xm[j] & any;                                                \
          dx[j] = (T)(dxm[j] ? d : 0.0);                                       \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

#define DEF_PATH(SFX, ATTR)                                                    \
  DEF_ROWS(float, f32_##SFX, ATTR)                                             \
  DEF_ROWS(double, f64_##SFX, ATTR)
DEF_PATH(portable, )
#if MQ_CPU_X86
DEF_PATH(avx2, MQ_TGT_AVX2)
#endif

/* fwd_rows / grad_block of the job's dtype on its CPU path. The AVX-512
 * path runs the AVX2 build: gcc's AVX-512 build of these loops measured
 * twice as slow (it vectorizes fewer of them), and the bits are the same. */
#if MQ_CPU_X86
#define ON_PATH(cpu, dt, F, ...)                                               \
  ((cpu) >= MQ_CPU_AVX2 ? ((dt) == MQ_DT_F32 ? F##_f32_avx2(__VA_ARGS__) : F##_f64_avx2(__VA_ARGS__)) \
   : ((dt) == MQ_DT_F32 ? F##_f32_portable(__VA_ARGS__) : F##_f64_portable(__VA_ARGS__)))
#else
#define ON_PATH(cpu, dt, F, ...)                                               \
  ((dt) == MQ_DT_F32 ? F##_f32_portable(__VA_ARGS__) : F##_f64_portable(__VA_ARGS__))
#endif

/* --- the forward ------------------------------------------------------------- */

static void fwd_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const fwd_job *J = ctx;
  ON_PATH(J->cpu, J->dt, fwd_rows, J, lo, hi);
}

/* Rows per chunk of the threads' work: about MQ_PAR_GRAIN entries. */
static int64_t grain_rows(int64_t C) { return C >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / (C ? C : 1); }

/* [t]'s data alone, contiguous, with no history. */
static mq_tensor *plain_data(mq_state *S, mq_tensor *t) {
  return mq_contiguous(S, mq_tensor_view(S, t, t->ndim, t->shape, t->strides, t->offset));
}

mq_tensor *mq_nn_layer_norm_fused(mq_state *S, mq_tensor *x, int nd, mq_tensor *w, mq_tensor *b,
                                  double eps) {
  const int dt = x->dtype;
  if (x->layout != 0 || (dt != MQ_DT_F32 && dt != MQ_DT_F64) || (w && w->dtype != dt) ||
      (b && b->dtype != dt))
    return NULL;
  int64_t C = 1;
  for (int i = x->ndim - nd; i < x->ndim; i++) C *= x->shape[i]; /* within numel */
  int64_t R = C ? x->numel / C : 0;
  /* the backward reads the mask the forward read */
  mq_tensor *xo = x->mask ? mq_tensor_owned(S, x) : x;
  mq_tensor *xd = plain_data(S, xo), *wd = w ? plain_data(S, w) : NULL, *bd = b ? plain_data(S, b) : NULL;
  mq_tensor *mask = xo->mask ? mq_contiguous(S, xo->mask) : NULL;
  int64_t sn[1] = {(int64_t)mq_ck_zmul(S, (size_t)R, 2, "layer_norm")};
  mq_tensor *st = mq_tensor_new(S, MQ_DT_F64, 1, sn);
  mq_tensor *y = mq_tensor_new(S, (mq_dtype)dt, x->ndim, x->shape);
  fwd_job J = {dt, S->cpu, C, mq_tensor_data(xd), wd ? mq_tensor_data(wd) : NULL, bd ? mq_tensor_data(bd) : NULL,
               mask ? mq_tensor_data(mask) : NULL, NULL, mq_tensor_data(y), mq_tensor_data(st), eps};
  if (mask && xo->mask->ndim == x->ndim) J.rst = mq_mask_row_states(S, xo->mask, C); /* padded rows */
  if (R) mq_parallel_for(S, mq_parallel_threads_for(S, x->numel), R, grain_rows(C), fwd_range, &J);
  if (mask) mq_tensor_set_mask(S, y, mask);
  if (x->requires_grad | MQ_AG_REQ(w) | MQ_AG_REQ(b)) {
    mq_tensor *in[4] = {x, w, b, st};
    mq_gradnode *n = mq_ag_rec_sparse(S, y, MQ_AG_LAYER_NORM, 0, 3, 1, in);
    if (n) n->prm[0] = eps;
  }
  return y;
}

/* --- the backward ------------------------------------------------------------ */

static void grad_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const grad_job *K = ctx;
  for (int64_t blk = lo; blk < hi; blk++) ON_PATH(K->cpu, K->G->dt, grad_block, K, blk);
}

void mq_nn_layer_norm_grad(mq_state *S, const mq_ln_grad *G) {
  const int64_t C = G->C, R = G->rows;
  if (!R || !C) {
    if (G->dw) memset(G->dw, 0, (size_t)C * sizeof *G->dw);
    if (G->db) memset(G->db, 0, (size_t)C * sizeof *G->db);
    if (G->wm) memset(G->wm, 0, (size_t)C);
    return;
  }
  /* blocks fixed by C alone, so the partials (and their sum) do not
   * depend on the threads */
  grad_job K = {G, S->cpu, grain_rows(C), G->w, G->xm, G->gm, NULL, NULL, NULL};
  int64_t blocks = mq_ceil_div(R, K.per);
  size_t cells = mq_ck_zmul(S, (size_t)blocks, (size_t)C, "layer_norm");
  K.pw = mq_scratch(S, mq_ck_zmul(S, cells, sizeof(double), "layer_norm"));
  K.pb = mq_scratch(S, mq_ck_zmul(S, cells, sizeof(double), "layer_norm"));
  size_t es = G->dt == MQ_DT_F32 ? sizeof(float) : sizeof(double);
  if (!K.w) { /* no weight: ones */
    void *ones = mq_scratch(S, mq_ck_zmul(S, (size_t)C, es, "layer_norm"));
    for (int64_t j = 0; j < C; j++)
      if (G->dt == MQ_DT_F32) ((float *)ones)[j] = 1.0f;
      else ((double *)ones)[j] = 1.0;
    K.w = ones;
  }
  if (G->xm || G->gm) { /* masked: a plain side valid everywhere */
    K.pm = mq_scratch(S, cells);
    if (!K.xm || !K.gm) {
      size_t n = mq_ck_zmul(S, (size_t)R, (size_t)C, "layer_norm");
      uint8_t *ones = mq_scratch(S, n);
      memset(ones, 1, n);
      if (!K.xm) K.xm = ones;
      else K.gm = ones;
    }
  }
  mq_parallel_for(S, mq_parallel_threads_for(S, R * C), blocks, 1, grad_range, &K); /* R C: numel */
  for (int64_t j = 0; j < C; j++) { /* the blocks in order */
    double sw = 0, sb = 0;
    uint8_t any = 0;
    for (int64_t k = 0; k < blocks; k++) {
      if (K.pw) sw += K.pw[k * C + j];
      if (K.pb) sb += K.pb[k * C + j];
      if (K.pm) any |= K.pm[k * C + j];
    }
    if (G->dw) G->dw[j] = sw;
    if (G->db) G->db[j] = sb;
    if (G->wm) G->wm[j] = any;
  }
}
