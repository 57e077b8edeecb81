"""einsat kernels on dask arrays: ``einsat.dask.einsum`` and
``einsat.dask.map`` build ordinary lazy ``dask.array`` graphs whose tasks
run compiled einsat kernels on numpy blocks, on any dask scheduler
(threads, processes, ``dask.distributed``).

This module owns the translation from einsat's view of a computation
(an einsum's contraction path, a program's index structure) to dask's
primitives: ``da.blockwise`` per contraction step or program, sums over
size-1 partial axes for contractions split across chunks (dask's tree
reduction), and ``da.overlap`` halos for stencils. It has no scheduler of
its own and no global state beyond a per-process cache of compiled
programs, so it works unchanged with several worker processes.

    >>> import dask.array as da, einsat.dask
    >>> A = da.random.random((4000, 3000), chunks=1000)
    >>> B = da.random.random((3000, 2000), chunks=1000)
    >>> C = einsat.dask.einsum("ij,jk->ik", A, B)      # lazy
    >>> C.compute()                                    # or a Client's

Requires ``dask[array]`` (``pip install ./python[dask]``; ``distributed``
for a cluster).

einsum(spec, *arrays, optimize=True, memory_limit=None, split_every=None,
       threads=1, fast_math=False)
    numpy's einsum (explicit or implicit output, repeated indices, ``...``
    over equal ranks) of dask arrays. The contraction is planned once on the
    client by einsat's planner (:func:`einsat.contract_path`) for the whole
    arrays' sizes. When no summed index is split across chunks the whole
    einsum is one ``blockwise`` whose tasks each run einsat on their blocks
    (along the planned path); otherwise every pairwise step of the path is
    a ``blockwise``, and a step whose summed indices are split across chunks
    computes one partial product per chunk of them and adds the partials
    with dask's tree reduction (``split_every``), as ``dask.array.einsum``
    does. (When the pairwise graph would have more tasks than the single
    blockwise, the single one is used: the graph is never larger than that
    form, which is dask's own.) Chunks of one index that differ between
    operands are rechunked to the first operand's. Returns a lazy float64
    dask array.

map(program, *args, fn=None, allow_rechunk=False, split_every=None,
    threads=1, fast_math=False)
    Run one function of an einsat program (source text or a
    :class:`einsat.Kernel`) chunk by chunk. Its parameters' size names
    decide the chunks: a size that the program only uses elementwise
    (through ``gen`` indices, ``x[i]``) is split as the arrays are chunked;
    one read at offsets (``x[i-1] + x[i+1]``, on parameters) is split with
    a halo of the largest offset (``da.overlap``, zeros beyond the ends as
    einsat's zero padding); one the result sums over (``sum(i:n) ...`` as
    the whole result, or under the result's ``gen``s) is split into partial
    sums added by dask's reduction. Any other use (an inner ``sum`` such as
    softmax's normaliser, a bracket ``[i = 0]``, ``x[2*i]``, a size on two
    axes of one array) needs the axis whole in every chunk: it is rechunked
    to one chunk with ``allow_rechunk=True``, else :class:`ChunkError`
    names the size, the argument's axis and why. ``R`` parameters take
    numbers. Returns a lazy dask array (0-d for an ``R`` result).

Both send only text and options to the workers: the kernels are compiled
there, once per process (einsum kernels in einsat's own cache, keyed by the
spec and the block ranks or shapes; programs in this module's
:func:`_kernel` cache). :class:`einsat.Kernel` objects pickle the same way.
An einsat error raised by a task is raised by ``compute()`` on the client
as the same einsat exception.
"""

import functools as _functools
import json as _json
import warnings as _warnings

import numpy as _np

try:
    import dask as _dask
    import dask.array as _da
    from dask.array.core import PerformanceWarning as _PerformanceWarning
    from dask.array.overlap import overlap as _overlap, trim_internal as _trim_internal
except ImportError as _e:  # pragma: no cover - exercised only without dask
    raise ImportError(
        "einsat.dask needs dask: pip install 'einsat[dask]' (or ./python[dask]), "
        "or pip install 'dask[array]' distributed"
    ) from _e

from . import _einsat
from . import ShapeError, DTypeError, Kernel
from ._dropin import _plan, get_symbol

