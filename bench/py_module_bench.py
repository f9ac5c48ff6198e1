#!/usr/bin/python3
"""py_module_bench.py - the masq Python module (issue 19) on the sum_all data.

Usage: py_module_bench.py BUILD_DIR/python [WORKLOAD...]

Prints RESULT lines (bench/bench_util.h's protocol, timed by py_bench.py's
timeit) for the rows of bench/run.sh's "Python module" table, on a
10^7-entry float32 numpy.ma array, each entry valid with probability 1/2:
  py_sum   masq-py: masq.eval("sum(x)", x=a), the one-liner: a new State,
           the data wrapped in place, the mask turned, the sum, the result
           out (numpy.ma's a.sum() on the same data is py_bench's sum_all)
  py_own   masq-py: State.eval("sum(x)") on x set before: masq's own sum
           seen from Python
  py_turn  numpy: np.logical_not(mask), the polarity turn alone, its result
           kept until the next one as a State keeps it (so each turn writes
           fresh pages, as the one-liner's does)
Run it with MASQ_NUM_THREADS=1 to compare with masq_bench's one thread.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from py_bench import na, timeit  # noqa: E402 - after the path


def main():
    if len(sys.argv) < 2:
        print("usage: py_module_bench.py BUILD_DIR/python [WORKLOAD...]", file=sys.stderr)
        return 2
    wanted = sys.argv[2:]
    rows = ("py_sum", "py_own", "py_turn")
    if wanted and not any(w in rows for w in wanted):
        return 0
    sys.path.insert(0, sys.argv[1])
    import numpy as np

    try:
        import masq
    except ImportError as e:
        for w in rows:
            na("masq-py", w, "no module (make python; apt-get install python3-dev): %s" % e)
        return 0
    rng = np.random.default_rng(0)
    data = rng.random(10_000_000, dtype=np.float32)
    valid = rng.random(10_000_000) < 0.5
    a = np.ma.masked_array(data, mask=~valid)
    s = masq.State()
    s["x"] = a
    kept = [None]
    table = [
        ("masq-py", "py_sum", lambda: masq.eval("sum(x)", x=a)),
        ("masq-py", "py_own", lambda: s.eval("sum(x)")),
        ("numpy", "py_turn", lambda: kept.__setitem__(0, np.logical_not(a.mask))),
    ]
    for impl, name, fn in table:
        if not wanted or name in wanted:
            timeit(impl, name, fn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
