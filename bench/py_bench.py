#!/usr/bin/python3
"""py_bench.py - the bench/ workloads in torch.masked or numpy.ma.

Usage: py_bench.py torch|numpy [WORKLOAD...]

Prints RESULT lines in the protocol of bench/bench_util.h (median and
minimum seconds, same repetition policy: one warm-up, then at least 5 runs
and until 0.4 s have passed, at most 41; BENCH_REPS / BENCH_QUICK as in C).
A workload the library cannot run (torch.masked has no matmul, numpy no
autograd) or that raises is reported NA with the reason, never a crash.
The data is like masq's: uniform [0, 1) float32, each entry valid with
probability 1/2. torch.masked's mask is True where VALID (masq's polarity);
numpy.ma's is True where INVALID, so it gets the negation.
The padded-batch workloads (padded_workloads) add the peers users pick
besides the masked libraries, under impl names of their own.
"""
import os
import resource
import sys
import time
import warnings

warnings.filterwarnings("ignore")  # torch.masked is a "prototype" and says so

MIN_REPS, MAX_REPS, MIN_SECONDS = 5, 41, 0.4


def reps_fixed():
    q = os.environ.get("BENCH_QUICK", "")
    if q and q != "0":
        return 3
    r = os.environ.get("BENCH_REPS", "")
    return max(1, min(64, int(r))) if r else 0


def more(done, elapsed, min_reps=MIN_REPS):
    fixed = reps_fixed()
    if fixed:
        return done < fixed
    if done < min_reps:
        return True
    return done < MAX_REPS and elapsed < MIN_SECONDS


def clean(s):
    return " ".join(str(s).split())[:160]


def na(impl, name, why):
    print("RESULT\t%s\t%s\tNA\tNA\t%s" % (impl, name, clean(why)), flush=True)


