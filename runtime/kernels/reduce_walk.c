/* reduce_walk.c - the block walk every reduction runs on (reduce.c,
 * stats.c; fuse.c cuts rows into the same pieces): planning a reduction
 * over any set of dims, then feeding the contiguous runs of its input to a
 * kernel's row, acc_row or piece functions, on several threads for large
 * inputs (runtime/tensor/parallel.h). It knows nothing of ops or dtypes beyond
 * element sizes: kept apart from the kernels so that every reduction,
 * whatever its kernel, splits its work the same way, and a result depends
 * on the sizes only, never on the thread count. */
#include "../../core/checked.h"
#include "ops.h"
#include "../tensor/parallel.h"
#include "reduce.h"
#include "../tensor/maskspan.h"

/* The first entry of each row of [mask]'s last [s] entries, in row order:
 * the mask of a padding-shaped tensor broadcast along its rows ((B, L, 1)
 * over (B, L, D)) is one byte a row, where expanding it would write and
 * then read a byte per entry. */
static const uint8_t *row_mask(mq_state *S, const mq_tensor *mask, int64_t s) {
  int64_t shape[MQ_MAX_DIMS], left = s;
  for (int d = 0; d < mask->ndim; d++) shape[d] = mask->shape[d];
  for (int d = mask->ndim - 1; d >= 0 && left > 1; d--) { /* the trailing dims that make up s */
    left /= shape[d];
    shape[d] = 1;
  }
  mq_tensor *v = mq_tensor_view(S, mask, mask->ndim, shape, mask->strides, mask->offset);
  return mq_tensor_data(mq_contiguous(S, v));
}

void mq_red_plan_init(mq_state *S, mq_red_plan *P, const char *name, mq_tensor *t, mq_dtype dt,
                      int ndims, const int *dims, bool keepdim) {
  bool red[MQ_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) red[d] = ndims == 0;
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < 0 || dims[i] >= (t->ndim ? t->ndim : 1))
      mq_error(S, "%s: dimension %d out of range for a %d-d tensor", name, dims[i], t->ndim);
    if (t->ndim == 0) continue;
    if (red[dims[i]]) mq_error(S, "%s: dimension %d appears twice", name, dims[i]);
    red[dims[i]] = true;
  }
  P->t = t;
  P->ond = 0;
  P->R = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (red[d]) {
      P->R *= t->shape[d];
      if (keepdim) P->oshape[P->ond++] = 1;
    } else {
      P->oshape[P->ond++] = t->shape[d];
    }
  }
  P->on = 1;
  for (int d = 0; d < P->ond; d++) P->on *= P->oshape[d];
  P->x = mq_tensor_data(mq_contiguous(S, mq_astype(S, mq_get_data(S, t), dt)));
  P->es = mq_dtype_size(dt);
  P->ms_pending = t->mask && mq_masksum_pending(t->mask);
  P->mv = mq_mask_view_get(S, t->mask, !P->ms_pending);
  P->nb = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 1) continue;
    if (P->nb && P->bred[P->nb - 1] == red[d]) {
      P->bsize[P->nb - 1] *= t->shape[d];
    } else {
      P->bsize[P->nb] = t->shape[d];
      P->bred[P->nb++] = red[d];
    }
  }
  if (P->nb == 0) { /* one element: a kept block of 1 */
    P->bsize[0] = 1;
    P->bred[0] = false;
    P->nb = 1;
  }
  /* the dims of the last block are the trailing ones of its kind */
  P->mrow_uniform = t->mask != NULL;
  for (int d = t->ndim - 1; d >= 0 && P->mrow_uniform; d--) {
    if (t->shape[d] == 1) continue;
    if (red[d] != P->bred[P->nb - 1]) break;
    P->mrow_uniform = t->mask->strides[d] == 0;
  }
  P->m_rows = false;
  if (t->mask && !P->mv.m) { /* no summary */
    if (P->mrow_uniform) { /* a broadcast mask: one byte a row, not expanded */
      P->mv.m = row_mask(S, t->mask, P->bsize[P->nb - 1]);
      P->m_rows = true;
    } else {
      P->mv.m = mq_tensor_data(mq_contiguous(S, t->mask));
    }
  }
  P->m = P->mv.m;
}

