"""The driver side of `dtbench launch --ray` (ray_driver.py runs it): connects
to the Ray cluster, places one bundle per rank, starts the ranks' actors,
streams their output, supervises them and names the first failure, then
removes the actors and the placement group. The actor class itself is
ray_driver.RankProcess (Ray ships it to the workers by value)."""
import logging
import os
import signal
import socket
import sys
import threading
import time

# Beside this file (the build copies them next to dtbench).
from ray_ranks import (LOST, Rank, cause_priority, describe, exit_code_of, order_ranks, rank_env, signal_name)

PROG = "dtbench launch --ray"
RAY_VERSION = "2.60.0"


def fail(message, code=2):
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


# --- the driver ---------------------------------------------------------------

class Driver:
    def __init__(self, args, rank_process):
        self.args = args
        self.rank_process = rank_process  # the actor class (ray_driver.RankProcess)
        self.ranks = []
        self.pg = None
        self.interrupted = 0
        self.ray = None

    def log(self, message):
        if self.args.verbose:
            print(f"{PROG}: {message}", file=sys.stderr, flush=True)

    def connect(self):
        try:
            import ray
            import ray._private.worker as ray_worker
        except ImportError:
            fail(f"{sys.executable} cannot import ray: install it (bash scripts/ray.sh) or "
                 f"set DTBENCH_RAY_PYTHON to a Python that has ray=={RAY_VERSION}")
        self.ray = ray
        # Ray's driver prints the cluster's error messages (a worker or raylet
        # died, with 20 lines of its log) on standard output, inside rank 0's
        # report: dtbench names the failure itself; --verbose shows their
        # first lines on standard error.
        verbose = self.args.verbose

        def ray_message(data, *args, **kwargs):
            if verbose:
                for line in data.get("lines", [])[:1]:
                    text = " ".join(str(line).split())
                    print(f"{PROG}: (ray) {text[:300]}", file=sys.stderr, flush=True)
        ray_worker.print_to_stdstream = ray_message
        if ray.__version__ != RAY_VERSION:
            print(f"{PROG}: warning: ray {ray.__version__}, tested with {RAY_VERSION}",
                  file=sys.stderr)
        address = self.args.address
        host, _, port = address.rpartition(":")
        if host and port.isdigit() and "://" not in address:
            # ray.init retries a closed port for minutes: ask the GCS port first.
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
            except OSError as e:
                fail(f"no Ray cluster at {address}: {e.strerror or e}", 1)
        # ray.init waits without bound on a cluster whose GCS is gone.
        watchdog = threading.Timer(self.args.connect_timeout, lambda: (
            print(f"{PROG}: cannot connect to the Ray cluster at '{address}' within "
                  f"{self.args.connect_timeout:g} s", file=sys.stderr, flush=True),
            os._exit(1)))
        watchdog.daemon = True
        watchdog.start()
        try:
            ray.init(address=address, logging_level=logging.ERROR,
                     log_to_driver=False, configure_logging=True)
        except Exception as e:  # ConnectionError, ValueError, RuntimeError: all one line
            text = " ".join(str(e).split())
            fail(f"cannot connect to the Ray cluster at '{address}': {text[:300]}", 1)
        finally:
            watchdog.cancel()

    def place(self):
        ray = self.ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy
        a = self.args
        bundle = {"CPU": a.cpus_per_rank}
        if a.gpus_per_rank > 0:
            bundle["GPU"] = a.gpus_per_rank
        self.pg = placement_group([dict(bundle) for _ in range(a.nproc)],
                                  strategy=a.placement.upper())
        if not self.pg.wait(timeout_seconds=a.placement_timeout):
            total = {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU")}
            free = {k: v for k, v in ray.available_resources().items() if k in ("CPU", "GPU")}
            nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
            self.cleanup()
            fail(f"Ray cannot place {a.nproc} rank(s) of {bundle} ({a.placement.upper()}) within "
                 f"{a.placement_timeout:g} s: the cluster has {nodes} node(s), {total} in all, "
                 f"{free} free", 1)
        actor_cls = ray.remote(self.rank_process)
        actors = [
            actor_cls.options(
                num_cpus=a.cpus_per_rank, num_gpus=a.gpus_per_rank, max_restarts=0,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=self.pg, placement_group_bundle_index=i)).remote()
            for i in range(a.nproc)
        ]
        infos = ray.get([x.info.remote() for x in actors], timeout=120)
        self.ranks = [Rank(i, actors[i], infos[i]) for i in range(a.nproc)]
        driver_node = ray.get_runtime_context().get_node_id()
        groups = order_ranks(self.ranks, driver_node)
        self.ranks.sort(key=lambda r: r.rank)
        master = self.ranks[0]
        port = ray.get(master.actor.free_port.remote(), timeout=60)
        envs = rank_env(groups, a.nproc, master.info["ip"], port, a.gpus_per_rank)
        self.log(f"{a.nproc} rank(s) on {len(groups)} node(s); MASTER_ADDR={master.info['ip']} "
                 f"MASTER_PORT={port}")
        starts = [r.actor.start.remote(a.command, envs[r.rank], a.dtbench) for r in self.ranks]
        for r, ref in zip(self.ranks, starts):
            try:
                r.pid = ray.get(ref, timeout=60)
            except Exception as e:  # RayTaskError wrapping the actor's own error
                cause = getattr(e, "cause", None) or e
                self.stop_all(signal.SIGKILL)
                self.cleanup()
                fail(f"rank {r.rank} on {r.where()}: {' '.join(str(cause).split())[-300:]}", 1)
            self.log(f"rank {r.rank} (pid {r.pid}) on {r.where()} "
                     f"LOCAL_RANK={envs[r.rank]['LOCAL_RANK']} NODE_RANK={envs[r.rank]['NODE_RANK']}")

    def emit(self, r, stream, data, final=False):
        if r.rank == 0:
            out = sys.stdout.buffer if stream == "out" else sys.stderr.buffer
            out.write(data)
            out.flush()
            return
        if stream != "err":
            return
        buf = r.partial[stream] + data
        lines = buf.split(b"\n")
        r.partial[stream] = b"" if final else lines.pop()
        for line in lines:
            if line or not final:
                sys.stderr.buffer.write(b"[rank %d] " % r.rank + line + b"\n")
        sys.stderr.buffer.flush()

    def poll_once(self, wait_s):
        """Issues a poll to every running rank without one outstanding, takes
        the answers that came within wait_s."""
        ray = self.ray
        now = time.monotonic()
        for r in self.ranks:
            if r.status is None and r.pending is None:
                r.pending = r.actor.poll.remote()
                r.pending_since = now
        pending = [r.pending for r in self.ranks if r.pending is not None]
        if not pending:
            return
        done, _ = ray.wait(pending, num_returns=len(pending), timeout=wait_s)
        done = set(done)
        rest = wait_s - (time.monotonic() - now)
        if rest > 0:  # at most one round of polls per wait_s: the actors share the ranks' cores
            time.sleep(rest)
        for r in self.ranks:
            if r.pending is None or r.pending not in done:
                continue
            ref, r.pending = r.pending, None
            try:
                chunks, code, stopped = ray.get(ref)
            except Exception as e:  # RayActorError, ActorDiedError, node lost
                r.status = LOST
                r.lost_reason = f"its Ray actor (pid {r.info['pid']}) died ({type(e).__name__})"
                continue
            for stream, data in chunks:
                self.emit(r, stream, data)
            if stopped and not r.stopped:
                r.stopped = True
                print(f"{PROG}: rank {r.rank} (pid {r.pid} on {r.where()}) is stopped: the ranks "
                      f"waiting on it end at their --timeout", file=sys.stderr, flush=True)
            if code is not None:
                r.status = code
                self.emit(r, "err", b"", final=True)

    def stop_all(self, sig):
        for r in self.ranks:
            if r.status is None:
                r.terminated = True
                r.actor.signal.remote(sig)

    def supervise(self):
        a = self.args
        first_failure = None
        while True:
            self.poll_once(0.25)
            running = [r for r in self.ranks if r.status is None]
            failed = [r for r in self.ranks if r.status not in (None, 0)]
            if self.interrupted and first_failure is None:
                first_failure = time.monotonic()
                self.stop_all(signal.SIGTERM)
            if failed and first_failure is None:
                first_failure = time.monotonic()
                # Let the other answers in before naming a cause: the first
                # rank seen to fail is often a victim of the one that did.
                settle_end = first_failure + 1.0
                while time.monotonic() < settle_end:
                    self.poll_once(0.25)
                self.stop_all(signal.SIGTERM)
                continue
            if not running:
                break
            if first_failure is not None:
                waited = time.monotonic() - first_failure
                if waited > a.grace:
                    self.stop_all(signal.SIGKILL)
                silent = [r for r in running
                          if r.pending is not None and time.monotonic() - r.pending_since > a.grace + 2]
                for r in silent:  # an actor whose node is gone never answers
                    r.status = LOST
                    r.lost_reason = (f"its Ray actor stopped answering for "
                                     f"{time.monotonic() - r.pending_since:.0f} s (node lost?)")
            elif any(r.pending is not None and time.monotonic() - r.pending_since > 30 for r in running):
                # No rank failed but one has not answered for 30 s: its node is
                # gone (Ray has not said so yet). End the job.
                for r in running:
                    if r.pending is not None and time.monotonic() - r.pending_since > 30:
                        r.status = LOST
                        r.lost_reason = "its Ray actor stopped answering for 30 s (node lost?)"
        failed = [r for r in self.ranks if r.status not in (None, 0)]
        if self.interrupted:
            code = 128 + self.interrupted
            print(f"{PROG}: interrupted by {signal_name(self.interrupted)}: ranks stopped",
                  file=sys.stderr, flush=True)
            return code
        if not failed:
            return 0
        self.name_lost_nodes(failed)
        cause = min(failed, key=lambda r: (cause_priority(r), r.rank))
        others = [describe(r) for r in failed if r is not cause and not r.terminated]
        line = describe(cause)
        if others:
            line += "; then " + "; ".join(others)
        print(f"{PROG}: {line}: job ended", file=sys.stderr, flush=True)
        return exit_code_of(cause)

    def name_lost_nodes(self, failed):
        lost = [r for r in failed if r.status == LOST]
        if not lost:
            return
        try:
            dead = {n["NodeID"] for n in self.ray.nodes() if not n.get("Alive")}
        except Exception:
            return
        for r in lost:
            if r.info["node_id"] in dead:
                r.lost_reason = "its node was lost (Ray marked it dead: its raylet died or stopped answering)"

    def cleanup(self):
        ray = self.ray
        for r in self.ranks:
            try:
                ray.kill(r.actor, no_restart=True)
            except Exception:
                pass
        if self.pg is not None:
            from ray.util.placement_group import remove_placement_group
            try:
                remove_placement_group(self.pg)
            except Exception:
                pass
            self.pg = None

    def on_signal(self, sig, _frame):
        if self.interrupted:  # a second signal: stop now
            self.stop_all(signal.SIGKILL)
        self.interrupted = sig
