#!/usr/bin/python3
"""PyTorch's own tests for torch.masked, ported case by case to masq.

    /usr/bin/python3 tools/conformance/gen_upstream.py [--out DIR] [--ops a,b]
    /usr/bin/python3 tools/conformance/gen_upstream.py --classify build/masq [--write FILE]

(needs torch 1.13 and numpy). Writes tests/conformance/upstream/<group>.masq
and .npz, one case per input that the upstream tests feed torch:

  * every masked OpInfo of 1.13's op_db (torch.testing._internal.opinfo.
    definitions._masked: masked.sum ... masked.logsumexp): its strided sample
    inputs (test_masked.py's test_reference_masked, and test_mask_layout
    with layout=strided) and its sparse COO and CSR ones, each with the mask
    in every layout test_mask_layout's `mask_layouts` generator gives it,
    in every dtype the op takes but the complex ones (the storage dtypes
    int8 ... bfloat16 pooled in int64 or float32 and converted with to());
  * test_maskedtensor.py's TestOperators (unary and binary ufuncs and the
    reductions on MaskedTensors, strided / COO / CSR), TestUnary and
    TestBinary (each native function and its in-place form on a random
    10x10 masked tensor) and TestBasics' random cases (softmax, the layout
    conversions); its fixed examples are the golden scripts
    tests/lang/upstream_*.masq.

Each case records torch 1.13's answer: values, output mask (torch.masked.
_output_mask) and layout, and for strided float inputs of a differentiable
op the gradient of sum(y * W(y)) the way gen.py records it. A case that masq
refuses today is written like any other: known_failures.txt lists it (run
--classify to rewrite that list from a masq build), and the scripts print
"xfail" for a listed case that still fails as listed, and FAIL for one that
passes or that was refused and now answers wrongly.
--classify runs every case with the given masq ignoring the list and counts
the failures by cause; --write FILE writes them as a new list.
Left out entirely: complex dtypes, hybrid sparse tensors (dense dims),
private helpers (torch.masked._where ...); the counts go to manifest.txt.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import types
import unittest
import warnings
from functools import partial

warnings.filterwarnings("ignore")

# torch's testing internals import expecttest (a PyPI package Debian does not
# ship); of it they only need these two names at import time
try:
    import expecttest  # noqa: F401
except ImportError:
    _stub = types.ModuleType("expecttest")
    _stub.TestCase = unittest.TestCase
    _stub.ACCEPT = False
    sys.modules["expecttest"] = _stub

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen as G  # noqa: E402  (V, lit, Pools, tolerance, weights ...)
import torch  # noqa: E402
from torch.masked import _ops as MO  # noqa: E402

ROOT = G.ROOT
OUT = os.path.join(ROOT, "tests", "conformance", "upstream")
V = G.V
LAYOUT = {torch.strided: "strided", torch.sparse_coo: "sparse_coo", torch.sparse_csr: "sparse_csr"}
DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
          torch.float16, torch.bfloat16]
# masq's storage dtypes, which have no pool: pooled in int64 or float32 and
# converted with to(); a result's dtype is checked, then its values compared
# in the pool's dtype
NARROW = {torch.int32: ("int32", torch.int64), torch.int16: ("int16", torch.int64), torch.int8: ("int8", torch.int64),
          torch.uint8: ("uint8", torch.int64), torch.float16: ("float16", torch.float32),
          torch.bfloat16: ("bfloat16", torch.float32)}
# half-precision results: 2 units in the last place (torch's own tests allow
# 5e-3 for both in test_mask_layout)
HALF_RTOL = {torch.float16: 2 * 2.0 ** -10, torch.bfloat16: 2 * 2.0 ** -7}


def pooled(pools, t):
    return pooled_masked(pools, t, None)


def pooled_masked(pools, t, mask):
    """a strided tensor (masked when mask is given) from the pools"""
    if t.dtype in NARROW:
        name, wide = NARROW[t.dtype]
        return 'to(%s, "%s")' % (pools.add(V(t.detach().to(wide), mask)), name)
    return pools.add(V(t.detach().clone(), mask))


def widened(case, d, valid, exact, y64=None):
    """a storage-dtype result d in its pool's dtype, and its tolerance; the
    case checks the dtype (case.want_dtype). A half result gets 2 units in
    the last place, plus 4 times how far torch's half result is from the
    same computation in float64 (torch rounds its intermediates to half:
    log_softmax of bfloat16 is off by many units near 0; masq rounds once)"""
    if d.dtype not in NARROW:
        return d, None
    name, wide = NARROW[d.dtype]
    if case.binds and re.match(r"(masked\()?sparse_c", case.binds[0][1]):
        # masq rule (docs/DIFFERENCES.md): sparse tensors hold their values
        # in a compute dtype (int64, float32), and so do their results
        case.desc += "; masq rule: sparse values in %s" % str(wide)[6:]
    else:
        case.want_dtype = name
    tol = (0.0, 0.0)
    if d.dtype in HALF_RTOL and y64 is not None:
        # masq computes half in float32 and rounds once (docs/DIFFERENCES.md):
        # where torch's half result is NaN but the computation is not
        # (normalize's eps=1e-12 rounds to 0 in float16: 0 / 0), the answer
        # is the float64 one rounded
        bad = valid & torch.isnan(d) & ~torch.isnan(y64)
        if bool(bad.any()):
            d = torch.where(bad, y64.to(d.dtype), d)
            case.desc += "; masq rule: half computed in float32 (torch's float16 result is NaN here)"
    if d.dtype in HALF_RTOL and not exact:
        rtol = HALF_RTOL[d.dtype]
        w = d.to(wide)
        ok = valid & torch.isfinite(w)
        dev = 0.0
        if y64 is not None and bool(ok.any()):
            a, b = w.double(), y64.double()
            ok = ok & torch.isfinite(b)
            if bool(ok.any()):
                dev = max(0.0, float(((a - b).abs() - rtol * b.abs())[ok].max()))
        tol = (rtol, 1e-5 + 4 * dev)
    return d.to(wide), tol


EXACT = {"amax", "amin", "argmax", "argmin", "median"}
REFERENCE_TESTED = {"norm", "var", "std", "softmax", "log_softmax", "softmin", "normalize"}

LEFT_OUT = {}   # reason -> count


def leave_out(why, n=1):
    LEFT_OUT[why] = LEFT_OUT.get(why, 0) + n


class Refused(Exception):
    """not a case: torch itself raises on the input, or it is left out
    (complex, hybrid sparse)"""


# ------------------------------------------------------------ one case


class Case:
    """one upstream input: bindings (masq variable = expression), the call,
    torch's answer, gradients"""

    def __init__(self, origin):
        self.cid = None               # "<group>#<n>", given by write_group
        self.origin = origin          # the upstream test it comes from
        self.binds = []               # (name, expression)
        self.pre = []                 # statements before y = ... (in-place forms)
        self.call = None              # masq expression for y
        self.want = None              # (torch's layout, its result from the pools)
        self.want_dtype = None        # a storage dtype the result must have
        self.tol = (0.0, 0.0)
        self.fd = False               # the gradient is a central difference
        self.grads = []               # (leaf name, V, (rtol, atol)[, layout])
        self.loss = "sum(y * W(y))"   # what the gradients are of
        self.desc = ""


