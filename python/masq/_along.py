"""masq.dask's functions along a chunked dim that are not one tree
reduction of masq's own: argmax/argmin (each chunk's winner and its index
in the whole array), norm (a reduction of |x|**p), cumsum (each chunk's
totals, then its running sum plus what the chunks before it add), a matrix
product over a chunked contraction axis (a sum of the chunks' products),
and median/quantile (the axis gathered into one chunk: exact, as on the
whole array). Each gives what masq.eval gives on the whole array: masks,
ties, NaN and dtypes alike."""
import functools
import re

import dask.array as da
import numpy as np

import masq
import masq.dask as md


def _masked_like(ref, data, mask):
    """data with mask when ref (masq's result it came from) is masked."""
    return np.ma.array(data, mask=mask) if isinstance(ref, np.ma.MaskedArray) else data


# --- argmax, argmin --------------------------------------------------------------
# A part of a slice: its winner's value v and index g in the whole array
# (flat for dim none), both masked where the slice has no valid entry. Merged:
# the winner of the values by masq's own argmax (NaN wins, as on the whole
# array), then, among the parts whose value equals it, the least index, which
# is where masq on the whole array stops first.

def _arg_chunk(block, fn, dim, shape, block_info=None):
    loc = [s for s, _ in block_info[0]["array-location"]]
    keep = ", keepdim=true" if dim is None else f", {dim}, keepdim=true"
    i = md._run(f"_p_i = {fn}(_e{keep})", {"_e": block}, ["_p_i"])[0]
    data, at = np.ma.getdata(block), np.ma.filled(i, 0)
    if dim is None:  # the flat index within the block, made the whole array's
        v = data.reshape(-1)[at.reshape(-1)].reshape(at.shape)
        pos = np.unravel_index(at.reshape(-1), block.shape)
        g = np.ravel_multi_index([p + o for p, o in zip(pos, loc)], shape).reshape(at.shape)
    else:
        v, g = np.take_along_axis(data, at, dim), at + loc[dim]
    m = np.ma.getmaskarray(i)
    return {"v": _masked_like(i, v, m), "g": _masked_like(i, g.astype(np.int64), m)}


def _arg_merge(parts, axis, keepdims, fn, dim):
    p = md._fields(parts, sorted(axis))
    v, g = p["v"], p["g"]
    if dim is None:  # parts side by side along every dim: one row of them
        v, g = v.reshape(1, -1), g.reshape(1, -1)
    d = 1 if dim is None else dim
    k = md._run(f"_p_k = {fn}(_v, {d}, keepdim=true)", {"_v": v}, ["_p_k"])[0]
    vd = np.ma.getdata(v)
    best = np.take_along_axis(vd, np.ma.filled(k, 0), d)
    equal = vd == best
    if vd.dtype.kind == "f":
        equal |= np.isnan(vd) & np.isnan(best)
    tie = ~np.ma.getmaskarray(v) & equal
    least = np.where(tie, np.ma.getdata(g), np.iinfo(np.int64).max).min(axis=d, keepdims=True)
    m = np.ma.getmaskarray(k)
    if dim is None:
        best, least, m = (a.reshape((1,) * len(axis)) for a in (best, least, m))
    return {"v": _masked_like(k, best, m), "g": _masked_like(k, least, m)}


def _arg_final(parts, axis, keepdims, fn, dim):
    g = _arg_merge(parts, axis, True, fn, dim)["g"]
    g = g if keepdims else g.reshape([n for i, n in enumerate(g.shape) if i not in axis])
    return md._number(g) if g.ndim == 0 else g


def _pass(parts, axis, keepdims, computing_meta=False):
    return parts


