/* test_api.c - the public API from a host's point of view: only masq.h. */
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

/* Output captured from print() through the write hook. */
typedef struct capture {
  char text[8192];
  size_t len;
} capture;

static void capture_write(void *ud, const char *s, size_t n) {
  capture *c = ud;
  if (c->len + n >= sizeof c->text) n = sizeof c->text - 1 - c->len;
  memcpy(c->text + c->len, s, n);
  c->len += n;
  c->text[c->len] = '\0';
}

static masq_state *open_capturing(capture *c, size_t limit) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = capture_write;
  cfg.write_ud = c;
  cfg.memory_limit = limit;
  c->len = 0;
  c->text[0] = '\0';
  return masq_open(&cfg);
}

static masq_status eval(masq_state *M, const char *src, int flags) {
  return masq_eval(M, src, strlen(src), "<test>", flags);
}

static void test_eval_and_echo(void) {
  capture c;
  masq_state *M = open_capturing(&c, 0);
  CHECK(M != NULL);
  CHECK(eval(M, "x = 1 + 2\nprint(x * 2)", 0) == MASQ_OK);
  CHECK(strcmp(c.text, "6\n") == 0);
  c.len = 0;
  CHECK(eval(M, "x + 0.5", MASQ_EVAL_ECHO) == MASQ_OK);
  CHECK(strcmp(c.text, "3.5\n") == 0);
  c.len = 0;
  CHECK(eval(M, "_ * 2", MASQ_EVAL_ECHO) == MASQ_OK); /* the last shown value */
  CHECK(strcmp(c.text, "7.0\n") == 0);
  c.len = 0;
  CHECK(eval(M, "x + 0.5", 0) == MASQ_OK); /* no echo in script mode */
  CHECK(c.len == 0);
  masq_close(M);
}

static void test_syntax_error(void) {
  capture c;
  masq_state *M = open_capturing(&c, 0);
  CHECK(eval(M, "softmax(masked(x, ), 0)", 0) == MASQ_ERR_SYNTAX);
  const masq_error *e = masq_last_error(M);
  CHECK(e->status == MASQ_ERR_SYNTAX);
  CHECK(e->line == 1 && e->column == 19);
  CHECK(e->message && strstr(e->message, "unexpected ')'") != NULL);
  CHECK(e->rendered && strstr(e->rendered, "<test>:1:19: error: ") == e->rendered);
  CHECK(e->rendered && strstr(e->rendered, "\n    softmax(masked(x, ), 0)\n") != NULL);
  /* The state still works. */
  CHECK(eval(M, "print(1)", 0) == MASQ_OK);
  CHECK(masq_last_error(M)->status == MASQ_OK);
  masq_close(M);
}

static void test_partial(void) {
  capture c;
  masq_state *M = open_capturing(&c, 0);
  CHECK(eval(M, "x = [1,", MASQ_EVAL_PARTIAL) == MASQ_INCOMPLETE);
  CHECK(eval(M, "x = [1,\n 2]", MASQ_EVAL_PARTIAL | MASQ_EVAL_ECHO) == MASQ_OK);
  CHECK(eval(M, "x = [1,", 0) == MASQ_ERR_SYNTAX);
  CHECK(eval(M, "x)", MASQ_EVAL_PARTIAL) == MASQ_ERR_SYNTAX);
  masq_close(M);
}

static void test_runtime_error(void) {
  capture c;
  masq_state *M = open_capturing(&c, 0);
  CHECK(eval(M, "a = masked([1.0, 2, 3], [true, false, true])\n"
                "b = masked([1.0, 2, 3], [true, true, false])\n"
                "print(1)\nc = a + b\nprint(2)",
             0) == MASQ_ERR_RUNTIME);
  const masq_error *e = masq_last_error(M);
  CHECK(e->line == 4 && e->column == 5 && e->end_column == 10);
  CHECK(e->message && strstr(e->message, "2 of 3 positions differ") != NULL);
  CHECK(strcmp(c.text, "1\n") == 0); /* stopped at the error */
  /* Globals assigned before the error survive. */
  c.len = 0;
  CHECK(eval(M, "print(sum(a))", 0) == MASQ_OK);
  CHECK(strcmp(c.text, "MaskedTensor(  4.0000, True)\n") == 0);
  CHECK(eval(M, "undefined_thing + 1", 0) == MASQ_ERR_RUNTIME);
  CHECK(strstr(masq_last_error(M)->message, "undefined variable 'undefined_thing'") != NULL);
  masq_close(M);
}

static void test_memory_limit(void) {
  capture c;
  masq_state *M = open_capturing(&c, 2 << 20);
  CHECK(M != NULL);
  /* 4 MB of float32 does not fit in 2 MB. */
  CHECK(eval(M, "x = zeros(10)\ny = ones(1000, 1000)", 0) == MASQ_ERR_MEMORY);
  CHECK(strstr(masq_last_error(M)->message, "memory limit") != NULL);
  c.len = 0;
  CHECK(eval(M, "print(sum(x + 1))", 0) == MASQ_OK); /* still works, x kept */
  CHECK(strcmp(c.text, "tensor(10.)\n") == 0);
  masq_close(M);
}

static int interrupt_after(void *ud) {
  int *n = ud;
  return ++*n > 3;
}

static void test_interrupt(void) {
  capture c;
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = capture_write;
  cfg.write_ud = &c;
  int polls = 0;
  cfg.interrupt = interrupt_after;
  cfg.interrupt_ud = &polls;
  c.len = 0;
  masq_state *M = masq_open(&cfg);
  CHECK(eval(M, "i = 0\nwhile true { i = i + 1 }", 0) == MASQ_ERR_INTERRUPTED);
  CHECK(strcmp(masq_last_error(M)->message, "interrupted") == 0);
  polls = -1000000;
  CHECK(eval(M, "print(i > 0)", 0) == MASQ_OK);
  CHECK(strcmp(c.text, "true\n") == 0);
  masq_interrupt(M); /* a stale request is dropped by the next eval */
  CHECK(eval(M, "print(1)", 0) == MASQ_OK);
  masq_close(M);
}

static void test_introspection(void) {
  capture c;
  masq_state *M = open_capturing(&c, 0);
  CHECK(masq_doc(M, "softmax") != NULL);
  CHECK(masq_doc(M, "no_such_builtin") == NULL);
  masq_close(M);
}

/* Counts allocations to prove everything is given back. */
typedef struct counting {
  long live;
  size_t bytes;
} counting;

static void *counting_alloc(void *ud, void *p, size_t osize, size_t nsize) {
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

static void test_allocator_balance(void) {
  counting cnt = {0, 0};
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.alloc = counting_alloc;
  cfg.alloc_ud = &cnt;
  capture c;
  cfg.write = capture_write;
  cfg.write_ud = &c;
  masq_state *M = masq_open(&cfg);
  eval(M, "x = softmax(masked([[1.0, 2], [3, 4]], [[true, false], [true, true]]), 1)\nprint(x)", 0);
  eval(M, "y = x + masked([1.0, 2], [false, true])", 0);
  eval(M, "z = [1, 2", 0);
  masq_close(M);
  CHECK(cnt.live == 0);
  CHECK(cnt.bytes == 0);
}

int main(void) {
  test_eval_and_echo();
  test_syntax_error();
  test_partial();
  test_runtime_error();
  test_memory_limit();
  test_interrupt();
  test_introspection();
  test_allocator_balance();
  printf("test_api: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
