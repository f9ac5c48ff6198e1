/* fuse.c - running a fused elementwise expression (see fuse.h).
 *
 * Every operation of the program gets a buffer of MQ_FUSE_BLOCK elements
 * (one per level of its evaluation stack, the bottom level being the
 * result's block itself); a block of the result is made
 * by running each operation's ordinary kernel (unary.c, binary.c) over
 * the block, reading leaves straight from their tensors (or a number with
 * stride 0) and the operands below it from the buffers, the last one
 * writing into the result. Blocks are independent, so large inputs are
 * split across threads by whole blocks (runtime/tensor/parallel.h). */
#include "fuse.h"

#include "../core/checked.h"
#include "../runtime/kernels/ewise.h"
#include "../runtime/tensor/masksum.h"
#include "../runtime/kernels/ops.h"
#include "../runtime/tensor/parallel.h"
#include "../runtime/tensor/spanrun.h"
#include "../runtime/kernels/reduce.h"
#include "builtin.h"
#include "chunk.h"

/* Rows shorter than this reduce op by op: a block per short row would pay
 * the program's per-block cost on a few entries. */
#define MIN_FUSED_ROW 512

/* Rows at least this long are run a row at a time when some leaf is
 * broadcast (its entries read in place); shorter ones gather the leaf per
 * block. */
#define ROWSEG_MIN 256

/* a block of the fused result is exactly one piece of a reduction */
_Static_assert(MQ_FUSE_BLOCK == MQ_RED_PIECE, "fused reductions fold one block per piece");

#if defined(__clang__)
/* (x op1 s1) op2 s2 below must round twice, as the two kernels do */
#pragma STDC FP_CONTRACT OFF
#endif

/* x op1 s1 op2 s2 with numbers s1, s2 and + - * /, one pass (fused from
 * two BIN instructions when the program is loaded) */
#define FI_AFFINE 100

typedef struct finstr {
  uint8_t kind; /* MQ_FI_LEAF, MQ_FI_UN, MQ_FI_BIN (a checked CALL is UN), FI_AFFINE */
  uint8_t leaf; /* LEAF; FI_AFFINE: s1 */
  mq_ewise_fn k;
  bool square;  /* x ** 2 runs as x * x, as mq_binary does */
  uint8_t op1, op2, leaf2; /* FI_AFFINE */
} finstr;

typedef struct fuse_ctx {
  mq_state *S;
  int nins;
  finstr ins[2 * MQ_FUSE_MAX_OPS + 1];
  const char *ldata[MQ_FUSE_MAX_LEAVES]; /* a tensor's data, or NULL: a number */
  /* how a tensor leaf is read: LEAF_FULL of the result's shape, LEAF_ONE a
   * single entry broadcast to all (stride 0, as a number), LEAF_BCAST
   * broadcast along some dims: gathered per block into buffer gbuf[leaf]
   * through lst[leaf] (its strides over the result's dims, 0 where it is
   * broadcast) */
  uint8_t lkind[MQ_FUSE_MAX_LEAVES];
  const mq_tensor *lt[MQ_FUSE_MAX_LEAVES]; /* the tensor leaves, NULL for numbers */
  int8_t gbuf[MQ_FUSE_MAX_LEAVES];
  int64_t lst[MQ_FUSE_MAX_LEAVES][MQ_MAX_DIMS];
  int nd, ngather;
  bool rowseg; /* broadcast leaves read in place, a row at a time (ROWSEG_MIN) */
  int64_t shape[MQ_MAX_DIMS]; /* the result's */
  union {
    float f;
    double d;
  } lnum[MQ_FUSE_MAX_LEAVES];
  size_t es;
  int64_t n;     /* elements */
  char *out;     /* the result's data; NULL when a reduction folds it */
  char *bufs;    /* per thread: nbufs buffers of a block (depth - 1 for the
                    operands, the bottom level being the result's own
                    block; one more for that block under a reduction) */
  int nbufs, gbase; /* gathered leaves use buffers gbase, gbase + 1, ... */
  size_t bbytes; /* bytes of one buffer: a block, or the whole of a smaller result */
  /* a whole-tensor reduction of the result (MQ_FI_RED): its kernel, the
   * mask's data, and per piece the partial result and valid count */
  const mq_red_kernel *red;
  const uint8_t *m;
  char *parts;  /* of blocks pbase, pbase + 1, ...: a batch (fold_rows) */
  int64_t *pcnt;
  int64_t pbase;
  int64_t rlen, ppr; /* entries a row, pieces a row */
} fuse_ctx;