/* Whether the walk can read a mask of one byte per row ([P]->m_rows):
 * only the kernels that fold pieces ask nothing but a row's state. */
static const uint8_t *full_mask(mq_state *S, const mq_red_plan *P) {
  return P->m_rows ? mq_tensor_data(mq_contiguous(S, P->t->mask)) : P->m;
}

/* A walk over the rows of the merged blocks: row r of [s] entries folds
 * into slot o(r) (last block reduced) or into slots o(r) .. o(r) + s - 1. */
typedef struct walk_ctx {
  const mq_red_plan *P;
  const mq_red_kernel *k;
  void *acc;
  int64_t *cnt; /* count valid entries here (fused kernels only), or NULL */
  const char *x;
  size_t es;
  const uint8_t *m;
  mq_mask_view mv; /* m with its summary (.ms NULL: none, or m is not P's mask) */
  bool uniform;     /* every row of m is all 1 or all 0 (P->mrow_uniform) */
  bool m_rows;      /* m holds one byte a row (P->m_rows) */
  /* the spans of the mask's rows (maskspan.h), when m is P's mask and the
   * kernel folds runs: a run of entries is then read only where valid,
   * as plain data, wherever the padding ends (NULL: none) */
  const mq_mask_rows *rs;
  uint16_t *bcnt;   /* the valid entries of each block of m, counted for its
                       summary on the way (pieces are its blocks), or NULL */
  int nb;
  bool last_red;
  int64_t s, rows, ostr[MQ_MAX_DIMS];
  int64_t cgroup; /* columns a thread claims at a time (a multiple of 64) */
  /* rows of slots in groups of rb rows: group g > 0 folds into its own
   * slots at gacc + (g - 1) * slots (and counts at gcnt likewise) */
  int64_t rb, slots, ngroups;
  char *gacc, *ident;
  int64_t *gcnt;
  /* one long row split into pieces: its start, and the batch of pieces
   * being computed: [pa, pa + ...) into parts and pcnt */
  int64_t row_i, pa;
  char *parts;
  int64_t *pcnt;
  /* rows folded piece by piece (summarized masks): each thread's batch of
   * partials at tparts + t * batch * acc_size, counts at tpcnt + t * batch */
  int64_t batch;
  char *tparts;
  int64_t *tpcnt;
} walk_ctx;

/* One piece of a row for the kernels that compute pieces (the fast ones):
 * entries [i, i + n) of the input, read as the mask's summary allows. A
 * piece the summary shows all masked out is not read: its partial is an
 * empty piece's, the identity, which is bitwise what folding n masked-out
 * entries gives (each lane folds the identity into the identity). An
 * all-valid piece is read as plain data, which folds exactly what the
 * masked loop would (the select keeps every entry), and counts n. */
/* What entries [i, i + n) of one row of the mask hold, as far as the
 * summary or a broadcast along the rows tells. */
/* At most this many valid runs a piece is read as (a piece over many
 * short padded rows is read with its mask instead). */
#define SPAN_RUNS 64

static mq_ms_state run_state(const walk_ctx *W, int64_t i, int64_t n) {
  if (W->uniform) return W->m[W->m_rows ? i / W->s : i] ? MQ_MS_VALID : MQ_MS_MASKED;
  if (W->rs) {
    int64_t runs[2 * SPAN_RUNS];
    int nr = mq_mask_rows_runs(W->rs, i, n, runs, SPAN_RUNS);
    if (nr == 0) return MQ_MS_MASKED;
    if (nr > 0) return nr == 1 && runs[0] == 0 && runs[1] == n ? MQ_MS_VALID : MQ_MS_MIXED;
    /* a row with holes: the block summary may still know (a mask that is
     * not padding, valid and masked out by aligned blocks) */
  }
  return mq_mask_run(&W->mv, i, n);
}

/* The valid runs of entries [i, i + n) into runs (at most SPAN_RUNS) and
 * their count, or -1 when the mask must be read (no spans, or a row with
 * holes); *len gets the number of valid entries. */
