"""pandas across the boundary (docs/PYTHON.md, "pandas").

In: the extension (convert.c) hands a pandas Series or DataFrame to
to_pair, which gives (data, valid) in masq's polarity: NaN, None and pd.NA
are the entries that are not valid. The values are copied when they are
bound: a snapshot, like the rest of pandas' own conversions, so a later
change to the frame is not half seen. The index is not passed (masq sees
positions, as numpy.asarray does).

Out: to_pandas(value, like=None) makes a masq result a Series (1-D) or a
DataFrame (2-D), its masked entries NaN (float) or pd.NA (int and bool,
in pandas' nullable dtypes).
"""
import numpy as np


def _column(s):
    """(data, valid or None) of one Series, data of a masq dtype."""
    dtype = s.dtype
    np_dtype = dtype if isinstance(dtype, np.dtype) else getattr(dtype, "numpy_dtype", None)
    if np_dtype is not None and np_dtype.kind == "O":  # objects: numbers and missing values
        np_dtype = np.dtype(np.float64)
    if np_dtype is None or np_dtype.kind not in "biuf":
        raise TypeError(f"masq: a pandas column of dtype {dtype} has no masq dtype "
                        "(it takes bool, int, uint and float columns, nullable or not)")
    missing = s.isna().to_numpy()
    fill = False if np_dtype.kind == "b" else 0
    try:
        data = s.to_numpy(dtype=np_dtype, na_value=fill, copy=True)
    except (TypeError, ValueError) as e:
        raise TypeError(f"masq: the pandas column {s.name!r} is not numbers: {e}") from None
    return data, (~missing if missing.any() else None)


def to_pair(obj):
    """(data, valid) of a Series, or of a DataFrame as a (rows, columns)
    tensor; valid is None when every entry is there."""
    import pandas as pd

    if isinstance(obj, pd.Series):
        return _column(obj)
    if not isinstance(obj, pd.DataFrame):
        raise TypeError(f"masq: cannot pass a {type(obj).__name__} (pass a Series or a DataFrame, "
                        "or its .to_numpy())")
    cols = [_column(obj.iloc[:, j]) for j in range(obj.shape[1])]
    dtype = np.result_type(*[d.dtype for d, _ in cols]) if cols else np.float64
    data = np.empty(obj.shape, dtype=dtype)
    valid = np.ones(obj.shape, dtype=bool)
    for j, (d, v) in enumerate(cols):
        data[:, j] = d
        if v is not None:
            valid[:, j] = v
    return data, (None if valid.all() else valid)


def _labels(n, like):
    """(index, name) for a 1-D result of length n from like."""
    import pandas as pd

    if like is None:
        return None, None
    if isinstance(like, pd.Series):
        if len(like) != n:
            raise ValueError(f"to_pandas: {n} values, but like has {len(like)} rows")
        return like.index, like.name
    if isinstance(like, pd.DataFrame):
        if len(like.columns) == n:  # a reduction over the rows: one value a column
            return like.columns, None
        if len(like.index) == n:
            return like.index, None
        raise ValueError(f"to_pandas: {n} values, but like is {like.shape[0]} x {like.shape[1]}")
    index = pd.Index(like)
    if len(index) != n:
        raise ValueError(f"to_pandas: {n} values, but like has {len(index)} labels")
    return index, None


def _values(data, missing):
    """A pandas array (or numpy array) of data with missing entries."""
    import pandas as pd

    if missing is None or not missing.any():
        return np.array(data)
    if data.dtype.kind == "f":
        out = np.array(data, dtype=data.dtype)
        out[missing] = np.nan
        return out
    if data.dtype.kind == "b":
        return pd.arrays.BooleanArray(np.array(data, dtype=bool), missing.copy())
    return pd.arrays.IntegerArray(np.array(data, dtype=np.int64), missing.copy())


