"""Every error path: each is an einsat.Error subclass with the CLI's
message, and none crashes the interpreter."""

import numpy as np
import pytest

import einsat

A = np.ones((2, 3))
B = np.ones((3, 4))


def test_hierarchy():
    for cls in (einsat.ParseError, einsat.TypeCheckError, einsat.ShapeError,
                einsat.DTypeError, einsat.CompileError):
        assert issubclass(cls, einsat.Error)
    assert issubclass(einsat.ParseError, ValueError)
    assert issubclass(einsat.ShapeError, ValueError)
    assert issubclass(einsat.DTypeError, TypeError)


@pytest.mark.parametrize(
    "spec,ops,exc,words",
    [
        ("ij,jk->ik->i", (A, B), einsat.ParseError, "more than once"),
        ("i1,jk", (A, B), einsat.ParseError, "not an index letter"),
        ("ij,jk->ii", (A, B), einsat.ParseError, "appears twice"),
        ("ij,jk->z", (A, B), einsat.ParseError, "does not appear"),
        ("i.j", (A,), einsat.ParseError, "`...`"),
        ("i-j", (A,), einsat.ParseError, "->"),
        ("ij,jk", (A,), einsat.ShapeError, "2 operands but 1 was given"),
        ("ij", (A, B), einsat.ShapeError, "1 operand but 2 were given"),
        ("", (), einsat.ShapeError, "1 operand but 0 were given"),
        ("ijk", (A,), einsat.ShapeError, "operand 0 has 2 axes"),
        ("...ijk", (A,), einsat.ShapeError, "operand 0 has 2 axes"),
        ("...i->i", (A,), einsat.ShapeError, "no `...`"),
        ("ij,jk", (A, A), einsat.ShapeError, "operand 1 ('jk'): index 'j' has size 2 but operand 0 ('ij') gives it size 3"),
        ("ii", (A,), einsat.ShapeError, "operand 0 ('ii'): index 'i' has size 3 on axis 1 but size 2 on axis 0"),
        ("i", (np.ones(2, dtype="M8[s]"),), einsat.DTypeError, "not supported"),
        ("i", (np.array(["a", "b"]),), einsat.DTypeError, "not supported"),
        ("i", (np.array([object(), None]),), einsat.DTypeError, "not supported"),
        ("i", ("ab",), einsat.DTypeError, "not supported"),
        ("i", (None,), einsat.DTypeError, "not supported"),
        ("i", (np.array(["2020-01-01"], dtype="datetime64[D]"),), einsat.DTypeError, "not supported"),
    ],
)
def test_einsum_errors(spec, ops, exc, words):
    with pytest.raises(exc) as e:
        einsat.einsum(spec, *ops)
    assert words in str(e.value)


@pytest.mark.parametrize(
    "spec,column",
    [("ij,jk->ik->i", 10), ("i1,jk", 2), ("ij,jk->ii", 9), ("ij, jk -> z", 11)],
)
def test_einsum_spec_error_columns(spec, column):
    with pytest.raises(einsat.ParseError) as e:
        einsat.einsum(spec, A, B)
    assert (e.value.line, e.value.column) == (1, column)
    assert f"column {column}" in str(e.value)


def test_einsum_argument_errors():
    with pytest.raises(einsat.DTypeError):
        einsat.einsum(3, A)


def test_out_errors():
    with pytest.raises(einsat.ShapeError, match="shape"):
        einsat.einsum("ij,jk->ik", A, B, out=np.zeros((2, 5)))
    # an out of another real dtype gets the result cast into it; complex
    # ones are refused
    with pytest.raises(einsat.DTypeError):
        einsat.einsum("ij,jk->ik", A, B, out=np.zeros((2, 4), dtype=np.complex128))
    with pytest.raises(einsat.DTypeError):
        einsat.einsum("ij,jk->ik", A, B, out=[[0.0] * 4] * 2)
    ro = np.zeros((2, 4))
    ro.setflags(write=False)
    with pytest.raises(einsat.ShapeError, match="cannot be written"):
        einsat.einsum("ij,jk->ik", A, B, out=ro)
    # out overlapping an operand is refused, not raced
    x = np.ones((3, 3))
    with pytest.raises(einsat.ShapeError, match="overlaps"):
        einsat.einsum("ij,jk->ik", x, x, out=x)
    with pytest.raises(einsat.ShapeError):
        einsat.einsum("ij->", A, out=np.zeros(1))


