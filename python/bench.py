"""Time einsat.einsum against numpy.einsum(optimize=True) and
opt_einsum.contract on a handful of contractions and fused programs.

    python python/bench.py [--reps N] [--quick] [--threads N] [--no-programs]

Each row runs the three engines interleaved, round after round, on the same
arrays and reports the median time per call and the ratio of each peer's
time to einsat's (> 1: einsat is faster). The first row is the per-call
overhead on 3x3 arrays. Kernels are compiled before timing (the cache);
results are checked against numpy. The header names the CPU.

Then the fused programs of `bench_programs.py` (exp, tanh, log-sum-exp,
softmax, layer normalisation, GELU, an MLP layer and a 2-layer MLP,
attention at sequence lengths 128-1024, a centred Gram matrix, a 2D
stencil, a batched small-matrix product) against jax.jit and numpy, in
float64 and float32, with the median compile time; jax's column is
skipped, with a message, where jax is not installed. `--no-programs`
leaves them out.
"""

import argparse
import os
import statistics
import sys
import time

# One thread for every engine by default (BLAS threads spinning on a loaded
# machine make numpy's figures meaningless); --threads N sets all of them.
_threads = "1"
for _k, _a in enumerate(sys.argv):
    if _a == "--threads" and _k + 1 < len(sys.argv):
        _threads = sys.argv[_k + 1]
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, _threads)

import numpy as np  # noqa: E402

# the installed package, not the source folder beside this script
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import einsat  # noqa: E402

try:
    import opt_einsum
except ImportError:  # the bench runs without it, with that column empty
    opt_einsum = None


def cases(quick):
    s = 0.25 if quick else 1.0
    n = lambda k: max(4, int(k * s))  # noqa: E731
    return [
        ("overhead: ij,jk->ik 3x3", "ij,jk->ik", [(3, 3), (3, 3)]),
        ("overhead: ij,j->i 3x3", "ij,j->i", [(3, 3), (3,)]),
        ("matmul 256", "ij,jk->ik", [(n(256), n(256))] * 2),
        ("matvec 1024", "ij,j->i", [(n(1024), n(1024)), (n(1024),)]),
        ("batched matmul 32x64", "bij,bjk->bik", [(32, n(64), n(64))] * 2),
        ("chain x·A·B·y 256", "i,ij,jk,k->", [(n(256),), (n(256), n(256)), (n(256), n(256)), (n(256),)]),
        ("bilinear x·A·y 1024", "i,ij,j->", [(n(1024),), (n(1024), n(1024)), (n(1024),)]),
        ("trace of product 256", "ij,ji->", [(n(256), n(256))] * 2),
        ("outer then sum 512", "i,j,ij->i", [(n(512),), (n(512),), (n(512), n(512))]),
        ("3-tensor contraction 48", "ijk,jkl->il", [(n(48), n(48), n(48)), (n(48), n(48), n(48))]),
        ("Fortran-order matmul 256", "ij,jk->ik", [(n(256), n(256))] * 2, "F"),
        # other dtypes: einsat.typed (products on the gemm crate's kernels)
        ("float32 matmul 1024", "ij,jk->ik", [(n(1024), n(1024))] * 2, "C", "float32"),
        ("complex128 matmul 512", "ij,jk->ik", [(n(512), n(512))] * 2, "C", "complex128"),
        ("complex64 batched matmul 32x64", "bij,bjk->bik", [(32, n(64), n(64))] * 2, "C", "complex64"),
        ("int64 matmul 128", "ij,jk->ik", [(n(128), n(128))] * 2, "C", "int64"),
    ]


def timeit(f, reps):
    # enough calls per sample to last ~2 ms
    t0 = time.perf_counter()
    f()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(2e-3 / one))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        samples.append((time.perf_counter() - t0) / inner)
    return samples


