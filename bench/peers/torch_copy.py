#!/usr/bin/env python3
"""The device's copy ceiling: how fast PyTorch copies a buffer to another
buffer on the same device, the bound a one-rank collective's out-of-place
algbw cannot beat (NCCL's one-rank allreduce is such a copy). Beside
`dtbench comm` in bench/gpu/run.py's collectives part.

  torch_copy.py --device cuda|cpu --sizes 1M,16M,256M [--iters 20] [--warmup 5]

Prints one JSON line: [{bytes, time_us, copy_gbs}] per size, copy_gbs =
bytes / time (10^9 bytes/s, counted once as `comm`'s algbw counts them; the
memory moves twice that, read plus write). On CUDA the copies are timed
with CUDA events around --iters back-to-back copies; on the CPU by the host
clock.
"""
import argparse
import json
import time

import torch


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.strip().upper()
    return int(s[:-1]) * units[s[-1]] if s and s[-1] in units else int(s)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    p.add_argument("--sizes", default="1M,16M,256M")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="intra-op threads of a CPU copy (default 1)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    out = []
    for n in (parse_size(s) for s in a.sizes.split(",")):
        src = torch.ones(n, dtype=torch.uint8, device=a.device)
        dst = torch.empty_like(src)
        for _ in range(a.warmup):
            dst.copy_(src)
        if a.device == "cuda":
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(a.iters):
                dst.copy_(src)
            end.record()
            end.synchronize()
            t = start.elapsed_time(end) / 1e3 / a.iters
        else:
            t0 = time.perf_counter()
            for _ in range(a.iters):
                dst.copy_(src)
            t = (time.perf_counter() - t0) / a.iters
        if not bool(torch.equal(dst, src)):
            raise SystemExit(f"torch_copy: the {n}-byte copy differs from its source")
        out.append({"bytes": n, "time_us": t * 1e6, "copy_gbs": n / t / 1e9})
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
