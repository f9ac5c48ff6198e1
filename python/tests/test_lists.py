"""Lists across the boundary: within one conversion out of masq (a global,
an eval result, a host function's arguments) each masq object is converted
once, found again by its identity, and Python gets the same sharing: lists
that share sublists or hold themselves, tensors, lists of numbers made
arrays, long strings; long conversions stop at Ctrl-C, in both directions;
the memory limit stops a list of numbers too big for an array; a Python
list nested deeper than a tensor can be is refused at once, however it
shares."""
import contextlib
import os
import signal
import threading
import time
import tracemalloc

import numpy as np
import pytest

import masq

on_main = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                             reason="signals")


class Late(Exception):
    pass


@contextlib.contextmanager
def deadline(seconds):
    """Raises Late in the code that runs past [seconds] (if it lets Python
    run its signal handlers)."""
    def late(signum, frame):
        raise Late("still running after %s s" % seconds)

    old = signal.signal(signal.SIGALRM, late)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def signal_lines():
    """The signal masks of this process's threads (/proc), for a failure."""
    out = []
    for tid in sorted(os.listdir("/proc/self/task")):
        with open(f"/proc/self/task/{tid}/status") as f:
            out += [f"{tid} {line.strip()}" for line in f if line.startswith(("SigBlk", "SigIgn", "SigPnd", "ShdPnd"))]
    return "\n".join(out)


def stops_at_ctrl_c(read, state):
    """Ctrl-C 0.3 s into read() (seconds long) raises KeyboardInterrupt
    there at once. Should the signal never arrive (a CI run hung here twice,
    cause not found), a watchdog stops the read after 10 s through
    state.interrupt() and the test fails with the signal masks."""
    t = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    seen = []

    def watchdog():
        seen.append(signal_lines())
        state.interrupt()

    w = threading.Timer(10, watchdog)
    t0 = time.monotonic()
    t.start()
    w.start()
    try:
        with pytest.raises(BaseException) as raised:
            read()
    finally:
        t.cancel()
        w.cancel()
    if seen:
        pytest.fail("Ctrl-C never arrived; the signal masks then:\n" + seen[0])
    assert raised.type is KeyboardInterrupt, raised
    assert time.monotonic() - t0 < 1.5


DOUBLING = "l = [1]\nfor i in range(60) { l = [l, l] }\n"


@on_main
def test_shared_sublists_convert_once():
    s = masq.State()
    s.eval(DOUBLING)
    with deadline(10):
        r = s["l"]  # 2^60 occurrences of 61 lists
    for _ in range(59):
        assert type(r) is list and len(r) == 2 and r[0] is r[1]
        r = r[0]
    # [1] is a tensor, so the last list holds two tensors (each its own array)
    assert type(r) is list and [a.tolist() for a in r] == [[1], [1]]
    with deadline(10):
        r = s.eval(DOUBLING + "[l, \"x\"]")
    assert r[1] == "x" and r[0][0] is r[0][1]


def test_a_list_that_holds_itself():
    s = masq.State()
    r = s.eval('l = ["a"]\nappend(l, l)\nl')
    assert r[0] == "a" and r[1] is r
    r = s.eval('d = ["b"]\ne = [d]\nappend(d, e)\n[d, e]')
    assert r[0][1] is r[1] and r[1][0] is r[0]


def test_equal_lists_stay_two_lists():
    r = masq.eval('a = ["x", 1]\nb = ["x", 1]\n[a, b, a]')
    assert r[0] == r[1] and r[0] is not r[1] and r[0] is r[2]


def test_deep_distinct_nesting_is_refused_clearly():
    s = masq.State()
    with pytest.raises(TypeError, match="nested deeper than"):
        s.eval('l = ["x"]\nfor i in range(500) { l = [l] }\nl')
    assert s.eval("1") == 1


@on_main
def test_ctrl_c_stops_a_long_conversion_out():
    s = masq.State()
    s.eval("l = [str(i) for i in range(1000000)]")
    stops_at_ctrl_c(lambda: s["l"], s)
    assert s.eval("len(l)") == 1000000
    assert s["__py_item0"] is None  # the module's globals are none again


