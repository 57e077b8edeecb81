"""einsum in numpy's dtypes: the result dtype is numpy's (``result_type``,
``dtype=`` under ``casting=``), float32 and complex computed in their own
type, integers exactly with numpy's wrap-around, bool as or-of-ands;
``contract`` and ``contract_expression`` alike."""

import numpy as np
import pytest

import einsat

rng = np.random.default_rng(5)

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
SPECS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(6, 1), (1, 7)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 3)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(5, 5)]),
    ("i,j->ij", [(3,), (4,)]),
    ("...i,...i", [(2, 3, 5), (5,)]),
    ("ijk,jil->kl", [(3, 4, 5), (4, 3, 2)]),
    ("i,i,i->", [(7,), (7,), (7,)]),
    ("ab,bc,cd,da->", [(3, 4), (4, 5), (5, 3), (3, 3)]),
    (",i->i", [(), (4,)]),
]


def values(shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x = rng.standard_normal(shape) * 3
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)  # exact, wrap-around included
    else:
        tol = {"e": 1e-2, "f": 1e-4, "F": 1e-4}.get(want.dtype.char, 1e-10)
        scale = max(1.0, float(np.max(np.abs(want.astype(np.complex128)), initial=0.0)))
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec,shapes", SPECS)
def test_each_dtype_as_numpy(dtype, spec, shapes):
    ops = [values(s, dtype) for s in shapes]
    want = np.einsum(spec, *ops)
    got = einsat.einsum(spec, *ops)
    same(got, want)
    if np.ndim(want) == 0:
        assert type(got) is type(want)


@pytest.mark.parametrize("a,b", [("int8", "uint8"), ("int32", "float32"), ("int64", "float32"),
                                 ("bool", "int8"), ("uint64", "int64"), ("float32", "complex64"),
                                 ("float16", "int8"), ("int32", "uint64"), ("complex64", "float64")])
def test_mixed_dtypes_take_numpy_result_type(a, b):
    x, y = values((4, 3), a), values((3, 5), b)
    same(einsat.einsum("ij,jk->ik", x, y), np.einsum("ij,jk->ik", x, y))


def test_python_numbers_and_lists():
    f32 = np.arange(3, dtype=np.float32)
    same(einsat.einsum(",i", 2, f32), np.einsum(",i", 2, f32))  # int64 · float32: float64
    same(einsat.einsum(",i", np.float32(2), f32), np.einsum(",i", np.float32(2), f32))
    same(einsat.einsum("i,i", [1, 2, 3], [4, 5, 6]), np.einsum("i,i", [1, 2, 3], [4, 5, 6]))
    same(einsat.einsum(",", 3, 4), np.einsum(",", 3, 4))
    same(einsat.einsum("i", [True, False]), np.einsum("i", [True, False]))


def test_integer_wrap_around():
    a = np.array([100, 100, 100], dtype=np.int8)
    assert einsat.einsum("i->", a) == np.int8(44)
    big = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    same(einsat.einsum("i,i", big, np.array([3, 1, 1], dtype=np.int64)),
         np.einsum("i,i", big, np.array([3, 1, 1], dtype=np.int64)))
    u = np.array([2**63, 2**63 + 5], dtype=np.uint64)
    same(einsat.einsum("i,i", u, u), np.einsum("i,i", u, u))


def test_bool_is_or_of_ands():
    a = np.array([[True, False], [False, False]])
    b = np.array([[True, True], [True, True]])
    same(einsat.einsum("ij,jk->ik", a, b), np.einsum("ij,jk->ik", a, b))
    x = np.array([1, 3, -2, 0, 12])
    y = np.array([0, 3.5, 0.0, -2, 1])
    same(einsat.einsum("i,i->i", x, y, dtype="?", casting="unsafe"),
         np.einsum("i,i->i", x, y, dtype="?", casting="unsafe"))


def test_float32_is_computed_in_float32():
    a = np.broadcast_to(np.float32(1), (2**25,))
    # 2^25 ones: a running float32 sum stops at 2^24; numpy and einsat sum
    # pairwise and get 2^25
    r = einsat.einsum("i->", a)
    assert isinstance(r, np.float32) and r == np.einsum("i->", a) == 2**25
    x, y = values((64, 300), "float32"), values((300, 32), "float32")
    r = einsat.einsum("ij,jk->ik", x, y)
    exact = x.astype(np.float64) @ y.astype(np.float64)
    err = np.max(np.abs(r - exact)) / np.max(np.abs(exact))
    assert r.dtype == np.float32 and 0 < err < 1e-5


def test_strided_float32_and_complex_views():
    for dtype in ("float32", "complex64", "complex128"):
        big = values((12, 14), dtype)
        for a in (big[::2, 1::3], big.T[::-1], np.asfortranarray(big)[2:9, ::-2]):
            b = values((a.shape[1], 3), dtype)
            same(einsat.einsum("ij,jk->ik", a, b), np.einsum("ij,jk->ik", a, b))
            same(einsat.einsum("ij->j", a), np.einsum("ij->j", a))


