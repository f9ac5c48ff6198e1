/* sparse_reduce.c - reductions of sparse tensors along any dims:
 * O(nnz + result), never O(numel) (softmax is in sparse_softmax.c).
 *
 * Each stored (valid) entry folds into the slot of the result its kept
 * coordinates name; entries are visited in ascending order, so each slot
 * sees its entries in one fixed order. Floats accumulate in double, ints
 * in int64. A CSR row reduction splits its rows among threads in runs of
 * about equal entries (mq_parallel_for_weighted; each row is one slot,
 * summed by one thread in entry order, so the bits do not depend on the
 * thread count); so does a COO reduction over its last dims (each slot's
 * entries are a run, see fold_runs); anything else runs on one thread. */
#include <math.h>

#include "../../core/checked.h"
#include "../tensor/tape.h"
#include "../tensor/internal.h"
#include "../tensor/parallel.h"
#include "sparse.h"

typedef struct red_job {
  mq_sparse_red op;
  const mq_tensor *t;
  const void *v;
  const uint8_t *m;   /* valid stored entries, NULL: all */
  int64_t ost[MQ_MAX_DIMS]; /* slot stride of each dim, 0 for reduced ones */
  void *acc;          /* double or int64 per slot */
  int64_t *cnt;       /* valid entries per slot */
  int64_t grain;      /* COO runs: entries a chunk nominally spans */
} red_job;

/* The fold loop over stored entries [lo, hi) (CSR: rows [lo, hi)) with
 * UPD(a, x) combining value x into accumulator a. */
#define FOLD_LOOP(T, A, UPD)                                                                \
  do {                                                                                      \
    const T *v = J->v;                                                                      \
    A *acc = J->acc;                                                                        \
    const uint8_t *m = J->m;                                                                \
    int64_t *cnt = J->cnt;                                                                  \
    if (J->t->layout == MQ_LAYOUT_CSR) {                                                    \
      const int64_t *c = mq_tensor_data(J->t->sparse->crow);                                \
      const int64_t *col = mq_tensor_data(J->t->sparse->indices);                           \
      int64_t s0 = J->ost[0], s1 = J->ost[1];                                               \
      for (int64_t r = lo; r < hi; r++)                                                     \
        if (s1 == 0) {                                                                      \
          A a = acc[r * s0];                                                                \
          int64_t n = 0;                                                                    \
          for (int64_t k = c[r]; k < c[r + 1]; k++) {                                       \
            if (m && !m[k]) continue;                                                       \
            A x = (A)v[k];                                                                  \
            UPD(a, x);                                                                      \
            n++;                                                                            \
          }                                                                                 \
          acc[r * s0] = a;                                                                  \
          cnt[r * s0] += n;                                                                 \
        } else {                                                                            \
          for (int64_t k = c[r]; k < c[r + 1]; k++) {                                       \
            if (m && !m[k]) continue;                                                       \
            int64_t s = r * s0 + col[k] * s1;                                               \
            A x = (A)v[k];                                                                  \
            UPD(acc[s], x);                                                                 \
            cnt[s]++;                                                                       \
          }                                                                                 \
        }                                                                                   \
    } else {                                                                                \
      const int64_t *ix = mq_tensor_data(J->t->sparse->indices);                            \
      int64_t nnz = J->t->sparse->nnz;                                                      \
      int nd = J->t->ndim;                                                                  \
      for (int64_t k = lo; k < hi; k++) {                                                   \
        if (m && !m[k]) continue;                                                           \
        int64_t s = 0;                                                                      \
        for (int d = 0; d < nd; d++) s += ix[d * nnz + k] * J->ost[d];                      \
        A x = (A)v[k];                                                                      \
        UPD(acc[s], x);                                                                     \
        cnt[s]++;                                                                           \
      }                                                                                     \
    }                                                                                       \
  } while (0)

#define U_SUM(a, x) a += x
#define U_PROD(a, x) a *= x
#define U_MAX(a, x) a = (x > a || x != x) ? x : a
#define U_MIN(a, x) a = (x < a || x != x) ? x : a
#define U_NONE(a, x) (void)x

#define DEF_FOLD(E, T, A)                                                                   \
  static void fold_##E(const red_job *J, int64_t lo, int64_t hi) {                          \
    switch (J->op) {                                                                        \
    case MQ_SRED_SUM:                                                                       \
    case MQ_SRED_MEAN: FOLD_LOOP(T, A, U_SUM); break;                                       \
    case MQ_SRED_PROD: FOLD_LOOP(T, A, U_PROD); break;                                      \
    case MQ_SRED_AMAX: FOLD_LOOP(T, A, U_MAX); break;                                       \
    case MQ_SRED_AMIN: FOLD_LOOP(T, A, U_MIN); break;                                       \
    default: FOLD_LOOP(T, A, U_NONE); break;                                                \
    }                                                                                       \
  }
