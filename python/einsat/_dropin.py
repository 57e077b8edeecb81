"""The drop-in API for numpy and opt_einsum code: ``einsum_path``,
``contract``, ``contract_path``, ``contract_expression``, ``get_symbol``,
and the helpers the native ``einsum`` calls (numpy's interleaved operands,
opt_einsum's path optimizer objects).

The contraction path these functions show is the one einsat's planner
chooses (and the optimiser runs) for the operands' sizes; the FLOP counts
are numpy's (``einsum_path``) and opt_einsum's (``contract_path``), counted
along that path.
"""

from decimal import Decimal as _Decimal
from functools import lru_cache as _lru_cache

import numpy as _np

from . import _einsat
from . import OptionError, ShapeError, DTypeError

_BASE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def get_symbol(i):
    """opt_einsum's ``get_symbol``: the index letter number ``i``: the 52
    ASCII letters ``a``-``z``, ``A``-``Z``, then characters from U+00C0
    (``chr(i + 140)``), skipping the surrogates. einsat's specs take all of
    them, so networks of hundreds of indices can be written.

    >>> get_symbol(2), get_symbol(200), get_symbol(20000)
    ('c', 'Ŕ', '京')
    """
    if i < 52:
        return _BASE[i]
    elif i >= 55296:
        return chr(i + 2048)
    else:
        return chr(i + 140)


# ------------------------------------------------------------ interleaved


def _numpy_letter(i):
    """numpy's letter of subscript ``i`` in the interleaved form: 0-25 are
    ``A``-``Z``, 26-51 ``a``-``z``; beyond, opt_einsum's symbols (which
    sort after them, as the numbers do)."""
    if i < 26:
        return chr(ord("A") + i)
    if i < 52:
        return chr(ord("a") + i - 26)
    return get_symbol(i)


def _interleaved(args):
    """numpy's interleaved form ``(A, [0, 1], B, [1, 2], [0, 2])`` (the
    output sublist optional) as ``(spec, operands)``. Subscripts are whole
    numbers >= 0 (numpy's 0-51 and beyond, as opt_einsum allows), any other
    hashable object (opt_einsum), or ``...`` (Ellipsis)."""
    args = list(args)
    if len(args) < 2:
        raise ShapeError(
            "einsum: the interleaved form takes operands each followed by its "
            "subscripts list, e.g. einsum(A, [0, 1], B, [1, 2], [0, 2])"
        )
    n = len(args) // 2
    operands = tuple(args[0 : 2 * n : 2])
    subs = args[1 : 2 * n : 2]
    out = args[-1] if len(args) % 2 == 1 else None
    ints = set()
    others = []
    def index_of(x):
        if isinstance(x, bool) or isinstance(x, str):
            return None
        try:
            return int(x.__index__())
        except Exception:
            return None

    def sublist(s):
        if isinstance(s, (str, bytes)) or not hasattr(s, "__iter__") or getattr(s, "ndim", 1) != 1:
            raise DTypeError(
                "einsum: the spec must be a string, or numpy's interleaved form "
                "(each operand followed by a list of its subscripts: numbers or ...), "
                "not %s" % type(s).__name__
            )
        return list(s)

    subs = [sublist(s) for s in subs]
    out = None if out is None else sublist(out)
    for s in subs + ([out] if out is not None else []):
        for x in s:
            if x is Ellipsis:
                continue
            k = index_of(x)
            if k is not None:
                if k < 0:
                    raise OptionError(
                        "einsum: subscript %d is negative (subscripts are numbers >= 0)" % k
                    )
                ints.add(k)
                continue
            try:
                hash(x)
            except TypeError:
                raise DTypeError("einsum: subscript %r is not a number, ... or a hashable object" % (x,)) from None
            if x not in others:
                others.append(x)
    letters = {}
    for k in ints:
        letters[k] = _numpy_letter(k)
    used = set(letters.values())
    k = 52
    # other objects in their sorted order when they sort (opt_einsum's
    # implicit output), else in order of appearance
    try:
        others = sorted(others)
    except TypeError:
        pass
    for x in others:
        while get_symbol(k) in used:
            k += 1
        letters[("obj", x)] = get_symbol(k)
        used.add(get_symbol(k))
        k += 1

    def term(s):
        t = []
        for x in s:
            if x is Ellipsis:
                t.append("...")
            elif index_of(x) is not None:
                t.append(letters[index_of(x)])
            else:
                t.append(letters[("obj", x)])
        return "".join(t)

    terms = [term(s) for s in subs]
    if out is None:
        # numpy's implicit output: the axes under `...`, then the subscripts
        # that appear once, in increasing order
        all_letters = "".join(terms).replace("...", "")
        once = sorted(c for c in set(all_letters) if all_letters.count(c) == 1)
        out_term = ("..." if any("..." in t for t in terms) else "") + "".join(once)
    else:
        out_term = term(out)
    return ",".join(terms) + "->" + out_term, operands


