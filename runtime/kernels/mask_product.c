/* mask_product.c - which entries of a matrix product a valid term reaches
 * (gemm.h: mq_mask_product): the boolean product OR_k x(i, k) & y(k, j),
 * the output mask of matmul and the masks of its gradients.
 *
 * y's rows are packed into bits once, so that a row of the result is an
 * OR of a few words per valid x(i, k) instead of m bytes, and stops as
 * soon as it holds every bit some row of y has (a padded product: after
 * its first valid step). x is read along whichever of its dims is
 * contiguous; masked-out runs of it are skipped eight bytes at a time. */
#include "gemm.h"

#include "../tensor/internal.h"

#include <string.h>

/* bit i of the result: byte i of v (little-endian) nonzero */
static inline uint64_t pack8(uint64_t v) {
  v |= v >> 4, v |= v >> 2, v |= v >> 1;
  v &= 0x0101010101010101u;
  return (v * 0x0102040810204080u) >> 56;
}

/* byte i of the result: bit i of b (b < 256), as 0 or 1 */
static inline uint64_t spread8(uint64_t b) {
  uint64_t x = b;
  x = (x | x << 28) & 0x0000000F0000000Fu;
  x = (x | x << 14) & 0x0003000300030003u;
  return (x | x << 7) & 0x0101010101010101u;
}

/* the [n] (at most 8) bytes at p as a word, the rest 0 (a full word is
 * one load: a copy of a constant size) */
static inline uint64_t load8(const uint8_t *p, int64_t n) {
  uint64_t v = 0;
  if (n >= 8) memcpy(&v, p, 8);
  else memcpy(&v, p, (size_t)n);
  return v;
}

static int64_t words(int64_t m) { return (m + 63) / 64; }

size_t mq_mask_product_bytes(int64_t n, int64_t K, int64_t m) {
  int64_t w = words(m);
  return (size_t)((K + 1 + n) * w) * sizeof(uint64_t) + (size_t)(n + m) + 8;
}

/* row [o] (m bytes) |= the bits [acc]: 64 at a time when they are all
 * set or all clear (a padded row: runs of both) */
static void expand_or(uint8_t *o, const uint64_t *acc, int64_t m) {
  for (int64_t j0 = 0; j0 < m; j0 += 64) {
    int64_t nb = m - j0 < 64 ? m - j0 : 64;
    uint64_t all = nb == 64 ? ~(uint64_t)0 : ((uint64_t)1 << nb) - 1, a = acc[j0 / 64] & all;
    if (a == 0) continue;
    if (a == all) {
      memset(o + j0, 1, (size_t)nb);
      continue;
    }
    for (int64_t j = 0; j < nb; j += 8) {
      int64_t k = nb - j < 8 ? nb - j : 8;
      uint64_t cur = load8(o + j0 + j, k) | spread8(a >> j & 0xff);
      memcpy(o + j0 + j, &cur, (size_t)k);
    }
  }
}

static bool same_words(const uint64_t *a, const uint64_t *b, int64_t w) {
  for (int64_t q = 0; q < w; q++)
    if (a[q] != b[q]) return false;
  return true;
}

