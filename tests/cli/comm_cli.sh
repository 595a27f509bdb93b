#!/usr/bin/env bash
# `dtbench comm` end to end on 2 local ranks (gloo, loopback): nccl-tests'
# per-rank count column, placements a backend has no single call for shown
# n/a with a note, every iteration kept (samples, percentiles), a rank delayed
# on purpose named by its arrival (and not by its time, which is the
# shortest), the seed repeating a run's data, cycles over the sweep, and the
# JSON's placement and backend fields, -a, pingpong between pairs. Seconds.
# Usage: comm_cli.sh path/to/dtbench
set -u
DT=$(readlink -f "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cli/check_lib.sh
. "$HERE/check_lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
check() { if [ "$2" -eq 0 ]; then ok "$1"; else fail "$1: $3"; fi; }

# A straggler on purpose: rank 1 sleeps 10 ms before each timed iteration.
"$DT" comm --nproc 2 --collective allreduce,allgather,alltoall -b 1K -e 4K -f 4 -n 8 -w 1 \
  --inject-delay 1:10000 --seed 42 --percentiles 50,90,99 --json late.json --csv late.csv >late.out 2>&1
check "comm --inject-delay runs" $? "$(tail -n 3 late.out)"
python3 - late.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["results"]
fail = []
def want(cond, what):
    if not cond: fail.append(what)
# nccl-tests' field names (its -J report) for what it also reports.
want(d["schema_version"] == 3, f"schema_version {d['schema_version']}")
for r in rows:
    want({"size", "count", "type", "redop", "root"} <= set(r), f"row names {sorted(r)}")
    for p in ("out_of_place", "in_place"):
        want(r[p] is None or {"time", "alg_bw", "bus_bw", "nwrong"} <= set(r[p]), f"{p} names {sorted(r[p] or {})}")
# nccl-tests' count: the per-rank part for the split collectives (2 ranks, float32).
for r in rows:
    per = r["size"] // 4 // (2 if r["collective"] in ("allgather", "alltoall") else 1)
    want(r["count"] == per, f"count {r['collective']} {r['size']}: {r['count']} != {per}")
# gloo's allreduce: in place only; allgather both; alltoall out of place only.
by = {(r["collective"], r["size"]): r for r in rows}
want(by[("allreduce", 1024)]["out_of_place"] is None, "allreduce out-of-place not n/a")
want(by[("allgather", 1024)]["out_of_place"] is not None and by[("allgather", 1024)]["in_place"] is not None, "allgather placements")
want(by[("alltoall", 1024)]["in_place"] is None, "alltoall in-place not n/a")
want(any("out-of-place allreduce n/a" in n for n in d["notes"]), f"no note for allreduce: {d['notes']}")
for r in rows:
    for p in ("out_of_place", "in_place"):
        t = r[p]
        if t is None: continue
        where = f"{r['collective']} {r['size']} {p}"
        want(len(t["samples_us"]) == 2 and all(len(s) == 8 for s in t["samples_us"]), where + ": samples")
        want(set(t["percentiles_us"]) == {"p50", "p90", "p99"}, where + ": percentiles")
        pooled = sorted(x for s in t["samples_us"] for x in s)
        want(pooled[0] <= t["percentiles_us"]["p50"] <= pooled[-1], where + ": p50 within the samples")
        # Arrival names rank 1, late by about the 10-ms delay; its own time is
        # the shorter one (the other rank waited for it).
        # Lateness is the delay plus how much sooner rank 1 left the previous
        # operation than rank 0: on a loaded machine rank 0 is descheduled
        # after the operation completes (a CI run measured 2.4 ms against a
        # 3-ms delay), and rank 1 oversleeps. So half the delay at least, and
        # no tight upper bound.
        want(t["late_rank"] == 1 and t["straggler"] and 5000 <= t["late_us"] <= 200000, where + f": late {t['late_rank']} {t['late_us']}")
        want(t["rank_us"][1] < t["rank_us"][0], where + f": rank times {t['rank_us']}")
        # -a 1 (the default, nccl-tests'): the row's time is the ranks' mean.
        want(abs(t["time"] - sum(t["rank_us"]) / 2) <= 1e-9 * t["time"], where + ": time is the ranks' mean")
        want(t["nwrong"] == 0, where + ": wrong")
want(d["seed"] == 42 and d["config"]["inject_delay"] == {"rank": 1, "us": 10000.0}, "seed / inject_delay")
want([p["rank"] for p in d["env"]["placement"]] == [0, 1] and all(p["cpus"] for p in d["env"]["placement"]), "placement")
want("ProcessGroupGloo" in d["env"]["backend_version"], "backend_version")
want(isinstance(d["env"]["backend_variables"], dict), "backend_variables")
print("\n".join(fail) if fail else "all fields as expected")
sys.exit(1 if fail else 0)
PY
check "JSON: per-rank count, n/a placements, samples, percentiles, rank 1 late by ~10 ms" $? ""
# --csv: nccl-tests' column names; a line per row and timed placement, the
# same figures as the JSON.
python3 - late.json late.csv <<'PY'
import csv, json, sys
d = json.load(open(sys.argv[1]))
lines = list(csv.DictReader(open(sys.argv[2])))
want = [(r["collective"], p, r["size"], r["count"], r[p]["time"], r[p]["bus_bw"], r[p]["nwrong"], r[p]["percentiles_us"]["p99"])
        for r in d["results"] for p in ("out_of_place", "in_place") if r[p]]
got = [(l["collective"], l["placement"], int(l["size"]), int(l["count"]), float(l["time"]), float(l["busbw"]),
        int(l["#wrong"]), float(l["p99"])) for l in lines]
close = lambda a, b: abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-9)
ok = len(got) == len(want) and all(g[:4] == w[:4] and g[6] == w[6] and close(g[4], w[4]) and close(g[5], w[5])
                                   and close(g[7], w[7]) for g, w in zip(got, want))
