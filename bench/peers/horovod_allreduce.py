#!/usr/bin/env python3
"""Horovod's own allreduce latency, for the gloo/mpi gap of `--reducer
horovod` (docs/PERFORMANCE.md, "Horovod"): hvd.allreduce_ (in place, op
Sum) of one float32 tensor per size, ITERS times after WARMUP, under
horovodrun; rank 0 prints one JSON line: per size the median microseconds.
Beside it `dtbench comm --collective allreduce --placement in` times
dtbench's own (c10d ProcessGroupGloo, or MPI).
  .deps/horovod/bin/horovodrun -np 2 --gloo .deps/horovod/bin/python \\
      bench/peers/horovod_allreduce.py 64 262144
"""
import json
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import torch  # noqa: E402
import horovod.torch as hvd  # noqa: E402

ITERS, WARMUP = 200, 20


def main():
    hvd.init()
    if os.environ.get("BIND") == "core":
        os.sched_setaffinity(0, {hvd.local_rank() % os.cpu_count()})
    torch.set_num_threads(1)
    out = {}
    for size in [int(s) for s in sys.argv[1:]] or [64]:
        t = torch.ones(max(1, size // 4))
        times = []
        for i in range(WARMUP + ITERS):
            t0 = time.perf_counter()
            hvd.allreduce_(t, op=hvd.Sum, name=f"a{size}")
            if i >= WARMUP:
                times.append(time.perf_counter() - t0)
        out[size] = statistics.median(times) * 1e6
    if hvd.rank() == 0:
        print(json.dumps({"median_us": out}), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
