"""Reference outputs for masq's math golden tests, computed with torch 1.13.

Each case is a masq expression and the torch computation of the same value;
the numbers come from torch (torch.masked where it has the op, else torch
on the data with the mask rule spelled out), the printing from torch.masked's
MaskedTensor repr (masked int columns re-aligned to masq's rule)."""
import math, re, sys, warnings
warnings.filterwarnings("ignore")
import torch
from torch.masked import masked_tensor, MaskedTensor

T, F = True, False

class M:
    """data + mask (None: plain)"""
    def __init__(self, d, m=None):
        self.d = d if isinstance(d, torch.Tensor) else torch.tensor(d)
        self.m = None if m is None else (m if isinstance(m, torch.Tensor) else torch.tensor(m))
        if self.m is not None and self.m.shape != self.d.shape:
            self.m = self.m.expand(self.d.shape).clone()

def data(x):
    return x.d if isinstance(x, M) else x

def mask_of(*xs):
    ms = [x.m for x in xs if isinstance(x, M) and x.m is not None]
    return ms[0] if ms else None

def U(fn, x, *a, **k):
    return M(fn(x.d, *a, **k), x.m)

def B(fn, a, b, **k):
    x, y = data(a), data(b)
    try:
        r = fn(x, y, **k)
    except TypeError:
        if not isinstance(x, torch.Tensor): x = torch.tensor(x)
        if not isinstance(y, torch.Tensor): y = torch.tensor(y)
        r = fn(x, y, **k)
    m = mask_of(a, b)
    return M(r, None if m is None else m.expand(r.shape).clone())

def red(fn, x, dim=None, keepdim=False, **k):
    """torch.masked functional reduction; result mask: any valid in the slice"""
    if dim is None:
        r = fn(x.d, mask=x.m, **k) if x.m is not None else fn(x.d, **k)
        if keepdim:
            r = r.reshape([1] * x.d.dim())
        m = None if x.m is None else x.m.any().reshape(r.shape)
    else:
        r = fn(x.d, dim, keepdim=keepdim, mask=x.m, **k) if x.m is not None else fn(x.d, dim, keepdim=keepdim, **k)
        m = None if x.m is None else (x.m.any(dim, keepdim=keepdim) if isinstance(dim, int) else
                                      x.m.sum(dim, keepdim=keepdim) > 0)
    return M(r, m)

def realign(s, x):
    """masq right-aligns masked int columns: width = widest valid int, at least 8 if any masked out"""
    if x.d.dtype != torch.int64 or x.d.dim() == 0:
        return s
    vals = [len(str(int(v))) for v, ok in zip(x.d.flatten().tolist(), x.m.flatten().tolist()) if ok]
    w = max(vals, default=0)
    if not bool(x.m.all()):
        w = max(w, 8)
    out = []
    for line in s.split("\n"):
        mm = re.match(r"^(\s*)\[(.*)\](,?)$", line)
        if mm and "[" not in mm.group(2) and mm.group(2):
            toks = [t.strip() for t in mm.group(2).split(",")]
            line = mm.group(1) + "[" + ", ".join(t.rjust(w) for t in toks) + "]" + mm.group(3)
        out.append(line)
    return "\n".join(out)

def show(x):
    return show1(x).replace("dtype=torch.", "dtype=")

def mark_float64(s, x):
    """masq shows a masked tensor's dtype when it is not the default, as tensor() does"""
    if x.d.dtype != torch.float64:
        return s
    if x.d.dim() == 0:
        return s[:-1] + ", dtype=float64)"
    return s[:-2] + ",\n  dtype=float64\n)"

def show1(x):
    if isinstance(x, M):
        if x.m is None:
            return str(x.d)
        return mark_float64(realign(str(masked_tensor(x.d, x.m)), x), x)
    if isinstance(x, torch.Tensor):
        return str(x)
    if isinstance(x, bool):
        return "true" if x else "false"
    return str(x)

def emit(name, fixtures_masq, cases, env):
    """cases: (masq expr, python expr) or ('#', comment)"""
    ms, out = [], []
    ms.append(f"# {name}: generated with torch 1.13 by tests/ref/gen_math.py; do not edit by hand.")
    ms.extend(fixtures_masq)
    for a, b in cases:
        if a == "#":
            ms.append("# " + b)
            continue
        ms.append(f'print("-- {a.replace(chr(34), chr(39))}")')
        ms.append(f"print({a})")
        out.append(f"-- {a.replace(chr(34), chr(39))}")
        out.append(show(eval(b, env)))
    return "\n".join(ms) + "\n", "\n".join(out) + "\n"
