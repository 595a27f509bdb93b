#!/usr/bin/env bash
# dtbench under real Slurm daemons on two hosts: two network namespaces
# joined by a veth link (tests/cli/netns_lib.sh), each with its own host name
# (dtbn0, dtbn1) and its own slurmd; slurmctld on dtbn0, one munged for both
# (its socket is a file both see). Runs, from dtbn0:
#   srun -N 2 -n 4 of comm (gloo) and ddp: results, 2N/4R, tasks per host;
#   srun --mpi=pmix of comm with the mpi backend;
#   the clusters guide's two-node batch script through `sbatch --wait`, and its
#   commented one-launcher-per-node variant as a script of its own;
#   a task killed mid-step (the survivors name it from its heartbeat, srun
#   names the task, the step ends, nothing is left on either host), a task stopped mid-step (gloo: the others name it
#   from its heartbeat; mpi under PMIx: the watchdog aborts the job) and a
#   step over its --time (Slurm ends it; the
#   --json report is valid, "complete": false, with the rows finished).
# Needs root, iproute2 and the slurmd/slurmctld/slurm-client/munge packages;
# exit 77 (skipped) with the reason otherwise. Daemons, namespaces and files
# are removed on every exit. Usage: slurm_multinode.sh path/to/dtbench
set -u
D=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, munged and slurmd run as root here)"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
for b in munged slurmctld slurmd srun sbatch scontrol; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || skip "$b not installed (apt-get install slurmd slurmctld slurm-client munge)"
done
[ -r /etc/munge/munge.key ] || skip "no /etc/munge/munge.key"
. "$ROOT/tests/cli/netns_lib.sh"
. "$ROOT/tests/cli/check_lib.sh"

