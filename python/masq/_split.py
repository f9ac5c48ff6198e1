"""What masq.dask can split into chunks, read from masq source.

masq.dask runs an expression on each chunk of a dask array only when that
is the same as running it on the whole array: an elementwise expression
(operators and elementwise builtins of the arrays, numbers and constants),
or one reduction (or softmax, argmax, norm, cumsum, median, quantile) at
the top level of such an expression, along literal dims (`mean(x * 2, 1)`),
which splits into partial aggregates, or one matrix product `a @ b`. The source
is read token by token, conservatively: anything not known to be
elementwise is refused with an error that names it (and, for a function
that works along a dim, the axis to rechunk), never run on chunks where it
would silently give another answer than on the whole array."""
import re

# reduction -> its positional parameters after x (docs/BUILTINS.md)
REDUCTIONS = {
    "sum": ("dim", "keepdim"), "mean": ("dim", "keepdim"), "prod": ("dim", "keepdim"),
    "amax": ("dim", "keepdim"), "amin": ("dim", "keepdim"), "count": ("dim", "keepdim"),
    "any": ("dim", "keepdim"), "all": ("dim", "keepdim"), "logsumexp": ("dim", "keepdim"),
    "var": ("dim", "correction", "keepdim"), "std": ("dim", "correction", "keepdim"),
}

# builtins whose result at an entry depends only on the arguments' entries there
ELEMENTWISE = frozenset("""
abs exp exp2 expm1 log log2 log10 log1p sqrt rsqrt square sin cos tan asin acos atan sinh cosh tanh
sigmoid relu relu6 floor ceil trunc round sign neg negative positive reciprocal frac clamp where maximum
minimum fmax fmin pow atan2 fmod remainder isnan isinf isfinite logaddexp logaddexp2 hypot nextafter
copysign softplus gelu silu mish elu selu leaky_relu hardtanh hardsigmoid hardswish logsigmoid erf erfc
erfinv lgamma digamma sinc logit xlogy signbit deg2rad nan_to_num logical_not logical_and logical_or
masked as_masked masked_tensor as_masked_tensor get_data get_mask to_tensor to
""".split())

CONSTANTS = frozenset("""
true false none nan inf pi bool int8 int16 int32 int64 uint8 float16 bfloat16 float32 float64
""".split())

# masq's words that make an expression something other than elementwise
WORDS = frozenset("not and or in if else for while fn return let import try catch".split())

# builtins that work along a dim: (its position among the arguments, its default)
ALONG_DIM = {
    "softmax": (1, None), "log_softmax": (1, None), "softmin": (1, None), "cumsum": (1, None),
    "cumprod": (1, None), "cummax": (1, None), "cummin": (1, None), "logcumsumexp": (1, None),
    "normalize": (2, "1"), "sort": (1, "-1"), "argsort": (1, "-1"), "topk": (2, "-1"),
    "argmax": (1, None), "argmin": (1, None), "median": (1, None), "max": (1, None), "min": (1, None),
    "kthvalue": (2, "-1"), "quantile": (2, None), "norm": (2, None), "diff": (2, "-1"),
}

_TOKEN = re.compile(r"""\s*(?:
    (?P<num>(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op>\*\*|//|<=|>=|==|!=|<<|>>|[-+*/%<>&|^~(),=\[\]@.:])
  )""", re.VERBOSE)


class Unsupported(ValueError):
    """masq.dask cannot split this source into chunks (the message says why)."""


Unsupported.__module__ = "masq.dask"  # where users meet it (and where a worker's pickle finds it)


def tokens(source):
    if "\n" in source.strip() or ";" in source or "#" in source:
        raise Unsupported("masq.dask.eval takes one expression (no statements, ';' or comments); "
                          "define functions in the expression's place with map_blocks")
    out, pos, text = [], 0, source.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Unsupported(f"masq.dask cannot split {text[pos:].strip()[:20]!r} (strings and other "
                              "literals are not elementwise expressions of arrays)")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _closing(toks, i):
    """Index of the bracket that closes toks[i]."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][1] in "([":
            depth += 1
        elif toks[j][1] in ")]":
            depth -= 1
            if depth == 0:
                return j
    raise Unsupported("masq.dask: unbalanced brackets")


def _split_args(toks):
    """Top-level comma-separated arguments of a call's inside."""
    args, cur, depth = [], [], 0
    for t in toks:
        if t[1] in "([":
            depth += 1
        elif t[1] in ")]":
            depth -= 1
        if t[1] == "," and depth == 0:
            args.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        args.append(cur)
    return args


def _text(toks):
    return " ".join(t[1] for t in toks)


