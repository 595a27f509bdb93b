#!/usr/bin/env bash
# `--reducer horovod` beside real Horovod 0.28.1 (scripts/horovod.sh installs
# it into .deps/horovod; HOROVOD_HOME names another): at the same fusion
# threshold and cycle time both fuse the MLP's gradients into the same groups
# (count and bytes, in order) in their typical iteration: Horovod's read back
# from its HOROVOD_TIMELINE, dtbench's from its --trace. The cycle time (50
# ms) is longer than a backward, so in most iterations every gradient is
# ready within one cycle and the groups depend on the threshold and the
# order alone. Cases: gloo at 300 KiB (two groups), fp16 compression at the
# same threshold (one group: half the bytes), mpi with fusion off (one
# allreduce per tensor). Exit 77 (skipped) where Horovod is not installed.
# Usage: horovod_peer.sh path/to/dtbench
set -u
D=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HVD=${HOROVOD_HOME:-$ROOT/.deps/horovod}
if ! "$HVD/bin/python" -c 'import horovod.torch' >/dev/null 2>&1; then
  echo "skipped: no Horovod in $HVD (bash scripts/horovod.sh installs horovod 0.28.1, ~5-8 min)"
  exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
. "$ROOT/tests/cli/check_lib.sh"

# The typical iteration's groups (the most frequent list of group bytes).
mode() { python3 -c 'import collections,json,sys; its=json.loads(sys.argv[1]); print(json.dumps(collections.Counter(map(tuple, its)).most_common(1)[0][0]))' "$1"; }

horovod_groups() {  # controller threshold_bytes compression
  HOROVOD_TIMELINE=$tmp/hvd.json HOROVOD_CYCLE_TIME=50 HOROVOD_FUSION_THRESHOLD=$2 \
    PATH="$HVD/bin:$PATH" timeout 120 horovodrun -np 2 --"$1" "$HVD/bin/python" \
    "$ROOT/bench/peers/horovod_synthetic.py" --model mlp --width 64 --batch-size 32 --iters 8 \
    --warmup 2 --compression "$3" 2>"$tmp/hvd.err" |
    sed -n 's/^\[\([0-9]*,\)\{0,1\}0\]<stdout>://p' | python3 -c 'import json,sys; print(json.dumps(json.JSONDecoder().raw_decode(sys.stdin.readline())[0]["groups"]))'
}

dtbench_groups() {  # backend threshold_bytes compression
  "$D" ddp --model mlp --width 64 --batch-size 32 --iters 8 --warmup 2 --threads 1 --reducer horovod \
    --cycle-time-ms 50 --fusion-threshold-mb "$(python3 -c "print($2 / 1048576)")" --compression "$3" \
    --backend "$1" --world-sizes 2 --no-baseline --trace "$tmp/dt.json" --trace-iters 10 >"$tmp/dt.out" 2>&1 || {
    cat "$tmp/dt.out"; return 1; }
  python3 - "$tmp/dt.1N-2R.json" <<'EOF'
import collections, json, sys
its = collections.defaultdict(dict)
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e.get("cat") == "collective" and e.get("ph") == "b" and e["pid"] == 1:  # rank 0
        its[e["args"]["iteration"]][e["args"]["bucket"]] = e["args"]["bytes"]
print(json.dumps([[g[b] for b in sorted(g)] for _, g in sorted(its.items())]))
EOF
}

check() {  # name backend threshold compression expected_groups
  local h d
  h=$(horovod_groups "$2" "$3" "$4") || { fail "$1: Horovod did not run: $(tail -3 "$tmp/hvd.err")"; return; }
  d=$(dtbench_groups "$2" "$3" "$4") || { fail "$1: dtbench did not run"; return; }
  local hm dm; hm=$(mode "$h"); dm=$(mode "$d")
  echo "$1: Horovod's groups per iteration $h; dtbench's $d"
  if [ "$hm" = "$dm" ]; then ok "$1: the same fused groups as Horovod: $dm"; else fail "$1: Horovod fuses $hm, dtbench $dm"; fi
  local n; n=$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])))' "$dm")
  if [ "$n" = "$5" ]; then ok "$1: $n group(s)"; else fail "$1: $n group(s), expected $5"; fi
}

check "gloo, 300 KiB" gloo 307200 none 2
check "gloo, 300 KiB, fp16" gloo 307200 fp16 1
check "mpi, fusion off" mpi 0 none 6
finish
