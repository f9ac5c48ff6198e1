/* check.h - what the C API tests share (tests/api/test_*.c). Each test file
 * is a host program that sees only <masq.h> and prints one
 * "name: N passed, N failed" line for tests/run_units.sh. */
#ifndef CHECK_H
#define CHECK_H

#include <masq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) passed++;                                                        \
    else {                                                                     \
      failed++;                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

/* [call] must return MASQ_OK; if not, masq's message says why. */
#define CHECK_OK(M, call)                                                      \
  do {                                                                         \
    masq_status st_ = (call);                                                  \
    if (st_ == MASQ_OK) passed++;                                              \
    else {                                                                     \
      failed++;                                                                \
      fprintf(stderr, "%s:%d: %s returned %d: %s", __FILE__, __LINE__, #call, \
              (int)st_, masq_last_error(M)->rendered);                         \
    }                                                                          \
  } while (0)

/* [call] must fail with [status] and a message containing [text]. */
#define CHECK_ERR(M, call, status, text)                                       \
  do {                                                                         \
    masq_status st_ = (call);                                                  \
    const char *m_ = masq_last_error(M)->message;                              \
    if (st_ == (status) && m_ && strstr(m_, (text))) passed++;                 \
    else {                                                                     \
      failed++;                                                                \
      fprintf(stderr, "%s:%d: %s returned %d (%s); expected %d, \"%s\"\n",     \
              __FILE__, __LINE__, #call, (int)st_, m_ ? m_ : "no message",     \
              (int)(status), (text));                                          \
    }                                                                          \
  } while (0)

static inline masq_status eval(masq_state *M, const char *src) {
  return masq_eval(M, src, strlen(src), "<test>", 0);
}

/* Output of print() through the write hook. */
typedef struct capture {
  char text[8192];
  size_t len;
} capture;

static inline void capture_write(void *ud, const char *s, size_t n) {
  capture *c = ud;
  if (c->len + n >= sizeof c->text) n = sizeof c->text - 1 - c->len;
  memcpy(c->text + c->len, s, n);
  c->len += n;
  c->text[c->len] = '\0';
}

static inline void capture_reset(capture *c) {
  c->len = 0;
  c->text[0] = '\0';
}

/* A state whose print() output goes to [c]. */
static inline masq_state *open_capturing(capture *c) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = capture_write;
  cfg.write_ud = c;
  capture_reset(c);
  return masq_open(&cfg);
}

/* Runs [src] and returns what it printed (a static buffer's contents). */
static inline const char *run(masq_state *M, capture *c, const char *src) {
  capture_reset(c);
  if (eval(M, src) != MASQ_OK) {
    fprintf(stderr, "unexpected error in <%s>: %s", src, masq_last_error(M)->rendered);
    return "(error)";
  }
  return c->text;
}

/* An allocator that counts, to prove that everything is given back. */
typedef struct counting {
  long live;
  size_t bytes;
} counting;

static inline void *counting_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  counting *c = ud;
  if (nsize == 0) {
    if (p) {
      c->live--;
      c->bytes -= osize;
    }
    free(p);
    return NULL;
  }
  void *q = realloc(p, nsize);
  if (q) {
    if (!p) c->live++;
    c->bytes = c->bytes - osize + nsize;
  }
  return q;
}

/* A release callback that counts its calls. */
static inline void count_release(void *ud) { ++*(int *)ud; }

static inline int report(const char *name) {
  printf("%s: %d passed, %d failed\n", name, passed, failed);
  return failed != 0;
}

#endif
