/* ops_reduce.h - the reductions and the scans, one row each. The enum
 * (tensor.h), the builtins with their :help text and docs/BUILTINS.md
 * (stdlib/lib_math.c), the derivatives of the reductions
 * (backward_ops.c), what fused expressions may end in (fuse.c) and the
 * table-driven checks (tests/unit/test_ops.c) expand from them; the
 * kernels are reduce.c's and scan.c's own.
 *
 * X(E, name, bind, deriv, fuse, conf, in, res, ident, doc)
 *
 *   E       MQ_RED_E
 *   name    the op's name, and its builtin's
 *   bind    the builtin's form: RF (x, dim=none, keepdim=false, dtype=none,
 *           mask=none), torch.masked's functional one; RP (x, dim=none,
 *           keepdim=false)
 *   deriv   D(expr): d(result)/d(entry) for one valid entry x of a slice
 *           whose result is y, from the slice's statistics st (count, ties
 *           of the extremum, zeros and the product of the nonzero
 *           entries, at slot k); NODIFF for bool or int results
 *   fuse    1 if a fused elementwise expression may end in it (fuse.h)
 *   conf    1 if tests/conformance has its torch.masked cases
 *   in      the dtype it reads: ASIS, or FLOAT (ints and bools as float32)
 *   res     the dtype it answers in: KEEP the input's; WIDEN floats kept,
 *           ints and bools int64; FLOAT floats kept, the others float32;
 *           BOOL (uint8 for a uint8 input, as torch's all and any); INT64
 *   ident   what its accumulator starts from (reduce.c), bitwise what
 *           folding no entry gives: ZERO, ONE, LOWEST (-inf, INT64_MIN,
 *           false), HIGHEST, TRUE and FALSE (a bool slot whatever the
 *           input), LSE (logsumexp's running max -inf and sum 0), NONE
 *           (never folded)
 *   doc     the builtin's :help text */
#ifndef MQ_OPS_REDUCE_H
#define MQ_OPS_REDUCE_H

#define MQ_REDUCE_OPS(X)                                                       \
  X(SUM, "sum", RF, D(1), 1, 1, ASIS, WIDEN, ZERO, "sum of the valid entries") \
  X(MEAN, "mean", RF, D(1 / st->count[k]), 1, 1, ASIS, FLOAT, ZERO,            \
    "mean of the valid entries")                                               \
  X(AMAX, "amax", RF, D(x == y ? 1 / st->ties[k] : 0), 1, 1, ASIS, KEEP, LOWEST, \
    "largest valid entry (NaN wins)")                                          \
  X(AMIN, "amin", RF, D(x == y ? 1 / st->ties[k] : 0), 1, 1, ASIS, KEEP, HIGHEST, \
    "smallest valid entry (NaN wins)")                                         \
  X(PROD, "prod", RF,                                                          \
    D(x != 0 ? (st->zeros[k] == 0 ? st->prod_nz[k] / x : 0)                    \
             : (st->zeros[k] == 1 ? st->prod_nz[k] : 0)),                      \
    0, 1, ASIS, WIDEN, ONE, "product of the valid entries")                    \
  X(ALL, "all", RP, NODIFF, 0, 1, ASIS, BOOL, TRUE,                            \
    "true if every valid entry is nonzero")                                    \
  X(ANY, "any", RP, NODIFF, 0, 0, ASIS, BOOL, FALSE,                           \
    "true if some valid entry is nonzero")                                     \
  X(COUNT, "count", RP, NODIFF, 0, 0, ASIS, INT64, NONE,                       \
    "the number of valid entries, as a plain int64 tensor")                    \
  X(LOGSUMEXP, "logsumexp", RF, D(exp(x - y)), 0, 1, FLOAT, FLOAT, LSE,        \
    "log of the sum of exp of the valid entries, without overflow")

/* Scans along one dim: X(E, name, prod, conf, doc), mq_cumulative's
 * [prod] for the running product. Builtins (x, dim, dtype=none). */
#define MQ_SCAN_OPS(X)                                                         \
  X(CUMSUM, "cumsum", false, 1,                                                \
    "running sum along dim; masked-out entries add nothing and stay masked")   \
  X(CUMPROD, "cumprod", true, 1,                                               \
    "running product along dim; masked-out entries multiply by 1 and stay masked")

#endif
