#!/usr/bin/python3
"""peers.py - issue 30's dense rows in torch or numpy, as their users run them.

Usage: peers.py torch|numpy THREADS DATA_DIR [ROW...]

One process per thread count: OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and
MKL_NUM_THREADS are set to THREADS before torch or numpy is imported (their
BLAS reads them once, at load; torch.set_num_threads alone leaves OpenBLAS's
own threads alone), and torch.set_num_threads(THREADS) too. The results
are tagged "torch" / "numpy" on one thread and "torch-2t" / "numpy-2t" on two.

It prints, in bench/bench_util.h's protocol (tab-separated):
  BLAS   <impl> <kind> <detail>   the kind of BLAS whose sgemm_ this process
         calls (openblas, mkl, blis, atlas, reference or unknown), with a
         timed 256^2 product, the threads busy in a 1024^2 one, OpenBLAS's
         own thread count, torch's BLAS_INFO and every BLAS library mapped
  CHECK  <impl> <row> <error> <tolerance> ok|peer-off|FAIL|n/a [why]
         the largest difference from masq's result over the largest
         magnitude of masq's (masq_bench --save DATA_DIR wrote the inputs
         and results; without them, n/a and random inputs of the same
         shape); beyond the tolerance, both against float64 (check())
  RESULT <impl> <row> <median s> <min s>
         one warm-up, then at least 3 timed runs, more until 0.4 s passed,
         at most 41 (BENCH_QUICK / BENCH_REPS as in C)
The rows and their inputs are bench/peer_rows.h's; a step is one optimizer
step of the same model on the same numbers (loss and gradients checked).
"""
import ctypes
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_bench import timeit  # noqa: E402 - after the path; the same timing as the masked rows

MIN_REPS = 3  # a 2048^2 product of masq's takes seconds (masq_bench's peer rows: the same)
TOL = {"float32": 1e-4, "bfloat16": 1e-2}


def usage():
    print("usage: peers.py torch|numpy THREADS DATA_DIR [ROW...]", file=sys.stderr)
    return 2


# --- which BLAS this process runs ------------------------------------------------

def mapped_blas():
    """The shared libraries of BLAS kind mapped into this process."""
    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5].startswith("/"):
                base = os.path.basename(parts[5])
                if re.search(r"blas|mkl_|blis|atlas", base) and parts[5] not in libs:
                    libs.append(parts[5])
    return libs


