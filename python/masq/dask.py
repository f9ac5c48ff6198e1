"""masq on dask arrays: masq.dask.eval(source, **arrays) (docs/PYTHON.md).

Takes dask arrays (of numpy.ma chunks or plain ones; numpy arrays and
numbers too) and returns a lazy dask array whose compute() is what
masq.eval(source, **whole arrays) gives:

- an elementwise expression, broadcasting as masq does, runs on each
  block (dask's blockwise);
- one reduction at the top of an elementwise expression (sum, mean, prod,
  amax, amin, count, any, all, logsumexp, var, std; dims, keepdim and
  correction as literals) along any dims, chunked or not, runs as
  masq-computed partial aggregates combined in a tree (dask's reduction):
  counts, sums in float64, and for var/std each part's mean and sum of
  squared deviations, merged with Chan's parallel formula;
- softmax, log_softmax or softmin at the top, along one literal dim, in two
  passes: each slice's largest entry and sum of exponentials (a reduction
  as above), then each entry;
- argmax/argmin, norm, cumsum, median/quantile at the top, and a matrix
  product a @ b of 2-d arrays over a chunked contraction axis
  (masq/_along.py says how each splits).

Anything else raises masq.dask.Unsupported naming what (and the axis to
rechunk). What travels to the workers is source text and chunks: each
worker thread makes its own masq.State the first time it needs one, and
none is ever pickled."""
import functools
import os
import re
import threading

import dask.array as da
import numpy as np

import masq
from masq._split import Unsupported, plan

__all__ = ["eval", "state", "Unsupported"]

_local = threading.local()
_forked = []  # States a fork copied into this process: their threads are the parent's; never freed
_made = []  # (pid, thread) of each State made here, for tests and the curious


def state():
    """This thread's masq.State, made on first use (one per process and thread)."""
    s = getattr(_local, "state", None)
    if s is None or _local.pid != os.getpid():
        if s is not None:
            _forked.append(s)
        s = _local.state = masq.State()
        _local.pid = os.getpid()
        _made.append((_local.pid, threading.get_ident()))
    return s


def _with_mask(v):
    """v, a numpy.ma array whose mask numpy shrank to nomask (np.ma.concatenate
    does when every entry is valid, as dask's does merging parts or blocks)
    given an all-False mask again: masq reads a nomask array as plain and
    gives a plain result, where the same data with its mask, as masq.eval
    sees the whole array, gives a masked one."""
    if isinstance(v, np.ma.MaskedArray) and v.mask is np.ma.nomask:
        return np.ma.array(v.data, mask=np.zeros(v.shape, bool))
    return v


def _run(source, values, outs):
    """Runs source, statements that assign globals, with values bound in
    this thread's State; the globals named in outs. Every global it bound
    or assigned is dropped after (none is an expression statement, which
    `_` would keep), and the buffers the State keeps for reuse are given
    back (trim), so between runs the State holds no chunk, part or
    temporary: nothing dask cannot see. (A block a run returns is masq's
    memory until dask drops it; the next run on this thread gives it back:
    a trim costs a few microseconds.)"""
    s = state()
    s.trim()
    for k, v in values.items():
        s[k] = _with_mask(v)
    try:
        s.eval(source, name="<masq.dask>")
        return [s[k] for k in outs]
    finally:
        for k in list(values) + re.findall(r"^(\w+) = ", source, re.M):
            del s[k]
        s.trim()


def _blockwise_fn(*blocks, source, names, scalars):
    values = dict(zip(names, blocks), **scalars)
    r = _run("_p_r = " + source, values, ["_p_r"])[0]
    want = np.broadcast_shapes(*(np.shape(b) for b in blocks))
    if r is np.ma.masked:
        r = np.ma.masked_all(want)
    r = r if isinstance(r, np.ndarray) else np.asarray(r)
    if r.shape != want:
        raise Unsupported(f"masq.dask: {source!r} gave shape {r.shape} on a block of shape {want}: "
                          "it is not elementwise")
    return r


