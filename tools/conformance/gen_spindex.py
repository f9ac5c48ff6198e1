#!/usr/bin/python3
"""Conformance cases of indexing sparse tensors against torch 1.13: what
torch answers on its sparse layouts.

torch 1.13 indexes COO, CSR and CSC tensors with an int (s[i], s[-1]), two
ints (s[i, j]: a strided 0-d tensor), select(dim, i) and s[..., j], all
giving a sparse_coo result of one dim less; COO alone takes index_select
(a COO result; a negative index counts from the end) and `None` (s[None]).
Slices, narrow, index_select of CSR/CSC and tensor indices it refuses
(masq answers them: tests/lang/sparse_index.masq, docs/DIFFERENCES.md), and
it records no gradient through a sparse selection (select_backward and
index_add_ have no sparse kernels), so there are no gradient cases here
(tests/unit/test_sparse_grad.c checks masq's by finite differences).

Each case draws a float or int tensor with zeros (2-D for every layout,
3-D too for COO, empty dims included where the index allows), makes it
sparse in masq and in torch, and compares the result's layout, index
arrays, values and dense form exactly (a selection computes nothing).

Writes tests/conformance/spindex_<op>_<layout>.masq and .npz in the format
of gen.py's files (check.masq's T, TP, cmp, report, done).

    /usr/bin/python3 tools/conformance/gen_spindex.py [--seed N] [--cases N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import DTNAME, ROOT, Pools, V, lit  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

OUT = os.path.join(ROOT, "tests", "conformance")

TO = {"coo": ("to_sparse", lambda x: x.to_sparse()),
      "csr": ("to_sparse_csr", lambda x: x.to_sparse_csr()),
      "csc": ("to_sparse_csc", lambda x: x.to_sparse_csc())}
ARRAYS = {torch.sparse_csc: ("ccol_indices", "row_indices"),
          torch.sparse_csr: ("crow_indices", "col_indices"),
          torch.sparse_coo: ("indices",)}
LAYOUT = {torch.sparse_csc: "sparse_csc", torch.sparse_csr: "sparse_csr",
          torch.sparse_coo: "sparse_coo", torch.strided: "strided"}
DTYPES = [torch.float32, torch.float64, torch.int64]


def draw(rng, k, layout, need):
    """a tensor with zeros; dims in [need] (a list of dim numbers) non-empty"""
    nd = 3 if layout == "coo" and k % 4 == 3 else 2
    shape = [int(rng.integers(1 if d in need or k % 5 else 0, 5)) for d in range(nd)]
    dtype = DTYPES[k % 3]
    d = rng.standard_normal(shape) * 3 * (rng.random(shape) < 0.4)
    if dtype == torch.int64:
        d = np.round(d)
    return torch.tensor(d, dtype=dtype)


def pick(rng, size):
    """an index into a dim of [size], negative half the time"""
    i = int(rng.integers(0, size))
    return i - size if rng.random() < 0.5 else i


def case(op, rng, k, layout):
    """(x, masq expression of s, extra inputs, torch's result)"""
    if op == "int":
        x = draw(rng, k, layout, [0])
        i = pick(rng, x.shape[0])
        return x, "s[%d]" % i, [], lambda s: s[i]
    if op == "int2":
        x = draw(rng, k, layout, [0, 1])
        i, j = pick(rng, x.shape[0]), pick(rng, x.shape[1])
        return x, "s[%d, %d]" % (i, j), [], lambda s: s[i, j]
    if op == "select":
        x = draw(rng, k, layout, [])
        dims = [d for d in range(x.dim()) if x.shape[d] > 0]
        if not dims:
            x = draw(rng, k, layout, [0])
            dims = [0]
        d = int(rng.choice(dims))
        i = pick(rng, x.shape[d])
        dd = d - x.dim() if rng.random() < 0.3 else d
        return x, "select(s, %d, %d)" % (dd, i), [], lambda s: s.select(dd, i)
    if op == "ellipsis":
        x = draw(rng, k, layout, [2] if k % 4 == 3 and layout == "coo" else [1])
        j = pick(rng, x.shape[-1])
        return x, "s[..., %d]" % j, [], lambda s: s[..., j]
    if op == "index_select":
        x = draw(rng, k, layout, [])
        d = int(rng.integers(0, x.dim()))
        n = int(rng.integers(0, 5))
        size = x.shape[d]
        ix = torch.tensor([pick(rng, size) for _ in range(n)] if size else [], dtype=torch.int64)
        return x, "index_select(s, %d, ix)" % d, [("ix", ix)], lambda s: s.index_select(d, ix)
    if op == "none":
        x = draw(rng, k, layout, [])
        return x, "s[none]", [], lambda s: s[None]
    raise ValueError(op)


def generate(op, layout, seed, ncases):
    name = "spindex_%s_%s" % (op, layout)
    rng = np.random.default_rng([seed, sum(ord(ch) * 31 ** i for i, ch in enumerate(name)) % 2 ** 32])
    pools = Pools()
    to_masq, to_torch = TO[layout]
    lines = ["# %s: %d cases drawn by tools/conformance/gen_spindex.py --seed %d; do not edit by hand."
             % (name, ncases, seed),
             "# reference: torch %s indexing a torch.%s tensor" % (torch.__version__, LAYOUT[to_torch(torch.zeros(1, 1)).layout]),
             "# cases: %d" % ncases, 'import "check.masq"', 'F = "%s.npz"' % name]
    body = []
    for k in range(ncases):
        x, expr, extra, f = case(op, rng, k, layout)
        want = f(to_torch(x))
        if want.layout == torch.sparse_coo:
            want = want.coalesce()  # torch's may say uncoalesced; its order is the same
        cid = "%s#%d" % (name, k)
        body.append("# %s: %s%s" % (cid, DTNAME[x.dtype], list(x.shape)))
        body.append("x = %s" % pools.add(V(x)))
        body.append("s = %s(x)" % to_masq)
        body.append('r = ""')
        for ename, e in extra:
            body.append("%s = %s" % (ename, pools.add(V(e))))
        body.append("y = %s" % expr)
        body.append('if layout(y) != %s { r = r + "layout: " + layout(y) + "; " }'
                    % lit(LAYOUT[want.layout]))
        if want.layout == torch.strided:
            body.append('r = r + cmp("out", y, %s, 0, 0)' % pools.add(V(want)))
        else:
            body.append('r = r + cmp("shape", tensor(shape(y), dtype=int64), %s, 0, 0)'
                        % pools.add(V(torch.tensor(list(want.shape), dtype=torch.int64))))
            for arr in ARRAYS[want.layout]:
                body.append('r = r + cmp("%s", %s(y), %s, 0, 0)'
                            % (arr, arr, pools.add(V(getattr(want, arr)()))))
            body.append('r = r + cmp("values", values(y), %s, 0, 0)' % pools.add(V(want.values())))
            body.append('r = r + cmp("dense", to_dense(y), %s, 0, 0)' % pools.add(V(want.to_dense())))
        body.append('report("%s", r, y)' % cid)
    keys = pools.save(os.path.join(OUT, name + ".npz"))
    for key in keys:
        lines.append('%s = load(F, "%s")' % (key.upper(), key))
    with open(os.path.join(OUT, name + ".masq"), "w") as f:
        f.write("\n".join(lines + body + ['done("%s", %d)' % (name, ncases)]) + "\n")


# (op, the layouts torch 1.13 answers it on)
OPS = [("int", "coo csr csc"), ("int2", "coo csr csc"), ("select", "coo csr csc"),
       ("ellipsis", "coo csr csc"), ("index_select", "coo"), ("none", "coo")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=12)
    a = ap.parse_args()
    torch.set_num_threads(1)
    n = 0
    for op, layouts in OPS:
        for layout in layouts.split():
            generate(op, layout, a.seed, a.cases)
            n += 1
    print("spindex: %d files, %d cases each" % (n, a.cases))


if __name__ == "__main__":
    main()
