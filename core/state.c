/* state.c - memory accounting, the pool of temporaries, the error boundary,
 * text buffers and the random generator of one interpreter. */
#include "state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gc.h"

/* --- memory ------------------------------------------------------------ */

static bool over_limit(const mq_state *S, size_t osize, size_t nsize) {
  return nsize > osize && S->cfg.memory_limit && S->mem_used + (nsize - osize) > S->cfg.memory_limit;
}

/* Before an allocation fails, memory is given back: the cached buffers,
 * then the unreachable cycles (a full collection). */
void *mq_realloc(mq_state *S, void *p, size_t osize, size_t nsize) {
  if (over_limit(S, osize, nsize)) mq_bigcache_flush(S);
  if (over_limit(S, osize, nsize) && nsize - osize <= S->cfg.memory_limit) mq_gc_collect(S, true);
  if (nsize > osize && S->cfg.memory_limit &&
      (nsize - osize > S->cfg.memory_limit ||
       S->mem_used + (nsize - osize) > S->cfg.memory_limit)) {
    mq_throw(S, MASQ_ERR_MEMORY, "memory limit of %zu bytes exceeded (%zu in use, %zu more requested)",
             S->cfg.memory_limit, S->mem_used, nsize - osize);
  }
  void *q = S->cfg.alloc(S->cfg.alloc_ud, p, osize, nsize);
  if (!q && nsize > 0) { /* out of memory: give back, retry once */
    mq_bigcache_flush(S);
    mq_gc_collect(S, true);
    q = S->cfg.alloc(S->cfg.alloc_ud, p, osize, nsize);
  }
  if (nsize == 0) {
    MQ_ASSERT(S->mem_used >= osize); /* freed with the size it was allocated with */
    S->mem_used -= osize;
    return NULL;
  }
  if (!q) mq_throw(S, MASQ_ERR_MEMORY, "out of memory (allocating %zu bytes)", nsize);
  S->mem_used = S->mem_used - osize + nsize;
  if (S->mem_used > S->mem_peak) S->mem_peak = S->mem_used;
  return q;
}

void *mq_alloc(mq_state *S, size_t n) { return mq_realloc(S, NULL, 0, n ? n : 1); }

void mq_bigcache_flush(mq_state *S) {
  void *k = S->kept.p;
  S->kept.p = NULL;
  if (k) mq_free(S, k, S->kept.n);
  S->kept.n = 0;
  for (int i = 0; i < MQ_BIGCACHE; i++) {
    void *p = S->bigcache[i].p;
    S->bigcache[i].p = NULL;
    if (p) mq_free(S, p, S->bigcache[i].n);
    S->bigcache[i].n = 0;
  }
}

void *mq_kept(mq_state *S, size_t n) {
  if (S->kept.n >= n && S->kept.p) return S->kept.p;
  void *old = S->kept.p;
  S->kept.p = NULL;
  if (old) mq_free(S, old, S->kept.n);
  S->kept.n = 0;
  S->kept.p = mq_alloc(S, n);
  S->kept.n = n;
  return S->kept.p;
}

void *mq_alloc_big(mq_state *S, size_t n) {
  if (n >= MQ_BIG_BYTES)
    for (int i = 0; i < MQ_BIGCACHE; i++)
      if (S->bigcache[i].p && S->bigcache[i].n == n) {
        void *p = S->bigcache[i].p;
        S->bigcache[i].p = NULL;
        S->bigcache[i].n = 0;
        return p;
      }
  return mq_alloc(S, n);
}

void mq_free_big(mq_state *S, void *p, size_t n) {
  if (!p) return;
  if (n >= MQ_BIG_BYTES && n <= MQ_BIGCACHE_BYTES) {
    /* keep it in a free slot, else in place of the oldest (slot 0), moving
     * the others down; the total stays under MQ_BIGCACHE_BYTES */
    size_t total = n;
    for (int i = 0; i < MQ_BIGCACHE; i++) total += S->bigcache[i].n;
    while (total > MQ_BIGCACHE_BYTES || S->bigcache[MQ_BIGCACHE - 1].p) {
      if (S->bigcache[0].p) {
        total -= S->bigcache[0].n;
        mq_free(S, S->bigcache[0].p, S->bigcache[0].n);
      }
      memmove(&S->bigcache[0], &S->bigcache[1], (MQ_BIGCACHE - 1) * sizeof S->bigcache[0]);
      S->bigcache[MQ_BIGCACHE - 1].p = NULL;
      S->bigcache[MQ_BIGCACHE - 1].n = 0;
    }
    int i = 0;
    while (S->bigcache[i].p) i++;
    S->bigcache[i].p = p;
    S->bigcache[i].n = n;
    return;
  }
  mq_free(S, p, n);
}

