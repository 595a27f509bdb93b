"""Helpers the GPU run's parts share: dtbench's and the peers' steps, their
reports' rows, ratios and units, and each GPU's peak for the MFU columns."""
import json

from driver import Step, StepFailed, last_json_line, median

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


def pct(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def first(paths):
    if not paths:
        raise StepFailed("no trace file was written")
    return sorted(paths)[0]
