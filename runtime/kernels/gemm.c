/* gemm.c - the matrix product driver (gemm.h): packing, tiling, threads,
 * masks; the micro-kernels are in gemm_kernels.c.
 *
 * The loops are the usual ones of a BLAS (Goto's): the threads take tiles
 * of C (MC rows by NC columns of one batch); for each block of KC steps a
 * tile packs its block of B into panels NR columns wide (the vector
 * operand, streamed from L2) and its block of A into panels MR rows high
 * (the broadcast operand, one panel in L1 for a whole row of B's panels),
 * then runs the MR x NR micro-kernel over the tile. Packing reads any
 * strides (a transposed operand costs no copy) and any input dtype, and
 * zeroes masked-out entries. Tiles are sized by the work and the thread
 * count alone, and cannot change a result (gemm.h). */
#include "gemm.h"

#include <math.h>
#include <string.h>

#include "../../core/checked.h"
#include "../tensor/cpu.h"
#include "../tensor/half.h"
#include "../tensor/internal.h"
#include "../tensor/parallel.h"
#include "gemm_kernels.h"

#define KC 256


/* --- packing ----------------------------------------------------------------- */

/* Element (r, c) of [X] in batch [b] as the compute type, 0 where masked
 * out. */
typedef struct operand {
  const char *p;
  const uint8_t *m;
  int64_t rs, cs, mrs, mcs;
} operand;

static operand at_batch(const mq_gemm_mat *X, mq_dtype in, int64_t b) {
  operand o = {.rs = X->rs, .cs = X->cs, .mrs = X->mrs, .mcs = X->mcs};
  o.p = (const char *)X->p + (X->off ? X->off[b] : 0) * (int64_t)mq_dtype_size(in);
  o.m = X->m ? X->m + (X->moff ? X->moff[b] : 0) : NULL;
  return o;
}

static inline double read_in(const char *p, mq_dtype in, int64_t i) {
  switch (in) {
  case MQ_DT_F64: return ((const double *)p)[i];
  case MQ_DT_BF16: return mq_bf16_to_f32(((const uint16_t *)p)[i]);
  case MQ_DT_F16: return mq_f16_to_f32(((const uint16_t *)p)[i]);
  default: return ((const float *)p)[i];
  }
}

/* Packs rows [r0, r0 + rn) x cols [c0, c0 + cn) of [o] into panels of [w]
 * along the rows (A: rows are i, panels MR high) or along the columns (B:
 * rows are k, panels NR wide). The panel layout is [panel][k][w]: for A,
 * dst[(i / w) * kc * w + k * w + i % w]; for B, dst[(j / w) * kc * w + k *
 * w + j % w]. A's caller passes it with rows and cols swapped (k along the
 * operand's columns), which is why one routine serves both: [along_rows]
 * says which index the panels cut. Out-of-range lanes of the last panel
 * are 0. */
#define DEF_PACK(NAME, T)                                                        \
  static void NAME(T *dst, const operand *o, mq_dtype in, int64_t i0, int64_t ni, \
                   int64_t k0, int64_t kc, int64_t w, bool a_side) {             \
    for (int64_t ip = 0; ip < ni; ip += w) {                                     \
      int64_t h = ni - ip < w ? ni - ip : w;                                     \
      T *d = dst + ip * kc;                                                      \
      for (int64_t r = 0; r < h; r++) {                                          \
        int64_t i = i0 + ip + r;                                                 \
        /* A: element (i, k); B: element (k, i) */                               \
        int64_t si = a_side ? o->rs : o->cs, sk = a_side ? o->cs : o->rs;        \
        int64_t mi = a_side ? o->mrs : o->mcs, mk = a_side ? o->mcs : o->mrs;    \
        int64_t base = i * si + k0 * sk, mbase = i * mi + k0 * mk;               \
        if (in == MQ_DT_F32 && sizeof(T) == 4 && !o->m) {                        \
          const float *s = (const float *)o->p + base;                           \
          for (int64_t k = 0; k < kc; k++) d[k * w + r] = (T)s[k * sk];          \
        } else if (in == MQ_DT_F32 && sizeof(T) == 4 && o->m) {                 \
          const float *s = (const float *)o->p + base;                           \
          const uint8_t *mm = o->m + mbase;                                      \
          for (int64_t k = 0; k < kc; k++) d[k * w + r] = mm[k * mk] ? (T)s[k * sk] : 0; \
        } else if (in == MQ_DT_F64 && sizeof(T) == 8 && o->m) {                 \
          const double *s = (const double *)o->p + base;                         \
          const uint8_t *mm = o->m + mbase;                                      \
          for (int64_t k = 0; k < kc; k++) d[k * w + r] = mm[k * mk] ? (T)s[k * sk] : 0; \
        } else if (in == MQ_DT_F64 && sizeof(T) == 8 && !o->m) {                 \
          const double *s = (const double *)o->p + base;                         \
          for (int64_t k = 0; k < kc; k++) d[k * w + r] = (T)s[k * sk];          \
        } else {                                                                 \
          for (int64_t k = 0; k < kc; k++)                                       \
            d[k * w + r] = !o->m || o->m[mbase + k * mk]                         \
                               ? (T)read_in(o->p, in, base + k * sk)             \
                               : 0;                                              \
        }                                                                        \
      }                                                                          \
      for (int64_t r = h; r < w; r++)                                            \
        for (int64_t k = 0; k < kc; k++) d[k * w + r] = 0;                       \
    }                                                                            \
  }