# The partial aggregates of each reduction, in masq: (the part's fields from
# the chunk {E}, the fields merged from parts concatenated along dims {D},
# the result; {C} is var's correction), and what each step runs first. {E}
# is promoted to float64 where the whole array's kernels sum in a wider
# type; the result is cast back to the dtype masq gives on the whole array.
# Counts read the chunk _e itself ({E} has its mask): no conversion to count.
_KEEP = "{D}, keepdim=true"
_MEAN = ({"n": "count(_e, " + _KEEP + ")", "s": "sum({E}, " + _KEEP + ")"},
         {"n": "sum(n, " + _KEEP + ")", "s": "sum(s, " + _KEEP + ")"})
# Chan et al.'s parallel variance, each part's mean carried as m + c (c the
# mean of the part's deviations from m: what rounding m lost), so that the
# means' distances from the merged mean, (m - mm) + c, keep their digits
# when the data sit far from 0. A part: its count n, mean m + c, and q the
# sum of squared deviations from that mean; merged: the counts, the mean,
# and the q's plus each part's count times its mean's squared distance.
_VAR = ({"n": "_k", "m": "_m", "c": "_c", "q": "sum(_d * _d, " + _KEEP + ") - _k * _c ** 2"},
        {"n": "_n", "m": "_mm", "c": "_cc", "q": "sum(q, " + _KEEP + ") + sum(n * (_dd - _cc) ** 2, " + _KEEP + ")"})
_FIRST = {"var": ("_x = {E}\n_m = mean(_x, " + _KEEP + ")\n_d = _x - _m\n_c = mean(_d, " + _KEEP + ")\n"
                  "_k = count(_e, " + _KEEP + ")",
                  "_n = sum(n, " + _KEEP + ")\n_mm = sum(n * m, " + _KEEP + ") / _n\n_dd = (m - _mm) + c\n"
                  "_cc = sum(n * _dd, " + _KEEP + ") / _n")}
_FIRST["std"] = _FIRST["var"]
_SPECS = {
    "count": ({"n": "count(_e, " + _KEEP + ")"}, {"n": "sum(n, " + _KEEP + ")"}, "n"),
    "mean": _MEAN + ("s / n",),
    "var": _VAR + ("q / maximum(n - {C}, 0)",),
    "std": _VAR + ("sqrt(q / maximum(n - {C}, 0))",),
}
# softmax's statistics of a slice: its largest entry m and s, the sum of
# exp(entry - m), merged by rescaling each part's s to the larger m; the
# result holds m and log(s) side by side along the dim (two entries), so
# each entry's exp((x - m) - log(s)) keeps its digits however far x is from 0
_SPECS["softmax_stats"] = ({"m": "_mx", "s": "sum(exp({E} - _mx), " + _KEEP + ")"},
                           {"m": "_M", "s": "sum(s * exp(m - _M), " + _KEEP + ")"},
                           "cat([m, log(s)], {D}[0])")
_FIRST["softmax_stats"] = ("_mx = amax({E}, " + _KEEP + ")", "_M = amax(m, " + _KEEP + ")")
for _f in ("sum", "prod", "amax", "amin", "any", "all", "logsumexp"):  # the parts' own reduction merges them
    _SPECS[_f] = ({"r": _f + "({E}, " + _KEEP + ")"}, {"r": _f + "(r, " + _KEEP + ")"}, "r")
_WIDEN = {"sum", "prod", "logsumexp", "mean", "var", "std", "softmax_stats"}  # float parts in float64


def _read_as(fn, sample, whole):
    """How a chunk is read for parts in float64: float data widened; int or
    bool data as masq reads it on the whole array: exactly for sum, prod
    (ints stay ints) and mean (an exact sum, rounded once), made the
    result's float dtype first for var, std and the exponentials (int64
    2**40 and 2**40 + 1 are one float32, so their var is 0 there too)."""
    res = np.asarray(whole).dtype
    if sample.dtype.kind == "f" or (fn == "mean" and res.kind == "f"):
        return "to(_e, float64)"
    return f"to(to(_e, {res}), float64)" if res.kind == "f" else "_e"


def _source(fn, step, dims, e, correction=0):
    """The masq source of one step, and the globals it leaves the fields in."""
    parts, merged, final = _SPECS[fn]
    exprs = {"chunk": parts, "combine": merged, "final": {"R": final}}[step]
    first = {"chunk": 0, "combine": 1}.get(step)
    lines = [_FIRST[fn][first]] if fn in _FIRST and first is not None else []
    lines += [f"_p_{k} = {v}" for k, v in exprs.items()]
    text = "\n".join(lines).format(E=e, D=list(dims), C=correction)
    return text, [f"_p_{k}" for k in exprs]


