#!/usr/bin/env bash
# dtbench on a real two-node Ray cluster (ray 2.60.0, scripts/ray.sh): a head
# on one network-namespace host and a worker node on another
# (tests/cli/netns_lib.sh), each Ray process bound to its namespace's
# address. Runs the clusters guide's "On a Ray cluster" lines as written (HEAD_IP and
# NODE_IP are the two namespace addresses), pack vs spread and the variables
# the ranks see, then the faults: a rank's process killed, its actor killed,
# its node's raylet killed — each ends the job non-zero within seconds with
# the rank named, no rank process and no live placement group left. Needs
# root and iproute2; installs Ray when missing; exit 77 (skipped) with the
# reason where it cannot. Usage: ray_cluster.sh path/to/dtbench
set -u
D=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (ip netns add)"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
command -v unshare >/dev/null && command -v nsenter >/dev/null || skip "unshare/nsenter (util-linux) are not installed"
if [ ! -f "$ROOT/.deps/ray/.complete" ]; then
  echo "# installing ray 2.60.0 (scripts/ray.sh)"
  out=$(bash "$ROOT/scripts/ray.sh" 2>&1) || skip "cannot install Ray: $(echo "$out" | tail -n 1)"
fi
RAYBIN=$ROOT/.deps/ray/bin
. "$ROOT/tests/cli/netns_lib.sh"
. "$ROOT/tests/cli/check_lib.sh"
# Short: Ray's Unix socket paths live under it (108 bytes at most).
tmp=$(mktemp -d /tmp/dtray.XXXXXX)
cleanup() { netns_cleanup; pkill -9 -f "$tmp" 2>/dev/null; [ -n "${KEEP:-}" ] && { echo "kept: $tmp"; return; }; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
netns_pair dtr 10.231.17 rnode0 rnode1 || skip "$NETNS_ERROR"
mkdir -p "$tmp/bin" "$tmp/a" "$tmp/b" "$tmp/work"
ln -s "$D" "$tmp/bin/dtbench"
export PATH="$tmp/bin:$RAYBIN:$PATH"
export HEAD_IP=$ADDR_A NODE_IP=$ADDR_B
export RAY_USAGE_STATS_ENABLED=0
# A lost node is declared within ~2 s instead of Ray's default ~30 s.
export RAY_health_check_initial_delay_ms=1000 RAY_health_check_period_ms=500
export RAY_health_check_timeout_ms=500 RAY_health_check_failure_threshold=3
cd "$tmp/work"
real_d=$(readlink -f "$D")
# A dtbench process: the front end, or dtbench-torch beside it (its jobs).
is_dtbench() {
  local e; e=$(readlink -f "/proc/$1/exe" 2>/dev/null)
  [ "$e" = "$real_d" ] || [ "$e" = "$(dirname "$real_d")/dtbench-torch" ]
}
left() { for ns in "$NS_A" "$NS_B"; do ip netns pids "$ns"; done | while read -r p; do
  is_dtbench "$p" && echo "$p"; done; }
# Each host keeps its Ray files apart (RAY_TMPDIR): both share this machine's /tmp.
on_a() { in_a env RAY_TMPDIR="$tmp/a" "$@"; }
on_b() { in_b env RAY_TMPDIR="$tmp/b" "$@"; }
# live_pgs: placement groups not REMOVED (run on the head host).
live_pgs() {
  on_a timeout 60 "$RAYBIN/python" -c '
import logging, ray
ray.init(address="auto", logging_level=logging.ERROR, log_to_driver=False)
print(sum(1 for p in ray.util.placement_group_table().values() if p["state"] != "REMOVED"))' 2>/dev/null
}
alive_nodes() {
  on_a timeout 60 "$RAYBIN/python" -c '
import logging, ray
ray.init(address="auto", logging_level=logging.ERROR, log_to_driver=False)
print(sum(1 for n in ray.nodes() if n["Alive"]))' 2>/dev/null
}
# clusters guide lines of the "On a Ray cluster" section (trailing comments cut).
readme_line() {
  python3 - "$ROOT/docs/guide/clusters.md" "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text.split("## On a Ray cluster", 1)[-1].split("\n## ", 1)[0]
for line in section.splitlines():
    if line.startswith(sys.argv[2]):
        print(re.sub(r"\s+#.*$", "", line)); break
PY
}
head_line=$(readme_line "ray start --head")
node_line=$(readme_line "ray start --address")
launch_line=$(readme_line "dtbench launch --ray")
job_line=$(readme_line "ray job submit")
for v in head_line node_line launch_line job_line; do
  [ -n "${!v}" ] || { fail "clusters guide 'On a Ray cluster': no $v"; finish; exit 1; }
done

# 0. No cluster yet: one line each, at once.
on_a timeout 60 dtbench launch --ray --nproc 1 -- true >none.out 2>&1; rc_n=$?
on_a timeout 60 dtbench launch --ray "$HEAD_IP:6390" --nproc 1 -- true >closed.out 2>&1; rc_c=$?
if [ "$rc_n" -ne 0 ] && [ "$rc_n" -ne 124 ] && [ "$(wc -l <none.out)" -eq 1 ] && grep -q "cannot connect to the Ray cluster at 'auto'" none.out &&
   [ "$rc_c" -ne 0 ] && [ "$rc_c" -ne 124 ] && [ "$(wc -l <closed.out)" -eq 1 ] && grep -q "no Ray cluster at $HEAD_IP:6390: Connection refused" closed.out; then
  ok "no cluster (auto) and a closed port: one line each, exit $rc_n/$rc_c"
else
  fail "no cluster / closed port: rc $rc_n/$rc_c"; cat none.out closed.out
fi

# 1. The cluster, started by the clusters guide's lines: head on rnode0, worker on rnode1.
echo "# rnode0: $head_line"
on_a sh -c "$head_line" >head.out 2>&1 || { fail "ray start --head: rc $?"; tail -n 20 head.out; finish; exit 1; }
echo "# rnode1: $node_line"
on_b sh -c "$node_line" >node.out 2>&1 || { fail "ray start --address: rc $?"; tail -n 20 node.out; finish; exit 1; }
for _ in $(seq 30); do [ "$(alive_nodes)" = 2 ] && break; sleep 1; done
if [ "$(alive_nodes)" = 2 ]; then ok "Ray cluster: head on $HEAD_IP (rnode0), worker on $NODE_IP (rnode1)"
else fail "Ray cluster: $(alive_nodes) live node(s), not 2"; finish; exit 1; fi

# 2. The clusters guide's launch line on the head host: ddp across both nodes.
echo "# rnode0: $launch_line"
start=$(date +%s)
on_a timeout 180 sh -c "$launch_line" >launch.out 2>&1; rc=$?
took=$(( $(date +%s) - start ))
hosts=$(json ray-ddp.json '" ".join(sorted(j["env"]["world"]["node_hosts"]))' 2>/dev/null)
if [ "$rc" -eq 0 ] && [ "$(json ray-ddp.json 'j["runs"][-1]["label"]' 2>/dev/null)" = 2N/2R ] &&
   [ "$(json ray-ddp.json 'j["env"]["world"]["source"]' 2>/dev/null)" = ray ] &&
   [ "$(json ray-ddp.json 'j["complete"]' 2>/dev/null)" = True ] && [ "$hosts" = "rnode0 rnode1" ] &&
   grep -q "2N/2R" launch.out; then
  ok "clusters guide launch line (${took}s): ddp 2N/2R on $hosts, source ray, replicas verified, rank 0's table streamed"
else
  fail "clusters guide launch line: rc $rc"; tail -n 20 launch.out
fi

# 3. What each rank sees, packed and spread (the other ranks' stderr is prefixed).
show='echo "rank=$RANK local=$LOCAL_RANK lws=$LOCAL_WORLD_SIZE node=$NODE_RANK world=$WORLD_SIZE master=$MASTER_ADDR host=$(hostname)" >&2'
on_a timeout 120 dtbench launch --ray --nproc 2 --placement pack -- sh -c "$show" >pack.out 2>&1; rc_p=$?
on_a timeout 120 dtbench launch --ray --nproc 2 --placement spread -- sh -c "$show" >spread.out 2>&1; rc_s=$?
pack_ok=0; spread_ok=0
# PACK fills one node, either of the two (Ray picks it): both ranks there, MASTER_ADDR its address.
for h in "rnode0 $HEAD_IP" "rnode1 $NODE_IP"; do
  read -r hn ha <<<"$h"
  grep -q "^rank=0 local=0 lws=2 node=0 world=2 master=$ha host=$hn" pack.out &&
    grep -q "^\[rank 1\] rank=1 local=1 lws=2 node=0 world=2 master=$ha host=$hn" pack.out && pack_ok=1
done
grep -q "^rank=0 local=0 lws=1 node=0 world=2 master=$HEAD_IP host=rnode0" spread.out &&
  grep -q "^\[rank 1\] rank=1 local=0 lws=1 node=1 world=2 master=$HEAD_IP host=rnode1" spread.out && spread_ok=1
if [ "$rc_p" -eq 0 ] && [ "$rc_s" -eq 0 ] && [ "$pack_ok" = 1 ] && [ "$spread_ok" = 1 ]; then
  ok "pack: both ranks on one node (LOCAL_RANK 0,1); spread: one per node (NODE_RANK 0,1), MASTER_ADDR = rank 0's node"
else
  fail "pack/spread environment: rc $rc_p/$rc_s"; cat pack.out spread.out
fi

# 4. More than the cluster holds: one line naming what it has, non-zero, no group left.
on_a timeout 60 dtbench launch --ray --nproc 8 --placement-timeout 3s -- true >big.out 2>&1; rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(wc -l <big.out)" -eq 1 ] && grep -q "cannot place 8 rank" big.out &&
   grep -q "2 node(s)" big.out; then
  ok "8 ranks on 4 CPUs: exit $rc, $(cat big.out | cut -c1-110)..."
else
  fail "8 ranks on 4 CPUs: rc $rc"; cat big.out
fi

# A command missing on the nodes: one line naming it.
on_a timeout 60 dtbench launch --ray --nproc 2 -- /no/such/command >missing.out 2>&1; rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(wc -l <missing.out)" -eq 1 ] &&
   grep -q "rank [01] on node .*cannot start /no/such/command: No such file or directory" missing.out && [ "$(live_pgs)" = 0 ]; then
  ok "a command missing on the nodes: exit $rc, $(cat missing.out)"
else
  fail "a missing command: rc $rc"; cat missing.out
fi

# The faults: a ddp job long enough to be cut, ranks spread over both nodes.
long=(dtbench launch --ray --nproc 2 --placement spread -- dtbench ddp -m mlp -b 8 -n 100000 -w 1)
# rank1_pid: the pid of rank 1's dtbench (on rnode1), once it runs.
rank1_pid() {
  local p
  for _ in $(seq 60); do
    for p in $(ip netns pids "$NS_B"); do
      is_dtbench "$p" &&
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx RANK=1 && { echo "$p"; return; }
    done
    sleep 0.5
  done
}
# fault NAME ACTION EXPECTED [RANK_TIMEOUT]: runs the long job on rnode0,
# ACTION once rank 1 runs (given rank 1's pid $p), checks the ending.
fault() {
  local name=$1 action=$2
  on_a timeout 120 "${long[@]}" --timeout "${4:-30s}" >"$name.out" 2>&1 &
  local job=$!
  local p; p=$(rank1_pid)
  if [ -z "$p" ]; then fail "$name: rank 1 never started"; wait "$job"; return; fi
  sleep 3
  local start; start=$(date +%s)
  eval "$action"
  wait "$job"; local rc=$?
  local took=$(( $(date +%s) - start ))
  sleep 1
  local pgs; pgs=$(live_pgs)
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 30 ] &&
     grep -q "dtbench launch --ray: rank 1 .*$3.*: job ended" "$name.out" && [ -z "$(left)" ] && [ "$pgs" = 0 ]; then
    ok "$name: exit $rc after ${took}s: $(grep 'dtbench launch --ray: rank 1.*job ended' "$name.out" | cut -c1-150)"
  else
    fail "$name: rc $rc after ${took}s, processes left: '$(left)', live placement groups: '$pgs'"; tail -n 15 "$name.out"
  fi
}
# 5. A rank's process killed.
fault killed_rank 'kill -9 $p' "killed by signal SIGKILL"
# 6. Its actor (the Ray worker process that started it) killed: the rank dies with it.
fault killed_actor 'kill -9 $(ps -o ppid= -p $p)' "Ray actor"
# 7. A stopped rank (SIGSTOP): rank 0 ends at its --timeout, the driver names rank 1.
fault stopped_rank 'kill -STOP $p' "was stopped" 6s
# 8. SIGTERM to the driver (as `ray job stop` sends): every rank stopped, 143.
on_a timeout 120 "${long[@]}" --timeout 30s >sigterm.out 2>&1 &
job=$!
p=$(rank1_pid); sleep 2
drv=$(for q in $(ip netns pids "$NS_A"); do tr '\0' ' ' <"/proc/$q/cmdline" 2>/dev/null | grep -q "ray_driver.py" && echo "$q"; done)
start=$(date +%s)
[ -n "$drv" ] && kill -TERM $drv
wait "$job"; rc=$?
took=$(( $(date +%s) - start ))
sleep 1
pgs=$(live_pgs)
if [ -n "$drv" ] && [ "$rc" -eq 143 ] && [ "$took" -lt 20 ] && grep -q "interrupted by SIGTERM" sigterm.out &&
   [ -z "$(left)" ] && [ "$pgs" = 0 ]; then
  ok "SIGTERM to the driver: exit 143 after ${took}s, every rank stopped, no placement group left"