tmp=$(mktemp -d /tmp/dtbench-slurm2.XXXXXX)
cleanup() {
  [ -f "$tmp/slurm.conf" ] && [ -n "${NS_A:-}" ] &&
    SLURM_CONF=$tmp/slurm.conf in_a timeout 10 scancel --quiet --user=root >/dev/null 2>&1
  local f
  for f in "$tmp"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  sleep 1
  for f in "$tmp"/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
  netns_cleanup
  pkill -9 -f "$tmp" 2>/dev/null
  [ -n "${KEEP:-}" ] && { echo "kept: $tmp"; return; }
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
netns_pair dts 10.231.13 dtbn0 dtbn1 || skip "$NETNS_ERROR"

# TmpFS per host: Slurm's PMIx plugin keeps per-step directories there, which
# two hosts sharing one /tmp collide on.
mkdir -p "$tmp/state" "$tmp/bin" "$tmp/work" "$tmp/spool-dtbn0" "$tmp/spool-dtbn1" "$tmp/tmp-dtbn0" "$tmp/tmp-dtbn1"
cat >"$tmp/slurm.conf" <<CONF
ClusterName=dtbench2
SlurmctldHost=$HOST_A($ADDR_A)
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool-%n
TmpFS=$tmp/tmp-%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd-%n.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
KillWait=5
InactiveLimit=0
NodeName=$HOST_A NodeAddr=$ADDR_A CPUs=2 State=UNKNOWN
NodeName=$HOST_B NodeAddr=$ADDR_B CPUs=2 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$tmp/slurm.conf
/usr/sbin/munged --force --socket="$tmp/munge.sock" --pid-file="$tmp/munged.pid" \
  --log-file="$tmp/munged.log" --seed-file="$tmp/munged.seed" || { echo "FAIL: munged did not start"; exit 1; }
in_a /usr/sbin/slurmctld -f "$tmp/slurm.conf" || { echo "FAIL: slurmctld did not start"; cat "$tmp/slurmctld.log"; exit 1; }
in_a /usr/sbin/slurmd -N "$HOST_A" -f "$tmp/slurm.conf" || { echo "FAIL: slurmd on $HOST_A did not start"; exit 1; }
in_b /usr/sbin/slurmd -N "$HOST_B" -f "$tmp/slurm.conf" || { echo "FAIL: slurmd on $HOST_B did not start"; exit 1; }
idle=0
for _ in $(seq 1 40); do
  idle=$(in_a sinfo -h -N -o "%N %t" 2>/dev/null | grep -c idle)
  [ "$idle" -eq 2 ] && break
  sleep 1
done
if [ "$idle" -ne 2 ]; then
  echo "FAIL: the two nodes never became idle"; in_a sinfo -N
  tail -5 "$tmp/slurmctld.log" "$tmp"/slurmd-*.log; exit 1
fi
echo "# slurmctld on $HOST_A ($ADDR_A), slurmd on $HOST_A and $HOST_B ($ADDR_B): both idle"
ln -s "$D" "$tmp/bin/dtbench"
export PATH="$tmp/bin:$PATH"
cd "$tmp/work"
# Every dtbench process on either host (none may be left).
real_d=$(readlink -f "$D")
# A dtbench process: the front end, or dtbench-torch beside it (its jobs).
is_dtbench() {
  local e; e=$(readlink -f "/proc/$1/exe" 2>/dev/null)
  [ "$e" = "$real_d" ] || [ "$e" = "$(dirname "$real_d")/dtbench-torch" ]
}
# `left` leaves out the time-limit step running beside the others (its
# --json is limit.json); `left all` counts it too.
left() { for ns in "$NS_A" "$NS_B"; do ip netns pids "$ns"; done | while read -r p; do
  is_dtbench "$p" || continue
  [ "${1:-}" != all ] && grep -qa limit.json "/proc/$p/cmdline" 2>/dev/null && continue
  echo "$p"; done; }

# task3_pid MARK: the pid of task 3 (on the second host) of the step whose
# command line holds MARK, once it runs ("" after 20 s).
task3_pid() {
  local p
  for _ in $(seq 1 100); do
    for p in $(ip netns pids "$NS_B"); do
      grep -qa "$1" "/proc/$p/cmdline" 2>/dev/null && grep -qa dtbench "/proc/$p/cmdline" &&
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_PROCID=3" && { echo "$p"; return; }
    done
    sleep 0.2
  done
}
# in_loop FILE: wait until rank 0 printed the sweep's header to FILE (every
# rank is past start-up and rendezvous, inside the collectives), plus 2 s.
in_loop() {
  for _ in $(seq 1 300); do grep -q "# dtbench comm:" "$1" 2>/dev/null && break; sleep 0.2; done
  sleep 2
}

# 7 (started first, checked last: Slurm's smallest limit is a minute). A
# step over its --time: Slurm ends it (SIGTERM, SIGKILL after KillWait);
# the report holds the rows finished. One task per host, so the other steps
# still find CPUs.
limit_start=$(date +%s)
in_a timeout 240 srun -N 2 -n 2 --time=1 dtbench comm -b 64K -e 64M -f 2 -n 400 -w 1 --timeout 60s \
  --json limit.json >limit.out 2>&1 &
limit_job=$!

# 1. srun -N 2 -n 4: gloo comm across the two hosts.
if in_a timeout 180 srun -N 2 -n 4 dtbench comm -b 1K -e 1M -f 32 -n 3 -w 1 --timeout 30s --json comm.json \
     >comm.out 2>&1 &&
   [ "$(json comm.json 'j["env"]["world"]["source"]')" = slurm ] &&
   [ "$(json comm.json 'j["env"]["world"]["label"]')" = 2N/4R ] &&
   [ "$(json comm.json 'j["env"]["world"]["node_of_rank"]')" = "[0, 0, 1, 1]" ] &&
   [ "$(json comm.json 'j["summary"]["wrong"]')" = 0 ] && [ "$(json comm.json 'j["complete"]')" = True ]; then
  ok "srun -N 2 -n 4 dtbench comm: source slurm, 2N/4R, ranks 0,1 on $HOST_A and 2,3 on $HOST_B, 0 wrong"
else
  fail "srun -N 2 -n 4 dtbench comm"; tail -10 comm.out
fi
hosts=$(json comm.json '" ".join(j["env"]["world"]["node_hosts"])' 2>/dev/null)
case "$hosts" in
  *"$HOST_A"*"$HOST_B"*) ok "report names the hosts Slurm ran on: $hosts" ;;
  *) fail "node hosts in the report: '$hosts'" ;;
esac

# 2. srun -N 2 -n 4 ddp (gloo, c10d Reducer): replicas verified, 2N/4R.
if in_a timeout 300 srun -N 2 -n 4 dtbench ddp -m mlp -b 8 -n 3 -w 1 --reducer ddp --timeout 60s --json ddp.json \
     >ddp.out 2>&1 &&
   [ "$(json ddp.json 'j["runs"][-1]["label"]')" = 2N/4R ] && [ "$(json ddp.json 'j["complete"]')" = True ]; then
  ok "srun -N 2 -n 4 dtbench ddp: 2N/4R, complete"