ok = ok and list(lines[0])[:14] == ["cycle", "group", "collective", "placement", "size", "count", "type", "redop",
                                    "root", "time", "algbw", "busbw", "#wrong", "time_stat"]
ok = ok and all(l["time_stat"] == "mean" and l["late_rank"] == "1" for l in lines)
print(list(lines[0]) if lines else "no lines", len(got), len(want))
sys.exit(0 if ok else 1)
PY
check "--csv: nccl-tests' names, a line per timed placement, the JSON's figures" $? ""
grep -q "Late rank            : rank 1 started a median" late.out && grep -q ": a straggler" late.out &&
  grep -q "# note: out-of-place allreduce n/a" late.out && grep -q "Test data seed       : 42" late.out
check "console footer: the late rank, the note, the seed" $? "$(grep '^#' late.out | tail -n 8)"

# -a as nccl-tests': rank 1 delayed, so rank 0 (which waits for it) is the
# slowest and rank 1 the fastest; -a 0 shows rank 0's time, -a 2 the fastest
# rank's (rank 1's), and algbw follows. (row_time's unit test covers 1 and 3.)
for a in 0 2; do
  "$DT" comm --nproc 2 -b 64K -e 64K -n 4 -w 1 --inject-delay 1:2000 -a $a --json avg$a.json >avg$a.out 2>&1
  json avg$a.json "(lambda t: t['rank_us'][0 if $a == 0 else 1] == t['time'] and \
    t['rank_us'][1] < t['rank_us'][0] and abs(t['alg_bw'] - 65536 / t['time'] / 1e3) < 1e-9 and \
    j['config']['average'] == $a)(j['results'][0]['in_place'])" | grep -q True && grep -q "# note: time, algbw and busbw are" avg$a.out
  st=$?
  which="the fastest rank's (rank 1's)"; [ "$a" = 0 ] && which="rank 0's"
  check "-a $a: the row's time is $which, algbw from it, a note" $st \
    "$(json avg$a.json "j['results'][0]['in_place']['rank_us'], j['results'][0]['in_place']['time']" 2>&1) $(tail -n 2 avg$a.out)"
done

