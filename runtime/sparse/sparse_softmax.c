/* sparse_softmax.c - softmax / log_softmax of a masked sparse tensor along
 * any dim, over its valid entries (torch.sparse.softmax's rule: what is not
 * stored is -inf, i.e. out), at O(nnz log nnz) at worst.
 *
 * The stored entries that share every coordinate but [dim] form a group
 * (mq_sparse_group); each group is one softmax, computed apart from the
 * others, so groups split among threads and the result does not depend on
 * the thread count. CSR rows are groups as stored (crow); so are COO's
 * groups along its last dim (its entries are in row-major order); any
 * other dim takes a stable sort of the entries by group: counting when
 * there are at most about nnz possible groups (CSR columns, mostly), else
 * a natural merge sort. */
#include <math.h>

#include "../../core/checked.h"
#include "../tensor/tape.h"
#include "../tensor/internal.h"
#include "../tensor/parallel.h"
#include "sparse.h"
#include "../kernels/vexp.h"

static int64_t *scratch_i64(mq_state *S, int64_t n) {
  return mq_scratch(S, mq_ck_zmul(S, (size_t)(n > 0 ? n : 1), sizeof(int64_t), "nnz"));
}

/* The entry numbers 0..n-1 stably sorted by [gk]: a natural merge sort,
 * so entries already in order (runs) cost one pass; O(n log runs). */
static int64_t *sort_by(mq_state *S, const int64_t *gk, int64_t n) {
  int64_t *a = scratch_i64(S, n), *b = scratch_i64(S, n), *runs = scratch_i64(S, n + 1);
  int64_t nr = 1, step = 0;
  runs[0] = 0;
  for (int64_t k = 0; k < n; k++) {
    a[k] = k;
    if (k > 0 && gk[k] < gk[k - 1]) runs[nr++] = k;
  }
  runs[nr] = n;
  while (nr > 1) {
    int64_t w = 0;
    for (int64_t i = 0; i < nr; i += 2) {
      int64_t lo = runs[i], mid = runs[i + 1], hi = i + 2 <= nr ? runs[i + 2] : mid;
      int64_t p = lo, q = mid, o = lo;
      while (p < mid && q < hi) {
        mq_poll_at(S, step++);
        b[o++] = gk[a[q]] < gk[a[p]] ? a[q++] : a[p++]; /* ties: the left, stable */
      }
      while (p < mid) b[o++] = a[p++];
      while (q < hi) b[o++] = a[q++];
      runs[w++] = lo;
    }
    runs[w] = n;
    nr = w;
    int64_t *sw = a;
    a = b;
    b = sw;
  }
  return a;
}

/* The same by counting when the keys lie in [0, range) with range at most
 * about nnz: O(nnz + range), stable (entries placed in ascending order). */
static int64_t *count_sort(mq_state *S, const int64_t *gk, int64_t n, int64_t range) {
  int64_t *cnt = scratch_i64(S, range + 1), *a = scratch_i64(S, n);
  memset(cnt, 0, (size_t)(range + 1) * sizeof *cnt);
  for (int64_t k = 0; k < n; k++) cnt[gk[k] + 1]++;
  for (int64_t r = 0; r < range; r++) cnt[r + 1] += cnt[r];
  for (int64_t k = 0; k < n; k++) {
    mq_poll_at(S, k);
    a[cnt[gk[k]]++] = k;
  }
  return a;
}

void mq_sparse_group(mq_state *S, const mq_tensor *t, int dim, mq_sparse_groups *g) {
  MQ_ASSERT(t->layout != MQ_LAYOUT_CSC); /* groups need the dense order: CSC runs on its flip */
  int64_t nnz = t->sparse->nnz;
  g->order = NULL;
  if (t->layout == MQ_LAYOUT_CSR && dim == 1) {
    g->start = mq_tensor_data(t->sparse->crow);
    g->n = t->shape[0];
    return;
  }
  int64_t inner = 1, block;
  for (int d = t->ndim - 1; d > dim; d--)
    if (!mq_mul_ok(inner, t->shape[d], &inner)) mq_error(S, "size overflow in the groups");
  /* a 0-d tensor (dim 0 or -1, as torch) is one group of its one entry */
  if (!mq_mul_ok(inner, t->ndim ? t->shape[dim] : 1, &block))
    mq_error(S, "size overflow in the groups");
  /* each entry's dense position with coordinate [dim] taken out (block > 0
   * whenever an entry is stored) */
  int64_t *gk = mq_sparse_keys(S, t);
  for (int64_t k = 0; k < nnz; k++) {
    mq_poll_at(S, k);
    gk[k] = gk[k] / block * inner + gk[k] % inner;
  }
  /* the number of groups there could be: numel / shape[dim], when it fits */
  int64_t range = 1;
  bool small = true;
  for (int d = 0; d < t->ndim && small; d++)
    if (d != dim) small = mq_mul_ok(range, t->shape[d], &range) && range <= 2 * nnz + 1024;
  if (inner > 1) /* else gk ascends already */
    g->order = small ? count_sort(S, gk, nnz, range) : sort_by(S, gk, nnz);
  int64_t *start = scratch_i64(S, nnz + 1), n = 0;
  for (int64_t j = 0; j < nnz; j++) {
    mq_poll_at(S, j);
    int64_t k = g->order ? g->order[j] : j, prev = j ? (g->order ? g->order[j - 1] : j - 1) : 0;
    if (j == 0 || gk[k] != gk[prev]) start[n++] = j;
  }
  start[n] = nnz;
  g->start = start;
  g->n = n;
}

