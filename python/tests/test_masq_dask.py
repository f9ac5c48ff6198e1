"""masq.dask.eval on dask arrays equals masq.eval on the whole arrays: on a
LocalCluster of two worker processes (one cluster for the module, chunks
crossing processes, some made misaligned and byte-swapped on purpose), and
on the local schedulers; numpy.ma chunks with fully masked rows and chunks;
elementwise expressions with broadcasting, and reductions along chunked
dims, merged in a tree. What it cannot split is an error that says so."""
import importlib.util
import gc
import os
import pickle
import re

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import masq  # noqa: E402
import masq.dask as md  # noqa: E402

# distributed 2022.12 on this tornado: a deprecation inside LocalCluster, not ours
pytestmark = pytest.mark.filterwarnings("ignore:make_current is deprecated:DeprecationWarning")

REDUCTIONS = [
    "sum(x)", "sum(x, 1)", "sum(x * w, 0, keepdim=true)", "mean(x * 2, 1)", "mean(x, [0, 1], keepdim=true)",
    "mean(y)", "count(x, 0)", "amax(x, 1)", "amin(y - x, 0)", "prod(x / 2 + 0.75, 1)", "logsumexp(x, 0)",
    "any(x > 0.95, 1)", "all(x > 0.05, 0)", "var(x, 1)", "std(x, 0, correction=1)", "var(y, -1, 1, true)",
    "std(y * k + 1e3, 0)", "sum(y > 0.5, 1)", "var(i, 0, correction=1)", "mean(i, 1)",
]
ALONG = [  # split along a chunked dim by masq/_along.py
    "argmax(u, 1)", "argmin(u, 0)", "argmax(f, 1, keepdim=true)", "argmin(f, 0)", "argmax(j, 1)", "argmin(j, 0)",
    "argmax(u)", "argmin(j)", "argmax(j, keepdim=true)", "argmax(h)", "argmin(-h)", "argmax(y * 2, 0)",
    "argmax(i, dim=1)",
    "norm(u, 2, 1)", "norm(f, 1, 0)", "norm(u, 0, 1)", "norm(f, inf, 1)", "norm(u, -inf, 0)", "norm(u, 3, 1)",
    "norm(j, 0.5, 0)", "norm(i, 2, 1)", "norm(u)", "norm(f, dim=[0, 1], keepdim=true)", "norm(f, -1, 1)",
    "norm(x * 1e200, 2, 1)",
    "cumsum(u, 1)", "cumsum(f, 0)", "cumsum(j, 1)", "cumsum(i, 0)", "cumsum(y > 0.5, 1)", "cumsum(x * 2, dim=0)",
    "median(u, 1)", "median(j, 0, keepdim=true)", "quantile(f, 0.3, 1)", "median(x)", "quantile(x, 0.9)",
    "u @ z", "matmul(f, z)", "f @ g", "j @ n", "(x * 2) @ z", "i @ n",
]
NORMALIZED = ["softmax(x, 1)", "log_softmax(x * 2, 0)", "softmin(y, dim=-1)", "softmax(i, 0)"]
ELEMENTWISE = ["x * 2 + 1", "(x - 0.5) * w", "exp(x) - y", "where(y > 0.5, x, y * k)", "clamp(y, min=0.2) + w"]


def data():
    rng = np.random.default_rng(7)
    a = np.ma.array(rng.random((45, 38)), mask=rng.random((45, 38)) < 0.3)
    a[4] = np.ma.masked  # a row with nothing valid
    a[30:40, 10:20] = np.ma.masked  # a chunk with nothing valid
    y = rng.random((45, 38)).astype(np.float32)
    i = rng.integers(-2**40, 2**40, size=(45, 38))
    w = rng.random(38)
    return {"x": a, "y": y, "i": i, "w": w, "k": 3, **along_data(rng)}