# -m 4 (nccl-tests' aggregated iterations): 4 operations in flight per timed
# iteration, each on its own window; a sample is per operation, there are
# still -n samples per rank, the check ran 4 at once (exact), and a note says so.
"$DT" comm --nproc 2 --collective allreduce,allgather,alltoall,sendrecv -b 1K -e 64K -f 64 -n 3 -w 1 -m 4 \
  --json agg.json >agg.out 2>&1 &&
  json agg.json "j['config']['agg_iters'] == 4 and j['summary']['wrong'] == 0 and len(j['results']) == 8 and
    all(len(s) == 3 for r in j['results'] for p in ('out_of_place', 'in_place') if r[p] for s in r[p]['samples_us'])" |
    grep -q True && grep -q "# note: -m 4: each timed iteration is 4 operations" agg.out &&
  grep -q "agg iters 4" agg.out
check "-m 4: 4 operations per iteration, exact, 3 samples per rank, the note" $? "$(tail -n 4 agg.out)"
# The time is per operation: rank 1 sleeps 20 ms before each iteration of 4
# operations, so rank 0 (which waits for it) takes at least 5 ms per
# operation, and well under the 20 ms it would show undivided.
"$DT" comm --nproc 2 -b 1K -e 1K -n 3 -w 1 -m 4 --inject-delay 1:20000 --json aggd.json >aggd.out 2>&1 &&
  json aggd.json "(lambda t: 4500 <= t['rank_us'][0] <= 15000)(j['results'][0]['in_place'])" | grep -q True
check "-m 4 beside a 20-ms-late rank: rank 0's time per operation is a quarter of it" $? \
  "$(json aggd.json "j['results'][0]['in_place']['rank_us']" 2>&1; tail -n 2 aggd.out)"

# Two cycles over the sweep; a given seed is the run's seed.
"$DT" comm --nproc 2 -b 1K -e 2K -n 2 -w 0 -N 2 --seed 7 --json cycles.json >cycles.out 2>&1
[ "$(json cycles.json "[r['cycle'] for r in j['results']]")" = "[0, 0, 1, 1]" ] &&
  [ "$(json cycles.json "j['seed']")" = 7 ]
check "-N 2: the sweep twice, rows tagged by cycle" $? "$(tail -n 3 cycles.out)"
# -M 1: each rank's timing buffers at their largest (allgather of 1 MiB on
# 2 ranks: out of place 512 KiB in + 1 MiB out, in place 1 MiB, and the copy
# ceiling's two 1 MiB buffers: 4.5 MiB) and the allocator's peak, which
# holds them; no "memory" without -M.
"$DT" comm --nproc 2 --collective allreduce,allgather -b 1K -e 1M -f 32 -n 2 -w 1 -M 1 --json mem.json >mem.out 2>&1 &&
  json mem.json "[(m['rank'], m['buffers_bytes'], m['peak_bytes'] >= m['buffers_bytes'], m['reserved_peak_bytes'])
    for m in j['memory']]" | grep -qF "[(0, 4718592, True, None), (1, 4718592, True, None)]" &&
  grep -q "# Memory per rank      : buffers 4.5 MiB; allocator peak" mem.out &&
  json cycles.json "'memory' not in j" | grep -q True
check "-M 1: 4.5 MiB of buffers per rank, the peak above it, the footer; none without -M" $? \
  "$(tail -n 2 mem.out; json mem.json "j.get('memory')" 2>&1)"
# Where latency gives way to bandwidth: the fit of each allreduce/allgather
# sweep (the projection's): its latency per step is the smallest size's mean
# time over the ring's steps (2 for allreduce at 2 ranks, 1 for allgather).
python3 - mem.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
fits = {f["collective"]: f for f in d["latency_bandwidth"]}
ok = set(fits) == {"allreduce", "allgather"}
for c, steps in (("allreduce", 2), ("allgather", 1)):
    f = fits.get(c, {})
    small = min((r for r in d["results"] if r["collective"] == c), key=lambda r: r["size"])["in_place"]
    ok = ok and f["steps"] == steps and f["placement"] == "in_place" and \
        abs(f["latency_us_per_step"] - sum(small["rank_us"]) / 2 / steps) < 1e-6 * f["latency_us_per_step"] and \
        f["largest_bytes"] == 1048576 and f["latency_bound_bytes"] in (0, 1024, 32768, 1048576)
