#!/bin/sh
# numpy interop, both ways:
#   1. masq writes .npy/.npz files; numpy must read the same arrays, .npy
#      files byte for byte as np.save writes them, and a masked tensor's
#      .npz as the same numpy.ma masked array.
#   2. numpy writes random arrays of every dtype masq reads (and numpy.ma
#      archives); masq loads and saves them again; numpy compares.
# Usage: sh tests/io/check_numpy.sh path/to/masq
# Runs only when /usr/bin/python3 has numpy; the last line is always
# "io-numpy: N passed, N failed" (tests/summary.sh adds those up).
SUITE=io-numpy MODULE=numpy PACKAGE=python3-numpy
. "$(dirname "$0")/python_prelude.sh"

"$py" - "$masq" <<'PY'
import io, subprocess, sys, zipfile
import numpy as np

masq = sys.argv[1]
import checks
from checks import check

def run_masq(script, name):
    with open(name, "w") as f:
        f.write(script)
    r = subprocess.run([masq, name], capture_output=True, text=True)
    check("masq " + name, r.returncode == 0, r.stderr.strip())
    return r.returncode == 0

def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()

def widened(arr):
    # What masq reads a dtype as: itself, but uint16 and uint32 (which masq
    # has no dtype for) widen to int64.
    k, size = arr.dtype.kind, arr.dtype.itemsize
    if k == "u" and size in (2, 4):
        return arr.astype(np.int64)
    return arr

def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)

def same_ma(a, b):
    ma, mb = np.ma.getmaskarray(a), np.ma.getmaskarray(b)
    return (a.shape == b.shape and a.dtype == b.dtype and np.array_equal(ma, mb)
            and np.array_equal(a.data[~ma], b.data[~mb], equal_nan=True))

# --- 1. masq writes, numpy reads ------------------------------------------------
a = np.array([[1.5, -2.25, 0], [3, 0.125, -7]], dtype=np.float32)
valid = np.array([[True, False, True], [False, True, True]])
want = {
    "f32.npy": a,
    "f64.npy": np.array([0.5, -0.0, np.inf, np.nan], dtype=np.float64),
    "i64.npy": np.array([[1, -2], [2**53 + 1, -(2**63)]], dtype=np.int64),
    "bool.npy": np.array([True, False, True]),
    "scalar.npy": np.array(2.5, dtype=np.float32),
    "empty.npy": np.zeros((3, 0), dtype=np.float32),
    "empty_i64.npy": np.zeros((0,), dtype=np.int64),
    "strided.npy": a[:, ::2],
    "row.npy": a[1],
    "cube.npy": np.arange(24, dtype=np.int64).reshape(2, 3, 4),
    "wide.npy": np.arange(12345678901, 12345678901 + 3, dtype=np.int64),
    # a long first axis shortens numpy's growth padding: the header must follow
    "long_axis.npy": np.zeros((12345678901, 0), dtype=np.float32),
    "dims8.npy": np.zeros((1, 2, 1, 2, 1, 2, 1, 2), dtype=np.float64),
}
script = """
a = tensor([[1.5, -2.25, 0], [3, 0.125, -7]])
m = masked(a, [[true, false, true], [false, true, true]])
save("f32.npy", a)
save("f64.npy", tensor([0.5, -0.0, 1.0 / 0, 0.0 / 0], dtype="float64"))
save("i64.npy", tensor([[1, -2], [9007199254740993, -9223372036854775807 - 1]]))
save("bool.npy", tensor([true, false, true]))
save("scalar.npy", tensor(2.5))
save("empty.npy", zeros(3, 0))
save("empty_i64.npy", zeros(0, dtype="int64"))
save("strided.npy", a[:, ::2])
save("row.npy", a[1])
save("cube.npy", reshape(arange(24), [2, 3, 4]))
save("wide.npy", arange(12345678901, 12345678904))
save("long_axis.npy", zeros(12345678901, 0))
save("dims8.npy", zeros(1, 2, 1, 2, 1, 2, 1, 2, dtype="float64"))
save("plain.npz", a)
save("masked.npz", m)
save("masked_strided.npz", m[:, ::2])
save("compressed.npz", m, compress=true)
save("none_valid.npz", masked(tensor([1.0, 2]), [false, false]))
save("masked_0d.npz", masked(tensor(4.0), tensor(false)))
savez("many.npz", [["w", a], ["m", m], ["steps", tensor(10)]])
savez("many_deflated.npz", [["w", a], ["m", m]], compress=true)
"""
# A masq built without reshape skips the 3-d case instead of failing.
probe = subprocess.run([masq, "-e", "reshape"], capture_output=True)
if probe.returncode != 0:
    script = script.replace('save("cube.npy", reshape(arange(24), [2, 3, 4]))\n', "")
    del want["cube.npy"]