DEF_FOLD(BOOL, uint8_t, int64_t)
DEF_FOLD(I64, int64_t, int64_t)
DEF_FOLD(F32, float, double)
DEF_FOLD(F64, double, double)

static void fold_range(void *ctx, int64_t lo, int64_t hi, int t) {
  (void)t;
  const red_job *J = ctx;
  switch ((mq_dtype)J->t->dtype) {
  case MQ_DT_BOOL: fold_BOOL(J, lo, hi); break;
  case MQ_DT_I64: fold_I64(J, lo, hi); break;
  case MQ_DT_F32: fold_F32(J, lo, hi); break;
  default: fold_F64(J, lo, hi); break;
  }
}

/* COO entries are in row-major order, so when the reduced dims are the
 * last ones the slot of entry k never decreases with k and each slot's
 * entries are one run. Threads then take chunks of entries whose bounds
 * move forward to the next change of slot (a binary search, the slot being
 * monotone), so each slot is folded by one thread in entry order and the
 * bits do not depend on the thread count. */
static int64_t coo_slot(const red_job *J, int64_t k) {
  const int64_t *ix = mq_tensor_data(J->t->sparse->indices);
  int64_t nnz = J->t->sparse->nnz, s = 0;
  for (int d = 0; d < J->t->ndim; d++) s += ix[d * nnz + k] * J->ost[d];
  return s;
}