static int valid_runs(const walk_ctx *W, int64_t i, int64_t n, int64_t *runs, int64_t *len) {
  int nr = W->rs ? mq_mask_rows_runs(W->rs, i, n, runs, SPAN_RUNS) : -1;
  *len = 0;
  for (int k = 0; k < nr; k++) *len += runs[2 * k + 1] - runs[2 * k];
  return nr;
}

static void piece_at(const walk_ctx *W, void *part, int64_t *cnt, int64_t i, int64_t n) {
  const mq_red_kernel *k = W->k;
  const char *x = W->x + (size_t)i * W->es;
  int64_t runs[2 * SPAN_RUNS], len;
  int nr = valid_runs(W, i, n, runs, &len);
  if (nr >= 0) { /* only the valid runs are read (none: the identity) */
    if (nr == 1 && len == n) {
      k->piece(part, NULL, x, NULL, n);
    } else if (nr == 0) {
      k->piece(part, NULL, x, NULL, 0);
    } else if (len * 4 < n) {
      k->runs(part, x, n, runs, nr);
    } else {
      /* a quarter of the piece valid or more: read all of it in one
       * stream, with a mask built here from the runs (in L1), the same
       * bits as the runs. Measured on this machine (EPYC, one thread,
       * rows of 16 KB, plain C): summing the first 3/4 of each row takes
       * 1.8x the time of summing every row whole, the first half 1.2x,
       * the first quarter 0.45x, an eighth 0.3x (the prefetchers run on
       * past the end of a run, and each row restarts them); sum(x, 1) of
       * rows padded to random lengths (half valid) 1.55x the all-valid
       * time reading the runs alone, 1.2x this way */
      uint8_t mb[MQ_RED_PIECE];
      int64_t at = 0;
      for (int q = 0; q < nr; q++) {
        memset(mb + at, 0, (size_t)(runs[2 * q] - at));
        memset(mb + runs[2 * q], 1, (size_t)(runs[2 * q + 1] - runs[2 * q]));
        at = runs[2 * q + 1];
      }
      memset(mb + at, 0, (size_t)(n - at));
      k->piece(part, NULL, x, mb, n);
    }
    *cnt += len;
    return;
  }
  switch (W->m ? run_state(W, i, n) : MQ_MS_VALID) {
  case MQ_MS_MASKED: k->piece(part, NULL, x, NULL, 0); break;
  case MQ_MS_VALID:
    k->piece(part, NULL, x, NULL, n);
    if (W->m) *cnt += n;
    break;
  default:
    if (W->bcnt) { /* a piece is a block of the mask here */
      int64_t c = 0;
      k->piece(part, &c, x, W->m + i, n);
      W->bcnt[i / MQ_MS_BLOCK] = (uint16_t)c;
      *cnt += c;
    } else {
      k->piece(part, cnt, x, W->m + i, n);
    }
  }
}

/* Pieces [a, b) of the row from entry row_i, one after the other on the
 * calling thread (mq_red_pieces_fn; ctx: a row_job). */
typedef struct row_job {
  const walk_ctx *W;
  mq_state *S; /* polled between batches, or NULL on a worker thread */
  int64_t row_i;
} row_job;

static void row_batch(void *ctx, int64_t a, int64_t b, char *parts, int64_t *pcnt) {
  const row_job *J = ctx;
  const walk_ctx *W = J->W;
  if (J->S) mq_poll(J->S);
  for (int64_t p = a; p < b; p++) {
    pcnt[p - a] = 0;
    piece_at(W, parts + (size_t)(p - a) * W->k->acc_size, &pcnt[p - a], J->row_i + p * MQ_RED_PIECE,
             mq_red_piece_len(W->s, p));
  }
}

/* Row r (its entries from i0) into slot o as pieces merged in order,
 * [parts] and [pcnt] holding a batch of them: exactly what row_cnt gives
 * (mq_red_kernel), with the summary's help. */
