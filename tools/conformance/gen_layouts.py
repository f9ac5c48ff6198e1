#!/usr/bin/python3
"""Conformance cases of mask= over every input/mask layout pair against torch 1.13.

For each reduction and normalization of torch.masked (sum, prod, amax, amin,
mean, logsumexp, norm, var, std, argmax, argmin, median, softmax,
log_softmax, softmin, normalize, cumsum, cumprod) and each pair of layouts
of input and mask (strided, sparse_coo, sparse_csr) on 2-D inputs, and the
pairs without CSR on 3-D ones, every dim (none, ints, negative ones, lists,
[] for torch's ()) with keepdim false and true: the
case calls `op(x, dim, keepdim=, mask=m)` in masq and checks

- the result's layout (and a sparse result's nnz): torch's when torch 1.13
  answers (gen checks that torch's layout is the one masq's rule says),
  masq's rule (docs/DIFFERENCES.md) where torch refuses: sum, prod, amax,
  amin and mean of a sparse input keep its layout (CSR only 2-D, else
  COO), the softmax family keeps it, the other ops answer strided;
- the values: torch.masked's on the strided input under the strided mask
  (the sparse input under mask= is that input read on the mask's true
  positions, an unstored entry a valid 0), where torch's sparse answer,
  when it gives one, agrees at the valid positions (gen checks it); the
  mask: a slice is valid when it holds a valid entry (masq's mask= result
  is masked, docs/DIFFERENCES.md);
- the gradient of sum(y * W(y)) with respect to x (differentiable ops):
  torch autograd's through the strided reference, valid where x is valid
  under the mask (and, for a sparse x, stored).

The input stores its nonzeros; about a third of its entries are 0, so
unstored entries sit under true mask positions (valid zeros), and NaN or
inf under false ones (they must never show). Writes
tests/conformance/layouts_<op>.masq and .npz in gen.py's format, and
layouts_manifest.txt: per case what torch 1.13 itself did.

    /usr/bin/python3 tools/conformance/gen_layouts.py [--seed N]
"""
import argparse
import math
import os
import sys
import warnings

import numpy as np
import torch
import torch.masked as tm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen import DT, DTNAME, Pools, V, any_over, canon, lit, red_ref, weights  # noqa: E402

warnings.filterwarnings("ignore")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "conformance")
LAYOUTS = ["strided", "sparse_coo", "sparse_csr"]

RED = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var", "std"]
ARG = ["argmax", "argmin"]
ALONG = ["softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"]
OPS = RED + ARG + ["median"] + ALONG
SPARSE_KERNEL = ("sum", "prod", "amax", "amin", "mean")   # sparse result
SOFTMAXES = ("softmax", "log_softmax", "softmin")           # sparse layout kept
RED_DIMS = [None, 0, 1, -1, [0, 1], [-1, 0], []]
ARG_DIMS = [None, 0, -1]
ALONG_DIMS = [0, 1, -1]


def to_layout(t, layout):
    if layout == "sparse_coo":
        return t.to_sparse()
    if layout == "sparse_csr":
        return t.to_sparse_csr()
    return t


def masq_layout(op, li, out_ndim):
    """the result's layout by masq's rule (docs/LANGUAGE.md, Sparse tensors)"""
    if li == "strided":
        return "strided"
    if op in SOFTMAXES:
        return li
    if op in SPARSE_KERNEL:
        return "sparse_csr" if li == "sparse_csr" and out_ndim == 2 else "sparse_coo"
    return "strided"


def call_torch(op, x, m, dim, keepdim):
    """torch.masked's own answer for these layouts, or the exception"""
    f = getattr(tm, op)
    tdim = () if dim == [] else (tuple(dim) if isinstance(dim, list) else dim)
    if op in ALONG:
        return f(x, 2.0, dim, mask=m) if op == "normalize" else f(x, dim, mask=m)
    if op == "median":
        return f(x, dim, keepdim=keepdim, mask=m)
    if op == "norm":
        return f(x, 2.0, tdim, keepdim=keepdim, mask=m)
    return f(x, tdim, keepdim=keepdim, mask=m)


def reference(op, d, m, dim, keepdim):
    """the expected data, from the strided input under the strided mask"""
    if op in ALONG:
        f = getattr(tm, op)
        return f(d, 2.0, dim, mask=m) if op == "normalize" else f(d, dim, mask=m)
    rdim = None if dim == [] else dim
    param = 2.0 if op == "norm" else 0
    return red_ref(op, d, m, rdim, keepdim, param)


def out_mask(op, m, dim, keepdim):
    if op in ALONG:
        return m.clone()
    dims = canon(None if dim == [] else dim, m.dim())
    return any_over(m, dims, keepdim)