typedef struct sm_job {
  mq_dtype dt;
  const int64_t *start;
  void *o;
  const void *x;
  const uint8_t *m;
  bool lg;
  int cpu; /* the state's CPU path, for the float32 exp (vexp.h) */
} sm_job;

/* One group of [n] entries: max over the valid ones (NaN wins), exponentials
 * summed in double, scaled by the float reciprocal; masked-out entries get
 * 0 (-inf for log_softmax), a group with no valid entry NaN (all out), as
 * the strided masked softmax. Groups are short in a sparse tensor, so this
 * is one tight loop per step, inlined. */
#define DEF_SM(E, T, EXP)                                                                   \
  static void sm_##E(T *o, const T *x, const uint8_t *m, int64_t n, bool lg) {              \
    /* branch-free (selects only): a group is ~10 entries, where a branch per \
     * entry mispredicts; a NaN is noted apart and wins at the end */       \
    T mx = (T)-INFINITY;                                                                    \
    int64_t valid = 0;                                                                      \
    bool nan = false;                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                       \
      T xi = m[i] ? x[i] : (T)-INFINITY;                                                    \
      valid += m[i] != 0;                                                                   \
      nan |= xi != xi;                                                                      \
      mx = xi > mx ? xi : mx;                                                               \
    }                                                                                       \
    if (nan) mx = (T)NAN;                                                                   \
    if (!valid) {                                                                           \
      for (int64_t i = 0; i < n; i++) o[i] = (T)NAN;                                        \
      return;                                                                               \
    }                                                                                       \
    double s = 0;                                                                           \
    if (valid == n) { /* the usual case (a structural mask): no selects */               \
      for (int64_t i = 0; i < n; i++) {                                                     \
        T e = EXP(x[i] - mx);                                                               \
        o[i] = e;                                                                           \
        s += (double)e;                                                                     \
      }                                                                                     \
    } else {                                                                                \
      for (int64_t i = 0; i < n; i++) {                                                     \
        T e = m[i] ? EXP(x[i] - mx) : (T)0;                                                 \
        o[i] = e;                                                                           \
        s += (double)e;                                                                     \
      }                                                                                     \
    }                                                                                       \
    if (lg) {                                                                               \
      T lse = mx + (T)log(s);                                                               \
      for (int64_t i = 0; i < n; i++) o[i] = m[i] ? x[i] - lse : (T)-INFINITY;              \
      return;                                                                               \
    }                                                                                       \
    T inv = (T)(1.0 / s);                                                                   \
    for (int64_t i = 0; i < n; i++) o[i] *= inv;                                            \
  }
/* float32 takes runs of groups with one vector exp: sm_run_F32 below */
DEF_SM(F64, double, exp)

/* float32 groups [lo, hi), a run of up to RUN_GROUPS at a time: every
 * entry's x - max first (-inf where masked out, which exp takes to +0),
 * then one vector exp over the run's entries (a call per entry, as sm_F32
 * makes, costs about four times as much: mq_vexpf is long for a scalar),
 * then each group's sum in order, as sm_F32 adds them, and the scaling:
 * sm_F32's bits. */
#define RUN_GROUPS 256
static void sm_run_F32(const sm_job *J, int64_t lo, int64_t hi) {
  float *o = J->o, mxs[RUN_GROUPS];
  const float *x = J->x;
  const uint8_t *m = J->m;
  const int64_t *st = J->start;
  for (int64_t r0 = lo; r0 < hi; r0 += RUN_GROUPS) {
    int64_t r1 = hi - r0 < RUN_GROUPS ? hi : r0 + RUN_GROUPS;
    for (int64_t r = r0; r < r1; r++) {
      float mx = -INFINITY;
      bool nan = false;
      for (int64_t i = st[r]; i < st[r + 1]; i++) {
        float xi = m[i] ? x[i] : -INFINITY;
        nan |= xi != xi;
        mx = xi > mx ? xi : mx;
      }
      mxs[r - r0] = mx = nan ? NAN : mx;
      for (int64_t i = st[r]; i < st[r + 1]; i++) o[i] = m[i] ? x[i] - mx : -INFINITY;
    }
    mq_vexpf_rows(J->cpu, o + st[r0], o + st[r0], 0.0f, st[r1] - st[r0]);
    for (int64_t r = r0; r < r1; r++) {
      int64_t a = st[r], b = st[r + 1], valid = 0;
      double sum = 0;
      for (int64_t i = a; i < b; i++) valid += m[i] != 0, sum += (double)o[i];
      if (!valid) {
        for (int64_t i = a; i < b; i++) o[i] = NAN;
      } else if (J->lg) {
        float lse = mxs[r - r0] + (float)log(sum);
        for (int64_t i = a; i < b; i++) o[i] = m[i] ? x[i] - lse : -INFINITY;
      } else {
        float inv = (float)(1.0 / sum);
        for (int64_t i = a; i < b; i++) o[i] *= inv;
      }
    }
  }
}

