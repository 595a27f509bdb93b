"""What the GPU run measures, in order of value (a run cut short keeps the
first parts): each part is a plan of steps (commands) and a summary of what
they found. Sizes come from run.py's SIZES: the GPU's, or the rehearsal's
tiny ones on the CPU."""
import glob
import gzip
import json
import os

from driver import Part, Step, StepFailed, last_json_line, median

# Dense bf16 TFLOP/s per GPU (vendors' datasheets, without sparsity), by a
# part of the name the CUDA runtime reports; the MFU columns divide by it.
PEAK_BF16_TFLOPS = [("H200", 989.4), ("H100 NVL", 835.0), ("H100 PCIe", 756.0), ("H100", 989.4),
                    ("A100", 312.0), ("L40S", 362.0)]


def peak_for(gpu_name):
    for key, tflops in PEAK_BF16_TFLOPS:
        if key in gpu_name:
            return tflops
    return 0.0


# ---- reading dtbench's and the peers' reports ------------------------------

def dt_rows(path):
    """dtbench ddp's JSON report: label -> the figures the parts compare."""
    with open(path) as f:
        rep = json.load(f)
    rows = {}
    for r in rep["runs"]:
        s = r["slowest_rank_summary"]
        rows[r["label"]] = {
            "p50": s["p50"], "p75": s.get("p75", 0.0), "p90": s.get("p90", 0.0),
            "ex_s": s.get("job_examples_per_sec_p50", 0.0),
            "tok_s": r.get("tokens_per_sec_per_rank") or 0.0, "mfu": r.get("mfu", 0.0),
            "flops_per_example": r.get("train_flops_per_example", 0.0),
            "peak_bytes": r.get("memory", {}).get("peak_bytes", -1),
            "device": r.get("extras", {}).get("device", ""),
            "phases": rank0_phases(r),
        }
    return rows


def rank0_phases(run):
    """Rank 0's phase medians: CUDA events on the GPU, the host clock on the
    CPU (the rehearsal)."""
    ranks = run.get("ranks") or [{}]
    src = ranks[0].get("device") or ranks[0]
    return {k: median(src[k]) for k in ("forward", "backward", "comm_wait", "optimizer") if src.get(k)}


def dt_step(ctx, label, args, report):
    return Step(label, [ctx.dt] + args + ["--json", report],
                parse=lambda out, c, report=report: dt_rows(report))


def peer_step(ctx, label, script, args, optional=False):
    return Step(label, [ctx.dt, "launch", "--nproc-per-node", "1", "--", ctx.py, ctx.bench("peers", script)] + args,
                parse=lambda out, c: last_json_line(out), optional=optional)


def ratio(a, b):
    return f"{a / b:.3f}" if a and b else "n/a"


def gib(b):
    return f"{b / 2**30:.2f}" if b is not None and b >= 0 else "n/a"


# ---- preflight --------------------------------------------------------------

def plan_preflight(ctx):
    steps = []
    if ctx.device == "cuda":
        steps.append(Step("nvidia-smi", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                                         "--format=csv,noheader"], parse=lambda out, c: out.strip()))
    steps.append(Step("libraries", ["ldd", os.path.join(os.path.dirname(ctx.dt), "dtbench-torch")],
                      parse=check_ldd))
    steps.append(Step("env", [ctx.dt, "env", "--json", ctx.path("env.json")], parse=read_env))
    return steps


def check_ldd(out, ctx):
    missing = [ln.split()[0] for ln in out.splitlines() if "not found" in ln]
    if missing:
        raise StepFailed("dtbench-torch cannot load " + ", ".join(missing) +
                         ": LD_LIBRARY_PATH lacks them (python3's torch, its nvidia/ libraries, the bundle's lib/)")
    return {"libraries": len(out.splitlines())}