DEF_PACK(pack_f32, float)
DEF_PACK(pack_f64, double)

/* Panels whose step k is a run of w consecutive elements: B with its
 * rows contiguous (the common layout; element (k, i) at k rs + i), or A
 * with its columns contiguous (a transpose, a^T in a backward; element
 * (i, k) at k cs + i), and their masks contiguous the same way. [ks],
 * [mks]: the strides along k of the data and the mask. */
#define DEF_PACK_RUNS(NAME, T)                                                   \
  MQ_WIDE static void NAME(T *dst, const operand *o, int64_t i0, int64_t ni, int64_t k0, \
                           int64_t kc, int64_t w, int64_t ks, int64_t mks) {     \
    /* step by step, each run read whole and dealt out to the panels: the   \
     * reads stream (a panel at a time would touch a new line per step) */   \
    for (int64_t k = 0; k < kc; k++) {                                           \
      const T *s = (const T *)o->p + (k0 + k) * ks + i0;                         \
      const uint8_t *m = o->m ? o->m + (k0 + k) * mks + i0 : NULL;               \
      for (int64_t ip = 0; ip < ni; ip += w) {                                   \
        int64_t h = ni - ip < w ? ni - ip : w;                                   \
        T *d = dst + ip * kc + k * w;                                            \
        if (m)                                                                   \
          for (int64_t r = 0; r < h; r++) d[r] = m[ip + r] ? s[ip + r] : 0;      \
        else                                                                     \
          for (int64_t r = 0; r < h; r++) d[r] = s[ip + r];                      \
        for (int64_t r = h; r < w; r++) d[r] = 0;                                \
      }                                                                          \
    }                                                                            \
  }
DEF_PACK_RUNS(pack_runs_f32, float)
DEF_PACK_RUNS(pack_runs_f64, double)

/* A's panels when its rows are contiguous (the common layout): step k of
 * a panel takes element k of each of its w rows, so the writes are
 * consecutive and each row is read as a stream. */
#define DEF_PACK_A_ROWS(NAME, T)                                                 \
  MQ_WIDE static void NAME(T *dst, const operand *o, int64_t i0, int64_t ni, int64_t k0, \
                           int64_t kc, int64_t w) {                              \
    const T *src = (const T *)o->p;                                              \
    for (int64_t ip = 0; ip < ni; ip += w) {                                     \
      int64_t h = ni - ip < w ? ni - ip : w;                                     \
      T *d = dst + ip * kc;                                                      \
      const T *s0 = src + (i0 + ip) * o->rs + k0;                                \
      const uint8_t *m0 = o->m ? o->m + (i0 + ip) * o->mrs + k0 : NULL;          \
      if (m0) { /* row by row: the select on a row and its mask vectorizes */   \
        for (int64_t r = 0; r < h; r++) {                                        \
          const T *sr = s0 + r * o->rs;                                          \
          const uint8_t *mr = m0 + r * o->mrs;                                   \
          for (int64_t k = 0; k < kc; k++) d[k * w + r] = mr[k] ? sr[k] : 0;     \
        }                                                                        \
        for (int64_t k = 0; k < kc; k++)                                         \
          for (int64_t r = h; r < w; r++) d[k * w + r] = 0;                      \
        continue;                                                                \
      }                                                                          \
      for (int64_t k = 0; k < kc; k++) {                                         \
        for (int64_t r = 0; r < h; r++) d[k * w + r] = s0[r * o->rs + k];        \
        for (int64_t r = h; r < w; r++) d[k * w + r] = 0;                        \
      }                                                                          \
    }                                                                            \
  }
DEF_PACK_A_ROWS(pack_a_rows_f32, float)
DEF_PACK_A_ROWS(pack_a_rows_f64, double)

static void pack(void *dst, mq_dtype dt, const operand *o, mq_dtype in, int64_t i0, int64_t ni,
                 int64_t k0, int64_t kc, int64_t w, bool a_side) {
  bool f64 = dt == MQ_DT_F64;
  if (in == dt && a_side && o->cs == 1 && (!o->m || o->mcs == 1)) { /* A's rows contiguous */
    if (f64) pack_a_rows_f64(dst, o, i0, ni, k0, kc, w);
    else pack_a_rows_f32(dst, o, i0, ni, k0, kc, w);
    return;
  }
  /* runs along the panel: A's columns contiguous, or B's rows */
  int64_t us = a_side ? o->rs : o->cs, ums = a_side ? o->mrs : o->mcs;
  if (in == dt && us == 1 && (!o->m || ums == 1)) {
    int64_t ks = a_side ? o->cs : o->rs, mks = a_side ? o->mcs : o->mrs;
    if (f64) pack_runs_f64(dst, o, i0, ni, k0, kc, w, ks, mks);
    else pack_runs_f32(dst, o, i0, ni, k0, kc, w, ks, mks);
    return;
  }
  if (f64) pack_f64(dst, o, in, i0, ni, k0, kc, w, a_side);
  else pack_f32(dst, o, in, i0, ni, k0, kc, w, a_side);
}

/* bfloat16 pairs: the bits of element (i, k) of [o] (A: rows i; B: the
 * operand's columns are i), 0 where masked out. */
