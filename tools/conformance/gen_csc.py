#!/usr/bin/python3
"""Conformance cases of the sparse_csc layout against torch 1.13: the ops
torch takes on a CSC tensor (torch.sparse_csc_tensor, Tensor.to_sparse_csc).

torch 1.13 (the Debian build, no MKL) takes few ops on CSC: building it
(from dense, COO and CSR, and from its arrays), to_dense, to_sparse (COO),
to_sparse_csr, t() and transpose(0, 1) (a CSR tensor), the unary ops that
keep zero zero and run on values (UNARY below: the ones torch answers on CSC
that masq takes on sparse tensors), sum of everything, and the products
s @ d and d @ s. Each case draws a 2-D float tensor with zeros (empty dims
included), makes it CSC in masq and compares the arrays (ccol_indices,
row_indices, values) with torch's exactly, then the op's result: a sparse
one by its layout, arrays and dense form, a strided one within gen.py's
tolerances. torch 1.13 records no gradient through a CSC tensor, so there
are no gradient cases here (tests/lang/sparse_csc_autograd.masq checks
masq's against the dense computation). What masq answers on CSC beyond
these is in docs/DIFFERENCES.md.

Writes tests/conformance/csc_<op>.masq and .npz in the format of gen.py's
files (check.masq's T, TP, cmp, report, done).

    /usr/bin/python3 tools/conformance/gen_csc.py [--seed N] [--cases N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import DTNAME, ROOT, Pools, V, lit, tolerance  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

OUT = os.path.join(ROOT, "tests", "conformance")

UNARY = ["neg", "abs", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh", "sqrt",
         "ceil", "floor", "trunc", "sign", "sgn", "signbit", "expm1", "log1p", "rad2deg", "erf",
         "erfinv", "isnan", "isinf", "angle", "positive"]


def draw(rng, k):
    """a 2-D float tensor, about a third of it stored"""
    shape = [int(rng.integers(0 if k % 7 == 6 else 1, 6)) for _ in range(2)]
    dtype = torch.float64 if k % 3 == 2 else torch.float32
    d = rng.standard_normal(shape) * (rng.random(shape) < 0.35)
    if k % 5 == 4 and d.size:  # specials at stored positions
        d.flat[rng.integers(0, d.size)] = [np.nan, np.inf, -np.inf][k % 3]
    return torch.tensor(d, dtype=dtype)


def cases_for(op, rng, k, x):
    """(masq expression of s (the CSC tensor), extra inputs, torch result)"""
    c = x.to_sparse_csc()
    if op == "build":
        return "s", [], c
    if op == "from_coo":
        return "to_sparse_csc(to_sparse_coo(x))", [], x.to_sparse().to_sparse_csc()
    if op == "from_csr":
        return "to_sparse_csc(to_sparse_csr(x))", [], x.to_sparse_csr().to_sparse_csc()
    if op == "from_arrays":
        return ("sparse_csc(ccol_indices(s), row_indices(s), values(s), %s)" % lit(list(x.shape)),
                [], torch.sparse_csc_tensor(c.ccol_indices(), c.row_indices(), c.values(), x.shape))
    if op == "to_dense":
        return "to_dense(s)", [], c.to_dense()
    if op == "to_sparse_coo":
        # torch's COO of a CSC tensor keeps the column order, yet says it is
        # coalesced (so coalesce() leaves it): sorted here by building it
        # anew; masq's COO tensors are always coalesced (docs/DIFFERENCES.md)
        t = c.to_sparse()
        return "to_sparse_coo(s)", [], torch.sparse_coo_tensor(t._indices(), t._values(), t.shape).coalesce()
    if op == "to_sparse_csr":
        return "to_sparse_csr(s)", [], c.to_sparse_csr()
    if op == "t":
        return "t(s)", [], c.t()
    if op == "transpose":
        return "transpose(s, 0, 1)", [], c.transpose(0, 1)
    if op == "sum":
        return "sum(s)", [], torch.sum(c)
    if op == "matmul":
        b = torch.tensor(rng.standard_normal((x.shape[1], int(rng.integers(1, 4)))), dtype=x.dtype)
        return "s @ b", [("b", b)], torch.mm(c, b)
    if op == "rmatmul":
        a = torch.tensor(rng.standard_normal((int(rng.integers(1, 4)), x.shape[0])), dtype=x.dtype)
        return "a @ s", [("a", a)], a @ c
    return "%s(s)" % op, [], getattr(torch, op)(c)


ARRAYS = {torch.sparse_csc: ("ccol_indices", "row_indices"),
          torch.sparse_csr: ("crow_indices", "col_indices"),
          torch.sparse_coo: ("indices",)}
LAYOUT = {torch.sparse_csc: "sparse_csc", torch.sparse_csr: "sparse_csr",
          torch.sparse_coo: "sparse_coo", torch.strided: "strided"}


def generate(op, seed, ncases):
    rng = np.random.default_rng([seed, sum(ord(ch) * 31 ** i for i, ch in enumerate(op)) % 2 ** 32])
    pools = Pools()
    name = "csc_" + op
    lines = ["# %s: %d cases drawn by tools/conformance/gen_csc.py --seed %d; do not edit by hand."
             % (name, ncases, seed),
             "# reference: torch %s on a torch.sparse_csc tensor" % torch.__version__,
             "# cases: %d" % ncases, 'import "check.masq"', 'F = "%s.npz"' % name]
    body = []
    k = 0
    while k < ncases:
        x = draw(rng, k)
        if op in ("asin", "atanh", "erfinv", "sqrt", "log1p"):  # keep inside the domain
            x = torch.where(x.abs() < 1, x, x.sign() * 0.5)
        c = x.to_sparse_csc()
        expr, extra, want = cases_for(op, rng, k, x)
        cid = "%s#%d" % (name, k)
        body.append("# %s: %s%s" % (cid, DTNAME[x.dtype], list(x.shape)))
        body.append("x = %s" % pools.add(V(x)))
        body.append("s = to_sparse_csc(x)")
        body.append('r = ""')
        for ename, e in extra:
            body.append("%s = %s" % (ename, pools.add(V(e))))
        # the layout itself: torch's arrays exactly
        body.append('r = r + cmp("ccol", ccol_indices(s), %s, 0, 0)' % pools.add(V(c.ccol_indices())))
        body.append('r = r + cmp("row", row_indices(s), %s, 0, 0)' % pools.add(V(c.row_indices())))
        body.append('r = r + cmp("values", values(s), %s, 0, 0)' % pools.add(V(c.values())))
        body.append("y = %s" % expr)
        body.append('if layout(y) != %s { r = r + "layout: " + layout(y) + "; " }' % lit(LAYOUT[want.layout]))
        exact = op not in ("sum", "matmul", "rmatmul") and op not in UNARY[2:]
        if want.layout == torch.strided:
            w64 = None
            if want.dtype == torch.float32 and op in ("sum", "matmul", "rmatmul"):
                c64 = x.double().to_sparse_csc()
                w64 = {"sum": lambda: torch.sum(c64),
                       "matmul": lambda: torch.mm(c64, extra[0][1].double()),
                       "rmatmul": lambda: extra[0][1].double() @ c64}[op]()
            rt, at = tolerance(want, w64, torch.ones(want.shape, dtype=torch.bool), want.dtype, exact)
            body.append('r = r + cmp("out", y, %s, %r, %r)' % (pools.add(V(want)), rt, at))
        else:
            for arr in ARRAYS[want.layout]:
                body.append('r = r + cmp("%s", %s(y), %s, 0, 0)' % (arr, arr, pools.add(V(getattr(want, arr)()))))
            v = want.values()
            rt, at = tolerance(v, v.double() if v.dtype == torch.float32 else None,
                               torch.ones(v.shape, dtype=torch.bool), v.dtype, exact)
            body.append('r = r + cmp("values", values(y), %s, %r, %r)' % (pools.add(V(v)), rt, at))
        body.append('report("%s", r, y)' % cid)
        k += 1
    keys = pools.save(os.path.join(OUT, name + ".npz"))
    for key in keys:
        lines.append('%s = load(F, "%s")' % (key.upper(), key))
    with open(os.path.join(OUT, name + ".masq"), "w") as f:
        f.write("\n".join(lines + body + ['done("%s", %d)' % (name, ncases)]) + "\n")


OPS = ["build", "from_coo", "from_csr", "from_arrays", "to_dense", "to_sparse_coo",
       "to_sparse_csr", "t", "transpose", "sum", "matmul", "rmatmul"] + UNARY


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=8)
    a = ap.parse_args()
    torch.set_num_threads(1)
    for op in OPS:
        generate(op, a.seed, a.cases)
    print("csc: %d ops, %d cases each" % (len(OPS), a.cases))


if __name__ == "__main__":
    main()
