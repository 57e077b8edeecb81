"""Fused programs: einsat kernels against jax.jit (XLA on CPU) and numpy.

    python python/bench_programs.py [--reps N] [--quick] [--threads N] [--dtype float64|float32] [--only WORDS] [--pause S]

The rows are the programs index notation is for: elementwise maps of
elementary functions, reductions (log-sum-exp, softmax, layer
normalisation), a contraction inside a larger expression (GELU(X·W), an
MLP layer, attention, a centred Gram matrix), a 2D stencil and a batched
small-matrix product. Each row checks einsat's result against numpy's
first, then times the engines interleaved, round after round, on the same
arrays, and reports the median time per call and each peer's time divided
by einsat's (> 1: einsat is faster). With more than one thread, each
engine's sample starts after a pause (`--pause`, 0.2 s) and lasts 20 ms
of calls: OpenBLAS's and XLA's worker threads keep spinning for a while
after a call returns, and would otherwise take the second core from the
engine timed next; and the first calls after idling (threads woken, the
scheduler placing them) are not the steady state a loop of calls sees. The process is pinned to as many
CPUs as `--threads` (XLA's thread pool follows the CPUs it may use, not
its flags). The header names the CPU and its vector width; the last line gives the median JIT compile time per program (each program's median of three fresh compiles).

jax runs with x64 enabled (float64 rows) and is skipped, with a message,
where it is not installed (`pip install jax jaxlib`). `--threads N` sets
the threads of every engine: einsat's `threads=`, BLAS's environment
variables and XLA's intra-op thread pool. float32 rows are computed by
numpy, jax and einsat in float32 (einsat's kernels called with float32
arrays compute in f32: docs/language.md, "Precision"). `--only exp,softmax`
runs the rows whose names start with any of the comma-separated words.
"""

import argparse
import os
import statistics
import sys
import time

_threads = "1"
for _k, _a in enumerate(sys.argv):
    if _a == "--threads" and _k + 1 < len(sys.argv):
        _threads = sys.argv[_k + 1]
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, _threads)
# XLA's CPU client sizes its intra-op thread pool by the CPUs the process
# may run on, whatever the flags below say (jax 0.10 ran elementwise maps
# on two threads of a 2-core machine with them: CPU time twice the wall
# time), so the process is pinned to `--threads` CPUs before jax starts;
# the other engines run that many threads anyway.
if hasattr(os, "sched_setaffinity"):
    try:
        _cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, _cpus[: max(1, int(_threads))])
    except (OSError, ValueError):
        pass
os.environ.setdefault(
    "XLA_FLAGS",
    f"--xla_cpu_multi_thread_eigen={'false' if _threads == '1' else 'true'} "
    f"intra_op_parallelism_threads={_threads}",
)

import numpy as np  # noqa: E402

_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import einsat  # noqa: E402

try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = None


def cpu():
    """The CPU model and the widest vector unit it has."""
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown CPU":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    width = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    return f"{model}, {os.cpu_count()} cores, {width}"


def timeit(f, reps, budget=2e-3):
    """`reps` samples of `f`'s time per call, each over as many calls as
    fill `budget` seconds (at least one), after one call to warm up."""
    t0 = time.perf_counter()
    f()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, int(budget / one))
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        out.append((time.perf_counter() - t0) / inner)
    return out


