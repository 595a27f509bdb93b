#!/usr/bin/env python3
"""Real Horovod (0.28.1, scripts/horovod.sh) training the model `dtbench ddp`
trains, in Horovod's own synthetic-benchmark loop
(examples/pytorch/pytorch_synthetic_benchmark.py: hvd.DistributedOptimizer
over named_parameters, parameters and optimizer state broadcast from rank 0,
zero_grad / forward / backward / step): the peer of `--reducer horovod`
(bench/compare_horovod.sh, tests/cli/horovod_peer.sh). Run under horovodrun:

  .deps/horovod/bin/horovodrun -np 2 --gloo .deps/horovod/bin/python \\
      bench/peers/horovod_synthetic.py --model mlp --width 64

Same work per iteration as dtbench: fixed synthetic inputs, cross-entropy,
SGD(lr 0.001, momentum 0.9, weight_decay 1e-4: dtbench ddp's default), fp16 compression with --compression fp16.
HOROVOD_FUSION_THRESHOLD / HOROVOD_CYCLE_TIME as Horovod reads them. With
--bind core each rank pins itself to CPU LOCAL_RANK (as `dtbench ddp --bind
core`). Prints one JSON line on rank 0: per-iteration seconds of the slowest
rank and their median; with HOROVOD_TIMELINE set, also the fused groups of
every iteration read back from rank 0's timeline (`groups`: per iteration the
bytes of each group, in order).
"""
import argparse
import json
import os
import statistics
import time

_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--threads", type=int, default=1)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(_pre.parse_known_args()[0].threads))

import torch  # noqa: E402

# dtbench ddp flushes subnormal floats to zero (src/bench/ddp/ddp_bench.cc): the same here.
torch.set_flush_denormal(True)
import torch.nn as nn  # noqa: E402
import horovod.torch as hvd  # noqa: E402


def mlp(width, classes):
    return nn.Sequential(nn.Linear(1024, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, classes))


def timeline_groups(path, sizes):
    """Horovod writes a fused group's GLOO/MPI_ALLREDUCE activity starts for
    all its tensors one after another (ActivityStartAll); a run of such 'B'
    events is one group. Iterations end when every tensor was reduced once."""
    with open(path) as f:
        text = f.read().rstrip().rstrip(",")
    if not text.endswith("]"):
        text += "]"
    events = json.loads(text)
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name" and "name" in e.get("args", {}):
            names[e["pid"]] = e["args"]["name"]
    groups, current, last_b = [], [], False
    for e in events:
        is_ar = e.get("ph") == "B" and e.get("name") in ("GLOO_ALLREDUCE", "MPI_ALLREDUCE")
        if is_ar:
            current.append(names.get(e["pid"], ""))
        elif current and e.get("ph") in ("B", "E", "X"):
            groups.append(current)
            current = []
        last_b = is_ar
    if current:
        groups.append(current)
    iterations, it, seen = [], [], set()
    for g in groups:
        tensors = [n.split(".", 1)[1] if n.startswith("allreduce.") else n for n in g]
        if not all(t in sizes for t in tensors):
            continue  # broadcasts and other ops
        it.append(sum(sizes[t] for t in tensors))
        seen.update(tensors)
        if len(seen) == len(sizes):
            iterations.append(it)
            it, seen = [], set()
    return iterations


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--compression", choices=["none", "fp16"], default="none")
    p.add_argument("--bind", choices=["none", "core"], default="none")
    p.add_argument("--json", default="", help="also write rank 0's result here (mpirun may cut a long stdout line)")
    a = p.parse_args()
    hvd.init()
    if a.bind == "core":
        os.sched_setaffinity(0, {hvd.local_rank() % os.cpu_count()})
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.model == "mlp":
        model = mlp(a.width, 1000)
        x = torch.randn(a.batch_size, 1024)
    else:
        import torchvision
        model = getattr(torchvision.models, a.model)(num_classes=1000)
        x = torch.randn(a.batch_size, 3, a.image_size, a.image_size)
    y = torch.randint(0, 1000, (a.batch_size,))
    # dtbench ddp's default SGD (PyTorch's DDP benchmark's).
    opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, weight_decay=1e-4)
    compression = hvd.Compression.fp16 if a.compression == "fp16" else hvd.Compression.none
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                   compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for it in range(a.warmup + a.iters):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        if it >= a.warmup:
            times.append(t1 - t0)
    gathered = hvd.allgather_object(times)
    slowest = [max(col) for col in zip(*gathered)]
    if hvd.rank() == 0:
        out = {"model": a.model, "world_size": hvd.size(), "p50": statistics.median(slowest),
               "times": [round(t, 6) for t in slowest], "torch": torch.__version__, "horovod": __import__("horovod").__version__}
        path = os.environ.get("HOROVOD_TIMELINE")
        if path:
            hvd.stop_timeline()
            bytes_per = 2 if a.compression == "fp16" else 4
            sizes = {n: t.numel() * bytes_per for n, t in model.named_parameters()}
            out["groups"] = timeline_groups(path, sizes)
        print(json.dumps(out), flush=True)
        if a.json:
            with open(a.json + ".tmp", "w") as f:
                json.dump(out, f)
            os.replace(a.json + ".tmp", a.json)
    hvd.shutdown()


if __name__ == "__main__":
    main()