def fmt(t):
    for unit, k in (("s", 1), ("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
        if t * k >= 1:
            return f"{t * k:.3g} {unit}"
    return f"{t * 1e9:.3g} ns"


def fused(args, rng):
    """Programs beyond one contraction: an einsat kernel (one fused loop
    nest) against numpy/opt_einsum doing the contraction and then the
    elementwise work."""
    n = 256 if args.quick else 1024
    A, x, c = rng.standard_normal((n, n)), rng.standard_normal(n), rng.standard_normal(n)
    axpy = einsat.compile(
        "fn f(A: [n,m]R, x: [m]R, c: [n]R) -> [n]R = gen(i:n) c[i] + sum(j:m) A[i,j] * x[j]",
        threads=args.threads,
    )
    np.testing.assert_allclose(axpy(A, x, c), c + A @ x, rtol=1e-8, atol=1e-8)
    dist = einsat.compile(
        "fn d(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) (A[i,j] - x[j]) * (A[i,j] - x[j])",
        threads=args.threads,
    )
    np.testing.assert_allclose(dist(A, x), ((A - x) ** 2).sum(1), rtol=1e-8, atol=1e-8)
    rows = [
        (
            f"fused c + A·x {n} (compile)",
            {
                "einsat": lambda: axpy(A, x, c),
                "numpy": lambda: c + np.einsum("ij,j->i", A, x, optimize=True),
                "numpy plain": lambda: c + np.einsum("ij,j->i", A, x),
            },
        ),
        (
            f"fused row distances Σ(A-x)² {n} (compile)",
            {
                "einsat": lambda: dist(A, x),
                "numpy": lambda: (lambda D: np.einsum("ij,ij->i", D, D, optimize=True))(A - x),
                "numpy plain": lambda: (lambda D: np.einsum("ij,ij->i", D, D))(A - x),
            },
        ),
    ]
    # a program on float32 arrays computes in f32 (issue 25): its GEMM
    # stage on the library's f32 kernel, against numpy's float32 matmul
    nm = 256 if args.quick else 1024
    A32, B32 = (rng.standard_normal((nm, nm)).astype(np.float32) for _ in range(2))
    mm = einsat.compile(
        "fn mm(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n) gen(j:m) sum(l:k) A[i,l] * B[l,j]",
        threads=args.threads,
    )
    got = mm(A32, B32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, A32 @ B32, rtol=1e-4, atol=1e-3)
    rows.append(
        (
            f"float32 program A·B {nm} (compile)",
            {
                "einsat": lambda: mm(A32, B32),
                "numpy": lambda: np.einsum("ij,jk->ik", A32, B32, optimize=True),
                "numpy plain": lambda: np.einsum("ij,jk->ik", A32, B32),
            },
        )
    )
    if opt_einsum is not None:
        rows[0][1]["opt_einsum"] = lambda: c + opt_einsum.contract("ij,j->i", A, x)
        rows[1][1]["opt_einsum"] = lambda: (lambda D: opt_einsum.contract("ij,ij->i", D, D))(A - x)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=9, help="rounds per row (median)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument("--threads", type=int, default=1, help="threads of every engine (BLAS too)")
    ap.add_argument("--no-programs", action="store_true", help="leave out the fused programs against jax.jit")
    args = ap.parse_args()
    programs = None if args.no_programs else _bench_programs()
    if programs is not None:
        print(f"CPU: {programs.cpu()}\n")
    rng = np.random.default_rng(0)
    rows = []
    for case in cases(args.quick):
        name, spec, shapes = case[:3]
        order = case[3] if len(case) > 3 else "C"
        dtype = np.dtype(case[4] if len(case) > 4 else "float64")

        def operand(s):
            if dtype.kind == "i":
                return np.asarray(rng.integers(-1000, 1000, s), dtype=dtype, order=order)
            x = rng.standard_normal(s)
            if dtype.kind == "c":
                x = x + 1j * rng.standard_normal(s)
            return np.asarray(x, dtype=dtype, order=order)

        ops = [operand(s) for s in shapes]
        want = np.einsum(spec, *ops, optimize=True)
        got = einsat.einsum(spec, *ops, threads=args.threads)
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        tol = 1e-4 if dtype.char in "fF" else 1e-8
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(want)))))
        engines = {
            "einsat": lambda: einsat.einsum(spec, *ops, threads=args.threads),
            "numpy": lambda: np.einsum(spec, *ops, optimize=True),
            "numpy plain": lambda: np.einsum(spec, *ops),
        }
        if opt_einsum is not None:
            expr = opt_einsum.contract_expression(spec, *shapes)
            engines["opt_einsum"] = lambda: opt_einsum.contract(spec, *ops)
            engines["opt_einsum expr"] = lambda: expr(*ops)
        times = {k: [] for k in engines}
        for _ in range(args.reps):  # interleaved rounds: load affects all alike
            for k, f in engines.items():
                times[k].extend(timeit(f, 1))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((name, med))
    for name, engines in fused(args, rng):
        times = {k: [] for k in engines}
        for _ in range(args.reps):
            for k, f in engines.items():
                times[k].extend(timeit(f, 1))
        rows.append((name, {k: statistics.median(v) for k, v in times.items()}))
    cols = ["einsat", "numpy", "numpy plain", "opt_einsum", "opt_einsum expr"]
    print(
        "| case | einsat | numpy.einsum(optimize=True) | ratio | numpy.einsum | ratio "
        "| opt_einsum.contract | ratio | opt_einsum expression | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, med in rows:
        cells = [name, fmt(med["einsat"])]
        for c in cols[1:]:
            if c in med:
                cells += [fmt(med[c]), f"{med[c] / med['einsat']:.2f}×"]
            else:
                cells += ["–", "–"]
        print("| " + " | ".join(cells) + " |")
    print(
        f"\nratio = the peer's median time / einsat's (> 1: einsat is faster); same run, "
        f"interleaved; {args.threads} thread(s) for every engine."
    )
    if programs is not None:
        for dtype in ("float64", "float32"):
            programs.run_table(reps=max(1, args.reps // 2), quick=args.quick, threads=args.threads, dtype=dtype)


def _bench_programs():
    """bench_programs.py beside this file (it sets XLA's threads from
    --threads before importing jax)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_programs", os.path.join(_here, "bench_programs.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


if __name__ == "__main__":
    main()