@on_main
def test_shared_python_lists_in_are_refused_at_once():
    deep = [1.0]
    for _ in range(60):
        deep = [deep, deep]
    with deadline(10):
        with pytest.raises(TypeError, match="nested deeper than 8"):
            masq.eval("x", x=deep)
        loop = [1.0]
        loop.append(loop)
        with pytest.raises(TypeError, match="holds itself|nested deeper"):
            masq.eval("x", x=loop)
    # sharing within the 8 dimensions is fine: rows of one list
    row = [1.0, 2.0, 3.0]
    assert masq.eval("sum(x)", x=[row] * 1000) == 6000.0
    assert masq.eval("shape(x)", x=[[row] * 2] * 3).tolist() == [3, 2, 3]


@on_main
def test_ctrl_c_stops_a_long_tensor_conversion_out():
    """z: 1000 wide at each of four levels down to empty lists, two lists
    in turns at each level, so 10^12 empty lists to check before the
    (empty) tensor it makes (the check never polled). Ctrl-C stops it
    (masq_get_global runs as a run does: without the GIL, the hook looking
    at Python's signals), and is not taken for a list to read item by
    item."""
    s = masq.State()
    s.eval("fn turns(x, y) {\n  r = []\n  for i in range(500) {\n    append(r, x)\n    append(r, y)\n  }\n"
           "  return r\n}\n"
           "fn up(p) {\n  q = []\n  append(q, turns(p[0], p[1]))\n  append(q, turns(p[1], p[0]))\n"
           "  return q\n}\n"
           "z = up(up(up(up([[], []]))))[0]\n")
    stops_at_ctrl_c(lambda: s["z"], s)
    assert s.eval("len(z)") == 1000


# a: one list of 250 000 floats (1 MB as a float32 array) 200 times over
SHARED_ROWS = "b = [float(i) for i in range(250000)]\na = []\nfor i in range(200) { append(a, b) }\n"


def test_shared_numeric_sublists_convert_once():
    """a as one array would be 200 MB, past the 64 MB limit, so it comes over
    as a list, whose items are one array. Before, each occurrence was an
    array of its own: 62 filled the limit and the other 138 came over as
    Python lists of floats (8 MB each), in about a second; with a big b and
    no limit, that took all of memory."""
    s = masq.State(memory_limit=64 << 20)
    s.eval(SHARED_ROWS)
    with deadline(10):
        got = [s["a"], s.eval("a"), s.eval('append(a, "x")\na')]
    for r in got:
        assert type(r) is list and len(r) >= 200
        assert type(r[0]) is np.ndarray and r[0].shape == (250000,) and r[0][-1] == 249999.0
        assert all(x is r[0] for x in r[:200])
    assert got[2][200] == "x"


def test_a_list_that_makes_one_tensor_is_one_array():
    """The choice for a numeric list whose rows are one list: one array (a
    list of numbers is a tensor in masq), the row copied into each of its
    rows, as masq's own tensor(a) does; not a list of one array."""
    r = masq.eval("row = [i + 1.5 for i in range(2)]\na = []\nfor i in range(3) { append(a, row) }\na")
    assert type(r) is np.ndarray and r.tolist() == [[1.5, 2.5]] * 3
    # a list literal of numbers is a tensor, and a list of 1-d tensors is no
    # tensor (masq asks for stack()): a list of one array
    r = masq.eval("row = [1.5, 2.5]\na = []\nfor i in range(3) { append(a, row) }\na")
    assert type(r) is list and r[0] is r[1] is r[2] and r[0].tolist() == [1.5, 2.5]


def test_shared_objects_inside_lists_are_one_python_object():
    s = masq.State()
    r = s.eval('row = [1.5, 2.5]\nm = masked(tensor([1.0, 2.0, 3.0]), tensor([true, false, true]))\n'
               't = ones(3)\nlong = "x" * 100\n'
               '[[row, "y"], [row, "z"], m, m, t, t, long, long, "ab", "ab", 7, 7]')
    assert r[0][0] is r[1][0] and r[0][0].tolist() == [1.5, 2.5]
    assert r[2] is r[3] and isinstance(r[2], np.ma.MaskedArray)  # the mask turned once
    assert r[2].mask.tolist() == [False, True, False]
    assert r[4] is r[5] and r[4].tolist() == [1.0, 1.0, 1.0]
    assert r[6] is r[7] and r[6] == "x" * 100
    assert r[8:] == ["ab", "ab", 7, 7]  # short strings and numbers: made again, equal