class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def sgemm_provider():
    """The file whose sgemm_ the process's libblas.so.3 hands out: dlopen of
    a soname already loaded returns the loaded object (the one torch or
    numpy linked, whatever alternatives or LD_LIBRARY_PATH chose), and
    dladdr names the file that defines the symbol found there. A mapped
    OpenBLAS is not enough: Debian's liblapack.so.3 of OpenBLAS maps it
    beside a reference libblas.so.3, whose sgemm_ is the one called."""
    try:
        blas = ctypes.CDLL("libblas.so.3", mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        addr = ctypes.cast(blas.sgemm_, ctypes.c_void_p)
        info = DlInfo()
        if ctypes.CDLL(None).dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    except (OSError, AttributeError):
        pass
    return ""


def blas_kind(path):
    """openblas, mkl, blis, atlas, reference (netlib's libblas.so.3, the
    plain loops of Debian's libblas3) or unknown, from a library's path."""
    base = path.lower()
    for kind in ("openblas", "mkl", "blis", "atlas"):
        if kind in base:
            return kind
    if re.search(r"/blas/libblas\.so|^libblas\.so", base) or os.path.basename(base).startswith("libblas.so"):
        return "reference"
    return "unknown"


def openblas_threads(libs):
    for p in libs:
        if "openblas" in os.path.basename(p):
            try:
                lib = ctypes.CDLL(p)  # already loaded: the same handle
                lib.openblas_get_config.restype = ctypes.c_char_p
                return "openblas_threads=%d (%s)" % (lib.openblas_get_num_threads(),
                                                     lib.openblas_get_config().decode())
            except (OSError, AttributeError):
                pass
    return ""


def thread_cpu():
    """CPU seconds of each thread of this process so far (/proc)."""
    out = {}
    tick = os.sysconf("SC_CLK_TCK")
    for t in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/stat" % t) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[t] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        except (OSError, IndexError, ValueError):
            pass
    return out


def busy_threads(fn):
    """How many threads did the work of fn() (run until 0.3 s of CPU time
    have passed): those with a tenth or more of the busiest one's CPU time.
    Wall time would not tell on a shared machine; this does."""
    before = thread_cpu()
    c0 = time.process_time()
    while time.process_time() - c0 < 0.3:
        fn()
    used = [v - before.get(t, 0.0) for t, v in thread_cpu().items()]
    top = max(used + [1e-9])
    return sum(1 for u in used if u >= 0.1 * top and u > 0)


def report_blas(impl, extra, sgemm, big):
    """The BLAS line: the kind of the library whose sgemm_ runs (else of
    the first BLAS mapped: MKL linked into torch has no libblas.so.3), the
    GFLOP/s of a 256^2 float32 product [sgemm()] timed here (the reference
    BLAS gives a few, an optimized one tens and more), and how many threads
    worked on a 1024^2 product [big()]."""
    libs = mapped_blas()
    provider = sgemm_provider()
    kind = blas_kind(provider or (libs[0] if libs else ""))
    best = min(timed(sgemm) for _ in range(5))
    detail = " ".join(x for x in ["sgemm_ from %s" % (provider or "?"),
                                  "256^2 float32 product %.1f GFLOP/s" % (2 * 256 ** 3 / best / 1e9),
                                  "threads busy in a 1024^2 product: %d" % busy_threads(big),
                                  openblas_threads(libs), extra,
                                  "mapped: " + (",".join(libs) or "no BLAS")] if x)
    print("BLAS\t%s\t%s\t%s" % (impl, kind, detail), flush=True)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# --- inputs and checks -------------------------------------------------------------

class Data:
    """masq's inputs from DATA_DIR (in_<group>_<name>.npy, float32), or, when
    masq_bench --save has not written them, random ones of the same shape
    (and no check)."""

    def __init__(self, np, root):
        self.np, self.root, self.missing = np, root, set()
        self.rng = np.random.default_rng(30)

    def get(self, group, name, shape):
        path = os.path.join(self.root, "in_%s_%s.npy" % (group, name))
        if os.path.exists(path):
            a = self.np.load(path)
            if tuple(a.shape) == tuple(shape):
                return a
        self.missing.add(group)
        if name in ("tlab", "elab"):  # class labels, 3 and 4 classes
            return self.rng.integers(0, 3 if name == "tlab" else 4, shape).astype(self.np.float32)
        if name == "tok":  # a label present, 4 in 5
            return (self.rng.random(shape) < 0.8).astype(self.np.float32)
        return self.rng.standard_normal(shape, dtype=self.np.float32)


def check(np, impl, data, name, group, mine, dtype, ref_fn):
    """Compares [mine] with masq's result of row [name] and prints CHECK.
    When they differ beyond the tolerance, [ref_fn]() (if any) computes the
    row in float64 on the same inputs, to tell whose result is off: the
    status is then FAIL (masq's is) or peer-off (only the peer's is: torch
    1.13's bfloat16 layer_norm, 1.1e-1 off in its weight's gradient)."""
    tol = TOL[dtype]
    path = os.path.join(data.root, name + ".npy")
    if group in data.missing or not os.path.exists(path):
        print("CHECK\t%s\t%s\tNA\t%g\tn/a\tno masq result in %s" % (impl, name, tol, data.root))
        return
    ref = np.load(path).astype(np.float64).ravel()
    m = np.asarray(mine, dtype=np.float64).ravel()
    if m.shape != ref.shape:
        print("CHECK\t%s\t%s\tNA\t%g\tFAIL\t%d values against masq's %d" % (impl, name, tol, m.size, ref.size))
        return
    def off(a, b):
        return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)

    err, status, why = off(m, ref), "ok", ""
    if err > tol:
        status = "FAIL"
        if ref_fn:
            exact = np.asarray(ref_fn(), dtype=np.float64).ravel()
            masq_off, peer_off = off(ref, exact), off(m, exact)
            if masq_off <= tol < peer_off:
                status = "peer-off"
            why = "from float64 on the same inputs: masq %.1e, %s %.1e" % (masq_off, impl, peer_off)
    print("CHECK\t%s\t%s\t%.3g\t%g\t%s\t%s" % (impl, name, err, tol, status, why), flush=True)


# --- the rows ----------------------------------------------------------------------------
# Each builder returns {row: (fn, check_fn or None, dtype, ref_fn or None)}:
# check_fn() gives what masq_bench --save wrote (fn()'s result when None),
# ref_fn() the same in float64 on the row's inputs (bfloat16 rows: on
# their inputs rounded to bfloat16).

