#!/bin/sh
# scipy.sparse interop, both ways:
#   1. masq writes sparse tensors with save_npz; scipy.sparse.load_npz must
#      read the same matrices (format, shape, dtype, values).
#   2. scipy.sparse.save_npz writes csr and coo matrices of several dtypes,
#      compressed or not, int32 indices, unsorted rows with duplicates; masq
#      loads and saves them again; scipy compares. A file whose indices lie
#      must give a located error.
# Usage: sh tests/io/check_scipy.sh path/to/masq
# Runs only when /usr/bin/python3 has scipy; the last line is always
# "io-scipy: N passed, N failed" (tests/summary.sh adds those up).
SUITE=io-scipy MODULE=scipy.sparse PACKAGE=python3-scipy
. "$(dirname "$0")/python_prelude.sh"

"$py" - "$masq" <<'PY'
import subprocess, sys
import numpy as np
import scipy.sparse as sp

masq = sys.argv[1]
import checks
from checks import check

def run(script):
    with open("t.masq", "w") as f:
        f.write(script)
    return subprocess.run([masq, "t.masq"], capture_output=True, text=True)

def same(a, b):
    return (a.shape == b.shape and a.dtype == b.dtype and
            np.array_equal(a.toarray(), b.toarray(), equal_nan=True))

# 1. masq -> scipy
r = run('''
save_npz("c.npz", sparse_csr([0, 2, 2, 3], [1, 3, 0], [1.5, -2., 3.], [3, 4]))
save_npz("o.npz", sparse_coo([[2, 0, 2], [1, 0, 1]], [5, 6, 7], [3, 2]), compressed=false)
save_npz("b.npz", to_sparse_csr(tensor([[true, false], [false, true]])))
save_npz("d.npz", to_sparse(tensor([[0., 0.5], [0.25, 0.]], dtype="float64")))
save_npz("s.npz", sparse_csc([0, 2, 2, 3], [1, 2, 0], [1.5, -2., 3.], [3, 3]))
save_npz("si.npz", to_sparse_csc(tensor([[0, 7], [-1, 0], [0, 2]])), compressed=false)
''')
check("masq save_npz runs", r.returncode == 0, r.stderr)
if r.returncode == 0:
    want = {
        "c": sp.csr_matrix(np.array([[0, 1.5, 0, -2], [0, 0, 0, 0], [3, 0, 0, 0]], np.float32)),
        "o": sp.coo_matrix(np.array([[6, 0], [0, 0], [0, 12]], np.int64)),
        "b": sp.csr_matrix(np.array([[True, False], [False, True]])),
        "d": sp.coo_matrix(np.array([[0, 0.5], [0.25, 0]], np.float64)),
        "s": sp.csc_matrix(np.array([[0, 0, 3], [1.5, 0, 0], [-2, 0, 0]], np.float32)),
        "si": sp.csc_matrix(np.array([[0, 7], [-1, 0], [0, 2]], np.int64)),
    }
    for k, w in want.items():
        got = sp.load_npz(k + ".npz")
        check("scipy reads " + k, got.format == w.format and same(got, w),
              "%s %s %s" % (got.format, got.dtype, got.toarray()))

