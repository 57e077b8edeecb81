"""einsat.fn: Python functions traced into einsat programs (the Ein-style
builder, einsat/builder.py). Each case is compared with the text form: the
same printed program (the Kernel's `source`, printed from the parsed
function) and the same results."""

import numpy as np
import pytest

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
    with pytest.raises(einsat.TraceError, match="index used as a number"):
        einsat.fn(lambda x: gen(lambda i: x[i] * i))(np.ones(2))
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
    with pytest.raises(einsat.TraceError, match="index compared with a number"):
        einsat.fn(lambda x: gen(lambda i: where(x[i] > i, 1, 0)))(np.ones(3))
    with pytest.raises(einsat.TraceError, match="combines conditions"):
        einsat.fn(lambda x: gen(lambda i: where((x[i] > 0) & 1, 1, 0)))(np.ones(3))
    with pytest.raises(einsat.TraceError, match="max_over of a tensor of 1 axes: a max reduces numbers"):
        einsat.fn(lambda A: max_over(lambda i: A[i]))(np.ones((2, 2)))
