"""Programs written in Python, in the style of Ein: a Python function over
symbolic arguments, traced into a function of the einsat language and
compiled once per signature of argument ranks (and which arguments are
integer arrays, which complex), as ``jax.jit`` traces per shapes.

    >>> import numpy as np, einsat
    >>> mv = einsat.fn(lambda A, x: einsat.gen(lambda i: einsat.sum(lambda j: A[i, j] * x[j])))
    >>> y = mv(np.ones((3, 4)), np.ones(4))      # traced and compiled at the first call
    >>> print(mv.source)
    fn f(A: [n,m]R, x: [m]R) -> [n]R =
      gen(i:n) sum(j:m) A[i, j] * x[j]
    <BLANKLINE>

The traced function is the program the text form gives
(``fn f(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]``):

- ``gen(lambda i: e)`` is ``gen(i:s) e`` and ``sum(lambda j: e)`` is
  ``sum(j:s) e`` (``lambda i, j:`` binds two indices); the index names are
  the lambda's parameter names, and the range ``s`` is inferred from the
  axes the index reads plainly (``A[i, j]``: ``i`` ranges over ``A``'s axis
  0). An index read only through arithmetic (``x[i+1]``) needs its range
  given: ``gen(lambda i: x[i+1], 3)`` (a number) or ``gen(lambda i: ...,
  like=(x, 0))`` (the size of ``x``'s axis 0).
- The function's parameters are its Python parameters; their ranks come
  from the arguments of the call being traced (a number is ``R``), and
  the size names (``n``, ``m``, ``k``, ``l``, ...) from how the indices tie
  their axes together: two axes read by one index share a size name.
- Arithmetic ``+ - * /`` and unary ``-`` on numbers (Python numbers on
  either side; complex numbers below), indexing ``A[i, j]``, ``A[i][j]``,
  ``x[i+1]``, ``x[2*i-1]``, ``x[0]`` (index arithmetic: affine, as the
  language's), the scalar functions :func:`exp`, :func:`log`,
  :func:`sqrt`, :func:`sin`, :func:`cos`, :func:`tanh`, :func:`erf`, :func:`power`, :func:`abs`,
  :func:`maximum`, :func:`minimum`, and pairs: a Python tuple ``(a, b)``
  as a result (of the function or of a ``gen`` body) is the pair ``(a,
  b)``; the call returns a tuple.
- ``max_over(lambda j: e)`` and ``min_over(lambda j: e)`` are the
  reductions ``max(j:s) e`` and ``min(j:s) e`` (a stable softmax:
  ``m = max_over(lambda j: x[j])``, then ``exp(x[i] - m)``).
- Conditions: comparisons ``<  <=  >  >=  ==  !=`` of traced numbers
  (``x[i] > 0``) or of index expressions (``i <= j``, ``i > 0``; for
  indices ``==`` and ``!=`` are :func:`eq` and :func:`ne`, as indices are
  Python objects compared by identity), combined with ``&`` (and), ``|``
  (or) and ``~`` (not). ``where(c, a, b)`` is the language's ``where(c,
  a, b)`` (only the chosen side is evaluated), and ``bracket(c)`` of an
  index condition is the bracket ``[c]`` (1 where it holds, else a strong
  zero: ``bracket(j <= i) * A[i, j]`` is the lower triangle).
- Indices and sizes as numbers: an index beside a traced number, a
  fraction, or divided is its value (``x[i] * i``, ``i / 2``, ``x[i] >
  i``); ``x.shape[0]`` is the size of ``x``'s axis 0 as a number
  (``sum(lambda i: x[i]) / x.shape[0]`` is ``(sum(i:n) x[i]) / n``).
- ``fold(init, lambda i, acc: e)`` is ``fold(i:s, acc = init) e``: the
  sequential loop, in the written order; the accumulator is a number or
  a pair (a Python tuple, nested for more), read as ``acc[0]``,
  ``acc[1]`` or unpacked (``s, c = acc``), and a pair result is
  projected the same way (``fold(...)[0]`` is ``(fold ...).0``). The
  range as ``gen``'s: inferred, or ``fold(init, body, n)``,
  ``like=(x, 0)``. Horner: ``fold(0, lambda i, acc: acc * x + c[i])``.
- ``let(value, lambda v: e)`` is ``let v = value in e`` (a shared
  subterm computed once), and ``eps[i, j, k]`` (``eps[i, j]``) the
  Levi-Civita symbol.
- Gathers: an integer numpy array argument (of one or more axes) is an
  integer array parameter ``tok: [n]Z``, read only inside an index:
  ``E[tok[i], j]``, ``E[tok[i] + 1, j]`` (an embedding lookup). Its
  elements are checked when a call starts (every element on the axis it
  indexes). An integer array the function computes with is traced as a
  float array instead (numpy's conversion); one used both inside an index
  and as a number, or a float array inside an index, is a
  :class:`TraceError` (pass ``tok.astype(float)`` as a second argument to
  compute with the values).
- Complex numbers: a complex numpy array (complex128, complex64) or a
  complex number argument is a pair parameter of its real and imaginary
  parts (``A: [n,m](R, R)``, ``z: (R, R)``), and ``A[i, j]`` a complex
  number, its parts ``A[i, j].0`` and ``A[i, j].1``. Complex numbers take
  ``+ - * /`` and unary ``-`` (with real traced numbers and Python
  numbers, real or complex: ``1j * z``), ``z.real``, ``z.imag``,
  :func:`conj` (``z.conjugate()``) and ``z ** 2``, written out part by
  part with numpy's formulas: a product is ``(a.0 * b.0 - a.1 * b.1, a.0
  * b.1 + a.1 * b.0)``, a quotient numpy's loop (Smith's algorithm: the
  branch on ``abs(b.0) >= abs(b.1)``, ``let rat = b.1 / b.0``, ``let scl =
  1 / (b.0 + b.1 * rat)``; by a Python number ``rat`` and ``scl`` are
  computed when tracing, ``z / 3`` is ``(z.0 * 0.333..., z.1 *
  0.333...)`` as numpy's). A part known to be zero (of a real operand, or
  of a Python number such as ``1j``) is left out of the formula: ``x[i] *
  z[i]`` is ``(x[i] * z[i].0, x[i] * z[i].1)`` and ``1j * z`` is ``(-z.1,
  z.0)`` (C99 Annex G's rule; numpy converts the real operand to a
  complex one first, so where a part is infinite numpy can give NaN from
  its ``0 * inf`` where this gives a number, and signs of zeros can
  differ). A ``sum`` of complex numbers is the pair of the sums of the
  parts (``einsat.sum(lambda j: A[i, j] * B[j, l])`` is examples/complex.tl's
  ``(sum(j:m) A[i, j].0 * B[j, l].0 - A[i, j].1 * B[j, l].1, sum(j:m) A[i,
  j].0 * B[j, l].1 + A[i, j].1 * B[j, l].0)``), a ``gen`` of them a tensor
  of pairs ``[n](R, R)``, and ``let``, ``where`` (part by part) and
  ``fold`` (a complex accumulator: ``fold(0j, ...)``) take them. A
  complex result comes back complex: of numpy's result dtype of the
  arguments when some are complex (complex64 from complex64, computed in
  float32 as numpy's complex64 arithmetic, as :func:`einsat.compile`'s
  kernels),
  else complex128 (complex64 from float32 arguments), also inside a tuple
  result; a result without complex numbers is returned as for real
  arguments. ``abs`` (numpy's is ``hypot``, which the language has not),
  ``exp`` and the other scalar functions of a complex number,
  comparisons, ``maximum``/``minimum`` and ``max_over``/``min_over`` of
  complex numbers are a :class:`TraceError` saying what to write instead
  (``einsat.sqrt(z.real * z.real + z.imag * z.imag)``, which overflows
  where ``abs(z) > 1e154``).

A value kept from inside a binder's function and used after it (an
index, a ``let`` value, a fold's accumulator) is a :class:`TraceError`.

The compiled function is an ordinary :class:`einsat.Kernel` (``.kernel``
of the last call; ``.source`` its text); calls take numpy arrays and
numbers as every Kernel does.
"""

import builtins as _builtins
import inspect
import keyword
import math
import re
import numbers
import threading

from . import Error, ShapeError, DTypeError
from . import compile as _compile

__all__ = [
    "fn",
    "Traced",
    "gen",
    "sum",
    "exp",
    "log",
    "sqrt",
    "sin",
    "cos",
    "tanh",
    "erf",
    "abs",
    "maximum",
    "minimum",
    "power",
    "max_over",
    "min_over",
    "where",
    "bracket",
    "conj",
    "fold",
    "let",
    "eps",
    "eq",
    "ne",
    "Cond",
]


class TraceError(Error, ValueError):
    """A Python function that cannot be traced into an einsat program: a
    value that is not traceable, an index read on axes of different sizes,
    an index whose range cannot be inferred, arithmetic on a whole tensor,
    ..."""


_RESERVED = {"fn", "let", "in", "gen", "sum", "eps", "R", "Z", "sqrt", "exp", "log", "sin", "cos",
             "tanh", "erf", "abs", "max", "min", "fold", "where", "pow"}
_SIZE_NAMES = ["n", "m", "k", "l", "p", "q", "r", "s", "t", "u", "v", "w"]

# ---------------------------------------------------------------- tracing state

