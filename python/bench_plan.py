"""Compare einsat's contraction planner with opt_einsum and cotengra.

Reads the JSON of ``cargo run --release --example plan_networks -- --out F``
(the networks and einsat's plans), plans the same networks with opt_einsum
greedy, opt_einsum dp (skipped past a timeout) and cotengra's
HyperOptimizer (time budget: max(1 s, einsat's planning time)), and prints
per case the flops (opt_einsum's convention, every path recounted here by
one function), the largest intermediate and the planning time, with the
ratios einsat/peer.

    python python/bench_plan.py plan.json [--dp-timeout 60] [--cotengra-time 1]
        [--cotengra-long 30] [--json out.json]

Needs numpy, opt_einsum and cotengra (kahypar optional; without it
cotengra partitions with its `labels` method, which the output names).
"""

import argparse
import json
import math
import multiprocessing as mp
import statistics
import sys
import time


def symbols(case):
    import opt_einsum as oe

    ids = sorted({i for t in case["inputs"] for i in t} | set(case["output"]))
    sym = {i: oe.get_symbol(k) for k, i in enumerate(ids)}
    inputs = ["".join(sym[i] for i in t) for t in case["inputs"]]
    output = "".join(sym[i] for i in case["output"])
    sizes = {sym[i]: case["sizes"][i] for i in ids}
    return inputs, output, sizes


def recount(inputs, output, sizes, path):
    """Flops (opt_einsum's flop_count convention), multiply-adds and the
    largest intermediate of a linear path, counted the same for everyone."""
    cur = [frozenset(t) for t in inputs]
    out = frozenset(output)
    flops = madds = 0
    largest = 0
    for step in path:
        ops = [cur[p] for p in step]
        for p in sorted(step, reverse=True):
            del cur[p]
        u = frozenset().union(*ops)
        rest = frozenset().union(*cur) if cur else frozenset()
        kept = frozenset(i for i in u if i in out or i in rest)
        size_u = math.prod(sizes[i] for i in u)
        madds += size_u
        flops += size_u * (2 if len(kept) < len(u) else 1)
        largest = max(largest, math.prod(sizes[i] for i in kept))
        cur.append(kept)
    assert len(cur) == 1 and cur[0] == out, "path does not reach the output"
    return flops, madds, largest


def run_oe(kind, inputs, output, sizes, q):
    import opt_einsum as oe

    shapes = [tuple(sizes[c] for c in t) for t in inputs]
    eq = ",".join(inputs) + "->" + output
    t = time.perf_counter()
    if kind == "greedy":
        path, _ = oe.contract_path(eq, *shapes, shapes=True, optimize="greedy")
    else:
        path, _ = oe.contract_path(eq, *shapes, shapes=True, optimize=oe.DynamicProgramming())
    q.put((path, (time.perf_counter() - t) * 1e3))


def run_ctg(inputs, output, sizes, budget, q):
    import cotengra as ctg

    t = time.perf_counter()
    opt = ctg.HyperOptimizer(max_time=budget, max_repeats=10_000, parallel=False, progbar=False)
    tree = opt.search(inputs, output, sizes)
    methods = sorted({str(m) for m in getattr(opt, "method", [])}) if hasattr(opt, "method") else []
    q.put((tree.get_path(), (time.perf_counter() - t) * 1e3, methods))