else
  fail "srun -N 2 -n 4 dtbench ddp"; tail -10 ddp.out
fi

# 3. The mpi backend, started by srun through PMIx (no mpirun).
if in_a timeout 180 srun --mpi=pmix -N 2 -n 4 dtbench comm --backend mpi -b 1K -e 1M -f 32 -n 3 -w 1 \
     --json mpi.json >mpi.out 2>&1 &&
   [ "$(json mpi.json 'j["env"]["world"]["label"]')" = 2N/4R ] && [ "$(json mpi.json 'j["summary"]["wrong"]')" = 0 ] &&
   grep -q "backend mpi" mpi.out; then
  ok "srun --mpi=pmix -N 2 -n 4 dtbench comm --backend mpi: 2N/4R, 0 wrong"
else
  # The whole output and how far the report got: a crash after the last row
  # (in MPI_Finalize) reads differently from one inside the sweep.
  fail "srun --mpi=pmix dtbench comm --backend mpi (report: $(json mpi.json \
    '"%d row(s), complete %s" % (len(j["results"]), j["complete"])' 2>/dev/null || echo none))"
  head -60 mpi.out
fi

# 4. The clusters guide's two-node batch script as written, then its commented
# variant (one dtbench launcher per node) as a script of its own.
python3 - "$ROOT/docs/guide/clusters.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"```sh\n(#!/bin/bash\n#SBATCH --job-name=dtbench-ddp\n.*?)```", text, re.S)
script = m.group(1) if m else ""
open("ddp.sbatch", "w").write(script)
head, sep, tail = script.partition("# or one launcher per node:\n")
variant = "\n".join(l[2:] for l in tail.splitlines() if l.startswith("# "))
header = "\n".join(l for l in head.splitlines() if l.startswith("#"))
open("launch.sbatch", "w").write(header.replace("dtbench-ddp", "dtbench-launch") + "\n" + variant + "\n" if variant else "")
PY
if [ ! -s ddp.sbatch ]; then
  fail "clusters guide: no two-node batch script (#SBATCH --job-name=dtbench-ddp)"
elif in_a timeout 600 sbatch --wait -o ddp-sbatch.out ddp.sbatch >/dev/null 2>sbatch.err; then
  f=$(ls ddp-[0-9]*.json 2>/dev/null | head -1)
  if [ -n "$f" ] && [ "$(json "$f" 'j["runs"][-1]["label"]')" = 2N/4R ] && [ "$(json "$f" 'j["complete"]')" = True ]; then
    ok "clusters guide: sbatch ddp.sbatch -> $f (2N/4R, complete)"
  else
    fail "clusters guide two-node sbatch: no complete 2N/4R report"; tail -10 ddp-sbatch.out
  fi
else
  fail "clusters guide two-node sbatch --wait failed"; cat sbatch.err; tail -10 ddp-sbatch.out
fi
if [ ! -s launch.sbatch ]; then
  fail "clusters guide: no one-launcher-per-node variant in the two-node script"
elif in_a timeout 600 sbatch --wait -o launch-sbatch.out launch.sbatch >/dev/null 2>sbatch.err; then
  f=$(ls comm-[0-9]*.json 2>/dev/null | head -1)
  if [ -n "$f" ] && [ "$(json "$f" 'j["env"]["world"]["label"]')" = 2N/4R ] &&
     [ "$(json "$f" 'j["complete"]')" = True ] && [ "$(json "$f" 'j["summary"]["wrong"]')" = 0 ]; then
    ok "clusters guide: the one-launcher-per-node variant through sbatch -> $f (2N/4R, 0 wrong)"
  else
    fail "clusters guide launcher variant: no 2N/4R report"; tail -10 launch-sbatch.out
  fi
else
  fail "clusters guide launcher variant: sbatch --wait failed"; cat sbatch.err; tail -10 launch-sbatch.out
fi

# 5. A task killed mid-step on the second host: the survivors' collectives
# fail and name it (its heartbeat stood still: Slurm publishes nothing), srun
# names the task, the step ends, and nothing is left on either host.
start=$(date +%s)
in_a timeout 120 srun -N 2 -n 4 dtbench comm -b 8 -e 8 -n 999997 --timeout 20s >kill.out 2>&1 &
job=$!
victim=$(task3_pid 999997)
in_loop kill.out
killed_at=$(date +%s)
[ -n "$victim" ] && kill -9 "$victim"
wait "$job"; rc=$?
took=$(( $(date +%s) - killed_at ))
if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 30 ] && grep -q "task 3" kill.out &&
   grep -q "dtbench\[rank 0\]: error: .*; cause: rank 3 (pid $victim on $HOST_B) sent no heartbeat" kill.out; then
  ok "killed task 3 on $HOST_B: rank 0 named it, srun exit $rc ${took}s after: $(grep -m1 "task 3" kill.out)"
