"""The comm part: `dtbench comm` on NCCL beside the device's copy ceiling,
beside GEMMs, and in the integer types."""
import json

from driver import Step, StepFailed, last_json_line
from part_common import ratio


def read_comm(path):
    with open(path) as f:
        rep = json.load(f)
    wrong = rep["summary"]["wrong"]
    if wrong:
        raise StepFailed(f"dtbench comm counted {wrong} wrong element(s): the collectives are broken here")
    # The report's nccl-tests names (size, time, alg_bw, ...) to this summary's.
    names = {"time_us": "time", "algbw_gbs": "alg_bw", "busbw_gbs": "bus_bw", "wrong": "nwrong"}
    return {"results": [{"collective": r["collective"], "bytes": r["size"]} |
                        {pl: ({k: r[pl][v] for k, v in names.items()}
                              if r.get(pl) else None) for pl in ("in_place", "out_of_place")}
                        for r in rep["results"]],
            "skipped": rep.get("skipped", []), "notes": rep.get("notes", []),
            "backend": rep["config"]["backend"]}


def plan_comm(ctx):
    z = ctx.sizes["comm"]
    report, compute = ctx.path("comm.json"), ctx.path("comm_compute.json")
    return [Step("comm", [ctx.dt, "comm", *ctx.dev_flags(), "--collective", "all", "-b", z["min"], "-e", z["max"],
                          "-f", "4", "-n", str(z["iters"]), "-w", str(z["warmup"]), "--json", report],
                 parse=lambda out, c: read_comm(report)),
            Step("copy", [ctx.py, ctx.bench("peers", "torch_copy.py"), "--device", ctx.device,
                          "--sizes", z["copy_sizes"]], parse=lambda out, c: last_json_line(out)),
            # The allreduce beside GEMMs on the GPU's own side stream, with
            # the per-row copy ceiling and the allocator's peak (-M 1).
            Step("compute", [ctx.dt, "comm", *ctx.dev_flags(), "--collective", "allreduce", "-b", z["wc_min"],
                             "-e", z["max"], "-f", "16", "-n", str(z["iters"]), "-w", str(z["warmup"]),
                             "--with-compute", f"gemm:{z['gemm']}", "-M", "1", "--json", compute],
                 parse=lambda out, c: read_comm_compute(compute), optional=True)] + [
            # The types gpu_cli does not cover: every collective, each checked.
            Step(f"dtype.{t}", [ctx.dt, "comm", *ctx.dev_flags(), "--collective", "all", "-d", t, "-b", "1K",
                                "-e", z["types_max"], "-f", "16", "-n", "5", "-w", "2", "--json",
                                ctx.path(f"comm_{t}.json")],
                 parse=lambda out, c, t=t: read_comm(ctx.path(f"comm_{t}.json")), optional=True)
            for t in ("int8", "uint8", "int64")] + ([
            # -G: the allreduce rows of the first step again, each row's
            # iterations captured into a CUDA graph and launched 20 times
            # (NCCL only: the CPU rehearsal has no graph to run).
            Step("graph", [ctx.dt, "comm", *ctx.dev_flags(), "--collective", "allreduce", "-b", z["min"],
                           "-e", z["types_max"], "-f", "4", "-n", str(z["iters"]), "-w", str(z["warmup"]),
                           "--cuda-graph", "20", "--json", ctx.path("comm_graph.json")],
                 parse=lambda out, c: read_comm(ctx.path("comm_graph.json")), optional=True)]
            if ctx.device == "cuda" else [])


def read_comm_compute(path):
    """comm --with-compute -M 1: per size, the allreduce's time alone and
    beside the GEMMs, the GEMMs' slowdown, the copy ceiling; the memory."""
    with open(path) as f:
        rep = json.load(f)
    if rep["summary"]["wrong"]:
        raise StepFailed(f"comm --with-compute counted {rep['summary']['wrong']} wrong element(s)")
    rows = []
    for r in rep["results"]:
        x = r.get("out_of_place") or r.get("in_place")
        wc = x.get("with_compute") or {}
        rows.append({"bytes": r["size"], "time_us": x["time"], "with_compute_us": wc.get("time"),
                     "slowdown": wc.get("slowdown"), "gemm_us_alone": wc.get("gemm_us_alone"),
                     "gemm_us_during": wc.get("gemm_us_during"), "gemm_slowdown": wc.get("gemm_slowdown"),
                     "gemms_during": wc.get("gemms_during"), "iters": wc.get("iters"),
                     "ceiling_gbs": x.get("ceiling_gbs"),
                     "of_ceiling": x.get("of_ceiling")})
    return {"rows": rows, "memory": rep.get("memory")}


