#!/usr/bin/env bash
# Failures met by the launchers' own plumbing, the same whatever the
# LibTorch (run once): a worker's child that ignores SIGTERM, the signals a
# launcher forwards (SIGINT, SIGHUP, SIGQUIT; SIGHUP ignored under nohup),
# the variables its workers see, a flag over its PET_* variable, and MPI
# ranks killed or stopped under mpirun. Each must end within its bound,
# non-zero where it fails, with a message naming what failed, and leave no
# process behind.
# Usage: launcher_faults.sh path/to/dtbench
set -u
DTBENCH=$(readlink -f "$1")
. "$(dirname "${BASH_SOURCE[0]}")/faults_lib.sh"

# 1. A worker's own child that ignores SIGTERM (a data loader, a shell's
# background job): after a rank is killed, the launcher's SIGTERM leaves it,
# and the SIGKILL to each worker's process group at the end must take it.
start=$(date +%s)
"$DTBENCH" launch --nproc-per-node 2 -- sh -c '(trap "" TERM; exec sleep 300) & exec "$0" comm -b 64K -e 64K -n 1000000 -w 1 --timeout 20s' \
  "$DTBENCH" >"$tmp/gc.out" 2>"$tmp/gc.err" &
launcher=$!
victim=$(second_worker "$launcher" "$tmp/gc.out" "dtbench comm")
sleep 1
workers=$(pgrep -P "$launcher")
kill -9 "$victim" 2>/dev/null
wait "$launcher"; rc=$?
sleep 0.5
left=$(left_in_groups $workers)
[ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$left" -eq 0 ]
check "killed rank: the workers' children that ignore SIGTERM are gone too (exit $rc, $left left)" $? \
  "victim=$victim rc=$rc left=$left: $(ps -e -o pgid=,pid=,stat=,args= | awk -v g=" $(echo $workers) " 'index(g, " " $1 " ")')"
for w in $workers; do pkill -9 -g "$w" 2>/dev/null; done

# 2. SIGINT to the launcher reaches every worker; nothing is left.
"$DTBENCH" comm --nproc 2 -b 1M -e 1M -n 100000 -w 1 >/dev/null 2>"$tmp/int.err" &
launcher=$!
# Until both workers run (a loaded machine takes seconds to load LibTorch).
workers=""
for _ in $(seq 1 150); do
  workers=$(pgrep -P "$launcher" | tr '\n' ' ')
  [ "$(echo $workers | wc -w)" -ge 2 ] && break
  sleep 0.2
done
sleep 1
kill -INT "$launcher"
wait "$launcher"; rc=$?
sleep 0.5
alive=0; for p in $workers; do kill -0 "$p" 2>/dev/null && alive=1; done
[ "$rc" -ne 0 ] && [ "$alive" -eq 0 ] && [ -n "$workers" ]
check "SIGINT: exit $rc, workers ($workers) gone" $? "rc=$rc alive=$alive $(cat "$tmp/int.err")"

# 2a. The launcher dies by the signal it forwarded (a shell loop around it
# stops too): SIGINT, and SIGHUP/SIGQUIT as torchrun traps them. Each
# reaches the workers' whole process groups with the grace period, so a
# worker's own child goes too (before SIGHUP was handled, the launcher died
# at once, PDEATHSIG SIGKILLed the worker and its child lived on).
for sig in INT HUP QUIT; do
  python3 - "$DTBENCH" "$sig" "$tmp/marker" <<'PY'
import os, signal, subprocess, sys, time
dtbench, name, marker = sys.argv[1], sys.argv[2], sys.argv[3]
sig = getattr(signal, "SIG" + name)
os.makedirs(marker, exist_ok=True)
# The worker: a shell whose child sleeps; the child's command line carries the marker.
p = subprocess.Popen([dtbench, "launch", "--nproc-per-node", "2", "--", "sh", "-c",
                      f"sh -c 'sleep 1000; : {marker}' & wait"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
# Signal once both workers' children run: before that the launcher may still
# be loading (LibTorch takes seconds on a loaded machine) and would die by the
# signal's default action without a word.
deadline = time.time() + 30
while time.time() < deadline:
    found = subprocess.run(["pgrep", "-f", "sleep 1000; : " + marker], capture_output=True, text=True).stdout.split()
    if len([q for q in found if int(q) != os.getpid()]) >= 2:
        break
    time.sleep(0.1)
time.sleep(0.3)
p.send_signal(sig)
_, err = p.communicate(timeout=20)
time.sleep(0.5)
left = [q for q in subprocess.run(["pgrep", "-f", "sleep 1000; : " + marker], capture_output=True, text=True).stdout.split()
        if int(q) != os.getpid()]
assert p.returncode == -sig, f"launcher ended with {p.returncode}, not by signal {sig}: {err}"
assert f"interrupted by signal {int(sig)}" in err, err
assert not left, f"left behind: {left}"
PY
  check "SIG$sig: the launcher forwards it, dies by it, nothing left" $? "see above"
done

# 2b. A launcher started with SIGHUP ignored (nohup) keeps it ignored, and
# so do its workers: a hangup ends nothing.
(trap '' HUP; exec "$DTBENCH" launch --nproc-per-node 1 -- sh -c 'sleep 2; echo alive') >"$tmp/nohup.out" 2>&1 &
nh=$!
sleep 1
kill -HUP "$nh"
wait "$nh"; rc=$?
[ $rc -eq 0 ] && grep -q alive "$tmp/nohup.out"
st=$?
check "SIGHUP ignored by the caller (nohup): the job runs on" $st "rc $rc: $(cat "$tmp/nohup.out")"

# 3. A worker sees torchrun's world and no other launcher's.
env -u OMP_NUM_THREADS OMPI_COMM_WORLD_SIZE=9 SLURM_NTASKS=9 PMI_RANK=5 "$DTBENCH" launch --nproc-per-node 2 -- sh -c \
  'echo "$RANK $ROLE_RANK $ROLE_NAME $ROLE_WORLD_SIZE $GROUP_WORLD_SIZE $TORCHELASTIC_RUN_ID $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS $TORCHELASTIC_USE_AGENT_STORE ${DTBENCH_AGENT_STORE:-none} $OMP_NUM_THREADS ${OMPI_COMM_WORLD_SIZE-unset} ${SLURM_NTASKS-unset} ${PMI_RANK-unset}"' \
  >"$tmp/env.out" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(sort "$tmp/env.out" | tr '\n' '|')" = "0 0 default 2 1 none 0 0 False none 1 unset unset unset|1 1 default 2 1 none 0 0 False none 1 unset unset unset|" ]
st=$?
check "launch: torchrun's worker variables, foreign ones cleared" $st "rc $rc: $(cat "$tmp/env.out")"
OMP_NUM_THREADS=3 "$DTBENCH" launch --nproc-per-node 2 -- sh -c 'echo $OMP_NUM_THREADS' >"$tmp/omp.out" 2>&1
[ "$(sort -u "$tmp/omp.out")" = "3" ]
st=$?
check "launch: a user's OMP_NUM_THREADS is kept" $st "$(cat "$tmp/omp.out")"
# A flag wins over its variable, as torchrun's flags over PET_*: with the
# variables alone this would be a 3-node job (and 'auto' refused).
env PET_NNODES=3 PET_NPROC_PER_NODE=auto JOB_COMPLETION_INDEX=2 PET_MASTER_ADDR=127.0.0.1 "$DTBENCH" launch \
  --nnodes 1 --nproc-per-node 2 -- sh -c 'echo "$WORLD_SIZE $RANK ${DTBENCH_NODE_PLAN-none}"' >"$tmp/flags.out" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(sort "$tmp/flags.out" | tr '\n' '|')" = "2 0 PET_MASTER_ADDR=127.0.0.1|2 1 PET_MASTER_ADDR=127.0.0.1|" ]
check "launch: --nnodes/--nproc-per-node win over PET_*, the index ignored for one node" $? \
  "rc $rc: $(cat "$tmp/flags.out")"

# 4. An MPI rank killed mid-run: mpirun ends the job, non-zero.
if command -v mpirun >/dev/null; then
  start=$(date +%s)
  "$DTBENCH" comm --backend mpi --nproc 2 -b 1M -e 1M -n 1000000 -w 1 >/dev/null 2>"$tmp/mpi.err" &
  launcher=$!
  sleep 4
  victim=$(pgrep -f "dtbench comm --backend mpi" | sort -n | tail -1)
  kill -9 "$victim" 2>/dev/null
  wait "$launcher"; rc=$?
  elapsed=$(( $(date +%s) - start ))
  sleep 0.5
  left=$(pgrep -f "dtbench comm --backend mpi" | wc -l)
  [ "$rc" -ne 0 ] && [ "$elapsed" -lt 40 ] && [ "$left" -eq 0 ]
  check "mpi killed rank: exit $rc in ${elapsed}s, $left left" $? "$(tail -3 "$tmp/mpi.err")"

  # 5. An MPI rank stopped (SIGSTOP) mid-run: MPI calls have no timeout of
  # their own; dtbench's watchdog on the running rank names itself and the
  # collective after --timeout and MPI_Abort ends the job. The stopped rank,
  # continued by the abort, does not report itself.
  start=$(date +%s)
  "$DTBENCH" comm --backend mpi --nproc 2 -b 1M -e 1M -n 1000000 -w 1 --timeout 5s \
    >"$tmp/stop.out" 2>"$tmp/stop.err" &
  launcher=$!
  mpirun_pid=""
  # Up to 30 s for mpirun and both ranks (a loaded CI machine is slow to
  # start them); without a victim the job would run its 10^6 iterations, so
  # it is ended and the check fails instead of hanging the test.
  for _ in $(seq 1 150); do
    mpirun_pid=$(pgrep -P "$launcher" mpirun | head -1)
    [ -n "$mpirun_pid" ] && [ "$(pgrep -P "$mpirun_pid" -f dtbench | wc -l)" -ge 2 ] && break
    sleep 0.2
  done
  sleep 3  # both ranks inside the sweep's allreduces
  victim=""
  [ -n "$mpirun_pid" ] && victim=$(pgrep -P "$mpirun_pid" -f dtbench | sort -n | tail -1)
  if [ -z "$victim" ]; then
    kill -TERM "$launcher" 2>/dev/null; sleep 2; pkill -9 -f "dtbench comm --backend mpi" 2>/dev/null
    wait "$launcher" 2>/dev/null
    check "mpi stopped rank: mpirun and its 2 ranks started within 30 s" 1 "$(cat "$tmp/stop.err" | head -5)"
  fi
  start=$(date +%s)
  [ -n "$victim" ] && kill -STOP "$victim"
  wait "$launcher"; rc=$?
  elapsed=$(( $(date +%s) - start ))
  sleep 0.5
  left=$(pgrep -f "dtbench comm --backend mpi" | wc -l)
  hung=$(grep -c "made no progress" "$tmp/stop.err")
  # Bound: --timeout 5 s + the watchdog's look (<1 s) + mpirun's teardown.
  [ "$rc" -ne 0 ] && [ "$elapsed" -lt 15 ] && [ "$left" -eq 0 ] && [ "$hung" -eq 1 ] &&
    grep -q "mpi: rank 0: allreduce of 1 MiB made no progress for [0-9.]* s (--timeout 5000 ms): a peer rank is stopped" "$tmp/stop.err"
  st=$?; check "mpi stopped rank: exit $rc ${elapsed}s after SIGSTOP, $hung report(s), $left left: $(grep "made no progress" "$tmp/stop.err")" $st \
    "victim $victim $(cat "$tmp/stop.err" | head -5)"
  kill -9 "$victim" 2>/dev/null

  # 5b. An MPI rank that stops before it joins: rank 1 stops itself before
  # exec, so rank 0's MPI_Init (the PMIx fence) or the master rendezvous
  # waits on it; the watchdog bounds those calls too (before: for ever).
  start=$(date +%s)
  timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 sh -c \
    'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then kill -STOP $$; fi; exec "$0" "$@"' \
    "$DTBENCH" comm --backend gloo -b 8 -e 8 -n 1 --timeout 5s >"$tmp/mi.out" 2>"$tmp/mi.err"
  rc=$?; elapsed=$(( $(date +%s) - start ))
  sleep 0.5
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$elapsed" -lt 30 ] &&
    grep -q "rank 0: MPI_[A-Za-z_]* made no progress for [0-9.]* s (--timeout 5000 ms)" "$tmp/mi.err"
  st=$?
  check "mpi rank stopped before it joins: exit $rc in ${elapsed}s: $(grep -m1 -o "MPI_[A-Za-z_]* made no progress" "$tmp/mi.err")" $st \
    "$(head -5 "$tmp/mi.err")"
  pkill -9 -f "comm --backend gloo -b 8 -e 8 -n 1 --timeout 5s" 2>/dev/null

  # 6. A gloo rank stopped under mpirun, which publishes nothing: the others'
  # collectives time out after --timeout and name it from its heartbeat in
  # the job's store (comm/liveness); mpirun then ends the job.
  mpirun --allow-run-as-root --oversubscribe -np 3 "$DTBENCH" comm --backend gloo -b 1M -e 1M -n 999996 -w 1 \
    --timeout 5s >"$tmp/mg.out" 2>"$tmp/mg.err" &
  job=$!
  victim=""
  for _ in $(seq 1 100); do
    for p in $(pgrep -f "dtbench comm --backend gloo -b 1M -e 1M -n 999996"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2" && victim=$p
    done
    [ -n "$victim" ] && grep -q "dtbench comm:" "$tmp/mg.out" 2>/dev/null && break
    sleep 0.2
  done
  sleep 2  # inside the allreduces
  start=$(date +%s)
  [ -n "$victim" ] && kill -STOP "$victim"
  # Never wait past the bound: a victim not found (or a job that does not
  # end) fails the check below instead of hanging the test.
  ( sleep 60; pkill -9 -f "n 999996" ) 2>/dev/null & guard=$!
  wait "$job"; rc=$?
  kill "$guard" 2>/dev/null
  elapsed=$(( $(date +%s) - start ))
  sleep 0.5
  left=$(pgrep -f "n 999996" | wc -l)
  named=$(grep -c "error: gloo .*no answer within --timeout.*; cause: rank 2 (pid $victim on [^)]*) sent no heartbeat" "$tmp/mg.err")
  # Bound: --timeout 5 s + the heartbeat look (2 s) + mpirun's teardown.
  [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$elapsed" -lt 20 ] && [ "$left" -eq 0 ] && [ "$named" -ge 1 ]
  check "mpirun, gloo rank stopped: exit $rc ${elapsed}s after SIGSTOP, $named rank(s) name rank 2 from its heartbeat, $left left" $? \
    "victim $victim $(grep -v "^ \|^#" "$tmp/mg.err" | head -6)"
  [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
fi

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
