#!/usr/bin/env bash
# `--trace` and `--inject-delay` end to end, 2 ranks over gloo: the Chrome
# trace of every reducer parses, names every rank, holds every bucket's
# collective (launch and completion) of every traced iteration on every
# rank; sync shows no overlap, overlap/ddp do on a model with several
# buckets, overlap on MPI (blocking calls) does not; an injected 50 ms delay on rank 1 names rank 1 the straggler and
# grows rank 0's exposed communication by about 50 ms; compare writes one
# trace per point; bad values get one line and exit 2.
# Usage: trace_cli.sh path/to/dtbench
set -u
DTBENCH=$1
. "$(dirname "$0")/check_lib.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
common=(--model resnet18 --image-size 32 --num-classes 10 --batch-size 4 --iters 4 --warmup 2
        --threads 1 --bucket-cap-mb 5 --timeout 60s)

check_trace() {  # trace-file report-file label reducer
  python3 - "$@" <<'PY'
import json, sys
trace, report, label, reducer = sys.argv[1:]
doc = json.load(open(trace))
ev = doc["traceEvents"]
run = [r for r in json.load(open(report))["runs"] if r["label"] == label][0]
t = run["extras"]["trace"]
assert t["file"] == trace, (t["file"], trace)
world, iters = run["world_size"], t["iterations"]["count"]
assert iters == 3, iters
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(names) == list(range(1, world + 1)), names  # rank R is pid R + 1 (Perfetto: not pid 0)
assert all(names[p].startswith(f"rank {p - 1} (node 0, ") for p in names), names
assert all(isinstance(e["pid"], int) and isinstance(e.get("tid", 0), int) for e in ev)
begins = {}
for e in ev:
    if e["ph"] in "be" and e["cat"] == "collective":
        begins.setdefault(e["id"], {})[e["ph"]] = e["ts"]
assert all(len(v) == 2 and v["e"] >= v["b"] for v in begins.values()), "unpaired collective"
per = {}
for e in ev:
    if e["ph"] == "b":
        a = e["args"]; per.setdefault((e["pid"], a["iteration"]), set()).add(a["bucket"])
# ddp's Reducer rebuilds its buckets after the first iteration; the traced
# ones (after warm-up) all have the same number on every rank.
counts = {k: len(v) for k, v in per.items()}
assert len(counts) == world * iters, counts
n = set(counts.values())
assert len(n) == 1 and min(n) >= 2, counts
assert all(v == set(range(min(n))) for v in per.values()), per
phases = {e["name"] for e in ev if e["ph"] == "X" and e["cat"] == "phase"}
assert {"forward", "backward", "comm wait", "optimizer"} <= phases, phases
assert t["per_rank"] and len(t["per_rank"]) == world
assert 0 <= t["overlap"] <= 1 and t["collectives"] == iters * min(n)
# One host: every rank reads rank 0's steady clock, no offset estimated.
assert doc["otherData"]["clock_sync"]["max_bound_us"] == 0, doc["otherData"]["clock_sync"]
assert all(c["offset_us"] == 0 for c in doc["otherData"]["clock_sync"]["ranks"]), doc["otherData"]["clock_sync"]
print(f"{reducer}: {min(n)} buckets x {iters} iterations x {world} ranks, overlap {t['overlap']:.2f}")
print("OVERLAP", t["overlap"])
PY
}

for reducer in ddp overlap sync; do
  if "$DTBENCH" ddp "${common[@]}" --reducer $reducer --world-sizes 2 --no-baseline \
       --trace "$work/$reducer.json" --trace-iters 3 --json "$work/$reducer-report.json" \
       >"$work/$reducer.out" 2>&1 &&
     out=$(check_trace "$work/$reducer.1N-2R.json" "$work/$reducer-report.json" 1N/2R $reducer); then
    ok "$(echo "$out" | head -1)"
    overlap=$(echo "$out" | sed -n 's/^OVERLAP //p')
    grep -q "trace: $work/$reducer.1N-2R.json" "$work/$reducer.out" &&
      grep -q "overlap .*%, exposed communication" "$work/$reducer.out" &&
      ok "$reducer: the console names the file and the breakdown" ||
      fail "$reducer: console lines missing: $(cat "$work/$reducer.out")"
    if [ $reducer = sync ]; then
      python3 -c "import sys; sys.exit(0 if float('$overlap') < 0.05 else 1)" &&
        ok "sync: overlap $overlap ~ 0" || fail "sync: overlap $overlap, expected ~0"
    else
      python3 -c "import sys; sys.exit(0 if float('$overlap') > 0.1 else 1)" &&
        ok "$reducer: overlap $overlap > 0" || fail "$reducer: overlap $overlap, expected > 0.1"
    fi
  else
    fail "$reducer trace: $(tail -5 "$work/$reducer.out") $out"
  fi
