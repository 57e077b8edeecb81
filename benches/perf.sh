#!/usr/bin/env bash
# The README performance table: `einsat bench` on the programs of
# benches/perf.tl, the JIT on the optimised program on 1 thread and on all
# cores (plus the interpreter on the small sizes, for the ratio), printed
# as a markdown table. The Rust peers' figures come from
# `cargo bench --bench jit` (same programs and sizes).
#
#   benches/perf.sh [EINSAT] [REPS]     (default: target/release/einsat, 21)
set -euo pipefail
cd "$(dirname "$0")/.."
E=${1:-target/release/einsat}
REPS=${2:-21}
[ -x "$E" ] || cargo build --release
ALL=$(nproc)
echo "| program | sizes | threads | median ms | GFLOP/s | vs 1 thread |"
echo "|---|---|---|---|---|---|"
row() { # fn sizes...
  local f=$1; shift
  local args=()
  for s in "$@"; do args+=(--size "$s"); done
  local one
  one=$("$E" bench benches/perf.tl --fn "$f" "${args[@]}" --engines jit --threads 1 \
        --reps "$REPS" --json)
  local all
  all=$("$E" bench benches/perf.tl --fn "$f" "${args[@]}" --engines jit --threads 0 \
        --reps "$REPS" --json)
  python3 - "$one" "$all" "$ALL" <<'PY'
import json, sys
one, alll, cores = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
sizes = ", ".join(f"{k}={v}" for k, v in one["sizes"].items())
t1 = one["engines"][0]["median_ms"]
for j, th in ((one, "1"), (alll, cores)):
    e = j["engines"][0]
    print(f"| {j['function']} | {sizes} | {th} | {e['median_ms']:.3f} | {e['gflops']:.2f} | {t1 / e['median_ms']:.2f}x |")
PY
}
row matvec n=1024
row matmul n=512
row bmm b=16 n=64
row abc n=128
row blur n=512
row softmax n=512
row chain n=1024
row trimv n=1024
row axpy n=1000000
