/* test_ops.c - the conformance suite follows the op rows (runtime/ops_*.h):
 * every builtin of a row marked conf (torch.masked has the op), and each
 * of its aliases, has its torch-generated cases tests/conformance/NAME.masq;
 * a row not marked has none, so the mark cannot go stale either way. */
#include <stdio.h>
#include <string.h>

#include "../../runtime/kernels/ops.h"
#include "../../runtime/tensor/tensor.h"

static int passed, failed;

/* tests/conformance/, found from this file's own path */
static char dir[512];

static bool has_cases(const char *name) {
  char path[640];
  snprintf(path, sizeof path, "%s%s.masq", dir, name);
  FILE *f = fopen(path, "r");
  if (f) fclose(f);
  return f != NULL;
}

static void check(const char *what, const char *name, bool conf) {
  bool has = has_cases(name);
  if (has == conf) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL ops: %s %s is %smarked conf but tests/conformance/%s.masq %s\n", what, name,
         conf ? "" : "not ", name,
         has ? "exists" : "is missing (make conformance-regen, see tests/conformance/README.md)");
}

#define BIND_B0 true
#define BIND_B1 true
#define BIND_B2 true
#define BIND_B3 true
#define BIND_BH true
#define BIND_BN false

static const bool un_conf[] = {
#define X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, dom, fuse, conf, ...) conf,
    MQ_UNARY_OPS(X)
#undef X
};
static const bool bin_conf[] = {
#define X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, da, db, fuse, conf, ...) conf,
    MQ_BINARY_OPS(X)
#undef X
};

int main(void) {
  const char *self = __FILE__, *end = strstr(self, "tests/unit/");
  snprintf(dir, sizeof dir, "%.*stests/conformance/", end ? (int)(end - self) : 0, self);
  if (!has_cases("abs")) {
    printf("FAIL ops: no tests/conformance under %s (run from the source tree)\n", dir);
    printf("test_ops: 0 passed, 1 failed\n");
    return 1;
  }
#define X(E, name, params, bind, cls, pre, fexpr, iexpr, bexpr, deriv, dom, fuse, conf, ...) \
  if (BIND_##bind) check("unary op", name, conf);
  MQ_UNARY_OPS(X)
#undef X
#define X(alias, E, ...) check("alias", alias, un_conf[MQ_UN_##E]);
  MQ_UNARY_ALIASES(X)
#undef X
#define X(E, name, params, bind, cls, div0, fexpr, iexpr, bk, deriv, da, db, fuse, conf, ...) \
  if (BIND_##bind) check("binary op", name, conf);
  MQ_BINARY_OPS(X)
#undef X
#define X(alias, E, ...) check("alias", alias, bin_conf[MQ_BIN_##E]);
  MQ_BINARY_ALIASES(X)
#undef X
#define X(E, name, bind, deriv, fuse, conf, ...) check("reduction", name, conf);
  MQ_REDUCE_OPS(X)
#undef X
#define X(E, name, prod, conf, ...) check("scan", name, conf);
  MQ_SCAN_OPS(X)
#undef X
  printf("test_ops: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
