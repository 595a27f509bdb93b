#!/usr/bin/python3
"""PyTorch's own Python DDP, timed the way `dtbench ddp` times itself: the
peer of bench/compare_ddp.sh. Run one process per rank under a launcher that
sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (e.g. `dtbench launch`); with
--no-ddp it trains a single process without DistributedDataParallel.

Same work per iteration as dtbench: synthetic inputs (fixed), cross-entropy,
SGD(lr 0.01, momentum 0.9), zero_grad; torchvision models; gloo; DDP with
bucket_cap_mb (default 25) and broadcast_buffers=True. Prints one JSON line
on rank 0: per-iteration seconds of the slowest rank and their median.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision


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
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    ddp = not a.no_ddp
    if ddp:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if ddp else 0
    world = dist.get_world_size() if ddp else 1

    if a.model == "mlp":
        model = mlp(a.width, 1000)
        x = torch.randn(a.batch_size, 1024)
    else:
        model = getattr(torchvision.models, a.model)(num_classes=1000)
        x = torch.randn(a.batch_size, 3, a.image_size, a.image_size)
    y = torch.randint(0, 1000, (a.batch_size,))
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_cap_mb)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    times = []
    for it in range(a.warmup + a.iters):
        t0 = time.perf_counter()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        t1 = time.perf_counter()
        if it >= a.warmup:
            times.append(t1 - t0)

    if ddp:
        gathered = [None] * world
        dist.all_gather_object(gathered, times)
        slowest = [max(col) for col in zip(*gathered)]
        dist.barrier()
    else:
        slowest = times
    if rank == 0:
        print(json.dumps({"model": a.model, "world_size": world, "ddp": ddp,
                          "p50": statistics.median(slowest), "times": slowest}), flush=True)


if __name__ == "__main__":
    main()
    # Leave without tearing the process group down: in 1.13 a rank can spin
    # forever in destroy_process_group() once its peer has exited.
    os._exit(0)
