#!/usr/bin/env bash
# Start-up of the front end beside dtbench-torch, which loads LibTorch as
# every dtbench process did before the front end: the same command lines,
# interleaved (front end, then dtbench-torch, N rounds), median wall time of
# each in ms. The commands: `--help`, a refused flag (`comm --nope`, exit 2),
# a refused value caught by dtbench's own checks (`ddp --batch-size 0`) and
# `report` of a small ddp report.
# Usage: bench/startup.sh [BUILD_DIR] [ROUNDS]   (defaults: build, 20)
set -eu
build=${1:-build}
rounds=${2:-20}
front=$build/dtbench
torch=$build/dtbench-torch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$front" ddp --model mlp --world-sizes 1 --iters 2 --warmup 1 --threads 1 --json "$work/a.json" >/dev/null 2>&1
ms() {  # ms COMMAND...: wall milliseconds of one run (its exit status ignored)
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000))
}
median() { sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.1f", m / 1000}'; }
printf "%-34s %12s %14s %8s\n" "command" "dtbench ms" "dtbench-torch" "ratio"
for cmd in "--help" "comm --nope" "ddp --batch-size 0" "report $work/a.json -o $work/r.html"; do
  : >"$work/f"; : >"$work/t"
  for _ in $(seq "$rounds"); do
    # shellcheck disable=SC2086
    ms "$front" $cmd >>"$work/f"
    # shellcheck disable=SC2086
    ms "$torch" $cmd >>"$work/t"
  done
  f=$(median <"$work/f"); t=$(median <"$work/t")
  printf "%-34s %12s %14s %8s\n" "${cmd%% /*}" "$f" "$t" "$(awk -v f="$f" -v t="$t" 'BEGIN {printf "%.3f", f / t}')"
done
