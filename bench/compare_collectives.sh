#!/usr/bin/env bash
# allgather, gather, scatter, alltoall and alltoallv (--split-sizes skewed)
# busbw of dtbench (gloo) beside PyTorch's own dist.all_gather / gather /
# scatter / all_to_all_single (with split sizes for alltoallv) on the same
# ProcessGroupGloo, in the same run, alternating (the order reversed
# every other round), ROUNDS times; prints medians and ratios (dtbench ÷ peer).
#   bench/compare_collectives.sh [BUILD_DIR] [ROUNDS]
# Same sizes, iterations, warm-up, buffer rotation and timing method
# (bench/peers/torch_collectives.py); out-of-place rows of dtbench, 2 ranks,
# float32, each rank on one core of its own (--bind core; the peer pins itself).
# AWAKE=1 keeps every vCPU busy at idle priority during the comparison (a
# halted vCPU costs ms to wake here; both sides get the same). The table
# compares busbw from the mean time and from the p50 (every rank's
# iterations pooled): the mean carries the wake-ups, the p50 does not.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
SIZES="65536 262144 1048576 4194304 16777216"
COLLS=${COLLS:-"allgather gather scatter alltoall alltoallv"}
AWAKE=${AWAKE:-0}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
# shellcheck source=bench/bench_lib.sh
. "$here/bench_lib.sh"
# The spinners end with the script, whichever way it ends.
trap 'stop_awake_spinners; rm -rf "$out"' EXIT
[ "$AWAKE" = 1 ] && keep_cpus_awake
# The peer gets dtbench's malloc thresholds (its default lets glibc give a
# 16 MiB buffer back and fault it in again each call: 1.5x slower gathers).
GLIBC_TUNABLES=$(peer_glibc_tunables "$BUILD/dtbench")
export GLIBC_TUNABLES
PY=/usr/bin/python3
csv_sizes=$(echo $SIZES | tr ' ' ',')
run_dtbench() {
  "$BUILD/dtbench" comm --nproc 2 --bind core --backend gloo --collective "$1" -b 64K -e 16M -f 4 -n "$ITERS" \
    -w "$WARMUP" --placement out --split-sizes skewed --json "$out/dt.$1.$2.json" >/dev/null
}
run_peer() {
  # Each peer rank pins itself to one CPU (--bind-core), as --bind core does.
  $PY "$here/peers/torch_collectives.py" --nproc 2 --bind-core --collective "$1" --sizes "$csv_sizes" \
    -n "$ITERS" -w "$WARMUP" >"$out/py.$1.$2.txt"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  for c in $COLLS; do
    if [ $((r % 2)) -eq 1 ]; then run_dtbench "$c" "$r"; run_peer "$c" "$r"; else run_peer "$c" "$r"; run_dtbench "$c" "$r"; fi
  done
done
$PY - "$out" "$ROUNDS" "$COLLS" <<'PYEOF'
import json, statistics, sys
out, rounds, colls = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
print(f"median busbw (GB/s) over {rounds} rounds, 2 ranks, float32, gloo, out of place; from the mean time and from p50")
print("| collective | bytes | dtbench (mean) | torch (mean) | ratio | dtbench (p50) | torch (p50) | ratio |")
print("|---|---|---|---|---|---|---|---|")
for c in colls:
    dt, py, dt50, py50 = {}, {}, {}, {}
    for r in range(1, rounds + 1):
        for rec in json.load(open(f"{out}/dt.{c}.{r}.json"))["results"]:
            t = rec["out_of_place"]
            if t["nwrong"]:
                sys.exit(f"dtbench {c} {rec['size']} B: {t['nwrong']} wrong elements")
            dt.setdefault(rec["size"], []).append(t["bus_bw"])
            dt50.setdefault(rec["size"], []).append(rec["size"] / t["percentiles_us"]["p50"] / 1e3 * 0.5)
        for line in open(f"{out}/py.{c}.{r}.txt"):
            b, us, _, bw, p50 = line.split()
            py.setdefault(int(b), []).append(float(bw))
            py50.setdefault(int(b), []).append(int(b) / float(p50) / 1e3 * 0.5)
    for b in sorted(dt):
        m = lambda d: statistics.median(d.get(b, [float("nan")]))
        print(f"| {c} | {b} | {m(dt):.3f} | {m(py):.3f} | {m(dt) / m(py):.3f} | {m(dt50):.3f} | {m(py50):.3f} | {m(dt50) / m(py50):.3f} |")
PYEOF
