/* reduce.h - the machinery reductions share, in three files:
 * reduce_kernels.c, the typed kernels (mq_red_kernel) that fold contiguous
 * runs into accumulator slots; reduce_walk.c, the block walk (mq_red_plan,
 * mq_red_fold...) that feeds them, on threads, for reduce.c, stats.c and
 * fuse.c; reduce.c, the ops themselves (mq_reduce).
 *
 * A reduction folds the contiguous data of its input into one accumulator
 * slot per output element. The dims are merged into alternating blocks of
 * kept (K) and reduced (R) dims; if the last block is R, each contiguous row
 * folds into one slot (row); if it is K, each row folds elementwise into a
 * row of slots (acc_row), so outer-dim reductions never gather. */
#ifndef MQ_REDUCE_H
#define MQ_REDUCE_H

#include "../tensor/internal.h"
#include "../tensor/masksum.h"
#include "ops.h"

/* Long rows of the fast kernels are cut into pieces of this many entries
 * (the last one shorter), whose partial results combine in a fixed order:
 * the result depends on the sizes only, never on how many threads ran. */
#define MQ_RED_PIECE 4096

/* The number of pieces of a row of [n] entries (one for an empty row) and
 * the length of piece [p]. */
static inline int64_t mq_red_piece_count(int64_t n) {
  return n > 0 ? (n + MQ_RED_PIECE - 1) / MQ_RED_PIECE : 1;
}
static inline int64_t mq_red_piece_len(int64_t n, int64_t p) {
  int64_t off = p * MQ_RED_PIECE;
  return n - off < MQ_RED_PIECE ? n - off : MQ_RED_PIECE;
}

/* A long row's pieces are folded holding at most this many partials at a
 * time (mq_red_fold_pieces): the scratch of a reduction is bounded
 * whatever the length of its rows. */
#define MQ_RED_BATCH 1024

/* One (op, input dtype) pair. acc points at the slots (acc_size bytes
 * each); [m] is the row's mask, NULL for plain input (tested once per
 * row, not per element). Kernels run on several threads for large inputs
 * (runtime/tensor/parallel.h): they only write the slots they are given.
 *
 * The fast kernels (float sums and extrema) also fill the optional fields:
 * row_cnt and acc_row_cnt do what row and acc_row do and, when [cnt] is
 * not NULL and the row is masked, add its valid entries to cnt[o] (row)
 * or cnt[i] (acc_row, a tile's 32-bit counters) in the same pass; piece() writes into [part] (one
 * slot, from the identity) the partial result of one piece of a row and
 * adds its valid entries to *cnt, and merge() folds [np] partials into
 * acc[o]. row_cnt gives exactly what piece + merge give. */
typedef struct mq_red_kernel {
  size_t acc_size;
  void (*row)(void *acc, int64_t o, const void *x, const uint8_t *m, int64_t n);
  void (*acc_row)(void *acc, const void *x, const uint8_t *m, int64_t n);
  void (*row_cnt)(void *acc, int64_t *cnt, int64_t o, const void *x, const uint8_t *m, int64_t n);
  void (*acc_row_cnt)(void *acc, uint32_t *cnt, const void *x, const uint8_t *m, int64_t n);
  void (*piece)(void *part, int64_t *cnt, const void *x, const uint8_t *m, int64_t n);
  void (*merge)(void *acc, int64_t o, const void *parts, int64_t np);
  /* acc[i] = acc[i] (+) part[i] for n slots (optional): folds one group of
   * rows' slots into another's (reduce_walk.c, fold_groups). */
  void (*combine)(void *acc, const void *part, int64_t n);
  /* The partial of one piece of [n] entries (n <= MQ_RED_PIECE) whose
   * valid entries are exactly [nr] runs [r[2k], r[2k + 1]) (sorted,
   * disjoint), read without a mask and only there: bitwise what piece()
   * gives with that mask, since a masked-out entry folds the identity
   * into its lane and leaves it as it was (the fast kernels;
   * runtime/tensor/maskspan.h gives the runs of padded rows). */
  void (*runs)(void *part, const void *x, int64_t n, const int64_t *r, int nr);
  /* row() of a row of [n] entries whose valid entries are exactly [lo,
   * hi), read only there and without a mask, bitwise the same (the
   * pairwise sums: a subtree outside the span sums to +0.0, which adds
   * nothing) */
  void (*row_span)(void *acc, int64_t o, const void *x, int64_t n, int64_t lo, int64_t hi);
} mq_red_kernel;

/* --- reduce_walk.c: the plan and the walk --------------------------------- */

