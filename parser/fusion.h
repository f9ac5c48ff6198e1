/* fusion.h - the compiler's pattern matcher for fused expressions.
 *
 * The compiler (compiler.c) asks, for each expression it is about to
 * compile, whether the expression is one the fusion engine runs in one pass
 * (vm/fuse.h): an elementwise tree of at least two operations, or one
 * reduced by sum, mean, amax or amin, or the attention shape
 *
 *     softmax(masked(a @ b / c, m), -1) @ v     (as_masked alike; b a
 *                                                variable or transpose(k, i, j))
 *
 * The matcher answers with a plan: the FUSED program, and in stack mode
 * the leaves the compiler evaluates onto the stack first, with the check
 * programs that go before some of them. The compiler owns the bytecode
 * around it: the leaves, the FUSED instruction, the op-by-op code FUSED
 * jumps over when it succeeds and that runs, with its own errors, when it
 * does not (compiler.c: fused()). So a plan never changes what an
 * expression means, only how fast it runs.
 *
 * The matcher sees the compiler through mq_fusion_env alone: the function
 * being compiled (for the constants a program names), the stack depth, and
 * how a name resolves where the expression is.
 *
 * Attention is both this shape and a builtin, attention(q, k, v, mask,
 * div), with one implementation: mq_attention_try (runtime/nn/attention.h),
 * which the builtin calls (running the expression's operations itself when
 * it declines) and which the shape's program reaches (vm/fuse_attn.c, once
 * it has checked the names still hold those builtins). The matcher lowers
 * the shape to that entry and not to a call of the builtin: when the entry
 * declines, the expression must still do what it says, op by op, with its
 * errors and warnings at its own subexpressions, softmax, masked and
 * transpose looked up as the script bound them, and masked's graph (a new
 * one under autograd, with a warning) kept apart from as_masked's. The
 * shape stays recognised because users write the torch form and expect it
 * fast; the builtin is the form to find, document and test on its own.
 * (docs/HACKING.md, "Fused expressions: who decides what".) */
#ifndef MQ_FUSION_H
#define MQ_FUSION_H

#include "../vm/chunk.h"
#include "../vm/fuse.h"
#include "ast.h"

typedef struct mq_fusion_env {
  mq_state *S;
  mq_function *f; /* the function being compiled: constants go into it */
  int depth;      /* the stack depth before the expression: stacked leaves go above */
  /* Where variable [name] lives at this point of the code, as the compiler
   * resolves it (it may record a capture, as compiling the name would):
   * MQ_FL_LOCAL or MQ_FL_UPVAL with the slot in *index, MQ_FL_GLOBAL (the
   * matcher finds the global's slot), or -1 for a function's own name. */
  int (*where)(void *ctx, const char *name, mq_span sp, int *index);
  void *ctx;
} mq_fusion_env;

typedef struct mq_fusion_plan {
  mq_string *prog; /* the FUSED program (vm/fuse.h), for the function's constants */
  /* stack mode: these leaves are compiled first, in this order, into
   * stack slots depth + i; FUSED and the op-by-op code read them there */
  int nstack;
  const mq_node *stack[MQ_FUSE_MAX_LEAVES];
  /* before leaf ck[i].nstack is compiled, FUSED with check program
   * ck[i].prog (flagged MQ_FUSE_CHECK): if the ops before it may fail, the
   * op-by-op code runs from there instead (vm/fuse.h) */
  int nck;
  struct {
    int nstack;
    mq_string *prog;
  } ck[MQ_FUSE_MAX_LEAVES];
} mq_fusion_plan;

/* Whether [n] is worth fusing: then true with its plan in *plan; false
 * for anything else. Adds the constants the program reads (numbers, a
 * divisor) to E->f, and may raise only what compiling [n] would (memory,
 * too many constants, an interrupt). Looks at a bounded number of nodes,
 * so compiling stays linear in the source. */
MQ_INTERNAL bool mq_fusion_plan_of(const mq_fusion_env *E, const mq_node *n, mq_fusion_plan *plan);

#endif
