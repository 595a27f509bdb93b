#!/usr/bin/env bash
# Failures with real processes: a rank killed mid-run, a rank that never
# joins, a port already in use, an unreachable master, a rank stopped
# (SIGSTOP) mid-run in gloo collectives, the c10d Reducer, a tensor-parallel
# group, horovod and the kvstore. Each must end within its bound, non-zero, with a message naming
# what failed, and leave no process behind. It runs in both flavours: what
# it checks includes each LibTorch's store, Gloo and Reducer timeouts and
# their messages. The launcher's own plumbing (signals, variables, mpirun)
# is launcher_faults.sh's, run once.
# Usage: faults.sh path/to/dtbench
set -u
DTBENCH=$(readlink -f "$1")
. "$(dirname "${BASH_SOURCE[0]}")/faults_lib.sh"

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

# 5. dtbench's workers join the store their launcher hosts, as torchrun's agent
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
# 6. A rank stopped (SIGSTOP), not killed: it never exits, so the launcher
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
# A tensor-parallel group: rank 0 waits on the stopped rank 1 in one of the
# block's sums (inside autograd's forward or backward).
"$DTBENCH" launch --nproc-per-node 2 -- "$DTBENCH" ddp --model gpt2 --layers 2 --width 64 --heads 4 --vocab 256 \
  --seq-len 16 -b 2 -n 1000000 -w 1 --tp 2 --no-baseline --timeout 5s >"$tmp/tstop.out" 2>"$tmp/tstop.err" &
launcher=$!
second_worker "$launcher" >/dev/null
sleep 6
stopped_rank "tensor-parallel rank stopped (dtbench launch -- ddp --tp 2)" "$tmp/tstop.err" "$launcher" \
  "rank 0\]: error: .*no answer within --timeout.*; cause: " 1 1
# A pipeline: rank 0 (stage 0) waits on the stopped rank 1 (stage 1) in a
# receive of an activation's gradient, or in the sends the step ends with.
"$DTBENCH" launch --nproc-per-node 2 -- "$DTBENCH" ddp --model gpt2 --layers 2 --width 64 --heads 4 --vocab 256 \
  --seq-len 16 -b 2 -n 1000000 -w 1 --pp 2 --no-baseline --timeout 5s >"$tmp/pstop.out" 2>"$tmp/pstop.err" &
launcher=$!
second_worker "$launcher" >/dev/null
sleep 6
stopped_rank "pipeline rank stopped (dtbench launch -- ddp --pp 2)" "$tmp/pstop.err" "$launcher" \
  "rank 0\]: error: .*no answer within --timeout.*; cause: " 1 1
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

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