done

# A blocking backend: MPI's allreduce returns when it is done, so the hook
# that launches it in backward holds the model's thread; nothing overlaps
# (the phase spans alone said 96 %), and the trace draws the call.
if "$DTBENCH" ddp "${common[@]}" --reducer overlap --backend mpi --world-sizes 2 --no-baseline \
     --trace "$work/mpi.json" --trace-iters 3 --json "$work/mpi-report.json" >"$work/mpi.out" 2>&1 &&
   out=$(check_trace "$work/mpi.1N-2R.json" "$work/mpi-report.json" 1N/2R overlap); then
  overlap=$(echo "$out" | sed -n 's/^OVERLAP //p')
  python3 -c "import sys; sys.exit(0 if float('$overlap') < 0.05 else 1)" &&
    grep -q '"in call"' "$work/mpi.1N-2R.json" &&
    ok "mpi (blocking): overlap $overlap ~ 0, the calls drawn" ||
    fail "mpi (blocking): overlap $overlap, expected ~0 with 'in call' slices"
else
  fail "mpi trace: $(tail -5 "$work/mpi.out") $out"
fi

# The no-ddp row has a trace too (compute only), named after the row.
"$DTBENCH" ddp "${common[@]}" --reducer overlap --world-sizes 1 --trace "$work/base.json" \
  >"$work/base.out" 2>&1
[ -s "$work/base.no-ddp.json" ] && [ -s "$work/base.1N-1R.json" ] &&
  ok "sweep rows: base.no-ddp.json and base.1N-1R.json" || fail "row trace files: $(ls "$work")"

# A made straggler: rank 1 sleeps 50 ms before every backward. On a model with
# little compute (so that the ranks' own contention for 2 cores adds little),
# rank 1 launches every collective ~50 ms late and rank 0 waits ~50 ms more.
mlp=(--model mlp --width 256 --num-classes 10 --batch-size 4 --iters 4 --warmup 2 --threads 1
     --bucket-cap-mb 0.1 --first-bucket-cap-mb 0.1 --timeout 60s --reducer ddp --world-sizes 2 --no-baseline)
"$DTBENCH" ddp "${mlp[@]}" --trace "$work/nodelay.json" --json "$work/nodelay-report.json" >/dev/null 2>&1
"$DTBENCH" ddp "${mlp[@]}" --inject-delay 1:50 --trace "$work/delay.json" --json "$work/delay-report.json" \
  >"$work/delay.out" 2>&1
python3 - "$work/nodelay-report.json" "$work/delay-report.json" <<'PY' && ok "straggler named" || fail "straggler: $(cat "$work/delay.out")"
import json, sys
base, delay = (json.load(open(p))["runs"][0]["extras"]["trace"] for p in sys.argv[1:])
assert delay["straggler"] == 1, delay["verdict"]
r1 = delay["per_rank"][1]
assert r1["launched_last_share"] >= 0.9 and 40 <= r1["mean_lateness_ms"] <= 70, r1
# The sleep is before backward: its lateness is in reaching the ready marks.
cause = r1["lateness_cause_ms"]
assert max(cause, key=cause.get) == "to_ready" and 30 <= cause["to_ready"] <= 70, cause
assert abs(sum(cause.values()) - r1["mean_lateness_ms"]) < 1e-6, (cause, r1["mean_lateness_ms"])
assert "mostly because it reached each bucket's ready mark later" in delay["verdict"], delay["verdict"]
# Rank 1's sleep is idle time, named as the injected delay.
parts = r1["idle_parts_ms_p50"]
assert 40 <= parts["delay"] <= 70 and max(parts, key=parts.get) == "delay", parts
grow = delay["per_rank"][0]["exposed_comm_ms_p50"] - base["per_rank"][0]["exposed_comm_ms_p50"]
assert 30 <= grow <= 70, f"rank 0's exposed communication grew by {grow:.1f} ms, expected ~50"
# That growth is waiting for rank 1's launches, not moving data: split at
# each collective's last launch, rank 0 waits ~50 ms, rank 1 hardly at all.
w0, w1 = (delay["per_rank"][r]["comm_waiting_ms_p50"] for r in (0, 1))
assert 30 <= w0 <= 70 and w1 < 10, f"waiting: rank 0 {w0:.1f} ms, rank 1 {w1:.1f} ms"
assert all(0 <= p["comm_waiting_ms_p50"] <= p["comm_ms_p50"] for p in delay["per_rank"])
assert all(b["waiting_ms_p50"] >= 0 and b["moving_ms_p50"] >= 0 for b in delay["buckets"])
print(delay["verdict"], f"; rank 0 exposed +{grow:.1f} ms, waiting {w0:.1f} ms (rank 1 {w1:.1f})")
PY
grep -q "straggler: rank 1 (node 0)" "$work/delay.out" && grep -q "(waiting for a later rank [0-9.]*, moving [0-9.]*)" "$work/delay.out" &&
  ok "console names rank 1 and splits communication" ||
  fail "no straggler line: $(cat "$work/delay.out")"