def torch_rows(group, data):
    import torch
    import torch.nn.functional as F

    def t(name, *shape):
        return torch.from_numpy(data.get(group, name, shape))

    def both(name, fn32, fn16, *xs):
        """the float32 row and the bfloat16 one on xs rounded to bfloat16"""
        hs = [x.bfloat16() for x in xs]
        return {name: (lambda: fn32(*xs), None, "float32", lambda: fn32(*[x.double() for x in xs])),
                name + "_bf16": (lambda: fn16(*hs), None, "bfloat16",
                                 lambda: fn32(*[h.double() for h in hs]))}

    def flat(ts):
        return torch.cat([x.detach().double().reshape(-1) for x in ts])

    rows = {}
    if group == "pmm":
        for n in (128, 512, 1024, 2048):
            rows.update(both("mm%d" % n, torch.matmul, torch.matmul, t("a%d" % n, n, n), t("b%d" % n, n, n)))
    elif group == "pbmm":
        rows.update(both("bmm", torch.bmm, torch.bmm, t("ba", 64, 128, 128), t("bb", 64, 128, 128)))
    elif group == "plin":
        # as nn.Linear holds them: weights (out, in), F.linear (addmm)
        x = t("lx", 512, 784)
        w1, b1 = t("lw1", 784, 1024).t().contiguous(), t("lb1", 1024)
        w2, b2 = t("lw2", 1024, 1024).t().contiguous(), t("lb2", 1024)
        w3, b3 = t("lw3", 1024, 10).t().contiguous(), t("lb3", 10)

        def lin_gelu(x, w1, b1, *_):
            return F.gelu(F.linear(x, w1, b1))

        def mlp(x, w1, b1, w2, b2, w3, b3):
            return F.linear(F.gelu(F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)), w3, b3)

        rows.update(both("lin_gelu", lin_gelu, lin_gelu, x, w1, b1))
        rows.update(both("mlp", mlp, mlp, x, w1, b1, w2, b2, w3, b3))
    elif group == "pln":
        x, g, b, w = t("nx", 4096, 1024), t("ng", 1024), t("nb", 1024), t("nw", 4096, 1024)

        def ln(x, g, b, *_):
            return F.layer_norm(x, (1024,), g, b)

        def ln_bwd(x, g, b, w):
            return torch.autograd.grad((F.layer_norm(x, (1024,), g, b) * w).sum(), [x, g, b])

        rows.update(both("ln", ln, ln, x, g, b))
        for name, ts in (("ln_bwd", [x, g, b, w]), ("ln_bwd_bf16", [v.bfloat16() for v in (x, g, b, w)])):
            leaves = [v.clone().requires_grad_() for v in ts[:3]] + [ts[3]]
            wide = [v.double().requires_grad_() for v in ts[:3]] + [ts[3].double()]
            rows[name] = (lambda leaves=leaves: ln_bwd(*leaves),
                          lambda leaves=leaves: flat(ln_bwd(*leaves)),
                          "bfloat16" if name.endswith("bf16") else "float32",
                          lambda wide=wide: flat(ln_bwd(*wide)))
    elif group == "pge":
        x, w = t("gx", 10_000_000), t("gw", 10_000_000)
        rows.update(both("gelu", F.gelu, F.gelu, x))
        for name, (xs, ws) in (("gelu_bwd", (x, w)), ("gelu_bwd_bf16", (x.bfloat16(), w.bfloat16()))):
            xg = xs.clone().requires_grad_()

            def gelu_bwd(xg, ws):
                return torch.autograd.grad((F.gelu(xg) * ws).sum(), xg)[0]

            rows[name] = (lambda xg=xg, ws=ws: gelu_bwd(xg, ws), None,
                          "bfloat16" if name.endswith("bf16") else "float32",
                          lambda xs=xs, ws=ws: gelu_bwd(xs.double().requires_grad_(), ws.double()))
    elif group == "psm":
        sm = lambda x: torch.softmax(x, 1)  # noqa: E731
        rows.update(both("softmax", sm, sm, t("sx", 4096, 1024)))
    elif group.startswith("ptr"):
        rows.update(torch_train(group, data, t))
    elif group.startswith("penc"):
        rows.update(torch_encoder(group, data, t))
    return rows