enum { LEAF_FULL, LEAF_ONE, LEAF_BCAST };

typedef struct operand {
  const char *p;
  int64_t stride; /* 1, or 0 for a number */
} operand;

static const double no_params[3] = {NAN, NAN, NAN};

static void run_kernel(mq_state *S, mq_ewise_fn k, char *o, const operand *a, const operand *b,
                       int64_t len) {
  mq_iter it;
  it.nops = b ? 3 : 2;
  it.nd = 1;
  it.n = len;
  it.rows = 1;
  it.p[0] = o;
  it.is[0] = 1;
  it.p[1] = (char *)a->p;
  it.is[1] = a->stride;
  if (b) {
    it.p[2] = (char *)b->p;
    it.is[2] = b->stride;
  }
  k(S, &it, no_params);
}

/* The arithmetic of mul_F32, add_F32, ... (binary.c) with a number as the
 * second operand, twice, in one loop: the same roundings, one pass. */
#define AFF_LOOP(T, OP1, OP2)                                                  \
  for (int64_t i = 0; i < len; i++) {                                          \
    T v = a[i] OP1 s1;                                                         \
    o[i] = v OP2 s2;                                                           \
  }
#define AFF_OP2(T, OP1)                                                        \
  switch (op2) {                                                               \
  case MQ_BIN_ADD: AFF_LOOP(T, OP1, +) break;                                  \
  case MQ_BIN_SUB: AFF_LOOP(T, OP1, -) break;                                  \
  case MQ_BIN_MUL: AFF_LOOP(T, OP1, *) break;                                  \
  default: AFF_LOOP(T, OP1, /) break;                                          \
  }
#define DEF_AFFINE(NAME, T)                                                    \
  static void NAME(T *o, const T *a, int64_t len, int op1, T s1, int op2, T s2) { \
    switch (op1) {                                                             \
    case MQ_BIN_ADD: AFF_OP2(T, +) break;                                      \
    case MQ_BIN_SUB: AFF_OP2(T, -) break;                                      \
    case MQ_BIN_MUL: AFF_OP2(T, *) break;                                      \
    default: AFF_OP2(T, /) break;                                              \
    }                                                                          \
  }
DEF_AFFINE(affine_f32, float)
DEF_AFFINE(affine_f64, double)

/* Entries [i0, i0 + len) of the result's layout of broadcast leaf [leaf]
 * into [dst]: runs along the last dim, each a copy or (broadcast there) a
 * fill of one entry. */
static void gather(const fuse_ctx *F, int leaf, char *dst, int64_t i0, int64_t len) {
  int nd = F->nd;
  const int64_t *st = F->lst[leaf], *shape = F->shape;
  int64_t idx[MQ_MAX_DIMS], rem = i0;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
  }
  for (int64_t done = 0; done < len;) {
    int64_t off = 0, run = shape[nd - 1] - idx[nd - 1];
    for (int d = 0; d < nd; d++) off += idx[d] * st[d];
    if (run > len - done) run = len - done;
    const char *src = F->ldata[leaf] + (size_t)off * F->es;
    char *o = dst + (size_t)done * F->es;
    if (st[nd - 1] != 0) {
      memcpy(o, src, (size_t)run * F->es);
    } else if (F->es == sizeof(float)) {
      float v;
      memcpy(&v, src, sizeof v);
      for (int64_t i = 0; i < run; i++) ((float *)o)[i] = v;
    } else {
      double v;
      memcpy(&v, src, sizeof v);
      for (int64_t i = 0; i < run; i++) ((double *)o)[i] = v;
    }
    done += run;
    idx[nd - 1] += run;
    for (int d = nd - 1; d > 0 && idx[d] == shape[d]; d--) idx[d] = 0, idx[d - 1]++;
  }
}

