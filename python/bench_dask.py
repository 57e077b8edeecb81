"""Time einsat.dask against dask's own graphs (dask.array.einsum, and dask
array expressions of numpy) on the same dask.distributed cluster.

    python python/bench_dask.py [--quick] [--reps N] [--rows TEXT] [--scheduler tcp://host:8786]

Without --scheduler it starts a LocalCluster of 2 worker processes with one
thread each (numpy's BLAS at one thread per worker, distributed's default,
and einsat's kernels at threads=1), so both sides use the same two cores.
Each row persists its inputs on the workers first (their generation is not
timed), then computes the result of both graphs in turn (``--reps`` times,
interleaved; the best time of each is kept) and persists it (so nothing is
gathered to the client), and reports the seconds,
the ratio dask/einsat (> 1: einsat.dask is faster) and the number of tasks
of each graph (``len`` of its HighLevelGraph). Results are compared (a few
rows of each). einsat's time includes compiling its kernels on the workers
(once per worker process). dask.array.einsum runs with optimize=True (numpy's
path and BLAS inside each block; its default optimize=False is far slower).
--quick: small sizes (seconds), for CI.
"""

import argparse
import os
import platform
import subprocess
import sys
import time
import warnings

# the installed package, not the source folder beside this script
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import numpy as np  # noqa: E402
import dask  # noqa: E402
import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster, wait  # noqa: E402

import einsat.dask as ed  # noqa: E402

SOFTMAX = "fn softmax(X: [b,n]R) -> [b,n]R = gen(r:b, i:n) exp(X[r,i]) / sum(j:n) exp(X[r,j])"
LAYERNORM = """
fn layernorm(X: [b,n]R, g: [n]R, beta: [n]R, inv_n: R) -> [b,n]R =
  gen(r:b, i:n)
    let mu = (sum(j:n) X[r,j]) * inv_n in
    let var = (sum(j:n) (X[r,j] - mu) * (X[r,j] - mu)) * inv_n in
    g[i] * (X[r,i] - mu) / sqrt(var + 0.00001) + beta[i]
"""
HEAT = """
fn heat(U: [h,w]R, c: R) -> [h,w]R =
  gen(i:h, j:w) U[i,j] + c * (U[i-1,j] + U[i+1,j] + U[i,j-1] + U[i,j+1] - 4 * U[i,j])
"""


