"""dtbench's Ray driver: `dtbench launch --ray` execs this module.

It asks a running Ray cluster for a placement group of N bundles (CPUs and
GPUs per rank), starts one actor per bundle, gives each the world Ray Train
gives its workers (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK,
MASTER_ADDR = rank 0's node, MASTER_PORT = a free port there,
CUDA_VISIBLE_DEVICES = the GPUs Ray assigned on that node) and has it run the
command as a child process. Rank 0's output is streamed as it comes; the other
ranks' standard error is streamed with a "[rank K] " prefix.

It supervises the ranks as dtbench's own launcher does: the first rank that
exits non-zero, is killed, or whose actor or node is lost ends the job: the
others get SIGTERM, then SIGKILL after --grace; the failure is named in one
line; the actors and the placement group are removed; the exit status is the
failed rank's (128 + signal for a killed one), 1 for a lost actor or node,
130/143 after SIGINT/SIGTERM. The children die with their actor
(PR_SET_PDEATHSIG), so a killed actor or a stopped raylet leaves nothing.

The ranks' order, variables and failure naming: ray_ranks.py beside it.
Needs Ray (pinned: scripts/ray.sh installs ray 2.60.0 into .deps/ray).
"""
import argparse
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

# Beside this file (the build copies both next to dtbench).
from ray_ranks import (LOST, Rank, cause_priority, describe, ephemeral_ports, exit_code_of, order_ranks,
                       port_candidates, rank_env, signal_name)

PROG = "dtbench launch --ray"
RAY_VERSION = "2.60.0"


def fail(message, code=2):
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--address", default="auto")
    p.add_argument("--nproc", type=int, required=True)
    p.add_argument("--cpus-per-rank", type=float, default=1.0)
    p.add_argument("--gpus-per-rank", type=float, default=0.0)
    p.add_argument("--placement", choices=("pack", "spread"), default="pack")
    p.add_argument("--grace", type=float, default=3.0)
    p.add_argument("--placement-timeout", type=float, default=60.0)
    p.add_argument("--connect-timeout", type=float, default=30.0)
    p.add_argument("--dtbench", default="")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.command and a.command[0] == "--":
        a.command = a.command[1:]
    if not a.command:
        fail("no command to run (after --)")
    if a.nproc < 1:
        fail(f"--nproc {a.nproc}: needs 1 or more")
    return a


# --- the actor ---------------------------------------------------------------

# The rank's command dies with the actor: util-linux's setpriv sets
# PR_SET_PDEATHSIG (SIGKILL when the thread that started it, the actor's
# waiter thread alive as long as the child, or the actor dies), then a shell
# checks that its parent is still the actor, comparing with the pid saved
# before the fork (a subreaper, not only init, may have adopted it), and
# execs the command. All of it is exec'd programs: no Python runs between
# fork and exec (preexec_fn is unsafe in a process with threads, as an actor).
_GUARD = 'test "$PPID" = "$0" || exit 1; exec "$@"'


_SETPRIV = []  # [path or None], probed once


