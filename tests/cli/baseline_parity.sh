#!/usr/bin/env bash
# The "no ddp" baseline and a 1-rank ddp row must do the same work apart from
# what the reducer adds (issue 19). Checks, on real processes:
#  1. Same resources: every row of a sweep records the same threads per rank
#     and allocator settings; without --threads a 1,2-rank sweep gives the
#     1-rank rows the threads of the 2-rank row; a row that oversubscribes
#     the cores is warned about.
#  2. Same allocator behaviour: minor page faults per iteration of `none`
#     within 2x (+500) of ddp's. The negative control (DTBENCH_MALLOC=default,
#     glibc's dynamic thresholds, resnet50 64x64) must trip this check: there
#     `none` faults its activations in again every iteration.
#  3. Same time: over 5 interleaved rounds (the sweep's order, the reverse,
#     ...), median p50 of ddp 1N/1R / none within [0.85, 1.30]. Loose on
#     purpose (a 2-core VM; for resnet18 32x32 the Reducer's bucket copies and
#     1-rank allreduce add ~10-15 %); the bug this guards against made `none`
#     1.3-2.3x slower (ratio 0.43-0.77). The VM's speed drifts between runs:
#     on 2026-11-25, alone and pinned to one core, single rounds gave ratios
#     0.80-1.20 (none's forward pass 0.070 s in one process, 0.094 s in the
#     next, steady over all its iterations), and a CI run beside a build gave
#     [0.744, 0.884, 1.429]: hence 5 rounds, the lower bound 0.85, and CI runs
#     this test with nothing beside it (label "timing", .ci/run). The tight
#     goal (0.98-1.02 on resnet50) is a benchmark: docs/PERFORMANCE.md.
# Usage: baseline_parity.sh path/to/dtbench
set -eu
DTBENCH=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
model=(--model resnet18 --image-size 32 --batch-size 32 --iters 8 --warmup 2 --threads 1)

rows() {  # report -> "reducer p50 faults threads malloc" lines
  python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    print(r["reducer"], r["summary"]["p50"], r["extras"]["minor_faults_per_iter"],
          r["threads"], r["malloc"])
PY
}

# ---- 1. threads per rank across a sweep; the oversubscription warning ----
"$DTBENCH" ddp --model mlp --width 32 --num-classes 10 --batch-size 4 --iters 2 --warmup 1 \
  --world-sizes 1,2 --json "$work/sweep.json" >"$work/sweep.out" 2>"$work/sweep.err"
python3 - "$work/sweep.json" "$(nproc)" <<'PY'
import json, sys
doc, cores = json.load(open(sys.argv[1])), int(sys.argv[2])
runs = doc["runs"]
want = max(1, cores // 2)
got = [(r["label"], r["threads"], r["extras"]["threads"]) for r in runs]
assert [g[0] for g in got] == ["no ddp", "1N/1R", "1N/2R"], got
assert all(t == want and e == want for _, t, e in got), (got, want)
assert len({r["malloc"] for r in runs}) == 1 and runs[0]["malloc"] == doc["env"]["malloc"]["mode"]
assert doc["config"]["threads"] == want, doc["config"]["threads"]
print("ok: threads per rank", got)
PY
grep -q 'threads/rank' "$work/sweep.out" || { echo "FAIL: console lacks threads/rank"; exit 1; }
if grep -q oversubscribed "$work/sweep.err"; then echo "FAIL: auto threads oversubscribed"; exit 1; fi
cores=$(nproc)
"$DTBENCH" ddp --model mlp --width 32 --num-classes 10 --batch-size 4 --iters 2 --warmup 1 \
  --world-sizes 2 --no-baseline --threads "$cores" >/dev/null 2>"$work/over.err"
grep -q "2 rank(s) x $cores intra-op thread(s) = $((2 * cores)) threads on $cores core(s): that row is oversubscribed" \
  "$work/over.err" || { echo "FAIL: no oversubscription warning"; cat "$work/over.err"; exit 1; }
echo "ok: oversubscription warned"

# ---- 2 + 3. interleaved rounds ----
for round in 1 2 3 4 5; do
  if [ $((round % 2)) = 1 ]; then  # the sweep: none first, then ddp
    "$DTBENCH" ddp "${model[@]}" --world-sizes 1 --json "$work/r$round.json" >/dev/null 2>&1
    rows "$work/r$round.json" >"$work/r$round.rows"
  else                             # reversed: ddp first, then none
    "$DTBENCH" ddp "${model[@]}" --world-sizes 1 --no-baseline --json "$work/d$round.json" >/dev/null 2>&1
    "$DTBENCH" ddp "${model[@]}" --world-sizes 1 --reducer none --json "$work/n$round.json" >/dev/null 2>&1
    { rows "$work/n$round.json"; rows "$work/d$round.json"; } >"$work/r$round.rows"
  fi
  cat "$work/r$round.rows"
done
# The control on resnet50 64x64: its activations are large enough that glibc's
# dynamic thresholds re-fault them every iteration without fail (5,000-30,000
# faults/iter in `none` seen, against the tuned rows' tens to ~120). Whether the
# ddp row faults too under the defaults depends on what else the process
# holds (it did not, then did once each rank also ran the store heartbeat's
# thread: ~12,000 in the 2.11 build), so the control checks `none` alone.
# With resnet18 32x32 the effect is small and came and went between machines
# (760 vs 18 faults/iter).
ctl_model=(--model resnet50 --image-size 64 --batch-size 16 --iters 5 --warmup 2 --threads 1)
DTBENCH_MALLOC=default "$DTBENCH" ddp "${ctl_model[@]}" --world-sizes 1 --json "$work/ctl.json" >/dev/null 2>&1
rows "$work/ctl.json" >"$work/ctl.rows"

python3 - "$work" <<'PY'
import statistics, sys
work = sys.argv[1]

def load(name):
    return {l.split()[0]: l.split()[1:] for l in open(f"{work}/{name}.rows")}

def faults_ok(r):
    return float(r["none"][1]) <= 2 * float(r["ddp"][1]) + 500

ratios = []
for k in (1, 2, 3, 4, 5):
    r = load(f"r{k}")
    assert set(r) == {"none", "ddp"}, r
    assert r["none"][2:] == r["ddp"][2:], ("threads/malloc differ", r)
    assert faults_ok(r), ("none faults more than ddp", r)
    ratios.append(float(r["ddp"][0]) / float(r["none"][0]))
ctl = load("ctl")
assert ctl["none"][3] == "default", ctl
assert float(ctl["none"][1]) > 1000, ("negative control: glibc defaults should fault in 'none'", ctl)
m = statistics.median(ratios)
print(f"ok: ddp 1N/1R / none per round {[round(x, 3) for x in ratios]}, median {m:.3f};"
      f" control (DTBENCH_MALLOC=default) faults none {ctl['none'][1]} vs ddp {ctl['ddp'][1]}")
assert 0.85 <= m <= 1.30, f"ddp/none median ratio {m:.3f} outside [0.85, 1.30]"
PY
