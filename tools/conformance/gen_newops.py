#!/usr/bin/python3
"""Conformance cases of the ops issue 29 added beside torch.masked's
(kthvalue, quantile, nanquantile; diff's prepend=/append= are drawn by
gen.py's diff) and of logcumsumexp, drawn and written by gen.py's machinery (its Case, op,
draws, evaluate and files: tests/conformance/<op>.masq and .npz, their
lines of manifest.txt and ops.txt).

    /usr/bin/python3 tools/conformance/gen_newops.py [--seed N] [--cases N] [--ops a,b]

torch.masked 1.13 has none of these ops, so the reference is the plain
torch op on what masq's rule says a masked tensor means:
  * kthvalue, quantile, nanquantile: torch's op on each slice's valid
    entries (numpy.ma's reading); a slice without enough of them is masked
    out;
  * logcumsumexp: torch.logcumsumexp of the data with masked-out entries
    filled with -inf (they add nothing), the input's mask kept, as gen.py's
    cumsum.
Gradients are torch autograd's through those references; the dependency
masks come from a linear proxy with the op's dependency structure (for the
selections, the 0/1 pattern of the reference's own Jacobian).

make conformance-regen runs this after gen.py (whose full run removes the
files of ops it does not draw, these included).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402
from gen import V, Case, Skip, op, lit, draw_shape, draw_masked, draw_plain, case_dtype  # noqa: E402

NEW_OPS = ["kthvalue", "quantile", "nanquantile", "logcumsumexp"]


def rows(d, dim):
    """d with [dim] moved last and flattened to (rows, n); dim None: one row"""
    if dim is None:
        return d.reshape(1, -1)
    x = d.movedim(dim, -1) if d.dim() else d.reshape(1)
    return x.reshape(-1, x.shape[-1])


def reduced_shape(shape, dim, keepdim):
    if dim is None:
        return [1] * len(shape) if keepdim else []
    return [1 if i == dim % len(shape) else s for i, s in enumerate(shape)
            if keepdim or i != dim % len(shape)] if shape else []


def jac_proxy(ref, x):
    """a linear map with the dependency pattern of ref's output on x's data
    (the 0/1 pattern of its Jacobian at x): gen.py's proxy for selections"""
    leaf = x.d.detach().clone().requires_grad_(True)
    d = torch.where(x.m, leaf, torch.full_like(leaf, 0.5)) if x.masked else leaf
    y = ref([V(d, x.m)])[0].d
    a = torch.zeros(y.numel(), x.d.numel(), dtype=torch.float64)
    for j in range(y.numel() if y.requires_grad else 0):
        g, = torch.autograd.grad(y.reshape(-1)[j], leaf, retain_graph=True, allow_unused=True)
        if g is not None:
            a[j] = (g.reshape(-1) != 0).to(torch.float64)
    shape = y.shape
    if not x.masked:
        # a plain result's gradient is plain: 0, not masked out, where
        # nothing was read; every entry counts as a dependency
        a[a == 0] = 1e-30
    return lambda t: (a.to(t[0].dtype) @ t[0].reshape(-1)).reshape(shape)


def distinct(rng, shape, dtype):
    """data without ties (torch's quickselect and sort order ties their own way)"""
    n = int(np.prod(shape))
    if dtype == torch.int64:
        a = rng.permutation(n) - n // 2
        return torch.from_numpy(a.reshape(shape).astype(np.int64))
    a = rng.permutation(n) + rng.uniform(0.05, 0.95, n)
    a = (a - n / 2) * rng.choice([0.1, 1.0, 30.0])
    return torch.from_numpy(a.reshape(shape)).to(dtype)


def some_special(rng, x, vals):
    """one valid entry (at most) set to one of vals"""
    if x.d.dtype.is_floating_point and x.d.numel() and rng.random() < 0.4:
        flat = x.d.reshape(-1)
        ok = np.flatnonzero(x.vmask().reshape(-1).numpy())
        if len(ok):
            flat[int(rng.choice(ok))] = float(rng.choice(vals))


# ---------------------------------------------------------------- kthvalue


@op("kthvalue", "index", "torch.kthvalue of each slice's valid entries; fewer than k valid: masked out",
    "kthvalue works on masked tensors (torch.masked has none)")
def mk_kthvalue(rng, k):
    dtype = case_dtype(k, ("int", "f64"))
    shape = draw_shape(rng, k, nd=[1, 2, 3, 0, 2][k % 5])
    if 0 in shape:
        raise Skip()
    x = draw_masked(rng, k, shape, dtype, specials=False) if k % 4 else draw_plain(rng, k, shape, dtype,
                                                                                    specials=False)
    x = V(distinct(rng, shape, dtype), x.m)
    some_special(rng, x, [float("nan"), float("inf"), float("-inf")])
    nd = len(shape)
    dim = int(rng.integers(max(nd, 1))) - (max(nd, 1) if rng.random() < 0.3 else 0)
    n = shape[dim] if nd else 1
    kk = int(rng.integers(1, n + 1))
    keepdim = bool(rng.random() < 0.3)
    want = k % 2   # 0: the values (with gradients), 1: the indices

    def ref(v):
        d, m = v[0].d, v[0].vmask()
        r, rm = rows(d, dim if nd else None), rows(m, dim if nd else None)
        vals, idx, ok = [], [], []
        for i in range(r.shape[0]):
            pos = torch.nonzero(rm[i]).reshape(-1)
            if len(pos) >= kk:
                val, j = torch.kthvalue(r[i][pos], kk)
                vals.append(val)
                idx.append(pos[j])
                ok.append(True)
            else:
                vals.append(torch.zeros((), dtype=d.dtype))
                idx.append(torch.tensor(0))
                ok.append(False)
        shp = reduced_shape(shape, dim, keepdim) if nd else []
        mask = torch.tensor(ok).reshape(shp)
        y = torch.stack(vals).reshape(shp) if want == 0 else torch.stack(idx).reshape(shp)
        return [V(y, mask if v[0].masked else None)]

    call = f"kthvalue({{0}}, {kk}, {dim}{', keepdim=true' if keepdim else ''})[{want}]"
    proxy = jac_proxy(ref, x) if want == 0 and dtype.is_floating_point else None
    return Case([x], call, ref, proxy=proxy, exact=True, grad=want == 0)


