#!/usr/bin/env bash
# dtbench's data-parallel strategies beside PyTorch's own on the same GPT-2:
# `--reducer ddp` vs DistributedDataParallel, `zero1` vs DDP +
# ZeroRedundancyOptimizer, `fsdp` vs FSDP2's fully_shard on each block and
# the root, and `tp` (`dtbench ddp --tp NPROC`: tensor parallelism over every
# rank) vs DTensor's parallelize_module with ColwiseParallel/RowwiseParallel
# (bench/peers/torch_sharded.py), AdamW on both sides. Needs the wheel
# build (torch 2.11 on both sides: FSDP2 is torch >= 2.4): BUILD defaults to
# build-wheel and the peer runs on bench/peers/python-wheel. Same model
# shapes, batch, threads (1 per rank), world size, bucket cap, gloo and
# malloc thresholds; the sides alternate, ROUNDS times, and the order flips
# every round. Prints per strategy the median p50 sec/iter of each side, their
# ratio, the model state per rank each side holds after the last step, and
# the peak tensor bytes per rank during the timed iterations (largest rank;
# the peer counted by dtbench's own counter, BUILD/libdtbench_memory_probe.so,
# median over rounds) with their ratio.
#   bench/compare_sharded.sh [BUILD_DIR] [ROUNDS] [STRATEGIES]
# Environment: ITERS, WARMUP (default 20, 5); MODEL (dtbench's GPT flags,
# default "--layers 2 --width 128 --heads 4 --vocab 2048 --seq-len 64
# --batch-size 2"); NPROC (default 2); BIND (default none; core pins each rank
# of both sides to its own core); AMP (none or bf16: autocast on both sides)
# and PARAM_DTYPE (fsdp: float32, or bf16 for FSDP2's
# MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32) on both);
# AC (none, full or selective: --activation-checkpointing on both sides).
# Strategies pp-1f1b and pp-gpipe: `dtbench ddp --pp NPROC --pp-schedule
# 1f1b|gpipe --microbatches PP_M` (default 4) vs torch.distributed.pipelining's
# Schedule1F1B / ScheduleGPipe over one PipelineStage per rank.
set -euo pipefail
BUILD=${1:-build-wheel}
ROUNDS=${2:-5}
STRATEGIES=${3:-ddp,zero1,fsdp}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
NPROC=${NPROC:-2}
BIND=${BIND:-none}
AMP=${AMP:-none}
PARAM_DTYPE=${PARAM_DTYPE:-float32}
AC=${AC:-none}
MODEL=${MODEL:---layers 2 --width 128 --heads 4 --vocab 2048 --seq-len 64 --batch-size 2}
here=$(cd "$(dirname "$0")" && pwd)
D="$BUILD/dtbench"
# shellcheck source=bench/bench_lib.sh
. "$here/bench_lib.sh"
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
GLIBC_TUNABLES=$(peer_glibc_tunables "$D")
export GLIBC_TUNABLES
echo "peers run with GLIBC_TUNABLES=${GLIBC_TUNABLES:-<unset>}" >&2
label="1N/${NPROC}R"

PP_M=${PP_M:-4}
label_of() {
  case $1 in tp) echo "$label tp$NPROC" ;; pp-*) echo "$label pp$NPROC" ;; *) echo "$label" ;; esac
}
dtbench_side() {  # strategy, round
  local how=(--reducer "$1")
  [ "$1" = tp ] && how=(--reducer ddp --tp "$NPROC")
  case $1 in pp-*) how=(--reducer sync --pp "$NPROC" --pp-schedule "${1#pp-}" --microbatches "$PP_M") ;; esac
  # shellcheck disable=SC2086
  "$D" ddp --model gpt2 $MODEL --optimizer adamw "${how[@]}" --iters "$ITERS" --warmup "$WARMUP" \
    --threads 1 --bucket-cap-mb 25 --world-sizes "$NPROC" --no-baseline --bind "$BIND" --amp "$AMP" \
    --activation-checkpointing "$AC" \
    $([ "$PARAM_DTYPE" = float32 ] || echo "--param-dtype $PARAM_DTYPE") \
    --json "$out/d.$1.$2.json" >/dev/null 2>&1
}
peer_side() {  # strategy, round
  local how=(--strategy "$1")
  case $1 in pp-*) how=(--strategy pp --pp-schedule "${1#pp-}" --microbatches "$PP_M") ;; esac
  # shellcheck disable=SC2086
  "$D" launch --nproc-per-node "$NPROC" --bind "$BIND" -- "$here/peers/python-wheel" \
    "$here/peers/torch_sharded.py" "${how[@]}" $MODEL --iters "$ITERS" --warmup "$WARMUP" \
    --threads 1 --bucket-cap-mb 25 --amp "$AMP" --param-dtype "$PARAM_DTYPE" --activation-checkpointing "$AC" \
    --memory-probe "$BUILD/libdtbench_memory_probe.so" >"$out/p.$1.$2.json"
}

IFS=, read -ra want <<<"$STRATEGIES"
for s in "${want[@]}"; do
  d=() p=() dm=() pm=()
  for r in $(seq 1 "$ROUNDS"); do
    echo "[$s] round $r/$ROUNDS" >&2
    if [ $((r % 2)) = 1 ]; then dtbench_side "$s" "$r"; peer_side "$s" "$r"; else peer_side "$s" "$r"; dtbench_side "$s" "$r"; fi
    d+=("$(p50_of "$out/d.$s.$r.json" "$(label_of "$s")")")
    p+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["p50"])' "$out/p.$s.$r.json")")
    dm+=("$(python3 -c 'import json,sys; print(max(r["memory"]["peak_bytes"] for r in json.load(open(sys.argv[1]))["runs"]))' "$out/d.$s.$r.json")")
    pm+=("$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_bytes"])' "$out/p.$s.$r.json")")
  done
  ds=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runs'][0]['memory']['model_state_bytes'])" "$out/d.$s.1.json")
  ps=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model_state_bytes"])' "$out/p.$s.1.json")
  md=$(median "${d[@]}"); mp=$(median "${p[@]}"); mdm=$(median "${dm[@]}"); mpm=$(median "${pm[@]}")
  echo "$s: $NPROC ranks, 1 thread/rank: dtbench p50 ${md}s  torch p50 ${mp}s  ratio $(ratio "$md" "$mp")  model state per rank: dtbench $ds B, torch $ps B  peak per rank: dtbench $mdm B, torch $mpm B  ratio $(ratio "$mdm" "$mpm")  (peaks: dtbench ${dm[*]} | torch ${pm[*]})  (rounds: dtbench ${d[*]} | torch ${p[*]})"
done
