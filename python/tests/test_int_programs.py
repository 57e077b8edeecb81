"""Integer programs (issue 25, item 5): a kernel from `einsat.compile` (or
the builder's `einsat.fn`) called with int64 or int32 arrays, on a program
with only `+ - *`, `max`/`min`, comparisons, `where`, `fold` and sums,
computes exactly in that width (wrapping on overflow as numpy's integer
arrays do) and returns numpy's dtype; `/`, functions, Python floats and
other integer dtypes keep the float64 path, as numpy's promotion does."""

import numpy as np
import pytest

import einsat

MV = "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]"
AXPY = "fn axpy(a: R, x: [n]R, y: [n]R) -> [n]R = gen(i:n) a * x[i] + y[i]"
CUMSUM = "fn cumsum(x: [n]R) -> [n]R = gen(i:n) fold(k:n, acc = 0) where(k <= i, acc + x[k], acc)"
RELU = "fn relu(x: [n]R, y: [n]R) -> [n]R = gen(i:n) max(x[i] - y[i], 0)"
PMAX = "fn pmax(x: [n]R) -> R = max(i:n) x[i] * x[i]"


def rng():
    return np.random.default_rng(5)


def wide(shape, dtype, r):
    info = np.iinfo(dtype)
    x = r.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    flat = x.reshape(-1)
    # the limits and their neighbours often
    for k in range(0, flat.size, 3):
        flat[k] = [info.min, info.max, info.min + 1, info.max - 1, 0, -1][k % 6]
    return x


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_matvec_equals_numpy_exactly(dtype):
    k = einsat.compile(MV)
    r = rng()
    A = wide((6, 9), dtype, r)
    x = wide(9, dtype, r)
    got = k(A, x)
    want = A @ x
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_elementwise_scalars_and_folds(dtype):
    r = rng()
    x = wide(50, dtype, r)
    y = wide(50, dtype, r)
    axpy = einsat.compile(AXPY)
    with np.errstate(over="ignore"):
        want = dtype(7) * x + y
    got = axpy(7, x, y)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    cs = einsat.compile(CUMSUM)(x)
    assert cs.dtype == dtype
    np.testing.assert_array_equal(cs, np.cumsum(x, dtype=dtype))
    relu = einsat.compile(RELU)(x, y)
    np.testing.assert_array_equal(relu, np.maximum(x - y, 0))
    m = einsat.compile(PMAX)(x)
    assert type(m) is dtype
    assert m == np.max(x * x)


def test_strided_reversed_and_transposed_views_are_read_in_place():
    k = einsat.compile(MV)
    r = rng()
    big = wide((12, 20), np.int64, r)
    A = big[::2, ::-2]
    x = big[3, ::2]
    np.testing.assert_array_equal(k(A, x), A @ x)
    At = wide((9, 6), np.int64, r).T
    np.testing.assert_array_equal(k(At, x[:9]), At @ x[:9])


def test_beyond_2_pow_53_is_exact():
    inc = einsat.compile("fn inc(x: [n]R) -> [n]R = gen(i:n) x[i] + 1")
    x = np.array([2**53 + 1, 2**62 + 3, -(2**63)], dtype=np.int64)
    np.testing.assert_array_equal(inc(x), x + 1)
    with np.errstate(over="ignore"):
        top = np.array([2**63 - 1], dtype=np.int64)
        np.testing.assert_array_equal(inc(top), top + 1)


def test_promotion_follows_numpy():
    k = einsat.compile(AXPY)
    x32 = np.arange(5, dtype=np.int32)
    x64 = np.arange(5, dtype=np.int64)
    # int32 with int64: int64
    assert k(2, x32, x64).dtype == np.int64
    assert (k(2, x32, x64) == 2 * x32 + x64).all()
    # bool and uint8 beside int32: int32
    assert k(2, x32, np.ones(5, dtype=np.uint8)).dtype == np.int32
    # a Python float: float64, as numpy
    got = k(2.5, x32, x32)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, 2.5 * x32 + x32)
    # other integer dtypes keep the float64 path
    assert k(2, np.arange(5, dtype=np.int16), np.arange(5, dtype=np.int16)).dtype == np.float64
    assert k(2, np.arange(5, dtype=np.uint64), x64).dtype == np.float64
    # a Python int beyond the width is refused, as numpy refuses it
    with pytest.raises(einsat.DTypeError, match="out of bounds for int32"):
        k(2**40, x32, x32)


def test_division_and_functions_keep_float64():
    d = einsat.compile("fn d(x: [n]R, y: [n]R) -> [n]R = gen(i:n) x[i] / y[i]")
    x = np.array([1, 2, 3])
    got = d(x, np.array([2, 4, 4]))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, x / np.array([2, 4, 4]))
    e = einsat.compile("fn e(x: [n]R) -> [n]R = gen(i:n) exp(x[i]) + x[i]")
    assert e(x).dtype == np.float64
    h = einsat.compile("fn h(x: [n]R) -> [n]R = gen(i:n) x[i] * 0.5")
    assert h(x).dtype == np.float64


def test_builder_kernels_take_the_integer_path():
    from einsat import gen, sum as esum

    f = einsat.fn(lambda A, x: gen(lambda i: esum(lambda j: A[i, j] * x[j])))
    r = rng()
    A = wide((4, 3), np.int64, r)
    x = wide(3, np.int64, r)
    got = f(A, x)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, A @ x)