void *mq_calloc(mq_state *S, size_t n) {
  void *p = mq_alloc(S, n);
  memset(p, 0, n ? n : 1);
  return p;
}

void mq_free(mq_state *S, void *p, size_t n) {
  if (p) mq_realloc(S, p, n ? n : 1, 0);
}

char *mq_strdup(mq_state *S, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = mq_alloc(S, n);
  memcpy(d, s, n);
  return d;
}

void mq_strfree(mq_state *S, char *s) {
  if (s) mq_free(S, s, strlen(s) + 1);
}

/* --- the pool of temporaries -------------------------------------------- */

/* Reserves a pool slot before the allocation it will hold, so that a failed
 * pool growth can never strand a fresh block. */
static void pool_reserve(mq_state *S) { MQ_GROW(S, S->pool, S->pool_cap, S->pool_len + 1); }

void *mq_scratch(mq_state *S, size_t n) {
  pool_reserve(S);
  if (n == 0) n = 1;
  void *p = mq_alloc(S, n);
  S->pool[S->pool_len++] = (mq_pool_item){p, n};
  return p;
}

void mq_pool_own(mq_state *S, mq_obj *o) {
  if (S->pool_len == S->pool_cap) {
    /* Growing can fail; hold the object while we try so it can't leak. */
    mq_jmp j;
    j.prev = S->errjmp;
    S->errjmp = &j;
    if (setjmp(j.buf) == 0) {
      pool_reserve(S);
      S->errjmp = j.prev;
    } else {
      S->errjmp = j.prev;
      mq_obj_release(S, o);
      mq_throw(S, j.status, "%s", S->err_message.data ? S->err_message.data : "out of memory");
    }
  }
  S->pool[S->pool_len++] = (mq_pool_item){o, 0};
}

void mq_pool_drain(mq_state *S, size_t mark) {
  /* marks are drained innermost first: one above the length belongs to
   * a boundary already left */
  MQ_ASSERT(mark <= S->pool_len);
  while (S->pool_len > mark) {
    mq_pool_item it = S->pool[--S->pool_len];
    if (it.size) mq_free(S, it.ptr, it.size);
    else mq_obj_release(S, (mq_obj *)it.ptr);
  }
}

/* --- errors ------------------------------------------------------------- */

void mq_vthrow(mq_state *S, masq_status st, const char *fmt, va_list ap) {
  char tmp[1024];
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  /* The message buffer must not be grown with the allocator that may have
   * just failed: it keeps its capacity between errors and is truncated. */
  mq_buf *b = &S->err_message;
  size_t n = strlen(tmp);
  if (b->cap < n + 1) {
    void *q = S->cfg.alloc(S->cfg.alloc_ud, b->data, b->cap, n + 1);
    if (q) {
      S->mem_used += n + 1 - b->cap;
      b->data = q;
      b->cap = n + 1;
    } else if (b->cap) {
      n = b->cap - 1;
    }
  }
  if (b->cap) {
    memcpy(b->data, tmp, n);
    b->data[n] = '\0';
    b->len = n;
  }
  S->err_has_span = S->pending_span;
  S->pending_span = false;
  if (!S->errjmp) {
    /* No boundary: a bug in masq itself. Never abort a host: record and
     * return would corrupt control flow, so this is the one place we stop. */
    fprintf(stderr, "masq: unprotected error: %s\n", tmp);
    abort();
  }
  S->errjmp->status = st;
  longjmp(S->errjmp->buf, 1);
}

void mq_error_at(mq_state *S, mq_span span, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  S->err_span = span;
  S->err_src = NULL;
  S->pending_span = true;
  mq_vthrow(S, MASQ_ERR_RUNTIME, fmt, ap);
}

void mq_raise_at(mq_state *S, const struct mq_source *src, mq_span span, const char *message) {
  S->err_span = span;
  S->err_src = src;
  S->pending_span = span.line > 0;
  mq_throw(S, MASQ_ERR_RUNTIME, "%s", message);
}