def read_env(out, ctx):
    with open(ctx.path("env.json")) as f:
        env = json.load(f)
    cuda = env.get("cuda", {})
    gpu = cuda.get("gpu", {})
    if ctx.device == "cuda":
        if gpu.get("count", 0) < 1:
            raise StepFailed("dtbench sees no GPU: " + gpu.get("why", json.dumps(cuda)))
        ctx.gpu = gpu["devices"][0]["name"]
        ctx.peak_tflops = peak_for(ctx.gpu)
        # GPT-2 at 1,024 tokens (attention written out, as both sides) takes
        # about 2 GB per example: a batch that fills most of the GPU.
        gib_total = gpu["devices"][0].get("memory_bytes", 0) / 2**30
        ctx.sizes["gpt"]["batch"] = 40 if gib_total >= 120 else 24 if gib_total >= 70 else 16
    return {"gpu": ctx.gpu, "peak_bf16_tflops": ctx.peak_tflops, "dtbench": env.get("dtbench", {}),
            "cuda": {k: v for k, v in gpu.items() if k != "devices"}}


def sum_preflight(ctx, got):
    lines = []
    if got.get("nvidia-smi"):
        lines.append(f"- GPU (nvidia-smi): {got['nvidia-smi']}")
    if got.get("env"):
        e = got["env"]
        lines.append(f"- dtbench sees: {e['gpu'] or 'no GPU (CPU rehearsal)'}; MFU peak "
                     f"{e['peak_bf16_tflops'] or 'none'} TFLOP/s; CUDA {json.dumps(e['cuda'])}")
    lines.append(f"- peers' python: {ctx.py} (torch {ctx.sizes.get('torch_version', '?')})")
    return lines


# ---- 1. the seed's table ----------------------------------------------------

def plan_seed(ctx):
    z = ctx.sizes["seed"]
    steps = []
    for r in range(z["rounds"]):
        for i, m in enumerate(z["models"]):
            tag = f"{m}.r{r + 1}"
            dt = dt_step(ctx, f"{tag}.dtbench",
                         ["ddp", "-m", m, "--image-size", str(z["image"]), "-b", str(z["batch"]), *ctx.dev_flags(),
                          "--reducer", "ddp", "--bucket-cap-mb", "25", "--world-sizes", "1", "--threads", "1",
                          "-n", str(z["iters"]), "-w", str(z["warmup"])], ctx.path(f"seed.{tag}.json"))
            py = peer_step(ctx, f"{tag}.python", "torch_ddp.py",
                           ["--model", m, "--image-size", str(z["image"]), "--batch-size", str(z["batch"]),
                            "--device", ctx.device, "--iters", str(z["iters"]), "--warmup", str(z["warmup"]),
                            "--bucket-cap-mb", "25", "--baseline"])
            dt.optional = py.optional = r > 0
            # Who goes first alternates from model to model and from round to
            # round: a run cut after round 1 is not all dtbench-first.
            steps += [dt, py] if (r + i) % 2 == 0 else [py, dt]
    return steps


