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
    for float32, float64 and int64 where the op takes it;
  * test_maskedtensor.py's TestOperators (unary and binary ufuncs and the
    reductions on MaskedTensors, strided / COO / CSR), TestUnary and
    TestBinary (each native function and its in-place form on a random
    10x10 masked tensor) and TestBasics' random conversions; its fixed
    examples are the golden scripts tests/lang/upstream_*.masq.

Each case records torch 1.13's answer: values, output mask (torch.masked.
_output_mask) and layout, and for strided float inputs of a differentiable
op the gradient of sum(y * W(y)) the way gen.py records it. A case that masq
refuses today is written like any other: known_failures.txt lists it (run
--classify to rewrite that list from a masq build), and the scripts print
"xfail" for a listed case that still fails and FAIL for one that passes.
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
DTYPES = [torch.float32, torch.float64, torch.int64]
EXACT = {"amax", "amin", "argmax", "argmin", "median"}
REFERENCE_TESTED = {"norm", "var", "std", "softmax", "log_softmax", "softmin", "normalize"}

LEFT_OUT = {}   # reason -> count


def leave_out(why):
    LEFT_OUT[why] = LEFT_OUT.get(why, 0) + 1


class Refused(Exception):
    """torch itself refuses the input: not a case"""


# ------------------------------------------------------------ one case


class Case:
    """one upstream input: bindings (masq variable = expression), the call,
    torch's answer, gradients"""

    def __init__(self, cid, origin):
        self.cid = cid
        self.origin = origin          # the upstream test it comes from
        self.binds = []               # (name, expression)
        self.pre = []                 # statements before y = ... (in-place forms)
        self.call = None              # masq expression for y
        self.want = None              # (layout, V) or None when torch raises
        self.tol = (0.0, 0.0)
        self.grads = []               # (leaf name, V, (rtol, atol))
        self.desc = ""


def tensor_expr(pools, t, name_hint="x"):
    """a torch tensor (any layout) as a masq expression built from the pools"""
    if t.is_complex():
        raise Refused("complex")
    if t.layout == torch.strided:
        return pools.add(V(t.detach().clone()))
    if t.layout == torch.sparse_coo:
        if t.dense_dim() > 0:
            raise Refused("hybrid")
        i = pools.add(V(t._indices().clone()))
        v = pools.add(V(t._values().detach().clone()))
        return f"sparse_coo({i}, {v}, {G.lit(list(t.shape))})"
    if t.layout == torch.sparse_csr:
        if t.dim() != 2:
            raise Refused("batched csr")
        c = pools.add(V(t.crow_indices().to(torch.int64).clone()))
        k = pools.add(V(t.col_indices().to(torch.int64).clone()))
        v = pools.add(V(t.values().detach().clone()))
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


def finish(case, pools, out, outmask, out64, exact, grad=None, grad64=None, gname="x0"):
    """record torch's answer (out: a tensor of any layout) and the gradient"""
    d = dense(out).detach()
    if d.dtype not in G.DT:
        raise Refused("result dtype %s" % d.dtype)
    want = V(d.clone(), outmask.clone() if outmask is not None else None)
    valid = want.vmask()
    y64 = dense(out64).detach() if out64 is not None and out64.shape == out.shape else None
    case.tol = G.tolerance(d, y64, valid, d.dtype, exact)
    case.want = (LAYOUT[out.layout], pools.add(want))
    if grad is not None:
        gtol = G.tolerance(grad.d, grad64.d if grad64 is not None else None, grad.vmask(), grad.d.dtype, False)
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


def opinfo_case(op, short, dtype, origin, s, cid, pools):
    inp, args, kw = s.input, tuple(s.args), dict(s.kwargs)
    if inp.is_complex() or any(isinstance(a, torch.Tensor) and a.is_complex() for a in args):
        raise Refused("complex")
    case = Case(cid, origin)
    case.binds.append(("x0", tensor_expr(pools, inp)))
    parts = ["x0"]
    names = {}
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
            names[k] = nm
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
        out = op.op(inp, *args, **kw)
        r_inp, r_args, r_kw = to_strided((inp, args, kw))
        outmask = None
        if r_kw.get("mask") is not None:
            outmask = MO._output_mask(op.op, r_inp, *r_args, **r_kw)
        elif inp.layout != torch.strided:
            # torch.masked's functional forms on a sparse input without mask=
            # take its stored entries as the mask
            outmask = None
    except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError) as e:
        raise Refused("torch: %s" % type(e).__name__) from e
    if short in ("argmax", "argmin"):
        # masq rule (docs/DIFFERENCES.md): indices are int64
        out = out.to(torch.int64)
    if short == "logaddexp" and (kw.get("input_mask") is not None or kw.get("other_mask") is not None):
        # masq rule (docs/DIFFERENCES.md): a masked result, masked out where
        # both operands are
        def canon_mask(m, t):
            return torch.ones(t.shape, dtype=torch.bool) if m is None else MO._input_mask(t, mask=m)
        outmask = canon_mask(r_kw.get("input_mask"), r_inp) | canon_mask(r_kw.get("other_mask"), r_args[0])
    out64 = None
    if dtype == torch.float32 and short not in EXACT:
        try:
            out64 = op.op(inp.double() if inp.layout == torch.strided else inp.to(torch.float64),
                          *[a.double() if isinstance(a, torch.Tensor) and G.is_float(a) else a for a in args], **kw)
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
        for d in op.supported_dtypes("cpu"):
            if d.is_complex:
                leave_out("complex dtype (%s samples not drawn)" % op.name)

        def cases(pools, op=op, short=short, dts=dts):
            n = 0
            for dtype in dts:
                for origin, s in mask_layout_samples(op, dtype):
                    try:
                        yield opinfo_case(op, short, dtype, origin, s, f"{short}#{n}", pools)
                        n += 1
                    except Refused as e:
                        leave_out(str(e).split(":")[0] if "torch" not in str(e) else "torch 1.13 raises")
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
    lines.append(f'r = cmpl(y, "{lay}", {want}, {G.fmt_tol(rtol)}, {G.fmt_tol(atol)})')
    if case.grads:
        # in a try of its own, so that a refused gradient is told apart from
        # a refused forward
        lines.append("try {")
        lines.append("g = grad(sum(y * W(y)), [%s])" % ", ".join(g[0] for g in case.grads))
        for j, (nm, gv, (gr, ga)) in enumerate(case.grads):
            lines.append(f'r = r + cmp("grad {nm}", g[{j}], {gv}, {G.fmt_tol(gr)}, {G.fmt_tol(ga)})')
        lines.append('} catch e { r = r + "grad: error: " + e.message + "; " }')
    lines.append(f'verdict("{case.cid}", r, y)')
    lines.append(f'}} catch e {{ refused("{case.cid}", e) }}')
    return lines


