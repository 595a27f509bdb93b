"""What the GPU run measures, in order of value (a run cut short keeps the
first parts): each part is a plan of steps (commands) and a summary of what
they found. Sizes come from run.py's SIZES: the GPU's, or the rehearsal's
tiny ones on the CPU."""
import json
import os

from driver import Part, Step, StepFailed
from part_comm import plan_comm, sum_comm
from part_common import peak_for
from part_traces import plan_gpu_tests, plan_profile, sum_gpu_tests, sum_profile
from part_training import plan_horovod, plan_seed, plan_strategies, sum_horovod, sum_seed, sum_strategies


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