static inline uint32_t bf16_at(const operand *o, int64_t i, int64_t k, bool a_side) {
  int64_t r = a_side ? i : k, c = a_side ? k : i;
  if (o->m && !o->m[r * o->mrs + c * o->mcs]) return 0;
  return ((const uint16_t *)(const void *)o->p)[r * o->rs + c * o->cs];
}

/* Packs like pack() above, but words of two bfloat16 along k (k0 + 2q in
 * the low half, k0 + 2q + 1 in the high, 0 past the block's end): panels
 * [panel][q][w] over ceil(kc / 2) words. */
/* The same for an operand with no mask whose panel index has unit
 * stride along k's neighbour (B's contiguous rows: a word interleaves two
 * rows) or whose k has unit stride (A's contiguous rows: a word is two
 * neighbours as they lie), in loops that vectorize. */
MQ_WIDE static void pack_pairs_plain(uint32_t *dst, const operand *o, int64_t i0, int64_t ni,
                                     int64_t k0, int64_t kc, int64_t w, bool a_side) {
  const uint16_t *src = (const uint16_t *)(const void *)o->p;
  int64_t kp = (kc + 1) / 2, si = a_side ? o->rs : o->cs, sk = a_side ? o->cs : o->rs;
  bool words = sk == 1 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  if (words) { /* a row's pairs lie as words: each row read as words, in order */
    for (int64_t ip = 0; ip < ni; ip += w) {
      int64_t h = ni - ip < w ? ni - ip : w;
      uint32_t *d = dst + ip * kp;
      for (int64_t r = 0; r < h; r++) {
        const uint16_t *row = src + (i0 + ip + r) * si + k0;
        for (int64_t q = 0; q < kc / 2; q++) memcpy(&d[q * w + r], row + 2 * q, 4);
        if (kc % 2) d[(kp - 1) * w + r] = row[kc - 1]; /* the block's last step pairs with a 0 */
      }
      for (int64_t q = 0; q < kp; q++)
        for (int64_t r = h; r < w; r++) d[q * w + r] = 0;
    }
    return;
  }
  for (int64_t ip = 0; ip < ni; ip += w) {
    int64_t h = ni - ip < w ? ni - ip : w;
    uint32_t *d = dst + ip * kp;
    for (int64_t q = 0; q < kp; q++) {
      const uint16_t *lo = src + (i0 + ip) * si + (k0 + 2 * q) * sk, *hi = lo + sk;
      bool odd = 2 * q + 1 >= kc; /* the block's last step pairs with a 0 */
      if (si == 1 && !odd) /* two rows' runs interleaved: it vectorizes */
        for (int64_t r = 0; r < h; r++) d[q * w + r] = (uint32_t)lo[r] | (uint32_t)hi[r] << 16;
      else
        for (int64_t r = 0; r < h; r++)
          d[q * w + r] = (uint32_t)lo[r * si] | (odd ? 0u : (uint32_t)hi[r * si] << 16);
      for (int64_t r = h; r < w; r++) d[q * w + r] = 0;
    }
  }
}

static void pack_pairs(uint32_t *dst, const operand *o, int64_t i0, int64_t ni, int64_t k0,
                       int64_t kc, int64_t w, bool a_side) {
  if (!o->m) {
    pack_pairs_plain(dst, o, i0, ni, k0, kc, w, a_side);
    return;
  }
  int64_t kp = (kc + 1) / 2;
  for (int64_t ip = 0; ip < ni; ip += w) {
    int64_t h = ni - ip < w ? ni - ip : w;
    uint32_t *d = dst + ip * kp;
    for (int64_t r = 0; r < w; r++)
      for (int64_t q = 0; q < kp; q++) {
        uint32_t lo = 0, hi = 0;
        if (r < h) {
          lo = bf16_at(o, i0 + ip + r, k0 + 2 * q, a_side);
          hi = 2 * q + 1 < kc ? bf16_at(o, i0 + ip + r, k0 + 2 * q + 1, a_side) : 0;
        }
        d[q * w + r] = lo | hi << 16;
      }
  }
}

/* --- spans and the finite check ------------------------------------------------ */

/* What one batch computes: rows [i0, i1), columns [j0, j1), steps [k0, k1). */
typedef struct span {
  int64_t i0, i1, j0, j1, k0, k1;
  bool a_full; /* A's rows in [i0, i1) are all valid (padding: a key mask's rows) */
} span;

static inline bool valid_at(const operand *o, int64_t r, int64_t c) {
  return !o->m || o->m[r * o->mrs + c * o->mcs];
}

/* The rows (any valid entry along the columns) and columns spans of an
 * n x K masked operand, its mask read along whichever of its dims is
 * contiguous (a transpose by columns): each line from both ends up to its
 * first and last valid entry only. */