void mq_rethrow(mq_state *S, masq_status st) {
  if (!S->errjmp) {
    fprintf(stderr, "masq: unprotected error: %s\n", S->err_message.data ? S->err_message.data : "?");
    abort();
  }
  S->errjmp->status = st;
  longjmp(S->errjmp->buf, 1);
}

void mq_throw(mq_state *S, masq_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mq_vthrow(S, st, fmt, ap);
}

void mq_error(mq_state *S, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mq_vthrow(S, MASQ_ERR_RUNTIME, fmt, ap);
}

masq_status mq_protect(mq_state *S, mq_pfunc fn, void *ud) {
  mq_jmp j;
  size_t mark = S->pool_len;
  int defer = S->defer_interrupts;
  j.prev = S->errjmp;
  j.status = MASQ_OK;
  S->errjmp = &j;
  if (setjmp(j.buf) == 0) fn(S, ud);
  S->errjmp = j.prev;
  if (j.status != MASQ_OK) {
    mq_pool_drain(S, mark);
    S->defer_interrupts = defer;
  }
  return j.status;
}

bool mq_interrupt_pending(mq_state *S) {
  if (!S->interrupted && S->cfg.interrupt) {
    mq_hook_enter(S);
    int stop = S->cfg.interrupt(S->cfg.interrupt_ud);
    mq_hook_leave(S);
    if (stop) S->interrupted = 1;
  }
  return S->interrupted != 0 && S->defer_interrupts == 0;
}

void mq_check_interrupt(mq_state *S) {
  if (mq_interrupt_pending(S)) {
    /* Consumed by the outermost run only: one nested in a host function
     * leaves it set, so that the run outside stops too even if the host
     * function swallows the nested failure (a masq_interrupt() is asked
     * once, and is meant for all the program that is running). */
    if (S->host_depth == 0) S->interrupted = 0;
    mq_throw(S, MASQ_ERR_INTERRUPTED, "interrupted");
  }
}

/* --- text buffers ------------------------------------------------------- */

void mq_buf_putn(mq_state *S, mq_buf *b, const char *s, size_t n) {
  MQ_GROW(S, b->data, b->cap, b->len + n + 1);
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void mq_buf_puts(mq_state *S, mq_buf *b, const char *s) { mq_buf_putn(S, b, s, strlen(s)); }

void mq_buf_putc(mq_state *S, mq_buf *b, char c) { mq_buf_putn(S, b, &c, 1); }

void mq_buf_printf(mq_state *S, mq_buf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) {
    mq_buf_putn(S, b, tmp, (size_t)n);
    return;
  }
  MQ_GROW(S, b->data, b->cap, b->len + (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void mq_buf_free(mq_state *S, mq_buf *b) {
  mq_free(S, b->data, b->cap);
  b->data = NULL;
  b->len = b->cap = 0;
}

void mq_write(mq_state *S, const char *s, size_t n) {
  if (S->cfg.write) {
    mq_hook_enter(S); /* s is often S->out, which a call back into masq would reuse */
    S->cfg.write(S->cfg.write_ud, s, n);
    mq_hook_leave(S);
  } else {
    fwrite(s, 1, n, stdout);
  }
}

void mq_write_err(mq_state *S, const char *s, size_t n) {
  if (S->cfg.write_err) {
    mq_hook_enter(S);
    S->cfg.write_err(S->cfg.write_err_ud, s, n);
    mq_hook_leave(S);
  } else {
    fflush(stdout); /* what print() wrote comes first */
    fwrite(s, 1, n, stderr);
  }
}

/* --- random numbers: xoshiro256** seeded through splitmix64 -------------- */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

void mq_rng_seed(mq_state *S, uint64_t seed) {
  for (int i = 0; i < 4; i++) S->rng[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t mq_rng_next(mq_state *S) {
  uint64_t *s = S->rng;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double mq_rng_uniform(mq_state *S) { return (double)(mq_rng_next(S) >> 11) * 0x1.0p-53; }

double mq_rng_normal(mq_state *S) {
  /* Box-Muller; 1 - u keeps log() away from zero. */
  double u = 1.0 - mq_rng_uniform(S), v = mq_rng_uniform(S);
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