/* The first entry at or after [p] that begins a slot's run (nnz: none). */
static int64_t run_start(const red_job *J, int64_t p) {
  int64_t nnz = J->t->sparse->nnz;
  if (p <= 0) return 0;
  if (p >= nnz) return nnz;
  int64_t prev = coo_slot(J, p - 1), lo = p, hi = nnz;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (coo_slot(J, mid) == prev) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void fold_runs(void *ctx, int64_t lo, int64_t hi, int t) {
  const red_job *J = ctx;
  int64_t a = run_start(J, lo * J->grain), b = run_start(J, hi * J->grain);
  if (a < b) fold_range(ctx, a, b, t);
}

/* The reduced dims are the last ones and at least one dim is kept. */
static bool trailing_dims(uint32_t dims, int ndim) {
  bool reduced = false;
  for (int d = 0; d < ndim; d++) {
    if (dims >> d & 1) reduced = true;
    else if (reduced) return false;
  }
  return reduced && !(dims & 1);
}

static const char *const red_names[] = {"sum", "mean", "amax", "amin", "prod", "count"};

const char *mq_sparse_red_name(int op) {
  return op >= 0 && op <= MQ_SRED_COUNT ? red_names[op] : "reduction";
}

static mq_dtype out_dtype(mq_state *S, mq_sparse_red op, mq_dtype dt) {
  switch (op) {
  case MQ_SRED_SUM:
  case MQ_SRED_PROD: return mq_dtype_is_float(dt) ? dt : MQ_DT_I64;
  case MQ_SRED_MEAN:
    if (!mq_dtype_is_float(dt))
      mq_error(S, "mean: needs a float tensor, got %s (use float(x))", mq_dtype_name(dt));
    return dt;
  case MQ_SRED_COUNT: return MQ_DT_I64;
  default: return dt;
  }
}

static double init_f(mq_sparse_red op) {
  return op == MQ_SRED_PROD ? 1 : op == MQ_SRED_AMAX ? -INFINITY : op == MQ_SRED_AMIN ? INFINITY : 0;
}
static int64_t init_i(mq_sparse_red op) {
  return op == MQ_SRED_PROD ? 1 : op == MQ_SRED_AMAX ? INT64_MIN : op == MQ_SRED_AMIN ? INT64_MAX : 0;
}

/* Writes slot [s]'s result; [z]: the slot's unstored entries (zeros) of a
 * plain tensor. */
static void finish(mq_sparse_red op, mq_tensor *out, int64_t s, bool fl, double af, int64_t ai,
                   int64_t n, int64_t z) {
  mq_dtype dt = (mq_dtype)out->dtype;
  if (op == MQ_SRED_COUNT) {
    ((int64_t *)mq_tensor_data(out))[s] = n + z;
    return;
  }
  if (z > 0) { /* the zeros a plain tensor does not store */
    switch (op) {
    case MQ_SRED_AMAX: af = af != af || af > 0 ? af : 0; ai = ai > 0 ? ai : 0; break;
    case MQ_SRED_AMIN: af = af != af || af < 0 ? af : 0; ai = ai < 0 ? ai : 0; break;
    case MQ_SRED_PROD: af *= 0, ai = 0; break;
    default: break;
    }
  }
  if (op == MQ_SRED_MEAN) af /= (double)(n + z);
  void *p = mq_tensor_data(out);
  switch (dt) {
  case MQ_DT_BOOL: ((uint8_t *)p)[s] = (uint8_t)(ai != 0); break;
  case MQ_DT_I64: ((int64_t *)p)[s] = ai; break;
  case MQ_DT_F32: ((float *)p)[s] = (float)(fl ? af : (double)ai); break;
  default: ((double *)p)[s] = fl ? af : (double)ai; break;
  }
}

/* CSR row sums and means of floats straight into the result: the common
 * case (row sums of a sparse matrix) without the per-slot accumulators. */
typedef struct rows_job {
  const mq_tensor *t;
  bool mean;
  void *out;
  uint8_t *om; /* masked: a row with no valid entry is out */
} rows_job;

#define DEF_ROWS(E, T)                                                                      \
  static void rows_##E(const rows_job *J, int64_t lo, int64_t hi) {                         \
    const int64_t *c = mq_tensor_data(J->t->sparse->crow);                                  \
    const T *v = mq_tensor_data(J->t->sparse->values);                                      \
    const uint8_t *m = J->t->mask ? mq_tensor_data(J->t->mask->sparse->values) : NULL;      \
    double per = (double)J->t->shape[1];                                                    \
    T *out = J->out;                                                                        \
    for (int64_t r = lo; r < hi; r++) {                                                     \
      double s = 0;                                                                         \
      int64_t n = 0;                                                                        \
      if (m) {                                                                              \
        /* selects, no branch: adding +0.0 to a sum that starts at +0.0 \
         * changes no bit (it never becomes -0.0), so this is the sum of \
         * the valid entries exactly */                                    \
        for (int64_t k = c[r]; k < c[r + 1]; k++) {                                         \
          s += m[k] ? (double)v[k] : 0.0;                                                   \
          n += m[k] != 0;                                                                   \
        }                                                                                   \
        J->om[r] = n > 0;                                                                   \
        if (J->mean) s /= (double)n;                                                        \
      } else {                                                                              \
        for (int64_t k = c[r]; k < c[r + 1]; k++) s += (double)v[k];                        \
        if (J->mean) s /= per;                                                              \
      }                                                                                     \
      out[r] = (T)s;                                                                        \
    }                                                                                       \
  }
DEF_ROWS(F32, float)
DEF_ROWS(F64, double)

static void rows_range(void *ctx, int64_t lo, int64_t hi, int t) {
  (void)t;
  const rows_job *J = ctx;
  if (J->t->dtype == MQ_DT_F32) rows_F32(J, lo, hi);
  else rows_F64(J, lo, hi);
}

static mq_tensor *csr_row_sums(mq_state *S, mq_tensor *t, bool mean, bool keepdim) {
  int64_t shape[2] = {t->shape[0], 1};
  mq_tensor *out = mq_tensor_new(S, (mq_dtype)t->dtype, keepdim ? 2 : 1, shape);
  mq_tensor *om = t->mask ? mq_tensor_new(S, MQ_DT_BOOL, keepdim ? 2 : 1, shape) : NULL;
  rows_job J = {.t = t, .mean = mean, .out = mq_tensor_data(out),
                .om = om ? mq_tensor_data(om) : NULL};
  int nt = mq_parallel_threads_for(S, t->sparse->nnz + t->shape[0]);
  mq_parallel_for_weighted(S, nt, t->shape[0], mq_tensor_data(t->sparse->crow), MQ_PAR_GRAIN,
                           rows_range, &J);
  return om ? mq_masked(S, out, om) : out;
}