def tensor_expr(pools, t):
    """a torch tensor (any layout) as a masq expression built from the pools"""
    if t.is_complex():
        raise Refused("complex-dtype samples")
    if t.layout == torch.strided:
        return pooled(pools, t)
    if t.layout == torch.sparse_coo:
        if t.dense_dim() > 0:
            raise Refused("hybrid sparse samples")
        i = pools.add(V(t._indices().clone()))
        v = pooled(pools, t._values())
        return f"sparse_coo({i}, {v}, {G.lit(list(t.shape))})"
    if t.layout == torch.sparse_csr:
        if t.dim() != 2:
            raise Refused("batched CSR samples")
        c = pools.add(V(t.crow_indices().to(torch.int64).clone()))
        k = pools.add(V(t.col_indices().to(torch.int64).clone()))
        v = pooled(pools, t.values())
        return f"sparse_csr({c}, {k}, {v}, {G.lit(list(t.shape))})"
    raise Refused("layout %s" % t.layout)


def dense(t):
    return t.to_dense() if t.layout != torch.strided else t


def value_lit(v):
    if isinstance(v, torch.dtype):
        return '"%s"' % str(v).replace("torch.", "")
    if isinstance(v, tuple):
        return G.lit(list(v))
    return G.lit(v)


def describe_t(t):
    if t is None:
        return "none"
    return "%s%s%s" % (LAYOUT.get(t.layout, str(t.layout)), str(t.dtype).replace("torch.", ""), list(t.shape))


def grad_ref(fn, x, outmask, gmask):
    """d sum(where(outmask, y * W, 0)) / dx through torch (None: no gradient)"""
    leaf = x.detach().clone().requires_grad_(True)
    try:
        y = fn(leaf)
        if not y.requires_grad or not G.is_float(y):
            return None
        w = G.weights(y.shape, y.dtype)
        sel = outmask if outmask is not None else torch.ones(y.shape, dtype=torch.bool)
        if not bool(torch.isfinite(y.detach())[sel].all()):
            return None   # a valid inf or NaN: the gradient there is a convention
        loss = torch.where(sel, y * w, torch.zeros((), dtype=y.dtype)).sum()
        (g,) = torch.autograd.grad(loss, [leaf], allow_unused=True)
    except RuntimeError:
        return None
    if g is None:
        g = torch.zeros_like(leaf)
    return V(g.detach(), gmask)


def fd_grad(fn, x, outmask, gmask, h=1e-6):
    """d sum(where(outmask, y * W, 0)) / dx by float64 central differences"""
    x64 = x.detach().double()

    def loss(t):
        y = fn(t).double()
        w = G.weights(y.shape, torch.float64)
        sel = outmask if outmask is not None else torch.ones(y.shape, dtype=torch.bool)
        return float(torch.where(sel, y * w, torch.zeros((), dtype=torch.float64)).sum())
    g = torch.zeros_like(x64).reshape(-1)
    flat = x64.reshape(-1)
    for i in range(flat.numel()):
        if gmask is not None and not bool(gmask.reshape(-1)[i]):
            continue
        a, b = flat.clone(), flat.clone()
        a[i] += h
        b[i] -= h
        g[i] = (loss(a.reshape(x64.shape)) - loss(b.reshape(x64.shape))) / (2 * h)
    return V(g.reshape(x64.shape).to(x.dtype), gmask)


def finish(case, pools, out, outmask, out64, exact, grad=None, grad64=None, gname="x0"):
    """record torch's answer (out: a tensor of any layout) and the gradient"""
    d = dense(out).detach()
    valid = outmask if outmask is not None else torch.ones(d.shape, dtype=torch.bool)
    y64 = dense(out64).detach() if out64 is not None and out64.shape == out.shape else None
    d, wtol = widened(case, d, valid, exact, y64)
    if d.dtype not in G.DT:
        raise Refused("result dtype %s" % d.dtype)
    want = V(d.clone(), outmask.clone() if outmask is not None else None)
    case.tol = wtol or G.tolerance(d, y64, valid, d.dtype, exact)
    case.want = (LAYOUT[out.layout], pools.add(want))
    if grad is not None:
        gtol = G.tolerance(grad.d, grad64.d if grad64 is not None else None, grad.vmask(), grad.d.dtype, False)
        if case.fd:   # a central difference: good to about 1e-8
            gtol = (1e-5, 1e-6)
        case.grads.append((gname, pools.add(grad), gtol))


# ------------------------------------------------ test_masked.py (OpInfos)


def masked_opinfos():
    from torch.testing._internal.common_methods_invocations import op_db
    return [o for o in op_db if o.name.startswith("masked.")]


