#!/usr/bin/env bash
# --device cpu|cuda, --backend nccl, --channels-last, env's GPU report.
# device_cli.sh DTBENCH: without a GPU (or without CUDA in the build) every
# GPU request is one clear line naming the reason and exit 2.
# device_cli.sh DTBENCH --gpu: the GPU runs, each checking its own results;
# exit 77 (skipped) with the reason where no GPU is visible.
set -u
D=$1
mode=${2:-refusals}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/check_lib.sh"

# expect_line PATTERN ARGS...: exit 2, one stderr line matching PATTERN, no stdout.
expect_line() {
  local pattern=$1; shift
  timeout 60 "$D" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? lines; lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [ -s "$tmp/out" ] || ! grep -Eq -- "$pattern" "$tmp/err"; then
    fail "dtbench $* -> exit $rc, $lines line(s), want /$pattern/"; sed 's/^/    /' "$tmp/err" | head -5
  else
    ok "dtbench $* -> $(cat "$tmp/err")"
  fi
}
# expect_ok ARGS...: exit 0.
expect_ok() {
  timeout 600 "$D" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ]; then fail "dtbench $* -> exit $rc"; tail -5 "$tmp/err" | sed 's/^/    /'; else ok "dtbench $*"; fi
  return $rc
}

"$D" env --json "$tmp/env.json" >/dev/null || { echo "FAIL: dtbench env"; exit 1; }
built=$(json "$tmp/env.json" '1 if j["cuda"]["built"] else 0')
gpus=$(json "$tmp/env.json" 'j["cuda"].get("gpu", {}).get("count", 0)')
has_mpi=$(json "$tmp/env.json" '1 if "mpi" in j["backends"] else 0')
echo "# CUDA built: $built, GPUs visible: $gpus"
if [ "$mode" = --gpu ]; then
  [ "$built" = 1 ] || { echo "skipped: this dtbench is built without CUDA (the Debian flavour)"; exit 77; }
  [ "$gpus" -gt 0 ] || { echo "skipped: no CUDA GPU visible here; these runs need one"; exit 77; }
else

# Flavour-independent refusals.
expect_line "--device 'tpu' must be cpu or cuda" ddp -m mlp --device tpu
expect_line "--device 'tpu' must be cpu or cuda" comm --device tpu
expect_line "--device 'tpu' must be cpu or cuda" compare --models mlp --device tpu
expect_line "--device 'tpu' must be cpu or cuda" env --probe --device tpu
expect_line "--channels-last applies to image models" ddp -m mlp --channels-last
expect_line "--channels-last applies to image models" compare --models transformer --channels-last
expect_line "--device applies to --probe only" env --device cuda
[ "$has_mpi" = 1 ] && expect_line "--backend mpi moves host buffers only" comm --backend mpi --device cuda
expect_line "--device 'tpu' must be cpu or cuda" kvstore --mode device --device tpu
expect_line "--device 'tpu' must be cpu or cuda" hybrid --device tpu
expect_line "--mode dist_sync pushes host buffers over TensorPipe" kvstore --mode dist_sync --device cuda
if [ "$built" = 1 ]; then
  expect_line "--backend nccl reduces GPU tensors: add --device cuda" kvstore --mode device --replicas 2 --backend nccl
else
  expect_line "backend 'nccl' is not built into this dtbench" kvstore --mode device --backend nccl
fi

if [ "$built" = 0 ]; then
  why="built without CUDA"
  expect_line "$why" comm --device cuda
  expect_line "$why" ddp -m mlp --device cuda
  expect_line "$why" compare --models mlp --device cuda
  expect_line "$why" env --probe --device cuda
  expect_line "backend 'nccl' is not built into this dtbench: .*no CUDA" comm --backend nccl --device cuda
  expect_line "backend 'nccl' is not built" ddp -m mlp --backend nccl --device cuda
  expect_line "$why" kvstore --mode device --replicas 2 --device cuda
  expect_line "$why" kvstore --mode local --replicas 2 --device cuda
  expect_line "$why" hybrid --device cuda
elif [ "$gpus" = 0 ]; then
  why="no CUDA GPU is visible"
  expect_line "$why" comm --device cuda
  expect_line "$why" comm --backend nccl --device cuda
  expect_line "$why" comm --backend nccl --device cuda --nproc 2
  expect_line "--backend nccl moves GPU buffers: add --device cuda" comm --backend nccl
  expect_line "--backend nccl reduces GPU tensors: add --device cuda" ddp -m mlp --backend nccl
  expect_line "$why" ddp -m mlp --device cuda
  expect_line "$why" ddp -m mlp --backend nccl --device cuda
  expect_line "$why" compare --models mlp --device cuda
  expect_line "$why" env --probe --device cuda
  expect_line "$why" kvstore --mode device --replicas 2 --device cuda
  expect_line "$why" kvstore --mode device --replicas 2 --device cuda --backend nccl
  expect_line "$why" kvstore --mode local --replicas 2 --device cuda
  expect_line "$why" hybrid --device cuda
  # A rank started by a launcher (LOCAL_RANK set) fails the same way, in
  # the rank, before NCCL is touched.
  timeout 60 "$D" launch --nproc-per-node 1 -- "$D" comm --backend nccl --device cuda -b 8 -e 8 -n 1 \
    >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -q "$why" "$tmp/err" && ! grep -qi "terminate\|core dumped\|Traceback" "$tmp/err"; then
    ok "launched nccl rank without a GPU -> exit $rc: $(head -1 "$tmp/err")"
  else
    fail "launched nccl rank without a GPU -> exit $rc"; head -5 "$tmp/err"
  fi
  json "$tmp/env.json" 'j["cuda"]["gpu"]["why"]' | grep -q "no CUDA device visible" \
    && ok "env: cuda.gpu.why says no device" || fail "env: cuda.gpu.why"
