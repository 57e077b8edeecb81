"""The drop-in API for numpy and opt_einsum code: optimize=/memory_limit=
and numpy's other keywords, the interleaved form, index letters beyond
ASCII, einsum_path, contract, contract_path, contract_expression and
get_symbol, compared with numpy.einsum and opt_einsum (relative
tolerance)."""

import numpy as np
import pytest

import einsat

oe = pytest.importorskip("opt_einsum")

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


A, B, C, D = rand(3, 4), rand(4, 5), rand(5, 6), rand(6, 3)

NUMPY_OPTIMIZE = [False, True, "greedy", "optimal", ["einsum_path", (0, 1), (0, 1), (0, 1)],
                  [(2, 3), (0, 1), (0, 1)]]
OE_OPTIMIZE = ["auto", "auto-hq", "dp", "dynamic-programming", "optimal", "greedy", "eager",
               "opportunistic", "random-greedy", "random-greedy-128", "branch-all", "branch-2",
               "branch-1", "hyper", "GREEDY"]


@pytest.mark.parametrize("optimize", NUMPY_OPTIMIZE + OE_OPTIMIZE)
def test_optimize_values(optimize):
    spec = "ij,jk,kl,li->"
    got = einsat.einsum(spec, A, B, C, D, optimize=optimize)
    close(got, np.einsum(spec, A, B, C, D))
    close(einsat.contract(spec, A, B, C, D, optimize=optimize), got)


def test_optimize_errors():
    with pytest.raises(einsat.OptionError, match="not a path optimizer") as e:
        einsat.einsum("ij,jk,kl->il", A, B, C, optimize="fastest")
    assert isinstance(e.value, ValueError)
    # a path that does not fit the operands
    for bad, what in [([(0, 3)], "position 3"), ([(0, 0)], "twice"), ([()], "no tensor"),
                      ([(0, 1)], "left after its last step"), (["x"], "a path is")]:
        with pytest.raises(einsat.OptionError, match=what):
            einsat.einsum("ij,jk,kl->il", A, B, C, optimize=bad)
    with pytest.raises(einsat.OptionError):
        einsat.einsum("ij,jk,kl->il", A, B, C, optimize=3.5)


def test_path_optimizer_objects():
    # an opt_einsum PathOptimizer, a plain function, a registered name
    spec = "ab,bc,cd,de->ae"
    ops = [rand(3, 4), rand(4, 5), rand(5, 6), rand(6, 2)]
    want = np.einsum(spec, *ops)
    close(einsat.einsum(spec, *ops, optimize=oe.paths.DynamicProgramming()), want)
    calls = []

    def left_to_right(inputs, output, sizes, memory_limit=None):
        calls.append((len(inputs), dict(sizes)))
        return [(0, 1)] * (len(inputs) - 1)

    close(einsat.contract(spec, *ops, optimize=left_to_right), want)
    assert calls[0][0] == 4 and calls[0][1]["e"] == 2
    assert einsat.contract_path(spec, *ops, optimize=left_to_right)[0] == [(0, 1)] * 3


def test_memory_limit():
    spec = "ab,bc,cd->ad"
    ops = [rand(8, 2), rand(2, 8), rand(8, 8)]
    want = np.einsum(spec, *ops)
    for m in [None, -1, 1, 16, 10**9, "max_input"]:
        close(einsat.einsum(spec, *ops, memory_limit=m), want)
    close(einsat.einsum(spec, *ops, optimize=("greedy", 0)), want)
    for bad in [0, -3, "min_input", True]:
        with pytest.raises(einsat.OptionError, match="memory_limit"):
            einsat.einsum(spec, *ops, memory_limit=bad)
    # the plan keeps within the limit: with 16 elements, the 8x8
    # intermediate of (0, 1) is not made
    info = einsat.contract_path(spec, *ops, memory_limit=16)[1]
    assert info.plan["largest_intermediate"] <= 16


