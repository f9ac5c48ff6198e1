/* test_grad_f32.c - the float32 derivative loops of every op row
 * (runtime/autograd/backward.c).
 *
 * A float32 gradient of a unary or binary row is computed by one loop per
 * op and per side, in two forms: for an array of incoming gradients, and
 * for a single one read once (stride 0: the gradient of sum(f(X)) is one
 * 1 broadcast). For every row with a D(...) and both sides of a binary
 * one, over masked inputs from the row's domain (with zeros, and with ties
 * x == y where both operands share a domain):
 *   - grad(sum(f(X)) * 3) (one g, 3) must be the bits of
 *     grad(sum(f(X) * THREES)) (an array of threes), data and mask;
 *   - both must be within 2e-5 relative (or 1e-6 absolute) of the float64
 *     gradient of the same values rounded to float32: the derivative is
 *     computed in double either way, from the same x, and the forward's y
 *     (float32 against float64) is the only difference. */
#include <math.h>
#include <string.h>

#include "../../include/masq.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/kernels/ops_binary.h"
#include "../../runtime/kernels/ops_unary.h"

#include "unit.h"
#include "grad_rows.h"

#define N 96

/* u: N points spread over [0, 1) (multiples of the golden ratio); M masks
 * out one in seven; Z puts exact zeros in the ANY domains and BIG values
 * up to 30 in size (past thresholds such as softplus's), TIE picks where
 * Y is X. D_<dom> and E_<dom>: float32 data of two operands, unmasked. */
static const char *const setup =
    "k = arange(96)\n"
    "u = (k * 0.6180339887) % 1\n"
    "v = (k * 0.7548776662) % 1\n"
    "M = k % 7 != 3\n"
    "Z = k % 11 == 0\n"
    "BIG = k % 13 == 6\n"
    "TIE = k % 5 == 0\n"
    "THREES = full([96], 3.0)\n"
    "fn doms(u) {\n"
    "  any = where(Z, 0.0, where(BIG, (u - 0.5) * 60, (u - 0.5) * 4))\n"
    "  return {\"ANY\": any, \"POS\": u * 1.5 + 0.5,\n"
    "          \"UNIT\": (u - 0.5) * 1.8, \"GT1\": u * 2 + 1.2, \"PROB\": u * 0.8 + 0.1,\n"
    "          \"CONV\": any, \"NEAR1\": u * 0.02 + 0.99}\n"
    "}\n"
    "D = doms(u)\n"
    "E = doms(v)\n";

static bool close_to(float a, double want) {
  float w = (float)want;
  if (isnan(a) || isnan(w)) return isnan(a) && isnan(w);
  if (isinf(a) || isinf(w)) return a == w;
  return fabs((double)a - (double)w) <= 1e-6 + 2e-5 * fabs((double)w);
}

/* The float32 gradient [a] against the float64 one [c]. */
static bool near_f64(const gbytes *a, const gbytes *c) {
  if (a->n != c->n || a->dt != MASQ_FLOAT32 || c->dt != MASQ_FLOAT64 || !a->mask != !c->mask)
    return false;
  for (int64_t i = 0; i < a->n; i++) {
    if (a->mask && a->mask[i] != c->mask[i]) return false;
    if (a->mask && !a->mask[i]) continue;
    if (!close_to(((const float *)a->data)[i], ((const double *)c->data)[i])) return false;
  }
  return true;
}

/* The gradients of sum(call) with respect to X (and Y when [ydata]) in
 * the three forms, compared; X and Y masked by M, their data [xdata] and
 * [ydata]. */
