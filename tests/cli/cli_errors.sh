#!/usr/bin/env bash
# Bad command lines: each must print exactly one line on stderr, nothing on
# stdout, and exit 2, and the line must name what is at fault: by default
# the last flag given or the last argument (a value, a file), else the text
# a case gives with `-m TEXT` before its arguments (the variable of a bad
# environment, a missing argument). Usage: cli_errors.sh path/to/dtbench
set -u
DTBENCH=$1
# The cases run up to 3 at a time (each is mostly LibTorch's start-up); each
# writes "ok: ..." or "FAIL: ..." into its own file, printed in order at the end.
results=$(mktemp -d); trap 'rm -rf "$results"' EXIT
ncase=0
# names_fault ERRFILE [-m TEXT] ARGS...: the error line holds TEXT, or the
# last argument, or the last flag (without its =value). A last argument that
# is a number or one or two characters ("0", "-1") could be found anywhere
# in the line: then the flag must be named.
names_fault() {
  local err=$1; shift
  if [ "${1:-}" = -m ]; then grep -qF -- "$2" "$err"; return; fi
  [ $# -eq 0 ] && return 1
  local last=${*: -1} flag="" a
  for a in "$@"; do case $a in -[a-zA-Z-]*) flag=${a%%=*} ;; esac; done
  if [ -n "$flag" ] && { [ "${#last}" -le 2 ] || [[ $last =~ ^-?[0-9.]+$ ]]; }; then
    grep -qF -- "$flag" "$err"
    return
  fi
  grep -qF -- "$last" "$err" || { [ -n "$flag" ] && grep -qF -- "$flag" "$err"; }
}
one_case() {
  local out err rc
  out=$(mktemp); err=$(mktemp)
  local args=("$@")
  [ "${1:-}" = -m ] && args=("${@:3}")
  timeout 30 "$DTBENCH" "${args[@]}" >"$out" 2>"$err"
  rc=$?
  local lines; lines=$(wc -l <"$err")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [ -s "$out" ]; then
    echo "FAIL: dtbench ${args[*]} -> exit $rc, $lines stderr line(s)"; sed 's/^/    /' "$err" | head -5
  elif ! names_fault "$err" "$@"; then
    if [ "${1:-}" = -m ]; then echo "FAIL: dtbench ${args[*]} -> the line does not hold '$2':"
    else echo "FAIL: dtbench ${args[*]} -> the line names neither the last flag nor the last argument:"; fi
    sed 's/^/    /' "$err"
  else
    echo "ok: dtbench ${args[*]} -> $(cat "$err")"
  fi
  rm -f "$out" "$err"
}
# Environment assignments before a call (RANK=0 expect_usage_error ...) are
# in the environment of the function, so of the case forked from it.
expect_usage_error() {
  ncase=$((ncase + 1))
  one_case "$@" >"$results/$(printf %04d "$ncase")" &
  while [ "$(jobs -rp | wc -l)" -ge 3 ]; do wait -n; done
}