class _Local(threading.local):
    def __init__(self):
        self.traces = []  # this thread's traces under way (innermost last)


_LOCAL = _Local()


def _trace():
    if not _LOCAL.traces:
        raise TraceError(
            "einsat.gen, einsat.sum and the scalar functions build programs: call them inside "
            "a function given to einsat.fn"
        )
    return _LOCAL.traces[-1]


class _Class:
    """A size: the set of axes (and index ranges) that share it
    (union-find), with the size the traced call's arguments give it and
    where that size was first seen."""

    def __init__(self, size=None, where=None, literal=None):
        self.parent = self
        self.size = size
        self.where = where
        self.literal = literal

    def find(self):
        c = self
        while c.parent is not c:
            c.parent = c.parent.parent
            c = c.parent
        return c


def _union(a, b, what):
    """Merge the sizes of ``a`` (an axis, or a range) and ``b`` (an
    index's range); ``what`` says which use merges them, for the error
    when the traced call's arguments give them different sizes."""
    a, b = a.find(), b.find()
    if a is b:
        return a
    if a.size is not None and b.size is not None and a.size != b.size:
        raise TraceError(
            "einsat.fn: %s reads %s, but it also ranges over %s (an index ranges over one size)"
            % (what, a.where, b.where)
        )
    b.parent = a
    if a.size is None:
        a.size, a.where = b.size, b.where
    if a.literal is None:
        a.literal = b.literal
    return a


# ---------------------------------------------------------------- types
# ("R",) a number; ("C",) a complex number (in the program a pair (R, R)
# of its real and imaginary parts); ("arr", class, element type); ("pair",
# T, U); ("Z",) the element type of an integer array parameter (read only
# inside an index)

_R = ("R",)
_C = ("C",)
_Z = ("Z",)
_NOFREE = frozenset()


def _free(*xs):
    """The binders (indices, let values, fold accumulators) the traced
    values ``xs`` use: a value that still uses one when the function's
    result is built escaped the binder's body (see ``_source``)."""
    out = _NOFREE
    for x in xs:
        f = getattr(x, "free", None)
        if f:
            out = out | f
    return out


class _Var:
    """A value bound by :func:`let` or :func:`fold` (its accumulator)."""

    def __init__(self, name, kind):
        self.name = name
        self.kind = kind


def _type_text(t, names):
    if t[0] == "R":
        return "R"
    if t[0] == "C":
        return "(R, R)"
    if t[0] == "pair":
        return "(%s, %s)" % (_type_text(t[1], names), _type_text(t[2], names))
    sizes = []
    while t[0] == "arr":
        sizes.append(names(t[1]))
        t = t[2]
    elem = {_R: "R", _Z: "Z"}.get(t) or _type_text(t, names)
    return "[%s]%s" % (",".join(sizes), elem)


def _rank(t):
    r = 0
    while t[0] == "arr":
        r += 1
        t = t[2]
    return r


# ---------------------------------------------------------------- indices


class _Ordered:
    """``<``, ``<=``, ``>``, ``>=`` of traced numbers or of index
    expressions: a condition (:class:`Cond`)."""

    def __lt__(self, o):
        return _compare(self, o, "<")

    def __le__(self, o):
        return _compare(self, o, "<=")

    def __gt__(self, o):
        return _compare(self, o, ">")

    def __ge__(self, o):
        return _compare(self, o, ">=")


def _as_number(x, o):
    """Whether the index expression ``x`` combined with ``o`` is
    arithmetic on numbers (``o`` a traced number or a Python number that
    is not whole) rather than index arithmetic."""
    return isinstance(o, Expr) or (isinstance(o, numbers.Complex) and not isinstance(o, bool) and not _whole(o))


class Index(_Ordered):
    """An index bound by :func:`gen`, :func:`sum`, the reductions or
    :func:`fold`. Indices combine into affine index expressions (``i + 1``,
    ``2 * i - j``) that go inside ``[...]``; combined with a traced number
    or a fraction, or divided, an index is its value as a number
    (``x[i] * i``, ``i / 2``)."""

    def __init__(self, name, cls):
        self.name = name
        self.cls = cls

    def _affine(self):
        return _Affine({self: 1}, 0)

    def __add__(self, o):
        return self._affine() + o

    def __radd__(self, o):
        return self._affine().__radd__(o)

    def __sub__(self, o):
        return self._affine() - o

    def __rsub__(self, o):
        return self._affine().__rsub__(o)

    def __mul__(self, o):
        return self._affine() * o

    def __rmul__(self, o):
        return self._affine().__rmul__(o)

    def __neg__(self):
        return -self._affine()

    def __truediv__(self, o):
        return self._affine() / o

    def __rtruediv__(self, o):
        return self._affine().__rtruediv__(o)

    def __floordiv__(self, o):
        raise TraceError(
            "einsat.fn: index %s with // or %%: index expressions are affine (+, -, * by a whole "
            "number), and as numbers indices take + - * /" % self.name
        )

    __rfloordiv__ = __mod__ = __rmod__ = __floordiv__

    def __bool__(self):
        raise TraceError("einsat.fn: index %s has no truth value while tracing" % self.name)

    def __index__(self):
        raise TraceError(
            "einsat.fn: index %s used where Python needs a number: indices only go inside [...] of "
            "the traced arguments" % self.name
        )

    def __repr__(self):
        return "<einsat index %s>" % self.name


