"""masq.dask on an array larger than its cluster's memory (issue 32): a
float32 .npy file and its mask on disk, 560 MB together, read block by
block by two worker processes limited to 250 MB each (each maps the files
itself; only their paths travel), give masq.eval's masked mean and std
along the chunked dim, computed here from memory maps of the same files."""
import os
import tempfile

import numpy as np
import pytest

distributed = pytest.importorskip("dask.distributed")
import dask.array as da  # noqa: E402

import masq  # noqa: E402
import masq.dask as md  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:make_current is deprecated:DeprecationWarning")

ROW, ROWS, BLOCK = 4000, 28000, 700  # 112e6 entries: 448 MB of float32, 112 MB of mask


class Blocks:
    """The files as dask.array.from_array wants them; pickles as its paths."""

    def __init__(self, data, mask):
        self.data, self.mask = data, mask
        self.shape, self.dtype, self.ndim = (ROWS, ROW), np.dtype(np.float32), 2

    def __getitem__(self, at):
        d = np.load(self.data, mmap_mode="r")[at]
        m = np.load(self.mask, mmap_mode="r")[at]
        return np.ma.array(np.array(d), mask=np.array(m))


def test_larger_than_the_cluster_memory():
    free = __import__("shutil").disk_usage(tempfile.gettempdir()).free
    if free < 4 * ROW * ROWS * 5 // 4:
        pytest.skip(f"needs {ROW * ROWS * 5 // 4 / 1e6:.0f} MB on disk, with room to spare")
    with tempfile.TemporaryDirectory() as where:
        dpath, mpath = os.path.join(where, "data.npy"), os.path.join(where, "mask.npy")
        data = np.lib.format.open_memmap(dpath, mode="w+", dtype=np.float32, shape=(ROWS, ROW))
        mask = np.lib.format.open_memmap(mpath, mode="w+", dtype=np.bool_, shape=(ROWS, ROW))
        rng = np.random.default_rng(5)
        for lo in range(0, ROWS, 4000):
            data[lo:lo + 4000] = rng.random((4000, ROW), dtype=np.float32) * 100 + 1000
            mask[lo:lo + 4000] = rng.random((4000, ROW), dtype=np.float32) >= 0.7  # True: masked
        mask[:, 7] = True  # a column with nothing valid
        data.flush(), mask.flush()
        x = da.from_array(Blocks(dpath, mpath), chunks=(BLOCK, ROW), asarray=False,
                          meta=np.ma.masked_array(np.empty((0, 0), np.float32)))
        cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                           memory_limit="250MB", dashboard_address=None)
        try:
            with distributed.Client(cluster, set_as_default=False) as client:
                client.wait_for_workers(2)
                before = set(client.scheduler_info()["workers"])
                got_mean, got_std = client.gather(client.compute([md.eval("mean(x, 0)", x=x),
                                                                  md.eval("std(x, 0)", x=x)]))
                after = set(client.scheduler_info()["workers"])
        finally:
            cluster.close()
        whole = np.ma.array(data, mask=mask)
        want_mean, want_std = masq.eval("mean(x, 0)", x=whole), masq.eval("std(x, 0)", x=whole)
        del data, mask, whole
    assert len(before) == 2 and after == before  # no worker was restarted for its memory
    for got, want in ((got_mean, want_mean), (got_std, want_std)):
        assert np.array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want))
        assert np.ma.getmaskarray(got)[7]
        assert np.ma.allclose(got, want, rtol=1e-6, atol=0)
