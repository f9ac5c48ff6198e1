#!/usr/bin/python3
"""Writes the NumPy files that masq's I/O golden tests load (tests/io/).

Run with /usr/bin/python3 and numpy installed (apt-get install python3-numpy):
    /usr/bin/python3 tools/gen_io_fixtures.py
The files are committed, so the tests need no numpy; rerun this only to add
fixtures. Each file is small and its values are chosen so the golden output
can be checked by eye (the .out files of tests/lang/io_*.masq).
"""
import io
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "io")


def path(name):
    return os.path.join(OUT, name)


def save(name, arr, version=None):
    with open(path(name), "wb") as f:
        if version is None:
            np.save(f, arr)
        else:
            np.lib.format.write_array(f, np.asanyarray(arr), version=version)


def npy_bytes(arr):
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


def raw(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def scipy_csc():
    """scipy.sparse csc_matrix files for load_npz (tests/lang/io_npz_csc.masq,
    tests/errors/io_npz_csc_*.masq) and the fuzz_npy seeds; needs python3-scipy."""
    import scipy.sparse as sp

    m = sp.csc_matrix(np.array([[0, 2.5, 0, 0], [1, 0, 0, -3], [0, 4, 0, 0.5]]))
    sp.save_npz(path("csc.npz"), m)  # deflated, int32 indices, float64 data
    sp.save_npz(path("csc_f32_stored.npz"), m.astype(np.float32), compressed=False)
    # a row index past the shape (what the indices say beats nothing)
    np.savez(path("csc_lying_row.npz"), indices=np.array([0, 9, 2], np.int32),
             indptr=np.array([0, 1, 3, 3], np.int32), format=b"csc",
             shape=np.array([3, 3]), data=np.ones(3))
    # indptr says 4 entries, indices hold 3
    np.savez(path("csc_lying_nnz.npz"), indices=np.array([0, 1, 2], np.int32),
             indptr=np.array([0, 1, 3, 4], np.int32), format=b"csc",
             shape=np.array([3, 3]), data=np.ones(3))
    good = open(path("csc_f32_stored.npz"), "rb").read()
    raw("csc_truncated.npz", good[: len(good) * 2 // 3])


def main():
    os.makedirs(OUT, exist_ok=True)

    # Native dtypes.
    save("f4.npy", np.array([[1.5, -2.25, 0.0], [3.0, 0.125, -7.0]], dtype="<f4"))
    save("f8.npy", np.array([0.1, -2.5, 1e10, -0.0], dtype="<f8"))
    # 2**53 + 1 is not a double: shows int64 is read exactly.
    save("i8.npy", np.array([1, -2, 2**53 + 1, -(2**63)], dtype="<i8"))
    save("b1.npy", np.array([True, False, True]))

    # Widened dtypes: float16 -> float32, the small ints -> int64.
    save("f2.npy", np.array([0.5, -1.0, 65504.0, 2.0**-24, np.inf, -np.inf, np.nan], dtype="<f2"))
    save("i4.npy", np.array([-(2**31), 0, 2**31 - 1], dtype="<i4"))
    save("i2.npy", np.array([-(2**15), 7, 2**15 - 1], dtype="<i2"))
    save("i1.npy", np.array([-128, -1, 127], dtype="i1"))
    save("u1.npy", np.array([0, 128, 255], dtype="u1"))
    save("u2.npy", np.array([0, 65535], dtype="<u2"))
    save("u4.npy", np.array([0, 2**32 - 1], dtype="<u4"))

    # Header versions 2 and 3 (a 4-byte header length).
    save("v2.npy", np.array([1.0, 2.0], dtype="<f4"), version=(2, 0))
    save("v3.npy", np.array([[1, 2], [3, 4]], dtype="<i8"), version=(3, 0))

    # Shapes: 0-d, empty, 3-d.
    save("scalar.npy", np.float64(3.5))
    save("empty.npy", np.zeros((2, 0), dtype="<f4"))
    save("empty1.npy", np.zeros((0,), dtype="<i8"))
    save("i8_3d.npy", np.arange(8, dtype="<i8").reshape(2, 2, 2))

    # What masq refuses, each with its own message.
    save("fortran.npy", np.asfortranarray(np.arange(6, dtype="<f8").reshape(2, 3)))
    save("bigendian.npy", np.array([1.0, 2.0], dtype=">f8"))
    save("complex.npy", np.array([1 + 2j], dtype="<c8"))
    save("u8.npy", np.array([2**64 - 1], dtype="<u8"))
    whole = npy_bytes(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype="<f4"))
    raw("truncated.npy", whole[:-12])  # header says 24 bytes of data, 12 left
    raw("truncated_header.npy", whole[:40])
    raw("badmagic.npy", b"this is not numpy\n")
    structured = np.zeros(2, dtype=[("a", "<f4"), ("b", "<i8")])
    save("structured.npy", structured)

    # Archives: stored (np.savez) and deflated (np.savez_compressed).
    with open(path("stored.npz"), "wb") as f:
        np.savez(f, a=np.array([1.0, 2.0], dtype="<f4"), b=np.arange(3, dtype="<i8"))
    with open(path("deflated.npz"), "wb") as f:
        np.savez_compressed(f, a=np.array([1.0, 2.0], dtype="<f4"),
                            b=np.zeros((100,), dtype="<f8"))
    with open(path("positional.npz"), "wb") as f:
        np.savez(f, np.array([7, 8], dtype="<i8"))  # member arr_0.npy

    # numpy.ma: mask True = masked OUT. The classic idiom.
    m = np.ma.MaskedArray(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype="<f4"),
                          mask=[[False, True, False], [True, False, False]])
    with open(path("masked.npz"), "wb") as f:
        np.savez(f, data=m.data, mask=m.mask)
    with open(path("masked_deflated.npz"), "wb") as f:
        np.savez_compressed(f, data=m.data, mask=np.ma.getmaskarray(m))
    # Nothing masked: m.mask is numpy.ma's 0-d "nomask".
    nm = np.ma.MaskedArray(np.array([1.0, 2.0], dtype="<f8"))
    with open(path("nomask.npz"), "wb") as f:
        np.savez(f, data=nm.data, mask=nm.mask)
    # Several arrays, one of them masked through the NAME + NAME_mask rule.
    with open(path("multi.npz"), "wb") as f:
        np.savez(f, x=np.array([1.0, 2.0, 3.0], dtype="<f4"),
                 x_mask=np.array([False, False, True]),
                 step=np.array(10, dtype="<i8"))

    # Broken archives.
    good = open(path("stored.npz"), "rb").read()
    raw("truncated.npz", good[: len(good) // 2])
    bad = bytearray(good)
    first_data = bad.index(b"\x93NUMPY") + 128  # first data byte of a.npy
    bad[first_data] ^= 0xFF
    raw("badcrc.npz", bytes(bad))
    with open(path("bad_mask.npz"), "wb") as f:
        np.savez(f, data=np.zeros(3, dtype="<f4"), mask=np.zeros(2, dtype=bool))

    scipy_csc()

    print("wrote", len(os.listdir(OUT)), "files to", os.path.normpath(OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