__all__ = ["einsum", "map", "ChunkError", "Program"]


class ChunkError(ShapeError):
    """A program or einsum that cannot run on the arrays as they are
    chunked: an axis that must be whole in every chunk is split (the
    message names the size, the argument and its axis, and why), and
    ``allow_rechunk=False``."""


# ------------------------------------------------------------------ einsum


def _einsum_block(*blocks, spec, optimize, memory_limit, threads, fast_math, extra):
    """One task: einsat's einsum of numpy blocks, with ``extra`` size-1
    axes appended (the partial axes of summed indices split across
    chunks). einsat caches the compiled kernel per process."""
    r = _einsat.einsum(
        spec,
        *blocks,
        optimize=optimize,
        memory_limit=memory_limit,
        threads=threads,
        fast_math=fast_math,
    )
    r = _np.asarray(r)
    if extra:
        r = r.reshape(r.shape + (1,) * extra)
    return r


def _parse_spec(spec, ranks):
    """``spec`` as (input terms, output term), every ``...`` expanded to
    letters not otherwise used (operands under ``...`` must agree on its
    rank: size-1 broadcasting is refused)."""
    if not isinstance(spec, str):
        raise DTypeError("einsat.dask.einsum: the spec must be a string, not %s" % type(spec).__name__)
    s = spec.replace(" ", "")
    if "->" in s:
        lhs, out = s.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = s, "", False
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ShapeError(
            "einsat.dask.einsum: the spec %r has %d operand term%s but %d array%s given"
            % (spec, len(terms), "" if len(terms) == 1 else "s", len(ranks), " was" if len(ranks) == 1 else "s were")
        )
    used = set(s) - set(".,->")
    fresh = (get_symbol(k) for k in range(10**6) if get_symbol(k) not in used)
    ell = None
    for k, (t, r) in enumerate(zip(terms, ranks)):
        if "..." in t:
            n = r - (len(t) - 3)
            if n < 0:
                raise ShapeError("einsat.dask.einsum: operand %d has rank %d, fewer axes than %r" % (k, r, t))
            if ell is None:
                ell = [next(fresh) for _ in range(n)]
            elif len(ell) != n:
                raise ShapeError(
                    "einsat.dask.einsum: the operands under `...` have different ranks "
                    "(broadcasting `...` is not supported on dask arrays)"
                )
            terms[k] = t.replace("...", "".join(ell))
    for k, (t, r) in enumerate(zip(terms, ranks)):
        if len(t) != r:
            raise ShapeError(
                "einsat.dask.einsum: operand %d has %d axes but its term %r names %d" % (k, r, t, len(t))
            )
    if explicit:
        if "..." in out:
            out = out.replace("...", "".join(ell or []))
    else:
        joined = "".join(terms)
        once = sorted(c for c in set(joined) if joined.count(c) == 1 and c not in (ell or []))
        out = "".join(ell or []) + "".join(once)
    joined = "".join(terms)
    for c in out:
        if c not in joined:
            raise ShapeError("einsat.dask.einsum: output index %r appears in no operand" % c)
    return terms, out


def _as_dask(x):
    if isinstance(x, _da.Array):
        return x
    return _da.from_array(_np.asarray(x), chunks=-1)


def _check_dtype(x, what):
    if x.dtype.kind not in "biuf":
        raise DTypeError(
            "%s: einsat computes in float64; dtype %s is not accepted" % (what, x.dtype)
        )


def _letter_chunks(terms, arrays, what):
    """Per index letter, its size and the chunks every operand is
    rechunked to (the first operand's that has the letter)."""
    sizes, chunks = {}, {}
    for k, (t, a) in enumerate(zip(terms, arrays)):
        for ax, c in enumerate(t):
            n = a.shape[ax]
            if c in sizes and sizes[c] != n:
                raise ShapeError(
                    "%s: index %r has size %d in an earlier operand but %d in operand %d (axis %d)"
                    % (what, c, sizes[c], n, k, ax)
                )
            if c not in sizes:
                sizes[c] = n
                chunks[c] = a.chunks[ax]
    return sizes, chunks


def _align(terms, arrays, chunks):
    out = []
    for t, a in zip(terms, arrays):
        want = tuple(chunks[c] for c in t)
        # a repeated index on one operand (``ii``): both axes alike
        out.append(a if a.chunks == want else a.rechunk(want))
    return out


