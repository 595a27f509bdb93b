#!/usr/bin/env bash
# Ping-pong latency of `dtbench comm --backend mpi --collective pingpong`
# beside a plain MPI ping-pong (bench/peers/mpi_pingpong.c, OSU's pattern),
# in the same run, alternating which goes first, ROUNDS times; prints per
# size the median over rounds of each side's mean and p50 round trip, and
# dtbench ÷ peer. Same sizes, iterations, warm-up and timing method (each
# round trip timed on its own, mean per rank then over the 2 ranks; p50 of
# both ranks' round trips pooled); both unpinned (mpirun --bind-to none, as
# dtbench's ranks without --bind), or with BIND=core each rank on its own
# core on both sides (dtbench --bind core, mpirun --bind-to core). The peer
# runs with dtbench's malloc thresholds (GLIBC_TUNABLES, as every peer) and
# rotates its buffers as dtbench does.
#   bench/compare_pingpong.sh [BUILD_DIR] [ROUNDS]
# Environment: ITERS, WARMUP (default 200, 20), BIND (none or core), AWAKE=1
# (every vCPU kept busy at idle priority, bench_lib.sh's keep_cpus_awake: a
# halted vCPU's wake-up is milliseconds on this VM).
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
ITERS=${ITERS:-200}
WARMUP=${WARMUP:-20}
BIND=${BIND:-none}
AWAKE=${AWAKE:-0}
SIZES="8 64 512 4096 32768 262144 2097152"
out=$(mktemp -d)
# shellcheck source=bench/bench_lib.sh
. "$(dirname "$0")/bench_lib.sh"
trap 'stop_awake_spinners; rm -rf "$out"' EXIT
root_flag=""; [ "$(id -u)" -eq 0 ] && root_flag="--allow-run-as-root"
GLIBC_TUNABLES=$(peer_glibc_tunables "$BUILD/dtbench")
export GLIBC_TUNABLES
echo "the peer runs with GLIBC_TUNABLES=${GLIBC_TUNABLES:-<unset>}" >&2
[ "$AWAKE" = 1 ] && keep_cpus_awake
[ -x "$BUILD/mpi_pingpong_peer" ] || { echo "compare_pingpong: $BUILD/mpi_pingpong_peer is missing (make build)" >&2; exit 2; }

dt_side() {
  "$BUILD/dtbench" comm --nproc 2 --backend mpi --collective pingpong -b 8 -e 2M -f 8 -n "$ITERS" -w "$WARMUP" \
    --bind "$BIND" --percentiles 50 --json "$out/dt.$1.json" >/dev/null
}
peer_side() {
  # shellcheck disable=SC2086
  mpirun $root_flag --oversubscribe --bind-to "$BIND" -x GLIBC_TUNABLES -np 2 "$BUILD/mpi_pingpong_peer" "$ITERS" "$WARMUP" $SIZES \
    >"$out/peer.$1.txt"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  if [ $((r % 2)) = 1 ]; then dt_side "$r"; peer_side "$r"; else peer_side "$r"; dt_side "$r"; fi
done

python3 - "$out" "$ROUNDS" <<'PYEOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for rec in json.load(open(f"{out}/dt.{r}.json"))["results"]:
        t = rec["out_of_place"]
        if t["nwrong"]:
            sys.exit(f"dtbench pingpong {rec['size']} B: {t['nwrong']} wrong elements")
        d = rows.setdefault(rec["size"], {})
        d.setdefault("dt_mean", []).append(t["time"]); d.setdefault("dt_p50", []).append(t["percentiles_us"]["p50"])
    for line in open(f"{out}/peer.{r}.txt"):
        b, mean, p50 = line.split()
        d = rows.setdefault(int(b), {})
        d.setdefault("mpi_mean", []).append(float(mean)); d.setdefault("mpi_p50", []).append(float(p50))
print(f"round trip (us), median over {rounds} rounds, 2 ranks on one host; each round's ratios of means: "
      + "; ".join(f"{b}: " + " ".join(f"{x / y:.2f}" for x, y in zip(rows[b]["dt_mean"], rows[b]["mpi_mean"]))
                  for b in sorted(rows) if b >= 32768))
print("| bytes | dtbench mean | MPI mean | ratio | dtbench p50 | MPI p50 | ratio |")
print("|---|---|---|---|---|---|---|")
for b in sorted(rows):
    m = {k: statistics.median(v) for k, v in rows[b].items()}
    print(f"| {b} | {m['dt_mean']:.2f} | {m['mpi_mean']:.2f} | {m['dt_mean'] / m['mpi_mean']:.3f} | "
          f"{m['dt_p50']:.2f} | {m['mpi_p50']:.2f} | {m['dt_p50'] / m['mpi_p50']:.3f} |")
PYEOF