print(fits)
sys.exit(0 if ok else 1)
PY
st=$?
grep -Eq "^# Latency / bandwidth  : allreduce \(in place, 2 ranks\): [0-9.]+ us per step x 2 steps; " mem.out || st=1
check "the latency/bandwidth fit of each sweep: JSON and footer" $st "$(grep Latency mem.out)"
# "Is this normal?": every row beside a plain copy of its message in the same
# memory, timed in the same run; busbw as a fraction of it (gloo over
# loopback copies through the kernel's sockets: well under the copy).
json mem.json "all(0 < t['ceiling_gbs'] and abs(t['of_ceiling'] - t['bus_bw'] / t['ceiling_gbs']) < 1e-9 and
  t['of_ceiling'] < 1 for r in j['results'] for t in (r['out_of_place'], r['in_place']) if t)" | grep -q True &&
  grep -Eq "^# Of the copy ceiling  : allreduce at most [0-9]+% \(1 MiB: busbw" mem.out
check "the copy ceiling of every row and the footer's closest row" $? "$(grep ceiling mem.out)"
# --with-compute gemm:1024: each row timed again beside a GEMM thread, then the
# GEMMs alone; the ratios are of the figures beside them, the second run is
# checked too, and the footer sums them up. A product here outlasts -n 6
# small collectives: the second run takes as many iterations as about four
# products need, so products end inside its timed window (on 2 loaded cores a
# product can slow tenfold beside the ranks: some row, not every row). (Whether
# the slowdown is real is a measurement: docs/PERFORMANCE.md, not a test.)
"$DT" comm --nproc 2 --collective allreduce,allgather -b 4K -e 64K -f 16 -n 6 -w 1 --with-compute gemm:1024 \
  --json wc.json >wc.out 2>&1 &&
  json wc.json "j['config']['with_compute'] == 'gemm:1024' and j['summary']['wrong'] == 0 and all(
    w['time'] > 0 and abs(w['slowdown'] - w['time'] / t['time']) < 1e-9 and w['gemm_us_alone'] > 0 and
    w['gemms_during'] >= 0 and w['iters'] >= 6 and
    (w['gemm_us_during'] == 0 or abs(w['gemm_slowdown'] - w['gemm_us_during'] / w['gemm_us_alone']) < 1e-9)
    for r in j['results'] for t in (r['out_of_place'], r['in_place']) if t for w in [t['with_compute']]) and any(
    w['iters'] > 6 and w['gemms_during'] >= 1
    for r in j['results'] for t in (r['out_of_place'], r['in_place']) if t for w in [t['with_compute']])" | grep -q True &&
  grep -q "# With compute         : allreduce: the collective" wc.out && grep -q "# With compute         : allgather:" wc.out &&
  json mem.json "all(t['with_compute'] is None for r in j['results'] for t in (r['out_of_place'], r['in_place']) if t)" | grep -q True
check "--with-compute gemm:1024: every row again beside the GEMMs, the run sized to hold products, consistent ratios, exact; none without it" $? \
  "$(grep -E '^# (With|Out)' wc.out; tail -n 2 wc.out)"

# -c 0: nothing compared, nothing claimed (nccl-tests' N/A): the table and
# the footer say N/A, the JSON's nwrong and summary.wrong are null, the CSV's
# #wrong cell is empty, exit 0.
"$DT" comm -b 1K -e 2K -n 2 -w 1 -c 0 --json c0.json --csv c0.csv >c0.out 2>&1 &&
  grep -Eq "^ +1024 .* N/A " c0.out && grep -q "^# Out of bounds values : N/A (not checked: -c 0)" c0.out &&
  json c0.json "j['summary']['wrong'] is None and all(t['nwrong'] is None for r in j['results']
    for t in (r['out_of_place'], r['in_place']) if t)" | grep -q True &&
  python3 -c "import csv,sys; rows=list(csv.DictReader(open(sys.argv[1]))); sys.exit(0 if rows and all(r['#wrong'] == '' for r in rows) else 1)" c0.csv
