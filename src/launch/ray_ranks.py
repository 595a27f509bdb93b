"""The ranks of a `dtbench launch --ray` job, without Ray (ray_driver.py uses
them; tests/unit/ray_driver_test.py checks them): the order Ray Train gives
its workers, the variables each rank gets, and which failure a job's ending
names."""
import signal

LOST = "lost"  # pseudo status of a rank whose actor or node is gone

def signal_name(sig):
    try:
        return f"{signal.Signals(sig).name} ({signal.strsignal(sig)})"
    except ValueError:
        return str(sig)


class Rank:
    def __init__(self, index, actor, info):
        self.bundle = index
        self.actor = actor
        self.info = info
        self.rank = -1
        self.pid = 0
        self.status = None       # exit code, or LOST
        self.lost_reason = ""
        self.pending = None      # the outstanding poll
        self.pending_since = 0.0
        self.partial = {"out": b"", "err": b""}
        self.terminated = False  # we sent it SIGTERM/SIGKILL
        self.stopped = False     # seen stopped (SIGSTOP) while running

    def where(self):
        return f"node {self.info['ip']} ({self.info['host']})"


def order_ranks(ranks, driver_node):
    """Ray Train's order: the driver's node first, then by node address; on a
    node by GPU id, then bundle. Sets rank; returns per-node groups."""
    nodes = {}
    for r in ranks:
        nodes.setdefault(r.info["node_id"], []).append(r)

    def node_key(node_id):
        ip = nodes[node_id][0].info["ip"]
        return (node_id != driver_node, tuple(int(x) if x.isdigit() else x for x in ip.split(".")),
                node_id)

    def gpu_key(r):
        return ([int(g) if g.isdigit() else g for g in r.info["gpus"]], r.bundle)

    groups = [sorted(nodes[n], key=gpu_key) for n in sorted(nodes, key=node_key)]
    rank = 0
    for group in groups:
        for r in group:
            r.rank = rank
            rank += 1
    return groups


def rank_env(groups, world, master_addr, master_port, gpus_per_rank):
    envs = {}
    for node_rank, group in enumerate(groups):
        node_gpus = sorted({g for r in group for g in r.info["gpus"]},
                           key=lambda g: int(g) if g.isdigit() else g)
        for local_rank, r in enumerate(group):
            e = {
                "RANK": str(r.rank),
                "LOCAL_RANK": str(local_rank),
                "WORLD_SIZE": str(world),
                "LOCAL_WORLD_SIZE": str(len(group)),
                "NODE_RANK": str(node_rank),
                "MASTER_ADDR": master_addr,
                "MASTER_PORT": str(master_port),
                "DTBENCH_LAUNCHER": "ray",
            }
            if gpus_per_rank > 0:
                e["CUDA_VISIBLE_DEVICES"] = ",".join(node_gpus)
            envs[r.rank] = e
    return envs


def describe(r):
    if r.stopped:
        return f"rank {r.rank} (pid {r.pid} on {r.where()}) was stopped (SIGSTOP)"
    if r.status == LOST:
        return f"rank {r.rank} on {r.where()}: {r.lost_reason}"
    if r.status < 0:
        return f"rank {r.rank} (pid {r.pid} on {r.where()}) was killed by signal {signal_name(-r.status)}"
    return f"rank {r.rank} (pid {r.pid} on {r.where()}) exited with code {r.status}"


def exit_code_of(r):
    if r.status == LOST:
        return 1
    return 128 - r.status if r.status < 0 else r.status


def cause_priority(r):
    # What ended the job, best first: a rank killed by a signal we did not
    # send or seen stopped, a lost actor or node, a non-zero exit (often a
    # victim's).
    if r.stopped:
        return 0
    if r.status == LOST:
        return 1
    if r.status < 0 and not r.terminated:
        return 0
    return 2


def ephemeral_ports(path="/proc/sys/net/ipv4/ip_local_port_range"):
    """The kernel's ephemeral port range (Linux's default where unreadable)."""
    try:
        with open(path) as f:
            first, last = (int(x) for x in f.read().split()[:2])
        if 0 < first <= last <= 65535:
            return first, last
    except (OSError, ValueError):
        pass
    return 32768, 60999


def port_candidates(ephemeral, rng, count=200):
    """Store ports to try, outside the ephemeral range (as dtbench's
    net::free_tcp_port): the port is chosen on one machine and bound later by
    rank 0, and no outgoing connection can take it meanwhile. Ports
    20000-29999 below the range's start when that leaves 1000 or more, else
    those from 32768 above its end (30000-32767 is Kubernetes' NodePort
    range); never 29400 or 29500 (torchrun's and torch's defaults). Empty
    when neither side leaves 1000 ports: then the kernel's choice."""
    first, last = 20000, min(29999, ephemeral[0] - 1)
    if last - first + 1 < 1000:
        first, last = max(32768, ephemeral[1] + 1), 65535
    if last - first + 1 < 1000:
        return []
    out = []
    while len(out) < count:
        p = rng.randint(first, last)
        if p not in (29400, 29500):
            out.append(p)
    return out

