/* test_strfind.c - the Two-Way substring search (core/strfind.h) against
 * the plain search it replaced, on random texts over small alphabets
 * (where periods, borders and near misses are common) and on the patterns
 * that defeat a naive search; mq_find from every start and mq_rfind.
 * The string methods that use it are tests/lang/strings_search; their
 * speed on the worst cases tests/api/test_deadlines.c. */
#include <string.h>

#include "../../core/strfind.h"

#include "unit.h"

static int64_t naive_find(const char *h, size_t n, const char *p, size_t m, size_t from) {
  for (size_t i = from; i <= n && m <= n - i; i++)
    if (memcmp(h + i, p, m) == 0) return (int64_t)i;
  return -1;
}

static int64_t naive_rfind(const char *h, size_t n, const char *p, size_t m) {
  if (m > n) return -1;
  for (size_t i = n - m + 1; i-- > 0;)
    if (memcmp(h + i, p, m) == 0) return (int64_t)i;
  return -1;
}

static uint64_t rng = 88172645463325252u;
static unsigned next_rand(void) { /* xorshift64: the same cases every run */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (unsigned)(rng >> 32);
}

/* One pattern against one text: every start for find, and rfind. */
static bool agrees(const char *h, size_t n, const char *p, size_t m) {
  mq_finder f, b;
  mq_finder_init(&f, p, m, false);
  mq_finder_init(&b, p, m, true);
  for (size_t from = 0; from <= n + 1; from++)
    if (mq_find(S, &f, h, n, from) != naive_find(h, n, p, m, from)) return false;
  return mq_rfind(S, &b, h, n) == naive_rfind(h, n, p, m);
}

static void test_random(void) {
  char h[64], p[12];
  int bad = 0;
  for (int round = 0; round < 20000; round++) {
    unsigned alpha = 1 + next_rand() % 3; /* 'a', 'a'-'b' or 'a'-'c' */
    size_t n = next_rand() % sizeof h, m = next_rand() % sizeof p;
    for (size_t i = 0; i < n; i++) h[i] = (char)('a' + next_rand() % alpha);
    for (size_t i = 0; i < m; i++) p[i] = (char)('a' + next_rand() % alpha);
    if (m && n > m && next_rand() % 2) /* plant it, so matches are common */
      memcpy(h + next_rand() % (n - m + 1), p, m);
    bad += !agrees(h, n, p, m);
  }
  CHECK(bad == 0);
}

/* Bytes above 127 order after the ASCII ones (the factorization compares
 * them as unsigned), and NUL bytes are bytes like any other. */
static void test_bytes(void) {
  const char h[] = "x\xff\x80\0\xff\x80\0\xff y", p[] = "\xff\x80\0\xff";
  CHECK(agrees(h, sizeof h - 1, p, sizeof p - 1));
  CHECK(agrees(h, sizeof h - 1, "\0", 1));
  CHECK(agrees("abc", 3, "", 0));
}

/* 'a' * n + 'b' for 'a' * m + 'b' and its mirror: what took a naive
 * search n * m steps. Linear: instant. */
static void test_worst_case(void) {
  size_t n = 2000000, m = 100000;
  char *h = mq_scratch(S, n + 1), *p = mq_scratch(S, m + 1);
  memset(h, 'a', n);
  h[n] = 'b';
  memset(p, 'a', m);
  p[m] = 'b';
  mq_finder f, b;
  mq_finder_init(&f, p, m + 1, false);
  CHECK(mq_find(S, &f, h, n + 1, 0) == (int64_t)(n - m));
  CHECK(mq_find(S, &f, h, n, 0) == -1);
  p[0] = 'b', p[m] = 'a'; /* 'b' + 'a' * m, searched backward in 'a' * n */
  mq_finder_init(&b, p, m + 1, true);
  CHECK(mq_rfind(S, &b, h, n) == -1);
  h[0] = 'b';
  CHECK(mq_rfind(S, &b, h, n) == 0);
}

static void tests(mq_state *st, void *ud) {
  (void)st, (void)ud;
  test_random();
  test_bytes();
  test_worst_case();
}

int main(void) { return unit_main("test_strfind", tests); }
