# Writes what tests/lang/dtypes_{narrow,promote,ops}.masq must print, from
# torch 1.13:  /usr/bin/python3 tests/ref/gen_dtypes.py tests/lang
# masq names dtypes without torch's "torch." prefix; dtype(x) is the name.
import contextlib, os, sys
import torch

outdir = sys.argv[1]
def section(name):
    return contextlib.redirect_stdout(open(os.path.join(outdir, name + ".out"), "w"))

def masq_repr(x):
    # torch wraps the dtype suffix counting "torch."; masq counts its own
    # shorter suffix (docs/DIFFERENCES.md), so a suffix torch moved to a new
    # line may still fit on the last one
    r = repr(x).replace("torch.", "")
    head, sep, suffix = r.rpartition(",\n       dtype=")
    if sep and len(head.split("\n")[-1]) + len(", dtype=" + suffix) - 1 <= 80:
        r = head + ", dtype=" + suffix
    return r

def s(*xs):
    print(" ".join(masq_repr(x) if isinstance(x, torch.Tensor) else str(x) for x in xs))

def name(t): return str(t.dtype).replace("torch.", "")

def F(fn, x, *a):
    # torch 1.13's CPU kernels lack some half ops (exp, sqrt, sum ...): the
    # float32 op stored back is what masq promises for them
    try: return fn(x, *a)
    except RuntimeError: return fn(x.float(), *a).to(x.dtype)

with section("dtypes_narrow"):
    v = [1.1, -2.5, 300.7, 65519.0, 65520.0, 1e-8, 3e-8, 0.1]
    for d in [torch.int8, torch.int16, torch.int32, torch.uint8, torch.float16, torch.bfloat16]:
        # to(tensor(v), d): the float32 tensor converted (wrapping ints)
        x = torch.tensor(v).to(d)
        s(name(x), x)
    s(torch.tensor([1, 2, 300, -129]).to(torch.int8))
    s(torch.tensor([1, 2, 300, -1]).to(torch.uint8))
    s(torch.tensor(3, dtype=torch.int32))
    s(torch.tensor([], dtype=torch.int16))
    h = torch.tensor([[1.5, 2.0], [-3.25, 1e-3]]).half()
    s(h[0], h[:, 1], name(h[1]))
    s(h.bfloat16(), h.short(), h.double())
    s(torch.tensor([1.00390625, 1.01171875, -1.00390625]).bfloat16())
    s(torch.tensor([2049, 2051, 4097]).half())
    s(torch.tensor(7, dtype=torch.int8).item(), torch.tensor(0.5).half().item())