def call_text(op, dim, keepdim):
    if op in ALONG:
        return "%s(x0, %s%d, mask=m0)" % (op, "2.0, " if op == "normalize" else "", dim)
    kd = ", keepdim=true" if keepdim else ""
    if op == "norm":
        return "norm(x0, 2.0, %s%s, mask=m0)" % (lit(dim), kd)
    return "%s(x0, %s%s, mask=m0)" % (op, lit(dim), kd)


def draw(rng, k, dtype, nd):
    shape = [int(rng.integers(1, 5 if nd == 2 else 4)) for _ in range(nd)]
    n = int(np.prod(shape))
    d = torch.tensor(rng.normal(0, 1, n) * 2, dtype=dtype).reshape(shape)
    d[torch.tensor(rng.random(n) < 0.35).reshape(shape)] = 0
    kind = k % 6
    m = torch.tensor(rng.random(n) < 0.6).reshape(shape)
    if kind == 0:
        m[...] = True
    elif kind == 2:
        m[int(rng.integers(shape[0]))] = False    # an empty row (torch's CSR crash)
    elif kind == 4 and k % 12 == 4:
        m[...] = False
    junk = torch.tensor([math.nan, math.inf, -math.inf, 1e30], dtype=dtype)[torch.arange(n) % 4]
    d.view(-1)[~m.view(-1)] = junk[~m.view(-1)]
    return d, m


def grad_of(op, d, m, dim, keepdim, om):
    """torch's gradient of sum(y * W(y)) through the strided reference, in float64"""
    # the junk under the mask (NaN, inf) would reach torch's own gradient as
    # 0 * NaN (var's x - mean); the valid entries' gradient does not depend on it
    x = torch.where(m, d, torch.zeros((), dtype=d.dtype)).to(torch.float64).requires_grad_()
    y = reference(op, x, m, dim, keepdim)
    w = weights(list(y.shape), torch.float64) * om.to(torch.float64)
    y = torch.where(om, y, torch.zeros((), dtype=torch.float64))
    (g,) = torch.autograd.grad((y * w).sum(), [x], allow_unused=True)
    if g is None:
        g = torch.zeros(d.shape, dtype=torch.float64)
    return torch.where(m, g, torch.zeros((), dtype=torch.float64)).to(d.dtype)


def tied(d, m, dim):
    """whether a slice along dim holds equal valid values: which of them
    gets median's gradient is an implementation detail (torch's nanmedian
    and masq pick differently), so such a case checks the value only"""
    dd, mm = d.movedim(dim, -1).reshape(-1, d.shape[dim]), m.movedim(dim, -1).reshape(-1, d.shape[dim])
    return any(len(set(r[k].tolist())) < len(r[k]) for r, k in zip(dd, mm))


def tolerances(dtype):
    return (1e-5, 1e-6) if dtype == torch.float32 else (1e-9, 1e-12)


def cases_of(op):
    """(input layout, mask layout, dim, keepdim, ndim): every pair on 2-D
    inputs, then the pairs without CSR on 3-D ones (COO takes any ndim)"""
    dims = ALONG_DIMS if op in ALONG else ARG_DIMS if op in ARG else ALONG_DIMS if op == "median" else RED_DIMS
    dims3 = [2, -2] if op in ALONG or op in ARG or op == "median" else [None, 2, [0, -1], [-2, 2], []]
    kds = [False] if op in ALONG else [False, True]
    two = [(li, lm, dim, kd, 2) for li in LAYOUTS for lm in LAYOUTS for dim in dims for kd in kds]
    three = [(li, lm, dim, kd, 3) for li in LAYOUTS[:2] for lm in LAYOUTS[:2] for dim in dims3 for kd in kds]
    return two + three