else
  fail "SIGTERM to the driver (pid '$drv'): rc $rc after ${took}s, left '$(left)', groups '$pgs'"; tail -n 10 sigterm.out
fi

# 10. Its node's raylet stopped (SIGSTOP: Ray stops hearing from the node),
# then, after the node is back, killed: either way the node is lost, the rank with it.
raylet_b() { for q in $(ip netns pids "$NS_B"); do [ "$(cat /proc/$q/comm 2>/dev/null)" = raylet ] && echo $q; done; }
fault stopped_raylet 'r=$(raylet_b); kill -STOP $r' "its node was lost"
kill -9 $(raylet_b) 2>/dev/null
for _ in $(seq 20); do [ "$(alive_nodes)" = 1 ] && break; sleep 0.5; done
on_b sh -c "$node_line" >node1.out 2>&1
for _ in $(seq 30); do [ "$(alive_nodes)" = 2 ] && break; sleep 1; done
fault killed_raylet 'kill -9 $(raylet_b)' "its node was lost"

# 11. The clusters guide's job line (after the raylet of rnode1 was killed: restart that node first).
# rnode1 comes back advertising 2 (logical) GPUs, for the GPU placement below.
on_b sh -c "$node_line --num-gpus 2" >node2.out 2>&1
for _ in $(seq 30); do [ "$(alive_nodes)" = 2 ] && break; sleep 1; done
echo "# rnode0: $job_line"
start=$(date +%s)
on_a timeout 240 sh -c "$job_line" >job.out 2>&1; rc=$?
took=$(( $(date +%s) - start ))
if [ "$rc" -eq 0 ] && grep -q "2N/2R" job.out && grep -q "succeeded" job.out; then
  ok "clusters guide ray job submit line (${took}s): the job ran ddp 2N/2R and succeeded"