def timeit(impl, name, fn, min_reps=MIN_REPS):
    try:
        fn()  # warm-up (and: does it run at all?)
    except Exception as e:  # noqa: BLE001 - any failure is an NA, not a crash
        na(impl, name, "%s: %s" % (type(e).__name__, e))
        return
    samples, elapsed = [], 0.0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    while more(len(samples), elapsed, min_reps):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        samples.append(dt)
        elapsed += dt
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    samples.sort()
    n = len(samples)
    med = samples[n // 2] if n % 2 else 0.5 * (samples[n // 2 - 1] + samples[n // 2])
    # minor page faults a run: fresh pages for a result cost about as much
    # as the arithmetic of an elementwise op here (10^4 faults, 20-30 ms)
    print("RESULT\t%s\t%s\t%.9g\t%.9g\tminflt=%d" % (impl, name, med, samples[0], faults // n),
          flush=True)


def torch_workloads():
    import torch
    from torch.masked import masked_tensor

    torch.manual_seed(0)

    def mt(*shape, grad=False):
        return masked_tensor(torch.rand(*shape), torch.rand(*shape) < 0.5, requires_grad=grad)

    x = mt(10_000_000)
    y = mt(1000, 10000)
    s1, s2 = mt(1000, 1000), mt(4096, 512)
    ma, mb = mt(512, 512), mt(512, 512)
    fx, fw = mt(1000, 1000, grad=True), torch.rand(1000, 1000)
    st = mt(4, 4)

    def fwd_bwd():
        loss = (torch.softmax(fx, 1) * fw).sum()
        return torch.autograd.grad(loss, fx)

    def small_loop():
        for _ in range(1000):
            r = (st * 2 + 1).sum()
        return r

    def matmul():
        try:
            return ma @ mb
        except (TypeError, NotImplementedError, RuntimeError):  # torch 1.13
            raise RuntimeError("torch.masked %s has no matmul for MaskedTensor"
                               % torch.__version__) from None

    table = {
        "sum_all": lambda: x.sum(),
        "mean_all": lambda: x.mean(),
        "amax_all": lambda: x.amax(),
        "sum_dim0": lambda: y.sum(0),
        "sum_dim1": lambda: y.sum(1),
        "mean_dim0": lambda: y.mean(0),
        "mean_dim1": lambda: y.mean(1),
        "amax_dim0": lambda: y.amax(0),
        "amax_dim1": lambda: y.amax(1),
        "exp_2_1": lambda: torch.exp(x) * 2 + 1,
        "softmax_1000": lambda: torch.softmax(s1, 1),
        "softmax_4096x512": lambda: torch.softmax(s2, 1),
        "matmul_512": matmul,
        "softmax_fwd_bwd": fwd_bwd,
        "small_loop": small_loop,
    }
    # masks that make work smaller: torch.masked, and the dense trick people
    # use instead (multiply by the mask; masked_fill(-inf) for the max)
    xk = torch.rand(10_000_000)
    ik = torch.arange(10_000_000)
    for kind, m in mask_kinds(ik):
        mk = masked_tensor(xk, m)
        mf = m.to(torch.float32)
        table.update({
            "mk_sum_" + kind: lambda mk=mk: mk.sum(),
            "mk_mean_" + kind: lambda mk=mk: mk.mean(),
            "mk_amax_" + kind: lambda mk=mk: mk.amax(),
            "mk_sum_" + kind + "@dense": lambda mf=mf: (xk * mf).sum(),
            "mk_mean_" + kind + "@dense": lambda mf=mf: (xk * mf).sum() / mf.sum(),
            "mk_amax_" + kind + "@dense": lambda m=m: xk.masked_fill(~m, float("-inf")).amax(),
        })
    # the normalization chain of issue 16: torch.masked as written, and the
    # dense trick with the mask as a float factor and per-row counts
    nx = torch.rand(4096, 1024)
    nm = torch.rand(4096, 1024) < 0.5
    nmt, nmf = masked_tensor(nx, nm), nm.to(torch.float32)

    def norm_dense():
        cnt = nmf.sum(1, keepdim=True)
        mean = (nx * nmf).sum(1, keepdim=True) / cnt
        d = (nx - mean) * nmf
        return (nx - mean) / ((d * d).sum(1, keepdim=True) / cnt).sqrt()

    table["norm_chain"] = lambda: (nmt - nmt.mean(1, keepdim=True)) / nmt.std(1, keepdim=True)
    table["norm_chain@dense"] = norm_dense
    return table


def mask_kinds(ik):
    """The three masks of the mk_ rows over indices ik (numpy or torch):
    all valid, padding-shaped (runs of 4096 valid, then 4096 masked), none."""
    return [("valid", ik >= 0), ("pad", (ik % 8192) < 4096), ("masked", ik < 0)]


def numpy_workloads():
    import numpy as np

    rng = np.random.default_rng(0)

    def mt(*shape):
        data = rng.random(shape, dtype=np.float32)
        valid = rng.random(shape) < 0.5
        return np.ma.masked_array(data, mask=~valid)

    x = mt(10_000_000)
    y = mt(1000, 10000)
    s1, s2 = mt(1000, 1000), mt(4096, 512)
    ma, mb = mt(512, 512), mt(512, 512)
    st = mt(4, 4)

    def softmax(a):  # numpy.ma has none: the usual three lines
        e = np.ma.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def small_loop():
        for _ in range(1000):
            r = (st * 2 + 1).sum()
        return r

    def fwd_bwd():
        raise RuntimeError("numpy has no autograd")

    table = {
        "sum_all": lambda: x.sum(),
        "mean_all": lambda: x.mean(),
        "amax_all": lambda: x.max(),
        "sum_dim0": lambda: y.sum(0),
        "sum_dim1": lambda: y.sum(1),
        "mean_dim0": lambda: y.mean(0),
        "mean_dim1": lambda: y.mean(1),
        "amax_dim0": lambda: y.max(0),
        "amax_dim1": lambda: y.max(1),
        "exp_2_1": lambda: np.ma.exp(x) * 2 + 1,
        "softmax_1000": lambda: softmax(s1),
        "softmax_4096x512": lambda: softmax(s2),
        "matmul_512": lambda: np.ma.dot(ma, mb),  # strict=False: masked as 0
        "softmax_fwd_bwd": fwd_bwd,
        "small_loop": small_loop,
    }
    # masks that make work smaller: numpy.ma, and plain numpy's where=
    xk = rng.random(10_000_000, dtype=np.float32)
    ik = np.arange(10_000_000)
    for kind, m in mask_kinds(ik):
        mk = np.ma.masked_array(xk, mask=~m)
        table.update({
            "mk_sum_" + kind: lambda mk=mk: mk.sum(),
            "mk_mean_" + kind: lambda mk=mk: mk.mean(),
            "mk_amax_" + kind: lambda mk=mk: mk.max(),
            "mk_sum_" + kind + "@where": lambda m=m: np.sum(xk, where=m),
            "mk_mean_" + kind + "@where": lambda m=m: np.mean(xk, where=m),
            "mk_amax_" + kind + "@where": lambda m=m: np.max(xk, where=m, initial=-np.inf),
        })
    nx = rng.random((4096, 1024), dtype=np.float32)
    nm = rng.random((4096, 1024)) < 0.5
    nma = np.ma.masked_array(nx, mask=~nm)

    def norm_where():
        mean = np.mean(nx, 1, where=nm, keepdims=True)
        return (nx - mean) / np.std(nx, 1, where=nm, keepdims=True)

    table["norm_chain"] = lambda: (nma - nma.mean(1, keepdims=True)) / nma.std(1, keepdims=True)
    table["norm_chain@where"] = norm_where
    return table


def sparse_workloads(impl):
    """The 10^6 x 10^6 CSR matrix of masq_bench.c (10 entries per row, 10^7):
    torch.sparse for torch, scipy.sparse in numpy's column (no softmax)."""
    import numpy as np

    rows, per = 1_000_000, 10
    k = np.arange(rows * per)
    crow = np.arange(0, rows * per + 1, per)
    col = (k % 10) * 100000 + ((k // 10) * 7) % 100000
    rng = np.random.default_rng(1)
    vals = rng.random(rows * per, dtype=np.float32)
    dense = rng.random((rows, 16), dtype=np.float32)
    if impl == "torch":
        import torch

        sp = torch.sparse_csr_tensor(torch.from_numpy(crow), torch.from_numpy(col),
                                     torch.from_numpy(vals), (rows, rows))
        coo = sp.to_sparse_coo()  # torch.sparse.sum and softmax take COO
        dn = torch.from_numpy(dense)
        return {
            "sp_rowsum": lambda: torch.sparse.sum(coo, 1),
            "sp_softmax": lambda: torch.sparse.softmax(coo, 1),
            "sp_spmm": lambda: torch.sparse.mm(sp, dn),
        }
    import scipy.sparse

    sp = scipy.sparse.csr_matrix((vals, col, crow), shape=(rows, rows))

    def no_softmax():
        raise RuntimeError("scipy.sparse has no softmax")

    return {
        "sp_rowsum": lambda: sp.sum(axis=1),
        "sp_softmax": no_softmax,
        "sp_spmm": lambda: sp @ dense,
    }


def adagrad_workloads():
    """Seed 003's Adagrad step on 10^7 parameters with a gradient at every
    100th (masq_bench.c's "ada" set-up). ada_sparse: the seed's original
    torch.sparse code, which updates param and state_sum in place (O(nnz));
    ada_dense: the seed's MaskedTensor code with a dense masked gradient."""
    import torch
    from torch.masked import masked_tensor

    n, k, eps, clr = 10_000_000, 100_000, 1e-10, 0.1
    gi = (torch.arange(k) * 100 + 37).reshape(1, k)
    grad = torch.sparse_coo_tensor(gi, torch.rand(k) + 0.5, [n]).coalesce()
    p0 = torch.rand(n)
    s0 = torch.full_like(p0, 0.5)
    param, state_sum = p0.clone(), s0.clone()
    dense_mask = grad.to_dense() != 0
    dense_grad = masked_tensor(grad.to_dense(), dense_mask)

    def sparse_step():
        i, v = grad._indices(), grad._values()
        state_sum.add_(torch.sparse_coo_tensor(i, v.pow(2), [n]))
        std_values = state_sum.sparse_mask(grad)._values().sqrt_().add_(eps)
        param.add_(torch.sparse_coo_tensor(i, v / std_values, [n]), alpha=-clr)

    def dense_step():
        state_sum2 = s0 + dense_grad.pow(2).get_data()
        std2 = masked_tensor(state_sum2, dense_mask).sqrt().add(eps)
        return p0.add((dense_grad / std2).get_data(), alpha=-clr)

    return {"ada_sparse": sparse_step, "ada_dense": dense_step}
# The padding lengths of masq_bench.c's attention and pooling workloads.
ATTN_LENS = [239, 130, 175, 95, 173, 154, 228, 222, 202, 183, 181, 244, 153, 145, 124, 101]
POOL_LENS = [450, 333, 133, 370, 511, 143, 405, 436, 228, 86, 80, 361, 330, 253, 493, 242,
             349, 331, 288, 273, 307, 413, 244, 407, 288, 500, 324, 465, 346, 178, 123, 86,
             311, 115, 106, 101, 324, 431, 70, 260, 309, 500, 293, 205, 393, 377, 361, 390,
             327, 380, 382, 164, 394, 124, 488, 85, 456, 297, 232, 199, 222, 105, 334, 133]
PADDED = ("attn_fwd", "attn_fwd_valid", "attn_fwd_bwd", "pool_mean")


def padded_workloads(impl):
    """Issue 16's padded batches, in the forms users pick: a list of
    (impl, workload, fn). torch: "torch-trick" is plain torch's dense trick
    (masked_fill(-inf) before softmax; (x*m).sum()/m.sum() for pooling),
    "torch" is torch.masked. numpy: numpy.ma, where= reductions ("numpy-where"),
    numexpr and bottleneck's nan-functions where they apply (each skipped with
    an NA when its package is missing)."""
    import numpy as np

    rng = np.random.default_rng(16)
    B, H, L, D = 16, 4, 256, 64
    kvalid = np.arange(L)[None, None, None, :] < np.array(ATTN_LENS)[:, None, None, None]
    px = rng.random((64, 512, 256), dtype=np.float32)
    pvalid = np.arange(512)[None, :, None] < np.array(POOL_LENS)[:, None, None]
    pfull = np.broadcast_to(pvalid, px.shape)
    out = []
    if impl == "torch":
        import torch
        from torch.masked import masked_tensor

        q, k, v, w = (torch.from_numpy(rng.random((B, H, L, D), dtype=np.float32))
                      for _ in range(4))
        km, kall = torch.from_numpy(kvalid), torch.ones(B, 1, 1, L, dtype=torch.bool)
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

        def trick(q, k, v, m):
            s = (q @ k.transpose(-2, -1) / 8).masked_fill(~m, float("-inf"))
            return torch.softmax(s, -1) @ v

        def trick_bwd():
            return torch.autograd.grad((trick(qg, kg, vg, km) * w).sum(), [qg, kg, vg])

        def masked_attn():  # torch 1.13's MaskedTensor has no matmul
            s = masked_tensor(q @ k.transpose(-2, -1) / 8, km.expand(B, H, L, L))
            return torch.softmax(s, -1) @ v

        x, m = torch.from_numpy(px), torch.from_numpy(pvalid).float()
        mx = masked_tensor(x, torch.from_numpy(np.ascontiguousarray(pfull)))
        out += [("torch-trick", "attn_fwd", lambda: trick(q, k, v, km)),
                ("torch-trick", "attn_fwd_valid", lambda: trick(q, k, v, kall)),
                ("torch-trick", "attn_fwd_bwd", trick_bwd),
                ("torch", "attn_fwd", masked_attn),
                ("torch-trick", "pool_mean", lambda: (x * m).sum(1) / m.sum(1)),
                ("torch", "pool_mean", lambda: mx.mean(1))]
        return out
    xm = np.ma.masked_array(px, mask=~pfull)
    out += [("numpy", "pool_mean", lambda: xm.mean(1)),
            ("numpy-where", "pool_mean", lambda: np.mean(px, axis=1, where=pvalid))]
    try:
        import numexpr as ne

        ne.set_num_threads(1)  # one thread, like every other column
        mf = pvalid.astype(np.float32)
        cnt = mf.sum(1)
        out.append(("numexpr", "pool_mean",
                    lambda: ne.evaluate("sum(x * m, axis=1)", local_dict={"x": px, "m": mf}) / cnt))
    except ImportError as e:
        out.append(("numexpr", "pool_mean", "not installed (%s)" % e))
    try:
        import bottleneck as bn

        xnan = np.where(pvalid, px, np.float32("nan"))  # padding as NaN, made once
        out.append(("bottleneck", "pool_mean", lambda: bn.nanmean(xnan, axis=1)))
    except ImportError as e:
        out.append(("bottleneck", "pool_mean", "not installed (%s)" % e))
    return out


def blas_line(impl):
    """The BLAS line of peers.py: the library whose sgemm_ this process
    calls (the torch trick's attention and numpy.ma's dot go through it);
    run.sh refuses their ratios on the reference BLAS."""
    from peers import report_blas

    if impl == "torch":
        import torch

        a, b = torch.ones(256, 256), torch.ones(1024, 1024)
        report_blas(impl, "torch %s threads=%d" % (torch.__version__, torch.get_num_threads()),
                    lambda: a @ a, lambda: b @ b)
    else:
        import numpy as np

        a, b = np.ones((256, 256), np.float32), np.ones((1024, 1024), np.float32)
        report_blas(impl, "numpy %s" % np.__version__, lambda: a @ a, lambda: b @ b)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("torch", "numpy"):
        print("usage: py_bench.py torch|numpy [WORKLOAD...]", file=sys.stderr)
        return 2
    impl = sys.argv[1]
    try:
        table = torch_workloads() if impl == "torch" else numpy_workloads()
    except ImportError as e:
        print("py_bench: %s not installed (%s)" % (impl, e), file=sys.stderr)
        return 3
    wanted = sys.argv[2:]
    blas_line(impl)
    if not wanted or any(w.startswith("sp_") for w in wanted):
        try:
            table.update(sparse_workloads(impl))
        except ImportError as e:
            for w in ("sp_rowsum", "sp_softmax", "sp_spmm"):
                na(impl, w, "not installed (%s)" % e)
    if impl == "torch" and (not wanted or any(w.startswith("ada_") for w in wanted)):
        table.update(adagrad_workloads())
    for key, fn in table.items():
        # "NAME@trick": the same workload done another way, reported as
        # impl "torch-dense" or "numpy-where"
        name, _, trick = key.partition("@")
        if not wanted or name in wanted:
            timeit(impl + "-" + trick if trick else impl, name, fn)
    if not wanted or any(w in PADDED for w in wanted):
        for who, name, fn in padded_workloads(impl):
            if wanted and name not in wanted:
                continue
            if isinstance(fn, str):  # the reason it cannot run
                na(who, name, fn)
            else:
                timeit(who, name, fn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