static void mask_spans(const operand *o, int64_t n, int64_t K, int64_t *r0, int64_t *r1,
                       int64_t *c0, int64_t *c1) {
  if (!o->m) {
    *r0 = 0, *r1 = n, *c0 = 0, *c1 = K;
    return;
  }
  bool by_cols = o->mrs == 1 && o->mcs != 1;
  int64_t lines = by_cols ? K : n, len = by_cols ? n : K, ls = by_cols ? o->mcs : o->mrs;
  int64_t es = by_cols ? o->mrs : o->mcs; /* 1 unless neither dim is contiguous */
  int64_t l0 = lines, l1 = 0, e0 = len, e1 = 0;
  for (int64_t l = 0; l < lines; l++) {
    const uint8_t *ml = o->m + l * ls;
    int64_t lo = 0, hi = len;
    if (es == 1) {
      if (!mq_valid_span(ml, len, &lo, &hi)) continue;
    } else {
      while (lo < len && !ml[lo * es]) lo++;
      if (lo == len) continue;
      while (!ml[(hi - 1) * es]) hi--;
    }
    if (l < l0) l0 = l;
    l1 = l + 1;
    if (lo < e0) e0 = lo;
    if (hi > e1) e1 = hi;
  }
  if (l0 >= l1) l0 = l1 = 0, e0 = e1 = 0;
  if (by_cols) *r0 = e0, *r1 = e1, *c0 = l0, *c1 = l1;
  else *r0 = l0, *r1 = l1, *c0 = e0, *c1 = e1;
}

/* Whether [o]'s mask is all valid over rows [r0, r1) and columns [c0, c1)
 * (false unless its rows or its columns are contiguous). */
static bool block_full(const operand *o, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (o->mcs == 1) {
    for (int64_t r = r0; r < r1; r++)
      if (memchr(o->m + r * o->mrs + c0, 0, (size_t)(c1 - c0))) return false;
    return true;
  }
  if (o->mrs == 1) {
    for (int64_t c = c0; c < c1; c++)
      if (memchr(o->m + c * o->mcs + r0, 0, (size_t)(r1 - r0))) return false;
    return true;
  }
  return false;
}

/* Some valid entry of [o] (n x K) is inf or NaN. */
MQ_WIDE static bool has_nonfinite(const operand *o, mq_dtype in, int64_t n, int64_t K) {
  /* float32 with a unit stride along rows or columns (a transpose): on
   * the bits, the unit stride inside, so that it vectorizes */
  bool rows = o->cs == 1 && (!o->m || o->mcs == 1), cols = o->rs == 1 && (!o->m || o->mrs == 1);
  if (in == MQ_DT_F32 && (rows || cols)) {
    int64_t outer = rows ? n : K, inner = rows ? K : n;
    int64_t os = rows ? o->rs : o->cs, ms = rows ? o->mrs : o->mcs;
    uint32_t bad = 0;
    for (int64_t r = 0; r < outer; r++) {
      const uint32_t *x = (const uint32_t *)(const void *)o->p + r * os;
      const uint8_t *m = o->m ? o->m + r * ms : NULL;
      if (m)
        for (int64_t c = 0; c < inner; c++) bad |= ((x[c] & 0x7f800000u) == 0x7f800000u) & (m[c] != 0);
      else
        for (int64_t c = 0; c < inner; c++) bad |= (x[c] & 0x7f800000u) == 0x7f800000u;
    }
    return bad;
  }
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < K; c++)
      if (valid_at(o, r, c) && !isfinite(read_in(o->p, in, r * o->rs + c * o->cs))) return true;
  return false;
}

/* --- the tiles ---------------------------------------------------------------- */

typedef struct job {
  const mq_gemm *G;
  mq_gemm_kernel kern;
  bool pairs;     /* bfloat16 pairs (gemm_kernels.h) */
  int cpu;        /* the CPU path (a result of few rows has a kernel of its own) */
  const span *sp; /* per batch, or NULL: everything */
  bool slow;      /* the pairs path (gemm.h: a valid inf or NaN meets a masked-out partner) */
  int64_t mc, nc, ti, tj; /* tile size, tiles per batch along i and j */
  char *pa, *pb;          /* per thread: MC x KC and KC x NC of the compute type */
  size_t pa_size, pb_size;
  struct packed_b *last; /* per thread: what its pb holds */
} job;

/* The block of B a thread's buffer holds: a tile of the next batch that
 * reads the same one (a weight shared by every batch) packs nothing. */
typedef struct packed_b {
  const char *p;
  const uint8_t *m;
  int64_t j0, j1, k0, kc;
} packed_b;

static void zero_rect(void *c, mq_dtype dt, int64_t ldc, int64_t i0, int64_t i1, int64_t j0,
                      int64_t j1) {
  size_t es = mq_dtype_size(dt);
  if (i0 >= i1 || j0 >= j1) return;
  for (int64_t i = i0; i < i1; i++) memset((char *)c + (i * ldc + j0) * (int64_t)es, 0, (size_t)(j1 - j0) * es);
}

/* Zeroes the parts of tile [i0, i1) x [j0, j1) outside [r] (all of it
 * when r is empty). */
static void zero_outside(void *c, mq_dtype dt, int64_t ldc, int64_t i0, int64_t i1, int64_t j0,
                         int64_t j1, const span *r) {
  if (r->i0 >= r->i1 || r->j0 >= r->j1) {
    zero_rect(c, dt, ldc, i0, i1, j0, j1);
    return;
  }
  zero_rect(c, dt, ldc, i0, r->i0, j0, j1);
  zero_rect(c, dt, ldc, r->i1, i1, j0, j1);
  zero_rect(c, dt, ldc, r->i0, r->i1, j0, r->j0);
  zero_rect(c, dt, ldc, r->i0, r->i1, r->j1, j1);
}

/* The pairs path on [r]: each chain over its steps, skipping a step whose
 * pair is not valid and holds an inf or NaN. */