def sum_comm(ctx, got):
    c, copy = got.get("comm"), got.get("copy")
    if not c:
        return ["not run"]
    lines = [f"`dtbench comm --backend {c['backend']}`, world size 1, every collective, #wrong 0 (checked); "
             "largest size per collective:", "",
             "| collective | bytes | in-place algbw GB/s | out-of-place algbw GB/s | out-of-place ÷ copy of that size |",
             "|---|---|---|---|---|"]
    def ceiling(nbytes):  # the copy of the same size only
        same = [x["copy_gbs"] for x in copy or [] if x["bytes"] == nbytes]
        return same[0] if same else 0.0

    last = {}
    for r in c["results"]:
        last[r["collective"]] = r
    def bw(x):
        return f"{x['algbw_gbs']:.2f}" if x else "n/a"

    for name, r in last.items():
        ip, oop = r.get("in_place"), r.get("out_of_place")
        lines.append(f"| {name} | {r['bytes']} | {bw(ip)} | {bw(oop)} | "
                     f"{ratio(oop['algbw_gbs'], ceiling(r['bytes'])) if oop else 'n/a'} |")
    lines.append("")
    lines.append("At one rank an in-place allreduce, broadcast or reduce has nothing to move: its algbw is the "
                 "size over the call's own cost, not a bandwidth. Out of place, the collective is a copy at best.")
    if copy:
        lines.append("copy ceiling (torch_copy.py, bytes counted once): " +
                     ", ".join(f"{x['bytes']} B {x['copy_gbs']:.2f} GB/s" for x in copy))
    if c["skipped"]:
        lines.append("skipped: " + "; ".join(c["skipped"]))
    wc = got.get("compute")
    if wc:
        z = ctx.sizes["comm"]
        lines += ["", f"allreduce beside {z['gemm']}² float32 GEMMs on a side stream (`--with-compute "
                  f"gemm:{z['gemm']} -M 1`), with the copy ceiling dtbench measures per row:", "",
                  "| bytes | alone us | beside GEMMs us | ÷ alone | GEMM us alone | GEMM us during | GEMM ÷ alone "
                  "| GEMMs during | iterations | copy ceiling GB/s |", "|---|---|---|---|---|---|---|---|---|---|"]
        def f(v, fmt):
            return format(v, fmt) if isinstance(v, (int, float)) else "n/a"
        for r in wc["rows"]:
            lines.append(f"| {r['bytes']} | {f(r['time_us'], '.1f')} | {f(r['with_compute_us'], '.1f')} | "
                         f"{f(r['slowdown'], '.2f')} | {f(r['gemm_us_alone'], '.1f')} | "
                         f"{f(r['gemm_us_during'], '.1f')} | {f(r['gemm_slowdown'], '.2f')} | "
                         f"{r['gemms_during']} | {r['iters']} | {f(r['ceiling_gbs'], '.1f')} |")
        lines.append(f"memory (-M 1): {json.dumps(wc['memory'])}")
    g = got.get("graph")
    if g:
        eager = {(r["collective"], r["bytes"]): r for r in c["results"]}
        lines += ["", "allreduce with each row's iterations captured into a CUDA graph (`--cuda-graph 20`) beside "
                  "the same row of the first step (no graph), in place:", "",
                  "| bytes | no graph us | graph us | graph ÷ no graph |", "|---|---|---|---|"]
        for r in g["results"]:
            x, e = r.get("in_place"), (eager.get((r["collective"], r["bytes"])) or {}).get("in_place")
            if not x:
                continue
            before = f"{e['time_us']:.2f}" if e else "n/a"
            lines.append(f"| {r['bytes']} | {before} | {x['time_us']:.2f} | "
                         f"{ratio(x['time_us'], e['time_us']) if e else 'n/a'} |")
    for t in ("int8", "uint8", "int64"):
        r = got.get(f"dtype.{t}")
        if r:
            sizes = sorted({x["bytes"] for x in r["results"]})
            names = sorted({x["collective"] for x in r["results"]})
            lines.append(f"- `-d {t}`: {len(r['results'])} rows ({', '.join(names)}; {sizes[0]}–{sizes[-1]} B), "
                         "#wrong 0" + (f"; skipped: {'; '.join(r['skipped'])}" if r["skipped"] else ""))
    return lines


# ---- 5. the GPU tests and a dtbench trace -----------------------------------
