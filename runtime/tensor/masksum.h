/* masksum.h - validity summaries: what a mask's storage holds, per block of
 * MQ_MS_BLOCK bytes, so that kernels can skip work the mask makes useless.
 *
 * A summary belongs to a bool storage (a mask's memory) and says, for each
 * aligned block of MQ_MS_BLOCK entries of that storage, how many entries are
 * valid (non-zero), hence whether the block is all valid, all masked or
 * mixed, and how many entries the whole storage has valid. It is built
 * lazily, in one pass over the bytes, the first time a kernel asks for it,
 * and cached on the storage (freed with it).
 *
 * Staleness: masq's tensors are values (tensor.h): a storage is written only
 * by the operation that makes it, before any kernel can read it, so a
 * summary never goes stale. The one exception is memory a host wrapped
 * (masq.h: the host may change it between two calls), which is never
 * summarized (mq_masksum_get answers NULL). Code that ever writes a storage
 * after making it must call mq_masksum_drop() first.
 *
 * Views: a summary is of the storage, so any view of a mask whose entries
 * lie contiguously in it (mq_tensor_is_contiguous) maps logical element i to
 * storage entry offset + i, and a run of entries to the blocks it overlaps
 * (mq_mask_run). Broadcast, transposed or strided masks get no summary
 * (mq_mask_view answers .ms == NULL): kernels then read the mask as before. */
#ifndef MQ_MASKSUM_H
#define MQ_MASKSUM_H

#include "tensor.h"

/* Entries per block: the reductions' pieces (reduce.h: MQ_RED_PIECE) are
 * this long, so a row starting on a block boundary maps piece to block. */
#define MQ_MS_BLOCK 4096

typedef struct mq_masksum {
  int64_t n;       /* entries (bytes) summarized: the whole storage */
  int64_t nvalid;  /* of them non-zero */
  int64_t nblocks; /* ceil(n / MQ_MS_BLOCK) */
  uint16_t cnt[];  /* valid entries of each block (<= MQ_MS_BLOCK) */
} mq_masksum;

/* What a run of mask entries holds. */
typedef enum mq_ms_state {
  MQ_MS_MIXED = 0,  /* some valid, some masked, or not known */
  MQ_MS_VALID = 1,  /* every entry valid (or the run is empty) */
  MQ_MS_MASKED = 2  /* every entry masked out */
} mq_ms_state;

/* The summary of bool tensor [mask]'s storage, built on first use; NULL
 * when there is none (host memory, not bool). Call on the main thread. */
MQ_INTERNAL const mq_masksum *mq_masksum_get(mq_state *S, const mq_tensor *mask);

/* Whether every entry of [mask] is valid, when its summary says so at no
 * cost beyond building it (a mask that covers its own storage); false when
 * not known. */
MQ_INTERNAL bool mq_mask_known_all_valid(mq_state *S, const mq_tensor *mask);
/* True when [mask] is a bool tensor that covers the whole of its storage,
 * contiguously from entry 0, which masq owns, and whose summary is not
 * built yet: a kernel that reads every block of it anyway may count them
 * on the way and hand the counts to mq_masksum_install (reduce_walk.c
 * does, so a first reduction costs no extra pass). */
MQ_INTERNAL bool mq_masksum_pending(const mq_tensor *mask);
/* Installs the summary of such a mask from the valid count of each of its
 * blocks ([cnt], ceil(numel / MQ_MS_BLOCK) of them). */
MQ_INTERNAL void mq_masksum_install(mq_state *S, const mq_tensor *mask, const uint16_t *cnt);
/* Forgets a storage's summary (before writing it in place). */
MQ_INTERNAL void mq_masksum_drop(mq_state *S, mq_storage *st);
/* Frees a storage's summary (tensor.c, with the storage). */
MQ_INTERNAL void mq_masksum_free(mq_state *S, mq_storage *st);

/* A mask as kernels see it: its entries, contiguous from [m], and, when
 * known, the summary of the storage they lie in with the storage index of
 * entry 0 ([ms] NULL: no summary, every run is MQ_MS_MIXED). */
typedef struct mq_mask_view {
  const uint8_t *m;
  const mq_masksum *ms;
  int64_t base;
} mq_mask_view;

/* The view of [mask] (NULL: a plain tensor, .m NULL) if its entries are
 * contiguous; else .m NULL too, and the caller copies as before. With
 * [build] false a summary not built yet stays unbuilt (.ms NULL). */
MQ_INTERNAL mq_mask_view mq_mask_view_of(mq_state *S, const mq_tensor *mask);
MQ_INTERNAL mq_mask_view mq_mask_view_get(mq_state *S, const mq_tensor *mask, bool build);

/* What entries [i, i + len) of a summarized view hold: VALID or MASKED
 * when every block they overlap says so, else MIXED (a run that only
 * partly covers a mixed block is MIXED even if its own part is uniform). */
static inline mq_ms_state mq_mask_run(const mq_mask_view *v, int64_t i, int64_t len) {
  if (!v->ms) return MQ_MS_MIXED;
  if (len <= 0) return MQ_MS_VALID;
  /* a storage all of one kind answers at once, however long the run */
  if (v->ms->nvalid == 0) return MQ_MS_MASKED;
  if (v->ms->nvalid == v->ms->n) return MQ_MS_VALID;
  int64_t a = v->base + i, b = a + len - 1;
  int64_t ba = a / MQ_MS_BLOCK, bb = b / MQ_MS_BLOCK;
  bool valid = true, masked = true;
  for (int64_t k = ba; k <= bb && (valid || masked); k++) {
    int64_t bl = v->ms->n - k * MQ_MS_BLOCK < MQ_MS_BLOCK ? v->ms->n - k * MQ_MS_BLOCK : MQ_MS_BLOCK;
    valid &= v->ms->cnt[k] == bl;
    masked &= v->ms->cnt[k] == 0;
  }
  return valid ? MQ_MS_VALID : masked ? MQ_MS_MASKED : MQ_MS_MIXED;
}

/* The number of valid entries of [mask] (a bool tensor of any layout):
 * from the summary when the mask is contiguous, else counted. */
MQ_INTERNAL int64_t mq_mask_count(mq_state *S, const mq_tensor *mask);
/* Valid entries [i, i + len) of a view (the summary for whole blocks, the
 * bytes at the edges and in every block when there is none). */
MQ_INTERNAL int64_t mq_mask_view_count(const mq_mask_view *v, int64_t i, int64_t len);

#endif
