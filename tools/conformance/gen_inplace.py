#!/usr/bin/python3
"""Conformance cases of torch's in-place spellings (x.add_(y), x.exp_(),
x.copy_(src), x[i] = v, x[i] += v, x += v ...) against torch 1.13.

Each case runs the statement sequence a torch user writes: x = x0 * 1 (a
tensor of its own, not the leaf), keep = x, then the in-place op, and
checks x's new value (data and mask), that keep and x0 still hold the old
value (masq's copy-on-write: torch's keep would see the update), and the
gradients of sum(x * W(x)) with respect to x0 and the other operand.

The reference is the torch op applied in place to a clone: on the data,
with x's mask kept for a masked x, as torch.masked's MaskedTensor does for
its in-place unary and binary ops (binary operands with equal masks, or a
plain one). x[index] = v, which MaskedTensor lacks, gives the assigned
entries v's validity (masq's rule, docs/LANGUAGE.md). Gradients are torch
autograd's of sum(y * W(y)) through the same in-place program on clones,
masked where the input is. Writes tests/conformance/inplace_<family>.masq
and .npz in the format of gen_index.py's files (check.masq's T, TP, cmp,
report, done).

    /usr/bin/python3 tools/conformance/gen_inplace.py [--seed N] [--cases N]
"""
import argparse
import operator
import os

import numpy as np
import torch

from gen import MASK_KINDS, draw_mask, draw_shape
from gen_index import NAME, OUT, Pools, weights

FAMILIES = ["binary", "unary", "fill", "setitem", "augmented"]
BINARY = [("add_", "add"), ("sub_", "sub"), ("mul_", "mul"), ("div_", "div"), ("pow_", "pow")]
# x op= v: Python's x.__iadd__(v), torch's in-place op (the name: BINARY's)
AUGMENTED = [("add_", "+", operator.iadd), ("sub_", "-", operator.isub), ("mul_", "*", operator.imul),
             ("div_", "/", operator.itruediv)]
UNARY = ["exp_", "neg_", "abs_", "sqrt_", "sigmoid_", "tanh_", "relu_", "sin_", "log1p_", "square_"]
FILL = ["copy_", "fill_", "zero_", "clamp_", "masked_fill_"]