def test_dtype_and_casting():
    f = np.ones((2, 3))
    with pytest.raises(einsat.DTypeError, match="cannot be cast"):
        einsat.einsum("ij->i", f, dtype=np.float32)
    with pytest.raises(TypeError):
        einsat.einsum("ij->i", f.astype(complex), dtype=np.float64)
    same(einsat.einsum("ij->i", f, dtype=np.float32, casting="same_kind"),
         np.einsum("ij->i", f, dtype=np.float32, casting="same_kind"))
    i = np.arange(6, dtype=np.int16).reshape(2, 3)
    same(einsat.einsum("ij->i", i, dtype=np.int64), np.einsum("ij->i", i, dtype=np.int64))
    same(einsat.einsum("ij->i", i, dtype=np.complex64), np.einsum("ij->i", i, dtype=np.complex64))
    with pytest.raises(einsat.DTypeError, match="casting='no'"):
        einsat.einsum("ij,ij->", i, i.astype(np.int32), casting="no")
    with pytest.raises(einsat.DTypeError, match="not supported"):
        einsat.einsum("i", np.array([1, None], dtype=object))


def test_out_and_order():
    a = rng.integers(-50, 50, (4, 3)).astype(np.int32)
    b = rng.integers(-50, 50, (3, 5)).astype(np.int32)
    out = np.zeros((4, 5), dtype=np.int64)
    r = einsat.einsum("ij,jk->ik", a, b, out=out)
    assert r is out
    np.testing.assert_array_equal(out, np.einsum("ij,jk->ik", a, b).astype(np.int64))
    with pytest.raises(einsat.DTypeError, match="out"):
        einsat.einsum("ij,jk->ik", a, b, out=np.zeros((4, 5), dtype=np.int16))
    c = np.zeros((4, 5), dtype=np.int16)
    einsat.einsum("ij,jk->ik", a, b, out=c, dtype="f8", casting="unsafe")
    np.testing.assert_array_equal(c, np.einsum("ij,jk->ik", a, b, dtype="f8").astype(np.int16))
    with pytest.raises(einsat.ShapeError):
        einsat.einsum("ij,jk->ik", a, b, out=np.zeros((5, 4), dtype=np.int64))
    f = einsat.einsum("ij,jk->ik", a.astype(np.float32), b.astype(np.float32), order="F")
    assert f.flags.f_contiguous and f.dtype == np.float32


def test_paths_and_interleaved_form():
    ops = [values(s, "complex64") for s in [(3, 4), (4, 5), (5, 6)]]
    want = np.einsum("ij,jk,kl->il", *ops)
    for optimize in (False, True, "greedy", "optimal", ["einsum_path", (1, 2), (0, 1)], [(0, 1), (0, 1)]):
        same(einsat.einsum("ij,jk,kl->il", *ops, optimize=optimize), want)
    same(einsat.einsum(ops[0], [0, 1], ops[1], [1, 2], [0, 2]), np.einsum(ops[0], [0, 1], ops[1], [1, 2], [0, 2]))
    with pytest.raises(einsat.OptionError):
        einsat.einsum("ij,jk,kl->il", *ops, optimize=[(0, 5)])
    with pytest.raises(einsat.OptionError):
        einsat.einsum("ij,jk,kl->il", *ops, optimize="no-such")


def test_contract_and_contract_expression():
    ops = [values(s, "float32") for s in [(3, 4), (4, 5), (5, 6)]]
    want = np.einsum("ij,jk,kl->il", *ops)
    same(einsat.contract("ij,jk,kl->il", *ops), want)
    expr = einsat.contract_expression("ij,jk,kl->il", *[o.shape for o in ops])
    same(expr(*ops), want)
    with pytest.raises(einsat.ShapeError):
        expr(*[o.T for o in ops])
    e64 = einsat.contract_expression("ij,jk->ik", (3, 4), (4, 5), dtype=np.float32)
    x, y = values((3, 4), "float64"), values((4, 5), "float64")
    with pytest.raises(einsat.DTypeError):
        e64(x, y)
    i = [values(s, "int16") for s in [(3, 4), (4, 5)]]
    same(einsat.contract_expression("ij,jk->ik", (3, 4), (4, 5))(*i), np.einsum("ij,jk->ik", *i))


def test_empty_axes_and_scalars():
    z = np.zeros((0, 3), dtype=np.float32)
    same(einsat.einsum("ij,jk->ik", z, np.ones((3, 2), np.float32)), np.einsum("ij,jk->ik", z, np.ones((3, 2), np.float32)))
    same(einsat.einsum("ij->", z), np.einsum("ij->", z))
    same(einsat.einsum("", np.int8(3)), np.einsum("", np.int8(3)))


@pytest.mark.parametrize("dtype", ["float32", "complex64", "complex128", "int64", "int16"])
def test_memory_limit_slices_other_dtypes(dtype):
    # a ring whose every order makes a 40x40 intermediate: under a limit
    # of 64 elements the plan slices indices; the result is numpy's
    rng = np.random.default_rng(7)
    ops = [(rng.standard_normal((40, 40)) * 4).astype(dtype) for _ in range(4)]
    if np.dtype(dtype).kind == "c":
        ops = [o + 1j * o[::-1] for o in ops]
    spec = "ab,bc,cd,da->ac"
    want = np.einsum(spec, *ops, optimize=True)
    got = einsat.einsum(spec, *ops, memory_limit=64)
    scale = np.einsum(spec, *[np.abs(o).astype(float) for o in ops])
    tol = 1e-12 if dtype == "complex128" else 1e-4

    def check(got):
        assert got.dtype == want.dtype
        if np.dtype(dtype).kind in "iu":
            np.testing.assert_array_equal(got, want)
        else:
            assert np.all(np.abs(got - want) <= tol * np.maximum(scale, 1)), dtype

    check(got)
    # numpy's form of the limit: optimize=('greedy', limit)
    check(einsat.einsum(spec, *ops, optimize=("greedy", 64)))
    with pytest.raises(einsat.OptionError, match="memory_limit"):
        einsat.einsum(spec, *ops, memory_limit="lots")
