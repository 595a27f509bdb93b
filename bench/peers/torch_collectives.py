"""Peer for `dtbench comm`: PyTorch's own gloo collectives (all_gather,
gather, scatter, all_to_all_single, and all_to_all_single with split sizes
for alltoallv), timed the way dtbench times them: warm-up, a barrier, N
blocking ops each on the next window of buffers sized as dtbench's (as
dtbench and nccl-tests rotate; the windows' views made before timing, as
dtbench's), the mean per op, the mean over ranks. Sizes as nccl-tests counts
them (the gathered buffer; the root's for scatter; each rank's send buffer
for all_to_all), per-rank parts a multiple of 4 elements; alltoallv's parts
are dtbench's --split-sizes skewed.
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

    def layout(size):
        """(in elements, out elements, input splits, output splits) of this rank."""
        if args.collective == "alltoallv":
            # dtbench's --split-sizes skewed: rank i sends rank j a part in
            # proportion to 1 + (i + j) mod n, the remainder to itself.
            count = size // 4

            def row(i):
                w = [1 + (i + j) % n for j in range(n)]
                r = [count * x // sum(w) for x in w]
                r[i] += count - sum(r)
                return r
            ins = row(rank)
            outs = [row(j)[rank] for j in range(n)]
            return count, sum(outs), ins, outs
        c = part_elems(size, n)
        return {"allgather": (c, c * n), "gather": (c, c * n), "scatter": (c * n, c),
                "alltoall": (c * n, c * n)}[args.collective] + (None, None)

    # As dtbench's arena: an input and an output sized for the most any size
    # needs, each size cycling over as many windows as fit (at most 4096),
    # the windows' views made before the timed loop.
    in_cap = max(layout(size)[0] for size in args.sizes)
    out_cap = max(layout(size)[1] for size in args.sizes)
    send_arena = torch.ones(max(1, in_cap), dtype=torch.float32)
    recv_arena = torch.zeros(max(1, out_cap), dtype=torch.float32)
    for size in args.sizes:
        in_n, out_n, ins, outs = layout(size)
        c = part_elems(size, n)
        windows = min(4096, in_cap // max(1, in_n), out_cap // max(1, out_n))
        views = [(send_arena[k * in_n:(k + 1) * in_n], recv_arena[k * out_n:(k + 1) * out_n])
                 for k in range(min(windows, max(args.n, args.w)))]
        views = [(i, o, list(o.chunk(n)) if args.collective in ("allgather", "gather") else None,
                  list(i.chunk(n)) if args.collective == "scatter" else None) for i, o in views]

        def op(i):
            src, dst, out_parts, in_parts = views[i % windows]
            if args.collective == "allgather":
                dist.all_gather(out_parts, src)
            elif args.collective == "gather":
                dist.gather(src, out_parts if rank == 0 else None, dst=0)
            elif args.collective == "scatter":
                dist.scatter(dst, in_parts if rank == 0 else None, src=0)
            elif args.collective == "alltoall":
                dist.all_to_all_single(dst, src)
            elif args.collective == "alltoallv":
                dist.all_to_all_single(dst, src, output_split_sizes=outs, input_split_sizes=ins)
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
            nbytes = size // 4 * 4 if args.collective == "alltoallv" else c * n * 4
            algbw = nbytes / mean_us / 1e3
            print(f"{nbytes} {mean_us:.2f} {algbw:.4f} {algbw * (n - 1) / n:.4f} {p50_us:.2f}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--collective", choices=["allgather", "gather", "scatter", "alltoall", "alltoallv"], required=True)
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
