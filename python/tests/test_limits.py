"""Limits from Python (issue 22): the 2^31 axis and tensor limit holds for
numpy arrays too (zero-stride views make huge ones cheap), memory the
system refuses raises MemoryError instead of aborting the process, long
kernels stop on Ctrl-C (KeyboardInterrupt), and many-operand einsums
compile in bounded memory.

The memory and signal tests run in a subprocess (an address-space limit,
a SIGINT); their timeouts are generous functional bounds, not speed
assertions."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import einsat

LINUX = sys.platform.startswith("linux")


def run_py(code, limit=None, timeout=300):
    """Run `code` in a fresh Python (the address space limited to `limit`
    bytes when given): (returncode, stdout, stderr)."""
    pre = ""
    if limit is not None:
        pre = textwrap.dedent(
            f"""
            import resource
            resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
            """
        )
    p = subprocess.run(
        [sys.executable, "-c", pre + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- 2^31


def test_huge_zero_stride_axes_are_refused():
    x = np.broadcast_to(np.float64(1.0), (2**40,))
    with pytest.raises(einsat.ShapeError, match="too large"):
        einsat.einsum("i->", x)
    k = einsat.compile("fn s(x: [n]R) -> R = sum(i:n) x[i]")
    with pytest.raises(einsat.ShapeError, match="axis 0 has size 1099511627776|too large"):
        k(x)
    # each axis within the limit, the whole past it: 2^59 elements (a
    # 2^59-iteration loop, before)
    m = np.broadcast_to(np.float64(1.0), (2**30, 2**29))
    with pytest.raises(einsat.ShapeError, match="too large"):
        einsat.einsum("ij->", m)
    # an empty array whose other axis is past the limit
    e = np.broadcast_to(np.float64(0), (0, 2**40))
    with pytest.raises(einsat.ShapeError, match="too large"):
        einsat.compile("fn f(A: [n,m]R) -> R = sum(j:m) 1 + sum(i:n) A[i,j]")(e)
    # at the limit: computed, and right (no index arithmetic wraps)
    y = np.broadcast_to(np.float64(0.5), (2**31,))
    assert einsat.einsum("i->", y) == 2.0**30


# ---------------------------------------------------------------- memory


@pytest.mark.skipif(not LINUX, reason="address-space limits (RLIMIT_AS)")
def test_refused_memory_is_a_memory_error_not_an_abort():
    code, out, err = run_py(
        """
        import numpy as np, einsat
        a = np.ones(40000)
        # a 40000 x 40000 result: 12.8 GB
        try:
            einsat.einsum("i,j->ij", a, a)
        except MemoryError as e:
            assert isinstance(e, einsat.OutOfMemoryError), type(e)
            assert isinstance(e, einsat.Error)
            print("einsum:", e)
        k = einsat.compile("fn f(a: [n]R) -> R = let t = gen(i:n, j:n) exp(a[i] * a[j]) in sum(i:n, j:n) t[i,j] * t[j,i]")
        try:
            k(a)
        except MemoryError as e:
            print("temporary:", e)
        # converting a large int array to float64 (numpy's MemoryError)
        big = np.broadcast_to(np.int32(1), (2**30,))
        try:
            einsat.einsum("i->", big)
        except MemoryError as e:
            assert isinstance(e, einsat.OutOfMemoryError), type(e)
            print("conversion:", e)
        # the process goes on
        print("after:", einsat.einsum("i,i->", a[:3], a[:3]))
        """,
        limit=2 << 30,
    )
    assert code == 0, err
    assert "einsum: out of memory: could not allocate 12800000000 bytes for the result" in out, out
    assert "temporary: out of memory: could not allocate 12800000000 bytes for the `let` temporary" in out, out
    assert "conversion: operand 0:" in out, out
    assert "after: 3.0" in out, out


@pytest.mark.skipif(not LINUX, reason="address-space limits (RLIMIT_AS)")
def test_a_16_operand_einsum_compiles_in_bounded_memory():
    # the star ab,ac,...,aq->: the optimiser nests its sums eight deep (it
    # took more than 20 GB to compile before the JIT emitted a sum with a
    # loop inside once)
    code, out, err = run_py(
        """
        import numpy as np, einsat
        spec = ",".join("a" + c for c in "bcdefghijklmnopq") + "->"
        ops = [np.full((2, 2), 0.5) for _ in range(16)]
        got = einsat.einsum(spec, *ops)
        want = np.einsum(spec, *ops, optimize=True)
        assert abs(got - want) <= 1e-9 * abs(want), (got, want)
        print("ok", got)
        """,
        limit=3 << 30,
    )
    assert code == 0, err
    assert out.startswith("ok"), out


# ---------------------------------------------------------------- Ctrl-C


LONG = """
import sys, time, numpy as np, einsat
# 2^60 terms: years of work, whatever the machine (in loops of 2^20: the
# native code checks for cancellation at the back edges of the outer ones)
x = np.broadcast_to(np.float64(0.5), (2**20,))
k = einsat.compile("fn f(x: [n]R) -> R = sum(i:n, j:n, k:n) exp(x[i] * x[j] * x[k])")
{setup}
print("started", flush=True)
t = time.time()
try:
    {call}
    print("finished", flush=True)