def along_data(rng):
    """For argmax/argmin, norm, cumsum, median/quantile and matmul along
    chunked dims (chunks of 7 rows, 6 columns): ties and NaN in different
    chunks, a fully masked row, block and column of chunks."""
    u = np.ma.array(rng.random((45, 38)), mask=rng.random((45, 38)) < 0.3)
    u[4] = np.ma.masked
    u[30:40, 10:20] = np.ma.masked
    u[:, 24:30] = np.ma.masked  # a whole column of chunks
    u[9, 20] = u[9, 31] = np.nan  # two chunks' NaN: the first wins argmax and argmin, as on the whole array
    u[11, 8] = u[11, 33] = u[13, 2] = u[40, 2] = 2.0  # ties across chunks along each dim
    u[12, 8] = u[12, 33] = u[15, 1] = u[41, 1] = -1.0
    j = np.ma.array(rng.integers(-4, 5, size=(45, 38)), mask=np.ma.getmaskarray(u))  # ties everywhere
    h = np.zeros((45, 38), np.int64)
    h[6, 0] = h[0, 30] = 1  # flat order is not the order of the chunks: (0, 30) comes first
    z = np.ma.array(rng.random((38, 11)), mask=rng.random((38, 11)) < 0.6)
    z[:, 2] = np.ma.masked
    g = np.ma.array(rng.random((38, 11)).astype(np.float32), mask=np.ma.getmaskarray(z))
    return {"u": u, "f": u.astype(np.float32), "j": j, "h": h, "z": z, "g": g,
            "n": rng.integers(-9, 10, size=(38, 5))}


def chunked(whole):
    """Uneven chunks along both dims, so reductions merge more parts than
    dask's tree takes at once."""
    d = {}
    for k, v in whole.items():
        if isinstance(v, np.ndarray):
            d[k] = da.from_array(v, chunks=(7, 6)[-v.ndim:], asarray=False)
        else:
            d[k] = v
    d["m"] = md.eval("mean(x, 1, keepdim=true)", x=d["x"])  # a dask result as an input
    return d


def check(got, want, f32=1e-6):
    assert type(got) is type(want)  # numpy.ma or plain, a number or numpy's scalar: as masq.eval gives it
    assert np.shape(got) == np.shape(want)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    assert np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
    g, w = np.ma.filled(got, 0), np.ma.filled(want, 0)
    if np.asarray(want).dtype.kind in "biu":  # counts, indices, int sums: exactly (2**40 * 1e-12 is 1)
        assert np.array_equal(g, w), (g, w)
    tol = f32 if np.asarray(want).dtype == np.float32 else 1e-12
    assert np.allclose(g, w, rtol=tol, atol=0, equal_nan=True), (g, w)


@pytest.fixture(scope="module")
def whole():
    w = data()
    w["m"] = masq.eval("mean(x, 1, keepdim=true)", x=w["x"])
    return w


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                       dashboard_address=None)
    c = distributed.Client(cluster, set_as_default=False)  # the local schedulers stay local
    yield c
    c.close()
    cluster.close()


def uses(src, d):
    """The values src names."""
    return {k: v for k, v in d.items() if k in re.findall(r"[A-Za-z_]\w*", src)}


def skewed(block):
    """The block at an odd address, big-endian: as a chunk may arrive."""
    data = np.ma.getdata(block)
    raw = bytearray(data.nbytes + 1)
    out = np.frombuffer(raw, dtype=data.dtype.newbyteorder(">"), offset=1, count=data.size).reshape(data.shape)
    out[...] = data
    assert not out.flags.aligned
    return np.ma.array(out, mask=np.ma.getmaskarray(block)) if np.ma.isMaskedArray(block) else out


SCRIPT = """
import masq.dask

def softmax_rows(block):
    return masq.dask.state().call("softmax", block, 1)
"""


def pasted_function():
    """A function as a script defines it (module __main__: pickled by value)."""
    ns = {"__name__": "__main__"}
    exec(SCRIPT, ns)
    return ns["softmax_rows"]


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python",
                       "dask_blockwise.py")


