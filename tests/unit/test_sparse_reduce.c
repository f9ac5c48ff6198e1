/* test_sparse_reduce.c - the reductions of sparse tensors
 * (runtime/sparse/sparse_reduce.c) against the definition, written out here over
 * the dense positions.
 *
 * Random COO tensors of 1 to 3 dims and CSR matrices, in bool, int64,
 * float32 and float64, of small integer values (sums and products exact
 * in any order) with zeros and, in the floats, NaN: plain (every position
 * valid, the unstored ones zeros), with the structural mask (the stored
 * entries valid), and with a mask whose values leave some stored entries
 * out. Each of sum, mean, amax, amin, prod and count over every set of
 * dims, with and without keepdim, must give the result dtype and shape the
 * rules say (sums and products of ints in int64, count in int64, mean only
 * of floats), a slot's value exactly (NaN: any NaN; a float32 result
 * rounded once from double), and, for a masked tensor, a mask valid where
 * the slot has a valid entry. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../runtime/sparse/sparse.h"

#include "rand_fill.h"
#include "unit.h"


static int reported;

static void check(bool ok, const char *what, int round, int op, unsigned dims, bool keep) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  if (reported++ < 20)
    printf("FAIL sparse_reduce round %d, op %d, dims %#x, keepdim %d: %s\n", round, op, dims, keep,
           what);
}

/* One case: the dense values (as doubles), which positions are valid, and
 * the sparse tensor. */
typedef struct scase {
  mq_dtype dt;
  int nd;
  int64_t shape[3], numel;
  double val[125];
  bool valid[125];
  bool masked;
  mq_tensor *t;
} scase;

static const char *const names[] = {"sum", "mean", "amax", "amin", "prod", "count"};

typedef struct call {
  scase *c;
  mq_sparse_red op;
  unsigned dims;
  bool keep;
  mq_tensor *out;
} call;

static void run(mq_state *S_, void *ud) {
  call *k = ud;
  k->out = mq_sparse_reduce(S, k->op, k->c->t, k->dims, k->keep, names[k->op]);
}

static bool same(double got, double want) { return (isnan(got) && isnan(want)) || got == want; }

/* The expected value of slot [s] over the valid positions [pos] (n of
 * them; z of them unstored zeros in a plain tensor: they are in pos too). */
static double expect(const scase *c, mq_sparse_red op, const int64_t *pos, int64_t n) {
  double a = op == MQ_SRED_PROD ? 1 : op == MQ_SRED_AMAX ? -INFINITY : op == MQ_SRED_AMIN ? INFINITY : 0;
  for (int64_t i = 0; i < n; i++) {
    double x = c->val[pos[i]];
    switch (op) {
    case MQ_SRED_SUM: case MQ_SRED_MEAN: a += x; break;
    case MQ_SRED_PROD: a *= x; break;
    case MQ_SRED_AMAX: a = a != a ? a : x != x || x > a ? x : a; break; /* NaN wins */
    case MQ_SRED_AMIN: a = a != a ? a : x != x || x < a ? x : a; break;
    default: break;
    }
  }
  if (op == MQ_SRED_MEAN) a /= (double)n;
  if (op == MQ_SRED_COUNT) a = (double)n;
  if (c->dt == MQ_DT_BOOL && (op == MQ_SRED_AMAX || op == MQ_SRED_AMIN)) a = a != 0;
  if (c->dt == MQ_DT_F32 && op != MQ_SRED_COUNT) a = (float)a;
  return a;
}