def torch_step(name, dtype, tensors, leaves, loss_fn, lr):
    """A step row: torch.optim.Adam over [leaves] (their names in
    [tensors], made parameters in [dtype]), the loss [loss_fn](named
    tensors); check: the loss and the gradients at the set-up's values;
    ref: the same in float64 from the same (rounded) values."""
    import torch

    def made(kind):
        vals = {k: v.to(kind) for k, v in tensors.items()}
        for k in leaves:
            vals[k] = torch.nn.Parameter(vals[k])
        return vals

    vals = made(torch.bfloat16 if dtype == "bfloat16" else torch.float32)
    params = [vals[k] for k in leaves]
    opt = torch.optim.Adam(params, lr=lr)

    def step():
        opt.zero_grad()
        lo = loss_fn(vals)
        lo.backward()
        opt.step()
        return lo

    def grads(v):
        lo = loss_fn(v)
        return torch.cat([lo.detach().reshape(1)] +
                         [g.reshape(-1) for g in torch.autograd.grad(lo, [v[k] for k in leaves])])

    # float64 from the values of vals before any step (the rounded ones)
    wide = {k: torch.nn.Parameter(v.detach().double()) if k in leaves else v.double()
            for k, v in vals.items()}
    return {name: (step, lambda: grads(vals), dtype, lambda: grads(wide))}


def torch_train(group, data, t):
    """examples/train.masq's step at K times its size, as a torch user
    writes it: the missing labels as ignore_index, torch.optim.Adam.
    Group ptrK (float32) or ptrKh (bfloat16)."""
    import torch.nn.functional as F

    half = group.endswith("h")
    k = int(group[3:].rstrip("h"))
    B, H = 40 * k, 16 * k
    y = t("tlab", B).long()
    y[t("tok", B) == 0] = -100  # no label: ignore_index
    tensors = {"x": t("tx", B, 2), "W1": t("W1", 2, H), "b1": t("b1", H),
               "W2": t("W2", H, 3), "b2": t("b2", 3)}

    def loss(v):
        return F.cross_entropy(F.gelu(v["x"] @ v["W1"] + v["b1"]) @ v["W2"] + v["b2"], y)

    return torch_step("train%d%s" % (k, "_bf16" if half else ""), "bfloat16" if half else "float32",
                      tensors, ["W1", "b1", "W2", "b2"], loss, 0.05)


def torch_encoder(group, data, t):
    """peer_rows.h's encoder block on the dense padded tensors: padded keys
    masked_fill'ed to -inf before the softmax, padded positions left out of
    the pooling by a 0/1 factor; every position computed. Group penc
    (float32) or pench (bfloat16)."""
    import torch
    import torch.nn.functional as F

    lens = torch.tensor([239, 130, 175, 95, 173, 154, 228, 222, 202, 183, 181, 244, 153, 145, 124, 101])
    y = t("elab", 16).long()
    keys = torch.arange(256)[None, None, :] < lens[:, None, None]  # (16, 1, 256)
    qm = (torch.arange(256)[None, :] < lens[:, None]).float()[..., None]  # (16, 256, 1)
    shapes = [("eWq", 64, 64), ("eWk", 64, 64), ("eWv", 64, 64), ("eWo", 64, 64), ("eg1", 64),
              ("eh1", 64), ("eW1", 64, 256), ("eb1", 256), ("eW2", 256, 64), ("eb2", 64),
              ("eg2", 64), ("eh2", 64), ("eWc", 64, 4), ("ebc", 4)]
    tensors = {n: t(n, *s) for n, *s in shapes}
    tensors["ex"] = t("ex", 16, 256, 64)

    def loss(v):
        x = v["ex"]
        s = ((x @ v["eWq"]) @ (x @ v["eWk"]).transpose(-2, -1) / 8).masked_fill(~keys, float("-inf"))
        a = torch.softmax(s, -1) @ (x @ v["eWv"])
        h = F.layer_norm(x + a @ v["eWo"], (64,), v["eg1"], v["eh1"])
        f = h + F.gelu(h @ v["eW1"] + v["eb1"]) @ v["eW2"] + v["eb2"]
        hh = F.layer_norm(f, (64,), v["eg2"], v["eh2"])
        m = qm.to(hh.dtype)
        pooled = (hh * m).sum(1) / m.sum(1)
        return F.cross_entropy(pooled @ v["eWc"] + v["ebc"], y)

    half = group.endswith("h")
    return torch_step("encoder_bf16" if half else "encoder", "bfloat16" if half else "float32",
                      tensors, [n for n, *_ in shapes], loss, 0.001)