static void tile_slow(const job *J, const operand *a, const operand *b, char *c, const span *r) {
  const mq_gemm *G = J->G;
  mq_dtype in = G->in, dt = G->dt;
  if (J->pairs) { /* the pairs' chain; a term not formed is a 0 in its word */
    for (int64_t i = r->i0; i < r->i1; i++)
      for (int64_t j = r->j0; j < r->j1; j++) {
        float *cp = (float *)c + i * G->ldc + j, acc = G->accumulate ? *cp : 0;
        for (int64_t k0 = r->k0; k0 < r->k1; k0 += KC) { /* pairs start at each block */
          int64_t k1 = k0 + KC < r->k1 ? k0 + KC : r->k1;
          for (int64_t k = k0; k < k1; k += 2) {
            uint32_t x = 0, y = 0;
            for (int64_t e = 0; e < 2 && k + e < k1; e++) {
              bool va = valid_at(a, i, k + e), vb = valid_at(b, k + e, j);
              uint32_t xa = bf16_at(a, i, k + e, true), yb = bf16_at(b, j, k + e, false);
              if (!(va && vb) && !(isfinite(mq_bf16_to_f32((uint16_t)xa)) &&
                                   isfinite(mq_bf16_to_f32((uint16_t)yb))))
                xa = yb = 0;
              x |= xa << (16 * e), y |= yb << (16 * e);
            }
            acc = mq_gemm_bf16_step(acc, x, y);
          }
        }
        *cp = acc;
      }
    return;
  }
  for (int64_t i = r->i0; i < r->i1; i++)
    for (int64_t j = r->j0; j < r->j1; j++) {
      double *c64 = (double *)c + i * G->ldc + j; /* dt's entry, one of the two */
      float *c32 = (float *)c + i * G->ldc + j;
      bool f64 = dt == MQ_DT_F64;
      double acc = !G->accumulate ? 0 : f64 ? *c64 : *c32; /* a float32 value, exact */
      for (int64_t k = r->k0; k < r->k1; k++) {
        bool va = valid_at(a, i, k), vb = valid_at(b, k, j);
        double x = va ? read_in(a->p, in, i * a->rs + k * a->cs) : 0;
        double y = vb ? read_in(b->p, in, k * b->rs + j * b->cs) : 0;
        if (!(va && vb) && !(isfinite(x) && isfinite(y))) continue;
        acc = f64 ? fma(x, y, acc) : fmaf((float)x, (float)y, (float)acc);
      }
      if (f64) *c64 = acc;
      else *c32 = (float)acc;
    }
}

/* The micro-kernel over one packed block: rows [0, ni) of the A panels
 * and columns [0, nj) of the B panels, into C at (ci, cj). Edge tiles go
 * through a full-size buffer. */
static void run_block(const job *J, const char *pa, const char *ad, int64_t ars, int64_t acs,
                      const char *pb, char *c, int64_t ci, int64_t cj, int64_t ni, int64_t nj,
                      int64_t kc, int load) {
  const mq_gemm *G = J->G;
  const mq_gemm_kernel *K = &J->kern;
  int64_t es = (int64_t)mq_dtype_size(G->dt), mr = K->mr, nr = K->nr, ldc = G->ldc;
  int64_t aes = (int64_t)mq_dtype_size(G->in); /* A read in place: its own elements */
  _Alignas(64) char edge[MQ_GEMM_MAX_TILE * 8];
  for (int64_t ip = 0; ip < ni; ip += mr) {
    int64_t h = ni - ip < mr ? ni - ip : mr;
    const char *ap = pa + ip * kc * es;
    bool direct = ad && h == mr; /* a full panel of A read in place */
    for (int64_t jp = 0; jp < nj; jp += nr) {
      int64_t w = nj - jp < nr ? nj - jp : nr;
      const char *bp = pb + jp * kc * es;
      char *cp = c + ((ci + ip) * ldc + cj + jp) * es;
      if (h == mr && w == nr) {
        if (direct) K->direct(kc, ad + ip * ars * aes, ars, acs, bp, cp, ldc, load);
        else K->fn(kc, ap, bp, cp, ldc, load);
        continue;
      }
      if (load)
        for (int64_t r = 0; r < h; r++) memcpy(edge + r * nr * es, cp + r * ldc * es, (size_t)(w * es));
      if (direct) K->direct(kc, ad + ip * ars * aes, ars, acs, bp, edge, nr, load);
      else K->fn(kc, ap, bp, edge, nr, load);
      for (int64_t r = 0; r < h; r++) memcpy(cp + r * ldc * es, edge + r * nr * es, (size_t)(w * es));
    }
  }
}