static void row_pieces(mq_state *S, const walk_ctx *W, char *parts, int64_t *pcnt, int64_t o,
                       int64_t i0) {
  /* a row all masked out leaves its slot as it is: its pieces would all be
   * the identity, and merging identities changes no slot (see walk_rows) */
  if (run_state(W, i0, W->s) == MQ_MS_MASKED) return;
  row_job J = {W, S, i0};
  int64_t c = mq_red_fold_pieces(W->k, W->acc, o, mq_red_piece_count(W->s), parts, pcnt, row_batch, &J);
  if (W->cnt && W->m) W->cnt[o] += c;
}

/* Folds rows [r0, r1), and of each the entries [c0, c1) when the last
 * block is kept (the whole row when it is reduced; c1 - c0 <= TILE
 * then); polls S for interrupts unless S is NULL (a worker thread). */
#define TILE 16384
static void walk_rows(mq_state *S, const walk_ctx *W, int64_t r0, int64_t r1, int64_t c0,
                      int64_t c1, int tid) {
  const mq_red_plan *P = W->P;
  const mq_red_kernel *k = W->k;
  int nb = W->nb;
  int64_t s = W->s, idx[MQ_MAX_DIMS], o = 0, rest = r0, polled = 0;
  /* rows of slots count in 32 bits per tile, added to cnt whenever the
   * rows move to other slots (and long before 32 bits could overflow) */
  uint32_t tcnt[TILE];
  int64_t pending = 0;
  bool tiled = W->cnt && !W->last_red;
  if (tiled) memset(tcnt, 0, (size_t)(c1 - c0) * sizeof *tcnt);
  for (int b = nb - 2; b >= 0; b--) { /* the block indices of row r0 */
    idx[b] = rest % P->bsize[b];
    rest /= P->bsize[b];
    o += idx[b] * W->ostr[b];
  }
  for (int64_t r = r0; r < r1; r++) {
    const char *xr = W->x + (size_t)(r * s + c0) * W->es;
    const uint8_t *mr = W->m && !W->m_rows ? W->m + r * s + c0 : NULL;
    if (W->last_red) {
      if (W->tparts)
        row_pieces(S, W, W->tparts + (size_t)tid * (size_t)W->batch * k->acc_size,
                   W->tpcnt + (size_t)tid * (size_t)W->batch, o, r * s);
      else if (W->rs && k->row_span && !W->cnt && W->rs->rlen == s && W->rs->full[r])
        k->row_span(W->acc, o, xr, s, W->rs->lo[r], W->rs->hi[r]); /* a padded row: its span */
      else if (W->cnt) k->row_cnt(W->acc, W->cnt, o, xr, mr, s);
      else k->row(W->acc, o, xr, mr, s);
    } else {
      void *a = (char *)W->acc + (size_t)(o + c0) * k->acc_size;
      int64_t runs[2 * SPAN_RUNS], len;
      int nr = valid_runs(W, r * s + c0, c1 - c0, runs, &len);
      /* with a summary, the fast kernels skip a run of slots' entries that
       * are all masked out (folding the identity changes no slot: x + 0.0
       * is x for every sum that starts from +0.0, and an extremum keeps
       * its slot against an infinite fill) and read all-valid runs plain;
       * with spans, only the valid runs of a padded row are read */
      mq_ms_state st = MQ_MS_MIXED;
      if (nr == 0) st = MQ_MS_MASKED;
      else if (nr > 0 && len == c1 - c0) st = MQ_MS_VALID;
      else if (nr < 0 && (W->mv.ms || W->uniform) && k->piece) st = run_state(W, r * s + c0, c1 - c0);
      if (nr > 0 && st == MQ_MS_MIXED) {
        for (int q = 0; q < nr; q++) { /* slots outside the runs keep their value */
          int64_t lo = runs[2 * q], hi = runs[2 * q + 1];
          k->acc_row((char *)a + (size_t)lo * k->acc_size, xr + (size_t)lo * W->es, NULL, hi - lo);
          if (tiled)
            for (int64_t i = lo; i < hi; i++) tcnt[i]++;
        }
      } else if (st == MQ_MS_VALID) {
        k->acc_row(a, xr, NULL, c1 - c0);
        if (tiled)
          for (int64_t i = 0; i < c1 - c0; i++) tcnt[i]++;
      } else if (st == MQ_MS_MIXED) {
        if (tiled) k->acc_row_cnt(a, tcnt, xr, mr, c1 - c0);
        else k->acc_row(a, xr, mr, c1 - c0);
      }
    }
    int64_t o0 = o;
    for (int b = nb - 2; b >= 0; b--) {
      if (++idx[b] < P->bsize[b]) {
        o += W->ostr[b];
        break;
      }
      o -= W->ostr[b] * (P->bsize[b] - 1);
      idx[b] = 0;
    }
    if (tiled && (o != o0 || r + 1 == r1 || ++pending == INT32_MAX)) {
      for (int64_t i = 0; i < c1 - c0; i++) W->cnt[o0 + c0 + i] += tcnt[i];
      memset(tcnt, 0, (size_t)(c1 - c0) * sizeof *tcnt);
      pending = 0;
    }
    if (S && (polled += c1 - c0) >= MQ_POLL_ELEMS) {
      polled = 0;
      mq_check_interrupt(S);
    }
  }
}