def mask_layout_samples(op, dtype):
    """(origin, SampleInput): test_mask_layout's mask_layouts generator for
    every layout, the strided samples once (test_reference_masked too)"""
    from torch.testing._internal.opinfo.core import SampleInput
    short = op.name.split(".", 1)[1]
    lays = [(torch.strided, op.sample_inputs, True),
            (torch.sparse_coo, getattr(op, "sample_inputs_sparse_coo", None), op.supports_sparse),
            (torch.sparse_csr, getattr(op, "sample_inputs_sparse_csr", None), op.supports_sparse_csr)]
    sparse_op = op.supports_sparse or op.supports_sparse_csr
    for layout, fn, ok in lays:
        if not ok:
            continue
        tests = []
        if layout == torch.strided and short in REFERENCE_TESTED:
            tests.append("test_masked.py test_reference_masked")
        if sparse_op:
            tests.append("test_masked.py test_mask_layout[%s]" % LAYOUT[layout])
        if not tests:
            tests.append("OpInfo %s sample_inputs (test_ops)" % op.name)
        origin = ", ".join(tests)
        torch.manual_seed(0)
        for s in fn("cpu", dtype):
            mask = s.kwargs.get("mask")
            if mask is None or not sparse_op:
                yield origin, s
                continue
            if s.input.layout == layout:
                yield origin, s
            variants = []
            if layout != torch.strided:
                variants.append(mask.to_dense())
            if layout != torch.sparse_coo and op.supports_sparse:
                variants.append(mask.to_sparse())
            if layout != torch.sparse_csr and op.supports_sparse_csr and s.input.ndim == 2:
                variants.append(mask.to_sparse_csr())
            for m in variants:
                kw = dict(s.kwargs)
                kw["mask"] = m
                yield origin, SampleInput(s.input.clone(), args=s.args, kwargs=kw)


def to_strided(v):
    if isinstance(v, torch.Tensor):
        return dense(v)
    if isinstance(v, tuple):
        return tuple(to_strided(x) for x in v)
    if isinstance(v, dict):
        return {k: to_strided(x) for k, x in v.items()}
    return v


def opinfo_case(pools, op, short, dtype, origin, s):
    inp, args, kw = s.input, tuple(s.args), dict(s.kwargs)
    if inp.is_complex() or any(isinstance(a, torch.Tensor) and a.is_complex() for a in args):
        raise Refused("complex-dtype samples")
    case = Case(origin)
    case.binds.append(("x0", tensor_expr(pools, inp)))
    parts = ["x0"]
    for j, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            nm = "x%d" % (j + 1)
            case.binds.append((nm, tensor_expr(pools, a)))
            parts.append(nm)
        else:
            parts.append(value_lit(a))
    for k, v in kw.items():
        if isinstance(v, torch.Tensor):
            nm = {"mask": "m0", "input_mask": "m0", "other_mask": "m1"}.get(k, k)
            case.binds.append((nm, tensor_expr(pools, v)))
            parts.append(f"{k}={nm}")
        elif v is None:
            continue
        else:
            parts.append(f"{k}={value_lit(v)}")
    case.call = f"{short}({', '.join(parts)})"
    case.desc = "%s: input %s, mask %s, args %s, kwargs %s" % (
        str(dtype).replace("torch.", ""), describe_t(inp), describe_t(kw.get("mask")),
        [describe_t(a) if isinstance(a, torch.Tensor) else a for a in args],
        {k: v for k, v in kw.items() if not isinstance(v, torch.Tensor) and v is not None})
    try:
        try:
            out = op.op(inp, *args, **kw)
        except RuntimeError:
            # torch 1.13 has no int (or bool) kernel for some of these
            # ("_segment_reduce_cpu" not implemented for 'Long', mean():
            # could not infer output dtype); masq answers: amax and amin in
            # the input's dtype, mean in float32 (docs/DIFFERENCES.md), so
            # the reference is torch's op on the input converted
            if dtype.is_floating_point or short not in ("amax", "amin", "mean") \
                    or kw.get("dtype") is not None:
                raise
            if short == "mean":
                out = op.op(inp.to(torch.float32), *args, **kw)
            else:
                out = op.op(inp.to(torch.float64), *args, **kw).to(dtype)
            case.desc += "; masq answers where torch 1.13 has no %s kernel" % str(dtype).replace("torch.", "")
        r_inp, r_args, r_kw = to_strided((inp, args, kw))
        # without mask= the result is plain (a sparse input's unstored
        # entries are zeros, torch.masked's _combine_input_and_mask)
        outmask = None
        if r_kw.get("mask") is not None:
            outmask = MO._output_mask(op.op, r_inp, *r_args, **r_kw)
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError) as e:
        raise Refused("samples torch 1.13 itself raises on (%s)" % type(e).__name__) from e
    if short in ("argmax", "argmin"):
        # masq rules (docs/DIFFERENCES.md): indices are int64, and never of
        # a masked-out entry (torch.masked's fill can tie with a valid one)
        out = out.to(torch.int64)
        if r_kw.get("mask") is not None:
            dim = r_kw.get("dim", r_args[0] if r_args else None)
            out = G.arg_ext(r_inp, MO._input_mask(r_inp, mask=r_kw["mask"]), G.canon(dim, r_inp.dim()),
                            bool(r_kw.get("keepdim", False)), short == "argmax")
            case.desc += "; masq rule: argmax/argmin never pick a masked-out entry"
    if short == "logsumexp" and not inp.dtype.is_floating_point and kw.get("dtype") is None:
        # masq rule (docs/DIFFERENCES.md): float32, as torch.logsumexp;
        # torch.masked.logsumexp converts back to the int dtype (truncates),
        # and fills masked-out ints with the dtype's least value (0 for
        # uint8), which then counts as exp(0)
        out = op.op(inp.to(torch.float32), *args, **kw)
        case.desc += "; masq rule: logsumexp of ints is float32"
    if short == "mean" and inp.layout == torch.sparse_csr and not inp.dtype.is_floating_point \
            and inp.dtype != torch.bool and kw.get("dtype") is None:
        # masq rule (docs/DIFFERENCES.md): the mean of ints is float32, as
        # torch.masked.mean's of a strided tensor; of a CSR one torch
        # truncates it to the int dtype
        out = op.op(inp.to(torch.float32), *args, **kw)
        case.desc += "; masq rule: mean of ints is float32"
    if short == "mean" and inp.dtype == torch.bool:
        # masq rule (docs/DIFFERENCES.md): the fraction of valid true entries;
        # torch 1.13's masked.mean sums a bool input in bool (True + True is
        # True), so it gives 1 / count
        out = op.op(inp.to(torch.float32), *args, **kw)
        case.desc += "; masq rule: mean of bool counts the true entries"
    if short == "logaddexp" and (kw.get("input_mask") is not None or kw.get("other_mask") is not None):
        # masq rule (docs/DIFFERENCES.md): a masked result, masked out where
        # both operands are
        def canon_mask(m, t):
            return torch.ones(t.shape, dtype=torch.bool) if m is None else MO._input_mask(t, mask=m)
        outmask = canon_mask(r_kw.get("input_mask"), r_inp) | canon_mask(r_kw.get("other_mask"), r_args[0])
    if short == "sum" and inp.layout != torch.strided and kw.get("mask") is None \
            and not args and kw.get("dim") is None and out.layout != torch.strided:
        # masq rule (docs/DIFFERENCES.md): sum(s) of a plain sparse tensor
        # without a dim is a strided 0-d tensor (a number for item and
        # backward); torch.masked.sum gives a 0-d sparse_coo one
        out = out.to_dense()
        case.desc += "; masq rule: a whole sum of a plain sparse tensor is strided"
    out64 = None
    if dtype in (torch.float32, torch.float16, torch.bfloat16) and short not in EXACT:
        try:
            kw64 = dict(kw, dtype=torch.float64) if kw.get("dtype") is not None else kw
            out64 = op.op(inp.double() if inp.layout == torch.strided else inp.to(torch.float64),
                          *[a.double() if isinstance(a, torch.Tensor) and a.dtype.is_floating_point else a
                            for a in args], **kw64)
        except Exception:   # noqa: BLE001 -- no float64 twin: no allowance
            out64 = None
    grad = grad64 = None
    if (op.supports_autograd and inp.layout == torch.strided and G.is_float(inp) and short not in ("argmax", "argmin")
            and not any(isinstance(a, torch.Tensor) for a in args)):
        gm = None
        if r_kw.get("mask") is not None:
            gm = MO._input_mask(r_inp, mask=r_kw["mask"]).clone()

        def f(x, r_args=r_args, r_kw=r_kw):
            return op.op(x, *r_args, **r_kw)
        grad = grad_ref(f, inp, outmask, gm)
        if grad is not None and dtype == torch.float32:
            grad64 = grad_ref(f, inp.double(), outmask, gm)
        yv = dense(out).detach()[outmask] if outmask is not None else dense(out).detach()
        if (grad is not None and not bool(torch.isfinite(grad.d)[grad.vmask()].all())
                and bool((yv != 0).all())):   # (at 0, std's NaN derivative is the answer)
            # torch 1.13's backward gives NaN at valid entries of a finite
            # output (masked.var/std over several dims): the derivative is
            # then the float64 central difference
            grad = fd_grad(f, inp, outmask, gm)
            grad64 = None
            case.fd = True
            case.desc += "; torch's gradient is NaN here (a torch 1.13 bug): the expected one is a finite difference"
        if grad is not None:
            case.binds[0] = ("x0", "requires_grad(%s)" % case.binds[0][1])
    finish(case, pools, out, outmask, out64, short in EXACT, grad, grad64)
    return case