def _subscripts_note(operands):
    """For an einsum in numpy's interleaved form, the letters its
    subscripts are written as in messages: ``" (in the interleaved form's
    letters: 0 is A, 1 is B)"``; else None."""
    if not operands or isinstance(operands[0], str):
        return None
    try:
        spec, _ = _interleaved(operands)
    except Exception:
        return None
    seen = {}
    lhs, _, rhs = spec.partition("->")
    subs = list(operands[1 : 2 * (len(operands) // 2) : 2])
    if len(operands) % 2 == 1:
        subs.append(operands[-1])
    terms = lhs.split(",") + [rhs]
    for sub, term in zip(subs, terms):
        letters = term.replace("...", "")
        for x, c in zip([x for x in sub if x is not Ellipsis], letters):
            seen.setdefault(c, x)
    if not seen:
        return None
    return " (in the interleaved form's letters: %s)" % ", ".join(
        "%r is %s" % (x, c) for c, x in sorted(seen.items(), key=lambda e: e[0])
    )


def _reraise_interleaved(e, operands):
    """Re-raise the einsat error ``e`` of an einsum of ``operands`` with
    the letters of the interleaved form's subscripts said."""
    from . import Error

    note = _subscripts_note(operands) if isinstance(e, Error) else None
    if note is None:
        raise e
    raise type(e)(e.message + note, e.line, e.column, e.diagnostics) from None


def _registered_path_fn(name):
    """A path function registered with opt_einsum under ``name``
    (``opt_einsum.paths.register_path_fn``), if opt_einsum is installed and
    einsat does not know the name itself; else None."""
    try:
        from opt_einsum import paths
    except ImportError:
        return None
    return paths._PATH_OPTIONS.get(name.lower())


def _custom_path(optimizer, spec, sizes, memory_limit):
    """The path an opt_einsum PathOptimizer (or any function of
    ``(inputs, output, size_dict, memory_limit)``) chooses for ``spec``."""
    lhs, out = spec.split("->")
    inputs = [set(t) for t in lhs.split(",")]
    limit = None if memory_limit is None else int(memory_limit)
    path = optimizer(inputs, set(out), dict(sizes), limit)
    return [tuple(step) for step in path]


# ------------------------------------------------------------ views


def _split_term(t):
    """A term's letters before and after its ``...``, and whether it has
    one; None when the term is not numpy's grammar (the native einsum
    reports it)."""
    before, dots, after = t.partition("...")
    if "." in before or "." in after:
        return None
    for c in before + after:
        if not (c.isascii() and c.isalpha()) and (c.isascii() or c.isspace() or not c.isprintable()):
            return None
    return before, after, bool(dots)


@_lru_cache(maxsize=1024)
def _view_plan(spec, ndim):
    """For a one-operand ``spec`` on an operand of ``ndim`` axes whose
    output only relabels and diagonalises: the label of each operand axis
    and of each output axis (letters; ``('...', k)`` for the axes under
    ``...``); else None (a sum, or a spec that does not fit)."""
    s = spec.replace(" ", "")
    lhs, arrow, rhs = s.partition("->")
    if "," in lhs or "-" in lhs or ">" in lhs or any(c in rhs for c in ",->"):
        return None
    term = _split_term(lhs)
    if term is None:
        return None
    before, after, dots = term
    named = len(before) + len(after)
    if named > ndim or (not dots and named != ndim):
        return None
    ell = ndim - named
    labels = list(before) + [("...", k) for k in range(ell)] + list(after)
    if arrow:
        out = _split_term(rhs)
        if out is None:
            return None
        ob, oa, odots = out
        if (ell and not odots) or len(set(ob + oa)) != len(ob + oa):
            return None
        if any(c not in lhs for c in ob + oa):
            return None
        out_labels = list(ob) + [("...", k) for k in range(ell)] + list(oa)
    else:
        letters = before + after
        once = sorted(c for c in set(letters) if letters.count(c) == 1)
        out_labels = [("...", k) for k in range(ell)] + once
    if any(lab not in out_labels for lab in labels):
        return None  # an index is summed: not a view
    # numpy's diagonal of each repeated index (moved to the last axis),
    # then the output's order
    steps = []
    cur = list(labels)
    while len(set(cur)) < len(cur):
        lab = next(c for c in cur if cur.count(c) > 1)
        p = cur.index(lab)
        q = cur.index(lab, p + 1)
        steps.append((p, q))
        cur = [c for i, c in enumerate(cur) if i not in (p, q)] + [lab]
    return tuple(steps), tuple(cur.index(lab) for lab in out_labels)


def _single_view(operands):
    """numpy's view of a one-operand einsum, or None.

    numpy's ``einsum`` (its ``get_single_op_view``) returns a view of the
    operand, not a copy, when there is one operand, no ``out``, and no
    index is summed: the output only relabels the operand's axes
    (``'ij->ji'``, ``'ij'``, ``'...'``) and takes diagonals of repeated
    indices (``'ii->i'``, ``'iij->ij'``, ``'...ii->...i'``). The view has
    the operand's dtype, is writeable when the operand is, and its
    ``base`` is the operand's; a 0-dimensional result is the scalar
    ``a[()]`` (numpy returns scalars for them). Anything else (a sum, a
    spec or operand that does not fit, repeated axes of different sizes,
    an operand that is not a numpy array) gives None: the native einsum
    computes it or reports the error."""
    n = len(operands)
    if n == 2 and isinstance(operands[0], str):
        spec, a = operands
    elif n in (2, 3) and not isinstance(operands[0], str) and not isinstance(operands[1], str):
        try:
            spec, ops = _interleaved(operands)
        except Exception:
            return None
        a = ops[0]
    else:
        return None
    if not isinstance(a, _np.ndarray) or not isinstance(spec, str) or a.dtype.kind not in "biufc":
        # (object, string, date, ... operands: no view)
        return None
    plan = _view_plan(spec, a.ndim)
    if plan is None:
        return None
    steps, perm = plan
    if type(a) is not _np.ndarray:
        a = a.view(_np.ndarray)
    view = a
    for p, q in steps:
        if view.shape[p] != view.shape[q]:
            return None
        view = view.diagonal(0, p, q)
    view = view.transpose(perm)
    if steps and a.flags.writeable:
        # numpy's diagonals are read-only; einsum's views are writeable
        # whenever the operand is
        view.flags.writeable = True
    if not perm:
        return view[()]
    return view


_ORDERS = ("K", "A", "C", "F", "k", "a", "c", "f")


def _shown(x):
    """``repr(x)``, cut to a bounded excerpt for a message."""
    r = repr(x)
    return r if len(r) <= 60 else r[:40] + "... (%d characters)" % len(r)
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _view_options(
    threads=None, fast_math=False, optimize=None, memory_limit=None, dtype=None, order=None, casting=None
):
    """Check the options of an einsum that returns a view (numpy checks
    ``dtype``, ``order`` and ``casting`` and otherwise ignores them for a
    view; ``optimize`` and ``memory_limit`` it ignores)."""
    import numpy as np

    if threads is not None and (
        isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 1024
    ):
        if not (hasattr(threads, "__index__") and 1 <= threads.__index__() <= 1024):
            raise OptionError(
                "threads must be None (all cores) or a whole number from 1 to 1024, not %s" % _shown(threads)
            )
    if order is not None and order not in _ORDERS:
        raise OptionError("einsum: order=%s: expected 'K', 'A', 'C' or 'F'" % _shown(order))
    if casting is not None and casting not in _CASTINGS:
        raise OptionError(
            "einsum: casting=%s: expected 'no', 'equiv', 'safe', 'same_kind' or 'unsafe'" % _shown(casting)
        )
    if dtype is not None:
        try:
            np.dtype(dtype)
        except TypeError:
            raise DTypeError("einsum: dtype=%s is not a numpy dtype" % _shown(dtype)) from None


# ------------------------------------------------------------ paths


def _size(term, sizes):
    n = 1
    for c in term:
        n *= sizes[c]
    return n


def _flop_count(idx, inner, num_terms, sizes):
    """numpy's ``_flop_count`` (and opt_einsum's ``flop_count``)."""
    factor = max(1, num_terms - 1)
    if inner:
        factor += 1
    return _size(idx, sizes) * factor


def _contractions(inputs, output, sizes, path, order):
    """Walk ``path`` over the terms ``inputs``: per step (positions, removed
    indices, einsum string, remaining terms, union of indices, result
    size). ``order`` is how an intermediate's indices are ordered:
    ``"numpy"`` (by size, then letter) or ``"opt_einsum"`` (as in the
    inputs)."""
    terms = list(inputs)
    sets = [set(t) for t in inputs]
    out_set = set(output)
    steps = []
    for k, step in enumerate(path):
        pos = tuple(sorted(step, reverse=True))
        taken = [sets[p] for p in pos]
        union = set().union(*taken)
        rest = [s for i, s in enumerate(sets) if i not in pos]
        keep = union & out_set.union(*rest) if rest else union & out_set
        removed = union - keep
        tmp = [terms.pop(p) for p in pos]
        for p in pos:
            sets.pop(p)
        if k == len(path) - 1:
            result = output
        elif order == "numpy":
            result = "".join(sorted(keep, key=lambda c: (sizes[c], c)))
        else:
            joined = "".join(tmp)
            result = "".join(sorted(keep, key=joined.find))
        terms.append(result)
        sets.append(keep)
        steps.append(
            dict(
                positions=pos,
                removed=removed,
                einsum=",".join(tmp) + "->" + result,
                remaining=list(terms),
                union=union,
                cost=_flop_count(union, bool(removed), len(pos), sizes),
                size=_size(keep, sizes),
            )
        )
    return steps


def _plan(operands, optimize, memory_limit):
    given = operands
    if operands and not isinstance(operands[0], str):
        spec, operands = _interleaved(operands)
        operands = (spec,) + tuple(operands)
    if not operands:
        raise ShapeError("einsum_path: no spec and operands given")
    try:
        return _einsat._plan(*operands, optimize=optimize, memory_limit=memory_limit)
    except Exception as e:
        _reraise_interleaved(e, given)


def einsum_path(*operands, optimize="greedy", memory_limit=None, einsum_call=False):
    """numpy's ``einsum_path``: ``(path, report)``, where ``path`` is
    ``['einsum_path', (i, j), ...]`` in numpy's linear form and ``report``
    the string numpy prints (complete contraction, naive and optimized
    scaling and FLOP counts, theoretical speedup, largest intermediate, and
    per step its scaling, its einsum and the terms remaining).

    The path is einsat's own: the order its planner chooses for these
    operands' sizes (``optimize=`` as in :func:`einsum`), the one the
    optimiser runs (for an einsum of three operands the optimiser may still
    find a better program than the plan, which it then runs). The FLOP
    counts are numpy's, counted along that path. One or two operands, or
    nothing to plan, make one step of all. ``memory_limit=`` as
    :func:`einsum`'s (numpy's form ``optimize=('greedy', limit)`` also
    works). The spec may be in numpy's interleaved form.
    """
    if einsum_call:
        raise OptionError("einsum_path: einsum_call=True is numpy-internal")
    p = _plan(operands, optimize, memory_limit)
    inputs, output, sizes, path = p["inputs"], p["output"], p["sizes"], p["path"]
    steps = _contractions(inputs, output, sizes, path, "numpy")
    indices = set("".join(inputs))
    inner = (sum(len(set(t)) for t in inputs) - len(indices)) > 0
    naive = _flop_count(indices, inner, len(inputs), sizes)
    opt_cost = sum(s["cost"] for s in steps) + 1
    sizes_list = [_size(t, sizes) for t in list(inputs) + [output]]
    sizes_list += [s["size"] for s in steps]
    report = "  Complete contraction:  %s\n" % p["spec"]
    report += "         Naive scaling:  %d\n" % len(indices)
    report += "     Optimized scaling:  %d\n" % max((len(s["union"]) for s in steps), default=0)
    report += "      Naive FLOP count:  %.3e\n" % naive
    report += "  Optimized FLOP count:  %.3e\n" % opt_cost
    report += "   Theoretical speedup:  %3.3f\n" % (naive / opt_cost)
    report += "  Largest intermediate:  %.3e elements\n" % max(sizes_list)
    report += "-" * 74 + "\n"
    report += "%6s %24s %40s\n" % ("scaling", "current", "remaining")
    report += "-" * 74
    for s in steps:
        report += "\n%4d    %24s %40s" % (
            len(s["union"]),
            s["einsum"],
            ",".join(s["remaining"]) + "->" + output,
        )
    return ["einsum_path"] + [tuple(s) for s in path], report


class PathInfo:
    """What :func:`contract_path` returns beside the path: opt_einsum's
    ``PathInfo`` fields (``contraction_list``, ``input_subscripts``,
    ``output_subscript``, ``path``, ``indices``, ``scale_list``,
    ``naive_cost``, ``opt_cost``, ``speedup``, ``size_list``,
    ``size_dict``, ``shapes``, ``eq``, ``largest_intermediate``), counted
    along einsat's path, and ``plan``: einsat's planner report of the
    network (``einsat opt --json``'s, or None). ``str()`` is the report
    opt_einsum prints (the BLAS column says ``einsat``: every product runs
    on einsat's own kernels)."""

    def __init__(self, p):
        inputs, output, sizes, path = p["inputs"], p["output"], p["sizes"], p["path"]
        steps = _contractions(inputs, output, sizes, path, "opt_einsum")
        self.input_subscripts = ",".join(inputs)
        self.output_subscript = output
        self.path = [tuple(s) for s in path]
        self.indices = frozenset("".join(inputs))
        self.size_dict = dict(sizes)
        self.scale_list = [len(s["union"]) for s in steps]
        self.size_list = [s["size"] for s in steps]
        self.contraction_list = [
            (
                s["positions"],
                frozenset(s["removed"]),
                s["einsum"],
                tuple(s["remaining"]) if len(s["remaining"]) <= 20 else None,
                False,
            )
            for s in steps
        ]
        inner = (sum(len(set(t)) for t in inputs) - len(self.indices)) > 0
        self.naive_cost = _Decimal(_flop_count(self.indices, inner, len(inputs), sizes))
        self.opt_cost = _Decimal(sum(s["cost"] for s in steps))
        self.speedup = self.naive_cost / max(self.opt_cost, _Decimal(1))
        self.shapes = [tuple(sizes[k] for k in t) for t in inputs]
        self.eq = "%s->%s" % (self.input_subscripts, output)
        self.largest_intermediate = _Decimal(max(self.size_list, default=1))
        self.plan = p["plan"]

    def __repr__(self):
        out = [
            "  Complete contraction:  %s\n" % self.eq,
            "         Naive scaling:  %d\n" % len(self.indices),
            "     Optimized scaling:  %d\n" % max(self.scale_list, default=0),
            f"      Naive FLOP count:  {self.naive_cost:.3e}\n",
            f"  Optimized FLOP count:  {self.opt_cost:.3e}\n",
            f"   Theoretical speedup:  {self.speedup:.3e}\n",
            f"  Largest intermediate:  {self.largest_intermediate:.3e} elements\n",
            "-" * 80 + "\n",
            "{:>6} {:>11} {:>22} {:>37}\n".format("scaling", "BLAS", "current", "remaining"),
            "-" * 80,
        ]
        for n, (_, _, eq, remaining, _) in enumerate(self.contraction_list):
            rest = ",".join(remaining) + "->" + self.output_subscript if remaining else "..."
            width = max(0, 56 - max(22, len(eq)))
            out.append("\n{:>4} {:>14} {:>22}    {:>{}}".format(self.scale_list[n], "einsat", eq, rest, width))
        return "".join(out)

    __str__ = __repr__


# ------------------------------------------------------------ contract

_IGNORED = (
    "backend= and use_blas= are accepted and ignored: einsat compiles its own "
    "kernels for the whole contraction, and every pairwise product runs on its "
    "own GEMM stages"
)


def _check_backend(backend):
    if backend not in (None, "auto", "numpy", "einsat") and not isinstance(backend, str):
        raise OptionError("backend=%r: expected a backend's name (ignored: %s)" % (backend, _IGNORED))


def _float64_only(what, dtype, order):
    """Refuse a ``dtype=``/``order=`` other than float64 and ``'K'``."""
    if dtype not in (None, "float64", "d", float) or order != "K":
        raise DTypeError("%s: einsat computes in float64 (dtype=None or float64, order='K')" % what)


def _has_dask(arrays):
    """Whether any of ``arrays`` is a dask array (without importing dask)."""
    return any(
        type(a).__module__.split(".")[0] == "dask" and hasattr(a, "chunks") and hasattr(a, "dask")
        for a in arrays
    )


def _dask_contract(spec, arrays, out, optimize, memory_limit, threads, fast_math):
    """A contraction of dask arrays as a lazy dask array, by
    :func:`einsat.dask.einsum` (opt_einsum's dask backend keeps dask arrays
    dask arrays too)."""
    if out is not None:
        raise OptionError("out= with dask arrays: the result is a lazy dask array; store it with dask")
    from . import dask as _edask

    return _edask.einsum(
        spec,
        *arrays,
        optimize=optimize,
        memory_limit=memory_limit,
        threads=1 if threads is None else threads,
        fast_math=fast_math,
    )


def contract(
    *operands,
    out=None,
    dtype=None,
    order="K",
    casting="safe",
    use_blas=True,
    optimize=True,
    memory_limit=None,
    backend="auto",
    threads=None,
    fast_math=False,
    **kwargs,
):
    """opt_einsum's ``contract``: the einsum of ``operands`` (a spec and
    arrays, or numpy's interleaved form), planned and compiled by einsat.

    ``optimize=`` and ``memory_limit=`` as :func:`einsum`'s (opt_einsum's
    path names, an explicit path, a PathOptimizer). ``dtype``, ``order``,
    ``casting``: as :func:`einsum`'s (numpy's result dtypes). ``backend=``
    and ``use_blas=`` are accepted and ignored: einsat compiles its own
    kernels for the whole contraction, and every pairwise product runs on
    its own GEMM stages. ``threads=`` and ``fast_math=`` as
    :func:`einsum`'s. Dask arrays among the operands (as with
    opt_einsum's dask backend) give a lazy dask array, computed by
    :func:`einsat.dask.einsum` (so does a :class:`ContractExpression`
    called on them).
    """
    if kwargs:
        raise TypeError(
            "contract() got unexpected keyword argument(s) %s" % ", ".join(sorted(kwargs))
        )
    _check_backend(backend)
    if not operands:
        raise ShapeError("contract: no spec and operands given")
    if isinstance(operands[0], str) and _has_dask(operands[1:]):
        _float64_only("contract", dtype, order)
        return _dask_contract(
            operands[0], operands[1:], out, optimize, memory_limit, threads, fast_math
        )
    # (a relabelling or diagonal of one operand is a view, as opt_einsum's
    # (numpy's einsum's): the native einsum asks _single_view)
    return _einsat.einsum(
        *operands,
        out=out,
        dtype=dtype,
        order=order,
        casting=casting,
        optimize=optimize,
        memory_limit=memory_limit,
        threads=threads,
        fast_math=fast_math,
    )


def contract_path(*operands, use_blas=True, optimize=True, memory_limit=None, shapes=False, **kwargs):
    """opt_einsum's ``contract_path``: ``(path, info)``, the path einsat
    runs (a list of tuples, numpy's linear form) and a :class:`PathInfo`
    whose ``str()`` is opt_einsum's report, its FLOPs counted as opt_einsum
    counts them. ``shapes=True``: the operands after the spec are shapes,
    not arrays. ``use_blas=`` is accepted and ignored (see
    :func:`contract`)."""
    if kwargs:
        raise TypeError(
            "contract_path() got unexpected keyword argument(s) %s" % ", ".join(sorted(kwargs))
        )
    if shapes:
        import numpy as np

        if operands and isinstance(operands[0], str):
            operands = (operands[0],) + tuple(np.broadcast_to(0.0, tuple(s)) for s in operands[1:])
        else:
            ops = list(operands)
            for k in range(0, len(ops) - len(ops) % 2, 2):
                ops[k] = np.broadcast_to(0.0, tuple(ops[k]))
            operands = tuple(ops)
    p = _plan(operands, optimize, memory_limit)
    info = PathInfo(p)
    return info.path, info


class ContractExpression:
    """An einsum planned and compiled once for fixed operand shapes (see
    :func:`contract_expression`). Call it as ``expr(*arrays, out=None)``
    with arrays of those shapes; arrays of other shapes are refused
    (:class:`ShapeError`). Attributes: ``contraction`` (the spec),
    ``shapes``, ``num_args`` (operands a call takes, constants excluded),
    ``stages`` (how the kernel runs)."""

    _dtype = None  # dtype=: computed in it (numpy's rules), as einsum's

    def __init__(self, spec, shapes, constants, kwargs):
        self.contraction = spec
        self._kwargs = kwargs
        self._constants = constants
        all_shapes = []
        for k, s in enumerate(shapes):
            if k in constants:
                all_shapes.append(tuple(_shape_of(constants[k])))
            else:
                all_shapes.append(tuple(int(d) for d in s))
        self.shapes = all_shapes
        self.num_args = len(shapes) - len(constants)
        self._prepared = _einsat._prepare(spec, all_shapes, **kwargs)
        self.stages = self._prepared.stages

    def __call__(self, *arrays, out=None, backend="auto", evaluate_constants=False):
        _check_backend(backend)
        if self._constants:
            if len(arrays) != self.num_args:
                raise ShapeError(
                    "contract_expression: the expression takes %d operands (besides "
                    "its constants) but %d %s given" % (self.num_args, len(arrays), "was" if len(arrays) == 1 else "were")
                )
            it = iter(arrays)
            arrays = [
                self._constants[k] if k in self._constants else next(it)
                for k in range(len(self.shapes))
            ]
        if _has_dask(arrays):
            shapes = [tuple(a.shape) for a in arrays]
            if shapes != [tuple(s) for s in self.shapes]:
                raise ShapeError(
                    "contract_expression: compiled for shapes %s, called with %s"
                    % (self.shapes, shapes)
                )
            return _dask_contract(
                self.contraction,
                arrays,
                out,
                self._kwargs["optimize"],
                self._kwargs["memory_limit"],
                self._kwargs.get("threads"),
                self._kwargs.get("fast_math", False),
            )
        if out is None and len(arrays) == 1 and tuple(_shape_of(arrays[0])) == tuple(self.shapes[0]):
            v = _single_view((self.contraction, arrays[0]))
            if v is not None:
                return v
        if self._dtype is not None or any(_other_dtype(a) for a in arrays):
            # numpy's dtypes (einsat/_typed.py), for the shapes compiled for
            shapes = [tuple(_shape_of(a)) for a in arrays]
            if shapes != [tuple(s) for s in self.shapes]:
                raise ShapeError(
                    "contract_expression: compiled for shapes %s, called with %s"
                    % (self.shapes, shapes)
                )
            k = self._kwargs
            return _einsat.einsum(
                self.contraction, *arrays, out=out, dtype=self._dtype, optimize=k["optimize"],
                memory_limit=k["memory_limit"], threads=k.get("threads"),
                fast_math=k.get("fast_math", False),
            )
        return self._prepared(*arrays, out=out)

    @property
    def path_info(self):
        """The :class:`PathInfo` of the expression's contraction."""
        return contract_path(
            self.contraction,
            *self.shapes,
            shapes=True,
            optimize=self._kwargs["optimize"],
            memory_limit=self._kwargs["memory_limit"],
        )[1]

    @property
    def contraction_list(self):
        """opt_einsum's ``contraction_list`` of the path (see
        :class:`PathInfo`)."""
        return self.path_info.contraction_list

    def __repr__(self):
        return "<einsat.ContractExpression('%s')>" % self.contraction

    def __str__(self):
        return "<ContractExpression('%s')>" % self.contraction


def _other_dtype(a):
    """Whether ``a`` is an array (or numpy scalar) of a dtype other than
    float64, which einsum computes in numpy's result dtype."""
    d = getattr(a, "dtype", None)
    return d is not None and getattr(d, "char", "d") != "d"


def _shape_of(x):
    import numpy as np

    return np.shape(x)


def contract_expression(subscripts, *shapes, constants=None, optimize=True, memory_limit=None, use_blas=True,
                        threads=None, fast_math=False, **kwargs):
    """opt_einsum's ``contract_expression``: plan and compile the einsum
    ``subscripts`` once for operands of ``shapes``, to call many times as
    ``expr(*arrays, out=None)``. ``constants``: positions whose entry in
    ``shapes`` is an array, fixed in the expression (the call takes the
    other operands). ``optimize=``, ``memory_limit=`` as :func:`contract`'s.
    """
    kwargs.pop("backend", None)
    if "out" in kwargs:
        raise OptionError("contract_expression: out= is given when the expression is called")
    dtype = kwargs.pop("dtype", None)
    _float64_only("contract_expression", None, kwargs.pop("order", "K"))
    kwargs.pop("casting", None)
    if kwargs:
        raise TypeError(
            "contract_expression() got unexpected keyword argument(s) %s" % ", ".join(sorted(kwargs))
        )
    if not isinstance(subscripts, str):
        # numpy's interleaved form, shapes in place of the arrays
        subscripts, shapes = _interleaved((subscripts,) + shapes)
    consts = {}
    for k in constants or ():
        consts[k] = shapes[k]
    expr = ContractExpression(
        subscripts,
        shapes,
        consts,
        dict(optimize=optimize, memory_limit=memory_limit, threads=threads, fast_math=fast_math),
    )
    expr._dtype = None if dtype in (None, "float64", "d", float) else dtype
    return expr
