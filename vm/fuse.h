/* fuse.h - elementwise expressions evaluated in one blocked pass.
 *
 * The compiler (parser/fusion.h) spots an expression tree of at least
 * two elementwise operations (+ - * / **, unary minus, calls of unary math
 * builtins such as exp) whose leaves are variables, number literals and
 * calls that are not elementwise (mean(x, 1, keepdim=true), std, a user
 * function), and emits a FUSED instruction in front of the tree's ordinary
 * code. At run time FUSED reads the leaves and, when the fast path applies,
 * runs the whole tree as one pass over blocks of MQ_FUSE_BLOCK elements
 * (each operation's kernel on a block that stays in L1, numexpr's scheme)
 * into one result, and jumps over the ordinary code; otherwise it does
 * nothing and the ordinary code runs, op by op, with its usual errors.
 *
 * A tree with a call leaf is compiled in stack mode: every leaf but a
 * number literal (each occurrence of a variable, each call) is evaluated
 * first, in the order the op-by-op code evaluates it, onto the stack; FUSED
 * and the op-by-op code both read the leaves from those slots (so a call
 * runs once, with its own error locations), and the value then takes the
 * slots' place. Before a leaf with operations before it in that order, a
 * check program (the program so far, flagged MQ_FUSE_CHECK) asks whether
 * the fast path takes them, hence whether they cannot fail; if not, a copy
 * of the op-by-op code runs from there (the leaves so far read from their
 * slots, the others evaluated in place), so an op fails before the leaves
 * to its right are evaluated, as op by op.
 *
 * The fast path takes float tensors of one dtype, contiguous, not
 * recording gradients, whose shapes broadcast to the result's, and
 * numbers. A leaf of the result's shape is read in place, a single entry
 * (a 0-d mean(x)) with stride 0, any other ((R, 1) or (1, C) against
 * (R, C)) is gathered per block, along the last dim, into a buffer. Masks
 * combine as binary.c combines them (valid where every masked leaf is),
 * taken only where that needs no new mask: the result's-shape leaves share
 * one mask object, which rides along to the result, when every broadcast
 * leaf's mask is known all valid; a broadcast leaf's mask that is the only
 * one is expanded to the result's, as op by op. Each op runs the very
 * kernel the op-by-op path runs on the same values, so the result is
 * bitwise the same; only the temporaries are gone. A reduction at the root
 * (below) takes only leaves of one shape.
 *
 * A program is the bytes of a string constant:
 *   nleaves, then per leaf: kind (MQ_FL_*), index (u16, little-endian);
 *   then instructions in postfix order to the end:
 *     MQ_FI_LEAF i | MQ_FI_UN op | MQ_FI_BIN op
 *     | MQ_FI_CALL op slot(u16) builtin(u16): a unary op reached through
 *       the global [slot], which must still hold builtin number [builtin]
 *     | MQ_FI_RED op slot(u16) builtin(u16) dim(i8), last: the reduction
 *       [op] (mq_redop) of the value over all dims (dim MQ_FUSE_ALL_DIMS)
 *       or along [dim], reached the same way; only the last dim fuses
 *       (other dims fall back).
 *
 * With MQ_FI_RED (sum, mean, amax, amin of an elementwise tree, whole or
 * along the last dim) the tree's blocks never reach memory: each is folded
 * as it is made into the partial result of its piece of the reduction
 * (blocks are cut like mq_reduce's pieces: MQ_FUSE_BLOCK is MQ_RED_PIECE,
 * and a row starts a new one), and the pieces merge as mq_reduce merges
 * them, so the result is bitwise what `sum(x * 2 + 1, 1)` gives op by op. */
#ifndef MQ_FUSE_H
#define MQ_FUSE_H

#include "../runtime/kernels/ops.h"
#include "../runtime/tensor/tensor.h"

#define MQ_FUSE_BLOCK 4096
#define MQ_FUSE_MAX_LEAVES 16
#define MQ_FUSE_MAX_OPS 32
#define MQ_FUSE_ALL_DIMS 127 /* MQ_FI_RED's dim for a whole-tensor reduction */
#define MQ_FUSE_CHECK 0x80   /* on the leaf count: a check program (mq_fuse_check) */
#define MQ_FUSE_ATTN 0x40    /* on the leaf count: an attention program (below) */
#define MQ_FUSE_LEAF_COUNT 0x3f /* the leaf count without its flags */

enum { MQ_FL_LOCAL, MQ_FL_UPVAL, MQ_FL_GLOBAL, MQ_FL_CONST };
enum { MQ_FI_LEAF, MQ_FI_UN, MQ_FI_BIN, MQ_FI_CALL, MQ_FI_RED };

/* Runs program [code] ([len] bytes) on the leaf values [leaves]; returns
 * the result, or NULL when the fast path does not apply (nothing was
 * done). Raises only what any operation may (memory, interrupt). */
MQ_INTERNAL mq_tensor *mq_fuse_run(mq_state *S, const uint8_t *code, size_t len,
                                   const mq_value *leaves);

/* An attention program (MQ_FUSE_ATTN): softmax(masked(A @ B / C, M), -1)
 * @ V, with B a leaf or transpose(leaf, d0, d1):
 *   5 | MQ_FUSE_ATTN, the leaves A, B, M, V, C (3 bytes each, no sharing),
 *   then the builtins softmax and masked (slot u16, builtin u16 each), 1
 *   if B is transposed, transpose's builtin (slot, builtin), d0, d1 and
 *   softmax's dim (i8 each). mq_fuse_run runs it through
 *   mq_fuse_attention (vm/fuse_attn.c, runtime/nn/attention.h). */
#define MQ_FUSE_ATTN_LEAVES 5
#define MQ_FUSE_ATTN_LEN (1 + 3 * MQ_FUSE_ATTN_LEAVES + 8 + 1 + 4 + 3)
MQ_INTERNAL mq_tensor *mq_fuse_attention(mq_state *S, const uint8_t *code, size_t len,
                                         const mq_value *leaves);

/* Whether the fast path takes check program [code] (leaf count flagged
 * MQ_FUSE_CHECK; a prefix of a program, its stack possibly holding several
 * values): then its ops cannot fail. */
MQ_INTERNAL bool mq_fuse_check(mq_state *S, const uint8_t *code, size_t len, const mq_value *leaves);

#endif
