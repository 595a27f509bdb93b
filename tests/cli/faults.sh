#!/usr/bin/env bash
# Failures with real processes: a rank killed mid-run, an MPI rank stopped
# (SIGSTOP) mid-run, a rank that never joins, a port already in use, an
# unreachable master. Each must end within its bound, non-zero, with a
# message naming what failed, and leave no process behind.
# Usage: faults.sh path/to/dtbench
set -u
DTBENCH=$(readlink -f "$1")
fails=0; passes=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME CONDITION-RESULT DETAIL
  if [ "$2" -eq 0 ]; then echo "ok: $1"; passes=$((passes + 1));
  else echo "FAIL: $1: $3"; fails=$((fails + 1)); fi
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
# Prints the second worker (by pid) of PARENT once it exists and, if given,
# once FILE contains PATTERN; empty if that never happens within 20 s.
second_worker() {  # PARENT [FILE PATTERN]
  local v=""
  for _ in $(seq 1 100); do
    v=$(pgrep -P "$1" | sort -n | sed -n 2p)
    [ -n "$v" ] && { [ $# -lt 3 ] || grep -q "$3" "$2" 2>/dev/null; } && break
    sleep 0.2
  done
  echo "$v"
}
left_behind() { pgrep -f "$tmp/marker" >/dev/null; }
# The live processes left in the process groups of the workers WORKER...
# (zombies, dead but not yet reaped by whoever inherited them, do not count):
# each worker leads its own group, so its own children count too. Take the
# pids while the launcher lives: once it is reaped a survivor has a new
# parent and `pgrep -P launcher` sees nothing.
left_in_groups() {  # WORKER...
  local n=0 p
  for p in "$@"; do
    n=$((n + $(ps -e -o pgid=,stat= | awk -v g="$p" '$1 == g && $2 !~ /^Z/' | wc -l)))
  done
  echo "$n"
}

# 1. A rank SIGKILLed in the middle of a gloo comm run.
start=$(date +%s)
DTBENCH_TEST_MARKER=1 "$DTBENCH" comm --nproc 3 -b 1M -e 1M -n 100000 -w 1 --timeout 20s \
  >"$tmp/kill.out" 2>"$tmp/kill.err" &
launcher=$!
victim=$(second_worker "$launcher" "$tmp/kill.out" collective)
sleep 1
workers=$(pgrep -P "$launcher")
kill -9 "$victim" 2>/dev/null
wait "$launcher"; rc=$?
elapsed=$(( $(date +%s) - start ))
kids=$(left_in_groups $workers)
grep -Eq "rank [0-9] \(pid $victim\) was killed by signal 9" "$tmp/kill.err"
check "killed rank: launcher names the killed rank and signal 9" $? "$(cat "$tmp/kill.err")"
[ "$rc" -ne 0 ] && [ "$elapsed" -lt 25 ] && [ "$kids" -eq 0 ]
# (The status first: a command substitution in check's message would reset $?.)
st=$?; check "killed rank: exit $rc (non-zero) within ${elapsed}s, no workers left of $(echo $workers)" $st \
  "rc=$rc elapsed=$elapsed left=$kids"

# 1b. A rank SIGKILLed in the middle of a ddp sweep row: the sweep stops with
# a non-zero status naming the rank and the row, and the report it leaves is
# valid JSON marked incomplete.
start=$(date +%s)
"$DTBENCH" ddp --model mlp --width 32 --num-classes 10 --batch-size 4 --threads 1 \
  --iters 100000 --warmup 0 --world-sizes 2 --no-baseline --timeout 20s \
  --json "$tmp/ddp.json" >"$tmp/ddp.out" 2>"$tmp/ddp.err" &
sweep=$!
victim=$(second_worker "$sweep")
sleep 2
workers=$(pgrep -P "$sweep")
kill -9 "$victim" 2>/dev/null
wait "$sweep"; rc=$?
elapsed=$(( $(date +%s) - start ))
kids=$(left_in_groups $workers)
grep -Eq "rank [0-9] \(pid $victim\) was killed by signal 9" "$tmp/ddp.err" &&
  grep -q "row '1N/2R' (2 rank(s)) failed" "$tmp/ddp.err"
check "ddp killed rank: the rank, the signal and the row are named" $? "$(cat "$tmp/ddp.err")"
[ "$rc" -ne 0 ] && [ "$elapsed" -lt 30 ] && [ "$kids" -eq 0 ] &&
  python3 -c "import json,sys; d=json.load(open('$tmp/ddp.json')); sys.exit(d['complete'] is not False)"
st=$?; check "ddp killed rank: exit $rc within ${elapsed}s, no workers left of $(echo $workers), report valid and incomplete" $st \
  "rc=$rc elapsed=$elapsed left=$kids"

# 1c. A worker's own child that ignores SIGTERM (a data loader, a shell's
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

# 2. A rank that never joins: rank 0 alone in a 2-rank job times out.
port=$(free_port)
start=$(date +%s)
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  timeout 60 "$DTBENCH" comm -n 1 -b 8 -e 8 --timeout 3s >/dev/null 2>"$tmp/join.err"
rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -eq 1 ] && [ "$elapsed" -lt 20 ] && grep -Eq "rendezvous|could not connect to its peers within 3000 ms" "$tmp/join.err" && [ "$(wc -l <"$tmp/join.err")" -eq 1 ]
check "missing rank: one-line rendezvous error, exit 1 in ${elapsed}s" $? "rc=$rc $(cat "$tmp/join.err")"

# 3. The master port is already in use by another program.
port=$(free_port)
python3 -c "import socket,time; s=socket.socket(); s.bind(('0.0.0.0',$port)); s.listen(); time.sleep(30)" &
squatter=$!
sleep 0.5
RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  timeout 60 "$DTBENCH" comm -n 1 -b 8 -e 8 --timeout 3s >/dev/null 2>"$tmp/port.err"
rc=$?
kill "$squatter" 2>/dev/null; wait "$squatter" 2>/dev/null
[ "$rc" -eq 1 ] && grep -q "could not host the store on 127.0.0.1:$port" "$tmp/port.err"
check "port in use: clear error, exit 1" $? "rc=$rc $(cat "$tmp/port.err")"

# 4. Nobody listens at the master address: a non-zero rank gives up in time.
port=$(free_port)
start=$(date +%s)
RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
  timeout 60 "$DTBENCH" comm -n 1 -b 8 -e 8 --timeout 3s >/dev/null 2>"$tmp/unreach.err"
rc=$?
elapsed=$(( $(date +%s) - start ))
[ "$rc" -eq 1 ] && [ "$elapsed" -lt 20 ] && grep -q "could not reach the store" "$tmp/unreach.err"
check "unreachable master: clear error, exit 1 in ${elapsed}s" $? "rc=$rc $(cat "$tmp/unreach.err")"

# (Launchers that disagree on the world, and a rank killed on another node
# named by this node's ranks: multinode.sh 5 and 6, across two namespace hosts.)

# 5. SIGINT to the launcher reaches every worker; nothing is left.
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

# 5a. The launcher dies by the signal it forwarded (a shell loop around it
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

# 5b'. A launcher started with SIGHUP ignored (nohup) keeps it ignored, and
# so do its workers: a hangup ends nothing.
(trap '' HUP; exec "$DTBENCH" launch --nproc-per-node 1 -- sh -c 'sleep 2; echo alive') >"$tmp/nohup.out" 2>&1 &
nh=$!
sleep 1
kill -HUP "$nh"
wait "$nh"; rc=$?
[ $rc -eq 0 ] && grep -q alive "$tmp/nohup.out"
st=$?
check "SIGHUP ignored by the caller (nohup): the job runs on" $st "rc $rc: $(cat "$tmp/nohup.out")"

# 5c. A worker sees torchrun's world and no other launcher's.
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
# dtbench's workers join the store their launcher hosts, as torchrun's agent
# store: two launchers on this host as two nodes, rank 0 SIGKILLed, and
# node 1's ranks still read the cause node 0's launcher published (when rank
# 0 hosted the store, they could only say it did not answer). multinode.sh
# does the same across namespace hosts; this runs in both flavours.
port=$(free_port)
for node in 0 1; do
  timeout 60 "$DTBENCH" launch --nnodes 2 --node-rank $node --nproc-per-node 2 --master-addr 127.0.0.1 \
    --master-port "$port" -- "$DTBENCH" comm -b 64K -e 64K -n 1000000 -w 1 --timeout 8s \
    >"$tmp/r0.$node.out" 2>"$tmp/r0.$node.err" &
  eval "r0_$node=\$!"
done
for _ in $(seq 1 100); do grep -q "dtbench comm:" "$tmp/r0.0.out" 2>/dev/null && break; sleep 0.2; done
sleep 1
victim=$(pgrep -P "$(pgrep -P "$r0_0" | head -1)" | sort -n | head -1)  # timeout -> launcher -> rank 0
[ -n "$victim" ] && kill -9 "$victim"
wait "$r0_0"; rc0=$?; wait "$r0_1"; rc1=$?
[ -n "$victim" ] && [ "$rc0" -ne 0 ] && [ "$rc1" -ne 0 ] &&
  grep -q "cause: rank 0 (pid $victim) was killed by signal 9 (Killed) on node 0" "$tmp/r0.1.err"
check "launch: rank 0 killed, the other node's ranks name it from the launcher's store (exit $rc0/$rc1)" $? \
  "victim=$victim: $(cat "$tmp/r0.0.err" "$tmp/r0.1.err" | head -8)"
# Another program's workers (here PyTorch's own init_process_group, whose
# TCPStore may be another LibTorch's protocol) keep rank 0's store, as
# torchrun without its agent store: TORCHELASTIC_USE_AGENT_STORE=False.
"$DTBENCH" launch --nproc-per-node 2 -- /usr/bin/python3 -c '
import os, torch.distributed as dist
assert os.environ["TORCHELASTIC_USE_AGENT_STORE"] == "False", os.environ["TORCHELASTIC_USE_AGENT_STORE"]
import sys
dist.init_process_group("gloo"); dist.barrier()
sys.stdout.write("joined %d\n" % dist.get_world_size()); sys.stdout.flush()' >"$tmp/py.out" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c "joined 2" "$tmp/py.out")" -eq 2 ]
check "launch: a PyTorch program's init_process_group under dtbench launch (rank 0 hosts)" $? \
  "rc $rc: $(tail -5 "$tmp/py.out")"
# A flag wins over its variable, as torchrun's flags over PET_*: with the
# variables alone this would be a 3-node job (and 'auto' refused).
env PET_NNODES=3 PET_NPROC_PER_NODE=auto JOB_COMPLETION_INDEX=2 PET_MASTER_ADDR=127.0.0.1 "$DTBENCH" launch \
  --nnodes 1 --nproc-per-node 2 -- sh -c 'echo "$WORLD_SIZE $RANK ${DTBENCH_NODE_PLAN-none}"' >"$tmp/flags.out" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(sort "$tmp/flags.out" | tr '\n' '|')" = "2 0 PET_MASTER_ADDR=127.0.0.1|2 1 PET_MASTER_ADDR=127.0.0.1|" ]
check "launch: --nnodes/--nproc-per-node win over PET_*, the index ignored for one node" $? \
  "rc $rc: $(cat "$tmp/flags.out")"

# 5b. A rank stopped (SIGSTOP), not killed: it never exits, so the launcher
# publishes that it is stopped and the ranks waiting on it end after
# --timeout naming it — gloo collectives (comm, dtbench's own launcher) and
# the c10d Reducer's (ddp --reducer ddp under `dtbench launch`). The first
# rank to time out exits, so a rank still waiting on it may see "Connection
# closed by peer" before its own --timeout: either error counts, as long as
# it names the stopped rank as the cause.
stopped_rank() {  # NAME ERRFILE PARENT [PATTERN WANT RANK]: stop PARENT's last worker (rank RANK, default 2), check the others' lines
  local name=$1 err=$2 parent=$3 victim rc elapsed
  local pattern=${4:-"error: .*\\(no answer within --timeout\\|Connection closed by peer\\).*; cause: "} want=${5:-2} vr=${6:-2}
  victim=$(pgrep -P "$parent" | sort -n | tail -1)
  start=$(date +%s)
  kill -STOP "$victim"
  wait "$parent"; rc=$?
  elapsed=$(( $(date +%s) - start ))
  sleep 0.5
  kill -0 "$victim" 2>/dev/null && { kill -9 "$victim"; alive=1; } || alive=0
  named=$(grep -c "${pattern}rank $vr (pid $victim) is stopped by signal 19" "$err")
  # Bound: --timeout 5 s + the cause lookup + the launcher's teardown.
  [ "$rc" -ne 0 ] && [ "$elapsed" -lt 15 ] && [ "$alive" -eq 0 ] && [ "$named" -ge "$want" ] &&
    grep -q "dtbench launch: rank $vr (pid $victim) is stopped by signal 19" "$err"
  check "$name: exit $rc ${elapsed}s after SIGSTOP, $named rank(s) name rank $vr" $? \
    "alive=$alive named=$named $(head -8 "$err")"
}
DTBENCH_TEST_MARKER=1 "$DTBENCH" comm --nproc 3 -b 1M -e 1M -n 1000000 -w 1 --timeout 5s \
  >"$tmp/gstop.out" 2>"$tmp/gstop.err" &
launcher=$!
second_worker "$launcher" "$tmp/gstop.out" collective >/dev/null
sleep 1
stopped_rank "gloo rank stopped (comm --nproc 3)" "$tmp/gstop.err" "$launcher"
# The same inside a sub-group sweep: --split mod:2 makes groups {0,2} and
# {1,3}; rank 3 stopped, its group partner (rank 1) waits on it in the
# group's collective, names it after --timeout, and the launcher ends the
# other group's ranks (still in their own iterations).
DTBENCH_TEST_MARKER=1 "$DTBENCH" comm --nproc 4 --split mod:2 -b 1M -e 1M -n 1000000 -w 1 --timeout 5s \
  >"$tmp/sstop.out" 2>"$tmp/sstop.err" &
launcher=$!
second_worker "$launcher" "$tmp/sstop.out" collective >/dev/null
sleep 1
stopped_rank "gloo rank stopped in a --split sweep (comm --nproc 4 --split mod:2)" "$tmp/sstop.err" "$launcher" \
  "rank 1\\]: error: .*\\(no answer within --timeout\\|Connection closed by peer\\).*; cause: " 1 3
"$DTBENCH" launch --nproc-per-node 3 -- "$DTBENCH" ddp -m mlp --width 64 -b 8 -n 1000000 -w 1 \
  --reducer ddp --no-baseline --timeout 5s >"$tmp/dstop.out" 2>"$tmp/dstop.err" &
launcher=$!
second_worker "$launcher" >/dev/null
sleep 6  # past start-up, inside the iterations
stopped_rank "Reducer rank stopped (dtbench launch -- ddp --reducer ddp)" "$tmp/dstop.err" "$launcher"
# The same for horovod: its background loop's negotiation (an allreduce every
# cycle) is what meets the stopped rank.
"$DTBENCH" launch --nproc-per-node 3 -- "$DTBENCH" ddp -m mlp --width 64 -b 8 -n 1000000 -w 1 \
  --reducer horovod --no-baseline --timeout 5s >"$tmp/hstop.out" 2>"$tmp/hstop.err" &
launcher=$!
second_worker "$launcher" >/dev/null
sleep 6
stopped_rank "horovod rank stopped (dtbench launch -- ddp --reducer horovod)" "$tmp/hstop.err" "$launcher"
# kvstore: the server (rank 2) stopped; the workers' requests time out. The
# workers start each round together (a barrier), so either may time out
# first; the first names the cause and exits, and the launcher then ends the
# other (which names it too if it was in time): one naming line at least.
"$DTBENCH" kvstore --mode dist_sync --workers 2 --servers 1 --size 1M --arrays 2 -n 100000 \
  --timeout 5s >"$tmp/kstop.out" 2>"$tmp/kstop.err" &
launcher=$!
second_worker "$launcher" >/dev/null
sleep 5
stopped_rank "kvstore server stopped (dist_sync)" "$tmp/kstop.err" "$launcher" \
  "rank [01]\]: error: rpc: no reply from kvstore server 0 (rank 2, .*; cause: " 1

# 6. An MPI rank killed mid-run: mpirun ends the job, non-zero.
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

  # 7. An MPI rank stopped (SIGSTOP) mid-run: MPI calls have no timeout of
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

  # 7b. An MPI rank that stops before it joins: rank 1 stops itself before
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

  # 8. A gloo rank stopped under mpirun, which publishes nothing: the others'
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