def arg_best(fn, e, sample, axis, opts):
    dim = None if opts["dim"] is None else axis[0]
    keepdim = opts["keepdim"]
    whole = masq.eval(f"{fn}(_e" + ("" if dim is None else f", {dim}") + ", keepdim=true)", _e=sample)
    parts = e.map_blocks(_arg_chunk, fn=fn, dim=dim, shape=e.shape, dtype=e.dtype, meta=e._meta)
    meta = md._meta(whole, e.ndim if keepdim else e.ndim - len(axis))
    return da.reduction(parts, _pass, functools.partial(_arg_final, fn=fn, dim=dim),
                        combine=functools.partial(_arg_merge, fn=fn, dim=dim), axis=axis, keepdims=keepdim,
                        dtype=meta.dtype, concatenate=False, meta=meta, name=f"masq-{fn}")


# --- norm --------------------------------------------------------------------------
# As masq's mq_norm: x read in the result's float dtype; p = 1, 2 sum |x|, x**2
# in float64; p = 0 counts the nonzero entries, +-inf take amax/amin of |x|,
# any other p sums |x|**p computed in the result's dtype.

def norm(fn, e, sample, axis, opts):
    p, keep = opts["p"], opts["keepdim"]
    if p != p:
        raise md.Unsupported("masq.dask: norm's p must be a number, not nan")
    whole = masq.eval(f"norm(_e, {p!r}, {list(axis)}, keepdim=true)", _e=sample)
    res = np.asarray(whole).dtype
    x = f"to(_e, {res})"
    if p == 1:
        red, src, post = "sum", f"to(abs({x}), float64)", "_p_R"
    elif p == 2:
        red, src, post = "sum", f"to({x}, float64) ** 2", "sqrt(_p_R)"
    elif p == 0:
        red, src, post = "sum", f"{x} != 0", "_p_R"
    elif np.isinf(p):
        red, src, post = "amax" if p > 0 else "amin", f"abs({x})", "_p_R"
    else:
        red, src, post = "sum", f"to(abs({x}) ** {p!r}, float64)", f"to(_p_R, {res}) ** {1 / p!r}"
    t, ts = md._elementwise(src, {"_e": e}, {}, {"_e"})
    ts = np.asarray(ts) if not isinstance(ts, np.ndarray) else ts
    return md._reduce(red, t, ts, axis, keep, out_dtype=str(res), post=post)


# --- cumsum ------------------------------------------------------------------------
# Each chunk's totals along the dim (0 where nothing is valid), their running
# sum over the chunks before each one, then each chunk's own cumsum plus that:
# ints in int64, floats in float64 (masq's float32 cumsum adds in double too),
# rounded once to masq's dtype; masked entries add nothing and stay masked.

def _cum_totals(block, dim, acc):
    t = md._run(f"_p_t = sum(to(_e, {acc}), {dim}, keepdim=true)", {"_e": block}, ["_p_t"])[0]
    return np.ma.filled(t, 0)


def _cum_block(block, before, dim, acc, res):
    return md._run(f"_p_r = to(cumsum(to(_e, {acc}), {dim}) + _o, {res})", {"_e": block, "_o": before},
                   ["_p_r"])[0]


def cumsum(fn, e, sample, axis, opts):
    dim = axis[0]
    res = np.asarray(masq.eval(f"cumsum(_e, {dim})", _e=sample)).dtype
    acc = "float64" if res.kind in "fc" else "int64"
    one = tuple((1,) * len(c) if i == dim else c for i, c in enumerate(e.chunks))
    totals = e.map_blocks(_cum_totals, dim=dim, acc=acc, chunks=one, dtype=acc,
                          meta=np.empty((0,) * e.ndim, acc))
    upto = da.cumsum(totals, axis=dim)
    at = [slice(None)] * e.ndim
    at[dim] = slice(0, -1)
    zero = da.zeros([1 if i == dim else n for i, n in enumerate(e.shape)], dtype=acc,
                    chunks=[(1,) if i == dim else c for i, c in enumerate(e.chunks)])
    before = da.concatenate([zero, upto[tuple(at)]], axis=dim).rechunk(one)  # what the chunks before add
    meta = md._meta(masq.eval(f"cumsum(_e, {dim})", _e=sample), e.ndim)
    ind = tuple(range(e.ndim))
    return da.blockwise(_cum_block, ind, e, ind, before, ind, dim=dim, acc=acc, res=str(res), dtype=res,
                        meta=meta, align_arrays=False, token="masq-cumsum")