/* Where entry [i] of the result's layout is in broadcast leaf [leaf]. */
static const char *leaf_at(const fuse_ctx *F, int leaf, int64_t i) {
  int64_t off = 0;
  for (int d = F->nd - 1; d >= 0; d--) {
    off += i % F->shape[d] * F->lst[leaf][d];
    i /= F->shape[d];
  }
  return F->ldata[leaf] + (size_t)off * F->es;
}

/* Entries [i0, i0 + len) of the result into [res], with [bufs] for the
 * operands: within one row when F->rowseg (broadcast leaves are then read
 * in place, with their stride along the last dim), else gathered. */
static void run_piece(const fuse_ctx *F, char *bufs, int64_t i0, int64_t len, char *res) {
  size_t es = F->es, bbytes = F->bbytes;
  operand st[2 * MQ_FUSE_MAX_OPS + 1];
  int sp = 0;
  uint32_t gathered = 0; /* leaves gathered for this piece */
  for (int k = 0; k < F->nins; k++) {
    const finstr *in = &F->ins[k];
    if (in->kind == MQ_FI_LEAF) {
      int l = in->leaf;
      const char *d = F->ldata[l];
      if (!d) {
        st[sp++] = (operand){(const char *)&F->lnum[l], 0};
      } else if (F->lkind[l] == LEAF_FULL) {
        st[sp++] = (operand){d + (size_t)i0 * es, 1};
      } else if (F->lkind[l] == LEAF_ONE) {
        st[sp++] = (operand){d, 0};
      } else if (F->rowseg) {
        st[sp++] = (operand){leaf_at(F, l, i0), F->lst[l][F->nd - 1]};
      } else { /* gathered once per piece, however often the tree reads it */
        char *g = bufs + (size_t)(F->gbase + F->gbuf[l]) * bbytes;
        if (!(gathered >> l & 1)) {
          gather(F, l, g, i0, len);
          gathered |= 1u << l;
        }
        st[sp++] = (operand){g, 1};
      }
      continue;
    }
    /* the bottom of the stack, where the result ends, is the result's
     * own block: the first kernel to write there stores to memory while
     * it computes, the later ones find the block in cache */
    int top = in->kind == MQ_FI_BIN ? sp - 2 : sp - 1;
    char *o = top == 0 ? res : bufs + (size_t)(top - 1) * bbytes;
    if (in->kind == FI_AFFINE) {
      if (es == sizeof(float))
        affine_f32((float *)o, (const float *)st[sp - 1].p, len, in->op1, F->lnum[in->leaf].f,
                   in->op2, F->lnum[in->leaf2].f);
      else
        affine_f64((double *)o, (const double *)st[sp - 1].p, len, in->op1, F->lnum[in->leaf].d,
                   in->op2, F->lnum[in->leaf2].d);
    } else if (in->kind == MQ_FI_BIN)
      run_kernel(F->S, in->k, o, &st[sp - 2], in->square ? &st[sp - 2] : &st[sp - 1], len);
    else
      run_kernel(F->S, in->k, o, &st[sp - 1], NULL, len);
    sp = top + 1;
    st[top] = (operand){o, 1};
  }
}

/* Blocks [b0, b1) of the result, with [bufs] for the operands. Under a
 * reduction block q is piece q % ppr of row q / ppr (rows of [rlen]
 * entries; a whole-tensor reduction is one row). */
static void run_blocks(const fuse_ctx *F, char *bufs, int64_t b0, int64_t b1) {
  size_t es = F->es;
  char *fold = bufs + (size_t)(F->gbase - 1) * F->bbytes; /* the result's block under a reduction */
  for (int64_t blk = b0; blk < b1; blk++) {
    int64_t i0 = blk * MQ_FUSE_BLOCK, len = F->n - i0 < MQ_FUSE_BLOCK ? F->n - i0 : MQ_FUSE_BLOCK;
    if (F->red) {
      int64_t p = blk % F->ppr;
      i0 = blk / F->ppr * F->rlen + p * MQ_FUSE_BLOCK;
      len = F->rlen - p * MQ_FUSE_BLOCK < MQ_FUSE_BLOCK ? F->rlen - p * MQ_FUSE_BLOCK : MQ_FUSE_BLOCK;
    }
    char *res = F->out ? F->out + (size_t)i0 * es : fold;
    if (!F->rowseg) {
      run_piece(F, bufs, i0, len, res);
    } else { /* the block cut where rows end */
      int64_t row = F->shape[F->nd - 1];
      for (int64_t a = i0, b; a < i0 + len; a = b) {
        b = (a / row + 1) * row;
        if (b > i0 + len) b = i0 + len;
        run_piece(F, bufs, a, b - a, res + (size_t)(a - i0) * es);
      }
    }
    if (F->red) { /* the block is one piece of the reduction */
      int64_t q = blk - F->pbase;
      F->pcnt[q] = 0;
      F->red->piece(F->parts + (size_t)q * F->red->acc_size, &F->pcnt[q], res, F->m ? F->m + i0 : NULL,
                    len);
    }
  }
}