def _along_dim_error(fn, toks, i):
    pos, default = ALONG_DIM[fn]
    j = _closing(toks, i + 1)
    args = _split_args(toks[i + 2:j])
    dim = None
    for a in args[1:]:
        if len(a) > 2 and a[0][1] == "dim" and a[1][1] == "=":
            dim = _text(a[2:])
    if dim is None and len(args) > pos and not (len(args[pos]) > 1 and args[pos][1][1] == "="):
        dim = _text(args[pos])
    dim = dim or default
    where = f"along dim {dim}" if dim else "along its dims"
    how = (f"rechunk that axis into one chunk (x.rechunk({{{dim}: -1}})) and run it with map_blocks"
           if dim and dim not in ("none",) else "rechunk into one chunk along the dims it reads")
    return Unsupported(f"masq.dask cannot split {fn}(...): it works {where}, across chunks; {how}")


def check_elementwise(toks, names):
    """Raises Unsupported unless toks are an elementwise expression of
    names (arrays and numbers), numbers and constants; returns the names used."""
    used, calls = set(), []  # calls: for each open bracket, whether it is a call's
    for i, (kind, text) in enumerate(toks):
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        prev = toks[i - 1][1] if i else ""
        if text == "(":
            calls.append(i > 0 and toks[i - 1][0] == "name")
        elif text == ")" and calls:
            calls.pop()
        if kind == "op":
            if text in ("[", "]", ":"):
                raise Unsupported("masq.dask cannot split indexing, slices or list literals: the chunks "
                                  "are not the whole array (select with dask before masq.dask.eval)")
            if text == "@":
                raise Unsupported("masq.dask cannot split a matrix product (@): it contracts across chunks")
            if text == ".":
                raise Unsupported("masq.dask reads no method syntax (x.f()): write f(x)")
            if text == "=" and not (i >= 2 and toks[i - 1][0] == "name" and toks[i - 2][1] in ("(", ",")
                                    and calls and calls[-1]):
                raise Unsupported("masq.dask.eval takes one expression, not an assignment")
            continue
        if kind == "num":
            continue
        if nxt == "=" and prev in ("(", ",") and calls and calls[-1]:
            continue  # a keyword argument's name
        if text in WORDS:
            raise Unsupported(f"masq.dask cannot split '{text}': truth tests, and/or/not/in and statements are "
                              "not elementwise (write logical_not, &, |, where)")
        if nxt == "(":
            if text in ELEMENTWISE:
                continue
            if text in REDUCTIONS:
                raise Unsupported(f"masq.dask splits one reduction at the top of the expression "
                                  f"({text}(x * 2, 1)), not {text}(...) inside one: compute it with its own "
                                  "masq.dask.eval first")
            if text in ALONG_DIM:
                raise _along_dim_error(text, toks, i)
            raise Unsupported(f"masq.dask cannot split {text}(...): it is not known to be elementwise "
                              "(run it with map_blocks on chunks that hold what it reads)")
        if text in names:
            used.add(text)
        elif text not in CONSTANTS:
            raise Unsupported(f"masq.dask.eval: {text!r} is not one of its arrays or numbers "
                              f"({', '.join(sorted(names)) or 'none given'}), nor a constant")
    return used


def _literal_dims(toks):
    t = [x[1] for x in toks]
    if t in (["none"], ["(", ")"], ["[", "]"]):
        return None
    if t and t[0] in "([" and t[-1] in ")]":
        t = [x for x in t[1:-1] if x != ","]
        items, k = [], 0
        while k < len(t):
            neg = t[k] == "-"
            k += neg
            if k >= len(t) or not t[k].isdigit():
                raise Unsupported(f"masq.dask needs literal dims, not {_text(toks)}")
            items.append(-int(t[k]) if neg else int(t[k]))
            k += 1
        return tuple(items)
    if t and t[-1].isdigit() and (len(t) == 1 or t[:-1] == ["-"]):
        return (int("".join(t)),)
    raise Unsupported(f"masq.dask needs literal dims (an int, a list of ints or none), not {_text(toks)}")


def _literal(param, toks):
    t = _text(toks)
    if param == "keepdim":
        if t not in ("true", "false"):
            raise Unsupported(f"masq.dask needs keepdim=true or false, not {t}")
        return t == "true"
    if param in ("p", "q"):
        return _number(param, toks)
    if param == "correction":
        if t == "none":
            return 0
        try:
            return float(t.replace(" ", ""))
        except ValueError:
            raise Unsupported(f"masq.dask needs a literal correction, not {t}") from None
    return _literal_dims(toks)


