#!/usr/bin/env python3
"""Median over rounds of `dtbench compare` JSON reports (the numbers in
docs/PERFORMANCE.md): p50 total iteration time per strategy and bucket size,
and its ratio to the ddp baseline of the same round, median over rounds.
Usage: bench/compare_rounds.py r1.json r2.json [...]"""
import json, statistics, sys


def p50(xs):
    xs = sorted(xs)
    k = (len(xs) - 1) * 0.5
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def iteration_times(run):
    n = len(run["ranks"][0]["total"])
    return [max(r["total"][i] for r in run["ranks"]) for i in range(n)]


rounds = []
for path in sys.argv[1:]:
    doc = json.load(open(path))
    assert doc["schema"] == "dtbench.compare" and doc["complete"], path
    t = {}
    for p in doc["points"]:
        k = p["key"]
        strategy = k["reducer"] + ("" if k["compression"] == "none" else "+" + k["compression"])
        t[(strategy, k["bucket_cap_mb"], k["world_size"])] = p50(iteration_times(p["run"]))
    rounds.append(t)

keys = list(rounds[0])
buckets = sorted({k[1] for k in keys})
strategies = []
for k in keys:
    if k[0] not in strategies:
        strategies.append(k[0])
print(f"p50 s/iter, median of {len(rounds)} round(s); in brackets: ratio to ddp at the same bucket size (median of per-round ratios)")
print("| strategy | " + " | ".join(f"{b:g} MB" for b in buckets) + " |")
print("|---|" + "---|" * len(buckets))
for s in strategies:
    cells = []
    for b in buckets:
        ws = [k[2] for k in keys if k[0] == s and k[1] == b]
        if not ws:
            cells.append("-")
            continue
        w = ws[0]
        med = statistics.median(r[(s, b, w)] for r in rounds)
        ratio = statistics.median(r[(s, b, w)] / r[("ddp", b, w)] for r in rounds)
        cells.append(f"{med:.3f} ({ratio:.2f})")
    print(f"| {s} | " + " | ".join(cells) + " |")