fi

# --channels-last trains on the CPU in every build (numerics: ddp_equivalence).
if expect_ok ddp -m resnet18 --image-size 32 -b 2 -n 2 -w 1 --world-sizes 2 --channels-last --no-baseline \
     --json "$tmp/nhwc.json"; then
  [ "$(json "$tmp/nhwc.json" 'j["runs"][0]["extras"].get("channels_last")')" = True ] \
    && ok "ddp --channels-last: extras.channels_last" || fail "ddp --channels-last: extras.channels_last missing"
  [ "$(json "$tmp/nhwc.json" 'j["runs"][0]["extras"]["device"]')" = CPU ] \
    && ok "ddp: extras.device CPU" || fail "ddp: extras.device"
fi

fi  # refusals

if [ "$mode" = --gpu ]; then
  echo "# GPU runs (the gpus guide's commands as written, in $tmp)"
  cd "$tmp"
  json "$tmp/env.json" 'j["cuda"]["gpu"]["devices"][0]["name"]'
  expect_ok env --probe --device cuda --json probe.json \
    && python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['probe']; assert p['bfloat16_tflops']>1 and p['float32_tflops']>1, p; print(p)" probe.json \
    && ok "env --probe --device cuda" || fail "env --probe --device cuda: figures"
  # Collectives on GPU buffers, data made and checked on the GPU (the
  # command exits non-zero on any wrong element).
  expect_ok comm --device cuda --collective all -b 8 -e 4M -n 5 -w 2
  expect_ok comm --backend nccl --device cuda --collective all -b 8 -e 64M -n 5 -w 2
  # Physics: at one rank an out-of-place allgather, reduce_scatter or
  # alltoall of 64 MiB is one device copy (~30-60 us on an H100), so it
  # reaches a fair part of the copy ceiling measured beside it. A host wait
  # that sleeps in whole milliseconds (c10d's busy-wait) held them at ~1.1 ms,
  # a twentieth of it.
  if expect_ok comm --backend nccl --device cuda --nproc 1 --collective allgather,reduce_scatter,alltoall \
      -b 64M -e 64M -n 20 -w 5 --placement out --json physics.json; then
    python3 - physics.json <<'PY' && ok "nccl at one rank: out-of-place 64 MiB rows reach >= 25% of the copy ceiling" ||
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
seen = sorted(r["collective"] for r in rows)
bad = [(r["collective"], r["out_of_place"]["alg_bw"], r["out_of_place"]["ceiling_gbs"]) for r in rows
       if not r["out_of_place"]["ceiling_gbs"] > 0 or r["out_of_place"]["alg_bw"] < 0.25 * r["out_of_place"]["ceiling_gbs"]]
print("rows: %s; below a quarter of the copy ceiling or without one (collective, algbw, ceiling GB/s): %s" % (seen, bad))
sys.exit(1 if bad or seen != ["allgather", "alltoall", "reduce_scatter"] else 0)
PY
      fail "nccl at one rank: out-of-place 64 MiB rows far below the copy ceiling"
  fi
  for dt in float16 bfloat16 int32 float64; do
    expect_ok comm --backend nccl --device cuda --collective all -d "$dt" -b 8 -e 1M -n 3 -w 1
  done
  for op in prod min max avg; do
    expect_ok comm --backend nccl --device cuda -o "$op" -b 8 -e 1M -n 3 -w 1
  done
  if [ "$gpus" -ge 2 ]; then
    expect_ok comm --backend nccl --device cuda --nproc 2 --collective all -b 8 -e 64M -n 5 -w 2
    expect_ok ddp -m resnet18 --image-size 64 -b 8 -n 5 -w 2 --device cuda --backend nccl --world-sizes 1,2
  else
    expect_line "2 ranks on this node but only 1 GPU" comm --backend nccl --device cuda --nproc 2
  fi
  # Two launches on one host, one rank each: both take GPU 0.
  port=$((30000 + RANDOM % 20000))
  for n in 0 1; do
    timeout 120 "$D" launch --nnodes 2 --node-rank $n --nproc-per-node 1 --master-port $port -- \
      "$D" comm --backend nccl --device cuda -b 8 -e 8 -n 1 >"$tmp/dup$n.out" 2>"$tmp/dup$n.err" &
  done
  wait
  grep -q "both use GPU" "$tmp/dup0.err" "$tmp/dup1.err" && ok "two ranks on one GPU: refused" \
    || { fail "two ranks on one GPU"; cat "$tmp/dup0.err" "$tmp/dup1.err" | head -10; }
  # Training on the GPU: c10d::Reducer over NCCL and over gloo, own reducers,
  # AMP both ways, channels-last; replicas verified by every run.
  expect_ok ddp -m resnet18 --image-size 64 -b 16 -n 5 -w 2 --device cuda --backend nccl --json ddp-gpu.json \
    && python3 -c "
