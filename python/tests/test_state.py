"""The State as a host: errors with carets, the sandbox, the memory cap,
KeyboardInterrupt, host functions, print, threads and reference counts."""
import gc
import os
import signal
import sys
import threading
import time
import tracemalloc

import numpy as np
import numpy.ma as ma
import pytest

import masq

LOOP = "i = 0\nwhile true {\n  i = i + 1\n}\n"


def test_error_is_rendered_with_caret():
    s = masq.State()
    with pytest.raises(masq.Error) as e:
        s.eval("x = 1\ny = [1, 2] + [1, 2, 3]", name="model.masq")
    text = str(e.value)
    assert text.startswith("model.masq:2:5: error: shapes (2,) and (3,) cannot be broadcast")
    assert "\n    y = [1, 2] + [1, 2, 3]\n        ^^^^^^^^^^^^^^^^^^" in text
    assert (e.value.line, e.value.column, e.value.chunkname) == (2, 5, "model.masq")
    assert e.value.message == "shapes (2,) and (3,) cannot be broadcast"
    with pytest.raises(masq.Error, match=r"<python>:1:4: error: unexpected '\)'"):
        s.eval("f()) ")
    # a failed eval leaves the globals as they were
    with pytest.raises(KeyError):
        s["y"]


def test_exit():
    with pytest.raises(masq.Exit) as e:
        masq.eval("exit(3)")
    assert e.value.code == 3


def test_sandbox_has_no_files(tmp_path):
    path = str(tmp_path / "a.npy")
    np.save(path, np.arange(3.0))
    s = masq.State()
    with pytest.raises(masq.Error, match="load"):
        s.eval('load("%s")' % path)
    io = masq.State(io=True)
    assert np.array_equal(io.eval('load("%s")' % path), np.arange(3.0))


def test_memory_cap():
    s = masq.State(memory_limit=8 << 20)
    s["small"] = 1
    with pytest.raises(MemoryError, match="memory"):
        s.eval("big = zeros(10000000)")
    assert s.eval("small + 1") == 2  # still usable, globals as before
    with pytest.raises(KeyError):
        s["big"]
    with pytest.raises(ValueError):
        masq.State(memory_limit=0)


def send_sigint_after(seconds):
    t = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    return t


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_keyboard_interrupt_stops_a_loop():
    s = masq.State()
    send_sigint_after(0.3)
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        s.eval(LOOP)
    assert time.monotonic() - t0 < 5
    assert s.eval("1 + 1") == 2  # usable afterwards


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_signal_handler_exception_crosses():
    class Deadline(Exception):
        pass

    def handler(signum, frame):
        raise Deadline()

    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Deadline):
            masq.State().eval(LOOP)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_interrupt_from_another_thread():
    s = masq.State()
    threading.Timer(0.2, s.interrupt).start()
    with pytest.raises(KeyboardInterrupt, match="interrupted"):
        s.eval(LOOP)


def test_host_functions():
    s = masq.State()
    seen = []

    def clip(x, lo, hi):
        seen.append((type(x), lo, hi))
        return np.clip(x, lo, hi if hi is not None else np.inf)

    s.register("clip(x, lo=0, hi=none)", clip, "clip x into [lo, hi]")
    r = s.eval("clip(masked([-1.0, 5.0, 2.0], [true, true, false]))")
    assert seen[0][0] is ma.MaskedArray and seen[0][1] == 0 and seen[0][2] is None
    assert r.tolist() == [0.0, 5.0, None]
    assert s.doc("clip").startswith("clip(x, lo=0, hi=none)")
    assert "clip" in s.complete("cli")
    s.register("nothing", lambda *a: None)
    assert s.eval("nothing(1, 2)") is None

    def fails(x):
        raise ValueError("no good")

    s.register("fails", fails)
    with pytest.raises(masq.Error) as e:
        s.eval("y = 1\nfails(y)")
    assert "<python>:2:1: error: ValueError: no good" in str(e.value)
    assert isinstance(e.value.__cause__, ValueError)
    # a try in masq catches it like any error
    assert s.eval('r = "no"\ntry { fails(1) } catch e { r = e.message }\nr') == "ValueError: no good"

    # a host function may call back into its own State
    s.register("inner", lambda x: s.eval("x0 = 40\nx0") + x)
    assert s.eval("inner(2)") == 42
    with pytest.raises(masq.Error, match="signature|parameter"):
        s.register("bad(a=1, b)", clip)


def test_print_goes_to_sys_stdout(capsys):
    masq.eval('print("hello", 1 + 1)\neprint("warn")')
    out, err = capsys.readouterr()
    assert out == "hello 2\n" and err == "warn\n"


