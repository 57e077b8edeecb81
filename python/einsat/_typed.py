"""numpy's einsum for dtypes other than float64: the dtype numpy computes
in, chosen as numpy chooses it, and the operands converted to it.

``einsat.einsum`` (the native function) comes here when an operand is not
a float64 array or a Python number beside one, or ``dtype=`` is not
float64. The result dtype is numpy's: ``np.result_type`` of the operands
(Python numbers and lists as ``np.asarray`` makes them), or ``dtype=``,
to which every operand must cast under ``casting=`` (``'safe'`` by
default, as numpy). The computation:

- float32, complex64, complex128: in that type, operands read in place
  (``einsat.typed`` in Rust: products on the ``gemm`` crate's kernels);
- integers and bool: in wrapping int64 (signed) or uint64 (unsigned,
  bool), truncated to the result's dtype at the end, which gives numpy's
  wrap-around exactly (arithmetic modulo 2^64 reduces to modulo 2^bits);
  bool's product is ``and``, its sum ``or`` (a count that is not zero);
- float16: in float32, rounded to float16 at the end (numpy rounds each
  partial sum to float16, so long sums can differ, einsat's being the
  more accurate);
- float64 and longdouble: on einsat's float64 path (the optimiser and the
  JIT); a longdouble result is the float64 result widened (computed with
  float64's precision, not longdouble's);
- clongdouble: in complex128, widened at the end;
- object, string and other dtypes: :class:`DTypeError`.

``out=`` receives the result cast to its dtype, which the result's dtype
must cast to under ``casting=`` (as numpy's). ``optimize=``: a method
name, or an explicit path; other optimizers (opt_einsum's objects) plan
with einsat's ``Auto``. ``memory_limit=`` bounds intermediates as on the
float64 path (over it, the plan slices indices and the run loops over
them); ``fast_math=`` applies to the float64 path only.
"""

import numpy as np

from . import _einsat, DTypeError, OptionError, OutOfMemoryError, ShapeError

# computation per result dtype: a native kind, or "jit" (float64 path)
_NATIVE = {"f": "f4", "e": "f4", "F": "c8", "D": "c16", "G": "c16", "d": "jit", "g": "jit"}
_NATIVE_DTYPE = {
    "f4": np.float32,
    "c8": np.complex64,
    "c16": np.complex128,
    "i8": np.int64,
    "u8": np.uint64,
}
_CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _computation(rt):
    """The computation for result dtype ``rt``: a native kind, ``"jit"``,
    or None (not supported)."""
    if rt.kind == "b":
        return "u8"
    if rt.kind == "i":
        return "i8"
    if rt.kind == "u":
        return "u8"
    return _NATIVE.get(rt.char)


def _plan_of(optimize):
    """``(method, path)`` for the native typed einsum from ``optimize=``."""
    if optimize is None or isinstance(optimize, bool):
        return None, None
    if isinstance(optimize, str):
        from ._dropin import _registered_path_fn

        if _registered_path_fn(optimize) is not None:
            return None, None
        return optimize, None
    if isinstance(optimize, tuple) and len(optimize) == 2 and isinstance(optimize[0], str):
        return optimize[0], None  # numpy's ('greedy', memory_limit)
    if isinstance(optimize, (list, tuple)):
        steps = list(optimize)
        if steps and steps[0] == "einsum_path":
            steps = steps[1:]
        try:
            return None, [[int(p) for p in s] for s in steps]
        except (TypeError, ValueError):
            raise OptionError("optimize=%r: not a path (a list of tuples of positions)" % (optimize,)) from None
    return None, None  # an opt_einsum PathOptimizer: einsat's own plan


def _converted(k, a, dtype):
    """Operand ``k`` as an array of ``dtype`` (itself if it is one);
    memory numpy cannot get for the copy is :class:`OutOfMemoryError`."""
    try:
        return a.astype(dtype, copy=False)
    except MemoryError as e:
        raise OutOfMemoryError("operand %d: %s" % (k, e)) from None