def fmt(t):
    for unit, k in (("s", 1), ("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
        if t * k >= 1:
            return f"{t * k:.3g} {unit}"
    return f"{t * 1e9:.3g} ns"


# --------------------------------------------------------------- programs
# Each: (name, einsat source, numpy function, jax function or None, shapes).

GELU_C = 0.7978845608028654


def _np_softmax(X):
    E = np.exp(X - X.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def _np_gelu(H):
    return 0.5 * H * (1 + np.tanh(GELU_C * (H + 0.044715 * H * H * H)))


def programs(quick):
    s = 4 if quick else 1
    big = (1 << 20) // s
    n512 = 512 // s
    rows = [
        ("exp, n = %d" % big, "fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i])", np.exp, "exp", [(big,)]),
        ("tanh, n = %d" % big, "fn f(x: [n]R) -> [n]R = gen(i:n) tanh(x[i])", np.tanh, "tanh", [(big,)]),
        (
            "log-sum-exp of %d" % big,
            "fn lse(x: [n]R) -> R = let m = max(i:n) x[i] in m + log(sum(i:n) exp(x[i] - m))",
            lambda x: (lambda m: m + np.log(np.exp(x - m).sum()))(x.max()),
            "lse",
            [(big,)],
        ),
        (
            "row softmax %dx%d" % (n512, n512),
            "fn sm(X: [n,m]R) -> [n,m]R = gen(i:n) let mx = max(j:m) X[i,j] in "
            "let z = sum(j:m) exp(X[i,j] - mx) in gen(j:m) exp(X[i,j] - mx) / z",
            _np_softmax,
            "softmax",
            [(n512, n512)],
        ),
        (
            "layer norm %dx%d" % (n512, n512),
            "fn ln(X: [n,m]R) -> [n,m]R = gen(i:n) let mu = (sum(j:m) X[i,j]) / m in "
            "let v = (sum(j:m) (X[i,j] - mu) * (X[i,j] - mu)) / m in "
            "gen(j:m) (X[i,j] - mu) / sqrt(v + 0.00001)",
            lambda X: (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + 1e-5),
            "layernorm",
            [(n512, n512)],
        ),
        (
            "GELU(X·W) %dx%d·%dx%d" % (256 // s, n512, n512, n512),
            "fn g(X: [n,k]R, W: [k,m]R) -> [n,m]R = gen(i:n, j:m) let h = sum(l:k) X[i,l] * W[l,j] in "
            "0.5 * h * (1 + tanh(%r * (h + 0.044715 * h * h * h)))" % GELU_C,
            lambda X, W: _np_gelu(X @ W),
            "gelu",
            [(256 // s, n512), (n512, n512)],
        ),
        (
            "MLP layer max(X·W + b, 0) %dx%d" % (256 // s, n512),
            "fn mlp(X: [n,k]R, W: [k,m]R, b: [m]R) -> [n,m]R = "
            "gen(i:n, j:m) max(b[j] + sum(l:k) X[i,l] * W[l,j], 0)",
            lambda X, W, b: np.maximum(X @ W + b, 0),
            "mlp",
            [(256 // s, n512), (n512, n512), (n512,)],
        ),
        (
            "2-layer MLP %dx%d" % (256 // s, n512),
            "fn mlp2(X: [n,k]R, W1: [k,m]R, b1: [m]R, W2: [m,p]R) -> [n,p]R = "
            "let H = gen(i:n, j:m) max(b1[j] + sum(l:k) X[i,l] * W1[l,j], 0) in "
            "gen(i:n, c:p) sum(j:m) H[i,j] * W2[j,c]",
            lambda X, W1, b1, W2: np.maximum(X @ W1 + b1, 0) @ W2,
            "mlp2",
            [(256 // s, n512), (n512, n512), (n512,), (n512, n512)],
        ),
    ]
    for seq in (128, 256, 512, 1024):
        seq //= s
        rows.append(
            (
                "attention softmax(Q·Kᵀ/8)·V, %dx64" % seq,
                "fn att(Q: [s,d]R, K: [s,d]R, V: [s,d]R) -> [s,d]R = "
                "let S = gen(i:s, j:s) (sum(l:d) Q[i,l] * K[j,l]) / 8 in "
                "let P = gen(i:s) let mx = max(j:s) S[i,j] in let z = sum(j:s) exp(S[i,j] - mx) in "
                "gen(j:s) exp(S[i,j] - mx) / z in "
                "gen(i:s, c:d) sum(j:s) P[i,j] * V[j,c]",
                lambda Q, K, V: _np_softmax(Q @ K.T / 8) @ V,
                "attention",
                [(seq, 64)] * 3,
            )
        )
    rows += [
        (
            "centred Gram XcᵀXc %dx64 (one expression)" % (4096 // s),
            "fn gram(X: [n,d]R) -> [d,d]R = gen(a:d, b:d) sum(i:n) "
            "(X[i,a] - (sum(k:n) X[k,a]) / n) * (X[i,b] - (sum(k:n) X[k,b]) / n)",
            lambda X: (lambda C: C.T @ C)(X - X.mean(0)),
            "gram",
            [(4096 // s, 64)],
        ),
        (
            "2D stencil (5-point) %dx%d" % (n512 * 2, n512 * 2),
            "fn lap(X: [n,m]R) -> [n,m]R = gen(i:n, j:m) "
            "X[i-1,j] + X[i+1,j] + X[i,j-1] + X[i,j+1] - 4 * X[i,j]",
            _np_lap,
            "stencil",
            [(n512 * 2, n512 * 2)],
        ),
        (
            "batched 8x8 matmul, batch %d" % (4096 // s),
            "fn bmm(A: [b,i,j]R, B: [b,j,k]R) -> [b,i,k]R = gen(p:b, q:i, r:k) sum(t:j) A[p,q,t] * B[p,t,r]",
            lambda A, B: A @ B,
            "bmm",
            [(4096 // s, 8, 8)] * 2,
        ),
    ]
    return rows


def _np_lap(X):
    P = np.pad(X, 1)
    return P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4 * X


def jax_fns():
    """The jax versions, jitted (None without jax)."""
    if jax is None:
        return {}

    def softmax(X):
        E = jnp.exp(X - X.max(axis=1, keepdims=True))
        return E / E.sum(axis=1, keepdims=True)

    def lap(X):
        P = jnp.pad(X, 1)
        return P[:-2, 1:-1] + P[2:, 1:-1] + P[1:-1, :-2] + P[1:-1, 2:] - 4 * X

    fns = {
        "exp": jnp.exp,
        "tanh": jnp.tanh,
        "lse": lambda x: (lambda m: m + jnp.log(jnp.exp(x - m).sum()))(x.max()),
        "softmax": softmax,
        "layernorm": lambda X: (X - X.mean(1, keepdims=True)) / jnp.sqrt(X.var(1, keepdims=True) + 1e-5),
        "gelu": lambda X, W: (lambda H: 0.5 * H * (1 + jnp.tanh(GELU_C * (H + 0.044715 * H * H * H))))(X @ W),
        "mlp": lambda X, W, b: jnp.maximum(X @ W + b, 0),
        "mlp2": lambda X, W1, b1, W2: jnp.maximum(X @ W1 + b1, 0) @ W2,
        "attention": lambda Q, K, V: softmax(Q @ K.T / 8) @ V,
        "gram": lambda X: (lambda C: C.T @ C)(X - X.mean(0)),
        "stencil": lap,
        "bmm": lambda A, B: A @ B,
    }
    return {k: jax.jit(f) for k, f in fns.items()}


def compile_time(src, threads):
    """einsat.compile's time for `src` under a fresh function name (the
    kernel cache would return the kernel compiled before): (wall, CPU) ms."""
    compile_time.k = getattr(compile_time, "k", 0) + 1
    fresh = src.replace("fn ", "fn t%d_" % compile_time.k, 1)
    w, c = time.perf_counter(), time.process_time()
    einsat.compile(fresh, threads=threads)
    return (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


def run_table(reps=7, quick=False, threads=1, dtype="float64", only=None, pause=None):
    """Check and time every program; print the table (Markdown)."""
    dt = np.dtype(dtype)
    if pause is None:
        pause = 0.2 if threads > 1 else 0.0
    rng = np.random.default_rng(0)
    jfns = jax_fns()
    load = "load average %.2f %.2f %.2f" % os.getloadavg() if hasattr(os, "getloadavg") else ""
    print(f"\nCPU: {cpu()}; {threads} thread(s) for every engine; {dtype}; {load}; pause {pause} s")
    if jax is None:
        print("jax is not installed: its column is skipped (pip install jax jaxlib)")
    out, compile_ms, failed = [], [], []
    for name, src, npf, jkey, shapes in programs(quick):
        if only and not any(name.startswith(w) for w in only):
            continue
        ops = [rng.standard_normal(sh).astype(dt) for sh in shapes]
        try:
            k = einsat.compile(src, threads=threads)
            got = k(*ops)
            # each program's median of three fresh compiles (one sample
            # is at the mercy of whatever else the machine does)
            samples = sorted(compile_time(src, threads) for _ in range(3))
            compile_ms.append(samples[1])
        except einsat.Error as e:
            failed.append((name, str(e).splitlines()[0]))
            continue
        want = npf(*ops)
        tol = 1e-8 if dt == np.float64 else 2e-4
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(1.0, float(np.max(np.abs(want)))))
        engines = {"einsat": lambda: k(*ops), "numpy": lambda: npf(*ops)}
        if jkey in jfns:
            jf, jops = jfns[jkey], [jnp.asarray(o) for o in ops]
            jgot = np.asarray(jf(*jops))
            np.testing.assert_allclose(jgot, want, rtol=tol * 10, atol=tol * 10 * max(1.0, float(np.max(np.abs(want)))))
            engines["jax.jit"] = lambda: jf(*jops).block_until_ready()
        times = {e: [] for e in engines}
        for _ in range(reps):
            for e, f in engines.items():
                if pause:
                    time.sleep(pause)
                # (after a pause, a sample of 20 ms: a call or two after
                # idling is not the steady state a loop of calls sees)
                times[e].extend(timeit(f, 1, 2e-2 if pause else 2e-3))
        out.append((name, {e: statistics.median(v) for e, v in times.items()}))
    print("\n| program | einsat | jax.jit | ratio | numpy | ratio |")
    print("|---|---|---|---|---|---|")
    for name, med in out:
        cells = [name, fmt(med["einsat"])]
        for e in ("jax.jit", "numpy"):
            cells += [fmt(med[e]), f"{med[e] / med['einsat']:.2f}×"] if e in med else ["–", "–"]
        print("| " + " | ".join(cells) + " |")
    for name, why in failed:
        print(f"| {name} | not run: {why} | | | | |")
    if compile_ms:
        print("\nratio = the peer's median time / einsat's (> 1: einsat is faster); same run, interleaved.")
        wall = [w for w, _ in compile_ms]
        cpu_ms = [c for _, c in compile_ms]
        print(
            f"einsat compile (parse, optimise, JIT; einsat.compile, fresh) per program: "
            f"median {statistics.median(wall):.1f} ms wall, {statistics.median(cpu_ms):.1f} ms CPU; "
            f"max {max(wall):.1f} ms wall"
        )
    if dt == np.float32:
        print("float32: numpy, jax and einsat compute in float32.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7, help="rounds per row (median)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument("--threads", type=int, default=1, help="threads of every engine")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    ap.add_argument("--only", default="", help="comma-separated beginnings of row names")
    ap.add_argument(
        "--pause",
        type=float,
        default=None,
        help="seconds of idle before each engine's sample (default 0.2 with --threads > 1, else 0)",
    )
    args = ap.parse_args()
    only = [w for w in args.only.split(",") if w]
    run_table(args.reps, args.quick, args.threads, args.dtype, only, args.pause)


if __name__ == "__main__":
    main()