# --- median, quantile ----------------------------------------------------------------
# No exact split into parts: the dim is gathered into one chunk (dask's
# rechunk; each task then holds the whole dim of its chunk of the others).

def _order_stat(block, call):
    return md._run(f"_p_r = {call}", {"_e": block}, ["_p_r"])[0]


def order_stat(fn, e, sample, axis, opts):
    q = f"{opts['q']!r}, " if fn == "quantile" else ""
    dim = None if opts["dim"] is None else axis[0]
    call = f"{fn}(_e, {q}" + ("" if dim is None else f"{dim}, ") + "keepdim=true)"
    whole = masq.eval(call, _e=sample)
    meta = md._meta(whole, e.ndim)
    gathered = e.rechunk({d: -1 for d in axis})
    r = gathered.map_blocks(_order_stat, call=call, chunks=tuple((1,) if i in axis else c
                                                                  for i, c in enumerate(gathered.chunks)),
                            dtype=meta.dtype, meta=meta)
    if opts["keepdim"]:
        return r
    return r.map_blocks(_squeeze, axis=axis, drop_axis=list(axis), dtype=meta.dtype,
                        meta=md._meta(whole, e.ndim - len(axis)))


def _squeeze(r, axis):
    r = r.reshape([n for i, n in enumerate(r.shape) if i not in axis])
    return md._number(r) if r.ndim == 0 else r


# --- matmul ----------------------------------------------------------------------------
# a @ b of 2-d arrays: each pair of chunks along the contraction axis
# multiplied by masq, the products summed by masq (an entry is valid where
# some chunk's is: where some valid pair contributes, matmul's rule), ints
# in int64, floats in float64, rounded once.

def _mm_block(a_blocks, b_blocks, res, acc):
    values = {}
    for k, (a, b) in enumerate(zip(a_blocks, b_blocks)):
        values[f"_a{k}"], values[f"_b{k}"] = a, b
    prods = ", ".join(f"to(_a{k} @ _b{k}, {acc})" for k in range(len(a_blocks)))
    merge = "any" if res == "bool" else "sum"
    return md._run(f"_p_r = to({merge}(stack([{prods}]), 0), {res})", values, ["_p_r"])[0]


def matmul(sides, darrays, scalars, used):
    ops = []
    for src in sides:
        if src in darrays:
            ops.append((darrays[src], md._sample(darrays[src])))
        else:
            names = used & set(re.findall(r"[A-Za-z_]\w*", src))
            ops.append(md._elementwise(src, darrays, scalars, names))
    (a, sa), (b, sb) = ops
    if a.ndim != 2 or b.ndim != 2:
        raise md.Unsupported("masq.dask splits a matrix product of two 2-d arrays; for others, rechunk the "
                             "contraction axis into one chunk and run it with map_blocks")
    if a.shape[1] != b.shape[0]:
        raise md.Unsupported(f"masq.dask: {sides[0]} @ {sides[1]}: {sides[0]} has {a.shape[1]} columns, "
                             f"{sides[1]} {b.shape[0]} rows")
    whole = masq.eval("_a @ _b", _a=sa, _b=sb)
    res = np.asarray(whole).dtype
    acc = "bool" if res == bool else "float64" if res.kind in "fc" else "int64"
    if b.chunks[0] != a.chunks[1]:
        b = b.rechunk({0: a.chunks[1]})
    return da.blockwise(_mm_block, "ij", a, "ik", b, "kj", concatenate=False, res=str(res), acc=acc,
                        dtype=res, meta=md._meta(whole, 2), align_arrays=False, token="masq-matmul")


SPLIT = {"argmax": arg_best, "argmin": arg_best, "norm": norm, "cumsum": cumsum, "median": order_stat,
         "quantile": order_stat}