import json,sys
r=json.load(open(sys.argv[1]))['runs']
for run in r:
  e=run['extras']; assert 'GPU' in e['device'], e['device']
  d=e['device_phase_p50_s']; assert d['total']>0 and d['forward']>0, d
print('device phases', r[-1]['extras']['device_phase_p50_s'])" ddp-gpu.json && ok "ddp --device cuda: device phases" || fail "ddp --device cuda: device phases"
  # Without --world-sizes, --device cuda sweeps 1,2,4,... up to the GPUs here.
  want_ws=$(python3 -c "import sys; n=int(sys.argv[1]); w=[1]; exec('while w[-1]*2<=n: w.append(w[-1]*2)'); w+=[n] if w[-1]!=n else []; print(','.join(map(str,w)))" "$gpus")
  [ "$(json ddp-gpu.json 'j["config"]["world_sizes"]')" = "$want_ws" ] \
    && ok "ddp --device cuda: default world sizes $want_ws" || fail "ddp --device cuda: default world sizes $(json ddp-gpu.json 'j["config"]["world_sizes"]'), want $want_ws"
  # NCCL is shut down on a clean exit (no "destroy_process_group() was not called" warning).
  grep -q "destroy_process_group" "$tmp/err" && fail "nccl: exit warns about destroy_process_group" \
    || ok "nccl: clean shutdown, no exit warning"
  expect_ok ddp -m resnet18 --image-size 64 -b 16 -n 5 -w 2 --device cuda --backend gloo --no-baseline
  expect_ok ddp -m resnet18 --image-size 64 -b 16 -n 5 -w 2 --device cuda --backend nccl --reducer overlap --no-baseline
  expect_ok ddp -m resnet18 --image-size 64 -b 16 -n 5 -w 2 --device cuda --backend nccl --amp fp16 --no-baseline --json fp16.json \
    && [ "$(json fp16.json 'j["runs"][0]["extras"]["amp"]["dtype"]')" = fp16 ] && ok "fp16 on GPU: amp extras" || fail "fp16 on GPU: amp extras"
  expect_ok ddp -m resnet18 --image-size 64 -b 16 -n 5 -w 2 --device cuda --backend nccl --amp bf16 --channels-last --no-baseline
  expect_ok compare --models mlp --reducers ddp,overlap --world-sizes 1 -n 3 -w 1 --device cuda --backend nccl
  # kvstore on GPU replicas (exact check every iteration), hybrid's FC stack
  # on a GPU (tables checked against the single-process reference).
  expect_ok kvstore --mode device --device cuda --replicas 4 --arrays 4 --size 4M -n 5
  expect_ok kvstore --mode device --device cuda --backend nccl --replicas 4 --arrays 4 --size 4M -n 5
  expect_ok kvstore --mode local --device cuda --replicas 4 --arrays 4 --size 4M -n 5
  [ "$gpus" -ge 2 ] && expect_ok kvstore --mode device --device cuda --backend nccl --workers 2 --replicas 2 --arrays 4 --size 4M -n 5
  expect_ok hybrid --device cuda --trainers 2 --servers 1 -n 5
  # The same model, seed and data on CPU and GPU end at nearly the same loss.
  expect_ok ddp -m mlp -b 16 -n 3 -w 0 --world-sizes 1 --no-baseline --json "$tmp/cpu.json"
  expect_ok ddp -m mlp -b 16 -n 3 -w 0 --world-sizes 1 --no-baseline --device cuda --backend nccl --json "$tmp/gpu.json"
  python3 -c "
import json,sys
a=json.load(open(sys.argv[1]))['runs'][0]['extras']['last_loss']; b=json.load(open(sys.argv[2]))['runs'][0]['extras']['last_loss']
assert abs(a-b)/abs(a) < 1e-3, (a,b); print('cpu', a, 'gpu', b)" "$tmp/cpu.json" "$tmp/gpu.json" \
    && ok "CPU and GPU losses agree" || fail "CPU and GPU losses differ"
  # Every rank's CUDA-event phases are in the report (the phase tables use them).
  python3 -c "
import json,sys
k=json.load(open(sys.argv[1]))['runs'][0]['ranks'][0]; d=k['device']
assert len(d['total']) == len(k['total']) == 3 and all(t > 0 for t in d['total']), d
assert all(abs(d['total'][i] - sum(d[p][i] for p in ('forward','backward','comm_wait','optimizer'))) < 1e-6 for i in range(3)), d" \
    "$tmp/gpu.json" && ok "CUDA-event phases per rank in the report" || fail "no CUDA-event phases per rank"
fi

finish