def pct(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def sum_seed(ctx, got):
    z = ctx.sizes["seed"]
    lines = [f"batch {z['batch']}, {z['image']}², float32, 1 rank, {z['iters']} timed + {z['warmup']} warm-up "
             "iterations, median over the rounds of each round's figure (s/iter); goal: ratio ≤ 1.00",
             "", "| model | rounds | no ddp p50: dtbench / Python | ratio | 1 rank DDP p50: dtbench / Python | ratio "
             "| ddp ÷ none: dtbench / Python |", "|---|---|---|---|---|---|---|"]
    tails = ["", "p75 and p90 (ms), same runs:", "",
             "| model | no ddp p75 | no ddp p90 | DDP p75 | DDP p90 |", "|---|---|---|---|---|"]
    for m in z["models"]:
        f = {k: [] for k in ("dn", "dd", "pn", "pd")}
        q = {k: [] for k in ("dn75", "dn90", "dd75", "dd90", "pn75", "pn90", "pd75", "pd90")}
        for r in range(z["rounds"]):
            d, p = got.get(f"{m}.r{r + 1}.dtbench"), got.get(f"{m}.r{r + 1}.python")
            if d and p:  # a round counts when both sides ran
                f["dn"].append(d["no ddp"]["p50"]); f["dd"].append(d["1N/1R"]["p50"])
                f["pn"].append(p["no_ddp"]["p50"]); f["pd"].append(p["p50"])
                for side, row in (("dn", d["no ddp"]), ("dd", d["1N/1R"])):
                    q[side + "75"].append(row["p75"]); q[side + "90"].append(row["p90"])
                for side, times in (("pn", p["no_ddp"]["times"]), ("pd", p["times"])):
                    q[side + "75"].append(pct(times, 75)); q[side + "90"].append(pct(times, 90))
        if not f["dn"]:
            lines.append(f"| {m} | 0 | not run | | | | |")
            continue
        a, b, c, e = (median(f[k]) for k in ("dn", "pn", "dd", "pd"))
        lines.append(f"| {m} | {len(f['dn'])} | {a * 1e3:.2f} / {b * 1e3:.2f} ms | {ratio(a, b)} | "
                     f"{c * 1e3:.2f} / {e * 1e3:.2f} ms | {ratio(c, e)} | {ratio(c, a)} / {ratio(e, b)} |")
        mq = {k: median(v) * 1e3 for k, v in q.items()}
        tails.append(f"| {m} | {mq['dn75']:.2f} / {mq['pn75']:.2f} | {mq['dn90']:.2f} / {mq['pn90']:.2f} | "
                     f"{mq['dd75']:.2f} / {mq['pd75']:.2f} | {mq['dd90']:.2f} / {mq['pd90']:.2f} |")
    return lines + tails


# ---- 2. every strategy on GPT-2 ---------------------------------------------

STRATEGY_PEER = {"ddp": "ddp", "overlap": "ddp", "horovod": "ddp", "zero1": "zero1", "zero2": "zero1",
                 "fsdp": "fsdp"}
PEER_NAME = {"ddp": "DDP", "zero1": "DDP + ZeroRedundancyOptimizer", "fsdp": "FSDP2 (fully_shard)"}


def plan_strategies(ctx):
    z = ctx.sizes["gpt"]
    common = ["--seq-len", str(z["seq"]), "-b", str(z["batch"]), "--optimizer", "adamw", "--amp", "bf16",
              "--world-sizes", "1", "--bucket-cap-mb", "25", "--threads", "1",
              "-n", str(z["iters"]), "-w", str(z["warmup"]), *ctx.dev_flags(),
              "--peak-tflops", f"{ctx.peak_tflops:g}"]
    steps, peers_done = [], set()

    def peer(name):
        return peer_step(ctx, f"{name}.torch", "torch_sharded.py",
                         ["--strategy", name, *z["peer_shape"], "--seq-len", str(z["seq"]),
                          "--batch-size", str(z["batch"]), "--iters", str(z["iters"]),
                          "--warmup", str(z["warmup"]), "--bucket-cap-mb", "25", "--amp", "bf16",
                          "--threads", "1", "--device", ctx.device])
    for i, s in enumerate(z["strategies"]):
        # ddp's row keeps its "no ddp" row (the model and step alone), beside
        # the peer's one process without a wrapper: where the time goes when
        # no strategy runs.
        extra = [] if s == "ddp" else ["--no-baseline"]
        dt = dt_step(ctx, f"{s}.dtbench", ["ddp", "--model", "gpt2", *z["dt_shape"], "--reducer", s, *common,
                                           *extra], ctx.path(f"gpt.{s}.json"))
        pair = [dt]
        name = STRATEGY_PEER[s]
        if name not in peers_done:
            peers_done.add(name)
            pair = [dt, peer(name)] if len(peers_done) % 2 else [peer(name), dt]
            if s == "ddp":
                pair = [peer("none")] + pair
        steps += pair
    # Last, untimed: each side's ddp under torch.profiler (dtbench through
    # LibTorch's own Kineto, --torch-profiler), two iterations after the
    # warm-up: the kernels of the same work side by side.
    prof = list(common)
    prof[prof.index("-n") + 1] = "2"  # the two profiled iterations are the timed ones
    dt_prof = Step("ddp.dtbench.profile",
                   [ctx.dt, "ddp", "--model", "gpt2", *z["dt_shape"], "--reducer", "ddp", *prof, "--no-baseline",
                    "--torch-profiler", ctx.path("gpt_dtbench_profile.json"), "--trace-iters", "2",
                    "--json", ctx.path("gpt.ddp.profiled.json")],
                   parse=lambda out, c: read_kineto(first(glob.glob(c.path("gpt_dtbench_profile*.json"))), c),
                   optional=True)
    py_prof = peer_step(ctx, "ddp.torch.profile", "torch_sharded.py",
                        ["--strategy", "ddp", *z["peer_shape"], "--seq-len", str(z["seq"]),
                         "--batch-size", str(z["batch"]), "--iters", "1", "--warmup", str(z["warmup"]),
                         "--bucket-cap-mb", "25", "--amp", "bf16", "--threads", "1", "--device", ctx.device,
                         "--profile", ctx.path("gpt_peer_profile.json"), "--profile-iters", "2"], optional=True)
    py_prof.parse = lambda out, c: read_kineto(c.path("gpt_peer_profile.json"), c)
    return steps + [dt_prof, py_prof]


def first(paths):
    if not paths:
        raise StepFailed("no trace file was written")
    return sorted(paths)[0]


def read_kineto(path, ctx):
    """A Kineto Chrome trace: its events, the ProfilerStep#N marks, and per
    category (cpu_op, kernel, ...) the count and total duration (us); on the
    GPU it must hold the kernels."""
    with open(path) as f:
        tr = json.load(f)
    events = tr.get("traceEvents", [])
    steps = sorted({e["name"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")})
    if not steps:
        raise StepFailed(f"{os.path.basename(path)}: no ProfilerStep#N in the trace")
    cats = {}
    for e in events:
        if e.get("ph") == "X":
            c = cats.setdefault(e.get("cat", "?"), {"count": 0, "us": 0.0})
            c["count"] += 1
            c["us"] += float(e.get("dur", 0))
    if ctx.device == "cuda" and not cats.get("kernel"):
        raise StepFailed(f"{os.path.basename(path)}: no GPU kernel in the trace")
    return {"events": len(events), "steps": steps, "categories": cats,
            "distributed": tr.get("distributedInfo"), "bytes": os.path.getsize(path)}


def sum_strategies(ctx, got):
    z = ctx.sizes["gpt"]
    lines = ["overlap and horovod run beside DDP, zero2 beside ZeRO-1 (PyTorch has no ZeRO-2); tensor and "
             "pipeline layouts need 2 GPUs (one is lent) and are not measured here.", "",
             f"GPT-2 ({' '.join(z['dt_shape']) or 'gpt2 small: 12 layers, width 768'}), {z['seq']} tokens, "
             f"batch {z['batch']}, bf16 autocast, AdamW, 1 rank, {z['iters']} + {z['warmup']} iterations; peak = "
             "the CUDA caching allocator's max allocated bytes in the timed iterations (CPU: dtbench's tensor "
             "counter; the peer's n/a); goal: time ratio ≤ 1.00, peak within ±10 %", "",
             "| strategy | p50 ms | tokens/s | MFU | peak GiB | peer | peer p50 ms | peer peak GiB | time ratio "
             "| peak ratio |", "|---|---|---|---|---|---|---|---|---|---|"]
    for s in z["strategies"]:
        d = got.get(f"{s}.dtbench")
        if not d:
            lines.append(f"| {s} | not run | | | | | | | | |")
            continue
        d = d["1N/1R"]
        peer = STRATEGY_PEER[s]
        p = got.get(f"{peer}.torch") or {}
        pp50, ppeak = p.get("p50"), p.get("peak_bytes", -1)
        lines.append(f"| {s} | {d['p50'] * 1e3:.1f} | {d['tok_s']:.0f} | {d['mfu']:.3f} | {gib(d['peak_bytes'])} | "
                     f"{PEER_NAME[peer]} | {pp50 * 1e3 if pp50 else float('nan'):.1f} | {gib(ppeak)} | "
                     f"{ratio(d['p50'], pp50)} | "
                     f"{ratio(d['peak_bytes'], ppeak) if ppeak and ppeak > 0 else 'n/a'} |")
    for side in ("ddp.dtbench.profile", "ddp.torch.profile"):
        k = got.get(side)
        if k:
            kern = k["categories"].get("kernel", {})
            ops = k["categories"].get("cpu_op", {})
            lines.append(f"- {side}: {k['events']} events, {', '.join(k['steps'])}; cpu_op {ops.get('count', 0)} "
                         f"({ops.get('us', 0) / 1e3:.1f} ms), kernel {kern.get('count', 0)} "
                         f"({kern.get('us', 0) / 1e3:.1f} ms)")
    return lines + phase_table(got)


def phase_table(got):
    """Where the time goes, phase by phase: dtbench's no-ddp and ddp rows
    (CUDA events; the host clock on the CPU) beside the peer's one process
    and its DDP, timed at the same boundaries."""
    d = got.get("ddp.dtbench") or {}
    sides = [("dtbench, no ddp", d.get("no ddp", {}).get("phases")), ("dtbench ddp", d.get("1N/1R", {}).get("phases")),
             ("PyTorch, no wrapper", (got.get("none.torch") or {}).get("phase_p50_s")),
             ("PyTorch DDP", (got.get("ddp.torch") or {}).get("phase_p50_s"))]
    if not any(p for _, p in sides):
        return []
    lines = ["", "Phases, p50 ms (rank 0; forward with the loss, backward, comm wait, optimizer step with "
             "zero_grad):", "", "| run | p50 | forward | backward | comm wait | optimizer |", "|---|---|---|---|---|---|"]
    p50 = {"dtbench, no ddp": d.get("no ddp", {}).get("p50"), "dtbench ddp": d.get("1N/1R", {}).get("p50"),
           "PyTorch, no wrapper": (got.get("none.torch") or {}).get("p50"),
           "PyTorch DDP": (got.get("ddp.torch") or {}).get("p50")}

    def ms(v):
        return f"{v * 1e3:.2f}" if isinstance(v, (int, float)) else "n/a"
    for name, p in sides:
        p = p or {}
        lines.append(f"| {name} | {ms(p50[name])} | {ms(p.get('forward'))} | {ms(p.get('backward'))} | "
                     f"{ms(p.get('comm_wait'))} | {ms(p.get('optimizer'))} |")
    return lines


# ---- 3. seed 004: Horovod's fusion beside DDP, fp16 compression, AMP ---------

HOROVOD_VARIANTS = [("ddp", "ddp", "none", False), ("ddp + amp", "ddp", "none", True),
                    ("horovod", "horovod", "none", False), ("horovod + fp16 allreduce", "horovod", "fp16", False),
                    ("horovod + amp", "horovod", "none", True),
                    ("horovod + amp + fp16 allreduce", "horovod", "fp16", True)]


def variant_label(name):
    return name.replace(" + ", "+").replace(" ", "-")


def plan_horovod(ctx):
    z = ctx.sizes["horovod"]
    steps = []
    for name, reducer, comp, amp in HOROVOD_VARIANTS:
        args = ["ddp", "-m", "resnet50", "--image-size", str(z["image"]), "-b", str(z["batch"]), *ctx.dev_flags(),
                "--reducer", reducer, "--compression", comp, "--world-sizes", "1", "--no-baseline",
                "--threads", "1", "-n", str(z["iters"]), "-w", str(z["warmup"])]
        if amp:
            args += ["--amp", z["amp"]]
        steps.append(dt_step(ctx, variant_label(name), args, ctx.path(f"horovod.{variant_label(name)}.json")))
    return steps


def sum_horovod(ctx, got):
    z = ctx.sizes["horovod"]
    lines = [f"resnet50, batch {z['batch']}, {z['image']}², 1 rank; AMP = {z['amp']} autocast"
             f"{' with the loss scaler' if z['amp'] == 'fp16' else ''}; "
             "fp16 allreduce = Horovod's Compression.fp16", "",
             "| variant | p50 ms | images/s | ÷ ddp |", "|---|---|---|---|"]
    base = (got.get("ddp") or {}).get("1N/1R", {}).get("ex_s")
    for name, *_ in HOROVOD_VARIANTS:
        d = got.get(variant_label(name))
        if not d:
            lines.append(f"| {name} | not run | | |")
            continue
        d = d["1N/1R"]
        lines.append(f"| {name} | {d['p50'] * 1e3:.1f} | {d['ex_s']:.0f} | {ratio(d['ex_s'], base)} |")
    return lines


# ---- 4. collectives beside the copy ceiling ---------------------------------

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
            for t in ("int8", "uint8", "int64")]


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
    for t in ("int8", "uint8", "int64"):
        r = got.get(f"dtype.{t}")
        if r:
            sizes = sorted({x["bytes"] for x in r["results"]})
            names = sorted({x["collective"] for x in r["results"]})
            lines.append(f"- `-d {t}`: {len(r['results'])} rows ({', '.join(names)}; {sizes[0]}–{sizes[-1]} B), "
                         "#wrong 0" + (f"; skipped: {'; '.join(r['skipped'])}" if r["skipped"] else ""))
    return lines


# ---- 5. the GPU tests and a dtbench trace -----------------------------------

def count_checks(out, ctx):
    return {"ok": sum(ln.startswith("ok:") for ln in out.splitlines()),
            "failed": [ln for ln in out.splitlines() if ln.startswith("FAIL")]}


def read_trace(out, ctx):
    files = sorted(glob.glob(ctx.path("dtbench_trace*.json")))
    if not files:
        raise StepFailed("--trace wrote no file")
    with open(files[0]) as f:
        tr = json.load(f)
    events = tr["traceEvents"] if isinstance(tr, dict) else tr
    return {"file": os.path.basename(files[0]), "events": len(events), "bytes": os.path.getsize(files[0])}


def plan_gpu_tests(ctx):
    z = ctx.sizes["trace"]
    # The trace first: a few seconds; gpu_cli takes what is left of the budget.
    return [Step("trace", [ctx.dt, "ddp", "-m", "resnet50", "--image-size", str(z["image"]), "-b", str(z["batch"]),
                           *ctx.dev_flags(), "--world-sizes", "1", "--no-baseline", "--threads", "1", "-n", "5",
                           "-w", "3", "--trace", ctx.path("dtbench_trace.json"), "--trace-iters", "3",
                           "--json", ctx.path("trace_run.json")], parse=read_trace),
            Step("gpu_cli", ["bash", os.path.join(ctx.repo, "tests", "cli", "device_cli.sh"), ctx.dt, "--gpu"],
                 parse=count_checks, skip_code=77 if ctx.device == "cpu" else None)]


def sum_gpu_tests(ctx, got):
    lines = []
    g = got.get("gpu_cli")
    log = ctx.path("logs", "gpu_tests.gpu_cli.log")
    if g is None and os.path.exists(log):  # failed or cut: what it checked before
        with open(log, errors="replace") as f:
            text = f.read()
        c = count_checks(text, ctx)
        how = "cut by the budget" if "--- cut by the budget" in text else "failed"
        lines.append(f"- gpu_cli (tests/cli/device_cli.sh --gpu): {how} after {c['ok']} checks passed, "
                     f"{len(c['failed'])} failed" + "".join("\n  - " + x for x in c["failed"]))
    elif g is None:
        lines.append("- gpu_cli (tests/cli/device_cli.sh --gpu): not run")
    elif "skipped" in g:
        lines.append(f"- gpu_cli: skipped ({g['skipped']})")
    else:
        lines.append(f"- gpu_cli: {g['ok']} checks passed, {len(g['failed'])} failed" +
                     ("".join("\n  - " + f for f in g["failed"])))
    t = got.get("trace")
    lines.append(f"- dtbench --trace: {t['file']}, {t['events']} events, {t['bytes']} bytes" if t else
                 "- dtbench --trace: not run")
    return lines


# ---- 6. a real profiler trace of Python DDP ---------------------------------

def read_profile(out, ctx):
    """The profile must hold the collectives: c10d's ops (c10d::allreduce_)
    always, and on NCCL the record_param_comms events that carry each
    collective's name, sizes and group (ProcessGroupGloo records none)."""
    path = ctx.path("ddp_profile.json")
    with open(path) as f:
        tr = json.load(f)
    events = tr.get("traceEvents", [])
    comms = [e for e in events if e.get("name") == "record_param_comms"]
    c10d = sorted({e["name"] for e in events if str(e.get("name", "")).startswith("c10d::")})
    if not c10d:
        raise StepFailed("the profiler trace holds no c10d:: collective")
    if ctx.device == "cuda" and not comms:
        raise StepFailed("the profiler trace of DDP on NCCL holds no record_param_comms event")
    names = sorted({str(e.get("args", {}).get("Collective name", "?")) for e in comms})
    return {"events": len(events), "record_param_comms": len(comms), "collectives": names, "c10d_ops": c10d,
            "bytes": os.path.getsize(path)}


def read_execution_trace(path, ctx):
    """PyTorch's execution trace (Chakra) of the same iterations: its schema
    and the collectives among its nodes."""
    with open(path) as f:
        et = json.load(f)
    nodes = et.get("nodes", [])
    if not str(et.get("schema", "")).endswith(tuple("0123456789")) or not nodes:
        raise StepFailed(f"{os.path.basename(path)}: no execution trace (schema {et.get('schema')!r}, "
                         f"{len(nodes)} nodes)")
    comms = sorted({n["name"] for n in nodes if str(n.get("name", "")).startswith("c10d::")
                    or n.get("name") == "record_param_comms"})
    if not comms:
        raise StepFailed(f"{os.path.basename(path)}: the execution trace holds no collective")
    return {"schema": et["schema"], "nodes": len(nodes), "collectives": comms, "bytes": os.path.getsize(path)}


def plan_profile(ctx):
    z = ctx.sizes["profile"]
    step = peer_step(ctx, "python-ddp", "torch_ddp.py",
                     ["--model", "resnet18", "--image-size", str(z["image"]), "--batch-size", str(z["batch"]),
                      "--device", ctx.device, "--iters", "3", "--warmup", "2", "--profile",
                      ctx.path("ddp_profile.json"), "--profile-iters", "2",
                      "--execution-trace", ctx.path("ddp_et.json")])
    step.parse = lambda out, c: read_profile(out, c) | {
        "execution_trace": read_execution_trace(c.path("ddp_et.json"), c)}
    # (FSDP2 at one rank runs no collective: its trace would show none.)
    return [step]


def sum_profile(ctx, got):
    p = got.get("python-ddp")
    if not p:
        return ["not run"]
    e = p["execution_trace"]
    lines = [f"torch_ddp.py resnet18 under torch.profiler ({'NCCL' if ctx.device == 'cuda' else 'gloo'}): "
             f"{p['events']} events, c10d ops {', '.join(p['c10d_ops'])}, {p['record_param_comms']} "
             f"record_param_comms ({', '.join(p['collectives']) or 'none'}), "
             f"{p['bytes']} bytes before gzip",
             f"- its execution trace (schema {e['schema']}): {e['nodes']} nodes, collectives "
             f"{', '.join(e['collectives'])}, {e['bytes']} bytes before gzip"]
    return lines


PARTS = [
    Part("seed", "the seed's table: four ResNets, no ddp and 1-rank DDP beside Python DDP", 110, plan_seed, sum_seed),
    Part("strategies", "every strategy on GPT-2 in bf16 beside DDP, ZeRO and FSDP2", 145, plan_strategies,
         sum_strategies),
    Part("horovod", "seed 004: resnet50, Horovod's fusion vs DDP, fp16 allreduce, AMP", 60, plan_horovod,
         sum_horovod),
    Part("comm", "dtbench comm on the GPU beside the device's copy ceiling, then beside GEMMs", 45, plan_comm, sum_comm),
    Part("profile", "a PyTorch profiler trace of Python DDP with its execution trace, kept as test data",
         30, plan_profile, sum_profile),
    # Last: device_cli.sh --gpu starts ~25 runs and takes what is left; a
    # rerun with --only gpu_tests --part-budget gpu_tests=300 finishes it.
    Part("gpu_tests", "a --trace on the GPU, then gpu_cli (every GPU test)", 80, plan_gpu_tests, sum_gpu_tests),
]
PREFLIGHT = Part("preflight", "the GPU, the libraries dtbench loads, dtbench env", 30, plan_preflight,
                 sum_preflight)