check "-c 0: #wrong N/A in the table and footer, null in the JSON, empty in the CSV" $? "$(grep -E 'N/A|Out of' c0.out | head -3)"

# --split mod:2 on 4 ranks: groups {0,2} and {1,3} each allgather at once;
# a row per group, each verified, and busbw with the group's factor. A delay on
# rank 3 names rank 3 in group 1 and leaves group 0 without a late rank.
"$DT" comm --nproc 4 --split mod:2 --collective allgather,allreduce -b 1K -e 1K -n 6 -w 1 \
  --inject-delay 3:3000 --json split.json >split.out 2>&1
check "comm --split mod:2 runs" $? "$(tail -n 3 split.out)"
python3 - split.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["results"]
fail = []
want = lambda c, w: c or fail.append(w)
want(d["config"]["split"] == "mod:2", "config.split")
want([(r["collective"], r["group"], r["group_ranks"]) for r in rows] ==
     [("allgather", 0, [0, 2]), ("allgather", 1, [1, 3]), ("allreduce", 0, [0, 2]), ("allreduce", 1, [1, 3])],
     [(r["collective"], r.get("group"), r.get("group_ranks")) for r in rows])
for r in rows:
    t = r["in_place"]
    want(t["nwrong"] == 0 and len(t["samples_us"]) == 2, f"{r['collective']} g{r['group']}: wrong/samples")
    want(abs(t["bus_bw"] - t["alg_bw"] * (0.5 if r["collective"] == "allgather" else 1.0)) < 1e-9,
         f"{r['collective']} g{r['group']}: busbw factor of a 2-rank group")
    if r["group"] == 1:
        want(t["late_rank"] == 3 and t["straggler"], f"g1 late rank {t['late_rank']} {t['late_us']}")
    else:
        # Group 0 has no delayed rank: whatever skew its own collective leaves,
        # nothing near the 3 ms.
        want(t["late_us"] < 1000, f"g0 late rank {t['late_rank']} by {t['late_us']} us")
want(rows[0]["count"] == 128, f"allgather count per rank {rows[0]['count']}")
print("\n".join(fail) if fail else "groups as expected")
sys.exit(1 if fail else 0)
PY
check "JSON: a row per group, exact, busbw of 2-rank groups, rank 3 late in g1, nothing like it in g0" $? ""
grep -q -- "--split mod:2: 2 groups, each running the collective at the same time: g0 = ranks 0,2; g1 = ranks 1,3" split.out &&
  grep -q "allgather g1" split.out
check "console: the groups named, rows tagged by group" $? "$(grep -E '^#|g[01]' split.out | head -n 12)"
# Uneven parts and 8-bit data: 100 B of int8 over 3 ranks is 3 parts of 32
# (16 bytes' worth each, as nccl-tests), not 33.
"$DT" comm --nproc 3 -d int8 --collective allgather,allreduce -b 100 -e 100 -n 2 -w 0 --json int8.json >int8.out 2>&1 &&
  [ "$(json int8.json "[(r['collective'], r['size'], r['count']) for r in j['results']]")" = \
    "[('allgather', 96, 32), ('allreduce', 100, 100)]" ] &&
  [ "$(json int8.json "j['summary']['wrong']")" = 0 ]
check "int8 over 3 ranks: allgather of 3 parts of 32 (96 B), allreduce of 100, exact" $? \
  "$(tail -n 3 int8.out; json int8.json "[(r['collective'], r['size'], r['count']) for r in j['results']]" 2>&1)"

# Uneven groups: div:2 of 3 ranks is {0,1} and {2}; the 1-rank group has no
# sendrecv, so every rank skips it (or the gathers would pair up wrongly and
# hang), and allreduce runs in both.
timeout 120 "$DT" comm --nproc 3 --split div:2 --collective sendrecv,allreduce -b 1K -e 1K -n 2 -w 0 \
  --timeout 20s --json uneven.json >uneven.out 2>&1 &&
  [ "$(json uneven.json "[(r['collective'], r['group_ranks']) for r in j['results']]")" = \
    "[('allreduce', [0, 1]), ('allreduce', [2])]" ] &&
  grep -q "# skipped sendrecv: another --split group cannot run it" uneven.out
