#!/usr/bin/python3
"""pad_bench.py - issue 31's padding rows (bench/pad_rows.h) in plain torch,
with the dense tricks torch users write for a padded batch, one thread.

Usage: pad_bench.py [@padding | ROW...]

The batch is masq_bench's: 4000 x 4096 float32 (and its contiguous
transpose), 251 x 1019 x 64 for layer_norm and the matmul, with the same
per-row lengths (lengths() below is pad_rows.h's hash of the row number),
about half valid ("_50") and about a tenth ("_10"). The tricks, as users
write them: masked_fill(~m, -inf) then softmax; x.masked_fill(~m, 0).sum(dim)
for sums; (x * m).sum() / m.sum() for the mean; exp(x) * 2 + 1, layer_norm
and the matmul on the full tensor, padding included; autograd for the _fb
rows. Their cost does not depend on the lengths; masq's should.

Prints a BLAS line and RESULT lines (impl "torch-trick") in the protocol of
bench/bench_util.h, timed as py_bench.py times (one warm-up, then at least
5 runs and until 0.4 s have passed).
"""
import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before torch's import: its BLAS reads them at load

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_bench import na, timeit  # noqa: E402 - after the path

IMPL = "torch-trick"


def lengths(np, n, hi, salt):
    """pad_rows.h's lengths(): n lengths in [0, hi], a hash of the row number."""
    h = (np.arange(n, dtype=np.int64) + salt) * 16807 % 2147483647
    for _ in range(4):
        h = (h * h + 12345) % 2147483647
    return h % (hi + 1)


def flat_rows(torch, np, layout):
    """The 4000 x 4096 families (sum along and across the padded dim, mean,
    softmax, the chain, and the _fb rows) in [layout] "bm" or "tm"."""
    B, L = 4000, 4096
    x = torch.rand(B, L) - 0.5
    pos = torch.arange(L)
    masks = {"50": torch.from_numpy(lengths(np, B, L, 1)), "10": torch.from_numpy(lengths(np, B, L // 5, 2))}
    along = 1
    if layout == "tm":
        x = x.t().contiguous()
        along = 0
    rows = {}
    for level, lens in masks.items():
        m = pos[None, :] < lens[:, None] if layout == "bm" else pos[:, None] < lens[None, :]
        mf = m.float()
        g = x.clone().requires_grad_()

        def softmax_fb(m=m, g=g):
            y = g.masked_fill(~m, float("-inf")).softmax(along)
            return torch.autograd.grad((y * x).sum(), g)

        def chain_fb(m=m, g=g):
            return torch.autograd.grad((torch.exp(g) * 2 + 1).masked_fill(~m, 0).sum(), g)

        sfx = "_%s_%s" % (layout, level)
        rows.update({
            "pad_sum_along" + sfx: lambda m=m: x.masked_fill(~m, 0).sum(along),
            "pad_sum_across" + sfx: lambda m=m: x.masked_fill(~m, 0).sum(1 - along),
            "pad_mean" + sfx: lambda mf=mf: (x * mf).sum() / mf.sum(),
            "pad_softmax" + sfx: lambda m=m: x.masked_fill(~m, float("-inf")).softmax(along),
            "pad_chain" + sfx: lambda: torch.exp(x) * 2 + 1,
            "pad_softmax_fb" + sfx: softmax_fb,
            "pad_chain_fb" + sfx: chain_fb,
        })
    return rows


def row_rows(torch, np, layout):
    """The 251 x 1019 x 64 families: layer_norm, the matmul, layer_norm's _fb."""
    B, L, D = 251, 1019, 64
    h = torch.rand(B, L, D) - 0.5
    if layout == "tm":
        h = h.permute(1, 0, 2).contiguous()
    w = torch.rand(D, D) - 0.5
    rows = {}
    for level in ("50", "10"):
        g = h.clone().requires_grad_()

        def ln_fb(g=g):
            return torch.autograd.grad((torch.nn.functional.layer_norm(g, (D,)) * h).sum(), g)

        sfx = "_%s_%s" % (layout, level)
        rows.update({
            "pad_ln" + sfx: lambda: torch.nn.functional.layer_norm(h, (D,)),
            "pad_matmul" + sfx: lambda: h @ w,
            "pad_ln_fb" + sfx: ln_fb,
        })
    return rows


def main():
    args = sys.argv[1:]
    every = not args or "@padding" in args
    try:
        import numpy as np
        import torch
    except ImportError as e:
        na(IMPL, "*", "not installed (%s)" % e)
        return 0
    torch.set_num_threads(1)
    torch.manual_seed(31)
    from py_bench import blas_line

    blas_line("torch")
    for make in (flat_rows, row_rows):
        for layout in ("bm", "tm"):
            rows = make(torch, np, layout)
            for name, fn in rows.items():
                if every or name in args:
                    timeit(IMPL, name, fn)
            del rows
    return 0


if __name__ == "__main__":
    sys.exit(main())