def einsum(*operands, optimize=True, memory_limit=None, split_every=None, threads=1, fast_math=False):
    """numpy's einsum over dask arrays, planned by einsat, each task a
    compiled einsat kernel (see the module's documentation)."""
    if not operands:
        raise ShapeError("einsat.dask.einsum: no spec and operands given")
    spec, arrays = operands[0], [_as_dask(a) for a in operands[1:]]
    for k, a in enumerate(arrays):
        _check_dtype(a, "einsat.dask.einsum: operand %d" % k)
    terms, out = _parse_spec(spec, [a.ndim for a in arrays])
    sizes, chunks = _letter_chunks(terms, arrays, "einsat.dask.einsum")
    arrays = _align(terms, arrays, chunks)
    full = ",".join(terms) + "->" + out
    opts = dict(memory_limit=memory_limit, threads=threads, fast_math=fast_math)
    summed = [c for c in sizes if c not in out]
    split = [c for c in summed if len(chunks[c]) > 1]
    # planned once, for the whole arrays (this also checks the spec and
    # options on the client, before any task runs)
    path = _path(full, arrays, optimize, memory_limit)
    if not split or len(arrays) <= 2:
        # one blockwise for the whole einsum; its summed indices split
        # across chunks (two operands at most: nothing to recompute) as
        # size-1 partial axes added by dask's reduction. One or two
        # operands keep `optimize` (einsat caches their kernels per ranks,
        # not shapes); more run along the planned path.
        how = path if len(arrays) > 2 else optimize
        return _step(full, terms, out, arrays, split, how, opts, split_every)
    # pairwise along the planned path
    live = list(zip(terms, arrays))
    for n, step in enumerate(path):
        pos = sorted(step, reverse=True)
        taken = [live.pop(p) for p in pos]
        ts = [t for t, _ in taken]
        rest = set("".join(t for t, _ in live))
        union = set("".join(ts))
        if n == len(path) - 1:
            res = out
        else:
            keep = union & (rest | set(out))
            joined = "".join(ts)
            res = "".join(sorted(keep, key=joined.find))
        sp = [c for c in union if c not in res and len(chunks[c]) > 1]
        sp.sort(key="".join(ts).find)
        r = _step(
            ",".join(ts) + "->" + res,
            ts,
            res,
            [a for _, a in taken],
            sp,
            None,
            opts,
            split_every,
        )
        live.append((res, r))
    ((t, r),) = live
    # the pairwise steps do fewer multiply-adds (no product is recomputed
    # per chunk of an index it does not have), but with few chunks they can
    # take more tasks than one blockwise over every index (dask's own form):
    # then that one, so the graph is never larger than the single form's
    single = _step(full, terms, out, arrays, split, path, opts, split_every)
    if len(r.__dask_graph__()) > len(single.__dask_graph__()):
        return single
    return r


def _path(full, arrays, optimize, memory_limit):
    """einsat's contraction path for the whole arrays (planned once)."""
    shapes = [_np.broadcast_to(0.0, a.shape) for a in arrays]
    p = _plan((full,) + tuple(shapes), optimize, memory_limit)
    return [tuple(s) for s in p["path"]]


def _step(spec, terms, out, arrays, split, optimize, opts, split_every):
    """One blockwise running ``spec`` (``terms``->``out``) on blocks; the
    summed indices ``split`` (split across chunks) become size-1 partial
    axes after the output's, summed by dask's reduction."""
    args = []
    for t, a in zip(terms, arrays):
        args += [a, tuple(t)]
    ind = tuple(out) + tuple(split)
    with _warnings.catch_warnings():
        # the partial axes multiply the chunks, by design (as in dask's einsum)
        _warnings.simplefilter("ignore", _PerformanceWarning)
        r = _blockwise_step(spec, ind, args, split, optimize, opts, arrays)
    if split:
        r = r.sum(axis=tuple(range(len(out), len(ind))), split_every=split_every, dtype=_np.float64)
    return r