/* Thread chunks: rows [lo, hi) (each its own output slot), column
 * groups [lo, hi) of every row, or pieces [lo, hi) of one long row. */
static void range_rows(void *ctx, int64_t lo, int64_t hi, int t) {
  walk_rows(NULL, ctx, lo, hi, 0, ((const walk_ctx *)ctx)->s, t);
}
/* Columns [c0, c1) of every row (rows of slots: the last block is kept),
 * in tiles of TILE columns, for the 32-bit counters on the stack. Tiles
 * are wide: a narrow one (slots kept in L1) reads each row in pieces on
 * pages of their own, which costs far more in TLB and prefetch misses
 * than it saves (measured: 2x slower at 1024 columns). */
static void walk_cols(mq_state *S, const walk_ctx *W, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  for (int64_t t = c0; t < c1; t += TILE) walk_rows(S, W, r0, r1, t, c1 - t > TILE ? t + TILE : c1, 0);
}
static void range_cols(void *ctx, int64_t lo, int64_t hi, int t) {
  const walk_ctx *W = ctx;
  int64_t c1 = hi * W->cgroup < W->s ? hi * W->cgroup : W->s;
  walk_cols(NULL, W, 0, W->rows, lo * W->cgroup, c1);
}
static void range_groups(void *ctx, int64_t lo, int64_t hi, int t) {
  const walk_ctx *W = ctx;
  for (int64_t g = lo; g < hi; g++) {
    walk_ctx G = *W;
    if (g > 0) { /* its own slots, from the identity */
      size_t ab = (size_t)W->slots * W->k->acc_size;
      G.acc = W->gacc + (size_t)(g - 1) * ab;
      memcpy(G.acc, W->ident, ab);
      G.cnt = W->gcnt ? W->gcnt + (g - 1) * W->slots : NULL;
      if (G.cnt) memset(G.cnt, 0, (size_t)W->slots * sizeof *G.cnt);
    }
    int64_t r0 = g * W->rb, r1 = W->rows - r0 < W->rb ? W->rows : r0 + W->rb;
    walk_cols(NULL, &G, r0, r1, 0, W->s);
  }
}
/* Slots [lo, hi): the groups' slots and counts folded in group order. */
static void range_combine(void *ctx, int64_t lo, int64_t hi, int t) {
  const walk_ctx *W = ctx;
  size_t as = W->k->acc_size;
  for (int64_t g = 1; g < W->ngroups; g++) {
    W->k->combine((char *)W->acc + (size_t)lo * as, W->gacc + (size_t)((g - 1) * W->slots + lo) * as,
                  hi - lo);
    if (W->cnt)
      for (int64_t i = lo; i < hi; i++) W->cnt[i] += W->gcnt[(g - 1) * W->slots + i];
  }
}
static void range_pieces(void *ctx, int64_t lo, int64_t hi, int t) {
  const walk_ctx *W = ctx;
  const mq_red_kernel *k = W->k;
  for (int64_t p = lo; p < hi; p++) {
    W->pcnt[p] = 0;
    piece_at(W, W->parts + (size_t)p * k->acc_size, &W->pcnt[p], W->row_i + (W->pa + p) * MQ_RED_PIECE,
             mq_red_piece_len(W->s, W->pa + p));
  }
}

