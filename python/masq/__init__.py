"""masq, the masked tensor language, inside Python (docs/PYTHON.md).

The interpreter is the C extension masq._masq; this package re-exports it,
so `masq.State`, `masq.eval`, `masq.Error` and `masq.Exit` are its own.
`import masq.dask` adds dask arrays (masq/dask.py), importing dask only then.
"""
from masq._masq import Error, Exit, State, __version__, eval

__all__ = ["Error", "Exit", "State", "eval", "__version__"]
