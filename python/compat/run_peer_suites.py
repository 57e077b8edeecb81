#!/usr/bin/env python3
"""Run numpy's and opt_einsum's own einsum tests against einsat.

The tests are the ones shipped inside the installed packages (numpy's
``numpy/_core/tests/test_einsum.py``, opt_einsum's ``opt_einsum/tests/``),
not copies: the pytest plugin ``einsat_peer.py`` substitutes einsat's
functions for the library's before the test modules are imported
(numpy: ``np.einsum``, ``np.einsum_path``; opt_einsum: ``contract``,
``contract_path``, ``contract_expression``), and marks the failures listed
with their reasons in ``expected.py`` as expected (xfail).

    python python/compat/run_peer_suites.py            # both suites
    python python/compat/run_peer_suites.py numpy      # one of them
    python python/compat/run_peer_suites.py --quick    # numpy's suite only

Needs: einsat (built), numpy, opt_einsum, pytest, hypothesis (numpy's test
configuration imports it). Prints per suite the counts of passed, expected
failures (xfailed), unexpected passes (xpassed) and failures, and exits 1
when a test failed that is not listed (or a listed one passed).
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

SUITES = {
    "numpy": ["--pyargs", "numpy._core.tests.test_einsum"],
    "opt_einsum": ["--pyargs", "opt_einsum.tests"],
}


def run(suite):
    env = dict(os.environ)
    env["EINSAT_PEER"] = suite
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "einsat_peer",
        "-rfX",
        "--tb=line",
        # numpy's own pytest configuration is strict about unknown marks
        "-W",
        "ignore::pytest.PytestUnknownMarkWarning",
    ] + SUITES[suite]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=HERE)
    out = r.stdout + r.stderr
    counts = {}
    summary = [l for l in out.splitlines() if re.search(r"\d+ (passed|failed|xfailed)", l)]
    if summary:
        for n, what in re.findall(r"(\d+) (passed|failed|xfailed|xpassed|skipped|errors?)", summary[-1]):
            counts[what] = int(n)
    bad = [l for l in out.splitlines() if l.startswith(("FAILED", "XPASS", "ERROR"))]
    return counts, bad, out, r.returncode


def main(argv):
    quick = "--quick" in argv
    names = [a for a in argv if not a.startswith("-")] or (["numpy"] if quick else list(SUITES))
    ok = True
    for name in names:
        counts, bad, out, code = run(name)
        total = sum(counts.values())
        print(
            "%-10s %4d tests: %d passed, %d expected failures (reasons in expected.py), "
            "%d unexpected passes, %d failed, %d skipped"
            % (
                name,
                total,
                counts.get("passed", 0),
                counts.get("xfailed", 0),
                counts.get("xpassed", 0),
                counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0),
                counts.get("skipped", 0),
            )
        )
        for line in bad:
            print("    " + line)
        if not counts:
            print(out[-3000:])
        if code != 0 or bad or not counts:
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