SRC = """fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]
fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]
"""


def test_parse_error_position():
    with pytest.raises(einsat.ParseError) as e:
        einsat.check("fn f(x: [n]R) -> R =\n  sum(i:n) x[i] +* 2")
    err = e.value
    assert (err.line, err.column) == (2, 18)
    assert "<source>:2:18: error:" in str(err)
    assert err.diagnostics and err.diagnostics[0][:2] == (2, 18)


def test_type_error_position():
    with pytest.raises(einsat.TypeCheckError) as e:
        einsat.compile("fn f(x: [n]R) -> R = sum(i:n) y[i]")
    assert e.value.line == 1 and e.value.column is not None
    assert "y" in str(e.value)


def test_program_errors():
    with pytest.raises(einsat.Error, match="several functions"):
        einsat.compile(SRC)
    with pytest.raises(einsat.Error, match="no function `nope`"):
        einsat.compile(SRC, fn="nope")
    with pytest.raises(einsat.DTypeError):
        einsat.compile(b"fn f() -> R = 1")
    with pytest.raises(einsat.DTypeError):
        einsat.optimize(SRC, sizes={"n": "big"})
    with pytest.raises(einsat.DTypeError):
        einsat.optimize(SRC, sizes=[1])


def test_kernel_call_errors():
    mv = einsat.compile(SRC, fn="mv")
    with pytest.raises(einsat.ShapeError, match="missing argument `x`"):
        mv(A)
    with pytest.raises(einsat.ShapeError, match="takes 2 arguments"):
        mv(A, np.ones(3), np.ones(3))
    with pytest.raises(einsat.ShapeError, match="no parameter `z`"):
        mv(A, z=np.ones(3))
    with pytest.raises(einsat.ShapeError, match="given twice"):
        mv(A, np.ones(3), x=np.ones(3))
    with pytest.raises(einsat.ShapeError, match="size `m`"):
        mv(A, np.ones(4))
    with pytest.raises(einsat.ShapeError, match="dims"):
        mv(A, np.ones((3, 1)))
    with pytest.raises(einsat.DTypeError):
        mv(A, np.ones(3, dtype=complex))
    pair = einsat.compile("fn p(z: [n](R,R)) -> R = sum(i:n) z[i].0 * z[i].1")
    with pytest.raises(einsat.ShapeError, match="tuple of two"):
        pair(np.ones(3))
    with pytest.raises(einsat.ShapeError, match="tuple of two"):
        pair((np.ones(3),))


def test_huge_and_odd_inputs_do_not_crash():
    # a broadcast view with zero strides, a 0-d array, an empty array
    z = np.broadcast_to(np.arange(3.0), (4, 3))
    np.testing.assert_allclose(einsat.einsum("ij->j", z), 4 * np.arange(3.0))
    assert einsat.einsum("ij->", np.zeros((0, 3))) == 0.0
    # too many axes for a spec: an error, not a crash (a view of them all,
    # "...", is numpy's view)
    with pytest.raises(einsat.Error):
        einsat.einsum("...->", np.zeros((1,) * 60))
    assert einsat.einsum("...", np.zeros((1,) * 60)).shape == (1,) * 60
    # a structured dtype
    with pytest.raises(einsat.DTypeError):
        einsat.einsum("i", np.zeros(2, dtype=[("a", "f8")]))
    # int too large for a float
    with pytest.raises(einsat.DTypeError):
        einsat.einsum(",i", 10**400, np.ones(2))


# ---- issue 22 ----

@pytest.mark.parametrize(
    "spec",
    ["ij,\tjk->ik", "ij,jk\n->ik", "ij,jk->ik\r", "ij,\u00a0jk->ik", "ij,jk- >ik",
     "ij,jk-\t>ik", "i. ..j,jk->ik", "ij,jk>ik"],
)
def test_einsum_spec_characters_as_numpy(spec):
    """numpy.einsum reads spaces between subscripts and nothing else: it
    refuses every one of these, and so does einsat (ParseError, with the
    column)."""
    with pytest.raises(ValueError):
        np.einsum(spec, A, B)
    with pytest.raises(einsat.ParseError) as e:
        einsat.einsum(spec, A, B)
    assert e.value.line == 1 and e.value.column is not None
    assert f"column {e.value.column}" in str(e.value)


