#!/usr/bin/env python3
"""The GPU run: every GPU measurement dtbench owes, in one command, sized for
the minutes a GPU machine is lent (docs/guide/gpus.md, "The GPU run").

  bench/gpu/run.py --out DIR                 # on the GPU machine (~8 min)
  bench/gpu/run.py --dry-run                 # each part, its budget and commands
  bench/gpu/run.py --device cpu --out DIR    # the rehearsal: the same steps at tiny sizes

Parts, in order of value (a run cut short keeps the first): the seed's table
(four ResNets, no ddp and 1-rank DDP beside Python DDP), every strategy on
GPT-2 in bf16 beside DDP/ZeRO/FSDP2 (tokens/s, MFU, peak memory; the no-DDP
run and each phase's time on both sides), seed 004's Horovod-vs-DDP shape,
`comm` on NCCL beside the device's copy ceiling (and the 8-bit and int64
types), a PyTorch profiler trace of Python DDP (with its execution trace),
and the GPU tests (gpu_cli) with a --trace.
Each part runs under its own budget and every command under what is left of
it; after each part DIR holds (at most 8 files, each under 16 MiB, what the
device tool brings back): summary.md (the tables), results.json (every
figure and each part's status), env.json (dtbench env), logs.tar.gz (every
command's output and report), ddp_profile.json.gz and ddp_et.json.gz (Python
DDP's profiler and execution traces), profiles.tar.gz (GPT-2 under
torch.profiler on both sides: dtbench through --torch-profiler),
dtbench_trace.json.gz.

dtbench is the wheel flavour built on the CPU machine and packed by
bench/gpu/pack.sh (gpu-bundle/: the two executables and the Open MPI and
hwloc libraries a machine without them lacks); it runs against the peers'
python's torch and NVIDIA libraries (LD_LIBRARY_PATH from that torch).
Exit 0 when every part passed (or, in the rehearsal, was skipped for want of
a GPU), 1 when one failed or was cut, 2 on bad usage.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from driver import Ctx, dry_run, run_part, say  # noqa: E402
from parts import PARTS, PREFLIGHT  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_FILE = 16 << 20

SIZES = {
    "cuda": {
        "seed": {"models": ["resnet50", "resnet101", "resnext50_32x4d", "resnext101_32x8d"], "image": 224,
                 "batch": 32, "iters": 20, "warmup": 5, "rounds": 2},
        "gpt": {"strategies": ["ddp", "overlap", "horovod", "zero1", "zero2", "fsdp"], "dt_shape": [],
                "peer_shape": ["--layers", "12", "--width", "768", "--heads", "12", "--vocab", "50257"],
                "seq": 1024, "batch": 16, "iters": 10, "warmup": 3},
        "horovod": {"image": 224, "batch": 128, "iters": 15, "warmup": 5, "amp": "fp16"},
        # -b 16 -f 4 reaches 1M, 16M and 256M: each copy size is a row's size.
        "comm": {"min": "16", "max": "256M", "iters": 20, "warmup": 5, "copy_sizes": "1M,16M,256M",
                 "wc_min": "1M", "gemm": 4096, "types_max": "16M"},
        "trace": {"image": 224, "batch": 32},
        "profile": {"image": 224, "batch": 32},
    },
    "cpu": {
        # One model on the CPU: the rehearsal proves the plumbing (both sides,
        # both rounds, the alternation, the table), not four models' figures.
        "seed": {"models": ["resnet50"], "image": 32, "batch": 2, "iters": 2, "warmup": 1, "rounds": 2},
        "gpt": {"strategies": ["ddp", "overlap", "horovod", "zero1", "zero2", "fsdp"],
                "dt_shape": ["--layers", "2", "--width", "64", "--heads", "2", "--vocab", "256"],
                "peer_shape": ["--layers", "2", "--width", "64", "--heads", "2", "--vocab", "256"],
                "seq": 16, "batch": 2, "iters": 2, "warmup": 1},
        # Batch 4: at batch 2 resnet50's gradients overflow Horovod's unscaled
        # fp16 allreduce (inf, then a NaN loss: dtbench stops with exit 3).
        # bf16 autocast: the CPU has no fast fp16 kernels (8 s an iteration).
        "horovod": {"image": 32, "batch": 4, "iters": 2, "warmup": 1, "amp": "bf16"},
        "comm": {"min": "1K", "max": "1M", "iters": 3, "warmup": 1, "copy_sizes": "1M", "wc_min": "64K",
                 "gemm": 128, "types_max": "16K"},
        "trace": {"image": 32, "batch": 2},
        "profile": {"image": 32, "batch": 2},
    },
}

LIB_PROBE = r"""
import glob, os, torch
t = os.path.dirname(torch.__file__)
sp = os.path.dirname(t)
print(os.path.join(t, "lib"))
for d in sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")) + glob.glob(os.path.join(sp, "nvidia", "*", "*", "lib"))):
    print(d)