# normalizations along one dim, split in two passes (a logsumexp, then each entry)
NORMALIZERS = {"softmax": ("dim",), "log_softmax": ("dim",), "softmin": ("dim",)}
# the others along a dim that split (masq/_along.py), and their parameters
ALONG = {"argmax": ("dim", "keepdim"), "argmin": ("dim", "keepdim"), "norm": ("p", "dim", "keepdim"),
         "cumsum": ("dim",), "median": ("dim", "keepdim"), "quantile": ("q", "dim", "keepdim")}
ONE_DIM = {"softmax", "log_softmax", "softmin", "cumsum"}  # these need one literal dim
AT_MOST_ONE_DIM = {"argmax", "argmin", "median", "quantile"}  # one dim, or none for all


def _number(what, toks):
    t = _text(toks).replace(" ", "")
    try:
        return float(t)
    except ValueError:
        raise Unsupported(f"masq.dask needs a literal {what} (a number, inf or -inf), not {_text(toks)}") from None


def _atom(toks):
    """toks is one operand of @ on its own: a name, a call or a bracketed
    expression (so that splitting at the @ keeps masq's precedence)."""
    if len(toks) == 1 and toks[0][0] == "name":
        return True
    start = 1 if toks and toks[0][0] == "name" else 0
    return (len(toks) > start + 1 and toks[start][1] == "(" and _closing(toks, start) == len(toks) - 1)


def _matmul(toks, names):
    """The operands of a matrix product at the top (a @ b, matmul(a, b)), or None."""
    if toks[0][1] == "matmul" and len(toks) > 2 and toks[1][1] == "(" and _closing(toks, 1) == len(toks) - 1:
        args = _split_args(toks[2:-1])
        if len(args) != 2 or any(len(a) > 1 and a[1][1] == "=" for a in args):
            raise Unsupported("masq.dask: matmul takes two tensors, positional")
    else:
        depth, at = 0, []
        for i, t in enumerate(toks):
            depth += t[1] in "([" and t[0] == "op"
            depth -= t[1] in ")]" and t[0] == "op"
            if t[1] == "@" and depth == 0:
                at.append(i)
        if not at:
            return None
        args = [toks[:at[0]], toks[at[0] + 1:]]
        if len(at) > 1 or not all(_atom(a) for a in args):
            raise Unsupported("masq.dask splits one matrix product a @ b at the top of the expression, "
                              "each side a name, a call or in brackets")
    used = check_elementwise(args[0], names) | check_elementwise(args[1], names)
    return "matmul", {}, (_text(args[0]), _text(args[1])), used


def plan(source, names):
    """(the function at the top or None, its options, the elementwise
    source (for matmul: both operands'), the names it uses)."""
    toks = tokens(source)
    if not toks:
        raise Unsupported("masq.dask.eval: empty source")
    fn = toks[0][1]
    mm = _matmul(toks, names)
    if mm:
        return mm
    if (toks[0][0] == "name" and (fn in REDUCTIONS or fn in NORMALIZERS or fn in ALONG) and len(toks) > 2
            and toks[1][1] == "(" and _closing(toks, 1) == len(toks) - 1):
        args = _split_args(toks[2:-1])
        if not args or (len(args[0]) > 1 and args[0][1][1] == "="):
            raise Unsupported(f"masq.dask: {fn} needs its tensor as the first positional argument")
        opts = {"dim": None, "keepdim": False, "correction": 0, "p": 2.0, "q": None}
        params = REDUCTIONS.get(fn) or NORMALIZERS.get(fn) or ALONG[fn]
        for k, a in enumerate(args[1:]):
            if len(a) > 2 and a[0][0] == "name" and a[1][1] == "=":
                param, val = a[0][1], a[2:]
            elif k < len(params):
                param, val = params[k], a
            else:
                raise Unsupported(f"masq.dask: too many arguments to {fn}")
            if param not in params:
                raise Unsupported(f"masq.dask: {fn}'s {param}= is not supported across chunks "
                                  f"(it takes {', '.join(params)})")
            opts[param] = _literal(param, val)
        if fn in ONE_DIM and (opts["dim"] is None or len(opts["dim"]) != 1):
            raise Unsupported(f"masq.dask: {fn} needs one literal dim")
        if fn in AT_MOST_ONE_DIM and opts["dim"] is not None and len(opts["dim"]) != 1:
            raise Unsupported(f"masq.dask: {fn} takes one literal dim (or none, for all)")
        if fn == "quantile" and opts["q"] is None:
            raise Unsupported("masq.dask: quantile needs a literal q (a number)")
        used = check_elementwise(args[0], names)
        return fn, opts, _text(args[0]), used
    return None, {}, source.strip(), check_elementwise(toks, names)
