#!/usr/bin/python3
"""Conformance cases of the index ops (max/min along a dim, sort, argsort,
topk, gather, index_select, scatter, scatter_add, one_hot) against torch 1.13.

torch.masked 1.13 has none of them, so the reference is the plain torch op
on filled data: masked-out entries filled so that they never win (-inf or
+inf for max/min/sort/topk, 0 for scatter_add's addends), the valid entries
compared, the output mask worked out from the input masks with the same op
(torch.gather of the mask, torch.scatter of the masks, ...). Gradients are
torch autograd's of sum(y * W(y)) with W zeroed at masked-out outputs; a
gradient entry is valid when its input entry is and some valid output read
it. Writes tests/conformance/index_<op>.masq and .npz in the format of
gen.py's files (check.masq's T, TP, cmp, report, done).

    /usr/bin/python3 tools/conformance/gen_index.py [--seed N] [--cases N]
"""
import argparse
import os

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "conformance")
DT = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.bool: "b1"}
NAME = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}
OPS = ["max", "min", "sort", "argsort", "topk", "gather", "index_select", "scatter",
       "scatter_add", "one_hot"]


class Pools:
    """every tensor of one op's cases, packed per dtype into one 1-D array"""

    def __init__(self):
        self.parts = {k: [] for k in DT.values()}
        self.size = {k: 0 for k in DT.values()}

    def add(self, d, m=None):
        """d: data; m: mask (None: a plain tensor)"""
        key = DT[d.dtype]
        dd = d.detach().reshape(-1).numpy()
        mm = (m if m is not None else torch.ones(d.shape, dtype=torch.bool)).reshape(-1).numpy()
        a = self.size[key]
        self.parts[key].append((dd, mm))
        self.size[key] = a + dd.size
        return "%s(%s, %d, %d, %s)" % ("TP" if m is None else "T", key.upper(), a, a + dd.size,
                                       list(d.shape))

    def save(self, path):
        arrays = {}
        for key, parts in self.parts.items():
            if parts:
                arrays[key] = np.concatenate([d for d, _ in parts])
                arrays[key + "_mask"] = ~np.concatenate([m for _, m in parts])  # numpy.ma polarity
        np.savez_compressed(path, **arrays)


def weights(y):
    """check.masq's W(y)"""
    return ((torch.arange(y.numel()) % 5) * 0.5 - 0.75).to(torch.float64).reshape(y.shape)


class Case:
    def __init__(self, rng, k, op):
        self.rng, self.k, self.op = rng, k, op
        nd = 1 + k % 3
        self.shape = [int(rng.integers(1, 5)) for _ in range(nd)]
        self.dim = int(rng.integers(-nd, nd))
        self.masked = k % 6 != 0
        self.dtype = torch.float64 if k % 5 == 3 else torch.float32
        if op not in ("scatter_add",) and k % 7 == 5:
            self.dtype = torch.int64

    def data(self, shape, dtype):
        n = int(np.prod(shape))
        if dtype == torch.int64:  # distinct: no ties
            v = self.rng.permutation(4 * n + 1)[:n] - 2 * n
            return torch.tensor(v, dtype=torch.int64).reshape(shape)
        return torch.tensor(self.rng.standard_normal(n), dtype=dtype).reshape(shape)

    def mask(self, shape, dim):
        kind = self.k % 4
        m = torch.tensor(self.rng.random(int(np.prod(shape))) < 0.65).reshape(shape)
        if kind == 0:
            m[...] = True
        elif kind == 2 and len(shape) > 1:  # a fully masked slice along dim
            idx = [slice(None)] * len(shape)
            idx[(dim + 1) % len(shape)] = 0
            m[tuple(idx)] = False
        elif kind == 3 and self.k % 8 == 3:
            m[...] = False
        return m

    def hide(self, d, m):
        """NaN / inf / huge under the mask: they must never show"""
        d = d.clone()
        if d.dtype.is_floating_point:
            junk = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e30],
                                dtype=d.dtype)[torch.arange(d.numel()) % 4].reshape(d.shape)
            d[~m] = junk[~m]
        else:
            d[~m] = 10 ** 15
        return d


def fill(d, m, v):
    out = d.clone()
    out[~m] = v
    return out


def extreme(dtype, big):
    if dtype.is_floating_point:
        return float("inf") if big else -float("inf")
    return torch.iinfo(dtype).max if big else torch.iinfo(dtype).min


def grads(f, ins, outmask):
    """torch's gradient of sum(y * W * outmask) for each float input of
    f(*ins), and how many valid outputs read each entry"""
    ls = [t.to(torch.float64).requires_grad_() for t in ins]
    y = f(*ls)
    om = outmask.to(torch.float64)
    g = torch.autograd.grad((y * weights(y) * om).sum(), ls, allow_unused=True)
    ls2 = [t.to(torch.float64).requires_grad_() for t in ins]
    y2 = f(*ls2)
    c = torch.autograd.grad((y2 * om).sum(), ls2, allow_unused=True)
    return [(a if a is not None else torch.zeros(t.shape, dtype=torch.float64),
             (b if b is not None else torch.zeros(t.shape, dtype=torch.float64)) > 0)
            for a, b, t in zip(g, c, ins)]


