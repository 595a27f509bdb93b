#!/usr/bin/python3
"""PyTorch's own Python DDP, timed the way `dtbench ddp` times itself: the
peer of bench/compare_ddp.sh. Run one process per rank under a launcher that
sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (e.g. `dtbench launch`); with
--no-ddp it trains a single process without DistributedDataParallel.

Same work per iteration as dtbench: synthetic inputs (fixed), cross-entropy,
SGD(lr 0.001, momentum 0.9, weight_decay 1e-4) (PyTorch's DDP benchmark's, and
`dtbench ddp`'s defaults), zero_grad(set_to_none=True) (PyTorch 2.x's
default; 1.13's was to zero in place; dtbench drops the gradients too when
its reducer does not keep them in buckets); torchvision models; gloo (nccl with
--device cuda); DDP with bucket_cap_mb (default 25) and broadcast_buffers=False
(benchmark.py's; --broadcast-buffers for DDP's default), weights seeded by rank.
With --device cuda the rank uses GPU LOCAL_RANK and each iteration ends with
torch.cuda.synchronize(), as dtbench's iteration ends when the GPU is done.
Prints one JSON line on rank 0: per-iteration seconds of the slowest rank and
their median.

--baseline first times the same model, batch and optimizer without
DistributedDataParallel in this process (a fresh copy, rank 0's seed), then
the DDP run, as `dtbench ddp` times its "no ddp" row before its ranks in one
process: the JSON line adds "no_ddp": {p50, times} (one process start for both
columns). --profile FILE records --profile-iters more iterations after the
timed ones under torch.profiler (CPU, and CUDA with --device cuda; shapes
recorded, one ProfilerStep#N per iteration; bench/peers/peer_profile.py) and
writes its Chrome/Kineto trace to FILE (FILE.rankR with more than one rank):
c10d's record_param_comms events carry each collective's name, sizes and
process group; --execution-trace FILE2 adds PyTorch's execution trace
(Chakra) of the same iterations.
"""
import argparse
import json
import os
import statistics
import time

# Debian's torch multiplies through OpenBLAS's pthreads build, whose own
# worker pool ignores torch.set_num_threads: size it to --threads before
# torch loads it, as dtbench does (src/core/blas_threads.h), so both sides
# run the same threads per rank.
_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--threads", type=int, default=1)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(_pre.parse_known_args()[0].threads))

import torch  # noqa: E402

# dtbench ddp flushes subnormal floats to zero (src/bench/ddp/ddp_bench.cc): the same here.
torch.set_flush_denormal(True)
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torchvision  # noqa: E402


def mlp(width, classes):
    return nn.Sequential(nn.Linear(1024, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, classes))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bucket-cap-mb", type=float, default=25)
    p.add_argument("--no-ddp", action="store_true")
    p.add_argument("--broadcast-buffers", action="store_true")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--amp", choices=["none", "bf16", "fp16"], default="none",
                   help="autocast on CUDA (fp16 with torch.amp.GradScaler), as dtbench's --amp")
    p.add_argument("--baseline", action="store_true",
                   help="time the model without DDP first, in this process (adds no_ddp to the JSON)")
    p.add_argument("--profile", metavar="FILE", help="torch.profiler trace of --profile-iters more iterations")
    p.add_argument("--profile-iters", type=int, default=2)
    p.add_argument("--execution-trace", metavar="FILE",
                   help="with --profile: PyTorch's execution trace (Chakra) of the same iterations")
    a = p.parse_args()
    if a.execution_trace and not a.profile:
        p.error("--execution-trace records the --profile iterations: add --profile FILE")
    if a.baseline and a.no_ddp:
        p.error("--baseline times the no-DDP run before the DDP one: leave out --no-ddp")
    cuda = a.device == "cuda"
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)

    torch.set_num_threads(a.threads)
    ddp = not a.no_ddp
    if ddp:
        if cuda:  # device_id (2.x) binds the NCCL communicator to the rank's GPU
            dist.init_process_group("nccl", device_id=dev)
        else:
            dist.init_process_group("gloo")
    rank = dist.get_rank() if ddp else 0
    world = dist.get_world_size() if ddp else 1

    def build(seed, wrap):
        torch.manual_seed(seed)  # dtbench: --seed (1) + rank; DDP broadcasts rank 0's
        if a.model == "mlp":
            model = mlp(a.width, 1000)
            x = torch.randn(a.batch_size, 1024)
        else:
            model = getattr(torchvision.models, a.model)(num_classes=1000)
            x = torch.randn(a.batch_size, 3, a.image_size, a.image_size)
        y = torch.randint(0, 1000, (a.batch_size,))
        model, x, y = model.to(dev), x.to(dev), y.to(dev)
        if a.channels_last:
            model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
        if wrap:
            model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_cap_mb,
                                                        broadcast_buffers=a.broadcast_buffers,
                                                        device_ids=[dev.index] if cuda else None)
        opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, weight_decay=1e-4)
        return model, x, y, opt

    loss_fn = nn.CrossEntropyLoss()
    amp = a.amp != "none"
    amp_dtype = torch.bfloat16 if a.amp == "bf16" else torch.float16

    def train(model, x, y, opt, iters, warmup):
        scaler = torch.amp.GradScaler("cuda") if a.amp == "fp16" else None
        times = []
        for it in range(warmup + iters):
            t0 = time.perf_counter()
            if amp:
                with torch.autocast(a.device, dtype=amp_dtype):
                    loss = loss_fn(model(x), y)
            else:
                loss = loss_fn(model(x), y)
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
            opt.zero_grad(set_to_none=True)
            if cuda:
                torch.cuda.synchronize(dev)
            t1 = time.perf_counter()
            if it >= warmup:
                times.append(t1 - t0)
        return times

    no_ddp = None
    if a.baseline:
        # Every rank times its own copy, as dtbench's baseline row runs in
        # each process; rank 0's figures are reported.
        no_ddp = train(*build(1, False), a.iters, a.warmup)
    model, x, y, opt = build(1 + rank, ddp)
    times = train(model, x, y, opt, a.iters, a.warmup)
    if a.profile:
        import peer_profile
        peer_profile.record(lambda: train(model, x, y, opt, 1, 0), a.profile_iters, a.profile, rank, world, cuda,
                            a.execution_trace)

    if ddp:
        gathered = [None] * world
        dist.all_gather_object(gathered, times)
        slowest = [max(col) for col in zip(*gathered)]
        dist.barrier()
    else:
        slowest = times
    if rank == 0:
        out = {"model": a.model, "world_size": world, "ddp": ddp,
               "p50": statistics.median(slowest), "times": slowest}
        if no_ddp is not None:
            out["no_ddp"] = {"p50": statistics.median(no_ddp), "times": no_ddp}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
    # Leave without tearing the process group down: in 1.13 a rank can spin
    # forever in destroy_process_group() once its peer has exited.
    os._exit(0)
