#!/usr/bin/env bash
# `dtbench project` at one rank against its own measurement: the projection
# is the profile's compute plus DDP's fixed cost, so it must land within 10%
# of the slower of the measured 1-rank rows (ddp and "no ddp", p50) of the
# same run. A timing check: it runs alone (label `timing`); beside a
# compiler, the traced phases and the rows drift apart (CI run of 8470e11:
# 38.7 ms projected vs 50.4 ms measured under the wheel's build).
# Usage: project_validity.sh path/to/dtbench
set -u
DT=$(readlink -f "$1")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
"$DT" ddp --model mlp --batch-size 32 --world-sizes 1 --threads 1 --iters 8 --warmup 2 \
  --trace trace.json --json profile.json >ddp.out 2>&1 || { tail -n 3 ddp.out; exit 1; }
"$DT" project --profile profile.json --intra-bw 10GB/s --intra-latency 5us --world-sizes 1 \
  --json projection.json >project.out 2>project.err || { cat project.err; exit 1; }
one=$(json projection.json "d['rows'][0]['iteration_s']")
meas=$(json profile.json "max(r['summary']['p50'] for r in d['runs'] if r['world_size']==1)")
if python3 -c "import sys; sys.exit(0 if abs($one/$meas-1) < 0.10 else 1)"; then
  echo "ok: 1-rank projection ($one s) within 10% of the slower 1-rank row ($meas s)"
else
  echo "FAIL: 1-rank projection ($one s) not within 10% of the slower 1-rank row ($meas s)"
  exit 1
fi