static void check_reduction(scase *c, int round, mq_sparse_red op, unsigned dims, bool keep) {
  call k = {c, op, dims, keep, NULL};
  bool fl = mq_dtype_is_float(c->dt);
  masq_status st = mq_protect(S, run, &k);
  if (op == MQ_SRED_MEAN && !fl) {
    check(st != MASQ_OK && strstr(S->err_message.data, "mean: needs a float tensor"),
          "mean of ints is refused", round, op, dims, keep);
    return;
  }
  if (st != MASQ_OK) {
    printf("FAIL sparse_reduce: %s\n", S->err_message.data);
    check(false, "no error", round, op, dims, keep);
    return;
  }
  mq_tensor *out = k.out;
  mq_dtype want_dt = op == MQ_SRED_COUNT ? MQ_DT_I64
                     : (op == MQ_SRED_SUM || op == MQ_SRED_PROD) && !fl ? MQ_DT_I64
                                                                       : c->dt;
  check(out->dtype == want_dt, "the result's dtype", round, op, dims, keep);
  /* the result's shape, and each slot's positions */
  int ond = 0;
  int64_t oshape[3], slots = 1;
  for (int d = 0; d < c->nd; d++)
    if (!(dims >> d & 1)) oshape[ond++] = c->shape[d], slots *= c->shape[d];
    else if (keep) oshape[ond++] = 1;
  bool shape_ok = out->ndim == ond;
  for (int d = 0; shape_ok && d < ond; d++) shape_ok = out->shape[d] == oshape[d];
  check(shape_ok, "the result's shape", round, op, dims, keep);
  if (!shape_ok || out->dtype != want_dt) return;
  bool masked_out = c->masked && op != MQ_SRED_COUNT;
  check(!!out->mask == masked_out, "a masked input gives a masked result", round, op, dims, keep);
  mq_tensor *data = out->mask ? mq_get_data(S, out) : out;
  const uint8_t *om = out->mask ? mq_tensor_data(out->mask) : NULL;
  bool ok = true;
  for (int64_t s = 0; s < slots && ok; s++) {
    int64_t pos[125], n = 0;
    for (int64_t p = 0; p < c->numel; p++) {
      /* the slot of position p: its kept coordinates, row-major */
      int64_t rest = p, idx[3], slot = 0;
      for (int d = c->nd - 1; d >= 0; d--) idx[d] = rest % c->shape[d], rest /= c->shape[d];
      for (int d = 0; d < c->nd; d++)
        if (!(dims >> d & 1)) slot = slot * c->shape[d] + idx[d];
      if (slot == s && c->valid[p]) pos[n++] = p;
    }
    if (om && om[s] != (n > 0)) ok = false;
    if (om && !n) continue;
    double got = mq_elem_f64((mq_dtype)data->dtype, (const char *)mq_tensor_data(data) +
                                                        s * (int64_t)mq_dtype_size((mq_dtype)data->dtype));
    if (want_dt == MQ_DT_I64) {
      /* exactly, as an int64 (products of small ints stay well inside 2^53) */
      ok = got == expect(c, op, pos, n);
    } else {
      ok = same(got, expect(c, op, pos, n));
    }
    if (!ok)
      printf("  slot %lld: got %g, want %g\n", (long long)s, got, expect(c, op, pos, n));
  }
  check(ok, "each slot's value and validity", round, op, dims, keep);
}

/* A random case: its dense values, then the sparse tensor of them in
 * [layout] with mask kind [mk] (0 plain, 1 structural, 2 mask values). */
static void make_case(scase *c, mq_dtype dt, bool csr, int mk) {
  c->dt = dt;
  c->nd = csr ? 2 : 1 + (int)below(3);
  c->numel = 1;
  for (int d = 0; d < c->nd; d++) c->shape[d] = 1 + below(5), c->numel *= c->shape[d];
  mq_tensor *dense = mq_tensor_new(S, dt, c->nd, c->shape);
  for (int64_t p = 0; p < c->numel; p++) {
    double v = below(3) == 0 ? 0 : (double)(below(7) - 3);
    if (dt == MQ_DT_BOOL) v = v > 0;
    if ((dt == MQ_DT_F32 || dt == MQ_DT_F64) && below(40) == 0) v = NAN;
    c->val[p] = v;
    put_value(dense, p, v);
  }
  mq_tensor *t = mq_to_sparse_coo(S, dense); /* stores the nonzeros */
  for (int64_t p = 0; p < c->numel; p++) c->valid[p] = mk == 0 || c->val[p] != 0;
  if (mk == 2) {
    /* mask values: some stored entries left out */
    int64_t nnz = t->sparse->nnz;
    mq_tensor *mv = mq_tensor_new(S, MQ_DT_BOOL, 1, &nnz);
    uint8_t *m = mq_tensor_data(mv);
    const int64_t *keys = mq_sparse_keys(S, t);
    for (int64_t k = 0; k < nnz; k++) {
      m[k] = below(4) != 0;
      c->valid[keys[k]] = m[k];
    }
    t = mq_sparse_masked(S, t, mq_sparse_with_values(S, t, mv, NULL));
  } else if (mk == 1) {
    t = mq_sparse_masked(S, t, NULL);
  }
  c->masked = mk != 0;
  c->t = csr ? mq_to_sparse_csr(S, t) : t;
}

static void tests(mq_state *S_, void *ud) {
  rng = 0x853c49e6748fea9bu;
  static const mq_dtype dts[] = {MQ_DT_BOOL, MQ_DT_I64, MQ_DT_F32, MQ_DT_F64};
  for (int round = 0; round < 96; round++) {
    scase c;
    make_case(&c, dts[round % 4], round / 4 % 2, round / 8 % 3);
    for (int op = 0; op <= MQ_SRED_COUNT; op++)
      for (unsigned dims = 1; dims < 1u << c.nd; dims++)
        for (int keep = 0; keep < 2; keep++) check_reduction(&c, round, (mq_sparse_red)op, dims, keep);
  }
}

int main(void) { return unit_main("test_sparse_reduce", tests); }
