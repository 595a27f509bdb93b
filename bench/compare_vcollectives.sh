#!/usr/bin/env bash
# The v-collectives of `dtbench comm --backend mpi` (allgatherv,
# reduce_scatter_v, alltoallv with --split-sizes skewed, float32 sum) beside a
# plain MPI program making the same calls on the same parts
# (bench/peers/mpi_vcollectives.c), in the same run, alternating which goes
# first, ROUNDS times. Same sizes, iterations, warm-up and timing method (each
# call timed on its own on the next buffer window; the mean per rank, then over
# the ranks; the p50 of every rank's calls pooled). Prints per collective and
# size the median over rounds of each side's busbw from the mean and from the
# p50, and dtbench ÷ peer (> 1: dtbench faster; the goal is >= 0.97 at every
# size >= 64 KiB).
#   bench/compare_vcollectives.sh [BUILD_DIR] [ROUNDS]
# Environment: NPROC (default 2), ITERS, WARMUP (default 50, 5), BIND (none
# or core), AWAKE=1 (every vCPU kept busy at idle priority, bench_lib.sh),
# AA=1 (the peer against itself: its second run takes dtbench's place, so the
# ratios show what the machine's drift alone gives).
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
NPROC=${NPROC:-2}
ITERS=${ITERS:-50}
WARMUP=${WARMUP:-5}
BIND=${BIND:-none}
AWAKE=${AWAKE:-0}
AA=${AA:-0}
SIZES="65536 262144 1048576 4194304 16777216"
out=$(mktemp -d)
# shellcheck source=bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
trap 'stop_awake_spinners; rm -rf "$out"' EXIT
root_flag=""; [ "$(id -u)" -eq 0 ] && root_flag="--allow-run-as-root"
GLIBC_TUNABLES=$(peer_glibc_tunables "$BUILD/dtbench")
export GLIBC_TUNABLES
echo "the peer runs with GLIBC_TUNABLES=${GLIBC_TUNABLES:-<unset>}" >&2
[ "$AWAKE" = 1 ] && keep_cpus_awake
[ -x "$BUILD/mpi_vcollectives_peer" ] || {
  echo "compare_vcollectives: $BUILD/mpi_vcollectives_peer is missing (make build)" >&2
  exit 2
}

dt_side() {
  if [ "$AA" = 1 ]; then peer_side "a$1"; return; fi
  "$BUILD/dtbench" comm --nproc "$NPROC" --backend mpi --collective allgatherv,reduce_scatter_v,alltoallv \
    --split-sizes skewed -b 64K -e 16M -f 4 -n "$ITERS" -w "$WARMUP" --placement out --bind "$BIND" \
    --percentiles 50 --json "$out/dt.$1.json" >/dev/null
}
peer_side() {
  # shellcheck disable=SC2086
  mpirun $root_flag --oversubscribe --bind-to "$BIND" -x GLIBC_TUNABLES -np "$NPROC" \
    "$BUILD/mpi_vcollectives_peer" "$ITERS" "$WARMUP" $SIZES >"$out/peer.$1.txt"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  if [ $((r % 2)) = 1 ]; then dt_side "$r"; peer_side "$r"; else peer_side "$r"; dt_side "$r"; fi
done

python3 - "$out" "$ROUNDS" "$NPROC" "$AA" <<'PYEOF'
import json, statistics, sys
out, rounds, n, aa = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
factor = (n - 1) / n  # every one of the three: (n-1)/n
busbw = lambda size, us: size / us / 1e3 * factor  # GB/s
rows = {}
for r in range(1, rounds + 1):
    if aa:  # the peer's second run in dtbench's columns
        for line in open(f"{out}/peer.a{r}.txt"):
            name, b, mean, p50 = line.split()
            d = rows.setdefault((name, int(b)), {})
            d.setdefault("dt_mean", []).append(busbw(int(b), float(mean)))
            d.setdefault("dt_p50", []).append(busbw(int(b), float(p50)))
    for rec in [] if aa else json.load(open(f"{out}/dt.{r}.json"))["results"]:
        t = rec["out_of_place"]
        if t["nwrong"]:
            sys.exit(f"dtbench {rec['collective']} {rec['size']} B: {t['nwrong']} wrong elements")
        d = rows.setdefault((rec["collective"], rec["size"]), {})
        d.setdefault("dt_mean", []).append(busbw(rec["size"], t["time"]))
        d.setdefault("dt_p50", []).append(busbw(rec["size"], t["percentiles_us"]["p50"]))
    for line in open(f"{out}/peer.{r}.txt"):
        name, b, mean, p50 = line.split()
        d = rows.setdefault((name, int(b)), {})
        d.setdefault("mpi_mean", []).append(busbw(int(b), float(mean)))
        d.setdefault("mpi_p50", []).append(busbw(int(b), float(p50)))
print(f"busbw (GB/s), median over {rounds} rounds, {n} ranks on one host, float32 sum, parts skewed"
      + (" (AA=1: the 'dtbench' columns are the peer's second run)" if aa else ""))
print("| collective | bytes | dtbench (mean) | MPI (mean) | ratio | dtbench (p50) | MPI (p50) | ratio |")
print("|---|---|---|---|---|---|---|---|")
for (name, b) in sorted(rows, key=lambda k: (["allgatherv", "reduce_scatter_v", "alltoallv"].index(k[0]), k[1])):
    m = {k: statistics.median(v) for k, v in rows[(name, b)].items()}
    print(f"| {name} | {b} | {m['dt_mean']:.3f} | {m['mpi_mean']:.3f} | {m['dt_mean'] / m['mpi_mean']:.3f} | "
          f"{m['dt_p50']:.3f} | {m['mpi_p50']:.3f} | {m['dt_p50'] / m['mpi_p50']:.3f} |")
PYEOF
