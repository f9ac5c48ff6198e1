# Generates tests/lang/math_*.{masq,out}: python3 tests/ref/gen_math.py tests/lang
# (needs torch 1.13: apt-get install python3-torch; run with /usr/bin/python3).
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref import *

outdir = sys.argv[1]
def write(name, fixtures, cases, env):
    ms, out = emit(name, fixtures, cases, env)
    open(os.path.join(outdir, name + ".masq"), "w").write(ms)
    open(os.path.join(outdir, name + ".out"), "w").write(out)

# ---------------------------------------------------------------- unary
fx = ['m0 = masked([0.5, -0.25, 0.75, 2.0, -3.0], [true, true, false, true, false])',
      'fm = masked([1.0, -2.0, 3.0], [false, false, false])',
      'mi = masked([3, -2, 7, 0], [true, true, false, true])',
      'md = masked(tensor([0.5, -1.5, 2.5, 100.0], dtype="float64"), [true, true, true, false])']
env = dict(globals())
env.update(m0=M([0.5, -0.25, 0.75, 2.0, -3.0], [T, T, F, T, F]), fm=M([1.0, -2.0, 3.0], [F, F, F]),
           mi=M([3, -2, 7, 0], [T, T, F, T]),
           md=M(torch.tensor([0.5, -1.5, 2.5, 100.0], dtype=torch.float64), [T, T, T, F]))
names = ("abs absolute acos arccos acosh arccosh angle asin arcsin asinh arcsinh atan arctan atanh arctanh "
         "ceil cos cosh deg2rad digamma erf erfc erfinv exp exp2 expm1 fix floor frac i0 isnan lgamma log "
         "log10 log1p log2 logit neg negative positive rad2deg reciprocal round rsqrt sigmoid sign sgn "
         "signbit sin sinc sinh sqrt square tan tanh trunc conj_physical nan_to_num").split()
cases = [("#", "torch.masked's unary ops apply to the data and keep the mask")]
for n in names:
    fn = getattr(torch, n)
    cases.append((f"{n}(m0)", f"U(torch.{n}, m0)"))
    cases.append((f"{n}(fm)", f"U(torch.{n}, fm)"))
# dtype behaviour: ints compute in float32 for float functions, keep int64 for the rest
for n in "abs neg sign square exp sqrt sigmoid floor round isnan signbit".split():
    cases.append((f"{n}(mi)", f"U(torch.{n}, mi)"))
for n in "exp sin erfinv digamma i0 sinc logit".split():
    cases.append((f"{n}(md)", f"U(torch.{n}, md)"))
cases += [
    ("#", "unary ops torch.masked lacks: relu, isinf, isfinite, logical_not"),
    ("relu(m0)", "U(torch.relu, m0)"), ("relu(fm)", "U(torch.relu, fm)"), ("relu(mi)", "U(torch.relu, mi)"),
    ("isinf(m0 / 0)", "U(torch.isinf, B(torch.div, m0, 0))"), ("isinf(fm)", "U(torch.isinf, fm)"),
    ("isfinite(m0 / 0)", "U(torch.isfinite, B(torch.div, m0, 0))"), ("isfinite(fm)", "U(torch.isfinite, fm)"),
    ("logical_not(m0)", "U(torch.logical_not, m0)"), ("logical_not(fm)", "U(torch.logical_not, fm)"),
    ("#", "parameters"),
    ("clamp(m0, -0.3, 0.6)", "U(torch.clamp, m0, -0.3, 0.6)"),
    ("clamp(m0, min=0)", "U(torch.clamp, m0, min=0)"),
    ("clip(m0, max=0)", "U(torch.clip, m0, max=0)"),
    ("clip(fm, max=0)", "U(torch.clip, fm, max=0)"),
    ("bitwise_not(fm > 0)", "U(torch.bitwise_not, B(torch.gt, fm, 0))"),
    ("clamp(fm, 0, 1)", "U(torch.clamp, fm, 0, 1)"),
    ("clamp(mi, 0, 2)", "U(torch.clamp, mi, 0, 2)"),
    ("clamp(mi, 0.5)", "U(torch.clamp, mi, 0.5)"),
    ("clamp(m0, zeros(5), 1)", "U(torch.clamp, m0, torch.zeros(5), torch.tensor(1.))"),
    ("round(masked([0.125, 2.5, -1.555, 1234.5], [true, true, true, false]), decimals=2)",
     "U(torch.round, M([0.125, 2.5, -1.555, 1234.5], [T, T, T, F]), decimals=2)"),
    ("round(masked([1234.5, 2.5, 15.0, 1.0], [true, true, true, false]), decimals=-1)",
     "U(torch.round, M([1234.5, 2.5, 15.0, 1.0], [T, T, T, F]), decimals=-1)"),
    ("round(masked([0.5, 1.5, 2.5, -0.5], [true, true, true, false]))",
     "U(torch.round, M([0.5, 1.5, 2.5, -0.5], [T, T, T, F]))"),
    ("logit(m0, eps=0.1)", "U(torch.logit, m0, eps=0.1)"),
    ("nan_to_num(masked([nan, inf, -inf, 1.0], [true, true, true, false]))",
     "U(torch.nan_to_num, M([math.nan, math.inf, -math.inf, 1.0], [T, T, T, F]))"),
    ("nan_to_num(masked([nan, inf, -inf, 1.0], [true, true, true, false]), nan=1.5, posinf=9.0, neginf=-9.0)",
     "U(torch.nan_to_num, M([math.nan, math.inf, -math.inf, 1.0], [T, T, T, F]), nan=1.5, posinf=9.0, neginf=-9.0)"),
    ("pow(m0, 2)", "U(torch.pow, m0, 2)"), ("pow(m0, 0.5)", "U(torch.pow, m0, 0.5)"),
    ("m0 ** 3", "U(torch.pow, m0, 3)"), ("pow(fm, 2)", "U(torch.pow, fm, 2)"),
    ("pow(2, m0)", "B(torch.pow, 2, m0)"), ("mi ** 2", "U(torch.pow, mi, 2)"),
    ("bitwise_not(masked([true, false, true], [true, true, false]))", "U(torch.bitwise_not, M([T, F, T], [T, T, F]))"),
    ("bitwise_not(mi)", "U(torch.bitwise_not, mi)"),
    ("#", "plain tensors stay plain"),
    ("exp(tensor([0.0, 1.0]))", "torch.exp(torch.tensor([0., 1.]))"),
    ("floor(tensor([-0.5, 1.5], dtype='float64'))", "torch.floor(torch.tensor([-0.5, 1.5], dtype=torch.float64))"),
]
write("math_unary", fx, cases, env)

