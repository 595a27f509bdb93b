#!/usr/bin/env bash
# dtbench ddp beside PyTorch's Python DDP (Debian python3-torch +
# python3-torchvision, bench/peers/torch_ddp.py), same model, batch, threads,
# world size, bucket cap (25 MB) and gloo; alternating, ROUNDS times; prints
# the median p50 sec/iter of each side and their ratio. Also, dtbench only:
# 1 rank ddp vs none, and overlap vs sync.
#   bench/compare_ddp.sh [BUILD_DIR] [ROUNDS] [CASES]
# CASES (default all): resnet50, resnet18, mlp, onerank, overlap.
# Environment: ITERS, WARMUP (default 20, 5; the mlp case runs 200 + 20);
# PY, the peer's python (default Debian's /usr/bin/python3 with torch 1.13;
# for the wheel build: PY=bench/peers/python-wheel, torch 2.11);
# DTBENCH_MALLOC (default tuned; the peers get the same thresholds);
# BIND (default none; core pins each rank of both sides to its own core:
# dtbench ddp --bind core, and the peers through dtbench launch --bind core);
# AWAKE (default 0; 1 runs an idle-priority busy loop on every CPU for the
# whole comparison, so a vCPU whose threads all wait spins instead of halting:
# on a VM a halted vCPU wakes only when the host reschedules it, which here
# cost ~2 ms per MLP step; both sides get the same; see docs/PERFORMANCE.md).
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-5}
CASES=${3:-resnet50,resnet18,mlp,onerank,overlap}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
BIND=${BIND:-none}
AWAKE=${AWAKE:-0}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
PY=${PY:-/usr/bin/python3}
D="$BUILD/dtbench"
# shellcheck source=bench/bench_lib.sh
. "$here/bench_lib.sh"
# The Python peers run with dtbench's malloc thresholds (core/allocator.h), so
# neither side is faster only because of its allocator.
GLIBC_TUNABLES=$(peer_glibc_tunables "$D")
export GLIBC_TUNABLES
echo "peers run with GLIBC_TUNABLES=${GLIBC_TUNABLES:-<unset>}" >&2
trap stop_awake_spinners EXIT
[ "$AWAKE" = 1 ] && keep_cpus_awake

phase_p50() {  # dtbench report, row label, phase
  python3 -c "import json,sys,statistics; d=json.load(open(sys.argv[1]));
r=[r for r in d['runs'] if r['label']==sys.argv[2]][0]
print(statistics.median([max(c) for c in zip(*[k[sys.argv[3]] for k in r['ranks']])]))" "$1" "$2" "$3"
}

vs_python() {  # name, model flags for dtbench, model flags for the peer, [iters], [warmup]
  local name=$1 dflags=$2 pflags=$3 it=${4:-$ITERS} wu=${5:-$WARMUP} d=() p=()
  for r in $(seq 1 "$ROUNDS"); do
    echo "[$name] round $r/$ROUNDS" >&2
    # shellcheck disable=SC2086
    "$D" ddp $dflags --iters "$it" --warmup "$wu" --threads 1 --reducer ddp \
      --bucket-cap-mb 25 --world-sizes 2 --no-baseline --bind "$BIND" --json "$out/$name.$r.json" >/dev/null 2>&1
    d+=("$(p50_of "$out/$name.$r.json" 1N/2R)")
    # shellcheck disable=SC2086
    p+=("$("$D" launch --nproc-per-node 2 --bind "$BIND" -- $PY "$here/peers/torch_ddp.py" $pflags \
        --iters "$it" --warmup "$wu" --threads 1 --bucket-cap-mb 25 |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["p50"])')")
  done
  local md mp; md=$(median "${d[@]}"); mp=$(median "${p[@]}")
  echo "$name: 2 ranks, 1 thread/rank: dtbench ddp p50 ${md}s  python DDP p50 ${mp}s  ratio $(ratio "$md" "$mp")  (rounds: dtbench ${d[*]} | python ${p[*]})"
}

onerank() {  # odd rounds: the sweep's order (none, then ddp); even rounds: ddp first
  local ddp=() none=() f=(--model resnet50 --image-size 64 --batch-size 16 --iters "$ITERS"
                          --warmup "$WARMUP" --threads 1)
  for r in $(seq 1 "$ROUNDS"); do
    echo "[onerank] round $r/$ROUNDS" >&2
    if [ $((r % 2)) = 1 ]; then
      "$D" ddp "${f[@]}" --reducer ddp --world-sizes 1 --json "$out/one.$r.json" >/dev/null 2>&1
      ddp+=("$(p50_of "$out/one.$r.json" 1N/1R)"); none+=("$(p50_of "$out/one.$r.json" "no ddp")")
    else
      "$D" ddp "${f[@]}" --reducer ddp --world-sizes 1 --no-baseline --json "$out/oned.$r.json" >/dev/null 2>&1
      "$D" ddp "${f[@]}" --reducer none --world-sizes 1 --json "$out/onen.$r.json" >/dev/null 2>&1
      ddp+=("$(p50_of "$out/oned.$r.json" 1N/1R)"); none+=("$(p50_of "$out/onen.$r.json" 1N/1R)")
    fi
  done
  local a b; a=$(median "${ddp[@]}"); b=$(median "${none[@]}")
  echo "onerank: resnet50 64x64 b16, 1 thread, malloc ${DTBENCH_MALLOC:-tuned}: ddp 1N/1R p50 ${a}s  none p50 ${b}s  ratio $(ratio "$a" "$b")  (rounds: ddp ${ddp[*]} | none ${none[*]})"
}

overlap() {
  local o=() s=() ow=() sw=()
  for r in $(seq 1 "$ROUNDS"); do
    echo "[overlap] round $r/$ROUNDS" >&2
    for red in overlap sync; do
      "$D" ddp --model resnet50 --image-size 64 --batch-size 16 --iters "$ITERS" --warmup "$WARMUP" \
        --threads 1 --reducer $red --world-sizes 2 --no-baseline --json "$out/$red.$r.json" >/dev/null 2>&1
    done
    o+=("$(p50_of "$out/overlap.$r.json" 1N/2R)"); s+=("$(p50_of "$out/sync.$r.json" 1N/2R)")
    ow+=("$(phase_p50 "$out/overlap.$r.json" 1N/2R comm_wait)"); sw+=("$(phase_p50 "$out/sync.$r.json" 1N/2R comm_wait)")
  done
  local a b; a=$(median "${o[@]}"); b=$(median "${s[@]}")
  echo "overlap: resnet50 64x64 b16, 2 ranks, 1 thread: overlap p50 ${a}s (comm_wait $(median "${ow[@]}")s)  sync p50 ${b}s (comm_wait $(median "${sw[@]}")s)  ratio $(ratio "$a" "$b")"
}

IFS=, read -ra want <<<"$CASES"
for c in "${want[@]}"; do
  case $c in
    resnet50) vs_python resnet50 "--model resnet50 --image-size 64 --batch-size 16" \
                "--model resnet50 --image-size 64 --batch-size 16" ;;
    resnet18) vs_python resnet18 "--model resnet18 --image-size 32 --batch-size 32" \
                "--model resnet18 --image-size 32 --batch-size 32" ;;
    # Small enough that per-iteration framework overhead shows: 1024-64-64-1000.
    mlp) vs_python mlp "--model mlp --width 64 --batch-size 32" \
           "--model mlp --width 64 --batch-size 32" 200 20 ;;
    onerank) onerank ;;
    overlap) overlap ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done
rm -rf "$out"
