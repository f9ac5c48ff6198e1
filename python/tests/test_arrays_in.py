"""Arrays masq cannot read in place are copied, never refused: misaligned
buffers (what dask.distributed and pickle protocol 5 hand over),
byte-swapped and odd-strided ones; bool arrays whose bytes are not 0 and 1
(numpy reads any nonzero byte as True) are copied as 0 and 1, so data and
masks mean what numpy says; numpy.ma masks turn into masq's valid."""
import pickle

import numpy as np
import numpy.ma as ma
import pytest

import masq


def misaligned(values, dtype):
    a = np.asarray(values, dtype=dtype)
    raw = bytearray(a.nbytes + 1)
    m = np.frombuffer(raw, dtype=dtype, offset=1, count=a.size).reshape(a.shape)
    m[...] = a
    assert not m.flags.aligned
    return m


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.int16, np.float16])
def test_misaligned_arrays_are_copied(dtype):
    a = misaligned([[1, 2, 3], [4, 5, 6]], dtype)
    s = masq.State()
    s["a"] = a
    assert s.eval("sum(a)") == 21
    assert np.array_equal(s["a"], a) and s["a"].dtype == a.dtype
    m = ma.array(a, mask=[[False, True, False], [False, False, True]])
    assert masq.eval("sum(m)", m=m) == 1 + 3 + 4 + 5
    assert masq.eval("count(x)", x=(a, np.array([True, False, True]))) == 4
    assert s.call("sum", a) == 21


def test_misaligned_from_pickle_protocol_5():
    """pickle protocol 5 with out-of-band buffers, as dask.distributed ships
    arrays: the buffer lands wherever the frame had it."""
    a = np.arange(10.0)
    bufs = []
    data = pickle.dumps(a, protocol=5, buffer_callback=bufs.append)
    frame = bytearray(b"\0" + bytes(bufs[0].raw()))  # one byte of header before it
    b = pickle.loads(data, buffers=[memoryview(frame)[1:]])
    assert not b.flags.aligned
    assert masq.eval("sum(x * 2)", x=b) == 90.0


def test_byte_swapped_and_odd_strides_are_copied():
    big = np.arange(12, dtype=">f8").reshape(3, 4)
    assert masq.eval("sum(x)", x=big) == 66.0
    assert np.array_equal(masq.eval("x", x=big.T[::2]), big.T[::2])
    assert np.array_equal(masq.eval("x", x=big[::-1, ::2]), big[::-1, ::2])
    rec = np.zeros(4, dtype=[("a", "u1"), ("x", "<f8")])  # packed: x at odd offsets
    rec["x"] = [1.5, 2.5, 3.5, 4.5]
    assert masq.eval("sum(x)", x=rec["x"]) == 12.0
    swapped_mask = ma.array(np.arange(4, dtype=">i4"), mask=[0, 1, 0, 0])
    assert masq.eval("sum(x)", x=swapped_mask) == 5


def odd_bools():
    return [np.frombuffer(bytes([0, 1, 2, 255]), dtype=bool),
            np.array([0, 1, 2, 255], dtype=np.uint8).view(bool),
            np.array([0, 0, 1, 0, 2, 0, 254, 0], dtype=np.uint8).view(bool)[::2]]


@pytest.mark.parametrize("b", odd_bools())
def test_bool_bytes_other_than_0_and_1(b):
    assert b.tolist() == [False, True, True, True] and b.sum() == 3
    # as a mask (masq's polarity): three valid entries
    assert masq.eval("count(x)", x=(np.arange(4.0), b)) == 3
    assert masq.eval("sum(x)", x=(np.arange(4.0), b)) == 6.0
    # as data
    assert masq.eval("sum(x)", x=b) == 3
    assert masq.eval("x", x=b).tolist() == [False, True, True, True]
    assert masq.eval("x", x=b).view(np.uint8).tolist() == [0, 1, 1, 1]
    assert masq.eval("sum(masked(ones(4), x))", x=b) == 3.0
    # as numpy.ma's mask (True = invalid): one valid entry
    m = ma.array(np.arange(4.0), mask=b)
    assert masq.eval("count(x)", x=m) == m.count() == 1
    # as a masked array's bool data
    d = ma.array(b, mask=[False, False, False, True])
    assert masq.eval("sum(x)", x=d) == 2
    # broadcast (a zero stride) and as a call argument
    assert masq.eval("count(x)", x=(np.ones((3, 4)), b)) == 9
    assert masq.State().call("sum", b) == 3


def test_masked_array_polarity():
    m = ma.array([1.0, 2.0, 4.0, 8.0], mask=[True, False, False, True])
    r = masq.eval("x", x=m)
    assert ma.getmaskarray(r).tolist() == [True, False, False, True]
    assert masq.eval("count(x)", x=m) == 2 and masq.eval("sum(x)", x=m) == 6.0
    assert masq.eval("count(x)", x=ma.array([1.0, 2.0])) == 2  # nomask: all valid


def test_misaligned_and_byte_swapped_together_at_every_entry():
    """A big-endian chunk at an odd address (a frame written elsewhere and
    read here), masked: bound, passed to call, returned by a registered
    function, and as a (data, valid) pair whose mask is misaligned too."""
    raw = bytearray(8 * 6 + 1)
    a = np.frombuffer(raw, dtype=">f8", offset=1, count=6).reshape(2, 3)
    a[...] = np.arange(6.0).reshape(2, 3)
    assert not a.flags.aligned and not a.dtype.isnative
    m = ma.array(a, mask=[[False, True, False], [False, False, True]])
    assert masq.eval("sum(x)", x=m) == 0 + 2 + 3 + 4
    s = masq.State()
    s["m"] = m
    assert ma.allequal(s["m"], m) and np.array_equal(ma.getmaskarray(s["m"]), ma.getmaskarray(m))
    assert s.call("sum", m) == 9
    s.register("chunk", lambda: m)
    assert s.eval("count(chunk())") == 4
    valid = np.frombuffer(bytearray(7), dtype=bool, offset=1, count=6).reshape(2, 3)
    valid[...] = [[True, False, True], [True, True, False]]
    assert masq.eval("sum(x)", x=(a, valid)) == 9
