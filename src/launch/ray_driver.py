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

The driver side (placement, supervision): ray_job.py beside it; the ranks'
order, variables and failure naming: ray_ranks.py.
Needs Ray (pinned: scripts/ray.sh installs ray 2.60.0 into .deps/ray).
"""
import argparse
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading

# Beside this file (the build copies both next to dtbench).
from ray_ranks import ephemeral_ports, port_candidates
from ray_job import PROG, Driver, fail

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


def main(argv):
    args = parse_args(argv)
    driver = Driver(args, RankProcess)
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