def rows(quick):
    """(name, GB of input, inputs maker, einsat.dask graph, dask graph)."""
    s = 16 if quick else 1  # --quick: every big axis 16 times smaller

    def chain(seed):
        rng = da.random.default_rng(28 + seed)
        n = 2**19 // s
        A = rng.random((n, 512), chunks=(32768 // s, 256))
        B = rng.random((512, 512), chunks=256)
        C = rng.random((512, 256), chunks=(256, 128))
        return [A, B, C]

    def matmul(seed):
        rng = da.random.default_rng(28 + seed)
        n = 4096 // (4 if quick else 1)
        return [rng.random((n, n), chunks=n // 4), rng.random((n, n), chunks=n // 4)]

    def batched(seed):
        rng = da.random.default_rng(28 + seed)
        return [rng.random((2048 // s, 256, 256), chunks=(128 // s, 256, 256)) for _ in range(2)]

    def rowsx(seed):
        rng = da.random.default_rng(28 + seed)
        return [rng.random((2**18 // s, 1024), chunks=(16384 // s, 1024))]

    def ln_inputs(seed):
        rng = da.random.default_rng(28 + seed)
        (X,) = rowsx(seed)
        return [X, rng.random(1024, chunks=1024), rng.random(1024, chunks=1024)]

    def grid(seed):
        rng = da.random.default_rng(28 + seed)
        n = 16384 // (4 if quick else 1)
        return [rng.random((n, n), chunks=n // 4)]

    def dask_einsum(spec):
        def f(*xs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # dask's PerformanceWarning on chunk growth
                return da.einsum(spec, *xs, optimize=True)

        return f

    def np_softmax(X):
        e = da.exp(X)
        return e / e.sum(axis=1, keepdims=True)

    def np_layernorm(X, g, beta):
        mu = X.mean(axis=1, keepdims=True)
        var = ((X - mu) ** 2).mean(axis=1, keepdims=True)
        return g * (X - mu) / da.sqrt(var + 1e-5) + beta

    def np_heat(U):
        def block(u):
            c = u[1:-1, 1:-1]
            out = u.copy()
            out[1:-1, 1:-1] = c + 0.1 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * c)
            return out

        return U.map_overlap(block, depth=1, boundary=0)

    return [
        (
            "matrix chain ij,jk,kl->il (j, k, l split)",
            chain,
            lambda A, B, C: ed.einsum("ij,jk,kl->il", A, B, C),
            dask_einsum("ij,jk,kl->il"),
        ),
        (
            "layer norm over rows (fused program)",
            ln_inputs,
            lambda X, g, beta: ed.map(LAYERNORM, X, g, beta, 1 / 1024),
            np_layernorm,
        ),
        (
            "softmax over rows (fused program)",
            rowsx,
            lambda X: ed.map(SOFTMAX, X),
            np_softmax,
        ),
        (
            "matmul ij,jk->ik (j split in 4)",
            matmul,
            lambda A, B: ed.einsum("ij,jk->ik", A, B),
            dask_einsum("ij,jk->ik"),
        ),
        (
            "batched matmul bij,bjk->bik",
            batched,
            lambda X, Y: ed.einsum("bij,bjk->bik", X, Y),
            dask_einsum("bij,bjk->bik"),
        ),
        (
            "5-point stencil (map_overlap halo 1)",
            grid,
            lambda U: ed.map(HEAT, U, 0.1),
            np_heat,
        ),
    ]


def run(client, graph):
    t = time.perf_counter()
    r = client.persist(graph)
    wait(r)
    return time.perf_counter() - t, r


def cpu():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    ap.add_argument("--reps", type=int, default=1, help="runs of each graph, interleaved; the best is reported")
    ap.add_argument("--rows", help="only the rows whose name contains this text")
    ap.add_argument("--scheduler", help="address of a running scheduler (tcp://host:8786); default: a LocalCluster of 2 workers")
    args = ap.parse_args()
    if args.scheduler:
        client = Client(args.scheduler)
        cluster = None
    else:
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    nw = len(client.scheduler_info()["workers"])
    print("CPU: %s; dask %s; %d workers" % (cpu(), dask.__version__, nw))
    print("%-40s %8s %9s %9s %7s %8s %8s" % ("row", "input", "einsat s", "dask s", "ratio", "tasks e", "tasks d"))
    for name, make, ours, theirs in rows(args.quick):
        if args.rows and args.rows not in name:
            continue
        te = td = float("inf")
        for rep in range(args.reps):  # interleaved: einsat, dask, einsat, ...
            # fresh inputs (new keys) each round, so nothing is reused;
            # the last round's data released first
            re = rd = inputs = None
            inputs = client.persist(make(rep))
            wait(inputs)
            gb = sum(x.nbytes for x in inputs) / 1e9
            ge, gd = ours(*inputs), theirs(*inputs)
            ne, nd = len(ge.__dask_graph__()), len(gd.__dask_graph__())
            t, re = run(client, ge)
            te = min(te, t)
            t, rd = run(client, gd)
            td = min(td, t)
        # compare a band of rows of both results
        band = tuple(slice(0, min(64, n)) for n in re.shape)
        a, b = client.compute([re[band], rd[band]], sync=True)
        if not np.allclose(a, b, rtol=1e-9, atol=1e-12):
            raise SystemExit("%s: einsat.dask and dask differ" % name)
        print("%-40s %6.2fGB %9.2f %9.2f %6.2fx %8d %8d" % (name, gb, te, td, td / te, ne, nd), flush=True)
        del re, rd, inputs
    client.close()
    if cluster is not None:
        cluster.close()


if __name__ == "__main__":
    main()