print("TORCH", torch.__version__, torch.version.cuda)
"""


def die(msg, code=2):
    print(f"bench/gpu/run.py: {msg}", file=sys.stderr)
    sys.exit(code)


def library_env(dt, py):
    """The environment dtbench runs in: LD_LIBRARY_PATH from the peers'
    torch (its lib/ and the nvidia/ packages beside it), CUDA's toolkit, and
    the bundle's lib/ first. Returns (env, torch version)."""
    try:
        p = subprocess.run([py, "-c", LIB_PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        die(f"--python {py}: cannot run it: {e}")
    if p.returncode != 0:
        die(f"--python {py} cannot import torch: {p.stderr.strip().splitlines()[-1:] or p.returncode}")
    lines = p.stdout.strip().splitlines()
    version = lines[-1].split()[1:] if lines and lines[-1].startswith("TORCH") else ["?"]
    dirs = [d for d in lines[:-1] if os.path.isdir(d)]
    dirs += [d for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/lib") if os.path.isdir(d)]
    # The bundle's libraries last: the machine's own (libudev, an Open MPI of
    # the same ABI) win where it has them, the bundle's fill the gaps.
    dirs.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(dt))), "lib"))
    env = dict(os.environ)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = ":".join([d for d in dirs if os.path.isdir(d)] + ([old] if old else []))
    env["PYTHONUNBUFFERED"] = "1"
    return env, " ".join(version)


