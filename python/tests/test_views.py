"""One-operand einsums that sum nothing return views of the operand, as
numpy's einsum does (its get_single_op_view): relabellings and diagonals;
every other einsum returns a new array. Also: scalar results are numpy
float64 scalars from every entry point."""

import numpy as np
import pytest

import einsat

# specs numpy answers with a view, and operand shapes
VIEWS = [
    ("ij->ji", (2, 3)),
    ("ij->ij", (2, 3)),
    ("ij", (2, 3)),
    ("ji", (2, 3)),
    ("...", (2, 3)),
    ("...->...", (2, 3, 4)),
    ("ii->i", (3, 3)),
    ("iij->ij", (3, 3, 2)),
    ("iij->ji", (3, 3, 2)),
    ("jii->ij", (2, 3, 3)),
    ("iii->i", (3, 3, 3)),
    ("...ii->...i", (2, 3, 3)),
    ("ii...->...i", (3, 3, 2)),
    ("...ii->i...", (2, 3, 3)),
    ("i...i->...i", (3, 2, 3)),
    ("ijk->kji", (2, 3, 4)),
    ("ijk->jik", (2, 3, 4)),
    ("i j -> j i", (2, 3)),
    ("", ()),
]


def operand(shape, dtype=float):
    return (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)


@pytest.mark.parametrize("spec,shape", VIEWS)
def test_views_where_numpy_views(spec, shape):
    a = operand(shape)
    want = np.einsum(spec, a)
    got = einsat.einsum(spec, a)
    if a.ndim == 0:
        # numpy returns a scalar for a 0-d result
        assert type(got) is type(want) is np.float64 and got == want
        return
    assert isinstance(want, np.ndarray) and np.shares_memory(want, a)
    assert np.shares_memory(got, a)
    assert got.base is a.base and got.dtype == a.dtype
    assert got.shape == want.shape and got.strides == want.strides
    np.testing.assert_array_equal(got, want)
    # writes go through, as numpy's views
    got[(0,) * got.ndim] = -7.0
    assert want[(0,) * want.ndim] == -7.0


def test_letters_beyond_ascii():
    # numpy's own einsum takes ASCII letters only; opt_einsum's symbols
    a = operand((2, 3))
    v = einsat.einsum("ÀÁ->ÁÀ", a)
    assert v.base is a.base and v.strides == a.T.strides
    d = einsat.einsum("××->×", operand((3, 3)))
    np.testing.assert_array_equal(d, np.diagonal(operand((3, 3))))


@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.float32, np.float16, np.bool_])
def test_views_keep_the_operands_dtype(dtype):
    a = operand((3, 3), dtype)
    got = einsat.einsum("ii->i", a)
    want = np.einsum("ii->i", a)
    assert got.dtype == want.dtype and np.shares_memory(got, a)
    np.testing.assert_array_equal(got, want)


def test_interleaved_views():
    a = operand((3, 3, 3))
    for args in [
        (a, [Ellipsis]),
        (a, [0, 1, 2]),
        (a, [1, 0, 2]),
        (a, [0, 0, 0], [0]),
        (a, [Ellipsis, 0, 0], [Ellipsis, 0]),
        (a, [0, 0, Ellipsis], [0, Ellipsis]),
    ]:
        got = einsat.einsum(*args)
        want = np.einsum(*args)
        assert got.base is a.base, args
        assert got.strides == want.strides
        np.testing.assert_array_equal(got, want)


def test_writeable_follows_the_operand():
    a = operand((3, 3))
    assert einsat.einsum("ii->i", a).flags.writeable
    assert einsat.einsum("ij->ji", a).flags.writeable
    a.flags.writeable = False
    for spec in ["ii->i", "ij->ji", "..."]:
        v = einsat.einsum(spec, a)
        assert not v.flags.writeable and v.flags.writeable == np.einsum(spec, a).flags.writeable


