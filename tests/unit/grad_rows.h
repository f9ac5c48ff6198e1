/* grad_rows.h - what the gradient tests that walk the op rows share
 * (test_grad_threads.c, test_grad_f32.c): each row's call in a script,
 * and reading a gradient's bytes out of a global to compare them. The
 * including file defines S (unit.h) and includes include/masq.h. */
#ifndef MQ_TEST_GRAD_ROWS_H
#define MQ_TEST_GRAD_ROWS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A unary row's call on X, for the rows its plain call does not reach. */
static const char *unary_call(const char *E, const char *name, char *buf, size_t n) {
  if (!strcmp(E, "ROUND_DEC")) return "round(X, decimals=1)";
  if (!strcmp(E, "GELU_TANH")) return "gelu(X, approximate=\"tanh\")";
  if (!strcmp(E, "CLAMP")) return "clamp(X, -0.5, 0.5)";
  snprintf(buf, n, "%s(X)", name);
  return buf;
}

static const char *binary_call(const char *E, const char *name, char *buf, size_t n) {
  if (!strcmp(E, "DIVTRUNC")) return "div(X, Y, rounding_mode=\"trunc\")";
  snprintf(buf, n, "%s(X, Y)", name);
  return buf;
}

#define HAS_D(...) 1
#define HAS_NODIFF 0

static bool eval(const char *src, const char *what) {
  if (masq_eval(S, src, strlen(src), what, 0) == MASQ_OK) return true;
  printf("FAIL %s: %s\n", what, masq_last_error(S)->rendered);
  return false;
}

/* A gradient's bytes: data (elsize each) and mask (NULL: plain). */
typedef struct gbytes {
  masq_dtype dt;
  int64_t n;
  size_t elsize;
  void *data;
  uint8_t *mask;
} gbytes;

static void gfree(gbytes *b) {
  free(b->data), free(b->mask);
  memset(b, 0, sizeof *b);
}

static bool grab(const char *name, gbytes *out) {
  masq_tensor *t = NULL, *c = NULL;
  masq_tensor_desc d;
  memset(out, 0, sizeof *out);
  if (masq_get_global(S, name, &t) != MASQ_OK) return false;
  bool ok = masq_tensor_contiguous(S, t, &c) == MASQ_OK && masq_tensor_info(S, c, &d) == MASQ_OK;
  if (ok) {
    out->dt = d.dtype;
    out->n = 1;
    for (int i = 0; i < d.ndim; i++) out->n *= d.shape[i];
    out->elsize = d.dtype == MASQ_FLOAT64 || d.dtype == MASQ_INT64 ? 8 : d.dtype == MASQ_FLOAT32 ? 4 : 1;
    out->data = malloc((size_t)out->n * out->elsize + 1);
    memcpy(out->data, d.data, (size_t)out->n * out->elsize);
    if (d.valid) {
      out->mask = malloc((size_t)out->n + 1);
      memcpy(out->mask, d.valid, (size_t)out->n);
    }
  }
  if (c) masq_tensor_release(S, c);
  masq_tensor_release(S, t);
  return ok;
}

/* The index of the first entry where [a] and [b] differ (data bits, NaN
 * matching any NaN, or mask), -1 if none; -2 if dtype or size differ. */
static int64_t differ(const gbytes *a, const gbytes *b) {
  if (a->dt != b->dt || a->n != b->n || !a->mask != !b->mask) return -2;
  if (!memcmp(a->data, b->data, (size_t)a->n * a->elsize) &&
      (!a->mask || !memcmp(a->mask, b->mask, (size_t)a->n)))
    return -1;
  for (int64_t i = 0; i < a->n; i++) {
    if (a->mask && a->mask[i] != b->mask[i]) return i;
    const char *p = (const char *)a->data + i * a->elsize, *q = (const char *)b->data + i * a->elsize;
    if (!memcmp(p, q, a->elsize)) continue;
    if (a->elsize == 8) {
      double x, y;
      memcpy(&x, p, 8), memcpy(&y, q, 8);
      if (isnan(x) && isnan(y)) continue;
    } else if (a->elsize == 4) {
      float x, y;
      memcpy(&x, p, 4), memcpy(&y, q, 4);
      if (isnan(x) && isnan(y)) continue;
    }
    return i;
  }
  return -1;
}

#endif
