#!/usr/bin/env bash
# Parameter servers end to end with real processes: `dtbench kvstore` in
# every mode (results checked exactly by the benchmark itself, JSON report
# read back), `dtbench hybrid` at the original's shape and several
# trainer/server counts (every lookup and the final tables checked against
# a replay on PyTorch's EmbeddingBag), roles under mpirun, and
# faults: a server or a worker SIGKILLed mid-run ends the job within the
# timeout, non-zero, naming what died, with no process left behind.
# Usage: ps_cli.sh path/to/dtbench [engines|plumbing|all]
#   engines   what goes through the LibTorch built against (its store,
#             TensorPipe's transports, ATen's tensors, Gloo's allreduce, the
#             EmbeddingBag replay, the errors a dead server raises there):
#             ctest ps_cli, both flavours;
#   plumbing  flags, defaults, array layouts, JSON fields, roles under
#             mpirun, the launcher naming a killed rank: ctest ps_cli_plumbing,
#             once (tests/CMakeLists.txt);
#   all       both (the default).
set -u
DTBENCH=$(readlink -f "$1")
part=${2:-all}
case $part in engines|plumbing|all) ;; *) echo "ps_cli.sh: part '$part': want engines, plumbing or all" >&2; exit 2;; esac
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
fails=0; passes=0
tmp=$(mktemp -d)
trap 'pkill -9 -f "$tmp/marker" 2>/dev/null; rm -rf "$tmp"' EXIT
# A marker path in every command line lets the test find its processes.
mkdir -p "$tmp/marker"

check() {  # check NAME STATUS DETAIL
  if [ "$2" -eq 0 ]; then echo "ok: $1"; passes=$((passes + 1));
  else echo "FAIL: $1: $3"; fails=$((fails + 1)); fi
}

run_ok() {  # run_ok NAME PATTERN ARGS... : exit 0 and PATTERN in stdout
  local name=$1 pattern=$2; shift 2
  timeout 180 "$DTBENCH" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -eq 0 ] && grep -q -- "$pattern" "$tmp/out"; then check "$name" 0 "";
  else check "$name" 1 "exit $rc; $(tail -3 "$tmp/err" | tr '\n' ' ') $(tail -3 "$tmp/out" | tr '\n' ' ')"; fi
}

small="--arrays 5 --size 1M --bigarray-bound 100000 -n 3 --timeout 30s"
if want engines; then
  run_ok "kvstore dist_sync 2+2" "max error 0 (must be 0)" kvstore --mode dist_sync --workers 2 --servers 2 $small --json "$tmp/kv.json"
  run_ok "kvstore dist_async 2+2" "final values: error 0" kvstore --mode dist_async --workers 2 --servers 2 $small
  run_ok "kvstore dist_device_sync 2 replicas" "max error 0 (must be 0)" kvstore --mode dist_device_sync --replicas 2 --workers 2 --servers 1 $small
  run_ok "kvstore dist_sync 3 replicas, uv/basic" "max error 0 (must be 0)" kvstore --mode dist_sync --replicas 3 --workers 1 --servers 1 --transport uv --channel basic $small
  run_ok "kvstore device 3 workers" "max error 0 (must be 0)" kvstore --mode device --workers 3 $small
fi
if want plumbing; then
  run_ok "kvstore dist_sync sgd 2+1" "max error 0 (must be 0)" kvstore --mode dist_sync --optimizer sgd --workers 2 --servers 1 $small --json "$tmp/kvsgd.json"
  run_ok "kvstore dist_sync 2+2 separate pulls, 2 replicas" "max error 0 (must be 0)" kvstore --mode dist_sync --separate-pull --replicas 2 --workers 2 --servers 2 $small --json "$tmp/kvsep.json"
  run_ok "kvstore dist_async sgd 1+2" "final values: error 0" kvstore --mode dist_async --optimizer sgd --workers 1 --servers 2 $small
  run_ok "kvstore local 3 replicas" "max error 0 (must be 0)" kvstore --mode local --replicas 3 $small
  "$DTBENCH" kvstore --mode local --replicas 1 $small >/dev/null 2>"$tmp/err"; rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "replicas 1 leaves nothing to reduce" "$tmp/err"
  check "kvstore local with one replica is refused in one line" $? "exit $rc: $(cat "$tmp/err")"
  run_ok "kvstore resnet50 arrays" "num of arrays = 161, total size = 102.228128 MB" kvstore --model resnet50 -n 1 -w 0 --ceiling-iters 1 --servers 2
  # measure.py's own figure for MXNet's resnet-200 symbol (the parameter-servers guide's line).
  run_ok "kvstore MXNet resnet-200 arrays (measure.py's)" "num of arrays = 205, total size = 257.991328 MB" \
    kvstore --network resnet --num-layers 200 -n 2
