/* reduce.c - the reductions sum, mean, prod, amax, amin, all, any, count
 * and logsumexp over any set of dims, masked or plain: checking the
 * arguments, choosing the dtypes and the kernel (reduce_kernels.c), the
 * identity the accumulator starts from, the walk (reduce_walk.c), turning
 * the accumulator into the result, and recording for autograd. An output
 * with no valid input is masked out; its hidden data is the identity (NaN
 * for mean), as in torch.masked. */
#include <math.h>

#include "reduce.h"

#include "../tensor/half.h"
#include "../tensor/parallel.h"
#include "reduce_simd.h"
#include "ops.h"

/* The rows' name, in, res and ident columns (ops_reduce.h). */
enum { IN_ASIS, IN_FLOAT };
enum { RES_KEEP, RES_WIDEN, RES_FLOAT, RES_BOOL, RES_INT64 };
enum { ID_NONE, ID_ZERO, ID_ONE, ID_LOWEST, ID_HIGHEST, ID_TRUE, ID_FALSE, ID_LSE };
static const struct {
  const char *name;
  uint8_t in, res, ident;
} red_rows[MQ_RED__COUNT] = {
#define X(E, name, bind, deriv, fuse, conf, in, res, ident, doc)               \
  [MQ_RED_##E] = {name, IN_##in, RES_##res, ID_##ident},
    MQ_REDUCE_OPS(X)
#undef X
};

/* Fills the accumulator with the op's identity. */
static void acc_init(mq_redop op, mq_dtype dt, void *acc, int64_t n) {
  int id = red_rows[op].ident;
  switch (id) {
  case ID_TRUE: case ID_FALSE: /* a bool slot whatever the input */
    memset(acc, id == ID_TRUE, (size_t)n);
    return;
  case ID_ZERO:
    memset(acc, 0, (size_t)n * mq_red_kernels[op][dt]->acc_size); /* 0.0 and 0 are all-zero bits */
    return;
  case ID_ONE:
    for (int64_t i = 0; i < n; i++) {
      if (mq_dtype_is_float(dt)) ((double *)acc)[i] = 1;
      else ((int64_t *)acc)[i] = 1;
    }
    return;
  case ID_LSE:
    for (int64_t i = 0; i < n; i++) ((mq_red_lse *)acc)[i] = (mq_red_lse){-INFINITY, 0};
    return;
  case ID_LOWEST: case ID_HIGHEST: break;
  default: return; /* never folded */
  }
  bool low = id == ID_LOWEST;
  switch (dt) {
  case MQ_DT_BOOL: memset(acc, low ? 0 : 1, (size_t)n); break;
  case MQ_DT_I64: for (int64_t i = 0; i < n; i++) ((int64_t *)acc)[i] = low ? INT64_MIN : INT64_MAX; break;
  case MQ_DT_F32: for (int64_t i = 0; i < n; i++) ((float *)acc)[i] = low ? -INFINITY : INFINITY; break;
  default: for (int64_t i = 0; i < n; i++) ((double *)acc)[i] = low ? -INFINITY : INFINITY; break;
  }
}

/* The dtype an op reads its input as, and the one it answers in. */
static mq_dtype read_dtype(mq_redop op, mq_dtype dt) {
  return red_rows[op].in == IN_FLOAT && !mq_dtype_is_float(dt) ? MQ_DT_F32 : dt;
}
static mq_dtype out_dtype(mq_redop op, mq_dtype dt) {
  switch (red_rows[op].res) {
  case RES_WIDEN: return mq_dtype_is_float(dt) ? dt : MQ_DT_I64;
  case RES_FLOAT: return mq_dtype_is_float(dt) ? dt : MQ_DT_F32;
  case RES_BOOL: return dt == MQ_DT_U8 ? MQ_DT_U8 : MQ_DT_BOOL; /* torch's all/any of uint8 */
  case RES_INT64: return MQ_DT_I64;
  default: return dt;
  }
}

/* Turns the folded accumulator [acc] into the result [out] of [op] (means
 * divide by [count], or by P->R when it is NULL) and sets out's mask from
 * [count] (NULL: all valid). */
static void finish(mq_state *S, mq_redop op, const mq_red_plan *P, mq_tensor *out, const void *acc,
                   const int64_t *count) {
  void *o = mq_tensor_data(out);
  mq_dtype out_dt = (mq_dtype)out->dtype;
  int64_t on = P->on;
  if (op == MQ_RED_MEAN) {
    const double *a = acc;
    if (out_dt == MQ_DT_F64)
      for (int64_t i = 0; i < on; i++) ((double *)o)[i] = a[i] / (double)(count ? count[i] : P->R);
    else
      for (int64_t i = 0; i < on; i++) ((float *)o)[i] = (float)(a[i] / (double)(count ? count[i] : P->R));
  } else if (op == MQ_RED_LOGSUMEXP) {
    const mq_red_lse *a = acc;
    for (int64_t i = 0; i < on; i++) {
      double v = a[i].S != a[i].S ? NAN : a[i].M == -INFINITY ? -INFINITY : log(a[i].S) + a[i].M;
      if (out_dt == MQ_DT_F64) ((double *)o)[i] = v;
      else ((float *)o)[i] = (float)v;
    }
  } else if (acc != o) {
    if (out_dt == MQ_DT_F32) /* float sums and products accumulated in double */
      for (int64_t i = 0; i < on; i++) ((float *)o)[i] = (float)((const double *)acc)[i];
    else
      memcpy(o, acc, (size_t)on * mq_dtype_size(out_dt));
  }
  mq_red_set_mask(S, P, out, count);
}

/* The accumulator of [out]: the output itself when it has the
 * accumulator's type, else scratch; holding the identity. */
static void *acc_for(mq_state *S, mq_redop op, mq_dtype dt, const mq_red_plan *P, mq_tensor *out) {
  const mq_red_kernel *k = mq_red_kernels[op][dt];
  void *acc = out->dtype == dt && k->acc_size == mq_dtype_size(dt) && op != MQ_RED_MEAN
                  ? mq_tensor_data(out) : mq_red_acc(S, P, k->acc_size);
  acc_init(op, dt, acc, P->on);
  return acc;
}

/* --- half inputs by pieces --------------------------------------------- */

/* A reduction of a half tensor by the float32 kernel's pieces (the float
 * sums and extrema): each piece of MQ_RED_PIECE entries widened into a
 * buffer on the stack, its partial computed from there, the partials
 * merged as mq_reduce merges float32's (mq_red_rows: the same bits), so
 * the half data is read once and no float32 copy of it is made. */
typedef struct half_red {
  const mq_red_kernel *k;
  mq_redop op;
  const uint16_t *x;
  const uint8_t *m;   /* the mask, contiguous, or NULL */
  int64_t rlen, np;   /* entries and pieces a row */
  int64_t p0;         /* the first piece of this run (row-major over all rows) */
  char *parts;        /* its partials and counts */
  int64_t *pcnt;
  bool bf16;
  int cpu;
} half_red;

#if MQ_CPU_X86
/* The float32 sum's piece on the AVX2 or AVX-512 path (fsum_piece_F32_avx2
 * or _avx512, reduce_kernels.c: sixteen lanes in double, the tail into
 * lanes 0.., a masked-out entry +0.0, the lanes added pairwise) from the
 * half data, widened in the registers: no pass through a buffer. */
static void hsum_piece(int cpu, void *part, int64_t *cnt, const uint16_t *x, bool bf16,
                       const uint8_t *m, int64_t n) {
  double d[16] = {0};
  float tail[16];
  int64_t i = n - n % 16;
  int64_t c = cpu == MQ_CPU_AVX512 ? mq_simd_fsum_h16_avx512(x, bf16, m, i, d)
                                   : mq_simd_fsum_h16_avx2(x, bf16, m, i, d);
  mq_half_widen(cpu, bf16, tail, x + i, n - i);
  for (int64_t j = 0; j < n - i; j++) {
    d[j] += m && !m[i + j] ? 0.0 : (double)tail[j];
    c += m ? m[i + j] : 0;
  }
  if (cnt && m) *cnt += c;
  *(double *)part = (((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]))) +
                    (((d[8] + d[9]) + (d[10] + d[11])) + ((d[12] + d[13]) + (d[14] + d[15])));
}
#endif