/* Tile [i0, i1) x [j0, j1) of batch b's product on thread t. */
static void tile_of_batch(const job *J, int t, int64_t b, int64_t i0, int64_t i1, int64_t j0,
                          int64_t j1) {
  const mq_gemm *G = J->G;
  int64_t es = (int64_t)mq_dtype_size(G->dt);
  char *pa = J->pa + (size_t)t * J->pa_size, *pb = J->pb + (size_t)t * J->pb_size;
  span r = {i0, i1, j0, j1, 0, G->K};
  if (J->sp) {
    const span *s = &J->sp[b];
    r.i0 = s->i0 > i0 ? s->i0 : i0, r.i1 = s->i1 < i1 ? s->i1 : i1;
    r.j0 = s->j0 > j0 ? s->j0 : j0, r.j1 = s->j1 < j1 ? s->j1 : j1;
    r.k0 = s->k0, r.k1 = s->k1;
  }
  if (r.k0 >= r.k1) r.i1 = r.i0; /* no step: every chain is empty */
  char *c = (char *)G->C + (G->coff ? G->coff[b] : 0) * es;
  if (!G->accumulate) zero_outside(c, G->dt, G->ldc, i0, i1, j0, j1, &r);
  if (r.i0 >= r.i1 || r.j0 >= r.j1) return;
  operand a = at_batch(&G->A, G->in, b), bb = at_batch(&G->B, G->in, b);
  if (J->slow) {
    tile_slow(J, &a, &bb, c, &r);
    return;
  }
  if (!J->pairs && G->in == MQ_DT_F32 && G->dt == MQ_DT_F32 && r.i1 - r.i0 <= 4 &&
      bb.cs == 1 && (!bb.m || bb.mcs == 1)) {
    const float *ap = (const float *)(const void *)a.p + r.i0 * a.rs + r.k0 * a.cs;
    const uint8_t *am = a.m ? a.m + r.i0 * a.mrs + r.k0 * a.mcs : NULL;
    const float *bp = (const float *)(const void *)bb.p + r.k0 * bb.rs + r.j0;
    const uint8_t *bm = bb.m ? bb.m + r.k0 * bb.mrs + r.j0 : NULL;
    if (mq_gemm_few_rows_f32(J->cpu, r.i1 - r.i0, r.j1 - r.j0, r.k1 - r.k0, ap, a.rs, a.cs, am,
                             a.mrs, a.mcs, bp, bb.rs, bm, bb.mrs,
                             (float *)(void *)c + r.i0 * G->ldc + r.j0, G->ldc, G->accumulate))
      return;
  }
  /* A's rows or columns contiguous and all valid (or all valid in its
   * span, where the tile's rows lie): the kernel reads them in place */
  /* (bfloat16: rows only, read as words, and an even number of steps) */
  int64_t aes = (int64_t)mq_dtype_size(G->in);
  bool in_place = J->pairs ? a.cs == 1 && (r.k1 - r.k0) % 2 == 0
                           : G->in == G->dt && (a.cs == 1 || a.rs == 1);
  const char *ad = J->kern.direct && in_place && (!a.m || (J->sp && J->sp[b].a_full))
                       ? a.p + r.i0 * a.rs * aes
                       : NULL;
  for (int64_t k0 = r.k0; k0 < r.k1; k0 += KC) {
    int64_t kc = r.k1 - k0 < KC ? r.k1 - k0 : KC;
    packed_b want = {bb.p, bb.m, r.j0, r.j1, k0, kc}, *have = J->last ? &J->last[t] : NULL;
    bool packed = have && !memcmp(have, &want, sizeof want);
    if (have) *have = want;
    if (J->pairs) {
      if (!packed)
        pack_pairs((uint32_t *)(void *)pb, &bb, r.j0, r.j1 - r.j0, k0, kc, J->kern.nr, false);
      if (ad) { /* full panels read in place; a last partial one packed */
        int64_t ni = r.i1 - r.i0, full = ni / J->kern.mr * J->kern.mr;
        if (full < ni)
          pack_pairs((uint32_t *)(void *)(pa + full * ((kc + 1) / 2) * es), &a, r.i0 + full,
                     ni - full, k0, kc, J->kern.mr, true);
      } else {
        pack_pairs((uint32_t *)(void *)pa, &a, r.i0, r.i1 - r.i0, k0, kc, J->kern.mr, true);
      }
      kc = (kc + 1) / 2; /* words, each of the element size of float32 */
    } else {
      if (!packed) pack(pb, G->dt, &bb, G->in, r.j0, r.j1 - r.j0, k0, kc, J->kern.nr, false);
      if (ad) { /* full panels read in place; a last partial one packed */
        int64_t ni = r.i1 - r.i0, full = ni / J->kern.mr * J->kern.mr;
        if (full < ni) pack(pa + full * kc * es, G->dt, &a, G->in, r.i0 + full, ni - full, k0, kc, J->kern.mr, true);
      } else {
        pack(pa, G->dt, &a, G->in, r.i0, r.i1 - r.i0, k0, kc, J->kern.mr, true);
      }
    }
    run_block(J, pa, ad ? ad + k0 * a.cs * aes : NULL, a.rs, a.cs, pb, c, r.i0, r.j0, r.i1 - r.i0,
              r.j1 - r.j0, kc, G->accumulate || k0 > r.k0);
  }
}

/* Tiles [lo, hi) of the batches' results: q = batch * tiles + tile; with
 * sum_batches, tiles of the one result, each taking every batch in
 * order. */