def test_two_threads_two_states():
    results, errors = {}, []

    def work(k):
        try:
            s = masq.State()
            x = np.full(200000, float(k))
            for _ in range(20):
                r = masq.eval("sum(x * 2)", x=x)
                s["x"] = x
                r2 = s.eval("sum(x * 2)")
                assert r == r2 == 400000.0 * k
            results[k] = r2
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and results == {1: 400000.0, 2: 800000.0}


def test_one_state_two_threads_raises():
    s = masq.State()
    kept = [s.eval("ones(3) * %d" % k) for k in range(50)]
    started = threading.Event()

    def long_run():
        started.set()
        try:
            s.eval("i = 0\nwhile i < 3000000 { i = i + 1 }")
        except KeyboardInterrupt:
            pass

    t = threading.Thread(target=long_run)
    t.start()
    started.wait()
    time.sleep(0.05)
    with pytest.raises(RuntimeError, match="one State per thread"):
        s.eval("1")
    # arrays of the busy State may die on this thread meanwhile: their
    # handles go back to masq when it is idle
    del kept[:]
    gc.collect()
    s.interrupt()
    t.join()
    assert s.eval("1 + 1") == 2
    assert s.eval("sum(ones(3))") == 3.0


def test_results_outlive_dropped_state():
    s = masq.State()
    r = s.eval("ones(4) * 3")
    del s
    gc.collect()
    assert r.tolist() == [3.0] * 4  # the array keeps the State alive


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_leaks_over_many_calls():
    """10^5 calls through every path (set, eval, call, host function, numpy.ma
    in and out): the Python objects' reference counts come back, and neither
    Python's heap (tracemalloc) nor the process (masq's memory) grows."""
    s = masq.State()
    a = np.arange(10, dtype=np.float64)
    m = ma.array(np.arange(10.0), mask=np.arange(10) % 2 == 0)
    f = lambda x: x  # noqa: E731
    s.register("f", f)
    refs = [sys.getrefcount(o) for o in (a, m, f)]
    tracemalloc.start()
    calls = int(os.environ.get("MASQ_LEAK_CALLS", 100000))  # fewer: a quick run
    for i in range(calls):
        if i == calls // 10:  # after the warm-up
            gc.collect()
            py_before, rss_before = tracemalloc.get_traced_memory()[0], rss_bytes()
        k = i % 3
        if k == 0:
            s["a"] = a
        elif k == 1:
            r = s.eval("f(a) + 1")
        else:
            r = s.call("f", m)
    r = None
    gc.collect()
    py_after, rss_after = tracemalloc.get_traced_memory()[0], rss_bytes()
    tracemalloc.stop()
    s["a"] = None
    assert [sys.getrefcount(o) for o in (a, m, f)] == refs
    assert py_after - py_before < 50000, "Python heap grew by %d bytes" % (py_after - py_before)
    assert rss_after - rss_before < 4 << 20, "RSS grew by %d bytes" % (rss_after - rss_before)


def test_close_and_with():
    """close() ends a State: no more calls (ValueError, as a closed file),
    its wrapped buffers given back at once; `with` closes it, and an
    exception in the block goes on."""
    with masq.State() as s:
        assert s.eval("1 + 1") == 2 and not s.closed
    assert s.closed
    with pytest.raises(ValueError, match="closed"):
        s.eval("1")
    with pytest.raises(ValueError, match="closed"):
        s["x"] = 1
    with pytest.raises(ValueError, match="closed"):
        with s:
            pass
    s.close()  # again: nothing
    with pytest.raises(ZeroDivisionError):
        with masq.State() as t:
            1 / 0
    assert t.closed
    raw = bytearray(80)
    s = masq.State()
    s["a"] = np.frombuffer(raw)  # masq holds the array, which holds raw's buffer
    with pytest.raises(BufferError):
        raw.extend(b"x")
    s.close()
    raw.extend(b"x")  # given back


def test_close_with_results_alive():
    """Arrays a State returned view its memory: after close() they still
    read what they held, and the State's memory goes with the last one."""
    s = masq.State()
    r = s.eval("arange(1000.0) * 2")
    m = s.eval("masked(arange(4.0), [true, false, true, true])")
    s.close()
    assert s.closed and r[999] == 1998.0 and m.sum() == 5.0
    with pytest.raises(ValueError, match="closed"):
        s.call("sum", r)
    del r
    assert m.mask.tolist() == [False, True, False, False]
    del m
    assert s.closed


def test_close_while_running_is_refused():
    s = masq.State()
    s.register("shut", lambda x: s.close())
    with pytest.raises(masq.Error) as e:
        s.eval("shut(1)")
    assert isinstance(e.value.__cause__, RuntimeError) and "running" in str(e.value.__cause__)
    assert not s.closed and s.eval("2") == 2