static mq_tensor *reduce(mq_state *S, mq_sparse_red op, mq_tensor *t, uint32_t dims,
                         bool keepdim) {
  if (t->layout == MQ_LAYOUT_CSR && dims == 2 && mq_dtype_is_float((mq_dtype)t->dtype) &&
      (op == MQ_SRED_SUM || op == MQ_SRED_MEAN))
    return csr_row_sums(S, t, op == MQ_SRED_MEAN, keepdim);
  mq_dtype odt = out_dtype(S, op, (mq_dtype)t->dtype);
  int64_t oshape[MQ_MAX_DIMS], per = 1, slots = 1, st = 1;
  int ond = 0;
  red_job J = {.op = op, .t = t, .v = mq_tensor_data(t->sparse->values)};
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (dims >> d & 1) {
      per *= t->shape[d]; /* at most numel */
      J.ost[d] = 0;
    } else {
      J.ost[d] = st;
      st *= t->shape[d];
    }
  }
  for (int d = 0; d < t->ndim; d++)
    if (!(dims >> d & 1)) oshape[ond++] = t->shape[d];
    else if (keepdim) oshape[ond++] = 1;
  slots = st;
  if ((uint64_t)slots > MQ_SPARSE_DENSE_MAX / 16)
    mq_error(S, "%s: the result of size %s would take %.3g bytes (the limit is 2^40)",
             red_names[op], mq_shape_str(S, ond, oshape), (double)slots * 16);
  J.m = t->mask ? mq_tensor_data(t->mask->sparse->values) : NULL;
  bool fl = mq_dtype_is_float((mq_dtype)t->dtype);
  J.acc = mq_scratch(S, mq_ck_zmul(S, (size_t)(slots ? slots : 1), 8, "result"));
  J.cnt = mq_scratch(S, mq_ck_zmul(S, (size_t)(slots ? slots : 1), 8, "result"));
  for (int64_t s = 0; s < slots; s++) {
    if (fl) ((double *)J.acc)[s] = init_f(op);
    else ((int64_t *)J.acc)[s] = init_i(op);
    J.cnt[s] = 0;
  }
  if (t->layout == MQ_LAYOUT_CSR) {
    /* a row reduction writes each row's slot alone: rows split over threads */
    bool rows = J.ost[1] == 0 && J.ost[0] != 0;
    int nt = rows ? mq_parallel_threads_for(S, t->sparse->nnz + t->shape[0]) : 1;
    mq_parallel_for_weighted(S, nt, t->shape[0], mq_tensor_data(t->sparse->crow), MQ_PAR_GRAIN,
                             fold_range, &J);
  } else if (trailing_dims(dims, t->ndim)) {
    int64_t nnz = t->sparse->nnz;
    J.grain = MQ_PAR_GRAIN;
    mq_parallel_for(S, mq_parallel_threads_for(S, nnz), (nnz + J.grain - 1) / J.grain, 1,
                    fold_runs, &J);
  } else {
    mq_parallel_for(S, 1, t->sparse->nnz, MQ_PAR_GRAIN, fold_range, &J);
  }
  mq_tensor *out = mq_tensor_new(S, odt, ond, oshape);
  mq_tensor *mask = t->mask && op != MQ_SRED_COUNT ? mq_tensor_new(S, MQ_DT_BOOL, ond, oshape) : NULL;
  uint8_t *mk = mask ? mq_tensor_data(mask) : NULL;
  for (int64_t s = 0; s < slots; s++) {
    if ((s & (MQ_POLL_ELEMS - 1)) == MQ_POLL_ELEMS - 1) mq_check_interrupt(S);
    int64_t n = J.cnt[s], z = t->mask ? 0 : per - n;
    double af = fl ? ((double *)J.acc)[s] : 0;
    int64_t ai = fl ? 0 : ((int64_t *)J.acc)[s];
    if (mk) mk[s] = n > 0;
    if (!t->mask && n + z == 0 && (op == MQ_SRED_AMAX || op == MQ_SRED_AMIN))
      mq_error(S, "%s: a slice of size 0 has no largest or smallest entry", red_names[op]);
    finish(op, out, s, fl, af, ai, n, z);
  }
  return mask ? mq_masked(S, out, mask) : out;
}

mq_tensor *mq_sparse_reduce(mq_state *S, mq_sparse_red op, mq_tensor *t, uint32_t dims,
                            bool keepdim, const char *name) {
  if (t->layout == MQ_LAYOUT_CSC) return mq_sparse_csc_reduce(S, op, t, dims, keepdim, name);
  (void)name;
  mq_tensor *out = reduce(S, op, t, dims, keepdim);
  if (MQ_LIKELY(!t->requires_grad)) return out;
  mq_gradnode *n = mq_ag_rec_sparse(S, out, MQ_AG_SP_REDUCE, (int)op, 1, 0, &t);
  if (n) {
    n->dims = dims;
    n->keepdim = keepdim;
  }
  return out;
}