def opinfo_groups(want):
    for op in masked_opinfos():
        short = op.name.split(".", 1)[1]
        if want and short not in want:
            continue
        dts = [d for d in DTYPES if d in op.supported_dtypes("cpu")]
        for d in sorted(op.supported_dtypes("cpu"), key=str):
            if d.is_complex:
                leave_out("complex-dtype samples", sum(1 for _ in mask_layout_samples(op, d)))
            elif d not in DTYPES:
                leave_out("samples of the other dtypes (%s; not drawn)" % str(d)[6:],
                          sum(1 for _ in mask_layout_samples(op, d)))

        def cases(pools, op=op, short=short, dts=dts):
            for dtype in dts:
                for origin, s in mask_layout_samples(op, dtype):
                    yield partial(opinfo_case, pools, op, short, dtype, origin, s)
        yield short, "1.13 op_db OpInfo %s: op.op(input, *args, **kwargs); mask: torch.masked._output_mask" % op.name, cases


# ------------------------------------------------------------- output


HEAD = """# {group}: {n} cases ported from PyTorch's tests for torch.masked by
# tools/conformance/gen_upstream.py; do not edit by hand.
# reference: {source}
# cases: {n}
import "check.masq"
F = "{group}.npz"
"""


def emit(case):
    lines = [f"# {case.cid}: {case.origin}; {case.desc}", "try {"]
    for nm, ex in case.binds:
        lines.append(f"{nm} = {ex}")
    lines += case.pre
    lines.append(f"y = {case.call}")
    lay, want = case.want
    rtol, atol = case.tol
    if case.want_dtype:
        wide = "float" if case.want_dtype in ("float16", "bfloat16") else "long"
        lines.append(f'r = cmpdt(y, "{case.want_dtype}") + cmpl({wide}(y), "{lay}", {want}, '
                     f'{G.fmt_tol(rtol)}, {G.fmt_tol(atol)})')
    else:
        lines.append(f'r = cmpl(y, "{lay}", {want}, {G.fmt_tol(rtol)}, {G.fmt_tol(atol)})')
    if case.grads:
        # in a try of its own, so that a refused gradient is told apart from
        # a refused forward
        lines.append("try {")
        lines.append("g = grad(%s, [%s])" % (case.loss, ", ".join(g[0] for g in case.grads)))
        for j, (nm, gv, (gr, ga), *lay) in enumerate(case.grads):
            if lay:   # a sparse gradient: its layout, then its values densified
                lines.append(f'r = r + cmpg("grad {nm}", g[{j}], "{lay[0]}", {gv}, {G.fmt_tol(gr)}, {G.fmt_tol(ga)})')
            else:
                lines.append(f'r = r + cmp("grad {nm}", g[{j}], {gv}, {G.fmt_tol(gr)}, {G.fmt_tol(ga)})')
        lines.append('} catch e { r = r + "grad: error: " + e.message + "; " }')
    lines.append(f'verdict("{case.cid}", r, y)')
    lines.append(f'}} catch e {{ refused("{case.cid}", e) }}')
    return lines