/* Entries [a, b) of the result (a valid run, spanrun.h) on thread t, with
 * that thread's block buffers: pieces of a block at most, cut where rows
 * end when broadcast leaves are read in place (as run_blocks). */
static void run_span(void *ctx, int64_t a, int64_t b, int t) {
  const fuse_ctx *F = ctx;
  char *bufs = F->bufs + (size_t)t * (size_t)F->nbufs * F->bbytes;
  int64_t row = F->rowseg ? F->shape[F->nd - 1] : 0;
  for (int64_t i = a, e; i < b; i = e) {
    e = b - i < MQ_FUSE_BLOCK ? b : i + MQ_FUSE_BLOCK;
    if (row && e > (i / row + 1) * row) e = (i / row + 1) * row;
    run_piece(F, bufs, i, e - i, F->out + (size_t)i * F->es);
  }
}

/* Whether the program runs a costly unary op (mq_unary_costly), which
 * under a padding mask computes the valid runs only, as op by op. */
static bool runs_costly(const fuse_ctx *F) {
  for (int k = 0; k < F->nins; k++)
    if (F->ins[k].kind == MQ_FI_UN && mq_unary_costly((mq_unop)F->ins[k].op1)) return true;
  return false;
}

/* Blocks pbase + [b0, b1) on thread t, with that thread's block buffers. */
static void run_range(void *ctx, int64_t b0, int64_t b1, int t) {
  const fuse_ctx *F = ctx;
  char *bufs = F->bufs + (size_t)t * (size_t)F->nbufs * F->bbytes;
  run_blocks(F, bufs, F->pbase + b0, F->pbase + b1);
}

/* Blocks [a, b) (over all rows) on the threads, their partials into
 * parts and pcnt (mq_red_pieces_fn; ctx: a rows_job). Chunks of about 64K
 * elements (16 whole blocks) claimed by the threads in turn, polling for
 * interrupts in between. */
typedef struct rows_job {
  mq_state *S;
  fuse_ctx *F;
  int nt;
} rows_job;

static void run_batch(void *ctx, int64_t a, int64_t b, char *parts, int64_t *pcnt) {
  rows_job *J = ctx;
  fuse_ctx *F = J->F;
  int64_t blen = F->rlen < MQ_FUSE_BLOCK ? F->rlen : MQ_FUSE_BLOCK;
  F->pbase = a, F->parts = parts, F->pcnt = pcnt;
  mq_parallel_for(J->S, J->nt, b - a, MQ_PAR_GRAIN / blen, run_range, F);
}

/* The reduction [op] of the result's rows (mq_red_rows_fold: a bounded
 * batch of partials at a time, whatever the size). The output has [ond]
 * dims of the result's shape; [masked]: count the valid entries. */
static mq_tensor *fold_rows(mq_state *S, fuse_ctx *F, int nt, mq_redop op, mq_dtype dt,
                            bool masked, int ond) {
  mq_red_rows R;
  mq_red_rows_begin(S, &R, op, dt, F->n / F->rlen, F->rlen, ond, F->shape, masked);
  rows_job J = {S, F, nt};
  mq_red_rows_fold(S, &R, F->ppr, run_batch, &J);
  return mq_red_rows_end(S, &R);
}

static inline unsigned u16(const uint8_t *p) { return (unsigned)p[0] | ((unsigned)p[1] << 8); }