check "--split div:2 of 3 ranks: sendrecv skipped by all, allreduce in both groups" $? "$(grep -E '^# (skipped|note)|allreduce' uneven.out; tail -n 3 uneven.out)"

# pingpong: rank 0's message there and back; out of place only, exact, busbw
# twice algbw (the one-way rate of the round trip).
"$DT" comm --nproc 2 --collective pingpong -b 1K -e 64K -f 8 -n 4 -w 1 --json pp.json >pp.out 2>&1 &&
  json pp.json "all(r['collective'] == 'pingpong' and r['in_place'] is None and r['out_of_place']['nwrong'] == 0
    and abs(r['out_of_place']['bus_bw'] - 2 * r['out_of_place']['alg_bw']) < 1e-9
    and r['out_of_place']['time'] == r['out_of_place']['rank_us'][0] for r in j['results'])
    and [r['size'] for r in j['results']] == [1024, 8192, 65536] and j['summary']['wrong'] == 0" | grep -q True &&
  grep -q "# note: in-place pingpong n/a" pp.out && grep -q "# note: pingpong: time is rank 0's round trip" pp.out
check "pingpong on 2 ranks: 3 sizes, exact, rank 0's round trip, busbw = 2 x algbw, in-place n/a" $? "$(tail -n 5 pp.out)"
# Pairs by --split: div:2 of 4 ranks pairs 0-1 and 2-3, a row per pair.
"$DT" comm --nproc 4 --split div:2 --collective pingpong -b 4K -e 4K -n 3 -w 1 --json pairs.json >pairs.out 2>&1 &&
  [ "$(json pairs.json "[(r['group_ranks'], r['out_of_place']['nwrong']) for r in j['results']]")" = "[([0, 1], 0), ([2, 3], 0)]" ]
check "pingpong --split div:2 on 4 ranks: a row per pair, exact" $? "$(tail -n 3 pairs.out)"
# Not 2 ranks: skipped, saying how to pair them; `all` leaves pingpong out.
"$DT" comm --nproc 3 --collective pingpong,allreduce -b 1K -e 1K -n 2 -w 0 >pp3.out 2>&1 &&
  grep -q "# skipped pingpong: gloo: pingpong runs between exactly 2 ranks, not 3 (pair the ranks with --split" pp3.out &&
  "$DT" comm --nproc 2 --collective all -b 1K -e 1K -n 1 -w 0 --json all.json >all.out 2>&1 &&
  [ "$(json all.json "{'pingpong', 'barrier'} & {r['collective'] for r in j['results']}")" = "set()" ]
check "pingpong on 3 ranks skipped with the way to pair; --collective all leaves it and barrier out" $? "$(grep '^# skipped' pp3.out; tail -n 2 all.out)"
# barrier (PARAM's): one row of 0 bytes whatever -b/-e say, out of place only;
# checked by arrival (no rank leaves an iteration before the last arrived:
# Collectives.BarrierLetsNoRankLeaveEarly proves a fake barrier is caught);
# rank 2, delayed, is the late one.
"$DT" comm --nproc 3 --collective barrier -b 1K -e 1M -n 4 -w 1 --inject-delay 2:3000 --json bar.json >bar.out 2>&1 &&
  [ "$(json bar.json "[(r['collective'], r['size'], r['in_place'], r['out_of_place']['nwrong'], r['out_of_place']['late_rank']) for r in j['results']]")" = \
    "[('barrier', 0, None, 0, 2)]" ]
check "barrier on 3 ranks: one row, exact by arrival, rank 2 late" $? "$(tail -n 4 bar.out)"
# alltoallv (PARAM's all_to_allv): uneven parts, skewed on 3 ranks (rank i
# sends rank j in proportion to 1 + (i+j) mod 3), every part exact; the
# size is what each rank sends.
"$DT" comm --nproc 3 --collective alltoallv --split-sizes skewed -b 1K -e 64K -f 64 -n 3 -w 1 --json av.json >av.out 2>&1 &&
  [ "$(json av.json "[(r['collective'], r['size'], r['out_of_place']['nwrong']) for r in j['results']]")" = \
    "[('alltoallv', 1024, 0), ('alltoallv', 65536, 0)]" ] &&
  [ "$(json av.json "j['config']['split_sizes']")" = skewed ] &&
  grep -q "# note: alltoallv: parts skewed (--split-sizes)" av.out
