"""Programs on complex arguments: a complex number or numpy array given
for a pair parameter ((R, R), [n](R, R)) is its real and imaginary parts
(numpy's .real and .imag, views of the interleaved storage), and a call
given complex arguments returns a pair-of-arrays result as one complex
array of numpy's result dtype (complex64 or complex128)."""

import os

import numpy as np
import pytest

import einsat

HERE = os.path.dirname(os.path.abspath(__file__))
COMPLEX_TL = os.path.join(HERE, "..", "..", "examples", "complex.tl")
rng = np.random.default_rng(11)


def source():
    with open(COMPLEX_TL) as f:
        return f.read()


def crandom(*shape, dtype=np.complex128):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def close(got, want, tol):
    scale = np.maximum(np.abs(want), 1)
    assert np.all(np.abs(got - want) <= tol * scale), (got, want)


def test_complex_matrix_product_and_matvec_as_numpy():
    cmm = einsat.compile(source(), fn="cmm")
    cmv = einsat.compile(source(), fn="cmv")
    A, B, x = crandom(7, 5), crandom(5, 3), crandom(7)
    got = cmm(A, B)
    assert got.dtype == np.complex128 and got.shape == (7, 3)
    close(got, A @ B, 1e-14)
    C = crandom(5, 5)
    close(cmv(C, x[:5]), C @ x[:5], 1e-14)
    # strided and transposed complex views: read in place, as numpy reads them
    big = crandom(12, 10)
    A2, B2 = big[::2, 1::2], big[1:11:2, ::-3].T.T
    close(cmm(A2, B2), A2 @ B2, 1e-14)
    close(cmm(B2.T, A2.T), B2.T @ A2.T, 1e-14)
    # a pair of real arrays still works, and returns a pair
    re, im = cmm((A.real.copy(), A.imag.copy()), (B.real.copy(), B.imag.copy()))
    close(re + 1j * im, A @ B, 1e-14)


def test_complex64_in_complex64_out_and_mixing():
    cmm = einsat.compile(source(), fn="cmm")
    A, B = crandom(4, 6, dtype=np.complex64), crandom(6, 2, dtype=np.complex64)
    got = cmm(A, B)
    assert got.dtype == np.complex64
    close(got, (A.astype(np.complex128) @ B.astype(np.complex128)), 1e-6)
    # complex64 with complex128: numpy's result dtype
    assert cmm(A, B.astype(np.complex128)).dtype == np.complex128


def test_complex64_computes_in_float32_as_numpy():
    # numpy's complex64 arithmetic rounds every step to float32: (x + 1) - 1
    # of 2^-25 is 0 there (1 + 2^-25 rounds to 1), 2^-25 in float64; the
    # program runs on the f32 kernel and agrees with numpy bit for bit
    k = einsat.compile("fn f(z: [n](R,R)) -> [n](R,R) = gen(i:n) ((z[i].0 + 1) - 1, z[i].1 * 3)")
    z = np.array([2.0**-25 + 0.5j, 1e-3 + 1e30j, -2.5 - 0j], dtype=np.complex64)
    got = k(z)
    assert got.dtype == np.complex64
    want = ((z.real + np.float32(1)) - np.float32(1)) + 1j * (z.imag * np.float32(3))
    assert want.dtype == np.complex64
    np.testing.assert_array_equal(got, want)
    assert got[0].real == 0.0
    # complex128 computes in float64: 2^-25 stays
    assert k(z.astype(np.complex128))[0].real == 2.0**-25
    # a complex64 number result and float32 arguments beside complex64 ones
    dot = einsat.compile("fn d(x: [n]R, z: [n](R,R)) -> (R,R) = (sum(i:n) x[i] * z[i].0, sum(i:n) x[i] * z[i].1)")
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    r = dot(x, z)
    assert isinstance(r, np.complex64)
    np.testing.assert_allclose(r, np.sum(x * z), rtol=1e-6)
    # float64 beside complex64 is complex128, as numpy's result dtype
    assert isinstance(dot(x.astype(np.float64), z), np.complex128)


def test_complex_numbers_and_special_values():
    k = einsat.compile("fn mul(a: (R, R), b: (R, R)) -> (R, R) = (a.0*b.0 - a.1*b.1, a.0*b.1 + a.1*b.0)")
    z = k(1 + 2j, 3 - 1j)
    assert isinstance(z, np.complex128) and z == (1 + 2j) * (3 - 1j)
    assert k(np.complex64(1 + 2j), np.complex64(2j)).dtype == np.complex64
    polar = einsat.compile(source(), fn="polar")
    zs = np.array([3 + 4j, 0j, complex(np.inf, 0), complex(np.nan, 1), -1e300 + 1e300j])
    r2, (c, s) = polar(zs)  # a result that is not a pair of arrays: as before
    with np.errstate(all="ignore"):
        r = np.sqrt(zs.real * zs.real + zs.imag * zs.imag)
        np.testing.assert_array_equal(r2, r * r)
        np.testing.assert_array_equal(c, zs.real / (1 + r))
        np.testing.assert_array_equal(s, zs.imag / (1 + r))


def test_complex_errors_are_clear():
    k = einsat.compile("fn f(x: [n]R) -> R = sum(i:n) x[i]")
    with pytest.raises(einsat.DTypeError, match="complex argument for a real parameter"):
        k(np.ones(3, dtype=complex))
    cmm = einsat.compile(source(), fn="cmm")
    with pytest.raises(einsat.ShapeError):
        cmm(crandom(3, 4), crandom(5, 2))