except KeyboardInterrupt:
    print("caught KeyboardInterrupt after %.1f s" % (time.time() - t), flush=True)
# the kernel and the process stay usable
print("after:", k(np.array([1.0, 2.0])), flush=True)
"""


def interrupt(setup, call):
    p = subprocess.Popen(
        [sys.executable, "-c", LONG.format(setup=setup, call=call)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout.readline().strip() == "started"
        # the call is under way (a generous margin for it to start)
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    assert "caught KeyboardInterrupt" in out, out + err
    return out


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_ctrl_c_stops_a_long_kernel():
    out = interrupt("", "k(x)")
    assert "after: " in out and "finished" not in out, out
    want = sum(np.exp(a * b * c) for a in (1.0, 2.0) for b in (1.0, 2.0) for c in (1.0, 2.0))
    assert abs(float(out.split("after:")[1]) - want) <= 1e-9 * want, out


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_ctrl_c_stops_a_long_kernel_after_short_calls():
    # calls predicted short (by the kernel's speed on its earlier calls)
    # run on the calling thread, where Ctrl-C waits for them: after many
    # short ones, the long call is still predicted long and stopped
    out = interrupt("for _ in range(30): k(np.full(64, 0.5))", "k(x)")
    assert "after: " in out and "finished" not in out, out


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_ctrl_c_stops_a_long_einsum_on_the_gemm_library():
    # a 2^15-cubed product of zero-stride views: GEMM panels, hours of
    # work, into an 8 GiB intermediate. (That intermediate used to be
    # zeroed element by element before the product started, which took
    # over 20 s on a machine with a full page cache, Ctrl-C waiting for it;
    # it now comes from the system's zero pages, written by the product.)
    out = interrupt(
        "A = np.broadcast_to(np.float64(0.5), (2**15, 2**15))",
        "einsat.einsum('ij,jk,ki->', A, A, A)",
    )
    assert "finished" not in out, out


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
@pytest.mark.parametrize(
    "dtype,side",
    [("float32", 2**14), ("complex64", 2**13), ("int64", 2**12)],
)
def test_ctrl_c_stops_a_long_einsum_of_another_dtype(dtype, side):
    # the einsum of dtypes other than float64 (einsat::typed): a product of
    # minutes, stopped between panels of the GEMM library's (floats,
    # complex) or the exact loops' (integers) product
    out = interrupt(
        f"A = np.broadcast_to(np.ones((), dtype=np.{dtype}), ({side}, {side}))",
        "einsat.einsum('ij,jk,ki->', A, A, A)",
    )
    assert "finished" not in out, out


@pytest.mark.skipif(not LINUX, reason="POSIX signals")
def test_ctrl_c_stops_a_long_integer_program():
    # an integral program called with int64 arrays runs on an integer
    # kernel (max keeps the optimiser from shortening the 2^60 terms)
    out = interrupt(
        "ki = einsat.compile('fn g(x: [n]R) -> R = sum(i:n, j:n, k:n) max(x[i] * x[j], x[k])')\n"
        "xi = np.broadcast_to(np.int64(3), (2**20,))",
        "ki(xi)",
    )
    assert "after: " in out and "finished" not in out, out