check "alltoallv --split-sizes skewed on 3 ranks: exact, the parts named" $? "$(tail -n 4 av.out)"
# allgatherv and reduce_scatter_v (uneven parts, rank i's in proportion to
# 1 + i): exact on 3 ranks; gloo makes them of broadcasts and an allreduce,
# and the notes say so.
"$DT" comm --nproc 3 --collective allgatherv,reduce_scatter_v --split-sizes skewed -b 1K -e 64K -f 64 -n 3 -w 1 \
  --json v.json >v.out 2>&1 &&
  [ "$(json v.json "[(r['collective'], r['size'], r['out_of_place']['nwrong']) for r in j['results']]")" = \
    "[('allgatherv', 1024, 0), ('allgatherv', 65536, 0), ('reduce_scatter_v', 1024, 0), ('reduce_scatter_v', 65536, 0)]" ] &&
  grep -q "# note: allgatherv: each rank's part skewed (--split-sizes)" v.out &&
  grep -q "# note: allgatherv: gloo: a broadcast from each rank of its part" v.out &&
  grep -q "# note: reduce_scatter_v: gloo: an allreduce of a copy of the whole input" v.out
check "allgatherv, reduce_scatter_v --split-sizes skewed on 3 ranks: exact, parts and composition named" $? "$(grep '^# note' v.out; tail -n 4 v.out)"
# -z 1 (nccl-tests' --blocking) with -m 4: exact, recorded, the note says each
# operation was waited for (Collectives.BlockingWaitsForEachOperation counts
# the operations in flight: 4 without -z, 1 with it).
"$DT" comm --nproc 2 -b 1K -e 1K -n 3 -w 1 -m 4 -z 1 --json z.json >z.out 2>&1 &&
  json z.json "j['config']['blocking'] is True and j['summary']['wrong'] == 0" | grep -q True &&
  grep -q "# note: -m 4 -z 1: each timed iteration is 4 operations, each waited for before the next" z.out
check "-m 4 -z 1: exact, recorded, the note" $? "$(grep '^# note' z.out; tail -n 3 z.out)"
# --groups by layout name: on 4 ranks dp,tp=2 is the data-parallel groups
# {0,2} and {1,3} of a dp 2 x tp 2 mesh (train's rank order), tp=2 its
# tensor-parallel pairs {0,1} and {2,3}.
"$DT" comm --nproc 4 --groups dp,tp=2 -b 1K -e 1K -n 2 -w 0 --json gdp.json >gdp.out 2>&1 &&
  [ "$(json gdp.json "([r['group_ranks'] for r in j['results']], j['config']['groups'], j['summary']['wrong'])")" = \
    "([[0, 2], [1, 3]], 'dp,tp=2', 0)" ] &&
  grep -q -- "--groups dp,tp=2: 2 groups, each running the collective at the same time: g0 = ranks 0,2; g1 = ranks 1,3" gdp.out &&
  "$DT" comm --nproc 4 --groups tp=2 -b 1K -e 1K -n 2 -w 0 --json gtp.json >gtp.out 2>&1 &&
  [ "$(json gtp.json "[r['group_ranks'] for r in j['results']]")" = "[[0, 1], [2, 3]]" ]
