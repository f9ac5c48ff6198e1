#!/usr/bin/python3
"""Result dtypes: masq against torch 1.13 for every storage dtype.

    /usr/bin/python3 tools/conformance/gen_dtypes.py [--out tests/lang/dtypes_torch.masq]

For each builtin masq shares with torch (the ops of gen.py's suite, OPS, and
a few more below) and each input dtype (bool, uint8, int8, int16, int32,
int64, float16, bfloat16, float32, float64), records what torch gives: the
result's dtype, or "!" where torch refuses the dtype (a RuntimeError), or
"-" where torch has no such call (a TypeError: maximum(x, 2)). Binary ops
and the operators are recorded for every pair of tensor dtypes, a tensor
with a number (2, 2.5, true) and, for the operators, a number with a
tensor. The output is a masq script (a golden of tests/lang) that makes the
same calls and prints every call whose answer differs from torch's: refused
where torch answers, answered where torch refuses, or another dtype. What
is left in its expected output is what docs/DIFFERENCES.md explains.
"""
import argparse
import os
import sys
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as Fn  # noqa: E402

import gen  # noqa: E402  (the op list and ROOT)

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
TDT = {n: getattr(torch, n) for n in DTYPES}
BASE = [[1.0, 2.0, 3.0], [4.0, 5.0, 2.0], [3.0, 1.0, 2.0]]
NUMBERS = [("2", 2), ("2.5", 2.5), ("true", True)]


def inp(name):
    return torch.tensor(BASE).to(TDT[name])


def code(f):
    """What torch gives for f(): a dtype name, "!" (refused) or "-" (no such call)."""
    try:
        r = f()
    except TypeError:
        return "-"
    except (RuntimeError, ValueError, ZeroDivisionError) as e:
        # torch's CPU lacks a float16 or bfloat16 kernel: not a rule about the dtype
        return "-" if "for 'Half'" in str(e) or "for 'BFloat16'" in str(e) else "!"
    if isinstance(r, (tuple, list)):
        r = r[0]
    if not isinstance(r, torch.Tensor):
        return "-"
    return str(r.dtype).replace("torch.", "")


# unary ops that need arguments (masq's tail of the call, torch's call)
UNARY_ARGS = {
    "clamp": (", 0, 2", lambda x: torch.clamp(x, 0, 2)),
    "clip": (", 0, 2", lambda x: torch.clip(x, 0, 2)),
    "pow": (", 2", lambda x: torch.pow(x, 2)),
}
NN_UNARY = {"softplus", "gelu", "silu", "leaky_relu", "elu", "relu", "selu", "mish", "logsigmoid"}

# torch spelling of masq's operators
OPERATORS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
             "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
             "**": lambda a, b: a ** b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
             "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
             "<": lambda a, b: a < b, "==": lambda a, b: a == b}
UNARY_OPERATORS = {"-": lambda a: -a, "~": lambda a: ~a}