def example():
    """examples/python/dask_blockwise.py, loaded from its file (no module
    the workers could import: its functions travel by value)."""
    spec = importlib.util.spec_from_file_location("dask_blockwise_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CLUSTER = ELEMENTWISE + REDUCTIONS + NORMALIZED + ALONG + ["x - m"]  # m: a row mean, from masq.dask
SKEWED = ["x * 2 - y", "mean(x, 1)", "std(y, 0)"]


@pytest.fixture(scope="module")
def on_cluster(client):
    """Every expression's result from the cluster, computed at once (one
    round trip, so the module's tests take a few seconds)."""
    d, s = chunked(data()), chunked(data())
    for k in ("x", "y"):
        s[k] = s[k].map_blocks(skewed, dtype=s[k].dtype.newbyteorder(">"), meta=s[k]._meta)
    lazy = [md.eval(src, **uses(src, d)) for src in CLUSTER] + [md.eval(src, **uses(src, s)) for src in SKEWED]
    # softmax along a chunked dim, as Unsupported advises: rechunk, map_blocks
    rows = d["x"].rechunk({1: -1})
    lazy.append(rows.map_blocks(pasted_function(), dtype=rows.dtype, meta=rows._meta))
    ex = example() if os.path.exists(EXAMPLE) else None
    if ex:  # the example's own map_blocks functions, as they are
        ea, _ = ex.masked_input(n=20_000, seed=3)
        ed = da.from_array(ea, chunks=3_000, asarray=False)
        lazy.append(ed.map_blocks(ex.score_block, dtype=np.float64, meta=np.ma.masked_array(np.empty(0))))
    got = client.gather(client.compute(lazy))
    ex_got = (ea, got.pop()) if ex else None
    return dict(zip(CLUSTER, got)), dict(zip(SKEWED, got[len(CLUSTER):])), got[-1], ex_got


@pytest.mark.parametrize("src", CLUSTER)
def test_cluster_equals_whole(on_cluster, whole, src):
    got = on_cluster[0][src]
    want = masq.eval(src, **uses(src, whole))
    # float32 softmax: masq's own kernel is 2e-6 off the exact value, the
    # split one (exp of x - logsumexp in float64) 6e-8
    check(got, want, f32=1e-5 if src in NORMALIZED else 1e-6)  # ALONG's float32: exact, f @ g 3e-7
    if src in ELEMENTWISE:  # each entry computed by the same kernel: exactly
        assert np.array_equal(np.ma.filled(got, 0), np.ma.filled(want, 0))


@pytest.mark.parametrize("src", SKEWED)
def test_cluster_misaligned_byte_swapped_chunks(on_cluster, whole, src):
    check(on_cluster[1][src], masq.eval(src, **uses(src, whole)))


def test_cluster_pasted_function_with_the_workers_state(on_cluster, whole):
    """A function pasted into a script (pickled by value) that takes
    masq.dask.state() runs on the workers; nothing of it needs pickling but
    a reference to the module."""
    want = masq.eval("softmax(x, 1)", x=whole["x"])
    check(on_cluster[2], want)


def test_cluster_runs_the_example_unchanged(on_cluster):
    if on_cluster[3] is None:
        pytest.skip("outside a checkout")
    a, scored = on_cluster[3]
    want = masq.eval("(x - 0.5) * 2", x=a)
    assert np.array_equal(np.ma.getmaskarray(scored), np.ma.getmaskarray(want))
    assert np.array_equal(scored.filled(0), want.filled(0))


def states_made():
    import os
    import masq.dask
    return os.getpid(), list(masq.dask._made)


def test_cluster_workers_make_their_own_state(client, on_cluster):
    """Nothing travels but source and chunks: the graph pickles (a State
    would not), and each worker process made one State, in the thread that
    runs its tasks, when it first needed one."""
    with pytest.raises(TypeError):
        pickle.dumps(masq.State())
    r = md.eval("sum(x * 2, 0)", x=da.ones((40, 4), chunks=(5, 4)))
    pickle.dumps(dict(r.__dask_graph__()))
    assert client.compute(r).result().tolist() == [80.0] * 4
    made = client.run(states_made)
    assert len(made) == 2
    for pid, states in made.values():
        assert len(states) == 1 and states[0][0] == pid  # threads_per_worker=1: one State


ALL_VALID = ["x * 2", "sum(x, 0)", "mean(x, [0, 1], keepdim=true)", "std(x, 1)", "amax(x)", "softmax(x, 0)"]


def test_cluster_all_valid_is_still_masked(client):
    """numpy.ma chunks whose entries are all valid give numpy.ma results, as
    masq.eval does on the whole array with its mask: np.ma.concatenate
    (dask's, merging parts) shrinks an all-False mask to nomask, which masq
    reads as a plain array; before, such a result came back as a plain
    ndarray (a number for amax: float64, where masq.eval gives a float)."""
    a = np.ma.array(np.random.default_rng(5).random((20, 9)), mask=np.zeros((20, 9), bool))
    x = da.from_array(a, chunks=(6, 4), asarray=False)
    got = client.gather(client.compute([md.eval(src, x=x) for src in ALL_VALID]))
    for src, g in zip(ALL_VALID, got):
        want = masq.eval(src, x=a)
        check(g, want, f32=1e-5)
        assert not np.ma.getmaskarray(g).any(), src


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
@pytest.mark.parametrize("src", ["(x - 0.5) * w", "mean(x * 2, 1)", "var(x, [0, 1], correction=1)", "amax(y, 0)",
                                 "softmax(x, 0)"])
def test_local_schedulers(whole, scheduler, src):
    got = md.eval(src, **uses(src, chunked(data()))).compute(scheduler=scheduler)
    check(got, masq.eval(src, **uses(src, whole)))


@pytest.mark.parametrize("src", ["x * 2", "var(x, 1)"])
def test_a_state_holds_nothing_between_runs(whole, src):
    """The synchronous scheduler runs the blocks in this thread: after it,
    this thread's State holds no chunk, part or temporary (none of its
    globals but none), not even as `_`."""
    md.eval(src, **uses(src, chunked(data()))).compute(scheduler="synchronous")
    s = md.state()
    for name in s.complete("_") + s.complete("x"):
        if not s.doc(name):  # a global, not a builtin
            assert s[name] is None, name
    assert s.eval("_") is None


def test_a_state_gives_back_its_buffers():
    """The buffers a State keeps for reuse (up to 512 MB of freed
    temporaries, which dask's memory accounting cannot see) are given back
    when a run ends, and the blocks dask has dropped since the last run
    when the next one starts: nothing is left to trim."""
    a = np.random.default_rng(3).random((1000, 1000))
    md.eval("exp(x) * 2 + 1", x=da.from_array(a, chunks=(500, 1000))).compute(scheduler="synchronous")
    gc.collect()  # the blocks, in cycles of dask's: dropped
    md.eval("x + 1", x=np.arange(3.0)).compute(scheduler="synchronous")
    assert md.state().trim() == 0


def test_numpy_inputs_and_one_chunk():
    a = np.ma.array([1.0, 2.0, 40.0, 4.0], mask=[False, False, True, False])
    assert md.eval("mean(x)", x=a).compute() == pytest.approx(7 / 3)
    assert md.eval("sum(x, 0)", x=da.from_array(a, chunks=4, asarray=False)).compute() == 7.0


@pytest.mark.parametrize("src, says", [
    ("cumprod(x, 1)", "works along dim 1, across chunks; rechunk that axis into one chunk (x.rechunk({1: -1}))"),
    ("softmax(x, [0, 1])", "softmax needs one literal dim"),
    ("x * softmax(x, 1)", "cannot split softmax(...): it works along dim 1"),
    ("cummax(x, dim=0)", "along dim 0"),
    ("cumsum(x)", "cumsum needs one literal dim"),
    ("argmax(x, [0, 1])", "argmax takes one literal dim (or none, for all)"),
    ("norm(x, p)", "needs a literal p (a number, inf or -inf), not p"),
    ("quantile(x, dim=1)", "quantile needs a literal q"),
    ("x @ x * 2", "one matrix product a @ b at the top of the expression"),
    ("sum(x @ x)", "matrix product"),
    ("x @ x", "x @ x: x has 6 columns, x 4 rows"),
    ("x - mean(x)", "one reduction at the top of the expression"),
    ("x[0]", "cannot split indexing"),
    ("mysterious(x)", "mysterious(...): it is not known to be elementwise"),
    ("mean(x, d)", "literal dims"),
    ("sum(x, 1, dtype=float64)", "dtype= is not supported across chunks"),
    ("z * 2", "'z' is not one of its arrays"),
    ("a = x\na", "one expression"),
    ("x = x * 2", "not an assignment"),
    ("(x = 1)", "not an assignment"),
    ("not x", "cannot split 'not': truth tests"),
    ("sum(x = 2)", "needs its tensor as the first positional argument"),
    ("x.sum()", "method syntax"),
    ("sum(x, 2)", "dim 2 is out of range"),
])
def test_unsupported_is_a_clear_error(src, says):
    x = da.zeros((4, 6), chunks=2)
    with pytest.raises(md.Unsupported) as e:
        md.eval(src, x=x)
    assert says in str(e.value)
    assert isinstance(e.value, ValueError)


def test_variance_far_from_zero_keeps_its_digits():
    """Values near 1e9 that vary by 1: merging parts by their means alone
    (each rounded near 1e9) lost 8 digits of the variance (2e-8 off); each
    part's mean carried with what rounding lost keeps it within 1e-12,
    as masq on the whole array."""
    rng = np.random.default_rng(1)
    a = np.ma.array(rng.random((6, 3000)) + 1e9, mask=rng.random((6, 3000)) < 0.5)
    a[:, :700] = np.ma.masked
    want = np.ma.var(a.astype(np.longdouble), axis=1, ddof=1)
    got = md.eval("var(x, 1, correction=1)", x=da.from_array(a, chunks=(3, 100), asarray=False)).compute()
    assert np.max(np.abs(got - want) / want) < 1e-12
    assert np.max(np.abs(masq.eval("var(x, 1, correction=1)", x=a) - want) / want) < 1e-11


def test_softmax_far_from_zero_keeps_its_digits():
    """Values near 1e9 that vary by 1, and int64 near 2**40 (which masq
    reads as float32): each entry from its distance to the slice's largest
    and the rescaled sum, not from a logsumexp near 1e9 (whose last digit
    is 1e-7 of a unit)."""
    rng = np.random.default_rng(2)
    a = np.ma.array(rng.random((6, 300)) + 1e9, mask=rng.random((6, 300)) < 0.3)
    a[2] = np.ma.masked
    x = da.from_array(a, chunks=(3, 7), asarray=False)
    for src in ("softmax(x, 1)", "log_softmax(x, 1)", "softmin(x, 1)"):
        got, want = md.eval(src, x=x).compute(), masq.eval(src, x=a)
        assert np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
        assert np.ma.allclose(got, want, rtol=1e-13, atol=0), src
    i = np.array([2**40, 2**40 + 1, 2**40 + 3, 7, 2**40])
    got = md.eval("softmax(x, 0)", x=da.from_array(i, chunks=2)).compute()
    assert np.array_equal(got, masq.eval("softmax(x, 0)", x=i))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_process_makes_its_own_state():
    """A State made before a fork is the parent's (its threads did not come
    along): the child makes a new one, and keeps the old one unfreed."""
    parent = md.state()
    assert parent.eval("count(exp(arange(1000000.0) * 0) > 0)") == 1000000
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        ok = 0
        try:
            s = md.state()
            ok = int(s is not parent and s.eval("count(exp(arange(1000000.0) * 0) > 0)") == 1000000
                     and md._forked[-1] is parent)
        finally:
            os.write(w, bytes([ok]))
            os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"\x01"
    os.close(r)
    os.waitpid(pid, 0)
    assert md.state() is parent


def run_script(*argv):
    """A script of the checkout, run as a user runs it, with this masq."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(masq.__file__))))
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=300)


def test_the_example_script_runs_on_a_cluster():
    """examples/python/dask_blockwise.py --cluster, unchanged: a LocalCluster
    of two worker processes runs its pasted functions and masq.dask.eval."""
    if not os.path.exists(EXAMPLE):
        pytest.skip("outside a checkout")
    r = run_script(EXAMPLE, "--cluster")
    assert r.returncode == 0, r.stderr[-2000:]
    out = dict(line.split(":", 1) for line in r.stdout.splitlines())
    assert out["scored chunks agree with one State"].strip() == "True"
    means = [out[k].strip() for k in out if "mean" in k or "one machine" in k]
    assert len(means) == 3 and len(set(means)) == 1, r.stdout


BENCH = os.path.join(os.path.dirname(EXAMPLE), "..", "..", "bench", "dask_bench.py")


def test_the_out_of_core_bench_row_runs(tmp_path):
    """make bench ROWS=dask's script, small (two blocks): it writes its
    files under the build dir, checks masq.dask against dask's masked
    arrays, prints its row and ratio, and deletes the files."""
    if not os.path.exists(BENCH):
        pytest.skip("outside a checkout")
    r = run_script(BENCH, str(tmp_path), "--entries", "1e7")
    assert r.returncode == 0, r.stderr[-2000:]
    assert [line.split("\t")[1] for line in r.stdout.splitlines()] == ["masq-dask", "dask-ma"], r.stdout
    table = (tmp_path / "bench" / "dask_table.md").read_text()
    assert "results the same (mean 1e-5, std 1e-4 relative, the same mask): yes" in table, table
    assert "| masked mean+std along dim 0, on disk  |" in table and "x faster than dask masked" in table
    assert not (tmp_path / "bench" / "dask_ooc").exists()


@pytest.mark.parametrize("src", ["argmax(x)", "argmin(x, 0, keepdim=true)", "argmax(x * 0)", "cumsum(x, 0)",
                                 "norm(x)", "norm(x, 0)", "median(x)", "quantile(x, 0.25, 0)"])
def test_along_one_dim_all_masked_and_plain(src):
    """1-d, chunks of 9: ties everywhere (small ints), a stretch with nothing
    valid; every entry masked (masq.eval gives numpy.ma.masked, a masked
    cumsum); and plain data."""
    rng = np.random.default_rng(1)
    v = np.ma.array(rng.integers(0, 5, 100).astype(np.float32), mask=rng.random(100) < 0.4)
    v[20:40] = np.ma.masked
    for a in (v, np.ma.array(np.ones(30), mask=True), v.data):
        got = md.eval(src, x=da.from_array(a, chunks=9, asarray=False)).compute(scheduler="synchronous")
        check(got, masq.eval(src, x=a), f32=1e-5)
