/* maskspan.c - the row spans of a mask (maskspan.h): built from its
 * storage's bytes, cached on the storage, read as views ask. */
#include "../../core/checked.h"
#include "internal.h"
#include "maskspan.h"
#include "masksum.h"

/* Rows shorter than this get no summary: it would cost more memory (17
 * bytes a row) than the rows save, and short rows are read whole anyway. */
#define MIN_RLEN 32

typedef struct mq_maskspan {
  int64_t rlen, nrows; /* whole rows of the storage, rlen entries each */
  size_t size;         /* bytes allocated for this struct */
  mq_mask_rows rows;   /* the rows as mq_mask_rows_whole gives them */
  mq_mask_totals tot;
  int64_t *lo, *hi;    /* into data below */
  uint8_t *full;
  int64_t data[];
} mq_maskspan;

static int64_t first_nonzero(const uint8_t *p, int64_t n) {
  int64_t i = 0;
  for (uint64_t w; i + 8 <= n; i += 8) {
    memcpy(&w, p + i, 8);
    if (w) break;
  }
  while (i < n && !p[i]) i++;
  return i;
}

/* One past the last nonzero byte of p[lo, n) (lo: p[lo] is nonzero). */
static int64_t end_nonzero(const uint8_t *p, int64_t lo, int64_t n) {
  int64_t e = n;
  for (uint64_t w; e - 8 >= lo; e -= 8) {
    memcpy(&w, p + e - 8, 8);
    if (w) break;
  }
  while (e > lo && !p[e - 1]) e--;
  return e;
}

/* Whether every byte of p[0, n) is nonzero: an OR of compares that
 * vectorizes, stopping at the first block of 256 with a zero. */
static bool all_nonzero(const uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i += 256) {
    int64_t e = n - i < 256 ? n : i + 256;
    uint8_t z = 0;
    for (int64_t j = i; j < e; j++) z |= p[j] == 0;
    if (z) return false;
  }
  return true;
}

void mq_maskspan_free(mq_state *S, mq_storage *st) {
  if (!st->mspan) return;
  mq_free(S, st->mspan, st->mspan->size);
  st->mspan = NULL;
}

/* The summary of [st] in rows of [rlen] entries, built if needed. */
static const mq_maskspan *storage_spans(mq_state *S, mq_storage *st, int64_t rlen) {
  if (st->mspan && st->mspan->rlen == rlen) return st->mspan;
  int64_t nrows = (int64_t)st->nbytes / rlen;
  size_t size = sizeof(mq_maskspan) + mq_ck_zmul(S, (size_t)nrows, 2 * sizeof(int64_t) + 1, "mask spans");
  /* built in the pool's scratch first: an interrupt leaves nothing */
  int64_t *tmp = mq_scratch(S, size - sizeof(mq_maskspan));
  int64_t *lo = tmp, *hi = tmp + nrows;
  uint8_t *full = (uint8_t *)(tmp + 2 * nrows);
  const uint8_t *p = st->data;
  int64_t done = 0;
  for (int64_t r = 0; r < nrows; r++) {
    const uint8_t *row = p + r * rlen;
    lo[r] = first_nonzero(row, rlen);
    hi[r] = lo[r] < rlen ? end_nonzero(row, lo[r], rlen) : lo[r];
    full[r] = all_nonzero(row + lo[r], hi[r] - lo[r]);
    if ((done += rlen) >= MQ_POLL_ELEMS) {
      done = 0;
      mq_check_interrupt(S);
    }
  }
  mq_maskspan_free(S, st);
  mq_maskspan *ms = mq_alloc(S, size);
  ms->rlen = rlen;
  ms->nrows = nrows;
  ms->size = size;
  memcpy(ms->data, tmp, size - sizeof(mq_maskspan));
  ms->lo = ms->data;
  ms->hi = ms->data + nrows;
  ms->full = (uint8_t *)(ms->data + 2 * nrows);
  ms->rows = (mq_mask_rows){nrows, rlen, ms->lo, ms->hi, ms->full};
  ms->tot = mq_mask_rows_totals(&ms->rows); /* a decision at no cost per use (spanrun.c) */
  st->mspan = ms;
  return ms;
}