typedef struct mq_red_plan {
  mq_tensor *t;          /* the input */
  const char *x;         /* its data, contiguous, in the dtype read */
  size_t es;             /* the size of one element of x */
  const uint8_t *m;      /* its mask, contiguous, or NULL (see m_rows) */
  mq_mask_view mv;       /* the same with its summary, if it has one: the
                            fast kernels skip the pieces it shows masked
                            out, and read the all-valid ones as plain */
  bool ms_pending;       /* the mask's summary is not built yet: the walk
                            counts its blocks on the way when it can */
  bool mrow_uniform;     /* the mask is broadcast along every dim of the
                            last block (a padding mask of shape (B, L, 1)
                            over (B, L, D)): each row is all valid or all
                            masked out, as its first entry says */
  bool m_rows;           /* ... and m holds one byte a row (the first entry
                            of each), not the mask expanded: it was not
                            contiguous */
  int ond;               /* the output's shape */
  int64_t oshape[MQ_MAX_DIMS];
  int64_t on, R;         /* output elements; input elements per output */
  int nb;                /* merged blocks, size-1 dims dropped */
  int64_t bsize[MQ_MAX_DIMS];
  bool bred[MQ_MAX_DIMS];
} mq_red_plan;

/* Plans reducing [t] (read as dtype [dt]) over [dims] ([ndims] of them,
 * normalized; 0 = all). [name] is for messages. */
MQ_INTERNAL void mq_red_plan_init(mq_state *S, mq_red_plan *P, const char *name, mq_tensor *t,
                                  mq_dtype dt, int ndims, const int *dims, bool keepdim);
/* Folds the input into [acc] (already holding the identity). */
MQ_INTERNAL void mq_red_fold(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k, void *acc);
/* The same, and returns the valid entries per output slot (scratch), or
 * NULL for a plain input: counted in the same pass when the kernel can. */
MQ_INTERNAL int64_t *mq_red_fold_count(mq_state *S, const mq_red_plan *P, const mq_red_kernel *k,
                                       void *acc);
/* Computes into parts[0 .. b - a) the partials of pieces [a, b) of a row
 * (b - a <= MQ_RED_BATCH) and into pcnt[0 .. b - a) their valid counts. */
typedef void (*mq_red_pieces_fn)(void *ctx, int64_t a, int64_t b, char *parts, int64_t *pcnt);
/* Folds the [np] pieces of one row into acc[o]: exactly what [k]'s merge
 * of all np partials gives, with at most MQ_RED_BATCH of them at a time in
 * [parts] and [pcnt] (room for that many, or np if fewer), computed by
 * [fn] (reduce_tree.c). [k] must have piece, merge and combine, with
 * partials of at most 16 bytes. Returns the row's valid count. */
MQ_INTERNAL int64_t mq_red_fold_pieces(const mq_red_kernel *k, void *acc, int64_t o, int64_t np,
                                       char *parts, int64_t *pcnt, mq_red_pieces_fn fn, void *ctx);
/* Valid entries per output slot (scratch), or NULL for a plain input. */
MQ_INTERNAL int64_t *mq_red_counts(mq_state *S, const mq_red_plan *P);
/* Gives [out] the mask "count > 0" when the input was masked. */
MQ_INTERNAL void mq_red_set_mask(mq_state *S, const mq_red_plan *P, mq_tensor *out,
                                 const int64_t *count);
/* Scratch for [P->on] slots of [size] bytes (at least one slot). */
MQ_INTERNAL void *mq_red_acc(mq_state *S, const mq_red_plan *P, size_t size);

/* --- reduce_kernels.c ------------------------------------------------------ */

/* The kernel of each (op, input dtype), NULL where there is none (count
 * has none: it counts the mask). */
MQ_INTERNAL const mq_red_kernel *const mq_red_kernels[MQ_RED__COUNT][MQ_DT__COUNT];

/* The accumulator of logsumexp: a running max M and sum S of exp(x - M). */
typedef struct mq_red_lse {
  double M, S;
} mq_red_lse;

/* The kernel [k] on CPU path [cpu] (cpu.h; the same bits on every path):
 * the walk (mq_red_fold) takes the state's path itself. */
MQ_INTERNAL const mq_red_kernel *mq_red_kernel_on(const mq_red_kernel *k, int cpu);

/* Sums, in double, of x*x and of |x| for a float dtype (the norms). */
MQ_INTERNAL const mq_red_kernel *mq_red_sumsq(mq_dtype dt);
MQ_INTERNAL const mq_red_kernel *mq_red_sumabs(mq_dtype dt);

/* --- reduce.c --------------------------------------------------------------- */

/* The kernel of [op] on [dt] input if it computes pieces (the float sums
 * and extrema: sum, mean, amax, amin of float32 and float64), else NULL;
 * on the state's CPU path. */
MQ_INTERNAL const mq_red_kernel *mq_red_piece_kernel(mq_state *S, mq_redop op, mq_dtype dt);
/* The reduction [op] of a contiguous input of [dt] made of [rows] rows of
 * [rlen] entries, each row into one output entry (a whole-tensor
 * reduction is one row), from the partial results of each row's pieces of
 * MQ_RED_PIECE entries (mq_red_piece_kernel's piece()) and their valid
 * counts: bitwise what mq_reduce gives (fuse.c folds fused expressions
 * this way without storing them). _begin makes the output of shape
 * [oshape] ([ond] dims) and its accumulator, counting valid entries if
 * [masked]; row r then goes in either as all its [np] partials at once
 * (_merge: at most MQ_RED_BATCH) or, for a longer row, batch by batch
 * (mq_red_fold_pieces on R->k and R->acc, its count into R->count[r]);
 * _end gives the result. */
