# Generates tests/lang/shape_more.{masq,out} and torch_habits.{masq,out}:
#   /usr/bin/python3 tests/ref/gen_shape_more.py tests/lang
# (torch 1.13). torch.masked has none of tril, triu, repeat, roll, diff, bmm
# or einsum for MaskedTensor, so the references spell out masq's rules on
# torch's plain ops: data and mask moved alike (repeat, roll, .T), data
# zeroed with the mask kept (tril, triu), a difference valid where both
# entries are (diff), and a product valid where all its factors are, sums
# over the valid terms, masked out where there is none (bmm, einsum: the
# same einsum over the masks counts them).
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref import *

outdir = sys.argv[1]


def write(name, fixtures, cases, env, about):
    ms, out = emit(name, fixtures, cases, env)
    ms = ms.split("\n", 1)
    ms = f"# {name}: generated with torch 1.13 by tests/ref/gen_shape_more.py; do not edit by hand.\n# {about}\n" + ms[1]
    open(os.path.join(outdir, name + ".masq"), "w").write(ms)
    open(os.path.join(outdir, name + ".out"), "w").write(out)


def TRI(fn, x, k=0):
    return M(fn(x.d, k), x.m)


def MOVE(f, x):
    """data and mask moved alike"""
    return M(f(x.d), None if x.m is None else f(x.m))


def DIFF(x, n=1, dim=-1):
    d, m = x.d, x.m
    for _ in range(n):
        L = d.shape[dim]
        if L == 0:
            break
        d = torch.diff(d, dim=dim)
        if m is not None:
            m = m.narrow(dim, 1, L - 1) & m.narrow(dim, 0, L - 1)
    return M(d, m)


def EIN(spec, *xs):
    ds = [torch.where(x.m, x.d, torch.zeros((), dtype=x.d.dtype)) if x.m is not None else x.d for x in xs]
    if len(xs) > 1 and all(x.d.dtype == torch.bool for x in xs):
        # masq's rule for two bools: some valid term is true (torch 1.13
        # has no bool bmm: its einsum of bools fails unless no matmul is needed)
        d = torch.einsum(spec, *[q.double() for q in ds]) > 0
    else:
        d = torch.einsum(spec, *ds)
    if all(x.m is None for x in xs):
        return M(d)
    ms = [(x.m if x.m is not None else torch.ones_like(x.d, dtype=torch.bool)).double() for x in xs]
    return M(d, torch.einsum(spec, *ms) > 0)


fx = ['x = tensor([[1., 2, 3], [4, 5, 6], [7, 8, 9]])',
      '# masked-out entries hold NaN and inf: they must never show',
      'm = masked([[1., 2, 3, 4], [5, nan, 7, 8], [9, 10, inf, 12]], '
      '[[true, false, true, true], [true, false, true, false], [false, true, false, true]])',
      'mi = masked([[1, 2], [3, 4]], [[true, false], [true, true]])',
      'mb = masked([true, false, false, true, true], [true, true, false, true, true])',
      'a3 = masked([[[1., 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]], '
      '[[[true, true], [false, true], [true, true]], [[false, false], [true, true], [true, false]]])',
      'b3 = masked([[[1., -1, 2], [0.5, 2, -2]], [[3, 1, 0], [-1, 2, 4]]], '
      '[[[true, true, false], [true, true, true]], [[true, false, true], [false, false, true]]])',
      'v = masked([1., 2, 3], [true, false, true])',
      'bb = masked([[true, false], [true, true]], [[true, true], [false, true]])']