fi

if want engines; then
python3 - "$tmp/kv.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "dtbench.kvstore" and d["schema_version"] == 1
assert d["config"]["keys"] > 5, d["config"]   # big arrays split over 2 servers
assert len(d["workers"]) == 2 and all(len(w["iterations"]) == 3 for w in d["workers"])
assert all(it["error"] == 0 for w in d["workers"] for it in w["iterations"])
assert sum(s["pushes"] for s in d["servers"]) == 2 * 4 * d["config"]["keys"]  # warm-up + 3 iters
assert d["summary"]["ceiling_gbps"] > 0 and d["summary"]["p50_gbps_per_worker"] > 0
# the ceiling ran at the run's concurrency: 5 rounds (the default) of each worker
assert len(d["ceiling"]["seconds"]) == 2 * 5 and "every worker" in d["ceiling"]["what"], d["ceiling"]
PY
check "kvstore JSON report complete" $? "see above"
fi
if want plumbing; then
# Requests per key and round: a push-pull by default, a push and a pull with
# --separate-pull (2 replicas: 2 pushes + 1 pull).
python3 - "$tmp/kvsgd.json" "$tmp/kvsep.json" <<'PY'
import json, sys
d, sep = (json.load(open(p)) for p in sys.argv[1:])
rounds = 4  # warm-up + 3 iters
assert not d["config"]["separate_pull"] and sep["config"]["separate_pull"]
assert sum(s["pulls"] for s in d["servers"]) == 2 * rounds * d["config"]["keys"], d["servers"]
assert sum(s["pushes"] for s in sep["servers"]) == 2 * 2 * rounds * sep["config"]["keys"], sep["servers"]
assert sum(s["pulls"] for s in sep["servers"]) == 2 * rounds * sep["config"]["keys"], sep["servers"]
# measure.py's figures: GB/sec per gpu = S x 2(n-1)/n / t with n the
# replicas (0 for one), its relative L1 error (0 here); dtbench's per mode.
for doc, n in ((d, 1), (sep, 2)):
    S = doc["config"]["total_bytes"]
    for w in doc["workers"]:
        for it in w["iterations"]:
            assert abs(it["gbps_per_gpu"] - S * 2 * (n - 1) / n / it["seconds"] / 1e9) <= 1e-9 * it["gbps_per_gpu"] + 1e-12, it
            assert abs(it["gbps"] - (n + 1) * S / it["seconds"] / 1e9) <= 1e-9 * it["gbps"], it
            assert it["rel_l1_error"] == 0 and it["error"] == 0, it
    assert doc["summary"]["max_rel_l1_error"] == 0, doc["summary"]
PY
check "kvstore push-pull and separate pulls: requests counted, measure.py's figures" $? "see above"
fi

same="equals PyTorch's EmbeddingBag on the replayed tables"
if want engines; then
  run_ok "hybrid 2 trainers 1 server" "$same" hybrid --trainers 2 --servers 1 -n 20 --json "$tmp/hy.json"
  run_ok "hybrid 3 trainers 2 servers, batched lookups, uv" "$same" hybrid --trainers 3 --servers 2 -n 4 --lookup batched --transport uv
python3 - "$tmp/hy.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "dtbench.hybrid" and d["schema_version"] == 2
assert [t["trainer"] for t in d["trainers"]] == [0, 1]
c = d["config"]
assert (c["num_embeddings"], c["embedding_dim"], c["batches"], c["warmup"], c["lookup"], c["lr"]) == (300, 64, 10, 5, "sequential", 0.05), c
for t in d["trainers"]:
    assert len(t["epoch_seconds"]) == 20 and t["p50"] <= t["p95"], t
    assert len(t["lookup_seconds"]) == 20 * 10, len(t["lookup_seconds"])
    # The original's N/s: bags of the last epoch (10 batches of 1-50 bags) / each percentile.
    assert 10 <= t["last_epoch_bags"] <= 500 and abs(t["bags_per_s"][0] * t["p50"] - t["last_epoch_bags"]) < 1e-6, t