def write_group(outdir, group, source, cases):
    """cases(pools) yields Cases, or thunks that make one or raise Refused"""
    pools = G.Pools()
    body = []
    n = 0
    for make in cases(pools):
        try:
            case = make() if callable(make) else make
        except Refused as e:
            leave_out(str(e))
            if os.environ.get("CONF_DEBUG"):
                print(f"  {group}: {e} [{e.__cause__}]", file=sys.stderr)
            continue
        case.cid = f"{group}#{n}"
        body += emit(case)
        n += 1
    keys = pools.save(os.path.join(outdir, group + ".npz"))
    head = HEAD.format(group=group, n=n, source=source).split("\n")[:-1]
    head += [f'{k.upper()} = load(F, "{k}")' for k in keys]
    with open(os.path.join(outdir, group + ".masq"), "w") as f:
        f.write("\n".join(head + body + [f'done("{group}", {n})']) + "\n")
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--ops", default="", help="comma-separated groups (default: all)")
    ap.add_argument("--classify", metavar="MASQ", help="run the cases with MASQ and count what fails, by cause")
    ap.add_argument("--write", metavar="FILE", help="with --classify: write the list of known failures to FILE "
                    "(the committed one is tests/conformance/upstream/known_failures.txt)")
    a = ap.parse_args()
    if a.classify:
        return classify(a.classify, a.out, a.write)
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    want = set(a.ops.split(",")) if a.ops else None
    counts = []
    total = 0
    for group, source, cases in groups(want):
        n = write_group(a.out, group, source, cases)
        counts.append((group, n))
        total += n
        print(f"{group:24s} {n:5d} cases")
    print(f"{'total':24s} {total:5d} cases")
    if want:
        return
    with open(os.path.join(a.out, "manifest.txt"), "w") as f:
        f.write("# Generated by tools/conformance/gen_upstream.py with torch %s; do not edit.\n" % torch.__version__)
        f.write("# Each case's upstream test and inputs are in the comment above it in its script.\n")
        for group, n in counts:
            f.write("%s\t%d cases\n" % (group, n))
        f.write("total\t%d cases\n" % total)
        for why, c in sorted(LEFT_OUT.items()):
            f.write("left out\t%d %s\n" % (c, why))


def groups(want):
    # test_masked.py's test_where: torch.masked._where, a private helper
    # (coo, hybrid_coo, csr x fill 0, 123)
    leave_out("test_masked.py test_where cases (torch.masked._where, a private helper; 2 of them hybrid COO)", 6)
    yield from opinfo_groups(want)
    for g in MT_GROUPS:
        if not want or g[0] in want:
            yield g


# ------------------------------------------ test_maskedtensor.py (random)

MT = "test_maskedtensor.py "
MT_FLOATS = [torch.float16, torch.float32, torch.float64]   # MASKEDTENSOR_FLOAT_TYPES


LAYOUTS = (torch.strided, torch.sparse_coo, torch.sparse_csr)


def each_op(ops, keep, layouts):
    """(op, dtype, layout) for the OpInfos TestOperators runs, the global
    seed set as the test's (per op, dtype and layout)"""
    for op in ops:
        if not keep(op):
            continue
        for dtype in MT_FLOATS:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            for layout in layouts:
                torch.manual_seed(0)
                yield op, dtype, layout


def mt_expr(pools, data, mask):
    """masked_tensor(data, mask) of any layout as a masq expression"""
    if data.layout == torch.strided:
        return pooled_masked(pools, data, mask.clone())
    return f"masked({tensor_expr(pools, data)}, {tensor_expr(pools, mask)})"


def random_mask(shape):
    """test_maskedtensor.py's _create_random_mask"""
    from torch.testing import make_tensor
    return make_tensor(shape, device="cpu", dtype=torch.bool)


def to_layout(data, mask, layout):
    """(data.sparse_mask(mask), mask) in layout, as the upstream tests make them"""
    if layout == torch.sparse_coo:
        mask = mask.to_sparse_coo().coalesce()
        return data.detach().sparse_mask(mask), mask
    if layout == torch.sparse_csr:
        mask = mask.to_sparse_csr()
        return data.detach().sparse_mask(mask), mask
    return data, mask


def args_text(pools, args, kwargs):
    parts = []
    for a in args:
        parts.append(tensor_expr(pools, a) if isinstance(a, torch.Tensor) else value_lit(a))
    for k, v in kwargs.items():
        parts.append(f"{k}={tensor_expr(pools, v) if isinstance(v, torch.Tensor) else value_lit(v)}")
    return "".join(", " + p for p in parts)


def plain_want(case, pools, t_result, mask, layout=torch.strided, exact=False):
    """the upstream comparison _compare_mt_t: torch's plain result at the
    result's mask (the input mask for unary and binary ops)"""
    d, wtol = widened(case, t_result.detach(), dense(mask).expand(t_result.shape), exact)
    if d.dtype not in G.DT:
        raise Refused("result dtype %s" % d.dtype)
    case.tol = wtol or G.tolerance(d, None, dense(mask), d.dtype, exact)
    case.want = (LAYOUT[layout], pools.add(V(d.clone(), dense(mask).clone())))