if run_masq(script, "write.masq"):
    for name, w in want.items():
        try:
            got = np.load(name)
            check(name + " values", same(got, w), "got %r %r, want %r %r" % (got.dtype, got, w.dtype, w))
            # got, not w: a NaN's sign bit may differ, the layout must not
            check(name + " bytes", open(name, "rb").read() == npy_bytes(got), "differs from np.save")
        except Exception as e:
            check(name, False, repr(e))
    mw = np.ma.MaskedArray(a, ~valid)
    for name, w in [("masked.npz", mw), ("compressed.npz", mw),
                    ("masked_strided.npz", mw[:, ::2]),
                    ("none_valid.npz", np.ma.MaskedArray(np.array([1.0, 2.0], np.float32), [True, True])),
                    ("masked_0d.npz", np.ma.MaskedArray(np.float32(4.0), True))]:
        try:
            f = np.load(name)
            got = np.ma.MaskedArray(f["data"], f["mask"])
            check(name + " numpy.ma", same_ma(got, w) and sorted(f.files) == ["data", "mask"],
                  "got %r (files %r), want %r" % (got, f.files, w))
            check(name + " zip", zipfile.ZipFile(name).testzip() is None)
        except Exception as e:
            check(name, False, repr(e))
    try:
        methods = {i.compress_type for i in zipfile.ZipFile("compressed.npz").infolist()}
        check("compressed.npz deflated", methods == {zipfile.ZIP_DEFLATED}, repr(methods))
        f = np.load("plain.npz")
        check("plain.npz", f.files == ["data"] and same(f["data"], a), repr(f.files))
        for name in ["many.npz", "many_deflated.npz"]:
            f = np.load(name)
            files = ["w", "m", "m_mask"] + (["steps"] if name == "many.npz" else [])
            check(name + " files", f.files == files, repr(f.files))
            check(name + " m", same_ma(np.ma.MaskedArray(f["m"], f["m_mask"]), mw))
            check(name + " w", same(f["w"], a))
    except Exception as e:
        check("archives", False, repr(e))

# --- 2. numpy writes, masq reads and writes back, numpy compares -------------------
rng = np.random.default_rng(7)
inputs = {
    "in_f32.npy": rng.standard_normal((4, 5)).astype("<f4"),
    "in_f64.npy": rng.standard_normal((3, 2, 2)),
    "in_i64.npy": rng.integers(-2**62, 2**62, (7,), dtype="<i8"),
    "in_bool.npy": rng.random((3, 3)) < 0.5,
    "in_f16.npy": rng.standard_normal((5,)).astype("<f2"),
    "in_i32.npy": rng.integers(-2**31, 2**31, (6,), dtype="<i4"),
    "in_i16.npy": rng.integers(-2**15, 2**15, (6,), dtype="<i2"),
    "in_i8.npy": rng.integers(-128, 128, (6,), dtype="i1"),
    "in_u8.npy": rng.integers(0, 256, (6,), dtype="u1"),
    "in_u16.npy": rng.integers(0, 2**16, (6,), dtype="<u2"),
    "in_u32.npy": rng.integers(0, 2**32, (6,), dtype="<u4"),
    "in_scalar.npy": np.array(-1.25),
    "in_empty.npy": np.zeros((0, 4), dtype="<f4"),
}
for name, arr in inputs.items():
    np.save(name, arr)
with open("in_v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.arange(5.0), version=(2, 0))
inputs["in_v2.npy"] = np.arange(5.0)
big = rng.standard_normal((300, 400))
big_mask = rng.random((300, 400)) < 0.3
np.savez_compressed("in_big.npz", data=big, mask=big_mask)
np.savez("in_ma.npz", data=inputs["in_f32.npy"], mask=rng.random((4, 5)) < 0.4)
np.savez("in_nomask.npz", data=np.arange(3.0), mask=np.ma.nomask)

lines = ['save("out_%s", load("%s"))' % (n, n) for n in inputs]
lines += ['save("out_in_big.npz", load("in_big.npz"), compress=true)',
          'save("out_in_ma.npz", load("in_ma.npz"))',
          'save("out_in_nomask.npz", load("in_nomask.npz"))']
if run_masq("\n".join(lines) + "\n", "reread.masq"):
    for name, arr in inputs.items():
        try:
            w = widened(arr)
            check(name + " through masq", same(np.load("out_" + name), w),
                  "got %r, want %r" % (np.load("out_" + name), w))
        except Exception as e:
            check(name, False, repr(e))
    for name in ["in_big.npz", "in_ma.npz", "in_nomask.npz"]:
        try:
            f, g = np.load(name), np.load("out_" + name)
            want_ma = np.ma.MaskedArray(f["data"], f["mask"])
            got_ma = np.ma.MaskedArray(g["data"], g["mask"])
            if want_ma.mask is np.ma.nomask or want_ma.mask.shape != want_ma.shape:
                want_ma = np.ma.MaskedArray(f["data"], np.broadcast_to(f["mask"], f["data"].shape))
            check(name + " through masq", same_ma(got_ma, want_ma), "got %r" % got_ma)
        except Exception as e:
            check(name, False, repr(e))

checks.report("io-numpy")
sys.exit(1 if checks.failed else 0)
PY