static void check_call(const char *name, const char *call, const char *xdata, const char *ydata) {
  char src[1400], what[256];
  snprintf(what, sizeof what, "%s: %s", name, call);
  char y32[200] = "", y64[200] = "";
  if (ydata) {
    snprintf(y32, sizeof y32, "Y = requires_grad(masked(%s, M))\n", ydata);
    snprintf(y64, sizeof y64, "Y = requires_grad(double(masked(%s, M)))\n", ydata);
  }
  const char *wrt = ydata ? "[X, Y]" : "[X]";
  snprintf(src, sizeof src,
           "X = requires_grad(masked(%s, M))\n%s"
           "A = grad(sum(%s) * 3, %s)\n"
           "B = grad(sum(%s * THREES), %s)\n"
           "X = requires_grad(double(masked(%s, M)))\n%s"
           "C = grad(sum(%s) * 3, %s)\n"
           "A0 = A[0]\nB0 = B[0]\nC0 = C[0]\n%s",
           xdata, y32, call, wrt, call, wrt, xdata, y64, call, wrt,
           ydata ? "A1 = A[1]\nB1 = B[1]\nC1 = C[1]\n" : "");
  if (!eval(src, what)) {
    failed++;
    return;
  }
  for (int side = 0; side < (ydata ? 2 : 1); side++) {
    gbytes a, b, c;
    bool ga = grab(side ? "A1" : "A0", &a), gb = grab(side ? "B1" : "B0", &b);
    bool gc = grab(side ? "C1" : "C0", &c), ok = ga && gb && gc;
    int64_t at = ok ? differ(&a, &b) : -3;
    if (at != -1)
      printf("FAIL %s: the gradient of %s with one g differs from that with an array of them "
             "(at %lld)\n", what, side ? "Y" : "X", (long long)at);
    CHECK(at == -1);
    bool near = ok && near_f64(&a, &c);
    if (!near) printf("FAIL %s: the float32 gradient of %s is not the float64 one\n", what, side ? "Y" : "X");
    CHECK(near);
    gfree(&a), gfree(&b), gfree(&c);
  }
}

/* A row's call on operands from its domains: Y is X at TIE where both
 * operands share a domain. */
static void check_row(const char *name, const char *call, const char *dom, const char *domb) {
  char xd[64], yd[96];
  snprintf(xd, sizeof xd, "D[\"%s\"]", dom);
  if (domb && !strcmp(dom, domb)) snprintf(yd, sizeof yd, "where(TIE, D[\"%s\"], E[\"%s\"])", dom, domb);
  else if (domb) snprintf(yd, sizeof yd, "E[\"%s\"]", domb);
  check_call(name, call, xd, domb ? yd : NULL);
}

static void tests(mq_state *S_, void *ud) {
  if (!eval(setup, "setup")) {
    failed++;
    return;
  }
  char buf[128];
#define X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, dom, ...) \
  if (HAS_##deriv) check_row(name, unary_call(#E, name, buf, sizeof buf), #dom, NULL);
  MQ_UNARY_OPS(X)
#undef X
#define X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, doma, domb, ...) \
  if (HAS_##deriv) check_row(name, binary_call(#E, name, buf, sizeof buf), #doma, #domb);
  MQ_BINARY_OPS(X)
#undef X
  /* the arms of derivatives that the plain calls do not reach: parameters
   * given, infinities, zeros where the domain has none, NaN on one side */
  static const char *const more[][4] = {
      {"logit", "logit(X, eps=0.2)", "D[\"PROB\"]", NULL},
      {"nan_to_num", "nan_to_num(X)", "where(Z, inf, D[\"ANY\"])", NULL},
      {"softplus", "softplus(X, 2, 5)", "D[\"ANY\"]", NULL},
      {"leaky_relu", "leaky_relu(X, 0.2)", "D[\"ANY\"]", NULL},
      {"elu", "elu(X, 0.5)", "D[\"ANY\"]", NULL},
      {"hardtanh", "hardtanh(X, -0.5, 0.25)", "D[\"ANY\"]", NULL},
      {"pow", "pow(X, Y)", "where(Z, 0.0, D[\"POS\"])", "where(TIE, 0.0, E[\"ANY\"])"},
      {"fmax", "fmax(X, Y)", "D[\"ANY\"]", "where(Z, nan, E[\"ANY\"])"},
      {"fmin", "fmin(X, Y)", "D[\"ANY\"]", "where(Z, nan, E[\"ANY\"])"},
      {"xlogy", "xlogy(X, Y)", "D[\"ANY\"]", "where(TIE, 0.0, E[\"POS\"])"},
  };
  for (size_t i = 0; i < sizeof more / sizeof *more; i++)
    check_call(more[i][0], more[i][1], more[i][2], more[i][3]);
}

int main(void) { return unit_main("test_grad_f32", tests); }