# 2. scipy -> masq -> scipy
rng = np.random.default_rng(5)
mats = {
    "f64csr": sp.random(6, 5, density=0.3, format="csr", dtype=np.float64, random_state=1),
    "f32coo": sp.random(4, 7, density=0.4, format="coo", dtype=np.float32, random_state=2),
    "i64csr": sp.csr_matrix(rng.integers(-3, 3, (5, 5)) * (rng.random((5, 5)) < 0.4)),
    "boolcoo": sp.coo_matrix(rng.random((3, 4)) < 0.5),
    "emptycsr": sp.csr_matrix((3, 2), dtype=np.float64),
    "unsorted": sp.csr_matrix((np.array([1., 2., 3., 4.]), np.array([2, 0, 2, 1]),
                               np.array([0, 3, 3, 4])), shape=(3, 4)),
    "f64csc": sp.random(5, 6, density=0.3, format="csc", dtype=np.float64, random_state=3),
    "f32csc": sp.random(7, 3, density=0.5, format="csc", dtype=np.float32, random_state=4),
    "boolcsc": sp.csc_matrix(rng.random((4, 3)) < 0.5),
    "emptycsc": sp.csc_matrix((2, 3), dtype=np.float64),
    "unsortedcsc": sp.csc_matrix((np.array([1., 2., 3., 4.]), np.array([2, 0, 2, 1]),
                                  np.array([0, 3, 3, 4])), shape=(4, 3)),
    "dupcoo": sp.coo_matrix((np.array([1., 2., 3.]), (np.array([0, 0, 1]), np.array([1, 1, 0]))),
                            shape=(2, 2)),
}
for k, m in mats.items():
    sp.save_npz(k + ".npz", m, compressed=(k != "f32coo"))
script = "".join('save_npz("%s_back.npz", load_npz("%s.npz"))\n' % (k, k) for k in mats)
r = run(script)
check("masq load_npz/save_npz runs", r.returncode == 0, r.stderr)
if r.returncode == 0:
    for k, m in mats.items():
        back = sp.load_npz(k + "_back.npz")
        want = {"csr": m.tocsr, "csc": m.tocsc}.get(m.format, m.tocoo)()
        want.sum_duplicates()
        check("round trip " + k, back.format == m.format and same(back, want),
              "%s %s\n%s\nvs\n%s" % (back.format, back.dtype, back.toarray(), want.toarray()))

# 3. a file that lies: a column past the shape
bad = sp.csr_matrix(np.eye(2))
np.savez("bad.npz", indices=np.array([0, 5], np.int32), indptr=bad.indptr, format=b"csr",
         shape=np.array([2, 2]), data=bad.data)
r = run('x = load_npz("bad.npz")\n')
check("lying file refused", r.returncode != 0 and
      "t.masq:1:5: error: load_npz: column index 5 of entry 1 is out of range" in r.stderr, r.stderr)

# masq reads a csc file as sparse_csc, with scipy's values at scipy's positions
m = sp.csc_matrix(np.array([[0, 2.5, 0], [1, 0, 0], [0, 4, 0.5]]))
sp.save_npz("csc.npz", m)
r = run('x = load_npz("csc.npz")\nprint(layout(x), ccol_indices(x), row_indices(x))\n'
        'print(to_dense(x))\n')
check("csc loads as sparse_csc", r.returncode == 0 and r.stdout ==
      "sparse_csc tensor([0, 1, 3, 4]) tensor([1, 0, 2, 2])\n"
      "tensor([[0.0000, 2.5000, 0.0000],\n        [1.0000, 0.0000, 0.0000],\n"
      "        [0.0000, 4.0000, 0.5000]], dtype=float64)\n", r.stdout + r.stderr)

# csc files that lie: a row past the shape, indptr that ends short, too few columns
lies = {
    "row": (np.array([0, 7], np.int32), np.array([0, 1, 2], np.int32), [2, 2],
            "load_npz: row index 7 of entry 1 is out of range for size (2, 2)"),
    "end": (np.array([0, 1], np.int32), np.array([0, 1, 1], np.int32), [2, 2],
            "load_npz: ccol_indices ends at 1 but there are 2 row_indices"),
    "cols": (np.array([0, 1], np.int32), np.array([0, 1, 2], np.int32), [2, 3],
             "load_npz: ccol_indices has 3 entries, so 2 columns, but size is (2, 3)"),
}
for k, (ix, ptr, shape, msg) in lies.items():
    np.savez("lie_%s.npz" % k, indices=ix, indptr=ptr, format=b"csc", shape=np.array(shape),
             data=np.ones(len(ix)))
    r = run('x = load_npz("lie_%s.npz")\n' % k)
    check("lying csc file refused: " + k, r.returncode != 0 and
          ("t.masq:1:5: error: " + msg) in r.stderr, r.stderr)

checks.report("io-scipy")
PY
