/* strfind.c - Two-Way substring search (strfind.h).
 *
 * The pattern x is cut at a critical position into u = x[0..ell] and
 * v = x[ell+1..m), found from the maximal suffixes of x under the byte
 * order and under its reverse. A search compares v left to right, then u
 * right to left: a mismatch in v shifts by the number of bytes of v that
 * matched, a mismatch in u (or a match) by the period. When u repeats with
 * the period of x, a match shifts by exactly that period and the bytes
 * known to match again (up to [memory]) are not compared twice. Either
 * way each text byte is compared a bounded number of times.
 *
 * rfind is the same search on the reversed text for the reversed
 * pattern: the pair of functions below is written once over an accessor
 * and made twice, forward (FWD) and backward (BWD). */
#include "strfind.h"

/* Text bytes compared between two polls of the interrupt hook. */
#define FIND_POLL ((uint64_t)1 << 16)
/* ... and within one long comparison (a pattern of megabytes), every 2^20. */
#define LONG_MATCH (((int64_t)1 << 20) - 1)

#define FWD(p, len, i) ((p)[i])
#define BWD(p, len, i) ((p)[(len) - 1 - (i)])

/* The start - 1 of the maximal suffix of the pattern (as the accessor AT
 * reads it) under the byte order, or its reverse when [flip]; its period
 * in *period. */
#define DEF_MAX_SUFFIX(NAME, AT)                                                 \
  static int64_t NAME(const unsigned char *x, int64_t m, bool flip, size_t *period) { \
    int64_t ms = -1, j = 0, k = 1, p = 1;                                        \
    while (j + k < m) {                                                          \
      unsigned char a = AT(x, m, j + k), b = AT(x, m, ms + k);                   \
      if (flip ? a > b : a < b) { /* the suffix at ms + 1 goes on: longer period */ \
        j += k;                                                                  \
        k = 1;                                                                   \
        p = j - ms;                                                              \
      } else if (a == b) { /* within the period */                               \
        if (k != p) k++;                                                         \
        else {                                                                   \
          j += p;                                                                \
          k = 1;                                                                 \
        }                                                                        \
      } else { /* a larger suffix starts at j */                                 \
        ms = j;                                                                  \
        j = ms + 1;                                                              \
        k = p = 1;                                                               \
      }                                                                          \
    }                                                                            \
    *period = (size_t)p;                                                         \
    return ms;                                                                   \
  }

/* The search: the first view position >= from where the pattern starts,
 * in view coordinates (the accessor's), or -1. */
#define DEF_SEARCH(NAME, AT)                                                     \
  static int64_t NAME(mq_state *S, const mq_finder *f, const unsigned char *y, int64_t n, \
                      int64_t from) {                                            \
    const unsigned char *x = f->pat;                                             \
    int64_t m = (int64_t)f->m, ell = f->ell, per = (int64_t)f->period, mem = -1; \
    uint64_t work = 0;                                                           \
    for (int64_t j = from; j <= n - m;) {                                        \
      int64_t i = (ell > mem ? ell : mem) + 1, start = i;                        \
      while (i < m && AT(x, m, i) == AT(y, n, i + j))                            \
        if ((++i & LONG_MATCH) == 0) mq_check_interrupt(S);                      \
      work += (uint64_t)(i - start) + 1;                                         \
      if (i < m) { /* v mismatched: shift past what matched of it */             \
        j += i - ell;                                                            \
        mem = -1;                                                                \
      } else {                                                                   \
        int64_t stop = f->periodic ? mem : -1;                                   \
        i = ell;                                                                 \
        while (i > stop && AT(x, m, i) == AT(y, n, i + j))                       \
          if ((i-- & LONG_MATCH) == 0) mq_check_interrupt(S);                    \
        work += (uint64_t)(ell - i) + 1;                                         \
        if (i <= stop) return j;                                                 \
        j += per;                                                                \
        mem = f->periodic ? m - per - 1 : -1;                                    \
      }                                                                          \
      if (work >= FIND_POLL) {                                                   \
        work = 0;                                                                \
        mq_check_interrupt(S);                                                   \
      }                                                                          \
    }                                                                            \
    return -1;                                                                   \
  }

DEF_MAX_SUFFIX(max_suffix_fwd, FWD)
DEF_MAX_SUFFIX(max_suffix_bwd, BWD)
DEF_SEARCH(search_fwd, FWD)
DEF_SEARCH(search_bwd, BWD)

void mq_finder_init(mq_finder *f, const char *pat, size_t m, bool back) {
  const unsigned char *x = (const unsigned char *)pat;
  *f = (mq_finder){x, m, -1, 1, true, back};
  if (m == 0) return;
  size_t p, q;
  int64_t n = (int64_t)m;
  int64_t i = back ? max_suffix_bwd(x, n, false, &p) : max_suffix_fwd(x, n, false, &p);
  int64_t j = back ? max_suffix_bwd(x, n, true, &q) : max_suffix_fwd(x, n, true, &q);
  f->ell = i > j ? i : j;
  f->period = i > j ? p : q;
  /* Is u a suffix of v's period, x[0..ell] == x[per..per+ell]? The
   * maximal suffix has length m - ell - 1 >= its period, so per + ell < m. */
  for (int64_t k = 0; k <= f->ell && f->periodic; k++)
    f->periodic = back ? BWD(x, n, k) == BWD(x, n, k + (int64_t)f->period)
                       : x[k] == x[k + (int64_t)f->period];
  if (!f->periodic) { /* a shift that cannot skip a match */
    size_t left = (size_t)(f->ell + 1), right = m - left;
    f->period = (left > right ? left : right) + 1;
  }
}

int64_t mq_find(mq_state *S, const mq_finder *f, const char *hay, size_t n, size_t from) {
  if (from > n || f->m > n - from) return f->m == 0 && from <= n ? (int64_t)from : -1;
  if (f->m == 0) return (int64_t)from;
  return search_fwd(S, f, (const unsigned char *)hay, (int64_t)n, (int64_t)from);
}

int64_t mq_rfind(mq_state *S, const mq_finder *f, const char *hay, size_t n) {
  if (f->m > n) return -1;
  if (f->m == 0) return (int64_t)n;
  int64_t at = search_bwd(S, f, (const unsigned char *)hay, (int64_t)n, 0);
  return at < 0 ? -1 : (int64_t)n - at - (int64_t)f->m;
}
