/* test_sparse_matmul.c - products with a sparse operand
 * (runtime/sparse/sparse_matmul.c) against their definitions, written out here.
 *
 * Random operands of small integer values (every sum exact, in any dtype
 * and order) in int64, float32 and float64; the sparse one COO or CSR,
 * plain, structurally masked or with mask values leaving stored entries
 * out; the dense one plain or masked, 2-D or 1-D; widths on both sides of
 * the 16 columns SpMM takes at a time:
 *   - sparse @ dense: out[r, j] sums a's valid stored entries (r, c) times
 *     b[c, j] where that is valid. A result is masked when an operand is:
 *     with b masked, (r, j) is valid when some valid entry of row r meets a
 *     valid b[c, j] (a plain a: when column j of b has a valid element,
 *     which a's unstored zeros meet); with b plain, when row r has a valid
 *     entry;
 *   - dense @ sparse, the same the other way round;
 *   - masked_matmul(a, b, mask): a[r, :] . b[:, c] at each stored entry of
 *     the mask that is valid (its mask, or its bool values), 0 elsewhere;
 * bool operands are refused. */
#include <stdio.h>
#include <string.h>

#include "../../runtime/sparse/sparse.h"

#include "rand_fill.h"
#include "unit.h"


#define MAXE 2048

/* A matrix: values, which positions are stored and valid. */
typedef struct mat {
  int64_t r, c;
  double v[MAXE];
  bool stored[MAXE], valid[MAXE];
  mq_tensor *t;
} mat;

static int reported;
static void expect(bool ok, const char *what, int round) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  if (reported++ < 20) printf("FAIL sparse_matmul round %d: %s\n", round, what);
}

/* A dense matrix (or vector, c == 0 meaning 1-D of r), masked or not. */
static void dense(mat *x, mq_dtype dt, int64_t r, int64_t c, bool masked) {
  x->r = r, x->c = c ? c : 1;
  int64_t shape[2] = {r, c};
  mq_tensor *d = mq_tensor_new(S, dt, c ? 2 : 1, shape);
  mq_tensor *m = masked ? mq_tensor_new(S, MQ_DT_BOOL, c ? 2 : 1, shape) : NULL;
  for (int64_t i = 0; i < x->r * x->c; i++) {
    x->v[i] = (double)(below(7) - 3);
    x->stored[i] = true;
    x->valid[i] = !masked || below(4) != 0;
    put_value(d, i, x->v[i]);
    if (m) ((uint8_t *)mq_tensor_data(m))[i] = x->valid[i];
  }
  x->t = masked ? mq_masked(S, d, m) : d;
}

/* A sparse matrix: COO or CSR; mk 0 plain, 1 structural mask, 2 mask values. */
static void sparse(mat *x, mq_dtype dt, int64_t r, int64_t c, bool csr, int mk) {
  x->r = r, x->c = c;
  int64_t shape[2] = {r, c};
  mq_tensor *d = mq_tensor_new(S, dt, 2, shape);
  for (int64_t i = 0; i < r * c; i++) {
    x->v[i] = below(3) ? 0 : (double)(below(5) - 2);
    if (x->v[i] == 0 && below(5) == 0) x->v[i] = 3;
    put_value(d, i, x->v[i]);
    x->stored[i] = x->v[i] != 0;
    x->valid[i] = mk == 0 || x->stored[i];
  }
  mq_tensor *t = mq_to_sparse_coo(S, d);
  if (mk == 2) {
    int64_t nnz = t->sparse->nnz;
    mq_tensor *mv = mq_tensor_new(S, MQ_DT_BOOL, 1, &nnz);
    const int64_t *keys = mq_sparse_keys(S, t);
    for (int64_t k = 0; k < nnz; k++) {
      uint8_t v = below(4) != 0;
      ((uint8_t *)mq_tensor_data(mv))[k] = v;
      x->valid[keys[k]] = v;
    }
    t = mq_sparse_masked(S, t, mq_sparse_with_values(S, t, mv, NULL));
  } else if (mk == 1) {
    t = mq_sparse_masked(S, t, NULL);
  }
  x->t = csr ? mq_to_sparse_csr(S, t) : t;
}

static double elem(const mq_tensor *t, int64_t i) {
  return mq_elem_f64((mq_dtype)t->dtype,
                     (const char *)mq_tensor_data(t) + i * (int64_t)mq_dtype_size((mq_dtype)t->dtype));
}

/* out (rows x cols) against want and wvalid; [masked]: out must be masked
 * with exactly wvalid, else plain. */
static void compare(mq_tensor *out, mq_dtype dt, int64_t rows, int64_t cols, const double *want,
                    const bool *wvalid, bool masked, const char *what, int round) {
  expect(out->dtype == dt && out->numel == rows * cols && !!out->mask == masked, what, round);
  if (out->dtype != dt || out->numel != rows * cols || !!out->mask != masked) return;
  mq_tensor *d = mq_contiguous(S, mq_get_data(S, out));
  const uint8_t *m = out->mask ? mq_tensor_data(mq_contiguous(S, out->mask)) : NULL;
  bool ok = true;
  for (int64_t i = 0; i < rows * cols && ok; i++) {
    if (m && m[i] != wvalid[i]) ok = false;
    else if ((!m || m[i]) && elem(d, i) != want[i]) ok = false;
    if (!ok)
      printf("  %s entry %lld: got %g (valid %d), want %g (valid %d)\n", what, (long long)i,
             elem(d, i), m ? m[i] : 1, want[i], wvalid[i]);
  }
  expect(ok, what, round);
}