def _compute(spec, arrays, rt, comp, optimize, memory_limit, threads, fast_math):
    """The einsum of ``arrays`` (of any dtypes casting to ``rt``) computed
    as ``comp`` says (see :func:`_computation`), in its computation dtype."""
    if comp == "jit":
        conv = [_converted(k, a, np.float64) for k, a in enumerate(arrays)]
        r = _einsat.einsum(spec, *conv, optimize=optimize, memory_limit=memory_limit,
                           threads=threads, fast_math=fast_math)
        return np.asarray(r)
    ct = np.dtype(_NATIVE_DTYPE[comp])
    conv = []
    for k, a in enumerate(arrays):
        # numpy's cast first (bool: nonzero; integers wrap), then the
        # computation's type
        a = _converted(k, _converted(k, a, rt), ct)
        if not a.flags.aligned:
            a = a.copy()
        conv.append(a)
    method, path = _plan_of(optimize)
    if memory_limit is None and isinstance(optimize, tuple) and len(optimize) == 2 \
            and isinstance(optimize[0], str):
        memory_limit = optimize[1]  # numpy's ('greedy', memory_limit)
    return _einsat._typed_einsum(spec, tuple(conv), comp, method, path, threads, memory_limit)


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=None,
           memory_limit=None, threads=None, fast_math=False):
    """The einsum of ``operands`` in numpy's dtype (see the module doc);
    called by ``einsat.einsum``, whose documentation holds."""
    if operands and isinstance(operands[0], str):
        spec, ops = operands[0], operands[1:]
    else:
        from ._dropin import _interleaved

        spec, ops = _interleaved(operands)
    casting = "safe" if casting is None else casting
    order = "K" if order is None else order
    if casting not in _CASTINGS:
        raise OptionError(
            "einsum: casting=%r: expected 'no', 'equiv', 'safe', 'same_kind' or 'unsafe'" % (casting,)
        )
    if order not in ("K", "k", "A", "a", "C", "c", "F", "f"):
        raise OptionError("einsum: order=%r: expected 'K', 'A', 'C' or 'F'" % (order,))
    arrays = []
    for k, o in enumerate(ops):
        try:
            arrays.append(np.asarray(o))
        except MemoryError:
            raise
        except Exception as e:
            raise DTypeError("operand %d: %s" % (k, e)) from None
    for k, a in enumerate(arrays):
        # (with dtype= an object array may still cast, as numpy's tests do)
        if dtype is None and a.dtype.kind not in "biufc":
            raise DTypeError(
                "einsum: operand %d: arrays of dtype `%s` are not supported (einsat computes "
                "bool, integer, float and complex einsums)" % (k, a.dtype.str)
            )
    try:
        rt = np.dtype(dtype) if dtype is not None else np.result_type(*arrays) if arrays else np.dtype("d")
    except TypeError as e:
        raise DTypeError("einsum: %s" % e) from None
    comp = _computation(rt)
    if comp is None:
        raise DTypeError(
            "einsum: arrays of dtype `%s` are not supported (einsat computes bool, integer, "
            "float and complex einsums)" % rt.str
        )
    for k, a in enumerate(arrays):
        if not np.can_cast(a.dtype, rt, casting):
            raise DTypeError(
                "einsum: casting='%s': operand %d (dtype('%s')) cannot be cast to dtype('%s'), "
                "the dtype of the computation" % (casting, k, a.dtype, rt)
            )
    r = _compute(spec, arrays, rt, comp, optimize, memory_limit, threads, fast_math)
    if rt.kind == "b":
        r = r != 0
    elif r.dtype != rt:
        r = r.astype(rt)
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise DTypeError("einsum: out must be a numpy array, not %s" % type(out).__name__)
        if out.shape != r.shape:
            raise ShapeError(
                "einsum: out has shape %s, the result %s" % (tuple(out.shape), tuple(r.shape))
            )
        if not np.can_cast(rt, out.dtype, casting):
            raise DTypeError(
                "einsum: casting='%s': the result (dtype('%s')) cannot be cast to out's "
                "dtype('%s')" % (casting, rt, out.dtype)
            )
        np.copyto(out, r, casting="unsafe")
        return out
    if order in ("F", "f"):
        r = np.asfortranarray(r)
    if r.ndim == 0:
        return r[()]
    return r