typedef struct mq_red_rows {
  mq_redop op;
  const mq_red_kernel *k;
  mq_red_plan P;
  mq_tensor *out;
  void *acc;
  int64_t *count; /* valid entries per row, or NULL (not masked) */
} mq_red_rows;
MQ_INTERNAL void mq_red_rows_begin(mq_state *S, mq_red_rows *R, mq_redop op, mq_dtype dt,
                                   int64_t rows, int64_t rlen, int ond, const int64_t *oshape,
                                   bool masked);
MQ_INTERNAL void mq_red_rows_merge(mq_red_rows *R, int64_t r, const void *parts,
                                   const int64_t *pcnt, int64_t np);
MQ_INTERNAL mq_tensor *mq_red_rows_end(mq_state *S, mq_red_rows *R);
/* Puts every row into R (begun for its rows), each of [np] pieces whose
 * partials [fn] computes, pieces [a, b) numbered row-major over all the
 * rows: whole rows as many at a time as MQ_RED_BATCH partials hold, then
 * _merge; a longer row batch by batch (mq_red_fold_pieces). */
MQ_INTERNAL void mq_red_rows_fold(mq_state *S, mq_red_rows *R, int64_t np, mq_red_pieces_fn fn,
                                  void *ctx);
/* The partial result and valid count of one piece (n <= MQ_RED_PIECE) of
 * float16 or ([bf16]) bfloat16 data x with mask m (NULL: none), for [op]
 * with a piece kernel (mq_red_piece_kernel): the bits of float32's piece
 * on x widened, on CPU path [cpu]. reduce.c folds half tensors with it
 * (on the AVX2 and AVX-512 paths the sum widens in the registers). */
MQ_INTERNAL void mq_red_half_piece(int cpu, mq_redop op, bool bf16, void *part, int64_t *cnt,
                                   const uint16_t *x, const uint8_t *m, int64_t n);

/* --- row kernels that softmax, statistics and attention reuse ------------- */

/* Sum (in double, as reduce_kernels.c's sum) and NaN-propagating max of a contiguous row,
 * over the entries where m is nonzero (m NULL: all); max of none is -inf. */
MQ_INTERNAL double mq_kernel_rowsum_f32(const float *x, const uint8_t *m, int64_t n);
MQ_INTERNAL double mq_kernel_rowsum_f64(const double *x, const uint8_t *m, int64_t n);
MQ_INTERNAL float mq_kernel_rowmax_f32(const float *x, const uint8_t *m, int64_t n);
MQ_INTERNAL double mq_kernel_rowmax_f64(const double *x, const uint8_t *m, int64_t n);
/* softmax of one contiguous row x [n] with its mask m into o, as softmax()
 * computes it (softmax.c) on CPU path [cpu] (the same bits on each): the
 * fused attention's backward recomputes p with it, bit for bit. */
MQ_INTERNAL void mq_softmax_row_f32(int cpu, float *o, const float *x, const uint8_t *m, int64_t n);
MQ_INTERNAL void mq_softmax_row_f64(int cpu, double *o, const double *x, const uint8_t *m,
                                    int64_t n);
/* The row sum again, on CPU path [cpu] (runtime/tensor/cpu.h: the same bits on
 * every path), adding the valid entries to *cnt when cnt and m are not
 * NULL. */
MQ_INTERNAL double mq_kernel_rowsum_cnt_f32(int cpu, const float *x, const uint8_t *m, int64_t n,
                                            int64_t *cnt);
MQ_INTERNAL double mq_kernel_rowsum_cnt_f64(const double *x, const uint8_t *m, int64_t n, int64_t *cnt);
/* The row max again, on CPU path [cpu] (the same bits on every path). */
MQ_INTERNAL float mq_kernel_rowmax_on_f32(int cpu, const float *x, const uint8_t *m, int64_t n);
/* The sum of (x - mean)^2 over the valid entries of a row, in double, as
 * var and std compute it (runtime/kernels/stats.c), on CPU path [cpu]. */
/* The row sum and max of a float32 row of [n] entries whose valid entries
 * are exactly [lo, hi), read only there and without a mask: bitwise what
 * mq_kernel_rowsum_cnt_f32 and mq_kernel_rowmax_on_f32 give with that
 * mask (softmax over padded rows). */
MQ_INTERNAL double mq_kernel_rowsum_span_f32(int cpu, const float *x, int64_t n, int64_t lo, int64_t hi);
MQ_INTERNAL float mq_kernel_rowmax_span_f32(int cpu, const float *x, int64_t n, int64_t lo, int64_t hi);
MQ_INTERNAL double mq_kernel_sqdev_f32(int cpu, const float *x, const uint8_t *m, int64_t n, double mean);

#endif