def lit(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"%s"' % v
    return repr(v)


def reads_of(proxy, ins, want, om):
    """for each input in [want], where some valid output reads it: the
    gradient of sum(y * valid) through [proxy], the program with its op
    made linear (x0 plus the operands, or the assignment itself), is
    nonzero; the op's own gradient may vanish at a point (relu, clamp)"""
    ls = [torch.ones(t.shape, dtype=torch.float64, requires_grad=True) if w else t
          for t, w in zip(ins, want)]
    y = proxy(*ls)
    gs = torch.autograd.grad((y * om.to(torch.float64)).sum(), [t for t, w in zip(ls, want) if w],
                             allow_unused=True)
    return [g is not None and (g != 0) for g in gs]


def elementwise(x0, *o):
    """the read structure of an elementwise op: x0 and its broadcast operands"""
    y = x0.clone()
    for t in o:
        if isinstance(t, torch.Tensor):
            y = y + t
    return y


def grads_of(program, ins, want):
    """torch's gradient of sum(y * W(y)) (y = program(*ins), masked-out
    outputs weighted 0) for the inputs whose [want] is set"""
    ls = [t.to(torch.float64).requires_grad_() if w else t for t, w in zip(ins, want)]
    y, om = program(*ls)
    loss = (y * weights(y).to(y.dtype) * om.to(y.dtype)).sum()
    ws = [t for t, w in zip(ls, want) if w]
    gs = torch.autograd.grad(loss, ws, allow_unused=True)
    return [g if g is not None else torch.zeros(t.shape, dtype=torch.float64) for g, t in zip(gs, ws)]


class Case:
    def __init__(self, rng, k, family):
        self.rng, self.k, self.family = rng, k, family
        self.proxy = None  # the op's read structure, when elementwise() is not it
        self.dtype = torch.float64 if k % 5 == 3 else torch.float32
        self.masked = k % 3 != 0
        self.shape = draw_shape(rng, k, maxnumel=24, empty=False if family == "setitem" else None)
        if family == "setitem" and len(self.shape) == 0:
            self.shape = (int(rng.integers(2, 5)),)

    def data(self, shape, dtype, lo=-2.0, hi=2.0):
        n = int(np.prod(shape))
        if dtype == torch.int64:
            return torch.tensor(self.rng.integers(-6, 7, n), dtype=dtype).reshape(shape)
        return torch.tensor(self.rng.uniform(lo, hi, n), dtype=dtype).reshape(shape)

    def mask(self, shape):
        return draw_mask(self.rng, shape, MASK_KINDS[self.k % len(MASK_KINDS)])


def hide(d, m):
    """junk under the mask: it must never show"""
    d = d.clone()
    if d.dtype.is_floating_point:
        junk = torch.tensor([float("nan"), float("inf"), -1e30], dtype=d.dtype)
        d[~m] = junk[torch.arange(d.numel()) % 3].reshape(d.shape)[~m]
    else:
        d[~m] = 10 ** 6
    return d


VALID = {}  # the validity of the current case's inputs, by name


def put(P, name, d, m, masked, grad):
    VALID[name] = m if masked else torch.ones(d.shape, dtype=torch.bool)
    src = P.add(hide(d, m) if masked else d, m if masked else None)
    return "%s = %s" % (name, "requires_grad(%s)" % src if grad else src)


def expect(P, what, got, d, m, masked, tol):
    return 'r = r + cmp("%s", %s, %s, %g, %g)' % (what, got, P.add(d, m if masked else None), tol[0], tol[1])


def binary_case(c, out, P, aug=False):
    """x.add_(v) ...; with [aug], x += v ... (no keyword arguments)"""
    name, fn = BINARY[c.k % len(BINARY)]
    if aug:
        name, sym, iop = AUGMENTED[c.k % len(AUGMENTED)]
    shape, dt = c.shape, c.dtype
    if name in ("add_", "sub_", "mul_") and c.k % 7 == 4:
        dt = torch.int64
    d = c.data(shape, dt, 0.2 if name == "pow_" else -2.0)
    m = c.mask(shape) if c.masked else torch.ones(shape, dtype=torch.bool)
    kind = c.k % 4  # the other operand: same shape, trailing dims, a number, masked alike
    args, kw = [], {}
    if kind == 2 or len(shape) == 0:
        other = float(np.round(c.rng.uniform(0.5, 2.0), 2)) if dt.is_floating_point else int(c.rng.integers(1, 4))
        oexpr, odata, omasked = lit(other), other, False
    else:
        oshape = shape if kind != 1 else shape[1:]
        odata = c.data(oshape, dt, 0.5 if name in ("div_", "pow_") else -2.0)
        if name == "div_":
            odata = torch.where(odata.abs() < 0.3, odata + 1, odata)
        omasked = kind == 3 and c.masked
        out.append(put(P, "o0", odata, m if omasked else None, omasked, dt.is_floating_point))
        oexpr = "o0"
    if name in ("add_", "sub_") and c.k % 2 == 1:
        kw["alpha"] = 2 if not dt.is_floating_point else 0.5
    if name == "div_" and c.k % 3 != 0:
        kw["rounding_mode"] = ["trunc", "floor"][c.k % 2]
    if aug:
        kw = {}
    call = "x.%s(%s)" % (name, ", ".join([oexpr] + ["%s=%s" % (a, lit(v)) for a, v in kw.items()]))
    if aug:
        call = "x %s= %s" % (sym, oexpr)

    def program(x0, *o):
        x = x0.clone()
        if aug:
            x = iop(x, o[0] if o else odata)
        else:
            getattr(x, name)(o[0] if o else odata, **kw)
        return x, m
    return d, m, dt, call, program, [odata] if oexpr == "o0" else [], ["o0"] if oexpr == "o0" else []


def unary_case(c, out, P):
    name = UNARY[c.k % len(UNARY)]
    d = c.data(c.shape, c.dtype, 0.1 if name == "sqrt_" else -0.9 if name == "log1p_" else -2.0)
    m = c.mask(c.shape) if c.masked else torch.ones(c.shape, dtype=torch.bool)

    def program(x0):
        x = x0.clone()
        getattr(x, name)()
        return x, m
    return d, m, c.dtype, "x.%s()" % name, program, [], []


def fill_case(c, out, P):
    name = FILL[c.k % len(FILL)]
    shape, dt = c.shape, c.dtype
    d = c.data(shape, dt)
    m = c.mask(shape) if c.masked else torch.ones(shape, dtype=torch.bool)
    if name == "copy_":
        src = c.data(shape if c.k % 2 else shape[1:], torch.float64 if c.k % 4 == 1 else dt)
        out.append(put(P, "s0", src, None, False, True))
        call, extra, names = "x.copy_(s0)", [src], ["s0"]
        op = lambda x, s: x.copy_(s)
    elif name == "fill_":
        v = float(np.round(c.rng.uniform(-3, 3), 2))
        call, extra, names, op = "x.fill_(%s)" % lit(v), [], [], lambda x: x.fill_(v)
    elif name == "zero_":
        call, extra, names, op = "x.zero_()", [], [], lambda x: x.zero_()
    elif name == "clamp_":
        lo, hi = sorted(np.round(c.rng.uniform(-1.5, 1.5, 2), 2).tolist())
        call, extra, names, op = "x.clamp_(%s, %s)" % (lit(lo), lit(hi)), [], [], lambda x: x.clamp_(lo, hi)
    else:
        fm = torch.tensor(c.rng.random(int(np.prod(shape))) < 0.5).reshape(shape)
        v = float(np.round(c.rng.uniform(-3, 3), 2))
        out.append(put(P, "f0", fm, None, False, False))
        call, extra, names, op = "x.masked_fill_(f0, %s)" % lit(v), [], [], lambda x: x.masked_fill_(fm, v)
        c.proxy = lambda x0: x0 * ~fm  # the filled entries read nothing
    # masq's masked_fill: the filled entries become valid
    om = m | fm if name == "masked_fill_" else m

    def program(x0, *rest):
        x = x0.clone()
        op(x, *rest)
        return x, om
    return d, m, dt, call, program, extra, names


def setitem_case(c, out, P):
    shape, dt = c.shape, c.dtype
    d = c.data(shape, dt)
    m0 = c.mask(shape) if c.masked else torch.ones(shape, dtype=torch.bool)
    form = c.k % 5
    n0 = shape[0]
    if form == 0:
        i = int(c.rng.integers(-n0, n0))
        index, text = (i,), "%d" % i
    elif form == 1:
        a = int(c.rng.integers(0, n0))
        index, text = (slice(a, None),), "%d:" % a
    elif form == 2:
        index, text = (Ellipsis, 0), "..., 0"
    elif form == 3:
        bm = torch.tensor(c.rng.random(int(np.prod(shape))) < 0.5).reshape(shape)
        out.append(put(P, "b0", bm, None, False, False))
        index, text = (bm,), "b0"
    else:
        ix = torch.tensor(c.rng.permutation(n0)[:max(1, n0 - 1)], dtype=torch.int64)
        out.append(put(P, "i0", ix, None, False, False))
        index, text = (ix,), "i0"
    ishape = d[index].shape
    aug = c.k % 2 == 1
    vshape = ishape if c.k % 3 else ishape[1:]
    v = c.data(vshape, dt)
    vmasked = c.masked and c.k % 4 == 2 and not aug
    vm = c.mask(vshape) if vmasked else torch.ones(vshape, dtype=torch.bool)
    out.append(put(P, "v0", v, vm, vmasked, True))
    call = "x[%s] %s= v0" % (text, "+" if aug else "")
    m = m0.clone()
    if aug:
        m[index] = m0[index] & vm.expand(ishape)
    else:
        m[index] = vm.expand(ishape)

    def program(x0, v):
        x = x0.clone()
        if aug:
            x[index] += v
        else:
            x[index] = v
        return x, m
    return d, m0, dt, call, program, [v], ["v0"]


def case_lines(c, P, cid):
    out = []
    made = {"binary": binary_case, "unary": unary_case, "fill": fill_case,
            "setitem": setitem_case,
            "augmented": lambda c, out, P: binary_case(c, out, P, aug=True)}[c.family](c, out, P)
    d, m0, dt, call, program, extra, names = made
    is_float = dt.is_floating_point
    head = ["# %s: %s%s:%s %s" % (cid, NAME[dt], list(c.shape), "masked" if c.masked else "plain", call)]
    head.append(put(P, "x0", d, m0, c.masked, is_float))
    y, m = program(d, *extra)
    out = head + out
    out += ["x = x0 * 1" if is_float else "x = x0", "keep = x", call, "r = \"\""]
    tol = (1e-5, 1e-6) if is_float else (0, 0)
    out.append(expect(P, "x", "x", y.detach(), m, c.masked, tol))
    out.append(expect(P, "keep", "keep", d, m0, c.masked, (0, 0)))
    # x.fill_(v), x.zero_(), x.copy_(src): the new x does not depend on x0
    # (masq's grad refuses an input the result does not depend on)
    overwrites = any(s in call for s in (".fill_(", ".zero_(", ".copy_("))
    want = [is_float and not overwrites] + [isinstance(t, torch.Tensor) and t.dtype.is_floating_point
                                           for t in extra]
    if any(want):
        gs = grads_of(program, [d] + list(extra), want)
        proxy = c.proxy or (lambda *a: program(*a)[0] if c.family == "setitem" else elementwise(*a))
        reads = reads_of(proxy, [d] + list(extra), want, m)
        ins = [t for t, w in zip(["x0"] + names, want) if w]
        out.append("g = grad(sum(x * W(x)), [%s])" % ", ".join(ins))
        dts = [t.dtype for t, w in zip([d] + list(extra), want) if w]
        for j, (name, g, read, gdt) in enumerate(zip(ins, gs, reads, dts)):
            # a gradient is valid where its input is and a valid output read it
            gm = (m0 if name == "x0" else VALID.get(name, torch.ones(g.shape, dtype=torch.bool))) & read
            out.append('r = r + cmp("grad %s", g[%d], %s, 1e-05, 1e-06)'
                       % (name, j, P.add(g.to(gdt), gm if c.masked else None)))
    out.append('report("%s", r, x)' % cid)
    return out


def generate(family, seed, ncases):
    rng = np.random.default_rng([seed, sum(ord(ch) * 31 ** i for i, ch in enumerate(family)) % 2 ** 32])
    pools = Pools()
    lines = ["# inplace_%s: %d cases drawn by tools/conformance/gen_inplace.py --seed %d; do not edit by hand."
             % (family, ncases, seed),
             "# reference: torch's in-place op on a clone (MaskedTensor's: x's mask kept); "
             "x0 and a name bound before the update keep the old value",
             "# cases: %d" % ncases, 'import "check.masq"', 'F = "inplace_%s.npz"' % family]
    body = []
    for k in range(ncases):
        body += case_lines(Case(rng, k, family), pools, "inplace_%s#%d" % (family, k))
    lines += ['%s = load(F, "%s")' % (key.upper(), key) for key in pools.parts if pools.parts[key]]
    lines += body
    lines.append('done("inplace_%s", %d)' % (family, ncases))
    with open(os.path.join(OUT, "inplace_%s.masq" % family), "w") as f:
        f.write("\n".join(lines) + "\n")
    pools.save(os.path.join(OUT, "inplace_%s.npz" % family))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=24)
    ap.add_argument("--families", default=",".join(FAMILIES))
    a = ap.parse_args()
    for fam in a.families.split(","):
        generate(fam, a.seed, a.cases)
        print("inplace_%s: %d cases" % (fam, a.cases))


if __name__ == "__main__":
    main()