/* (static: clang makes no clones of a function other files call) */
MQ_WIDE static void mask_product(uint8_t *om, int64_t n, int64_t K, int64_t m, const uint8_t *x,
                                 int64_t xrs, int64_t xcs, const uint8_t *y, int64_t yrs,
                                 int64_t ycs, void *ws) {
  if (n <= 0 || m <= 0 || K <= 0) return;
  int64_t w = words(m);
  uint64_t *yb = ws, *u = yb + K * w, *acc = u + w;
  uint8_t *any = (uint8_t *)(acc + n * w);
  bool by_cols = x && xrs == 1 && xcs != 1; /* x transposed: read along i */
  if (!x && y && ycs == 1) { /* every row is the union of y's rows: ORed as bytes */
    uint8_t *un = (uint8_t *)(yb + (K + 1 + n) * w) + n;
    memset(un, 0, (size_t)m);
    for (int64_t k = 0; k < K; k++) {
      const uint8_t *r = y + k * yrs;
      for (int64_t j = 0; j < m; j++) un[j] |= r[j];
    }
    for (int64_t i = 0; i < n; i++) {
      uint8_t *o = om + i * m;
      for (int64_t j = 0; j < m; j++) o[j] |= un[j] != 0;
    }
    return;
  }
  /* y as bits, and their union */
  memset(u, 0, (size_t)w * sizeof *u);
  if (y) {
    memset(yb, 0, (size_t)(K * w) * sizeof *yb);
    if (ycs == 1 || yrs != 1) {
      for (int64_t k = 0; k < K; k++) {
        const uint8_t *r = y + k * yrs;
        uint64_t *bk = yb + k * w;
        if (ycs == 1)
          for (int64_t j = 0; j < m; j += 8) {
            uint64_t v = load8(r + j, m - j);
            if (v) bk[j / 64] |= (v == 0x0101010101010101u ? 0xff : pack8(v)) << (j % 64);
          }
        else
          for (int64_t j = 0; j < m; j++) bk[j / 64] |= (uint64_t)(r[j * ycs] != 0) << (j % 64);
      }
    } else { /* y's columns contiguous: each column's bit set down its rows */
      for (int64_t j = 0; j < m; j++) {
        const uint8_t *c = y + j * ycs;
        uint64_t bit = (uint64_t)1 << (j % 64);
        for (int64_t k = 0; k < K; k++) yb[k * w + j / 64] |= c[k] ? bit : 0;
      }
    }
    for (int64_t k = 0; k < K; k++)
      for (int64_t q = 0; q < w; q++) u[q] |= yb[k * w + q];
  } else {
    for (int64_t j = 0; j < m; j += 64) u[j / 64] = m - j >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << (m - j)) - 1;
  }
  if (!x) { /* every row reaches every column some row of y has */
    for (int64_t i = 0; i < n; i++) expand_or(om + i * m, u, m);
    return;
  }
  if (by_cols) {
    /* step by step over contiguous runs of x's rows i: a step whose row of
     * y holds the union (or with y all valid: any step) makes its rows
     * full, which a byte per row records; only the other steps OR words,
     * and only into rows not full yet */
    memset(acc, 0, (size_t)(n * w) * sizeof *acc);
    memset(any, 0, (size_t)n);
    for (int64_t k = 0; k < K; k++) {
      const uint8_t *xk = x + k * xcs;
      const uint64_t *bk = y ? yb + k * w : u;
      if (same_words(bk, u, w)) {
        for (int64_t i = 0; i < n; i++) any[i] |= xk[i];
        continue;
      }
      bool zero = true;
      for (int64_t q = 0; q < w; q++) zero &= bk[q] == 0;
      if (zero) continue;
      for (int64_t i0 = 0; i0 < n; i0 += 8) { /* eight of x's bytes at a time */
        int64_t nb = n - i0 < 8 ? n - i0 : 8;
        uint64_t v = load8(xk + i0, nb);
        if (!v) continue;
        for (int64_t i = i0; i < i0 + nb; i++, v >>= 8)
          if ((v & 0xff) && !any[i])
            for (int64_t q = 0; q < w; q++) acc[i * w + q] |= bk[q];
      }
    }
    for (int64_t i = 0; i < n; i++) expand_or(om + i * m, any[i] ? u : acc + i * w, m);
    return;
  }
  for (int64_t i = 0; i < n; i++) { /* row by row, each stopping once full */
    const uint8_t *xi = x + i * xrs;
    uint64_t *a = acc;
    memset(a, 0, (size_t)w * sizeof *a);
    bool hit = false;
    for (int64_t k = 0; k < K;) {
      if (xcs == 1 && K - k >= 8 && load8(xi + k, 8) == 0) {
        k += 8;
        continue;
      }
      if (xi[k * xcs]) {
        hit = true;
        if (!y) break;
        for (int64_t q = 0; q < w; q++) a[q] |= yb[k * w + q];
        if (same_words(a, u, w)) break;
      }
      k++;
    }
    if (hit) expand_or(om + i * m, y ? a : u, m);
  }
}

void mq_mask_product(uint8_t *om, int64_t n, int64_t K, int64_t m, const uint8_t *x, int64_t xrs,
                     int64_t xcs, const uint8_t *y, int64_t yrs, int64_t ycs, void *ws) {
  mask_product(om, n, K, m, x, xrs, xcs, y, yrs, ycs, ws);
}
