"""The floating-point contract from Python (issue 22, docs/fp-contract.md):
the default mode keeps the written program's values on special and offset
data; fast_math=True opts into rewrites that cancel terms."""
import math

import numpy as np

import einsat


def test_default_mode_keeps_nan_where_fast_math_cancels():
    src = "fn f(x: R) -> R = x * 0 + (x - x)"
    safe = einsat.compile(src)
    fast = einsat.compile(src, fast_math=True)
    for x in (np.inf, -np.inf, np.nan):
        assert math.isnan(safe(x))
        assert fast(x) == 0.0
    assert safe(2.0) == 0.0
    assert "x * 0 + (x - x)" in einsat.optimize(src)
    assert "= 0" in einsat.optimize(src, fast_math=True).replace("\n ", "")
    assert safe.report["mode"] == "value-safe"
    assert fast.report["mode"] == "fast-math"


def test_a_centred_sum_keeps_every_digit():
    src = """fn var(x: [n]R) -> R =
      let m = (sum(i:n) x[i]) / 4 in sum(i:n) (x[i] - m) * (x[i] - m)"""
    x = 1e8 + np.array([0.5, 1.0, 1.5, 2.0])
    assert einsat.compile(src)(x) == 1.25


def test_einsum_modes_are_cached_apart():
    a = np.array([np.inf, 1.0])
    b = np.array([1.0, 0.0])
    # i,j-> sums every product: inf*0 is NaN in every grouping but the
    # factored (sum a)(sum b) = inf; both modes keep the result non-finite
    safe = einsat.einsum("i,j->", a, b)
    fast = einsat.einsum("i,j->", a, b, fast_math=True)
    assert not math.isfinite(safe) and not math.isfinite(fast)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(einsat.einsum("ij->", x, fast_math=True), 15.0)
    np.testing.assert_allclose(einsat.einsum("ij->", x), 15.0)