def test_numpy_keywords():
    x = einsat.einsum("ij,jk->ik", A, B, dtype=np.float64, order="K", casting="safe")
    close(x, A @ B)
    f = einsat.einsum("ij,jk->ik", A, B, order="F")
    assert f.flags.f_contiguous
    close(f, A @ B)
    # dtype= as numpy's: the operands must cast to it under casting=
    with pytest.raises(einsat.DTypeError, match="cannot be cast"):
        einsat.einsum("ij,jk->ik", A, B, dtype=np.float32)
    x32 = einsat.einsum("ij,jk->ik", A, B, dtype=np.float32, casting="same_kind")
    assert x32.dtype == np.float32
    np.testing.assert_allclose(x32, A @ B, rtol=1e-5)
    with pytest.raises(einsat.OptionError):
        einsat.einsum("ij,jk->ik", A, B, order="W")
    with pytest.raises(einsat.OptionError):
        einsat.einsum("ij,jk->ik", A, B, casting="blah")
    with pytest.raises(einsat.DTypeError, match="casting"):
        einsat.einsum("ij,jk->ik", A, B.astype(np.float32), casting="no")
    close(einsat.einsum("ij,jk->ik", A, B, casting="no"), A @ B)
    # out= of another real dtype: computed in float64, cast into it
    out = np.zeros((3, 5), dtype=np.float32)
    r = einsat.einsum("ij,jk->ik", A, B, out=out)
    assert r is out
    np.testing.assert_allclose(out, A @ B, rtol=1e-5)
    with pytest.raises(einsat.ShapeError):
        einsat.einsum("ij,jk->ik", A, B, out=np.zeros((5, 3), dtype=np.float32))
    # a scalar result is a numpy float64 (a float), as numpy's
    s = einsat.einsum("i,i->", A[0], A[0])
    assert isinstance(s, np.float64) and isinstance(s, float)


def test_size_mismatch_names_the_label():
    with pytest.raises(einsat.ShapeError, match=r"operand 0 \('aabcb'\): index 'b' has size 6 on axis 4 but size 4 on axis 2"):
        einsat.einsum("aabcb,abc", np.ones((3, 3, 4, 5, 6)), np.ones((3, 4, 5)))
    with pytest.raises(einsat.ShapeError, match=r"operand 0 \('ii'\): index 'i' has size 3 on axis 1"):
        einsat.einsum_path("ii", np.ones((2, 3)))


def test_interleaved():
    close(einsat.einsum(A, [0, 1], B, [1, 2], [0, 2]), A @ B)
    close(einsat.einsum(A, [0, 1], B, [1, 2]), np.einsum(A, [0, 1], B, [1, 2]))
    close(einsat.einsum(A, [1, 0]), np.einsum(A, [1, 0]))
    # Ellipsis in the sublists, as numpy allows
    X, Y = rand(2, 3, 4), rand(2, 4, 5)
    close(einsat.einsum(X, [..., 0, 1], Y, [..., 1, 2], [..., 0, 2]), X @ Y)
    close(einsat.einsum(X, [Ellipsis, 1]), np.einsum(X, [Ellipsis, 1]))
    # subscripts beyond numpy's 52, and hashable objects (opt_einsum)
    close(einsat.einsum(A, [0, 100], B, [100, 2], [0, 2]), A @ B)
    close(einsat.contract(A, ("left", "bond"), B, ("bond", "right")), A @ B)
    close(einsat.contract(A, ("b", "a")), A.T)
    # in einsum_path and contract_path
    path, report = einsat.einsum_path(A, [0, 1], B, [1, 2], C, [2, 3], [0, 3])
    assert path[0] == "einsum_path" and len(path) == 3
    assert oe_path_ok(einsat.contract_path(A, [0, 1], B, [1, 2], C, [2, 3])[0], 3)
    with pytest.raises(einsat.DTypeError):
        einsat.einsum(3, A)
    with pytest.raises(einsat.OptionError, match="negative"):
        einsat.einsum(A, [-1, 0])


def oe_path_ok(path, n):
    left = n
    for step in path:
        left -= len(step) - 1
    return left == 1


def test_letters_beyond_ascii():
    sym = [oe.get_symbol(i) for i in range(300)]
    assert [einsat.get_symbol(i) for i in [0, 51, 52, 200, 20000, 55296, 60000]] == [
        oe.get_symbol(i) for i in [0, 51, 52, 200, 20000, 55296, 60000]
    ]
    # × (U+00D7) is not a letter, and is an index all the same
    close(einsat.einsum("i×,×j->ij", A, B), A @ B)
    close(einsat.einsum("ÀÁ,ÁÂ", A, B), oe.contract("ÀÁ,ÁÂ", A, B))
    # a ring of 120 matrices: 120 indices
    n = 120
    mats = [rand(2, 2) * 0.7 for _ in range(n)]
    spec = ",".join(sym[k] + sym[(k + 1) % n] for k in range(n)) + "->"
    want = oe.contract(spec, *mats)
    close(einsat.einsum(spec, *mats), want)
    # ellipses beyond the 52 ASCII letters
    X = rand(4, 2, 3)
    close(einsat.einsum("...Àz->...", X), X.sum(axis=(1, 2)))
    # more axes under `...` than there are unused ASCII letters
    Y = rand(*([1] * 30 + [2]))
    many = "".join(sym[:30])
    close(einsat.einsum(many + "...->...", Y), Y.reshape(2))
    with pytest.raises(einsat.ParseError, match="not an index letter"):
        einsat.einsum("i#,j", A, B)