def operators_unary(pools):
    """TestOperators.test_unary_core: every unary ufunc OpInfo MaskedTensor
    has, its sample inputs under a random mask (strided: the test passes no
    layout on)"""
    from torch.testing._internal.common_methods_invocations import unary_ufuncs
    from torch.masked.maskedtensor.unary import UNARY_NAMES

    def make(op, dtype, s):
        kw = dict(s.kwargs)
        mask = random_mask(s.input.shape) if "mask" not in kw else kw.pop("mask")
        case = Case(MT + "TestOperators.test_unary_core[%s]" % op.name)
        case.binds.append(("x0", mt_expr(pools, s.input, mask)))
        case.call = f"{op.name}(x0{args_text(pools, s.args, kw)})"
        with torch.no_grad():
            plain_want(case, pools, op.op(s.input, *s.args, **kw), mask)
        case.desc = "%s %s, args %s, kwargs %s" % (str(dtype)[6:], list(s.input.shape), list(s.args), kw)
        return case
    for op, dtype, _ in each_op(unary_ufuncs, lambda op: op.name in UNARY_NAMES and not (
            op.name == "round" and op.variant_test_name), (torch.strided,)):
        for s in op.sample_inputs("cpu", dtype, requires_grad=True):
            yield partial(make, op, dtype, s)


def operators_binary(pools):
    """TestOperators.test_binary_core: binary ufuncs on (MaskedTensor,
    MaskedTensor) in each layout and (MaskedTensor, Tensor) strided"""
    from torch.testing._internal.common_methods_invocations import binary_ufuncs
    from torch.masked.maskedtensor.binary import BINARY_NAMES

    def make(op, dtype, layout, s, mask, data, m, other):
        case = Case(MT + "TestOperators.test_binary_core[%s, %s]%s" % (
            op.name + ("." + op.variant_test_name if op.variant_test_name else ""), LAYOUT[layout],
            "" if other is not None else " (masked, plain)"))
        case.binds.append(("x0", mt_expr(pools, data, m)))
        case.binds.append(("x1", mt_expr(pools, other, m) if other is not None else tensor_expr(pools, s.args[0])))
        case.call = f"{op.name}(x0, x1)"
        with torch.no_grad():
            plain_want(case, pools, op.op(s.input, *s.args), mask, layout)   # the test drops the kwargs
        case.desc = "%s %s" % (str(dtype)[6:], list(s.input.shape))
        return case
    for op, dtype, layout in each_op(binary_ufuncs, lambda op: op.name in BINARY_NAMES, LAYOUTS):
        for s in op.sample_inputs("cpu", dtype, requires_grad=True):
            mask = random_mask(s.input.shape) if "mask" not in s.kwargs else s.kwargs["mask"]
            if not s.args or not isinstance(s.args[0], torch.Tensor) or s.input.shape != s.args[0].shape:
                continue
            if layout == torch.sparse_csr and s.input.ndim != 2:
                continue
            data, m = to_layout(s.input, mask, layout)
            other, _ = to_layout(s.args[0], mask, layout)
            yield partial(make, op, dtype, layout, s, mask, data, m, other)
            if layout == torch.strided:
                yield partial(make, op, dtype, layout, s, mask, data, m, None)


def operators_reduction(pools):
    """TestOperators.test_reduction_all: the whole reduction of a MaskedTensor
    (strided, COO, CSR; argmax/argmin not CSR) against the op on the input
    filled with its identity"""
    from torch.testing._internal.common_methods_invocations import reduction_ops
    from torch.masked.maskedtensor.reductions import REDUCE_NAMES

    def make(op, dtype, layout, inp, mask):
        filled = MO._combine_input_and_mask(getattr(MO, op.name), inp.detach(), mask)
        with torch.no_grad():
            t = op.op(filled)
        if op.name in ("argmax", "argmin"):
            t = t.to(torch.int64)   # masq rule: int64 indices
        data, m = to_layout(inp, mask, layout)
        case = Case(MT + "TestOperators.test_reduction_all[%s, %s]" % (op.name, LAYOUT[layout]))
        case.binds.append(("x0", mt_expr(pools, data, m)))
        case.call = f"{op.name}(x0)"
        plain_want(case, pools, t, torch.tensor(True), exact=op.name in EXACT)
        case.desc = "%s %s" % (str(dtype)[6:], list(inp.shape))
        return case
    keep = (lambda op: op.name in REDUCE_NAMES and op.name not in {"all", "mean", "std", "var"})
    for op, dtype, layout in each_op(reduction_ops, keep, LAYOUTS):
        if op.name in {"argmin", "argmax"} and layout == torch.sparse_csr:
            continue   # "not currently supported for torch.sparse_csr"
        for s in op.sample_inputs("cpu", dtype, requires_grad=True):
            if s.input.dim() == 0 or s.input.numel() == 0:
                continue
            mask = random_mask(s.input.shape)
            if torch.count_nonzero(mask) == 0 or (layout == torch.sparse_csr and s.input.ndim != 2):
                continue
            yield partial(make, op, dtype, layout, s.input, mask)


def unary_data(fn_name):
    """TestUnary._get_test_data (after torch.random.manual_seed(0))"""
    data = torch.randn(10, 10)
    mask = torch.rand(10, 10) > 0.5
    if fn_name in ["log", "log10", "log1p", "log2", "sqrt"]:
        data = data.mul(0.5).abs()
    if fn_name in ["rsqrt"]:
        data = data.abs() + 1
    if fn_name in ["acos", "arccos", "asin", "arcsin", "logit"]:
        data = data.abs().mul(0.5).clamp(0, 1)
    if fn_name in ["atanh", "arctanh", "erfinv"]:
        data = data.mul(0.5).clamp(-1, 1)
    if fn_name in ["acosh", "arccosh"]:
        data = data.abs() + 1
    if fn_name in ["bitwise_not"]:
        data = data.mul(128).to(torch.int8)
    return data, mask


