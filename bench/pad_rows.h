/* pad_rows.h - issue 31's padding rows (masq_bench's set "padding",
 * `make bench ROWS=padding`): a batch padded to random per-row lengths,
 * each op timed under three masks of the same data, all-valid ("_v"), about
 * half valid ("_50": lengths uniform in [0, L]) and about a tenth valid
 * ("_10": uniform in [0, L/5]), batch-major ("_bm", [B, L]) and time-major
 * ("_tm", [L, B], the transpose made contiguous). bench/run.sh prints the
 * ratio of each padded row to its all-valid twin, and to torch's dense
 * tricks on the same batch (bench/pad_bench.py).
 *
 * The lengths come from a small hash of the row number (lengths() below),
 * which bench/pad_bench.py computes the same way: random-looking, of any
 * value, never lined up with a block size. The shapes are odd on purpose:
 * 4000 x 4096 for the flat ops, 251 x 1019 x 64 for layer_norm and the
 * matmul with padded rows (about the same number of entries).
 *
 * A row is "pad_<family>_<layout>_<mask>"; the families:
 *   sum_along   sum along the padded dim      sum_across  sum across it
 *   mean        mean of everything            softmax     along the padded dim
 *   chain       exp(x) * 2 + 1                ln          layer_norm over D of padded rows
 *   matmul      [B, L, D] @ [D, D], padded rows
 *   softmax_fb, ln_fb, chain_fb: forward and backward of softmax, ln, chain */
#ifndef MASQ_BENCH_PAD_ROWS_H
#define MASQ_BENCH_PAD_ROWS_H

typedef struct {
  const char *group;
  const char *setup;
} pad_setup;

typedef struct {
  const char *name;
  const char *group;
  const char *code;
} pad_row;

/* lengths(n, hi, salt): n lengths in [0, hi] from a hash of the row
 * number (squarings modulo the prime 2^31 - 1, exact in int64) */
#define PAD_LENGTHS                                                            \
  "fn lengths(n, hi, salt) {\n"                                                \
  "  h = (arange(n) + salt) * 16807 % 2147483647\n"                            \
  "  for i in range(4) {\n"                                                    \
  "    h = (h * h + 12345) % 2147483647\n"                                     \
  "  }\n"                                                                      \
  "  return h % (hi + 1)\n"                                                    \
  "}\n"

/* the flat batch: x [B, L] (or its transpose: [data] remakes x), masks
 * from the lengths as users make them ([pos], the positions, < the
 * lengths reshaped to [lsh]), x under each; g* require grad */
#define PAD_FLAT(pos, lsh, data)                                              \
  PAD_LENGTHS "seed(31)\n"                                                     \
  "B = 4000\n"                                                                 \
  "L = 4096\n"                                                                 \
  "x = rand(B, L) - 0.5\n" data "p = arange(L)\n"                              \
  "l50 = lengths(B, L, 1)\n"                                                   \
  "l10 = lengths(B, L // 5, 2)\n"                                               \
  "lv = full([B], L)\n"                                                        \
  "x50 = masked(x, " pos " < reshape(l50, " lsh "))\n"                                 \
  "x10 = masked(x, " pos " < reshape(l10, " lsh "))\n"                                 \
  "xv = masked(x, " pos " < reshape(lv, " lsh "))\n"                                   \
  "g50 = requires_grad(x50)\n"                                                 \
  "g10 = requires_grad(x10)\n"                                                 \
  "gv = requires_grad(xv)\n"                                                   \
  "fn chain_fb(g) = grad(sum(exp(g) * 2 + 1), g)\n"

