#!/usr/bin/env bash
# Parameter servers beside their raw TensorPipe ceiling (docs/PERFORMANCE.md,
# "Parameter servers beside raw TensorPipe"): the four kvstore dist_sync
# layouts and hybrid's lookups (2 trainers + 1 server, and the original's 8 + 8),
# each run once per round, the order reversed every other round; prints each
# run's ratio to the ceiling measured in that same run, then the median per
# case. Usage: bench/ps_rounds.sh [path/to/dtbench] (ROUNDS=5 by default).
set -euo pipefail
DTBENCH=${1:-build/dtbench}
ROUNDS=${ROUNDS:-5}
cases=(
  "kv 1+1 resnet50|kvstore --workers 1 --servers 1 --model resnet50 -n 8 -w 1 --ceiling-iters 5"
  "kv 1+1 64MiB|kvstore --workers 1 --servers 1 --arrays 1 --size 64M -n 8 -w 1 --ceiling-iters 5"
  "kv 2+2 resnet50|kvstore --workers 2 --servers 2 --model resnet50 -n 8 -w 1 --ceiling-iters 5"
  "kv 2+2 64MiB|kvstore --workers 2 --servers 2 --arrays 1 --size 64M -n 8 -w 1 --ceiling-iters 5"
  "hybrid 2T+1S|hybrid --trainers 2 --servers 1 -n 300 --ceiling-iters 1000"
  "hybrid 8T+8S|hybrid -n 30 --ceiling-iters 200"
)
out=$(mktemp); trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  order=$(seq 0 $((${#cases[@]} - 1)))
  [ $((r % 2)) -eq 0 ] && order=$(echo "$order" | tac)
  for i in $order; do
    name=${cases[$i]%%|*}; args=${cases[$i]#*|}
    # shellcheck disable=SC2086
    line=$(timeout 300 "$DTBENCH" $args 2>&1 | grep -E "^# dist_sync with|^# lookup p50" || true)
    if [[ $line == "# dist_sync"* ]]; then
      # "... X GB/sec moved per worker; raw TensorPipe ceiling Y GB/sec (R of it)"
      val=$(sed -E 's/.* ([0-9.]+) GB\/sec moved per worker; raw TensorPipe ceiling ([0-9.]+) GB\/sec \(([0-9.]+) of it\).*/\1 \2 \3/' <<<"$line")
    elif [[ $line == "# lookup"* ]]; then
      # "# lookup p50 L us vs raw TensorPipe round p50 A us alone (x), C us with every trainer at once (y); ..."
      read -r l a c < <(sed -E 's/# lookup p50 ([0-9.]+) us vs raw TensorPipe round p50 ([0-9.]+) us alone \([0-9.]+x\), ([0-9.]+) us with every trainer at once.*/\1 \2 \3/' <<<"$line")
      echo "round $r | $name, ceiling alone | $l $a $(python3 -c "print(round($l / $a, 3))")" | tee -a "$out"
      echo "round $r | $name, ceiling at once | $l $c $(python3 -c "print(round($l / $c, 3))")" | tee -a "$out"
      continue
    else
      echo "ps_rounds: round $r, $name: no summary line (run failed)" >&2; exit 1
    fi
    echo "round $r | $name | $val" | tee -a "$out"
  done
done
python3 - "$out" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    _, name, val = [f.strip() for f in line.split("|")]
    rows[name].append([float(x) for x in val.split()])
print("\n| case | run figure (kv: GB/s per worker; hybrid: lookup p50 us) | ceiling | ratio per round | median ratio |")
print("|---|---|---|---|---|")
for name, vals in rows.items():
    f = lambda k: ", ".join(f"{v[k]:.3g}" for v in vals)
    print(f"| {name} | {f(0)} | {f(1)} | {f(2)} | **{statistics.median(v[2] for v in vals):.2f}** |")
PY
