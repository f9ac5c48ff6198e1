#!/usr/bin/python3
"""Differential conformance suite: masq against torch.masked.

    /usr/bin/python3 tools/conformance/gen.py [--seed N] [--cases N] [--out DIR] [--ops a,b]

(needs torch 1.13 and numpy: apt-get install python3-torch python3-numpy). For
every builtin masq shares with torch.masked it draws random cases -- shapes
from 0-d to 4-d with size-1 and empty dims, broadcasting pairs, masks all
valid / all masked out / fully masked along a slice / random, data with NaN,
inf and zeros (under the mask and, in some cases, valid; every seventh case
mostly special values, float32 and float64 in turn), dim lists with
negative entries, torch's special-cased exponents -- and records what
torch.masked computes: output values and mask and, for differentiable ops,
the gradient of a weighted masked sum of the output, sum(y * W), with respect
to each float input (values and masks).

How the expected results are computed (the manifest says which, per op):
  * the reference is torch.masked's functional form -- exactly what
    MaskedTensor's ops call: fn(data) with the mask passed through for unary
    and binary ops, torch.masked.<fn>(data, mask=...) for reductions,
    softmax and friends, data and mask transformed alike for view ops,
    where() picking data and mask;
  * gradients come from autograd through that reference; a gradient entry is
    valid when it is valid in its input and feeds some valid output;
  * the same case is then run through real MaskedTensor objects
    (masked_tensor, torch.<op>(mt), MaskedTensor autograd) where torch 1.13
    supports it, and compared: the manifest records per op how many cases
    agreed, differed (a torch 1.13 bug or a deliberate difference, see
    docs/DIFFERENCES.md) or were unsupported by MaskedTensor;
  * where masq differs on purpose, the reference applies masq's rule and the
    case's notes say "masq rule: ..." (the Op's `deliberate`, UNARY_RULES,
    REDUCE, ALONG below); docs/DIFFERENCES.md explains each;
  * a gradient entry that feeds a NaN or infinite output gets a "care" mask
    of false: its value is a convention (torch's are mostly 0 * inf
    artifacts), so masq compares only its mask there.

Tolerances (per output and gradient): float32 rtol 1e-5, atol 1e-6 plus 4x
how far torch's float32 result is from the same reference in float64;
float64 rtol 1e-9, atol 1e-12 x the largest value; exact for ops that only
move or select values; bools and ints exactly.

Output, under --out (default tests/conformance):
  <op>.npz    the case tensors, packed per dtype into pools f32 f64 i64 b1
              (+ _mask arrays, numpy.ma polarity: True = masked out)
  <op>.masq   the cases as a masq script: loads, computes, compares; prints
              "ok <op>#<i>" or "FAIL <op>#<i>: ..." per case
  manifest.txt one line per case: id, expression, inputs, tolerance, notes
  ops.txt     one line per op: cases, gradient cases, reference, cross-check
  fused.masq  every elementwise chain of tests/lang/*.masq, fused against its
              op-by-op form, bitwise (no torch involved)
check.masq (the comparison helpers), xfail.txt (known failures: "OP reason"
or "OP#N reason") and README.md are hand-written and not touched here.
tools/conformance/run.sh runs the scripts; see tests/conformance/README.md.
"""
import argparse
import ast
import glob
import math
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as Fn  # noqa: E402
from torch.masked import masked_tensor  # noqa: E402

tm = torch.masked
torch.set_num_threads(1)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# ------------------------------------------------------------------ values


class V:
    """A tensor case value: data and validity mask (None: a plain tensor)."""

    def __init__(self, d, m=None):
        self.d = d
        self.m = m
        if m is not None and m.shape != d.shape:
            self.m = m.expand(d.shape).clone()

    @property
    def masked(self):
        return self.m is not None

    def vmask(self):
        return self.m if self.m is not None else torch.ones(self.d.shape, dtype=torch.bool)


def is_float(t):
    return (t if isinstance(t, torch.dtype) else t.dtype) in (torch.float32, torch.float64)


def lit(v):
    """a Python value as a masq literal"""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(lit(x) for x in v) + "]"
    raise TypeError(v)


DT = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.bool: "b1"}
DTNAME = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64", torch.bool: "bool"}


class TorchCrash(Exception):
    """running this through MaskedTensor would crash the interpreter"""


class Skip(Exception):
    """this draw is not a valid case (torch refuses it): draw again"""


# ------------------------------------------------------------------ random inputs

DOMAINS = {
    "real": lambda r, n: r.normal(0, 1, n) * r.choice([1.0, 3.0, 20.0]),
    "unit": lambda r, n: r.uniform(-1.15, 1.15, n),
    "pos": lambda r, n: np.abs(r.normal(0, 1, n) * r.choice([1.0, 5.0, 50.0])) * np.where(r.random(n) < 0.1, -1, 1),
    "ge1": lambda r, n: 1 + np.abs(r.normal(0, 3, n)) * np.where(r.random(n) < 0.1, -0.1, 1),
    "gt-1": lambda r, n: -1 + np.abs(r.normal(0, 3, n)) * np.where(r.random(n) < 0.1, -0.1, 1),
    "prob": lambda r, n: r.uniform(-0.1, 1.1, n),
    "exp": lambda r, n: r.normal(0, 1, n) * r.choice([1.0, 4.0, 30.0]),
    "gamma": lambda r, n: r.uniform(-4.5, 7, n),
    "small": lambda r, n: r.normal(0, 1, n) * 0.5,
    "nonneg": lambda r, n: np.abs(r.normal(0, 2, n)),
    "p01": lambda r, n: r.uniform(0.01, 0.99, n),
}


NDIMS = [2, 1, 3, 0, 2, 4, 1, 3, 2, 4]


def draw_shape(rng, k, nd=None, maxnumel=48, empty=None):
    """case k: ndim cycles through NDIMS (0-d one case in ten); every 9th
    case has an empty dim"""
    if nd is None:
        nd = NDIMS[k % len(NDIMS)]
    if empty is None:
        empty = k % 9 == 4
    dims = []
    for _ in range(nd):
        r = rng.random()
        dims.append(1 if r < 0.22 else int(rng.integers(2, 6)))
    while int(np.prod(dims)) > maxnumel:
        i = int(np.argmax(dims))
        dims[i] -= 1
    if empty and nd > 0:
        dims[int(rng.integers(nd))] = 0
    return tuple(dims)


MASK_KINDS = ["random", "slice", "random", "valid", "random", "slice", "masked", "random"]


def draw_mask(rng, shape, kind):
    n = int(np.prod(shape))
    if kind == "valid":
        m = np.ones(n, bool)
    elif kind == "masked":
        m = np.zeros(n, bool)
    else:
        m = rng.random(n) < rng.uniform(0.3, 0.9)
    m = m.reshape(shape)
    if kind == "slice" and len(shape) > 0 and n > 0:
        d = int(rng.integers(len(shape)))
        idx = [slice(None)] * len(shape)
        idx[d] = int(rng.integers(shape[d]))
        m[tuple(idx)] = False
    return torch.from_numpy(m.copy())


SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0]
# where derivatives and special-cased exponents change: the special values,
# +-1 (poles and domain edges of log1p, atanh, acos ...), +-0.5, 2, ties
EDGES = SPECIALS + [1.0, -1.0, 0.5, -0.5, 2.0, 1e30, -1e30, 1e-30]


def dense_specials(k):
    """every seventh case is mostly special values: each op at its special
    points, float32 and float64 in turn (case_dtype)"""
    return k % 7 == 6


def draw_data(rng, shape, dtype, domain, mask=None, specials=False, intrange=(-6, 7)):
    n = int(np.prod(shape))
    if dtype == torch.bool:
        a = rng.random(n) < 0.5
        return torch.from_numpy(a.reshape(shape).copy())
    if dtype == torch.int64:
        a = rng.integers(intrange[0], intrange[1], n)
        return torch.from_numpy(a.reshape(shape).astype(np.int64))
    a = DOMAINS[domain](rng, n).astype(np.float64)
    if n:
        # masked-out slots: often NaN or inf, which must never show
        if mask is not None:
            mf = mask.numpy().reshape(-1)
            bad = (~mf) & (rng.random(n) < 0.4)
            a[bad] = rng.choice([math.nan, math.inf, -math.inf], int(bad.sum()))
        if specials == "dense":
            hit = rng.random(n) < 0.6
            a[hit] = rng.choice(EDGES, int(hit.sum()))
        elif specials:
            for _ in range(int(rng.integers(1, 3))):
                a[int(rng.integers(n))] = SPECIALS[int(rng.integers(len(SPECIALS)))]
    t = torch.from_numpy(a.reshape(shape).copy()).to(dtype)
    return t


