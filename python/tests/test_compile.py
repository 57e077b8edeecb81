"""einsat.compile / optimize / check: kernels over numpy arrays, keyword
and pair arguments, tuple results, the report."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import einsat

PROG = """
fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]
fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]
fn scale(a: R, x: [n]R) -> [n]R = gen(i:n) a * x[i]
fn both(x: [n]R) -> ([n]R, R) = (gen(i:n) 2 * x[i], sum(i:n) x[i])
fn zdot(z: [n](R,R)) -> R = sum(i:n) z[i].0 * z[i].1
fn blur(x: [n]R) -> [n]R = gen(i:n) x[i-1] + x[i] + x[i+1]
fn tri(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) [j <= i] * A[i,j] * x[j]
"""


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(5)


def test_matvec_positional_and_keyword(rng):
    k = einsat.compile(PROG, fn="mv")
    A, x = rng.standard_normal((4, 3)), rng.standard_normal(3)
    close(k(A, x), A @ x)
    close(k(A=A, x=x), A @ x)
    close(k(A, x=x), A @ x)
    assert k.name == "mv" and k.params == ["A", "x"]
    assert "mv" in repr(k)


def test_layouts_in_place(rng):
    k = einsat.compile(PROG, fn="mv")
    A = rng.standard_normal((5, 6))
    x = rng.standard_normal(12)
    for a in (A, np.asfortranarray(A), A[::-1, ::2].copy(), A[::-1, ::-2], A.T.copy().T):
        xv = x[::2][: a.shape[1]] if a.shape[1] <= 6 else x[: a.shape[1]]
        close(k(a, xv), a @ xv)


def test_scalar_pair_and_tuple(rng):
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    dot = einsat.compile(PROG, fn="dot")
    r = dot(x, y)
    assert isinstance(r, float)
    close(r, x @ y)
    scale = einsat.compile(PROG, fn="scale")
    close(scale(2.5, x), 2.5 * x)
    close(scale(np.array(2.5), x), 2.5 * x)
    close(scale(3, x), 3 * x)
    both = einsat.compile(PROG, fn="both")
    r = both(x)
    assert isinstance(r, tuple) and len(r) == 2
    close(r[0], 2 * x)
    close(r[1], x.sum())
    zdot = einsat.compile(PROG, fn="zdot")
    close(zdot((x, y)), x @ y)
    close(zdot(z=(x, y)), x @ y)


def test_padding_and_brackets(rng):
    x = rng.standard_normal(7)
    blur = einsat.compile(PROG, fn="blur")
    want = x + np.concatenate([[0], x[:-1]]) + np.concatenate([x[1:], [0]])
    close(blur(x), want)
    A = rng.standard_normal((4, 4))
    tri = einsat.compile(PROG, fn="tri")
    close(tri(A, x[:4]), np.tril(A) @ x[:4])


def test_strong_zeros():
    tri = einsat.compile(PROG, fn="tri")
    A = np.full((3, 3), np.nan)
    A[np.tril_indices(3)] = 1.0
    close(tri(A, np.ones(3)), [1.0, 2.0, 3.0])


# the fields of `einsat opt --json` (one library function, einsat::opt::report_json,
# makes both that object and Kernel.report)
REPORT_FIELDS = ("name", "input", "output", "cost_before", "cost_after", "egraph_nodes",
                 "egraph_classes", "iterations", "stop_reason", "limits_hit",
                 "optimize_ms", "saturation_ms", "optimize_cpu_ms", "rounds", "chosen",
                 "rules_fired")


def einsat_binary():
    """The `einsat` command: $EINSAT_BIN (CI sets it; then it must exist), else
    a release or debug build in the repository's target/, else None."""
    env = os.environ.get("EINSAT_BIN")
    if env:
        assert os.access(env, os.X_OK), f"EINSAT_BIN={env} is not an executable"
        return env
    root = pathlib.Path(__file__).resolve().parents[2]
    for kind in ("release", "debug"):
        p = root / "target" / kind / "einsat"
        if os.access(p, os.X_OK):
            return str(p)
    return None


