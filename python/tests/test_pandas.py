"""pandas in and out: a Series or a DataFrame's columns come in masked
where pandas has NaN, None or pd.NA (the nullable Int64, Float64 and
boolean dtypes too), the index left out; masq.to_pandas makes a result a
Series or DataFrame again, with the labels of `like`."""
import numpy as np
import pytest

import masq

pd = pytest.importorskip("pandas")


def test_series_in_nan_and_na_masked():
    s = masq.State()
    f = pd.Series([1.0, np.nan, 3.0], index=["a", "b", "c"])
    assert s.call("sum", f) == 4.0 and s.call("count", f) == 2
    n = pd.Series([1, None, 3], dtype="Int64")
    s["n"] = n
    assert s.eval("sum(n)") == 4 and s.eval("dtype(n)") == "int64" and s.eval("count(n)") == 2
    b = pd.Series([True, pd.NA, False], dtype="boolean")
    assert s.call("count", b) == 2 and s.call("any", b) is True
    o = pd.Series([1.5, None, 2.5], dtype=object)
    assert s.call("mean", o) == 2.0
    plain = pd.Series([1, 2, 3])  # nothing missing: no mask
    assert s.call("sum", plain) == 6 and not np.ma.isMaskedArray(s.call("mul", plain, 1))
    assert s.call("mean", f) == f.mean() and s.call("std", n) == pytest.approx(n.std(ddof=0))


def test_dataframe_in_rows_by_columns():
    df = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": pd.array([4, 5, None], dtype="Int64")},
                      index=[10, 20, 30])
    r = masq.eval("mean(x, dim=0)", x=df)
    assert r.tolist() == [2.0, 4.5]
    assert masq.eval("count(x)", x=df) == 4
    with pytest.raises(TypeError, match="not numbers"):
        masq.eval("x", x=pd.DataFrame({"s": ["a", "b"]}))


def test_a_series_is_read_when_bound():
    s = masq.State()
    f = pd.Series([1.0, 2.0])
    s["f"] = f
    f[0] = np.nan
    assert s.eval("sum(f)") == 3.0  # a snapshot (docs/PYTHON.md): bind it again
    s["f"] = f
    assert s.eval("sum(f)") == 2.0


def test_to_pandas():
    ser = pd.Series([1.0, np.nan, 3.0], index=list("abc"), name="t")
    out = masq.to_pandas(masq.eval("x * 2", x=ser), like=ser)
    assert out.name == "t" and list(out.index) == list("abc")
    assert out.isna().tolist() == [False, True, False] and out["c"] == 6.0
    ints = masq.to_pandas(masq.eval("masked([1, 2, 3], [true, false, true])"))
    assert str(ints.dtype) == "Int64" and ints.isna().tolist() == [False, True, False]
    df = pd.DataFrame({"a": [1.0, np.nan], "b": [3.0, 4.0]}, index=["r", "s"])
    means = masq.to_pandas(masq.eval("mean(x, dim=0)", x=df), like=df)
    assert list(means.index) == ["a", "b"] and means["a"] == 1.0
    full = masq.to_pandas(masq.eval("x + 1", x=df), like=df)
    assert full.shape == (2, 2) and list(full.columns) == ["a", "b"] and np.isnan(full.loc["s", "a"])
    with pytest.raises(ValueError):
        masq.to_pandas(np.arange(3.0), like=df)
    with pytest.raises(ValueError):
        masq.to_pandas(np.zeros((2, 2, 2)))
