/* test_dim_ops.c - the dense reductions (runtime/reduce*.c) and the ops
 * along one dim (runtime/kernels/scan.c) against their definitions, written out
 * here position by position.
 *
 * Random tensors of 1 to 3 dims (rows of 1 to 4100 entries: past the
 * sixteen lanes and the 4096-entry pieces of the float kernels), in bool,
 * int64, float32 and float64, of small values whose sums and products are
 * exact in any order (0, +-0.5, +-1, +-2), plain or masked (slices wholly
 * masked out among them), with and without NaN. On every CPU path this
 * machine runs (the float32 kernels have one each):
 *   - sum, mean, amax, amin, prod, all, any, count and logsumexp over every
 *     set of dims, with and without keepdim: the result's dtype and shape
 *     (sums and products of ints in int64, mean and logsumexp of ints in
 *     float32, all and any bool, count a plain int64), each valid slot's
 *     value (exact: a float32 result rounded once from the double
 *     accumulator; logsumexp within 1e-6 relative), NaN winning amax and
 *     amin, and the mask (a slot is valid when it has a valid entry);
 *   - argmax and argmin (the first best; NaN beats everything), median
 *     (the lower one; NaN if one is there), cumsum and cumprod (masked-out
 *     entries count as the identity) along every dim, argmax and argmin of
 *     the flattened tensor too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../runtime/tensor/cpu.h"
#include "../../runtime/kernels/ops.h"
#include "../../runtime/tensor/tensor.h"

#include "rand_fill.h"
#include "unit.h"


#define MAXN 8400

typedef struct dcase {
  mq_dtype dt;
  int nd;
  int64_t shape[3], numel;
  double val[MAXN]; /* each entry's value */
  bool valid[MAXN];
  bool masked;
  mq_tensor *t;
} dcase;

static int reported;
static void fail(const dcase *c, const char *op, int cpu, const char *what, long long at) {
  failed++;
  if (reported++ < 25)
    printf("FAIL dim_ops: %s on %s (%lld%s%lld%s%lld)%s, path %s: %s (at %lld)\n", op,
           mq_dtype_name(c->dt), (long long)c->shape[0], c->nd > 1 ? " x " : "",
           c->nd > 1 ? (long long)c->shape[1] : 0LL, c->nd > 2 ? " x " : "",
           c->nd > 2 ? (long long)c->shape[2] : 0LL, c->masked ? ", masked" : "", mq_cpu_name(cpu),
           what, at);
}
#define EXPECT(ok, c, op, cpu, what, at)                                      \
  do {                                                                         \
    if (ok) passed++;                                                          \
    else fail(c, op, cpu, what, (long long)(at));                             \
  } while (0)

static double elem(const mq_tensor *t, int64_t i) {
  return mq_elem_f64((mq_dtype)t->dtype,
                     (const char *)mq_tensor_data(t) + i * (int64_t)mq_dtype_size((mq_dtype)t->dtype));
}
static bool same(double got, double want) { return (isnan(got) && isnan(want)) || got == want; }
/* float32 results are the double rounded once */
static double as_out(mq_dtype out, double v) { return out == MQ_DT_F32 ? (double)(float)v : v; }

/* --- cases -------------------------------------------------------------------- */

static void make_case(dcase *c, mq_dtype dt, int nd, const int64_t *shape, bool masked, bool nans) {
  c->dt = dt, c->nd = nd, c->numel = 1, c->masked = masked;
  for (int d = 0; d < nd; d++) c->shape[d] = shape[d], c->numel *= shape[d];
  mq_tensor *data = mq_tensor_new(S, dt, nd, c->shape);
  mq_tensor *mask = masked ? mq_tensor_new(S, MQ_DT_BOOL, nd, c->shape) : NULL;
  static const double vals[] = {0, 0.5, -0.5, 1, -1, 2, -2, 1};
  for (int64_t p = 0; p < c->numel; p++) {
    double v = vals[below(8)];
    if (dt == MQ_DT_BOOL) v = v > 0;
    if (dt == MQ_DT_I64 && v != trunc(v)) v = v > 0 ? 3 : -3;
    if (nans && below(60) == 0) v = NAN;
    c->val[p] = v;
    put_value(data, p, v);
    c->valid[p] = !masked || below(10) < 7;
    if (mask) ((uint8_t *)mq_tensor_data(mask))[p] = c->valid[p];
  }
  c->t = masked ? mq_masked(S, data, mask) : data;
}

