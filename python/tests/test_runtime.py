"""Steady memory over 100,000 calls (no leaked references or buffers) and
calls from several Python threads at once (the GIL is released)."""

import gc
import sys
import threading
import time
import tracemalloc

import numpy as np

import einsat


def rss_kib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def test_100k_calls_steady_memory_and_refcounts():
    rng = np.random.default_rng(8)
    A, B = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    out = np.empty((3, 3))
    k = einsat.compile("fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]")
    x = rng.standard_normal(3)
    # warm up: kernels compiled, caches filled
    for _ in range(1000):
        einsat.einsum("ij,jk->ik", A, B)
        einsat.einsum("ij,jk->ik", A, B, out=out)
        k(A, x)
    refs = [sys.getrefcount(o) for o in (A, B, out, x, k)]
    gc.collect()
    rss0 = rss_kib()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(100_000 // 4):
        einsat.einsum("ij,jk->ik", A, B)
        einsat.einsum("ij,jk->ik", A, B, out=out)
        einsat.einsum("ij->", A)
        k(A, x=x)
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    assert grown < 64 * 1024, f"Python heap grew by {grown} bytes"
    assert [sys.getrefcount(o) for o in (A, B, out, x, k)] == refs
    rss1 = rss_kib()
    if rss0 is not None and rss1 is not None:
        # native memory too: a leak of one 3x3 result per call is 7 MB
        assert rss1 - rss0 < 4 * 1024, f"RSS grew by {rss1 - rss0} KiB"
    np.testing.assert_allclose(out, A @ B)


def test_errors_do_not_leak():
    A = np.ones((2, 3))
    before = sys.getrefcount(A)
    for _ in range(2000):
        try:
            einsat.einsum("ij,jk", A, A)
        except einsat.ShapeError:
            pass
    assert sys.getrefcount(A) == before


def test_threads_run_at_once():
    rng = np.random.default_rng(9)
    mats = [rng.standard_normal((40, 40)) for _ in range(4)]
    want = [m @ m @ m for m in mats]
    k = einsat.compile(
        "fn mm(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, k:n) sum(j:n) A[i,j] * B[j,k]"
    )
    errors = []

    def work(t):
        try:
            m = mats[t]
            for _ in range(200):
                r = einsat.einsum("ij,jk,kl->il", m, m, m, threads=1)
                np.testing.assert_allclose(r, want[t], rtol=1e-9, atol=1e-9)
                np.testing.assert_allclose(k(m, m), m @ m, rtol=1e-9, atol=1e-9)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_gil_released_during_native_work():
    """Another thread's Python code runs while a kernel runs. The switch
    interval is set far longer than the test, so a thread holding the GIL is
    never made to give it up, and the main thread gives it up only inside
    `einsum`: the counter can only count if the call released the GIL. The
    call is repeated (for at most a few seconds) because on a loaded machine
    the operating system may not schedule the counter thread during any one
    call."""
    n = 300
    A = np.random.default_rng(10).standard_normal((n, n))
    einsat.einsum("ij,jk,kl->il", A, A, A, threads=1)  # compiled beforehand
    finished = threading.Event()
    ticks = [0]

    def counter():
        while not finished.is_set():
            ticks[0] += 1
            time.sleep(0.0001)  # gives the GIL back: the main thread never waits on it

    old = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    t = threading.Thread(target=counter)
    try:
        t.start()  # the counter may take its first tick while start() waits
        ticks[0] = 0
        deadline = time.monotonic() + 5.0
        calls = 0
        while ticks[0] == 0 and time.monotonic() < deadline:
            einsat.einsum("ij,jk,kl->il", A, A, A, threads=1)
            calls += 1
    finally:
        finished.set()
        sys.setswitchinterval(old)
        t.join()
    assert ticks[0] > 0, f"no tick during {calls} calls"