# diff puts overlap and exposed communication beside the times.
"$DTBENCH" diff "$work/nodelay-report.json" "$work/delay-report.json" >"$work/diff.out" 2>&1 &&
  grep -q "^Traced rows" "$work/diff.out" &&
  grep -qE "^ +1N/2R +[0-9]+% +[0-9]+% +[0-9.]+ +[0-9.]+ +\+[0-9.]+$" "$work/diff.out" &&
  ok "diff: traced rows side by side" || fail "diff: $(cat "$work/diff.out")"

# compare: one trace per grid point, named after it.
"$DTBENCH" compare --models resnet18 --image-size 32 --num-classes 10 --batch-size 4 --iters 2 \
  --warmup 1 --threads 1 --world-sizes 2 --reducers ddp,sync --bucket-cap-mb 5 --no-progress \
  --jsonl "$work/c.jsonl" --trace "$work/cmp.json" --trace-iters 1 >"$work/cmp.out" 2>&1
[ -s "$work/cmp.resnet18-2R-ddp-5MB.json" ] && [ -s "$work/cmp.resnet18-2R-sync-5MB.json" ] &&
  grep -q "trace: $work/cmp.resnet18-2R-sync-5MB.json" "$work/cmp.out" &&
  ok "compare: a trace per point" || fail "compare traces: $(ls "$work") $(tail -3 "$work/cmp.out")"

# The traces guide's lines, exactly (default iterations), in their own directory.
mkdir "$work/readme"
bindir=$(dirname "$(readlink -f "$DTBENCH")")
if (cd "$work/readme" && PATH="$bindir:$PATH" && set -e &&
    dtbench ddp --model resnet18 --image-size 32 --batch-size 8 --world-sizes 2 --no-baseline --reducer overlap --bucket-cap-mb 5 --trace trace.json &&
    dtbench ddp --model resnet18 --image-size 32 --batch-size 8 --world-sizes 2 --no-baseline --inject-delay 1:50 --trace straggler.json &&
    dtbench report trace.1N-2R.json -o timeline.html) >"$work/readme.out" 2>&1 &&
   grep -q "straggler: rank 1 (node 0)" <(grep -A4 "trace: straggler.1N-2R.json" "$work/readme.out") &&
   grep -q 'class="chart"' "$work/readme/timeline.html"; then
  ok "traces guide's --trace lines"
else
  fail "traces guide's --trace lines: $(grep -A4 "trace: straggler" "$work/readme.out") $(tail -5 "$work/readme.out")"
fi

# Bad values: one line, exit 2, nothing started.
bad() {  # expected-text args...
  local want=$1; shift
  "$DTBENCH" ddp "${common[@]}" "$@" >"$work/bad.out" 2>&1; local rc=$?
  if [ $rc -eq 2 ] && grep -q -- "$want" "$work/bad.out" && [ "$(wc -l <"$work/bad.out")" -le 2 ]; then
    ok "refused: $* -> $want"
  else
    fail "$* gave rc $rc: $(cat "$work/bad.out")"
  fi
}
bad "no rank 2 in --world-sizes" --world-sizes 1,2 --inject-delay 2:50
bad "expected RANK:MS" --inject-delay fifty
bad "expected RANK:MS" --inject-delay 1:-5
bad "directory '/nonexistent' does not exist" --trace /nonexistent/t.json
bad "--trace-iters 0" --trace "$work/x.json" --trace-iters 0
finish
