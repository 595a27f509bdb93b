"""torch.profiler around a peer's extra iterations, recorded the way a user
adds it to a training loop (docs/guide/traces-and-reports.md): CPU activity,
and CUDA kernels with --device cuda; shapes recorded; prof.step() after each
iteration, so the trace holds ProfilerStep#N annotations; a Kineto Chrome
trace per rank (FILE with one rank, FILE.rankR with more). With an execution
trace path, PyTorch's ExecutionTraceObserver records the same iterations
(the Chakra execution trace, schema 1.1.1-chakra...), linked to the Kineto
trace by the profiler. Used by torch_ddp.py and torch_sharded.py."""
import torch


def rank_path(path, rank, world):
    return path if world == 1 else f"{path}.rank{rank}"


def record(step, iters, path, rank, world, cuda, execution_trace=None):
    """Runs step() iters times under torch.profiler and writes the traces."""
    from torch.profiler import ProfilerActivity, profile, schedule
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    et = None
    if execution_trace:
        from torch.profiler import ExecutionTraceObserver  # torch 2.x; 1.13 has none
        et = ExecutionTraceObserver().register_callback(rank_path(execution_trace, rank, world))
    written = []

    def export(prof):
        prof.export_chrome_trace(rank_path(path, rank, world))
        written.append(path)
    # A schedule (all iterations active) is what makes the profiler mark
    # each iteration ProfilerStep#N; the trace is written when it ends.
    # execution_trace_observer only where one is asked for: 1.13's profile() has no such argument.
    extra = {"execution_trace_observer": et} if et is not None else {}
    with profile(activities=acts, record_shapes=True, schedule=schedule(wait=0, warmup=0, active=iters, repeat=1),
                 on_trace_ready=export, **extra) as prof:
        for _ in range(iters):
            step()
            prof.step()
    if et is not None:
        et.unregister_callback()
    if not written:
        raise SystemExit(f"torch.profiler wrote no trace to {path}")
    if cuda:
        torch.cuda.synchronize()
