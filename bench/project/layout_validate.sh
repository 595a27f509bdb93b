#!/usr/bin/env bash
# Measured validation of `dtbench project` on layouts (docs/PERFORMANCE.md
# "Projection of layouts: measured here"): one GPT-2 profiled at 1 rank
# (--trace, no layout), a `dtbench comm` allreduce sweep over loopback, then
# `dtbench ddp --tp 2` measured on 2 ranks with each recomputation mode
# (MODES) and `dtbench ddp --pp 2` with each schedule (PP_SCHEDULES, PP_M
# microbatches), each set beside `dtbench project` of the same layout from
# that profile (the measured report as --measured: its p50 and peak).
# ROUNDS rounds, each with its own profile, sweep and measurements; the
# table gives every round's errors, then the medians. Exit 1 when a median
# error's magnitude exceeds LIMIT_PCT (time) or MEM_LIMIT_PCT (peak memory).
# Usage: layout_validate.sh path/to/dtbench
#   MODES=none,full,selective  PP_SCHEDULES= (e.g. 1f1b,gpipe)  PP_M=4  ROUNDS=1  LIMIT_PCT=10  MEM_LIMIT_PCT=10
#   MODEL_ARGS="--layers 4 --width 256 --heads 4 --vocab 4096 --seq-len 128 --batch-size 4"  ITERS=8  WARMUP=2
set -u
DT=$(readlink -f "$1")
MODES=${MODES-none,full,selective}
PP_SCHEDULES=${PP_SCHEDULES:-}
PP_M=${PP_M:-4}
ROUNDS=${ROUNDS:-1}
LIMIT_PCT=${LIMIT_PCT:-10}
MEM_LIMIT_PCT=${MEM_LIMIT_PCT:-10}
MODEL_ARGS=${MODEL_ARGS:---layers 4 --width 256 --heads 4 --vocab 4096 --seq-len 128 --batch-size 4}
ITERS=${ITERS:-8}
WARMUP=${WARMUP:-2}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
# shellcheck disable=SC2206
M=(--model gpt2 $MODEL_ARGS --optimizer adamw --threads 1 --iters "$ITERS" --warmup "$WARMUP")
fail() { echo "layout_validate: $*" >&2; exit 1; }
: > errors.tsv
# The profile just before each measurement (this VM drifts by tens of
# percent over minutes), taken as the two ranks will compute: a second copy
# on the other core beside it, since both share the machine's caches and
# memory (docs/PERFORMANCE.md "Projection").
profile() {  # NAME
  taskset -c 1 "$DT" ddp "${M[@]}" --world-sizes 1 --json "$1.peer.json" > "$1.peer.out" 2>&1 &
  local peer=$!
  taskset -c 0 "$DT" ddp "${M[@]}" --world-sizes 1 --trace "$1.trace.json" --json "$1.json" > "$1.out" 2>&1 ||
    fail "the profile failed: $(tail -n 3 "$1.out")"
  wait "$peer" || fail "the profile's second copy failed: $(tail -n 3 "$1.peer.out")"
}
for round in $(seq 1 "$ROUNDS"); do
  "$DT" comm --nproc 2 --collective allreduce -b 16K -e 4M -f 4 -n 20 -w 3 --bind core \
    --json "comm$round.json" > "comm$round.out" 2>&1 || fail "the sweep failed: $(tail -n 3 "comm$round.out")"
  for mode in ${MODES//,/ }; do
    profile "prof-$mode-$round"
    "$DT" ddp "${M[@]}" --bind core --tp 2 --world-sizes 2 --activation-checkpointing "$mode" --json "tp-$mode-$round.json" \
      > "tp-$mode-$round.out" 2>&1 || fail "tp 2 ($mode) failed: $(tail -n 3 "tp-$mode-$round.out")"
    "$DT" project --profile "prof-$mode-$round.json" --measured "tp-$mode-$round.json" --comm-intra "comm$round.json" \
      --ranks-per-node 2 --tp 2 --world-sizes 2 --optimizer adamw --activation-checkpointing "$mode" \
      --json "proj-$mode-$round.json" > "proj-$mode-$round.out" 2>&1 ||
      fail "the projection failed: $(tail -n 3 "proj-$mode-$round.out")"
    python3 - "proj-$mode-$round.json" "$mode" "$round" >> errors.tsv <<'PY' || fail "no measured row beside the projection ($mode)"
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
assert r["measured_s"] and r["measured_peak_bytes"], r
print(f'{sys.argv[2]}\t{sys.argv[3]}\t{r["iteration_s"]}\t{r["measured_s"]}\t{r["memory"]["total_bytes"]}\t{r["measured_peak_bytes"]}')
PY
  done
  for sched in ${PP_SCHEDULES//,/ }; do
    profile "prof-pp-$sched-$round"
    "$DT" ddp "${M[@]}" --bind core --pp 2 --pp-schedule "$sched" --microbatches "$PP_M" --reducer sync --world-sizes 2 \
      --json "pp-$sched-$round.json" > "pp-$sched-$round.out" 2>&1 ||
      fail "pp 2 ($sched) failed: $(tail -n 3 "pp-$sched-$round.out")"
    "$DT" project --profile "prof-pp-$sched-$round.json" --measured "pp-$sched-$round.json" --comm-intra "comm$round.json" \
      --ranks-per-node 2 --pp 2 --pp-schedule "$sched" --microbatches "$PP_M" --world-sizes 2 --optimizer adamw \
      --json "proj-pp-$sched-$round.json" > "proj-pp-$sched-$round.out" 2>&1 ||
      fail "the projection failed: $(tail -n 3 "proj-pp-$sched-$round.out")"
    python3 - "proj-pp-$sched-$round.json" "pp-$sched" "$round" >> errors.tsv <<'PY' || fail "no measured row beside the projection (pp $sched)"
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
assert r["measured_s"] and r["measured_peak_bytes"], r
print(f'{sys.argv[2]}\t{sys.argv[3]}\t{r["iteration_s"]}\t{r["measured_s"]}\t{r["memory"]["total_bytes"]}\t{r["measured_peak_bytes"]}')
PY
  done
done
python3 - errors.tsv "$LIMIT_PCT" "$MEM_LIMIT_PCT" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
limit, mem_limit = float(sys.argv[2]), float(sys.argv[3])
print(f"{'mode':<10} {'round':>5} {'projected ms':>13} {'measured ms':>12} {'error':>7} {'projected MiB':>14} {'measured MiB':>13} {'error':>7}")
by = {}
for mode, rnd, p, m, pm, mm in rows:
    p, m, pm, mm = map(float, (p, m, pm, mm))
    e, em = 100 * (p / m - 1), 100 * (pm / mm - 1)
    by.setdefault(mode, []).append((e, em))
    print(f"{mode:<10} {rnd:>5} {p*1e3:>13.2f} {m*1e3:>12.2f} {e:>+6.1f}% {pm/2**20:>14.2f} {mm/2**20:>13.2f} {em:>+6.1f}%")
bad = []
for mode, errs in by.items():
    t = statistics.median(e for e, _ in errs)
    mem = statistics.median(em for _, em in errs)
    print(f"median {mode}: time {t:+.1f}%, memory {mem:+.1f}%")
    if abs(t) > limit: bad.append(f"{mode} time {t:+.1f}% beyond {limit}%")
    if abs(mem) > mem_limit: bad.append(f"{mode} memory {mem:+.1f}% beyond {mem_limit}%")
if bad:
    sys.exit("layout_validate: " + "; ".join(bad))
print("layout_validate: every median within the limits")
PY