def _whole(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


class _Affine(_Ordered):
    """An affine index expression: coefficients per index, and a constant."""

    def __init__(self, coef, const):
        self.coef = {i: c for i, c in coef.items() if c != 0}
        self.const = const

    def __add__(self, o):
        if _as_number(self, o):
            return _expr_of(self) + o
        o = _affine_of(o)
        coef = dict(self.coef)
        for i, c in o.coef.items():
            coef[i] = coef.get(i, 0) + c
        return _Affine(coef, self.const + o.const)

    def __radd__(self, o):
        if _as_number(self, o):
            return o + _expr_of(self)
        return self + o

    def __neg__(self):
        return _Affine({i: -c for i, c in self.coef.items()}, -self.const)

    def __sub__(self, o):
        if _as_number(self, o):
            return _expr_of(self) - o
        return self + (-_affine_of(o))

    def __rsub__(self, o):
        if _as_number(self, o):
            return o - _expr_of(self)
        return (-self) + o

    def __truediv__(self, o):
        return _expr_of(self) / _expr_of(o)

    def __rtruediv__(self, o):
        return _expr_of(o) / _expr_of(self)

    def __floordiv__(self, o):
        raise TraceError(
            "einsat.fn: an index expression with // or %: index expressions are affine (+, -, * by "
            "a whole number), and as numbers indices take + - * /"
        )

    __rfloordiv__ = __mod__ = __rmod__ = __floordiv__

    def __rmul__(self, o):
        if _as_number(self, o):
            return o * _expr_of(self)
        return self * o

    def __mul__(self, o):
        if _as_number(self, o):
            return _expr_of(self) * o
        if isinstance(o, (Index, _Affine)):
            o = _affine_of(o)
            if o.coef and self.coef:
                raise TraceError("einsat.fn: a product of two indices is not an index expression (affine only)")
            if not o.coef:
                o = o.const
            else:
                return o * self.const
        if not _whole(o):
            raise TraceError("einsat.fn: an index times %r: index expressions take whole numbers" % (o,))
        return _Affine({i: c * o for i, c in self.coef.items()}, self.const * o)

    def __bool__(self):
        raise TraceError("einsat.fn: an index expression has no truth value while tracing")

    def plain(self):
        """The index, when the expression is one index name."""
        if self.const == 0 and len(self.coef) == 1:
            (i, c), = self.coef.items()
            if c == 1:
                return i
        return None

    def text(self, name):
        out = ""
        for i, c in self.coef.items():
            term = name(i) if _builtins.abs(c) == 1 else "%d*%s" % (_builtins.abs(c), name(i))
            if not out:
                out = ("-" if c < 0 else "") + term
            else:
                out += (" - " if c < 0 else " + ") + term
        if not out:
            return str(self.const)
        if self.const:
            out += (" - %d" if self.const < 0 else " + %d") % _builtins.abs(self.const)
        return out


def _affine_of(x):
    if isinstance(x, _Affine):
        return x
    if isinstance(x, Index):
        return x._affine()
    if _whole(x):
        return _Affine({}, int(x))
    if isinstance(x, _GatherIndex):
        raise TraceError(
            "einsat.fn: %s, an element of an integer array, is a gather index: alone at a "
            "position of [...] (E[tok[i], j], E[tok[i] + 1, j]), not part of an index expression "
            "or of eps[...]" % x.text()
        )
    if isinstance(x, Expr) and _elem(x.ty) == _Z:
        raise TraceError(
            "einsat.fn: the integer array %s inside an index is read at every axis: E[%s[i], j]"
            % (x.chain, x.chain)
        )
    if isinstance(x, Expr):
        raise TraceError(
            "einsat.fn: a number (%s) used as an index: indices are gen/sum indices, their affine "
            "combinations and whole numbers, and elements of integer arrays (an integer numpy "
            "array argument is an integer array [n]Z: E[tok[i], j])" % x._text(0)
        )
    raise TraceError("einsat.fn: %r used as an index: indices are gen/sum indices, their affine combinations "
                     "and whole numbers" % (x,))


class _GatherIndex:
    """An element of an integer array (``tok[i]``, of an integer numpy
    argument: a parameter ``tok: [n]Z``), plus a whole constant: it only
    stands at a position of ``[...]``, where it is a gather
    (``E[tok[i] + 1, j]``)."""

    def __init__(self, tr, array, parts, const, free):
        self.tr = tr
        self.array = array  # the integer array's parameter name
        self.parts = parts
        self.const = const
        self.free = free

    def text(self):
        t = "%s[%s]" % (self.array, ", ".join(p.text(self.tr.index_name) for p in self.parts))
        if self.const:
            t += (" - %d" if self.const < 0 else " + %d") % _builtins.abs(self.const)
        return t

    def _misuse(self, what, number=True):
        raise (_IntegerAsNumber(self.array) if number else TraceError)(
            "einsat.fn: %s %s: it is an element of the integer array %s, which may only be read "
            "inside an index (E[%s, j]), plus or minus a whole number (E[%s + 1, j]); pass the "
            "array as floats (%s.astype(float)) to compute with its values"
            % (self.text(), what, self.array, self.text(), self.text(), self.array)
        )

    def __add__(self, o):
        if not _whole(o):
            self._misuse("with `+ %s`" % _short(o))
        return _GatherIndex(self.tr, self.array, self.parts, self.const + int(o), self.free)

    __radd__ = __add__

    def __sub__(self, o):
        if not _whole(o):
            self._misuse("with `- %s`" % _short(o))
        return _GatherIndex(self.tr, self.array, self.parts, self.const - int(o), self.free)

    def __rsub__(self, o):
        self._misuse("subtracted from %s" % _short(o))

    def __mul__(self, o):
        self._misuse("multiplied")

    __rmul__ = __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __mul__
    __pow__ = __rpow__ = __mul__

    def __neg__(self):
        self._misuse("negated")

    def __lt__(self, o):
        self._misuse("compared")

    __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __lt__
    __hash__ = object.__hash__

    def __getitem__(self, idx):
        self._misuse("indexed (gathers do not nest)", number=False)

    def __bool__(self):
        self._misuse("given a truth value")

    def __float__(self):
        self._misuse("converted to a Python number")

    __int__ = __index__ = __float__

    def __repr__(self):
        return "<einsat gather index %s>" % self.text()


# ---------------------------------------------------------------- expressions

_ADD, _MUL, _NEG, _POST = 1, 2, 3, 4


class Expr(_Ordered):
    """A traced value: a number, a tensor or a pair of the program being
    built. Numbers combine with ``+ - * /`` (and Python numbers); tensors
    are indexed (``A[i, j]``), pairs projected (``p[0]``, ``a, b = p``);
    ``x.shape`` are the sizes of a tensor's axes as numbers; see
    :mod:`einsat.builder`."""

    def __init__(self, ty, text_fn, prec, free=_NOFREE, chain=None):
        self.ty = ty
        self._text_fn = text_fn
        self.prec = prec
        self.free = free  # the binders it uses (see _free)
        self.chain = chain  # the parameter it is an access chain from (E, E[i], P.0), else None
        self.parts = None  # a complex number's (re, im) when built from them (None: a zero part)
        self.const = None  # the value of a number literal
        self.neg_of = None  # x, when this is -x
        self.leaf = False  # a name, a literal, or an access chain or projection of one (see _complex_div)

    def _text(self, prec):
        t = self._text_fn()
        return "(%s)" % t if self.prec < prec else t

    # arithmetic -------------------------------------------------
    def _bin(self, o, op, prec, right=False):
        o = _expr_of(o)
        a, b = (o, self) if right else (self, o)
        if a.ty == _C or b.ty == _C:
            return _complex_bin(a, b, op)
        for e in (a, b):
            if e.ty != _R:
                _not_number(e, "`%s`" % op)
                raise TraceError(
                    "einsat.fn: `%s` on %s: arithmetic takes numbers; write a whole-tensor "
                    "operation elementwise with einsat.gen (gen(lambda i: x[i] %s y[i]))"
                    % (op, _what(e.ty), op)
                )
        # left-associative: the right operand of the same level is bracketed
        return Expr(_R, lambda: "%s %s %s" % (a._text(prec), op, b._text(prec + 1)), prec, _free(a, b))

    def __add__(self, o):
        return self._bin(o, "+", _ADD)

    def __radd__(self, o):
        return self._bin(o, "+", _ADD, True)

    def __sub__(self, o):
        return self._bin(o, "-", _ADD)

    def __rsub__(self, o):
        return self._bin(o, "-", _ADD, True)

    def __mul__(self, o):
        return self._bin(o, "*", _MUL)

    def __rmul__(self, o):
        return self._bin(o, "*", _MUL, True)

    def __truediv__(self, o):
        return self._bin(o, "/", _MUL)

    def __rtruediv__(self, o):
        return self._bin(o, "/", _MUL, True)

    def __neg__(self):
        if self.ty == _C:
            re, im = _parts(self)
            return _complex(_neg(re), _neg(im))
        if self.ty != _R:
            _not_number(self, "`-`")
            raise TraceError("einsat.fn: `-` on %s: negation takes numbers" % _what(self.ty))
        e = Expr(_R, lambda: "-%s" % self._text(_NEG), _NEG, self.free)
        e.neg_of = self
        return e

    def __pos__(self):
        return self

    # complex numbers --------------------------------------------
    @property
    def real(self):
        """The real part of a complex number (``z.0`` in the program); a
        real number's is itself."""
        return _part(self, 0, "real")

    @property
    def imag(self):
        """The imaginary part of a complex number (``z.1`` in the
        program); a real number's is 0."""
        return _part(self, 1, "imag")

    def conjugate(self):
        """The complex conjugate (:func:`conj`)."""
        return conj(self)

    # comparisons (conditions for `where`): `<` ... `>=` from _Ordered
    def __eq__(self, o):
        return _compare(self, o, "=")

    def __ne__(self, o):
        return _compare(self, o, "!=")

    __hash__ = object.__hash__

    def __pow__(self, o):
        # `x ** 2` is `x * x` (the same value: both are the correctly
        # rounded square), any other power the language's `pow`
        if _whole(o) and o == 2:
            return self * self
        return power(self, o)

    def __rpow__(self, o):
        return power(o, self)

    def __bool__(self):
        raise TraceError(
            "einsat.fn: a traced value has no truth value (an `if`, `and`, `or` or comparison on "
            "it): the program is traced once, for every value"
        )

    def __float__(self):
        raise TraceError("einsat.fn: a traced value converted to a Python number: it has no value while tracing")

    __int__ = __index__ = __float__

    def __array__(self, *a, **k):
        raise TraceError(
            "einsat.fn: a traced value given to numpy: write the operation with einsat.gen, "
            "einsat.sum and einsat's scalar functions (einsat.exp, ...)"
        )

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # a numpy number on the left (np.float64(2) * x[i], np.complex64(2j)
        # * z[i]) is that number; any other use of numpy is an error
        op = _UFUNC_OPS.get(ufunc.__name__)
        if op is not None and method == "__call__" and not kwargs and len(inputs) == 2 and all(
                isinstance(x, Expr) or (type(x).__module__ == "numpy" and getattr(x, "ndim", None) == 0)
                for x in inputs):
            a, b = (_expr_of(x) for x in inputs)
            return op(a, b)
        self.__array__()

    def __iter__(self):
        if self.ty == _C:
            raise TraceError("einsat.fn: a complex number iterated over: its parts are z.real and z.imag")
        if self.ty[0] == "pair":
            return iter((self[0], self[1]))
        raise TraceError("einsat.fn: a traced value iterated over: use einsat.gen or einsat.sum")

    def __len__(self):
        raise TraceError(
            "einsat.fn: len() of a traced value: its sizes are symbolic; x.shape[0] is the size of "
            "x's axis 0 as a traced number"
        )

    @property
    def shape(self):
        """The sizes of the tensor's axes, as traced numbers (``sum(lambda
        i: x[i]) / x.shape[0]`` is a mean; the size name ``n`` in the
        text)."""
        tr = _trace()
        out = []
        t = self.ty
        while t[0] == "arr":
            cls = t[1]
            tr.size_values = True
            out.append(Expr(_R, (lambda c: lambda: tr.size_name(c))(cls), 9))
            t = t[2]
        return tuple(out)

    # indexing ---------------------------------------------------
    def __getitem__(self, idx):
        tr = _trace()
        if self.ty[0] == "pair":
            if not (_whole(idx) and idx in (0, 1)):
                raise TraceError(
                    "einsat.fn: a pair is indexed with 0 or 1 (p[0], p[1]: the language's p.0, p.1), "
                    "not %s" % _short(idx)
                )
            k = int(idx)
            base = self
            chain = self.chain
            return _as_leaf(Expr(self.ty[1 + k], lambda: "%s.%d" % (base._text(_POST), k), _POST, self.free, chain),
                            self.leaf)
        if not isinstance(idx, tuple):
            idx = (idx,)
        if self.ty == _R:
            raise TraceError("einsat.fn: a number (%s) indexed" % self._text(_POST))
        if self.ty == _C:
            raise TraceError(
                "einsat.fn: a complex number (%s) indexed: its parts are z.real and z.imag (the "
                "program's z.0 and z.1)" % self._text(_POST)
            )
        if len(idx) > _rank(self.ty):
            raise TraceError(
                "einsat.fn: %s has %d ax%s but is indexed with %d"
                % (self._text(_POST), _rank(self.ty), "is" if _rank(self.ty) == 1 else "es", len(idx))
            )
        t = self.ty
        parts = []
        free = self.free
        for axis, x in enumerate(idx):
            if isinstance(x, _GatherIndex):
                if _elem(self.ty) == _Z:
                    x._misuse("indexes the integer array %s (gathers do not nest)" % self.chain, number=False)
                if self.chain is None:
                    raise TraceError(
                        "einsat.fn: a gather (%s inside [...]) reads a parameter or an access "
                        "chain from one (E[tok[i], j], F[j][tok[i]]), not %s"
                        % (x.text(), _short(self._text(0)))
                    )
                parts.append(x)
                free = free | x.free
                t = t[2]
                continue
            a = _affine_of(x)
            i = a.plain()
            if i is not None:
                tr.check_bound(i)
                _union(t[1], i.cls, "index %s" % i.name)
            else:
                for j in a.coef:
                    tr.check_bound(j)
            parts.append(a)
            free = free | frozenset(a.coef)
            t = t[2]
        if t == _Z:
            # an element of an integer array: a gather index
            return _GatherIndex(tr, self.chain, parts, 0, free)
        if _elem(self.ty) == _Z:
            raise TraceError(
                "einsat.fn: the integer array %s has %d axes and is read at %d: an integer array is "
                "read at every axis (%s[%s])"
                % (self.chain, _rank(self.ty), len(idx), self.chain,
                   ", ".join("ijklmn"[a % 6] for a in range(_rank(self.ty))))
            )
        base = self

        def text():
            return "%s[%s]" % (
                base._text(_POST),
                ", ".join(p.text() if isinstance(p, _GatherIndex) else p.text(tr.index_name) for p in parts),
            )

        return _as_leaf(Expr(t, text, _POST, free, self.chain), self.leaf)

    def __repr__(self):
        return "<einsat traced %s: %s>" % (_what(self.ty), self._text(0))


_UFUNC_OPS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "true_divide": lambda a, b: a / b,
    "divide": lambda a, b: a / b,
}