def to_pandas(value, like=None):
    """A masq result as pandas: a 1-D array as a Series, a 2-D one as a
    DataFrame. Masked entries become NaN in a float column and pd.NA in an
    int or bool one (pandas' nullable Int64 and boolean dtypes).

    like (optional) gives the labels: a Series gives its index and name; a
    DataFrame gives its index and columns to a 2-D result, and to a 1-D one
    its columns (a value a column, as mean(x, dim=0) of it) or else its
    index, whichever has the length; anything else is taken as the index.
    """
    import pandas as pd

    if isinstance(value, (pd.Series, pd.DataFrame)):
        return value
    arr = value if isinstance(value, np.ma.MaskedArray) else np.asarray(value)
    data = np.ma.getdata(arr)
    missing = np.ma.getmask(arr)
    missing = None if missing is np.ma.nomask else np.asarray(missing)
    if data.ndim == 1:
        index, name = _labels(data.shape[0], like)
        return pd.Series(_values(data, missing), index=index, name=name)
    if data.ndim == 2:
        index = columns = None
        if isinstance(like, pd.DataFrame):
            if like.shape != data.shape:
                raise ValueError(f"to_pandas: a {data.shape[0]} x {data.shape[1]} result, "
                                 f"but like is {like.shape[0]} x {like.shape[1]}")
            index, columns = like.index, like.columns
        elif like is not None:
            index, _ = _labels(data.shape[0], like)
        cols = {j: _values(data[:, j], None if missing is None else missing[:, j])
                for j in range(data.shape[1])}
        df = pd.DataFrame(cols, index=index)
        if columns is not None:
            df.columns = columns
        return df
    raise ValueError(f"to_pandas: a Series or a DataFrame holds 1 or 2 dimensions, not {data.ndim}")


def _name(name):
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"masq: a table's global name must be an identifier, not {name!r}")
    return name


def table_to_pandas(state, name):
    """The table held by global [name] of masq.State [state] (a table from
    load_csv, table(...), group ...) as a pandas DataFrame, column by column:
    numbers in their dtypes (a missing cell NaN in a float column, pd.NA in
    an int or bool one), dates and datetimes as datetime64 (missing: NaT),
    text as Python strings (missing: None)."""
    import pandas as pd

    name = _name(name)
    cols = state.eval(f"columns({name})")
    kinds = state.eval(f"dtypes({name})")
    out = {}
    for j, (col, kind) in enumerate(zip(cols, kinds)):
        v = state.eval(f"{name}[columns({name})[{j}]]")
        if kind == "text":
            out[col] = pd.Series(list(v), dtype=object)
            continue
        arr = v if isinstance(v, np.ma.MaskedArray) else np.ma.asarray(v)
        data, missing = np.ma.getdata(arr), np.ma.getmaskarray(arr)
        if kind in ("date", "datetime"):
            vals = data.astype("datetime64[D]" if kind == "date" else "datetime64[s]").astype("datetime64[ns]")
            vals[missing] = np.datetime64("NaT")
            out[col] = vals
        else:
            out[col] = _values(data, missing if missing.any() else None)
    return pd.DataFrame(out)


def table_from_pandas(state, name, df):
    """Binds a pandas DataFrame as a masq table global [name] of [state],
    column by column: numbers and bools as their tensors (NaN, None and
    pd.NA masked out), datetime64 columns as int64 days (whole days) or
    seconds, masked at NaT (numbers in masq, as date_part reads them), and
    other columns as text (their str(), missing cells none). The index is
    not passed. Returns nothing; the table is state[name]'s to use."""
    import pandas as pd

    name = _name(name)
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"masq: table_from_pandas takes a DataFrame, not a {type(df).__name__}")
    temps, parts, n = [], [], len(df)
    try:
        for j in range(df.shape[1]):
            col, g = df.iloc[:, j], f"__py_t{j}"
            temps.append(g)
            if pd.api.types.is_datetime64_any_dtype(col.dtype):
                missing = col.isna().to_numpy()
                ns = col.to_numpy(dtype="datetime64[ns]").astype(np.int64)
                day = 86400 * 10**9
                whole = not (ns[~missing] % day).any()
                ints = np.where(missing, 0, ns // (day if whole else 10**9))
                state[g] = np.ma.array(ints, mask=missing)
            elif pd.api.types.is_bool_dtype(col.dtype) or pd.api.types.is_numeric_dtype(col.dtype):
                state[g] = col
            else:  # text: a list of strings, then none where missing
                missing = col.isna().to_numpy()
                state[g] = ["" if m else str(v) for v, m in zip(col.tolist(), missing)] if n else []
                state[g + "_m"] = missing
                temps.append(g + "_m")
                if n:
                    state.eval(f"for i in range(len({g})) {{ if {g}_m[i] {{ {g}[i] = none }} }}")
            parts.append(f"{_quoted(str(df.columns[j]))}: {g}")
        state.eval(f"{name} = table({{{', '.join(parts)}}})")
    finally:
        for g in temps:
            state[g] = None


def _quoted(s):
    """s as a masq string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