def test_einsum_path_matches_numpy_layout():
    ops = [rand(3, 4), rand(4, 5), rand(5, 6)]
    path, report = einsat.einsum_path("ij,jk,kl->il", *ops)
    npath, nreport = np.einsum_path("ij,jk,kl->il", *ops, optimize="optimal")
    assert path[0] == "einsum_path"
    lines, nlines = report.split("\n"), nreport.split("\n")
    assert len(lines) == len(nlines)
    for ours, theirs in zip(lines[:7], nlines[:7]):
        assert ours.split(":")[0] == theirs.split(":")[0]
    assert lines[0] == nlines[0]
    # the FLOP count is numpy's count along einsat's path: the same as
    # numpy's report for that path
    _, same = np.einsum_path("ij,jk,kl->il", *ops, optimize=path)
    assert report.split("\n")[4] == same.split("\n")[4]
    # an explicit path comes back as given, numpy's trace step included
    X, Y = rand(2, 3, 4), rand(2, 5, 5)
    p, _ = einsat.einsum_path("cab,cdd->ab", X, Y, optimize=["einsum_path", (1,), (0, 1)])
    assert p == ["einsum_path", (1,), (0, 1)]
    # one or two operands: one step
    assert einsat.einsum_path("ij,jk", A, B)[0] == ["einsum_path", (0, 1)]
    assert einsat.einsum_path("ii", rand(3, 3))[0] == ["einsum_path", (0,)]


def test_einsum_path_is_what_runs():
    # a ring of 8 matrices: einsat's plan is at most opt_einsum greedy's cost
    n = 8
    mats = [rand(8, 8) for _ in range(n)]
    spec = ",".join(chr(97 + k) + chr(97 + (k + 1) % n) for k in range(n)) + "->"
    path, info = einsat.contract_path(spec, *mats)
    _, greedy = oe.contract_path(spec, *mats, optimize="greedy")
    assert info.opt_cost <= greedy.opt_cost
    # the path einsat shows, given back, contracts to the same value
    close(einsat.einsum(spec, *mats, optimize=path), oe.contract(spec, *mats))
    assert "Complete contraction" in str(info) and "einsat" in str(info)
    assert info.eq == spec and info.largest_intermediate >= 1


def test_contract_signature():
    spec = "ij,jk,kl->il"
    want = A @ B @ C
    close(einsat.contract(spec, A, B, C, backend="numpy", use_blas=False), want)
    close(einsat.contract(spec, A, B, C, optimize="dp", memory_limit="max_input"), want)
    out = np.empty((3, 6))
    assert einsat.contract(spec, A, B, C, out=out) is out
    close(out, want)
    with pytest.raises(TypeError):
        einsat.contract(spec, A, B, C, bogus=1)


def test_contract_expression():
    spec = "ij,jk,kl->il"
    expr = einsat.contract_expression(spec, A.shape, B.shape, C.shape, optimize="greedy")
    for _ in range(3):
        a, b, c = rand(3, 4), rand(4, 5), rand(5, 6)
        close(expr(a, b, c), a @ b @ c)
    out = np.empty((3, 6))
    assert expr(A, B, C, out=out, backend="numpy") is out
    close(out, A @ B @ C)
    with pytest.raises(einsat.ShapeError, match="made for shape"):
        expr(A, B, rand(5, 7))
    with pytest.raises(einsat.ShapeError, match="takes 3 operands"):
        expr(A, B)
    # constants, and numpy's interleaved form
    ec = einsat.contract_expression(spec, A.shape, B, C.shape, constants=[1])
    close(ec(A, C), A @ B @ C)
    ei = einsat.contract_expression((3, 4), [0, 1], (4, 5), [1, 2], [0, 2])
    close(ei(A, B), A @ B)
    assert expr.contraction_list and len(expr.contraction_list) == 2


def test_planned_einsums_are_cached_per_shapes():
    spec = "ab,bc,cd->ad"
    ops = [rand(3, 4), rand(4, 5), rand(5, 2)]
    einsat.einsum(spec, *ops)
    n = einsat._einsat._einsum_cache_len()
    for _ in range(5):
        einsat.einsum(spec, *ops)
    assert einsat._einsat._einsum_cache_len() == n
    # other sizes: planned again (another kernel)
    einsat.einsum(spec, rand(30, 4), rand(4, 5), rand(5, 2))
    assert einsat._einsat._einsum_cache_len() == n + 1
    # two operands stay shape-generic
    einsat.einsum("ab,bc->ac", rand(3, 4), rand(4, 5))
    m = einsat._einsat._einsum_cache_len()
    einsat.einsum("ab,bc->ac", rand(6, 7), rand(7, 2))
    assert einsat._einsat._einsum_cache_len() == m
