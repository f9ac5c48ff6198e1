/* test_grad_layouts.c - no builtin silently drops a gradient, whatever the
 * layout of its input (issue 29: d @ s recorded none while s @ d did).
 *
 * The builtins are every name the state completes whose masq_doc is a
 * signature (the registry: nothing here lists them), and the operators.
 * For each tensor parameter of a builtin (operand 1, operand 2, ...) a call
 * is searched whose other arguments are filled from a few candidates (ints
 * for dims and counts, a bool mask, an index tensor, a plain partner
 * tensor), such that a plain strided probe with requires_grad gives a float
 * result that records a gradient. The same call with the probe strided
 * masked, sparse COO, CSR and CSC must then either raise an error or give
 * a result that records a gradient whose grad(sum(result), probe) is a
 * tensor of the probe's shape. A float result that records nothing is the
 * failure this test exists for. */
#include <stdbool.h>

#include "check.h"

#define MAXP 8
#define MAXNAMES 1024

typedef struct names {
  int n;
  char *v[MAXNAMES];
} names;

static void add_name(void *ud, const char *name) {
  names *ns = ud;
  if (ns->n < MAXNAMES) ns->v[ns->n++] = strdup(name);
}

/* The required parameters of signature [sig] ("name(a, b=1, *rest)"), the
 * *rest one included (it is given one value); false when there is none. */
typedef struct params {
  int n;
  char name[MAXP][32];
  bool rest[MAXP];
} params;

static bool read_params(const char *sig, params *p) {
  memset(p, 0, sizeof *p);
  const char *s = strchr(sig, '(');
  if (!s) return false;
  s++;
  while (*s && *s != ')' && p->n < MAXP) {
    while (*s == ' ' || *s == ',') s++;
    bool rest = false;
    if (s[0] == '*' && s[1] == '*') break;
    if (*s == '*') {
      rest = true;
      s++;
    }
    size_t len = strcspn(s, ",=)");
    bool optional = s[len] == '=';
    if (!optional && len > 0 && len < 32) {
      memcpy(p->name[p->n], s, len);
      p->rest[p->n++] = rest;
    }
    s += len;
    while (*s && *s != ',' && *s != ')') s++;
  }
  return p->n > 0;
}

/* The candidates for a parameter named [name], most likely first; "X"
 * stands for the probe (a tensor parameter). */
static int candidates(const char *name, bool rest, const char **out) {
  static const char *dims[] = {"1", "0", "-1"};
  static const char *count[] = {"2", "1"};
  if (!strcmp(name, "dim") || !strcmp(name, "dim1") || !strcmp(name, "dim2") ||
      !strcmp(name, "start_dim")) {
    memcpy(out, dims, sizeof dims);
    return 3;
  }
  if (!strcmp(name, "dim0") || !strcmp(name, "start") || !strcmp(name, "offset") ||
      !strcmp(name, "seed")) {
    out[0] = "0";
    return 1;
  }
  if (!strcmp(name, "n") || !strcmp(name, "length") || !strcmp(name, "num_classes") ||
      !strcmp(name, "shifts") || !strcmp(name, "size_or_sizes")) {
    memcpy(out, count, sizeof count);
    return 2;
  }
  if (!strcmp(name, "shape") || !strcmp(name, "sizes") || !strcmp(name, "normalized_shape")) {
    out[0] = rest ? "3, 3" : "[3, 3]";
    out[1] = "[3]";
    return 2;
  }
  if (!strcmp(name, "dims")) {
    out[0] = rest ? "1, 0" : "[1, 0]";
    out[1] = "0";
    return 2;
  }
  if (!strcmp(name, "mask") || !strcmp(name, "cond")) {
    out[0] = "M";
    return 1;
  }
  if (!strcmp(name, "index")) {
    out[0] = "I";
    out[1] = "1";
    return 2;
  }
  if (!strcmp(name, "p") || !strcmp(name, "value") || !strcmp(name, "lr") ||
      !strcmp(name, "fill")) {
    out[0] = "0.5";
    return 1;
  }
  if (!strcmp(name, "tensors") || !strcmp(name, "xs")) {
    out[0] = "[X, P]";
    out[1] = "[P, X]";
    return 2;
  }
  if (!strcmp(name, "k")) { /* topk's count, attention's keys */
    out[0] = "2";
    out[1] = "X";
    out[2] = "P";
    return 3;
  }
  if (!strcmp(name, "spec")) {
    out[0] = "\"ij,jk->ik\"";
    out[1] = "\"ii->i\"";
    return 2;
  }
  if (!strcmp(name, "operands")) {
    out[0] = "X, P";
    out[1] = "P, X";
    out[2] = "X";
    return 3;
  }
  if (!strcmp(name, "path") || !strcmp(name, "s") ||
      !strcmp(name, "message") || !strcmp(name, "fmt"))
    return 0;
  out[0] = "X";
  out[1] = "P";
  out[2] = "1";
  return 3;
}