def _as_leaf(e, leaf=True):
    e.leaf = leaf
    return e


def _what(t):
    if t == _R:
        return "a number"
    if t == _C:
        return "a complex number"
    if t[0] == "pair":
        return "a pair"
    if _elem(t) == _Z:
        return "an integer array of %d ax%s" % (_rank(t), "is" if _rank(t) == 1 else "es")
    if _elem(t) == _C:
        return "a complex tensor of %d ax%s" % (_rank(t), "is" if _rank(t) == 1 else "es")
    return "a tensor of %d axes" % _rank(t)


def _elem(t):
    while t[0] == "arr":
        t = t[2]
    return t


class IntegerArrayAsNumber(TraceError):
    """An integer array used as a number: ``param`` names the parameter
    (the trace is tried again with it as a float array, see
    :func:`_source`)."""

    param = None


def _IntegerAsNumber(chain):
    """What makes the error (from its message) for the integer array
    ``chain`` (a parameter's name, or an expression starting with it) used
    as a number."""
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", chain or "")

    def make(message):
        e = IntegerArrayAsNumber(message)
        e.param = m.group(0) if m else None
        return e

    return make


def _not_number(e, what):
    """The error for an integer array where a number is needed."""
    if _elem(e.ty) == _Z:
        raise _IntegerAsNumber(e.chain)(
            "einsat.fn: the integer array %s given to %s: an integer array (an integer numpy "
            "argument, a parameter [n]Z) may only be read inside an index (E[%s[i], j]); pass it "
            "as floats (%s.astype(float)) to compute with its values" % (e.chain, what, e.chain, e.chain)
        )


def _number(x):
    x = float(x)
    if not math.isfinite(x):
        raise TraceError("einsat.fn: %r: the language has no literal for infinities and NaN (1/0 and 0/0 make them)" % x)
    if x == int(x) and _builtins.abs(x) < 2**53:
        text = str(int(x))
    else:
        text = repr(x)
    if x < 0 or text.startswith("-"):
        e = Expr(_R, lambda: text.lstrip("-"), 9).__neg__()
    else:
        e = Expr(_R, lambda: text, 9)
    e.const = x
    e.leaf = True
    return e


def _expr_of(x):
    if isinstance(x, Expr):
        return x
    if isinstance(x, tuple):
        if len(x) != 2:
            raise TraceError("einsat.fn: a tuple of %d values: pairs have two parts" % len(x))
        a, b = _expr_of(x[0]), _expr_of(x[1])
        for e in (a, b):
            if _elem(e.ty) == _Z:
                _not_number(e, "a pair")
        return Expr(("pair", a.ty, b.ty), lambda: "(%s, %s)" % (a._text(0), b._text(0)), 9, _free(a, b))
    if isinstance(x, (Index, _Affine)):
        return _index_value(_affine_of(x))
    if isinstance(x, _GatherIndex):
        x._misuse("used as a number")
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return _number(x)
    if isinstance(x, bool):
        return _number(float(x))
    if type(x).__module__ == "numpy" and getattr(x, "ndim", None) == 0 and getattr(x, "dtype", None) is not None \
            and x.dtype.kind in "biuf":
        return _number(float(x))
    if isinstance(x, numbers.Complex) or (
            type(x).__module__ == "numpy" and getattr(x, "ndim", None) == 0
            and getattr(getattr(x, "dtype", None), "kind", None) == "c"):
        z = complex(x)
        # a zero part is left out of the arithmetic (see _complex_bin)
        return _complex(None if z.real == 0 else _number(z.real), None if z.imag == 0 else _number(z.imag))
    shape = getattr(x, "shape", None)
    raise TraceError(
        "einsat.fn: %s is not traceable: a traced function computes with its arguments, gen/sum "
        "indices, numbers and einsat's functions (pass arrays as arguments%s)"
        % (
            "an array of shape %s" % (tuple(shape),) if shape is not None else "a %s (%s)" % (type(x).__name__, _short(x)),
            "" if shape is None else ", not from the enclosing scope",
        )
    )


def _index_value(a):
    """An index expression as a number (``x[i] * i``: the language's
    index values)."""
    if not a.coef:
        return _number(a.const)
    tr = _trace()
    for i in a.coef:
        tr.check_bound(i)
        tr.index_values.add(i)
    i = a.plain()
    if i is not None:
        return Expr(_R, lambda: tr.index_name(i), 9, frozenset([i]))
    return Expr(_R, lambda: "(%s)" % a.text(tr.index_name), 9, frozenset(a.coef))


def _short(x):
    r = repr(x)
    return r if len(r) <= 40 else r[:37] + "..."


# ---------------------------------------------------------------- complex numbers
# A complex number is the pair (re, im) of its parts in the program. One
# read from a parameter, a let value or a tensor (z, A[i, j]) is written
# as such, its parts z.0 and z.1; one computed is written as the pair of
# its parts' expressions, each of which may be None: a part known to be
# zero (of a real number, or of a Python number such as 1j), left out of
# the arithmetic (C99 Annex G's rule for real and imaginary operands).


def _complex(re, im):
    """The complex number of parts ``re`` and ``im`` (real traced numbers,
    or None for a zero part)."""

    def text():
        return "(%s, %s)" % (_part_text(re), _part_text(im))

    e = Expr(_C, text, 9, _free(re, im))
    e.parts = (re, im)
    return e


def _part_text(p):
    return "0" if p is None else p._text(0)


def _parts(e):
    """The parts (re, im) of a number or a complex number ``e`` (a real
    number's imaginary part is None: zero)."""
    if e.ty == _R:
        return e, None
    if e.parts is None:
        # read from a parameter, a let value or a tensor: its projections
        e.parts = tuple(
            _as_leaf(Expr(_R, (lambda k: lambda: "%s.%d" % (e._text(_POST), k))(k), _POST, e.free, e.chain), e.leaf)
            for k in (0, 1)
        )
    return e.parts


def _part(e, k, what):
    if e.ty not in (_R, _C):
        _not_number(e, ".%s" % what)
        raise TraceError(
            "einsat.fn: .%s of %s: it is the part of a number (write it elementwise: "
            "gen(lambda i: z[i].%s))" % (what, _what(e.ty), what)
        )
    p = _parts(e)[k]
    return _number(0) if p is None else p


# The arithmetic of parts moves negations outwards, each step exact in
# IEEE arithmetic (-(-x) = x, x - (-y) = x + y, (-x) * y = -(x * y)), so
# the conjugate's products read as written by hand: conj(x) * y is
# (x.0 * y.0 + x.1 * y.1, x.0 * y.1 - x.1 * y.0).


def _neg(x):
    if x is None:
        return None
    return x.neg_of if x.neg_of is not None else -x


def _add(x, y):
    if x is None:
        return y
    if y is None:
        return x
    if y.neg_of is not None:
        return x - y.neg_of
    if x.neg_of is not None:
        return y - x.neg_of
    return x + y


def _sub(x, y):
    if y is None:
        return x
    if x is None:
        return _neg(y)
    if y.neg_of is not None:
        return x + y.neg_of
    return x - y