def test_strided_and_negative_strides():
    base = np.arange(60.0).reshape(6, 10)
    a = base[::2, ::-3]
    for spec in ["ij->ji", "ij"]:
        got, want = einsat.einsum(spec, a), np.einsum(spec, a)
        assert np.shares_memory(got, base) and got.strides == want.strides
        np.testing.assert_array_equal(got, want)
    sq = base[:5, ::-2]
    got, want = einsat.einsum("ii->i", sq), np.einsum("ii->i", sq)
    assert got.strides == want.strides and np.shares_memory(got, base)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "spec,shape",
    [("ij->i", (2, 3)), ("ii->", (3, 3)), ("ii", (3, 3)), ("ij->", (2, 3)), ("i->", (3,)), ("...i->...", (2, 3))],
)
def test_sums_are_copies(spec, shape):
    a = operand(shape)
    got = einsat.einsum(spec, a)
    want = np.einsum(spec, a)
    assert not np.shares_memory(got, a)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_out_and_several_operands_are_copies():
    a = operand((3, 3))
    out = np.zeros((3, 3))
    r = einsat.einsum("ij->ji", a, out=out)
    assert r is out and not np.shares_memory(out, a)
    np.testing.assert_array_equal(out, a.T)
    r = einsat.einsum("ij,->ji", a, 1.0)
    assert not np.shares_memory(r, a)
    # a list is converted, so the result is not a view of anything the
    # caller holds
    np.testing.assert_array_equal(einsat.einsum("ij->ji", [[1, 2], [3, 4]]), [[1, 3], [2, 4]])


def test_views_check_the_options_as_numpy():
    a = operand((2, 3))
    v = einsat.einsum("ij->ji", a, dtype="float32", order="F", casting="no", optimize="greedy")
    assert np.shares_memory(v, a)
    with pytest.raises(einsat.OptionError, match="order"):
        einsat.einsum("ij->ji", a, order="Q")
    with pytest.raises(einsat.OptionError, match="casting"):
        einsat.einsum("ij->ji", a, casting="bogus")
    with pytest.raises(einsat.OptionError, match="threads"):
        einsat.einsum("ij->ji", a, threads=0)
    with pytest.raises(einsat.OptionError) as e:
        einsat.einsum("ij->ji", a, threads="x" * 10**6)
    assert len(str(e.value)) < 300
    with pytest.raises(einsat.DTypeError):
        einsat.einsum("ij->ji", a, dtype="bogus")
    with pytest.raises(TypeError):
        einsat.einsum("ij->ji", a, foo=1)


def test_dtypes_einsat_refuses_are_refused_also_for_views():
    # object, string, datetime operands: DTypeError, as for every einsum
    # (no view of what einsat does not compute with)
    for a in [np.array([["a", "b"]]), np.array([[None]], dtype=object), np.ones((2, 2), "M8[s]")]:
        with pytest.raises(einsat.DTypeError):
            einsat.einsum("ij->ji", a)


def test_complex_operands_get_views_too():
    a = (np.arange(6) + 1j * np.arange(6)).reshape(2, 3)
    v = einsat.einsum("ij->ji", a)
    assert v.base is a or v.base is a.base
    assert v.dtype == a.dtype
    np.testing.assert_array_equal(v, a.T)
    d = einsat.einsum("ii->i", np.eye(3, dtype=np.complex64))
    assert d.dtype == np.complex64 and not d.flags.owndata


def test_errors_stay_errors():
    # a spec that does not fit the operand is not a view but the native
    # einsum's error
    with pytest.raises(einsat.ShapeError):
        einsat.einsum("ijk->kji", operand((2, 3)))
    with pytest.raises(einsat.ParseError):
        einsat.einsum("ij->jk", operand((2, 3)))
    with pytest.raises(einsat.ShapeError):
        einsat.einsum("ii->i", operand((2, 3)))


def test_contract_and_expressions_view_as_opt_einsum():
    a = operand((2, 3))
    assert np.shares_memory(einsat.contract("ij->ji", a), a)
    e = einsat.contract_expression("ij->ji", (2, 3))
    assert np.shares_memory(e(a), a)
    np.testing.assert_array_equal(e(a), a.T)


# ------------------------------------------------------------ scalars


def test_scalar_results_are_numpy_float64():
    x, y = np.arange(3.0), np.ones(3)
    for r in [
        einsat.einsum("i,i->", x, y),
        einsat.einsum("i,i", x, y),
        einsat.einsum("i->", x),
        einsat.einsum("ii", np.eye(3)),
        einsat.einsum("i,i,i->", x, y, y),
        einsat.einsum("", 3.0),
        einsat.einsum("i,i->", x, y, order="F"),
        einsat.einsum(x, [0], y, [0], []),
        einsat.contract("i,i->", x, y),
        einsat.contract_expression("i,i->", (3,), (3,))(x, y),
        einsat.compile("fn d(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]")(x, y),
    ]:
        assert type(r) is np.float64, type(r)
        assert r == pytest.approx(3.0, rel=1e-12)


def test_kernel_pairs_of_numbers_are_numpy_float64():
    k = einsat.compile("fn f(x: [n]R) -> (R, R) = (sum(i:n) x[i], sum(i:n) x[i] * x[i])")
    a, b = k(np.arange(3.0))
    assert type(a) is np.float64 and type(b) is np.float64
    assert (a, b) == (3.0, 5.0)