const mq_mask_rows *mq_mask_rows_of(mq_state *S, const mq_tensor *mask) {
  if (!mask || mask->dtype != MQ_DT_BOOL || mask->ndim == 0 || mask->numel == 0 || mask->layout ||
      !mask->storage)
    return NULL;
  int nd = mask->ndim;
  int64_t rlen = mask->shape[nd - 1], stride = mask->strides[nd - 1];
  if (rlen < MIN_RLEN || (stride != 0 && stride != 1)) return NULL;
  mq_mask_rows *R = mq_scratch(S, sizeof *R);
  R->rlen = rlen;
  R->rows = mask->numel / rlen;
  int64_t *lo = mq_scratch(S, (size_t)R->rows * 2 * sizeof(int64_t));
  int64_t *hi = lo + R->rows;
  uint8_t *full = mq_scratch(S, (size_t)R->rows);
  R->lo = lo, R->hi = hi, R->full = full;
  const uint8_t *base = (const uint8_t *)mask->storage->data;
  const mq_maskspan *ms = NULL;
  if (stride == 1) { /* rows must start on whole rows of the storage */
    if (mq_storage_foreign(mask->storage) || mask->offset % rlen) return NULL;
    for (int d = 0; d < nd - 1; d++)
      if (mask->shape[d] > 1 && mask->strides[d] % rlen) return NULL;
    ms = storage_spans(S, mask->storage, rlen);
  }
  /* the storage entry of each row's first entry, walking the other dims */
  int64_t idx[MQ_MAX_DIMS] = {0}, off = mask->offset;
  for (int64_t r = 0; r < R->rows; r++) {
    if (ms) {
      int64_t sr = off / rlen;
      if (sr >= ms->nrows) return NULL; /* cannot happen for a valid view */
      lo[r] = ms->lo[sr], hi[r] = ms->hi[sr], full[r] = ms->full[sr];
    } else { /* broadcast along the row: its first entry says it all */
      bool v = base[off] != 0;
      lo[r] = 0, hi[r] = v ? rlen : 0, full[r] = 1;
    }
    for (int d = nd - 2; d >= 0; d--) {
      off += mask->strides[d];
      if (++idx[d] < mask->shape[d]) break;
      off -= mask->strides[d] * mask->shape[d];
      idx[d] = 0;
    }
  }
  return R;
}

int mq_mask_rows_runs(const mq_mask_rows *R, int64_t i, int64_t n, int64_t *runs, int max) {
  int k = 0;
  int64_t e = i + n, rlen = R->rlen;
  for (int64_t r = i / rlen; r * rlen < e; r++) {
    int64_t a = r * rlen + R->lo[r], b = r * rlen + R->hi[r];
    if (a < i) a = i;
    if (b > e) b = e;
    if (a >= b) continue;
    if (!R->full[r]) return -1;
    if (k && runs[2 * k - 1] == a - i) {
      runs[2 * k - 1] = b - i; /* continues the previous run */
      continue;
    }
    if (k == max) return -1;
    runs[2 * k] = a - i, runs[2 * k + 1] = b - i;
    k++;
  }
  return k;
}

const uint8_t *mq_mask_row_states(mq_state *S, const mq_tensor *mask, int64_t rlen) {
  const mq_mask_rows *R = mq_mask_rows_of(S, mask);
  if (!R || R->rlen != rlen) return NULL;
  uint8_t *st = mq_scratch(S, (size_t)R->rows);
  for (int64_t r = 0; r < R->rows; r++)
    st[r] = R->lo[r] == R->hi[r]                              ? MQ_MS_MASKED
            : R->full[r] && R->lo[r] == 0 && R->hi[r] == rlen ? MQ_MS_VALID
                                                              : MQ_MS_MIXED;
  return st;
}

mq_mask_totals mq_mask_rows_totals(const mq_mask_rows *R) {
  mq_mask_totals tot = {0, 0, false};
  for (int64_t r = 0, last = -1; r < R->rows; r++) {
    if (R->lo[r] == R->hi[r]) continue;
    if (!R->full[r]) return (mq_mask_totals){0, 0, true}; /* not padding: no need to go on */
    tot.valid += R->hi[r] - R->lo[r];
    tot.runs += r * R->rlen + R->lo[r] != last; /* not joined to the previous row's */
    last = r * R->rlen + R->hi[r];
  }
  return tot;
}

const mq_mask_rows *mq_mask_rows_whole(mq_state *S, const mq_tensor *mask, mq_mask_totals *tot) {
  if (!mask || mask->dtype != MQ_DT_BOOL || mask->ndim == 0 || mask->numel == 0 || mask->layout ||
      !mask->storage || mask->offset != 0 || (size_t)mask->numel != mask->storage->nbytes ||
      mq_storage_foreign(mask->storage) || !mq_tensor_is_contiguous(mask))
    return NULL;
  int64_t rlen = mask->shape[mask->ndim - 1];
  if (rlen < MIN_RLEN) return NULL;
  const mq_maskspan *ms = storage_spans(S, mask->storage, rlen);
  *tot = ms->tot;
  return &ms->rows;
}