def _blockwise_step(spec, ind, args, split, optimize, opts, arrays):
    return _da.blockwise(
        _einsum_block,
        ind,
        *args,
        adjust_chunks={c: 1 for c in split},
        dtype=_np.float64,
        meta=_np.empty((0,) * len(ind), dtype=_np.float64),
        concatenate=True,
        spec=spec,
        optimize=optimize if optimize is not None else True,
        extra=len(split),
        name="einsat-einsum-" + _dask.base.tokenize(spec, *arrays, optimize, opts),
        **opts,
    )


# ------------------------------------------------------------------ programs


@_functools.lru_cache(maxsize=256)
def _kernel(source, fn, threads, fast_math):
    """The compiled program: once per process (a dask worker compiles on
    its first task and reuses it)."""
    from . import compile as _compile

    return _compile(source, fn=fn, threads=threads, fast_math=fast_math)


def _program_block(*blocks, key, extra):
    """One task: the program on numpy blocks (``R`` parameters as numbers),
    ``extra`` size-1 axes appended for partial sums."""
    k = _kernel(*key)
    r = _np.asarray(k(*blocks), dtype=_np.float64)
    if extra:
        r = r.reshape(r.shape + (1,) * extra)
    return r


class Program:
    """A function of an einsat program, ready for :func:`map`: its source
    text, options and how its sizes may be split (:meth:`plan`). Pickles as
    its text and options; the kernel is compiled where it runs."""

    def __init__(self, source, fn=None, threads=1, fast_math=False):
        if isinstance(source, Kernel):
            # its text and options, as it pickles (the one function alone)
            src, fn, _, kernel_fast = source.__reduce__()[1]
            fast_math = fast_math or kernel_fast
        elif isinstance(source, str):
            src = source
        else:
            raise DTypeError(
                "einsat.dask.map: the program must be source text or an einsat.Kernel, not %s"
                % type(source).__name__
            )
        j = _json.loads(_einsat._function_json(src, fn))
        self.source = src
        self.fn = j["name"]
        self.threads = threads
        self.fast_math = fast_math
        self._sig = j
        self.analysis = _analyse(j)

    def __reduce__(self):
        return (Program, (self.source, self.fn, self.threads, self.fast_math))

    @property
    def key(self):
        return (self.source, self.fn, self.threads, self.fast_math)

    def __repr__(self):
        return "<einsat.dask.Program %s>" % self.fn


def _axes_of(ty):
    """A pair-free type as its list of sizes (``("n",)`` or ``(3,)``),
    or None for a type with a pair."""
    out = []
    while True:
        if ty == "Real":
            return out
        if isinstance(ty, dict) and "Tensor" in ty:
            s, ty = ty["Tensor"]
            out.append(s["Named"] if "Named" in s else int(s["Lit"]))
            continue
        return None


def _affine_text(a):
    parts = []
    for v, c in sorted(a["terms"].items()):
        parts.append(v if c == 1 else "-" + v if c == -1 else "%d*%s" % (c, v))
    if a["constant"] or not parts:
        parts.append(str(a["constant"]))
    return "+".join(parts).replace("+-", "-")


class _Analysis:
    """How a function's sizes may be split: ``whole`` (size -> why it must
    be whole in a chunk), ``halo`` (size -> largest offset it is read at),
    ``reduced`` (sizes the result sums over, outermost)."""

    def __init__(self):
        self.whole = {}
        self.halo = {}
        self.reduced = []

    def need_whole(self, size, why):
        if isinstance(size, str):
            self.whole.setdefault(size, why)


def _type_of(e, env):
    """The type of expression ``e`` (serde form) with value names ``env``."""
    (tag, v), = e.items() if isinstance(e, dict) else (("Atom", e),)
    if tag == "Var":
        return env.get(v, "Real")
    if tag == "Gen":
        i, s, b = v
        return {"Tensor": [s, _type_of(b, env)]}
    if tag == "Access":
        t = _type_of(v[0], env)
        return t["Tensor"][1] if isinstance(t, dict) and "Tensor" in t else "Real"
    if tag == "Pair":
        return {"Pair": [_type_of(v[0], env), _type_of(v[1], env)]}
    if tag == "Proj":
        t = _type_of(v[1], env)
        return t["Pair"][v[0]] if isinstance(t, dict) and "Pair" in t else "Real"
    if tag == "Let":
        x, a, b = v
        env2 = dict(env)
        env2[x] = _type_of(a, env)
        return _type_of(b, env2)
    return "Real"