static void tiles(void *ctx, int64_t lo, int64_t hi, int t) {
  const job *J = ctx;
  const mq_gemm *G = J->G;
  int64_t per = J->ti * J->tj;
  for (int64_t q = lo; q < hi; q++) {
    int64_t rest = q % per;
    int64_t i0 = rest / J->tj * J->mc, j0 = rest % J->tj * J->nc;
    int64_t i1 = i0 + J->mc < G->n ? i0 + J->mc : G->n, j1 = j0 + J->nc < G->m ? j0 + J->nc : G->m;
    if (!G->sum_batches) tile_of_batch(J, t, q / per, i0, i1, j0, j1);
    else
      for (int64_t b = 0; b < G->nbatch; b++) tile_of_batch(J, t, b, i0, i1, j0, j1);
  }
}

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* Tiles of MC x NC for [nt] threads: NC columns (B's block, KC x NC, in
 * L2 for all of a tile's rows), MC rows of MR-high panels (A's block: one
 * panel in L1 while it meets every panel of B's block, so the block can
 * be large, which packs B's blocks fewer times), halved (columns first)
 * while there are too few tiles for every thread to take several. */
static void tile_sizes(job *J, int nt) {
  const mq_gemm *G = J->G;
  int64_t mr = J->kern.mr, nr = J->kern.nr, ncmax = G->dt == MQ_DT_F64 ? 256 : 512;
  int64_t mc = round_up(G->n < 256 * mr ? (G->n > 0 ? G->n : 1) : 256 * mr, mr);
  int64_t nc = round_up(G->m < ncmax ? (G->m > 0 ? G->m : 1) : ncmax, nr);
  for (;;) {
    int64_t ntile = (G->sum_batches ? 1 : G->nbatch) * ((G->n + mc - 1) / mc) * ((G->m + nc - 1) / nc);
    if (nt == 1 || ntile >= 4 * nt) break;
    /* columns first: a tile packs its own block of B (no copy twice) and
     * reads A in place where it can; rows split once columns are few */
    if (nc > 4 * nr) nc = round_up(nc / 2, nr);
    else if (mc > mr) mc = round_up(mc / 2, mr);
    else if (nc > nr) nc = round_up(nc / 2, nr);
    else break;
  }
  J->mc = mc, J->nc = nc, J->ti = (G->n + mc - 1) / mc, J->tj = (G->m + nc - 1) / nc;
  int64_t es = (int64_t)mq_dtype_size(G->dt), kc = G->K < KC ? (G->K > 0 ? G->K : 1) : KC;
  J->pa_size = (size_t)round_up(mc * kc * es, 64), J->pb_size = (size_t)round_up(nc * kc * es, 64);
}

/* The plain product of the serial form as a one-batch mq_gemm. */
static mq_gemm serial_gemm(mq_dtype dt, int64_t n, int64_t m, int64_t K, const void *a,
                           int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc) {
  return (mq_gemm){.in = dt, .dt = dt, .nbatch = 1, .n = n, .m = m, .K = K,
                   .A = {.p = a, .rs = lda, .cs = 1}, .B = {.p = b, .rs = ldb, .cs = 1},
                   .C = c, .ldc = ldc};
}

size_t mq_gemm_serial_bytes(int cpu, mq_dtype dt, int64_t n, int64_t m, int64_t K) {
  mq_gemm G = serial_gemm(dt, n, m, K, NULL, 0, NULL, 0, NULL, 0);
  job J = {.G = &G, .cpu = cpu, .kern = mq_gemm_kernel_for(cpu, dt == MQ_DT_F64 ? MQ_GEMM_F64 : MQ_GEMM_F32)};
  tile_sizes(&J, 1);
  return J.pa_size + J.pb_size;
}

void mq_gemm_serial(int cpu, mq_dtype dt, int64_t n, int64_t m, int64_t K, const void *a,
                    int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc, void *buf) {
  if (n <= 0 || m <= 0) return;
  mq_gemm G = serial_gemm(dt, n, m, K, a, lda, b, ldb, c, ldc);
  job J = {.G = &G, .cpu = cpu, .kern = mq_gemm_kernel_for(cpu, dt == MQ_DT_F64 ? MQ_GEMM_F64 : MQ_GEMM_F32)};
  tile_sizes(&J, 1);
  J.pa = buf, J.pb = (char *)buf + J.pa_size;
  tiles(&J, 0, J.ti * J.tj, 0);
}

/* [X] read transposed. */
static mq_gemm_mat transposed(mq_gemm_mat X) {
  int64_t t = X.rs;
  X.rs = X.cs, X.cs = t;
  t = X.mrs;
  X.mrs = X.mcs, X.mcs = t;
  return X;
}

/* A narrow product (a few columns: h @ w with w (K, 3), a backward's
 * a^T @ g) as C^T = B^T @ A^T, so that its long side fills the vectors
 * (the kernel's 32 columns would be mostly padding): each entry is the
 * same chain, fma(a, b, c) being fma(b, a, c), and a bfloat16 pair's step
 * is as symmetric. Computed into a buffer, written back transposed. */
/* C's batches to the buffer [t] of their transposes ([to_t]), or back. */
static void copy_transposed(const mq_gemm *G, char *t, bool to_t) {
  int64_t n = G->n, m = G->m, es = (int64_t)mq_dtype_size(G->dt);
  for (int64_t b = 0; b < (G->sum_batches ? 1 : G->nbatch); b++) { /* C's matrices */
    char *c = (char *)G->C + (G->coff ? G->coff[b] : 0) * es, *tb = t + b * n * m * es;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < m; j++) {
        char *ce = c + (i * G->ldc + j) * es, *te = tb + (j * n + i) * es;
        memcpy(to_t ? te : ce, to_t ? ce : te, (size_t)es);
      }
  }
}

