"""einsat: tensor programs in index notation, optimised by equality saturation
and run as native code, over numpy arrays.

    >>> import numpy as np, einsat
    >>> A, B = np.random.rand(3, 4), np.random.rand(4, 5)
    >>> C = einsat.einsum("ij,jk->ik", A, B)          # as numpy.einsum
    >>> k = einsat.compile("fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]")
    >>> y = k(A, np.ones(4))                           # or k(A=A, x=np.ones(4))

Functions
---------
einsum(spec, *operands, out=None, threads=None, fast_math=False, optimize=False,
       memory_limit=None, dtype=None, order='K', casting='safe')
    numpy's einsum: explicit (``"ij,jk->ik"``) and implicit (``"ij,jk"``)
    output, repeated indices (``"ii->i"``), ``...`` and size-1 broadcasting,
    numbers as operands (``",ij"``), numpy's interleaved form
    (``einsum(A, [0, 1], B, [1, 2], [0, 2])``, ``...`` in the sublists), and
    index letters beyond ASCII as opt_einsum allows (``get_symbol(i)``, e.g.
    ``"i×,×j"``). One- and two-operand einsums are optimised and compiled
    once per spec text, operand ranks, thread count and options (sizes stay
    symbolic, so new sizes reuse the kernel); einsums of three or more
    operands are planned with the operands' real sizes and cached per
    shapes. Returns a new array of numpy's result dtype (below), a numpy
    scalar for a scalar result, or ``out`` after writing into it (an array
    of the result's shape, any strides, the result cast to its dtype).

    dtypes as numpy's: the result dtype is ``np.result_type`` of the
    operands, or ``dtype=`` (operands cast to it under ``casting=``,
    ``'safe'`` by default, else :class:`DTypeError`). float64 runs the
    optimiser and the JIT; float32, complex64 and complex128 are computed
    in their own type (operands read in place, products on the ``gemm``
    crate's kernels); integers and bool exactly as numpy (wrap-around;
    bool is or-of-ands); float16 in float32 and longdouble in float64,
    widened at the end; object arrays are refused. ``memory_limit=`` and
    ``fast_math=`` apply to float64 (see docs/python-compat.md).

    ``optimize=``: how tensor networks are planned (einsat always
    optimises): ``False``/``True``/``'auto'``/``'auto-hq'`` einsat's
    ``Auto``; ``'optimal'``/``'dp'``/``'branch-all'`` the exact DP;
    ``'greedy'``/``'eager'``/``'branch-1'``/``'branch-2'``/
    ``'random-greedy'``/``'random-greedy-128'`` greedy with restarts;
    ``'hyper'`` recursive bisection; an explicit path
    (``['einsum_path', (0, 1), (0, 1)]`` or ``[(0, 1), (0, 1)]``, checked:
    a path that does not fit the operands is :class:`OptionError`);
    numpy's ``('greedy', limit)``; an opt_einsum ``PathOptimizer`` or a name
    registered with opt_einsum. Other names: :class:`OptionError` (a
    ``ValueError``). ``memory_limit=``: None or -1 (einsat's default: the
    largest operand or result, or 2**27 elements, whichever is larger), a
    number of elements, or ``'max_input'``; intermediates beyond it are
    recomputed in loops (sliced). ``order='F'``: the result in Fortran
    order. See docs/python-compat.md.
einsum_path(spec, *operands, optimize='greedy', memory_limit=None)
    numpy's ``einsum_path``: ``(['einsum_path', (i, j), ...], report)`` for
    the path einsat's planner chooses (what the optimiser runs), numpy's
    FLOP counts along it.
contract(spec, *operands, out=None, dtype=None, order='K', casting='safe',
         use_blas=True, optimize=True, memory_limit=None, backend='auto')
    opt_einsum's ``contract`` (``backend=`` and ``use_blas=`` accepted and
    ignored: einsat compiles its own kernels, products run on its own GEMM
    stages).
contract_path(spec, *operands, optimize=True, memory_limit=None, shapes=False)
    opt_einsum's ``contract_path``: ``(path, PathInfo)``; ``str(info)`` is
    opt_einsum's report.
contract_expression(spec, *shapes, constants=None, optimize=True, memory_limit=None)
    Plan and compile once for operands of ``shapes``; call as
    ``expr(*arrays, out=None)`` (other shapes: :class:`ShapeError`).
get_symbol(i)
    opt_einsum's ``get_symbol``: index letter number ``i``.
compile(source, fn=None, threads=None) -> Kernel
    Parse, type-check, optimise and compile one function of a program in the
    einsat language (``fn`` names it when the source defines several).
optimize(source, fn=None, sizes=None) -> str
    The optimised program as source text (every function, or ``fn``);
    ``sizes`` maps size names to the values the cost model assumes
    (default 1000 each).
check(source) -> list[str]
    Every function's signature (``"fn f(x: [n]R) -> R"``), or the errors.

Dask
----
``import einsat.dask`` (needs ``pip install ./python[dask]``):
``einsat.dask.einsum`` and ``einsat.dask.map`` build lazy dask arrays whose
tasks run einsat kernels on numpy blocks, on any dask scheduler, a
``dask.distributed`` cluster included (see that module).

Builder
-------
fn(f, name=None, threads=None, fast_math=False) -> Traced
    A Python function traced into an einsat program in the style of Ein:
    ``einsat.fn(lambda A, x: einsat.gen(lambda i: einsat.sum(lambda j: A[i, j] * x[j])))``
    is ``fn f(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]``,
    traced and compiled at the first call per signature of argument ranks
    (``.source`` shows the program). ``gen``, ``sum``, ``exp``, ``log``,
    ``sqrt``, ``sin``, ``cos``, ``tanh``, ``erf``, ``power``, ``abs``, ``maximum``, ``minimum``,
    ``max_over``, ``min_over``, ``where``, ``bracket``, ``fold``, ``let``
    and ``eps`` build it (an integer numpy array is an integer array
    ``[n]Z``, read inside an index: a gather; a complex array or number a
    pair parameter ``[n](R, R)``, computed with as complex numbers, with
    ``conj``, ``.real`` and ``.imag``); see :mod:`einsat.builder`.

Kernel
------
A compiled function. Call it with numpy arrays (or numbers for ``R``
parameters), positionally or by parameter name; a pair parameter takes a
tuple of two arrays. It returns a numpy array, a numpy float64, or a tuple for pair
and tuple results (nested as the type nests: ``(a, (b, c))``). Attributes:
``name``, ``params``, ``source`` (the function as parsed), ``optimized`` (the
program the kernel runs), ``report`` (a dict with the fields of
``einsat opt --json``: ``cost_before``, ``cost_after``, ``egraph_nodes``,
``rules_fired``, ...), ``stages`` (how each loop nest runs). A Kernel
pickles as its source text and options: unpickling compiles it again.

Arguments: the conversion rule
------------------------------
* float64 numpy arrays are read in place, whatever their strides: C order,
  Fortran order, slices, transposes and negative strides are not copied.
  (Unaligned arrays and arrays whose strides are not whole elements, both
  rare, are copied.)
* Arrays of dtype bool, signed or unsigned integer, float16, float32 or
  longdouble, Python ``int``/``float``/``bool`` and (nested) lists of them
  are converted to float64 (a copy; integers beyond 2**53 and longdoubles
  round to the nearest float64).
* Every other dtype (complex, object, string, bytes, datetime, timedelta,
  structured) is refused with :class:`DTypeError`.
* The result is float64 (``einsum`` follows numpy's dtypes, above).

Errors
------
Every error is an :class:`Error`; the messages are those of the ``einsat``
command line. Nothing a caller passes can crash the interpreter: an internal
failure is reported as :class:`Error` too, and memory the system refuses
for a call's data as :class:`OutOfMemoryError` (a ``MemoryError``).

Threads
-------
The GIL is released while einsat optimises, compiles or runs a kernel, so
Python threads run kernels in parallel (einsum calls of at most 4096
multiply-adds keep it: they take about a microsecond, less than handing the
GIL over and back); each call may itself use several cores (``threads=``
limits it).
"""

