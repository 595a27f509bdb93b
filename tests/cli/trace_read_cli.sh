#!/usr/bin/env bash
# `dtbench trace read` on real PyTorch profiler traces (tests/data/traces):
# a 2-rank Gloo DDP run of resnet18 made with torch 2.11 on the CPU and a
# 1-GPU NCCL run made on an H200. Checks: the figures against what the run
# must hold (every iteration allreduces the model's 11,689,512 float32
# gradients: 46,758,048 bytes per rank), the communication of each step
# recomputed here from the raw events, and each malformed input refused in
# one line (exit 2, nothing on stdout): truncated gzip, truncated JSON, a
# missing rank (read with --partial), ranks that disagree on a collective,
# two traces of one rank, a file that is no trace, a path that is not there.
#   trace_read_cli.sh path/to/dtbench
set -u
D=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
data=$(cd "$here/../data/traces" && pwd)
. "$here/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
gloo=$data/torch_ddp_gloo_resnet18_2ranks

"$D" trace read "$gloo" --json "$tmp/g.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ "$rc" -eq 0 ] && [ ! -s "$tmp/err" ]; then ok "reads the 2-rank Gloo trace"; else fail "gloo -> exit $rc: $(cat "$tmp/err")"; fi
cat "$tmp/out"
grep -q "^# dtbench trace read: 2 of 2 rank(s), backend gloo, cpu, ProfilerStep#0-2" "$tmp/out" &&
  ok "header: ranks, backend, device, iterations" || fail "header: $(head -1 "$tmp/out")"
[ "$(json "$tmp/g.json" "sorted({s['bytes'] for r in j['ranks'] for s in r['steps']})")" = "[46758048]" ] &&
  [ "$(json "$tmp/g.json" "sorted({s['collectives'] for r in j['ranks'] for s in r['steps']})")" = "[6]" ] &&
  ok "every rank's every iteration allreduces resnet18's 46,758,048 gradient bytes in 6 buckets" ||
  fail "bytes per step: $(json "$tmp/g.json" "[[s['bytes'], s['collectives']] for r in j['ranks'] for s in r['steps']]")"
[ "$(json "$tmp/g.json" "[(k['name'], k['dtype'], k['count'], k['group_size']) for k in j['classes']][0]")" = \
  "('allreduce', 'float32', 6, 2)" ] && [ "$(json "$tmp/g.json" "len(j['classes'])")" = 6 ] &&
  ok "six bucket sizes, each 3 iterations x 2 ranks" || fail "classes: $(json "$tmp/g.json" "j['classes']")"
# Each step's communication from the raw events, independently: the union of
# Gloo's all_reduce runs paired in order with the step's c10d issues.
python3 - "$gloo" "$tmp/g.json" <<'PY' && ok "each step's communication recomputed from the raw events" || fail "recomputed communication"
import gzip, json, sys
out = json.load(open(sys.argv[2]))
for r in out["ranks"]:
    ev = json.load(gzip.open(f"{sys.argv[1]}/ddp_gloo.json.rank{r['rank']}.gz"))["traceEvents"]
    steps = sorted((e for e in ev if e.get("name", "").startswith("ProfilerStep#") and e.get("cat") == "user_annotation"),
                   key=lambda e: e["ts"])
    issues = sorted((e for e in ev if e.get("name") == "c10d::allreduce_"), key=lambda e: e["ts"])
    runs = sorted((e for e in ev if e.get("name") == "gloo:all_reduce"), key=lambda e: e["ts"])
    assert len(issues) == len(runs) == 18, (len(issues), len(runs))
    for s, got in zip(steps, r["steps"]):
        spans = sorted((b["ts"], b["ts"] + b["dur"]) for a, b in zip(issues, runs) if s["ts"] <= a["ts"] < s["ts"] + s["dur"])
        total, end = 0.0, float("-inf")
        for b, e in spans:
            total += max(0.0, e - max(b, end)); end = max(end, e)
        # Within 0.01 us: timestamps of ~5e12 us hold about a nanosecond in a double.
        assert abs(total - got["comm_us"]) < 0.01, (r["rank"], total, got["comm_us"])
        assert abs(got["overlapped_us"] + got["exposed_us"] - got["comm_us"]) < 0.01, got
        assert 0 < got["exposed_us"] < got["comm_us"], got  # DDP waits for its last bucket
        assert abs(s["dur"] - got["time_us"]) < 0.01 and got["compute_us"] <= got["time_us"], got
PY
# Waiting: each allreduce's runs split at the later rank's start (one host,
# one clock), recomputed from the raw events: the class medians.
python3 - "$gloo" "$tmp/g.json" <<'PY' && ok "waiting split at the last rank's start, recomputed" || fail "waiting recomputed"
import gzip, json, statistics, sys
out = json.load(open(sys.argv[2]))
assert out["split"] is True, out["split_note"]
runs = []
for r in (0, 1):
    ev = json.load(gzip.open(f"{sys.argv[1]}/ddp_gloo.json.rank{r}.gz"))["traceEvents"]
    runs.append(sorted((e for e in ev if e.get("name") == "gloo:all_reduce"), key=lambda e: e["ts"]))