def test_report_has_the_keys_of_opt_json(tmp_path):
    src = PROG + "fn mm(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * B[l,j]\n"
    names = ("mv", "dot", "blur", "tri", "mm")
    reports = {n: einsat.compile(src, fn=n).report for n in names}
    for rep in reports.values():
        assert set(REPORT_FIELDS) <= set(rep), sorted(set(REPORT_FIELDS) - set(rep))
        assert "explanation" not in rep
        assert isinstance(rep["rounds"], list) and rep["rounds"]
        assert rep["chosen"] in ("egraph", "post-pass")
    exe = einsat_binary()
    if exe is None:
        pytest.skip("no einsat binary (cargo build --release, or set EINSAT_BIN)")
    f = tmp_path / "p.tl"
    f.write_text(src)
    out = subprocess.run([exe, "opt", str(f), "--json"], check=True, capture_output=True,
                         text=True).stdout
    cli = {r["name"]: r for r in json.loads(out)["functions"]}
    for n in names:
        # same keys in the same order, and the same program and costs
        assert list(reports[n]) == list(cli[n]), n
        for k in ("input", "output", "cost_before", "cost_after", "chosen"):
            assert reports[n][k] == cli[n][k], (n, k)


def test_source_optimized_report():
    src = "fn f(A: [n,m]R, x: [m]R, y: [n]R) -> R = sum(i:n) sum(j:m) y[i] * A[i,j] * x[j]"
    k = einsat.compile(src)
    assert k.source.startswith("fn f(")
    assert k.optimized.startswith("fn f(")
    rep = k.report
    for field in REPORT_FIELDS:
        assert field in rep, field
    assert rep["output"] == k.optimized
    assert rep["cost_after"] <= rep["cost_before"]
    assert isinstance(k.stages, list) and k.stages
    # the optimised text parses back and computes the same
    k2 = einsat.compile(k.optimized)
    rng = np.random.default_rng(6)
    A, x, y = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    close(k(A, x, y), y @ A @ x)
    close(k2(A, x, y), y @ A @ x)


def test_optimize_and_check():
    out = einsat.optimize(PROG, fn="dot")
    assert out.startswith("fn dot(")
    everything = einsat.optimize(PROG, sizes={"n": 10, "m": 20})
    assert everything.count("fn ") == 7
    sigs = einsat.check(PROG)
    assert sigs[0] == "fn mv(A: [n,m]R, x: [m]R) -> [n]R"
    assert len(sigs) == 7


def test_notebook_examples():
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "notebook.tl"
    if not path.exists():
        pytest.skip("examples/ not beside the package")
    src = path.read_text()
    rng = np.random.default_rng(7)
    A = rng.standard_normal((3, 3))
    close(einsat.compile(src, fn="tr")(A), np.trace(A))
    x = rng.standard_normal(3)
    close(einsat.compile(src, fn="diag")(x), np.diag(x))


def test_threads(rng):
    k1 = einsat.compile(PROG, fn="mv", threads=1)
    A, x = rng.standard_normal((300, 200)), rng.standard_normal(200)
    close(k1(A, x), A @ x)


def test_kernel_pickles_as_its_source_and_options(rng):
    import pickle

    src = "fn f(A: [n,m]R, x: [m]R, c: R) -> [n]R = gen(i:n) c * sum(j:m) A[i,j] * x[j]"
    for kw in ({}, {"threads": 2, "fast_math": True}):
        k = einsat.compile(src, **kw)
        assert k.__reduce__()[1][2:] == (kw.get("threads"), kw.get("fast_math", False))
        k2 = pickle.loads(pickle.dumps(k))
        assert k2 is not k and k2.name == "f" and k2.source == k.source
        assert k2.params == ["A", "x", "c"]
        A, x = rng.random((5, 4)), rng.random(4)
        np.testing.assert_allclose(k2(A, x, 2.0), 2.0 * A @ x, rtol=1e-12)
    # a function picked out of a source of several pickles alone
    k = einsat.compile("fn a(x: [n]R) -> R = sum(i:n) x[i]\nfn b(x: [n]R) -> R = sum(i:n) x[i] * x[i]", fn="b")
    assert pickle.loads(pickle.dumps(k))(np.arange(3.0)) == 5.0