assert abs(d["all"]["bags_per_s"][0] * d["all"]["p50"] - sum(t["last_epoch_bags"] for t in d["trainers"])) < 1e-6
ck = d["check"]
assert ck["checked"] and ck["fc_replicas_identical"] and ck["lookups"] == ck["steps"] == 2 * (20 + 5) * 10, ck
assert d["ceiling"]["p50_seconds"] > 0
# Memory per trainer: the FC stack's parameters and gradients (plain SGD: no
# state) counted from the tensors, the allocator's peak at least that.
widths = [c["servers"] * c["embedding_dim"], 256, 128, 64, 32, 8]
psi = sum(a * b + b for a, b in zip(widths, widths[1:]))
for t in d["trainers"]:
    m = t["memory"]
    assert m["model_state_bytes"] == 8 * psi, (m, psi)
    assert m["peak_bytes"] >= m["model_state_bytes"] and m["peak_rss_bytes"] > 0, m
assert len(d["ceiling"]["seconds"]) == 2 * 50 and "one after another" in d["ceiling"]["what"], d["ceiling"]  # 50 rounds each
assert len(d["ceiling"]["alone_seconds"]) == 50 and d["ceiling"]["alone_p50_seconds"] > 0
PY
check "hybrid JSON report complete" $? "see above"
fi
if want plumbing; then
  # The parameter-servers guide's two commands: the defaults here, 2 trainers
  # and 1 server above.
  run_ok "hybrid at the original's defaults (8 trainers, 8 servers, master)" "$same" hybrid --json "$tmp/hy8.json"
  run_ok "hybrid 1 trainer 3 servers" "$same" hybrid --trainers 1 --servers 3 -n 5 --num-embeddings 100
python3 - "$tmp/hy8.json" <<'PY'
import json, sys
# The original's defaults: 8 trainers, 8 servers, the FC stack 512 wide.
d8 = json.load(open(sys.argv[1]))
c8 = d8["config"]
assert (c8["trainers"], c8["servers"], c8["epochs"], c8["warmup"]) == (8, 8, 100, 5) and len(d8["trainers"]) == 8, c8
assert d8["check"]["lookups"] == 8 * 8 * 105 * 10, d8["check"]
assert d8["trainers"][0]["memory"]["model_state_bytes"] == 8 * sum(a * b + b for a, b in zip([512, 256, 128, 64, 32], [256, 128, 64, 32, 8]))
PY
check "hybrid at the original's defaults: JSON" $? "see above"
fi

# Roles by rank under OpenMPI's mpirun (no dtbench launcher).
if want plumbing && command -v mpirun >/dev/null; then
  root=""; [ "$(id -u)" -eq 0 ] && root="--allow-run-as-root"
  run_ok_mpi() { local n=$1; shift; local name=$1 pattern=$2; shift 2
    timeout 180 mpirun $root --oversubscribe -np "$n" "$DTBENCH" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ $rc -eq 0 ] && grep -q -- "$pattern" "$tmp/out"; then check "$name" 0 "";
    else check "$name" 1 "exit $rc; $(tail -3 "$tmp/err" | tr '\n' ' ')"; fi; }
  run_ok_mpi 3 "kvstore under mpirun -np 3 (2 workers + 1 server)" "max error 0" kvstore --workers 2 --servers 1 $small
  run_ok_mpi 4 "hybrid under mpirun -np 4 (master, 2 trainers, 1 server)" "PyTorch's EmbeddingBag" hybrid --trainers 2 --servers 1 -n 3
  timeout 60 mpirun $root --oversubscribe -np 2 "$DTBENCH" kvstore --workers 2 --servers 1 $small >"$tmp/out" 2>"$tmp/err"
  rc=$?; [ $rc -ne 0 ] && grep -q "need 3 ranks, but the job has 2" "$tmp/err"
  check "kvstore under mpirun with the wrong rank count" $? "exit $rc; $(tail -2 "$tmp/err" | tr '\n' ' ')"
fi