def test_einsum_spaces_are_read_as_numpy_reads_them():
    for spec in (" ij , jk -> ik ", "i j,j k->i k", "ij,jk-> "):
        np.testing.assert_allclose(einsat.einsum(spec, A, B), np.einsum(spec, A, B))
    with pytest.raises(einsat.ParseError, match="a tab"):
        einsat.einsum("ij,\tjk->ik", A, B)


def test_long_input_is_quoted_as_an_excerpt():
    spec = "a" * 10**6 + "1"
    with pytest.raises(einsat.ParseError) as e:
        einsat.einsum(spec, A)
    assert len(str(e.value)) < 300, len(str(e.value))
    assert e.value.column == 10**6 + 1
    assert "column 1000001 of `…aaa" in str(e.value)
    terms = "a" * 10**6
    with pytest.raises(einsat.ShapeError) as e:
        einsat.einsum(terms, A)
    assert len(str(e.value)) < 300 and "(1000000 characters)" in str(e.value)
    with pytest.raises(einsat.Error) as e:
        einsat.compile(SRC, fn="f" * 10**6)
    assert len(str(e.value)) < 300 and "no function" in str(e.value)
    mv = einsat.compile(SRC, fn="mv")
    with pytest.raises(einsat.ShapeError) as e:
        mv(A, **{"z" * 10**6: 1})
    assert len(str(e.value)) < 300 and "no parameter" in str(e.value)
    with pytest.raises(einsat.TypeCheckError) as e:
        einsat.check("fn f(x: R) -> R = " + "y" * 10**6)
    assert len(str(e.value)) < 600 and "unknown name" in str(e.value)


@pytest.mark.parametrize("bad", [0, -1, 1025, 10**6, 10**30, "x", 1.5, "x" * 10**6])
def test_bad_threads_are_option_errors(bad):
    """threads= takes None or 1..1024, the limit the CLI's --threads and
    the Rust jit::Options share; anything else is OptionError (a
    ValueError), not ShapeError."""
    with pytest.raises(einsat.OptionError) as e:
        einsat.einsum("ij", A, threads=bad)
    assert not isinstance(e.value, einsat.ShapeError)
    assert isinstance(e.value, ValueError) and isinstance(e.value, einsat.Error)
    assert "from 1 to 1024" in str(e.value) and len(str(e.value)) < 300
    with pytest.raises(einsat.OptionError):
        einsat.compile(SRC, fn="mv", threads=bad)


def test_threads_up_to_the_limit_run():
    np.testing.assert_allclose(einsat.einsum("ij->", A, threads=1024), 6.0)
    assert einsat.compile(SRC, fn="dot", threads=1024)(np.ones(3), np.ones(3)) == 3.0


def test_out_aliasing_an_operand_is_refused_in_einsats_words():
    x = np.ones((3, 3))
    y = np.ones((3, 3))
    big = np.ones((4, 4))
    for ops, out, k in (((x, y), x, 0), ((x, y), x[:], 0), ((x, y), x.T, 0),
                        ((y, x), x, 1), ((big[:3, :3], y), big[1:, 1:], 0)):
        with pytest.raises(einsat.ShapeError) as e:
            einsat.einsum("ij,jk->ik", *ops, out=out)
        m = str(e.value)
        assert f"out overlaps operand {k}" in m, m
        assert "borrowed" not in m and "The given array" not in m, m
    ro = np.zeros((3, 3))
    ro.setflags(write=False)
    with pytest.raises(einsat.ShapeError) as e:
        einsat.einsum("ij,jk->ik", x, y, out=ro)
    assert "read-only" in str(e.value) and "The given array" not in str(e.value)
    # an out that shares no memory with the operands is written
    z = np.zeros((3, 3))
    einsat.einsum("ij,jk->ik", x, y, out=z)
    np.testing.assert_allclose(z, 3.0)


def test_optimize_sizes_name_sizes_the_program_has():
    with pytest.raises(einsat.OptionError, match="no size `zz`"):
        einsat.optimize(SRC, sizes={"zz": 3})
    with pytest.raises(einsat.OptionError, match="`dot` has no size `m`"):
        einsat.optimize(SRC, fn="dot", sizes={"m": 3})
    assert "fn dot" in einsat.optimize(SRC, fn="dot", sizes={"n": 3})
