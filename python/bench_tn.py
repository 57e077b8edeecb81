"""Tensor-network contraction with einsat against opt_einsum and cotengra
(issue 23, part 6): plans and contraction times, all in one run.

Per network: einsat's flops (opt_einsum's convention) and largest
intermediate against opt_einsum greedy, opt_einsum dp (skipped past a
timeout) and cotengra's HyperOptimizer (small time budget); einsat's
planning time (the planner alone, from the optimiser's report) and its
optimise+compile time; and the contraction time of the compiled einsat
kernel against ``opt_einsum.contract`` on numpy (path search included, as
users call it) and against a precompiled ``opt_einsum.contract_expression``
(path search excluded, like einsat's compiled kernel), with 1 and 2
threads (numpy's BLAS limited with threadpoolctl), as ratios einsat/peer
(below 1: einsat faster). Every einsat result is checked against numpy's.

    python python/bench_tn.py [--case PREFIX] [--dp-timeout 20] [--cotengra-time 1]
        [--max-flops 1e10] [--budget 0.5] [--json out.json]

The networks: rings of 8/16/24/50 size-8 matrices, the norm of a 32-site
matrix-product state (bond 32, physical dimension 2: the MPS contracted
with its conjugate, 64 tensors), 4x4 and 6x6 grids of bond 4 (closed
PEPS-like networks), random einsums of 3-8 operands and random 3-regular
networks of 50/100/200/500 tensors of bond 2. The random ones are those of
``src/plan/networks.rs``, read from ``cargo run --release --example
plan_networks -- --out F`` (run here unless ``--networks F`` is given).
einsat compiles each network as a program with literal sizes (so the
optimiser plans with the real sizes). Networks of more than ``--max-flops``
are planned, not contracted (by anyone).

Needs the einsat package (``pip install ./python``), numpy, opt_einsum,
cotengra, threadpoolctl.
"""

import argparse
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

# this directory holds the einsat package's sources, which would shadow the
# installed package: take it off the path, and load bench_plan.py by file
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
_spec = importlib.util.spec_from_file_location("bench_plan", os.path.join(_HERE, "bench_plan.py"))
_bench_plan = importlib.util.module_from_spec(_spec)
sys.modules["bench_plan"] = _bench_plan  # (for the child processes)
_spec.loader.exec_module(_bench_plan)
recount, run_ctg, run_oe, timed = _bench_plan.recount, _bench_plan.run_ctg, _bench_plan.run_oe, _bench_plan.timed


def ring(n, d):
    return [[k, (k + 1) % n] for k in range(n)], [], [d] * n


def mps(sites, bond, phys):
    inputs = []
    for base in (sites, 2 * sites):
        for k in range(sites):
            t = []
            if k > 0:
                t.append(base + k - 1)
            t.append(k)
            if k + 1 < sites:
                t.append(base + k)
            inputs.append(t)
    return inputs, [], [phys] * sites + [bond] * (2 * sites)


def grid(rows, cols, bond):
    inputs = [[] for _ in range(rows * cols)]
    nxt = 0
    for r in range(rows):
        for c in range(cols):
            v = r * cols + c
            if c + 1 < cols:
                inputs[v].append(nxt)
                inputs[v + 1].append(nxt)
                nxt += 1
            if r + 1 < rows:
                inputs[v].append(nxt)
                inputs[v + cols].append(nxt)
                nxt += 1
    return inputs, [], [bond] * nxt


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def program(inputs, output, sizes):
    """The network as an einsat function with literal sizes."""
    params, factors = [], []
    for t, ids in enumerate(inputs):
        if ids:
            params.append(f"T{t}: [{','.join(str(sizes[i]) for i in ids)}]R")
            factors.append(f"T{t}[{','.join(f'i{i}' for i in ids)}]")
        else:
            params.append(f"T{t}: R")
            factors.append(f"T{t}")
    used = sorted({i for t in inputs for i in t})
    summed = [i for i in used if i not in output]
    body = " * ".join(factors)
    if summed:
        body = f"sum({', '.join(f'i{i}:{sizes[i]}' for i in summed)}) {body}"
    ret = "R"
    if output:
        body = f"gen({', '.join(f'i{i}:{sizes[i]}' for i in output)}) {body}"
        ret = f"[{','.join(str(sizes[i]) for i in output)}]R"
    return f"fn tn({', '.join(params)}) -> {ret} = {body}"