# Faults. Finds the process whose environment has RANK=$2 under launcher $1.
rank_pid() {
  local p
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2" && { echo "$p"; return; }
  done
}
kill_mid_run() {  # NAME RANK PATTERN-IN-STDERR ARGS...
  local name=$1 rank=$2 pattern=$3; shift 3
  "$DTBENCH" "$@" --json "$tmp/marker/never.json" >"$tmp/fout" 2>"$tmp/ferr" &
  local launcher=$! victim="" start
  # kvstore prints each iteration; hybrid only its header before the table.
  for _ in $(seq 1 150); do
    grep -q "^iter 2\|^# dtbench hybrid" "$tmp/fout" 2>/dev/null && victim=$(rank_pid "$launcher" "$rank")
    [ -n "$victim" ] && break
    sleep 0.2
  done
  sleep 2  # well into the iterations
  start=$(date +%s)
  kill -9 "$victim" 2>/dev/null
  wait "$launcher"; local rc=$?
  local took=$(( $(date +%s) - start ))
  sleep 0.5
  local left; left=$(pgrep -f "$tmp/marker" | wc -l)
  if [ -n "$victim" ] && [ $rc -ne 0 ] && [ "$took" -le 25 ] && [ "$left" -eq 0 ] && grep -q -- "$pattern" "$tmp/ferr" \
     && [ ! -e "$tmp/marker/never.json" ]; then
    check "$name" 0 ""
  else
    check "$name" 1 "victim '$victim' exit $rc after ${took}s, $left left; $(tail -4 "$tmp/ferr" | tr '\n' ' ')"
  fi
}
long="--arrays 4 --size 1M -n 100000 --timeout 15s"
# Under dtbench's launcher the launcher names the dead rank and ends the job
# (its SIGTERM reaches the other ranks before they see the loss): these
# check the launcher's line; the workers' own naming is checked below,
# without the launcher.
dead="dtbench launch: rank [0-9] (pid [0-9]*) was killed by signal 9"
if want plumbing; then
  kill_mid_run "kvstore: server killed -> the launcher names it and ends the job" 3 "${dead/\[0-9\]/3}" \
    kvstore --workers 2 --servers 2 $long
  kill_mid_run "kvstore: worker killed -> job ends, servers exit" 1 "${dead/\[0-9\]/1}" kvstore --workers 2 --servers 2 $long
  kill_mid_run "hybrid: parameter server killed -> the launcher names it and ends the job" 3 "${dead/\[0-9\]/3}" \
    hybrid --trainers 2 --servers 1 -n 100000 --check 0 --timeout 15s
fi

if want engines; then
# A server that dies must be named by the workers themselves, not only by
# the launcher: run the ranks without dtbench's launcher (torchrun-style
# variables by hand) and kill the server.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$DTBENCH" kvstore --workers 1 --servers 1 \
    $long --json "$tmp/marker/x.json" >"$tmp/r$r.out" 2>"$tmp/r$r.err" &
  eval "pid$r=$!"
done
for _ in $(seq 1 100); do grep -q "^iter 2" "$tmp/r0.out" 2>/dev/null && break; sleep 0.2; done
start=$(date +%s); kill -9 "$pid1"; wait "$pid0"; rc=$?; took=$(( $(date +%s) - start ))
[ $rc -ne 0 ] && [ "$took" -le 20 ] && grep -q "kvstore server 0 (rank 1" "$tmp/r0.err" && [ "$(wc -l <"$tmp/r0.err")" -le 2 ]
check "kvstore worker names the dead server in one line" $? "exit $rc after ${took}s: $(cat "$tmp/r0.err" | tr '\n' ' ')"

# The same for hybrid: master (rank 0), a trainer (1), a server (2); the
# trainer must name the server, in one line, within its --timeout.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
for r in 0 1 2; do
  RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$DTBENCH" hybrid --trainers 1 --servers 1 \
    -n 1000000 --check 0 --timeout 15s --json "$tmp/marker/h.json" >"$tmp/h$r.out" 2>"$tmp/h$r.err" &
  eval "hpid$r=$!"
done
for _ in $(seq 1 100); do grep -q "^# dtbench hybrid" "$tmp/h0.out" 2>/dev/null && break; sleep 0.2; done
sleep 2
start=$(date +%s); kill -9 "$hpid2"; wait "$hpid1"; rc=$?; took=$(( $(date +%s) - start ))
kill "$hpid0" 2>/dev/null; wait "$hpid0"  # the master, if the trainer's end did not end it
[ $rc -ne 0 ] && [ "$took" -le 20 ] && grep -q "parameter server 0 (rank 2, .*) closed the connection or died" "$tmp/h1.err" \
  && [ "$(wc -l <"$tmp/h1.err")" -eq 1 ]
check "hybrid trainer names the dead server in one line" $? "exit $rc after ${took}s: $(cat "$tmp/h1.err" | tr '\n' ' ')"

fi

echo "ps_cli ($part): $passes passed, $fails failed"
[ "$fails" -eq 0 ]
