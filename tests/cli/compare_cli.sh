#!/usr/bin/env bash
# End-to-end `dtbench compare` and `dtbench report` with real processes: a
# small sweep (MLP, 1 and 2 ranks, 2 bucket sizes, ddp and overlap, plus
# overlap with fp16), its JSON-lines log and JSON report checked field by
# field, --resume after a cut-short log and on a finished one, a refused
# resume with other flags, then the HTML and CSV report of it; the training guide's
# sharded compare and its Horovod seed table (amp as an axis).
# Usage: compare_cli.sh path/to/dtbench
set -eu
DTBENCH=$(realpath "$1")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
grid=(--models mlp --world-sizes 1,2 --reducers ddp,overlap --bucket-cap-mb 0.01,1
      --compression none,fp16 --width 64 --num-classes 10 --batch-size 4 --warmup 1
      --first-bucket-cap-mb 0.01 --threads 1 --timeout 60s)

"$DTBENCH" compare "${grid[@]}" --iters 4 --jsonl points.jsonl --json compare.json > out.txt 2> err.txt
grep -q "Compare: 12 point(s)" out.txt
grep -q "ddp+fp16: skipped" out.txt
grep -q "== mlp, bucket 0.01 MB: backward incl. exposed communication" out.txt
grep -q "== mlp: throughput" out.txt
grep -q "== gradient compression" out.txt
grep -q "== memory per rank (MiB)" out.txt
grep -q "12/12 points" err.txt   # plain progress lines (not a terminal)

python3 - <<'PY'
import json
lines = [json.loads(l) for l in open("points.jsonl")]
assert lines[0]["kind"] == "header" and lines[0]["schema"] == "dtbench.compare", lines[0]
assert lines[0]["config"]["iters"] == 4 and "reducer" not in lines[0]["config"]
assert lines[0]["config"]["broadcast_buffers"] is True, lines[0]["config"]  # compare_ddp.py keeps DDP's default
pts = lines[1:]
assert len(pts) == 12, len(pts)
ids = {(p["key"]["world_size"], p["key"]["reducer"], p["key"]["bucket_cap_mb"], p["key"]["compression"]) for p in pts}
assert len(ids) == 12
for p in pts:
    run, key = p["run"], p["key"]
    assert run["world_size"] == key["world_size"] and len(run["ranks"]) == key["world_size"]
    assert run["reducer"] == key["reducer"]
    for r in run["ranks"]:
        assert len(r["total"]) == 4 and all(t > 0 for t in r["total"])
    m = run["memory"]  # SGD with momentum: 12 bytes per parameter
    assert m["model_state_bytes"] == m["model_state_expected_bytes"] > 0 and m["peak_bytes"] >= m["model_state_bytes"], m
    if key["compression"] == "fp16":
        c = p["extras"]["compression"]
        assert c["dtype"] == "fp16" and c["measured"], c
        assert 0 < c["max_rel_error"] < 2e-2, c
    else:
        assert "compression" not in p["extras"]
# smaller buckets -> more of them
b = {(p["key"]["reducer"], p["key"]["bucket_cap_mb"]): p["extras"]["buckets"] for p in pts if p["key"]["world_size"] == 2 and p["key"]["compression"] == "none"}
assert b[("overlap", 0.01)] > b[("overlap", 1)], b
doc = json.load(open("compare.json"))
assert doc["complete"] is True and len(doc["points"]) == 12 and doc["baseline"] == "ddp"
assert doc["grid"]["bucket_caps_mb"] == [0.01, 1.0]
print("ok: compare log and report")
PY

# A kill mid-append leaves a cut-short last line: resume drops it and reruns that point only.
head -n 12 points.jsonl > resumed.jsonl
tail -n 1 points.jsonl | head -c 200 >> resumed.jsonl
"$DTBENCH" compare "${grid[@]}" --iters 4 --resume resumed.jsonl > out2.txt 2> err2.txt
grep -q "11 already in resumed.jsonl, 1 to run" out2.txt
grep -q "cut short" err2.txt
test "$(wc -l < resumed.jsonl)" -eq 13
python3 -c "import json; [json.loads(l) for l in open('resumed.jsonl')]"

# A finished log: nothing runs, the tables come from the log.
"$DTBENCH" compare "${grid[@]}" --iters 4 --resume points.jsonl > out3.txt 2>&1
grep -q "12 already in points.jsonl, 0 to run" out3.txt
grep -q "== mlp: throughput" out3.txt
test "$(wc -l < points.jsonl)" -eq 13

# Other flags than the log's: refused, the log untouched.
set +e
"$DTBENCH" compare "${grid[@]}" --iters 5 --resume points.jsonl > /dev/null 2> err4.txt
rc=$?
set -e
test $rc -eq 2
grep -q "different configuration (iters: 4 vs 5)" err4.txt
test "$(wc -l < points.jsonl)" -eq 13

# The report of the sweep (JSONL and JSON both read), with a comm report beside it.
"$DTBENCH" comm --nproc 2 -b 1K -e 64K -f 4 -n 3 -w 1 --collective allreduce --json comm.json > /dev/null
"$DTBENCH" report points.jsonl compare.json comm.json -o report.html --csv report.csv > /dev/null
python3 - <<'PY'
import csv
html = open("report.html").read()
for fig in ("throughput-mlp", "efficiency-mlp", "percentiles-mlp", "phases-mlp", "memory-mlp", "buckets-mlp",
            "busbw-allreduce"):
    assert f'<figure id="{fig}"' in html, fig
