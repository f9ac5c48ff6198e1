"""Lists across the boundary: a masq list that shares sublists (or holds
itself) converts each list once, and Python gets the same sharing; long
conversions stop at Ctrl-C, in both directions; a Python list nested
deeper than a tensor can be is refused at once, however it shares."""
import contextlib
import os
import signal
import threading
import time

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
    t = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    t.start()
    with pytest.raises(KeyboardInterrupt):
        s["l"]  # a few seconds
    assert time.monotonic() - t0 < 1.5
    t.cancel()
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
    t = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    t.start()
    with pytest.raises(KeyboardInterrupt):
        s["z"]
    assert time.monotonic() - t0 < 1.5
    t.cancel()
    assert s.eval("len(z)") == 1000
