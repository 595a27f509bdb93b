#!/usr/bin/env bash
# dtbench's `--reducer horovod` beside real Horovod 0.28.1 (scripts/horovod.sh;
# bench/peers/horovod_synthetic.py, Horovod's synthetic-benchmark loop), same
# model, batch, threads (1 per rank), 2 ranks, Horovod's defaults (fusion
# threshold 128 MiB, cycle time 1 ms, or HOROVOD_FUSION_THRESHOLD /
# HOROVOD_CYCLE_TIME when set: both sides read them), the same malloc
# thresholds, alternating rounds (odd rounds dtbench first, even rounds
# Horovod first). Prints the median p50 sec/iter of each side and their ratio.
#   bench/compare_horovod.sh [BUILD_DIR] [ROUNDS] [CASES] [CONTROLLER]
# CASES (default mlp,resnet18): mlp (1024-64-64-1000, batch 32, 200 + 20
# iterations), resnet18 (32x32, batch 32), resnet50 (64x64, batch 16);
# CONTROLLER gloo (default) or mpi (horovodrun --mpi beside dtbench --backend
# mpi). Environment: ITERS, WARMUP (default 20, 5), BIND (default core: each
# rank of both sides on its own CPU), COMPRESSION (none or fp16), AWAKE
# (default 0; 1 keeps every CPU from halting, both sides alike: bench_lib.sh
# keep_cpus_awake).
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
CASES=${3:-mlp,resnet18}
CTRL=${4:-gloo}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
BIND=${BIND:-core}
COMPRESSION=${COMPRESSION:-none}
AWAKE=${AWAKE:-0}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
HVD=${HOROVOD_HOME:-$repo/.deps/horovod}
[ -x "$HVD/bin/horovodrun" ] || { echo "compare_horovod: no Horovod in $HVD (bash scripts/horovod.sh)" >&2; exit 2; }
D="$BUILD/dtbench"
out=$(mktemp -d)
# shellcheck source=bench/bench_lib.sh
. "$here/bench_lib.sh"
trap 'stop_awake_spinners; rm -rf "$out"' EXIT
[ "$AWAKE" = 1 ] && keep_cpus_awake
GLIBC_TUNABLES=$(peer_glibc_tunables "$D")
export GLIBC_TUNABLES
echo "peers run with GLIBC_TUNABLES=${GLIBC_TUNABLES:-<unset>}, bind $BIND, controller $CTRL, compression $COMPRESSION" >&2

run_dtbench() {  # name, flags, iters, warmup, round
  # shellcheck disable=SC2086
  "$D" ddp $2 --iters "$3" --warmup "$4" --threads 1 --reducer horovod --compression "$COMPRESSION" \
    --backend "$CTRL" --world-sizes 2 --no-baseline --bind "$BIND" --json "$out/$1.$5.json" >/dev/null 2>&1
  p50_of "$out/$1.$5.json" 1N/2R
}
run_horovod() {  # flags, iters, warmup
  rm -f "$out/horovod.json"
  # shellcheck disable=SC2086
  PATH="$HVD/bin:$PATH" horovodrun -np 2 --"$CTRL" "$HVD/bin/python" "$here/peers/horovod_synthetic.py" $1 \
    --iters "$2" --warmup "$3" --threads 1 --bind "$BIND" --compression "$COMPRESSION" \
    --json "$out/horovod.json" >/dev/null 2>&1
  # From a file: mpirun's tagged stdout cut a line past 2048 characters (one MLP run in five).
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["p50"])' "$out/horovod.json"
}

vs_horovod() {  # name, flags (both sides), [iters], [warmup]
  local name=$1 flags=$2 it=${3:-$ITERS} wu=${4:-$WARMUP} d=() h=()
  for r in $(seq 1 "$ROUNDS"); do
    echo "[$name] round $r/$ROUNDS" >&2
    if [ $((r % 2)) = 1 ]; then
      d+=("$(run_dtbench "$name" "$flags" "$it" "$wu" "$r")"); h+=("$(run_horovod "$flags" "$it" "$wu")")
    else
      h+=("$(run_horovod "$flags" "$it" "$wu")"); d+=("$(run_dtbench "$name" "$flags" "$it" "$wu" "$r")")
    fi
  done
  local md mh; md=$(median "${d[@]}"); mh=$(median "${h[@]}")
  echo "$name ($CTRL, $COMPRESSION): 2 ranks, 1 thread/rank: dtbench horovod p50 ${md}s  Horovod p50 ${mh}s  ratio $(ratio "$md" "$mh")  (rounds: dtbench ${d[*]} | Horovod ${h[*]})"
}

IFS=, read -ra want <<<"$CASES"
for c in "${want[@]}"; do
  case $c in
    mlp) vs_horovod mlp "--model mlp --width 64 --batch-size 32" 200 20 ;;
    resnet18) vs_horovod resnet18 "--model resnet18 --image-size 32 --batch-size 32" ;;
    resnet50) vs_horovod resnet50 "--model resnet50 --image-size 64 --batch-size 16" ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done
