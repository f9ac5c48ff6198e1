"""masq tables and pandas DataFrames (docs/PYTHON.md, "pandas"): a table
read by masq's load_csv is pandas' read_csv of the same file, column by
column (numbers, dates, text, missing cells), and a DataFrame goes in as a
table and comes back out the same."""
import os

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
import masq  # noqa: E402

CO2 = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "data", "co2_mlo.csv")


def test_a_loaded_table_is_read_csv():
    s = masq.State(io=True)
    s.eval(f"t = load_csv({masq_str(CO2)})")
    got, want = masq.table_to_pandas(s, "t"), pd.read_csv(CO2, parse_dates=[0])
    assert list(got.columns) == list(want.columns)
    assert got["week"].equals(want["week"]) and got["co2_ppm"].equals(want["co2_ppm"])
    assert (got["season"] == want["season"]).all() and got["co2_ppm"].isna().sum() == 53


def test_a_frame_goes_in_and_comes_back():
    df = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "x": [0.5, np.nan, 2.0],
                       "s": ["a", None, 'q"\\'], "b": [True, False, True],
                       "d": pd.to_datetime(["2020-01-01", None, "2021-02-03"])})
    s = masq.State()
    masq.table_from_pandas(s, "t", df)
    assert s.eval("dtypes(t)") == ["int64", "float64", "text", "bool", "int64"]
    assert s.eval("count(t['n'])") == 2 and s.eval("t['s']") == ["a", None, 'q"\\']
    assert s.eval("date_part(t['d'], 'year')[2]") == 2021  # dates as int64 days
    back = masq.table_to_pandas(s, "t")
    for c in ("n", "x", "s", "b"):
        assert back[c].equals(df[c].astype(object) if c == "s" else df[c]), c
    with pytest.raises(TypeError, match="table_to_pandas"):
        s["t"]
    assert "__py_t0" not in s  # the temporaries are gone


def masq_str(path):
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