waits = {}
for a, b in zip(*runs):
    size = a["args"]["Input Dims"][0][0] * 4
    last = max(a["ts"], b["ts"])
    waits.setdefault(size, []).extend([last - a["ts"], last - b["ts"]])
for k in out["classes"]:
    assert abs(statistics.median(waits[k["bytes"]]) - k["wait_p50_us"]) < 0.01, (k, waits[k["bytes"]])
PY
# overlap %: the median of each step's own share, as printed.
python3 - "$tmp/g.json" "$tmp/out" <<'PY' && ok "overlap % is the median of each step's share" || fail "overlap % column"
import json, statistics, sys
j = json.load(open(sys.argv[1]))
rows = [l.split() for l in open(sys.argv[2]) if l.split()[:1] in (["0"], ["1"]) and len(l.split()) == 10]
for r, row in zip(j["ranks"], rows):
    want = statistics.median(100 * s["overlapped_us"] / s["comm_us"] for s in r["steps"])
    assert abs(float(row[7]) - want) < 0.051, (row, want)
PY
grep -Eq "^ +0 allreduce +float32 +11\.0 MiB +6 " "$tmp/out" && ok "the table names the first bucket (11.0 MiB, 6 runs)" ||
  fail "table: $(grep allreduce "$tmp/out" | tail -1)"

# dtbench's own --torch-profiler traces (wheel flavour, LibTorch's Kineto):
# GPT-2 (2 layers, width 64, vocab 256, 1,024 positions: 182,016
# parameters) in one DDP bucket; rank 1's last Gloo run was still open when
# the profiler stopped (Kineto: "finished": false): counted without a span.
"$D" trace read "$data/dtbench_torch_profiler_gpt2_2ranks" --json "$tmp/d.json" >"$tmp/out3" 2>&1; rc=$?
[ "$rc" -eq 0 ] && grep -q "^# 1 of 4 collectives have no execution span" "$tmp/out3" &&
  [ "$(json "$tmp/d.json" "sorted({c['in_nelems'] for r in j['ranks'] for c in r['collectives']})")" = "[182016]" ] &&
  [ "$(json "$tmp/d.json" "[c['run_us'] is None for c in j['ranks'][1]['collectives']]")" = "[False, True]" ] &&
  ok "dtbench's --torch-profiler traces: 182,016 gradients a step, the unfinished run without a span" ||
  { fail "dtbench's own traces -> exit $rc"; cat "$tmp/out3"; }

