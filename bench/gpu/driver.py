"""The GPU run's machinery: steps as data, run under one clock with a budget
per part, their output logged, what they found kept whatever cuts a part
short. bench/gpu/parts.py lists the parts (each a plan of steps and a
summary, in part_*.py); bench/gpu/run.py the command line."""
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional


@dataclass
class Step:
    label: str                      # unique in its part: names its log and its result
    argv: List[str]
    parse: Optional[Callable[[str, "Ctx"], object]] = None  # stdout, ctx -> result
    ok_codes: tuple = (0,)          # exit codes that are not failures
    skip_code: Optional[int] = None  # exit code meaning "skipped" (ctest's 77)
    optional: bool = False          # a later round: cut by the budget without failing the part


@dataclass
class Part:
    name: str
    title: str
    budget_s: float
    plan: Callable[["Ctx"], List[Step]]
    summarize: Callable[["Ctx", Dict[str, object]], List[str]]


@dataclass
class Ctx:
    device: str                     # cuda, or cpu for the rehearsal
    dt: str                         # the dtbench front end
    py: str                         # the peers' python (holds torch)
    repo: str
    work: str                       # logs, reports, traces
    env: Dict[str, str]             # what every step runs with
    sizes: Dict[str, object]
    peak_tflops: float = 0.0
    gpu: str = ""
    dry_run: bool = False
    budget_s: float = 0.0           # the whole run's, in seconds
    deadline: float = 0.0           # the whole run's, on the monotonic clock
    results: Dict[str, Dict[str, object]] = field(default_factory=dict)

    def path(self, *names):
        return os.path.join(self.work, *names)

    def bench(self, *names):
        return os.path.join(self.repo, "bench", *names)

    def dev_flags(self):
        return ["--device", "cuda", "--backend", "nccl"] if self.device == "cuda" else \
               ["--device", "cpu", "--backend", "gloo"]


class StepFailed(Exception):
    pass


class StepCut(Exception):
    pass


def say(msg):
    print(msg, flush=True)


def run_step(ctx, part, step, part_deadline):
    left = min(part_deadline, ctx.deadline) - time.monotonic()
    if left < 2:
        raise StepCut(f"{step.label}: not started, the budget is spent")
    log = ctx.path("logs", f"{part.name}.{step.label}.log")
    say(f"[{part.name}] {step.label} ({left:.0f} s left in the part)")
    t0 = time.monotonic()
    with open(log, "w") as f:
        f.write("$ " + shlex.join(step.argv) + "\n")
        f.flush()
        # Its own process group, killed whole when the budget ends: a cut
        # command leaves no rank or worker behind to hold the GPU.
        p = subprocess.Popen(step.argv, stdout=subprocess.PIPE, stderr=f, env=ctx.env, cwd=ctx.repo, text=True,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            kill_group(p)
            try:  # a process that left the group may still hold the pipe: do not wait on it
                out, _ = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                out = ""
            f.write("--- stdout ---\n" + (out or ""))
            f.write(f"--- cut by the budget after {time.monotonic() - t0:.1f} s ---\n")
            raise StepCut(f"{step.label}: cut by the budget after {time.monotonic() - t0:.0f} s")
        except BaseException:
            kill_group(p)  # interrupted (Ctrl-C, SIGTERM): take the command's group down too
            raise
        f.write("--- stdout ---\n" + out)
        f.write(f"--- exit {p.returncode}, {time.monotonic() - t0:.1f} s ---\n")
    if step.skip_code is not None and p.returncode == step.skip_code:
        return {"skipped": tail(log, 3)}
    if p.returncode not in step.ok_codes:
        raise StepFailed(f"{step.label}: exit {p.returncode}: {tail(log, 4)}")
    try:
        return step.parse(out, ctx) if step.parse else None
    except (ValueError, KeyError, IndexError, OSError) as e:
        raise StepFailed(f"{step.label}: its output could not be read: {e!r}")


def session_members(sid):
    """Every live process of session `sid` (the step's: start_new_session
    made its first process the leader). Workers and `timeout` make their own
    process groups, but stay in the session."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # after ')': state, ppid, pgrp, session
            pids.append(int(d))
    return pids


def kill_group(p, grace_s=3.0):
    """SIGTERM to every process of the step's session (a launcher passes it
    on to its ranks), SIGKILL to what is left after `grace_s`: a cut step
    leaves nothing behind to hold the GPU."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 0)):
        members = session_members(p.pid)
        if not members:
            return
        for pid in members:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait
        while wait and time.monotonic() < end and session_members(p.pid):
            try:
                p.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass


def tail(path, n):
    try:
        with open(path, errors="replace") as f:
            lines = [ln.rstrip() for ln in f if ln.strip() and not ln.startswith(("---", "$ "))]
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def run_part(ctx, part):
    """Runs a part's steps until the budget ends (a failing step is recorded
    and the next one runs: one broken strategy must not cost the others'
    figures); returns its record: status (ok, failed, cut, skipped), detail,
    seconds, summary lines."""
    t0 = time.monotonic()
    part_deadline = t0 + part.budget_s
    got = ctx.results.setdefault(part.name, {})
    status, details = "ok", []
    try:
        steps = part.plan(ctx)
    except StepFailed as e:
        steps, status = [], "failed"
        details.append(str(e))
    for step in steps:
        try:
            got[step.label] = run_step(ctx, part, step, part_deadline)
        except StepCut as e:
            if not step.optional:
                status = "cut" if status == "ok" else status
                details.append(str(e))
            else:
                details.append(f"{e} (a later round: the figures use the rounds that ran)")
            break
        except StepFailed as e:
            status = "failed"
            details.append(str(e))
    detail = "; ".join(details)
    skips = [v for v in got.values() if isinstance(v, dict) and "skipped" in v]
    if status == "ok" and skips and len(skips) == len(got):
        status = "skipped"
    try:
        lines = part.summarize(ctx, got)
    except (ValueError, KeyError, IndexError, TypeError, ZeroDivisionError) as e:
        lines = [f"(no summary: {e!r})"]
        if status == "ok":
            status, detail = "failed", f"its summary could not be made: {e!r}"
    return {"status": status, "detail": detail, "seconds": round(time.monotonic() - t0, 1),
            "budget_s": part.budget_s, "summary": lines}


def dry_run(ctx, parts, out=sys.stdout):
    total = 0.0
    for part in parts:
        total += part.budget_s
        out.write(f"## {part.name}: {part.title} (budget {part.budget_s:.0f} s)\n")
        for step in part.plan(ctx):
            extra = " [later round: cut first]" if step.optional else ""
            out.write(f"  {step.label}{extra}: {shlex.join(step.argv)}\n")
    out.write(f"# {len(parts)} parts, {total:.0f} s of budgets in all; the run stops at "
              f"{ctx.budget_s:.0f} s whatever is left\n")


def last_json_line(stdout):
    lines = [ln for ln in stdout.strip().splitlines() if ln.startswith("{") or ln.startswith("[")]
    if not lines:
        raise ValueError("no JSON line in its output")
    return json.loads(lines[-1])


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        raise ValueError("no samples")
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
