"""Gathers (`E[tok[i], j]`) in float32, int64 and int32 (issue 25, item 5):
the result's dtype is numpy's of the value arrays (`E[tok] * 2` has E's
dtype; the index array takes no part), computed in that format; index
arrays of any integer dtype (and whole-number floats) are checked before
they are converted to the kernel's element type: an index float32 cannot
hold exactly (beyond 2^24) or int32 cannot hold (beyond 2^31) is the
gather's ShapeError, never wrapped or rounded into another index."""

import numpy as np
import pytest

import einsat

EMB = "fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j] * 2"
BAG = """
fn bag(E: [v,d]R, t: [n,k]Z, w: [d]R) -> [n,d]R =
  gen(i:n, j:d) sum(q:k) E[t[i, q] + 1, j] * w[j]
"""
COLS = "fn cols(E: [d,v]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[j, tok[i] - 1] - 3"

VALUE_DTYPES = [np.float32, np.int64, np.int32]
INDEX_DTYPES = [np.int64, np.int32, np.uint8, np.uint64, np.int16]


def table(dtype, shape, rng):
    if np.dtype(dtype).kind == "f":
        return (rng.standard_normal(shape) * 100).astype(dtype)
    info = np.iinfo(dtype)
    # the whole width: products and sums wrap as numpy's do
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("vdt", VALUE_DTYPES)
@pytest.mark.parametrize("idt", INDEX_DTYPES)
def test_embedding_lookup_dtype_and_values_follow_numpy(vdt, idt):
    k = einsat.compile(EMB)
    rng = np.random.default_rng(5)
    E = table(vdt, (6, 3), rng)
    tok = np.array([3, 0, 5, 3, 1], dtype=idt)
    got = k(E, tok)
    want = E[tok] * 2
    assert got.dtype == want.dtype == np.dtype(vdt)
    # no sum: exact in every format
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("vdt", VALUE_DTYPES)
def test_bag_of_embeddings_with_offsets_in_sums(vdt):
    k = einsat.compile(BAG)
    rng = np.random.default_rng(6)
    E = table(vdt, (8, 4), rng)
    w = table(vdt, (4,), rng)
    t = rng.integers(-1, 7, size=(5, 3))
    got = k(E, t, w)
    want = (E[t + 1] * w).sum(axis=1, dtype=vdt)
    assert got.dtype == np.dtype(vdt)
    if np.dtype(vdt).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("vdt", VALUE_DTYPES)
def test_transposed_and_strided_tables_and_index_arrays(vdt):
    k = einsat.compile(COLS)
    rng = np.random.default_rng(7)
    big = table(vdt, (9, 12), rng)
    E = big[::2, ::-1].T  # [12, 5] view, negative and non-unit strides
    toks = np.array([9, 4, 9, 1, 9, 5, 9, 2], dtype=np.int32)
    tok = toks[1::2][::-1]  # 2, 5, 1, 4
    got = k(E, tok)
    want = E[:, tok - 1].T - vdt(3)
    assert got.dtype == np.dtype(vdt)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("vdt", VALUE_DTYPES)
def test_empty_index_arrays(vdt):
    k = einsat.compile(EMB)
    E = np.ones((4, 3), dtype=vdt)
    got = k(E, np.array([], dtype=np.int64))
    assert got.shape == (0, 3) and got.dtype == np.dtype(vdt)


@pytest.mark.parametrize("vdt", VALUE_DTYPES)
def test_float_index_arrays_must_hold_whole_numbers(vdt):
    k = einsat.compile(EMB)
    E = np.arange(12).reshape(4, 3).astype(vdt)
    np.testing.assert_array_equal(k(E, np.array([2.0, 0.0])), E[[2, 0]] * 2)
    with pytest.raises(einsat.ShapeError, match=r"tok\[1\] = 0\.5 is not an integer"):
        k(E, np.array([2.0, 0.5]))
    with pytest.raises(einsat.ShapeError, match=r"tok\[0\] = NaN is not an integer"):
        k(E, np.array([np.nan]))


