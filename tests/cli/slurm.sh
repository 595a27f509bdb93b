#!/usr/bin/env bash
# dtbench under real Slurm daemons on this host: munged, slurmctld and one
# slurmd (Debian's slurm-wlm 22.05), started here with a slurm.conf of this
# test's own (private ports, state and munge socket), stopped on every exit.
# Runs the clusters guide's `srun -n 4 dtbench comm`, a JSON comm run, the clusters guide's
# single-node batch script through `sbatch --wait`, `--nproc` inside a
# batch script, and a task killed
# mid-step. Needs root and the slurmd/slurmctld/slurm-client/munge packages;
# exit 77 (skipped) with the reason otherwise. Usage: slurm.sh path/to/dtbench
set -u
D=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$(id -u)" -ne 0 ]; then echo "skipped: needs root (munged and slurmd run as root here)"; exit 77; fi
for b in munged slurmctld slurmd srun sbatch scontrol; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || { echo "skipped: $b not installed (apt-get install slurmd slurmctld slurm-client munge)"; exit 77; }
done
[ -r /etc/munge/munge.key ] || { echo "skipped: no /etc/munge/munge.key"; exit 77; }
tmp=$(mktemp -d /tmp/dtbench-slurm.XXXXXX)
H=$(hostname -s)
cleanup() {
  [ -f "$tmp/slurm.conf" ] && SLURM_CONF=$tmp/slurm.conf scancel --quiet --user=root >/dev/null 2>&1
  for p in slurmd slurmctld munged; do
    [ -f "$tmp/$p.pid" ] && kill "$(cat "$tmp/$p.pid")" 2>/dev/null
  done
  sleep 1
  for p in slurmd slurmctld munged; do
    [ -f "$tmp/$p.pid" ] && kill -9 "$(cat "$tmp/$p.pid")" 2>/dev/null
  done
  pkill -9 -f "$tmp" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/bin" "$tmp/work"
base=$((20000 + RANDOM % 20000))
cat >"$tmp/slurm.conf" <<CONF
ClusterName=dtbench
SlurmctldHost=$H
SlurmUser=root
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
AuthInfo=socket=$tmp/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
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
NodeName=$H CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF=$tmp/slurm.conf
/usr/sbin/munged --force --socket="$tmp/munge.sock" --pid-file="$tmp/munged.pid" \
  --log-file="$tmp/munged.log" --seed-file="$tmp/munged.seed" || { echo "FAIL: munged did not start"; exit 1; }
/usr/sbin/slurmctld -f "$tmp/slurm.conf" || { echo "FAIL: slurmctld did not start"; exit 1; }
/usr/sbin/slurmd -f "$tmp/slurm.conf" || { echo "FAIL: slurmd did not start"; exit 1; }
for _ in $(seq 1 30); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 1
done
if ! sinfo -h -o %t | grep -q idle; then echo "FAIL: the node never became idle"; sinfo; tail -5 "$tmp/slurmctld.log" "$tmp/slurmd.log"; exit 1; fi
echo "# slurmctld + slurmd up on $H (ports $base, $((base + 1)))"
ln -s "$D" "$tmp/bin/dtbench"
export PATH="$tmp/bin:$PATH"
cd "$tmp/work"
. "$ROOT/tests/cli/check_lib.sh"

# The clusters guide's line, as written.
if timeout 300 srun -n 4 dtbench comm >readme.out 2>&1 && grep -q "# Out of bounds values : 0 OK" readme.out \
   && grep -q "4 ranks (1N/4R)" readme.out; then
  ok "clusters guide: srun -n 4 dtbench comm"
else
  fail "clusters guide: srun -n 4 dtbench comm"; tail -10 readme.out
fi
# Ranks and nodes come from Slurm's variables.
if timeout 120 srun -n 2 dtbench comm -b 8 -e 64K -n 3 --json comm.json >comm.out 2>&1 \
   && [ "$(json comm.json 'j["env"]["world"]["source"]')" = slurm ] \
   && [ "$(json comm.json 'j["env"]["world"]["label"]')" = 1N/2R ] \
   && [ "$(json comm.json 'j["summary"]["wrong"]')" = 0 ]; then
  ok "srun -n 2 dtbench comm: source slurm, 1N/2R, 0 wrong"
else
  fail "srun -n 2 dtbench comm"; tail -10 comm.out
fi
# The clusters guide's single-node batch script, through sbatch.
python3 - "$ROOT/docs/guide/clusters.md" >one-node.sbatch <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"```sh\n(#!/bin/bash\n#SBATCH --job-name=dtbench-one-node\n.*?)```", text, re.S)
print(m.group(1) if m else "", end="")
PY
if [ ! -s one-node.sbatch ]; then
  fail "clusters guide: no single-node batch script (#SBATCH --job-name=dtbench-one-node)"
elif timeout 600 sbatch --wait -o sbatch.out one-node.sbatch >/dev/null 2>sbatch.err; then
  f=$(ls ddp-*.json 2>/dev/null | head -1)
  if [ -n "$f" ] && [ "$(json "$f" 'j["runs"][-1]["label"]')" = 1N/2R ] && [ "$(json "$f" 'j["complete"]')" = True ]; then
    ok "clusters guide: sbatch one-node.sbatch -> $f (1N/2R, complete)"
  else
    fail "sbatch: no complete report"; tail -10 sbatch.out
  fi
else
  fail "sbatch --wait failed"; cat sbatch.err; tail -10 sbatch.out
fi
# --nproc inside an allocation (the batch script itself, not an srun step):
# dtbench starts its own ranks there, as on a laptop.
cat >nproc.sbatch <<'SB'
#!/bin/bash
#SBATCH -n 2
env | grep '^SLURM_STEP\|^SLURM_PROCID\|^SLURM_NTASKS' | sort
dtbench comm --nproc 2 -b 8 -e 64K -n 3
SB
if timeout 300 sbatch --wait -o nproc.out nproc.sbatch >/dev/null 2>nproc.err \
   && grep -q "world_size: 2" nproc.out && grep -q "Out of bounds values : 0 OK" nproc.out; then
  ok "sbatch: dtbench comm --nproc 2 inside the batch script"
else
  fail "sbatch: --nproc 2 inside the batch script"; cat nproc.err; tail -12 nproc.out
fi
# A task killed mid-step: the step ends, the survivor names what broke, no
# process is left.
start=$(date +%s)
timeout 120 srun -n 2 --kill-on-bad-exit=1 bash -c \
  'dtbench comm -b 8 -e 8 -n 1000000 --timeout 20s & pid=$!; if [ "$SLURM_PROCID" = 1 ]; then sleep 3; kill -9 $pid; fi; wait $pid' \
  >kill.out 2>&1
rc=$?; took=$(( $(date +%s) - start ))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 60 ] && grep -q "task 1" kill.out \
   && ! grep -q "rendezvous" kill.out; then
  ok "killed task: srun exit $rc after ${took}s: $(grep -m1 "task 1" kill.out)"
else
  fail "killed task: exit $rc after ${took}s"; tail -10 kill.out
fi
sleep 2
if pgrep -f "dtbench comm -b 8 -e 8 -n 1000000" >/dev/null; then
  fail "processes left after the killed task"
else
  ok "no process left"
fi
finish
