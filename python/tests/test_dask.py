"""examples/python/dask_blockwise.py: a masq function over a dask array of
masked chunks (map_blocks, the local schedulers) gives what one State gives
on the whole array."""
import importlib.util
import os

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import masq  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python",
                       "dask_blockwise.py")


@pytest.fixture(scope="module")
def example():
    if not os.path.exists(EXAMPLE):
        pytest.skip("outside a checkout")
    spec = importlib.util.spec_from_file_location("dask_blockwise", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_blockwise_equals_one_state(example, scheduler):
    a, _ = example.masked_input(n=200_000, seed=3)
    x = da.from_array(a, chunks=30_000, asarray=False)  # uneven last chunk
    scored = x.map_blocks(example.score_block, dtype=np.float64,
                          meta=np.ma.masked_array(np.empty(0))).compute(scheduler=scheduler)
    whole = masq.eval("(x - 0.5) * 2", x=a)
    assert np.array_equal(np.ma.getmaskarray(scored), np.ma.getmaskarray(a))
    assert np.array_equal(scored.filled(0), whole.filled(0))
    parts = x.map_blocks(example.partial_block, dtype=np.float64, chunks=((1,) * x.numblocks[0], (2,)),
                         new_axis=1, meta=np.empty((0, 2)))
    total, count = parts.sum(axis=0).compute(scheduler=scheduler)
    assert count == np.count_nonzero(~np.ma.getmaskarray(a))
    want = float(((a - 0.5) * 2).mean())  # numpy.ma, independently
    assert total / count == pytest.approx(want, rel=1e-9)