def timed(target, args, timeout):
    """Run target in a child process; its result, or None after timeout.
    (The result is read before joining: a child cannot exit while its
    large result is still in the queue's pipe.)"""
    import queue

    q = mp.Queue()
    p = mp.Process(target=target, args=args + (q,))
    p.start()
    try:
        r = q.get(timeout=timeout)
    except queue.Empty:
        r = None
    if p.is_alive():
        p.terminate()
    p.join()
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--dp-timeout", type=float, default=60.0)
    ap.add_argument("--cotengra-time", type=float, default=1.0)
    ap.add_argument("--skip-cotengra-below", type=int, default=0, help="no cotengra for fewer tensors")
    ap.add_argument(
        "--cotengra-long", type=float, default=0.0, help="also cotengra with this budget (s) on networks of >= 50 tensors"
    )
    ap.add_argument("--json")
    a = ap.parse_args()
    cases = json.load(open(a.file))
    try:
        import kahypar  # noqa: F401

        part = "kahypar"
    except ImportError:
        part = "labels (no kahypar)"
    print(f"cotengra partitioner: {part}")
    rows = []
    hdr = (
        f"{'case':>11} {'n':>4} {'einsat':>10} {'ms':>8} | {'oe-greedy':>10} {'x':>6} | "
        f"{'oe-dp':>10} {'x':>6} {'ms':>8} | {'cotengra':>10} {'x':>6} {'ms':>7} | {'size x ctg':>10}"
    )
    print(hdr)
    for c in cases:
        inputs, output, sizes = symbols(c)
        e = c["einsat"]
        ef, em, el = recount(inputs, output, sizes, e["path"])
        assert math.isclose(ef, e["flops_opt_einsum"], rel_tol=1e-9) or e["sliced"], (c["name"], ef, e)
        row = {"name": c["name"], "n": len(inputs), "einsat": ef, "einsat_largest": el, "einsat_ms": e["ms"]}
        g = timed(run_oe, ("greedy", inputs, output, sizes), 600)
        row["greedy"], _, row["greedy_largest"] = recount(inputs, output, sizes, g[0])
        row["greedy_ms"] = g[1]
        d = timed(run_oe, ("dp", inputs, output, sizes), a.dp_timeout)
        if d is not None:
            row["dp"], _, row["dp_largest"] = recount(inputs, output, sizes, d[0])
            row["dp_ms"] = d[1]
        if len(inputs) >= a.skip_cotengra_below:
            budget = max(a.cotengra_time, e["ms"] / 1e3)
            t = timed(run_ctg, (inputs, output, sizes, budget), budget * 20 + 120)
            if t is not None:
                row["ctg"], _, row["ctg_largest"] = recount(inputs, output, sizes, t[0])
                row["ctg_ms"] = t[1]
        if a.cotengra_long > 0 and len(inputs) >= 50:
            t = timed(run_ctg, (inputs, output, sizes, a.cotengra_long), a.cotengra_long * 20 + 120)
            if t is not None:
                row["ctg_long"], _, row["ctg_long_largest"] = recount(inputs, output, sizes, t[0])
                row["ctg_long_ms"] = t[1]
                print(
                    f"{'':>11} cotengra with {a.cotengra_long:g} s: {row['ctg_long']:.4g} flops, "
                    f"einsat/cotengra {ef / row['ctg_long']:.3f}, {t[1]:.0f} ms",
                    flush=True,
                )
        rows.append(row)

        def ratio(k):
            return f"{ef / row[k]:6.3f}" if k in row else f"{'-':>6}"

        print(
            f"{c['name']:>11} {len(inputs):>4} {ef:10.4g} {e['ms']:8.2f} | {row['greedy']:10.4g} {ratio('greedy')} | "
            f"{row.get('dp', float('nan')):10.4g} {ratio('dp')} {row.get('dp_ms', float('nan')):8.1f} | "
            f"{row.get('ctg', float('nan')):10.4g} {ratio('ctg')} {row.get('ctg_ms', float('nan')):7.0f} | "
            f"{(el / row['ctg_largest']) if 'ctg' in row else float('nan'):10.3g}",
            flush=True,
        )
    # targets
    print()
    worst = lambda k, sel: max((r["einsat"] / r[k], r["name"]) for r in rows if k in r and sel(r))
    print("worst einsat/oe-greedy:", worst("greedy", lambda r: True))
    if any("dp" in r for r in rows):
        print("worst einsat/oe-dp (where dp finished):", worst("dp", lambda r: True))
    big = lambda r: r["name"].startswith("rr") and r["n"] >= 50
    if any("ctg" in r and big(r) for r in rows):
        print("worst einsat/cotengra on the 50-500 networks:", worst("ctg", big))
    if any("ctg_long" in r for r in rows):
        print("worst einsat/cotengra (long budget):", worst("ctg_long", big))
    small = [r["einsat_ms"] for r in rows if r["n"] <= 6]
    if small:
        print(f"median planning ms, <= 6 operands: {statistics.median(small):.3f}")
    for r in rows:
        if r["n"] in (20, 200, 500) or r["name"].startswith("rr"):
            print(f"planning ms {r['name']} ({r['n']} tensors): {r['einsat_ms']:.1f}")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
