"""Peer for `dtbench comm`: PyTorch's own gloo collectives (all_gather,
gather, scatter, all_to_all_single), timed the way dtbench times them: warm-up,
a barrier, N blocking ops each on the next window of a buffer sized for the
largest message (as dtbench and nccl-tests rotate), the mean per op, the mean
over ranks. Sizes as nccl-tests counts them (the gathered buffer; the root's
for scatter; each rank's send buffer for all_to_all), per-rank parts a
multiple of 4 elements.
Usage: python3 torch_collectives.py --nproc 2 --collective gather --sizes 65536,1048576 -n 20 -w 5
Prints one line per size: bytes mean_us algbw_gbs busbw_gbs p50_us (p50 of every rank's
iterations, pooled, as dtbench's p50 column)."""
import argparse, os, socket, time
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def part_elems(size, n):
    return (size // 4) // (4 * n) * 4


def worker(rank, args, port):
    if args.bind_core:  # one core per rank, as dtbench --bind core on a 1-thread-per-core host
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[rank % len(os.sched_getaffinity(0))]})
    torch.set_num_threads(1)  # dtbench's ranks run one intra-op thread each on 2 ranks / 2 cores
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.nproc)
    n = args.nproc
    biggest = part_elems(max(args.sizes), n)
    send_arena = torch.ones(biggest * n, dtype=torch.float32)
    recv_arena = torch.zeros(biggest * n, dtype=torch.float32)
    for size in args.sizes:
        c = part_elems(size, n)
        windows = min(4096, max(1, (biggest * n) // max(1, c * n)))  # dtbench's cap

        def op(i):
            k = i % windows
            whole_in = send_arena[k * c * n:(k + 1) * c * n]
            whole_out = recv_arena[k * c * n:(k + 1) * c * n]
            part_in = send_arena[k * c:(k + 1) * c]
            part_out = recv_arena[k * c:(k + 1) * c]
            if args.collective == "allgather":
                dist.all_gather(list(whole_out.chunk(n)), part_in)
            elif args.collective == "gather":
                dist.gather(part_in, list(whole_out.chunk(n)) if rank == 0 else None, dst=0)
            elif args.collective == "scatter":
                dist.scatter(part_out, list(whole_in.chunk(n)) if rank == 0 else None, src=0)
            elif args.collective == "alltoall":
                dist.all_to_all_single(whole_out, whole_in)
        for i in range(args.w):
            op(i)
        dist.barrier()
        each = []
        for i in range(args.n):
            t0 = time.perf_counter()
            op(i)
            each.append((time.perf_counter() - t0) * 1e6)
        times = [torch.zeros(args.n, dtype=torch.float64) for _ in range(n)]
        dist.all_gather(times, torch.tensor(each, dtype=torch.float64))
        pooled = sorted(x for t in times for x in t.tolist())
        mean_us = sum(pooled) / len(pooled)
        # p50 of every rank's every iteration, linear interpolation (dtbench's --percentiles).
        k = (len(pooled) - 1) * 0.5
        p50_us = pooled[int(k)] + (pooled[min(int(k) + 1, len(pooled) - 1)] - pooled[int(k)]) * (k - int(k))
        if rank == 0:
            nbytes = c * n * 4
            algbw = nbytes / mean_us / 1e3
            print(f"{nbytes} {mean_us:.2f} {algbw:.4f} {algbw * (n - 1) / n:.4f} {p50_us:.2f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--collective", choices=["allgather", "gather", "scatter", "alltoall"], required=True)
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], required=True)
    p.add_argument("-n", type=int, default=20)
    p.add_argument("-w", type=int, default=5)
    p.add_argument("--bind-core", action="store_true", help="pin rank r to the r-th allowed CPU")
    args = p.parse_args()
    s = socket.socket()
    s.bind(("", 0))
    port = s.getsockname()[1]
    s.close()
    mp.spawn(worker, args=(args, port), nprocs=args.nproc)


if __name__ == "__main__":
    main()