static masq_state *M;
static char src[4096], out[512];

static bool try_eval(const char *code) {
  return masq_eval(M, code, strlen(code), "<probe>", 0) == MASQ_OK;
}

static const char *get(const char *global) {
  if (masq_get_string(M, global, out, sizeof out, NULL) != MASQ_OK) return "?";
  return out;
}

/* The probe in each layout; D has zeros where the sparse forms store none. */
static const char *layouts[] = {
    "requires_grad(D)",
    "masked(D, M, requires_grad=true)",
    "requires_grad(to_sparse(D))",
    "requires_grad(to_sparse_csr(D))",
    "requires_grad(to_sparse_csc(D))",
};
static const char *layout_names[] = {"strided", "masked", "sparse_coo", "sparse_csr", "sparse_csc"};
#define NLAYOUTS ((int)(sizeof layouts / sizeof *layouts))

/* Runs call [call] with the probe in layout [l]: "refused", "skip" (not a
 * float tensor), "dropped", "recorded", or "grad failed: ...". */
static const char *probe(const char *call, int l) {
  snprintf(src, sizeof src, "X = %s\n_r = %s\n", layouts[l], call);
  if (!try_eval(src)) return "refused";
  try_eval("_s = \"skip\"\n"
           "if type(_r) == \"list\" and len(_r) > 0 { _r = _r[0] }\n"
           "if type(_r) == \"tensor\" or type(_r) == \"sparse tensor\" {\n"
           "  if str(dtype(_r)) == \"float32\" or str(dtype(_r)) == \"float64\" {\n"
           "    _s = \"dropped\"\n"
           "    if requires_grad_of(_r) { _s = \"recorded\" }\n"
           "  }\n"
           "}\n");
  if (strcmp(get("_s"), "recorded")) return out;
  if (!try_eval("_g = grad(sum(_r), X)\n"
                "_s = \"recorded\"\n"
                "if type(_g) != \"tensor\" and type(_g) != \"sparse tensor\" { _s = \"no gradient\" }\n"
                "elif shape(_g) != shape(X) { _s = \"gradient of another shape\" }\n")) {
    snprintf(out, sizeof out, "grad failed: %s", masq_last_error(M)->message);
    return out;
  }
  return get("_s");
}

static int calls_checked, refused, recorded;
static bool saw_dense_sparse; /* the call of issue 29 was walked */

/* The calls of one builtin or operator: for each parameter that may be the
 * probe, the first combination of candidates whose plain call records,
 * then that call in the other layouts; [render] spells a call. */
static void walk(const char *label, int np, const char *const *const *cand, const int *ncand,
                 const char *(*render)(const char *label, int np, const char **args)) {
  for (int pos = 0; pos < np; pos++) {
    bool tensor_slot = false;
    for (int c = 0; c < ncand[pos]; c++)
      if (strchr(cand[pos][c], 'X')) tensor_slot = true;
    if (!tensor_slot) continue;
    /* the first combination where the plain probe records */
    int idx[MAXP] = {0};
    const char *call = NULL;
    for (int tries = 0; tries < 64; tries++) {
      const char *args[MAXP];
      bool ok = true;
      for (int i = 0; i < np; i++) {
        const char *a = cand[i][idx[i]];
        if (i == pos ? !strchr(a, 'X') : strchr(a, 'X') != NULL) ok = false;
        args[i] = a;
      }
      if (ok) {
        const char *c = render(label, np, args);
        if (!strcmp(probe(c, 0), "recorded")) {
          call = c;
          break;
        }
      }
      int i = 0;
      while (i < np && ++idx[i] == ncand[i]) idx[i++] = 0;
      if (i == np) break;
    }
    if (!call) continue;
    static char keep[512];
    snprintf(keep, sizeof keep, "%s", call);
    if (getenv("VERBOSE")) printf("# %s\n", keep);
    if (!strcmp(keep, "matmul(P, X)") || !strcmp(keep, "P @ X")) saw_dense_sparse = true;
    for (int l = 1; l < NLAYOUTS; l++) {
      const char *r = probe(keep, l);
      calls_checked++;
      if (!strcmp(r, "refused")) {
        refused++;
        const masq_error *e = masq_last_error(M);
        CHECK(e->message && strlen(e->message) > 10 && e->line > 0); /* located, saying something */
        continue;
      }
      if (!strcmp(r, "recorded") || !strcmp(r, "skip")) {
        recorded += !strcmp(r, "recorded");
        passed++;
        continue;
      }
      failed++;
      fprintf(stderr, "%s with a %s operand %d: %s\n", keep, layout_names[l], pos + 1, r);
    }
  }
}

