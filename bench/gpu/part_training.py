"""The training parts: the seed's table (ResNets beside Python DDP), every
strategy on GPT-2 beside DDP, ZeRO and FSDP2 with both sides' profiles,
and Horovod's shape."""
import glob
import json
import os

from driver import Step, StepFailed, median
from part_common import dt_step, first, gib, pct, peer_step, ratio


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