/* The coordinates of position p. */
static void coords(const dcase *c, int64_t p, int64_t *idx) {
  for (int d = c->nd - 1; d >= 0; d--) idx[d] = p % c->shape[d], p /= c->shape[d];
}

/* --- reductions ----------------------------------------------------------------- */

static const char *const red_names[] = {
#define X(E, name, ...) name,
    MQ_REDUCE_OPS(X)
#undef X
};

typedef struct slot {
  double sum, prod, mx, mn, se;
  int64_t isum, iprod, n;
  bool any, all;
} slot;

static slot slots[MAXN];
static int64_t slot_of[MAXN];

static mq_dtype red_out(mq_redop op, mq_dtype dt) {
  bool fl = dt == MQ_DT_F32 || dt == MQ_DT_F64;
  switch (op) {
  case MQ_RED_SUM: case MQ_RED_PROD: return fl ? dt : MQ_DT_I64;
  case MQ_RED_MEAN: case MQ_RED_LOGSUMEXP: return fl ? dt : MQ_DT_F32;
  case MQ_RED_ALL: case MQ_RED_ANY: return MQ_DT_BOOL;
  case MQ_RED_COUNT: return MQ_DT_I64;
  default: return dt;
  }
}

/* logsumexp of the valid entries of slot s, in double, from its sum of
 * exp(v - max) */
static double lse(double se, double mx) {
  if (isnan(mx)) return NAN;
  if (mx == -INFINITY) return -INFINITY;
  return log(se) + mx;
}

static void check_reduce(const dcase *c, int cpu, mq_redop op, unsigned dims, bool keep) {
  const char *name = red_names[op];
  int nd = 0, dl[3];
  for (int d = 0; d < c->nd; d++)
    if (dims >> d & 1) dl[nd++] = d;
  mq_tensor *out = mq_reduce(S, op, c->t, nd == c->nd && !keep ? 0 : nd, dl, keep);
  /* the expected shape and slots */
  int ond = 0;
  int64_t oshape[3], on = 1;
  for (int d = 0; d < c->nd; d++)
    if (!(dims >> d & 1)) oshape[ond++] = c->shape[d], on *= c->shape[d];
    else if (keep) oshape[ond++] = 1;
  mq_dtype want_dt = red_out(op, c->dt);
  bool ok = out->dtype == want_dt && out->ndim == ond;
  for (int d = 0; ok && d < ond; d++) ok = out->shape[d] == oshape[d];
  EXPECT(ok, c, name, cpu, "the result's dtype and shape", dims);
  if (!ok) return;
  bool want_mask = c->masked && op != MQ_RED_COUNT;
  EXPECT(!!out->mask == want_mask, c, name, cpu, "masked exactly when the input is", dims);
  if (!!out->mask != want_mask) return;
  for (int64_t s = 0; s < on; s++)
    slots[s] = (slot){0, 1, -INFINITY, INFINITY, 0, 0, 1, 0, false, true};
  for (int64_t p = 0; p < c->numel; p++) {
    int64_t idx[3], s = 0;
    coords(c, p, idx);
    for (int d = 0; d < c->nd; d++)
      if (!(dims >> d & 1)) s = s * c->shape[d] + idx[d];
    slot_of[p] = s;
    if (!c->valid[p]) continue;
    slot *o = &slots[s];
    double v = c->val[p];
    o->sum += v, o->prod *= v, o->n++;
    if (v == v) { /* the int sums (for int dtypes, which have no NaN) */
      o->isum = (int64_t)((uint64_t)o->isum + (uint64_t)(int64_t)v);
      o->iprod = (int64_t)((uint64_t)o->iprod * (uint64_t)(int64_t)v);
    }
    o->mx = o->mx != o->mx ? o->mx : v != v || v > o->mx ? v : o->mx; /* NaN wins */
    o->mn = o->mn != o->mn ? o->mn : v != v || v < o->mn ? v : o->mn;
    o->any |= v != 0, o->all &= v != 0;
  }
  if (op == MQ_RED_LOGSUMEXP)
    for (int64_t p = 0; p < c->numel; p++)
      if (c->valid[p]) slots[slot_of[p]].se += exp(c->val[p] - slots[slot_of[p]].mx);
  mq_tensor *data = out->mask ? mq_get_data(S, out) : out;
  const uint8_t *om = out->mask ? mq_tensor_data(out->mask) : NULL;
  bool fl = c->dt == MQ_DT_F32 || c->dt == MQ_DT_F64;
  for (int64_t s = 0; s < on; s++) {
    const slot *o = &slots[s];
    if (om && om[s] != (o->n > 0)) {
      fail(c, name, cpu, "a slot is valid exactly when it has a valid entry", s);
      return;
    }
    if (om && !o->n) continue;
    double want;
    switch (op) {
    case MQ_RED_SUM: want = fl ? o->sum : (double)o->isum; break;
    case MQ_RED_MEAN: want = o->sum / (double)o->n; break;
    case MQ_RED_AMAX: want = o->mx; break;
    case MQ_RED_AMIN: want = o->mn; break;
    case MQ_RED_PROD: want = fl ? o->prod : (double)o->iprod; break;
    case MQ_RED_ALL: want = o->all; break;
    case MQ_RED_ANY: want = o->any; break;
    case MQ_RED_COUNT: want = (double)o->n; break;
    default: want = lse(o->se, o->mx); break;
    }
    want = as_out(want_dt, want);
    double got = elem(data, s);
    bool good = op == MQ_RED_LOGSUMEXP && isfinite(want) ? fabs(got - want) <= 1e-6 * (1 + fabs(want))
                                                        : same(got, want);
    if (!good) {
      printf("  %s dims %#x slot %lld: got %.17g, want %.17g\n", name, dims, (long long)s, got, want);
      fail(c, name, cpu, "a slot's value", s);
      return;
    }
  }
  passed++;
}

