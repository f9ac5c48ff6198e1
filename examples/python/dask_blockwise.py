#!/usr/bin/python3
"""dask_blockwise.py - one masq function over a dask array of masked chunks.

The masq code is the same as on one machine; dask's map_blocks runs it on
each chunk (a numpy.ma array), and per-chunk sums and counts combine into a
global masked mean. Each worker thread uses its own masq.State,
masq.dask.state(), with the masq code loaded once; nothing here holds a
State, so dask can ship these functions to a cluster's worker processes as
they are, pasted into a script or not. masq.dask.eval does the same split
for you (the last line printed).

    PYTHONPATH=build/python python3 examples/python/dask_blockwise.py [--cluster]

--cluster runs it on a dask.distributed LocalCluster of two worker
processes instead of the local threaded scheduler.
"""
import sys

import dask.array as da
import numpy as np

import masq
import masq.dask

CODE = """
# centre and scale by fixed constants: elementwise, the mask kept
fn score(x) = (x - 0.5) * 2
# a chunk's masked sum and its count of valid entries
fn partial(x) = stack([sum(score(x)), count(x) * 1.0])
"""


def state():
    """This thread's State, with the masq code loaded once."""
    s = masq.dask.state()
    if "partial" not in s.complete("partial"):
        s.eval(CODE)
    return s


def score_block(x):
    return state().call("score", x)


def partial_block(x):
    return np.asarray(np.ma.filled(state().call("partial", x), 0.0)).reshape(1, 2)


def masked_input(n=1_000_000, chunk=100_000, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.random(n)
    invalid = rng.random(n) < 0.3  # numpy.ma's polarity: True = missing
    return np.ma.masked_array(data, mask=invalid), chunk


def main(scheduler="threads"):
    a, chunk = masked_input()
    x = da.from_array(a, chunks=chunk, asarray=False)
    scored = x.map_blocks(score_block, dtype=np.float64, meta=np.ma.masked_array(np.empty(0)))
    parts = x.map_blocks(partial_block, dtype=np.float64, chunks=((1,) * x.numblocks[0], (2,)),
                         new_axis=1, meta=np.empty((0, 2)))
    total, count = parts.sum(axis=0).compute(scheduler=scheduler)
    whole = scored.compute(scheduler=scheduler)
    print("blocks:", x.numblocks[0], "valid:", int(count))
    print("masked mean of score, blockwise: %.6f" % (total / count))
    print("the same on one machine:         %.6f" % masq.eval("mean((x - 0.5) * 2)", x=a))
    print("scored chunks agree with one State:", bool(np.ma.allequal(whole, masq.eval("(x - 0.5) * 2", x=a))))
    print("masq.dask.eval of the mean:      %.6f"
          % masq.dask.eval("mean((x - 0.5) * 2)", x=x).compute(scheduler=scheduler))


if __name__ == "__main__":
    if "--cluster" in sys.argv[1:]:
        from dask.distributed import Client, LocalCluster
        with LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            main(client)
    else:
        main()