void mq_red_half_piece(int cpu, mq_redop op, bool bf16, void *part, int64_t *cnt, const uint16_t *x,
                       const uint8_t *m, int64_t n) {
#if MQ_CPU_X86
  if (cpu != MQ_CPU_PORTABLE && (op == MQ_RED_SUM || op == MQ_RED_MEAN)) {
    hsum_piece(cpu, part, cnt, x, bf16, m, n);
    return;
  }
#endif
  float buf[MQ_RED_PIECE];
  mq_half_widen(cpu, bf16, buf, x, n);
  mq_red_kernel_on(mq_red_kernels[op][MQ_DT_F32], cpu)->piece(part, cnt, buf, m, n);
}

static void half_red_range(void *ctx, int64_t lo, int64_t hi, int t) {
  const half_red *H = ctx;
  for (int64_t q = lo; q < hi; q++) {
    int64_t r = (H->p0 + q) / H->np, p = (H->p0 + q) % H->np, len = mq_red_piece_len(H->rlen, p);
    int64_t i0 = r * H->rlen + p * MQ_RED_PIECE;
    H->pcnt[q] = 0;
    mq_red_half_piece(H->cpu, H->op, H->bf16, H->parts + (size_t)q * H->k->acc_size, &H->pcnt[q],
                      H->x + i0, H->m ? H->m + i0 : NULL, len);
  }
}