check "--groups dp,tp=2 and tp=2 on 4 ranks: the mesh's groups, exact" $? "$(grep '^#' gdp.out | tail -n 4; tail -n 3 gtp.out)"
"$DT" comm --nproc 4 --groups tp=3 -b 1K -e 1K >g3.out 2>&1
rc=$?
[ "$rc" -eq 2 ] && [ "$(grep -c . g3.out)" -eq 1 ] && grep -q -- "--groups 'tp=3': tp 3 x pp 1 does not divide the 4 ranks" g3.out
check "--groups tp=3 on 4 ranks: one line, exit 2" $? "rc $rc: $(cat g3.out)"
"$DT" comm --nproc 2 --groups tp=2 --split mod:2 -b 1K -e 1K >gx.out 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q -- "--groups excludes --split\|--split excludes --groups" gx.out
check "--groups with --split: refused" $? "rc $rc: $(cat gx.out)"
# --concurrent 2 (PARAM's multi-comms): two gloo communicators run each
# collective at once, alone and inside --groups; exact; the note; mpi, with
# one communicator, refused (Collectives.ConcurrentLanesRunAtOnce counts the
# operations in flight on both).
"$DT" comm --nproc 2 --concurrent 2 --collective allreduce,allgather -b 1K -e 64K -f 64 -n 3 -w 1 \
  --json cc.json >cc.out 2>&1 &&
  json cc.json "j['config']['concurrent'] == 2 and j['summary']['wrong'] == 0 and len(j['results']) == 4" | grep -q True &&
  grep -q "# note: --concurrent 2: each operation runs on 2 communicators over the same ranks at once" cc.out &&
  "$DT" comm --nproc 4 --groups tp=2 --concurrent 2 -b 1K -e 1K -n 2 -w 0 --json ccg.json >ccg.out 2>&1 &&
  [ "$(json ccg.json "[(r['group_ranks'], r['in_place']['nwrong']) for r in j['results']]")" = "[([0, 1], 0), ([2, 3], 0)]" ]
check "--concurrent 2: exact alone and in --groups tp=2, the note" $? "$(grep '^# note' cc.out; tail -n 3 cc.out ccg.out)"
"$DT" comm --nproc 2 --backend mpi --concurrent 2 -b 1K -e 1K >ccm.out 2>&1
rc=$?
[ "$rc" -eq 2 ] && [ "$(grep -c . ccm.out)" -eq 1 ] && grep -q -- "--concurrent needs --backend gloo or nccl" ccm.out
check "--concurrent on mpi: one line, exit 2" $? "rc $rc: $(cat ccm.out)"
# float8 outside NCCL: one line, exit 2, before any rank starts.
"$DT" comm --nproc 2 -d float8_e4m3 --collective allgather -b 1K -e 1K >f8.out 2>&1
rc=$?
[ "$rc" -eq 2 ] && [ "$(grep -c . f8.out)" -eq 1 ] && grep -q -- "-d float8_e4m3: gloo has no float8 type" f8.out
check "-d float8_e4m3 on gloo: one line, exit 2" $? "rc $rc: $(cat f8.out)"
# Every collective asked for refused (mpi has no avg): exit 2 naming why, not
# an empty success.
"$DT" comm --nproc 2 --backend mpi -o avg -b 1K -e 1K -n 1 -w 0 >avg.out 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "error: nothing to run: allreduce: mpi: MPI has no avg reduction" avg.out
check "mpi -o avg: nothing to run, exit 2" $? "rc $rc: $(grep error avg.out)"
# bool: mpi (MPI_C_BOOL, logical ops) always; gloo where LibTorch's has it
# (2.x; 1.13 refuses, named in one line).
"$DT" comm --nproc 2 --backend mpi -d bool -o max --collective allreduce,allgather -b 1K -e 1K -n 2 -w 0 \
  --json bool.json >bool.out 2>&1 &&
  [ "$(json bool.json "[(r['collective'], r['type'], r['out_of_place']['nwrong']) for r in j['results']]")" = \
    "[('allreduce', 'bool', 0), ('allgather', 'bool', 0)]" ]
check "mpi -d bool -o max: allreduce and allgather exact" $? "$(tail -n 4 bool.out)"
"$DT" comm --nproc 2 -d bool --collective allreduce -b 1K -e 1K -n 2 -w 0 >boolg.out 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then
  grep -q "Out of bounds values : 0 OK" boolg.out
else
  [ "$rc" -eq 2 ] && grep -q "nothing to run: allreduce: gloo: ProcessGroupGloo in LibTorch 1.13 has no bool" boolg.out
fi
check "gloo -d bool: exact (LibTorch 2.x) or refused naming 1.13" $? "rc $rc: $(tail -n 3 boolg.out)"
finish