import builtins as _builtins


class Error(Exception):
    """Base class of every einsat error.

    Attributes: ``message``; for source errors ``line`` and ``column``
    (1-based, of the first error) and ``diagnostics``, a list of
    ``(line, column, message)`` for every error (line and column are ``None``
    when the error has no position).
    """

    def __init__(self, message, line=None, column=None, diagnostics=()):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.diagnostics = list(diagnostics)


class ParseError(Error, ValueError):
    """Syntax error in a program, or an einsum spec that is not numpy's
    grammar. ``str(e)`` is the rendered diagnostic
    (``<source>:line:col: error: ...`` with the line underlined)."""


class TypeCheckError(Error, ValueError):
    """A program that parses but does not type-check (every error at once,
    with ``line``/``column``/``diagnostics``)."""


class ShapeError(Error, ValueError):
    """Arguments that do not fit: wrong number of arguments or operands,
    ranks, shapes, size names bound to different values, an ``out`` of the
    wrong shape or one that overlaps an operand."""


class DTypeError(ShapeError, _builtins.TypeError):
    """An argument of a type einsat cannot compute with (complex, object,
    string, ... arrays; a spec or source that is not a string)."""


class CompileError(Error, RuntimeError):
    """The native compiler refused or failed to build a kernel."""


class OptionError(Error, ValueError):
    """An option out of its range: ``threads=`` that is not None or a whole
    number from 1 to 1024 (the limit the command line's ``--threads`` and
    the Rust API share), ``sizes=`` naming a size the program does not
    have."""


class OutOfMemoryError(Error, MemoryError):
    """Memory for the call's data (its result, a temporary, an argument
    converted to float64) could not be allocated: the system refused it (an
    address-space limit, or more than the machine can commit). Also a
    ``MemoryError``; the process stays usable."""


from ._einsat import Kernel, check, compile, einsum, optimize  # noqa: E402
from ._dropin import (  # noqa: E402
    ContractExpression,
    PathInfo,
    contract,
    contract_expression,
    contract_path,
    einsum_path,
    get_symbol,
)
from .builder import (  # noqa: E402
    Cond,
    Traced,
    TraceError,
    abs,
    bracket,
    conj,
    cos,
    eq,
    eps,
    erf,
    exp,
    fn,
    fold,
    gen,
    let,
    log,
    max_over,
    maximum,
    min_over,
    minimum,
    ne,
    power,
    sin,
    sqrt,
    sum,
    tanh,
    where,
)

__all__ = [
    "einsum",
    "einsum_path",
    "contract",
    "contract_path",
    "contract_expression",
    "ContractExpression",
    "PathInfo",
    "get_symbol",
    "compile",
    "optimize",
    "check",
    "Kernel",
    "Error",
    "ParseError",
    "TypeCheckError",
    "ShapeError",
    "DTypeError",
    "CompileError",
    "OptionError",
    "OutOfMemoryError",
    "fn",
    "Traced",
    "TraceError",
]
# einsat.gen, einsat.sum, einsat.exp, ..., einsat.abs, einsat.maximum and
# einsat.minimum are not in __all__: `from einsat import *` would hide
# Python's sum and abs
