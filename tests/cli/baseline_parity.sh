#!/usr/bin/env bash
# The "no ddp" baseline and a 1-rank ddp row must do the same work apart from
# what the reducer adds. Checks, on real processes:
#  1. Same resources: every row of a sweep records the same threads per rank
#     and allocator settings; without --threads a 1,2-rank sweep gives the
#     1-rank rows the threads of the 2-rank row; a row that oversubscribes
#     the cores is warned about.
#  2. Same allocator behaviour: minor page faults per iteration of `none`
#     within 2x (+500) of ddp's. The negative control (DTBENCH_MALLOC=default,
#     glibc's dynamic thresholds, resnet50 64x64) must trip this check: there
#     `none` faults its activations in again every iteration.
#  3. Same work: over 5 interleaved rounds (the sweep's order, the reverse,
#     ...), the median of ddp 1N/1R / none in CPU seconds per iteration
#     (extras.cpu_s_per_iter: getrusage over the timed iterations) within
#     [0.85, 1.30], and the same ratio of p50 wall times over the rounds the
#     machine left alone. Loose on purpose (for resnet18 32x32 the Reducer's
#     bucket copies and 1-rank allreduce add ~5-17 % here); the bug this
#     guards against made `none` 1.3-2.3x slower (ratio 0.43-0.77), in CPU
#     time as in wall time (its page faults are system time). Why CPU time
#     holds the claim: a CI run, alone in its timing phase, gave wall ratios
#     [3.343, 1.36, 1.798, 2.458, 0.856] with none's p50 0.37-0.54 s and
#     ddp's 0.41-1.23 s, where this machine gives 0.15-0.19 s for both (the
#     CI machine 2.5-7x slower, its speed moving 3x between rounds). A round counts as left alone when `none`
#     (one thread, nothing to wait for) spent at least 90 % of its p50 on the
#     CPU and the host's steal (extras.host_steal_s_per_iter) stayed under
#     5 % of both rows' p50; with fewer than 3 such rounds the wall times are
#     printed, not compared. When the rounds' CPU-time ratios themselves
#     differ by more than 1.5x (a machine whose speed moves under the test:
#     CPU time grows too when other guests take the caches) and their
#     median is not below 0.85, no time is compared; a median below 0.85
#     (the bug's direction: its rounds gave 0.43-0.77, a 1.8x spread) fails
#     whatever the spread. The same work gives ratios within ~1.1x of each
#     other here. CI runs this test with nothing beside it (label
#     "timing", .ci/run). The tight goal (0.98-1.02 on resnet50) is a
#     benchmark: docs/PERFORMANCE.md.
# Usage: baseline_parity.sh path/to/dtbench
set -eu
DTBENCH=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
model=(--model resnet18 --image-size 32 --batch-size 32 --iters 8 --warmup 2 --threads 1)

rows() {  # report -> "reducer p50 faults threads malloc cpu steal" lines (seconds per iteration)
  python3 - "$1" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    e = r["extras"]
    print(r["reducer"], r["summary"]["p50"], e["minor_faults_per_iter"],
          r["threads"], r["malloc"], e["cpu_s_per_iter"], e["host_steal_s_per_iter"])
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

def load(name):  # reducer -> (p50, faults, threads, malloc, cpu, steal)
    rows = {}
    for l in open(f"{work}/{name}.rows"):
        f = l.split()
        rows[f[0]] = (float(f[1]), float(f[2]), f[3], f[4], float(f[5]), float(f[6]))
    return rows

def faults_ok(r):
    return r["none"][1] <= 2 * r["ddp"][1] + 500

def lost(row):  # shares of the p50: beyond the process's CPU time; the host's steal
    p50, _, _, _, cpu, steal = row
    return max(0.0, p50 - cpu) / p50, max(0.0, steal) / p50

wall, cpu, quiet, report = [], [], [], []
for k in (1, 2, 3, 4, 5):
    r = load(f"r{k}")
    assert set(r) == {"none", "ddp"}, r
    assert r["none"][2:4] == r["ddp"][2:4], ("threads/malloc differ", r)
    assert faults_ok(r), ("none faults more than ddp", r)
    wall.append(r["ddp"][0] / r["none"][0])
    cpu.append(r["ddp"][4] / r["none"][4])
    # `none` runs one thread with nothing to wait for: wall time beyond its
    # CPU time, or any steal, is the machine's, not the program's.
    none_wait, none_steal = lost(r["none"])
    _, ddp_steal = lost(r["ddp"])
    calm = none_wait < 0.10 and max(none_steal, ddp_steal) < 0.05
    if calm:
        quiet.append(wall[-1])
    report.append(f"r{k}: wall {wall[-1]:.3f} cpu {cpu[-1]:.3f} none waits {none_wait:.0%}"
                  f" steal {none_steal:.0%}/{ddp_steal:.0%}{'' if calm else ' (machine busy)'}")
print("rounds (ddp 1N/1R / none):", "; ".join(report))
ctl = load("ctl")
assert ctl["none"][3] == "default", ctl
assert ctl["none"][1] > 1000, ("negative control: glibc defaults should fault in 'none'", ctl)
m_cpu = statistics.median(cpu)
print(f"ok: control (DTBENCH_MALLOC=default) faults none {ctl['none'][1]} vs ddp {ctl['ddp'][1]}")
# The same work gives the same ratio round after round; ratios that differ
# by more than 1.5x between rounds say the machine's speed moved under the
# test (CPU time too grows when other guests take the caches and memory
# bandwidth), and then no round can stand for the others.
# The bug's direction (none slower: a median under 0.85) fails whatever the
# spread: its own rounds gave 0.43-0.77, a 1.8x spread.
spread = max(cpu) / min(cpu)
if spread > 1.5 and m_cpu >= 0.85:
    print(f"note: times not compared: CPU-time ratios {[round(x, 3) for x in cpu]} differ {spread:.2f}x between"
          " rounds (the machine's speed moved); the page faults above hold the claim")
    sys.exit(0)
assert 0.85 <= m_cpu <= 1.30, f"ddp/none median CPU-time ratio {m_cpu:.3f} outside [0.85, 1.30]"
print(f"ok: CPU seconds per iteration, ddp / none median {m_cpu:.3f} (rounds within {spread:.2f}x)")
if len(quiet) >= 3:
    m = statistics.median(quiet)
    assert 0.85 <= m <= 1.30, f"ddp/none median wall-time ratio {m:.3f} outside [0.85, 1.30] over {len(quiet)} quiet rounds"
    print(f"ok: wall time, ddp / none median {m:.3f} over {len(quiet)} quiet rounds")
else:
    print(f"note: wall time not compared: the machine took time from {5 - len(quiet)} of 5 rounds"
          f" (wall ratios {[round(x, 3) for x in wall]}); the CPU-time ratio holds the claim")
PY
