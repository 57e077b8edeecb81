"""Two threads against one: einsat's matmul (`einsat.einsum("ij,jk->ik",
..., threads=t)`, a GEMM stage) beside numpy's `A @ B` (OpenBLAS, its
threads set with threadpoolctl), in one process.

    python python/threads_scaling.py [--rounds N] [--sizes 256 1024]

Per size, the four variants (einsat 1 and 2 threads, numpy 1 and 2
threads) are timed alternately, round after round (the order rotated each
round), each round a batch of ~30 ms; per round the ratio of each engine's
1-thread time to its 2-thread time is kept (> 1: two threads are faster),
and the median and quartiles are printed with the load average, so that
load from other processes hits all variants alike. After each numpy batch
the script sleeps 0.3 s, untimed: OpenBLAS's worker threads busy-wait for
about 0.1-0.2 s after a call, and a variant timed in that window finds
the second core taken (measured: einsat's 2-thread n=1024 matmul right
after `A @ B` took 48-55 ms against 26-28 ms otherwise, and its speed-up
read 1.1-1.2x instead of 1.9x). Without threadpoolctl
(`pip install threadpoolctl`) the numpy columns are skipped.
"""

import argparse
import os
import statistics
import sys
import time

# OpenBLAS sizes its pool at import: let it have every core, so that
# threadpoolctl can choose 1 or 2 per call
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, str(os.cpu_count() or 1))

import numpy as np  # noqa: E402

# the installed package, not the source folder beside this script
_here = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _here]
import einsat  # noqa: E402

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # the peer columns are skipped without it
    threadpool_limits = None


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def quartiles(v):
    q = statistics.quantiles(v, n=4) if len(v) > 1 else [v[0]] * 3
    return q[1], q[0], q[2]


class _NoLimit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def limit(variant):
    """The BLAS thread limit around a timed batch of `variant` (set once
    per batch: entering threadpoolctl's context costs about a millisecond)."""
    if variant.startswith("numpy"):
        return threadpool_limits(limits=int(variant.split()[1]), user_api="blas")
    return _NoLimit()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024])
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"cores {os.cpu_count()}; rounds {args.rounds}; ratio = 1-thread time / 2-thread time")
    if threadpool_limits is None:
        print("threadpoolctl is not installed: numpy columns skipped")
    for n in args.sizes:
        a = rng.standard_normal((n, n))
        b = rng.standard_normal((n, n))
        variants = {
            "einsat 1": lambda: einsat.einsum("ij,jk->ik", a, b, threads=1),
            "einsat 2": lambda: einsat.einsum("ij,jk->ik", a, b, threads=2),
        }
        if threadpool_limits is not None:
            variants["numpy 1"] = lambda: a @ b
            variants["numpy 2"] = lambda: a @ b
        want = a @ b
        for k, f in variants.items():
            with limit(k):
                np.testing.assert_allclose(f(), want, rtol=1e-9, atol=1e-9 * n)
        # bit-identity of einsat's result across thread counts
        same = np.array_equal(variants["einsat 1"](), variants["einsat 2"]())
        t = time.perf_counter()
        variants["einsat 1"]()
        reps = max(1, int(0.03 / (time.perf_counter() - t)))
        names = list(variants)
        times = {k: [] for k in names}
        load = loadavg()
        for r in range(args.rounds):
            for j in range(len(names)):
                k = names[(j + r) % len(names)]
                with limit(k):
                    t = time.perf_counter()
                    for _ in range(reps):
                        variants[k]()
                    times[k].append((time.perf_counter() - t) / reps)
                if k.startswith("numpy"):
                    time.sleep(0.3)  # let OpenBLAS's spinning threads sleep
        fl = 2.0 * n**3
        print(f"matmul n={n} (load {load} → {loadavg()}; einsat bit-identical 1 vs 2 threads: {same})")
        for eng in ("einsat", "numpy"):
            if f"{eng} 1" not in times:
                continue
            t1, t2 = times[f"{eng} 1"], times[f"{eng} 2"]
            ratios = [x / y for x, y in zip(t1, t2)]
            med, p25, p75 = quartiles(ratios)
            print(
                f"  {eng:<7} 1 thread {fl / statistics.median(t1) / 1e9:6.1f} GFLOP/s, "
                f"2 threads {fl / statistics.median(t2) / 1e9:6.1f} GFLOP/s; "
                f"speed-up median {med:.2f}× (p25 {p25:.2f}, p75 {p75:.2f})"
            )


if __name__ == "__main__":
    main()
