#!/usr/bin/env bash
# `dtbench project` end to end: a real 1-rank profile (ddp --trace) and a real
# allreduce sweep (comm --nproc 2) projected to 1, 2 and 4 ranks, the projection guide's
# commands, the paper validation script (bench/project/pytorch_ddp_dgx1.sh,
# every published figure within 10%), and bad inputs: one line on stderr,
# exit 2, no report written.
# Usage: project_cli.sh path/to/dtbench
set -u
DT=$(readlink -f "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=tests/cli/project_lib.sh
. "$HERE/project_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# The projection guide's commands ("How would it scale?").
"$DT" ddp --model mlp --batch-size 32 --world-sizes 1,2 --threads 1 --iters 8 --warmup 2 \
  --trace trace.json --json profile.json >ddp.out 2>&1
check "ddp with --trace makes a profile" $? "$(tail -n 3 ddp.out)"
"$DT" comm --nproc 2 --collective allreduce -b 4K -e 16M -f 4 --json comm.json >comm.out 2>&1
check "comm sweep over loopback" $? "$(tail -n 3 comm.out)"
"$DT" project --profile profile.json --comm-intra comm.json --ranks-per-node 2 --world-sizes 1,2 \
  --json projection.json >project.out 2>project.err
check "project from the profile and the sweep" $? "$(cat project.err)"
grep -q "measured ms" project.out && grep -Eq "^ +2 +1 " project.out
check "table has the 2-rank row beside its measurement" $? "$(cat project.out)"
# At 1 rank the projection is the profile's compute plus DDP's fixed cost
# (that it lands within 10% of the measured 1-rank rows is a timing check:
# project_validity.sh, run alone).
one=$(json projection.json "d['rows'][0]['iteration_s']")
parts=$(json projection.json "sum(d['profile'][k] for k in ('forward_s','backward_s','optimizer_s','fixed_s'))")
python3 -c "import sys; sys.exit(0 if abs($one-$parts) < 1e-9 else 1)"
check "1-rank projection ($one s) = the profile's parts ($parts s)" $? ""
[ "$(json projection.json "d['schema']")" = dtbench.project ] &&
  [ "$(json projection.json "d['rows'][1]['world_size']")" = 2 ] &&
  [ "$(json projection.json "d['rows'][1]['measured_s'] is not None")" = True ]
check "JSON: schema, rows, measured point" $? "$(head -c 400 projection.json)"
# cpu_util: every row of the sweep says how many cores each rank kept busy;
# gloo copies and sums 16 MiB on the CPU, so that row kept some busy.
python3 - comm.json "$(nproc)" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
u = [r["in_place"]["cpu_util"] for r in rows]
sys.exit(0 if all(0 <= x <= float(sys.argv[2]) + 0.5 for x in u) and u[-1] > 0.05 else 1)
PY
check "comm report: cpu_util per row, within 0..cores, > 0.05 at 16 MiB" $? "$(json comm.json "[r['in_place']['cpu_util'] for r in d['results']]")"
# The fit reads the in-place rows (buckets are reduced in place): the curve
# in the projection's JSON is the in-place times' fit (2 ranks: 2 steps,
# bus factor 1), not the out-of-place one; a sweep with only out-of-place
# rows is read too.
fit_is() {  # fit_is COMM_JSON PROJECTION_JSON PLACEMENT
  python3 - "$@" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["results"]; place = sys.argv[3]
t = sorted((r["size"], r[place]["time"] / 1e6) for r in rows)
alpha = t[0][1] / 2
want = [(b, max(0.0, s - 2 * alpha) / b) for b, s in t]
got = [(p["bytes"], p["seconds_per_bus_byte"]) for p in json.load(open(sys.argv[2]))["network"]["intra"]["measured"]]
ok = len(got) == len(want) and all(gb == wb and abs(gs - ws) <= 1e-9 * max(abs(ws), 1e-12) for (gb, gs), (wb, ws) in zip(got, want))
sys.exit(0 if ok else 1)
PY
}
fit_is comm.json projection.json in_place
check "the network curve is the fit of the sweep's in-place rows" $? "$(json projection.json "d['network']['intra']")"
# A sweep run with -a 3 shows the slowest rank's time; the fit still takes
# the ranks' mean (rank_us): the same sweep rewritten as -a 3 would have
# written it projects the same network curve. Older (schema 2) names read too.
python3 - comm.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["config"]["average"] = 3
for r in d["results"]:
    t = r["in_place"]; t["time"] = max(t["rank_us"])
json.dump(d, open("comm_max.json", "w"))
old = json.load(open(sys.argv[1])); old["schema_version"] = 2
for r in old["results"]:
    r["bytes"] = r.pop("size")
    for p in ("in_place", "out_of_place"):
        if r[p]:
            for new, was in (("time", "time_us"), ("alg_bw", "algbw_gbs"), ("bus_bw", "busbw_gbs"), ("nwrong", "wrong")):
                r[p][was] = r[p].pop(new)
json.dump(old, open("comm_v2.json", "w"))
PY
same_fit() {  # same_fit A B: the two projections' intra-node fits agree (latency, curve)
  python3 - "$@" <<'PY'
import json, sys
a, b = (json.load(open(p))["network"]["intra"] for p in sys.argv[1:3])
close = lambda x, y: abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1e-15)
ok = close(a["latency_s"], b["latency_s"]) and len(a["measured"]) == len(b["measured"]) and all(
    p["bytes"] == q["bytes"] and close(p["seconds_per_bus_byte"], q["seconds_per_bus_byte"])
    for p, q in zip(a["measured"], b["measured"]))
sys.exit(0 if ok else 1)
PY
}
for variant in comm_max comm_v2; do
  "$DT" project --profile profile.json --comm-intra $variant.json --ranks-per-node 2 --world-sizes 1,2 \
    --json proj_$variant.json >proj_$variant.out 2>&1 &&
    same_fit projection.json proj_$variant.json
  check "$variant: the same network fit as the sweep it was made from" $? \
    "$(tail -n 2 proj_$variant.out; json proj_$variant.json "d['network']['intra']['measured'][:2]" 2>&1)"