expect_usage_error -m "no command given"
expect_usage_error -m "unknown command 'frobnicate'" frobnicate
expect_usage_error -m "train (ddp)" trian
expect_usage_error ddp --no-such-flag
expect_usage_error train --no-such-flag
expect_usage_error comm --no-such-flag
expect_usage_error comm -b -5
expect_usage_error -m "--max-bytes" comm -b 1M -e 1K
expect_usage_error comm -b 12Q
expect_usage_error comm -f 1
expect_usage_error comm -f abc
expect_usage_error -m "--iters" comm -n 0
expect_usage_error -m "--iters" comm -n -3
expect_usage_error comm -w -1
expect_usage_error comm -c 2
expect_usage_error comm -d float8
expect_usage_error comm -o xor
expect_usage_error comm --collective gatherv
expect_usage_error comm --collective allreduce,,broadcast
expect_usage_error comm --backend carrier-pigeon
expect_usage_error comm --backend nccl
expect_usage_error comm --nproc 0
expect_usage_error comm --timeout 0
expect_usage_error comm --timeout -5s
expect_usage_error comm --timeout 10parsecs
expect_usage_error comm --placement sideways
expect_usage_error comm -r 3
expect_usage_error comm --nproc 2 -r 2
expect_usage_error -m "more than 10000 sizes" comm -e 1M -b 1K -i 1 -n 1
expect_usage_error -m "--inject-delay 'x' must be RANK:MICROSECONDS" comm --inject-delay x
expect_usage_error -m "--inject-delay '1:0' must be" comm --inject-delay 1:0
expect_usage_error -m "--inject-delay '-1:50' must be" comm --inject-delay=-1:50
expect_usage_error -m "--inject-delay: rank 2 is not a rank of this 2-rank job" comm --nproc 2 --inject-delay 2:100
expect_usage_error -m "--blocking: Value 2 not in range 0 to 1" comm -z 2
expect_usage_error -m "--concurrent: Value 0 not in range 1 to 64" comm --concurrent 0
# -G: NCCL on a GPU only, one line before anything starts; no barrier and
# no --with-compute under a graph.
expect_usage_error -m "--cuda-graph captures NCCL's kernels on a GPU into a CUDA graph: it needs --backend nccl --device cuda (this run: --backend gloo, --device cpu)" comm -G 4
expect_usage_error -m "--cuda-graph: Value -1 not in range 0 to 1000000" comm --cuda-graph=-1
expect_usage_error -m "--cuda-graph: barrier waits on the host" comm -G 2 --collective barrier
expect_usage_error -m "--cuda-graph with --with-compute" comm -G 2 --with-compute gemm:64
expect_usage_error -m "--cuda-graph needs -w 1 or more" comm -G 2 -w 0
TORCH_NCCL_BLOCKING_WAIT=1 expect_usage_error -m "--cuda-graph with TORCH_NCCL_BLOCKING_WAIT=1" comm -G 2
expect_usage_error -m "--percentiles: '101'" comm --percentiles 50,101
expect_usage_error -m "--percentiles: 'p50'" comm --percentiles p50
expect_usage_error -m "--spike-mad must be positive" comm --spike-mad 0
expect_usage_error comm --run-cycles 0
expect_usage_error -m "--average 4 must be 0 (rank 0), 1 (average), 2 (min) or 3 (max)" comm -a 4
expect_usage_error -m "--split 'sideways'" comm --split sideways
expect_usage_error -m "--split 'mod:0'" comm --split mod:0
expect_usage_error comm --backend mpi --split mod:2
expect_usage_error -m "--root 2 is not a rank of every --split mod:2 group" comm --nproc 4 --split mod:2 -r 2
expect_usage_error comm --seed -3
expect_usage_error -m "nothing to measure: --placement out" comm --placement out --collective allreduce,broadcast
expect_usage_error -m "command is required" launch --nproc-per-node 2
expect_usage_error launch --nproc-per-node 0 -- true
expect_usage_error launch --nnodes 2 --node-rank 5 -- true
expect_usage_error launch --nnodes 2 -- true
expect_usage_error launch --master-port 70000 -- true
expect_usage_error launch --grace never -- true
expect_usage_error launch --bind socket -- true
expect_usage_error launch --nproc-per-node 1024 --bind core -- true
expect_usage_error launch --nproc 2 -- true
expect_usage_error launch --ray --nproc-per-node 2 -- true
expect_usage_error launch --ray --placement-timeout forever -- true
expect_usage_error launch --ray --placement strict -- true
expect_usage_error launch --ray --gpus-per-rank -1 -- true
expect_usage_error launch --ray --cpus-per-rank 0 -- true
expect_usage_error ddp --kv-heads -1
expect_usage_error comm --bind sideways
expect_usage_error comm --bind core
expect_usage_error ddp --model mlp --bind numa
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 expect_usage_error ddp --model mlp --bind core
expect_usage_error comm -n 1 -b 8 -e 8 --iface nosuchif0
expect_usage_error comm -n 1 -b 8 -e 8 --json /nonexistent-dir/r.json
expect_usage_error comm -n 1 -b 8 -e 8 --csv /nonexistent-dir/r.csv
expect_usage_error -m "give gemm:N" comm -n 1 -b 8 -e 8 --with-compute fft:64
expect_usage_error -m "give gemm:N" comm -n 1 -b 8 -e 8 --with-compute gemm:64x
expect_usage_error -m "N must be within 8-16384" comm -n 1 -b 8 -e 8 --with-compute gemm:4
expect_usage_error -m "--split-sizes 'even' must be uniform, skewed, random" comm -n 1 -b 8 -e 8 --split-sizes even
expect_usage_error -m "--agg-iters 0 must be within 1-1024" comm -n 1 -b 8 -e 8 -m 0
expect_usage_error -m "pingpong times one round trip at a time" comm --nproc 2 -b 8 -e 8 --collective pingpong -m 2
expect_usage_error -m "barrier is checked by each iteration's arrivals" comm --nproc 2 --collective barrier -m 2
expect_usage_error -m "--memory: Value 2 not in range" comm -n 1 -b 8 -e 8 -M 2
expect_usage_error comm -n 1 -b 8 -e 8 --json /tmp
expect_usage_error env --json /nonexistent-dir/env.json
expect_usage_error models --json /nonexistent-dir/models.json
expect_usage_error env --bogus
expect_usage_error env --threads 2
expect_usage_error env --probe --threads -1
expect_usage_error ddp --peak-tflops -1
expect_usage_error ddp --peak-tflops nan
expect_usage_error compare --peak-tflops -3
expect_usage_error models --bogus
expect_usage_error ddp --model resnet9000
expect_usage_error ddp --reducer zero4
expect_usage_error ddp --batch-size 0
expect_usage_error ddp --iters 0
expect_usage_error ddp --bucket-cap-mb 0
expect_usage_error ddp --bucket-cap-mb -1
expect_usage_error ddp --world-sizes 1,,2
expect_usage_error ddp --world-sizes 0
expect_usage_error ddp --world-sizes two
expect_usage_error ddp --reducer none --world-sizes 2
# --tp: layouts the world or the model cannot take.
expect_usage_error ddp --model gpt2 --tp 2 --world-sizes 2,3
expect_usage_error -m "no tensor-parallel plan" ddp --model resnet18 --tp 2
expect_usage_error -m "12 attention heads do not split 5 ways" ddp --model gpt2 --tp 5
expect_usage_error -m "sub-group communicators" ddp --model gpt2 --tp 2 --world-sizes 4 --reducer overlap --backend mpi
expect_usage_error -m "tensor-parallel ranks' gradient parts" ddp --model gpt2 --tp 2 --amp fp16
expect_usage_error ddp --model gpt2 --reducer none --tp 2 --world-sizes 4
expect_usage_error ddp --model gpt2 --tp 0
expect_usage_error compare --models gpt2 --tp 2
# --pp: pipelines the batch, the model, the strategy or the schedule cannot take.
expect_usage_error -m "microbatches 3 does not divide the batch of 4" ddp --model gpt2 --pp 2 --microbatches 3 -b 4
expect_usage_error -m "makes 2 stages, more than the model's 1 blocks" ddp --model gpt2 --pp 2 --layers 1
expect_usage_error -m "resnet18 has no pipeline split" ddp --model resnet18 --pp 2
expect_usage_error -m "reduces during each backward" ddp --model gpt2 --pp 2 --world-sizes 4 --reducer ddp
expect_usage_error -m "give --pp" ddp --model gpt2 --microbatches 4
expect_usage_error -m "give --stages-per-rank 2 or more" ddp --model gpt2 --pp 2 --pp-schedule interleaved-1f1b
expect_usage_error -m "not a multiple of it" ddp --model gpt2 --pp 2 --pp-schedule interleaved-1f1b \
  --stages-per-rank 2 --microbatches 3 -b 3