/* Pieces [a, b) of the long row at W->row_i on the threads
 * (mq_red_pieces_fn; ctx: a pieces_job). */
typedef struct pieces_job {
  mq_state *S;
  walk_ctx *W;
} pieces_job;

static void pieces_batch(void *ctx, int64_t a, int64_t b, char *parts, int64_t *pcnt) {
  pieces_job *J = ctx;
  walk_ctx *W = J->W;
  W->pa = a;
  W->parts = parts;
  W->pcnt = pcnt;
  mq_parallel_for(J->S, mq_parallel_threads_for(J->S, (b - a) * MQ_RED_PIECE), b - a,
                  MQ_PAR_GRAIN / MQ_RED_PIECE, range_pieces, W);
}

/* Rows of slots, large enough to split, fold in groups of whole rows:
 * every thread then reads long contiguous runs, as the other reductions
 * do, and keeps its own slots (in cache, for a few thousand). The groups
 * are fixed by the sizes alone (at most ROW_GROUPS of at least
 * MIN_GROUP_ROWS rows), each starts from the identity and they combine
 * in order afterwards, so one thread gives the same result as eight.
 * Only for up to GROUP_SLOTS slots: each group has its own. */
#define ROW_GROUPS 8
#define MIN_GROUP_ROWS 16
#define GROUP_SLOTS ((int64_t)1 << 16)
static void fold_groups(mq_state *S, walk_ctx *W, int nt) {
  const mq_red_kernel *k = W->k;
  int64_t ng = W->rows / MIN_GROUP_ROWS < ROW_GROUPS ? W->rows / MIN_GROUP_ROWS : ROW_GROUPS;
  W->rb = (W->rows + ng - 1) / ng;
  ng = (W->rows + W->rb - 1) / W->rb;
  W->ngroups = ng;
  W->slots = W->P->on;
  size_t ab = (size_t)W->slots * k->acc_size;
  /* group 0 folds into W->acc itself; the others copy the identity first
   * (each on its own thread), and all are combined slot range by slot
   * range, in group order */
  W->ident = mq_scratch(S, ab);
  memcpy(W->ident, W->acc, ab);
  W->gacc = mq_scratch(S, (size_t)(ng - 1) * ab);
  W->gcnt = W->cnt ? mq_scratch(S, (size_t)((ng - 1) * W->slots) * sizeof *W->cnt) : NULL;
  mq_parallel_for(S, nt, ng, 1, range_groups, W);
  mq_parallel_for(S, nt, W->slots, MQ_PAR_GRAIN / ng, range_combine, W);
}

/* Folds contiguous [x] (elements of es bytes, mask m or NULL) into acc,
 * counting valid entries into [cnt] if it is not NULL (then the kernel
 * must have row_cnt and acc_row_cnt). Large inputs run on threads; the
 * result is the same either way. */
