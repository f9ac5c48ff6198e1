"""A numpy.ma array bound to a State is a view, mask and all: whatever
Python changes between two calls (the data in place, the mask in place,
a.mask = ..., a[i] = np.ma.masked, a mask added to an array that had none,
one taken away) is what the next eval, call or s["x"] sees. The data is
wrapped in place; the mask, turned into masq's polarity once at the bind,
is turned again before each call (one byte an entry)."""
import numpy as np
import numpy.ma as ma

import masq


def bound(mask=(False, False, False, False)):
    s = masq.State()
    a = ma.array([1.0, 2.0, 4.0, 8.0], mask=list(mask))
    s["a"] = a
    return s, a


def test_data_edited_in_place():
    s, a = bound((False, True, False, False))
    a[0] = 100.0  # a valid entry
    assert s.eval("sum(a)") == 112.0
    a.data[1] = 1000.0  # under the mask: still hidden
    assert s.eval("sum(a)") == 112.0
    assert np.shares_memory(s["a"].data, a.data)  # zero-copy still


def test_masked_entry_assignment():
    s, a = bound()
    assert s.eval("sum(a)") == 15.0
    a[3] = ma.masked
    assert s.eval("sum(a)") == 7.0
    assert s.eval("count(a)") == 3
    assert list(ma.getmaskarray(s["a"])) == [False, False, False, True]


def test_mask_edited_in_place():
    s, a = bound((False, True, False, False))
    a.mask[1] = False
    a.mask[2] = True
    assert s.eval("sum(a)") == 11.0


def test_mask_replaced():
    s, a = bound((False, True, False, False))
    a.mask = [True, False, False, False]
    assert s.eval("sum(a)") == 14.0
    a.mask = ma.nomask  # every entry valid again
    assert s.eval("sum(a)") == 15.0
    a.mask = np.array([False, False, True, True])
    assert s.call("sum", s["a"]) == 3.0


def test_mask_added_to_an_array_without_one():
    s = masq.State()
    a = ma.array([1.0, 2.0, 4.0, 8.0])  # numpy's nomask
    s["a"] = a
    assert s.eval("sum(a)") == 15.0
    a[0] = ma.masked
    assert s.eval("sum(a)") == 14.0
    a[1] = ma.masked  # the mask now exists: edited in place
    assert s.eval("sum(a)") == 12.0


def test_views_and_aliases_see_the_edit_a_reassigned_global_does_not():
    s, a = bound()
    s.eval("b = a\nfirst = a[0:2]\nc = sum(a)")
    a[0] = ma.masked
    assert s.eval("sum(b)") == 14.0  # the same tensor
    assert s.eval("sum(first)") == 2.0  # a view of its memory
    assert s.eval("c") == 15.0  # computed before: keeps what it read
    s.eval("a = [1.0, 1.0]")
    a[1] = ma.masked
    assert s.eval("sum(a)") == 2.0  # the script's own a, untouched


def test_mask_edited_between_calls_of_a_function():
    s, a = bound()
    s.eval("fn total() = sum(a)")
    assert s.call("total") == 15.0
    a[2] = ma.masked
    assert s.call("total") == 11.0


def test_a_copied_array_is_a_snapshot_mask_and_all():
    """An array masq cannot read in place (here uint16, stored as int64) is
    copied when bound: neither its data nor its mask is seen changing."""
    s = masq.State()
    a = ma.array(np.array([1, 2, 4, 8], dtype=np.uint16), mask=[False, False, False, False])
    s["a"] = a
    a[0] = 100
    a[3] = ma.masked
    assert s.eval("sum(a)") == 15