def median_time(f, budget):
    f()
    ts = []
    start = time.perf_counter()
    while len(ts) < 5 or (time.perf_counter() - start < budget and len(ts) < 2000):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def cases(a):
    out = [(f"ring{n}", ring(n, 8)) for n in (8, 16, 24, 50)]
    out.append(("mps32", mps(32, 32, 2)))
    out.append(("grid4x4", grid(4, 4, 4)))
    out.append(("grid6x6", grid(6, 6, 4)))
    path = a.networks
    if path is None:
        path = os.path.join(tempfile.mkdtemp(), "networks.json")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        subprocess.run(
            ["cargo", "run", "--release", "-q", "--example", "plan_networks", "--", "--reps", "1", "--out", path],
            cwd=root,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    for c in json.load(open(path)):
        name = c["name"]
        if name.startswith("einsum") and name.endswith("_0") or name.startswith("rr") and c["name"] != "rr20":
            out.append((name, (c["inputs"], c["output"], c["sizes"])))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", help="only cases whose name starts with this")
    ap.add_argument("--networks", help="plan_networks JSON (default: run the example)")
    ap.add_argument("--dp-timeout", type=float, default=20.0)
    ap.add_argument("--cotengra-time", type=float, default=1.0)
    ap.add_argument("--max-flops", type=float, default=1e10)
    ap.add_argument("--budget", type=float, default=0.5, help="seconds of timing per measurement")
    ap.add_argument("--json")
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    # the planners' child processes start fresh: forking a process that
    # runs einsat's and numpy's threads can deadlock
    import multiprocessing as mp

    mp.set_start_method("spawn", force=True)

    import einsat
    import opt_einsum as oe
    from threadpoolctl import threadpool_info, threadpool_limits

    blas = ", ".join(f"{i.get('internal_api')} {i.get('version')}" for i in threadpool_info()) or "?"
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; load average {os.getloadavg()[0]:.1f}")
    print(f"numpy {np.__version__} ({blas}), opt_einsum {oe.__version__}", end="")
    try:
        import cotengra as ctg

        print(f", cotengra {ctg.__version__}")
    except ImportError:
        print(", cotengra missing")
    print(
        "flops: opt_einsum's convention; x = einsat/peer (below 1: einsat better). time: median call;"
        " oe = opt_einsum.contract (path search included), expr = opt_einsum.contract_expression"
    )
    rows = []
    for name, (inputs, output, sizes) in cases(a):
        if a.case and not name.startswith(a.case):
            continue
        ids = sorted({i for t in inputs for i in t} | set(output))
        sym = {i: oe.get_symbol(k) for k, i in enumerate(ids)}
        sinputs = ["".join(sym[i] for i in t) for t in inputs]
        soutput = "".join(sym[i] for i in output)
        ssizes = {sym[i]: sizes[i] for i in ids}
        eq = ",".join(sinputs) + "->" + soutput
        row = {"name": name, "n": len(inputs)}
        # einsat: optimise + compile (1 and 2 threads)
        src = program(inputs, output, sizes)
        t = time.perf_counter()
        k1 = einsat.compile(src, threads=1)
        row["einsat_compile_ms"] = (time.perf_counter() - t) * 1e3
        k2 = einsat.compile(src, threads=2)
        rep = k1.report if isinstance(k1.report, dict) else json.loads(k1.report)
        plans = rep.get("plans", [])
        if len(plans) != 1:
            print(f"{name}: einsat planned {len(plans)} networks; skipped")
            continue
        p = plans[0]
        row["einsat_plan_ms"] = p["planning_ms"]
        row["einsat_optimize_ms"] = rep["optimize_ms"]
        ef, _, el = recount(sinputs, soutput, ssizes, p["path"]) if not p["sliced"] else (
            p["flops_opt_einsum"],
            None,
            p["largest_intermediate"],
        )
        row["einsat"], row["einsat_largest"] = ef, el
        g = timed(run_oe, ("greedy", sinputs, soutput, ssizes), 600)
        row["greedy"], _, row["greedy_largest"] = recount(sinputs, soutput, ssizes, g[0])
        d = timed(run_oe, ("dp", sinputs, soutput, ssizes), a.dp_timeout)
        if d is not None:
            row["dp"], _, row["dp_largest"] = recount(sinputs, soutput, ssizes, d[0])
        if len(inputs) >= 8:
            c = timed(run_ctg, (sinputs, soutput, ssizes, a.cotengra_time), a.cotengra_time * 20 + 120)
            if c is not None:
                row["ctg"], _, row["ctg_largest"] = recount(sinputs, soutput, ssizes, c[0])

        def x(k):
            return f"{ef / row[k]:5.2f}" if k in row else f"{'-':>5}"

        print(
            f"{name:>9} {len(inputs):>3}t flops {ef:9.3g} x greedy {x('greedy')} dp {x('dp')} ctg {x('ctg')}"
            f" | largest {el:8.3g} x greedy {el / row['greedy_largest']:5.2f}"
            f" | plan {row['einsat_plan_ms']:7.1f} ms, optimise {row['einsat_optimize_ms']:7.1f} ms,"
            f" +compile {row['einsat_compile_ms']:7.1f} ms",
            flush=True,
        )
        if ef > a.max_flops:
            print(f"{'':>9} not contracted: {ef:.3g} flops > --max-flops {a.max_flops:g}")
            rows.append(row)
            continue
        rng = np.random.default_rng(1)
        arrays = [rng.random(tuple(sizes[i] for i in t)) - 0.5 for t in inputs]
        args = [float(x_) if x_.ndim == 0 else x_ for x_ in arrays]
        expr = oe.contract_expression(eq, *[x_.shape for x_ in arrays])
        want = oe.contract(eq, *arrays)
        for th, k in ((1, k1), (2, k2)):
            got = k(*args)
            ok = np.allclose(got, want, rtol=1e-9, atol=1e-12 * np.max(np.abs(want)))
            with threadpool_limits(th):
                te = median_time(lambda: k(*args), a.budget)
                to = median_time(lambda: oe.contract(eq, *arrays), a.budget)
                tx = median_time(lambda: expr(*arrays), a.budget)
            row[f"t{th}"] = {"einsat": te, "oe": to, "expr": tx, "ok": bool(ok)}
            print(
                f"{'':>9} {th} thread{'s' if th > 1 else ' '}: einsat {te * 1e3:9.3f} ms | oe {to * 1e3:9.3f} ms"
                f" x {te / to:6.3f} | expr {tx * 1e3:9.3f} ms x {te / tx:6.3f}"
                f"{'' if ok else '  RESULT DIFFERS FROM NUMPY'}",
                flush=True,
            )
        rows.append(row)
    print()
    for key in ("mps32", "grid6x6", "grid4x4"):
        for r in rows:
            if r["name"] == key and "t1" in r:
                s = ", ".join(
                    f"{th}t einsat/oe {r[f't{th}']['einsat'] / r[f't{th}']['oe']:.3f},"
                    f" einsat/expr {r[f't{th}']['einsat'] / r[f't{th}']['expr']:.3f}"
                    for th in (1, 2)
                )
                print(f"target {key}: {s}")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