/* The builtin global [slot] holds right now if it is still builtin number
 * [bidx] (the one the program was compiled against), else NULL. */
static const mq_builtin *still_builtin(mq_state *S, unsigned slot, unsigned bidx) {
  if ((int)slot >= S->nglobals || (int)bidx >= S->nbuiltins) return NULL;
  const mq_global *g = &S->globals[slot];
  if (!g->defined || !mq_is_obj(g->value, MQ_O_BUILTIN) ||
      ((const mq_builtin_obj *)g->value.as.o)->index != (int)bidx)
    return NULL;
  return &S->builtins[bidx];
}

/* What the op-by-op path's value of a subtree would be: its shape, whether
 * it is masked, and whether that mask is the result's-shape leaves' one. */
typedef struct sym {
  int nd;
  int64_t shape[MQ_MAX_DIMS];
  bool masked, full_mask;
} sym;

static sym leaf_sym(const fuse_ctx *F, int leaf) {
  sym y = {0};
  const mq_tensor *t = F->lt[leaf];
  if (!t) return y; /* a number */
  y.nd = t->ndim;
  memcpy(y.shape, t->shape, sizeof y.shape[0] * (size_t)y.nd);
  y.masked = t->mask != NULL;
  y.full_mask = y.masked && F->lkind[leaf] == LEAF_FULL;
  return y;
}

/* *a op b, as binary.c combines their masks: operands of one shape, both
 * masked, must have equal masks (it compares them and raises when they
 * differ). Under load_leaves' rules they do unless one carries the
 * result's-shape leaves' mask and the other a broadcast leaf's all-valid
 * one; false then (the op-by-op path compares them). */
static bool sym_bin(sym *a, const sym *b) {
  bool same = a->nd == b->nd && memcmp(a->shape, b->shape, sizeof a->shape[0] * (size_t)a->nd) == 0;
  if (a->masked && b->masked && same && a->full_mask != b->full_mask) return false;
  int nd = a->nd > b->nd ? a->nd : b->nd;
  int64_t out[MQ_MAX_DIMS];
  for (int d = 0; d < nd; d++) { /* they broadcast: every leaf does to the result */
    int da = d - (nd - a->nd), db = d - (nd - b->nd);
    int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
    out[d] = x == 1 ? y : x;
  }
  a->nd = nd;
  memcpy(a->shape, out, sizeof out[0] * (size_t)nd);
  a->masked |= b->masked;
  a->full_mask |= b->full_mask;
  return true;
}

/* [t]'s shape broadcast into the result's so far (F->nd, F->shape); false
 * if they do not broadcast (the op-by-op path raises). */
static bool broadcast_into(fuse_ctx *F, const mq_tensor *t) {
  int nd = t->ndim > F->nd ? t->ndim : F->nd;
  int64_t out[MQ_MAX_DIMS];
  for (int d = 0; d < nd; d++) {
    int da = d - (nd - F->nd), db = d - (nd - t->ndim);
    int64_t a = da >= 0 ? F->shape[da] : 1, b = db >= 0 ? t->shape[db] : 1;
    if (a != b && a != 1 && b != 1) return false;
    out[d] = a == 1 ? b : a;
  }
  F->nd = nd;
  memcpy(F->shape, out, sizeof out[0] * (size_t)nd);
  return true;
}

/* The leaves: float tensors of one dtype, contiguous, not recording
 * gradients, whose shapes broadcast to the result's, and numbers. Sets the
 * result's shape, the dtype, how each leaf is read, *bcast when some leaf
 * is broadcast, *mask to the result's mask, or *xmask to a mask to expand
 * to the result's shape for it (both NULL: no mask). Masks combine
 * as binary.c combines them (valid where all are), taken here only where
 * that needs no new mask: the masks of full-shape leaves must be one (the
 * op-by-op path compares them), and broadcast leaves' masks must either
 * all be known all valid (the full one then rides along; with none, an
 * all-valid one expanded is the result's, as op by op) or be one mask and
 * the only one (expanded to the result's shape). */