def _setpriv_with_pdeathsig():
    # --pdeathsig came with util-linux 2.33 (RHEL 8 ships 2.32): probe it.
    if not _SETPRIV:
        path = shutil.which("setpriv")
        ok = path is not None and subprocess.run(
            [path, "--pdeathsig", "KILL", "true"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode == 0
        _SETPRIV.append(path if ok else None)
    return _SETPRIV[0]


def _die_with_parent_fallback(parent):
    # Only where setpriv has no --pdeathsig: Python between fork and exec,
    # which the subprocess docs warn against in a threaded process. prctl is
    # resolved here, in the actor before the fork (and not at import: Ray
    # pickles this module's globals with the actor class, and a ctypes
    # function cannot be pickled).
    prctl = ctypes.CDLL(None, use_errno=True).prctl

    def set_up():
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)
    return set_up


def _guarded(argv, env):
    """(argv, preexec_fn) under the death guard, or (None, error line)."""
    exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
    if exe is None or not os.path.isfile(exe):
        return None, f"cannot start {argv[0]}: No such file or directory"
    if not os.access(exe, os.X_OK):
        return None, f"cannot start {argv[0]}: Permission denied"
    setpriv = _setpriv_with_pdeathsig()
    if setpriv is None:
        return ([exe, *argv[1:]], _die_with_parent_fallback(os.getpid())), None
    return ([setpriv, "--pdeathsig", "KILL", "/bin/sh", "-c", _GUARD, str(os.getpid()), exe, *argv[1:]],
            None), None


class RankProcess:
    """One rank: the command as a child process of its actor."""

    def __init__(self):
        self.proc = None
        self.chunks = []  # (stream, bytes), taken by poll()
        self.lock = threading.Lock()
        self.readers = []
        self.started = threading.Event()
        self.start_error = None
        self.returncode = None

    def info(self):
        import ray
        ctx = ray.get_runtime_context()
        return {
            "node_id": ctx.get_node_id(),
            "ip": ray.util.get_node_ip_address(),
            "host": socket.gethostname(),
            "gpus": [str(g) for g in ray.get_gpu_ids()],
            "pid": os.getpid(),
        }

    def free_port(self):
        # Outside the ephemeral range: rank 0 binds it later, and no
        # outgoing connection on this node can take it in between.
        import random
        for port in port_candidates(ephemeral_ports(), random.SystemRandom()):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("", port))
                except OSError:
                    continue
                return port
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # no room outside it: the kernel's choice
            s.bind(("", 0))
            return s.getsockname()[1]

    def _read(self, stream, pipe):
        while True:
            data = os.read(pipe.fileno(), 65536)
            if not data:
                return
            with self.lock:
                self.chunks.append((stream, data))

    def _run(self, argv, env):
        guarded, why = _guarded(argv, env)
        if guarded is None:
            self.start_error = why
            self.started.set()
            return
        command, preexec = guarded
        try:
            self.proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         preexec_fn=preexec, start_new_session=True)
        except OSError as e:
            self.start_error = f"cannot start {argv[0]}: {e.strerror}"
            self.started.set()
            return
        for stream, pipe in (("out", self.proc.stdout), ("err", self.proc.stderr)):
            t = threading.Thread(target=self._read, args=(stream, pipe), daemon=True)
            t.start()
            self.readers.append(t)
        self.started.set()
        code = self.proc.wait()
        for t in self.readers:
            t.join(timeout=2.0)  # a grandchild holding the pipe must not block the report
        self.returncode = code

    def start(self, argv, env, dtbench):
        full = dict(os.environ)
        full.update(env)
        if argv[0] == "dtbench" and shutil.which("dtbench", path=full.get("PATH")) is None \
                and dtbench and os.access(dtbench, os.X_OK):
            argv = [dtbench] + argv[1:]
        # The waiter thread starts the child and lives exactly as long as it.
        threading.Thread(target=self._run, args=(argv, full), daemon=True).start()
        self.started.wait()
        if self.start_error:
            raise RuntimeError(self.start_error)
        return self.proc.pid

    def poll(self):
        with self.lock:
            chunks, self.chunks = self.chunks, []
        return chunks, self.returncode, self._stopped()

    def _stopped(self):
        # A stopped rank (SIGSTOP, a debugger) never exits: say so, as
        # dtbench's own launcher does, so the driver can name it.
        if self.proc is None or self.returncode is not None:
            return False
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
        except (OSError, IndexError):
            return False

    def signal(self, sig):
        if self.proc is not None and self.returncode is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass


# --- the driver ---------------------------------------------------------------

class Driver:
    def __init__(self, args):
        self.args = args
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
        actor_cls = ray.remote(RankProcess)
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


def main(argv):
    args = parse_args(argv)
    driver = Driver(args)
    driver.connect()
    # After ray.init: Ray's core worker installs a crash handler for SIGTERM.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, driver.on_signal)
    code = 1
    try:
        driver.place()
        code = driver.supervise()
    finally:
        driver.cleanup()
        try:
            driver.ray.shutdown()
        except Exception:
            pass
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