def _fields(nested, axes):
    """Nested lists of part dicts (one level per reduced axis, as dask's
    tree hands them) concatenated along those axes: one dict."""
    if isinstance(nested, dict):
        return nested
    parts = [_fields(p, axes[1:]) for p in nested]
    out = {}
    for k in parts[0]:
        xs = [p[k] for p in parts]
        cat = np.ma.concatenate if any(isinstance(x, np.ma.MaskedArray) for x in xs) else np.concatenate
        out[k] = cat(xs, axis=axes[0])
    return out


def _chunk(block, axis, keepdims, fn, e, computing_meta=False):
    if computing_meta:  # dask learning the type of the parts: not run on an empty meta array
        return block
    src, outs = _source(fn, "chunk", axis, e)
    return dict(zip(_SPECS[fn][0], _run(src, {"_e": block}, outs)))


def _combine(parts, axis, keepdims, fn, e):
    merged = _fields(parts, sorted(axis))
    src, outs = _source(fn, "combine", axis, e)
    return dict(zip(_SPECS[fn][1], _run(src, merged, outs)))


def _aggregate(parts, axis, keepdims, fn, e, correction, out_dtype, post="_p_R"):
    merged = _combine(parts, axis, True, fn, e)
    src, outs = _source(fn, "final", axis, e, correction)
    r = _run(src + f"\n_p_R = to({post}, {out_dtype})", merged, outs)[0]
    r = r if keepdims else r.reshape([n for i, n in enumerate(r.shape) if i not in axis])
    return _number(r) if r.ndim == 0 else r


def _number(r):
    """A 0-d result as masq.eval gives it: numpy.ma.masked; a Python number
    for float64, int and bool; a numpy scalar for the narrower floats."""
    r = r[()]
    return r if r is np.ma.masked or r.dtype.kind == "f" and r.dtype != np.float64 else r.item()


def _sample(a):
    """A one-entry array with a's dtype, ndim and chunk type, to learn the
    result's dtype and type from masq without computing anything."""
    v = np.ones((1,) * a.ndim, dtype=a.dtype)
    return np.ma.array(v, mask=np.zeros(v.shape, bool)) if isinstance(a._meta, np.ma.MaskedArray) else v


def _meta(r, ndim):
    r = np.asarray(r) if not isinstance(r, np.ndarray) else r
    empty = np.empty((0,) * ndim, dtype=r.dtype)
    return np.ma.masked_array(empty) if isinstance(r, np.ma.MaskedArray) else empty


def _elementwise(source, arrays, scalars, used):
    names = sorted(used)
    args = [arrays[n] for n in names]
    if not args:
        raise Unsupported("masq.dask.eval: the expression uses none of its dask arrays")
    sample = masq.eval(source, **{n: _sample(arrays[n]) for n in names}, **scalars)
    ndim = max(a.ndim for a in args)
    ind = []
    for a in args:
        ind += [a, tuple(range(ndim - a.ndim, ndim))]
    meta = _meta(sample, ndim)
    return da.blockwise(_blockwise_fn, tuple(range(ndim)), *ind, source=source, names=names,
                        scalars=scalars, dtype=meta.dtype, meta=meta), sample


def _dims(dims, ndim):
    if not ndim:
        raise Unsupported("masq.dask: a reduction of a 0-d expression has nothing to split")
    if dims is None:
        return tuple(range(ndim))
    out = []
    for d in dims:
        if not -ndim <= d < ndim:
            raise Unsupported(f"masq.dask: dim {d} is out of range for {ndim} dims")
        out.append(d % ndim)
    if len(set(out)) != len(out):
        raise Unsupported(f"masq.dask: dim {list(dims)} names a dim twice")
    return tuple(sorted(out)) if out else tuple(range(ndim))