def case_dtype(k, allowed):
    """float32 mostly; float64, int64, bool every so often when allowed
    (the extras beside float32; "only" drops float32)"""
    if "bool" in allowed and k % 6 == 4:
        return torch.bool
    if "int" in allowed and k % 6 == 5:
        return torch.int64
    if "f64" in allowed and (k % 8 == 7 or (dense_specials(k) and k // 7 % 2)):
        return torch.float64
    if "only" in allowed:
        return torch.int64 if "int" in allowed and (k % 2 or "bool" not in allowed) else torch.bool
    return torch.float32


def draw_masked(rng, k, shape, dtype, domain="real", kind=None, specials=None, **kw):
    if kind is None:
        kind = MASK_KINDS[(k // 3 + k) % len(MASK_KINDS)]
    m = draw_mask(rng, shape, kind)
    if specials is None:
        specials = "dense" if dense_specials(k) else k % 3 == 0
    return V(draw_data(rng, shape, dtype, domain, m, specials, **kw), m)


def draw_plain(rng, k, shape, dtype, domain="real", specials=None, **kw):
    if specials is None:
        specials = "dense" if dense_specials(k) else k % 3 == 0
    return V(draw_data(rng, shape, dtype, domain, None, specials, **kw))


def bshape(rng, shape):
    """a shape that broadcasts with `shape` (drop leading dims, set some to 1)"""
    s = list(shape)
    if s and rng.random() < 0.4:
        s = s[int(rng.integers(1, len(s) + 1)):]
    s = [1 if (rng.random() < 0.35) else d for d in s]
    if rng.random() < 0.2 and len(s) == len(shape) and len(s) < 4:
        s = [int(rng.integers(1, 4))] + s
    return tuple(s)


def scalar(rng, dtype):
    if dtype == torch.bool:
        return bool(rng.random() < 0.5)
    if dtype == torch.int64 or rng.random() < 0.25:
        return int(rng.integers(-3, 4))
    return float(rng.choice([0.5, -1.5, 2.0, 2.5, -0.25, 3.0, 0.0, -2.0, -0.5, -1.0, 1.0]))


# ------------------------------------------------------------------ cases


class Case:
    def __init__(self, inputs, call, ref, proxy=None, mt=None, exact=False, grad=True, notes=(), diff=None,
                 multi=False):
        self.multi = multi        # the result is a list of tensors
        self.inputs = inputs      # [V]: the tensor inputs, {0} {1} ... in call
        self.call = call          # masq expression
        self.ref = ref            # [V] -> V or [V]: the expected result
        self.proxy = proxy        # [tensor] -> tensor: linear, same dependency structure (grad masks)
        self.mt = mt              # [MaskedTensor|Tensor] -> result through real MaskedTensor ops
        self.exact = exact        # float results must match exactly
        self.grad = grad
        self.notes = list(notes)
        self.diff = diff          # indices of inputs to differentiate (default: float ones)


class Op:
    def __init__(self, name, make, family, source, deliberate=None):
        self.name = name
        self.make = make          # (rng, k) -> Case
        self.family = family
        self.source = source      # what the reference is
        self.deliberate = deliberate  # a deliberate difference from torch.masked, if any


OPS = []


def op(name, family, source, deliberate=None):
    def deco(make):
        OPS.append(Op(name, make, family, source, deliberate))
        return make
    return deco


def weights(shape, dtype):
    n = int(np.prod(shape))
    return ((torch.arange(n) % 5) * 0.5 - 0.75).to(dtype).reshape(shape)


# ---------------------------------------------------------------- unary

# name: (domain, dtypes, differentiable, exact)
UNARY = {
    "abs": ("real", ("int", "f64"), True, True), "absolute": ("real", ("int", "f64"), True, True),
    "acos": ("unit", ("int", "f64"), True, False), "arccos": ("unit", ("int",), True, False),
    "acosh": ("ge1", ("int", "f64"), True, False), "arccosh": ("ge1", ("int",), True, False),
    "angle": ("real", ("int", "f64"), True, True),
    "asin": ("unit", ("int", "f64"), True, False), "arcsin": ("unit", ("f64",), True, False),
    "asinh": ("real", ("int", "f64"), True, False), "arcsinh": ("real", ("f64",), True, False),
    "atan": ("real", ("int", "f64"), True, False), "arctan": ("real", ("f64",), True, False),
    "atanh": ("unit", ("int", "f64"), True, False), "arctanh": ("unit", ("f64",), True, False),
    "bitwise_not": ("real", ("int", "bool", "only"), False, True),
    "ceil": ("real", ("int", "f64"), True, True),
    "clamp": ("real", ("int", "f64"), True, True), "clip": ("real", ("int", "f64"), True, True),
    "conj_physical": ("real", ("int", "f64", "bool"), True, True),
    "cos": ("real", ("int", "f64"), True, False), "cosh": ("exp", ("int", "f64"), True, False),
    "deg2rad": ("real", ("int", "f64"), True, False), "digamma": ("gamma", ("int", "f64"), True, False),
    "erf": ("real", ("int", "f64"), True, False), "erfc": ("real", ("int", "f64"), True, False),
    "erfinv": ("unit", ("int", "f64"), True, False),
    "exp": ("exp", ("int", "f64"), True, False), "exp2": ("exp", ("int", "f64"), True, False),
    "expm1": ("exp", ("int", "f64"), True, False),
    "fix": ("real", ("int", "f64"), True, True), "floor": ("real", ("int", "f64"), True, True),
    "frac": ("real", ("f64",), True, True),
    "lgamma": ("gamma", ("int", "f64"), True, False),
    "log": ("pos", ("int", "f64"), True, False), "log10": ("pos", ("int", "f64"), True, False),
    "log1p": ("gt-1", ("int", "f64"), True, False), "log2": ("pos", ("int", "f64"), True, False),
    "logit": ("prob", ("int", "f64"), True, False), "i0": ("real", ("int", "f64"), True, False),
    "isnan": ("real", ("int", "f64", "bool"), False, True),
    "nan_to_num": ("real", ("int", "f64", "bool"), True, True),
    "neg": ("real", ("int", "f64"), True, True), "negative": ("real", ("int", "f64"), True, True),
    "positive": ("real", ("int", "f64"), True, True),
    "pow": ("real", ("int", "f64"), True, False),
    "rad2deg": ("real", ("int", "f64"), True, False), "reciprocal": ("real", ("int", "f64"), True, False),
    "round": ("real", ("int", "f64"), True, True), "rsqrt": ("pos", ("int", "f64"), True, False),
    "sigmoid": ("real", ("int", "f64"), True, False),
    "sign": ("real", ("int", "f64", "bool"), True, True), "sgn": ("real", ("int", "f64", "bool"), True, True),
    "signbit": ("real", ("int", "f64", "bool"), False, True),
    "sin": ("real", ("int", "f64"), True, False), "sinc": ("real", ("int", "f64"), True, False),
    "sinh": ("exp", ("int", "f64"), True, False), "sqrt": ("pos", ("int", "f64"), True, False),
    "square": ("real", ("int", "f64"), True, True), "tan": ("real", ("int", "f64"), True, False),
    "tanh": ("real", ("int", "f64"), True, False), "trunc": ("real", ("int", "f64"), True, True),
    "softplus": ("real", ("f64",), True, False),
    "gelu": ("real", ("f64",), True, False), "silu": ("real", ("f64",), True, False),
    "leaky_relu": ("real", ("f64",), True, False), "elu": ("real", ("f64",), True, False),
    "relu": ("real", ("int", "f64"), True, True), "selu": ("real", ("f64",), True, False),
    "mish": ("real", ("f64",), True, False), "logsigmoid": ("real", ("f64",), True, False),
    "hardtanh": ("real", ("int", "f64"), True, True), "relu6": ("real", ("int", "f64"), True, True),
    "hardsigmoid": ("real", ("f64",), True, False), "hardswish": ("real", ("f64",), True, False),
    "softsign": ("real", ("int", "f64"), True, False), "tanhshrink": ("real", ("int", "f64"), True, False),
}


def unary_params(name, rng, dtype):
    """(positional args, keyword args) beyond x, drawn per case"""
    isint = dtype == torch.int64

    def num():
        return int(rng.integers(-3, 4)) if isint else float(rng.choice([-1.5, -0.5, 0.0, 0.25, 1.0, 2.5]))
    if name in ("clamp", "clip"):
        a, b = sorted([num(), num()])
        form = rng.integers(3)
        if form == 0:
            return [a, b], {}
        if form == 1:
            return [], {"min": a}
        return [], {"max": b}
    if name == "logit" and rng.random() < 0.5:
        return [], {"eps": float(rng.choice([0.05, 0.25]))}
    if name == "nan_to_num":
        kw = {}
        for key, vals in (("nan", [1.5, -2.0]), ("posinf", [9.0, 1e30]), ("neginf", [-9.0, -1e30])):
            if rng.random() < 0.5:
                kw[key] = float(rng.choice(vals))
        return [], kw
    if name == "round" and rng.random() < 0.5:
        return [], {"decimals": int(rng.choice([1, 2, -1]))}
    if name == "softplus":
        kw = {}
        if rng.random() < 0.6:
            kw["beta"] = float(rng.choice([2.0, 0.5, 1.0]))
        if rng.random() < 0.6:
            kw["threshold"] = float(rng.choice([1.0, 3.0, 20.0]))
        return [], kw
    if name == "gelu" and rng.random() < 0.5:
        return [], {"approximate": "tanh"}
    if name == "leaky_relu" and rng.random() < 0.6:
        return [], {"negative_slope": float(rng.choice([0.2, 0.0, 1.5]))}
    if name == "hardtanh" and rng.random() < 0.6:
        a, b = sorted([num(), num()])
        if isint and rng.random() < 0.5:   # float bounds: torch truncates them for ints
            a, b = a - 0.5, b + 0.5
        return [], {"min_val": a, "max_val": b}
    if name == "elu" and rng.random() < 0.6:
        return [], {"alpha": float(rng.choice([0.5, 2.0]))}
    if name == "pow":
        if isint:
            return [int(rng.integers(0, 4))], {}
        # torch runs 0.5, -0.5, 2, 3, -1, -2 through other kernels than pow
        return [float(rng.choice([2.0, 3.0, 0.5, -0.5, 0.5, -0.5, -1.0, 2.5, 0.0, 1.0, -2.0, 1.5]))
                if rng.random() < 0.8
                else int(rng.integers(-2, 4))], {}
    return [], {}


def mk_unary(name):
    domain, dtypes, diffable, exact = UNARY[name]
    fn = getattr(torch, name, None) or getattr(Fn, name)  # softplus: torch.nn.functional

    def make(rng, k):
        dtype = case_dtype(k, dtypes)
        shape = draw_shape(rng, k)
        x = draw_masked(rng, k, shape, dtype, domain)
        pos, kw = unary_params(name, rng, dtype)
        args = "".join(", " + lit(a) for a in pos) + "".join(f", {kk}={lit(vv)}" for kk, vv in kw.items())
        notes = []
        if name == "pow" and dtype != torch.bool and rng.random() < 0.25:
            # a number base: torch.masked has no rpow (2 ** mt recurses, 2.1)
            base = float(rng.choice([2.0, 0.5, 3.0])) if dtype != torch.int64 else int(rng.choice([2, 3]))
            if dtype == torch.int64:
                # masq refuses a valid negative int exponent (torch truncates
                # 2 ** -1 to 0); masked-out ones must not matter
                x.d[x.m & (x.d < 0)] *= -1
            return Case([x], f"pow({base}, {{0}})", lambda v: [V(torch.pow(base, v[0].d), v[0].m)],
                        proxy=lambda t: t[0], mt=lambda t: base ** t[0], grad=diffable,
                        notes=["masq rule: number base (torch.masked lacks rpow)"])
        ex = exact and not (name == "round" and kw) and not (name == "nan_to_num" and dtype != torch.float32)

        def ref(v):
            r = fn(v[0].d, *pos, **kw)
            if name in UNARY_RULES:
                r = UNARY_RULES[name][0](v[0].d, r)
            return [V(r, v[0].m)]

        if name in UNARY_RULES and bool(torch.isinf(x.d[x.m]).any()):
            notes.append("masq rule: " + UNARY_RULES[name][1])

        def mt(t):
            if name == "round" and kw:
                return fn(t[0], **kw)   # kwargs: refused by MaskedTensor unary ops
            if kw and name in ("clamp", "clip"):
                return fn(t[0], kw.get("min"), kw.get("max"))
            if kw:
                return fn(t[0], **kw)
            return fn(t[0], *pos)
        return Case([x], f"{name}({{0}}{args})", ref, proxy=lambda t: t[0], mt=mt, exact=ex,
                    grad=diffable, notes=notes)
    return make


# deliberate differences: (fix the torch result, why)
UNARY_RULES = {
    "i0": (lambda x, r: torch.where(torch.isinf(x), torch.full_like(r, math.inf), r),
           "i0(inf) is inf (torch 1.13 gives NaN)"),
}

for _n in UNARY:
    op(_n, "unary", "fn(data), mask kept (torch.masked unary op)",
       UNARY_RULES[_n][1] if _n in UNARY_RULES else None)(mk_unary(_n))

# ---------------------------------------------------------------- binary

# name: (dtypes, differentiable, exact, domain of the right operand)
BINARY = {
    "add": (("int", "f64", "bool"), True, False), "sub": (("int", "f64"), True, False),
    "subtract": (("int", "f64"), True, False),
    "mul": (("int", "f64", "bool"), True, False), "multiply": (("int", "f64"), True, False),
    "div": (("int", "f64"), True, False), "divide": (("int", "f64"), True, False),
    "true_divide": (("int", "f64"), True, False),
    "floor_divide": (("int", "f64"), False, False), "fmod": (("int", "f64"), True, False),
    "remainder": (("int", "f64"), True, False),
    "atan2": (("int", "f64"), True, False), "arctan2": (("int", "f64"), True, False),
    "logaddexp": (("f64",), True, False), "logaddexp2": (("f64",), True, False),
    "maximum": (("int", "f64", "bool"), True, True), "minimum": (("int", "f64", "bool"), True, True),
    "fmax": (("int", "f64"), True, True), "fmin": (("int", "f64"), True, True),
    "nextafter": (("f64",), False, True),
    "xlogy": (("int", "f64"), True, False), "hypot": (("f64",), True, False),
    "copysign": (("int", "f64"), True, False), "float_power": (("int", "f64"), True, False),
    "eq": (("int", "f64", "bool"), False, True), "ne": (("int", "f64", "bool"), False, True),
    "not_equal": (("int", "f64", "bool"), False, True),
    "le": (("int", "f64", "bool"), False, True), "ge": (("int", "f64", "bool"), False, True),
    "lt": (("int", "f64", "bool"), False, True), "gt": (("int", "f64", "bool"), False, True),
    "less": (("int", "f64", "bool"), False, True), "less_equal": (("int", "f64", "bool"), False, True),
    "greater": (("int", "f64", "bool"), False, True), "greater_equal": (("int", "f64", "bool"), False, True),
    "bitwise_and": (("int", "bool", "only"), False, True), "bitwise_or": (("int", "bool", "only"), False, True),
    "bitwise_xor": (("int", "bool", "only"), False, True),
    "bitwise_left_shift": (("int", "only"), False, True), "bitwise_right_shift": (("int", "only"), False, True),
}
INT_DIV = ("div", "divide", "true_divide", "floor_divide", "fmod", "remainder")
BIN_MODES = ["mm", "mp", "pm", "ms", "sm", "mm", "mp", "mm"]


def mk_binary(name):
    dtypes, diffable, exact = BINARY[name]
    fn = getattr(torch, name)

    def make(rng, k):
        dtype = case_dtype(k, dtypes)
        mode = BIN_MODES[k % len(BIN_MODES)]
        shape = draw_shape(rng, k, maxnumel=36)
        ir = (0, 9) if "shift" in name else (-6, 7)
        notes = []
        kw = {}
        if name in ("add", "sub", "subtract") and dtype != torch.bool and rng.random() < 0.3:
            kw["alpha"] = int(rng.integers(-2, 4)) if dtype == torch.int64 else float(rng.choice([2.0, -0.5, 1.5]))
        if name in ("div", "divide") and rng.random() < 0.4:
            kw["rounding_mode"] = str(rng.choice(["trunc", "floor"]))
        if name == "nextafter" and mode in ("ms", "sm"):
            mode = "mp"   # torch.nextafter takes tensors only
        if mode == "mm":
            a = draw_masked(rng, k, shape, dtype, "real", intrange=ir)
            b = V(draw_data(rng, shape, dtype, "real", a.m, rng.random() < 0.3, intrange=ir), a.m.clone())
            ins = [a, b]
            call = "{0}, {1}"
        elif mode in ("mp", "pm"):
            s2 = bshape(rng, shape)
            if rng.random() < 0.5:
                shape, s2 = s2, shape
            a = draw_masked(rng, k, shape, dtype, "real", intrange=ir)
            b = draw_plain(rng, k, s2, dtype, "real", specials=rng.random() < 0.3, intrange=ir)
            ins = [a, b] if mode == "mp" else [b, a]
            call = "{0}, {1}"
        else:
            a = draw_masked(rng, k, shape, dtype, "real", intrange=ir)
            s = scalar(rng, dtype)
            if "shift" in name:
                s = int(rng.integers(0, 5))
            ins = [a]
            call = f"{{0}}, {lit(s)}" if mode == "ms" else f"{lit(s)}, {{0}}"
            if mode == "sm" and name in ("sub", "subtract", "div", "divide", "true_divide", "floor_divide",
                                         "fmod", "remainder", "atan2", "arctan2", "pow"):
                notes.append("masq rule: number on the left (torch.masked lacks the reflected op)")
        # int division: torch raises on a zero divisor even where it is masked
        # out; masq must not. Valid zero divisors become 1; masked-out ones
        # stay 0 for masq and are 1 in the reference.
        intdiv = dtype == torch.int64 and name in ("floor_divide", "fmod", "remainder") or \
            dtype == torch.int64 and name in ("div", "divide") and "rounding_mode" in kw
        if intdiv:
            if mode == "ms":
                if s == 0:
                    s = 2
                    call = f"{{0}}, {lit(s)}"
            else:
                den = ins[0] if mode == "sm" else ins[1]
                if den.masked:
                    den.d[(den.d == 0) & den.m] = 1
                    if bool(((den.d == 0) & ~den.m).any()):
                        notes.append("masq rule: an int zero divisor under the mask is no error")
                else:
                    den.d[den.d == 0] = 1
        call = f"{name}({call}" + "".join(f", {kk}={lit(vv)}" for kk, vv in kw.items()) + ")"

        def args(v):
            if mode in ("mm", "mp", "pm"):
                x, y = v[0].d, v[1].d
            elif mode == "ms":
                x, y = v[0].d, s
            else:
                x, y = s, v[0].d
            if intdiv and isinstance(y, torch.Tensor):
                y = torch.where(y == 0, torch.ones_like(y), y)
            return x, y

        def call_fn(x, y, **k2):
            try:
                return fn(x, y, **k2)
            except TypeError:
                x = x if isinstance(x, torch.Tensor) else torch.tensor(x)
                y = y if isinstance(y, torch.Tensor) else torch.tensor(y)
                return fn(x, y, **k2)

        def ref(v):
            x, y = args(v)
            r = call_fn(x, y, **kw)
            m = [t.m for t in v if t.masked][0]
            return [V(r, m.expand(r.shape).clone())]

        def mt(t):
            x, y = (t[0], t[1]) if mode in ("mm", "mp", "pm") else ((t[0], s) if mode == "ms" else (s, t[0]))
            return call_fn(x, y, **kw)
        return Case(ins, call, ref, proxy=lambda t: sum(t), mt=mt, exact=exact, grad=diffable, notes=notes)
    return make


for _n in BINARY:
    op(_n, "binary", "fn(data, data), the masked operand's mask (torch.masked binary op)")(mk_binary(_n))

# ---------------------------------------------------------------- reductions


def draw_dims(rng, nd, kinds):
    """None, an int (maybe negative) or a list of dims"""
    opts = ["none"] + (["int", "int"] if "int" in kinds else []) + (["list"] if "list" in kinds and nd >= 1 else [])
    if nd == 0:
        opts = ["none", "int"] if "int" in kinds else ["none"]
    kind = opts[int(rng.integers(len(opts)))]
    if kind == "none":
        return None
    if kind == "int":
        d = int(rng.integers(max(nd, 1)))
        return d - max(nd, 1) if rng.random() < 0.3 else d
    n = int(rng.integers(1, nd + 1))
    ds = sorted(rng.choice(nd, n, replace=False).tolist())
    if rng.random() < 0.3:
        ds = ds[::-1]
    # a list holds dims, not sizes: any entry may count from the end
    return [int(d) - nd if rng.random() < 0.5 else int(d) for d in ds]


def canon(dim, nd):
    if dim is None:
        return tuple(range(nd))
    ds = [dim] if isinstance(dim, int) else dim
    return tuple(sorted(d % max(nd, 1) for d in ds)) if nd else ()


def any_over(m, dims, keepdim):
    r = m
    for d in sorted(dims, reverse=True):
        r = r.any(d, keepdim=True)
    if not keepdim:
        for d in sorted(dims, reverse=True):
            r = r.squeeze(d)
    return r


def sum_over(t, dims, keepdim):
    if not dims:
        return t.clone()
    return t.sum(dims, keepdim=keepdim)


def reduce_shape(shape, dims, keepdim):
    return tuple((1 if keepdim else None) if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims)


def arg_ext(d, m, dims, keepdim, largest):
    """argmax/argmin over the valid entries: NaN counts as the extreme, ties
    go to the first valid index (masq's rule; torch.masked may pick a
    masked-out index when every valid entry is the fill value)"""
    if d.dim() == 0:
        return torch.zeros((), dtype=torch.int64)
    dim = dims[0] if len(dims) == 1 else None
    dd, mm = (d.reshape(-1), m.reshape(-1)) if dim is None else (d, m)
    dd = dd.double()
    dm = 0 if dim is None else dim
    if dd.shape[dm] == 0:
        r = torch.zeros(reduce_shape(dd.shape, (dm,), False), dtype=torch.int64)
    else:
        fill = -math.inf if largest else math.inf
        key = torch.where(mm, dd, torch.tensor(fill, dtype=torch.float64))
        ext = key.amax(dm, keepdim=True) if largest else key.amin(dm, keepdim=True)
        nanany = (torch.isnan(dd) & mm).any(dm, keepdim=True)
        cand = mm & torch.where(nanany, torch.isnan(dd), dd == ext)
        r = cand.to(torch.int64).argmax(dm)
    if keepdim:
        if dim is None:
            r = r.reshape([1] * d.dim())
        else:
            r = r.unsqueeze(dim)
    return r


def red_ref(name, d, m, dim, keepdim, param):
    """the expected data of a masked reduction (functional torch.masked)"""
    nd = d.dim()
    dims = canon(dim, nd)
    if dim is None or nd == 0:
        tdim = None
    else:
        tdim = dims if not isinstance(dim, int) else dims[0]

    def full(fn, *a, **k):
        """reduce-all through the functional form, with keepdim by reshape"""
        if tdim is None:
            r = fn(d, *a, mask=m, **k)
            return r.reshape([1] * nd) if keepdim else r
        return fn(d, *a, tdim, keepdim=keepdim, mask=m, **k)
    empty = d.numel() == 0 or any(d.shape[i] == 0 for i in dims)
    if name in ("sum", "prod", "mean"):
        return full(getattr(tm, name))
    if name in ("amax", "amin"):
        if empty:
            out = sum_over(d, dims, keepdim)
            return out.to(d.dtype)
        return full(getattr(tm, name))
    if name in ("argmax", "argmin"):
        return arg_ext(d, m, dims, keepdim, name == "argmax")
    if name == "all":
        x = d.masked_fill(~m, True).bool()
        r = x
        for dd in sorted(dims, reverse=True):
            r = r.all(dd, keepdim=True)
        if not keepdim:
            for dd in sorted(dims, reverse=True):
                r = r.squeeze(dd)
        return r
    if name == "norm":
        if tdim is None:
            r = tm.norm(d.reshape(-1), param, 0, mask=m.reshape(-1))
            return r.reshape([1] * nd) if keepdim else r
        return tm.norm(d, param, tdim, keepdim=keepdim, mask=m)
    if name in ("var", "std"):
        fn = tm.var if name == "var" else tm.std
        if param not in (0, 1):
            raise ValueError(param)
        if tdim is None:
            r = fn(d.reshape(-1), 0, unbiased=bool(param), mask=m.reshape(-1))
            return r.reshape([1] * nd) if keepdim else r
        return fn(d, tdim, unbiased=bool(param), keepdim=keepdim, mask=m)
    if name == "logsumexp":
        if empty:
            return sum_over(d, dims, keepdim)
        if tdim is None:
            r = tm.logsumexp(d.reshape(-1), 0, mask=m.reshape(-1))
            return r.reshape([1] * nd) if keepdim else r
        return tm.logsumexp(d, tdim, keepdim=keepdim, mask=m)
    if name == "median":
        # torch.masked.median is nanmedian over the valid entries: a valid
        # NaN is skipped. masq's median, like torch.median and masq's
        # amax, gives NaN when the slice holds a valid NaN.
        if empty:
            return sum_over(d, dims, keepdim).to(d.dtype)
        dd, mm, dm = (d.reshape(-1), m.reshape(-1), 0) if tdim is None else (d, m, tdim)
        src = dd if is_float(dd) else dd.float()
        r = tm.median(src, dm, keepdim=keepdim and tdim is not None, mask=mm)
        nanv = (torch.isnan(src) & mm).any(dm, keepdim=keepdim and tdim is not None)
        r = torch.where(nanv, torch.tensor(math.nan, dtype=r.dtype), r)
        if tdim is None and keepdim:
            r = r.reshape([1] * nd)
        if not is_float(d):
            r = torch.nan_to_num(r, 0).to(d.dtype)
        return r
    raise KeyError(name)


# name: (dtypes, dim kinds, differentiable, exact, deliberate difference)
REDUCE = {
    "sum": (("int", "f64", "bool"), ("int", "list"), True, False, None),
    "mean": (("int", "f64"), ("int", "list"), True, False, None),
    "prod": (("int", "f64"), ("int", "list"), True, False, None),
    "amax": (("int", "f64"), ("int", "list"), True, True, None),
    "amin": (("int", "f64"), ("int", "list"), True, True, None),
    "argmax": (("int", "f64"), ("int",), False, True, "argmax/argmin give int64 indices (torch.masked: the input's dtype)"),
    "argmin": (("int", "f64"), ("int",), False, True, "argmax/argmin give int64 indices (torch.masked: the input's dtype)"),
    "all": (("bool", "int", "f64"), ("int", "list"), False, True, None),
    "norm": (("f64",), ("int", "list"), True, False, "norm works on masked tensors (torch 1.13: torch.norm(mt) raises)"),
    "var": (("f64",), ("int", "list"), True, False, "var/std take correction= (torch.masked 1.13: population only)"),
    "std": (("f64",), ("int", "list"), True, False, "var/std take correction= (torch.masked 1.13: population only)"),
    "logsumexp": (("f64",), ("int", "list"), True, False, "logsumexp works on masked tensors (torch.masked: functional only)"),
    "median": (("int", "f64"), ("int",), True, False, "median works on masked tensors and a valid NaN gives NaN (torch.masked.median skips NaN)"),
}
NORM_P = [2, 2.0, 1, 3.0, math.inf, -math.inf, 0, 0.5]


def mk_reduce(name):
    dtypes, dimkinds, diffable, exact, deliberate = REDUCE[name]

    def make(rng, k):
        dtype = case_dtype(k, dtypes)
        if name == "all" and k % 4 == 0:
            dtype = torch.bool
        shape = draw_shape(rng, k)
        x = draw_masked(rng, k, shape, dtype, "real")
        if name == "all" and dtype != torch.bool:
            x.d[torch.rand(x.d.shape, generator=torch.Generator().manual_seed(k)) < 0.5] = 0
        nd = len(shape)
        dim = draw_dims(rng, nd, dimkinds)
        keepdim = bool(rng.random() < 0.35)
        param = None
        args = ""
        if name == "norm":
            param = NORM_P[int(rng.integers(len(NORM_P)))]
            args += ", " + lit(param)
        if name in ("var", "std"):
            param = int(rng.integers(2))
            form = rng.random()
            if form < 0.5:
                args += f", correction={param}"
            elif form < 0.8:
                args += f", unbiased={lit(bool(param))}"  # torch's spelling
            elif param:
                args += ", correction=1"
        # dtype= where torch.masked takes it: the input converted first
        to64 = (dtype == torch.float32 and name in ("amax", "amin", "argmax", "argmin", "norm", "var", "std",
                                                    "logsumexp") and rng.random() < 0.2)
        if to64:
            args += ', dtype="float64"'
        if dim is not None:
            args += f", dim={lit(dim)}"
        if keepdim:
            args += ", keepdim=true"
        dims = canon(dim, nd)

        def ref(v):
            d, m = v[0].d, v[0].m
            r = red_ref(name, d.double() if to64 else d, m, dim, keepdim, param)
            om = any_over(m, dims, keepdim) if nd else m.clone()
            if nd == 0 and keepdim:
                om = om.reshape(r.shape)
            return [V(r, om.reshape(r.shape))]

        def proxy(t):
            return sum_over(t[0], dims, keepdim)

        def mt(t):
            fn = getattr(torch, name)
            if name == "norm":
                return fn(t[0], param) if dim is None else fn(t[0], param, dim, keepdim)
            if name in ("var", "std") and param:
                return fn(t[0], dim, unbiased=True, keepdim=keepdim)
            if dim is None and not keepdim:
                return fn(t[0])
            return fn(t[0], dim, keepdim)
        notes = [] if deliberate is None else ["masq rule: " + deliberate]
        # MaskedTensor's reductions take no dtype: no cross-check then
        return Case([x], f"{name}({{0}}{args})", ref, proxy=proxy, mt=None if to64 else mt, exact=exact,
                    grad=diffable, notes=notes)
    return make


for _n in REDUCE:
    op(_n, "reduce", "torch.masked.%s(data, dim, mask=mask); mask: any valid in the slice" % _n,
       REDUCE[_n][4])(mk_reduce(_n))

# ---------------------------------------------------------------- along a dim

ALONG = {
    "softmax": (("f64",), True, None),
    "log_softmax": (("f64",), True, "log_softmax works on masked tensors (torch 1.13: MaskedTensor lacks it)"),
    "softmin": (("f64",), True, None),
    "normalize": (("f64",), True, "normalize works on masked tensors (torch.masked: functional only)"),
    "cumsum": (("int", "f64"), True, "cumsum/cumprod work on masked tensors; masked-out entries stay masked out"),
    "cumprod": (("int", "f64"), True, "cumsum/cumprod work on masked tensors; masked-out entries stay masked out"),
}


def mk_along(name):
    dtypes, diffable, deliberate = ALONG[name]

    def make(rng, k):
        dtype = case_dtype(k, dtypes)
        shape = draw_shape(rng, k)
        x = draw_masked(rng, k, shape, dtype, "real" if name != "cumprod" else "small")
        nd = len(shape)
        dim = int(rng.integers(max(nd, 1)))
        if rng.random() < 0.3:
            dim -= max(nd, 1)
        args = f", {dim}"
        kw = {}
        if name == "normalize":
            p = float(rng.choice([2.0, 1.0, 3.0, 0.5]))
            args = f", {lit(p)}, {dim}"
            if rng.random() < 0.3:
                kw["eps"] = 0.5
                args += ", eps=0.5"
        elif rng.random() < 0.2 and dtype != torch.float64:
            kw["dtype"] = torch.float64
            args += ', dtype="float64"'
        fn = getattr(tm, name)

        def ref(v):
            d, m = v[0].d, v[0].m
            if name == "normalize":
                r = fn(d, p, dim, mask=m, **kw)
            else:
                r = fn(d, dim, mask=m, **kw)
            return [V(r, m.clone())]

        def proxy(t):
            if nd == 0:
                return t[0].clone()
            return t[0].sum(dim, keepdim=True).expand(t[0].shape)

        def mt(t):
            if nd and shape[dim] == 0 and name in ("softmax", "softmin", "log_softmax"):
                raise TorchCrash("aten._masked_softmax crashes (SIGSEGV) along an empty dim")
            if name == "softmax":
                return torch.softmax(t[0], dim, **kw)
            if name == "softmin":
                return Fn.softmin(t[0], dim, **kw)
            if name == "log_softmax":
                return torch.log_softmax(t[0], dim, **kw)
            if name == "normalize":
                return Fn.normalize(t[0], p, dim, **kw)
            return getattr(torch, name)(t[0], dim, **kw)
        notes = [] if deliberate is None else ["masq rule: " + deliberate]
        return Case([x], f"{name}({{0}}{args})", ref, proxy=proxy, mt=mt, grad=diffable, notes=notes)
    return make


for _n in ALONG:
    op(_n, "along", "torch.masked.%s(data, dim, mask=mask); mask kept" % _n, ALONG[_n][2])(mk_along(_n))

# ---------------------------------------------------------------- losses

# name: (input domain, target domain, differentiated inputs, specials)
LOSSES = {
    "mse_loss": ("real", "real", [0, 1], None),
    "l1_loss": ("real", "real", [0, 1], None),
    "binary_cross_entropy": ("p01", "p01", [0], False),   # torch: no target gradient
    "binary_cross_entropy_with_logits": ("real", "p01", [0, 1], None),
}
LOSS_SOURCE = "torch.nn.functional on the entries valid in input and target (masq rule: masked means ignored)"


def reduced(per, valid, anym, red, dtype):
    """a loss's result from its per-entry values: masked where not valid;
    mean and sum over the valid ones (masked out when none is)"""
    if red == "none":
        return V(per, valid.clone() if anym else None)
    if not anym:
        return V(per.mean() if red == "mean" else per.sum())
    if not bool(valid.any()):   # masked out; its gradients too (still checked)
        return V(torch.where(valid, per, torch.zeros((), dtype=dtype)).sum(), torch.tensor(False))
    sel = per[valid]
    return V(sel.mean() if red == "mean" else sel.sum(), torch.tensor(True))


def reduced_proxy(per, valid, red):
    return per if red == "none" else torch.where(valid, per, torch.zeros((), dtype=per.dtype)).sum()


def mk_loss(name):
    fn = getattr(Fn, name)
    xdom, tdom, diff, specials = LOSSES[name]

    def make(rng, k):
        dtype = case_dtype(k, ("f64",))
        shape = draw_shape(rng, k, maxnumel=36, empty=False)
        red = ["mean", "sum", "none"][k % 3]
        form = (k // 3) % 4   # masked operands: none, the target, the input, both (masks differ)
        x = (draw_masked if form >= 2 else draw_plain)(rng, k, shape, dtype, xdom, specials=specials)
        t = (draw_masked if form in (1, 3) else draw_plain)(rng, k + 1, shape, dtype, tdom, specials=specials)
        ins = [x, t]
        valid = x.vmask() & t.vmask()
        anym = x.masked or t.masked

        def ref(v):
            return [reduced(fn(v[0].d, v[1].d, reduction="none"), valid, anym, red, dtype)]

        return Case(ins, f'{name}({{0}}, {{1}}, reduction="{red}")', ref,
                    proxy=lambda q: reduced_proxy(q[0] + q[1], valid, red), diff=diff)
    return make


for _n in LOSSES:
    op(_n, "loss", LOSS_SOURCE)(mk_loss(_n))


def class_weight(rng, C, dtype):
    """one weight per class, in [0.25, 3): torch's weight="""
    return V(torch.from_numpy(rng.uniform(0.25, 3.0, size=(C,))).to(dtype))


def mk_class_loss(name, weighted=False):
    fn = getattr(Fn, name)

    def make(rng, k):
        dtype = case_dtype(k, ("f64",))
        nd = [2, 1, 2, 3][k % 4]
        shape = tuple(int(rng.integers(1, 5)) for _ in range(nd))
        red = ["mean", "sum", "none"][k % 3]
        x = draw_plain(rng, k, shape, dtype)
        dim = 1 if nd > 1 else 0
        C = shape[dim]
        tshape = tuple(d for i, d in enumerate(shape) if i != dim)
        cls = torch.from_numpy(rng.integers(0, C, size=tshape).astype(np.int64)).reshape(tshape)
        cls[torch.from_numpy(rng.random(tshape) < 0.2).reshape(tshape)] = -100
        masked_t = (k // 3) % 2 == 1
        tm = draw_mask(rng, tshape, "random") if masked_t else None
        if tm is not None:
            cls[~tm] = 7 + C      # not a class: never read under the mask
        t = V(cls, tm)
        valid = t.vmask() & (cls != -100)
        anym = masked_t or bool((cls == -100).any())
        ins = [x, t] + ([class_weight(rng, C, dtype)] if weighted else [])

        def ref(v):
            tt = torch.where(valid, v[1].d, torch.full_like(v[1].d, -100))
            kw = {"weight": v[2].d} if weighted else {}
            if weighted and red == "mean" and bool(valid.any()):
                # torch's weighted mean: over the valid targets' weights
                return [V(fn(v[0].d, tt, reduction="mean", **kw), torch.tensor(True) if anym else None)]
            return [reduced(fn(v[0].d, tt, reduction="none", **kw), valid, anym, red, dtype)]

        # the gradient's mask: cross_entropy's loss depends on the whole
        # slice, nll_loss's on the target entry only (with plain results, a
        # plain gradient: 0 off the target, as torch)
        def proxy(q):
            if name == "nll_loss" and anym:
                at = torch.where(valid, cls, torch.zeros((), dtype=cls.dtype)).unsqueeze(dim)
                return reduced_proxy(q[0].gather(dim, at).squeeze(dim), valid, red)
            return reduced_proxy(q[0].sum(dim), valid, red)

        wexpr = ", weight={2}" if weighted else ""
        return Case(ins, f'{name}({{0}}, {{1}}{wexpr}, reduction="{red}")', ref, proxy=proxy, diff=[0])
    return make


op("cross_entropy", "loss", "torch.nn.functional.cross_entropy with ignore_index; a masked-out target is ignored too")(
    mk_class_loss("cross_entropy"))
op("nll_loss", "loss", "torch.nn.functional.nll_loss with ignore_index; a masked-out target is ignored too")(
    mk_class_loss("nll_loss"))
op("cross_entropy_weight", "loss", "torch.nn.functional.cross_entropy with weight= and ignore_index; a masked-out "
   "target is ignored too (the mean divides by the valid targets' weights)")(mk_class_loss("cross_entropy", True))
op("nll_loss_weight", "loss", "torch.nn.functional.nll_loss with weight= and ignore_index; a masked-out "
   "target is ignored too (the mean divides by the valid targets' weights)")(mk_class_loss("nll_loss", True))


def smoothing_draw(rng, k):
    return [0.1, 0.0, 0.3, 1.0, 0.05][k % 5]


def masked_lsm(d, m, dim):
    """log_softmax over the valid logits (masq: a masked-out logit is no
    class); -inf at the masked-out ones"""
    if m is None:
        return d.log_softmax(dim)
    return torch.where(m, d, torch.full((), -math.inf, dtype=d.dtype)).log_softmax(dim)


def valid_mean(v, m, dim):
    """the mean along dim over the entries m marks (0 where there is none)"""
    z = torch.zeros((), dtype=v.dtype)
    return torch.where(m, v, z).sum(dim) / m.sum(dim).clamp(min=1).to(v.dtype)


def class_case(rng, k):
    """a class loss case's dtype, ndim, shape, reduction, class dim and class count"""
    dtype = case_dtype(k, ("f64",))
    nd = [2, 1, 2, 3][k % 4]
    shape = tuple(int(rng.integers(1, 5)) for _ in range(nd))
    dim = 1 if nd > 1 else 0
    return dtype, nd, shape, ["mean", "sum", "none"][k % 3], dim, shape[dim]


@op("cross_entropy_smoothing", "loss", "torch.nn.functional.cross_entropy with label_smoothing= (and weight=, "
    "ignore_index); a masked-out target is ignored; masked-out logits: masq's rule (no class)")
def mk_ce_smoothing(rng, k):
    dtype, nd, shape, red, dim, C = class_case(rng, k)
    e = smoothing_draw(rng, k)
    masked_x = k % 6 == 5
    x = (draw_masked if masked_x else draw_plain)(rng, k, shape, dtype, specials=False)
    tshape = tuple(d for i, d in enumerate(shape) if i != dim)
    cls = torch.from_numpy(rng.integers(0, C, size=tshape).astype(np.int64)).reshape(tshape)
    cls[torch.from_numpy(rng.random(tshape) < 0.2).reshape(tshape)] = -100
    tm = draw_mask(rng, tshape, "random") if (k // 2) % 2 else None
    if tm is not None:
        cls[~tm] = 7 + C
    t = V(cls, tm)
    valid = t.vmask() & (cls != -100)
    if masked_x:   # the target's logit must be valid too
        at = torch.where(valid, cls, torch.zeros((), dtype=cls.dtype)).unsqueeze(dim)
        valid = valid & x.m.gather(dim, at).squeeze(dim)
    anym = tm is not None or masked_x or bool((cls == -100).any())
    weighted = k % 2 == 1
    ins = [x, t] + ([class_weight(rng, C, dtype)] if weighted else [])

    def ref(v):
        w = v[2].d if weighted else None
        if not masked_x:
            tt = torch.where(valid, v[1].d, torch.full_like(v[1].d, -100))
            kw = {"weight": w, "label_smoothing": e}
            if red != "none" and bool(valid.any()):
                return [V(Fn.cross_entropy(v[0].d, tt, reduction=red, **kw), torch.tensor(True) if anym else None)]
            return [reduced(Fn.cross_entropy(v[0].d, tt, reduction="none", **kw), valid, anym, red, dtype)]
        # masq's rule for masked-out logits: out of the log-sum-exp and of the classes smoothed over
        lsm = masked_lsm(v[0].d, x.m, dim)
        at = torch.where(valid, v[1].d, torch.zeros((), dtype=cls.dtype)).unsqueeze(dim)
        wv = w if w is not None else torch.ones(C, dtype=dtype)
        wb = wv.reshape([C if i == dim else 1 for i in range(nd)])
        wt = wv[at.squeeze(dim)]
        per = -(1 - e) * wt * lsm.gather(dim, at).squeeze(dim) - e * valid_mean(lsm * wb, x.m, dim)
        if red == "mean" and bool(valid.any()):
            z = torch.zeros((), dtype=dtype)
            return [V(torch.where(valid, per, z).sum() / torch.where(valid, wt, z).sum(), torch.tensor(True))]
        return [reduced(per, valid, True, red, dtype)]

    wexpr = ", weight={2}" if weighted else ""
    return Case(ins, f'cross_entropy({{0}}, {{1}}{wexpr}, label_smoothing={lit(e)}, reduction="{red}")', ref,
                proxy=lambda q: reduced_proxy(q[0].sum(dim), valid, red), diff=[0],
                notes=["masq rule: a masked-out logit is no class"] if masked_x else [])


@op("cross_entropy_prob", "loss", "torch.nn.functional.cross_entropy with class probabilities as the target "
    "(and weight=, label_smoothing=); masked-out target entries and logits: masq's rule (left out)")
def mk_ce_prob(rng, k):
    dtype, nd, shape, red, dim, C = class_case(rng, k)
    e = smoothing_draw(rng, k) if k % 2 else 0.0
    form = (k // 3) % 4   # masked operands: none, the target, the input, both
    x = (draw_masked if form >= 2 else draw_plain)(rng, k, shape, dtype, specials=False)
    t = (draw_masked if form in (1, 3) else draw_plain)(rng, k + 1, shape, dtype, "p01", specials=False)
    weighted = k % 4 >= 2
    ins = [x, t] + ([class_weight(rng, C, dtype)] if weighted else [])
    anym = x.masked or t.masked
    both = x.vmask() & t.vmask()
    valid = both.any(dim)

    def ref(v):
        w = v[2].d if weighted else None
        if not anym:
            return [V(Fn.cross_entropy(v[0].d, v[1].d, weight=w, label_smoothing=e, reduction=red))]
        lsm = masked_lsm(v[0].d, x.m, dim)
        wv = w if w is not None else torch.ones(C, dtype=dtype)
        wb = wv.reshape([C if i == dim else 1 for i in range(nd)])
        z = torch.zeros((), dtype=dtype)
        base = -torch.where(both, lsm * v[1].d * wb, z).sum(dim)
        per = (1 - e) * base - e * valid_mean(lsm * wb, both, dim)
        return [reduced(per, valid, True, red, dtype)]

    def proxy(q):
        # every logit of a row feeds its loss; a target entry only where its logit is valid too
        r = q[0] + torch.where(both, q[1], torch.zeros((), dtype=q[1].dtype))
        return reduced_proxy(r.sum(dim), valid, red)

    wexpr = ", weight={2}" if weighted else ""
    ls = f", label_smoothing={lit(e)}" if e else ""
    return Case(ins, f'cross_entropy({{0}}, {{1}}{wexpr}{ls}, reduction="{red}")', ref, proxy=proxy, diff=[0, 1],
                notes=["masq rule: masked-out entries are left out"] if anym else [])


@op("bce_logits_pos_weight", "loss", LOSS_SOURCE + "; pos_weight= per class of the last dim")
def mk_bce_pos_weight(rng, k):
    dtype = case_dtype(k, ("f64",))
    shape = draw_shape(rng, k, maxnumel=36, empty=False)
    red = ["mean", "sum", "none"][k % 3]
    form = (k // 3) % 4
    x = (draw_masked if form >= 2 else draw_plain)(rng, k, shape, dtype, "real")
    t = (draw_masked if form in (1, 3) else draw_plain)(rng, k + 1, shape, dtype, "p01")
    C = shape[-1] if len(shape) else 1
    pw = V(torch.from_numpy(rng.uniform(0.25, 3.0, size=(C,))).to(dtype))
    valid = x.vmask() & t.vmask()
    anym = x.masked or t.masked

    def ref(v):
        per = Fn.binary_cross_entropy_with_logits(v[0].d, v[1].d, pos_weight=v[2].d, reduction="none")
        return [reduced(per, valid, anym, red, dtype)]

    return Case([x, t, pw], f'binary_cross_entropy_with_logits({{0}}, {{1}}, pos_weight={{2}}, reduction="{red}")',
                ref, proxy=lambda q: reduced_proxy(q[0] + q[1], valid, red), diff=[0, 1])


@op("bce_weight", "loss", LOSS_SOURCE + "; weight= broadcast to the input (binary_cross_entropy and "
    "binary_cross_entropy_with_logits, with pos_weight= now and then)")
def mk_bce_weight(rng, k):
    dtype = case_dtype(k, ("f64",))
    shape = draw_shape(rng, k, maxnumel=36, empty=False)
    red = ["mean", "sum", "none"][k % 3]
    form = (k // 3) % 4
    logits = k % 2 == 1
    x = (draw_masked if form >= 2 else draw_plain)(rng, k, shape, dtype, "real" if logits else "p01",
                                                   specials=None if logits else False)
    t = (draw_masked if form in (1, 3) else draw_plain)(rng, k + 1, shape, dtype, "p01", specials=False)
    wshape = bshape(rng, shape)
    while len(wshape) > len(shape):   # torch: weight broadcasts to the input's shape
        wshape = wshape[1:]
    w = V(torch.from_numpy(rng.uniform(0.25, 3.0, size=wshape)).to(dtype).reshape(wshape))
    ins = [x, t, w]
    pw = logits and k % 4 == 3
    if pw:
        ins.append(V(torch.from_numpy(rng.uniform(0.25, 3.0, size=(shape[-1] if shape else 1,))).to(dtype)))
    valid = x.vmask() & t.vmask()
    anym = x.masked or t.masked
    name = "binary_cross_entropy_with_logits" if logits else "binary_cross_entropy"

    def ref(v):
        kw = {"pos_weight": v[3].d} if pw else {}
        per = getattr(Fn, name)(v[0].d, v[1].d, weight=v[2].d.expand(shape), reduction="none", **kw)
        return [reduced(per, valid, anym, red, dtype)]

    extra = ", pos_weight={3}" if pw else ""
    return Case(ins, f'{name}({{0}}, {{1}}, weight={{2}}{extra}, reduction="{red}")', ref,
                proxy=lambda q: reduced_proxy(q[0] + q[1], valid, red), diff=[0, 1] if logits else [0])


@op("layer_norm", "loss", "torch.nn.functional.layer_norm's formula over the valid entries of each slice; mask kept")
def mk_layer_norm(rng, k):
    dtype = case_dtype(k, ("f64",))
    shape = draw_shape(rng, k, nd=[2, 1, 3, 2][k % 4], maxnumel=36, empty=False)
    nd = 1 if len(shape) == 1 or k % 3 else 2
    dims = tuple(range(len(shape) - nd, len(shape)))
    eps = [1e-5, 0.1][k % 2]
    x = (draw_masked if k % 5 else draw_plain)(rng, k, shape, dtype, "small", specials=False)
    affine = k % 4 == 1
    ins = [x]
    call = "layer_norm({0}, %s" % lit(list(shape[-nd:]))
    if affine:
        ins += [draw_plain(rng, k, shape[-nd:], dtype, "real", specials=False) for _ in range(2)]
        call += ", weight={1}, bias={2}"
    call += ", eps=%s)" % lit(eps)

    def ref(v):
        d, m = v[0].d, v[0].vmask()
        z = torch.zeros((), dtype=d.dtype)
        cnt = m.sum(dims, keepdim=True)
        mu = torch.where(m, d, z).sum(dims, keepdim=True) / cnt
        var = torch.where(m, (d - mu) ** 2, z).sum(dims, keepdim=True) / cnt
        y = (d - mu) / torch.sqrt(var + eps)
        if affine:
            y = y * v[1].d + v[2].d
        return [V(y, v[0].m.clone() if v[0].masked else None)]

    def proxy(q):
        r = q[0].sum(dims, keepdim=True).expand(shape)
        return r + q[1] + q[2] if affine else r

    return Case(ins, call, ref, proxy=proxy)


# ---------------------------------------------------------------- optimizer steps

OPTIM_SOURCE = ("torch.optim.%s's step (foreach=False) with the state set; where the gradient is masked out, "
                "parameter and state are left as they were")


def optim_ref(kind, hp, has_state):
    """[w, state tensors..., (adam) step] after one torch.optim step from
    the given state; entries whose gradient is masked out keep w and state"""
    def ref(v):
        w, g = v[0], v[1]
        ok = g.vmask()
        p = w.d.clone().requires_grad_(True)
        p.grad = torch.where(ok, g.d, torch.zeros((), dtype=g.d.dtype))
        if kind == "sgd":
            opt = torch.optim.SGD([p], lr=hp["lr"], momentum=hp["momentum"], weight_decay=hp["wd"], foreach=False,
                                  dampening=hp.get("dampening", 0.0), nesterov=hp.get("nesterov", False))
            if has_state:
                opt.state[p]["momentum_buffer"] = v[2].d.clone()
            olds = [v[2].d] if has_state else [torch.zeros_like(w.d)]
        elif kind == "adagrad":
            opt = torch.optim.Adagrad([p], lr=hp["lr"], eps=hp["eps"], weight_decay=hp["wd"], foreach=False)
            if has_state:
                opt.state[p]["sum"].copy_(v[2].d)
            olds = [v[2].d if has_state else torch.zeros_like(w.d)]
        else:
            ams = hp.get("amsgrad", False)
            opt = (torch.optim.AdamW if kind == "adamw" else torch.optim.Adam)(
                [p], lr=hp["lr"], betas=hp["betas"], eps=hp["eps"], weight_decay=hp["wd"], foreach=False, amsgrad=ams)
            if has_state:
                opt.state[p] = {"step": torch.tensor(float(hp["step"])), "exp_avg": v[2].d.clone(),
                                "exp_avg_sq": v[3].d.clone()}
                if ams:
                    opt.state[p]["max_exp_avg_sq"] = v[4].d.clone()
            olds = [v[2].d, v[3].d] if has_state else [torch.zeros_like(w.d)] * 2
        with torch.no_grad():
            opt.step()
        st = opt.state[p]
        news = {"sgd": ["momentum_buffer"], "adagrad": ["sum"], "adam": ["exp_avg", "exp_avg_sq"],
                "adamw": ["exp_avg", "exp_avg_sq"]}[kind]
        out = [V(torch.where(ok, p.detach(), w.d))]
        if kind != "sgd" or hp["momentum"] != 0:
            out += [V(torch.where(ok, st[key], old)) for key, old in zip(news, olds)]
        if kind in ("adam", "adamw"):
            out.append(V(torch.tensor(hp["step"] + 1, dtype=torch.int64)))
            if hp.get("amsgrad", False):
                out.append(V(torch.where(ok, st["max_exp_avg_sq"], v[4].d if has_state else torch.zeros_like(w.d))))
        return out
    return ref


def mk_optim(kind):
    def make(rng, k):
        dtype = case_dtype(k, ("f64",))
        shape = draw_shape(rng, k, maxnumel=36)
        w = draw_plain(rng, k, shape, dtype, "real", specials=False)
        # the gradient: plain, or masked with every kind of mask (specials at valid entries too)
        g = (draw_masked if k % 4 else draw_plain)(rng, k, shape, dtype, "real")
        has_state = k % 3 != 0
        hp = {"lr": float(rng.choice([0.1, 0.01, 1.0, 0.5])), "wd": float(rng.choice([0.0, 0.0, 0.01, 0.5]))}
        ins = [w, g]
        if kind == "sgd":
            hp["momentum"] = float(rng.choice([0.0, 0.9, 0.5])) if k % 5 else 0.0
            has_state = has_state and hp["momentum"] != 0
            if has_state:
                ins.append(draw_plain(rng, k, shape, dtype, "real", specials=False))
            call = "flat(sgd_step({0}, {1}, %s, momentum=%s, state=%s, weight_decay=%s" % (
                lit(hp["lr"]), lit(hp["momentum"]), "{2}" if has_state else "none", lit(hp["wd"]))
            if hp["momentum"] != 0 and k % 3 == 1:   # torch's dampening, or Nesterov momentum (undampened)
                hp["dampening"] = float(rng.choice([0.1, 0.5]))
                call += ", dampening=%s" % lit(hp["dampening"])
            elif hp["momentum"] != 0 and k % 3 == 2:
                hp["nesterov"] = True
                call += ", nesterov=true"
            call += "))"
        elif kind == "adagrad":
            hp["eps"] = float(rng.choice([1e-10, 1e-3, 0.1]))
            if has_state:
                ins.append(draw_plain(rng, k, shape, dtype, "nonneg", specials=False))
            call = "flat(adagrad_step({0}, {1}, %s, lr=%s, eps=%s, weight_decay=%s))" % (
                "{2}" if has_state else "none", lit(hp["lr"]), lit(hp["eps"]), lit(hp["wd"]))
        else:
            hp["eps"] = float(rng.choice([1e-8, 1e-3]))
            hp["betas"] = [(0.9, 0.999), (0.8, 0.99), (0.5, 0.5), (0.0, 0.9)][k % 4]
            hp["step"] = int(rng.integers(1, 30)) if has_state else 0
            hp["amsgrad"] = k % 5 in (1, 3)
            if has_state:
                ins += [draw_plain(rng, k, shape, dtype, "small", specials=False),
                        draw_plain(rng, k, shape, dtype, "nonneg", specials=False)]
                if hp["amsgrad"]:
                    ins.append(draw_plain(rng, k, shape, dtype, "nonneg", specials=False))
            state = ("[{2}, {3}, %d, {4}]" if hp["amsgrad"] else "[{2}, {3}, %d]") % hp["step"] if has_state else "none"
            call = "flat(%s_step({0}, {1}, %s, lr=%s, betas=%s, eps=%s, weight_decay=%s%s))" % (
                kind, state, lit(hp["lr"]), lit(list(hp["betas"])), lit(hp["eps"]), lit(hp["wd"]),
                ", amsgrad=true" if hp["amsgrad"] else "")
        return Case(ins, call, optim_ref(kind, hp, has_state), grad=False, multi=True,
                    notes=["masq rule: a masked-out gradient entry leaves w and state as they were"]
                    if g.masked else [])
    return make


for _n, _t in (("sgd", "SGD"), ("adagrad", "Adagrad"), ("adam", "Adam"), ("adamw", "AdamW")):
    op(_n + "_step", "optim", OPTIM_SOURCE % _t)(mk_optim(_n))


# ---------------------------------------------------------------- allclose


@op("allclose", "reduce", "torch.allclose on the entries valid in both (a plain operand takes the other's mask; "
    "masked operands with different masks: false)")
def mk_allclose(rng, k):
    dtype = case_dtype(k, ("int", "f64"))
    shape = draw_shape(rng, k, maxnumel=24)
    form = (k // 2) % 4   # masked operands: none, a, b, both
    a = (draw_masked if form in (1, 3) else draw_plain)(rng, k, shape, dtype, specials=k % 3 == 0)
    bshp = bshape(rng, shape) if k % 5 == 4 else shape
    rtol, atol = [(1e-5, 1e-8), (1e-3, 0.0), (0.0, 0.5), (1e-5, 1e-8)][k % 4]
    equal_nan = k % 3 == 0
    # b: a copy of a (broadcast down to bshp) moved by a noise that straddles the tolerance
    d = a.d.clone()
    if bshp != shape:
        d = d[tuple(slice(0, 1) if len(bshp) - len(shape) + i >= 0 and bshp[len(bshp) - len(shape) + i] == 1
                    else slice(None) for i in range(len(shape)))] if len(bshp) >= len(shape) else None
        if d is None or tuple(d.shape) != tuple(bshp[-len(shape):] if shape else ()):
            raise Skip()
        d = d.reshape(bshp)
    if dtype.is_floating_point:
        scale = float(rng.choice([0.0, 0.3, 0.9, 1.1, 3.0]))
        tol = atol + rtol * d.abs()
        noise = torch.from_numpy(np.asarray(rng.choice([-1.0, 1.0], size=tuple(d.shape)))).to(dtype) * tol * scale
        hit = torch.from_numpy(np.asarray(rng.random(tuple(d.shape)) < 0.5))
        d = torch.where(hit, d + noise, d)
    elif k % 2:
        d = d + torch.from_numpy(np.asarray(rng.random(tuple(d.shape)) < 0.1).astype(np.int64))
    bm = None
    if form >= 2:
        bm = a.m.reshape(shape).clone() if form == 3 and bshp == shape and k % 4 else draw_mask(rng, bshp, "random")
    b = V(d, bm)
    call = "tensor(allclose({0}, {1}, rtol=%s, atol=%s, equal_nan=%s))" % (lit(rtol), lit(atol), lit(equal_nan))

    def ref(v):
        full = torch.broadcast_shapes(v[0].d.shape, v[1].d.shape)
        ma = (v[0].m if v[0].masked else v[1].vmask()).expand(full)
        mb = (v[1].m if v[1].masked else v[0].vmask()).expand(full)
        if not torch.equal(ma, mb):
            return [V(torch.tensor(False))]
        x, y = v[0].d.expand(full)[ma], v[1].d.expand(full)[ma]
        return [V(torch.tensor(torch.allclose(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)))]

    return Case([a, b], call, ref, exact=True, grad=False)


# ---------------------------------------------------------------- where


@op("where", "where", "data and mask picked by cond; a plain branch or number counts as valid")
def mk_where(rng, k):
    dtype = case_dtype(k, ("int", "f64", "bool"))
    shape = draw_shape(rng, k, maxnumel=36)
    mode = ["mm", "mp", "pm", "ms", "sm", "mm"][k % 6]
    cshape = bshape(rng, shape) if rng.random() < 0.3 else shape
    c = V(torch.from_numpy(rng.random(int(np.prod(cshape))) < 0.5).reshape(cshape))
    ins = [c]
    calls = []
    s = None
    for side, kind in enumerate(mode):
        sh = shape if rng.random() < 0.7 else bshape(rng, shape)
        if kind == "m":
            ins.append(draw_masked(rng, k + side, sh, dtype))
            calls.append("{%d}" % (len(ins) - 1))
        elif kind == "p":
            ins.append(draw_plain(rng, k, sh, dtype))
            calls.append("{%d}" % (len(ins) - 1))
        else:
            s = scalar(rng, dtype)
            calls.append(lit(s))
    try:
        torch.broadcast_shapes(*[t.d.shape for t in ins])
    except RuntimeError:
        raise Skip()

    def branch(v, i, kind):
        if kind == "s":
            return torch.tensor(s, dtype=dtype), torch.tensor(True)
        t = v[i]
        return t.d, t.vmask()

    def ref(v):
        idx = 1
        br = []
        for kind in mode:
            br.append(branch(v, idx, kind))
            if kind != "s":
                idx += 1
        d = torch.where(v[0].d, br[0][0], br[1][0])
        m = torch.where(v[0].d, br[0][1], br[1][1]).expand(d.shape).clone()
        return [V(d, m)]

    def proxy(t):
        # t[0] is the cond (not differentiated): linear in each branch
        cond = ins[0].d
        idx = 1
        br = []
        for kind in mode:
            if kind == "s":
                br.append(torch.zeros((), dtype=torch.float64))
            else:
                br.append(t[idx])
                idx += 1
        z = torch.zeros((), dtype=torch.float64)
        return torch.where(cond, br[0], z) + torch.where(cond, z, br[1])

    def mt(t):
        idx = 1
        br = []
        for kind in mode:
            if kind == "s":
                br.append(s)
            else:
                br.append(t[idx])
                idx += 1
        return torch.where(t[0], br[0], br[1])
    return Case(ins, f"where({{0}}, {calls[0]}, {calls[1]})", ref, proxy=proxy, mt=mt, exact=True,
                diff=[i for i in range(1, len(ins))])

# ---------------------------------------------------------------- shape ops


def view_case(rng, k, nd=None, minsize=0, maxnumel=48, dtypes=("int", "f64", "bool"), empty=None):
    """an op applied to data and mask alike (torch.masked passthrough, 1.4)"""
    dtype = case_dtype(k, dtypes)
    shape = draw_shape(rng, k, nd=nd, maxnumel=maxnumel, empty=empty)
    if minsize and any(s < minsize for s in shape):
        shape = tuple(max(s, minsize) for s in shape)
    x = draw_masked(rng, k, shape, dtype)
    return x, shape


def passthrough(f):
    def ref(v):
        return [V(f(v[0].d), f(v[0].m))]
    return ref


def mk_view(name, argsf, f, mtf=None, nd=None, minsize=0, deliberate=None, empty=None):
    def make(rng, k):
        x, shape = view_case(rng, k, nd=nd(k) if callable(nd) else nd, minsize=minsize, empty=empty)
        a = argsf(rng, shape)
        if a is None:
            raise Skip()
        margs, targs = a
        fn = (lambda t: f(t, *targs))
        try:
            fn(x.d)
        except (RuntimeError, IndexError, ValueError):
            raise Skip()
        notes = [] if deliberate is None else ["masq rule: " + deliberate]
        return Case([x], f"{name}({{0}}{margs})", passthrough(fn), proxy=lambda t: fn(t[0]),
                    mt=(lambda t: (mtf or f)(t[0], *targs)), exact=True, notes=notes)
    return make


def a_select(rng, shape):
    if not shape:
        return None
    d = int(rng.integers(len(shape)))
    if shape[d] == 0:
        return None
    i = int(rng.integers(shape[d]))
    if rng.random() < 0.3:
        i -= shape[d]
    if rng.random() < 0.3:
        d -= len(shape)
    return f", {d}, {i}", (d, i)


def a_transpose(rng, shape):
    n = max(len(shape), 1)
    d0, d1 = int(rng.integers(n)), int(rng.integers(n))
    if rng.random() < 0.3:
        d0 -= n
    return f", {d0}, {d1}", (d0, d1)


def a_reshape(rng, shape):
    n = int(np.prod(shape))
    dims = []
    rest = n
    if n == 0:
        dims = [int(rng.integers(1, 4)), 0] if rng.random() < 0.5 else [0]
        if rng.random() < 0.3:
            dims.append(int(rng.integers(1, 3)))
    else:
        for _ in range(int(rng.integers(0, 4))):
            divs = [q for q in range(1, rest + 1) if rest % q == 0]
            q = int(rng.choice(divs))
            dims.append(q)
            rest //= q
        dims.append(rest)
        dims = [q for q in dims if q != 1 or rng.random() < 0.5]
        if int(np.prod(dims)) != n:
            dims.append(1)
        if rng.random() < 0.3 and dims:
            dims[int(rng.integers(len(dims)))] = -1
    rng.shuffle(dims)
    if not dims and n == 1:
        return ", []", ([],)
    if not dims:
        return None
    return ", " + ", ".join(str(q) for q in dims), (dims,)


def a_flatten(rng, shape):
    n = max(len(shape), 1)
    s, e = sorted([int(rng.integers(n)), int(rng.integers(n))])
    if rng.random() < 0.3:
        e -= n
    if rng.random() < 0.3:
        return "", (0, -1)
    return f", {s}, {e}", (s, e)


def a_unsqueeze(rng, shape):
    n = len(shape) + 1
    d = int(rng.integers(-n, n))
    return f", {d}", (d,)


def a_expand(rng, shape):
    new = []
    for s in shape:
        if s == 1:
            new.append(int(rng.choice([1, 2, 3, 4])) if rng.random() < 0.7 else -1)
        else:
            new.append(-1 if rng.random() < 0.3 else s)
    if rng.random() < 0.5 and len(new) < 4:
        new = [int(rng.integers(1, 4))] + new
    if not new:
        new = [int(rng.integers(1, 4))]
    return ", " + ", ".join(str(q) for q in new), (new,)


def a_broadcast_to(rng, shape):
    m, t = a_expand(rng, shape)
    new = [shape[i - (len(t[0]) - len(shape))] if q == -1 else q for i, q in enumerate(t[0])]
    return ", " + lit(new), (new,)


def a_narrow(rng, shape):
    if not shape:
        return None
    d = int(rng.integers(len(shape)))
    start = int(rng.integers(0, shape[d] + 1))
    length = int(rng.integers(0, shape[d] - start + 1))
    return f", {d}, {start}, {length}", (d, start, length)


def a_t(rng, shape):
    return "", ()


VIEWS = {
    "select": (a_select, lambda t, d, i: t.select(d, i), None),
    "transpose": (a_transpose, lambda t, a, b: t.transpose(a, b), None),
    "t": (a_t, lambda t: t.t(), lambda k: k % 3),
    "reshape": (a_reshape, lambda t, s: t.reshape(s), None),
    "view": (a_reshape, lambda t, s: t.reshape(s), None),
    "flatten": (a_flatten, lambda t, s, e: t.flatten(s, e), None),
    "unsqueeze": (a_unsqueeze, lambda t, d: t.unsqueeze(d), None),
    "expand": (a_expand, lambda t, s: t.expand(s), None),
    "broadcast_to": (a_broadcast_to, lambda t, s: t.broadcast_to(s), None),
    "narrow": (a_narrow, lambda t, d, s, n: t.narrow(d, s, n), None),
}
for _n, (_a, _f, _nd) in VIEWS.items():
    op(_n, "view", "applied to data and mask alike (torch.masked passthrough)")(mk_view(_n, _a, _f, nd=_nd))


def a_flip(rng, shape):
    if not shape:
        return None
    dims = sorted({int(d) for d in rng.integers(-len(shape), len(shape), int(rng.integers(1, len(shape) + 1)))},
                  key=lambda d: d % len(shape))
    dims = list({d % len(shape): d for d in dims}.values())   # one entry per dim
    return "".join(", " + lit(d) for d in dims), (dims,)


# flip: one more view torch.masked passes through. (x.T cannot join: the
# scripts' pool helper T of check.masq hides the builtin T.)
op("flip", "view", "torch.flip applied to data and mask alike (torch.masked passthrough)")(
    mk_view("flip", a_flip, lambda t, d: t.flip(d)))


# --- tril, triu, repeat, roll, diff, bmm, einsum (runtime/kernels/shape_more.h): torch.masked has
# none of them; the references apply masq's rules to torch's plain ops


def a_repeat(rng, shape):
    sizes = [int(rng.integers(0, 3)) if rng.random() < 0.2 else int(rng.integers(1, 4)) for _ in shape]
    sizes = [int(rng.integers(1, 3)) for _ in range(int(rng.integers(0, 2)))] + sizes
    if not sizes:
        sizes = [int(rng.integers(1, 4))]
    if int(np.prod([max(q, 1) for q in sizes]) * max(int(np.prod(shape)), 1)) > 400:
        return None
    return ", " + ", ".join(str(q) for q in sizes), tuple(sizes)


def a_roll(rng, shape):
    if not shape or rng.random() < 0.3:
        sh = int(rng.integers(-7, 8))
        return f", {sh}", (sh, None)
    n = int(rng.integers(1, len(shape) + 1))
    dims = [int(d) for d in rng.choice(len(shape), n, replace=False)]
    dims = [d - len(shape) if rng.random() < 0.3 else d for d in dims]
    shifts = [int(rng.integers(-7, 8)) for _ in dims]
    return f", {lit(shifts)}, {lit(dims)}", (tuple(shifts), tuple(dims))


for _n, _a, _f in (("repeat", a_repeat, lambda t, *s: t.repeat(*s)),
                   ("roll", a_roll, lambda t, sh, d: torch.roll(t, sh, d))):
    op(_n, "view", "torch's op applied to data and mask alike")(mk_view(_n, _a, _f))


def mk_tri(name):
    fn = getattr(torch, name)

    def make(rng, k):
        x, shape = view_case(rng, k, nd=2 + k % 3)
        diag = int(rng.integers(-3, 4))
        return Case([x], f"{name}({{0}}, {diag})", lambda v: [V(fn(v[0].d, diag), v[0].m)],
                    proxy=lambda t: fn(t[0], diag), exact=True,
                    notes=["masq rule: entries outside the triangle are 0 and keep their validity"])
    return make


for _n in ("tril", "triu"):
    op(_n, "view", "torch's op on the data, the mask kept",
       "zeroed entries keep their validity (torch.masked has no tril/triu)")(mk_tri(_n))


def diff_steps(d, n, dim, f):
    for _ in range(n):
        L = d.shape[dim]
        if L == 0:
            break
        d = f(d.narrow(dim, 1, L - 1), d.narrow(dim, 0, L - 1))
    return d


@op("diff", "view", "torch.diff of the data; a difference is valid where both entries are",
    "valid where both entries are (torch.masked has no diff)")
def mk_diff(rng, k):
    x, shape = view_case(rng, k, nd=1 + k % 3)
    n = int(rng.integers(0, 4)) if k % 5 else 1
    dim = int(rng.integers(-len(shape), len(shape)))
    # prepend=/append=, plain or masked, joined along dim first (torch.diff;
    # n = 0 is x itself, without them)
    ins, sides = [x], []
    for side in ("prepend", "append") if k % 3 == 2 else ():
        if rng.random() < 0.7:
            s = list(shape)
            s[dim] = int(rng.integers(1, 3))
            ins.append((draw_masked if rng.random() < 0.5 else draw_plain)(rng, k, tuple(s), x.d.dtype))
            sides.append(side)

    def joined(t):
        if n == 0:
            return t[0]
        parts = ([t[1]] if "prepend" in sides else []) + [t[0]] + ([t[-1]] if "append" in sides else [])
        return torch.cat(parts, dim)

    def ref(v):
        d = joined([w.d for w in v])
        out = diff_steps(d, n, dim, (lambda a, b: a ^ b) if d.dtype == torch.bool else (lambda a, b: a - b))
        masked = any(w.masked for w in (v if n else v[:1]))
        m = diff_steps(joined([w.vmask() for w in v]), n, dim, lambda a, b: a & b) if masked else None
        return [V(out, m)]
    # dependencies: + instead of -, so that no coefficient cancels
    args = "".join(f", {side}={{{i + 1}}}" for i, side in enumerate(sides))
    return Case(ins, f"diff({{0}}, {n}, {dim}{args})", ref,
                proxy=lambda t: diff_steps(joined(t), n, dim, lambda a, b: a + b), exact=True,
                diff=None if n else [0], notes=["masq rule: a difference is valid where both its entries are"])


def einsum_terms(spec, vs):
    """the operands' terms and the output's, '...' spelled as capitals (right-aligned)"""
    ins, _, out = spec.replace(" ", "").partition("->")
    terms = ins.split(",")
    nell = max(v.d.dim() - len(t.replace("...", "")) for t, v in zip(terms, vs))
    caps = "ABCDEFGH"[:max(nell, 0)]
    full = []
    for t, v in zip(terms, vs):
        e = v.d.dim() - len(t.replace("...", ""))
        full.append(t.replace("...", caps[len(caps) - e:]) if "..." in t else t)
    if _:
        out = out.replace("...", caps)
    else:
        letters = "".join(full)
        out = caps + "".join(sorted(c for c in set(letters) if c.islower() and letters.count(c) == 1))
    return full, out


def einsum_ref(spec, vs):
    """every product term spelled out: valid where all its factors are; the
    sum of the valid ones (a masked-out factor never meets a valid inf);
    masked out where there is none"""
    terms, out = einsum_terms(spec, vs)
    labels = sorted(set("".join(terms)))
    sizes = {}
    for t, v in zip(terms, vs):
        for c, n in zip(t, v.d.shape):
            if n != 1 or c not in sizes:
                sizes[c] = n

    def spread(x, t):
        # x over term t: its diagonals taken, its labels in `labels` order, 1 for the others
        here = "".join(c for c in labels if c in t)
        y = torch.einsum(f"{t}->{here}", x) if x.dtype != torch.bool else \
            torch.einsum(f"{t}->{here}", x.to(torch.float64)) > 0
        return y.reshape([y.shape[here.index(c)] if c in here else 1 for c in labels])
    prod, valid = None, None
    for t, v in zip(terms, vs):
        d = spread(v.d, t)
        prod = d if prod is None else prod * d
        m = spread(v.vmask(), t)
        valid = m if valid is None else valid & m
    shape = [sizes[c] for c in labels]
    prod = prod.expand(shape)
    valid = valid.expand(shape)
    summed = [i for i, c in enumerate(labels) if c not in out]
    zero = torch.zeros((), dtype=prod.dtype)
    d = torch.where(valid, prod, zero)
    if summed:
        d = d.sum(summed)
        valid = valid.any(summed[0]) if len(summed) == 1 else valid.sum(summed) > 0
    kept = [c for c in labels if c in out]
    perm = [kept.index(c) for c in out]
    d, valid = d.permute(perm), valid.permute(perm)
    if d.dtype == torch.bool:
        d = d.to(torch.int64)
    if not any(v.masked for v in vs):
        return [V(d)]
    return [V(d, valid)]


def einsum_proxy(spec, vs):
    """the same sum with every factor's mask multiplied in: which inputs feed which outputs"""
    return lambda t: torch.einsum(spec, *[ti.to(torch.float64) * v.vmask().to(torch.float64)
                                          for ti, v in zip(t, vs)])


EINSUMS = ["ij,jk->ik", "bij,bjk->bik", "ij->ji", "ii->i", "ii", "i,j->ij", "...ij,...jk",
           "ij,kj", "bij->b", "ij,jk,kl->il", "i,i->", "bii->bi", "ij,j->i", "...j,j->..."]


def einsum_case(rng, k, spec):
    terms = spec.split("->")[0].split(",")
    size = {c: (1 if rng.random() < 0.15 else int(rng.integers(2, 5))) for c in "ijklb"}
    if k % 9 == 4:
        size["j"] = 0
    ell = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))]
    dtype = case_dtype(k, ("int", "f64"))
    ins = []
    for t in terms:
        shape = (ell if "..." in t else []) + [size[c] for c in t.replace("...", "")]
        if "..." in t and ell and rng.random() < 0.4:
            shape[int(rng.integers(len(ell)))] = 1  # broadcast under the ellipsis
        v = draw_masked(rng, k, tuple(shape), dtype) if rng.random() < 0.8 else draw_plain(rng, k, tuple(shape), dtype)
        ins.append(v)
    call = f'einsum("{spec}", ' + ", ".join(f"{{{i}}}" for i in range(len(ins))) + ")"
    return Case(ins, call, lambda v: einsum_ref(spec, v), proxy=einsum_proxy(spec, ins),
                notes=["masq rule: a product is valid where all its factors are; sums skip the rest"])


@op("einsum", "product", "every product term spelled out with torch: valid where all its factors "
    "are; the sum of the valid ones, masked out where there is none",
    "products and sums of masked operands (torch.masked has no einsum)")
def mk_einsum(rng, k):
    return einsum_case(rng, k, EINSUMS[k % len(EINSUMS)])


@op("bmm", "product", "as einsum(\"bij,bjk->bik\")",
    "products and sums of masked operands (torch.masked has no bmm)")
def mk_bmm(rng, k):
    c = einsum_case(rng, k, "bij,bjk->bik")
    c.call = "bmm({0}, {1})"
    return c


@op("cat", "view", "torch.cat of data and of masks; a plain tensor counts as all valid")
def mk_cat(rng, k):
    dtype = case_dtype(k, ("int", "f64", "bool"))
    shape = draw_shape(rng, k, nd=1 + k % 4, maxnumel=24)
    nd = len(shape)
    dim = int(rng.integers(nd))
    n = int(rng.integers(2, 4))
    ins = []
    notes = []
    for i in range(n):
        sh = list(shape)
        sh[dim] = int(rng.integers(0, 4))
        if i == 0 or rng.random() < 0.75:
            ins.append(draw_masked(rng, k + i, tuple(sh), dtype))
        else:
            ins.append(draw_plain(rng, k, tuple(sh), dtype))
            notes = ["masq rule: a plain tensor next to masked ones counts as all valid"]
    dd = dim - nd if rng.random() < 0.3 else dim
    call = "cat([" + ", ".join("{%d}" % i for i in range(n)) + "]" + (f", {dd})" if dd or rng.random() < 0.5 else ")")

    def ref(v):
        return [V(torch.cat([t.d for t in v], dim), torch.cat([t.vmask() for t in v], dim))]
    return Case(ins, call, ref, proxy=lambda t: torch.cat(t, dim), mt=lambda t: torch.cat(t, dim), exact=True,
                notes=notes)


def mk_split(name):
    def make(rng, k):
        x, shape = view_case(rng, k, nd=1 + k % 4)
        nd = len(shape)
        dim = int(rng.integers(nd))
        L = shape[dim]
        if name == "chunk":
            arg = int(rng.integers(1, 5))
            f = (lambda t: list(torch.chunk(t, arg, dim)))
            call = f"chunk({{0}}, {arg}, {dim})"
        elif rng.random() < 0.5:
            arg = int(rng.integers(1, 4))
            f = (lambda t: list(torch.split(t, arg, dim)))
            call = f"split({{0}}, {arg}, {dim})"
        else:
            parts = []
            rest = L
            while rest > 0:
                q = int(rng.integers(0, rest + 1))
                parts.append(q)
                rest -= q
            if not parts:
                parts = [0]
            arg = parts
            f = (lambda t: list(torch.split(t, arg, dim)))
            call = f"split({{0}}, {lit(parts)}, {dim})"

        def ref(v):
            return [V(a, b) for a, b in zip(f(v[0].d), f(v[0].m))]
        return Case([x], call, ref, mt=lambda t: f(t[0]), exact=True, grad=False, multi=True)
    return make


op("split", "view", "torch.split of data and of masks (torch.masked passthrough)")(mk_split("split"))
op("chunk", "view", "torch.chunk of data and of masks (torch.masked passthrough)")(mk_split("chunk"))


def mk_index(rng, k):
    """x[...] with ints (maybe negative), slices with steps, none and ..."""
    x, shape = view_case(rng, k, nd=NDIMS[k % len(NDIMS)])
    items = []
    tix = []
    nd = len(shape)
    if nd == 0:
        items, tix = [["..."], ["none"], ["none", "..."], ["...", "none", "none"]][k % 4], []
        tix = [Ellipsis if it == "..." else None for it in items]
    i = 0
    used_ell = False
    while i < nd:
        r = rng.random()
        if r < 0.1 and not used_ell:
            items.append("...")
            tix.append(Ellipsis)
            used_ell = True
            i = nd - int(rng.integers(0, nd - i + 1))
            continue
        if r < 0.15:
            items.append("none")
            tix.append(None)
            continue
        n = shape[i]
        if r < 0.45 and n > 0:
            j = int(rng.integers(n))
            if rng.random() < 0.3:
                j -= n
            items.append(str(j))
            tix.append(j)
        elif r < 0.55:
            items.append(":")
            tix.append(slice(None))
        else:
            a = int(rng.integers(-n - 1, n + 1)) if rng.random() < 0.6 else None
            b = int(rng.integers(-n - 1, n + 2)) if rng.random() < 0.6 else None
            st = int(rng.integers(1, 4)) if rng.random() < 0.4 else None
            txt = ("" if a is None else str(a)) + ":" + ("" if b is None else str(b)) + \
                  ("" if st is None else ":" + str(st))
            items.append(txt)
            tix.append(slice(a, b, st))
        i += 1
        if rng.random() < 0.25:
            break
    if not items:
        items, tix = [":"], [slice(None)]
    key = tuple(tix)
    f = (lambda t: t[key])
    try:
        f(x.d)
    except (IndexError, RuntimeError):
        raise Skip()
    return Case([x], "{0}[" + ", ".join(items) + "]", passthrough(f), proxy=lambda t: f(t[0]),
                mt=lambda t: f(t[0]), exact=True)


op("index", "view", "indexing applied to data and mask alike (torch.masked passthrough)")(mk_index)

# ---------------------------------------------------------------- accessors


def mk_access(name):
    def make(rng, k):
        dtype = case_dtype(k, ("int", "f64", "bool"))
        shape = draw_shape(rng, k)
        x = draw_masked(rng, k, shape, dtype)
        if name == "get_data":
            return Case([x], "get_data({0})", lambda v: [V(v[0].d.clone())], mt=lambda t: t[0].get_data(),
                        exact=True, grad=False)
        if name == "get_mask":
            return Case([x], "get_mask({0})", lambda v: [V(v[0].m.clone())], mt=lambda t: t[0].get_mask(),
                        exact=True, grad=False)
        fill = scalar(rng, dtype) if rng.random() < 0.8 else float(rng.choice([math.nan, math.inf]))
        if dtype != torch.float32 and dtype != torch.float64 and isinstance(fill, float) and not fill.is_integer():
            fill = 0
        if dtype == torch.bool:
            fill = bool(rng.random() < 0.5)

        def ref(v):
            return [V(v[0].d.masked_fill(~v[0].m, fill))]
        return Case([x], f"to_tensor({{0}}, {lit(fill)})", ref, mt=lambda t: t[0].to_tensor(fill),
                    exact=True, grad=False)
    return make


for _n in ("get_data", "get_mask", "to_tensor"):
    op(_n, "access", "MaskedTensor.%s" % _n)(mk_access(_n))

# ---------------------------------------------------------------- creation and conversion

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "bool": torch.bool}


def mk_like(name):
    """ones_like, zeros_like, full_like: the data replaced, the mask kept"""
    def make(rng, k):
        dtype = case_dtype(k, ("int", "f64", "bool"))
        x = draw_masked(rng, k, draw_shape(rng, k), dtype)
        kw = {}
        args = ""
        if name == "full_like":
            val = scalar(rng, dtype)
            args += ", " + lit(val)
        if rng.random() < 0.3:
            dn = str(rng.choice(list(DTYPES)))
            kw["dtype"] = DTYPES[dn]
            args += f', dtype="{dn}"'
        notes = [] if name == "ones_like" else ["masq rule: the mask is kept (torch 1.13 lacks %s on MaskedTensor; "
                                                "newer torch.masked keeps it too)" % name]

        def f(d):
            if name == "full_like":
                return torch.full_like(d, val, **kw)
            return getattr(torch, name)(d, **kw)
        return Case([x], f"{name}({{0}}{args})", lambda v: [V(f(v[0].d), v[0].m)],
                    mt=lambda t: getattr(torch, name)(t[0], *([val] if name == "full_like" else []), **kw),
                    exact=True, grad=False, notes=notes)
    return make


for _n in ("ones_like", "zeros_like", "full_like"):
    op(_n, "create", "torch.%s(data), mask kept" % _n,
       None if _n == "ones_like" else "%s keeps a masked tensor's mask (torch 1.13 lacks it)" % _n)(mk_like(_n))


def mk_copy(name):
    """clone, contiguous, detach: the same data and mask"""
    def make(rng, k):
        dtype = case_dtype(k, ("int", "f64", "bool"))
        x = draw_masked(rng, k, draw_shape(rng, k), dtype)
        call = f"{name}({{0}})"
        f = (lambda d: d.clone())
        if name == "contiguous" and x.d.dim() >= 2 and rng.random() < 0.6:
            call = "contiguous(transpose({0}, 0, -1))"   # a view that is not contiguous
            f = (lambda d: d.transpose(0, -1).contiguous())
        return Case([x], call, lambda v: [V(f(v[0].d), f(v[0].m))], proxy=lambda t: f(t[0]),
                    mt=lambda t: getattr(f(t[0]) if name == "contiguous" else t[0], name)(),
                    exact=True, grad=name != "detach")
    return make


for _n in ("clone", "contiguous", "detach"):
    op(_n, "create", "MaskedTensor.%s(): data and mask alike" % _n)(mk_copy(_n))

CONVERT = {"to": None, "float": torch.float32, "double": torch.float64, "long": torch.int64, "bool": torch.bool}


def mk_convert(name):
    """to(x, dtype) and float/double/long/bool: the data converted, the mask kept (aten._to_copy)"""
    def make(rng, k):
        dtype = case_dtype(k, ("int", "f64", "bool"))
        x = draw_masked(rng, k, draw_shape(rng, k), dtype)
        if name == "to":
            dn = str(rng.choice(list(DTYPES)))
            target = DTYPES[dn]
            call = f'to({{0}}, "{dn}")'
        else:
            target = CONVERT[name]
            call = f"{name}({{0}})"
        if not is_float(target) and is_float(x.d):
            # NaN and inf have no int value (torch gives int64's minimum):
            # keep them under the mask only
            bad = ~torch.isfinite(x.d) & x.m
            x.d[bad] = 0.5
        return Case([x], call, lambda v: [V(v[0].d.to(target), v[0].m)], proxy=lambda t: t[0],
                    mt=lambda t: t[0].to(target), exact=True, grad=is_float(target))
    return make


for _n in CONVERT:
    op(_n, "create", "MaskedTensor.to(dtype) (aten._to_copy): data converted, mask kept")(mk_convert(_n))


def mk_construct(name):
    """masked(data, mask) / as_masked(data, mask) from plain tensors"""
    def make(rng, k):
        dtype = case_dtype(k, ("int", "f64", "bool"))
        shape = draw_shape(rng, k)
        d = draw_plain(rng, k, shape, dtype)
        notes = []
        ms = shape
        if rng.random() < 0.3:
            ms = tuple(1 if rng.random() < 0.5 else q for q in shape)
            if ms and rng.random() < 0.4:
                ms = ms[int(rng.integers(1, len(ms) + 1)):]
            if ms != shape:
                notes.append("masq rule: the mask broadcasts to the data's shape")
        m = V(draw_mask(rng, ms, MASK_KINDS[(k // 3 + k) % len(MASK_KINDS)]))

        def ref(v):
            return [V(v[0].d.clone(), v[1].d.expand(v[0].d.shape).clone())]

        def mt(t):
            if name == "masked":
                return masked_tensor(t[0], t[1])
            return torch.masked.as_masked_tensor(t[0], t[1])
        return Case([d, m], f"{name}({{0}}, {{1}})", ref, proxy=lambda t: t[0], mt=mt, exact=True,
                    grad=name == "as_masked", diff=[0], notes=notes)
    return make


op("masked", "create", "masked_tensor(data, mask)",
   "masked(data, mask) broadcasts the mask to the data's shape (torch.masked: same shape only)")(mk_construct("masked"))
op("as_masked", "create", "as_masked_tensor(data, mask): differentiable w.r.t. data",
   "as_masked(data, mask) broadcasts the mask to the data's shape (torch.masked: same shape only)")(mk_construct("as_masked"))


# ------------------------------------------------------------------ evaluation


def as_list(r):
    return r if isinstance(r, list) else [r]


# the absolute part for float32 (torch.testing uses 1e-5); float64 scales with the values
ATOL32 = 1e-6


def tolerance(y32, y64, valid, dtype, exact):
    """(rtol, atol) for comparing one float result: a relative 1e-5 (float32)
    or 1e-9 (float64), plus an absolute part from how far torch's float32
    result is from the same computation in float64 (ill-conditioned spots)"""
    if dtype not in (torch.float32, torch.float64) or exact:
        return 0.0, 0.0
    if dtype == torch.float64:
        scale = 0.0
        ok = valid & torch.isfinite(y32)
        if ok.any():
            scale = float(y32[ok].abs().max())
        return 1e-9, 1e-12 * max(1.0, scale)
    rtol = 1e-5
    dev = 0.0
    if y64 is not None:
        a, b = y32.double(), y64.double()
        ok = valid & torch.isfinite(a) & torch.isfinite(b)
        if ok.any():
            ex = (a - b).abs() - rtol * b.abs()
            dev = max(0.0, float(ex[ok].max()))
    return rtol, ATOL32 + 4 * dev


def fmt_tol(x):
    return "0" if x == 0 else "%.3g" % x


def to64(v, ints=False):
    if isinstance(v, V) and (v.d.dtype == torch.float32 or ints and v.d.dtype == torch.int64):
        return V(v.d.double(), v.m)
    return v


def evaluate(case):
    """expected result, gradients, tolerances and the MaskedTensor cross-check"""
    ins = case.inputs
    out = as_list(case.ref(ins))
    for o in out:
        if o.d.dtype not in DT:
            raise Skip()
    # the same computation in float64, for the tolerance
    out64 = None
    if any(o.d.dtype == torch.float32 for o in out) and not case.exact:
        # float32 results of int inputs: the reference on float64 copies
        ints = not any(i.d.dtype == torch.float32 for i in ins)
        try:
            out64 = as_list(case.ref([to64(i, ints) for i in ins]))
        except Exception:   # noqa: BLE001 -- no float64 twin: no allowance
            out64 = None
    tols = []
    for j, o in enumerate(out):
        y64 = out64[j].d if out64 is not None and out64[j].d.shape == o.d.shape else None
        tols.append(tolerance(o.d, y64, o.vmask(), o.d.dtype, case.exact))
    # gradients
    grads = None
    diff = case.diff if case.diff is not None else list(range(len(ins)))
    diff = [i for i in diff if is_float(ins[i].d)]
    if case.grad and diff and len(out) == 1 and is_float(out[0].d):
        grads = gradients(case, ins, diff)
        if grads is not None and any(i.d.dtype == torch.float32 for i in ins):
            g64 = gradients(case, [to64(i) for i in ins], diff)
        else:
            g64 = None
        if grads is not None and g64 is not None:
            # masq's backward runs in float64: where torch's float32 backward
            # overflows or underflows into inf or NaN (atan2's 1 / (x*x + y*y)
            # at x = 1e-30) and the float64 one does not, the float64 value
            # is the derivative (a finite difference agrees)
            for j, g in enumerate(grads):
                fix = g.vmask() & g.care & ~torch.isfinite(g.d) & torch.isfinite(g64[j].d.float())
                if bool(fix.any()):
                    g.d[fix] = g64[j].d.float()[fix]
                    case.notes.append("masq rule: gradient in float64 where torch's float32 one overflows")
        if grads is not None:
            for j, g in enumerate(grads):
                y64 = g64[j].d if g64 is not None else None
                tols.append(tolerance(g.d, y64, g.vmask() & g.care, g.d.dtype, False))
    cross = mt_check(case, ins, out, grads, diff, tols)
    return out, grads, diff, tols, cross


def gradients(case, ins, diff):
    """d sum(y * W) / d input, through the reference on plain tensors; masks
    by dependency: valid in the input and feeding some valid output"""
    leaves = []
    vs = []
    for i, v in enumerate(ins):
        if i in diff:
            leaf = v.d.detach().clone().requires_grad_(True)
            leaves.append(leaf)
            # masked-out slots hold a harmless value: they must not matter
            d = torch.where(v.m, leaf, torch.full_like(leaf, 0.5)) if v.masked else leaf
            vs.append(V(d, v.m))
        else:
            vs.append(v)
    try:
        y = as_list(case.ref(vs))[0]
        if not y.d.requires_grad:
            return None
        w = weights(y.d.shape, y.d.dtype)
        ym = y.vmask()
        loss = torch.where(ym, y.d * w, torch.zeros((), dtype=y.d.dtype)).sum()
        gs = torch.autograd.grad(loss, leaves, allow_unused=True)
    except RuntimeError as e:
        if "derivative" in str(e) or "not implemented" in str(e) or "does not require grad" in str(e):
            return None
        raise
    # dependency masks through the linear proxy
    pl = [torch.ones(ins[i].d.shape, dtype=torch.float64, requires_grad=True) for i in range(len(ins))]
    pin = [pl[i] if i in diff else ins[i].d for i in range(len(ins))]
    po = case.proxy(pin)
    deps = torch.autograd.grad((po * ym.to(torch.float64)).sum(), [pl[i] for i in diff], allow_unused=True)
    # positions that feed a valid NaN or infinite output: there a gradient's
    # value is a convention (torch's are mostly 0 * inf artifacts), so only
    # its mask is checked (cmp's care argument)
    po = case.proxy(pin)
    bad = ym & ~torch.isfinite(y.d.detach())
    irr = torch.autograd.grad((po * bad.to(torch.float64)).sum(), [pl[i] for i in diff], allow_unused=True)
    res = []
    masked_out = y.masked
    for j, i in enumerate(diff):
        g = gs[j] if gs[j] is not None else torch.zeros_like(ins[i].d)
        dep = deps[j] > 0 if deps[j] is not None else torch.zeros(ins[i].d.shape, dtype=torch.bool)
        m = dep & ins[i].vmask()
        v = V(g.detach(), m if masked_out else None)
        v.care = ~(irr[j] > 0) if irr[j] is not None else torch.ones(m.shape, dtype=torch.bool)
        res.append(v)
        if not masked_out and not bool(m.all()):
            raise AssertionError("plain output with masked gradient")
    return res


def agree(a, b, rtol, atol, exact, care=None):
    """does a (from MaskedTensor) match b (the reference)?  -> '' or why not"""
    if a.d.dtype != b.d.dtype:
        return f"dtype {DTNAME.get(a.d.dtype, a.d.dtype)} vs {DTNAME[b.d.dtype]}"
    if a.d.shape != b.d.shape:
        return f"shape {tuple(a.d.shape)} vs {tuple(b.d.shape)}"
    if a.masked != b.masked:
        return "masked %s vs %s" % (a.masked, b.masked)
    am, bm = a.vmask(), b.vmask()
    if not torch.equal(am, bm):
        return "mask differs at %d" % int((am != bm).sum())
    sel = bm if care is None else bm & care
    x, y = a.d[sel], b.d[sel]
    if x.dtype in (torch.bool, torch.int64):
        ok = x == y
    else:
        x, y = x.double(), y.double()
        ok = (x == y) | (torch.isnan(x) & torch.isnan(y)) | ((x - y).abs() <= atol + rtol * y.abs())
    if not bool(ok.all()):
        return "values differ at %d valid" % int((~ok).sum())
    return ""


def from_mt(r):
    if isinstance(r, torch.masked.MaskedTensor):
        return V(r.get_data().detach(), r.get_mask())
    if isinstance(r, torch.Tensor):
        return V(r.detach())
    raise TypeError(type(r))


def mt_check(case, ins, out, grads, diff, tols):
    """run the case through MaskedTensor itself: 'ok', 'differs: ...' or
    'unsupported: ...' (for the output, then for the gradients)"""
    if case.mt is None:
        return ("n/a", "n/a")
    ts = []
    for i, v in enumerate(ins):
        rg = grads is not None and i in diff
        if v.masked:
            ts.append(masked_tensor(v.d.clone(), v.m.clone(), requires_grad=rg))
        else:
            ts.append(v.d.clone().requires_grad_(rg))
    try:
        r = case.mt(ts)
        rs = [from_mt(x) for x in as_list(r)]
    except TorchCrash as e:
        return ("unsupported: crash: %s" % e, "n/a")
    except Exception as e:   # noqa: BLE001 -- any failure of MaskedTensor is a finding
        return ("unsupported: %s" % type(e).__name__, "n/a")
    if len(rs) != len(out):
        return ("differs: %d results vs %d" % (len(rs), len(out)), "n/a")
    why = ""
    for j, (a, b) in enumerate(zip(rs, out)):
        rtol, atol = tols[j]
        why = why or agree(a, b, max(rtol, 1e-6), atol + 1e-6 * (not case.exact), case.exact)
    fwd = "differs: " + why if why else "ok"
    if grads is None:
        return (fwd, "n/a")
    try:
        y = as_list(r)[0]
        w = weights(out[0].d.shape, out[0].d.dtype)
        (y * w).sum().backward()
        gg = []
        for i in diff:
            g = ts[i].grad
            gg.append(from_mt(g) if g is not None else None)
    except Exception as e:   # noqa: BLE001
        return (fwd, "unsupported: %s" % type(e).__name__)
    why = ""
    for j, (a, b) in enumerate(zip(gg, grads)):
        if a is None:
            why = why or "no gradient"
            continue
        if not a.masked and b.masked:
            a = V(a.d, torch.ones(a.d.shape, dtype=torch.bool))
        rtol, atol = tols[len(out) + j]
        why = why or agree(a, b, max(rtol, 1e-6), atol + 1e-6, False, b.care)
    return (fwd, "differs: " + why if why else "ok")


# ------------------------------------------------------------------ output


class Pools:
    """every tensor of one op's cases, packed per dtype into one 1-D array"""

    def __init__(self):
        self.parts = {k: [] for k in DT.values()}
        self.size = {k: 0 for k in DT.values()}

    def add(self, v):
        key = DT[v.d.dtype]
        d = v.d.detach().reshape(-1).numpy()
        m = v.vmask().reshape(-1).numpy()
        a = self.size[key]
        self.parts[key].append((d, m))
        self.size[key] = a + d.size
        fn = "T" if v.masked else "TP"
        return f"{fn}({key.upper()}, {a}, {a + d.size}, {lit(list(v.d.shape))})"

    def save(self, path):
        arrays = {}
        for key, parts in self.parts.items():
            if not parts:
                continue
            arrays[key] = np.concatenate([d for d, _ in parts])
            arrays[key + "_mask"] = ~np.concatenate([m for _, m in parts])   # numpy.ma: True = masked out
        np.savez_compressed(path, **arrays)
        return [k for k in self.parts if self.parts[k]]


def describe(v):
    kind = "plain" if not v.masked else ("valid" if bool(v.m.all()) else
                                          "masked" if not bool(v.m.any()) else "partial")
    return "%s%s:%s" % (DTNAME[v.d.dtype], list(v.d.shape), kind)


def generate(opx, seed, ncases, outdir, xfail):
    rng = np.random.default_rng([seed, sum(ord(c) * 31 ** i for i, c in enumerate(opx.name)) % (2 ** 32)])
    pools = Pools()
    lines = []
    man = []
    stats = {"cases": 0, "grads": 0, "fwd": {}, "bwd": {}}
    k = 0
    made = 0
    tries = 0
    irregular = 0
    while made < ncases:
        tries += 1
        if tries > ncases * 40:
            raise SystemExit(f"{opx.name}: cannot draw {ncases} cases")
        try:
            torch.manual_seed(seed * 1000 + k)
            case = opx.make(rng, k)
            out, grads, diff, tols, cross = evaluate(case)
        except Skip:
            k += 1
            continue
        except (RuntimeError, ValueError, TypeError, IndexError) as e:
            if os.environ.get("CONF_DEBUG"):
                print(f"  {opx.name}#{k}: torch refused: {type(e).__name__}: {e}", file=sys.stderr)
            k += 1
            continue
        cid = f"{opx.name}#{made}"
        names = []
        lines.append(f"# {cid}: " + ", ".join(describe(v) for v in case.inputs))
        for i, v in enumerate(case.inputs):
            ex = pools.add(v)
            if grads is not None and i in diff:
                ex = f"requires_grad({ex})"
            lines.append(f"x{i} = {ex}")
            names.append(f"x{i}")
        expr = case.call.format(*names)
        reason = xfail.get(cid) or xfail.get(opx.name)
        if reason:
            lines.append(f'xfail("{cid}", "{reason}")')
        else:
            lines.append(f"y = {expr}")
            ti = 0
            if not case.multi:
                rtol, atol = tols[0]
                lines.append(f"r = cmp(\"out\", y, {pools.add(out[0])}, {fmt_tol(rtol)}, {fmt_tol(atol)})")
                ti = 1
            else:
                lines.append(f"r = cmplen(y, {len(out)})")
                lines.append("if r == \"\" {")
                for j, o in enumerate(out):
                    rtol, atol = tols[j]
                    lines.append(f"  r = r + cmp(\"out[{j}]\", y[{j}], {pools.add(o)}, {fmt_tol(rtol)}, {fmt_tol(atol)})")
                lines.append("}")
                ti = len(out)
            if grads is not None:
                gl = ", ".join(f"x{i}" for i in diff)
                lines.append(f"g = grad(sum(y * W(y)), [{gl}])")
                for j, i in enumerate(diff):
                    rtol, atol = tols[ti + j]
                    gv = grads[j]
                    care = ""
                    if bool((gv.vmask() & ~gv.care).any()):
                        care = ", care=" + pools.add(V(gv.care.clone()))
                        irregular += 1
                    lines.append(f"r = r + cmp(\"grad x{i}\", g[{j}], {pools.add(gv)}, "
                                 f"{fmt_tol(rtol)}, {fmt_tol(atol)}{care})")
            lines.append(f'report("{cid}", r, y)')
        tol_s = " ".join("%s/%s" % (fmt_tol(a), fmt_tol(b)) for a, b in tols)
        man.append("\t".join([cid, expr.replace("\t", " "), " ".join(describe(v) for v in case.inputs),
                              "grad" if grads is not None else "-", tol_s, "mt=%s|%s" % cross,
                              "; ".join(case.notes) or "-"]))
        stats["cases"] += 1
        stats["grads"] += grads is not None
        for key, val in (("fwd", cross[0]), ("bwd", cross[1])):
            tag = val.split(":")[0]
            stats[key][tag] = stats[key].get(tag, 0) + 1
            if tag == "differs" and os.environ.get("CONF_DEBUG"):
                print(f"  {cid} {key}: {val}  [{expr}]", file=sys.stderr)
        made += 1
        k += 1
    keys = pools.save(os.path.join(outdir, opx.name + ".npz"))
    head = [f"# {opx.name}: {made} cases drawn by tools/conformance/gen.py --seed {seed}; do not edit by hand.",
            f"# reference: {opx.source}"]
    if opx.deliberate:
        head.append(f"# masq differs on purpose: {opx.deliberate} (docs/DIFFERENCES.md)")
    head += [f"# cases: {made}", 'import "check.masq"', f'F = "{opx.name}.npz"']
    head += [f'{key.upper()} = load(F, "{key}")' for key in keys]
    lines.append(f'done("{opx.name}", {made})')
    with open(os.path.join(outdir, opx.name + ".masq"), "w") as f:
        f.write("\n".join(head + lines) + "\n")
    return man, stats


# ------------------------------------------------ fused against op by op

# calls a chain may hold: the unary math builtins without parameters
CHAIN_CALLS = {n for n in UNARY if n not in ("clamp", "clip", "pow", "bitwise_not", "isnan", "signbit",
                                             "nan_to_num", "round")}
CHAIN_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
CHAIN_LENGTHS = [1, 7, 4101]   # a tail alone, a short tail, blocks and a tail


def chain_of(node, names):
    """the expression as ("leaf", name) / ("num", text) / (op, kids...) over
    renamed variables, or None when it is not an elementwise chain"""
    if isinstance(node, ast.Name):
        if node.id not in names:
            if len(names) == 3 or node.id in CHAIN_CALLS:
                return None
            names[node.id] = "abc"[len(names)]
        return ("leaf", names[node.id])
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return ("num", repr(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        k = chain_of(node.operand, names)
        return k and ("neg", k)
    if isinstance(node, ast.BinOp) and type(node.op) in CHAIN_OPS:
        l, r = chain_of(node.left, names), chain_of(node.right, names)
        return l and r and (CHAIN_OPS[type(node.op)], l, r)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CHAIN_CALLS
            and len(node.args) == 1 and not node.keywords):
        k = chain_of(node.args[0], names)
        return k and (node.func.id, k)
    return None


def chain_ops(c):
    return 0 if c[0] in ("leaf", "num") else 1 + sum(chain_ops(k) for k in c[1:])


def chain_text(c, sfx=""):
    """the chain as one masq expression, fully parenthesized (its leaves
    named with the suffix sfx)"""
    if c[0] == "leaf":
        return c[1] + sfx
    if c[0] == "num":
        return c[1] if not c[1].startswith("-") else "(" + c[1] + ")"
    if c[0] == "neg":
        return "(-" + chain_text(c[1], sfx) + ")"
    if c[0] in CHAIN_OPS.values():
        return "(" + chain_text(c[1], sfx) + " " + c[0] + " " + chain_text(c[2], sfx) + ")"
    return c[0] + "(" + chain_text(c[1], sfx) + ")"


def chain_steps(c, out):
    """the chain as one statement per op (nothing left to fuse); its value"""
    if c[0] in ("leaf", "num"):
        return chain_text(c)
    kids = [chain_steps(k, out) for k in c[1:]]
    t = "t%d" % len(out)
    if c[0] == "neg":
        out.append(f"{t} = -{kids[0]}")
    elif c[0] in CHAIN_OPS.values():
        out.append(f"{t} = {kids[0]} {c[0]} {kids[1]}")
    else:
        out.append(f"{t} = {c[0]}({kids[0]})")
    return t


def golden_chains():
    """every elementwise chain of two or more ops in the golden tests"""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "lang", "*.masq"))):
        for line in open(path):
            line = line.split("#")[0].strip().rstrip("{").strip()
            try:
                tree = ast.parse(line)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                names = {}
                c = chain_of(node, names)
                if c and names and chain_ops(c) >= 2:
                    found.setdefault(chain_text(c), c)
    return [found[k] for k in sorted(found)]


def write_fused(outdir, seed):
    """fused.masq: each chain of the golden tests on float32 and float64,
    plain and masked, at lengths that leave tails, must give bitwise the
    result of its op-by-op form, and the same bits for each value when the
    inputs start one element later"""
    lines = []
    n = 0
    for c in golden_chains():
        for dt in ("float32", "float64"):
            for masked in (False, True):
                length = CHAIN_LENGTHS[n % len(CHAIN_LENGTHS)]
                lines.append(f"# fused#{n}: {chain_text(c)}, {dt}{' masked' if masked else ''}[{length + 8}]")
                lines.append(f"seed({seed * 1000 + n})")
                lines.append(f"m = {'MASK[0:%d]' % (length + 8) if masked else 'none'}")
                for leaf in "abc"[:len(set(chain_leaves(c)))]:
                    lines.append(f'{leaf} = leaf({length}, "{dt}", m)')
                    lines.append(f'{leaf}1 = {leaf}[1:]')
                steps = []
                last = chain_steps(c, steps)
                lines += steps
                lines.append(f"y = {chain_text(c)}")
                # one place further on, each value moves between a vector
                # body and a scalar tail; its result must not change
                lines.append(f"z = {chain_text(c, '1')}")
                lines.append(f'report("fused#{n}", same_bits(y, {last}) + same_bits(z, y[1:]), y)')
                n += 1
    head = [f"# fused: {n} cases drawn by tools/conformance/gen.py --seed {seed}; do not edit by hand.",
            "# reference: the op-by-op form of each chain of tests/lang/*.masq, bitwise (vm/fuse.h)",
            f"# cases: {n}", 'import "check.masq"',
            "SPECIALS = [nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 0.5]",
            "# specials first, then random values; every masked leaf shares one mask",
            "fn leaf(n, dt, m) {",
            "  x = cat([tensor(SPECIALS, dtype=dt), (rand(n, dtype=dt) - 0.3) * 6])",
            "  if m == none { return x }",
            "  return masked(x, m)",
            "}",
            "MASK = rand(4200) < 0.7"]
    lines.append(f'done("fused", {n})')
    with open(os.path.join(outdir, "fused.masq"), "w") as f:
        f.write("\n".join(head + lines) + "\n")
    return n


def chain_leaves(c):
    if c[0] == "leaf":
        return [c[1]]
    if c[0] == "num":
        return []
    return [x for k in c[1:] for x in chain_leaves(k)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=28)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "conformance"))
    ap.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    xfail = {}
    xf = os.path.join(a.out, "xfail.txt")
    if os.path.exists(xf):
        for line in open(xf):
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, why = line.partition(" ")
                xfail[key] = why.strip().replace('"', "'")
    want = set(a.ops.split(",")) if a.ops else None
    allman = []
    summary = []
    for opx in OPS:
        if want and opx.name not in want:
            continue
        man, st = generate(opx, a.seed, a.cases, a.out, xfail)
        allman += man
        fw = " ".join(f"{k}={v}" for k, v in sorted(st["fwd"].items()))
        bw = " ".join(f"{k}={v}" for k, v in sorted(st["bwd"].items()))
        summary.append("\t".join([opx.name, opx.family, str(st["cases"]), str(st["grads"]),
                                  "mt-forward: " + fw, "mt-grad: " + bw, opx.source,
                                  opx.deliberate or "-"]))
        print(f"{opx.name:22s} {st['cases']:3d} cases {st['grads']:3d} with grads   MaskedTensor: {fw} | {bw}")
    if want:
        # the other ops' lines of manifest.txt and ops.txt stay as they are
        for fname, new in (("manifest.txt", allman), ("ops.txt", summary)):
            path = os.path.join(a.out, fname)
            if not os.path.exists(path):
                continue
            old = open(path).read().split("\n")
            keep = [ln for ln in old if ln and (ln.startswith("#") or
                                                ln.split("\t")[0].split("#")[0] not in want)]
            with open(path, "w") as f:
                f.write("\n".join(keep + new) + "\n")
    if not want:
        # files of ops that are no longer drawn
        names = {o.name for o in OPS}
        for f in os.listdir(a.out):
            stem, ext = os.path.splitext(f)
            if (ext in (".masq", ".npz") and stem not in names and f not in ("check.masq", "fused.masq")
                    # the other generators' files (gen_index, gen_csc, gen_layouts, gen_inplace, gen_spindex)
                    and not stem.startswith(("index_", "csc_", "layouts_", "inplace_", "spindex_"))):
                os.remove(os.path.join(a.out, f))
        nf = write_fused(a.out, a.seed)
        print(f"{'fused':22s} {nf:3d} cases (chains of the golden tests, against their op-by-op form)")
        hdr = ("# Generated by tools/conformance/gen.py --seed %d --cases %d with torch %s; do not edit.\n"
               % (a.seed, a.cases, torch.__version__))
        with open(os.path.join(a.out, "manifest.txt"), "w") as f:
            f.write(hdr + "# case\texpression\tinputs (dtype[shape]:mask)\tgradients\t"
                    "tolerances rtol/atol (output, then each gradient)\t"
                    "MaskedTensor cross-check (output|gradient)\tnotes\n")
            f.write("\n".join(allman) + "\n")
        with open(os.path.join(a.out, "ops.txt"), "w") as f:
            f.write(hdr + "# op\tfamily\tcases\twith gradients\tMaskedTensor forward\tMaskedTensor gradient\t"
                    "reference\tdeliberate difference\n")
            f.write("\n".join(summary) + "\n")


if __name__ == "__main__":
    main()