# A --json written into the traces' directory is skipped on the next read.
mkdir -p "$tmp/again"; cp "$gloo"/*.gz "$tmp/again/"; cp "$tmp/g.json" "$tmp/again/job.json"
"$D" trace read "$tmp/again" >"$tmp/o" 2>"$tmp/e" && grep -q "^# skipped .*job.json: a dtbench report (dtbench.job_trace), not a trace" "$tmp/o" &&
  ok "its own --json beside the traces is skipped" || fail "--json beside: $(cat "$tmp/e") $(head -3 "$tmp/o")"

# Rank 1's clock a second ahead: the split is left out, and why.
mkdir -p "$tmp/skew"; cp "$gloo/ddp_gloo.json.rank0.gz" "$tmp/skew/"
python3 - "$gloo/ddp_gloo.json.rank1.gz" "$tmp/skew/r1.json" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
for e in d["traceEvents"]:
    if "ts" in e: e["ts"] += 1e6
json.dump(d, open(sys.argv[2], "w"))
PY
"$D" trace read "$tmp/skew" >"$tmp/out2" 2>&1 && grep -q "^# communication not split into waiting and moving: 18 collective(s) ran on some rank wholly before another rank started them: the ranks' clocks differ" "$tmp/out2" &&
  ok "clocks a second apart: no split, the reason given" || fail "skewed clocks: $(grep -m1 '^# comm' "$tmp/out2")"

# One GPU, NCCL (world of one: no kernel moves data), and its execution
# trace beside it, skipped with the reason.
mkdir -p "$tmp/gpu"; cp "$data"/torch_ddp_nccl_resnet18_h200*.json.gz "$tmp/gpu/"
"$D" trace read "$tmp/gpu" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 0 ] && grep -q "backend nccl, cuda, ProfilerStep#0-1" "$tmp/out" &&
  grep -q "^# skipped .*_et.json.gz: an execution trace (Chakra): not read" "$tmp/out" &&
  grep -Eq "^ +0 +2 .* 2 +46\.76$" "$tmp/out" &&
  ok "an H200 NCCL trace: 2 allreduces a step, 46.76 MB; the execution trace skipped" ||
  { fail "nccl -> exit $rc"; cat "$tmp/out" "$tmp/err"; }

# Malformed input: one line on stderr, exit 2, nothing on stdout.
refused() {  # refused NAME PATTERN ARGS...
  local name=$1 pattern=$2; shift 2
  "$D" trace read "$@" >"$tmp/o" 2>"$tmp/e"; local rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && [ ! -s "$tmp/o" ] && grep -q -- "$pattern" "$tmp/e"; then
    ok "$name -> $(cat "$tmp/e")"
  else
    fail "$name -> exit $rc: $(head -3 "$tmp/e") | stdout $(head -c 200 "$tmp/o")"
  fi
}
mkdir -p "$tmp/trunc" "$tmp/badjson" "$tmp/one" "$tmp/dup" "$tmp/dis" "$tmp/empty"
head -c 60000 "$gloo/ddp_gloo.json.rank1.gz" >"$tmp/trunc/r1.json.gz"; cp "$gloo/ddp_gloo.json.rank0.gz" "$tmp/trunc/"
refused "a truncated gzip" "r1.json.gz: the gzip stream is truncated" "$tmp/trunc"
mkdir -p "$tmp/corrupt" "$tmp/members"
python3 - "$gloo/ddp_gloo.json.rank1.gz" "$tmp/corrupt/r1.json.gz" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
for i in range(5000, 5100): b[i] ^= 0xFF  # a damaged block in the middle
open(sys.argv[2], "wb").write(b)
PY
refused "a corrupt gzip" "r1.json.gz: the gzip stream is corrupt" "$tmp/corrupt/r1.json.gz" "$gloo/ddp_gloo.json.rank0.gz"
# Two gzip members (as `cat a.gz b.gz` makes) are one file: read whole.
gzip -dc "$gloo/ddp_gloo.json.rank1.gz" >"$tmp/r1.json"
head -c 1000000 "$tmp/r1.json" | gzip -c >"$tmp/members/r1.json.gz"
tail -c +1000001 "$tmp/r1.json" | gzip -c >>"$tmp/members/r1.json.gz"
cp "$gloo/ddp_gloo.json.rank0.gz" "$tmp/members/"
"$D" trace read "$tmp/members" >"$tmp/o" 2>"$tmp/e" && grep -q "2 of 2 rank(s)" "$tmp/o" &&
  ok "a gzip of two members is read whole" || fail "two gzip members: $(cat "$tmp/e")"
gzip -dc "$gloo/ddp_gloo.json.rank1.gz" | head -c 100000 >"$tmp/badjson/r1.json"
refused "truncated JSON" "r1.json' is not valid JSON" "$tmp/badjson/r1.json" "$gloo/ddp_gloo.json.rank0.gz"
cp "$gloo/ddp_gloo.json.rank0.gz" "$tmp/one/"
refused "a missing rank" "rank 1 of the world of 2 has no trace (1 of 2 ranks read); --partial" "$tmp/one"
"$D" trace read --partial "$tmp/one" >"$tmp/o" 2>"$tmp/e" && grep -q "1 of 2 rank(s)" "$tmp/o" &&
  ok "--partial reads the rank present" || fail "--partial: $(cat "$tmp/e")"
cp "$gloo/ddp_gloo.json.rank0.gz" "$tmp/dup/a.json.gz"; cp "$gloo/ddp_gloo.json.rank0.gz" "$tmp/dup/b.json.gz"
refused "two traces of one rank" "are both traces of rank 0" "$tmp/dup"
# Rank 1's third bucket one element larger: its issue and its run.
cp "$gloo/ddp_gloo.json.rank0.gz" "$tmp/dis/"
python3 - "$gloo/ddp_gloo.json.rank1.gz" "$tmp/dis/r1.json" <<'PY'
import gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
ev = d["traceEvents"]
for name in ("c10d::allreduce_", "gloo:all_reduce"):
    e = sorted((e for e in ev if e.get("name") == name), key=lambda e: e["ts"])[2]
    dims = e["args"]["Input Dims"]
    if name.startswith("c10d"): dims[0][0][0] += 1
    else: dims[0][0] += 1
json.dump(d, open(sys.argv[2], "w"))
PY
refused "ranks that disagree" \
  "ranks disagree in group 0: collective 3 of ProfilerStep#0 is rank 0's allreduce of 2492416 float32 elements but rank 1's allreduce of 2492417 float32 elements" \
  "$tmp/dis"
# Debian's torch 1.13 (no Kineto) writes the legacy profiler's bare list: its first events, as written.
echo '[{"name": "aten::zeros", "ph": "X", "ts": 124, "dur": 47, "tid": 1, "pid": "CPU functions", "args": {}}, {"name": "ProfilerStep#0", "ph": "X", "ts": 202, "dur": 193665, "tid": 1, "pid": "CPU functions", "args": {}}]' >"$tmp/legacy.json"
refused "torch 1.13's legacy trace" "a bare list of events, as torch's legacy profiler writes without Kineto" "$tmp/legacy.json"
echo '{"traces": []}' >"$tmp/report.json"
refused "a file that is no trace" "neither a PyTorch profiler trace" "$tmp/report.json"
refused "a directory without traces" "no trace in the directory" "$tmp/empty"
refused "a path that is not there" "$tmp/nosuch: no such file or directory" "$tmp/nosuch"
refused "--json into a missing directory" "--json" "$gloo" --json "$tmp/nodir/x.json"
"$D" trace >"$tmp/o" 2>"$tmp/e"; rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && ok "trace without a subcommand -> $(cat "$tmp/e")" ||
  fail "trace alone -> exit $rc: $(cat "$tmp/e")"
finish
