"""float32 programs (issue 25): a kernel from `einsat.compile` (or the
builder's `einsat.fn`) called with float32 arrays computes in float32, as
numpy's float32 arithmetic does, and returns float32; the precision follows
numpy's promotion of the arguments (`np.result_type`, Python numbers weak
as NEP 50 makes them): float64 anywhere, or int32/int64 beside float32,
takes the float64 path."""

import numpy as np
import pytest

import einsat

RTOL = 1e-5

LAYER = """
fn layer(X: [b,k]R, W: [k,m]R, bias: [m]R) -> [b,m]R =
  gen(i:b) gen(j:m) max((sum(l:k) X[i,l] * W[l,j]) + bias[j], 0)
"""


def rng():
    return np.random.default_rng(25)


def test_float32_in_float32_out():
    k = einsat.compile(LAYER)
    r = rng()
    X = r.standard_normal((7, 33)).astype(np.float32)
    W = r.standard_normal((33, 5)).astype(np.float32)
    b = r.standard_normal(5).astype(np.float32)
    got = k(X, W, b)
    assert got.dtype == np.float32
    want = np.maximum(X @ W + b, np.float32(0))
    assert want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6)


def test_elementwise_matches_numpy_float32_bit_for_bit():
    k = einsat.compile("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) (x[i] - y[i]) / (x[i] * 3 - 0.1) - sqrt(abs(y[i]))")
    r = rng()
    x = (r.random(1000) - 0.5).astype(np.float32)
    y = (r.random(1000) + 1e4).astype(np.float32)
    got = k(x, y)
    want = (x - y) / (x * np.float32(3) - np.float32(0.1)) - np.sqrt(np.abs(y))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_overflow_happens_in_float32():
    k = einsat.compile("fn f(x: [n]R) -> [n]R = gen(i:n) (x[i] * 1e30) / 1e30")
    x = np.array([1e30, 2.0], dtype=np.float32)
    got = k(x)
    assert got.dtype == np.float32
    assert np.isinf(got[0]) and got[1] == 2.0
    # float64 arguments: the float64 path, no overflow
    got64 = k(x.astype(np.float64))
    assert got64.dtype == np.float64 and got64[0] == pytest.approx(1e30, rel=1e-6)


def test_strided_and_negative_stride_views_read_in_place():
    k = einsat.compile("fn f(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]")
    base = (rng().random(41) + 1e3).astype(np.float32)
    x = base[::2]
    y = base[::-2]
    got = k(x, y)
    assert isinstance(got, np.float32)
    want = np.dot(x.astype(np.float64), y.astype(np.float64))
    assert got == pytest.approx(want, rel=1e-5)
    M = rng().standard_normal((6, 9)).astype(np.float32)
    mv = einsat.compile("fn mv(A: [n,m]R, v: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * v[j]")
    v = np.ones(6, dtype=np.float32)
    got = mv(M.T[::-1], v)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, M.T[::-1] @ v, rtol=RTOL, atol=1e-6)


@pytest.mark.parametrize(
    "other, dtype",
    [
        (np.float32, np.float32),
        (np.float64, np.float64),
        (np.int8, np.float32),
        (np.int16, np.float32),
        (np.int32, np.float64),
        (np.int64, np.float64),
        (np.bool_, np.float32),
    ],
)
def test_promotion_follows_numpy(other, dtype):
    k = einsat.compile("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) x[i] + y[i]")
    x = np.array([1.5, 2.5], dtype=np.float32)
    y = np.array([1, 0], dtype=other)
    got = k(x, y)
    assert got.dtype == np.result_type(x, y) == dtype
    np.testing.assert_allclose(got, x + y, rtol=RTOL)


def test_python_numbers_are_weak():
    k = einsat.compile("fn f(x: [n]R, c: R) -> [n]R = gen(i:n) x[i] * c")
    x = np.array([1.0, 3.0], dtype=np.float32)
    got = k(x, 0.1)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x * np.float32(0.1))
    # all numbers: float64
    s = einsat.compile("fn s(a: R, b: R) -> R = a * b")
    assert isinstance(s(2.0, 3.0), np.float64)
    # a numpy float32 scalar is strong
    assert isinstance(s(np.float32(2.0), 3.0), np.float32)


def test_float16_computes_in_float32_and_returns_float16():
    k = einsat.compile("fn f(x: [n]R) -> R = sum(i:n) x[i]")
    x = np.arange(10, dtype=np.float16)
    got = k(x)
    assert isinstance(got, np.float16) and got == 45


def test_builder_kernels_follow_the_arguments():
    mv = einsat.fn(lambda A, x: einsat.gen(lambda i: einsat.sum(lambda j: A[i, j] * x[j])))
    A = rng().standard_normal((3, 4)).astype(np.float32)
    x = np.ones(4, dtype=np.float32)
    got = mv(A, x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, A @ x, rtol=RTOL, atol=1e-6)
    assert mv(A.astype(np.float64), x).dtype == np.float64


def test_pairs_and_numbers():
    k = einsat.compile("fn f(x: [n]R) -> ([n]R, R) = (gen(i:n) x[i] * 2, sum(i:n) x[i])")
    x = np.array([1.0, 2.0], dtype=np.float32)
    a, s = k(x)
    assert a.dtype == np.float32 and isinstance(s, np.float32)
    np.testing.assert_array_equal(a, x * 2)
    assert s == 3


def test_complex_is_refused_for_programs():
    k = einsat.compile("fn f(x: [n]R) -> [n]R = gen(i:n) x[i]")
    with pytest.raises(einsat.DTypeError):
        k(np.array([1j, 2], dtype=np.complex64))