expect_usage_error -m "is not a schedule" ddp --model gpt2 --pp 2 --pp-schedule zb
expect_usage_error -m "every stage's inf/nan check" ddp --model gpt2 --pp 2 --amp fp16
expect_usage_error -m "runs on the CPU only for now" ddp --model gpt2 --pp 2 --device cuda
expect_usage_error -m "--pp 2: 3 rank(s) do not split into replicas of 2" ddp --model gpt2 --pp 2 --world-sizes 3
# --activation-checkpointing: a mode that is not one, a model without blocks
# (full) or without attention (selective), refused before any rank starts.
expect_usage_error ddp --model gpt2 --activation-checkpointing op
expect_usage_error -m "gpt2's is fixed" ddp --model gpt2 --ffn-hidden-size 1024
expect_usage_error ddp --model llama3-8b --ffn-hidden-size -1
expect_usage_error -m "vgg16 has no blocks to checkpoint" ddp --model vgg16 --activation-checkpointing full
expect_usage_error -m "mlp has no attention" ddp --model mlp --activation-checkpointing selective
expect_usage_error -m "transformer has no blocks" compare --models transformer --activation-checkpointing full
expect_usage_error ddp --percentiles 50,120
expect_usage_error ddp --momentum 1.5
expect_usage_error ddp --image-size 2
expect_usage_error ddp --model inception_v3 --image-size 64
expect_usage_error ddp --threads -1
expect_usage_error ddp --backend carrier-pigeon
expect_usage_error ddp --json /nonexistent-dir/ddp.json
expect_usage_error ddp --timeout forever
expect_usage_error ddp --backend mpi --reducer ddp
expect_usage_error ddp --seq-len 0
expect_usage_error ddp --layers -2
expect_usage_error ddp --width -5
expect_usage_error ddp --num-classes 1
expect_usage_error ddp --warmup -1
expect_usage_error ddp --seed -3
expect_usage_error ddp --first-bucket-cap-mb 0
expect_usage_error ddp --lr 0
expect_usage_error ddp --optimizer adam
expect_usage_error ddp --optimizer adamw --momentum 0.5
expect_usage_error ddp --weight-decay 1.5
expect_usage_error ddp --optimizer adamw --weight-decay 2
expect_usage_error ddp --iface nosuchif0
expect_usage_error ddp --no-baseline=maybe
expect_usage_error ddp --broadcast-buffers sometimes
expect_usage_error ddp --model mlp --jsonl /nonexistent-dir/rows.jsonl
expect_usage_error ddp --model mlp --jsonl /tmp
expect_usage_error ddp --model mlp --resume /nonexistent-dir/rows.jsonl
RANK=0 WORLD_SIZE=1 expect_usage_error ddp --model mlp --jsonl rows.jsonl
expect_usage_error comm --nproc 2 -n 1 -b 8 -e 8 --iface nosuchif0
# diff: missing, empty, truncated, wrong-type and wrong-schema files.
fx=$(mktemp -d); trap 'rm -rf "$fx" "$results"' EXIT
: >"$fx/empty.json"
printf '{"schema": "dtbench.ddp", "schema_version": 1, "runs": [' >"$fx/truncated.json"
# kvstore / hybrid
expect_usage_error kvstore --mode dist
expect_usage_error kvstore --workers 0
expect_usage_error kvstore --servers 0
expect_usage_error kvstore --replicas 0
expect_usage_error kvstore --model nosuchnet
expect_usage_error kvstore --arrays 2 --size 6
expect_usage_error kvstore --arrays 2 --size 1Q
expect_usage_error kvstore --optimizer adam
expect_usage_error kvstore --mode local --optimizer sgd
expect_usage_error kvstore --num-layers 51
expect_usage_error kvstore --network vgg
expect_usage_error -m "--network" kvstore --model resnet50 --network resnet
expect_usage_error -m "replicas 1" kvstore --mode local
expect_usage_error -m "replicas 1" kvstore --mode device
expect_usage_error kvstore --mode dist_async --separate-pull
expect_usage_error kvstore --mode local --separate-pull
expect_usage_error kvstore --bigarray-bound 0
expect_usage_error kvstore --transport carrier-pigeon
expect_usage_error kvstore --channel ibv
expect_usage_error kvstore --timeout 0s
expect_usage_error -m "--iters" kvstore -n 0
expect_usage_error kvstore --ceiling-iters -1
expect_usage_error hybrid --trainers 0
expect_usage_error hybrid --servers 0
expect_usage_error hybrid --num-embeddings 0
expect_usage_error hybrid --embedding-dim 0
expect_usage_error hybrid --batches 0
expect_usage_error hybrid --epochs 0
expect_usage_error hybrid --lookup sideways
expect_usage_error hybrid --lr 0
expect_usage_error hybrid --backend mpi
expect_usage_error hybrid --transport tcp
expect_usage_error hybrid --check 2

