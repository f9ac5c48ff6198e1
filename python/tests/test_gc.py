"""The garbage collector sees what a State holds (registered functions, the
picture callback, the buffers masq wraps), so a State in a reference cycle
is freed, and with it what it held."""
import ctypes
import gc
import sys
import weakref

import numpy as np

import masq


def collected(make):
    """make() returns a State in a cycle; True if gc frees it."""
    ref = make()
    gc.collect()
    return ref() is None


def test_registered_function_that_refers_to_its_state():
    def make():
        s = masq.State()
        s.register("again", lambda x: s.eval("1") + x)  # the closure holds s
        assert s.eval("again(1)") == 2
        return weakref.ref(s)

    assert collected(make)


def test_picture_callback_that_refers_to_its_state():
    class Notebook:  # what the Jupyter kernel does: its State calls its method back
        def __init__(self):
            self.state = masq.State(picture=self.picture)
            self.pictures = []

        def picture(self, text, svg):
            self.pictures.append(text)

    def make():
        nb = Notebook()
        nb.state.eval("hist(tensor([1.0, 2.0]))")
        assert nb.pictures
        return weakref.ref(nb.state)

    assert collected(make)


class Buffer(ctypes.c_double * 4):
    """A buffer exporter the garbage collector tracks (it has a __dict__)."""


def test_wrapped_buffer_that_refers_to_its_state():
    def make():
        s = masq.State()
        buf = Buffer(1.0, 2.0, 3.0, 4.0)
        buf.state = s  # the buffer holds the State that wraps it
        s["b"] = buf
        assert s.eval("sum(b)") == 10.0
        return weakref.ref(s)

    assert collected(make)


def test_freeing_the_state_gives_its_buffers_back():
    a = np.arange(4.0)
    before = sys.getrefcount(a)

    def make():
        s = masq.State()
        s.register("f", lambda x: s["a"])
        s["a"] = a
        assert s.eval("sum(f(1))") == 6.0
        return weakref.ref(s)

    assert collected(make)
    assert sys.getrefcount(a) == before
    a[0] = 1.0  # still ours, writable


def test_a_busy_state_is_not_freed():
    """gc.collect() inside a host function: the State is running, so it must
    survive (and the buffers it wraps with it)."""
    s = masq.State()
    s["a"] = np.arange(3.0)
    s.register("collect", lambda: gc.collect() * 0 + len(s.complete("colle")))  # a cycle
    ref = weakref.ref(s)
    assert s.eval("collect() + sum(a)") == 4.0
    del s
    gc.collect()
    assert ref() is None
