#!/usr/bin/env bash
# dtbench ddp on one GPU beside PyTorch's Python DDP (bench/peers/torch_ddp.py
# --device cuda), same model, batch, bucket cap (25 MB), NCCL, in alternating
# rounds; prints the median p50 sec/iter of each side and their ratio, for
# the "no ddp" row and the one-rank DDP row (the seed's first two columns:
# resnet50 224x224, batch 32: 0.097 / 0.100 s on a V100).
#   bench/gpu_ddp.sh [DTBENCH] [ROUNDS] [CASES]
# CASES (default resnet50,resnet101,mlp): resnet50 and resnet101 at 224x224
# batch 32 (fp32), resnet50-bf16 (--amp bf16 --channels-last on both sides),
# mlp (1024-1024-1024-1000, batch 32: where per-iteration framework
# overhead shows). Environment: ITERS, WARMUP (default 30, 10); BATCH (the
# resnets' batch per rank, default 32); PY, the
# peer's python (default python3, which must hold a CUDA torch).
set -euo pipefail
D=${1:-build-wheel/dtbench}
ROUNDS=${2:-3}
CASES=${3:-resnet50,resnet101,mlp}
ITERS=${ITERS:-30}
WARMUP=${WARMUP:-10}
BATCH=${BATCH:-32}
PY=${PY:-python3}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

p50_of() {  # dtbench report, row label
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]));
print([r for r in d['runs'] if r['label']==sys.argv[2]][0]['slowest_rank_summary']['p50'])" "$1" "$2"
}
median() { python3 -c "import statistics,sys; print(f'{statistics.median(float(x) for x in sys.argv[1:]):.5f}')" "$@"; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.3f}')" "$1" "$2"; }
peer_p50() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["p50"])'; }

vs_python() {  # name, dtbench model flags, peer model flags, [iters], [warmup]
  local name=$1 dflags=$2 pflags=$3 it=${4:-$ITERS} wu=${5:-$WARMUP}
  local dn=() dd=() pn=() pd=()
  for r in $(seq 1 "$ROUNDS"); do
    echo "[$name] round $r/$ROUNDS" >&2
    # Odd rounds dtbench first, even rounds the peer first.
    for side in $([ $((r % 2)) = 1 ] && echo "dt py" || echo "py dt"); do
      if [ "$side" = dt ]; then
        # shellcheck disable=SC2086
        "$D" ddp $dflags --iters "$it" --warmup "$wu" --device cuda --backend nccl --reducer ddp \
          --bucket-cap-mb 25 --world-sizes 1 --json "$out/$name.$r.json" >"$out/$name.$r.log" 2>&1 \
          || { cat "$out/$name.$r.log" >&2; exit 1; }
        dn+=("$(p50_of "$out/$name.$r.json" "no ddp")"); dd+=("$(p50_of "$out/$name.$r.json" 1N/1R)")
      else
        # shellcheck disable=SC2086
        pn+=("$($PY "$here/peers/torch_ddp.py" $pflags --device cuda --iters "$it" --warmup "$wu" --no-ddp | peer_p50)")
        # shellcheck disable=SC2086
        pd+=("$("$D" launch --nproc-per-node 1 -- $PY "$here/peers/torch_ddp.py" $pflags --device cuda \
            --iters "$it" --warmup "$wu" --bucket-cap-mb 25 | peer_p50)")
      fi
    done
  done
  local a b c e
  a=$(median "${dn[@]}"); b=$(median "${pn[@]}"); c=$(median "${dd[@]}"); e=$(median "${pd[@]}")
  echo "$name no-ddp: dtbench ${a}s  python ${b}s  ratio $(ratio "$a" "$b")   (rounds: ${dn[*]} | ${pn[*]})"
  echo "$name 1 rank: dtbench ${c}s  python ${e}s  ratio $(ratio "$c" "$e")   (rounds: ${dd[*]} | ${pd[*]})"
  echo "$name ddp/none: dtbench $(ratio "$c" "$a")  python $(ratio "$e" "$b")"
}

IFS=, read -ra want <<<"$CASES"
for c in "${want[@]}"; do
  case $c in
    resnet50|resnet101)
      vs_python "$c" "--model $c --image-size 224 --batch-size $BATCH" "--model $c --image-size 224 --batch-size $BATCH" ;;
    resnet50-bf16) vs_python "$c" "--model resnet50 --image-size 224 --batch-size $BATCH --amp bf16 --channels-last" \
                     "--model resnet50 --image-size 224 --batch-size $BATCH --amp bf16 --channels-last" ;;
    mlp) vs_python mlp "--model mlp --width 1024 --batch-size 32" "--model mlp --width 1024 --batch-size 32" 200 20 ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done