echo '[1, 2, 3]' >"$fx/array.json"
echo '{"schema": "dtbench.comm", "schema_version": 1}' >"$fx/comm.json"
echo '{"schema": "dtbench.ddp", "schema_version": 99, "config": {"model": "mlp"}, "runs": []}' >"$fx/v99.json"
echo '{"schema": "dtbench.ddp", "schema_version": 1, "config": {"model": "mlp"}, "runs": [{"label": 3}]}' >"$fx/badrun.json"
echo '{"schema": "dtbench.ddp", "schema_version": 1, "config": {"model": "mlp"}, "runs": []}' >"$fx/ok.json"
expect_usage_error -m "BASE is required" diff
expect_usage_error -m "TEST is required" diff "$fx/ok.json"
expect_usage_error -m "$fx/missing.json" diff "$fx/missing.json" "$fx/ok.json"
expect_usage_error -m "$fx/empty.json' is empty" diff "$fx/empty.json" "$fx/ok.json"
expect_usage_error -m "$fx/truncated.json' is not valid JSON" diff "$fx/truncated.json" "$fx/ok.json"
expect_usage_error -m "$fx/array.json: not a dtbench report" diff "$fx/array.json" "$fx/ok.json"
expect_usage_error diff "$fx/ok.json" "$fx/comm.json"
expect_usage_error diff "$fx/ok.json" "$fx/v99.json"
expect_usage_error diff "$fx/ok.json" "$fx/badrun.json"
expect_usage_error -m "$fx': it is a directory" diff "$fx" "$fx/ok.json"
expect_usage_error diff "$fx/ok.json" "$fx/ok.json" --percentiles p50
# ddp: compression and amp flags.
expect_usage_error ddp --model mlp --compression zip
expect_usage_error ddp --model mlp --reducer ddp --compression fp16
expect_usage_error ddp --model mlp --reducer bogus
expect_usage_error ddp --model mlp --reducer zero1 --compression fp16
expect_usage_error ddp --model mlp --reducer zero2 --compression bf16
expect_usage_error ddp --model mlp --reducer ddp --reshard-after-forward false
expect_usage_error ddp --model mlp --reducer ddp --fusion-threshold-mb 4
expect_usage_error ddp --model mlp --reducer horovod --cycle-time-ms -1
expect_usage_error ddp --model mlp --reducer horovod --compression bf16
# Kubernetes: variables that cannot describe one job, and commands that run
# single-node jobs in a pod of a multi-node one (docs/guide/clusters.md).
PET_NODE_RANK=0 JOB_COMPLETION_INDEX=1 expect_usage_error -m "PET_NODE_RANK=0 and JOB_COMPLETION_INDEX=1 disagree" comm
PET_NNODES=1:4 expect_usage_error -m "PET_NNODES=1:4" launch -- true
PET_NNODES=2 PET_NPROC_PER_NODE=auto PET_NODE_RANK=0 expect_usage_error -m "numProcPerNode" launch -- true
PET_NNODES=2 PET_NODE_RANK=0 PET_MASTER_ADDR=127.0.0.1 expect_usage_error -m "dtbench launch -- dtbench ddp" ddp --model mlp
PET_NNODES=2 PET_NODE_RANK=0 PET_MASTER_ADDR=127.0.0.1 expect_usage_error -m "dtbench launch -- dtbench compare" compare --models mlp
PET_NNODES=2 PET_NODE_RANK=1 PET_MASTER_ADDR=127.0.0.1 expect_usage_error -m "dtbench launch -- dtbench kvstore" kvstore
PET_NNODES=2 PET_NODE_RANK=1 expect_usage_error -m "nothing gives node 0's address" comm
PET_NNODES=2 expect_usage_error -m "nothing gives this node's rank" comm
PET_NNODES=2 PET_NODE_RANK=1 PET_MASTER_PORT=29400 expect_usage_error -m "nothing gives node 0's address" launch -- true
PET_NNODES=2 PET_NODE_RANK=0 PET_MASTER_ADDR=127.0.0.1 expect_usage_error -m "dtbench launch -- dtbench hybrid" hybrid
HOROVOD_CYCLE_TIME=fast expect_usage_error -m "HOROVOD_CYCLE_TIME='fast'" ddp --model mlp --reducer horovod
expect_usage_error compare --models mlp --reducers ddp,zero2 --fusion-threshold-mb 1
expect_usage_error ddp --model mlp --reducer fsdp --reshard-after-forward maybe
expect_usage_error compare --models mlp --reducers ddp,zero2 --reshard-after-forward true
expect_usage_error ddp --model mlp --reducer overlap --amp bf16 --param-dtype bf16
expect_usage_error ddp --model mlp --reducer fsdp --param-dtype bf16
expect_usage_error ddp --model mlp --reducer fsdp --amp bf16 --param-dtype fp8
expect_usage_error compare --models mlp --reducers ddp,zero2 --amp bf16 --param-dtype bf16
expect_usage_error ddp --model mlp --amp=perhaps
# compare: grid lists, baseline, logs.
expect_usage_error compare --models mlp --reducers none
expect_usage_error compare --models mlp --reducers ddp,ddp
expect_usage_error -m "no point that can run" compare --models mlp --reducers ddp --compression fp16
expect_usage_error compare --models mlp --compression none,zip
expect_usage_error compare --models mlp --bucket-cap-mb 0
expect_usage_error compare --models mlp --bucket-cap-mb 1,,5
expect_usage_error compare --models mlp --bucket-cap-mb ten
expect_usage_error compare --models mlp --world-sizes 0
expect_usage_error -m "unknown model 'nosuchmodel'" compare --models mlp,nosuchmodel
expect_usage_error compare --models mlp --reducers overlap --baseline ddp
expect_usage_error compare --models inception_v3 --image-size 64
expect_usage_error compare --models mlp --backend nosuch
expect_usage_error compare --models mlp --no-progress=maybe
expect_usage_error compare --models mlp --amp=perhaps
expect_usage_error compare --models mlp --amp none,none
expect_usage_error compare --models mlp --amp none,fp32
expect_usage_error -m "no point that can run" compare --models mlp --reducers fsdp --amp fp16
echo '{"kind":"header","schema":"dtbench.compare","schema_version":1,"config":{}}' >"$fx/log.jsonl"
expect_usage_error compare --models mlp --jsonl "$fx/log.jsonl"
expect_usage_error compare --models mlp --resume "$fx/missing.jsonl"
expect_usage_error compare --models mlp --resume "$fx/ok.json"
expect_usage_error compare --models mlp --resume "$fx/log.jsonl"
expect_usage_error compare --models mlp --jsonl "$fx"
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999 expect_usage_error -m "run it outside torchrun" compare --models mlp
# report: inputs and outputs.
expect_usage_error -m "REPORTS is required" report
expect_usage_error report "$fx/missing.json"
expect_usage_error report "$fx/empty.json"
expect_usage_error report "$fx/array.json"
expect_usage_error report "$fx/v99.json"
expect_usage_error report "$fx/truncated.json"
expect_usage_error report "$fx/empty.json" --busbw-ceiling fast
expect_usage_error report "$fx/empty.json" --busbw-ceiling 0Gbit/s
expect_usage_error -m "hold no runs" report "$fx/ok.json"
expect_usage_error report "$fx/ok.json" -o "$fx"
expect_usage_error report "$fx/ok.json" --csv "$fx/nodir/x.csv"
# A malformed environment is a usage error too.
RANK=1 WORLD_SIZE=1 expect_usage_error -m "RANK=1 is not below WORLD_SIZE=1" comm -n 1 -b 8 -e 8
RANK=0 WORLD_SIZE=2 MASTER_PORT=abc expect_usage_error -m "MASTER_PORT='abc'" comm -n 1 -b 8 -e 8

wait
cat "$results"/*
passes=$(cat "$results"/* | grep -c '^ok: ')
fails=$(cat "$results"/* | grep -c '^FAIL: ')
[ "$((passes + fails))" -eq "$ncase" ] || { echo "FAIL: $ncase cases, $((passes + fails)) results"; fails=$((fails + 1)); }
echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
