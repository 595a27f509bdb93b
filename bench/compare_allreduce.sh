#!/usr/bin/env bash
# Allreduce busbw of dtbench (gloo, mpi) beside the libraries called directly,
# in the same run, alternating, ROUNDS times; prints medians and ratios.
#   bench/compare_allreduce.sh [BUILD_DIR] [ROUNDS]
# Peers: a plain MPI_Allreduce program (bench/peers/mpi_allreduce.c) and
# PyTorch's dist.all_reduce on gloo (bench/peers/torch_allreduce.py, Debian's
# python3-torch). Same sizes, iterations, warm-up and timing method.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-3}
SIZES="1024 4096 16384 65536 262144 1048576 4194304 16777216 67108864 268435456"
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
PY=/usr/bin/python3
root_flag=""; [ "$(id -u)" -eq 0 ] && root_flag="--allow-run-as-root"
csv_sizes=$(echo $SIZES | tr ' ' ',')

for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  "$BUILD/dtbench" comm --nproc 2 --backend gloo -b 1K -e 256M -f 4 -n "$ITERS" -w "$WARMUP" \
    --json "$out/gloo.$r.json" >/dev/null
  $PY "$here/peers/torch_allreduce.py" --nproc 2 --sizes "$csv_sizes" -n "$ITERS" -w "$WARMUP" \
    >"$out/torch.$r.txt"
  "$BUILD/dtbench" comm --nproc 2 --backend mpi -b 1K -e 256M -f 4 -n "$ITERS" -w "$WARMUP" \
    --json "$out/mpi.$r.json" >/dev/null
  # --bind-to none: what dtbench's mpi ranks get without --bind (mpirun's
  # default would pin the peer's 2 ranks to a core each).
  mpirun $root_flag --oversubscribe --bind-to none -np 2 "$BUILD/mpi_allreduce_peer" "$ITERS" "$WARMUP" $SIZES \
    >"$out/mpipeer.$r.txt"
done

$PY - "$out" "$ROUNDS" <<'PYEOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def busbw(bytes_, us):  # 2 ranks: factor 2(n-1)/n = 1
    return bytes_ / us / 1e3
rows = {}
for r in range(1, rounds + 1):
    for name in ("gloo", "mpi"):
        for rec in json.load(open(f"{out}/{name}.{r}.json"))["results"]:
            b = rec["size"]
            rows.setdefault(b, {}).setdefault(f"dtbench-{name}-in", []).append(rec["in_place"]["bus_bw"])
            if rec["out_of_place"] is not None:  # gloo's allreduce is in place only (c10d)
                rows[b].setdefault(f"dtbench-{name}-out", []).append(rec["out_of_place"]["bus_bw"])
    for line in open(f"{out}/torch.{r}.txt"):
        b, us, _, bw = line.split(); rows.setdefault(int(b), {}).setdefault("torch-gloo-in", []).append(float(bw))
    for line in open(f"{out}/mpipeer.{r}.txt"):
        b, oop, ip = line.split()
        rows.setdefault(int(b), {}).setdefault("mpi-peer-out", []).append(busbw(int(b), float(oop)))
        rows[int(b)].setdefault("mpi-peer-in", []).append(busbw(int(b), float(ip)))
cols = ["dtbench-gloo-in", "torch-gloo-in", "dtbench-mpi-out", "mpi-peer-out", "dtbench-mpi-in", "mpi-peer-in"]
print(f"median busbw (GB/s) over {rounds} rounds, 2 ranks, float32 sum")
print("| bytes | " + " | ".join(cols) + " | gloo ratio | mpi ratio (out) | mpi ratio (in) |")
print("|" + "---|" * (len(cols) + 4))
for b in sorted(rows):
    med = {c: statistics.median(rows[b][c]) for c in cols if c in rows[b]}
    ratio = lambda a, p: f"{med[a] / med[p]:.3f}" if med.get(p) else "-"
    print(f"| {b} | " + " | ".join(f"{med.get(c, float('nan')):.3f}" for c in cols) +
          f" | {ratio('dtbench-gloo-in', 'torch-gloo-in')} | {ratio('dtbench-mpi-out', 'mpi-peer-out')} | {ratio('dtbench-mpi-in', 'mpi-peer-in')} |")
PYEOF
rm -rf "$out"
