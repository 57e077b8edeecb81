"""einsat.fn: Python functions traced into einsat programs (the Ein-style
builder, einsat/builder.py). Each case is compared with the text form: the
same printed program (the Kernel's `source`, printed from the parsed
function) and the same results; every function of examples/fold.tl and
examples/gather.tl is written with the builder; folds and gathers are
also checked on odd data (hypothesis) against numpy or the loop."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import einsat
from einsat import gen, sum, exp, log, sqrt, sin, cos, tanh, maximum, minimum

rng = np.random.default_rng(7)


def same_as_text(traced, text, *args):
    """`traced` called on `args` gives the program `text` gives, and the
    same result."""
    got = traced(*args)
    k = einsat.compile(text)
    assert traced.source == k.source
    want = k(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)
    return got


def test_matvec_lambda_form():
    mv = einsat.fn(lambda A, x: gen(lambda i: sum(lambda j: A[i, j] * x[j])))
    A, x = rng.random((4, 3)), rng.random(3)
    y = same_as_text(mv, "fn f(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]", A, x)
    np.testing.assert_allclose(y, A @ x, rtol=1e-12)
    # other sizes reuse the kernel traced for these ranks
    k = mv.kernel
    A2, x2 = rng.random((6, 5)), rng.random(5)
    np.testing.assert_allclose(mv(A2, x2), A2 @ x2, rtol=1e-12)
    assert mv.kernel is k
    # by parameter name too
    np.testing.assert_allclose(mv(x=x2, A=A2), A2 @ x2, rtol=1e-12)


def test_decorator_form_and_name():
    @einsat.fn
    def matmul(A, B):
        return gen(lambda i, k: sum(lambda j: A[i, j] * B[j, k]))

    A, B = rng.random((3, 4)), rng.random((4, 5))
    C = same_as_text(
        matmul,
        "fn matmul(A: [n,m]R, B: [m,k]R) -> [n,k]R = gen(i:n, k:k) sum(j:m) A[i,j] * B[j,k]",
        A,
        B,
    )
    np.testing.assert_allclose(C, A @ B, rtol=1e-12)
    assert matmul.kernel.name == "matmul"


def test_arithmetic_numbers_on_either_side():
    f = einsat.fn(lambda x, y: gen(lambda i: 2 * x[i] - y[i] / 3 + 1 - -x[i] * (1 - y[i])))
    x, y = rng.random(5), rng.random(5)
    same_as_text(
        f,
        "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) 2 * x[i] - y[i] / 3 + 1 - -x[i] * (1 - y[i])",
        x,
        y,
    )
    np.testing.assert_allclose(f(x, y), 2 * x - y / 3 + 1 + x * (1 - y), rtol=1e-12)


def test_scalar_functions():
    f = einsat.fn(
        lambda x: gen(
            lambda i: exp(x[i]) + log(x[i]) + sqrt(x[i]) + sin(x[i]) * cos(x[i]) + tanh(x[i])
            + einsat.abs(x[i] - 0.5) + maximum(x[i], 0.3) - minimum(0.2, x[i])
        )
    )
    x = rng.random(6) + 0.1
    same_as_text(
        f,
        "fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i]) + log(x[i]) + sqrt(x[i]) + sin(x[i]) * cos(x[i])"
        " + tanh(x[i]) + abs(x[i] - 0.5) + max(x[i], 0.3) - min(0.2, x[i])",
        x,
    )
    want = (np.exp(x) + np.log(x) + np.sqrt(x) + np.sin(x) * np.cos(x) + np.tanh(x) + np.abs(x - 0.5)
            + np.maximum(x, 0.3) - np.minimum(0.2, x))
    np.testing.assert_allclose(f(x), want, rtol=1e-12)


def test_erf_and_exact_gelu():
    # the error function (libm's erf in the interpreter; the JIT's kernel is
    # the same operations, bit for bit), checked against math.erf
    import math

    f = einsat.fn(lambda x: gen(lambda i: 0.5 * x[i] * (1 + einsat.erf(x[i] * 0.7071067811865476))))
    x = np.concatenate([rng.standard_normal(1000) * 3, [0.0, -0.0, 6.5, -30.0, np.inf, -np.inf, np.nan]])
    same_as_text(f, "fn f(x: [n]R) -> [n]R = gen(i:n) 0.5 * x[i] * (1 + erf(x[i] * 0.7071067811865476))", x)
    with np.errstate(invalid="ignore"):  # -inf * (1 + erf(-inf)) is NaN, as in the program
        want = np.array([0.5 * v * (1 + math.erf(v * 0.7071067811865476)) for v in x])
    np.testing.assert_allclose(f(x), want, rtol=1e-14, atol=0, equal_nan=True)


def test_powers():
    # `**` and einsat.power are the language's pow (C's pow, numpy's power
    # on floats); `x ** 2` stays `x * x`, the same value
    f = einsat.fn(lambda x, y: gen(lambda i: x[i] ** 1.5 + einsat.power(x[i], y[i]) + 2 ** y[i] + x[i] ** 2))
    x = np.concatenate([rng.random(50) * 10, [0.0, -0.0, -2.0, -8.0, np.inf, -np.inf, np.nan, 1.0]])
    y = np.concatenate([rng.standard_normal(50) * 3, [0.5, -1.0, 3.0, 1.0 / 3.0, 2.0, -0.5, 0.0, np.nan]])
    same_as_text(
        f,
        "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) pow(x[i], 1.5) + pow(x[i], y[i]) + pow(2, y[i]) + x[i] * x[i]",
        x,
        y,
    )
    with np.errstate(all="ignore"):
        want = np.power(x, 1.5) + np.power(x, y) + np.power(2.0, y) + x * x
    np.testing.assert_allclose(f(x, y), want, rtol=1e-14, atol=0, equal_nan=True)


def test_index_arithmetic_pads_with_zeros():
    blur = einsat.fn(lambda x: gen(lambda i: (x[i - 1] + x[i] + x[i + 1]) / 3))
    x = rng.random(7)
    got = same_as_text(blur, "fn f(x: [n]R) -> [n]R = gen(i:n) (x[i-1] + x[i] + x[i+1]) / 3", x)
    p = np.concatenate([[0.0], x, [0.0]])
    np.testing.assert_allclose(got, (p[:-2] + p[1:-1] + p[2:]) / 3, rtol=1e-12)
    down = einsat.fn(lambda x: gen(lambda i: x[2 * i] + x[0], 3))
    same_as_text(down, "fn f(x: [n]R) -> [3]R = gen(i:3) x[2*i] + x[0]", x)


def test_scalar_result_and_number_parameters():
    dot = einsat.fn(lambda x, y, c: c * sum(lambda i: x[i] * y[i]))
    x, y = rng.random(4), rng.random(4)
    r = same_as_text(dot, "fn f(x: [n]R, y: [n]R, c: R) -> R = c * sum(i:n) x[i] * y[i]", x, y, 2.0)
    assert type(r) is np.float64
    assert r == pytest.approx(2 * x @ y, rel=1e-12)


def test_sum_inside_arithmetic_is_bracketed():
    f = einsat.fn(lambda x: gen(lambda i: sum(lambda j: x[j]) * x[i] + 1))
    x = rng.random(4)
    same_as_text(f, "fn f(x: [n]R) -> [n]R = gen(i:n) (sum(j:n) x[j]) * x[i] + 1", x)
    np.testing.assert_allclose(f(x), x.sum() * x + 1, rtol=1e-12)


def test_pairs():
    f = einsat.fn(lambda x: (sum(lambda i: x[i]), gen(lambda i: (x[i], x[i] * x[i]))))
    x = rng.random(3)
    k = einsat.compile("fn f(x: [n]R) -> (R, [n](R, R)) = (sum(i:n) x[i], gen(i:n) (x[i], x[i] * x[i]))")
    s, (a, b) = f(x)
    assert f.source == k.source
    assert s == pytest.approx(x.sum(), rel=1e-12)
    np.testing.assert_allclose(a, x, rtol=1e-12)
    np.testing.assert_allclose(b, x * x, rtol=1e-12)


def test_rank_signatures_are_cached_separately():
    total = einsat.fn(lambda x: sum(lambda i: x[i]))
    assert total(np.ones(3)) == 3.0
    k1 = total.kernel
    assert total(np.ones(5)) == 5.0 and total.kernel is k1
    # a tensor indexed on one axis traces the sum of its rows
    rows = einsat.fn(lambda x: sum(lambda i: x[i][0]))
    assert rows(np.ones((3, 2))) == 3.0
    assert "x: [n,m]R" in rows.source


def test_shadowed_index_names_are_renamed():
    f = einsat.fn(lambda A: gen(lambda i: sum(lambda j: A[i, j] * sum(lambda j: A[j, i]))))
    A = rng.random((3, 3))
    got = f(A)
    np.testing.assert_allclose(got, A.sum(axis=1) * A.sum(axis=0), rtol=1e-12)


def test_nested_gen_results():
    outer = einsat.fn(lambda x, y: gen(lambda i: gen(lambda j: x[i] * y[j])))
    x, y = rng.random(2), rng.random(3)
    got = same_as_text(outer, "fn f(x: [n]R, y: [m]R) -> [n,m]R = gen(i:n) gen(j:m) x[i] * y[j]", x, y)
    np.testing.assert_allclose(got, np.outer(x, y), rtol=1e-12)


# ------------------------------------------------------------ errors


def test_index_on_axes_of_different_sizes():
    f = einsat.fn(lambda A, x: gen(lambda i: sum(lambda j: A[i, j] * x[j])))
    with pytest.raises(einsat.TraceError, match=r"index j .*axis 0 of x \(size 4\).*axis 1 of A \(size 3\)"):
        f(np.ones((2, 3)), np.ones(4))


def test_untraceable_values():
    outside = np.ones(3)
    f = einsat.fn(lambda x: gen(lambda i: x[i] * outside))
    with pytest.raises(einsat.TraceError, match=r"array of shape \(3,\) is not traceable"):
        f(np.ones(3))
    g = einsat.fn(lambda x: gen(lambda i: x[i] * "a"))
    with pytest.raises(einsat.TraceError, match="str.*not traceable"):
        g(np.ones(3))
    h = einsat.fn(lambda x: gen(lambda i: x[i] if x[i] > 0 else 0))
    with pytest.raises((einsat.TraceError, TypeError)):
        h(np.ones(3))
    b = einsat.fn(lambda x: gen(lambda i: 1.0 if x[i] else 0.0))
    with pytest.raises(einsat.TraceError, match="truth value"):
        b(np.ones(3))


def test_range_not_inferable():
    f = einsat.fn(lambda x: gen(lambda i: x[i + 1]))
    with pytest.raises(einsat.TraceError, match="range of index i cannot be inferred"):
        f(np.ones(3))
    g = einsat.fn(lambda x: gen(lambda i: x[i + 1], like=(x, 0)))
    np.testing.assert_allclose(g(np.arange(3.0)), [1.0, 2.0, 0.0])


def test_other_errors():
    with pytest.raises(einsat.TraceError, match="arithmetic takes numbers"):
        einsat.fn(lambda x, y: x + y)(np.ones(2), np.ones(2))
    with pytest.raises(einsat.TraceError, match="has 1 axis but is indexed with 2"):
        einsat.fn(lambda x: gen(lambda i: x[i, i]))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="index i with // or %"):
        einsat.fn(lambda x: gen(lambda i: x[i // 2]))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="product of two indices"):
        einsat.fn(lambda A: gen(lambda i: sum(lambda j: A[i, i * j])))(np.ones((2, 2)))
    with pytest.raises(einsat.TraceError, match="a sum adds numbers"):
        einsat.fn(lambda A: sum(lambda i: A[i]))(np.ones((2, 2)))
    with pytest.raises(einsat.ShapeError, match="takes 2 arguments but 1 was given"):
        einsat.fn(lambda x, y: sum(lambda i: x[i] * y[i]))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="inside a function given to einsat.fn"):
        gen(lambda i: i)
    with pytest.raises(einsat.TraceError, match="has not been traced yet"):
        einsat.fn(lambda x: x).source
    with pytest.raises(einsat.TraceError, match="no literal for infinities"):
        einsat.fn(lambda x: x * float("inf"))(1.0)


# ------------------------------------------------ reductions and conditions


def test_stable_softmax_with_max_over():
    from einsat import max_over

    def softmax(x):
        m = max_over(lambda j: x[j])
        z = sum(lambda j: exp(x[j] - m))
        return gen(lambda i: exp(x[i] - m) / z)

    f = einsat.fn(softmax)
    x = np.array([1000.0, 1001.0, 999.5, -3.0])
    got = same_as_text(
        f,
        "fn softmax(x: [n]R) -> [n]R = gen(i:n) exp(x[i] - max(j:n) x[j]) / "
        "sum(j:n) exp(x[j] - max(j:n) x[j])",
        x,
    )
    e = np.exp(x - x.max())
    np.testing.assert_allclose(got, e / e.sum(), rtol=1e-13)
    assert np.all(np.isfinite(got))


def test_min_over_of_an_empty_range_and_nan():
    from einsat import min_over, max_over

    f = einsat.fn(lambda x: (min_over(lambda j: x[j]), max_over(lambda j: x[j])))
    lo, hi = f(np.array([3.0, -2.0, 5.0]))
    assert (lo, hi) == (-2.0, 5.0)
    lo, hi = f(np.zeros(0))
    assert lo == np.inf and hi == -np.inf
    lo, hi = f(np.array([1.0, np.nan, 2.0]))
    assert np.isnan(lo) and np.isnan(hi)


def test_where_guards_a_division():
    from einsat import where

    f = einsat.fn(lambda x: gen(lambda i: where(x[i] != 0, 1 / x[i], 0)))
    x = np.array([2.0, 0.0, -4.0, np.inf])
    got = same_as_text(f, "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] != 0, 1 / x[i], 0)", x)
    np.testing.assert_array_equal(got, [0.5, 0.0, -0.25, 0.0])


def test_conditions_combine_with_and_or_not():
    from einsat import where

    f = einsat.fn(
        lambda x: gen(lambda i: where((x[i] > 0) & ~(x[i] >= 10) | (x[i] == -1), x[i], 0))
    )
    x = np.array([-1.0, -2.0, 3.0, 10.0, 12.0, 0.0])
    got = same_as_text(
        f,
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] > 0 && !(x[i] >= 10) || x[i] = -1, x[i], 0)",
        x,
    )
    np.testing.assert_array_equal(got, [-1.0, 0.0, 3.0, 0.0, 0.0, 0.0])


def test_index_conditions_in_where_and_brackets():
    from einsat import where, bracket, eq, ne

    # a stencil clamped at its left edge, and a lower triangle
    clamp = einsat.fn(lambda x: gen(lambda i: where(i > 0, x[i - 1], x[i])))
    x = rng.random(5)
    got = same_as_text(clamp, "fn f(x: [n]R) -> [n]R = gen(i:n) where(i > 0, x[i - 1], x[i])", x)
    np.testing.assert_allclose(got, np.concatenate([[x[0]], x[:-1]]), rtol=0)
    tril = einsat.fn(lambda A, x: gen(lambda i: sum(lambda j: bracket(j <= i) * A[i, j] * x[j])))
    A, v = rng.random((4, 4)), rng.random(4)
    got = same_as_text(
        tril, "fn f(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) [j <= i] * A[i,j] * x[j]", A, v
    )
    np.testing.assert_allclose(got, np.tril(A) @ v, rtol=1e-12)
    # a bracket's zero is strong: it absorbs the infinities above the diagonal
    A[0, 3] = np.inf
    assert np.all(np.isfinite(tril(A, v)))
    off = einsat.fn(lambda A: sum(lambda i, j: bracket(ne(i, j) & (eq(i + 1, j) | eq(j + 1, i))) * A[i, j]))
    B = rng.random((5, 5))
    want = np.trace(B, 1) + np.trace(B, -1)
    np.testing.assert_allclose(off(B), want, rtol=1e-12)


def test_condition_errors_are_clear():
    from einsat import where, bracket, max_over

    with pytest.raises(einsat.TraceError, match="no truth value"):
        einsat.fn(lambda x: gen(lambda i: x[i] if x[i] > 0 else 0))(np.ones(3))
    with pytest.raises(einsat.TraceError, match="no truth value"):
        einsat.fn(lambda x: gen(lambda i: where((x[i] > 0) and (x[i] < 1), 1, 0)))(np.ones(3))
    with pytest.raises(einsat.TraceError, match="condition on indices"):
        einsat.fn(lambda x: gen(lambda i: bracket(x[i] > 0) * x[i]))(np.ones(3))
    with pytest.raises(einsat.TraceError, match="combines conditions"):
        einsat.fn(lambda x: gen(lambda i: where((x[i] > 0) & 1, 1, 0)))(np.ones(3))
    with pytest.raises(einsat.TraceError, match="max_over of a tensor of 1 axes: a max reduces numbers"):
        einsat.fn(lambda A: max_over(lambda i: A[i]))(np.ones((2, 2)))


# ------------------------------------------ indices and sizes as numbers


def test_indices_as_numbers():
    from einsat import where

    # an index beside a traced number, a fraction, or divided is its value
    f = einsat.fn(lambda x: gen(lambda i: x[i] * i + i * x[i] + 0.5 * i - (i + 1) / 2 + (2 * i - 1) * x[i]))
    x = rng.random(5)
    got = same_as_text(
        f,
        "fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * i + i * x[i] + 0.5 * i - (i + 1) / 2 + (2*i - 1) * x[i]",
        x,
    )
    i = np.arange(5.0)
    np.testing.assert_allclose(got, x * i + i * x + 0.5 * i - (i + 1) / 2 + (2 * i - 1) * x, rtol=1e-12)
    # an index compared with a number compares its value
    g = einsat.fn(lambda x: gen(lambda i: where(x[i] > i, 1, 0)))
    x = np.array([0.5, 0.5, 3.0, 2.0])
    np.testing.assert_array_equal(
        same_as_text(g, "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] > i, 1, 0)", x), [1, 0, 1, 0]
    )


def test_sizes_as_numbers():
    mean = einsat.fn(lambda x: sum(lambda i: x[i]) / x.shape[0])
    x = rng.random(7) + 1e6
    got = same_as_text(mean, "fn f(x: [n]R) -> R = (sum(i:n) x[i]) / n", x)
    assert got == pytest.approx(x.mean(), rel=1e-12)
    # a parameter named like a size: the size is renamed (as a number the
    # value's name would win)
    @einsat.fn
    def scaled(x, n):
        return gen(lambda i: x[i] * n / x.shape[0])

    same_as_text(scaled, "fn scaled(x: [m]R, n: R) -> [m]R = gen(i:m) x[i] * n / m", x, 3.0)
    np.testing.assert_allclose(scaled(x, 3.0), x * 3.0 / 7, rtol=1e-12)
    # an index named like a size, where sizes are numbers: the size is renamed
    @einsat.fn
    def per_col(A, B):
        return gen(lambda i, k: A[i, k] * B[k, i] / B.shape[0])

    A = rng.random((3, 4))
    same_as_text(
        per_col, "fn per_col(A: [n,m]R, B: [m,n]R) -> [n,m]R = gen(i:n, k:m) A[i, k] * B[k, i] / m", A, A.T.copy()
    )
    @einsat.fn
    def three(A, B):
        return gen(lambda i, k: sum(lambda j: A[i, j] * B[j, k]) / B.shape[1])

    B = rng.random((4, 5))
    same_as_text(
        three,
        "fn three(A: [n,m]R, B: [m,l]R) -> [n,l]R = gen(i:n, k:l) (sum(j:m) A[i, j] * B[j, k]) / l",
        A,
        B,
    )
    np.testing.assert_allclose(three(A, B), A @ B / 5, rtol=1e-12)
    # an index named like a parameter is renamed where it is a number
    @einsat.fn
    def weigh(x, i):
        return gen(lambda i: x[i] * i)

    assert "gen(i1:n) x[i1] * i1" in " ".join(weigh.trace(x, 2.0).source.split())
    np.testing.assert_allclose(weigh(x, 2.0), x * np.arange(7), rtol=1e-12)


# ------------------------------------------------------------ let and eps


def test_let_names_a_shared_subterm():
    from einsat import let

    @einsat.fn
    def normalise(x):
        return let(sum(lambda j: x[j] * x[j]), lambda s: gen(lambda i: x[i] / sqrt(s)))

    x = rng.random(6) - 0.5
    got = same_as_text(
        normalise, "fn normalise(x: [n]R) -> [n]R = let s = sum(j:n) x[j] * x[j] in gen(i:n) x[i] / sqrt(s)", x
    )
    np.testing.assert_allclose(got, x / np.linalg.norm(x), rtol=1e-12)
    # a tensor value, and a let inside arithmetic (bracketed)
    @einsat.fn
    def centred(x):
        return gen(lambda i: 2 * let(gen(lambda j: x[j] - x[0]), lambda d: d[i] * d[i]))

    same_as_text(
        centred, "fn centred(x: [n]R) -> [n]R = gen(i:n) 2 * (let d = gen(j:n) x[j] - x[0] in d[i] * d[i])", x
    )
    np.testing.assert_allclose(centred(x), 2 * (x - x[0]) ** 2, rtol=1e-12)


def test_eps_cross_product_and_2d():
    from einsat import eps

    cross = einsat.fn(lambda a, b: gen(lambda i: sum(lambda j, k: eps[i, j, k] * a[j] * b[k]), 3))
    a, b = rng.random(3), rng.random(3)
    got = same_as_text(
        cross, "fn f(a: [n]R, b: [m]R) -> [3]R = gen(i:3) sum(j:n, k:m) eps[i, j, k] * a[j] * b[k]", a, b
    )
    np.testing.assert_allclose(got, np.cross(a, b), rtol=1e-12)
    det = einsat.fn(lambda A: sum(lambda i, j: eps[i, j] * A[0, i] * A[1, j]))
    A = rng.random((2, 2))
    got = same_as_text(det, "fn f(A: [n,m]R) -> R = sum(i:m, j:m) eps[i, j] * A[0, i] * A[1, j]", A)
    assert got == pytest.approx(np.linalg.det(A), rel=1e-12)


def test_let_and_eps_errors():
    from einsat import let, eps

    kept = []
    f = einsat.fn(lambda x: let(x[0], lambda v: kept.append(v) or v) + kept[-1])
    with pytest.raises(einsat.TraceError, match=r"a let value \(v\) used outside the let"):
        f(np.ones(2))
    kept.clear()
    g = einsat.fn(lambda x: gen(lambda i: kept.append(x[i]) or x[i]) [0] + kept[-1])
    with pytest.raises(einsat.TraceError, match="index i used outside the binder"):
        g(np.ones(2))
    with pytest.raises(einsat.TraceError, match="einsat.let takes a function of the bound value"):
        einsat.fn(lambda x: let(x[0], 2.0))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="einsat.let takes a function of the bound value"):
        einsat.fn(lambda x: let(x[0], lambda a, b: a))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="2 or 3 index expressions"):
        einsat.fn(lambda x: gen(lambda i: eps[i] * x[i]))(np.ones(3))
    with pytest.raises(einsat.TraceError, match=r"a number \(x\[j\]\) used as an index"):
        einsat.fn(lambda x: gen(lambda i: sum(lambda j: eps[i, x[j]] * x[i])))(np.ones(2))


# ------------------------------------------------------------------ folds

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples"


def example(name, fn_name):
    """The function `fn_name` of examples/<name>, compiled (the test is
    skipped when the examples are not beside the package)."""
    path = EXAMPLES / name
    if not path.exists():
        pytest.skip("examples/ not beside the package")
    return einsat.compile(path.read_text(), fn=fn_name)


def polyval(c, x):
    return einsat.fold(0, lambda i, acc: acc * x + c[i])


def horner(c, x):
    n = c.shape[0]
    return einsat.fold(
        0, lambda i, acc: acc * x + sum(lambda k: einsat.where(einsat.eq(k, n - 1 - i), c[k], 0)), like=(c, 0)
    )


def cumsum(x):
    return gen(lambda k: einsat.fold(0, lambda i, acc: einsat.where(i <= k, acc + x[i], acc)), like=(x, 0))


def ema(x, a):
    return einsat.fold(x[0], lambda i, acc: acc + a * (x[i] - acc))


def fibonacci(f0, f1, steps):
    return einsat.fold((f0, f1), lambda i, acc: (acc[1], acc[0] + acc[1]), like=(steps, 0))


def kahan(x):
    def step(i, acc):
        s, c = acc
        return einsat.let(x[i] - c, lambda y: einsat.let(s + y, lambda t: (t, (t - s) - y)))

    return einsat.fold((0, 0), step)[0]


def argmax(x):
    return einsat.fold(
        (x[0], 0),
        lambda i, acc: (einsat.where(x[i] > acc[0], x[i], acc[0]), einsat.where(x[i] > acc[0], i, acc[1])),
    )


FOLD_DATA = {
    "polyval": lambda: (rng.random(6) - 0.5, 1.7),
    "horner": lambda: (rng.random(6) - 0.5, -1.3),
    "cumsum": lambda: (rng.random(9) * 1e8 - 3e7,),
    "ema": lambda: (rng.random(20) + 1e3, 0.25),
    "fibonacci": lambda: (0.0, 1.0, np.zeros(30)),
    "kahan": lambda: (np.concatenate([[1e16], np.ones(50), [-1e16]]),),
    "argmax": lambda: (np.array([1.0, 5.0, -2.0, 5.0, 3.0]),),
}


@pytest.mark.parametrize(
    "f", [polyval, horner, cumsum, ema, fibonacci, kahan, argmax], ids=lambda f: f.__name__
)
def test_fold_examples_match_the_text_form(f):
    text = example("fold.tl", f.__name__)
    traced = einsat.fn(f)
    args = FOLD_DATA[f.__name__]()
    got = traced(*args)
    # the same program as examples/fold.tl's, and the same result
    assert traced.source == text.source
    want = text(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_folds_against_numpy():
    c, x = rng.random(6) - 0.5, 1.7
    assert einsat.fn(polyval)(c, x) == pytest.approx(np.polyval(c, x), rel=1e-12)
    assert einsat.fn(horner)(c, x) == pytest.approx(np.polynomial.polynomial.polyval(x, c), rel=1e-12)
    v = rng.random(9) * 1e8 - 3e7
    # in the written order: numpy's cumsum adds in the same order
    np.testing.assert_array_equal(einsat.fn(cumsum)(v), np.cumsum(v))
    a, b = einsat.fn(fibonacci)(0.0, 1.0, np.zeros(10))
    assert (a, b) == (55.0, 89.0)
    # Kahan's compensation survives: the ones between the big terms count
    assert einsat.fn(kahan)(np.concatenate([[1e16], np.ones(50), [-1e16]])) == 50.0
    assert einsat.fn(argmax)(np.array([1.0, 5.0, -2.0, 5.0, 3.0])) == (5.0, 1.0)
    # an empty fold is its initial value; a fold over a given range
    assert einsat.fn(polyval)(np.zeros(0), 2.0) == 0.0
    count = einsat.fn(lambda x: einsat.fold(x, lambda i, acc: acc * 2, 5))
    assert count(1.5) == 48.0
    assert count.source.startswith("fn f(x: R) -> R =") and "fold(i:5, acc = x) acc * 2" in count.source


def test_fold_nested_pair_accumulator():
    # (count, (sum, sum of squares)): a nested pair, unpacked as tuples
    def stats(x):
        def step(i, acc):
            n, (s, q) = acc
            return (n + 1, (s + x[i], q + x[i] * x[i]))

        return einsat.fold((0, (0, 0)), step)

    f = einsat.fn(stats)
    x = rng.random(8) + 100
    n, (s, q) = same_as_text(
        f,
        "fn stats(x: [n]R) -> (R, (R, R)) = fold(i:n, acc = (0, (0, 0))) "
        "(acc.0 + 1, (acc.1.0 + x[i], acc.1.1 + x[i] * x[i]))",
        x,
    )
    assert n == 8.0
    assert s == pytest.approx(x.sum(), rel=1e-12)
    assert q == pytest.approx((x * x).sum(), rel=1e-12)


def test_fold_errors():
    from einsat import fold

    with pytest.raises(einsat.TraceError, match="accumulator is a tensor of 1 axes"):
        einsat.fn(lambda x: fold(x, lambda i, acc: acc, 3))(np.ones(2))
    with pytest.raises(einsat.TraceError, match=r"must have the accumulator's shape R, but it gives \(R, R\)"):
        einsat.fn(lambda x: fold(0, lambda i, acc: (acc, x[i])))(np.ones(2))
    with pytest.raises(einsat.TraceError, match=r"shape \(R, R\), but it gives R"):
        einsat.fn(lambda x: fold((0, 0), lambda i, acc: acc[0] + x[i]))(np.ones(2))
    with pytest.raises(einsat.TraceError, match=r"range of index i cannot be inferred.*einsat.fold\(init, lambda i, acc"):
        einsat.fn(lambda x: fold(x, lambda i, acc: acc + 1))(1.0)
    with pytest.raises(einsat.TraceError, match="takes a function of an index and the accumulator"):
        einsat.fn(lambda x: fold(0, lambda i: x[i]))(np.ones(2))
    with pytest.raises(einsat.TraceError, match=r"as einsat.fold\(init, lambda i, acc: ...\)"):
        einsat.fn(lambda x: fold(0, 3))(np.ones(2))
    with pytest.raises(einsat.TraceError, match=r"accumulator is \(a tensor of 1 axes, R\)"):
        einsat.fn(lambda x: fold((x, 0), lambda i, acc: acc, 2))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="like= takes"):
        einsat.fn(lambda x: fold(0, lambda i, acc: acc, like=x))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="the range must be a whole number >= 0, not -1"):
        einsat.fn(lambda x: fold(0, lambda i, acc: acc, -1))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="a pair is indexed with 0 or 1"):
        einsat.fn(lambda x: fold((0, 0), lambda i, acc: (acc[2], x[i])))(np.ones(2))
    with pytest.raises(einsat.TraceError, match="a number .* indexed"):
        einsat.fn(lambda x: fold(0, lambda i, acc: acc[0] + x[i]))(np.ones(2))
    kept = []
    with pytest.raises(einsat.TraceError, match=r"the accumulator of a fold \(acc\) used outside the fold"):
        einsat.fn(lambda x: fold(0, lambda i, acc: kept.append(acc) or acc + x[i]) + kept[-1])(np.ones(2))
    with pytest.raises(einsat.TraceError, match="integer array tok given to the accumulator"):
        einsat.fn(lambda tok: fold(tok, lambda i, acc: acc, 2))(np.arange(2))


# ---------------------------------------------------------------- gathers


def embed(E, tok):
    return gen(lambda i, j: E[tok[i], j])


def bag_mean(E, t):
    return gen(lambda i, j: sum(lambda q: E[t[i, q] - 1, j]) / t.shape[1])


def embed_project(E, tok, W):
    return gen(lambda i, c: sum(lambda j: E[tok[i], j] * W[j, c]))


def columns(E, tok):
    return gen(lambda i, j: E[j, tok[i]])


# the builder's text of each (its size names: n, m, k, ... in the order of
# the parameters' axes)
GATHER_TEXT = {
    "embed": "fn embed(E: [n,m]R, tok: [k]Z) -> [k,m]R = gen(i:k, j:m) E[tok[i], j]",
    "bag_mean": "fn bag_mean(E: [n,m]R, t: [k,l]Z) -> [k,m]R = gen(i:k, j:m) (sum(q:l) E[t[i, q] - 1, j]) / l",
    "embed_project": "fn embed_project(E: [n,m]R, tok: [k]Z, W: [m,l]R) -> [k,l]R = "
    "gen(i:k, c:l) sum(j:m) E[tok[i], j] * W[j, c]",
    "columns": "fn columns(E: [n,m]R, tok: [k]Z) -> [k,n]R = gen(i:k, j:n) E[j, tok[i]]",
}


def gather_data(name):
    E = rng.random((7, 4)) - 0.5
    tok = rng.integers(0, 7, size=5)
    if name == "bag_mean":
        return E, rng.integers(1, 8, size=(5, 3))  # 1-based tokens
    if name == "embed_project":
        return E, tok, rng.random((4, 3))
    if name == "columns":
        return E.T.copy(), tok
    return E, tok


def gather_numpy(name, *args):
    if name == "embed":
        E, tok = args
        return E[tok]
    if name == "bag_mean":
        E, t = args
        return E[t - 1].mean(axis=1)
    if name == "embed_project":
        E, tok, W = args
        return E[tok] @ W
    E, tok = args
    return E[:, tok].T


@pytest.mark.parametrize("f", [embed, bag_mean, embed_project, columns], ids=lambda f: f.__name__)
def test_gather_examples_match_the_text_form_and_numpy(f):
    name = f.__name__
    traced = einsat.fn(f)
    args = gather_data(name)
    got = same_as_text(traced, GATHER_TEXT[name], *args)
    np.testing.assert_allclose(got, gather_numpy(name, *args), rtol=1e-12)
    # examples/gather.tl's function (other size names) gives the same result
    np.testing.assert_allclose(got, example("gather.tl", name)(*args), rtol=1e-12)
    # unsigned and 32-bit integer arrays are integer arrays too
    ints = tuple(a.astype(np.uint32) if a.dtype.kind == "i" else a for a in args)
    np.testing.assert_allclose(traced(*ints), got, rtol=0)


def test_gather_offsets_and_inner_axes():
    # a constant on either side, a gather at an inner position of a 3-axis read
    f = einsat.fn(lambda F, tok: gen(lambda i, j: F[j, tok[i] + 1, 0] + F[j, 2 + tok[i] - 3, 1]))
    F = rng.random((2, 6, 2))
    tok = np.array([1, 2, 4])
    got = same_as_text(
        f,
        "fn f(F: [n,m,k]R, tok: [l]Z) -> [l,n]R = gen(i:l, j:n) F[j, tok[i] + 1, 0] + F[j, tok[i] - 1, 1]",
        F,
        tok,
    )
    np.testing.assert_allclose(got, (F[:, tok + 1, 0] + F[:, tok - 1, 1]).T, rtol=1e-12)


def test_gathers_inside_a_fold_and_a_let():
    # a running sum of looked-up values, in token order, and a looked-up
    # row named once
    f = einsat.fn(lambda E, tok: einsat.fold(0, lambda i, acc: acc + E[tok[i], 0] * E[tok[i], 1]))
    E, tok = rng.random((6, 2)) + 1e3, np.array([4, 0, 0, 3])
    got = same_as_text(
        f, "fn f(E: [n,m]R, tok: [k]Z) -> R = fold(i:k, acc = 0) acc + E[tok[i], 0] * E[tok[i], 1]", E, tok
    )
    assert got == pytest.approx((E[tok, 0] * E[tok, 1]).sum(), rel=1e-12)
    g = einsat.fn(lambda E, tok: einsat.let(E[tok[0] + 1], lambda r: gen(lambda j: r[j] * r[j])))
    got = same_as_text(g, "fn f(E: [n,m]R, tok: [k]Z) -> [m]R = let r = E[tok[0] + 1] in gen(j:m) r[j] * r[j]", E, tok)
    np.testing.assert_allclose(got, E[tok[0] + 1] ** 2, rtol=1e-12)


def test_integer_and_float_arrays_trace_separately():
    total = einsat.fn(lambda x, tok: sum(lambda i: x[tok[i]]))
    x = rng.random(5)
    assert total(x, np.array([0, 0, 4])) == pytest.approx(2 * x[0] + x[4], rel=1e-12)
    assert "tok: [m]Z" in total.source
    # the same ranks with a float index array: a float array inside an index
    with pytest.raises(einsat.TraceError, match=r"a number \(tok\[i\]\) used as an index.*integer numpy"):
        total(x, np.array([0.0, 1.0]))


def test_integer_arrays_computed_with_are_float_arrays():
    # an integer array the function computes with (not only inside an
    # index) is traced as a float array, converted as numpy converts it
    tok = np.array([0, 3, -2])
    f = einsat.fn(lambda tok: gen(lambda i: tok[i] * 2))
    np.testing.assert_array_equal(f(tok), tok * 2.0)
    assert "tok: [n]R" in f.source
    x = np.array([0.5, 1.5, 2.5])
    np.testing.assert_array_equal(einsat.fn(lambda x, tok: gen(lambda i: x[i] + tok[i]))(x, tok), x + tok)
    w = einsat.fn(lambda x, tok: gen(lambda i: einsat.where(tok[i] > 0, x[i], 0)))
    np.testing.assert_array_equal(w(x, tok), np.where(tok > 0, x, 0.0))
    ident = einsat.fn(lambda tok: tok)
    np.testing.assert_array_equal(ident(tok), tok.astype(float))
    E = np.arange(6.0).reshape(3, 2)
    # one array used as an index and as a number: the first use's error
    with pytest.raises(einsat.TraceError, match=r"tok\[i\] multiplied: it is an element of the integer array tok.*astype\(float\)"):
        einsat.fn(lambda E, tok: gen(lambda i: E[tok[i], 0] * (tok[i] * 2)))(E, np.array([0, 1]))
    # a gather beside it still traces tok as [n]Z
    g = einsat.fn(lambda E, tok, c: gen(lambda i: E[tok[i], 0] * c[i]))
    np.testing.assert_array_equal(g(E, np.array([2, 0]), np.array([3, 4])), E[[2, 0], 0] * [3.0, 4.0])
    assert "tok: [k]Z" in g.source and "c: [k]R" in g.source, g.source


def test_gather_errors():
    E = np.ones((4, 2))
    tok = np.array([0, 3])
    with pytest.raises(einsat.TraceError, match="integer array tok given to `\\+`"):
        einsat.fn(lambda x, tok: x + tok)(1.0, tok)
    with pytest.raises(einsat.TraceError, match="integer array tok given to einsat.sum"):
        einsat.fn(lambda tok: sum(lambda i: tok, 3))(tok)
    # (as floats, a bracket on a number is refused too: the first error)
    with pytest.raises(einsat.TraceError, match=r"tok\[i\] used as a number"):
        einsat.fn(lambda E, tok: gen(lambda i: einsat.bracket(einsat.eq(tok[i], 0)) * E[i, 0]))(E, tok)
    with pytest.raises(einsat.TraceError, match=r"the integer array tok inside an index is read at every axis"):
        einsat.fn(lambda E, tok: gen(lambda j: E[tok, j], 2))(E, tok)
    with pytest.raises(einsat.TraceError, match="gathers do not nest"):
        einsat.fn(lambda x, t: gen(lambda i: x[t[t[i]]]))(np.ones(3), np.zeros(3, dtype=int))
    with pytest.raises(einsat.TraceError, match=r"tok\[i\] with `\+ <einsat index j>`"):
        einsat.fn(lambda E, tok: gen(lambda i, j: E[tok[i] + j, j]))(E, tok)
    with pytest.raises(einsat.TraceError, match=r"integer array t has 2 axes and is read at 1"):
        einsat.fn(lambda E, t: gen(lambda i: E[t[i], 0]))(E, np.zeros((2, 2), dtype=int))
    with pytest.raises(einsat.TraceError, match="a gather .* reads a parameter or an access chain"):
        einsat.fn(lambda E, tok: gen(lambda i: einsat.let(gen(lambda r: E[r, 0]), lambda G: G[tok[i]])))(E, tok)
    with pytest.raises(einsat.TraceError, match=r"tok\[i\], an element of an integer array, is a gather index"):
        einsat.fn(lambda E, tok: gen(lambda i: E[i + tok[i], 0]))(E, tok)
    with pytest.raises(einsat.TraceError, match=r"not part of an index expression or of eps"):
        einsat.fn(lambda tok: gen(lambda i: einsat.eps[tok[i], 0, 1]))(tok)
    # a token off the table is the kernel's error at the call, naming it
    f = einsat.fn(embed)
    with pytest.raises(einsat.Error, match=r"tok\[1\] = 9 is outside 0\.\.4"):
        f(E, np.array([0, 9]))


# ------------------------------------- properties: odd data, bit for bit

# wide magnitudes, offsets, signed zeros, infinities and NaN
ODD = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-1e3, 1e3).map(lambda v: v + 1e9),
    st.sampled_from([0.0, -0.0, 1e-308, 5e-324, 1e308, -1e308]),
)
TRACED = {f.__name__: einsat.fn(f) for f in (polyval, cumsum, ema, argmax, embed)}
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(
    c=hnp.arrays(np.float64, st.integers(0, 8), elements=st.one_of(ODD, st.floats(-1e3, 1e3))),
    x=st.one_of(ODD, st.floats(-2, 2)),
)
def test_fold_polyval_is_horners_rule(c, x):
    # numpy's polyval runs y = y * x + c[i] from y = 0, the fold's order,
    # each product and sum rounded (the JIT fuses no multiply-add you
    # write): the same bits, NaN with NaN
    with np.errstate(all="ignore"):
        want = np.polyval(c, np.array([x]))[0] if len(c) else 0.0
    got = TRACED["polyval"](c, x)
    np.testing.assert_array_equal(got, want)


@PROPS
@given(x=hnp.arrays(np.float64, st.integers(0, 12), elements=ODD))
def test_fold_cumsum_is_sequential_bit_for_bit(x):
    with np.errstate(all="ignore"):
        want = np.cumsum(x)
    np.testing.assert_array_equal(TRACED["cumsum"](x), want)


@PROPS
@given(x=hnp.arrays(np.float64, st.integers(1, 12), elements=ODD))
def test_fold_argmax_follows_the_loop_bit_for_bit(x):
    best, pos = x[0], 0.0
    for i, v in enumerate(x):
        if v > best:
            best, pos = v, float(i)
    np.testing.assert_array_equal(TRACED["argmax"](x), (best, pos))


@PROPS
@given(
    x=hnp.arrays(np.float64, st.integers(1, 12), elements=st.floats(-1e3, 1e3).map(lambda v: v + 1e9)),
    a=st.floats(0, 1),
)
def test_fold_ema_follows_the_loop(x, a):
    # the loop's steps in order, each rounded as written: the same bits
    acc = x[0]
    for v in x:
        acc = acc + a * (v - acc)
    np.testing.assert_array_equal(TRACED["ema"](x, a), acc)


@PROPS
@given(
    E=hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(0, 4)), elements=ODD),
    data=st.data(),
)
def test_gather_is_numpys_fancy_indexing(E, data):
    tok = data.draw(hnp.arrays(np.int64, st.integers(0, 8), elements=st.integers(0, E.shape[0] - 1)))
    np.testing.assert_array_equal(TRACED["embed"](E, tok), E[tok])