def numpy_rows(group, data):
    """numpy has the products only (float32; no bfloat16, no autograd)."""
    import numpy as np

    rows = {}
    if group == "pmm":
        for n in (128, 512, 1024, 2048):
            a, b = data.get(group, "a%d" % n, (n, n)), data.get(group, "b%d" % n, (n, n))
            rows["mm%d" % n] = (lambda a=a, b=b: np.matmul(a, b), None, "float32",
                                lambda a=a, b=b: np.matmul(a.astype(np.float64), b.astype(np.float64)))
    elif group == "pbmm":
        a, b = data.get(group, "ba", (64, 128, 128)), data.get(group, "bb", (64, 128, 128))
        rows["bmm"] = (lambda: np.matmul(a, b), None, "float32",
                       lambda: np.matmul(a.astype(np.float64), b.astype(np.float64)))
    return rows


# row -> its input group (peer_rows.h's); the order of the table
GROUPS = [("pmm", ["mm128", "mm512", "mm1024", "mm2048"]), ("pbmm", ["bmm"]),
          ("plin", ["lin_gelu", "mlp"]), ("pln", ["ln", "ln_bwd"]),
          ("pge", ["gelu", "gelu_bwd"]), ("psm", ["softmax"]),
          ("ptr1", ["train1"]), ("ptr10", ["train10"]), ("ptr100", ["train100"]),
          ("penc", ["encoder"]), ("ptr1h", ["train1_bf16"]), ("ptr10h", ["train10_bf16"]),
          ("ptr100h", ["train100_bf16"]), ("pench", ["encoder_bf16"])]
STEPS = {"train1", "train10", "train100", "encoder"}


def wanted_groups(args):
    """The groups of the rows named (or @dense, @steps); all without any."""
    out = []
    for group, rows in GROUPS:
        names = set(rows) | {r + "_bf16" for r in rows}
        sets = {"@steps"} if rows[0].replace("_bf16", "") in STEPS else {"@dense"}
        if not args or names & set(args) or sets & set(args):
            out.append(group)
    return out


def row_wanted(name, args):
    """name (or its float32 row, or its set) among the arguments, or none given"""
    base = name[:-5] if name.endswith("_bf16") else name
    return (not args or name in args or
            ("@steps" if base in STEPS else "@dense") in args)


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("torch", "numpy") or not sys.argv[2].isdigit():
        return usage()
    which, threads, root, args = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)  # before the import: BLAS reads them at load
    impl = which if threads == 1 else "%s-%dt" % (which, threads)
    try:
        import numpy as np
        if which == "torch":
            import torch
            torch.set_num_threads(threads)
            a, b = torch.ones(256, 256), torch.ones(1024, 1024)
            info = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
            report_blas(impl, "torch %s threads=%d BLAS_INFO=%s mkldnn=%s" % (
                torch.__version__, torch.get_num_threads(), info.group(1) if info else "?",
                torch.backends.mkldnn.is_available()), lambda: a @ a, lambda: b @ b)
        else:
            a, b = np.ones((256, 256), np.float32), np.ones((1024, 1024), np.float32)
            report_blas(impl, "numpy %s" % np.__version__, lambda: a @ a, lambda: b @ b)
    except ImportError as e:
        print("RESULT\t%s\t*\tNA\tNA\tnot installed (%s)" % (impl, e), flush=True)
        return 0
    data = Data(np, root)
    build = torch_rows if which == "torch" else numpy_rows
    for group in wanted_groups(args):
        for name, (fn, check_fn, dtype, ref_fn) in build(group, data).items():
            if not row_wanted(name, args):
                continue

            def value(f):
                v = f()
                if which == "torch":
                    v = (v[0] if isinstance(v, tuple) else v).detach().double().numpy()
                return v

            try:
                check(np, impl, data, name, group, value(check_fn or fn), dtype,
                      ref_fn and (lambda ref_fn=ref_fn: value(ref_fn)))
            except Exception as e:  # noqa: BLE001
                print("CHECK\t%s\t%s\tNA\t%g\tFAIL\t%s: %s" % (impl, name, TOL[dtype], type(e).__name__, e))
            timeit(impl, name, fn, MIN_REPS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
