"""The trace parts: a `--trace` and gpu_cli on the GPU, and Python DDP's
profiler and execution traces kept as test data."""
import glob
import json
import os

from driver import Step, StepFailed
from part_common import peer_step


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
