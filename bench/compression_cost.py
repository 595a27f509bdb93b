#!/usr/bin/env python3
"""Where gradient compression's cost goes (docs/PERFORMANCE.md, "Training: what fp16/bf16 compression costs").

Reads `dtbench ddp --trace` files of the same run with --compression none,
fp16, bf16 (one file per run, same reducer, ranks, buckets) and prints per
compression the medians over rank-iterations of: the iteration, the casts
(into the wire dtype and back), and the collectives (launch to completion,
summed over buckets), then for each compressed run the extra iteration time
against `none` beside what the casts and the slower collectives explain.
With the `sync` reducer (allreduce after backward, nothing overlapped with
compute) everything compression adds lies in the "comm wait" phase after
backward (launch casts, collectives, casts back): its growth should be at
most the casts plus the slower collectives (less where a cast overlaps an
earlier bucket's collective); a positive last column is cost beyond both.
The extra iteration time is shown too: it also carries the drift of
forward/backward between runs on a noisy machine.

Usage: bench/compression_cost.py none=T1.json fp16=T2.json [bf16=T3.json ...]
(each T a trace file; repeat a name to pool rounds: fp16=a.json fp16=b.json)
"""
import json
import statistics
import sys
from collections import defaultdict


def merged_length(intervals):
    """Total length of a union of [start, end) intervals."""
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def rank_iterations(path):
    """Per (pid, iteration) of one trace: the iteration, the casts (summed:
    they run one after another on the training thread), the collectives
    (their union: buckets in flight together count once) and the union of
    both, in microseconds."""
    doc = json.load(open(path))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    iters, waits, casts, colls = {}, defaultdict(float), defaultdict(list), defaultdict(list)
    begins = {}
    for e in events:
        name, ph = e.get("name", ""), e.get("ph")
        it = (e.get("args") or {}).get("iteration")
        if ph == "X" and name.startswith("iteration "):
            iters[(e["pid"], int(name.split()[1]))] = e["dur"]
        elif ph == "X" and name == "comm wait":
            waits[(e["pid"], it)] += e["dur"]
        elif ph == "X" and e.get("cat") == "compression":
            casts[(e["pid"], it)].append((e["ts"], e["ts"] + e["dur"]))
        elif ph == "b" and e.get("cat") == "collective":
            begins[(e["pid"], e["id"])] = (e["ts"], it)
        elif ph == "e" and e.get("cat") == "collective":
            ts0, it0 = begins.pop((e["pid"], e["id"]))
            colls[(e["pid"], it0)].append((ts0, e["ts"]))
    return [{"iter": dur,
             "wait": waits[k],
             "cast": sum(b - a for a, b in casts[k]),
             "coll": merged_length(colls[k]),
             "both": merged_length(casts[k] + colls[k])} for k, dur in iters.items()]


def main(argv):
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        sys.exit(__doc__.strip().splitlines()[-2])
    rows = defaultdict(list)
    for arg in argv[1:]:
        name, path = arg.split("=", 1)
        rows[name].extend(rank_iterations(path))
    if "none" not in rows:
        sys.exit("compression_cost: give the uncompressed run as none=TRACE")
    keys = ("iter", "wait", "cast", "coll", "both")
    med = {n: {k: statistics.median(r[k] for r in rs) / 1e3 for k in keys} for n, rs in rows.items()}
    print("| compression | rank-iterations | iteration ms | comm wait ms | casts ms | collectives ms (union) | "
          "casts ∪ collectives ms |")
    print("|---|---|---|---|---|---|---|")
    for n, m in med.items():
        print(f"| {n} | {len(rows[n])} | {m['iter']:.1f} | {m['wait']:.1f} | {m['cast']:.1f} | {m['coll']:.1f} | "
              f"{m['both']:.1f} |")
    base = med["none"]
    print("\n| compression | extra iteration ms | extra comm wait ms | casts ms | slower collectives ms | "
          "casts + slower | extra comm wait − (casts + slower) |")
    print("|---|---|---|---|---|---|---|")
    for n, m in med.items():
        if n == "none":
            continue
        extra = m["iter"] - base["iter"]
        wait = m["wait"] - base["wait"]
        slower = m["coll"] - base["coll"]
        print(f"| {n} | {extra:+.1f} | {wait:+.1f} | {m['cast']:.1f} | {slower:+.1f} | {m['cast'] + slower:+.1f} | "
              f"{wait - m['cast'] - slower:+.1f} |")


if __name__ == "__main__":
    main(sys.argv)