def write_group(outdir, group, source, cases):
    pools = G.Pools()
    body = []
    man = []
    n = 0
    for case in cases(pools):
        body += emit(case)
        man.append("\t".join([case.cid, case.call, case.origin, case.desc, "grad" if case.grads else "-"]))
        n += 1
    keys = pools.save(os.path.join(outdir, group + ".npz"))
    head = HEAD.format(group=group, n=n, source=source).split("\n")[:-1]
    head += [f'{k.upper()} = load(F, "{k}")' for k in keys]
    with open(os.path.join(outdir, group + ".masq"), "w") as f:
        f.write("\n".join(head + body + [f'done("{group}", {n})']) + "\n")
    return man, n


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
    allman = []
    total = 0
    for group, source, cases in groups(want):
        man, n = write_group(a.out, group, source, cases)
        allman += man
        total += n
        print(f"{group:24s} {n:5d} cases")
    print(f"{'total':24s} {total:5d} cases")
    with open(os.path.join(a.out, "manifest.txt"), "w") as f:
        f.write("# Generated by tools/conformance/gen_upstream.py with torch %s; do not edit.\n" % torch.__version__)
        for why, c in sorted(LEFT_OUT.items()):
            f.write("# left out: %d %s\n" % (c, why))
        f.write("# case\tmasq expression\tupstream test\tinputs\tgradient\n")
        f.write("\n".join(allman) + "\n")


def groups(want):
    yield from opinfo_groups(want)


# ------------------------------------------------ known failures, by cause


# (cause, test on the failure text); the first that matches names the cause.
# A failure without an error is a wrong answer: those come first, loudly.
CAUSES = [
    ("WRONG LAYOUT (no error: masq answers in another layout than torch)", lambda m: not m.startswith("error")
     and re.match(r"out: layout", m)),
    ("WRONG DTYPE (no error: masq answers in another dtype than torch)", lambda m: not m.startswith("error")
     and re.match(r"out: dtype", m)),
    ("WRONG VALUE OR MASK (no error)", lambda m: not m.startswith("error") and not m.startswith("grad: error")),
    ("sparse mask= (a sparse input or mask with mask=)", lambda m: "mask= is for strided" in m
     or re.search(r"mask: got a sparse_c", m)),
    ("dim=() ([] in masq: every dim)", lambda m: "dim must not be empty" in m),
    ("argmax/argmin of a whole masked sparse tensor", lambda m: re.search(r"arg(max|min): not supported on a masked sparse", m)),
    ("in-place spellings (x.add_(y), x[i] = v, ...)", lambda m: re.search(r"_' \(x\.|_\(x, \.\.\.\)|in place|undefined variable '[a-z0-9_]+_'", m)),
    ("CSC layout", lambda m: "csc" in m.lower()),
    ("missing op or parameter (mask= on softmax/median/cumsum, ...)", lambda m: "has no parameter named" in m
     or "undefined variable" in m or "has no method" in m),
    ("mask= drops the gradient (BUG: torch's functional forms are differentiable)",
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
            cause = next((c for c, t in CAUSES if t(msg)), "other")
            if cause == "other":
                cause = "other: " + re.sub(r"[0-9]+", "N", msg.replace("error: ", ""))[:90]
            if cause not in fails:
                fails[cause] = []
                order.append(cause)
            fails[cause].append((mm.group(2), msg))
    order.sort(key=lambda c: (next((i for i, (n, _) in enumerate(CAUSES) if n == c), len(CAUSES)), c))
    lines = ["# Known failures of the upstream port (tests/conformance/upstream): case id -> cause.",
             "# Written by tools/conformance/gen_upstream.py --classify MASQ; take a line off when the",
             "# case passes (the scripts then say so). Grouped by cause; the first groups are wrong",
             "# answers (no error), the rest refusals.",
             "KNOWN = {"]
    for c in order:
        lines.append("# == %s: %d ==" % (c, len(fails[c])))
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
        print("- %s: %d (%s)" % (c, len(fails[c]), ", ".join("%s %d" % kv for kv in sorted(groups_.items()))))
        print("    e.g. %s: %s" % fails[c][0])


if __name__ == "__main__":
    main()