else
  fail "killed task (pid $victim): srun exit $rc ${took}s after SIGKILL"; tail -n 12 kill.out
fi
sleep 2
if [ -n "$(left)" ]; then fail "dtbench processes left after the killed task: $(left)"; else ok "no process left on either host"; fi

# 6. A task stopped (SIGSTOP), not killed, on the second host: the others'
# collectives time out after --timeout and name it (its heartbeat stood
# still: Slurm publishes nothing), the step ends, nothing is left.
start=$(date +%s)
in_a timeout 120 srun -N 2 -n 4 --kill-on-bad-exit=1 dtbench comm -b 8 -e 8 -n 999999 --timeout 5s \
  >stop.out 2>&1 &
job=$!
victim=$(task3_pid 999999)
in_loop stop.out
stopped_at=$(date +%s)
[ -n "$victim" ] && kill -STOP "$victim"
wait "$job"; rc=$?
took=$(( $(date +%s) - stopped_at ))
if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 40 ] &&
   grep -q "dtbench\[rank 0\]: error: .*; cause: rank 3 (pid $victim on $HOST_B) sent no heartbeat" stop.out; then
  ok "stopped task 3 on $HOST_B: rank 0 named it, srun exit $rc ${took}s after SIGSTOP"
else
  fail "stopped task (pid $victim): srun exit $rc ${took}s after SIGSTOP"; tail -n 12 stop.out
fi
sleep 2
if [ -n "$(left)" ]; then fail "dtbench processes left after the stopped task: $(left)"; else ok "no process left after the stopped task"; fi

# 6b. The same with the mpi backend under srun --mpi=pmix: MPI has no
# timeout, so dtbench's watchdog ends the job (MPI_Abort) after --timeout.
start=$(date +%s)
in_a timeout 120 srun --mpi=pmix -N 2 -n 4 --kill-on-bad-exit=1 dtbench comm --backend mpi -b 1M -e 1M \
  -n 999998 --timeout 5s >mstop.out 2>&1 &
job=$!
victim=$(task3_pid 999998)
in_loop mstop.out
stopped_at=$(date +%s)
[ -n "$victim" ] && kill -STOP "$victim"
wait "$job"; rc=$?
took=$(( $(date +%s) - stopped_at ))
if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 40 ] &&
   grep -q "mpi: rank [0-2]: .* made no progress for .*aborting the job (MPI_Abort)" mstop.out; then
  ok "mpi task stopped under srun --mpi=pmix: the watchdog aborted the job, srun exit $rc ${took}s after SIGSTOP"
else
  fail "mpi task stopped under srun --mpi=pmix (pid $victim): srun exit $rc ${took}s after SIGSTOP"; tail -n 12 mstop.out
fi
sleep 2
if [ -n "$(left)" ]; then fail "dtbench processes left after the stopped mpi task: $(left)"; else ok "no process left after the stopped mpi task"; fi

# 7 (end). The step over its --time.
wait "$limit_job"; rc=$?; took=$(( $(date +%s) - limit_start ))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "TIME LIMIT" limit.out; then
  ok "step over --time=1: ended by Slurm after ${took}s (exit $rc): $(grep -m1 -o "CANCELLED.*TIME LIMIT" limit.out)"
else
  fail "step over --time: exit $rc after ${took}s"; tail -10 limit.out
fi
if [ "$(json limit.json 'j["complete"]')" = False ] && [ "$(json limit.json 'len(j["results"]) > 0')" = True ] &&
   [ "$(json limit.json 'j["summary"]["wrong"]')" = 0 ] && [ "$(json limit.json 'j["env"]["world"]["label"]')" = 2N/2R ]; then
  ok "its report is valid and incomplete: $(json limit.json 'len(j["results"])') row(s), 2N/2R, complete false"
else
  fail "the time-limited step's report: $(head -c 300 limit.json 2>&1)"
fi
sleep 2
if [ -n "$(left all)" ]; then fail "dtbench processes left after the time limit: $(left all)"; else ok "no process left after the time limit"; fi
finish