def test_host_function_arguments_share():
    """f(b, b, ...): masq makes the list one tensor once (200 copies took
    200 MB, past the limit: an error at the 63rd), and the function gets one array
    each time; a masked tensor passed twice is one masked array."""
    s = masq.State(memory_limit=64 << 20)
    s.eval(SHARED_ROWS + "m = masked(tensor([1.0, 2.0]), tensor([true, false]))\n")
    got = []
    s.register("f", lambda *a: got.append(a) or len(a))
    with deadline(10):
        assert s.eval("f(" + ", ".join(["b"] * 200) + ")") == 200
    assert type(got[-1][0]) is np.ndarray and all(x is got[-1][0] for x in got[-1])
    s.eval("f(m, b, m)")
    assert got[-1][0] is got[-1][2] and got[-1][0].mask.tolist() == [False, True]


def test_state_call_converts_an_object_given_twice_once():
    """s.call("f", rows, rows): one tensor for masq, so the registered
    function gets one array twice (before, two conversions, two arrays)."""
    s = masq.State()
    got = []
    s.register("f", lambda *a: got.append(a) or len(a))
    rows = [[1.0, 2.0]] * 3
    assert s.call("f", rows, rows, np.arange(2.0)) == 3
    assert got[-1][0] is got[-1][1] and got[-1][0].shape == (3, 2)
    assert got[-1][2] is not got[-1][0] and got[-1][2].tolist() == [0.0, 1.0]


def traced_peak(read):
    """read()'s result and the most memory Python allocated during it (numpy
    reports its arrays' data to tracemalloc; masq's own memory is not in
    it)."""
    tracemalloc.start()
    try:
        r = read()
        return r, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# one masked tensor of 10^6 floats (its mask 1 MB in numpy.ma's polarity) and
# one string of 10^6 characters, each 200 times in a list; alias is m again
ONE_OBJECT_MANY_TIMES = ('n = 1000000\nm = masked(zeros(n), arange(n) % 2 == 0)\nalias = m\n'
                         'long = "x" * n\na = [m for i in range(200)]\nw = [long for i in range(200)]\n')


def test_one_object_many_times_costs_one_conversion():
    """Before, each occurrence was converted anew: a mask turned per masked
    array, a str per string, 190 MB of Python memory for either list (and
    200 objects that were not one). Now one object, about 1 MB, whether read
    as a global or an eval result, and one object bound to two names is one
    object too."""
    s = masq.State()
    s.eval(ONE_OBJECT_MANY_TIMES)
    for read in (lambda: s["a"], lambda: s.eval("a"), lambda: s["w"], lambda: s.eval("w")):
        r, peak = traced_peak(read)
        assert peak < 8 << 20, "%d MB" % (peak >> 20)
        assert len(r) == 200 and all(x is r[0] for x in r)
    assert isinstance(r[0], str) and len(r[0]) == 1000000
    r, peak = traced_peak(lambda: s.eval("[m, alias, long, alias, long]"))
    assert r[0] is r[1] is r[3] and r[2] is r[4] and peak < 8 << 20
    assert isinstance(r[0], np.ma.MaskedArray) and r[0].mask[:3].tolist() == [False, True, False]


def test_the_memory_limit_stops_a_list_of_numbers_too_big_for_an_array():
    """A list of numbers whose array does not fit under the limit is a
    MemoryError, not its numbers one by one as Python numbers (about 4
    times the memory refused, outside the limit; 5 s for 10^6 before)."""
    s = masq.State(memory_limit=20 << 20)
    s.eval("x = [i for i in range(1000000)]")  # 17 MB in masq, 8 MB more as an array
    with deadline(10):
        with pytest.raises(MemoryError, match="global 'x' is a list of numbers too large"):
            s["x"]
    # 50 distinct lists: not one array, and only some of them fit as arrays
    s = masq.State(memory_limit=28 << 20)
    s.eval("a = [[j * 1000000 + i for i in range(20000)] for j in range(50)]")
    with deadline(10):
        with pytest.raises(MemoryError, match="a list item is a list of numbers too large"):
            s["a"]
    assert s.eval("len(a)") == 50 and s["__py_item0"] is None


@on_main
def test_ctrl_c_stops_a_long_conversion_of_one_object_many_times():
    """10^6 occurrences of one tensor: one array, but still 10^6 items to
    read (a few seconds), and Ctrl-C stops it."""
    s = masq.State()
    s.eval("t = ones(3)\nl = [t for i in range(1000000)]")
    stops_at_ctrl_c(lambda: s["l"], s)
    assert s.eval("len(l)") == 1000000