done
[ "$(json comm_max.json "any(r['in_place']['time'] > sum(r['in_place']['rank_us']) / 2 for r in d['results'])")" = True ]
check "comm_max's times differ from the mean (the case above proves something)" $? ""
# (MPI has an out-of-place allreduce; c10d's gloo works in place only.)
"$DT" env --json env.json >/dev/null 2>&1
if [ "$(json env.json '1 if "mpi" in d["backends"] else 0')" = 1 ]; then
  "$DT" comm --nproc 2 --backend mpi --collective allreduce -b 4K -e 1M -f 4 --placement out --json comm_out.json \
    >comm_out.out 2>&1 &&
    "$DT" project --profile profile.json --comm-intra comm_out.json --ranks-per-node 2 --world-sizes 2 \
      --json proj_out.json >proj_out.out 2>&1 && fit_is comm_out.json proj_out.json out_of_place
  check "a sweep with only out-of-place rows (mpi) is fitted from those" $? "$(tail -n 3 comm_out.out proj_out.out)"
else
  echo "skip: an out-of-place-only sweep needs the mpi backend (not in this build)"
fi
# Nothing to measure: gloo's allreduce has no out-of-place form.
"$DT" comm --nproc 2 --collective allreduce -b 4K -e 4K --placement out --json none.json >none.out 2>none.err
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <none.err)" -eq 1 ] && grep -q "nothing to measure" none.err && [ ! -e none.json ]
check "comm --placement out of gloo's allreduce: one line, exit 2, no report" $? "rc $rc: $(cat none.err)"
# The projection guide's CPU contention command: 2 ranks on this machine's cores.
"$DT" project --profile profile.json --comm-intra comm.json --ranks-per-node 2 --world-sizes 1,2 \
  --cores-per-node "$(nproc)" --json contended.json >contended.out 2>&1
check "project with --cores-per-node" $? "$(tail -n 3 contended.out)"
python3 - projection.json contended.json <<'PY'
import json, sys
free = json.load(open(sys.argv[1]))["rows"]; busy = json.load(open(sys.argv[2]))
rows = busy["rows"]
ok = abs(rows[0]["iteration_s"] - free[0]["iteration_s"]) < 1e-12   # 1 rank: nothing to share
ok &= rows[1]["iteration_s"] >= free[1]["iteration_s"] - 1e-12 and rows[1]["contention_s"] >= 0
ok &= busy["network"]["cores_per_node"] > 0 and len(busy["network"]["intra"]["cpu_util"]) > 0
sys.exit(0 if ok else 1)
PY
check "contention: 1 rank unchanged, 2 ranks no faster, contention_s and cpu_util in the JSON" $? "$(cat contended.out)"
grep -q "contention ms" contended.out && grep -q "CPU contention:" contended.out
check "table shows the contention column and its inputs" $? "$(cat contended.out)"
"$DT" project --profile profile.json --comm-intra comm.json --ranks-per-node 2 --world-sizes 2 \
  --cores-per-node 1000 --json spare.json >/dev/null 2>&1 &&
  python3 -c "import json,sys; a=json.load(open('spare.json'))['rows'][0]; b=json.load(open('projection.json'))['rows'][1]; sys.exit(0 if abs(a['iteration_s']-b['iteration_s'])<1e-12 and abs(a['contention_s'])<1e-12 else 1)"