@pytest.mark.parametrize("vdt", VALUE_DTYPES)
def test_indices_outside_the_axis_are_shape_errors(vdt):
    k = einsat.compile(EMB)
    E = np.zeros((4, 3), dtype=vdt)
    with pytest.raises(einsat.ShapeError, match=r"tok\[2\] = 4 is outside 0\.\.4 \(axis 0 of E, a gather index\)"):
        k(E, np.array([0, 1, 4]))
    with pytest.raises(einsat.ShapeError, match=r"tok\[0\] = -1 is outside 0\.\.4"):
        k(E, np.array([-1], dtype=np.int32))


def test_float32_indices_beyond_2_pow_24_are_refused_before_converting():
    # 2^24 + 1 would round to 2^24 in float32: with the offset that is a
    # valid index, so a silent conversion would read the wrong row
    k = einsat.compile("fn f(E: [v]R, tok: [n]Z) -> [n]R = gen(i:n) E[tok[i] - 16777216]")
    E = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    got = k(E, np.array([2**24, 2**24]))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1.0, 1.0])
    # (2^24 + 2 is an exact float32, but past the limit all the same)
    with pytest.raises(einsat.ShapeError, match=r"tok\[0\] = 16777218 is beyond the indices of f32"):
        k(E, np.array([2**24 + 2]))
    for tok in (np.array([2**24 + 1]), np.array([2**24 + 1], dtype=np.uint64), np.array([2.0**24 + 1])):
        with pytest.raises(einsat.ShapeError, match=r"tok\[0\] = 16777217 is beyond the indices of f32"):
            k(E, tok)
    # the float64 path holds it exactly
    assert k(E.astype(np.float64), np.array([2**24 + 1]))[0] == 2.0


def test_int32_indices_beyond_2_pow_31_are_refused_before_converting():
    # 2^32 + 1 would wrap to 1 in int32
    k = einsat.compile(EMB)
    E = np.arange(12, dtype=np.int32).reshape(4, 3)
    for tok in (np.array([0, 2**32 + 1]), np.array([0, 2**31]), np.array([0, -(2**31) - 1])):
        with pytest.raises(einsat.ShapeError, match=r"tok\[1\] = -?\d+ is beyond the indices of i32"):
            k(E, tok)
    with pytest.raises(einsat.ShapeError, match=r"tok\[0\] = 18446744073709551615 is beyond the indices of i64"):
        k(E.astype(np.int64), np.array([2**64 - 1], dtype=np.uint64))
    # int64 tables take int64 indices as they are
    with pytest.raises(einsat.ShapeError, match=r"tok\[0\] = 4294967297 is outside 0\.\.4"):
        k(E.astype(np.int64), np.array([2**32 + 1]))


def test_index_arrays_do_not_decide_the_dtype():
    k = einsat.compile(EMB)
    tok = np.array([1, 0])
    # float64 table with int32 indices: float64; float16 table: float16
    assert k(np.ones((2, 2)), tok.astype(np.int32)).dtype == np.float64
    assert k(np.ones((2, 2), dtype=np.float16), tok).dtype == np.float16
    # a float64 index array beside a float32 table: float32 (numpy would
    # refuse float indices; einsat takes whole numbers)
    assert k(np.ones((2, 2), dtype=np.float32), tok.astype(np.float64)).dtype == np.float32
    # an int32 table with int64 indices: int32, as numpy's E[tok] * 2
    E = np.full((2, 2), 2**30, dtype=np.int32)
    got = k(E, tok)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, E[tok] * 2)  # wrapped


def test_float64_indices_beyond_2_pow_53_are_refused_before_converting():
    # 2^53 + 1 would round to 2^53 in float64: another row
    k = einsat.compile("fn f(E: [v]R, tok: [n]Z) -> [n]R = gen(i:n) E[tok[i] - 9007199254740992]")
    E = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(k(E, np.array([2**53])), [1.0])
    with pytest.raises(einsat.ShapeError, match=r"tok\[0\] = 9007199254740993 is beyond the indices of f64"):
        k(E, np.array([2**53 + 1]))
    # int64 tables take the int64 index as it is: the row after
    np.testing.assert_array_equal(k(E.astype(np.int64), np.array([2**53 + 1])), [2])
