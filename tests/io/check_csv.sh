#!/bin/sh
# CSV against an independent reader and writer (Python's csv and float,
# numpy for the values):
#   1. masq's save_csv of random masked float32 and float64 tensors over 18
#      orders of magnitude: Python reads every valid cell back as exactly the
#      same float (compared with the .npz masq saves of the same tensor), a
#      masked-out cell is empty, every cell has exactly the significant
#      digits of numpy's shortest (unique) repr, and a float64 cell is
#      Python's repr of it (less the ".0" of an integer);
#   2. Python's csv module writes a table with quoting, embedded line
#      breaks, CRLF and NA cells; masq's load_csv must give its numbers and
#      mask.
# Usage: sh tests/io/check_csv.sh path/to/masq
# The last line is always "io-csv: N passed, N failed".
SUITE=io-csv MODULE=numpy PACKAGE=python3-numpy
. "$(dirname "$0")/python_prelude.sh"

"$py" - "$masq" <<'PY'
import csv, subprocess, sys
import numpy as np

masq = sys.argv[1]
import checks
from checks import check

def run_masq(script):
    r = subprocess.run([masq, "-e", script], capture_output=True, text=True)
    check("masq -e", r.returncode == 0, r.stderr.strip())
    return r.stdout

# 1. masq writes, Python reads
run_masq("""seed(3)
x = randn(2000, 3) * 1000 ** (rand(2000, 3) * 6 - 3)
m = rand(2000, 3) > 0.1
save_csv("w32.csv", masked(x, m), header=["a", "b c", "d,e"])
save("w32.npz", masked(x, m))
y = x.double() / 7
save_csv("w64.csv", masked(y, m), header=["a", "b c", "d,e"])
save("w64.npz", masked(y, m))""")
for n, dt in (("32", np.float32), ("64", np.float64)):
    f = np.load("w%s.npz" % n)
    d, mk = f["data"], f["mask"]
    with open("w%s.csv" % n, newline="") as fh:
        rows = list(csv.reader(fh))
    check("header " + n, rows[0] == ["a", "b c", "d,e"], repr(rows[0]))
    rows = rows[1:]
    check("rows " + n, len(rows) == d.shape[0] and all(len(r) == 3 for r in rows))
    exact = empty = short = repr_ok = True

    def digits(text):  # the significant digits of a number's text
        m = text.lstrip("-").split("e")[0].replace(".", "")
        return m.lstrip("0").rstrip("0")

    for i, r in enumerate(rows):
        for j, c in enumerate(r):
            if mk[i, j]:
                empty &= c == ""
                continue
            v = d[i, j]
            exact &= dt(c) == v
            short &= digits(c) == digits(np.format_float_scientific(v, unique=True))
            if n == "64":  # Python's repr, less the ".0" of an integer
                repr_ok &= c == repr(float(v)) or c + ".0" == repr(float(v))
    check("values read back exactly " + n, exact)
    check("masked-out cells empty " + n, empty)
    check("shortest digits (numpy's unique repr) " + n, short)
    if n == "64":
        check("float64 cells as Python's repr", repr_ok)

# 2. Python writes, masq reads
table = [["t", "note", "v"], ["1.5", "a, \"quoted\"\nnote", "NA"], ["-2e-3", "", ""],
         ["inf", "x", "7"]]
with open("py.csv", "w", newline="") as fh:
    csv.writer(fh, lineterminator="\r\n").writerows(table)
out = run_masq("""x, names = load_csv("py.csv", tensor=true, usecols=["t", "v"], dtype="float64")
print(names)
v = to_tensor(x, -1)
m = get_mask(x)
for i in range(3) { print(item(v[i, 0]), item(v[i, 1]), item(m[i, 0]), item(m[i, 1])) }""")
check("python's csv through load_csv",
      out == '["t", "v"]\n1.5 -1.0 true false\n-0.002 -1.0 true false\ninf 7.0 true true\n',
      repr(out))

checks.report("io-csv")
sys.exit(1 if checks.failed else 0)
PY