def _mul(x, y):
    """``x * y`` of parts (None: zero); a literal 1 or -1 factor is left
    out (exact in IEEE arithmetic: 1j * z is (-z.1, z.0))."""
    if x is None or y is None:
        return None
    for a, b in ((x, y), (y, x)):
        if a.const == 1:
            return b
        if a.const == -1:
            return _neg(b)
    if x.neg_of is not None:
        return _neg(_mul(x.neg_of, y))
    if y.neg_of is not None:
        return _neg(_mul(x, y.neg_of))
    return x * y


def _zero(p):
    return _number(0) if p is None else p


def _bind(parts, body, done=()):
    """``body`` of ``parts`` (pairs (a traced number or None, a name)),
    the ones that are not leaves (names, literals, reads) bound by ``let``
    first: each is used several times."""
    if not parts:
        return body(done)
    (p, name), rest = parts[0], parts[1:]
    if p is None or p.leaf:
        return _bind(rest, body, done + (p,))
    return _let(p, name, lambda v: _bind(rest, body, done + (v,)))


def _complex_div(a, b):
    """``a / b`` as numpy divides complex numbers (Smith's algorithm, its
    loop ``CDOUBLE_divide`` written out): with ``d = b``,

        |d.0| >= |d.1|, d.0 = 0:  (a.0 / |d.0|, a.1 / |d.0|)
        |d.0| >= |d.1|:  rat = d.1 / d.0, scl = 1 / (d.0 + d.1 * rat),
                         ((a.0 + a.1 * rat) * scl, (a.1 - a.0 * rat) * scl)
        else:            rat = d.0 / d.1, scl = 1 / (d.1 + d.0 * rat),
                         ((a.0 * rat + a.1) * scl, (a.1 * rat - a.0) * scl)

    A zero part's terms left out as elsewhere: by a real ``r`` it is
    ``(a.0 * (1 / r), a.1 * (1 / r))``, numpy's value where the parts are
    finite."""
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    if all(p is None or p.const is not None for p in (br, bi)):
        # a Python number: its branch, rat and scl computed here, as numpy
        # computes them (a zero rat is a zero part, left out)
        dr, di = (0.0 if p is None else float(p.const) for p in (br, bi))
        with_rat = None
        if _builtins.abs(dr) >= _builtins.abs(di) and dr != 0:
            rat = di / dr
            scl = 1.0 / (dr + di * rat)
            with_rat = 0
        elif _builtins.abs(dr) < _builtins.abs(di):
            rat = dr / di
            scl = 1.0 / (di + dr * rat)
            with_rat = 1
        if with_rat is not None and math.isfinite(rat) and math.isfinite(scl):
            r = None if rat == 0 else _number(rat)
            c = _number(scl)
            if with_rat == 0:
                return _complex(_mul(_add(ar, _mul(ai, r)), c), _mul(_sub(ai, _mul(ar, r)), c))
            return _complex(_mul(_add(_mul(ar, r), ai), c), _mul(_sub(_mul(ai, r), ar), c))
        if with_rat is None:
            # by zero: (a.0 / 0, a.1 / 0)
            return _complex(_zero(ar) / 0, _zero(ai) / 0)
    if bi is None:
        inv = 1 / _zero(br)
        return _complex(_mul(ar, inv), _mul(ai, inv))
    if br is None:
        # |0| >= |d.1| only where d.1 = 0 (a division by zero)
        inv = 1 / bi
        return _complex(_mul(ai, inv), _neg(_mul(ar, inv)))

    def part(k):
        return _bind(((ar, "a0"), (ai, "a1"), (br, "b0"), (bi, "b1")), lambda ps: smith(k, *ps))

    def smith(k, ar, ai, br, bi):
        def first(rat):
            def scaled(scl):
                top = _add(ar, _mul(ai, rat)) if k == 0 else _sub(ai, _mul(ar, rat))
                return _zero(_mul(top, scl))
            return _let(1 / (br + bi * rat), "scl", scaled)

        def second(rat):
            def scaled(scl):
                top = _add(_mul(ar, rat), ai) if k == 0 else _sub(_mul(ai, rat), ar)
                return _zero(_mul(top, scl))
            return _let(1 / (bi + br * rat), "scl", scaled)

        return where(
            abs(br) >= abs(bi),
            where(br == 0, _zero((ar, ai)[k]) / abs(br), _let(bi / br, "rat", first)),
            _let(br / bi, "rat", second),
        )

    return _complex(part(0), part(1))


def _complex_bin(a, b, op):
    """``a op b`` where ``a`` or ``b`` is a complex number: numpy's formulas
    ((a.0*b.0 - a.1*b.1, a.0*b.1 + a.1*b.0) for a product, Smith's
    algorithm for a quotient), with a zero part's terms left out."""
    for e in (a, b):
        if e.ty not in (_R, _C):
            _not_number(e, "`%s`" % op)
            raise TraceError(
                "einsat.fn: `%s` on %s: arithmetic takes numbers; write a whole-tensor "
                "operation elementwise with einsat.gen (gen(lambda i: x[i] %s y[i]))"
                % (op, _what(e.ty), op)
            )
    if op == "/":
        return _complex_div(a, b)
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    if op == "+":
        return _complex(_add(ar, br), _add(ai, bi))
    if op == "-":
        return _complex(_sub(ar, br), _sub(ai, bi))
    return _complex(_sub(_mul(ar, br), _mul(ai, bi)), _add(_mul(ar, bi), _mul(ai, br)))


def conj(z):
    """The complex conjugate of a traced number: ``(z.0, -z.1)`` of a
    complex number ``z`` (``z.conjugate()``); a real number's is itself.
    The Hermitian inner product: ``einsat.sum(lambda i: einsat.conj(x[i])
    * y[i])`` (numpy's ``np.vdot(x, y)``)."""
    e = _expr_of(z)
    if e.ty == _R:
        return e
    if e.ty != _C:
        _not_number(e, "einsat.conj")
        raise TraceError(
            "einsat.conj of %s: it takes a number (write it elementwise: gen(lambda i: "
            "einsat.conj(z[i])))" % _what(e.ty)
        )
    re, im = _parts(e)
    return _complex(re, _neg(im))


# ---------------------------------------------------------------- conditions

_OR, _AND, _NOT, _CMP = 1, 2, 3, 4


class Cond:
    """A traced condition: a comparison of numbers or of index expressions,
    combined with ``&``, ``|`` and ``~`` (Python's ``and``, ``or`` and
    ``not`` would need its truth value, which it has not while tracing).
    ``indices`` is true when every comparison in it is of indices (such a
    condition may also stand in a bracket)."""

    def __init__(self, text_fn, prec, indices, free=_NOFREE):
        self._text_fn = text_fn
        self.prec = prec
        self.indices = indices
        self.free = free

    def _text(self, prec):
        t = self._text_fn()
        return "(%s)" % t if self.prec < prec else t

    def __and__(self, o):
        o = _cond_of(o, "&")
        # `&&` binds tighter than `||`: an `||` operand is bracketed
        return Cond(lambda: "%s && %s" % (self._text(_AND), o._text(_AND)), _AND, self.indices and o.indices,
                    _free(self, o))

    def __or__(self, o):
        o = _cond_of(o, "|")
        return Cond(lambda: "%s || %s" % (self._text(_OR), o._text(_OR)), _OR, self.indices and o.indices,
                    _free(self, o))

    def __invert__(self):
        return Cond(lambda: "!%s" % self._text(_CMP), _NOT, self.indices, self.free)

    __rand__ = __and__
    __ror__ = __or__

    def __bool__(self):
        raise TraceError(
            "einsat.fn: a condition has no truth value while tracing: combine conditions with "
            "& | ~ (not and/or/not), and choose with einsat.where(c, a, b)"
        )

    def __repr__(self):
        return "<einsat traced condition: %s>" % self._text(0)


def _cond_of(c, op):
    if isinstance(c, Cond):
        return c
    raise TraceError(
        "einsat.fn: `%s` combines conditions (comparisons such as x[i] > 0 or i <= j), not %s"
        % (op, _short(c))
    )


def _is_index(x):
    return isinstance(x, (Index, _Affine)) or _whole(x)


def _compare(a, b, op):
    """``a op b``: of index expressions (a whole number on one side at
    most) or of numbers (an index with a number: the index's value)."""
    if _is_index(a) and _is_index(b) and not (_whole(a) and _whole(b)):
        tr = _trace()
        x, y = _affine_of(a), _affine_of(b)
        for i in list(x.coef) + list(y.coef):
            tr.check_bound(i)
        return Cond(lambda: "%s %s %s" % (x.text(tr.index_name), op, y.text(tr.index_name)), _CMP, True,
                    frozenset(x.coef) | frozenset(y.coef))
    # numbers (an index compared with a number is its value)
    x, y = _expr_of(a), _expr_of(b)
    for e in (x, y):
        if e.ty == _C:
            raise TraceError(
                "einsat.fn: `%s` on a complex number: comparisons take real numbers (compare "
                "z.real or z.imag)" % op
            )
        if e.ty != _R:
            _not_number(e, "`%s`" % op)
            raise TraceError("einsat.fn: `%s` on %s: comparisons take numbers" % (op, _what(e.ty)))
    return Cond(lambda: "%s %s %s" % (x._text(_ADD), op, y._text(_ADD)), _CMP, False, _free(x, y))


def eq(a, b):
    """``a = b``: equality of index expressions or of traced numbers."""
    return _compare(a, b, "=")


def ne(a, b):
    """``a != b``: inequality of index expressions or of traced numbers."""
    return _compare(a, b, "!=")