# ---------------------------------------------------------------- quantile

MODES = ["linear", "lower", "higher", "midpoint", "nearest"]


def mk_quantile(nan):
    fn = torch.nanquantile if nan else torch.quantile

    def make(rng, k):
        dtype = torch.float64 if k % 4 == 3 else torch.float32
        shape = draw_shape(rng, k)
        if 0 in shape:
            raise Skip()
        x = draw_masked(rng, k, shape, dtype, specials=False) if k % 5 else draw_plain(rng, k, shape, dtype,
                                                                                        specials=False)
        x = V(distinct(rng, shape, dtype), x.m)
        if nan:
            for _ in range(int(rng.integers(0, 3))):
                some_special(rng, x, [float("nan")])
        else:
            some_special(rng, x, [float("nan"), float("inf")])
        nd = len(shape)
        dim = None if k % 3 == 0 else int(rng.integers(max(nd, 1))) - (max(nd, 1) if rng.random() < 0.3 else 0)
        keepdim = bool(rng.random() < 0.3)
        how = MODES[k % 5]
        qvec = k % 2 == 1
        qs = [float(q) for q in rng.choice([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1 / 3, 0.37], 3)]
        q = qs if qvec else qs[0]

        def ref(v):
            d, m = v[0].d, v[0].vmask()
            tdim = None if dim is None or nd == 0 else dim
            r, rm = rows(d, tdim), rows(m, tdim)
            qt = torch.tensor(q, dtype=d.dtype)
            outs, ok = [], []
            for i in range(r.shape[0]):
                sel = rm[i]
                if bool(sel.any()):
                    outs.append(fn(r[i][sel], qt, interpolation=how))
                    ok.append(True)
                else:
                    outs.append(torch.zeros(qt.shape, dtype=d.dtype))
                    ok.append(False)
            y = torch.stack(outs)                       # (rows,) or (rows, nq)
            mask = torch.tensor(ok)
            shp = reduced_shape(shape, tdim, keepdim) if nd else []
            if dim is not None and nd == 0:
                shp = []
            if qvec:
                y, mask = y.T.reshape([len(qs)] + shp), mask.expand(len(qs), -1).reshape([len(qs)] + shp)
            else:
                y, mask = y.reshape(shp), mask.reshape(shp)
            return [V(y, mask if v[0].masked else None)]

        # a literal list is float32 in masq: float64 data gets a float64 q
        args = f", {lit(q)}" if not (qvec and dtype == torch.float64) else f', tensor({lit(q)}, dtype="float64")'
        if dim is not None:
            args += f", dim={dim}"
        if keepdim:
            args += ", keepdim=true"
        if how != "linear":
            args += f', interpolation="{how}"'
        name = "nanquantile" if nan else "quantile"
        return Case([x], f"{name}({{0}}{args})", ref, proxy=jac_proxy(ref, x))
    return make


op("quantile", "reduce", "torch.quantile of each slice's valid entries (numpy.ma's); none valid: masked out",
   "quantile works on masked tensors (torch.masked has none)")(mk_quantile(False))
op("nanquantile", "reduce", "torch.nanquantile of each slice's valid entries; none valid: masked out",
   "nanquantile works on masked tensors (torch.masked has none)")(mk_quantile(True))


# ---------------------------------------------------------------- logcumsumexp


@op("logcumsumexp", "along", "torch.logcumsumexp of the data with masked-out entries filled with -inf; mask kept",
    "logcumsumexp works on masked tensors; masked-out entries stay masked out")
def mk_logcumsumexp(rng, k):
    dtype = case_dtype(k, ("f64",))
    shape = draw_shape(rng, k)
    # NaN, inf and zeros, not gen.py's dense edges: where two entries of
    # 1e30 meet in float32, y = x + log 2 rounds to x and torch's gradient
    # and masq's are different rounding artifacts (neither is 0.5 each)
    sp = True if gen.dense_specials(k) else k % 3 == 0
    x = (draw_masked if k % 4 else draw_plain)(rng, k, shape, dtype, "real", specials=sp)
    nd = len(shape)
    dim = int(rng.integers(max(nd, 1)))
    if rng.random() < 0.3:
        dim -= max(nd, 1)

    def ref(v):
        d, m = v[0].d, v[0].m
        if m is None:
            return [V(torch.logcumsumexp(d, dim))]
        f = torch.where(m, d, torch.tensor(-float("inf"), dtype=d.dtype))
        return [V(torch.logcumsumexp(f, dim), m.clone())]

    def proxy(t):
        return t[0].cumsum(dim) if nd else t[0].clone()
    return Case([x], f"logcumsumexp({{0}}, {dim})", ref, proxy=proxy)


def main():
    if not any(a.startswith("--ops") for a in sys.argv[1:]):
        sys.argv += ["--ops", ",".join(NEW_OPS)]
    gen.main()


if __name__ == "__main__":
    main()
