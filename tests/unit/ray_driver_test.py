"""The Ray driver's pure parts (src/launch/ray_ranks.py) without Ray: rank
order, the variables each rank gets (CUDA_VISIBLE_DEVICES shared per node as
Ray Train shares it), how a failure is named.
Usage: python3 ray_driver_test.py path/to/ray_ranks.py"""
import importlib.util
import sys
import unittest

import os
import signal
import subprocess
import threading
import time

ranks_path = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location("ray_ranks", ranks_path)
rd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rd)
# The driver itself (Ray is imported only inside its functions).
sys.path.insert(0, os.path.dirname(ranks_path))
spec = importlib.util.spec_from_file_location("ray_driver", os.path.join(os.path.dirname(ranks_path), "ray_driver.py"))
driver = importlib.util.module_from_spec(spec)
spec.loader.exec_module(driver)


def rank(bundle, node, ip, gpus=()):
    return rd.Rank(bundle, None, {"node_id": node, "ip": ip, "host": node, "gpus": list(gpus), "pid": 100 + bundle})


class StorePort(unittest.TestCase):
    # MASTER_PORT is chosen on rank 0's node and bound later by rank 0: an
    # outgoing connection must not be able to take it in between.
    def test_candidates_stay_outside_the_ephemeral_range(self):
        import random
        rng = random.Random(7)
        for p in rd.port_candidates((32768, 60999), rng, count=5000):
            self.assertTrue(20000 <= p < 30000, p)
            self.assertNotIn(p, (29400, 29500))
        for p in rd.port_candidates((1024, 40000), rng, count=500):
            self.assertGreater(p, 40000)
        self.assertEqual(rd.port_candidates((1024, 65000), rng), [])  # no room: the kernel's choice

    def test_ephemeral_range_read_or_default(self):
        first, last = rd.ephemeral_ports()
        self.assertTrue(0 < first <= last <= 65535)
        self.assertEqual(rd.ephemeral_ports("/nonexistent"), (32768, 60999))


class OrderAndEnvironment(unittest.TestCase):
    def test_driver_node_first_then_address_then_gpu(self):
        ranks = [rank(0, "b", "10.0.0.10", ["1"]), rank(1, "a", "10.0.0.9", ["0"]),
                 rank(2, "b", "10.0.0.10", ["0"]), rank(3, "c", "10.0.0.20", ["3"])]
        groups = rd.order_ranks(ranks, driver_node="b")
        # Node b (the driver's) first, then 10.0.0.9 before 10.0.0.20 (numeric, not text order).
        self.assertEqual([[r.bundle for r in g] for g in groups], [[2, 0], [1], [3]])
        self.assertEqual([r.rank for r in ranks], [1, 2, 0, 3])
        env = rd.rank_env(groups, 4, "10.0.0.10", 41000, gpus_per_rank=1)
        self.assertEqual(env[0], {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2",
                                  "NODE_RANK": "0", "MASTER_ADDR": "10.0.0.10", "MASTER_PORT": "41000",
                                  "DTBENCH_LAUNCHER": "ray", "CUDA_VISIBLE_DEVICES": "0,1"})
        self.assertEqual((env[1]["LOCAL_RANK"], env[1]["CUDA_VISIBLE_DEVICES"]), ("1", "0,1"))
        self.assertEqual((env[2]["NODE_RANK"], env[2]["LOCAL_WORLD_SIZE"], env[2]["CUDA_VISIBLE_DEVICES"]),
                         ("1", "1", "0"))
        self.assertEqual(env[3]["CUDA_VISIBLE_DEVICES"], "3")
        self.assertEqual(env[3]["NODE_RANK"], "2")

    def test_no_gpus_leaves_cuda_visible_devices_alone(self):
        ranks = [rank(0, "a", "10.0.0.1"), rank(1, "a", "10.0.0.1")]
        env = rd.rank_env(rd.order_ranks(ranks, "a"), 2, "10.0.0.1", 1, gpus_per_rank=0)
        self.assertNotIn("CUDA_VISIBLE_DEVICES", env[0])
        self.assertEqual([env[r]["LOCAL_RANK"] for r in (0, 1)], ["0", "1"])


class Naming(unittest.TestCase):
    def test_cause_is_the_killed_or_lost_rank_not_its_victims(self):
        victim, killed, lost = rank(0, "a", "ip"), rank(1, "b", "ip"), rank(2, "c", "ip")
        for r, i in ((victim, 0), (killed, 1), (lost, 2)):
            r.rank = i
        victim.status, killed.status, lost.status = 1, -9, rd.LOST
        lost.lost_reason = "its node was lost"
        order = sorted([victim, lost, killed], key=lambda r: (rd.cause_priority(r), r.rank))
        self.assertEqual([r.rank for r in order], [1, 2, 0])
        self.assertIn("was killed by signal SIGKILL", rd.describe(killed))
        self.assertEqual(rd.exit_code_of(killed), 137)
        self.assertEqual(rd.exit_code_of(lost), 1)
        self.assertEqual(rd.exit_code_of(victim), 1)
        # A rank we killed ourselves while ending the job is not a cause.
        killed.terminated = True
        self.assertEqual(rd.cause_priority(killed), 2)
        killed.stopped = True  # ... unless it was seen stopped
        self.assertEqual(rd.cause_priority(killed), 0)
        self.assertIn("was stopped", rd.describe(killed))


class DeathGuard(unittest.TestCase):
    """A rank's command dies with its actor, started without Python between
    fork and exec (setpriv), or with the fallback where setpriv is too old."""

    def run_and_kill_parent(self, marker):
        pid = os.fork()
        if pid == 0:  # the "actor": a thread starts the command and waits on it
            def start():
                (cmd, pre), _ = driver._guarded(["sleep", marker], dict(os.environ))
                subprocess.Popen(cmd, preexec_fn=pre, start_new_session=True).wait()
            threading.Thread(target=start).start()
            time.sleep(60)
            os._exit(0)
        pattern = "sleep " + marker + "$"  # /usr/bin/sleep MARKER, once exec'd
        for _ in range(100):
            if subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            self.fail("the command never started")
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        time.sleep(0.3)
        return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()

    def test_the_command_runs_and_dies_with_its_actor(self):
        (cmd, pre), why = driver._guarded(["sh", "-c", "echo $0", "ran"], dict(os.environ))
        self.assertIsNone(why)
        self.assertEqual(subprocess.run(cmd, preexec_fn=pre, capture_output=True, text=True).stdout, "ran\n")
        if driver._setpriv_with_pdeathsig() is not None:
            self.assertIsNone(pre)  # no Python between fork and exec
        self.assertEqual(self.run_and_kill_parent("771.5"), [])

    def test_fallback_without_setpriv_pdeathsig(self):
        saved = list(driver._SETPRIV)
        driver._SETPRIV[:] = [None]
        try:
            self.assertEqual(self.run_and_kill_parent("772.5"), [])
        finally:
            driver._SETPRIV[:] = saved

    def test_a_missing_command_is_one_line(self):
        self.assertEqual(driver._guarded(["/no/such/command"], dict(os.environ)),
                         (None, "cannot start /no/such/command: No such file or directory"))


if __name__ == "__main__":
    unittest.main()
