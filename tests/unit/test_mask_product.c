/* test_mask_product.c - the boolean product behind matmul's masks
 * (runtime/kernels/gemm.h: mq_mask_product), against its definition
 * written out byte by byte: om[i, j] |= OR_k x(i, k) & y(k, j). Shapes on
 * both sides of the bit words' edges (m of 1, 7, 8, 63, 64, 65, 200) and
 * of the eight-byte skips (K of 1, 7, 9, 70), x and y read by rows, by
 * columns and with neither contiguous, NULL for all valid, masks random,
 * padding-shaped (a row valid on a prefix) and empty, bytes other than 1
 * read as valid, and a result ORed into what it held. */
#include <string.h>

#include "../../runtime/kernels/gemm.h"

#include "unit.h"

static uint64_t seed = 88172645463325252u;
static unsigned next(void) {
  seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
  return (unsigned)(seed >> 11);
}

/* a mask of r x c bytes (row-major): kind 0 random, 1 each row valid on a
 * prefix, 2 none valid, 3 sparse */
static void fill(uint8_t *p, int64_t r, int64_t c, int kind) {
  for (int64_t i = 0; i < r; i++) {
    int64_t len = (int64_t)(next() % (unsigned)(c + 1));
    for (int64_t j = 0; j < c; j++) {
      unsigned v = kind == 0 ? next() % 2 : kind == 1 ? j < len : kind == 2 ? 0 : next() % 17 == 0;
      p[i * c + j] = (uint8_t)(v ? 1 + next() % 3 : 0); /* any nonzero byte is valid */
    }
  }
}

static void products(mq_state *S_, void *ud) {
  (void)S_, (void)ud;
  static const int64_t ns[] = {1, 5, 13}, ks[] = {1, 7, 9, 70}, ms[] = {1, 7, 8, 63, 64, 65, 200};
  for (size_t a = 0; a < 3; a++)
    for (size_t b = 0; b < 4; b++)
      for (size_t c = 0; c < 7; c++)
        for (int kx = 0; kx < 5; kx++)     /* 4: x NULL */
          for (int ky = 0; ky < 5; ky++)   /* 4: y NULL */
            for (int lay = 0; lay < 9; lay++) { /* x and y: rows, columns, neither */
              int64_t n = ns[a], K = ks[b], m = ms[c];
              int xl = lay % 3, yl = lay / 3;
              uint8_t *xs = mq_scratch(S, (size_t)(2 * n * K + 1)), *ys = mq_scratch(S, (size_t)(2 * K * m + 1));
              uint8_t xm[13 * 70], ym[70 * 200];
              fill(xm, n, K, kx % 4);
              fill(ym, K, m, ky % 4);
              /* lay out x(i, k) by rows (i K + k), by columns (k n + i) or
               * every other byte of rows (2 (i K + k)); y the same */
              int64_t xrs = xl == 0 ? K : xl == 1 ? 1 : 2 * K, xcs = xl == 0 ? 1 : xl == 1 ? n : 2;
              int64_t yrs = yl == 0 ? m : yl == 1 ? 1 : 2 * m, ycs = yl == 0 ? 1 : yl == 1 ? K : 2;
              memset(xs, 0xee, (size_t)(2 * n * K + 1));
              memset(ys, 0xee, (size_t)(2 * K * m + 1));
              for (int64_t i = 0; i < n; i++)
                for (int64_t k = 0; k < K; k++) xs[i * xrs + k * xcs] = xm[i * K + k];
              for (int64_t k = 0; k < K; k++)
                for (int64_t j = 0; j < m; j++) ys[k * yrs + j * ycs] = ym[k * m + j];
              uint8_t *om = mq_scratch(S, (size_t)(n * m)), want[13 * 200];
              for (int64_t q = 0; q < n * m; q++) om[q] = want[q] = (uint8_t)(next() % 7 == 0);
              for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < m; j++)
                  for (int64_t k = 0; k < K; k++)
                    if ((kx == 4 || xm[i * K + k]) && (ky == 4 || ym[k * m + j])) want[i * m + j] = 1;
              void *ws = mq_scratch(S, mq_mask_product_bytes(n, K, m));
              mq_mask_product(om, n, K, m, kx == 4 ? NULL : xs, xrs, xcs, ky == 4 ? NULL : ys, yrs, ycs, ws);
              CHECK(memcmp(om, want, (size_t)(n * m)) == 0);
            }
}

int main(void) { return unit_main("test_mask_product", products); }