def lit(v):
    return "true" if v is True else "false" if v is False else str(v)


def generate(op, seed, ncases):
    rng = np.random.default_rng([seed, sum(ord(ch) * 31 ** i for i, ch in enumerate(op)) % 2 ** 32])
    pools = Pools()
    lines = ["# index_%s: %d cases drawn by tools/conformance/gen_index.py --seed %d; do not edit by hand."
             % (op, ncases, seed),
             "# reference: the plain torch op on filled data (masked-out entries never win), "
             "the output mask by the same op on the masks",
             "# cases: %d" % ncases, 'import "check.masq"', 'F = "index_%s.npz"' % op,
             ]
    body = []
    for k in range(ncases):
        c = Case(rng, k, op)
        body += case_lines(c, pools, "index_%s#%d" % (op, k))
    lines += ['%s = load(F, "%s")' % (key.upper(), key) for key in DT.values() if pools.parts[key]]
    lines += body
    lines.append('done("index_%s", %d)' % (op, ncases))
    with open(os.path.join(OUT, "index_%s.masq" % op), "w") as f:
        f.write("\n".join(lines) + "\n")
    pools.save(os.path.join(OUT, "index_%s.npz" % op))


def tensor_in(pools, name, d, m, masked, grad):
    src = pools.add(d, m if masked else None)
    return "%s = %s" % (name, "requires_grad(%s)" % src if grad else src)


def expect(pools, what, got, d, m, masked, tol=(0, 0)):
    return 'r = r + cmp("%s", %s, %s, %g, %g)' % (what, got, pools.add(d, m if masked else None),
                                                 tol[0], tol[1])


