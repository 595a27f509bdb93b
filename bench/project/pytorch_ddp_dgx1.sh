#!/usr/bin/env bash
# Paper validation of `dtbench project` (docs/PERFORMANCE.md "Projection"): projects PyTorch's published
# DDP table (DGX-1, V100, NCCL) from its no-ddp and 1-GPU times and published link
# figures (pytorch_ddp_dgx1.env), prints projected against published with the error
# at each GPU count, then the projection's sensitivity to its least certain inputs.
# Usage: bench/project/pytorch_ddp_dgx1.sh path/to/dtbench   (exit 1 if any error > 10%)
set -euo pipefail
DT=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=pytorch_ddp_dgx1.env
source "$here/pytorch_ddp_dgx1.env"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# project MODEL OUT [EXTRA FLAGS...]: a JSON projection in OUT.
project() {
  local model=$1 out=$2; shift 2
  local split_var="SPLIT_$model" fixed_var="FIXED_$model"
  read -r fwd bwd opt <<<"${!split_var}"
  "$DT" project --model "$model" -b 32 --image-size 224 --forward-ms "$fwd" --backward-ms "$bwd" \
    --optimizer-ms "$opt" --ddp-overhead-ms "${!fixed_var}" --ranks-per-node "$RANKS_PER_NODE" \
    --intra-bw "$INTRA_BW" --intra-latency "$INTRA_LATENCY" --inter-bw "$INTER_BW" \
    --inter-latency "$INTER_LATENCY" --base-latency "$BASE_LATENCY" --world-sizes "$WORLD_SIZES" \
    --json "$out" "$@" >/dev/null
}

fail=0
for model in resnet50 resnet101; do
  project "$model" "$tmp/$model.json"
  pub_var="PUBLISHED_$model"
  python3 - "$tmp/$model.json" "$model" ${!pub_var} <<'PY' || fail=1
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
model, published = sys.argv[2], [float(x) for x in sys.argv[3:]][1:]  # drop no-ddp
print(f"{model}: GPUs  projected s  published s  error")
worst = 0
for r, p in zip(rows, published):
    e = r["iteration_s"] / p - 1
    worst = max(worst, abs(e))
    print(f"{'':{len(model)}}  {r['world_size']:>4}  {r['iteration_s']:>11.4f}  {p:>11.3f}  {e:+6.1%}")
print(f"{'':{len(model)}}  worst |error| {worst:.1%} (goal <= 10%)")
sys.exit(0 if worst <= 0.10 else 1)
PY
done

echo
echo "Sensitivity: resnet50 at 16 GPUs (2 machines), projected s/iter as one input varies"
at16() { python3 -c "import json,sys; print('%.4f' % json.load(open(sys.argv[1]))['rows'][-1]['iteration_s'])" "$1"; }
row() { local name=$1; shift; project resnet50 "$tmp/s.json" "$@"; printf '  %-44s %s\n' "$name" "$(at16 "$tmp/s.json")"; }
row "as given"
INTRA_BW=60GB/s row "NVLink bus bandwidth 60 GB/s (not 120)"
INTRA_BW=150GB/s row "NVLink bus bandwidth 150 GB/s"
INTER_BW=100Gbit/s row "InfiniBand 1x100 Gb/s per node (not 4x)"
INTER_BW=4x25Gbit/s row "InfiniBand 4x25 Gb/s per node"
INTRA_LATENCY=34us INTER_LATENCY=96us BASE_LATENCY=84us row "every latency x10"
row "no overlap (allreduce after backward)" --no-overlap
row "buckets of 100 MiB (not 25)" --bucket-cap-mb 100
SPLIT_resnet50="48 45 4" row "forward:backward 1:1 (not 1:2)"
exit $fail