# the key marking a let-bound name in an analysis environment (names of the
# language never contain a space)
_LET = "let "


def _analyse(j):
    an = _Analysis()
    params = {}
    for p in j["params"]:
        axes = _axes_of(p["ty"])
        if axes is None:
            raise ChunkError(
                "einsat.dask.map: parameter `%s` of `%s` holds pairs; einsat.dask maps programs "
                "of arrays and numbers only" % (p["name"], j["name"])
            )
        params[p["name"]] = axes
        for s in set(a for a in axes if isinstance(a, str)):
            if sum(1 for a in axes if a == s) > 1:
                an.need_whole(s, "it is the size of several axes of `%s`" % p["name"])
    ret = _axes_of(j["ret"])
    if ret is None:
        raise ChunkError("einsat.dask.map: `%s` returns pairs; einsat.dask maps array or number results only" % j["name"])
    for s in set(a for a in ret if isinstance(a, str)):
        if ret.count(s) > 1:
            an.need_whole(s, "it is the size of several axes of the result")
    an.params, an.ret = params, ret
    env = {p["name"]: p["ty"] for p in j["params"]}
    # the result's outer structure: lets, the result's gens, then sums the
    # whole result is (partial sums per chunk add up)
    e = j["body"]
    idx = {}
    outer_sums = []
    while True:
        (tag, v), = e.items() if isinstance(e, dict) else (("Atom", e),)
        if tag == "Let":
            x, a, b = v
            _walk(a, env, idx, an, params)
            env = dict(env)
            env[x] = _type_of(a, env)
            env[_LET + x] = True
            e = b
        elif tag == "Gen" and not outer_sums:
            i, s, b = v
            idx = dict(idx)
            idx[i] = ("gen", s.get("Named"))
            e = b
        elif tag == "Sum":
            i, s, b = v
            idx = dict(idx)
            name = s.get("Named")
            idx[i] = ("outer", name)
            outer_sums.append((i, name))
            e = b
        else:
            break
    _walk(e, env, idx, an, params)
    seen = {}
    for i, s in outer_sums:
        if s is None:
            continue
        if s in seen:
            an.need_whole(s, "the result sums over it twice (`sum(%s:%s)` and `sum(%s:%s)`)" % (seen[s], s, i, s))
        seen[s] = i
        if s in ret:
            an.need_whole(s, "the result both sums over it (`sum(%s:%s)`) and has an axis of it" % (i, s))
        if an.halo.get(s):
            an.need_whole(s, "the result sums over it (`sum(%s:%s)`) and reads it at offsets" % (i, s))
    an.reduced = [s for _, s in outer_sums if s is not None and s not in an.whole]
    for s in list(an.halo):
        if s in an.whole:
            del an.halo[s]
    return an


def _walk(e, env, idx, an, params):
    """Record every use of an index over a named size in ``e`` that is not
    elementwise (inner sums, brackets, offsets on non-parameters, strides,
    constants)."""
    todo = [(e, env, idx)]
    while todo:
        e, env, idx = todo.pop()
        if not isinstance(e, dict):
            continue
        (tag, v), = e.items()
        if tag == "Gen":
            i, s, b = v
            idx2 = dict(idx)
            idx2[i] = ("gen", s.get("Named"))
            todo.append((b, env, idx2))
        elif tag == "Sum":
            i, s, b = v
            if "Named" in s:
                an.need_whole(s["Named"], "`sum(%s:%s)` sums over all of it inside the result" % (i, s["Named"]))
            idx2 = dict(idx)
            idx2[i] = ("sum", s.get("Named"))
            todo.append((b, env, idx2))
        elif tag == "Let":
            x, a, b = v
            todo.append((a, env, idx))
            env2 = dict(env)
            env2[x] = _type_of(a, env)
            env2[_LET + x] = True
            todo.append((b, env2, idx))
        elif tag == "Access":
            target, a = v
            t = _type_of(target, env)
            size = None
            if isinstance(t, dict) and "Tensor" in t:
                s = t["Tensor"][0]
                size = s.get("Named")
            is_param = _is_param_chain(target, env, params)
            _access(an, idx, size, a, is_param, _access_text(target, a))
            todo.append((target, env, idx))
        elif tag in ("Bracket", "Eps"):
            affs = _pred_affines(v) if tag == "Bracket" else v
            for a in affs:
                for var in a["terms"]:
                    kind = idx.get(var)
                    if kind and kind[1] is not None:
                        an.need_whole(
                            kind[1],
                            "%s compares the position `%s` (over %s)" % ("a bracket" if tag == "Bracket" else "eps", var, kind[1]),
                        )
        else:
            if tag == "Call":
                for c in v[1]:
                    todo.append((c, env, idx))
            elif tag in ("Bin",):
                todo.append((v[1], env, idx))
                todo.append((v[2], env, idx))
            elif tag == "Pair":
                todo.append((v[0], env, idx))
                todo.append((v[1], env, idx))
            elif tag == "Neg":
                todo.append((v, env, idx))
            elif tag == "Proj":
                todo.append((v[1], env, idx))


