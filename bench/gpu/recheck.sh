#!/usr/bin/env bash
# A short recheck for the minutes left of a GPU lease after a fix (~60 s on
# an H200): the comm part of run.py, the one-rank physics rows (out-of-place
# allgather, reduce_scatter, alltoall of 64 MiB beside the copy ceiling) and
# GPT-2 under ddp and fsdp at run.py's batch, against the same dtbench bundle.
#   bench/gpu/recheck.sh OUT [cuda|cpu]     (cpu: tiny sizes, the rehearsal)
set -uo pipefail
out=${1:?usage: recheck.sh OUT [cuda|cpu]}
dev=${2:-cuda}
cd "$(dirname "$0")/../.."
py=python3; [ "$dev" = cpu ] && py=bench/peers/python-wheel
D=$PWD/gpu-bundle/bin/dtbench
mkdir -p "$out"
if [ "$dev" = cuda ]; then
  flags=(--device cuda --backend nccl); big=64M; gpt=(-b 40 --seq-len 1024); iters=(-n 10 -w 3); colls=allgather,reduce_scatter,alltoall
else
  flags=(--device cpu --backend gloo); big=1M; colls=allgather,alltoall
  gpt=(-b 2 --seq-len 16 --layers 2 --width 64 --heads 2 --vocab 256); iters=(-n 2 -w 1)
fi
"$py" bench/gpu/run.py --out "$out" --device "$dev" --dtbench "$D" --python "$py" --only comm \
  --part-budget comm=50 --budget-s 70 >"$out/run.log" 2>&1
echo "run.py --only comm: exit $?"
LD_LIBRARY_PATH=$("$py" -c "import sys; sys.path.insert(0, 'bench/gpu'); import run
print(run.library_env('$D', '$py')[0]['LD_LIBRARY_PATH'])") || exit 1
export LD_LIBRARY_PATH
timeout 60 "$D" comm "${flags[@]}" --collective "$colls" -b "$big" -e "$big" -n 20 -w 5 \
  --placement out --json "$out/physics.json" >"$out/physics.log" 2>&1
echo "physics: exit $?"
"$py" - "$out/physics.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    x = r["out_of_place"]
    print(f"  {r['collective']} {r['size']} B: {x['time']:.1f} us, algbw {x['alg_bw']:.1f} GB/s, "
          f"copy ceiling {x['ceiling_gbs']:.1f} GB/s "
          f"({x['alg_bw'] / x['ceiling_gbs']:.2f})" if x['ceiling_gbs'] > 0 else "(no copy ceiling)")
PY
for s in ddp fsdp; do
  timeout 60 "$D" ddp --model gpt2 --reducer "$s" "${gpt[@]}" --optimizer adamw --amp bf16 --world-sizes 1 \
    --no-baseline --bucket-cap-mb 25 --threads 1 "${iters[@]}" "${flags[@]}" --json "$out/gpt.$s.json" \
    >"$out/gpt.$s.log" 2>&1
  echo "gpt2 $s: exit $? $(grep -E '^ *1N/1R' "$out/gpt.$s.log" | head -1)"
done
sed -n '/^## comm/,/^## profile/p' "$out/summary.md"