static const char *render_call(const char *label, int np, const char **args) {
  static char buf[512];
  int k = snprintf(buf, sizeof buf, "%s(", label);
  for (int i = 0; i < np; i++)
    k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s", i ? ", " : "", args[i]);
  snprintf(buf + k, sizeof buf - (size_t)k, ")");
  return buf;
}

static const char *render_op(const char *label, int np, const char **args) {
  static char buf[512];
  if (np == 1) snprintf(buf, sizeof buf, "%s%s", label, args[0]);
  else snprintf(buf, sizeof buf, "%s %s %s", args[0], label, args[1]);
  return buf;
}

static void test_builtins(void) {
  names ns = {0};
  masq_complete(M, "", add_name, &ns);
  int builtins = 0;
  for (int i = 0; i < ns.n; i++) {
    const char *doc = masq_doc(M, ns.v[i]);
    size_t len = strlen(ns.v[i]);
    if (!doc || strncmp(doc, ns.v[i], len) || doc[len] != '(') continue;
    params p;
    if (!read_params(doc, &p)) continue;
    static const char *store[MAXP][4];
    const char *const *cand[MAXP];
    int ncand[MAXP];
    bool usable = true;
    for (int k = 0; k < p.n; k++) {
      ncand[k] = candidates(p.name[k], p.rest[k], store[k]);
      cand[k] = store[k];
      if (!ncand[k]) usable = false;
    }
    if (!usable) continue;
    builtins++;
    walk(ns.v[i], p.n, cand, ncand, render_call);
  }
  CHECK(builtins > 100); /* the registry was read */
  for (int i = 0; i < ns.n; i++) free(ns.v[i]);
}

static void test_operators(void) {
  static const char *binary[] = {"+", "-", "*", "/", "**", "@", "%", "//"};
  static const char *xp[] = {"X", "P"};
  const char *const *c2[2] = {xp, xp};
  int n2[2] = {2, 2};
  for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
    walk(binary[i], 2, c2, n2, render_op);
  static const char *x1[] = {"X"};
  const char *const *c1[1] = {x1};
  int n1[1] = {1};
  walk("-", 1, c1, n1, render_op);
}

static void quiet(void *ud, const char *text, size_t len) {
  (void)ud, (void)text, (void)len;
}

int main(void) {
  masq_config cfg;
  masq_config_init(&cfg);
  cfg.write = quiet; /* print, describe and the pictures are probed too */
  cfg.write_err = quiet;
  M = masq_open(&cfg);
  CHECK(M != NULL);
  if (!M) return 1;
  /* D: sparse forms store its 6 non-zeros; M masks out 2 of them. */
  static const char setup[] =
      "D = tensor([[0.5, 0., 0.25], [0., 0.75, 0.125], [0.375, 0.625, 0.]])\n"
      "P = tensor([[0.3, 0.2, 0.1], [0.6, 0.5, 0.4], [0.9, 0.8, 0.7]])\n"
      "M = tensor([[true, true, false], [true, true, true], [false, true, true]])\n"
      "I = tensor([[0, 1, 2], [2, 1, 0], [1, 1, 1]])\n";
  CHECK_OK(M, masq_eval(M, setup, strlen(setup), "<setup>", 0));
  test_builtins();
  test_operators();
  printf("# %d calls checked in other layouts: %d refused, %d recorded\n", calls_checked,
         refused, recorded);
  CHECK(calls_checked > 600); /* 651 when written: no silent loss of coverage */
  CHECK(saw_dense_sparse);
  masq_close(M);
  printf("test_grad_layouts: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