typedef struct mm_call {
  mq_tensor *a, *b, *mask, *out;
} mm_call;
static void run_mm(mq_state *S_, void *ud) {
  mm_call *k = ud;
  k->out = k->mask ? mq_sparse_masked_matmul(S, k->a, k->b, k->mask) : mq_sparse_matmul(S, k->a, k->b);
}

static double want[MAXE];
static bool wvalid[MAXE];

static void one_round(int round) {
  static const mq_dtype dts[] = {MQ_DT_I64, MQ_DT_F32, MQ_DT_F64};
  static const int64_t widths[] = {1, 3, 16, 20, 33};
  mq_dtype dt = dts[round % 3];
  bool csr = round / 3 % 2, bmasked = round / 6 % 2, vec = round % 7 == 0;
  int mk = round / 12 % 3;
  int64_t m = 1 + below(6), k = 1 + below(6), n = vec ? 0 : widths[below(5)];
  static mat a, b;

  /* sparse @ dense */
  sparse(&a, dt, m, k, csr, mk);
  dense(&b, dt, k, n, bmasked);
  int64_t nn = n ? n : 1;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < nn; j++) {
      double s = 0;
      bool any_entry = false, pair = false, colvalid = false;
      for (int64_t c = 0; c < k; c++) {
        bool av = a.stored[i * k + c] && a.valid[i * k + c], bv = b.valid[c * nn + j];
        any_entry |= av;
        pair |= av && bv;
        colvalid |= bv;
        if (av && bv) s += a.v[i * k + c] * b.v[c * nn + j];
      }
      want[i * nn + j] = s;
      wvalid[i * nn + j] = !bmasked ? any_entry : mk ? pair : colvalid;
    }
  mm_call call = {a.t, b.t, NULL, NULL};
  expect(mq_protect(S, run_mm, &call) == MASQ_OK, "sparse @ dense runs", round);
  if (call.out) compare(call.out, dt, m, nn, want, wvalid, mk || bmasked, "sparse @ dense", round);

  /* dense @ sparse: a (m, k) dense, b (k, n) sparse; n at least 1 */
  int64_t n2 = n ? n : 3;
  dense(&a, dt, m, vec ? 0 : k, bmasked);
  if (vec) a.c = m, a.r = 1; /* a 1-D a of m entries: (m,) @ (m, n2) */
  int64_t kk = vec ? m : k, rows = vec ? 1 : m;
  sparse(&b, dt, kk, n2, csr, mk);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t c = 0; c < n2; c++) {
      double s = 0;
      bool any_a = false, pair = false;
      for (int64_t p = 0; p < kk; p++) {
        bool av = a.valid[i * kk + p], bv = b.stored[p * n2 + c] && b.valid[p * n2 + c];
        any_a |= av;
        pair |= av && bv;
        if (av && bv) s += a.v[i * kk + p] * b.v[p * n2 + c];
      }
      want[i * n2 + c] = s;
      wvalid[i * n2 + c] = mk ? pair : any_a;
    }
  call = (mm_call){a.t, b.t, NULL, NULL};
  expect(mq_protect(S, run_mm, &call) == MASQ_OK, "dense @ sparse runs", round);
  if (call.out) compare(call.out, dt, rows, n2, want, wvalid, mk || bmasked, "dense @ sparse", round);

  /* masked_matmul: plain a (m, k), b (k, n2); the mask's stored entries */
  static mat pa, pb, pm;
  dense(&pa, dt, m, k, false);
  dense(&pb, dt, k, n2, false);
  sparse(&pm, round % 2 ? MQ_DT_BOOL : dt, m, n2, csr, mk);
  mq_tensor *r = NULL;
  call = (mm_call){pa.t, pb.t, pm.t, NULL};
  expect(mq_protect(S, run_mm, &call) == MASQ_OK, "masked_matmul runs", round);
  if (!(r = call.out)) return;
  r = mq_sparse_to_dense(S, r);
  for (int64_t i = 0; i < m; i++)
    for (int64_t c = 0; c < n2; c++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) s += pa.v[i * k + p] * pb.v[p * n2 + c];
      bool stored = pm.stored[i * n2 + c];
      /* valid: the mask's mask, or a bool mask's values (stored ones true) */
      bool valid = stored && pm.valid[i * n2 + c];
      want[i * n2 + c] = valid ? s : 0;
      wvalid[i * n2 + c] = valid;
    }
  compare(r, dt, m, n2, want, wvalid, true, "masked_matmul", round);
}

typedef struct bool_call {
  mq_tensor *a, *b;
} bool_call;
static void run_bool(mq_state *S_, void *ud) {
  bool_call *k = ud;
  mq_sparse_matmul(S, k->a, k->b);
}

static void tests(mq_state *S_, void *ud) {
  rng = 0xda942042e4dd58b5u;
  for (int round = 0; round < 216; round++) one_round(round);
  /* bool operands have no product */
  static mat a, b;
  sparse(&a, MQ_DT_BOOL, 3, 4, false, 0);
  dense(&b, MQ_DT_BOOL, 4, 2, false);
  bool_call bc = {a.t, b.t};
  masq_status st = mq_protect(S, run_bool, &bc);
  expect(st != MASQ_OK && strstr(S->err_message.data, "bool tensors have no product"),
         "bool @ bool is refused", -1);
}

int main(void) { return unit_main("test_sparse_matmul", tests); }
