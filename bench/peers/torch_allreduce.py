"""Peer for `dtbench comm`: PyTorch's own dist.all_reduce on gloo, timed the
same way (warm-up, barrier, N back-to-back in-place ops, mean per op, mean over
ranks). Usage: python3 torch_allreduce.py --nproc 2 --sizes 1024,1048576 -n 20 -w 5
Prints one line per size: bytes time_us algbw_gbs busbw_gbs."""
import argparse, os, socket, sys, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, args, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.nproc)
    n = args.nproc
    for size in args.sizes:
        t = torch.ones(size // 4, dtype=torch.float32)
        for _ in range(args.w):
            dist.all_reduce(t)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.n):
            dist.all_reduce(t)
        us = (time.perf_counter() - start) / args.n * 1e6
        times = [torch.zeros(1, dtype=torch.float64) for _ in range(n)]
        dist.all_gather(times, torch.tensor([us], dtype=torch.float64))
        mean_us = sum(x.item() for x in times) / n
        if rank == 0:
            algbw = size / mean_us / 1e3
            print(f"{size} {mean_us:.2f} {algbw:.4f} {algbw * 2 * (n - 1) / n:.4f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], required=True)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("-w", type=int, default=5)
    args = p.parse_args()
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    mp.spawn(worker, args=(args, port), nprocs=args.nproc)


if __name__ == "__main__":
    main()