typedef struct half_batch {
  mq_state *S;
  half_red *H;
  int nt;
} half_batch;

/* Pieces [a, b) on the threads, into parts and pcnt (mq_red_pieces_fn). */
static void half_red_batch(void *ctx, int64_t a, int64_t b, char *parts, int64_t *pcnt) {
  half_batch *B = ctx;
  B->H->p0 = a, B->H->parts = parts, B->H->pcnt = pcnt;
  mq_parallel_for(B->S, B->nt, b - a, MQ_PAR_GRAIN / MQ_RED_PIECE, half_red_range, B->H);
}

/* [op] of half tensor [t] over its last dims, or NULL when this way does
 * not apply (then mq_reduce widens t): an op with float32 pieces, a
 * non-empty contiguous t with no gradient to record, [dims] its last
 * ones (0 of them: all). */
static mq_tensor *reduce_half(mq_state *S, mq_redop op, mq_tensor *t, int ndims, const int *dims,
                              bool keepdim) {
  const mq_red_kernel *k = mq_red_piece_kernel(S, op, MQ_DT_F32);
  if (!k || t->requires_grad || t->ndim == 0 || t->numel == 0 || !mq_tensor_is_contiguous(t) ||
      (t->dtype != MQ_DT_F16 && t->dtype != MQ_DT_BF16))
    return NULL;
  bool red[MQ_MAX_DIMS] = {false};
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < 0 || dims[i] >= t->ndim || red[dims[i]]) return NULL; /* the plan says why */
    red[dims[i]] = true;
  }
  int first = ndims ? t->ndim - ndims : 0; /* the reduced dims are [first, ndim) */
  for (int d = first; d < t->ndim; d++)
    if (ndims && !red[d]) return NULL;
  int64_t oshape[MQ_MAX_DIMS], rlen = 1;
  int ond = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (d < first) oshape[ond++] = t->shape[d];
    else {
      rlen *= t->shape[d];
      if (keepdim) oshape[ond++] = 1;
    }
  }
  half_red H = {.k = k, .op = op, .x = mq_tensor_data(t), .rlen = rlen, .np = mq_red_piece_count(rlen),
                .bf16 = t->dtype == MQ_DT_BF16, .cpu = S->cpu};
  if (t->mask) H.m = mq_tensor_data(mq_contiguous(S, t->mask));
  mq_red_rows R;
  mq_red_rows_begin(S, &R, op, MQ_DT_F32, t->numel / rlen, rlen, ond, oshape, t->mask != NULL);
  half_batch B = {S, &H, mq_parallel_threads_for(S, t->numel)};
  mq_red_rows_fold(S, &R, H.np, half_red_batch, &B);
  return mq_red_rows_end(S, &R);
}

mq_tensor *mq_reduce(mq_state *S, mq_redop op, mq_tensor *t, int ndims, const int *dims,
                     bool keepdim) {
  if ((unsigned)op >= MQ_RED__COUNT) mq_error(S, "bad reduction");
  if (mq_dtype_is_narrow((mq_dtype)t->dtype)) { /* torch's dtype: sum(int8) int64, mean(float16) float16 */
    mq_tensor *r = reduce_half(S, op, t, ndims, dims, keepdim);
    if (!r) r = mq_reduce(S, op, mq_tensor_computable(S, t), ndims, dims, keepdim);
    mq_dtype want = out_dtype(op, (mq_dtype)t->dtype);
    return want == MQ_DT_U8 && r->dtype == MQ_DT_BOOL ? mq_astype(S, r, want) : mq_narrow_back(S, r, want);
  }
  mq_dtype dt = read_dtype(op, (mq_dtype)t->dtype), out_dt = out_dtype(op, (mq_dtype)t->dtype);
  mq_red_plan P;
  mq_red_plan_init(S, &P, red_rows[op].name, t, dt, ndims, dims, keepdim);
  /* an extremum's identity (+-inf) is no value: an empty slice has none */
  int id = red_rows[op].ident;
  if (P.R == 0 && !t->mask && (id == ID_LOWEST || id == ID_HIGHEST))
    mq_error(S, "%s of an empty tensor has no value (reduce a non-empty tensor, or mask it)",
             red_rows[op].name);
  mq_tensor *out = mq_tensor_new(S, out_dt, P.ond, P.oshape);
  if (op == MQ_RED_COUNT) { /* always defined, so never masked */
    int64_t *count = mq_red_counts(S, &P);
    for (int64_t i = 0; i < P.on; i++) ((int64_t *)mq_tensor_data(out))[i] = count ? count[i] : P.R;
    return out;
  }
  void *acc = acc_for(S, op, dt, &P, out);
  finish(S, op, &P, out, acc, mq_red_fold_count(S, &P, mq_red_kernels[op][dt], acc));
  mq_ag_reduce(S, out, op, t, ndims, dims, keepdim);
  return out;
}

