"""Complex matrix products on the GEMM stage (issue 25): examples/complex.tl's
cmm and cmv, and the builder's product of complex arrays, run as real GEMMs
on the parts (read in place from numpy's interleaved storage), and agree
with numpy's `a @ b` for complex128 and complex64, with a relative tolerance
scaled by |a| @ |b|, on sizes with 0, 1 and odd sizes, transposed and
strided arguments."""

import os

import numpy as np
import pytest

import einsat
from einsat import gen, sum

HERE = os.path.dirname(os.path.abspath(__file__))
COMPLEX_TL = os.path.join(HERE, "..", "..", "examples", "complex.tl")
rng = np.random.default_rng(2525)


def crandom(*shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def compiled(fn, threads=None):
    with open(COMPLEX_TL) as f:
        return einsat.compile(f.read(), fn=fn, threads=threads)


def close(got, a, b, tol):
    want = a.astype(np.complex128) @ b.astype(np.complex128)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert got.shape == want.shape
    err = np.abs(got.astype(np.complex128) - want)
    assert np.all(err <= tol * np.maximum(scale, 1e-300)), np.max(err / np.maximum(scale, 1e-300))


SHAPES = [(0, 3, 2), (3, 0, 2), (2, 3, 0), (1, 1, 1), (1, 17, 3), (17, 5, 1), (7, 13, 9), (64, 33, 65)]


def test_cmm_and_cmv_are_staged():
    assert compiled("cmm").stages == [
        "complex gemm n×k×m (real part)",
        "complex gemm n×k×m (imaginary part)",
    ]
    assert all(s.startswith("complex gemm") for s in compiled("cmv").stages)


@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-13), (np.complex64, 1e-5)])
@pytest.mark.parametrize("threads", [1, 2])
def test_cmm_is_numpys_product(dtype, tol, threads):
    cmm = compiled("cmm", threads)
    for n, m, k in SHAPES:
        a, b = crandom(n, m, dtype=dtype), crandom(m, k, dtype=dtype)
        got = cmm(a, b)
        assert got.dtype == dtype
        close(got, a, b, tol)
        # transposed and strided arguments (views, read in place)
        at = np.ascontiguousarray(a.T).T
        bs = crandom(2 * m, 3 * k, dtype=dtype)[::2, ::3]
        bs[...] = b
        close(cmm(at, bs), a, b, tol)
        close(cmm(a[::-1, ::-1], b[::-1, :]), a[::-1, ::-1], b[::-1, :], tol)


@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-13), (np.complex64, 1e-5)])
def test_cmv_is_numpys_product(dtype, tol):
    cmv = compiled("cmv")
    for n in [0, 1, 5, 40]:
        a, x = crandom(n, n, dtype=dtype), crandom(n, dtype=dtype)
        got = cmv(a, x)
        assert got.dtype == dtype
        close(got[:, None], a, x[:, None], tol)


@pytest.mark.parametrize("dtype,tol", [(np.complex128, 1e-13), (np.complex64, 1e-5)])
def test_the_builders_product_is_staged_and_numpys(dtype, tol):
    cmm = einsat.fn(lambda A, B: gen(lambda i, l: sum(lambda j: A[i, j] * B[j, l])), name="cmm")
    a, b = crandom(9, 31, dtype=dtype), crandom(31, 6, dtype=dtype)
    got = cmm(a, b)
    assert got.dtype == dtype
    close(got, a, b, tol)
    assert all(s.startswith("complex gemm") for s in cmm.kernel.stages), cmm.kernel.stages


def test_specials_stay_non_finite_as_numpy():
    cmm = compiled("cmm")
    a, b = crandom(4, 6), crandom(6, 3)
    a[1, 2] = complex(np.inf, 1.0)
    b[3, 0] = complex(np.nan, 0.5)
    got = cmm(a, b)
    with np.errstate(invalid="ignore"):
        want = a @ b
    # (numpy's complex product may make NaN from inf * 0 where the parts'
    # formula does not; finiteness agrees)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