def binary_data(fn_name):
    """TestBinary._get_test_data (after torch.random.manual_seed(0))"""
    data0 = torch.randn(10, 10)
    data1 = torch.randn(10, 10)
    mask = torch.rand(10, 10) > 0.5
    if fn_name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
        data0 = data0.mul(128).to(torch.int8)
        data1 = data1.mul(128).to(torch.int8)
    if fn_name in ["bitwise_left_shift", "bitwise_right_shift"]:
        data0 = data0.abs().to(torch.int64)
        data1 = data1.abs().to(torch.int64)
    return data0, data1, mask


def native_fns(pools, kind):
    """TestUnary (kind "unary") and TestBinary ("binary"): each native
    function and its in-place form x.fn_() / x.fn_(y) (y is then x), on a
    10x10 masked tensor (the second operand masked alike, or plain); the
    answer of an in-place form is torch's in place on a copy (it keeps x's
    dtype)"""
    from torch.masked.maskedtensor import binary, unary
    mod = unary if kind == "unary" else binary
    fns = [(f.__name__, False) for f in getattr(mod, "NATIVE_%s_FNS" % kind.upper())]
    fns += sorted((f.__name__, True) for f in getattr(mod, "NATIVE_INPLACE_%s_FNS" % kind.upper()))

    def make(name, inplace, second):
        base = name[:-1] if name.endswith("_") else name
        torch.random.manual_seed(0)
        if kind == "unary":
            d0, mask = unary_data(base)
            extra = [2.0] if base == "pow" else []
            kw = {"min": -0.5, "max": 0.5} if base in ("clamp", "clip") else {}
            ins, args = [d0], args_text(pools, extra, kw)
        else:
            d0, d1, mask = binary_data(base)
            extra, kw = [d1.clone()], {}
            ins, args = [d0, d1], ", x1"
        with torch.no_grad():
            t = getattr(torch.Tensor if inplace else torch, name)(d0.clone(), *extra, **kw)
        case = Case(MT + "Test%s.test_%s%s[%s]%s" % (kind.capitalize(), "inplace_" if inplace else "", kind, name,
                                                     "" if kind == "unary" else " (masked, %s)" % second))
        for i, d in enumerate(ins):
            case.binds.append(("x%d" % i, pooled_masked(pools, d, mask if i == 0 or second == "masked" else None)))
        if inplace:
            case.pre.append(f"x0.{name}({args[2:]})")
            case.call = "x0"
        else:
            case.call = f"{name}(x0{args})"
        plain_want(case, pools, t, mask)
        case.desc = "%s[10, 10]" % str(d0.dtype)[6:]
        return case
    for name, inplace in fns:
        for second in (("masked",) if kind == "unary" else ("masked", "plain")):
            yield partial(make, name, inplace, second)


def sample_data(layout):
    """test_maskedtensor.py's _generate_sample_data (float32, the four shapes)"""
    from torch.testing import make_tensor
    out = []
    for shp in ([], [2], [3, 5], [3, 2, 1, 2]):
        data = make_tensor(shp, device="cpu", dtype=torch.float32)
        mask = random_mask(shp)
        if layout == torch.sparse_csr and data.ndim != 2:
            continue
        out.append((data, mask))
    return out


def ones_grad(mask):
    """the gradient of sum(y) through a copy of the data: 1 at the valid entries"""
    return V(torch.ones(mask.shape, dtype=torch.float32), dense(mask).clone())


def basics(pools):
    """TestBasics' random cases: test_softmax (values and gradient against
    softmax of the data filled with -inf) and the layout conversions
    test_to_sparse, test_to_dense, test_to_dense_and_sparse_coo/_csr with
    the gradients of sum(to_dense(y))"""
    def new(test, desc):
        case = Case(MT + "TestBasics." + test)
        case.desc = desc
        return case
    # test_softmax
    torch.manual_seed(0)
    data = torch.randn((3, 4)) * 0.1
    mask = torch.tensor([[True, True, True, False], [False, True, False, True], [True, True, False, False]])
    xinf = data.masked_fill(~mask, float("-inf")).requires_grad_()
    res = torch.softmax(xinf, -1)
    res.sum().backward()
    case = new("test_softmax", "float32[3, 4], grad of sum(y)")
    case.binds.append(("x0", "requires_grad(%s)" % pools.add(V(data.clone(), mask))))
    case.call = "softmax(x0, -1)"
    plain_want(case, pools, res, mask)
    case.loss = "sum(y)"
    case.grads.append(("x0", pools.add(V(xinf.grad.clone(), mask)), (1e-5, 1e-6)))
    yield case
    def conversion(test, x0, call, data, mask, layout=torch.strided, grad_layout=None, loss="sum(y)"):
        """a conversion of masked data: y holds the data at the mask; the
        gradient of loss is 1 at the valid entries, in grad_layout"""
        case = new(test, "%sfloat32%s" % (LAYOUT[grad_layout] + " " if grad_layout else "", list(data.shape)))
        case.binds.append(("x0", x0))
        case.call = call
        plain_want(case, pools, data, mask, layout)
        case.loss = loss
        case.grads.append(("x0", pools.add(ones_grad(mask)), (0.0, 0.0)) + ((LAYOUT[grad_layout],) if grad_layout
                                                                              else ()))
        return case

    def sparse_leaf(layout, data, mask):
        sd, sm = to_layout(data, mask, layout)
        return "masked(%s, %s, requires_grad=true)" % (tensor_expr(pools, sd), tensor_expr(pools, sm))

    def strided_leaf(data, mask):
        return "requires_grad(%s)" % pools.add(V(data.clone(), mask))
    # test_to_sparse: mt.to_sparse() holds the data at the mask
    torch.manual_seed(1)
    for data, mask in sample_data(torch.strided):
        yield conversion("test_to_sparse", strided_leaf(data, mask), "to_sparse(x0)", data, mask,
                         torch.sparse_coo, loss="sum(to_dense(y))")
    # test_to_dense: a sparse MaskedTensor to_dense()
    torch.manual_seed(2)
    for layout in (torch.sparse_coo, torch.sparse_csr):
        for data, mask in sample_data(layout):
            yield conversion("test_to_dense", sparse_leaf(layout, data, mask), "to_dense(x0)", data, mask,
                             grad_layout=layout)
    # test_to_dense_and_sparse_coo / _csr: the strided route and the sparse one
    for layout, test, to in ((torch.sparse_coo, "test_to_dense_and_sparse_coo", "to_sparse"),
                             (torch.sparse_csr, "test_to_dense_and_sparse_csr", "to_sparse_csr")):
        torch.manual_seed(3)
        for data, mask in sample_data(torch.strided):
            if layout == torch.sparse_csr and data.ndim != 2:
                continue
            yield conversion(test + " (mt.%s().to_dense())" % to, strided_leaf(data, mask), f"to_dense({to}(x0))",
                             data, mask)
            yield conversion(test + " (masked_tensor(data.sparse_mask(ms), ms).to_dense())",
                             sparse_leaf(layout, data, mask), "to_dense(x0)", data, mask, grad_layout=layout)