static void walk(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc,
                 int64_t *cnt, const char *x, size_t es, const uint8_t *m) {
  if (P->t->numel == 0) return;
  k = mq_red_kernel_on(k, S->cpu); /* the state's CPU path: the same bits on each */
  bool expanded = m && m == P->m && P->m_rows && !k->piece;
  if (expanded) m = full_mask(S, P);
  walk_ctx W = {.P = P, .k = k, .acc = acc, .cnt = cnt, .x = x, .es = es, .m = m, .nb = P->nb};
  W.mv = m && m == P->m ? P->mv : (mq_mask_view){m, NULL, 0};
  W.uniform = m && (m == P->m || expanded) && P->mrow_uniform;
  W.m_rows = m && m == P->m && P->m_rows;
  int nb = P->nb;
  W.s = P->bsize[nb - 1];
  W.last_red = P->bred[nb - 1];
  W.rows = 1;
  int64_t os = W.last_red ? 1 : W.s;
  for (int b = nb - 2; b >= 0; b--) {
    W.ostr[b] = P->bred[b] ? 0 : os;
    if (!P->bred[b]) os *= P->bsize[b];
    W.rows *= P->bsize[b];
  }
  if (W.m && W.m == P->m && !W.mv.ms && P->ms_pending) {
    /* the mask's summary is not built yet: rows read piece by piece from
     * block boundaries read every block once, so they count its blocks on
     * the way (no pass of its own); other walks build it first */
    const mq_tensor *mk = P->t->mask;
    if (mk->storage->msum) W.mv.ms = mk->storage->msum;
    else if (W.last_red && k->piece && (W.rows == 1 || W.s % MQ_MS_BLOCK == 0))
      W.bcnt = mq_scratch(S, (size_t)((mk->numel + MQ_MS_BLOCK - 1) / MQ_MS_BLOCK) * sizeof *W.bcnt);
    else W.mv.ms = mq_masksum_get(S, mk);
  }
  /* the spans of padded rows, unless this walk reads the mask anyway to
   * count its blocks (a fresh mask's first reduction) */
  if ((k->runs || k->row_span) && m && m == P->m && !W.uniform && !W.m_rows && !W.bcnt &&
      P->t->mask->ndim == P->t->ndim)
    W.rs = mq_mask_rows_of(S, P->t->mask);
  int nt = mq_parallel_threads_for(S, W.rows * W.s);
  bool few_long = nt > 1 ? W.rows < 2 * nt : W.s >= 4 * MQ_POLL_ELEMS;
  if (few_long && W.last_red && k->piece && W.s >= 2 * MQ_RED_PIECE) {
    /* a few long rows: each split into pieces, computed in parallel and
     * merged in order, exactly as row_cnt would; on one thread too when
     * the rows are long, so that the pieces poll in between (a kernel
     * polls between rows only) */
    int64_t np = mq_red_piece_count(W.s), batch = np < MQ_RED_BATCH ? np : MQ_RED_BATCH;
    char *parts = mq_scratch(S, (size_t)batch * k->acc_size);
    int64_t *pcnt = mq_scratch(S, (size_t)batch * sizeof *pcnt);
    pieces_job J = {S, &W};
    for (int64_t r = 0; r < W.rows; r++) {
      int64_t rest = r, o = 0;
      for (int b = nb - 2; b >= 0; b--) {
        o += (rest % P->bsize[b]) * W.ostr[b];
        rest /= P->bsize[b];
      }
      W.row_i = r * W.s;
      if ((W.mv.ms || W.uniform || W.rs) && run_state(&W, W.row_i, W.s) == MQ_MS_MASKED) continue;
      int64_t c = mq_red_fold_pieces(k, acc, o, np, parts, pcnt, pieces_batch, &J);
      if (cnt && m) cnt[o] += c;
    }
    goto done;
  }
  if (W.last_red && (W.mv.ms || W.uniform || W.bcnt || W.rs) && k->piece) { /* rows piece by piece, skipping what the mask allows */
    int64_t np = mq_red_piece_count(W.s);
    W.batch = np < MQ_RED_BATCH ? np : MQ_RED_BATCH;
    W.tparts = mq_scratch(S, (size_t)nt * (size_t)W.batch * k->acc_size);
    W.tpcnt = mq_scratch(S, (size_t)nt * (size_t)W.batch * sizeof *W.tpcnt);
  }
  if (nt > 1 && W.last_red && nb <= 2 && W.rows >= nt) { /* row r folds into slot r */
    mq_parallel_for(S, nt, W.rows, W.s >= MQ_PAR_GRAIN ? 1 : MQ_PAR_GRAIN / W.s, range_rows, &W);
    goto done;
  }
  if (!W.last_red && k->combine && W.rows * W.s >= MQ_PAR_MIN_ELEMS && W.rows >= 2 * MIN_GROUP_ROWS &&
      (int64_t)P->on <= GROUP_SLOTS) {
    fold_groups(S, &W, nt);
    goto done;
  }
  if (nt > 1 && !W.last_red && W.s >= 64 * nt) { /* disjoint slots per column group */
    /* two groups a thread, so one held up by another process can be
     * made up for; not more: a thread then reads shorter runs of each row,
     * which the prefetchers follow badly (measured on 1000x10000: groups
     * of 640 columns made two threads no faster than one) */
    int64_t g = (W.s + 2 * nt - 1) / (2 * nt);
    W.cgroup = (g + 63) / 64 * 64;
    mq_parallel_for(S, nt, (W.s + W.cgroup - 1) / W.cgroup, 1, range_cols, &W);
    goto done;
  }
  if (W.last_red) walk_rows(S, &W, 0, W.rows, 0, W.s, 0);
  else walk_cols(S, &W, 0, W.rows, 0, W.s);
done:
  if (W.bcnt) mq_masksum_install(S, P->t->mask, W.bcnt);
}