# ---------------------------------------------------------------- binary
fx = ['a = masked([5.5, -3.0, 2.0, 7.0, -0.5], [true, true, false, true, false])',
      'b = masked([2.0, 2.5, 0.0, -2.0, 4.0], [true, true, false, true, false])',
      'fm = masked([1.0, -2.0, 3.0], [false, false, false])',
      'ia = masked([7, -7, 3, 0], [true, true, false, true])',
      'ib = masked([2, 2, 5, -3], [true, true, false, true])',
      'ba = masked([true, false, true, false], [true, true, false, true])',
      'bb = masked([true, true, false, false], [true, true, false, true])']
env = dict(globals())
env.update(a=M([5.5, -3.0, 2.0, 7.0, -0.5], [T, T, F, T, F]), b=M([2.0, 2.5, 0.0, -2.0, 4.0], [T, T, F, T, F]),
           fm=M([1.0, -2.0, 3.0], [F, F, F]), ia=M([7, -7, 3, 0], [T, T, F, T]), ib=M([2, 2, 5, -3], [T, T, F, T]),
           ba=M([T, F, T, F], [T, T, F, T]), bb=M([T, T, F, F], [T, T, F, T]))
bnames = ("add atan2 arctan2 div divide floor_divide fmod logaddexp logaddexp2 mul multiply nextafter remainder "
          "sub subtract true_divide eq ne le ge greater greater_equal gt less_equal lt less maximum minimum "
          "fmax fmin not_equal hypot copysign xlogy float_power logical_and logical_or logical_xor pow").split()
cases = [("#", "torch.masked's binary ops: equal masks, or a plain operand or number taking the mask (2.1)")]
for n in bnames:
    cases.append((f"{n}(a, b)", f"B(torch.{n}, a, b)"))
    cases.append((f"{n}(fm, 2)", f"B(torch.{n}, fm, 2)"))
for n in "add sub mul div floor_divide remainder fmod maximum minimum pow eq lt".split():
    cases.append((f"{n}(ia, ib)" if n != "pow" else "pow(ia, 2)",
                  f"B(torch.{n}, ia, ib)" if n != "pow" else "B(torch.pow, ia, 2)"))
for n in "bitwise_and bitwise_or bitwise_xor".split():
    cases.append((f"{n}(ia, ib)", f"B(torch.{n}, ia, ib)"))
    cases.append((f"{n}(ba, bb)", f"B(torch.{n}, ba, bb)"))
    cases.append((f"{n}(fm > 0, true)", f"B(torch.{n}, B(torch.gt, fm, 0), True)"))