# the other builtins: masq's call of x, torch's (torch.masked's where its
# reduction answers otherwise: mean of ints float32, median of bools bool)
OTHER = {
    "sum": ("sum(x)", lambda x: torch.sum(x)),
    "sum.dim": ("sum(x, 1)", lambda x: torch.sum(x, 1)),
    "mean": ("mean(x)", lambda x: torch.masked.mean(x)),
    "mean.dim": ("mean(x, 1)", lambda x: torch.masked.mean(x, 1)),
    "prod": ("prod(x)", lambda x: torch.prod(x)),
    "prod.dim": ("prod(x, 1)", lambda x: torch.prod(x, 1)),
    "amax": ("amax(x)", lambda x: torch.amax(x)),
    "amax.dim": ("amax(x, 1)", lambda x: torch.amax(x, 1)),
    "amin": ("amin(x)", lambda x: torch.amin(x)),
    "argmax": ("argmax(x)", lambda x: torch.argmax(x)),
    "argmin": ("argmin(x, 1)", lambda x: torch.argmin(x, 1)),
    "all": ("all(x)", lambda x: torch.all(x)),
    "all.dim": ("all(x, 1)", lambda x: torch.all(x, 1)),
    "any": ("any(x)", lambda x: torch.any(x)),
    "any.dim": ("any(x, 1)", lambda x: torch.any(x, 1)),
    "norm": ("norm(x)", lambda x: torch.norm(x)),
    "var": ("var(x)", lambda x: torch.masked.var(x)),
    "std": ("std(x, 1)", lambda x: torch.masked.std(x, 1)),
    "logsumexp": ("logsumexp(x, 1)", lambda x: torch.logsumexp(x, 1)),
    "median": ("median(x)", lambda x: torch.masked.median(x)),
    "median.dim": ("median(x, 1)", lambda x: torch.masked.median(x, 1)),
    "max.dim": ("max(x, 1)", lambda x: torch.max(x, 1)),
    "softmax": ("softmax(x, 1)", lambda x: torch.softmax(x, 1)),
    "log_softmax": ("log_softmax(x, 1)", lambda x: torch.log_softmax(x, 1)),
    "softmin": ("softmin(x, 1)", lambda x: Fn.softmin(x, 1)),
    "normalize": ("normalize(x)", lambda x: Fn.normalize(x)),
    "cumsum": ("cumsum(x, 1)", lambda x: torch.cumsum(x, 1)),
    "cumprod": ("cumprod(x, 1)", lambda x: torch.cumprod(x, 1)),
    "logcumsumexp": ("logcumsumexp(x, 1)", lambda x: torch.logcumsumexp(x, 1)),
    "sort": ("sort(x)", lambda x: torch.sort(x)),
    "argsort": ("argsort(x)", lambda x: torch.argsort(x)),
    "topk": ("topk(x, 2)", lambda x: torch.topk(x, 2)),
    "select": ("select(x, 0, 1)", lambda x: x.select(0, 1)),
    "transpose": ("transpose(x, 0, 1)", lambda x: x.transpose(0, 1)),
    "t": ("t(x)", lambda x: x.t()),
    "reshape": ("reshape(x, 9)", lambda x: x.reshape(9)),
    "view": ("view(x, 9)", lambda x: x.view(9)),
    "flatten": ("flatten(x)", lambda x: x.flatten()),
    "unsqueeze": ("unsqueeze(x, 0)", lambda x: x.unsqueeze(0)),
    "expand": ("expand(x, 2, 3, 3)", lambda x: x.expand(2, 3, 3)),
    "broadcast_to": ("broadcast_to(x, [2, 3, 3])", lambda x: x.broadcast_to((2, 3, 3))),
    "narrow": ("narrow(x, 1, 0, 2)", lambda x: x.narrow(1, 0, 2)),
    "flip": ("flip(x, 0)", lambda x: x.flip(0)),
    "repeat": ("repeat(x, 2, 1)", lambda x: x.repeat(2, 1)),
    "roll": ("roll(x, 1)", lambda x: x.roll(1)),
    "tril": ("tril(x)", lambda x: x.tril()),
    "triu": ("triu(x)", lambda x: x.triu()),
    "diagonal": ("diagonal(x)", lambda x: x.diagonal()),
    "diff": ("diff(x)", lambda x: torch.diff(x)),
    "einsum.ii->i": ("einsum(\"ii->i\", x)", lambda x: torch.einsum("ii->i", x)),
    "einsum.ii": ("einsum(\"ii\", x)", lambda x: torch.einsum("ii", x)),
    "einsum.ij->ji": ("einsum(\"ij->ji\", x)", lambda x: torch.einsum("ij->ji", x)),
    "einsum.ij,jk->ik": ("einsum(\"ij,jk->ik\", x, x)", lambda x: torch.einsum("ij,jk->ik", x, x)),
    "matmul": ("matmul(x, x)", lambda x: torch.matmul(x, x)),
    "bmm": ("bmm(unsqueeze(x, 0), unsqueeze(x, 0))", lambda x: torch.bmm(x[None], x[None])),
    "cat": ("cat([x, x])", lambda x: torch.cat([x, x])),
    "stack": ("stack([x, x])", lambda x: torch.stack([x, x])),
    "split": ("split(x, 2)", lambda x: torch.split(x, 2)),
    "chunk": ("chunk(x, 2)", lambda x: torch.chunk(x, 2)),
    "gather": ("gather(x, 1, tensor([[0], [2], [1]]))", lambda x: torch.gather(x, 1, torch.tensor([[0], [2], [1]]))),
    "index_select": ("index_select(x, 0, tensor([1]))", lambda x: torch.index_select(x, 0, torch.tensor([1]))),
    "where": ("where(x > 1, x, x)", lambda x: torch.where(x > 1, x, x)),
    "masked_fill": ("masked_fill(x, x > 1, 0)", lambda x: x.masked_fill(x > 1, 0)),
    "ones_like": ("ones_like(x)", lambda x: torch.ones_like(x)),
    "zeros_like": ("zeros_like(x)", lambda x: torch.zeros_like(x)),
    "full_like": ("full_like(x, 7)", lambda x: torch.full_like(x, 7)),
    "clone": ("clone(x)", lambda x: x.clone()),
    "contiguous": ("contiguous(x)", lambda x: x.contiguous()),
    "detach": ("detach(x)", lambda x: x.detach()),
    "float": ("float(x)", lambda x: x.float()),
    "double": ("double(x)", lambda x: x.double()),
    "long": ("long(x)", lambda x: x.long()),
    "bool": ("bool(x)", lambda x: x.bool()),
    "to.float16": ("to(x, float16)", lambda x: x.to(torch.float16)),
    "mse_loss": ("mse_loss(x, x)", lambda x: Fn.mse_loss(x, x)),
    "l1_loss": ("l1_loss(x, x)", lambda x: Fn.l1_loss(x, x)),
}
# gen.py's ops that have no line here: reached through another name, or
# without a plain-tensor call to compare (losses with targets, optimizer
# steps, masks)
NOT_HERE = {"allclose", "einsum", "cross_entropy", "nll_loss", "cross_entropy_weight", "nll_loss_weight",
            "cross_entropy_smoothing", "cross_entropy_prob", "bce_logits_pos_weight", "bce_weight",
            "binary_cross_entropy", "binary_cross_entropy_with_logits", "layer_norm", "sgd_step",
            "adagrad_step", "adam_step", "index", "get_data", "get_mask", "to_tensor", "to",
            "masked", "as_masked"}