def eval(source, **arrays):
    """A lazy dask array: masq.eval(source, **arrays) computed chunk by chunk
    (an elementwise expression, or one reduction or softmax of one). Values may be dask
    arrays, numpy arrays (numpy.ma too) and Python numbers."""
    darrays, scalars = {}, {}
    for k, v in arrays.items():
        if isinstance(v, da.Array):
            darrays[k] = v
        elif isinstance(v, np.ndarray):
            darrays[k] = da.from_array(v, chunks=-1, asarray=False)
        elif isinstance(v, (bool, int, float, np.number, np.bool_)):
            scalars[k] = v.item() if isinstance(v, (np.number, np.bool_)) else v
        else:
            raise TypeError(f"masq.dask.eval: {k} is a {type(v).__name__}; it takes dask arrays, numpy "
                            "arrays and numbers")
    fn, opts, inner, used = plan(source, set(darrays) | set(scalars))
    used = used & set(darrays)
    if fn is None:
        return _elementwise(inner, darrays, scalars, used)[0]
    if fn == "matmul":
        return _along.matmul(inner, darrays, scalars, used)
    if fn == "softmin":  # softmax of the negation
        fn, inner = "softmax", f"-({inner})"
    if inner in darrays:  # the array itself: its chunks go to masq as they are
        e, sample = darrays[inner], _sample(darrays[inner])
    else:
        e, sample = _elementwise(inner, darrays, scalars, used)
    sample = np.asarray(sample) if not isinstance(sample, np.ndarray) else sample
    axis = _dims(opts["dim"], e.ndim)
    if fn in ("softmax", "log_softmax"):
        return _normalize(fn, e, sample, axis)
    if fn in _along.SPLIT:
        return _along.SPLIT[fn](fn, e, sample, axis, opts)
    return _reduce(fn, e, sample, axis, opts["keepdim"], opts["correction"])


def _reduce(fn, e, sample, axis, keepdim, corr=0, out_dtype=None, whole=None, output_size=1, post="_p_R"):
    """fn of e along axis, as masq's partial aggregates merged in dask's
    tree; the dtype masq gives on the whole array (whole: that result on
    the sample), or out_dtype; post: masq source of the result from the
    reduction's (_p_R), before that cast."""
    if whole is None:
        whole = masq.eval(f"{fn}(_e, {list(axis)}, keepdim=true" + (f", correction={corr})" if fn in ("var", "std")
                                                                      else ")"), _e=sample)
    ex = _read_as(fn, sample, whole) if fn in _WIDEN else "_e"
    out_ndim = e.ndim if keepdim else e.ndim - len(axis)
    meta = _meta(whole, out_ndim)
    if out_dtype:
        meta = meta.astype(out_dtype)
    return da.reduction(
        e, functools.partial(_chunk, fn=fn, e=ex),
        functools.partial(_aggregate, fn=fn, e=ex, correction=corr, out_dtype=str(meta.dtype), post=post),
        combine=functools.partial(_combine, fn=fn, e=ex), axis=axis, keepdims=keepdim,
        dtype=meta.dtype, concatenate=False, meta=meta, name=f"masq-{fn}", output_size=output_size)


# softmax and log_softmax along a chunked dim: each slice's statistics (a
# reduction, in float64), then each entry from them and the entry
_NORMALIZE = {"softmax": "exp(({E} - _m) - _ls)", "log_softmax": "({E} - _m) - _ls"}


def _normalize_fn(block, stats, fn, e, axis, out_dtype):
    m, ls = stats.take([0], axis=axis), stats.take([1], axis=axis)
    src = f"_p_r = to({_NORMALIZE[fn].format(E=e)}, {out_dtype})"
    return _run(src, {"_e": block, "_m": m, "_ls": ls}, ["_p_r"])[0]


def _normalize(fn, e, sample, axis):
    whole = masq.eval(f"{fn}(_e, {axis[0]})", _e=sample)
    ex = _read_as(fn, sample, whole)
    stats = _reduce("softmax_stats", e, sample, axis, True, out_dtype="float64", whole=whole, output_size=2)
    meta = _meta(whole, e.ndim)
    ind = tuple(range(e.ndim))
    # the statistics' dim gets an index of its own: each block sees the one
    # block of both entries, whatever e's chunks along it
    sind = tuple(e.ndim if i == axis[0] else i for i in ind)
    return da.blockwise(_normalize_fn, ind, e, ind, stats, sind, fn=fn, e=ex, axis=axis[0],
                        out_dtype=str(meta.dtype), dtype=meta.dtype, meta=meta, concatenate=True)


from masq import _along  # noqa: E402 - at the end: it uses this module's helpers