check "cores to spare: the same projection as without the term" $? ""
"$DT" report projection.json -o projection.html --csv projection.csv >report.out 2>&1 &&
  grep -q 'id="project-time-' projection.html && grep -q 'id="project-efficiency-' projection.html &&
  grep -q '>measured<' projection.html && grep -q ',project,mlp,.*,iteration_s,projected,' projection.csv
check "report charts the projection with its measured point, CSV rows" $? "$(cat report.out)"

"$DT" project --model resnet50 --batch-size 32 --forward-ms 31 --backward-ms 62 --optimizer-ms 4 \
  --ddp-overhead-ms 3 --ranks-per-node 8 --intra-bw 120GB/s --intra-latency 3.4us \
  --inter-bw 4x100Gbit/s --inter-latency 9.6us --base-latency 8.4us --world-sizes 1,8,64,512,4096 \
  >model.out 2>&1
check "project from a model and stated links" $? "$(tail -n 3 model.out)"
grep -Eq "^ +4096 +512 " model.out
check "4096 ranks on 512 nodes projected" $? "$(cat model.out)"
# What-ifs move the answer the way physics says.
whatif() { "$DT" project --profile profile.json --comm-intra comm.json --ranks-per-node 4 --world-sizes 4 \
  --json w.json "$@" >/dev/null 2>&1 && json w.json "d['rows'][0]['iteration_s']"; }
base=$(whatif); slow=$(whatif --bw-scale 0.1); late=$(whatif --no-overlap)
python3 -c "import sys; sys.exit(0 if $slow > $base and $late >= $base else 1)"
check "a 10x slower network ($slow s) and no overlap ($late s) cost more than the base ($base s)" $? ""

bash "$ROOT/bench/project/pytorch_ddp_dgx1.sh" "$DT" >paper.out 2>&1
check "paper validation: PyTorch's DGX-1 table within 10%" $? "$(cat paper.out)"