/* [B, L, D] (or [L, B, D]): padded rows of D features */
#define PAD_ROWS3(pos, lsh, data)                                             \
  PAD_LENGTHS "seed(32)\n"                                                     \
  "B = 251\n"                                                                  \
  "L = 1019\n"                                                                 \
  "D = 64\n"                                                                   \
  "h = rand(B, L, D) - 0.5\n" data "w = rand(D, D) - 0.5\n"                    \
  "p = arange(L)\n"                                                            \
  "l50 = lengths(B, L, 3)\n"                                                   \
  "l10 = lengths(B, L // 5, 4)\n"                                              \
  "lv = full([B], L)\n"                                                        \
  "h50 = masked(h, " pos " < reshape(l50, " lsh "))\n"                                 \
  "h10 = masked(h, " pos " < reshape(l10, " lsh "))\n"                                 \
  "hv = masked(h, " pos " < reshape(lv, " lsh "))\n"                                   \
  "g50 = requires_grad(h50)\n"                                                 \
  "g10 = requires_grad(h10)\n"                                                 \
  "gv = requires_grad(hv)\n"                                                   \
  "fn ln_fb(g) = grad(sum(layer_norm(g, [D]) * h), g)\n"

static const pad_setup PAD_SETUPS[] = {
    {"pad_bm", PAD_FLAT("reshape(p, 1, L)", "B, 1", "")
                   "fn softmax_fb(g) = grad(sum(softmax(g, 1) * x), g)\n"},
    {"pad_tm", PAD_FLAT("reshape(p, L, 1)", "1, B",
                        "x = contiguous(transpose(x, 0, 1))\n")
                   "fn softmax_fb(g) = grad(sum(softmax(g, 0) * x), g)\n"},
    {"pad_ln_bm", PAD_ROWS3("reshape(p, 1, L, 1)", "B, 1, 1", "")},
    {"pad_ln_tm", PAD_ROWS3("reshape(p, L, 1, 1)", "1, B, 1",
                            "h = contiguous(permute(h, [1, 0, 2]))\n")},
};

/* one family in one layout under the three masks: [code] is [a] V [b] for
 * the variable suffix V (v, 50, 10) */
#define PAD3(fam, lay, group, a, b)                                            \
  {"pad_" fam "_" lay "_v", group, a "v" b}, {"pad_" fam "_" lay "_50", group, a "50" b}, \
  {"pad_" fam "_" lay "_10", group, a "10" b}

static const pad_row PAD_ROWS[] = {
    PAD3("sum_along", "bm", "pad_bm", "r = sum(x", ", 1)"),
    PAD3("sum_across", "bm", "pad_bm", "r = sum(x", ", 0)"),
    PAD3("mean", "bm", "pad_bm", "r = mean(x", ")"),
    PAD3("softmax", "bm", "pad_bm", "r = softmax(x", ", 1)"),
    PAD3("chain", "bm", "pad_bm", "r = exp(x", ") * 2 + 1"),
    PAD3("softmax_fb", "bm", "pad_bm", "r = softmax_fb(g", ")"),
    PAD3("chain_fb", "bm", "pad_bm", "r = chain_fb(g", ")"),
    PAD3("sum_along", "tm", "pad_tm", "r = sum(x", ", 0)"),
    PAD3("sum_across", "tm", "pad_tm", "r = sum(x", ", 1)"),
    PAD3("mean", "tm", "pad_tm", "r = mean(x", ")"),
    PAD3("softmax", "tm", "pad_tm", "r = softmax(x", ", 0)"),
    PAD3("chain", "tm", "pad_tm", "r = exp(x", ") * 2 + 1"),
    PAD3("softmax_fb", "tm", "pad_tm", "r = softmax_fb(g", ")"),
    PAD3("chain_fb", "tm", "pad_tm", "r = chain_fb(g", ")"),
    PAD3("ln", "bm", "pad_ln_bm", "r = layer_norm(h", ", [D])"),
    PAD3("matmul", "bm", "pad_ln_bm", "r = h", " @ w"),
    PAD3("ln_fb", "bm", "pad_ln_bm", "r = ln_fb(g", ")"),
    PAD3("ln", "tm", "pad_ln_tm", "r = layer_norm(h", ", [D])"),
    PAD3("matmul", "tm", "pad_ln_tm", "r = h", " @ w"),
    PAD3("ln_fb", "tm", "pad_ln_tm", "r = ln_fb(g", ")"),
};

#endif