static void run_transposed(mq_state *S, const mq_gemm *G) {
  int64_t per = G->n * G->m, nc = G->sum_batches ? 1 : G->nbatch; /* C's matrices */
  size_t bytes = mq_ck_zmul(S, mq_ck_zmul(S, (size_t)per, (size_t)nc, "matmul"),
                            mq_dtype_size(G->dt), "matmul");
  char *buf = mq_scratch(S, bytes);
  int64_t *coff = mq_scratch(S, (size_t)nc * sizeof *coff);
  for (int64_t b = 0; b < nc; b++) coff[b] = b * per;
  mq_gemm T = *G;
  T.n = G->m, T.m = G->n, T.A = transposed(G->B), T.B = transposed(G->A);
  T.C = buf, T.ldc = G->n, T.coff = G->sum_batches ? NULL : coff;
  if (G->accumulate) copy_transposed(G, buf, true);
  mq_gemm_run(S, &T);
  copy_transposed(G, buf, false);
}

void mq_gemm_run(mq_state *S, const mq_gemm *G) {
  if (G->nbatch <= 0 || G->n <= 0 || G->m <= 0) return;
  MQ_ASSERT(!G->sum_batches || (G->accumulate && !G->coff));
  if (G->m < 8 && G->n >= 4 * G->m) { /* never both ways: n >= 4 m */
    run_transposed(S, G);
    return;
  }
  bool pairs = G->in == MQ_DT_BF16;
  job J = {.G = G, .pairs = pairs, .cpu = S->cpu,
           .kern = mq_gemm_kernel_for(S->cpu, pairs ? MQ_GEMM_BF16
                                              : G->dt == MQ_DT_F64 ? MQ_GEMM_F64 : MQ_GEMM_F32)};
  bool masked = G->A.m || G->B.m || G->keep.m;
  if (masked) {
    span *sp = mq_scratch(S, (size_t)G->nbatch * sizeof *sp);
    operand seen_a = {0}, seen_b = {0};
    for (int64_t b = 0; b < G->nbatch; b++) {
      operand a = at_batch(&G->A, G->in, b), bb = at_batch(&G->B, G->in, b);
      int64_t ak0, ak1, bk0, bk1;
      mask_spans(&a, G->n, G->K, &sp[b].i0, &sp[b].i1, &ak0, &ak1);
      mask_spans(&bb, G->K, G->m, &bk0, &bk1, &sp[b].j0, &sp[b].j1);
      sp[b].k0 = ak0 > bk0 ? ak0 : bk0, sp[b].k1 = ak1 < bk1 ? ak1 : bk1;
      if (G->keep.m) { /* only C's wanted rows and columns */
        const mq_gemm_mat *K = &G->keep;
        operand kp = {.m = K->m + (K->moff ? K->moff[b] : 0), .mrs = K->mrs, .mcs = K->mcs};
        int64_t r0, r1, c0, c1;
        mask_spans(&kp, G->n, G->m, &r0, &r1, &c0, &c1);
        if (r0 > sp[b].i0) sp[b].i0 = r0;
        if (r1 < sp[b].i1) sp[b].i1 = r1;
        if (c0 > sp[b].j0) sp[b].j0 = c0;
        if (c1 < sp[b].j1) sp[b].j1 = c1;
      }
      /* all valid where the tiles read them (a padded batch: its invalid
       * rows and columns lie outside the spans), so nothing is zeroed there */
      bool full = sp[b].k0 < sp[b].k1 && sp[b].i0 < sp[b].i1 && sp[b].j0 < sp[b].j1;
      sp[b].a_full = !a.m || (full && block_full(&a, sp[b].i0, sp[b].i1, sp[b].k0, sp[b].k1));
      bool b_full = !bb.m || (full && block_full(&bb, sp[b].k0, sp[b].k1, sp[b].j0, sp[b].j1));
      /* a valid inf or NaN meets a zeroed partner only where the other
       * operand has one; a broadcast operand is looked at once */
      if (!J.slow && !b_full && (a.p != seen_a.p || a.m != seen_a.m)) {
        J.slow = has_nonfinite(&a, G->in, G->n, G->K);
        seen_a = a;
      }
      if (!J.slow && !sp[b].a_full && (bb.p != seen_b.p || bb.m != seen_b.m)) {
        J.slow = has_nonfinite(&bb, G->in, G->K, G->m);
        seen_b = bb;
      }
      mq_poll(S);
    }
    J.sp = sp;
  }
  /* multiply-adds, saturated: it only picks the thread count; a thread
   * pays off from about 2^24 of them (tens of microseconds) */
  int64_t work = INT64_MAX, nm, km;
  if (mq_mul_ok(G->n, G->m, &nm) && mq_mul_ok(nm, G->K > 0 ? G->K : 1, &km) &&
      mq_mul_ok(km, G->nbatch, &work))
    work /= 16;
  int nt = mq_parallel_threads_for(S, work);
  tile_sizes(&J, nt);
  /* the packing buffers: the state's kept buffer, whose pages stay
   * mapped from one product to the next (a fresh one faults them in) */
  size_t all = mq_ck_zmul(S, J.pa_size + J.pb_size, (size_t)nt, "matmul packing buffers");
  J.pa = mq_kept(S, all + 64);
  J.pa += (64 - (uintptr_t)J.pa % 64) % 64;
  J.pb = J.pa + J.pa_size * (size_t)nt;
  J.last = mq_scratch(S, (size_t)nt * sizeof *J.last);
  memset(J.last, 0, (size_t)nt * sizeof *J.last);
  mq_parallel_for(S, nt, (G->sum_batches ? 1 : G->nbatch) * J.ti * J.tj, 1, tiles, &J);
}