cases += [
    ("bitwise_left_shift(ia, 2)", "B(torch.bitwise_left_shift, ia, 2)"),
    ("bitwise_right_shift(ia, 1)", "B(torch.bitwise_right_shift, ia, 1)"),
    ("bitwise_left_shift(masked([1, 2], [false, false]), 1)", "B(torch.bitwise_left_shift, M([1, 2], [F, F]), 1)"),
    ("bitwise_right_shift(masked([1, 2], [false, false]), 1)", "B(torch.bitwise_right_shift, M([1, 2], [F, F]), 1)"),
    ("#", "operators, numbers on either side (2 - x and 2 ** x fail in torch 1.13)"),
    ("a // b", "B(torch.floor_divide, a, b)"), ("a % b", "B(torch.remainder, a, b)"),
    ("ia // ib", "B(torch.floor_divide, ia, ib)"), ("ia % ib", "B(torch.remainder, ia, ib)"),
    ("7 // a", "B(torch.floor_divide, 7, a)"), ("-7 % ib", "B(torch.remainder, -7, ib)"),
    ("2 - a", "B(torch.sub, 2, a)"), ("2 ** a", "B(torch.pow, 2, a)"), ("10 / ia", "B(torch.div, 10, ia)"),
    ("fm // 2", "B(torch.floor_divide, fm, 2)"), ("fm % 2", "B(torch.remainder, fm, 2)"),
    ("#", "keyword forms"),
    ("add(a, b, alpha=-0.5)", "B(torch.add, a, b, alpha=-0.5)"),
    ("sub(ia, ib, alpha=2)", "B(torch.sub, ia, ib, alpha=2)"),
    ("div(a, b, rounding_mode='trunc')", "B(torch.div, a, b, rounding_mode='trunc')"),
    ("div(a, b, rounding_mode='floor')", "B(torch.div, a, b, rounding_mode='floor')"),
    ("div(ia, ib, rounding_mode='trunc')", "B(torch.div, ia, ib, rounding_mode='trunc')"),
    ("divide(ia, ib, rounding_mode='floor')", "B(torch.div, ia, ib, rounding_mode='floor')"),
    ("#", "a masked-out zero divisor is no error for ints"),
    ("ia // masked([1, 2, 0, 5], [true, true, false, true])", "B(torch.floor_divide, ia, M([1, 2, 1, 5], [T, T, F, T]))"),
    ("#", "broadcasting a plain operand: the mask broadcasts with it"),
    ("a * ones(2, 5)", "B(torch.mul, a, torch.ones(2, 5))"),
    ("maximum(a, tensor([[0.0], [6.0]]))", "B(torch.maximum, a, torch.tensor([[0.0], [6.0]]))"),
    ("#", "NaN: maximum/minimum propagate it, fmax/fmin ignore it"),
    ("maximum(masked([nan, 1.0, 2.0], [true, true, false]), 1.5)", "B(torch.maximum, M([math.nan, 1.0, 2.0], [T, T, F]), torch.tensor(1.5))"),
    ("fmax(masked([nan, 1.0, 2.0], [true, true, false]), 1.5)", "B(torch.fmax, M([math.nan, 1.0, 2.0], [T, T, F]), torch.tensor(1.5))"),
    ("minimum(masked([nan, 1.0, 2.0], [true, true, false]), 1.5)", "B(torch.minimum, M([math.nan, 1.0, 2.0], [T, T, F]), torch.tensor(1.5))"),
    ("fmin(masked([nan, 1.0, 2.0], [true, true, false]), 1.5)", "B(torch.fmin, M([math.nan, 1.0, 2.0], [T, T, F]), torch.tensor(1.5))"),
    ("#", "type promotion: int with float, weak numbers"),
    ("ia + a[0:4]", "B(torch.add, ia, M(a.d[0:4], a.m[0:4]))"),
    ("ia * 2.5", "B(torch.mul, ia, 2.5)"),
    ("ia / ib", "B(torch.div, ia, ib)"),
    ("tensor([1.0, 2.0], dtype='float64') * a[0:2]", "B(torch.mul, torch.tensor([1.0, 2.0], dtype=torch.float64), M(a.d[0:2], a.m[0:2]))"),
]
write("math_binary", fx, cases, env)

# ---------------------------------------------------------------- reductions
fx = ['m0 = masked([0.0, 1.0, 2.0, 3.0, 4.0], [true, true, false, true, false])',
      'fm = masked([1.0, -2.0, 3.0], [false, false, false])',
      'mt2 = masked([[1.0, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]],',
      '             [[true, false, true, false], [false, false, false, false], [true, true, true, false]])',
      'mi = masked([[1, 2, 3], [4, 5, 6]], [[true, false, true], [false, false, false]])',
      'b2 = masked([[true, false, true], [false, true, false]], [[true, true, false], [false, false, false]])',
      'x3 = masked(arange(24.0).reshape(2, 3, 4) % 7 - 3, (arange(24).reshape(2, 3, 4) % 5) != 1)']