def where(c, a, b):
    """``where(c, a, b)``: the number ``a`` where the condition ``c`` holds,
    else ``b``; only the chosen side is evaluated (``where(x[i] != 0,
    1 / x[i], 0)`` is never NaN from a division by zero). Complex sides
    choose part by part: ``(where(c, a.0, b.0), where(c, a.1, b.1))``."""
    c = _cond_of(c, "where")
    x, y = _expr_of(a), _expr_of(b)
    for e in (x, y):
        if e.ty not in (_R, _C):
            _not_number(e, "einsat.where")
            raise TraceError("einsat.where of %s: its sides are numbers" % _what(e.ty))
    if _C in (x.ty, y.ty):
        # part by part (a zero part where both sides' is zero)
        (xr, xi), (yr, yi) = _parts(x), _parts(y)
        return _complex(
            *(None if p is None and q is None else where(c, 0 if p is None else p, 0 if q is None else q)
              for p, q in ((xr, yr), (xi, yi)))
        )
    return Expr(_R, lambda: "where(%s, %s, %s)" % (c._text(0), x._text(0), y._text(0)), _POST, _free(c, x, y))


def bracket(c):
    """``[c]`` of an index condition: 1 where it holds, else a strong zero
    (``bracket(j <= i) * A[i, j]`` is the lower triangle, and a strong zero
    times an infinity is 0)."""
    c = _cond_of(c, "bracket")
    if not c.indices:
        raise TraceError(
            "einsat.bracket takes a condition on indices (j <= i, i > 0); choose between numbers "
            "with einsat.where(c, a, b)"
        )
    return Expr(_R, lambda: "[%s]" % c._text(0), _POST, c.free)


# ---------------------------------------------------------------- binders


def _params(api, body, what, count=None):
    """The parameters of the Python function ``body`` given to
    ``einsat.<api>`` (``count`` of them, when given); ``what``: (what they
    are, the call's form)."""
    if not callable(body):
        raise TraceError("einsat.%s takes a function of %s, as %s" % (api, what[0], what[1]))
    try:
        params = list(inspect.signature(body).parameters.values())
    except (TypeError, ValueError):
        raise TraceError("einsat.%s: cannot read the parameters of %r" % (api, body)) from None
    if not params or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) \
            or (count is not None and len(params) != count):
        raise TraceError("einsat.%s takes a function of %s, as %s" % (api, what[0], what[1]))
    return params


def _new_index(tr, api, name, size, like):
    """An index named after ``name`` for ``einsat.<api>``, its range given
    (``size``, ``like``) or left to be inferred."""
    cls = _Class()
    if size is not None:
        if not _whole(size) or size < 0:
            raise TraceError("einsat.%s: the range must be a whole number >= 0, not %r" % (api, size))
        cls.literal, cls.size, cls.where = int(size), int(size), "the range %d given to it" % size
    if like is not None:
        if not (isinstance(like, tuple) and len(like) == 2):
            raise TraceError("einsat.%s: like= takes (a traced argument, one of its axes)" % api)
        arr, axis = like
        if not isinstance(arr, Expr) or not _whole(axis) or not 0 <= axis < _rank(arr.ty):
            raise TraceError("einsat.%s: like= takes (a traced argument, one of its axes)" % api)
        t = arr.ty
        for _ in range(axis):
            t = t[2]
        _union(t[1], cls, "like= of index %s" % name)
    return Index(tr.fresh_index(name), cls)


def _check_inferred(api, indices, form=None):
    for i in indices:
        if i.cls.find().size is None:
            raise TraceError(
                "einsat.fn: the range of index %s cannot be inferred: it reads no axis plainly "
                "(as A[%s]); give it: %s or like=(x, axis)"
                % (i.name, i.name, form or "einsat.%s(lambda %s: ..., n)" % (api, i.name))
            )


def _binder(kind, body, size, like):
    tr = _trace()
    api = {"max": "max_over", "min": "min_over"}.get(kind, kind)
    params = _params(api, body, ("one or more indices", "einsat.%s(lambda i: ...) or (lambda i, j: ...)" % api))
    indices = [_new_index(tr, api, p.name, size, like) for p in params]
    tr.bound.extend(indices)
    try:
        e = _expr_of(body(*indices))
    finally:
        del tr.bound[-len(indices):]
    _check_inferred(api, indices)

    def binds():
        return ", ".join("%s:%s" % (tr.index_name(i), tr.size_name(i.cls)) for i in indices)

    if kind == "sum" and e.ty == _C:
        # the pair of the sums of the parts (a zero part's sum is left out)
        def part(p):
            if p is None:
                return None
            return Expr(_R, lambda: "sum(%s) %s" % (binds(), p._text(0)), 0, p.free - frozenset(indices))

        return _complex(*(part(p) for p in _parts(e)))
    if kind in ("max", "min") and e.ty == _C:
        raise TraceError(
            "einsat.fn: einsat.%s of a complex number: complex numbers are not ordered (reduce "
            "z.real or z.imag)" % api
        )
    if kind in ("sum", "max", "min"):
        if e.ty != _R:
            _not_number(e, "einsat.%s" % api)
            raise TraceError(
                "einsat.fn: einsat.%s of %s: a %s %s numbers"
                % (api, _what(e.ty), kind, "adds" if kind == "sum" else "reduces")
            )
        ty = _R
    else:
        if _elem(e.ty) == _Z:
            _not_number(e, "einsat.gen")
        ty = e.ty
        for i in reversed(indices):
            ty = ("arr", i.cls, ty)

    def text():
        return "%s(%s) %s" % (kind, binds(), e._text(0))

    return Expr(ty, text, 0, e.free - frozenset(indices))


def gen(body, n=None, like=None):
    """``gen(i:s) e``: the tensor whose element ``i`` is ``body(i)``
    (``lambda i, j:`` for ``gen(i:s, j:t)``). The range is inferred from the
    axes ``i`` reads, or given as ``n`` (a number) or ``like=(x, axis)``."""
    return _binder("gen", body, n, like)


def sum(body, n=None, like=None):
    """``sum(j:s) e``: the sum of the numbers ``body(j)`` (``lambda j, k:``
    sums over both). Ranges as :func:`gen`'s. The sum of complex numbers
    is the pair of the sums of their parts, ``(sum(j:s) e.0, sum(j:s)
    e.1)``, each written out (``A[i, j].0 * x[j].0 - A[i, j].1 * x[j].1``)."""
    return _binder("sum", body, n, like)


def max_over(body, n=None, like=None):
    """``max(j:s) e``: the largest of the numbers ``body(j)`` (IEEE
    maximum: a NaN wins, and an empty range gives -inf). Ranges as
    :func:`gen`'s."""
    return _binder("max", body, n, like)


def min_over(body, n=None, like=None):
    """``min(j:s) e``: the smallest of the numbers ``body(j)`` (a NaN wins,
    an empty range gives +inf). Ranges as :func:`gen`'s."""
    return _binder("min", body, n, like)


def _acc_type(t):
    return t in (_R, _C) or (t[0] == "pair" and _acc_type(t[1]) and _acc_type(t[2]))


def _type_words(t):
    if t == _R:
        return "R"
    if t == _C:
        return "complex"
    if t[0] == "pair":
        return "(%s, %s)" % (_type_words(t[1]), _type_words(t[2]))
    return _what(t)


def fold(init, body, n=None, like=None):
    """``fold(i:s, acc = init) e``: ``acc = init``, then for ``i`` = 0, 1,
    ..., s-1 in that order ``acc = body(i, acc)``; the final ``acc``. The
    accumulator is a number or a pair (a Python tuple, nested for more
    numbers: ``(a, (b, c))``), read inside the body as ``acc[0]``,
    ``acc[1]`` or ``a, b = acc``, and ``body`` gives a value of the same
    shape. The range is inferred from the axes ``i`` reads (``c[i]``), or
    given as ``n`` or ``like=(x, axis)``, as for :func:`gen`. Horner::

        polyval = einsat.fn(lambda c, x: einsat.fold(0, lambda i, acc: acc * x + c[i]))
    """
    tr = _trace()
    params = _params("fold", body, ("an index and the accumulator", "einsat.fold(init, lambda i, acc: ...)"), 2)
    e0 = _expr_of(init)
    if not _acc_type(e0.ty):
        _not_number(e0, "the accumulator of einsat.fold")
        raise TraceError(
            "einsat.fold: the accumulator is %s: it must be a number or a pair (a tuple) of numbers "
            "or such pairs" % _type_words(e0.ty)
        )
    i = _new_index(tr, "fold", params[0].name, n, like)
    acc = _Var(tr.fresh_value(params[1].name), "the accumulator of a fold")
    accx = _as_leaf(Expr(e0.ty, lambda: acc.name, 9, frozenset([acc])))
    tr.bound.append(i)
    try:
        e = _expr_of(body(i, accx))
    finally:
        tr.bound.pop()
    _check_inferred("fold", [i], "einsat.fold(init, lambda %s, %s: ..., n)" % (i.name, acc.name))
    if e.ty != e0.ty:
        raise TraceError(
            "einsat.fold: the body gives the next value of the accumulator %s, so it must have the "
            "accumulator's shape %s, but it gives %s%s"
            % (params[1].name, _type_words(e0.ty), _type_words(e.ty),
               " (start it complex: einsat.fold(0j, ...))" if (e0.ty, e.ty) == (_R, _C) else "")
        )

    def text():
        return "fold(%s:%s, %s = %s) %s" % (
            tr.index_name(i), tr.size_name(i.cls), acc.name, e0._text(0), e._text(0))

    return Expr(e0.ty, text, 0, e0.free | (e.free - frozenset([i, acc])))