const mq_red_kernel *mq_red_piece_kernel(mq_state *S, mq_redop op, mq_dtype dt) {
  if ((unsigned)op >= MQ_RED__COUNT || (unsigned)dt >= MQ_DT__COUNT || op == MQ_RED_COUNT) return NULL;
  const mq_red_kernel *k = mq_red_kernels[op][dt];
  return k && k->piece && k->merge && k->combine && read_dtype(op, dt) == dt ? mq_red_kernel_on(k, S->cpu)
                                                                              : NULL;
}

void mq_red_rows_begin(mq_state *S, mq_red_rows *R, mq_redop op, mq_dtype dt, int64_t rows,
                       int64_t rlen, int ond, const int64_t *oshape, bool masked) {
  R->op = op;
  R->k = mq_red_kernels[op][dt];
  R->P = (mq_red_plan){.ond = ond, .on = rows, .R = rlen};
  memcpy(R->P.oshape, oshape, (size_t)ond * sizeof *oshape);
  R->out = mq_tensor_new(S, out_dtype(op, dt), ond, R->P.oshape);
  R->acc = acc_for(S, op, dt, &R->P, R->out);
  R->count = masked ? mq_red_acc(S, &R->P, sizeof *R->count) : NULL;
}

void mq_red_rows_merge(mq_red_rows *R, int64_t r, const void *parts, const int64_t *pcnt, int64_t np) {
  R->k->merge(R->acc, r, parts, np);
  if (R->count) {
    R->count[r] = 0;
    for (int64_t p = 0; p < np; p++) R->count[r] += pcnt[p];
  }
}

mq_tensor *mq_red_rows_end(mq_state *S, mq_red_rows *R) {
  finish(S, R->op, &R->P, R->out, R->acc, R->count);
  return R->out;
}

/* One long row's pieces [a, b), numbered from the row's first. */
typedef struct row_fold {
  mq_red_pieces_fn fn;
  void *ctx;
  int64_t base;
} row_fold;

static void row_fold_batch(void *ctx, int64_t a, int64_t b, char *parts, int64_t *pcnt) {
  const row_fold *J = ctx;
  J->fn(J->ctx, J->base + a, J->base + b, parts, pcnt);
}

void mq_red_rows_fold(mq_state *S, mq_red_rows *R, int64_t np, mq_red_pieces_fn fn, void *ctx) {
  int64_t rows = R->P.on;
  size_t as = R->k->acc_size;
  int64_t hold = np <= MQ_RED_BATCH ? MQ_RED_BATCH / np * np : MQ_RED_BATCH;
  if (hold > rows * np) hold = rows * np;
  char *parts = mq_scratch(S, (size_t)hold * as);
  int64_t *pcnt = mq_scratch(S, (size_t)hold * sizeof *pcnt);
  if (np <= MQ_RED_BATCH) {
    int64_t wr = hold / np;
    for (int64_t r0 = 0; r0 < rows; r0 += wr) {
      int64_t r1 = rows - r0 < wr ? rows : r0 + wr;
      fn(ctx, r0 * np, r1 * np, parts, pcnt);
      for (int64_t r = r0; r < r1; r++)
        mq_red_rows_merge(R, r, parts + (size_t)((r - r0) * np) * as, pcnt + (r - r0) * np, np);
    }
    return;
  }
  row_fold J = {fn, ctx, 0};
  for (int64_t r = 0; r < rows; r++) {
    J.base = r * np;
    int64_t c = mq_red_fold_pieces(R->k, R->acc, r, np, parts, pcnt, row_fold_batch, &J);
    if (R->count) R->count[r] = c;
  }
}