def generate(op, seed):
    rng = np.random.default_rng([seed, sum(ord(ch) * 31 ** i for i, ch in enumerate(op)) % 2 ** 32])
    pools = Pools()
    body, man = [], []
    plan = cases_of(op)
    for k, (li, lm, dim, kd, nd) in enumerate(plan):
        cid = "layouts_%s#%d" % (op, k)
        dtype = torch.float64 if k % 3 == 1 else torch.float32
        d, m = draw(rng, k, dtype, nd)
        plain = torch.where(m, d, torch.zeros((), dtype=dtype))  # what the sparse input stores
        xin = d if li == "strided" else plain
        want = reference(op, d, m, dim, kd)
        om = out_mask(op, m, dim, kd)
        layout = masq_layout(op, li, want.dim())
        try:
            tr = call_torch(op, to_layout(xin, li), to_layout(m, lm), dim, kd)
            tl = str(tr.layout).replace("torch.", "")
            if tl != layout:
                raise AssertionError("%s: torch's layout %s, masq's rule %s" % (cid, tl, layout))
            tv = tr.to_dense() if tl != "strided" else tr
            if op in ARG:
                tv = tv.to(torch.int64)
            same = bool(((tv == want) | (tv - want).abs().le(1e-5 * want.abs() + 1e-6) |
                         (tv.isnan() & want.isnan()))[om].all())
            torch_says = "torch: %s%s" % (tl, "" if same else ", values differ at valid slots")
        except Exception as e:  # torch refuses: masq's rule (DIFFERENCES.md)
            torch_says = "torch refuses: %s" % str(e).split("\n")[0][:100].replace('"', "'")
        xs = "T" if li == "strided" else "TP"
        body.append("# %s: %s x %s, %s%s dim=%s keepdim=%s; %s"
                    % (cid, li, lm, DTNAME[dtype], list(d.shape), lit(dim), lit(kd), torch_says))
        src = pools.add(V(xin, None))
        conv = {"strided": "%s", "sparse_coo": "to_sparse_coo(%s)", "sparse_csr": "to_sparse_csr(%s)"}
        grad = op not in ARG and not (op == "median" and tied(d, m, dim))
        body.append("x0 = %s" % ("requires_grad(%s)" % (conv[li] % src) if grad else conv[li] % src))
        body.append("m0 = %s" % (conv[lm] % pools.add(V(m, None))))
        body.append("y = %s" % call_text(op, dim, kd))
        nnz = int(om.sum()) if layout != "strided" else -1
        rt, at = tolerances(dtype)
        if op in ("amax", "amin", "argmax", "argmin", "median"):
            rt, at = 0, 0
        body.append('r = lay(y, "%s", %d) + cmp("out", dense(y), %s, %g, %g)'
                    % (layout, nnz, pools.add(V(want.detach().to(want.dtype), om)), rt, at))
        if grad:
            g = grad_of(op, d, m, dim, kd, om)
            gm = m if li == "strided" else m & (plain != 0)
            body.append("g = grad(sum(y * W(y)), [x0])")
            body.append('r = r + cmp("grad", dense(g[0]), %s, 1e-05, 1e-06)' % pools.add(V(g, gm)))
        body.append('report("%s", r, y)' % cid)
        man.append("%s\t%s\t%s\t%s" % (cid, call_text(op, dim, kd), "%s x %s" % (li, lm), torch_says))
    head = ["# layouts_%s: %d cases drawn by tools/conformance/gen_layouts.py --seed %d; do not edit by hand."
            % (op, len(plan), seed),
            "# reference: torch.masked.%s on the strided input under the strided mask; layout: torch's, "
            "or masq's rule where torch refuses" % op,
            "# cases: %d" % len(plan), 'import "check.masq"', 'F = "layouts_%s.npz"' % op,
            "# the layout (and a sparse result's nnz), then the strided form of a result",
            "fn lay(y, want, n) {",
            '  if type(y) != "tensor" and type(y) != "sparse tensor" { return "out: a " + type(y) + "; " }',
            '  if layout(y) != want { return "layout " + layout(y) + ", want " + want + "; " }',
            '  if n >= 0 and nnz(y) != n { return "nnz " + str(nnz(y)) + ", want " + str(n) + "; " }',
            '  return ""',
            "}",
            "fn dense(y) {",
            "  if is_sparse(y) { return to_dense(y) }",
            "  return y",
            "}"]
    keys = pools.save(os.path.join(OUT, "layouts_%s.npz" % op))
    head += ['%s = load(F, "%s")' % (key.upper(), key) for key in keys]
    with open(os.path.join(OUT, "layouts_%s.masq" % op), "w") as f:
        f.write("\n".join(head + body + ['done("layouts_%s", %d)' % (op, len(plan))]) + "\n")
    return man


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ops", default=",".join(OPS))
    a = ap.parse_args()
    man = []
    for op in a.ops.split(","):
        man += generate(op, a.seed)
        print("layouts_%s: %d cases" % (op, len(cases_of(op))))
    path = os.path.join(OUT, "layouts_manifest.txt")
    old = []
    if os.path.exists(path) and a.ops != ",".join(OPS):
        want = set(a.ops.split(","))
        old = [ln for ln in open(path).read().split("\n")[2:]
               if ln and ln.split("\t")[0].split("#")[0][len("layouts_"):] not in want]
    with open(path, "w") as f:
        f.write("# Generated by tools/conformance/gen_layouts.py --seed %d with torch %s; do not edit.\n"
                % (a.seed, torch.__version__))
        f.write("# case\texpression\tinput x mask layouts\twhat torch 1.13 itself did\n")
        f.write("\n".join(sorted(old + man)) + "\n")


if __name__ == "__main__":
    main()
