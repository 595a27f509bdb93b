#!/usr/bin/env bash
# What --trace costs, and that the instrumentation costs nothing when off:
# interleaved rounds (the order reversed every other round) of the same
# 2-rank ddp run with
#   old    a dtbench built without the trace seam (OLD_DTBENCH, e.g. 9744e0e)
#   off    this dtbench without --trace
#   on     this dtbench with --trace --trace-iters = every timed iteration
# per reducer; prints the median p50 sec/iter of each and the ratios off/old
# and on/off, plus the trace file's size.
#   bench/trace_overhead.sh OLD_DTBENCH NEW_DTBENCH [ROUNDS] [REDUCERS]
# Environment: ITERS, WARMUP (default 10, 3), MODEL flags (default resnet50 64x64, batch 16).
set -euo pipefail
OLD=$1
NEW=$2
ROUNDS=${3:-5}
REDUCERS=${4:-ddp,overlap}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-3}
read -r -a model <<<"${MODEL:---model resnet50 --image-size 64 --batch-size 16}"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
common=("${model[@]}" --iters "$ITERS" --warmup "$WARMUP" --world-sizes 2 --no-baseline --backend gloo)

p50_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runs'][0]['slowest_rank_summary']['p50'])" "$1"; }
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

run() {  # variant reducer round
  local v=$1 r=$2 k=$3 f="$out/$1-$2-$3.json"
  case $v in
    old) "$OLD" ddp "${common[@]}" --reducer "$r" --json "$f" >/dev/null 2>&1 ;;
    off) "$NEW" ddp "${common[@]}" --reducer "$r" --json "$f" >/dev/null 2>&1 ;;
    on)  "$NEW" ddp "${common[@]}" --reducer "$r" --json "$f" --trace "$out/t-$r-$k.json" \
           --trace-iters "$ITERS" >/dev/null 2>&1 ;;
  esac
  p50_of "$f"
}

IFS=, read -r -a reducers <<<"$REDUCERS"
for r in "${reducers[@]}"; do
  declare -A samples=([old]="" [off]="" [on]="")
  for k in $(seq 1 "$ROUNDS"); do
    order=(old off on); [ $((k % 2)) -eq 0 ] && order=(on off old)
    for v in "${order[@]}"; do samples[$v]+=" $(run "$v" "$r" "$k")"; done
  done
  old=$(median ${samples[old]}); off=$(median ${samples[off]}); on=$(median ${samples[on]})
  size=$(stat -c %s "$out/t-$r-1.1N-2R.json")
  python3 -c "
import sys
r, old, off, on, size, n = sys.argv[1], *map(float, sys.argv[2:6]), int(sys.argv[6])
print(f'{r:>8}: median p50 sec/iter old {old:.4f}  off {off:.4f}  on {on:.4f}   off/old {off/old:.3f}  on/off {on/off:.3f}   trace {size/1024:.0f} KiB for {n} iterations x 2 ranks')
" "$r" "$old" "$off" "$on" "$size" "$ITERS"
  echo "  samples old:${samples[old]} | off:${samples[off]} | on:${samples[on]}"
  unset samples
done