def let(value, body):
    """``let v = value in body(v)``: names a value once (a shared subterm,
    a tensor computed once and indexed in the body); the name is the
    lambda's parameter's (``einsat.let(sum(lambda j: x[j]), lambda s:
    gen(lambda i: x[i] / s))``). ``v`` is valid only inside ``body``."""
    params = _params("let", body, ("the bound value", "einsat.let(value, lambda v: ...)"), 1)
    return _let(value, params[0].name, body)


def _let(value, name, body):
    """:func:`let` with the name given (made unique in the function)."""
    tr = _trace()
    v = _expr_of(value)
    if _elem(v.ty) == _Z:
        _not_number(v, "einsat.let")
    var = _Var(tr.fresh_value(name), "a let value")
    x = _as_leaf(Expr(v.ty, lambda: var.name, 9, frozenset([var])))
    if v.ty == _C and v.parts is not None and any(p is None for p in v.parts):
        # a zero part stays one (left out of the arithmetic)
        proj = _parts(_as_leaf(Expr(_C, x._text_fn, 9, x.free)))
        x.parts = tuple(None if p is None else q for p, q in zip(v.parts, proj))
    e = _expr_of(body(x))

    def text():
        return "let %s = %s in %s" % (var.name, v._text(0), e._text(0))

    return Expr(e.ty, text, 0, v.free | (e.free - frozenset([var])))


class _Eps:
    """``eps[i, j, k]`` (and ``eps[i, j]``): the Levi-Civita symbol of
    index expressions, a number: 1 for an even permutation of 0, 1, 2
    (0, 1), -1 for an odd one, else 0 (a cross product: ``gen(lambda i:
    sum(lambda j, k: eps[i, j, k] * a[j] * b[k]))``)."""

    def __getitem__(self, idx):
        tr = _trace()
        if not isinstance(idx, tuple) or len(idx) not in (2, 3):
            raise TraceError("einsat.eps takes 2 or 3 index expressions: eps[i, j] or eps[i, j, k]")
        parts = [_affine_of(x) for x in idx]
        for a in parts:
            for j in a.coef:
                tr.check_bound(j)
        free = frozenset(j for a in parts for j in a.coef)
        return Expr(_R, lambda: "eps[%s]" % ", ".join(a.text(tr.index_name) for a in parts), _POST, free)

    def __call__(self, *idx):
        return self[idx]

    def __repr__(self):
        return "einsat.eps"


eps = _Eps()


def _scalar_fn(name):
    def f(x):
        e = _expr_of(x)
        if e.ty == _C:
            raise TraceError(_COMPLEX_FN.get(name, _COMPLEX_FN[None]) % {"f": name})
        if e.ty != _R:
            _not_number(e, "einsat.%s" % name)
            raise TraceError("einsat.%s of %s: it takes a number" % (name, _what(e.ty)))
        return Expr(_R, lambda: "%s(%s)" % (name, e._text(0)), _POST, e.free)

    f.__name__ = name
    f.__doc__ = "``%s(e)`` of a traced number (the language's scalar function)." % name
    return f


_COMPLEX_FN = {
    None: "einsat.%(f)s of a complex number: the builder has no complex %(f)s (numpy's has its "
          "branch cuts and special cases at infinities and NaN); write it from z.real and z.imag",
    "abs": "einsat.abs of a complex number: numpy's is hypot(z.real, z.imag), which the language "
           "has not; write einsat.sqrt(z.real * z.real + z.imag * z.imag) (numpy's value within "
           "rounding, but it overflows to inf where |z| > 1e154 and underflows where |z| < 1e-154, "
           "where hypot does not)",
    "exp": "einsat.exp of a complex number: the builder does not write numpy's complex exp (its "
           "special cases at infinities and NaN); where the parts are finite it is "
           "einsat.exp(z.real) * einsat.cos(z.imag) + 1j * (einsat.exp(z.real) * einsat.sin(z.imag))",
}

exp = _scalar_fn("exp")
log = _scalar_fn("log")
sqrt = _scalar_fn("sqrt")
sin = _scalar_fn("sin")
cos = _scalar_fn("cos")
tanh = _scalar_fn("tanh")
erf = _scalar_fn("erf")
abs = _scalar_fn("abs")


def _two(name, doc):
    def f(a, b):
        x, y = _expr_of(a), _expr_of(b)
        for e in (x, y):
            if e.ty == _C:
                raise TraceError(
                    "einsat.%s of a complex number: complex numbers are not ordered (compare z.real "
                    "or z.imag)" % f.__name__
                )
            if e.ty != _R:
                _not_number(e, "einsat.%s" % f.__name__)
                raise TraceError("einsat.%s of %s: it takes numbers" % (f.__name__, _what(e.ty)))
        return Expr(_R, lambda: "%s(%s, %s)" % (name, x._text(0), y._text(0)), _POST, _free(x, y))

    f.__doc__ = doc
    return f


maximum = _two("max", "``max(a, b)``: the larger of two traced numbers (a NaN and a number give the number).")
maximum.__name__ = "maximum"
minimum = _two("min", "``min(a, b)``: the smaller of two traced numbers (a NaN and a number give the number).")
minimum.__name__ = "minimum"


def power(a, b):
    """``pow(a, b)``: ``a`` to the power ``b`` (C's ``pow``, numpy's ``power``
    on floats: a negative base to a non-integer power is NaN); ``a ** b``
    of traced numbers is the same."""
    x, y = _expr_of(a), _expr_of(b)
    for e in (x, y):
        if e.ty == _C:
            raise TraceError(
                "einsat.power of a complex number: the builder has no complex power (numpy's has "
                "its branch cuts); write it from z.real and z.imag"
            )
        if e.ty != _R:
            _not_number(e, "einsat.power")
            raise TraceError("einsat.power of %s: it takes numbers" % _what(e.ty))
    return Expr(_R, lambda: "pow(%s, %s)" % (x._text(0), y._text(0)), _POST, _free(x, y))


# ---------------------------------------------------------------- the trace


class _Trace:
    def __init__(self):
        self.bound = []  # the indices in scope
        self.axes = []  # (class, description) of every parameter axis
        self.sizes = {}  # class root -> size name
        self.values = set()  # the names of values: parameters, let values, fold accumulators
        self.indices = set()  # the names of every index bound
        self.index_values = set()  # the indices used as numbers
        self.size_values = False  # whether a size is used as a number (x.shape)

    def fresh_index(self, name):
        base = name if name.isascii() and name.isidentifier() and name not in _RESERVED else "i"
        # a name already bound around it gets a suffix (the innermost
        # binding would hide the outer one), and so does the name of a
        # value (as a number, a name is the value's before the index's)
        outer = {i.name for i in self.bound} | self.values
        cand, k = base, 1
        while cand in outer:
            cand = "%s%d" % (base, k)
            k += 1
        self.indices.add(cand)
        return cand

    def fresh_value(self, name):
        """A name for a let value or a fold accumulator, unique in the
        function (no value, index or size name)."""
        base = name if name.isascii() and name.isidentifier() and name not in _RESERVED else "v"
        taken = self.values | self.indices
        cand, k = base, 1
        while cand in taken:
            cand = "%s%d" % (base, k)
            k += 1
        self.values.add(cand)
        return cand

    def index_name(self, i):
        return i.name

    def check_bound(self, i):
        if i not in self.bound:
            raise TraceError(
                "einsat.fn: index %s used outside the gen/sum that binds it" % i.name
            )

    def size_name(self, cls):
        root = cls.find()
        if root.literal is not None:
            return str(root.literal)
        if root not in self.sizes:
            # a size name is not an index used as a number (the name
            # would be both there), nor, when sizes are numbers, a value
            # or an index (the name would be the value's, or both)
            taken = set(self.sizes.values()) | {i.name for i in self.index_values}
            if self.size_values:
                taken |= self.values | self.indices
            name = next((n for n in _SIZE_NAMES if n not in taken), None)
            k = len(_SIZE_NAMES)
            while name is None or name in taken:
                name = "n%d" % k
                k += 1
            self.sizes[root] = name
        return self.sizes[root]


def _param_name(name, taken):
    base = name if name.isascii() and name.isidentifier() and name not in _RESERVED else "arg"
    cand, k = base, 1
    while cand in taken:
        cand = "%s_%d" % (base, k)
        k += 1
    return cand


def _arg_shape(x):
    """The shape of an argument of the traced call (a number: ``()``)."""
    if isinstance(x, tuple):
        raise TraceError(
            "einsat.fn: a tuple argument: the builder's pair parameters are complex numbers and "
            "arrays (pass re + 1j * im)"
        )
    if isinstance(x, (numbers.Number,)):
        return ()
    shape = getattr(x, "shape", None)
    if shape is None:
        import numpy as np

        try:
            shape = np.shape(x)
        except Exception:
            raise DTypeError("einsat.fn: argument %r is not an array or a number" % (x,)) from None
    return tuple(int(d) for d in shape)