def rows():
    """(label, masq lambda, mode, expected codes) per line of the test."""
    out = []
    names = [o.name for o in gen.OPS]
    for name in names:
        if name in gen.UNARY:
            tail, tf = UNARY_ARGS.get(name, ("", None))
            if tf is None:
                mod = Fn if name in NN_UNARY else torch
                tf = (lambda f: lambda x: f(x))(getattr(mod, name))
            out.append((name, "fn(x) = %s(x%s)" % (name, tail), "t", [code(lambda: tf(inp(d))) for d in DTYPES]))
        elif name in gen.BINARY:
            f = getattr(torch, name)
            out.append((name, "fn(a, b) = %s(a, b)" % name, "tt",
                        [code(lambda: f(inp(a), inp(b))) for a in DTYPES for b in DTYPES]))
            out.append((name + " number", "fn(a, b) = %s(a, b)" % name, "tn",
                        [code(lambda: f(inp(a), n)) for a in DTYPES for _, n in NUMBERS]))
        elif name in OTHER or name in NOT_HERE:
            continue
        else:
            raise SystemExit("gen_dtypes.py: gen.py's op %s has no line here (OTHER or NOT_HERE)" % name)
    for label, (call, tf) in OTHER.items():
        out.append((label, "fn(x) = " + call, "t", [code(lambda: tf(inp(d))) for d in DTYPES]))
    for sym, f in OPERATORS.items():
        lam = "fn(a, b) = a %s b" % sym
        out.append(("a %s b" % sym, lam, "tt", [code(lambda: f(inp(a), inp(b))) for a in DTYPES for b in DTYPES]))
        out.append(("a %s number" % sym, lam, "tn", [code(lambda: f(inp(a), n)) for a in DTYPES for _, n in NUMBERS]))
        out.append(("number %s a" % sym, lam, "nt", [code(lambda: f(n, inp(a))) for a in DTYPES for _, n in NUMBERS]))
    for sym, f in UNARY_OPERATORS.items():
        out.append(("%sa" % sym, "fn(x) = %sx" % sym, "t", [code(lambda: f(inp(d))) for d in DTYPES]))
    return out