with section("dtypes_promote"):
    a = torch.tensor([100, -100, 7]).to(torch.int8)
    u = torch.tensor([200, 3, 255]).to(torch.uint8)
    h = torch.tensor([1.5, 1e-3, 60000.0]).half()
    bf = torch.tensor([1.5, 1e-3, 60000.0]).bfloat16()
    s(a + a, a * 3, a - u, a + 1, a + 1.5, a / 2, torch.div(a, 3, rounding_mode="floor"), a % 3, a == 7, a < u)
    s(u + u, u * u, u & 7)
    s(h + h, h * 2, h + bf, h + 1, h + 1.5, h / 3, h + a, h > 1)
    s(bf * 3, bf + 1)
    s(a + torch.tensor(3), a + torch.tensor(2.5, dtype=torch.float64), h + torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    s(torch.tensor([1, 2, 3], dtype=torch.int16) + torch.tensor([1, 2, 3], dtype=torch.int32), a ** 2)

with section("dtypes_ops"):
    a = torch.tensor([[100, -128, 7], [3, -4, 5]]).to(torch.int8)
    u = torch.tensor([[200, 3, 255], [0, 1, 2]]).to(torch.uint8)
    h = torch.tensor([[1.5, 1e-3, 60000.0], [-2.0, 0.333, 7.0]]).half()
    bf = torch.tensor([[1.5, 1e-3, 60000.0], [-2.0, 0.333, 7.0]]).bfloat16()
    s(abs(a), torch.neg(a), torch.exp(a), torch.sqrt(u), abs(u))
    s(F(torch.exp, h), F(torch.sqrt, h), torch.neg(bf), F(torch.sigmoid, bf), F(torch.round, h), torch.isnan(h))
    s(torch.sum(a), torch.sum(a, 1), torch.prod(a), torch.amax(a), torch.amin(u, 0), a.float().mean())
    s(F(torch.sum, h), F(torch.sum, h, 0), F(torch.mean, h), F(torch.mean, bf, 1), F(torch.amax, bf), F(torch.prod, h, 1))
    s(torch.sum(u), torch.any(a), F(torch.all, h), torch.logsumexp(h.float(), 1).half())

with section("dtypes_views"):
    def L(xs): return "[" + ", ".join(masq_repr(x) for x in xs) + "]"
    x = torch.tensor([[1, -2, 3], [4, 5, -128]]).to(torch.int8)
    h = torch.tensor([[1.5, -2.0, 3.25], [4.0, 1e-3, 65504.0]]).half()
    for a in [x, h, x.to(torch.uint8), h.bfloat16(), x.short(), x.int()]:
        s(a.reshape(3, 2), a.flatten(), a.unsqueeze(0).squeeze(), a.transpose(0, 1))
        s(a.permute(1, 0), a.t(), a.T, a[0].expand(2, 3), a.narrow(1, 1, 2), a.select(1, 2))
        s(a.flip(1), L(a.split(2, 1)), L(a.chunk(2, 0)), a.transpose(0, 1).reshape(6), a[1, 2], a[:, ::2])
    h = torch.tensor([1.5, -2.0, 65504.0]).half()
    s(h[torch.tensor([2, 0])], h[h > 0], h.bfloat16()[torch.tensor([1])], x.int()[x > 0], x[torch.tensor([1, 0])])

with section("dtypes_grad"):
    w = torch.tensor([1.5, -2.0, 3.0]).half().requires_grad_()
    y = (w * w * 3).sum()
    y.backward()
    s(y.detach(), w.grad)
    b = torch.tensor([1.5, -2.0, 0.1]).bfloat16()
    # torch rounds every intermediate gradient to bfloat16 (2.0469 at 0.1);
    # masq computes in float32 and rounds once at the leaf
    # (docs/DIFFERENCES.md): the exact gradient 3 b^2 + 2, rounded
    s((3 * b.detach().double() ** 2 + 2).bfloat16())
    h = torch.tensor([1.5, -2.0]).half().requires_grad_()
    s(name(h), "true" if h.is_leaf else "false", name((h * 2).detach()), L(torch.autograd.grad((h * h).sum(), [h])))

with section("dtypes_compute"):
    x = torch.tensor([[1, -2], [3, 127]]).to(torch.int8)
    h = torch.tensor([[1.5, -2.0], [0.25, 65504.0]]).half()
    X, H = x.long(), h.float()
    s(torch.cat(list(x)), torch.stack(list(x)), torch.cat([x, x]), torch.where(x > 0, x, 0), torch.where(x > 0, x, 2.5))
    s(torch.cat([x[0].to(torch.uint8), x[1]]), torch.stack([torch.tensor([1.5]).half(), torch.tensor([2.5]).bfloat16()]))
    b = h.bfloat16()
    s(x @ x, x @ x, b @ b)
    # softmax and sort keep a half dtype, cumsum of int8 is int64 (as torch)
    s(F(torch.softmax, h, 1), torch.cumsum(x, 0), torch.sort(h, 1)[0])
    # sgd with momentum 0.9 from the buffer 0.5: buf = 0.9 * 0.5 + g; w - 0.1 * buf
    buf = 0.9 * torch.tensor([0.5, 0.5]) + torch.tensor([1.0, 1.0])
    s(torch.tensor([1.0, 2.0]) - 0.1 * buf)

with section("dtypes_keep"):
    import torch.nn.functional as Fn

    def row(name, f, ints=True):
        out = [name]
        for dt in [torch.bfloat16, torch.float16] + ([torch.int8] if ints else []):
            x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.5, 2.0]]).to(dt)
            try:
                d = name_of(f(x))
            except RuntimeError:
                # no kernel for one half type on torch 1.13's CPU: the dtype its
                # kernel for the other keeps
                other = torch.bfloat16 if dt == torch.float16 else torch.float16
                d = name_of(f(x.to(other))).replace(name_of(x.to(other)), name_of(x))
            out.append(d)
        print(" ".join(out))

    def name_of(t): return str(t.dtype).replace("torch.", "")

    row("cumsum", lambda x: torch.cumsum(x, 1))
    row("cumprod", lambda x: torch.cumprod(x, 1))
    row("softmax", lambda x: torch.softmax(x, 1), False)
    row("log_softmax", lambda x: torch.log_softmax(x, 1), False)
    row("sort", lambda x: torch.sort(x)[0])
    row("sort.indices", lambda x: torch.sort(x)[1])
    row("topk", lambda x: torch.topk(x, 2)[0])
    row("max.dim", lambda x: torch.max(x, 1)[0])
    row("median", lambda x: torch.median(x))
    row("gather", lambda x: torch.gather(x, 1, torch.tensor([[0], [2]])))
    row("index_select", lambda x: torch.index_select(x, 0, torch.tensor([1])))
    row("scatter_add", lambda x: torch.scatter_add(x, 1, torch.tensor([[0], [1]]), x))
    row("tril", lambda x: torch.tril(x))
    row("repeat", lambda x: x.repeat(2, 1))
    row("roll", lambda x: torch.roll(x, 1))
    row("diff", lambda x: torch.diff(x))
    row("bmm", lambda x: torch.bmm(x.reshape(1, 2, 3), x.reshape(1, 3, 2)))
    row("einsum", lambda x: torch.einsum("ij,kj->ik", x, x))
    row("ones_like", lambda x: torch.ones_like(x))
    row("full_like", lambda x: torch.full_like(x, 7))
    row("ones_like.f32", lambda x: torch.ones_like(x, dtype=torch.float32))
    row("clone", lambda x: torch.clone(x))
    row("masked_fill", lambda x: x.masked_fill(x > 1, 0))
    row("add", lambda x: torch.add(x, 1))
    row("mul", lambda x: torch.mul(x, x))
    row("clamp", lambda x: torch.clamp(x, 0, 2))
    row("clamp.f32", lambda x: torch.clamp(x, torch.tensor(0.0), torch.tensor(2.0)))
    row("gelu", lambda x: Fn.gelu(x), False)
    row("var", lambda x: torch.var(x), False)
    row("norm", lambda x: torch.norm(x), False)
    row("normalize", lambda x: Fn.normalize(x, dim=1), False)
    row("layer_norm", lambda x: Fn.layer_norm(x, [3]), False)
    row("mse_loss", lambda x: Fn.mse_loss(x, x * 0.5), False)
    row("cross_entropy", lambda x: Fn.cross_entropy(x, torch.tensor([0, 2])), False)
    row("cumsum.f64", lambda x: torch.cumsum(x, 1, dtype=torch.float64))

    def step(opt, x, key=None, **kw):
        p = x.clone().requires_grad_(True)
        p.grad = x.clone()
        o = opt([p], foreach=False, **kw)
        o.step()
        return p.detach() if key is None else o.state[p][key]
    row("sgd_step", lambda x: step(torch.optim.SGD, x, lr=0.1), False)
    row("sgd_step.state", lambda x: step(torch.optim.SGD, x, "momentum_buffer", lr=0.1, momentum=0.9), False)
    row("adagrad_step.state", lambda x: step(torch.optim.Adagrad, x, "sum"), False)
    row("adam_step.m", lambda x: step(torch.optim.Adam, x, "exp_avg"), False)
    # values: computed in float32, rounded once to bfloat16 (torch's here)
    b = torch.tensor([1.5, -0.25, 3.0]).bfloat16()
    s(Fn.gelu(b) * 2 + 1, torch.softmax(b, 0), torch.cumsum(b, 0))
    # torch's bfloat16 layer_norm and cross_entropy round intermediate values
    # ([0.0605, -1.2578, 1.1875] and 0.2354); masq rounds once: the float64
    # result rounded (docs/DIFFERENCES.md)
    d = b.double()
    s(torch.sort(b)[0], Fn.layer_norm(d, [3]).bfloat16(), Fn.cross_entropy(d.reshape(1, 3), torch.tensor([2])).bfloat16())