def _pred_affines(p):
    (tag, v), = p.items()
    if tag == "Cmp":
        return [v[1], v[2]]
    if tag == "Not":
        return _pred_affines(v)
    return _pred_affines(v[0]) + _pred_affines(v[1])


def _is_param_chain(target, env, params):
    """Whether ``target`` is a parameter, or a parameter indexed (so the
    access reads a parameter's axis, where zeros beyond the ends are the
    halo's own)."""
    while isinstance(target, dict) and "Access" in target:
        target = target["Access"][0]
    return (
        isinstance(target, dict)
        and "Var" in target
        and target["Var"] in params
        and not env.get(_LET + target["Var"])
    )


def _access_text(target, a):
    t = target
    while isinstance(t, dict) and "Access" in t:
        t = t["Access"][0]
    name = t["Var"] if isinstance(t, dict) and "Var" in t else "(...)"
    return "`%s[..%s]`" % (name, _affine_text(a))


def _access(an, idx, size, a, is_param, text):
    terms = a["terms"]
    c = a["constant"]
    if size is None:
        # a literal axis: whole anyway; the index's own size must not be split
        # by a non-plain use
        for var in terms:
            kind = idx.get(var)
            if kind and kind[1] is not None:
                an.need_whole(kind[1], "%s reads an axis of fixed size with it" % text)
        return
    if len(terms) == 1:
        ((var, coef),) = terms.items()
        kind = idx.get(var)
        if coef == 1 and kind is not None and kind[1] == size:
            if kind[0] == "gen":
                if c:
                    if is_param:
                        an.halo[size] = max(an.halo.get(size, 0), abs(c))
                    else:
                        an.need_whole(size, "%s reads a computed tensor at an offset" % text)
                return
            if kind[0] == "outer":
                if c:
                    an.need_whole(size, "%s reads at an offset from the summed index" % text)
                return
            # an inner sum's index: the sum itself already needs the size whole
            return
    an.need_whole(size, "%s reads it at a position that is not the chunk's own" % text)
    for var in terms:
        kind = idx.get(var)
        if kind and kind[1] is not None and kind[1] != size:
            an.need_whole(kind[1], "%s reads an axis of size %s with it" % (text, size))