x3d = (torch.arange(24.).reshape(2, 3, 4) % 7) - 3
x3m = (torch.arange(24).reshape(2, 3, 4) % 5) != 1
env = dict(globals())
env.update(m0=M([0.0, 1.0, 2.0, 3.0, 4.0], [T, T, F, T, F]), fm=M([1.0, -2.0, 3.0], [F, F, F]),
           mt2=M([[1.0, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], [[T, F, T, F], [F, F, F, F], [T, T, T, F]]),
           mi=M([[1, 2, 3], [4, 5, 6]], [[T, F, T], [F, F, F]]),
           b2=M([[T, F, T], [F, T, F]], [[T, T, F], [F, F, F]]), x3=M(x3d, x3m))
tm = torch.masked
def anyr(x, dim=None, keepdim=False):
    d = x.d.masked_fill(~x.m, False)
    r = d.any() if dim is None else d.any(dim, keepdim=keepdim)
    if dim is None and keepdim: r = r.reshape([1] * x.d.dim())
    return M(r, x.m.any() if dim is None else x.m.any(dim, keepdim=keepdim))
def allr(x, dim=None, keepdim=False):
    d = x.d.masked_fill(~x.m, True)
    r = d.all() if dim is None else d.all(dim, keepdim=keepdim)
    return M(r, x.m.any() if dim is None else x.m.any(dim, keepdim=keepdim))
def count(x, dim=None, keepdim=False):
    return x.m.sum() if dim is None else x.m.sum(dim, keepdim=keepdim)
def arg(fn, x, dim=None, keepdim=False):
    if dim is None:
        r = fn(x.d.flatten(), 0, mask=x.m.flatten()).long()
        return M(r, x.m.any())
    r = fn(x.d, dim, keepdim=keepdim, mask=x.m).long()
    return M(r, x.m.any(dim, keepdim=keepdim))
def var(x, dim=None, keepdim=False, unbiased=False):
    return red(lambda d, *a, **k: tm.var(d, *a, unbiased=unbiased, **k), x, dim, keepdim)
def std(x, dim=None, keepdim=False, unbiased=False):
    return red(lambda d, *a, **k: tm.std(d, *a, unbiased=unbiased, **k), x, dim, keepdim)
def norm(x, p, dim=None, keepdim=False):
    return red(lambda d, *a, **k: tm.norm(d, p, *a, **k), x, dim, keepdim)
def lse(x, dim=None, keepdim=False):
    if dim is None:
        return M(tm.logsumexp(x.d.flatten(), 0, mask=x.m.flatten()), x.m.any())
    return red(tm.logsumexp, x, dim, keepdim)
def median(x, dim=None, keepdim=False):
    if dim is None:
        return M(tm.median(x.d.flatten(), 0, mask=x.m.flatten()), x.m.any())
    return red(tm.median, x, dim, keepdim)
env.update({k: v for k, v in globals().items() if k not in env})
cases = [("#", "reductions over everything, one dim, a list of dims; keepdim; fully masked slices (2.3)")]
for n in "sum mean prod amax amin".split():
    cases += [(f"{n}(m0)", f"red(tm.{n}, m0)"), (f"{n}(fm)", f"red(tm.{n}, fm)"),
              (f"{n}(mt2, 1)", f"red(tm.{n}, mt2, 1)"), (f"{n}(mt2, 0)", f"red(tm.{n}, mt2, 0)"),
              (f"{n}(mt2, -1, keepdim=true)", f"red(tm.{n}, mt2, -1, True)"),
              (f"{n}(x3, [0, 2])", f"red(tm.{n}, x3, (0, 2))"),
              (f"{n}(x3, [2, 0], keepdim=true)", f"red(tm.{n}, x3, (0, 2), True)"),
              (f"{n}(mi, 1)", f"red(tm.{n}, mi, 1)")]
cases += [("sum(mt2)", "red(tm.sum, mt2)"), ("prod(mt2)", "red(tm.prod, mt2)"), ("sum(mt2, [0, 1])", "red(tm.sum, mt2, (0, 1))"),
          ("sum(m0, dtype='float64')", "red(tm.sum, M(m0.d.double(), m0.m))"),
          ("mean(mi, dtype='float64')", "red(tm.mean, M(mi.d.double(), mi.m))"),
          ("sum(mt2, keepdim=true)", "red(tm.sum, mt2, None, True)")]
for n, f in (("argmax", "tm.argmax"), ("argmin", "tm.argmin")):
    cases += [(f"{n}(m0)", f"arg({f}, m0)"), (f"{n}(fm)", f"arg({f}, fm)"), (f"{n}(mt2, 1)", f"arg({f}, mt2, 1)"),
              (f"{n}(mt2, 0)", f"arg({f}, mt2, 0)"), (f"{n}(mt2)", f"arg({f}, mt2)"),
              (f"{n}(x3, 1, keepdim=true)", f"arg({f}, x3, 1, True)"), (f"{n}(mi, 1)", f"arg({f}, mi, 1)")]
cases += [("all(b2)", "allr(b2)"), ("all(b2, 1)", "allr(b2, 1)"), ("all(b2, 0)", "allr(b2, 0)"),
          ("any(b2)", "anyr(b2)"), ("any(b2, 1)", "anyr(b2, 1)"), ("any(b2, 0, keepdim=true)", "anyr(b2, 0, True)"),
          ("all(fm > 0)", "allr(B(torch.gt, fm, 0))"), ("any(fm > 0)", "anyr(B(torch.gt, fm, 0))"),
          ("all(mt2 > 2, 1)", "allr(B(torch.gt, mt2, 2), 1)"), ("any(mi, 1)", "anyr(M(mi.d.bool(), mi.m), 1)"),
          ("count(m0)", "count(m0)"), ("count(fm)", "count(fm)"), ("count(mt2, 1)", "count(mt2, 1)"),
          ("count(x3, [0, 2], keepdim=true)", "count(x3, (0, 2), True)"),
          ("var(m0)", "var(m0)"), ("var(fm)", "var(fm)"), ("var(mt2, 1)", "var(mt2, 1)"),
          ("var(mt2, 1, correction=1)", "var(mt2, 1, unbiased=True)"),
          ("var(x3, [0, 2], correction=1)", "var(x3, (0, 2), unbiased=True)"),
          ("var(x3, 1, keepdim=true)", "var(x3, 1, True)"),
          ("std(m0)", "std(m0)"), ("std(fm)", "std(fm)"), ("std(mt2, 1)", "std(mt2, 1)"),
          ("std(mt2, 0, correction=1)", "std(mt2, 0, unbiased=True)"), ("std(mi, 1)", "std(M(mi.d.float(), mi.m), 1)"),
          ("norm(m0)", "norm(m0, 2.0)"), ("norm(fm)", "norm(fm, 2.0)"), ("norm(mt2, 1, 1)", "norm(mt2, 1.0, 1)"),
          ("norm(mt2, 2, 0)", "norm(mt2, 2.0, 0)"), ("norm(x3, 3, [1, 2])", "norm(x3, 3.0, (1, 2))"),
          ("norm(mt2, inf, 1)", "norm(mt2, math.inf, 1)"), ("norm(mt2, -inf, 1)", "norm(mt2, -math.inf, 1)"),
          ("norm(mt2 - 3, 0, 1)", "norm(B(torch.sub, mt2, 3), 0.0, 1)"),
          ("logsumexp(m0)", "lse(m0)"), ("logsumexp(fm)", "lse(fm)"), ("logsumexp(mt2, 1)", "lse(mt2, 1)"),
          ("logsumexp(mt2 * 100, 0)", "lse(B(torch.mul, mt2, 100), 0)"),
          ("logsumexp(x3, 2, keepdim=true)", "lse(x3, 2, True)"),
          ("median(m0)", "median(m0)"), ("median(fm)", "median(fm)"), ("median(mt2, 1)", "median(mt2, 1)"),
          ("median(mt2, 0)", "median(mt2, 0)"), ("median(x3, 2)", "median(x3, 2)"),
          ("median(mi, 1)", "M(tm.median(mi.d.float(), 1, mask=mi.m).nan_to_num(0).long(), mi.m.any(1))"),
          ("#", "plain tensors give plain results"),
          ("sum(arange(6.0).reshape(2, 3), 0)", "torch.arange(6.).reshape(2, 3).sum(0)"),
          ("prod(arange(1, 6))", "torch.arange(1, 6).prod()"),
          ("argmax(tensor([[1.0, 5.0], [7.0, 2.0]]), 1)", "torch.tensor([[1., 5.], [7., 2.]]).argmax(1)"),
          ("var(arange(6.0), correction=1)", "torch.arange(6.).var()"),
          ("logsumexp(tensor([1000.0, 1000.0]))", "torch.logsumexp(torch.tensor([1000., 1000.]), 0)"),
          ("median(tensor([3.0, 1.0, 4.0, 2.0]))", "torch.tensor([3., 1., 4., 2.]).median()"),
          ("all(tensor([1.0, 0.0]))", "torch.tensor([1., 0.]).all()"),
          ("count(ones(2, 3), 1)", "torch.tensor([3, 3])"),
          ]
write("math_reduce", fx, cases, env)

# ---------------------------------------------------------------- along a dim: cumulative, softmax family, selection
fx = ['mt2 = masked([[1.0, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]],',
      '             [[true, false, true, false], [false, false, false, false], [true, true, true, false]])',
      'sm = masked([[1.5410, 0, 0], [0.5684, 0, -1.3986], [0, 0, 0]], [[true, false, false], [true, false, true], [false, false, false]])',
      'mi = masked([[1, 2, 3], [4, 5, 6]], [[true, false, true], [false, false, false]])',
      'fm = masked([1.0, -2.0, 3.0], [false, false, false])',
      'x3 = masked(arange(24.0).reshape(2, 3, 4) % 7 - 3, (arange(24).reshape(2, 3, 4) % 5) != 1)']
env = dict(globals())
env.update(mt2=M([[1.0, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], [[T, F, T, F], [F, F, F, F], [T, T, T, F]]),
           sm=M([[1.5410, 0, 0], [0.5684, 0, -1.3986], [0, 0, 0]], [[T, F, F], [T, F, T], [F, F, F]]),
           mi=M([[1, 2, 3], [4, 5, 6]], [[T, F, T], [F, F, F]]), fm=M([1.0, -2.0, 3.0], [F, F, F]), x3=M(x3d, x3m))
def along(fn, x, dim, **k):
    return M(fn(x.d, dim, mask=x.m, **k), x.m)
def where(c, a, b):
    am = a.m if isinstance(a, M) and a.m is not None else torch.ones_like(data(a), dtype=torch.bool) if isinstance(data(a), torch.Tensor) else torch.tensor(True)
    bm = b.m if isinstance(b, M) and b.m is not None else torch.ones_like(data(b), dtype=torch.bool) if isinstance(data(b), torch.Tensor) else torch.tensor(True)
    d = torch.where(c, torch.as_tensor(data(a)), torch.as_tensor(data(b)))
    return M(d, torch.where(c, am, bm).expand(d.shape))
cond = torch.tensor([[False, False, True, False], [False, False, False, False], [True, True, True, False]])
env.update({k: v for k, v in globals().items() if k not in env})
cases = [("#", "cumsum and cumprod: masked-out entries count as the identity and stay masked out"),
         ("cumsum(mt2, 1)", "along(tm.cumsum, mt2, 1)"), ("cumsum(mt2, 0)", "along(tm.cumsum, mt2, 0)"),
         ("cumprod(mt2, 1)", "along(tm.cumprod, mt2, 1)"), ("cumprod(mt2, -2)", "along(tm.cumprod, mt2, 0)"),
         ("cumsum(fm, 0)", "along(tm.cumsum, fm, 0)"), ("cumprod(fm, 0)", "along(tm.cumprod, fm, 0)"),
         ("cumsum(mi, 1)", "along(tm.cumsum, mi, 1)"), ("cumprod(mi, 1)", "along(tm.cumprod, mi, 1)"),
         ("cumsum(x3, 1)", "along(tm.cumsum, x3, 1)"),
         ("cumsum(mt2, 1, dtype='float64')", "along(tm.cumsum, M(mt2.d.double(), mt2.m), 1)"),
         ("cumsum(arange(5), 0)", "torch.arange(5).cumsum(0)"),
         ("#", "softmax, log_softmax, softmin, normalize along a dim; a fully masked slice stays masked (2.7)"),
         ("softmax(sm, 0)", "along(tm.softmax, sm, 0)"), ("softmax(sm, 1)", "along(tm.softmax, sm, 1)"),
         ("softmax(sm, -1)", "along(tm.softmax, sm, -1)"), ("softmax(fm, 0)", "along(tm.softmax, fm, 0)"),
         ("softmax(sm, 1, dtype='float64')", "along(tm.softmax, M(sm.d.double(), sm.m), 1)"),
         ("log_softmax(sm, 1)", "along(tm.log_softmax, sm, 1)"), ("log_softmax(sm, 0)", "along(tm.log_softmax, sm, 0)"),
         ("log_softmax(fm, 0)", "along(tm.log_softmax, fm, 0)"), ("log_softmax(x3, 1)", "along(tm.log_softmax, x3, 1)"),
         ("softmin(sm, 1)", "along(tm.softmin, sm, 1)"), ("softmin(sm, 0)", "along(tm.softmin, sm, 0)"),
         ("softmin(fm, 0)", "along(tm.softmin, fm, 0)"),
         ("normalize(mt2)", "M(tm.normalize(mt2.d, 2.0, 1, mask=mt2.m), mt2.m)"),
         ("normalize(mt2, p=1.0, dim=0)", "M(tm.normalize(mt2.d, 1.0, 0, mask=mt2.m), mt2.m)"),
         ("normalize(fm, dim=0)", "M(tm.normalize(fm.d, 2.0, 0, mask=fm.m), fm.m)"),
         ("normalize(x3, 3.0, 2)", "M(tm.normalize(x3.d, 3.0, 2, mask=x3.m), x3.m)"),
         ("softmax(tensor([[1.0, 2.0], [3.0, 5.0]]), 1)", "torch.tensor([[1., 2.], [3., 5.]]).softmax(1)"),
         ("log_softmax(tensor([[1.0, 2.0], [3.0, 5.0]]), 0)", "torch.tensor([[1., 2.], [3., 5.]]).log_softmax(0)"),
         ("#", "where: a plain branch counts as all valid, masks need not match (2.6)"),
         ("where(to_tensor(mt2 > 2, false), mt2, 0.0)", "where(cond, mt2, 0.)"),
         ("where(to_tensor(mt2 > 2, false), mt2, -mt2)", "where(cond, mt2, U(torch.neg, mt2))"),
         ("where(to_tensor(mt2 > 2, false), zeros(3, 4), mt2)", "where(cond, torch.zeros(3, 4), mt2)"),
         ("where(tensor([true, false, true]), fm, 1.0)", "where(torch.tensor([T, F, T]), fm, 1.)"),
         ("where(tensor([true, false]), masked([1, 2], [true, false]), masked([3.5, 4.5], [false, true]))",
          "where(torch.tensor([T, F]), M([1, 2], [T, F]), M([3.5, 4.5], [F, T]))"),
         ("#", "masked_fill: filled entries become valid, the dtype stays x's"),
         ("masked_fill(mt2, to_tensor(mt2 > 9, false), -1.0)", "where(torch.tensor([[F, F, F, F], [F, F, F, F], [F, T, T, F]]), -1., mt2)"),
         ("masked_fill(mt2, tensor([true, false, false, false]), 0)", "where(torch.tensor([T, F, F, F]), 0., mt2)"),
         ("masked_fill(fm, tensor([false, true, false]), 9.0)", "where(torch.tensor([F, T, F]), 9., fm)"),
         ("masked_fill(mi, tensor([true, false, false]), 2.7)", "where(torch.tensor([T, F, F]), 2, mi)"),
         ("masked_fill(arange(4.0), arange(4) > 1, nan)", "torch.arange(4.).masked_fill(torch.arange(4) > 1, math.nan)"),
         ]
write("math_along", fx, cases, env)

# ---------------------------------------------------------------- matmul, intersect, constants
fx = ['a = masked([[1.0, 2, 3], [4, 5, 6]], [[true, false, true], [false, false, false]])',
      'b = masked([[1.0, -1], [2, 0.5], [nan, 3]], [[true, true], [false, true], [false, true]])',
      'p = tensor([[1.0, 2], [3, 4], [5, 6]])',
      'v = masked([1.0, inf, 2.0], [true, false, true])']
env = dict(globals())
A = M([[1.0, 2, 3], [4, 5, 6]], [[T, F, T], [F, F, F]])
Bm = M([[1.0, -1], [2, 0.5], [math.nan, 3]], [[T, T], [F, T], [F, T]])
P = torch.tensor([[1.0, 2], [3, 4], [5, 6]])
V = M([1.0, math.inf, 2.0], [T, F, T])
def mm(x, y):
    """valid pairs only: zero-filled data, mask = some valid pair"""
    xd, xm = (x.d, x.m) if isinstance(x, M) else (x, None)
    yd, ym = (y.d, y.m) if isinstance(y, M) else (y, None)
    xz = xd.masked_fill(~xm, 0) if xm is not None else xd
    yz = yd.masked_fill(~ym, 0) if ym is not None else yd
    r = torch.matmul(xz, yz)
    if xm is None and ym is None:
        return r
    xmf = (xm if xm is not None else torch.ones_like(xd, dtype=torch.bool)).float()
    ymf = (ym if ym is not None else torch.ones_like(yd, dtype=torch.bool)).float()
    return M(r, torch.matmul(xmf, ymf) > 0)
env.update({k: v for k, v in globals().items() if k not in env})
cases = [("#", "matmul: a masked-out entry contributes nothing (not even NaN or inf); no valid pair: masked out"),
         ("matmul(a, b)", "mm(A, Bm)"), ("a @ p", "mm(A, P)"), ("p.t() @ v", "mm(P.t(), V)"),
         ("v @ b", "mm(V, Bm)"), ("v @ v", "mm(V, V)"), ("p @ tensor([1.0, 1.0])", "mm(P, torch.tensor([1., 1.]))"),
         ("stack([a, a]) @ b", "mm(M(torch.stack([A.d, A.d]), torch.stack([A.m, A.m])), Bm)"),
         ("matmul(tensor([[1, 2], [3, 4]]), tensor([[5], [6]]))", "torch.tensor([[1, 2], [3, 4]]) @ torch.tensor([[5], [6]])"),
         ("#", "intersect: both operands restricted to the positions valid in both"),
         ("intersect(masked([1.0, 2, 3], [true, false, true]), masked([4.0, 5, 6], [true, true, false]))",
          "'[' + show(M([1.0, 2, 3], [T, F, F])) + ', ' + show(M([4.0, 5, 6], [T, F, F])) + ']'"),
         ("intersect(masked([1.0, 2, 3], [true, false, true]), tensor([[1.0], [2.0]]))",
          "'[' + show(M(torch.tensor([1.0, 2, 3]).expand(2, 3), torch.tensor([T, F, T]).expand(2, 3))) + ', ' + show(M(torch.tensor([[1.0], [2.0]]).expand(2, 3), torch.tensor([T, F, T]).expand(2, 3))) + ']'"),
         ("intersect(masked([1.0, 2], [false, false]), masked([3.0, 4], [true, true]))",
          "'[' + show(M([1.0, 2], [F, F])) + ', ' + show(M([3.0, 4], [F, F])) + ']'"),
         ("masked(ones(2, 3), false) @ p", "mm(M(torch.ones(2, 3), torch.zeros(2, 3, dtype=torch.bool)), P)"),
         ("#", "constants"),
         ("[nan, inf, -inf, pi]", "torch.tensor([math.nan, math.inf, -math.inf, math.pi])"),
         ("str(pi) + ' ' + str(inf) + ' ' + str(nan)", "'3.141592653589793 inf nan'"),
         ("isnan(tensor(nan))", "torch.isnan(torch.tensor(math.nan))"),
         ("cos(tensor(pi))", "torch.cos(torch.tensor(math.pi))")]
write("math_matmul", fx, cases, env)

# ---------------------------------------------------------------- edge cases
fx = ['e = masked([1.0, inf, nan, -inf, 2.0], [true, true, false, true, false])']
env = dict(globals())
E = M([1.0, math.inf, math.nan, -math.inf, 2.0], [T, T, F, T, F])
env.update({k: v for k, v in globals().items() if k not in env}, e=E)
cases = [("#", "inf and NaN: a NaN under the mask never reaches a valid result; valid ones propagate"),
         ("sum(e)", "red(tm.sum, e)"), ("amax(e)", "red(tm.amax, e)"), ("amin(e)", "red(tm.amin, e)"),
         ("logsumexp(e)", "lse(e)"), ("logsumexp(masked([-inf, -inf, 1.0], [true, true, false]))",
                                     "lse(M([-math.inf, -math.inf, 1.0], [T, T, F]))"),
         ("logsumexp(masked([inf, inf, 1.0], [true, true, true]))", "lse(M([math.inf, math.inf, 1.0], [T, T, T]))"),
         ("logsumexp(masked([nan, 1.0, 2.0], [true, true, true]))", "lse(M([math.nan, 1.0, 2.0], [T, T, T]))"),
         ("softmax(e, 0)", "along(tm.softmax, M([1.0, math.inf, math.nan, -math.inf, 2.0], [T, T, F, T, F]), 0)"),
         ("argmax(masked([1.0, nan, 3.0, nan], [true, true, true, true]))", "M(torch.tensor(1), torch.tensor(True))"),
         ("argmin(masked([1.0, nan, 0.0, nan], [true, false, true, true]))", "M(torch.tensor(3), torch.tensor(True))"),
         ("#", "accuracy: pairwise float64 accumulation, two-pass variance"),
         ("sum(ones(1000000) * 0.1)", "(torch.ones(1000000, dtype=torch.float64) * torch.tensor(0.1, dtype=torch.float32).double()).sum().float()"),
         ("var(arange(1, 4, dtype='float64') + 100000000.0, correction=1)",
          "(torch.arange(1, 4, dtype=torch.float64) + 100000000.0).var()"),
         ("var(masked((arange(1, 4, dtype='float64') + 100000000.0).reshape(3, 1).expand(3, 2), [[true, true], [false, false], [true, true]]), 0)",
          "M(torch.tensor([1.0, 1.0], dtype=torch.float64), torch.tensor([T, T]))"),
         ("#", "a float number keeps its full value against a float64 tensor"),
         ("(zeros(2, dtype='float64') + 0.1) * 3 - 0.3", "(torch.zeros(2, dtype=torch.float64) + 0.1) * 3 - 0.3"),
         ("masked_fill(zeros(2, dtype='float64'), tensor([true, false]), 0.1) == 0.1", "torch.tensor([True, False])"),
         ("where(tensor([true, false]), 0.1, zeros(2, dtype='float64')) == 0.1", "torch.tensor([True, False])"),
         ("exp(1.0), tensor(2.5), zeros(2) + 0.1", "'tensor(2.7183) tensor(2.5000) tensor([0.1000, 0.1000])'"),
         ("#", "empty tensors"),
         ("sum(zeros(0))", "torch.zeros(0).sum()"), ("mean(zeros(0))", "torch.zeros(0).mean()"),
         ("prod(zeros(0, 3), 0)", "torch.zeros(0, 3).prod(0)"),
         ("sum(masked(zeros(2, 0), zeros(2, 0) > 0), 1)", "M(torch.zeros(2), torch.tensor([F, F]))"),
         ("exp(zeros(0, 2))", "torch.exp(torch.zeros(0, 2))"),
         ("cumsum(zeros(0), 0)", "torch.zeros(0).cumsum(0)"),
         ("softmax(zeros(2, 0), 1)", "torch.zeros(2, 0).softmax(1)"),
         ("argmax(masked(zeros(2, 0), zeros(2, 0) > 0), 1)", "M(torch.zeros(2, dtype=torch.long), torch.tensor([F, F]))"),
         ("#", "0-d tensors"),
         ("sum(tensor(3.5)), argmax(tensor(3.5)), cumsum(tensor(2), 0), softmax(tensor(1.0), 0)",
          "' '.join(str(t) for t in (torch.tensor(3.5).sum(), torch.tensor(0), torch.tensor(2).cumsum(0), torch.tensor(1.).softmax(0)))"),
         ]
write("math_edges", fx, cases, env)