void mq_red_fold(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc) {
  walk(S, P, k, acc, NULL, P->x, P->es, P->m);
}

int64_t *mq_red_fold_count(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc) {
  if (!P->m) {
    walk(S, P, k, acc, NULL, P->x, P->es, NULL);
    return NULL;
  }
  if (!k->row_cnt || !k->acc_row_cnt) {
    walk(S, P, k, acc, NULL, P->x, P->es, P->m);
    return mq_red_counts(S, P);
  }
  int64_t *count = mq_red_acc(S, P, sizeof *count);
  memset(count, 0, (size_t)(P->on ? P->on : 1) * sizeof *count);
  walk(S, P, k, acc, count, P->x, P->es, P->m);
  return count;
}

void *mq_red_acc(mq_state *S, const mq_red_plan *P, size_t size) {
  return mq_scratch(S, (size_t)(P->on ? P->on : 1) * size);
}

int64_t *mq_red_counts(mq_state *S, const mq_red_plan *P) {
  if (!P->m) return NULL;
  int64_t *count = mq_red_acc(S, P, sizeof *count);
  memset(count, 0, (size_t)P->on * sizeof *count);
  int nb = P->nb;
  if (!P->mrow_uniform && P->t->numel > 0 && nb == 2 && P->bred[1] &&
      P->t->mask->ndim == P->t->ndim) {
    /* padded rows: slot r counts the span of row r when every row's is
     * all valid (maskspan.h) */
    const mq_mask_rows *R = mq_mask_rows_of(S, P->t->mask);
    bool ok = R && R->rlen == P->bsize[nb - 1];
    for (int64_t r = 0; ok && r < R->rows; r++) ok = R->full[r] || R->lo[r] == R->hi[r];
    if (ok) {
      for (int64_t r = 0; r < R->rows; r++) count[r] = R->hi[r] - R->lo[r];
      return count;
    }
  }
  if ((P->mv.ms || P->mrow_uniform) && P->t->numel > 0 && P->bred[nb - 1] &&
      (nb == 1 || (nb == 2 && !P->bred[0]))) {
    /* row r of the last block is slot r's (kept, reduced: not when more
     * blocks alternate, whose rows share slots): counted from the summary,
     * or from its first entry when the mask is broadcast along the rows */
    int64_t s = P->bsize[nb - 1], rows = P->t->numel / s;
    for (int64_t r = 0; r < rows; r++) {
      count[r] = P->mrow_uniform ? (P->m[P->m_rows ? r : r * s] ? s : 0) : mq_mask_view_count(&P->mv, r * s, s);
      if ((r & 1023) == 1023) mq_check_interrupt(S);
    }
    return count;
  }
  walk(S, P, mq_red_kernels[MQ_RED_SUM][MQ_DT_BOOL], count, NULL, (const char *)full_mask(S, P), 1, NULL);
  return count;
}

void mq_red_set_mask(mq_state *S, const mq_red_plan *P, mq_tensor *out, const int64_t *count) {
  if (!count) return;
  mq_tensor *mask = mq_tensor_new(S, MQ_DT_BOOL, P->ond, P->oshape);
  uint8_t *mv = mq_tensor_data(mask);
  for (int64_t i = 0; i < P->on; i++) mv[i] = count[i] > 0;
  mq_tensor_set_mask(S, out, mask);
}
