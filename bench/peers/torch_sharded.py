#!/usr/bin/env python3
"""PyTorch's own sharded data parallelism, timed the way `dtbench ddp` times
itself: the peer of bench/compare_sharded.sh for `--reducer ddp|zero1|fsdp`.
Needs torch >= 2.4 (FSDP2's `fully_shard`): run it with
bench/peers/python-wheel (torch 2.11), one process per rank under a launcher
that sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (`dtbench launch`).

  --strategy ddp    DistributedDataParallel(bucket_cap_mb) + torch.optim.AdamW
  --strategy zero1  DDP + ZeroRedundancyOptimizer(AdamW, parameters_as_bucket_view=True): optimizer state sharded
  --strategy fsdp   fully_shard on each block, then on the root (FSDP2), AdamW
                    over the DTensor shards; --reshard-after-forward true|false
  --strategy tp     tensor parallelism over every rank (DTensor's TP, as
                    torchtitan applies it): parallelize_module on each block
                    with ColwiseParallel on c_attn and mlp_c_fc and
                    RowwiseParallel on attn_c_proj and mlp_c_proj; embeddings,
                    norms and the tied head replicated (plain tensors), every
                    rank on the same batch; the peer of `dtbench ddp --tp N
                    --world-sizes N`. The fused q/k/v rows are reordered so
                    that rank r's contiguous shard holds its heads' q, k and v
                    (Megatron's split, dtbench's shard_rows); AdamW runs as two
                    optimizers, over the DTensor and the plain parameters
                    (foreach cannot mix them), the same update
  --strategy pp     pipeline parallelism over every rank
                    (torch.distributed.pipelining, as torchtitan's manual
                    split): the blocks split evenly into one PipelineStage per
                    rank, wte/wpe with the first, ln_f and the head with the
                    last (which holds its own copy of the tied wte: after each
                    step the two ends all-reduce its gradient, Megatron-LM's
                    embedding group, as dtbench does), --pp-schedule gpipe or
                    1f1b (ScheduleGPipe, Schedule1F1B) over --microbatches;
                    the peer of `dtbench ddp --pp N --world-sizes N`
  --strategy none   one process, no wrapper
  --activation-checkpointing full|selective  as dtbench's: full wraps each
                    block in checkpoint_wrapper (non-reentrant, no RNG state:
                    torchtitan's full AC, applied before fully_shard);
                    selective recomputes the attention core (scores, mask,
                    softmax, weighted sum) through torch.utils.checkpoint
                    (use_reentrant=False) from q, k and v
  --amp bf16        forward and loss under torch.autocast(device, bfloat16), as
                    dtbench's --amp bf16
  --device cuda     the rank trains on GPU LOCAL_RANK over NCCL (gloo on the
                    CPU); each iteration ends with torch.cuda.synchronize(), as
                    dtbench's ends when the GPU is done, and the peak bytes are
                    the CUDA caching allocator's max_memory_allocated() (what
                    dtbench's --device cuda peak_bytes reads), reset after warm-up
  --param-dtype bf16  (fsdp) fully_shard(mp_policy=MixedPrecisionPolicy(
                    param_dtype=torch.bfloat16, reduce_dtype=torch.float32)),
                    as dtbench's --param-dtype bf16

The model is dtbench's GPT-2 (models/gpt.h): token + learned position
embeddings, pre-norm blocks (LayerNorm, causal self-attention written out as
two matmuls and a masked softmax, c_proj; LayerNorm, MLP 4x with tanh GELU),
final LayerNorm, head tied to the token embedding; no dropout. Same work per
iteration: fixed synthetic tokens, cross-entropy over every position, AdamW
(lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01, foreach),
zero_grad(set_to_none=True). Prints one JSON line on rank 0: per-iteration
seconds of the slowest rank, their median, the model state a rank holds after
the last step (parameters, gradients and optimizer state counted from the
local tensors: a DTensor's local shard), the peak RSS of each rank, and with
--memory-probe LIB (dtbench's build/libdtbench_memory_probe.so, loaded with
ctypes before the model is made) the peak bytes in tensors during the timed
iterations, counted by the code that counts dtbench's `peak_bytes` (reset
after warm-up, read after the last timed iteration; the largest rank's), and
rank 0's median seconds per phase (phase_p50_s: forward with the loss,
backward, optimizer step with zero_grad; CUDA events on the GPU, as dtbench's
device_phase_p50_s). --profile FILE records --profile-iters more iterations
under torch.profiler (bench/peers/peer_profile.py; FILE.rankR with more than
one rank), --execution-trace FILE2 PyTorch's execution trace of the same.
"""
import argparse
import ctypes
import json
import math
import os
import resource
import statistics
import time

_pre = argparse.ArgumentParser(add_help=False)
_pre.add_argument("--threads", type=int, default=1)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(_pre.parse_known_args()[0].threads))