def _is_complex(x):
    """Whether an argument is a complex number or array (a pair parameter
    ``(R, R)``, ``[n](R, R)``)."""
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is not None:
        return kind == "c"
    return isinstance(x, numbers.Complex) and not isinstance(x, numbers.Real)


def _arg_sig(x):
    """The shape of an argument of the traced call, whether it is an
    integer array (an integer numpy array of one or more axes: a
    parameter ``[n]Z``, read only inside an index) and whether it is
    complex (a complex number or array: a parameter ``(R, R)``,
    ``[n](R, R)``)."""
    shape = _arg_shape(x)
    dtype = getattr(x, "dtype", None)
    integer = bool(shape) and getattr(dtype, "kind", None) in ("i", "u")
    return shape, integer, _is_complex(x)


def _source(f, name, shapes):
    """Trace ``f`` on parameters of ``shapes`` (triples (shape, whether an
    integer array, whether complex)): the program's text and the type of
    its result. An integer array is a ``[n]Z``
    parameter when the function reads it only inside indices (gathers);
    one it computes with is traced again as a float array (numpy's
    conversion, as the text form's ``R`` parameters take integer arrays).
    An integer array used both ways is the first trace's error."""
    shapes = list(shapes)
    first = None
    while True:
        try:
            return _source_once(f, name, shapes)
        except IntegerArrayAsNumber as e:
            k = getattr(e, "index", None)
            if k is None or not shapes[k][1]:
                raise (first or e) from None
            first = first or e
            shapes[k] = (shapes[k][0], False, shapes[k][2])
        except TraceError:
            if first is not None:
                raise first from None
            raise


def _source_once(f, name, shapes):
    """One trace of :func:`_source`: an integer array used as a number is
    an :class:`IntegerArrayAsNumber` whose ``index`` is its position."""
    tr = _Trace()
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        raise TraceError("einsat.fn: cannot read the parameters of %r" % (f,)) from None
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(params) != len(sig.parameters):
        raise TraceError("einsat.fn: the function takes positional parameters only (no *args, **kwargs, keyword-only)")
    if len(shapes) != len(params):
        raise ShapeError(
            "%s takes %d argument%s but %d %s given"
            % (name, len(params), "" if len(params) == 1 else "s", len(shapes), "was" if len(shapes) == 1 else "were")
        )
    taken = set()
    args = []
    pnames = []
    for p, (shape, integer, cplx) in zip(params, shapes):
        pname = _param_name(p.name, taken)
        taken.add(pname)
        tr.values.add(pname)
        pnames.append(pname)
        ty = _Z if integer else _C if cplx else _R
        classes = []
        for axis, d in enumerate(shape):
            c = _Class(size=d, where="axis %d of %s (size %d)" % (axis, pname, d))
            classes.append(c)
            tr.axes.append((c, "axis %d of %s" % (axis, pname)))
        for c in reversed(classes):
            ty = ("arr", c, ty)
        args.append(_as_leaf(Expr(ty, (lambda n: lambda: n)(pname), 9, chain=pname)))
    _LOCAL.traces.append(tr)
    try:
        result = _expr_of(f(*args))
        if _elem(result.ty) == _Z:
            _not_number(result, "the function's result")
    except IntegerArrayAsNumber as e:
        e.index = pnames.index(e.param) if e.param in pnames else None
        raise
    finally:
        _LOCAL.traces.pop()
    for b in sorted(result.free, key=lambda b: b.name):
        if isinstance(b, Index):
            raise TraceError(
                "einsat.fn: index %s used outside the binder (gen, sum, max_over, min_over, fold) "
                "that binds it: a value computed inside a binder's function was kept and used "
                "after it" % b.name
            )
        raise TraceError(
            "einsat.fn: %s (%s) used outside the %s that binds it: a value computed inside its "
            "function was kept and used after it" % (b.kind, b.name, "fold" if "fold" in b.kind else "let")
        )
    names = tr.size_name
    # size names in the order of the parameters' axes
    for c, _ in tr.axes:
        names(c)
    sig_text = ", ".join("%s: %s" % (n, _type_text(a.ty, names)) for n, a in zip(pnames, args))
    body = result._text(0)
    ret = _type_text(result.ty, names)
    return "fn %s(%s) -> %s = %s" % (name, sig_text, ret, body), result.ty


def _has_complex(t):
    if t == _C:
        return True
    if t[0] == "arr":
        return _has_complex(t[2])
    if t[0] == "pair":
        return _has_complex(t[1]) or _has_complex(t[2])
    return False


def _as_parts(a):
    return (a.real, a.imag) if _is_complex(a) else a


def _complex_result(v, t, args):
    """The kernel's result ``v`` of type ``t`` with its complex numbers
    and tensors as complex numpy values: the kernel returns a complex
    result when given complex arguments (of numpy's result dtype of the
    arguments, as :func:`einsat.compile`'s kernels), and a complex result
    inside a pair, or one computed from real arguments, as its parts
    (made complex here: of that dtype, or complex64 from float32)."""
    import numpy as np

    while t[0] == "arr":
        t = t[2]
    if t[0] == "pair":
        return (_complex_result(v[0], t[1], args), _complex_result(v[1], t[2], args))
    if t != _C or not isinstance(v, tuple):
        return v
    re, im = v
    given = [np.dtype(np.complex128) if isinstance(a, complex) else a.dtype
             for a in args if isinstance(a, complex) or hasattr(a, "dtype")]
    if any(d.kind == "c" for d in given):
        # the dtype einsat.compile's kernels return
        rt = np.result_type(*given)
    else:
        rt = np.result_type(np.asarray(re).dtype, np.asarray(im).dtype, np.complex64)
    if np.ndim(re) == 0:
        return rt.type(complex(float(re), float(im)))
    out = np.empty(np.shape(re), dtype=rt)
    out.real = re
    out.imag = im
    return out


class Traced:
    """A Python function traced into an einsat program (see :func:`fn`):
    call it with numpy arrays and numbers. The first call with a signature
    of argument ranks (and of which arguments are integer arrays, which
    complex) traces and compiles; later calls with that signature reuse
    the kernel (any sizes). ``source``, ``kernel``: the last call's
    program text and :class:`einsat.Kernel`; ``trace(*args)`` traces and
    compiles for such arguments without running."""

    def __init__(self, f, name=None, threads=None, fast_math=False):
        if not callable(f):
            raise TraceError("einsat.fn takes a Python function, not %r" % (f,))
        self.__wrapped__ = f
        n = name or getattr(f, "__name__", "f")
        if not (n.isascii() and n.isidentifier()) or n in _RESERVED or n == "<lambda>":
            n = "f"
        self.name = n
        self._threads = threads
        self._fast_math = fast_math
        self._kernels = {}
        self._last = None
        self.__doc__ = getattr(f, "__doc__", None)

    def trace(self, *args):
        """The :class:`einsat.Kernel` for arguments like ``args`` (traced
        and compiled now, or cached)."""
        return self._trace(args)[0]

    def _trace(self, args):
        """The kernel for arguments like ``args`` and the type of its
        result."""
        shapes = tuple(_arg_sig(a) for a in args)
        key = tuple((len(s), integer, cplx) for s, integer, cplx in shapes)
        kt = self._kernels.get(key)
        if kt is None:
            src, ty = _source(self.__wrapped__, self.name, shapes)
            kt = (_compile(src, threads=self._threads, fast_math=self._fast_math), ty)
            self._kernels[key] = kt
        self._last = kt[0]
        return kt

    def __call__(self, *args, **kwargs):
        if kwargs:
            # by parameter name, as the Python function takes them
            try:
                args = inspect.signature(self.__wrapped__).bind(*args, **kwargs).args
            except TypeError as e:
                raise ShapeError("%s: %s" % (self.name, e)) from None
        k, ty = self._trace(args)
        if not _has_complex(ty):
            # complex arguments as their parts: the kernel then returns a
            # pair of real results as a pair (given complex numbers, it
            # would return a pair of arrays as one complex array)
            return k(*(_as_parts(a) for a in args))
        return _complex_result(k(*args), ty, args)

    @property
    def kernel(self):
        """The :class:`einsat.Kernel` of the last call (None before one)."""
        return self._last

    @property
    def source(self):
        """The program of the last call, as source text."""
        if self._last is None:
            raise TraceError(
                "einsat.fn: %s has not been traced yet: call it (or .trace(*args)) first; the "
                "program depends on the arguments' ranks" % self.name
            )
        return self._last.source

    def __repr__(self):
        return "<einsat.fn %s: %d traced signature%s>" % (
            self.name,
            len(self._kernels),
            "" if len(self._kernels) == 1 else "s",
        )


def fn(f=None, *, name=None, threads=None, fast_math=False):
    """Trace a Python function into an einsat program, compiled per
    signature of argument ranks (see :mod:`einsat.builder`):

        mv = einsat.fn(lambda A, x: einsat.gen(lambda i: einsat.sum(lambda j: A[i, j] * x[j])))

    or as a decorator (``@einsat.fn``, ``@einsat.fn(threads=1)``). ``name``:
    the program's function name (default: the Python function's, ``f``
    for a lambda); ``threads``, ``fast_math``: as :func:`einsat.compile`'s.
    """
    if f is None:
        return lambda g: Traced(g, name=name, threads=threads, fast_math=fast_math)
    return Traced(f, name=name, threads=threads, fast_math=fast_math)