assert html.count('<svg class="chart"') == 9
rows = list(csv.DictReader(open("report.csv")))
kinds = {r["kind"] for r in rows}
assert kinds == {"compare", "comm"}, kinds
eff = [r for r in rows if r["metric"] == "scaling_efficiency" and r["world_size"] == "2"]
assert len(eff) == 2 * 6, len(eff)   # two sources x 6 two-rank points
assert all(0 < float(r["value"]) < 2 for r in eff)
# gloo's allreduce is in place only (c10d): its rows are in-place ones.
bw = [r for r in rows if r["metric"] == "busbw_gbs" and r["placement"] == "in_place"]
assert len(bw) == 4 and all(float(r["value"]) > 0 for r in bw), bw
peaks = [r for r in rows if r["metric"] == "peak_bytes" and r["kind"] == "compare"]
assert len(peaks) == 2 * 12 and all(float(r["value"]) > 0 for r in peaks), len(peaks)  # every point of both sources
print("ok: report", len(rows), "csv rows")
PY
# The comm rows' time is named by what -a made it: a sweep run with -a 2
# (the fastest rank's time) reads as stat "min", not "mean".
python3 -c "import json; d = json.load(open('comm.json')); d['config']['average'] = 2; json.dump(d, open('comm_min.json', 'w'))"
"$DTBENCH" report comm_min.json -o min.html --csv min.csv >/dev/null &&
  python3 -c "import csv, sys; s = {r['stat'] for r in csv.DictReader(open('min.csv')) if r['metric'] == 'time_us'}; sys.exit(s != {'min'})" ||
  { echo "FAIL: report --csv of an -a 2 sweep: time_us's stat is not min"; exit 1; }
# training guide "Replicated or sharded?": its command exactly; model state per rank
# is the ZeRO formula's within the padding, and shrinks ddp > zero1 > zero2 >
# fsdp on 2 ranks.
"$DTBENCH" compare --models gpt2 --layers 2 --width 128 --heads 4 --vocab 2048 --seq-len 64 \
    --batch-size 2 --optimizer adamw --world-sizes 1,2 --reducers ddp,zero1,zero2,fsdp \
    --bucket-cap-mb 1 --iters 4 --warmup 1 --threads 1 --jsonl sharded.jsonl --json sharded.json \
    >sharded.out 2>&1 || { cat sharded.out; exit 1; }
grep -q "== memory per rank (MiB)" sharded.out
python3 - <<'PY'
import json
d = json.load(open("sharded.json"))
pts = {(p["key"]["reducer"], p["key"]["world_size"]): p["run"] for p in d["points"]}
assert len(pts) == 8, sorted(pts)
state = {k: r["memory"]["model_state_bytes"] for k, r in pts.items()}
for (reducer, n), r in pts.items():
    m = r["memory"]
    assert m["model_state_expected_bytes"] <= m["model_state_bytes"] <= m["model_state_expected_bytes"] + 4096, (reducer, n, m)
assert state[("ddp", 1)] == state[("zero1", 1)] == state[("zero2", 1)] == state[("fsdp", 1)], state
assert state[("ddp", 2)] > state[("zero1", 2)] > state[("zero2", 2)] > state[("fsdp", 2)], state
print("ok: replicated or sharded", state)
PY
# training guide "Horovod": the seed's table (RaySGD's four configurations: Horovod,
# Horovod with fp16 allreduce, DDP, DDP with AMP), its command exactly: one
# column per configuration, amp a swept axis (bf16 autocast changes the loss:
# it ran), Horovod's fp16 error measured by its probe.
"$DTBENCH" compare --models mlp --width 32 --num-classes 10 --batch-size 4 --iters 3 --warmup 1 --threads 1 \
    --reducers horovod,ddp --compression none,fp16 --amp none,bf16 --bucket-cap-mb 25 --world-sizes 1,2 \
    --timeout 60s --json seed.json >seed.out 2>&1 || { cat seed.out; exit 1; }
python3 - <<'PY'
import json, re
text = open("seed.out").read()
assert "Compare: 12 point(s)" in text and "× amp none,bf16)" in text, text[:2000]
table = text.split("== mlp: total examples/s by ranks, one column per configuration ==\n")[1].split("\n\n")[0]
head, *rows = table.splitlines()
cols = head.split()
assert cols == ["ranks", "horovod", "ddp", "horovod+amp-bf16", "ddp+amp-bf16", "horovod+fp16",
                "horovod+fp16+amp-bf16"], cols
assert [r.split()[0] for r in rows] == ["1", "2"], rows
assert all(float(v) > 0 for r in rows for v in r.split()[1:]), rows
d = json.load(open("seed.json"))
assert d["grid"]["amps"] == ["none", "bf16"] and "amp" not in d["config"], d["grid"]
pts = {(p["key"]["reducer"], p["key"]["compression"], p["key"]["amp"], p["key"]["world_size"]): p for p in d["points"]}
assert len(pts) == 12, sorted(pts)
for r in ("horovod", "ddp"):
    f32, bf16 = (pts[(r, "none", a, 1)]["extras"]["last_loss"] for a in ("none", "bf16"))
    assert f32 != bf16 and abs(f32 - bf16) < 0.05 * abs(f32), (r, f32, bf16)
for a in ("none", "bf16"):
    c = pts[("horovod", "fp16", a, 2)]["extras"]["compression"]
    assert c["dtype"] == "fp16" and c["measured"] and 0 < c["max_rel_error"] < 2e-2, c
print("ok: the seed's table")
PY
echo "compare_cli: all passed"
