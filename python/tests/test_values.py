"""Values across the boundary: every dtype, numpy.ma, (data, valid) pairs,
Python scalars, strings and lists, and zero copies checked by mutation."""
import numpy as np
import numpy.ma as ma
import pytest

import masq

DTYPES = [np.bool_, np.int64, np.float32, np.float64, np.int8, np.int16, np.int32, np.uint8,
          np.float16]


def sample(dtype, shape=(2, 3, 4)):
    a = np.arange(int(np.prod(shape))).reshape(shape) % 5
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_plain(dtype):
    s = masq.State()
    a = sample(dtype)
    s["a"] = a
    r = s["a"]
    assert type(r) is np.ndarray and r.dtype == a.dtype and r.shape == a.shape
    assert np.array_equal(r, a)
    assert np.array_equal(s.eval("a"), a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_masked(dtype):
    s = masq.State()
    a = ma.array(sample(dtype), mask=sample(np.int64) % 3 == 0)
    s["a"] = a
    r = s["a"]
    assert isinstance(r, ma.MaskedArray) and r.dtype == a.dtype
    assert np.array_equal(ma.getmaskarray(r), ma.getmaskarray(a))  # polarity turned both ways
    assert np.array_equal(r.filled(0), a.filled(0))
    # masq sees valid = not numpy.ma's mask
    assert int(s.eval("count(a)")) == int((~ma.getmaskarray(a)).sum())


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
def test_masked_sum_matches_numpy_ma(dtype):
    rng = np.random.default_rng(1)
    a = ma.array((rng.random(1000) * 100).astype(dtype), mask=rng.random(1000) < 0.3)
    got = masq.eval("sum(x)", x=a)
    want = a.sum()
    if dtype == np.int64:
        assert got == want
    else:
        assert got == pytest.approx(float(want), rel=1e-5)


def test_pair_in_is_masq_polarity():
    r = masq.eval("x", x=(np.array([1.0, 2.0, 3.0]), np.array([True, False, True])))
    assert list(ma.getmaskarray(r)) == [False, True, False]
    # a numeric validity array counts nonzero as valid, and broadcasts
    r = masq.eval("x", x=(np.ones((2, 3)), np.array([1, 0, 2])))
    assert ma.getmaskarray(r).tolist() == [[False, True, False]] * 2


def test_all_masked_scalar_is_masked():
    assert masq.eval("sum(x)", x=ma.array([1.0, 2.0], mask=[True, True])) is ma.masked


def test_scalars_and_strings():
    s = masq.State()
    for v in [3, -2**62, 2.5, True, False, "héllo", None]:
        s["v"] = v
        got = s["v"]
        assert got == v and type(got) is type(v)
    assert type(s.eval("1 + 2")) is int
    assert s.eval("x = 1") is None
    s["names"] = ["a", "b"]
    assert s.eval("len(names)") == 2 and s.eval("names[1]") == "b"
    assert np.array_equal(masq.eval("x * 2", x=[1, 2, 3]), [2, 4, 6])
    assert masq.eval("sum(x)", x=np.float32([1.5, 2.5])).dtype == np.float32


def test_lists_out():
    s = masq.State()
    assert s.eval('["a", "b"]') == ["a", "b"]
    s["names"] = ["p", "q"]
    assert s["names"] == ["p", "q"]
    r = s.eval('[ones(2), [1, "x"], zeros(3)]')  # not one tensor: a list of items
    assert isinstance(r, list) and len(r) == 3 and r[1] == [1, "x"]
    assert r[0].tolist() == [1.0, 1.0] and r[2].shape == (3,)
    assert s.eval("[]").shape == (0,)  # an empty list of numbers: an empty tensor
    assert s.eval("[1, 2]").tolist() == [1, 2]  # a list of numbers is a tensor
    s.eval("fn f(x) = x")
    with pytest.raises(TypeError, match="list item has no Python form"):
        s.eval("[f]")
    with pytest.raises(TypeError, match="has no Python form"):
        s["f"]


def test_storage_dtypes_stay_narrow_and_zero_copy():
    # masq stores int8/16/32, uint8 and float16 at their size: no widening
    # either way, and the numpy buffer is used in place
    for dt in (np.int8, np.int16, np.int32, np.uint8, np.float16):
        s = masq.State()
        a = np.arange(4, dtype=dt)
        s["a"] = a
        assert s.eval("dtype(a)") == np.dtype(dt).name
        a[0] = 9
        assert s.eval("a").tolist()[0] == 9
        r = s.eval("a * 2")  # torch's promotion keeps the dtype
        assert r.dtype == dt and r.tolist() == [18, 2, 4, 6]
    assert masq.eval("sum(h)", h=np.array([1.5, 2.0], dtype=np.float16)) == np.float16(3.5)
    with pytest.raises(TypeError, match="numpy has no bfloat16"):
        masq.eval("to(tensor([1.0]), bfloat16)")


def test_other_dtypes_are_converted():
    assert masq.eval("x", x=np.array([1, 2], dtype=np.uint16)).dtype == np.int64
    assert masq.eval("x", x=np.array([1, 2], dtype=np.uint32)).dtype == np.int64
    big = np.array([1.5, -2.0], dtype=">f8")  # big-endian: converted to native
    assert masq.eval("x * 2", x=big).tolist() == [3.0, -4.0]
    assert masq.eval("sum(x)", x=np.array([1, 2], dtype=">i4")) == 3
    with pytest.raises(TypeError, match="no dtype"):
        masq.eval("x", x=np.array([1 + 2j]))
    with pytest.raises(TypeError, match="no dtype"):
        masq.eval("x", x=np.array([1], dtype=np.uint64))


def test_layouts():
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    for v in [a.T, a[:, ::2], a[::-1], a[1:3, 2:5], np.broadcast_to(a[0], (3, 6)), a[:0]]:
        assert np.array_equal(masq.eval("x", x=v), v)
    assert masq.eval("sum(x)", x=a.T) == a.sum()


def test_zero_copy_in():
    s = masq.State()
    a = np.zeros(5, dtype=np.float32)
    s["a"] = a
    a[2] = 7  # the host may change its buffer between calls: masq sees it
    assert s.eval("a[2]") == 7
    t = a.T[::2]  # a strided view wraps in place too
    s["t"] = t
    a[4] = 9
    assert s.eval("t[2]") == 9
    m = ma.array(np.zeros(3), mask=[False, False, True])
    s["m"] = m
    m.data[0] = 5  # the data is shared; the mask was turned into a copy
    assert s.eval("m[0]") == 5


def test_zero_copy_out():
    s = masq.State()
    a = np.arange(6, dtype=np.int64)
    s["a"] = a
    r = s["a"]
    assert np.shares_memory(r, a)  # the same memory, out again
    assert not r.flags.writeable  # masq's tensors are immutable
    with pytest.raises(ValueError):
        r[0] = 1
    assert np.shares_memory(s.eval("c = a * 2\nc"), s["c"])  # a result is viewed, not copied


def test_buffer_outlives_python_reference():
    s = masq.State()
    s["a"] = np.arange(1000, dtype=np.float64)  # masq holds the only reference
    import gc
    gc.collect()
    assert s.eval("sum(a)") == 499500.0


def test_call():
    s = masq.State()
    s.eval("fn scale(x, k) = x * k")
    assert np.array_equal(s.call("scale", np.array([1.0, 2.0]), 3), [3.0, 6.0])
    r = s.call("softmax", ma.array([1.0, 2.0, 9.0], mask=[False, False, True]), 0)
    assert r.mask.tolist() == [False, False, True]
    assert r[1] == pytest.approx(0.7310585786)
    with pytest.raises(masq.Error, match="no function named"):
        s.call("nope")
