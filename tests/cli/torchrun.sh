#!/usr/bin/env bash
# dtbench under a real torchrun (the PyTorch 2.11 wheel's, through
# bench/peers/python-wheel; Debian's 1.13 torchrun crashes in its own elastic
# code on this Python). torchrun's agent hosts the store at MASTER_PORT
# (TORCHELASTIC_USE_AGENT_STORE=True): every dtbench rank must join it, not
# host its own. Runs the clusters guide's torchrun line exactly, a ddp job, a
# worker killed mid-run and a worker stopped (SIGSTOP) mid-run. Exit 77 (skipped) where no torchrun can be run.
# Usage: torchrun.sh path/to/dtbench
set -u
D=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if ! "$ROOT/bench/peers/python-wheel" -c 'import torch.distributed.run' >/dev/null 2>&1; then
  echo "skipped: no torchrun (the wheel flavour's torch and its Python packages: bash scripts/peers_wheel.sh)"
  exit 77
fi
# `torchrun` and `dtbench` as the clusters guide writes them.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nexec "%s" -m torch.distributed.run "$@"\n' "$ROOT/bench/peers/python-wheel" >"$tmp/bin/torchrun"
ln -s "$D" "$tmp/bin/dtbench"
chmod +x "$tmp/bin/torchrun"
export PATH="$tmp/bin:$PATH"
cd "$tmp"
. "$ROOT/tests/cli/check_lib.sh"
port() { echo $((20000 + RANDOM % 20000)); }
none_left() {  # PATTERN WHAT: no process matching PATTERN after WHAT
  if pgrep -f "$1" >/dev/null; then
    fail "processes left after $2"; pkill -9 -f "$1"
  else
    ok "no process left after $2"
  fi
}

# The clusters guide's line, as written (default sweep 1K..32M); then with --json.
if timeout 300 torchrun --nproc-per-node 2 --no-python dtbench comm >"$tmp/readme.out" 2>&1; then
  grep -q "# Out of bounds values : 0 OK" "$tmp/readme.out" && ok "clusters guide: torchrun --nproc-per-node 2 --no-python dtbench comm" \
    || { fail "clusters guide torchrun line: no clean footer"; tail -5 "$tmp/readme.out"; }
else
  fail "clusters guide torchrun line exited non-zero"; tail -15 "$tmp/readme.out"
fi
if timeout 120 torchrun --nproc-per-node 2 --master-port "$(port)" --no-python dtbench comm -b 8 -e 64K -n 3 \
     --json "$tmp/comm.json" >"$tmp/comm.out" 2>&1; then
  [ "$(json "$tmp/comm.json" 'j["env"]["world"]["label"]')" = 1N/2R ] && [ "$(json "$tmp/comm.json" 'j["summary"]["wrong"]')" = 0 ] \
    && ok "comm under torchrun: 1N/2R, 0 wrong" || fail "comm under torchrun: label/wrong"
else
  fail "comm under torchrun exited non-zero"; tail -15 "$tmp/comm.out"
fi
# ddp: one job of torchrun's ranks (no sweep), replicas verified.
if timeout 300 torchrun --nproc-per-node 2 --master-port "$(port)" --no-python dtbench ddp -m mlp -b 8 -n 3 -w 1 \
     --json "$tmp/ddp.json" >"$tmp/ddp.out" 2>&1; then
  [ "$(json "$tmp/ddp.json" 'j["runs"][-1]["label"]')" = 1N/2R ] && ok "ddp under torchrun: 1N/2R" \
    || fail "ddp under torchrun: label $(json "$tmp/ddp.json" 'j["runs"][-1]["label"]')"
else
  fail "ddp under torchrun exited non-zero"; tail -15 "$tmp/ddp.out"
fi
# A worker killed mid-run: torchrun tears the job down and names the rank;
# nothing of the job is left running.
start=$(date +%s)
timeout 120 torchrun --nproc-per-node 2 --master-port "$(port)" --no-python bash -c \
  'dtbench comm -b 8 -e 8 -n 1000000 --timeout 30s & pid=$!; if [ "$RANK" = 1 ]; then sleep 3; kill -9 $pid; fi; wait $pid' \
  >"$tmp/kill.out" 2>&1
rc=$?; took=$(( $(date +%s) - start ))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 60 ] && grep -Eq "rank +: 1 |rank 1" "$tmp/kill.out"; then
  ok "killed worker: exit $rc after ${took}s, rank 1 named"
else
  fail "killed worker: exit $rc after ${took}s"; tail -20 "$tmp/kill.out"
fi
sleep 1
none_left "dtbench comm -b 8 -e 8 -n 1000000" "the killed-worker job"
# A worker stopped (SIGSTOP), not killed: rank 0's collective times out after
# --timeout and names rank 1 (torchrun publishes nothing; rank 1's heartbeat
# in the store stood still: comm/liveness), rank 0 exits
# 1, torchrun tears the job down, the stopped rank included (SIGTERM stays
# pending on a stopped process: torchrun's SIGKILL comes after its own 30 s
# grace, so the job ends ~40 s after the stop).
start=$(date +%s)
timeout 120 torchrun --nproc-per-node 2 --master-port "$(port)" --no-python dtbench comm -b 8 -e 8 \
  -n 999999 --timeout 5s >"$tmp/stop.out" 2>&1 &
job=$!
victim=""
for _ in $(seq 1 100); do
  for p in $(pgrep -f "dtbench comm -b 8 -e 8 -n 999999"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=1" && victim=$p
  done
  [ -n "$victim" ] && break; sleep 0.2
done
sleep 3
stopped_at=$(date +%s)
kill -STOP "$victim"
wait "$job"; rc=$?
took=$(( $(date +%s) - stopped_at ))
if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 60 ] &&
   grep -q "dtbench\[rank 0\]: error: gloo .*no answer within --timeout.*; cause: rank 1 (pid $victim on .*) sent no heartbeat" "$tmp/stop.out"; then
  ok "stopped worker: rank 0 timed out naming rank 1 (its heartbeat), torchrun exit $rc ${took}s after SIGSTOP"
else
  fail "stopped worker (pid $victim): exit $rc ${took}s after SIGSTOP"; tail -20 "$tmp/stop.out"
fi
sleep 1
none_left "dtbench comm -b 8 -e 8 -n 999999" "the stopped-worker job"
finish