static bool load_leaves(mq_state *S, fuse_ctx *F, int nleaves, const mq_value *leaves,
                        mq_dtype *dt, const mq_tensor **mask, const mq_tensor **xmask,
                        bool *bcast) {
  const mq_tensor *tl[MQ_FUSE_MAX_LEAVES];
  int ntensors = 0;
  F->nd = 0;
  for (int i = 0; i < nleaves; i++) {
    mq_value v = leaves[i];
    tl[i] = NULL;
    F->ldata[i] = NULL;
    if (mq_is_number(v)) continue;
    if (!mq_is_tensor(v)) return false;
    const mq_tensor *t = mq_as_tensor(v);
    if (!mq_dtype_is_float((mq_dtype)t->dtype) || mq_dtype_is_narrow((mq_dtype)t->dtype) ||
        t->requires_grad || t->weak ||
        !mq_tensor_is_contiguous(t) || (ntensors++ > 0 && t->dtype != *dt) || !broadcast_into(F, t))
      return false;
    *dt = (mq_dtype)t->dtype;
    tl[i] = t;
    F->ldata[i] = mq_tensor_data(t);
  }
  memcpy(F->lt, tl, sizeof tl[0] * (size_t)nleaves);
  if (!ntensors) return false;
  int64_t n = 1;
  for (int d = 0; d < F->nd; d++)
    if (!mq_mul_ok(n, F->shape[d], &n)) return false;
  F->n = n;
  const mq_tensor *full = NULL, *bm = NULL;
  bool bm_valid = true, bm_one = true;
  int ng = 0;
  for (int i = 0; i < nleaves; i++) {
    const mq_tensor *t = tl[i];
    if (!t) continue;
    bool same = t->ndim == F->nd && memcmp(t->shape, F->shape, sizeof t->shape[0] * (size_t)F->nd) == 0;
    F->lkind[i] = same ? LEAF_FULL : t->numel == 1 ? LEAF_ONE : LEAF_BCAST;
    *bcast |= !same;
    if (F->lkind[i] == LEAF_BCAST) {
      F->gbuf[i] = (int8_t)ng++;
      for (int d = 0; d < F->nd; d++) {
        int ld = d - (F->nd - t->ndim);
        F->lst[i][d] = ld < 0 || t->shape[ld] == 1 ? 0 : t->strides[ld];
      }
    }
    if (!t->mask) continue;
    if (same) {
      if (full && !mq_tensor_same_view(full, t->mask)) return false;
      full = t->mask;
      continue;
    }
    if (bm && !mq_tensor_same_view(bm, t->mask)) bm_one = false;
    if (!bm) bm = t->mask;
    bm_valid &= mq_mask_known_all_valid(S, t->mask);
  }
  F->ngather = ng;
  /* long rows: cutting blocks at row ends costs less than gathering */
  F->rowseg = ng > 0 && F->shape[F->nd - 1] >= ROWSEG_MIN;
  if (bm && !bm_valid && (full || !bm_one)) return false;
  *mask = full;
  *xmask = full ? NULL : bm;
  return true;
}

