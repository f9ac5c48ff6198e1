"""The State as a Python user expects it: `name in s`, call() with keyword
arguments, trim() giving memory back to the system, a docstring with its
signature on every public method (help(masq.State) reads well), and type
stubs beside the module."""
import gc
import inspect
import os

import numpy as np
import pytest

import masq


def test_in():
    s = masq.State()
    assert "x" not in s
    s["x"] = np.arange(3.0)
    s.eval("fn f(a) = a\ny = 1\nz = none")
    assert "x" in s and "f" in s and "y" in s
    assert "z" not in s  # none is no value
    assert "sum" not in s  # a builtin, not a global
    del s["x"]
    assert "x" not in s
    with pytest.raises(TypeError):
        3 in s


def test_call_with_keywords():
    s = masq.State()
    s.eval('fn f(a, k=2, label="q") = sum(a) * k')
    assert s.call("f", np.arange(3.0), k=10) == 30.0
    assert s.call("f", np.arange(3.0)) == 6.0
    assert s.call("f", a=[1, 2], k=3) == 9
    a = np.arange(4.0)
    assert s.call("std", a, dim=0, correction=1) == pytest.approx(np.std(a, ddof=1))
    assert s.call("std", a, correction=0) == pytest.approx(np.std(a))
    m = np.ma.array([1.0, 2.0, 10.0], mask=[False, False, True])
    assert s.call("mean", m, keepdim=True).tolist() == [1.5]
    s.eval('fn greet(name, punct="!") = name + punct')
    assert s.call("greet", "ab", punct="?") == "ab?"  # strings cross as arguments too
    assert s.call("greet", "ab") == "ab!"
    with pytest.raises(masq.Error, match="no parameter named 'zz'"):
        s.call("f", 1, zz=3)
    with pytest.raises(ValueError):
        s.call("f", 1, **{"not a name": 3})
    with pytest.raises(ValueError):
        s.call("f(1); g", 1, k=2)
    # the module's globals are gone after, whatever happened
    assert not [n for n in s.complete("__py") if s.eval(n) is not None]


def test_call_with_keywords_inside_a_registered_function():
    s = masq.State()
    s.eval("fn scale(a, by=1) = a * by")
    s.register("twice", lambda x: s.call("scale", x, by=2) + s.call("scale", x, by=3))
    assert s.eval("twice(1.0)") == 5.0


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc")
def test_trim_gives_memory_back():
    s = masq.State()
    s["x"] = np.ones(10**7, dtype=np.float32)  # 40 MB, Python's
    s.eval("y = exp(x * 2)\nm = mean(y)\ny = none")  # 40 MB temporaries, cached when freed
    gc.collect()
    before = rss_mb()
    freed = s.trim()
    after = rss_mb()
    assert freed >= 35 * 2**20
    assert before - after >= 30, (before, after)
    assert s.eval("m + sum(x)") == pytest.approx(np.exp(2.0) + 1e7)  # values stay


PUBLIC = ["eval", "call", "register", "doc", "complete", "trim", "interrupt", "close", "__enter__", "__exit__"]


def test_docstrings_and_signatures():
    assert inspect.signature(masq.State).parameters.keys() == {"memory_limit", "io", "picture"}
    for name in PUBLIC:
        m = getattr(masq.State, name)
        assert m.__doc__ and len(m.__doc__) > 20, name
        inspect.signature(m)  # a text signature, not "(...)"
    assert list(inspect.signature(masq.State.eval).parameters) == ["self", "source", "name"]
    assert inspect.signature(masq.eval)
    for f in [masq.eval, masq.to_pandas]:
        assert f.__doc__
    text = __import__("pydoc").render_doc(masq.State, renderer=__import__("pydoc").plaintext)
    assert "call(self, name, /, *args, **kwargs)" in text and "trim(self, /)" in text


def test_stubs_ship_with_the_package():
    here = os.path.dirname(masq.__file__)
    assert os.path.exists(os.path.join(here, "py.typed"))
    stub = open(os.path.join(here, "__init__.pyi")).read()
    for name in PUBLIC + ["class State", "def eval", "class Error", "class Exit", "def to_pandas"]:
        assert name in stub, name
    compile(stub, "__init__.pyi", "exec")