/* --- along one dim ------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The distance between neighbours along dim d. */
static int64_t stride_of(const dcase *c, int d) {
  int64_t st = 1;
  for (int e = c->nd - 1; e > d; e--) st *= c->shape[e];
  return st;
}

static void check_scans(const dcase *c, int cpu) {
  for (int d = -1; d < c->nd; d++) {
    int64_t n = d < 0 ? c->numel : c->shape[d], st = d < 0 ? 1 : stride_of(c, d);
    mq_tensor *amax = mq_argext(S, c->t, d, false, true), *amin = mq_argext(S, c->t, d, false, false);
    mq_tensor *med = d < 0 ? NULL : mq_median(S, c->t, d, false);
    mq_tensor *cs = d < 0 ? NULL : mq_cumulative(S, c->t, d, false);
    mq_tensor *cp = d < 0 ? NULL : mq_cumulative(S, c->t, d, true);
    bool ok = amax->dtype == MQ_DT_I64 && !!amax->mask == c->masked;
    EXPECT(ok, c, "argmax", cpu, "an int64 result, masked when the input is", d);
    if (med) {
      EXPECT(med->dtype == (c->dt == MQ_DT_BOOL ? MQ_DT_I64 : c->dt), c, "median", cpu, "dtype", d);
      mq_dtype cdt = c->dt == MQ_DT_F32 || c->dt == MQ_DT_F64 ? c->dt : MQ_DT_I64;
      EXPECT(cs->dtype == cdt && cp->dtype == cdt && !!cs->mask == c->masked, c, "cumsum", cpu,
             "dtype and mask", d);
    }
    if (!ok) return;
    mq_tensor *dmax = amax->mask ? mq_get_data(S, amax) : amax, *dmin = amin->mask ? mq_get_data(S, amin) : amin;
    mq_tensor *dmed = med && med->mask ? mq_get_data(S, med) : med;
    mq_tensor *dcs = cs && cs->mask ? mq_get_data(S, cs) : cs, *dcp = cp && cp->mask ? mq_get_data(S, cp) : cp;
    /* the slices: one per output entry, in order */
    int64_t outs = c->numel / (n ? n : 1);
    double buf[MAXN];
    for (int64_t o = 0; o < outs; o++) {
      int64_t base = d < 0 ? 0 : (o / st) * st * n + o % st;
      int64_t bmax = -1, bmin = -1, cnt = 0;
      bool nan = false;
      double csum = 0, cprod = 1;
      int64_t icsum = 0, icprod = 1;
      for (int64_t j = 0; j < n; j++) {
        int64_t p = base + j * st;
        double v = c->val[p];
        bool valid = c->valid[p];
        if (valid) {
          /* NaN beats everything, the first of equals wins */
          double bx = bmax < 0 ? 0 : c->val[base + bmax * st], bn = bmin < 0 ? 0 : c->val[base + bmin * st];
          if (bmax < 0 || (v > bx || (v != v && bx == bx))) bmax = j;
          if (bmin < 0 || (v < bn || (v != v && bn == bn))) bmin = j;
          nan |= v != v;
          buf[cnt++] = v;
          csum += v, cprod *= v;
          if (v == v) {
            icsum = (int64_t)((uint64_t)icsum + (uint64_t)(int64_t)v);
            icprod = (int64_t)((uint64_t)icprod * (uint64_t)(int64_t)v);
          }
        }
        if (cs) {
          mq_dtype cdt = (mq_dtype)cs->dtype;
          double gs = elem(dcs, p), gp = elem(dcp, p);
          double ws = as_out(cdt, cdt == MQ_DT_I64 ? (double)icsum : csum);
          double wp = as_out(cdt, cdt == MQ_DT_I64 ? (double)icprod : cprod);
          if (!same(gs, ws) || !same(gp, wp)) {
            printf("  cumsum/cumprod dim %d entry %lld: got %g, %g, want %g, %g\n", d, (long long)p, gs,
                   gp, ws, wp);
            fail(c, "cumsum", cpu, "a running value", p);
            return;
          }
        }
      }
      bool want_valid = cnt > 0;
      if (amax->mask && ((const uint8_t *)mq_tensor_data(amax->mask))[o] != want_valid) {
        fail(c, "argmax", cpu, "valid exactly when the slice has a valid entry", o);
        return;
      }
      if (!want_valid) continue;
      if (elem(dmax, o) != (double)bmax || elem(dmin, o) != (double)bmin) {
        printf("  dim %d slice %lld: argmax %g argmin %g, want %lld %lld\n", d, (long long)o,
               elem(dmax, o), elem(dmin, o), (long long)bmax, (long long)bmin);
        fail(c, "argmax", cpu, "the index of the first best", o);
        return;
      }
      if (med) {
        /* the lower median: the ((cnt - 1) / 2)-th smallest */
        if (!nan) qsort(buf, (size_t)cnt, sizeof *buf, cmp_double);
        double want = nan ? NAN : buf[(cnt - 1) / 2];
        if (!same(elem(dmed, o), want)) {
          fail(c, "median", cpu, "the lower median", o);
          return;
        }
      }
    }
    passed++;
  }
}