else
  fail "clusters guide ray job submit line: rc $rc after ${took}s"; tail -n 25 job.out
fi

# 12. GPUs as Ray assigns them (Ray's logical GPUs of rnode1: no CUDA runs):
# both ranks land on rnode1, each sees both of that node's GPUs, as Ray Train
# shares them, and MASTER_ADDR is rnode1 (rank 0's node, not the driver's).
show='echo "rank=$RANK local=$LOCAL_RANK node=$NODE_RANK master=$MASTER_ADDR cuda=$CUDA_VISIBLE_DEVICES host=$(hostname)" >&2'
on_a timeout 120 dtbench launch --ray --nproc 2 --gpus-per-rank 1 -- sh -c "$show" >gpus.out 2>&1; rc=$?
if [ "$rc" -eq 0 ] && grep -q "^rank=0 local=0 node=0 master=$NODE_IP cuda=0,1 host=rnode1" gpus.out &&
   grep -q "^\[rank 1\] rank=1 local=1 node=0 master=$NODE_IP cuda=0,1 host=rnode1" gpus.out; then
  ok "--gpus-per-rank 1: both ranks on rnode1 (its 2 GPUs), CUDA_VISIBLE_DEVICES=0,1 on each, MASTER_ADDR rnode1"
else
  fail "--gpus-per-rank 1: rc $rc"; cat gpus.out
fi
on_a timeout 60 dtbench launch --ray --nproc 3 --gpus-per-rank 1 --placement-timeout 2s -- true >gpus3.out 2>&1; rc=$?
if [ "$rc" -ne 0 ] && grep -q "cannot place 3 rank(s) of {'CPU': 1.0, 'GPU': 1.0}" gpus3.out && grep -q "'GPU': 2.0" gpus3.out; then
  ok "3 ranks of 1 GPU on 2 GPUs: exit $rc, one line naming the cluster's GPUs"
else
  fail "3 ranks of 1 GPU: rc $rc"; cat gpus3.out
fi
finish