def case_lines(c, P, cid):
    op, shape, dim, masked = c.op, c.shape, c.dim, c.masked
    out = ["# %s: %s%s:%s dim=%d" % (cid, NAME[c.dtype], shape, "masked" if masked else "plain", dim)]
    is_float = c.dtype.is_floating_point
    d = c.data(shape, c.dtype)
    m = c.mask(shape, dim) if masked else torch.ones(shape, dtype=torch.bool)
    out.append(tensor_in(P, "x0", c.hide(d, m), m, masked, is_float))
    out.append("r = \"\"")
    ins, gnames = [d], ["x0"]
    if op in ("max", "min"):
        keep = c.k % 2 == 1
        big = op == "min"
        f = lambda x: getattr(torch, op)(fill(x, m, extreme(x.dtype, big)), dim, keep)[0]
        v, i = getattr(torch, op)(fill(d, m, extreme(c.dtype, big)), dim, keep)
        om = m.any(dim, keep)
        out.append("y = %s(x0, %d%s)" % (op, dim, ", keepdim=true" if keep else ""))
        out.append("r = r + cmplen(y, 2)")
        out.append(expect(P, "values", "y[0]", v, om, masked))
        out.append(expect(P, "indices", "y[1]", i, om, masked))
        yv = "y[0]"
    elif op in ("sort", "argsort", "topk"):
        desc = c.k % 2 == 1 if op != "topk" else c.k % 3 != 1
        n = shape[dim]
        kk = int(c.rng.integers(0, n + 1)) if op == "topk" else n
        fv = extreme(c.dtype, not desc)
        if op == "topk":
            f = lambda x: torch.topk(fill(x, m, extreme(x.dtype, not desc)), kk, dim, desc)[0]
            v, i = torch.topk(fill(d, m, fv), kk, dim, desc)
        else:
            f = lambda x: torch.sort(fill(x, m, extreme(x.dtype, not desc)), dim=dim, descending=desc, stable=True)[0]
            v, i = torch.sort(fill(d, m, fv), dim=dim, descending=desc, stable=True)
        om = torch.gather(m, dim, i)
        if op == "sort":
            out.append("y = sort(x0, dim=%d, descending=%s)" % (dim, lit(desc)))
        elif op == "argsort":
            out.append("y = argsort(x0, %d, descending=%s)" % (dim, lit(desc)))
        else:
            out.append("y = topk(x0, %d, dim=%d, largest=%s)" % (kk, dim, lit(desc)))
        if op == "argsort":
            out.append(expect(P, "indices", "y", i, om, masked))
            is_float = False
        else:
            out.append("r = r + cmplen(y, 2)")
            out.append(expect(P, "values", "y[0]", v, om, masked))
            out.append(expect(P, "indices", "y[1]", i, om, masked))
            yv = "y[0]"
    elif op in ("gather", "index_select", "one_hot"):
        nd = len(shape)
        dd = dim % nd
        size = shape[dd]
        if op == "gather":
            ishape = [int(c.rng.integers(1, s + 1)) if j != dd else int(c.rng.integers(1, 5))
                      for j, s in enumerate(shape)]
        else:
            ishape = [int(c.rng.integers(1, 6))]
        idx = torch.tensor(c.rng.integers(0, size, int(np.prod(ishape))), dtype=torch.int64).reshape(ishape)
        imasked = c.k % 3 == 2
        im = (torch.tensor(c.rng.random(idx.numel()) < 0.7).reshape(ishape) if imasked
              else torch.ones(ishape, dtype=torch.bool))
        ihid = idx.clone()
        ihid[~im] = 10 ** 6  # out of range under the mask: must not be read
        out.append(tensor_in(P, "i0", ihid, im, imasked, False))
        if op == "one_hot":
            ncls = size + 1
            v = torch.nn.functional.one_hot(idx, ncls)
            om = im[..., None].expand(v.shape)
            out[1] = "x0 = none"
            out.append("y = one_hot(i0, %d)" % ncls)
            out.append(expect(P, "out", "y", v, om, imasked))
            is_float = False
        elif op == "gather":
            f = lambda x: torch.gather(x, dd, idx)
            v = f(d)
            om = torch.gather(m, dd, idx) & im
            out.append("y = gather(x0, %d, i0)" % dim)
            out.append(expect(P, "out", "y", v, om, masked or imasked))
            yv = "y"
        else:
            f = lambda x: torch.index_select(x, dd, idx)
            v = f(d)
            sh = [1] * nd
            sh[dd] = idx.numel()
            om = torch.index_select(m, dd, idx) & im.reshape(sh)
            out.append("y = index_select(x0, %d, i0)" % dim)
            out.append(expect(P, "out", "y", v, om, masked or imasked))
            yv = "y"
        masked = masked or imasked
    else:  # scatter, scatter_add
        nd = len(shape)
        dd = dim % nd
        size = shape[dd]
        ishape = [int(c.rng.integers(1, s + 1)) for s in shape]
        ishape[dd] = int(c.rng.integers(1, size + 1))
        sshape = list(ishape)  # torch 1.13's backward wants src of index's shape
        idx = torch.zeros(ishape, dtype=torch.int64)
        other = [j for j in range(nd) if j != dd]
        for pos in np.ndindex(*[ishape[j] for j in other]):
            line = (c.rng.permutation(size)[:ishape[dd]] if op == "scatter"
                    else c.rng.integers(0, size, ishape[dd]))
            sel = [slice(None)] * nd
            for j, p in zip(other, pos):
                sel[j] = p
            idx[tuple(sel)] = torch.tensor(line, dtype=torch.int64)
        s = c.data(sshape, c.dtype)
        smasked = c.k % 3 != 0
        sm = c.mask(sshape, dim) if smasked else torch.ones(sshape, dtype=torch.bool)
        out.append(tensor_in(P, "s0", c.hide(s, sm), sm, smasked, is_float))
        out.append(tensor_in(P, "i0", idx, None, False, False))
        gnames.append("s0")
        ins.append(s)
        if op == "scatter":
            f = lambda x, y: torch.scatter(x, dd, idx, y)
            v = f(d, s)
            om = torch.scatter(m, dd, idx, sm[tuple(slice(0, n) for n in ishape)])
        else:
            xf, sf = fill(d, m, 0), fill(s, sm, 0)
            f = lambda x, y: torch.scatter_add(fill(x, m, 0), dd, idx, fill(y, sm, 0))
            v = torch.scatter_add(xf, dd, idx, sf)
            om = m | (torch.scatter_add(torch.zeros(shape), dd, idx, sm.to(torch.float32)) > 0)
        out.append("y = %s(x0, %d, i0, s0)" % (op, dim))
        tol = (1e-5, 1e-6) if op == "scatter_add" else (0, 0)
        masked = masked or smasked
        out.append(expect(P, "out", "y", v, om, masked, tol))
        yv = "y"
        mins = [m, sm]
    if is_float:
        gs = grads(f, ins, om)
        out.append("g = grad(sum(%s * W(%s)), [%s])" % (yv, yv, ", ".join(gnames)))
        mins = [m] if op not in ("scatter", "scatter_add") else mins
        for j, (name, (gv, read)) in enumerate(zip(gnames, gs)):
            gm = mins[j] & read
            out.append('r = r + cmp("grad %s", g[%d], %s, 1e-05, 1e-06)'
                       % (name, j, P.add(gv.to(c.dtype), gm if masked else None)))
    out.append('report("%s", r, y)' % cid)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=16)
    ap.add_argument("--ops", default=",".join(OPS))
    a = ap.parse_args()
    for op in a.ops.split(","):
        generate(op, a.seed, a.cases)
        print("index_%s: %d cases" % (op, a.cases))


if __name__ == "__main__":
    main()