static void tests(mq_state *S_, void *ud) {
  rng = 0x9e3779b97f4a7c15u;
  static const int64_t shapes[][4] = {
      /* nd, sizes */
      {1, 1}, {1, 7}, {1, 33}, {2, 3, 5}, {2, 2, 33}, {2, 5, 1}, {2, 2, 4100}, {2, 4100, 2},
      {3, 4, 17, 3}, {3, 3, 2, 40}, {3, 2, 1, 5},
  };
  static const mq_dtype dts[] = {MQ_DT_BOOL, MQ_DT_I64, MQ_DT_F32, MQ_DT_F64};
  int paths = mq_cpu_best() + 1, saved = S->cpu;
  static dcase c;
  for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
    for (int di = 0; di < 4; di++)
      for (int variant = 0; variant < 3; variant++) {
        bool masked = variant > 0, nans = variant == 2 || (variant == 0 && sh % 2);
        make_case(&c, dts[di], (int)shapes[sh][0], &shapes[sh][1], masked, nans && di >= 2);
        for (int cpu = 0; cpu < paths; cpu++) {
          if (cpu && dts[di] != MQ_DT_F32) break; /* one path for the rest */
          S->cpu = cpu;
          for (int op = 0; op < MQ_RED__COUNT; op++)
            for (unsigned dims = 1; dims < 1u << c.nd; dims++)
              for (int keep = 0; keep < 2; keep++) check_reduce(&c, cpu, (mq_redop)op, dims, keep);
          check_scans(&c, cpu);
        }
      }
  S->cpu = saved;
}

int main(void) { return unit_main("test_dim_ops", tests); }