nan, inf = float("nan"), float("inf")
env = dict(globals())
env.update(
    x=M([[1., 2, 3], [4, 5, 6], [7, 8, 9]]),
    m=M([[1., 2, 3, 4], [5, nan, 7, 8], [9, 10, inf, 12]], [[T, F, T, T], [T, F, T, F], [F, T, F, T]]),
    mi=M([[1, 2], [3, 4]], [[T, F], [T, T]]),
    mb=M([T, F, F, T, T], [T, T, F, T, T]),
    a3=M([[[1., 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]],
         [[[T, T], [F, T], [T, T]], [[F, F], [T, T], [T, F]]]),
    b3=M([[[1., -1, 2], [0.5, 2, -2]], [[3, 1, 0], [-1, 2, 4]]],
         [[[T, T, F], [T, T, T]], [[T, F, T], [F, F, T]]]),
    v=M([1., 2, 3], [T, F, T]),
    bb=M([[T, F], [T, T]], [[T, T], [F, T]]))
cases = [
    ("#", "tril/triu: entries outside the triangle become 0 and keep their validity"),
    ("tril(x)", "TRI(torch.tril, x)"), ("tril(x, 1)", "TRI(torch.tril, x, 1)"),
    ("tril(x, -1)", "TRI(torch.tril, x, -1)"), ("triu(x)", "TRI(torch.triu, x)"),
    ("triu(x, -1)", "TRI(torch.triu, x, -1)"), ("triu(x, 5)", "TRI(torch.triu, x, 5)"),
    ("tril(m)", "TRI(torch.tril, m)"), ("triu(m, 1)", "TRI(torch.triu, m, 1)"),
    ("tril(mi)", "TRI(torch.tril, mi)"), ("triu(a3)", "TRI(torch.triu, a3)"),
    ("#", "repeat tiles data and mask alike; extra sizes add leading dims"),
    ("repeat(x, 2, 1)", "MOVE(lambda t: t.repeat(2, 1), x)"),
    ("repeat(m, 1, 2)", "MOVE(lambda t: t.repeat(1, 2), m)"),
    ("repeat(m, [2, 1])", "MOVE(lambda t: t.repeat(2, 1), m)"),
    ("repeat(mi, 2, 1, 2)", "MOVE(lambda t: t.repeat(2, 1, 2), mi)"),
    ("repeat(tensor([1, 2]), 3)", "torch.tensor([1, 2]).repeat(3)"),
    ("repeat(mi, 0, 1)", "MOVE(lambda t: t.repeat(0, 1), mi)"),
    ("#", "roll moves data and mask alike, wrapping around"),
    ("roll(x, 1)", "MOVE(lambda t: torch.roll(t, 1), x)"),
    ("roll(x, -1, 0)", "MOVE(lambda t: torch.roll(t, -1, 0), x)"),
    ("roll(m, [1, 2], [0, 1])", "MOVE(lambda t: torch.roll(t, (1, 2), (0, 1)), m)"),
    ("roll(m, 5, 1)", "MOVE(lambda t: torch.roll(t, 5, 1), m)"),
    ("roll(m, -7)", "MOVE(lambda t: torch.roll(t, -7), m)"),
    ("roll(mi, 1, dims=-1)", "MOVE(lambda t: torch.roll(t, 1, -1), mi)"),
    ("#", "diff: a difference is valid where both its entries are; bools differ by xor"),
    ("diff(x)", "DIFF(x)"), ("diff(x, dim=0)", "DIFF(x, dim=0)"), ("diff(x, 5)", "DIFF(x, 5)"),
    ("diff(m)", "DIFF(m)"), ("diff(m, 2)", "DIFF(m, 2)"), ("diff(m, dim=0)", "DIFF(m, dim=0)"),
    ("diff(m, 0)", "DIFF(m, 0)"), ("diff(mb)", "DIFF(mb)"), ("diff(mi, 1, 0)", "DIFF(mi, 1, 0)"),
    ("#", "bmm and einsum: a product is valid where all its factors are; sums skip the rest"),
    ("bmm(a3, b3)", "EIN('bij,bjk->bik', a3, b3)"),
    ("bmm(get_data(a3), get_data(b3))", "EIN('bij,bjk->bik', M(a3.d), M(b3.d))"),
    ("einsum('ij,jk->ik', x, x)", "EIN('ij,jk->ik', x, x)"),
    ("einsum('ij,kj->ik', m, m)", "EIN('ij,kj->ik', m, m)"),
    ("einsum('ij,kj', m, m)", "EIN('ij,kj', m, m)"),
    ("einsum('ij->ji', m)", "EIN('ij->ji', m)"),
    ("einsum('ij->', m)", "EIN('ij->', m)"),
    ("einsum('ij->j', m)", "EIN('ij->j', m)"),
    ("einsum('ii', x)", "EIN('ii', x)"), ("einsum('ii->i', x)", "EIN('ii->i', x)"),
    ("einsum('ii->i', m[:, 1:])", "EIN('ii->i', M(m.d[:, 1:], m.m[:, 1:]))"),
    ("einsum('i,j->ij', v, tensor([1., 10]))", "EIN('i,j->ij', v, M([1., 10]))"),
    ("einsum('i,i', v, v)", "EIN('i,i', v, v)"),
    ("einsum('bij,bjk->bik', a3, b3)", "EIN('bij,bjk->bik', a3, b3)"),
    ("einsum('bij,bjk->bki', a3, b3)", "EIN('bij,bjk->bki', a3, b3)"),
    ("einsum('bij,bjk', a3, b3)", "EIN('bij,bjk', a3, b3)"),
    ("einsum('...ij,...jk->...ik', a3, b3)", "EIN('...ij,...jk->...ik', a3, b3)"),
    ("einsum('...j,jk', a3, b3[0])", "EIN('...j,jk', a3, M(b3.d[0], b3.m[0]))"),
    ("einsum('bij->b', a3)", "EIN('bij->b', a3)"),
    ("einsum('ij,jk,kl->il', m, m.T, x)", "EIN('ij,jk,kl->il', m, M(m.d.T, m.m.T), x)"),
    ("einsum('ij,jk->ik', m, ones(1, 2))", "EIN('ij,jk->ik', m, M(torch.ones(1, 2)))"),
    ("einsum('bij, bjk -> bik', a3, b3)", "EIN('bij,bjk->bik', a3, b3)"),
    ("einsum('ij,jk', [x, x])", "EIN('ij,jk', x, x)"),
    ("#", "bools: a product of two is true where some valid term is; a sum over one operand counts"),
    ("einsum('ij,jk->ik', bb, bb)", "EIN('ij,jk->ik', bb, bb)"),
    ("einsum('ij,jk->ik', get_data(bb), get_data(bb))", "EIN('ij,jk->ik', M(bb.d), M(bb.d))"),
    ("einsum('ij->', get_data(bb))", "EIN('ij->', M(bb.d))"),
    ("#", ".T reverses the dims (numpy's rule; torch warns for other than 2-d); size and dim"),
    ("x.T", "MOVE(lambda t: t.T, x)"), ("m.T", "MOVE(lambda t: t.T, m)"),
    ("a3.T", "MOVE(lambda t: t.permute(2, 1, 0), a3)"), ("v.T", "v"),
    ("size(m)", "list(m.d.size())"), ("size(m, 1)", "m.d.size(1)"), ("m.size(-2)", "m.d.size(-2)"),
    ("a3.size()", "list(a3.d.size())"), ("dim(m)", "m.d.dim()"), ("a3.dim()", "a3.d.dim()"),
    ("size(tensor(1.))", "list(torch.tensor(1.).size())"),
]
write("shape_more", fx, cases, env,
      "tril/triu, repeat, roll, diff, bmm, einsum, .T, size, dim on plain and masked tensors")

# ---------------------------------------------------------------- habits
def VMEAN(v):
    return v.d[v.m].mean()


fx = ['v = masked([1., 2, 3, 10], [true, true, false, true])',
      'w = masked([[1., 2], [3, 4]], [[true, false], [true, true]])',
      'none_valid = masked([1., 2], [false, false])']
env = dict(globals())
env.update(v=M([1., 2, 3, 10], [T, T, F, T]), w=M([[1., 2], [3, 4]], [[T, F], [T, T]]))



cases = [
    ("#", "a 0-d masked result (a reduction) combines with a masked tensor as a number would"),
    ("#", "(binary.c's rule for masks that broadcast, on main since 6947c83)"),
    ("v - mean(v)", "M(v.d - VMEAN(v), v.m)"),
    ("mean(v) - v", "M(VMEAN(v) - v.d, v.m)"),
    ("(v - mean(v)) / std(v)", "M((v.d - VMEAN(v)) / v.d[v.m].std(unbiased=False), v.m)"),
    ("w * sum(w)", "M(w.d * w.d[w.m].sum(), w.m)"),
    ("w > amax(w) - 1", "M(w.d > w.d[w.m].max() - 1, w.m)"),
    ("mean(v) * mean(v)", "M(VMEAN(v) * VMEAN(v), torch.tensor(True))"),
    ("#", "a masked-out 0-d one masks everything"),
    ("v - mean(none_valid)", "M(v.d, torch.zeros(4, dtype=torch.bool))"),
    ("#", "dtype names are values: dtype=float64 as dtype=\"float64\"; printed as before"),
    ("zeros(2, dtype=float64)", "torch.zeros(2, dtype=torch.float64)"),
    ("ones(2, dtype=int64)", "torch.ones(2, dtype=torch.int64)"),
    ("zeros(2, dtype=bool)", "torch.zeros(2, dtype=torch.bool)"),
    ("zeros(2, dtype=float)", "torch.zeros(2, dtype=torch.float)"),
    ("zeros(2, dtype=double)", "torch.zeros(2, dtype=torch.double)"),
    ("to(tensor([1.5]), long)", "torch.tensor([1.5]).to(torch.long)"),
    ("tensor([1, 2], dtype=float32)", "torch.tensor([1, 2], dtype=torch.float32)"),
    ("float64", "'float64'"), ("dtype(v) == float32", "True"),
    ("#", "x.requires_grad is a bool"),
    ("tensor([1.], requires_grad=true).requires_grad", "True"),
    ("tensor([1.]).requires_grad", "False"),
    ("(tensor([1.], requires_grad=true) * 2).requires_grad", "True"),
]
write("torch_habits", fx, cases, env,
      "torch habits: 0-d masked operands broadcast their validity, dtype names, x.requires_grad")