HEADER = '''# Generated by tools/conformance/gen_dtypes.py with torch %s; do not edit.
# The result dtype of each builtin and operator for every storage dtype,
# against torch's: "!" where torch refuses the dtype, "-" where torch has no
# such call (not compared). Prints each call where masq differs (and a
# count); what its expected output still lists is in docs/DIFFERENCES.md.
D = %s
fn num(i) {
  if i == 0 { return 2 }
  if i == 1 { return 2.5 }
  return true
}
NS = %s
X = {}
for d in D {
  X[d] = to(tensor(%s), d)
}
fn answer(f, args) {
  try {
    if len(args) == 1 {
      r = f(args[0])
    } else {
      r = f(args[0], args[1])
    }
  } catch e {
    return "!"
  }
  if type(r) == "list" { r = r[0] }
  if type(r) != "tensor" { return "?" }
  return str(dtype(r))
}
differ = 0
checked = 0
fn check(label, f, mode, want) {
  want = split(want)
  k = 0
  inner = [0]
  if mode == "tt" { inner = range(len(D)) }
  if mode == "tn" or mode == "nt" { inner = range(3) }
  for a in range(len(D)) {
    for b in inner {
      w = want[k]
      k += 1
      if w == "-" { continue }
      if mode == "t" {
        args = [X[D[a]]]
        what = D[a]
      } elif mode == "tt" {
        args = [X[D[a]], X[D[b]]]
        what = D[a] + ", " + D[b]
      } elif mode == "tn" {
        args = [X[D[a]], num(b)]
        what = D[a] + ", " + NS[b]
      } else {
        args = [num(b), X[D[a]]]
        what = NS[b] + ", " + D[a]
      }
      got = answer(f, args)
      global checked
      checked += 1
      if got != w {
        print(format("{}({}): torch {}, masq {}", label, what, w, got))
        global differ
        differ += 1
      }
    }
  }
}
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(gen.ROOT, "tests", "lang", "dtypes_torch.masq"))
    ap.add_argument("--half-out", default=os.path.join(gen.ROOT, "tests", "lang", "dtypes_half_torch.masq"))
    a = ap.parse_args()
    lines = [HEADER % (torch.__version__, "[" + ", ".join('"%s"' % d for d in DTYPES) + "]",
                       "[" + ", ".join('"%s"' % s for s, _ in NUMBERS) + "]", BASE)]
    for label, lam, mode, want in rows():
        lines.append('check("%s", %s, "%s", "%s")' % (label, lam.replace('"', '\\"') if False else lam,
                                                      mode, " ".join(want)))
    lines.append('print(format("{} calls checked, {} differ from torch", checked, differ))')
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("gen_dtypes.py: %d lines in %s" % (len(lines) - 2, a.out))
    write_half(a.half_out)




# ---------------------------------------------------------------- half values

HALF_HEADER = '''# Generated by tools/conformance/gen_dtypes.py with torch %s; do not edit.
# An int tensor or a number meeting a float16 or bfloat16 tensor: torch
# converts it to the half type first, then computes in float32 and rounds
# once (fmod(bf16 300, int16 257) is fmod(300, 256) = 44). Each line is one
# op on 12 random pairs; torch's results are the literals, compared bit
# for bit (NaN equal to NaN). Prints each op whose result differs, and a
# count; what its expected output lists is in docs/DIFFERENCES.md.
differ = 0
fn same(got, want) {
  g = to(got, float64)
  return all((g == want) | (isnan(g) & isnan(want)))
}
fn check(label, got, want) {
  if not same(got, want) {
    print(label + ": differs from torch")
    global differ
    differ += 1
  }
}
'''


def lit(vals):
    return "[" + ", ".join(repr(float(v)) if v == v else "nan" for v in vals) + "]"


def lit64(vals):
    """A float64 tensor literal (a list literal alone would be float32)."""
    return "tensor(%s, dtype=float64)" % lit(vals)


def half_rows():
    g = torch.Generator().manual_seed(29)
    out = []
    ops = [n for n in gen.BINARY if n not in ("eq", "ne", "not_equal", "le", "ge", "lt", "gt", "less", "less_equal",
                                             "greater", "greater_equal") and not n.startswith("bitwise")]
    for hname in ("float16", "bfloat16"):
        for iname in ("uint8", "int16", "int64"):
            hi = 250 if iname == "uint8" else 4000
            a = (torch.rand(12, generator=g) * 600 + 1).to(TDT[hname])
            b = torch.randint(1, hi, (12,), generator=g).to(TDT[iname])
            la = "to(%s, %s)" % (lit64(a.double().tolist()), hname)
            lb = "to(tensor(%s), %s)" % ([int(v) for v in b.tolist()], iname)
            cond = torch.rand(12, generator=g) < 0.5
            lc = "tensor(%s)" % str([bool(v) for v in cond.tolist()]).lower()
            lo = b // 2
            llo = "to(tensor(%s), %s)" % ([int(v) for v in lo.tolist()], iname)
            for label, tf, call in (
                    ("where(c, h, i)", lambda: torch.where(cond, a, b), "where(%s, %s, %s)" % (lc, la, lb)),
                    ("where(c, i, h)", lambda: torch.where(cond, b, a), "where(%s, %s, %s)" % (lc, lb, la)),
                    ("clamp(h, i, i)", lambda: torch.clamp(a, lo, b), "clamp(%s, %s, %s)" % (la, llo, lb))):
                try:
                    r = tf()
                except RuntimeError:  # no float16 kernel (clamp)
                    continue
                out.append('check("%s %s, %s", %s, %s)' % (label, hname, iname, call, lit64(r.double().tolist())))
            for name in ops:
                f = getattr(torch, name)
                for order, x, y, mx, my in (("h,i", a, b, la, lb), ("i,h", b, a, lb, la)):
                    try:
                        r = f(x, y)
                    except (RuntimeError, TypeError):
                        continue
                    out.append('check("%s(%s %s, %s)", %s(%s, %s), %s)' % (
                        name, order, hname, iname, name, mx, my, lit64(r.double().tolist())))
        a = (torch.rand(12, generator=g) * 600 + 1).to(TDT[hname])
        la = "to(%s, %s)" % (lit64(a.double().tolist()), hname)
        for s in (257, 2049, 300.7, 1.1):
            for sym, f in OPERATORS.items():
                if sym in ("&", "|", "^", "<<", ">>", "<", "=="):
                    continue
                try:
                    r = f(a, s)
                except (RuntimeError, TypeError):
                    continue
                out.append('check("%s %s %s", %s %s %s, %s)' % (hname, sym, s, la, sym, s, lit64(r.double().tolist())))
    return out


def write_half(path):
    lines = [HALF_HEADER % torch.__version__] + half_rows()
    lines.append('print(format("{} half-type results differ from torch", differ))')
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("gen_dtypes.py: %d lines in %s" % (len(lines) - 2, path))


if __name__ == "__main__":
    main()