static void sm_groups(void *ctx, int64_t lo, int64_t hi, int t) {
  (void)t;
  const sm_job *J = ctx;
  if (J->dt == MQ_DT_F32) {
    sm_run_F32(J, lo, hi);
    return;
  }
  for (int64_t r = lo; r < hi; r++) {
    int64_t a = J->start[r], n = J->start[r + 1] - a;
    sm_F64((double *)J->o + a, (const double *)J->x + a, J->m + a, n, J->lg);
  }
}

/* Entry j of the group order takes entry order[j]'s [es] bytes (to), or
 * gives them back (from). */
static void permute(mq_state *S, void *dst, const void *src, const int64_t *order, int64_t n,
                    size_t es, bool to) {
  char *d = dst;
  const char *s = src;
  for (int64_t j = 0; j < n; j++) {
    mq_poll_at(S, j);
    if (to) memcpy(d + (size_t)j * es, s + (size_t)order[j] * es, es);
    else memcpy(d + (size_t)order[j] * es, s + (size_t)j * es, es);
  }
}

mq_tensor *mq_sparse_softmax(mq_state *S, mq_tensor *t, int dim, bool lg, int dt,
                             const char *name) {
  if (!t->mask)
    mq_error(S, "%s of a plain %s tensor would give every unstored zero a share; masked(x) "
                "leaves unstored entries out (torch.sparse.softmax's rule), to_dense(x) counts "
                "them", name, mq_layout_name((mq_layout)t->layout));
  if (t->layout == MQ_LAYOUT_CSC) return mq_sparse_csc_softmax(S, t, dim, lg, dt, name);
  int d = mq_shape_norm_dim(S, dim, t->ndim);
  if (dt >= 0 && !mq_dtype_is_float((mq_dtype)dt))
    mq_error(S, "%s: dtype must be a float dtype, got %s", name, mq_dtype_name((mq_dtype)dt));
  /* dtype=float16 computes in float32: sparse values hold compute dtypes */
  mq_dtype odt = mq_dtype_float_compute(dt >= 0 ? (mq_dtype)dt : (mq_dtype)t->dtype);
  mq_tensor *x = mq_contiguous(S, mq_astype(S, t->sparse->values, odt));
  int64_t nnz = t->sparse->nnz;
  mq_tensor *o = mq_tensor_new(S, odt, 1, &nnz);
  mq_sparse_groups g;
  mq_sparse_group(S, t, d, &g);
  size_t es = odt == MQ_DT_F32 ? sizeof(float) : sizeof(double);
  sm_job J = {.dt = odt, .start = g.start, .o = mq_tensor_data(o), .x = mq_tensor_data(x),
              .m = mq_tensor_data(t->mask->sparse->values), .lg = lg, .cpu = S->cpu};
  if (g.order) { /* the groups' entries side by side, then back */
    size_t bytes = mq_ck_zmul(S, (size_t)(nnz ? nnz : 1), es, "nnz");
    void *xs = mq_scratch(S, bytes);
    uint8_t *ms = mq_scratch(S, (size_t)(nnz ? nnz : 1));
    permute(S, xs, J.x, g.order, nnz, es, true);
    permute(S, ms, J.m, g.order, nnz, 1, true);
    J.x = xs, J.m = ms, J.o = mq_scratch(S, bytes);
  }
  /* runs of groups of about equal entries (an exp each: a quarter of the
   * cheap kernel's grain) */
  mq_parallel_for_weighted(S, mq_parallel_threads_for(S, nnz), g.n, g.start, MQ_PAR_GRAIN / 4,
                           sm_groups, &J);
  if (g.order) permute(S, mq_tensor_data(o), J.o, g.order, nnz, es, false);
  mq_tensor *r = mq_sparse_with_values(S, t, o, t->mask);
  if (MQ_UNLIKELY(t->requires_grad)) {
    mq_gradnode *n = mq_ag_rec_sparse(S, r, MQ_AG_SP_SOFTMAX, lg, 1, 0, &t);
    if (n) n->dims = (uint32_t)d;
  }
  return r;
}