import torch  # noqa: E402

# dtbench ddp flushes subnormal floats to zero (src/bench/ddp/ddp_bench.cc): the same here.
torch.set_flush_denormal(True)
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def attention_core(q, k, v):
    t, d = q.size(2), q.size(3)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    return att.masked_fill(mask, float("-inf")).softmax(-1) @ v


class Block(nn.Module):
    def __init__(self, w, heads):
        super().__init__()
        self.heads = heads
        self.recompute_attention = False
        self.ln_1 = nn.LayerNorm(w)
        self.attn_c_attn = nn.Linear(w, 3 * w)
        self.attn_c_proj = nn.Linear(w, w)
        self.ln_2 = nn.LayerNorm(w)
        self.mlp_c_fc = nn.Linear(w, 4 * w)
        self.mlp_c_proj = nn.Linear(4 * w, w)

    def forward(self, x):
        b, t, w = x.shape
        d = w // self.heads
        qkv = self.attn_c_attn(self.ln_1(x))
        wl = qkv.size(-1) // 3  # w, or this rank's w / tp under tensor parallelism
        h = wl // d
        q, k, v = qkv.split(wl, dim=2)
        q, k, v = (z.view(b, t, h, d).transpose(1, 2) for z in (q, k, v))
        if self.recompute_attention:
            from torch.utils.checkpoint import checkpoint
            y = checkpoint(attention_core, q, k, v, use_reentrant=False)
        else:
            y = attention_core(q, k, v)
        y = y.transpose(1, 2).reshape(b, t, wl)
        x = x + self.attn_c_proj(y)
        return x + self.mlp_c_proj(F.gelu(self.mlp_c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, w, heads, vocab, positions=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, w)
        self.wpe = nn.Embedding(positions, w)
        self.h = nn.ModuleList(Block(w, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(w)

    def forward(self, tokens):
        t = tokens.size(1)
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device)).unsqueeze(0)
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def local_bytes(t):
    if t is None:
        return 0
    if hasattr(t, "to_local"):
        t = t.to_local()
    return t.numel() * t.element_size()


class Optimizers:
    """Several optimizers stepped as one (tp: DTensor and plain parameters)."""

    def __init__(self, opts):
        self.opts = opts
        self.state = {k: v for o in opts for k, v in o.state.items()}

    def step(self):
        for o in self.opts:
            o.step()
        self.state = {k: v for o in self.opts for k, v in o.state.items()}

    def zero_grad(self, set_to_none=True):
        for o in self.opts:
            o.zero_grad(set_to_none=set_to_none)


def parallelize_tp(model, world):
    """Megatron's split of each block over a 1-D mesh of every rank."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    mesh = init_device_mesh("cpu", (world,))
    for block in model.h:
        w = block.attn_c_attn.in_features
        if block.heads % world:
            raise SystemExit(f"tp: {block.heads} heads do not split {world} ways")
        with torch.no_grad():  # rows [q_0 k_0 v_0 q_1 k_1 v_1 ...]: rank r's shard is its heads' q, k, v
            for t in (block.attn_c_attn.weight, block.attn_c_attn.bias):
                parts = [z.chunk(world, 0) for z in t.split(w, 0)]
                t.copy_(torch.cat([parts[j][r] for r in range(world) for j in range(3)], 0))
        parallelize_module(block, mesh, {"attn_c_attn": ColwiseParallel(), "attn_c_proj": RowwiseParallel(),
                                         "mlp_c_fc": ColwiseParallel(), "mlp_c_proj": RowwiseParallel()})


class Stage(nn.Module):
    """Rank `rank`'s pipeline stage of `full`: its blocks; wte and wpe on the
    first, ln_f and the tied head (wte) on the last."""

    def __init__(self, full, rank, world):
        super().__init__()
        n = len(full.h)
        sizes = [n // world + (1 if i < n % world else 0) for i in range(world)]
        lo = sum(sizes[:rank])
        self.first, self.last = rank == 0, rank == world - 1
        if self.first or self.last:
            self.wte = full.wte
        if self.first:
            self.wpe = full.wpe
        self.h = nn.ModuleList(full.h[lo:lo + sizes[rank]])
        if self.last:
            self.ln_f = full.ln_f

    def forward(self, x):
        if self.first:
            t = x.size(1)
            x = self.wte(x) + self.wpe(torch.arange(t, device=x.device)).unsqueeze(0)
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight) if self.last else x


def model_state(model, opt):
    params = list(model.parameters())
    state = opt.optim.state if hasattr(opt, "optim") else opt.state
    opt_bytes = sum(local_bytes(v) for s in state.values() for k, v in s.items()
                    if torch.is_tensor(v) and k != "step")
    return {"params": sum(local_bytes(p) for p in params),
            "grads": sum(local_bytes(p.grad) for p in params),
            "optimizer": opt_bytes}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--strategy", choices=["none", "ddp", "zero1", "fsdp", "tp", "pp"], required=True)
    p.add_argument("--pp-schedule", choices=["gpipe", "1f1b"], default="1f1b")
    p.add_argument("--microbatches", type=int, default=0, help="pp: microbatches (default: the batch size)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bucket-cap-mb", type=float, default=25)
    p.add_argument("--reshard-after-forward", choices=["true", "false"], default="true")
    p.add_argument("--amp", choices=["none", "bf16"], default="none")
    p.add_argument("--activation-checkpointing", choices=["none", "full", "selective"], default="none")
    p.add_argument("--param-dtype", choices=["float32", "bf16"], default="float32")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--memory-probe", metavar="LIB", help="libdtbench_memory_probe.so: count tensor bytes")
    p.add_argument("--profile", metavar="FILE", help="torch.profiler trace of --profile-iters more iterations")
    p.add_argument("--profile-iters", type=int, default=2)
    p.add_argument("--execution-trace", metavar="FILE",
                   help="with --profile: PyTorch's execution trace (Chakra) of the same iterations")
    a = p.parse_args()
    if a.execution_trace and not a.profile:
        p.error("--execution-trace records the --profile iterations: add --profile FILE")
    if a.param_dtype == "bf16" and (a.strategy != "fsdp" or a.amp != "bf16"):
        p.error("--param-dtype bf16 is fsdp's and needs --amp bf16 (as dtbench)")
    cuda = a.device == "cuda"
    if cuda and a.memory_probe:
        p.error("--memory-probe counts CPU tensors: with --device cuda the peak is the CUDA allocator's")
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(dev)
    torch.set_num_threads(a.threads)
    probe = None
    if a.memory_probe:
        try:
            probe = ctypes.CDLL(a.memory_probe)
        except OSError as e:
            p.error(f"--memory-probe: cannot load {a.memory_probe}: {e}")
        probe.dtbench_memory_probe_peak.restype = ctypes.c_longlong
        if probe.dtbench_memory_probe_install() != 1:
            p.error(f"--memory-probe {a.memory_probe}: torch's default CPU allocator cannot be wrapped")
    torch.manual_seed(1)
    distributed = a.strategy != "none"
    if distributed:
        if cuda:  # device_id binds the NCCL communicator to the rank's GPU
            dist.init_process_group("nccl", device_id=dev)
        else:
            dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1

    model = Gpt(a.layers, a.width, a.heads, a.vocab).to(dev)

    def apply_ac():
        """As torchtitan: after tensor parallelism, before fully_shard."""
        if a.activation_checkpointing == "full":
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (CheckpointImpl,
                                                                                     checkpoint_wrapper)
            for i, block in enumerate(model.h):
                model.h[i] = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT,
                                                preserve_rng_state=False)
        elif a.activation_checkpointing == "selective":
            for block in model.h:
                block.recompute_attention = True
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, a.vocab, (a.batch_size, a.seq_len), generator=g).to(dev)
    y = torch.randint(0, a.vocab, (a.batch_size, a.seq_len), generator=g).to(dev)
    adamw = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, foreach=True)
    if a.strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard
        reshard = a.reshard_after_forward == "true"
        kw = {}
        if a.param_dtype == "bf16":
            from torch.distributed.fsdp import MixedPrecisionPolicy
            kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        apply_ac()
        for block in model.h:
            fully_shard(block, reshard_after_forward=reshard, **kw)
        fully_shard(model, reshard_after_forward=reshard, **kw)
        opt = torch.optim.AdamW(model.parameters(), **adamw)
    elif a.strategy in ("ddp", "zero1"):
        apply_ac()
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_cap_mb,
                                                    device_ids=[dev.index] if cuda else None)
        if a.strategy == "zero1":
            from torch.distributed.optim import ZeroRedundancyOptimizer
            # parameters_as_bucket_view=True: the updated parameters go out as
            # one flat broadcast per rank's bucket, as dtbench's zero1
            # all-gathers buckets (False: one broadcast per parameter).
            opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW,
                                          parameters_as_bucket_view=True, **adamw)
        else:
            opt = torch.optim.AdamW(model.parameters(), **adamw)
    elif a.strategy == "tp":
        if cuda:
            p.error("--strategy tp runs on the CPU here")
        parallelize_tp(model, world)
        apply_ac()
        dtensors = [q for q in model.parameters() if hasattr(q, "to_local")]
        plain = [q for q in model.parameters() if not hasattr(q, "to_local")]
        opt = Optimizers([torch.optim.AdamW(dtensors, **adamw), torch.optim.AdamW(plain, **adamw)])
    elif a.strategy == "pp":
        if cuda:
            p.error("--strategy pp runs on the CPU here")
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
        m = a.microbatches or a.batch_size
        if a.batch_size % m:
            p.error(f"--microbatches {m} does not divide --batch-size {a.batch_size}")
        apply_ac()
        model = Stage(model, rank, world)
        stage = PipelineStage(model, rank, world, dev)  # shapes inferred at the first step

        def loss_fn(logits, target):
            return F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1))
        schedule = (ScheduleGPipe if a.pp_schedule == "gpipe" else Schedule1F1B)(stage, m, loss_fn=loss_fn)
        ends = dist.new_group([0, world - 1]) if world > 2 else None
        opt = torch.optim.AdamW(model.parameters(), **adamw)

        class Piped:
            """model(x) and loss.backward() of the other strategies, as one schedule step."""

            def __init__(self):
                self.losses = []

            def run(self):
                self.losses = []
                if rank == 0:
                    schedule.step(x)
                elif rank == world - 1:
                    schedule.step(target=y, losses=self.losses)
                else:
                    schedule.step()
                if model.first or model.last:  # the tied embedding's two uses
                    dist.all_reduce(model.wte.weight.grad, group=ends)
                return torch.stack(self.losses).mean() if self.losses else torch.zeros(())
        piped = Piped()
    else:
        apply_ac()
        opt = torch.optim.AdamW(model.parameters(), **adamw)

    times = []
    phases = {"forward": [], "backward": [], "optimizer": []}
    last_loss = None
    state = None
    peak = -1

    # Made once; read after the iteration's clock stops.
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(4)] if cuda else [0.0] * 4

    def step(last=False):
        """One iteration, marking the boundaries of dtbench's phases: forward
        (with the loss), backward, optimizer (step and zero_grad)."""
        nonlocal state

        def mark(i):
            if cuda:
                marks[i].record()
            else:
                marks[i] = time.perf_counter()
        mark(0)
        if a.strategy == "pp":  # forward and backward interleave: one span, counted as backward
            with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.amp == "bf16"):
                mark(1)
                loss = piped.run()
        else:
            with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.amp == "bf16"):
                logits = model(x)
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            mark(1)
            loss.backward()
        mark(2)
        opt.step()
        if last:
            state = model_state(model, opt)
        opt.zero_grad(set_to_none=True)
        mark(3)
        if cuda:
            torch.cuda.synchronize(dev)
        return loss

    for it in range(a.warmup + a.iters):
        if probe and it == a.warmup:
            probe.dtbench_memory_probe_reset_peak()
        if cuda and it == a.warmup:
            torch.cuda.reset_peak_memory_stats(dev)
        last = it + 1 == a.warmup + a.iters
        t0 = time.perf_counter()
        loss = step(last)
        if last:
            last_loss = loss.item()
        t1 = time.perf_counter()
        if it >= a.warmup:
            times.append(t1 - t0)
            # Each phase's seconds: CUDA events on the GPU, the host clock on the CPU.
            for i, name in enumerate(("forward", "backward", "optimizer")):
                phases[name].append(marks[i].elapsed_time(marks[i + 1]) / 1e3 if cuda else marks[i + 1] - marks[i])
        if probe and last:
            peak = probe.dtbench_memory_probe_peak()
        if cuda and last:
            peak = torch.cuda.max_memory_allocated(dev)
    if a.profile:
        import peer_profile
        peer_profile.record(step, a.profile_iters, a.profile, rank, world, cuda, a.execution_trace)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    keys = ("params", "grads", "optimizer")
    mine = {"times": times, "state": state, "rss": rss, "peak": peak}
    if distributed:
        # A float64 tensor per rank, not all_gather_object: that one needs
        # NumPy, which the wheel's peer interpreter does not have.
        flat = torch.tensor(times + [state[k] for k in keys] + [rss, peak], dtype=torch.float64, device=dev)
        parts = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(parts, flat)
        n = len(times)
        parts = [t.cpu() for t in parts]
        gathered = [{"times": t[:n].tolist(), "state": {k: int(v) for k, v in zip(keys, t[n:n + 3].tolist())},
                     "rss": int(t[n + 3]), "peak": int(t[n + 4])} for t in parts]
        dist.barrier()
    else:
        gathered = [mine]
    if rank == 0:
        slowest = [max(col) for col in zip(*[m["times"] for m in gathered])]
        st = max(gathered, key=lambda m: sum(m["state"].values()))["state"]
        print(json.dumps({"strategy": a.strategy, "world_size": world, "p50": statistics.median(slowest),
                          "times": slowest, "model_state": st,
                          "model_state_bytes": sum(st.values()),
                          "peak_rss_bytes": max(m["rss"] for m in gathered),
                          "peak_bytes": max(m["peak"] for m in gathered),
                          "last_loss": last_loss,
                          "phase_p50_s": {k: statistics.median(v) for k, v in phases.items() if v},
                          "device": a.device, "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
    os._exit(0)
