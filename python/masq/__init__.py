"""masq, the masked tensor language, inside Python (docs/PYTHON.md).

The interpreter is the C extension masq._masq; this package re-exports it,
so `masq.State`, `masq.eval`, `masq.Error` and `masq.Exit` are its own.
`import masq.dask` adds dask arrays (masq/dask.py), importing dask only then.
masq.to_pandas turns a result into a pandas Series or DataFrame, and
masq.table_to_pandas / masq.table_from_pandas a masq table into a DataFrame and
back (masq/_pandas.py, importing pandas only then).
"""
from masq._masq import Error, Exit, State, __version__, eval
from masq._pandas import table_from_pandas, table_to_pandas, to_pandas

__all__ = ["Error", "Exit", "State", "eval", "to_pandas", "table_to_pandas", "table_from_pandas",
           "__version__"]