MT_GROUPS = [
    ("mt_basics", MT + "TestBasics: softmax and the layout conversions, values and gradients", basics),
    ("mt_unary", MT + "TestOperators.test_unary_core: op(input) at a random mask", operators_unary),
    ("mt_binary", MT + "TestOperators.test_binary_core: op(input, other) at a random mask", operators_binary),
    ("mt_reduction", MT + "TestOperators.test_reduction_all: op(input filled with the identity)", operators_reduction),
    ("mt_unary_fn", MT + "TestUnary: fn(data) at the mask", partial(native_fns, kind="unary")),
    ("mt_binary_fn", MT + "TestBinary: fn(data0, data1) at the mask", partial(native_fns, kind="binary")),
]


# ------------------------------------------------ known failures, by cause


# (cause, test on the failure text); the first that matches names the cause.
# A failure without an error is a wrong answer: those come first, loudly.
CAUSES = [
    ("WRONG LAYOUT", "no error: masq answers in another layout than torch", lambda m: not m.startswith("error")
     and re.match(r"out: layout", m)),
    ("WRONG DTYPE", "no error: masq answers in another dtype than torch", lambda m: not m.startswith("error")
     and re.match(r"out: dtype", m)),
    ("WRONG VALUE", "no error: values, mask or gradient differ from torch's",
     lambda m: not m.startswith("error") and not m.startswith("grad: error")),
    ("sparse mask=", "a sparse input or a sparse mask with mask=", lambda m: "mask= is for strided" in m
     or re.search(r"mask: got a sparse_c", m)),
    ("dim=()", "dim=[] (torch.masked's dim=()): every dim", lambda m: "dim must not be empty" in m),
    ("argmax of whole sparse", "argmax/argmin of a whole masked sparse tensor",
     lambda m: re.search(r"arg(max|min): not supported on a masked sparse", m)),
    ("in-place", "in-place spellings: x.add_(y), x.abs_(), x[i] = v, ...",
     lambda m: re.search(r"_' \(x\.|_\(x, \.\.\.\)|in place|undefined variable '[a-z0-9_]+_'", m)),
    ("CSC", "the sparse_csc layout", lambda m: "csc" in m.lower()),
    ("missing op", "a missing op or parameter (mask= on softmax, median, cumsum, ...)",
     lambda m: "has no parameter named" in m or "undefined variable" in m or "has no method" in m),
    ("mask= grad BUG", "mask= drops the gradient (torch.masked's functional forms are differentiable)",
     lambda m: m.startswith("grad: error") and "does not require grad" in m),
]


def classify(masq, outdir, kf):
    """run every group with masq, ignoring the list, and write the list of
    what fails (kf: a file, or None to print the counts only)"""
    masq = os.path.abspath(masq)
    fails = {}
    order = []
    ok = total = 0
    for name in sorted(os.listdir(outdir)):
        if not name.endswith(".masq") or name == "check.masq":
            continue
        out = subprocess.run([masq, name, "raw"], cwd=outdir, capture_output=True, text=True,
                             env=dict(os.environ, LC_ALL="C", NO_COLOR="1")).stdout
        for line in out.split("\n"):
            mm = re.match(r"(ok|FAIL) ([A-Za-z0-9_.]+#[0-9]+)(?:: (.*))?$", line)
            if not mm:
                continue
            total += 1
            if mm.group(1) == "ok":
                ok += 1
                continue
            msg = mm.group(3) or ""
            cause = next((c for c, _, t in CAUSES if t(msg)), "other")
            if cause == "other":
                cause = "other: " + re.sub(r"[0-9]+", "N", msg.replace("error: ", ""))[:90]
            if cause not in fails:
                fails[cause] = []
                order.append(cause)
            fails[cause].append((mm.group(2), msg))
    order.sort(key=lambda c: (next((i for i, (n, _, _) in enumerate(CAUSES) if n == c), len(CAUSES)), c))
    about = {n: d for n, d, _ in CAUSES}
    lines = ["# Known failures of the upstream port (tests/conformance/upstream): case id -> cause.",
             "# Written by tools/conformance/gen_upstream.py --classify MASQ; take a line off when the",
             "# case passes (the scripts then say so). Grouped by cause; the first groups are wrong",
             "# answers (no error), the rest refusals.",
             "KNOWN = {"]
    for c in order:
        lines.append("# == %s (%s): %d ==" % (c, about.get(c, "an error no other cause names"), len(fails[c])))
        for cid, _ in fails[c]:
            lines.append('"%s": "%s",' % (cid, c.replace('"', "'").replace("\\", "/")))
    lines.append("}")
    if kf:
        with open(kf, "w") as f:
            f.write("\n".join(lines) + "\n")
    print("%d cases: %d pass, %d known failures" % (total, ok, total - ok))
    for c in order:
        groups_ = {}
        for cid, _ in fails[c]:
            g = cid.split("#")[0]
            groups_[g] = groups_.get(g, 0) + 1
        print("- %s (%s): %d (%s)" % (c, about.get(c, "?"), len(fails[c]), ", ".join("%s %d" % kv for kv in sorted(groups_.items()))))
        print("    e.g. %s: %s" % fails[c][0])


if __name__ == "__main__":
    main()
