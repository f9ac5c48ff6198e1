"""Exceptions raised by the Python code the module calls while a script runs
(registered functions, picture=, sys.stdout/sys.stderr, signal handlers):
each reaches the caller of eval or call with its type and message, even
when the script ends right after; BaseExceptions (KeyboardInterrupt,
SystemExit, GeneratorExit) and MemoryError are never caught by a script's
try and come out as themselves."""
import contextlib
import sys

import pytest

import masq

PICTURE = "hist(tensor([1.0, 2.0, 2.0]), bins=2)"


class Stop(BaseException):
    """A BaseException of the host's own."""


class Failing:
    """A stream whose write raises."""

    def __init__(self, exc):
        self.exc = exc

    def write(self, text):
        raise self.exc

    def flush(self):
        pass


def test_picture_exception_when_the_script_ends_right_after():
    def picture(text, svg):
        raise ValueError("no room for pictures")

    s = masq.State(picture=picture)
    with pytest.raises(ValueError, match="no room for pictures") as e:
        s.eval(PICTURE)
    assert any(f.co_name == "picture" for f in _frames(e.value))  # its own traceback
    # not lost either when the script would go on, end in exit(), or fail
    with pytest.raises(ValueError, match="no room"):
        s.eval(PICTURE + "\ni = 0\nwhile true { i = i + 1 }")
    with pytest.raises(ValueError, match="no room"):
        s.eval(PICTURE + "\nexit(2)")
    with pytest.raises(ValueError, match="no room"):
        s.eval("fn f() = " + PICTURE + "\ntry { f() } catch e { }\n1")
    assert s.eval("1 + 1") == 2  # the State goes on


def _frames(exc):
    tb = exc.__traceback__
    while tb:
        yield tb.tb_frame.f_code
        tb = tb.tb_next


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt(),
                                 Stop("host says stop")])
def test_print_hook_exception_reaches_the_caller(exc):
    s = masq.State()
    with contextlib.redirect_stdout(Failing(exc)):
        with pytest.raises(type(exc)) as e:
            s.eval('print("one line")')
    assert e.value is exc
    with contextlib.redirect_stderr(Failing(exc)):
        with pytest.raises(type(exc)):
            s.eval('try { eprint("warn") } catch e { }\nx = 1')
    assert s.eval("2 * 3") == 6


def test_print_to_none_is_dropped():
    with contextlib.redirect_stdout(None):
        assert masq.eval('print("nowhere")\n3') == 3


@pytest.mark.parametrize("exc", [SystemExit(3), KeyboardInterrupt("from fn"), GeneratorExit("gen"),
                                 Stop("host says stop")])
def test_base_exceptions_are_not_caught_by_a_script(exc):
    s = masq.State()

    def fn(x):
        raise exc

    s.register("hostfn", fn)
    with pytest.raises(type(exc)) as e:
        s.eval('r = "caught"\ntry { hostfn(1) } catch e { r = e.message }\nr')
    assert e.value is exc
    with pytest.raises(type(exc)):
        s.call("hostfn", 1)
    with pytest.raises(KeyError):  # the run stopped at fn: r was never assigned
        s["r"]


def test_memory_error_keeps_its_message():
    s = masq.State()

    def fn(x):
        raise MemoryError("the GPU pool is exhausted")

    s.register("hostfn", fn)
    with pytest.raises(MemoryError, match="the GPU pool is exhausted") as e:
        s.eval("ok = 0\ntry { hostfn(1) } catch e { ok = 1 }\nok")
    assert e.value.args == ("the GPU pool is exhausted",)
    assert s.eval("2") == 2


def test_exception_of_a_caught_call_is_not_the_cause_of_a_later_error():
    s = masq.State()

    def fails(x):
        raise ValueError("no good")

    s.register("fails", fails)
    with pytest.raises(masq.Error, match="cannot be broadcast") as e:
        s.eval("try { fails(1) } catch e { }\n[1, 2] + [1, 2, 3]")
    assert e.value.__cause__ is None
    # and the cause stays when the host function's error is the one raised,
    # through a masq function and a re-raise
    with pytest.raises(masq.Error, match="ValueError: no good") as e:
        s.eval("fn g(x) = fails(x)\ntry { g(1) } catch e { raise(e) }")
    assert isinstance(e.value.__cause__, ValueError)


def test_host_exception_whose_str_fails():
    class Odd(Exception):
        def __str__(self):
            raise RuntimeError("no text")

    s = masq.State()
    s.register("odd", lambda x: (_ for _ in ()).throw(Odd()))
    with pytest.raises(masq.Error, match="Odd") as e:
        s.eval("odd(1)")
    assert isinstance(e.value.__cause__, Odd)

    class Stubborn(Exception):
        def __str__(self):
            raise KeyboardInterrupt("while formatting")

    s.register("stubborn", lambda x: (_ for _ in ()).throw(Stubborn()))
    with pytest.raises(KeyboardInterrupt, match="while formatting"):
        s.eval("try { stubborn(1) } catch e { }")


def test_nested_runs_keep_their_own_exceptions():
    """A host function that runs the State again and catches what that inner
    run raised: the outer run goes on unharmed."""
    def picture(text, svg):
        raise ValueError("inner picture")

    s = masq.State(picture=picture)

    def inner(x):
        try:
            s.eval(PICTURE)
        except ValueError as e:
            return len(str(e))
        return -1

    s.register("inner", inner)
    assert s.eval("inner(0) + 1") == len("inner picture") + 1


def test_many_failing_callbacks_leak_nothing():
    import gc
    import tracemalloc

    def picture(text, svg):
        raise ValueError("x" * 100)

    def fails(x):
        raise ValueError("y" * 100)

    s = masq.State(picture=picture)
    s.register("fails", fails)
    s.register("leave", lambda: sys.exit(1))
    tracemalloc.start()
    for i in range(3000):
        if i == 300:
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
        for src, exc in ((PICTURE, ValueError), ("fails(1)", masq.Error), ("leave()", SystemExit),
                         ("try { fails(1) } catch e { }\nz = 1 + [1, 2] + [1, 2, 3]", masq.Error)):
            with pytest.raises(exc):
                s.eval(src)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - before < 50000, "Python heap grew by %d bytes" % (after - before)