def map(program, *args, fn=None, allow_rechunk=False, split_every=None, threads=1, fast_math=False):
    """Run one function of an einsat program chunk by chunk over dask
    arrays (see the module's documentation)."""
    prog = program if isinstance(program, Program) else Program(program, fn=fn, threads=threads, fast_math=fast_math)
    an = prog.analysis
    pnames = list(an.params)
    if len(args) != len(pnames):
        raise ShapeError(
            "einsat.dask.map: `%s` takes %d argument%s (%s) but %d were given"
            % (prog.fn, len(pnames), "" if len(pnames) == 1 else "s", ", ".join(pnames), len(args))
        )
    # sizes and chunks per size name
    arrays = {}
    sizes = {}
    chunks = {}
    for name, a in zip(pnames, args):
        axes = an.params[name]
        if not axes:
            if isinstance(a, _da.Array):
                raise ShapeError("einsat.dask.map: `%s` is a number (R); pass a number, not a dask array" % name)
            continue
        a = _as_dask(a)
        _check_dtype(a, "einsat.dask.map: argument `%s`" % name)
        if a.ndim != len(axes):
            raise ShapeError(
                "einsat.dask.map: argument `%s` has %d axes but `%s` takes [%s]"
                % (name, a.ndim, prog.fn, ", ".join(str(s) for s in axes))
            )
        for ax, s in enumerate(axes):
            n = a.shape[ax]
            if isinstance(s, int):
                if n != s:
                    raise ShapeError("einsat.dask.map: axis %d of `%s` has size %d, the program fixes it to %d" % (ax, name, n, s))
                continue
            if s in sizes and sizes[s] != n:
                raise ShapeError(
                    "einsat.dask.map: size `%s` is %d in an earlier argument but %d in axis %d of `%s`"
                    % (s, sizes[s], n, ax, name)
                )
            if s not in sizes:
                sizes[s], chunks[s] = n, a.chunks[ax]
        arrays[name] = a
    # sizes that must be whole
    for s, why in an.whole.items():
        if s in chunks and len(chunks[s]) > 1:
            if not allow_rechunk:
                where = ", ".join(
                    "axis %d of `%s`" % (ax, name)
                    for name in pnames
                    if name in arrays
                    for ax, t in enumerate(an.params[name])
                    if t == s and len(arrays[name].chunks[ax]) > 1
                )
                raise ChunkError(
                    "einsat.dask.map: `%s` needs size `%s` whole in every chunk (%s), but %s is split "
                    "into chunks: rechunk it to one chunk along that axis, or pass allow_rechunk=True"
                    % (prog.fn, s, why, where or "an argument's axis of it")
                )
            chunks[s] = (sizes[s],)
    # align every argument to the chosen chunks (literal axes whole)
    for name, a in list(arrays.items()):
        want = tuple(chunks[s] if isinstance(s, str) else (s,) for s in an.params[name])
        if a.chunks != want:
            arrays[name] = a.rechunk(want)
    halo = {s: h for s, h in an.halo.items() if s in chunks and len(chunks[s]) > 1 and h > 0}
    for s, h in halo.items():
        if min(chunks[s]) < h:
            raise ChunkError(
                "einsat.dask.map: `%s` reads size `%s` at offsets up to %d, more than its smallest chunk (%d): "
                "use larger chunks" % (prog.fn, s, h, min(chunks[s]))
            )
    if halo:
        for name, a in list(arrays.items()):
            axes = an.params[name]
            depth = {ax: halo.get(s, 0) if isinstance(s, str) else 0 for ax, s in enumerate(axes)}
            if any(depth.values()):
                arrays[name] = _overlap(a, depth=depth, boundary={ax: 0 for ax in depth})
    # blockwise: one index letter per size name (a literal axis its own)
    letters = {}

    def letter(s, tag):
        key = s if isinstance(s, str) else (tag, s)
        if key not in letters:
            letters[key] = "x%d" % len(letters)
        return letters[key]

    bargs = []
    for name, a in zip(pnames, args):
        axes = an.params[name]
        if not axes:
            bargs += [a, None]
        else:
            bargs += [arrays[name], tuple(letter(s, (name, ax)) for ax, s in enumerate(axes))]
    reduced = [s for s in an.reduced if s in chunks and len(chunks[s]) > 1]
    out_ind = tuple(letter(s, ("ret", ax)) for ax, s in enumerate(an.ret)) + tuple(letter(s, None) for s in reduced)
    # a result axis of literal size is made by the kernel (its own letter)
    new_axes = {letter(s, ("ret", ax)): s for ax, s in enumerate(an.ret) if isinstance(s, int)}
    r = _da.blockwise(
        _program_block,
        out_ind,
        *bargs,
        adjust_chunks={letter(s, None): 1 for s in reduced},
        new_axes=new_axes,
        dtype=_np.float64,
        meta=_np.empty((0,) * len(out_ind), dtype=_np.float64),
        concatenate=True,
        key=prog.key,
        extra=len(reduced),
        name="einsat-map-%s-%s" % (prog.fn, _dask.base.tokenize(prog.key, *bargs)),
    )
    if reduced:
        r = r.sum(axis=tuple(range(len(an.ret), len(out_ind))), split_every=split_every, dtype=_np.float64)
    if halo:
        depth = {ax: halo.get(s, 0) if isinstance(s, str) else 0 for ax, s in enumerate(an.ret)}
        if any(depth.values()):
            r = _trim_internal(r, depth, boundary={ax: 0 for ax in depth})
    return r