# Bad inputs: one line, exit 2, no report.
net=(--comm-intra comm.json --ranks-per-node 2 --world-sizes 2)
expect_bad "unknown bandwidth unit" -m "--inter-bw: unknown or missing unit in '100Gfoo/" --profile profile.json --ranks-per-node 1 --inter-bw 100Gfoo/s --inter-latency 5us
expect_bad "negative bandwidth" -m "--inter-bw: '-5GB/s' must be positive" --profile profile.json --ranks-per-node 1 --inter-bw -5GB/s --inter-latency 5us
expect_bad "latency without a unit" -m "--inter-latency: unknown or missing unit in '5' " --profile profile.json --ranks-per-node 1 --inter-bw 5GB/s --inter-latency 5
expect_bad "no network between nodes" -m "the network between nodes is not described: give" --profile profile.json --ranks-per-node 2 --comm-intra comm.json --world-sizes 4
expect_bad "bandwidth without latency" -m "--inter-bw and --inter-latency go together (e.g." --profile profile.json --inter-bw 5GB/s --world-sizes 2
"$DT" comm --nproc 2 --collective broadcast -b 4K -e 64K --json bcast.json >fixture.out 2>&1
check "fixture: a broadcast-only comm report" $? "$(tail -n 3 fixture.out)"
expect_bad "comm report without allreduce" -m "--comm-intra bcast.json: the report has no allre" --profile profile.json --comm-intra bcast.json --ranks-per-node 2 --world-sizes 2
"$DT" comm -b 4K -e 64K --json one.json >fixture.out 2>&1
check "fixture: a 1-rank comm report" $? "$(tail -n 3 fixture.out)"
expect_bad "comm report of one rank" -m "one.json (gloo allreduce, 1 rank(s) on 1 node(s)" --profile profile.json --comm-intra one.json --ranks-per-node 2 --world-sizes 2
"$DT" ddp --model mlp --batch-size 8 --world-sizes 1 --threads 1 --iters 2 --warmup 0 --json notrace.json >fixture.out 2>&1
check "fixture: a ddp report without a trace" $? "$(tail -n 3 fixture.out)"
expect_bad "ddp report without a trace" -m "notrace.json: no 1-rank DDP row with a trace to " --profile notrace.json "${net[@]}"
expect_bad "a comm report as the profile" -m "comm.json: not a \`dtbench ddp\` report (schema 'dtbench.comm')" --profile comm.json "${net[@]}"
expect_bad "missing profile file" -m "cannot read 'nowhere.json': No such file or dire" --profile nowhere.json "${net[@]}"
expect_bad "profile and model both" -m "give the compute profile either as --profile REP" --profile profile.json --model mlp --forward-ms 1 --backward-ms 1 --optimizer-ms 1 "${net[@]}"
expect_bad "model without phase times" -m "--model needs the phase times of one rank: --for" --model mlp "${net[@]}"
expect_bad "zero ranks" -m "--world-sizes: '0' is not a rank count (a whole " --profile profile.json --comm-intra comm.json --world-sizes 0
expect_bad "unknown algorithm" -m "--algo: 'butterfly' is not an algorithm (use rin" --profile profile.json "${net[@]}" --algo butterfly
expect_bad "unknown compression" -m "--compression: 'fp8' is not a wire format (use n" --profile profile.json "${net[@]}" --compression fp8
expect_bad "no such row" -m "profile.json: no row labelled '9N/9R' (--row)" --profile profile.json "${net[@]}" --row 9N/9R
expect_bad "a comm report as --measured" -m "comm.json: not a \`dtbench ddp\` report (schema 'dtbench.comm')" --profile profile.json "${net[@]}" --measured comm.json
expect_bad "zero bucket cap" -m "--bucket-cap-mb and --first-bucket-cap-mb must b" --profile profile.json "${net[@]}" --bucket-cap-mb 0
expect_bad "negative first bucket cap" -m "--bucket-cap-mb and --first-bucket-cap-mb must b" --profile profile.json "${net[@]}" --first-bucket-cap-mb -1
expect_bad "zero bandwidth scale" -m "--bw-scale must be positive" --profile profile.json "${net[@]}" --bw-scale 0
expect_bad "zero ranks per node" -m "--ranks-per-node must be at least 1" --profile profile.json --comm-intra comm.json --ranks-per-node 0 --world-sizes 2
expect_bad "base latency without a unit" -m "--base-latency: unknown or missing unit in '5' (" --profile profile.json "${net[@]}" --base-latency 5
expect_bad "both a report and stated figures for a level" -m "--comm-intra and --intra-bw/--intra-latency both" --profile profile.json "${net[@]}" --intra-bw 1GB/s --intra-latency 1us
expect_bad "negative DDP overhead" -m "--ddp-overhead-ms must not be negative" --model mlp --forward-ms 1 --backward-ms 1 --optimizer-ms 1 --ddp-overhead-ms -1 "${net[@]}"
expect_bad "zero batch" -m "--batch-size, --image-size and --seq-len must be" --model mlp --batch-size 0 --forward-ms 1 --backward-ms 1 --optimizer-ms 1 "${net[@]}"
expect_bad "unknown model" -m "unknown model 'nosuchnet' (valid: resnet18, resn" --model nosuchnet --forward-ms 1 --backward-ms 1 --optimizer-ms 1 "${net[@]}"
expect_bad "negative cores per node" -m "--cores-per-node must not be negative" --profile profile.json "${net[@]}" --cores-per-node -2
expect_bad "--threads with a profile report" -m "--threads goes with --model; a --profile report " --profile profile.json "${net[@]}" --threads 2
expect_bad "negative threads" -m "--threads must not be negative" --model mlp --forward-ms 1 --backward-ms 1 --optimizer-ms 1 --threads -1 "${net[@]}"
expect_bad "contention without the model's threads" -m "--cores-per-node: command line does not say how " --model mlp --forward-ms 1 --backward-ms 1 --optimizer-ms 1 \
  --cores-per-node 8 "${net[@]}"
expect_bad "contention over stated links (no cpu_util)" -m "--cores-per-node: the network between nodes has " --model mlp --forward-ms 1 --backward-ms 1 --optimizer-ms 1 \
  --threads 1 --cores-per-node 8 --ranks-per-node 1 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2

echo "project_cli: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
