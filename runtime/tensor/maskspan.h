/* maskspan.h - validity that follows real padding: for each row of a
 * mask's last dim, the span [lo, hi) from its first valid entry to its
 * last, and whether every entry inside is valid (a row padded to a length:
 * [0, len) all valid).
 *
 * masksum.h counts blocks of 4096 entries, which padding of random lengths
 * never lines up with; a row's span does, whatever the lengths. Kernels
 * that fold a row (reductions, softmax) read only its span, and read it
 * as plain data when the span is all valid.
 *
 * The summary of a storage is built in one pass over its bytes the first
 * time a kernel asks, for one row length, and cached on the storage
 * (freed with it, rebuilt if another row length is asked): masks are
 * values (masksum.h), so it never goes stale. It is computed from the
 * bytes, so a mask made by a comparison, by length_mask or read from a
 * file gets the same one. Memory masq does not own (a host's wrapped
 * buffer, a mapped file: mq_storage_foreign) is never summarized. */
#ifndef MQ_MASKSPAN_H
#define MQ_MASKSPAN_H

#include "tensor.h"

/* The spans of the rows of a mask (mq_mask_rows), one per row of its last
 * dim in row-major order of the other dims: row r's valid entries lie in
 * [lo[r], hi[r]) (lo == hi: none), and are all of it when full[r]. */
typedef struct mq_mask_rows {
  int64_t rows, rlen;
  const int64_t *lo, *hi;
  const uint8_t *full;
} mq_mask_rows;

/* The spans of bool tensor [mask]'s rows, or NULL when not known cheaply:
 * its last dim must have stride 1 and its rows lie on whole rows of its
 * storage (a contiguous mask, or one broadcast along other dims: [B, 1, L]
 * expanded to [B, H, L]), or stride 0 (a [B, L, 1] mask expanded over D:
 * each row all valid or all masked, one byte read a row). Scratch, built
 * from the storage's cached summary. Call on the main thread. */
MQ_INTERNAL const mq_mask_rows *mq_mask_rows_of(mq_state *S, const mq_tensor *mask);

/* The valid runs of entries [i, i + n) of a mask whose rows are [R],
 * counting entries row-major across rows: into runs[0 .. 2k) as (start,
 * end) pairs relative to i, sorted, adjacent ones merged; returns k, or -1
 * when a row it meets has a masked entry inside its span (read the mask
 * then) or more than [max] runs would be needed. */
MQ_INTERNAL int mq_mask_rows_runs(const mq_mask_rows *R, int64_t i, int64_t n, int64_t *runs, int max);

/* What each row of [mask] of [rlen] entries holds, as mq_ms_state bytes
 * (masksum.h: MQ_MS_VALID all valid, MQ_MS_MASKED all masked out,
 * MQ_MS_MIXED else), from mq_mask_rows_of; NULL when that answers NULL or
 * its rows are not [rlen] long. Scratch. */
MQ_INTERNAL const uint8_t *mq_mask_row_states(mq_state *S, const mq_tensor *mask, int64_t rlen);

/* What a summary's rows hold in all: valid entries, valid runs (a row's
 * span joined to the previous row's when they touch, as across rows of a
 * [B, L, 1] mask broadcast over D), and whether a row has a masked entry
 * inside its span (not padding). */
typedef struct mq_mask_totals {
  int64_t valid, runs;
  bool holes;
} mq_mask_totals;

/* The totals of rows [R] (valid and runs 0 when it has holes). */
MQ_INTERNAL mq_mask_totals mq_mask_rows_totals(const mq_mask_rows *R);

/* The spans of [mask]'s rows and their totals, read from its storage's
 * cached summary with no copy, when [mask] is contiguous and covers the
 * whole of its storage from entry 0 (a mask made by an op); NULL else
 * (then mq_mask_rows_of). Call on the main thread. */
MQ_INTERNAL const mq_mask_rows *mq_mask_rows_whole(mq_state *S, const mq_tensor *mask,
                                                   mq_mask_totals *tot);

/* Frees a storage's span summary (tensor.c, with the storage; masksum.c,
 * before a storage is written in place). */
MQ_INTERNAL void mq_maskspan_free(mq_state *S, mq_storage *st);

#endif
