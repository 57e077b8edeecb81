"""einsat.fn on complex numbers (einsat/builder.py): a complex numpy array
or number argument is a pair parameter ((R, R), [n](R, R)), complex traced
values compute with numpy's formulas, written out part by part, and a
complex result comes back as a complex array of the dtype einsat.compile
gives. Each case is checked against numpy with a relative tolerance scaled
by the magnitudes the result is computed from (|A| @ |B| for a product),
and the printed program against the text form (examples/complex.tl)."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import einsat
from einsat import conj, gen, sum

HERE = os.path.dirname(os.path.abspath(__file__))
COMPLEX_TL = os.path.join(HERE, "..", "..", "examples", "complex.tl")
rng = np.random.default_rng(25)


def crandom(*shape, dtype=np.complex128, offset=0):
    z = rng.standard_normal(shape) + 1j * rng.standard_normal(shape) + offset
    return z.astype(dtype)


def close(got, want, scale, tol=1e-13):
    """`got` is `want` within `tol` times `scale` (the magnitudes the
    result is computed from), part by part."""
    got, want, scale = np.asarray(got), np.asarray(want), np.asarray(scale)
    assert got.shape == want.shape, (got.shape, want.shape)
    err = np.abs(got - want)
    assert np.all(err <= tol * np.maximum(scale, np.finfo(float).tiny)), (got, want)


def cmm_fn():
    return einsat.fn(lambda A, B: gen(lambda i, l: sum(lambda j: A[i, j] * B[j, l])), name="cmm")


def test_cmm_is_the_text_forms_program_and_numpys_product():
    cmm = cmm_fn()
    A, B = crandom(7, 5), crandom(5, 3)
    got = cmm(A, B)
    with open(COMPLEX_TL) as f:
        k = einsat.compile(f.read(), fn="cmm")
    # the printed program is examples/complex.tl's cmm: one sum per part,
    # the product written out as numpy's per-element formula
    assert cmm.source == k.source
    assert "sum(j:m) A[i, j].0 * B[j, l].0 - A[i, j].1 * B[j, l].1" in cmm.source
    assert got.dtype == np.complex128 and got.shape == (7, 3)
    close(got, A @ B, np.abs(A) @ np.abs(B))
    np.testing.assert_allclose(got, A @ B, rtol=1e-13, atol=0)
    # and the printed program round-trips through einsat.compile
    again = einsat.compile(cmm.source)
    np.testing.assert_array_equal(again(A, B), got)
    # other sizes, with an offset: the same kernel
    kern = cmm.kernel
    A2, B2 = crandom(3, 9, offset=1e6), crandom(9, 4, offset=-3e5j)
    close(cmm(A2, B2), A2 @ B2, np.abs(A2) @ np.abs(B2))
    assert cmm.kernel is kern


def test_cmv_and_its_source():
    cmv = einsat.fn(lambda A, x: gen(lambda i: sum(lambda j: A[i, j] * x[j])), name="cmv")
    A, x = crandom(6, 4), crandom(4)
    got = cmv(A, x)
    assert cmv.source == einsat.compile(
        "fn cmv(A: [n,m](R,R), x: [m](R,R)) -> [n](R,R) = gen(i:n) "
        "(sum(j:m) A[i,j].0*x[j].0 - A[i,j].1*x[j].1, sum(j:m) A[i,j].0*x[j].1 + A[i,j].1*x[j].0)"
    ).source
    close(got, A @ x, np.abs(A) @ np.abs(x))


def test_strided_and_transposed_complex_views():
    cmm = cmm_fn()
    big = crandom(12, 10)
    A, B = big[::2, 1::2], big[1:11:2, ::-3]
    assert not A.flags.c_contiguous
    close(cmm(A, B[:, :4].T.T[:5]), A @ B[:5, :4], np.abs(A) @ np.abs(B[:5, :4]))
    close(cmm(B.T[:, :5], A.T[:5]), B.T[:, :5] @ A.T[:5], np.abs(B.T[:, :5]) @ np.abs(A.T[:5]))
    # the transpose as a gen
    t = einsat.fn(lambda A: gen(lambda i, j: A[j, i]))
    np.testing.assert_array_equal(t(A), A.T)
    assert t.source == "fn f(A: [n,m](R, R)) -> [m,n](R, R) =\n  gen(i:m, j:n) A[j, i]\n"


def test_complex64_arguments_give_complex64_as_compile_does():
    cmm = cmm_fn()
    A, B = crandom(4, 6, dtype=np.complex64), crandom(6, 2, dtype=np.complex64)
    got = cmm(A, B)
    assert got.dtype == np.complex64
    with open(COMPLEX_TL) as f:
        k = einsat.compile(f.read(), fn="cmm")
    np.testing.assert_array_equal(got, k(A, B))
    A64, B64 = A.astype(np.complex128), B.astype(np.complex128)
    close(got, A64 @ B64, np.abs(A64) @ np.abs(B64), tol=1e-6)
    # with complex128: numpy's result dtype
    assert cmm(A, B64).dtype == np.complex128
    # complex64 with a real float32 argument: complex64
    f = einsat.fn(lambda z, x: gen(lambda i: z[i] * x[i]))
    x = rng.random(4).astype(np.float32)
    r = f(A[:, 0], x)
    assert r.dtype == np.complex64
    close(r, A[:, 0].astype(np.complex128) * x, np.abs(A[:, 0]) * x, tol=1e-6)


def test_elementwise_products_conj_real_imag_and_sums():
    z, w = crandom(9), crandom(9)
    f = einsat.fn(lambda z, w: gen(lambda i: z[i] * w[i] - conj(z[i]) + z[i] * 2 - -w[i]))
    close(f(z, w), z * w - np.conj(z) + z * 2 + w, 3 * np.abs(z) * np.abs(w) + 3 * np.abs(z) + np.abs(w))
    parts = einsat.fn(lambda z: ((gen(lambda i: z[i].real), gen(lambda i: z[i].imag)), gen(lambda i: z[i].conjugate())))
    (re, im), c = parts(z)
    assert re.dtype == np.float64 and im.dtype == np.float64
    np.testing.assert_array_equal(re, z.real)
    np.testing.assert_array_equal(im, z.imag)
    np.testing.assert_array_equal(c, np.conj(z))
    s = einsat.fn(lambda z: sum(lambda i: z[i]))
    got = s(z)
    assert isinstance(got, np.complex128)
    close(got, np.sum(z), np.sum(np.abs(z)))
    assert s.source == "fn f(z: [n](R, R)) -> (R, R) =\n  (sum(i:n) z[i].0, sum(i:n) z[i].1)\n"
    # the sum of |z|^2 as z * conj(z): a complex number with imaginary part 0
    n2 = einsat.fn(lambda z: sum(lambda i: z[i] * conj(z[i])))
    got = n2(z)
    close(got.real, np.vdot(z, z).real, np.sum(np.abs(z) ** 2))
    assert got.imag == 0
    # real and imaginary parts of a real number: itself and 0
    r = einsat.fn(lambda x: gen(lambda i: x[i].real + x[i].imag + conj(x[i])))
    x = rng.random(4)
    np.testing.assert_array_equal(r(x), x + x)


def test_hermitian_inner_product_is_vdot():
    vdot = einsat.fn(lambda x, y: sum(lambda i: conj(x[i]) * y[i]))
    x, y = crandom(17), crandom(17, offset=2 - 1j)
    close(vdot(x, y), np.vdot(x, y), np.sum(np.abs(x) * np.abs(y)))
    # conj(x) * y written out as by hand (negations moved out exactly)
    assert vdot.source == (
        "fn f(x: [n](R, R), y: [n](R, R)) -> (R, R) =\n"
        "  (sum(i:n) x[i].0 * y[i].0 + x[i].1 * y[i].1, sum(i:n) x[i].0 * y[i].1 - x[i].1 * y[i].0)\n"
    )


def test_mixing_real_and_complex_arguments_and_python_numbers():
    f = einsat.fn(lambda z, x: gen(lambda i: x[i] * z[i] + 2 * z[i] - 1j * x[i] + (0.5 - 2j) * z[i] - 3))
    z, x = crandom(8), rng.standard_normal(8)
    want = x * z + 2 * z - 1j * x + (0.5 - 2j) * z - 3
    close(f(z, x), want, np.abs(x) * np.abs(z) + 2 * np.abs(z) + np.abs(x) + 2.5 * np.abs(z) + 3)
    # a real factor multiplies both parts, 1j swaps them: no zero terms
    assert "x[i] * z[i].0" in f.source and "2 * z[i].1" in f.source and "0 *" not in f.source
    g = einsat.fn(lambda x: gen(lambda i: 1j * x[i]))
    assert g.trace(x).source == "fn f(x: [n]R) -> [n](R, R) =\n  gen(i:n) (0, x[i])\n"
    # a complex result from real arguments is complex (complex64 from float32)
    r = g(x)
    assert r.dtype == np.complex128
    np.testing.assert_array_equal(r, 1j * x)
    assert g(x.astype(np.float32)).dtype == np.complex64
    # real and complex results together: a tuple of a complex and a real array
    h = einsat.fn(lambda z, x: (gen(lambda i: z[i] * x[i]), gen(lambda i: z[i].real * x[i])))
    c, r = h(z, x)
    assert c.dtype == np.complex128 and r.dtype == np.float64
    close(c, z * x, np.abs(z) * np.abs(x))
    close(r, z.real * x, np.abs(z.real * x))
    # a tensor of pairs of a complex and a real number
    p = einsat.fn(lambda z, x: gen(lambda i: (z[i] + x[i], x[i])))
    c, r = p(z, x)
    assert c.dtype == np.complex128
    np.testing.assert_array_equal(c, z + x)
    np.testing.assert_array_equal(r, x)
    # a pair of real parts from complex arguments is a pair, not a complex array
    q = einsat.fn(lambda z: (gen(lambda i: z[i].real), gen(lambda i: z[i].imag)))
    re, im = q(z)
    np.testing.assert_array_equal(re, z.real)
    np.testing.assert_array_equal(im, z.imag)
    # a result without complex numbers from complex64 arguments: computed
    # from the float32 parts, as numpy's z.real.sum() (float32)
    z32 = z.astype(np.complex64)
    s = einsat.fn(lambda z: sum(lambda i: z[i].real * z[i].imag))
    got = s(z32)
    assert got.dtype == np.float32
    close(got, np.sum(z32.real.astype(float) * z32.imag), np.sum(np.abs(z32.real * z32.imag)), tol=1e-6)
    re, im = q(z32)
    assert re.dtype == np.float32
    np.testing.assert_array_equal(re, z32.real)


def test_numpy_numbers_and_indices_with_complex_numbers():
    z = crandom(5)
    f = einsat.fn(lambda z: gen(lambda i: np.complex128(2j) * z[i] + np.float64(0.5) * z[i] - np.float32(1) + z[i] * (i * 1j)))
    i = np.arange(5)
    close(f(z), 2j * z + 0.5 * z - 1 + z * (i * 1j), 2.5 * np.abs(z) + 1 + np.abs(z) * i)
    assert "2 * z[i].0" in f.source and "z[i].0 * i" in f.source
    g = einsat.fn(lambda z: gen(lambda i: np.complex64(2j) / z[i]))
    close(g(z), 2j / z, np.abs(2j / z), tol=1e-15)
    # numpy's functions and arrays on traced values stay errors
    with pytest.raises(einsat.TraceError, match="given to numpy"):
        einsat.fn(lambda z: gen(lambda i: np.exp(z[i])))(z)
    with pytest.raises(einsat.TraceError, match="given to numpy"):
        einsat.fn(lambda z: gen(lambda i: np.ones(2) * z[i]))(z)


def test_complex_scalars():
    mul = einsat.fn(lambda a, b: a * b + 1)
    got = mul(1 + 2j, 3 - 1j)
    assert isinstance(got, np.complex128) and got == (1 + 2j) * (3 - 1j) + 1
    assert mul.source == "fn f(a: (R, R), b: (R, R)) -> (R, R) =\n  (a.0 * b.0 - a.1 * b.1 + 1, a.0 * b.1 + a.1 * b.0)\n"
    assert mul(np.complex64(1 + 2j), np.complex64(2j)).dtype == np.complex64
    assert mul(np.array(1 + 2j), 2.0) == (1 + 2j) * 2 + 1
    # a complex number times a real one
    sc = einsat.fn(lambda a, x: gen(lambda i: a * x[i]))
    x = rng.random(5)
    np.testing.assert_array_equal(sc(0.5 - 3j, x), (0.5 - 3j) * x)
    # a number scaled by a complex constant inside the function
    k = einsat.fn(lambda x: sum(lambda i: x[i] * (2 + 1j)))
    close(k(x), np.sum(x) * (2 + 1j), 3 * np.sum(x))


def test_let_where_and_fold_of_complex_values():
    z, x = crandom(6), rng.standard_normal(6)
    f = einsat.fn(lambda z: gen(lambda i: einsat.let(z[i] * z[i], lambda w: w * w + conj(w))))
    w = z * z
    close(f(z), w * w + np.conj(w), 2 * np.abs(w) ** 2 + np.abs(w))
    assert "let w = (z[i].0 * z[i].0 - z[i].1 * z[i].1, z[i].0 * z[i].1 + z[i].1 * z[i].0) in" in f.source
    g = einsat.fn(lambda z, x: gen(lambda i: einsat.where(x[i] > 0, z[i], 2 * x[i])))
    np.testing.assert_array_equal(g(z, x), np.where(x > 0, z, 2 * x))
    # Horner's rule on complex coefficients at a complex point
    poly = einsat.fn(lambda c, t: einsat.fold(0j, lambda i, acc: acc * t + c[i]))
    c, t = crandom(7), 0.3 - 0.8j
    close(poly(c, t), np.polyval(c, t), np.polyval(np.abs(c), np.abs(t)) * 8)
    assert "fold(i:n, acc = (0, 0)) (acc.0 * t.0 - acc.1 * t.1 + c[i].0, acc.0 * t.1 + acc.1 * t.0 + c[i].1)" \
        in poly.source


def test_special_values_as_numpy_where_the_formula_is_the_same():
    inf, nan = np.inf, np.nan
    z = np.array([complex(inf, 1), complex(1, inf), complex(nan, 0), complex(0, nan), 1e300 + 1e300j,
                  1e-300 + 1e-300j, complex(-inf, -inf), 3 + 4j, -0.0 + 0j])
    w = np.array([2 + 1j, 1 - 1j, 1 + 1j, 2 + 0j, 1e10 - 1e10j, 1e-300 + 1e-300j, 1 + 1j, complex(inf, 0),
                  complex(-0.0, -0.0)])
    prod = einsat.fn(lambda z, w: gen(lambda i: z[i] * w[i] + conj(z[i]) - w[i]))
    with np.errstate(all="ignore"):
        want = z * w + np.conj(z) - w
    got = prod(z, w)
    for part in (np.real, np.imag):
        g, wa = part(got), part(want)
        # the same non-finiteness (an infinity may be NaN and back, as
        # the contract allows), and finite values close
        np.testing.assert_array_equal(np.isfinite(g), np.isfinite(wa))
        fin = np.isfinite(wa)
        close(g[fin], wa[fin], np.abs(wa[fin]) + 1e-300, tol=1e-15)
    # a real factor: the parts are scaled, numpy multiplies 0 * inf (NaN)
    sc = einsat.fn(lambda x, z: gen(lambda i: x[i] * z[i]))
    got = sc(np.array([2.0]), np.array([complex(1, inf)]))
    assert got[0] == complex(2, inf)
    with np.errstate(invalid="ignore"):
        assert np.isnan((np.array([2.0]) * np.array([complex(1, inf)]))[0].real)


def test_refused_operations_are_clear_trace_errors():
    z, x = crandom(3), rng.random(3)

    def err(f, match, *args):
        with pytest.raises(einsat.TraceError, match=match):
            einsat.fn(f)(*(args or (z, x)))

    err(lambda z, x: gen(lambda i: einsat.abs(z[i])), r"hypot.*einsat.sqrt\(z.real \* z.real")
    err(lambda z, x: gen(lambda i: einsat.exp(z[i])), r"einsat.exp\(z.real\) \* einsat.cos\(z.imag\)")
    err(lambda z, x: gen(lambda i: einsat.log(z[i])), "einsat.log of a complex number")
    err(lambda z, x: gen(lambda i: einsat.maximum(z[i], x[i])), "not ordered")
    err(lambda z, x: einsat.max_over(lambda i: z[i]), "not ordered")
    err(lambda z, x: gen(lambda i: einsat.where(z[i] > 0, 1, 0)), "comparisons take real numbers")
    err(lambda z, x: gen(lambda i: z[i][0]), r"complex number .* indexed: its parts are z.real")
    err(lambda z, x: z.real, r".real of a complex tensor of 1 axis")
    err(lambda z, x: z * 2, r"`\*` on a complex tensor")
    err(lambda z, x: gen(lambda i: conj(z)), "einsat.conj of a complex tensor")
    err(lambda z: z, "pair parameters are complex numbers", (z.real, z.imag))
    err(lambda z, x: gen(lambda i: einsat.where(x[i] > 0, z[i], z)), "einsat.where of a complex tensor")
    err(lambda z, x: einsat.fold(0, lambda i, acc: acc * z[i]), r"start it complex: einsat.fold\(0j")


def test_complex_division_is_numpys_smith_algorithm():
    div = einsat.fn(lambda z, w: gen(lambda i: z[i] / w[i]))
    z, w = crandom(40), crandom(40, offset=0.5)
    close(div(z, w), z / w, np.abs(z / w), tol=1e-15)
    # numpy's loop written out: the branch on |w.0| >= |w.1|, a division by
    # zero, then rat and scl
    assert (
        "where(abs(w[i].0) >= abs(w[i].1), where(w[i].0 = 0, z[i].0 / abs(w[i].0), let rat = w[i].1 / w[i].0 in "
        "let scl = 1 / (w[i].0 + w[i].1 * rat) in (z[i].0 + z[i].1 * rat) * scl), let rat1 = w[i].0 / w[i].1 in "
        "let scl1 = 1 / (w[i].1 + w[i].0 * rat1) in (z[i].0 * rat1 + z[i].1) * scl1)"
    ) in div.source
    np.testing.assert_array_equal(einsat.compile(div.source)(z, w), div(z, w))
    # every pair of special values: numpy's non-finiteness, and its values
    # (Smith's algorithm does not overflow at 1e300); subnormal divisors
    # left out: there 1 / (w.1 + w.0 * rat) overflows, and the contract
    # lets the optimiser regroup (a * scl is a / (w.1 + ...))
    vals = [0.0, -0.0, 1.0, -2.5, 1e300, -1e300, 1e-300, np.inf, -np.inf, np.nan, 0.7]
    zs = np.array([complex(a, b) for a in vals for b in vals])
    Z, W = (g.ravel() for g in np.meshgrid(zs, zs))
    got = div(Z, W)
    with np.errstate(all="ignore"):
        want = Z / W
    for part in (np.real, np.imag):
        g, wa = part(got), part(want)
        np.testing.assert_array_equal(np.isfinite(g), np.isfinite(wa))
        fin = np.isfinite(wa)
        close(g[fin], wa[fin], np.abs(want[fin]), tol=1e-15)
    assert div(np.array([1e300 + 1e300j]), np.array([1e300 - 1e300j]))[0] == 1j
    # real and complex operands, a divisor computed (bound by let: it is
    # read several times), Python numbers
    x = rng.standard_normal(40)
    mixed = einsat.fn(lambda z, x: gen(lambda i: (z[i] / x[i], x[i] / z[i])))
    a, b = mixed(z, x)
    close(a, z / x, np.abs(z / x), tol=1e-15)
    close(b, x / z, np.abs(x / z), tol=1e-15)
    A = crandom(5, 40)
    mv = einsat.fn(lambda A, z, w: gen(lambda i: w[i] / sum(lambda j: A[i, j] * z[j])))
    close(mv(A, z, w[:5]), w[:5] / (A @ z), np.abs(w[:5]) * (np.abs(A) @ np.abs(z)) / np.abs(A @ z) ** 2)
    assert "let b0 = sum(j:m)" in mv.source
    # by a Python number: rat and scl computed as numpy computes them
    by3 = einsat.fn(lambda z: gen(lambda i: z[i] / 3))
    np.testing.assert_array_equal(by3(z), z / 3)
    assert by3.source == "fn f(z: [n](R, R)) -> [n](R, R) =\n  gen(i:n) (z[i].0 * 0.3333333333333333, z[i].1 * 0.3333333333333333)\n"
    assert not np.array_equal(z.real * (1 / 3), z.real / 3)  # numpy's z / 3 is not z.real / 3
    byc = einsat.fn(lambda z: gen(lambda i: z[i] / (2 - 1j) + 1 / z[i]))
    close(byc(z), z / (2 - 1j) + 1 / z, np.abs(z / (2 - 1j)) + np.abs(1 / z), tol=1e-15)
    assert "(z[i].0 - z[i].1 * 0.5) * 0.4" in byc.source
    s = einsat.fn(lambda a, b: a / b)
    assert s(1 + 2j, 3 - 4j) == (1 + 2j) / (3 - 4j) == np.complex128(1 + 2j) / np.complex128(3 - 4j)
    # a zero part's terms are left out: where numpy's inf * 0 is NaN, this
    # keeps the other part's value
    imag = einsat.fn(lambda z: gen(lambda i: z[i] / 2j))
    got = imag(np.array([complex(np.inf, 1)]))[0]
    assert got == complex(0.5, -np.inf)
    with np.errstate(invalid="ignore"):
        assert np.isnan((np.array([complex(np.inf, 1)]) / 2j)[0].real)


def test_real_and_complex_arguments_trace_separately():
    f = einsat.fn(lambda a, b: gen(lambda i: a[i] * b[i]))
    x, z = rng.random(4), crandom(4)
    np.testing.assert_array_equal(f(x, x), x * x)
    assert f.source.startswith("fn f(a: [n]R, b: [n]R)")
    close(f(z, x), z * x, np.abs(z) * x)
    assert f.source.startswith("fn f(a: [n](R, R), b: [n]R)")
    close(f(z, z), z * z, np.abs(z) ** 2)
    assert f.source.startswith("fn f(a: [n](R, R), b: [n](R, R))")
    np.testing.assert_array_equal(f(x, x), x * x)
    assert repr(f) == "<einsat.fn f: 3 traced signatures>"


MODERATE = st.floats(-1e3, 1e3, allow_nan=False)


def complex_arrays(shape):
    return hnp.arrays(np.complex128, shape, elements=st.builds(complex, MODERATE, MODERATE))


CMM = cmm_fn()
VDOT = einsat.fn(lambda x, y: sum(lambda i: conj(x[i]) * y[i]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(0, 6), m=st.integers(0, 6), k=st.integers(0, 6))
def test_cmm_is_numpys_product_on_random_data(data, n, m, k):
    A = data.draw(complex_arrays((n, m)))
    B = data.draw(complex_arrays((m, k)))
    got = CMM(A, B)
    assert got.shape == (n, k) and got.dtype == np.complex128
    close(got, A @ B, np.abs(A) @ np.abs(B) * 4)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), n=st.integers(0, 20))
def test_vdot_on_random_data(data, n):
    x = data.draw(complex_arrays(n))
    y = data.draw(complex_arrays(n))
    close(VDOT(x, y), np.vdot(x, y), np.sum(np.abs(x) * np.abs(y)) * 4)


# parts of every kind: zeros, moderate and wide magnitudes (no subnormals:
# there 1 / (w.1 + w.0 * rat) overflows, see the division test), inf, NaN
WIDE = st.one_of(
    st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 1e-300]),
    st.floats(-1e3, 1e3, allow_subnormal=False),
    st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False),
)
MUL = einsat.fn(lambda z, w: gen(lambda i: z[i] * w[i]))
DIV = einsat.fn(lambda z, w: gen(lambda i: z[i] / w[i]))


def same_as_numpy(got, want):
    """The same non-finiteness part by part, and finite parts within
    rounding of the result's magnitude."""
    for part in (np.real, np.imag):
        g, w = part(got), part(want)
        np.testing.assert_array_equal(np.isfinite(g), np.isfinite(w))
        fin = np.isfinite(w)
        close(g[fin], w[fin], np.abs(want[fin]), tol=1e-15)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), n=st.integers(1, 12))
def test_products_and_quotients_as_numpy_on_special_values(data, n):
    parts = [data.draw(hnp.arrays(np.float64, n, elements=WIDE)) for _ in range(4)]
    # (parts set one by one: re + 1j * im would make NaN from 0 * inf)
    z, w = np.empty(n, complex), np.empty(n, complex)
    z.real, z.imag, w.real, w.imag = parts
    with np.errstate(all="ignore"):
        mul, div = z * w, z / w
    same_as_numpy(MUL(z, w), mul)
    same_as_numpy(DIV(z, w), div)