def replace_atomically(path, write):
    """write(f) into a temporary file beside `path`, then rename it over
    `path`: a run killed mid-write leaves the previous complete file."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def write_outputs(ctx, out, records, started):
    """summary.md, results.json, env.json, logs.tar.gz and the two traces
    (gzipped) into OUT, each checked against the size that comes back."""
    os.makedirs(out, exist_ok=True)
    lines = [f"# dtbench GPU run ({ctx.device}{': ' + ctx.gpu if ctx.gpu else ''})", "",
             f"Started {started}; dtbench {ctx.dt}; peers {ctx.py}; budget {ctx.budget_s:.0f} s.", ""]
    for name, rec in records.items():
        part = next(p for p in [PREFLIGHT] + PARTS if p.name == name)
        lines.append(f"## {name}: {part.title} — **{rec['status']}** ({rec['seconds']} s of {rec['budget_s']:.0f})")
        if rec["detail"]:
            lines.append(f"_{rec['detail']}_")
        lines += [""] + rec["summary"] + [""]
    replace_atomically(os.path.join(out, "summary.md"), lambda f: f.write(("\n".join(lines) + "\n").encode()))
    doc = {"device": ctx.device, "gpu": ctx.gpu, "started": started, "budget_s": ctx.budget_s,
           "sizes": ctx.sizes, "parts": records, "results": ctx.results}
    replace_atomically(os.path.join(out, "results.json"),
                       lambda f: f.write(json.dumps(doc, indent=1, default=str).encode()))
    if os.path.exists(ctx.path("env.json")):
        shutil.copy(ctx.path("env.json"), os.path.join(out, "env.json"))
    big = {"ddp_profile.json": "ddp_profile.json.gz", "ddp_et.json": "ddp_et.json.gz"}
    # The other profiler traces in one archive (8 files come back at most).
    profiles = sorted(f for f in os.listdir(ctx.work) if f.startswith("gpt_") and f.endswith("profile.json")
                      or f.startswith("gpt_dtbench_profile"))
    traces = sorted(f for f in os.listdir(ctx.work) if f.startswith("dtbench_trace") and f.endswith(".json"))
    if traces:
        big[traces[0]] = "dtbench_trace.json.gz"
    for src, dst in big.items():
        if os.path.exists(ctx.path(src)):
            replace_atomically(os.path.join(out, dst),
                               lambda f, src=src: subprocess.run(["gzip", "-c", ctx.path(src)], stdout=f, check=True))

    def tar(names):
        def write(f):
            with tarfile.open(fileobj=f, mode="w:gz") as t:
                for name in names:
                    t.add(ctx.path(name), arcname=name)
        return write
    if profiles:
        replace_atomically(os.path.join(out, "profiles.tar.gz"), tar(profiles))
    replace_atomically(os.path.join(out, "logs.tar.gz"),
                       tar([n for n in sorted(os.listdir(ctx.work))
                            if n not in big and n not in profiles and not n.startswith("dtbench_trace")]))
    for f in os.listdir(out):
        if os.path.getsize(os.path.join(out, f)) > MAX_FILE:
            os.remove(os.path.join(out, f))
            with open(os.path.join(out, "summary.md"), "a") as s:
                s.write(f"\n{f} was over 16 MiB and was left out.\n")


def main():
    t_start = time.monotonic()  # the budget counts from here: the torch probe included
    # SIGTERM (a timeout around the run) unwinds like Ctrl-C: the running
    # command's process group is killed, nothing is left on the GPU.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="folder for the results (the device tool's $OUT)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="cuda (the GPU run) or cpu (the rehearsal: gloo, tiny sizes)")
    ap.add_argument("--dtbench", help="the dtbench front end (default: gpu-bundle/bin/dtbench, "
                                      "else build-wheel/dtbench)")
    ap.add_argument("--python", help="the peers' python, which holds torch (default: python3 on cuda, "
                                     "bench/peers/python-wheel on cpu)")
    ap.add_argument("--only", help="comma-separated parts to run (default all): " +
                                   ",".join(p.name for p in PARTS))
    ap.add_argument("--budget-s", type=float, help="the whole run's wall-clock bound, from its start (default "
                                                   "480 on cuda; on cpu every budget is 3x: a loaded 2-core CI "
                                                   "machine is slower than the GPU machine's start-ups)")
    ap.add_argument("--part-budget", action="append", default=[], metavar="PART=S",
                    help="a part's own budget in seconds instead of its default (repeatable), e.g. seed=200 "
                         "for a rerun of one part")
    ap.add_argument("--seed-models", help="the seed part's models, comma-separated (default: the four ResNets)")
    ap.add_argument("--seed-rounds", type=int, help="the seed part's rounds (default 2)")
    ap.add_argument("--dry-run", action="store_true", help="print each part, its budget and commands; run nothing")
    a = ap.parse_args()
    scale = 1.0 if a.device == "cuda" else 3.0
    for part in [PREFLIGHT] + PARTS:
        part.budget_s *= scale
    if a.budget_s is None:
        a.budget_s = 480 * scale
    parts = PARTS
    if a.only:
        want = a.only.split(",")
        bad = [w for w in want if w not in {p.name for p in PARTS}]
        if bad:
            die(f"--only: no part named {', '.join(bad)} (parts: {', '.join(p.name for p in PARTS)})")
        parts = [p for p in PARTS if p.name in want]
    for pb in a.part_budget:
        name, _, secs = pb.partition("=")
        part = next((p for p in PARTS if p.name == name), None)
        try:
            value = float(secs)
        except ValueError:
            value = -1
        if part is None or value <= 0:
            die(f"--part-budget {pb}: want PART=SECONDS with PART one of {', '.join(p.name for p in PARTS)}")
        part.budget_s = value  # as given: no scale
    if a.seed_rounds is not None and a.seed_rounds < 1:
        die(f"--seed-rounds {a.seed_rounds}: want at least 1")
    if not a.dry_run and not a.out:
        die("--out DIR is required (or --dry-run)")
    dt = a.dtbench or next((p for p in (os.path.join(REPO, "gpu-bundle", "bin", "dtbench"),
                                        os.path.join(REPO, "build-wheel", "dtbench")) if os.path.exists(p)),
                           "build-wheel/dtbench")
    dt = os.path.abspath(dt)
    py = a.python or ("python3" if a.device == "cuda" else os.path.join(REPO, "bench", "peers", "python-wheel"))
    work = tempfile.mkdtemp(prefix="dtbench-gpu-")
    os.makedirs(os.path.join(work, "logs"))
    ctx = Ctx(device=a.device, dt=dt, py=py, repo=REPO, work=work, env=dict(os.environ),
              sizes=dict(SIZES[a.device]), budget_s=a.budget_s, dry_run=a.dry_run)
    if a.seed_models:
        ctx.sizes["seed"] = dict(ctx.sizes["seed"], models=a.seed_models.split(","))
    if a.seed_rounds:
        ctx.sizes["seed"] = dict(ctx.sizes["seed"], rounds=a.seed_rounds)
    if a.dry_run:
        ctx.peak_tflops = 989.4 if a.device == "cuda" else 0.0  # the H100's and H200's; the run reads the GPU
        ctx.deadline = time.monotonic() + a.budget_s
        print(f"# dtbench {dt}, peers' python {py}, device {a.device}; work files under a temporary folder "
              f"(here {work}); MFU peak {ctx.peak_tflops:g} TFLOP/s (the run takes it from the GPU's name)")
        dry_run(ctx, [PREFLIGHT] + parts)
        shutil.rmtree(work)
        return 0
    if not os.access(dt, os.X_OK):
        die(f"--dtbench {dt}: no such executable (make build TORCH=wheel; bench/gpu/pack.sh)")
    ctx.env, ctx.sizes["torch_version"] = library_env(dt, py)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    ctx.deadline = t_start + a.budget_s
    say(f"# GPU run on {a.device}: dtbench {dt}; peers {py} (torch {ctx.sizes['torch_version']}); "
        f"LD_LIBRARY_PATH={ctx.env['LD_LIBRARY_PATH']}; budget {a.budget_s:.0f} s; work {work}")
    records = {}
    rec = records[PREFLIGHT.name] = run_part(ctx, PREFLIGHT)
    write_outputs(ctx, a.out, records, started)
    # Missing libraries or no GPU end the run; a slow (cut) preflight does not.
    if rec["status"] == "failed":
        say(f"preflight {rec['status']}: {rec['detail']}")
        print(open(os.path.join(a.out, "summary.md")).read())
        return 1
    for part in parts:
        if time.monotonic() >= ctx.deadline - 2:
            records[part.name] = {"status": "cut", "detail": "not started: the run's budget is spent", "seconds": 0,
                                  "budget_s": part.budget_s, "summary": []}
        else:
            records[part.name] = run_part(ctx, part)
        say(f"[{part.name}] {records[part.name]['status']} in {records[part.name]['seconds']} s"
            f"{': ' + records[part.name]['detail'] if records[part.name]['detail'] else ''}")
        write_outputs(ctx, a.out, records, started)
    print(open(os.path.join(a.out, "summary.md")).read())
    shutil.rmtree(work, ignore_errors=True)
    good = ("ok", "skipped")
    return 0 if all(r["status"] in good for r in records.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
