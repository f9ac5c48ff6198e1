/* test_grad.c - autograd from C: a wrapped parameter buffer becomes a leaf
 * (still the host's memory), a script computes a loss, backward runs from
 * C, and the host reads the gradient. */
#include <stdint.h>

#include "check.h"

/* A dense copy of gradient [g] (a new reference; NULL if there is none),
 * described in *info. */
static masq_tensor *dense(masq_state *M, masq_tensor *g, masq_tensor_desc *info) {
  masq_tensor *c = NULL;
  memset(info, 0, sizeof *info);
  CHECK(g != NULL);
  if (g) {
    CHECK_OK(M, masq_tensor_contiguous(M, g, &c));
    CHECK_OK(M, masq_tensor_info(M, c, info));
  }
  return c;
}

static void test_gradient_of_wrapped_buffer(void) {
  masq_state *M = masq_open(NULL);
  float w[3] = {1, 2, 3}, x[3] = {10, 20, 30};
  uint8_t valid[3] = {1, 0, 1};
  int64_t shape[1] = {3};
  masq_tensor_desc wd = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = w};
  masq_tensor_desc xd = {.dtype = MASQ_FLOAT32, .ndim = 1, .shape = shape, .data = x,
                         .valid = valid};
  masq_tensor *wt, *xt, *leaf, *loss, *g;
  CHECK_OK(M, masq_tensor_wrap(M, &wd, &wt));
  CHECK_OK(M, masq_tensor_wrap(M, &xd, &xt));
  CHECK_OK(M, masq_requires_grad(M, wt, &leaf));
  masq_tensor_desc info;
  CHECK_OK(M, masq_tensor_info(M, leaf, &info));
  CHECK(info.data == (const void *)w); /* a leaf over the host's buffer */
  CHECK_OK(M, masq_grad(M, leaf, &g));
  CHECK(g == NULL); /* no backward yet */

  CHECK_OK(M, eval(M, "fn loss(w, x) = sum(w * x)"));
  masq_tensor *args[2] = {leaf, xt};
  CHECK_OK(M, masq_call(M, "loss", 2, args, &loss));
  double v;
  CHECK_OK(M, masq_tensor_item(M, loss, &v));
  CHECK(v == 1 * 10 + 3 * 30); /* the masked-out term does not count */
  CHECK_OK(M, masq_backward(M, loss));
  CHECK_OK(M, masq_grad(M, leaf, &g));
  masq_tensor *c = dense(M, g, &info);
  CHECK(info.dtype == MASQ_FLOAT32 && info.ndim == 1 && info.shape[0] == 3);
  CHECK(info.data != (const void *)w);
  const float *gp = info.data;
  CHECK(gp && gp[0] == 10 && gp[2] == 30);
  /* No gradient flowed through the masked-out element: masked out, not 0. */
  CHECK(info.valid && info.valid[0] == 1 && info.valid[1] == 0 && info.valid[2] == 1);
  CHECK_OK(M, masq_tensor_release(M, c));
  CHECK_OK(M, masq_tensor_release(M, g));
  /* The graph is freed: a second backward from the same loss is an error. */
  CHECK_ERR(M, masq_backward(M, loss), MASQ_ERR_RUNTIME, "");
  /* A new forward pass sees the host's updated parameters and accumulates. */
  w[0] = 5;
  CHECK_OK(M, masq_tensor_release(M, loss));
  CHECK_OK(M, masq_call(M, "loss", 2, args, &loss));
  CHECK_OK(M, masq_tensor_item(M, loss, &v));
  CHECK(v == 5 * 10 + 3 * 30);
  CHECK_OK(M, masq_backward(M, loss));
  CHECK_OK(M, masq_grad(M, leaf, &g));
  c = dense(M, g, &info);
  gp = info.data;
  CHECK(gp && gp[0] == 20 && gp[2] == 60);
  CHECK_OK(M, masq_tensor_release(M, c)); /* g itself is left to masq_close */
  CHECK_OK(M, masq_tensor_release(M, loss));
  CHECK_OK(M, masq_tensor_release(M, leaf));
  CHECK_OK(M, masq_tensor_release(M, xt));
  CHECK_OK(M, masq_tensor_release(M, wt));
  masq_close(M); /* and g, still held, with it */
}

static void test_grad_errors(void) {
  masq_state *M = masq_open(NULL);
  int64_t n[1] = {2}, ints[2] = {1, 2};
  masq_tensor_desc d = {.dtype = MASQ_INT64, .ndim = 1, .shape = n, .data = ints};
  masq_tensor *t, *leaf, *s;
  CHECK_OK(M, masq_tensor_wrap(M, &d, &t));
  CHECK_ERR(M, masq_requires_grad(M, t, &leaf), MASQ_ERR_RUNTIME, "float");
  CHECK(leaf == NULL);
  CHECK_ERR(M, masq_requires_grad(M, t, NULL), MASQ_ERR_USAGE, "out is NULL");
  CHECK_OK(M, masq_tensor_scalar(M, 3, &s));
  CHECK_ERR(M, masq_backward(M, s), MASQ_ERR_RUNTIME, "");
  CHECK_ERR(M, masq_backward(M, NULL), MASQ_ERR_USAGE, "loss is NULL");
  CHECK_ERR(M, masq_grad(M, NULL, &leaf), MASQ_ERR_USAGE, "t is NULL");
  CHECK_ERR(M, masq_grad(M, s, NULL), MASQ_ERR_USAGE, "out is NULL");
  CHECK_OK(M, masq_tensor_release(M, s));
  CHECK_OK(M, masq_tensor_release(M, t));
  masq_close(M);
}

int main(void) {
  test_gradient_of_wrapped_buffer();
  test_grad_errors();
  return report("test_grad");
}