/* mq_fuse_run; with [check], only whether the program is taken, in *check. */
static mq_tensor *fuse(mq_state *S, const uint8_t *code, size_t len, const mq_value *leaves,
                       bool *check) {
  fuse_ctx F;
  if (len < 1 || !(code[0] & MQ_FUSE_CHECK) != !check) return NULL;
  int nleaves = code[0] & MQ_FUSE_LEAF_COUNT;
  size_t pc = 1 + 3 * (size_t)nleaves;
  if (nleaves > MQ_FUSE_MAX_LEAVES || pc > len) return NULL;

  mq_dtype dt = MQ_DT_F32;
  const mq_tensor *mask = NULL, *xmask = NULL;
  bool bcast = false;
  if (!load_leaves(S, &F, nleaves, leaves, &dt, &mask, &xmask, &bcast)) return NULL;
  for (int i = 0; i < nleaves; i++) { /* numbers as the op-by-op path converts them */
    if (F.ldata[i]) continue;
    mq_value v = leaves[i];
    double x = v.type == MQ_INT ? (double)v.as.i : v.type == MQ_BOOL ? (double)v.as.b : v.as.f;
    if (dt == MQ_DT_F32) F.lnum[i].f = v.type == MQ_INT ? (float)v.as.i : (float)x;
    else F.lnum[i].d = v.type == MQ_INT ? (double)v.as.i : x;
  }

  /* the instructions: every operation has a tensor operand and a kernel
   * keeping the dtype */
  bool tensor[2 * MQ_FUSE_MAX_OPS + 1];
  sym sy[2 * MQ_FUSE_MAX_OPS + 1];
  int sp = 0, depth = 0, red = -1, red_dim = MQ_FUSE_ALL_DIMS;
  F.nins = 0;
  F.red = NULL;
  while (pc < len) {
    if (F.nins == 2 * MQ_FUSE_MAX_OPS + 1) return NULL;
    finstr *in = &F.ins[F.nins++];
    uint8_t kind = code[pc++];
    if (pc >= len) return NULL;
    uint8_t arg = code[pc++];
    in->kind = kind == MQ_FI_CALL ? MQ_FI_UN : kind;
    in->square = false;
    in->k = NULL;
    in->op1 = arg;
    switch (kind) {
    case MQ_FI_LEAF:
      if (arg >= nleaves) return NULL;
      in->leaf = arg;
      sy[sp] = leaf_sym(&F, arg);
      tensor[sp++] = F.ldata[arg] != NULL;
      break;
    case MQ_FI_RED: {
      if (pc + 5 != len) return NULL; /* the last instruction */
      const mq_builtin *b = still_builtin(S, u16(code + pc), u16(code + pc + 2));
      red_dim = (int8_t)code[pc + 4];
      pc += 5;
      if (!b || mq_builtin_redop(b) != arg || sp != 1 || !tensor[0] || F.nins < 2 ||
          F.ins[F.nins - 2].kind == MQ_FI_LEAF || !(F.red = mq_red_piece_kernel(S, (mq_redop)arg, dt)))
        return NULL;
      red = arg;
      F.nins--; /* not an instruction of the tree */
      break;
    }
    case MQ_FI_CALL: {
      if (pc + 4 > len) return NULL;
      const mq_builtin *b = still_builtin(S, u16(code + pc), u16(code + pc + 2));
      pc += 4;
      if (!b || mq_builtin_unop(b) != arg) return NULL;
    } /* fall through */
    case MQ_FI_UN:
      if (sp < 1 || !tensor[sp - 1]) return NULL;
      if (!(in->k = mq_unary_float_kernel((mq_unop)arg, dt))) return NULL;
      break;
    case MQ_FI_BIN:
      if (sp < 2 || (!tensor[sp - 2] && !tensor[sp - 1])) return NULL;
      if (!(in->k = mq_binary_float_kernel((mq_binop)arg, dt))) return NULL;
      if (arg == MQ_BIN_POW) {
        const finstr *rhs = &F.ins[F.nins - 2];
        if (tensor[sp - 1]) {
          if (F.n == 1 || bcast) return NULL; /* mq_binary's x ** 2 rule looks at values */
        } else if (rhs->kind == MQ_FI_LEAF &&
                   (dt == MQ_DT_F32 ? F.lnum[rhs->leaf].f == 2.0f : F.lnum[rhs->leaf].d == 2.0)) {
          in->square = true;
          in->k = mq_binary_float_kernel(MQ_BIN_MUL, dt);
        } else {
          in->k = mq_pow_number_kernel(dt); /* as mq_binary for a number exponent */
        }
      }
      if (!sym_bin(&sy[sp - 2], &sy[sp - 1])) return NULL;
      sp--;
      tensor[sp - 1] = true;
      break;
    default: return NULL;
    }
    if (sp > depth) depth = sp;
  }
  if (check) { /* every op has a tensor operand and a kernel: none can fail */
    *check = red < 0;
    return NULL;
  }
  if (sp != 1 || !tensor[0] || F.ins[F.nins - 1].kind == MQ_FI_LEAF) return NULL;

  /* x s1 op1 s2 op2, numbers s1 and s2 and op + - * / (x a tensor operand
   * by then): one FI_AFFINE instruction in place of the four */
  for (int k = 1; k + 2 < F.nins; k++) {
    finstr *a = &F.ins[k - 1], *b = &F.ins[k], *c = &F.ins[k + 1], *d = &F.ins[k + 2];
    bool arith1 = b->kind == MQ_FI_BIN && !b->square && b->op1 <= MQ_BIN_DIV;
    bool arith2 = d->kind == MQ_FI_BIN && !d->square && d->op1 <= MQ_BIN_DIV;
    if (!(arith1 && arith2 && a->kind == MQ_FI_LEAF && !F.ldata[a->leaf] && c->kind == MQ_FI_LEAF &&
          !F.ldata[c->leaf] && k >= 2))
      continue;
    finstr f = {.kind = FI_AFFINE, .leaf = a->leaf, .leaf2 = c->leaf,
                .op1 = b->op1, .op2 = d->op1};
    F.ins[k - 1] = f;
    memmove(&F.ins[k], &F.ins[k + 3], (size_t)(F.nins - k - 3) * sizeof F.ins[0]);
    F.nins -= 3;
  }

  /* run */
  if (red >= 0 && (F.n == 0 || bcast || (mask && !mq_tensor_is_contiguous(mask))))
    return NULL; /* the op-by-op path raises or copies */
  int nd = F.nd;
  if (red >= 0 && red_dim != MQ_FUSE_ALL_DIMS &&
      (nd == 0 || (red_dim != -1 && red_dim != nd - 1) || F.shape[nd - 1] < MIN_FUSED_ROW))
    return NULL; /* only long last-dim rows reduce row by row (a bad dim: the op-by-op error) */
  mq_tensor *out = red >= 0 ? NULL : mq_tensor_new(S, dt, F.nd, F.shape);
  F.S = S;
  F.es = mq_dtype_size(dt);
  F.out = out ? mq_tensor_data(out) : NULL;
  F.pbase = 0;
  int nt = mq_parallel_threads_for(S, F.n);
  if (red >= 0) { /* rows of rlen entries, cut into pieces as mq_reduce cuts them */
    F.rlen = red_dim == MQ_FUSE_ALL_DIMS || nd == 0 ? F.n : F.shape[nd - 1];
    F.ppr = (F.rlen + MQ_FUSE_BLOCK - 1) / MQ_FUSE_BLOCK;
  }
  F.gbase = (depth > 1 ? depth - 1 : 1) + (red >= 0);
  F.nbufs = F.gbase + F.ngather;
  F.bbytes = (size_t)(F.n < MQ_FUSE_BLOCK ? F.n : MQ_FUSE_BLOCK) * F.es; /* small tensors: small blocks */
  F.bufs = mq_scratch(S, (size_t)nt * (size_t)F.nbufs * F.bbytes);
  if (red >= 0) {
    F.m = mask ? mq_tensor_data((mq_tensor *)mask) : NULL;
    return fold_rows(S, &F, nt, (mq_redop)red, dt, mask != NULL,
                     red_dim == MQ_FUSE_ALL_DIMS ? 0 : nd - 1);
  }
  if (xmask) mask = mq_expand(S, (mq_tensor *)xmask, F.nd, F.shape);
  mq_span_plan P;
  if (mask && runs_costly(&F) && mq_span_plan_of(S, mask, F.nd, F.shape, &P)) {
    mq_span_run(S, &P, F.out, F.es, run_span, &F); /* the padding +0, as op by op */
  } else {
    /* chunks of about 64K elements (16 whole blocks) claimed by the
     * threads in turn, polling for interrupts in between */
    mq_parallel_for(S, nt, (F.n + MQ_FUSE_BLOCK - 1) / MQ_FUSE_BLOCK, MQ_PAR_GRAIN / MQ_FUSE_BLOCK,
                    run_range, &F);
  }
  if (mask) mq_tensor_set_mask(S, out, (mq_tensor *)mask);
  return out;
}

mq_tensor *mq_fuse_run(mq_state *S, const uint8_t *code, size_t len, const mq_value *leaves) {
  if (len && (code[0] & MQ_FUSE_ATTN)) return mq_fuse_attention(S, code, len, leaves);
  return fuse(S, code, len, leaves, NULL);
}

bool mq_fuse_check(mq_state *S, const uint8_t *code, size_t len, const mq_value *leaves) {
  bool ok = false;
  fuse(S, code, len, leaves, &ok);
  return ok;
}
