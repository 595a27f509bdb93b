#!/usr/bin/env bash
# --bind with real processes: `dtbench launch --bind core` workers each see
# only their own CPUs; `dtbench ddp --bind core` records each rank's CPUs
# (gloo through the launcher, mpi through mpirun and the ranks' own pinning),
# unbound rows record all of them (so mpirun's own default binding is off); refusals (fewer cores than ranks under
# taskset, before any row runs). Needs 2 cores; skips (77) with fewer.
# Usage: bind_cli.sh path/to/dtbench
set -eu
DTBENCH=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# Physical cores among the CPUs this process may use (hyperthreads of one
# core count once, as --bind core counts them).
cores=$(python3 -c '
import os, subprocess
allowed = os.sched_getaffinity(0)
rows = [l.split(",") for l in subprocess.run(["lscpu", "-p=CPU,SOCKET,CORE"], capture_output=True,
        text=True, check=True).stdout.splitlines() if not l.startswith("#")]
print(len({(s, c) for cpu, s, c in rows if int(cpu) in allowed}))')
if [ "$cores" -lt 2 ]; then echo "SKIP: $cores core(s) here; --bind core with 2 ranks needs 2"; exit 77; fi
all=$(grep Cpus_allowed_list /proc/self/status | cut -f2)
first=$(python3 -c 'import os; print(min(os.sched_getaffinity(0)))')

# launch: each worker writes the CPUs it may use; disjoint, equal in size, non-empty.
"$DTBENCH" launch --nproc-per-node 2 --bind core -- \
  sh -c "grep Cpus_allowed_list /proc/self/status | cut -f2 > $work/launch.\$RANK"
python3 - "$work/launch.0" "$work/launch.1" <<'PY'
import sys
def cpus(text):
    out = set()
    for item in text.strip().split(","):
        lo, _, hi = item.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out
a, b = (cpus(open(p).read()) for p in sys.argv[1:3])
assert a and b and not (a & b) and len(a) == len(b), (a, b)
PY
echo "ok: launch --bind core: rank 0 on $(cat "$work/launch.0"), rank 1 on $(cat "$work/launch.1")"

common=(--model mlp --width 16 --num-classes 4 --batch-size 2 --iters 3 --warmup 1 --threads 1)
check_ranks() {  # report bind
  python3 - "$1" "$2" "$all" <<'PY'
import json, sys
path, bind, everything = sys.argv[1:4]
d = json.load(open(path))
assert d["config"]["bind"] == bind, d["config"]
for run in d["runs"]:
    seen = [r["cpus"] for r in run["ranks"]]
    if bind == "none":
        assert seen == [everything] * len(seen), (run["label"], seen)
    elif run["world_size"] == 2:
        assert len(set(seen)) == 2 and everything not in seen, (run["label"], seen)
    print(f"  {run['label']}: {seen}")
PY
}
for bind in core none; do
  "$DTBENCH" ddp "${common[@]}" --world-sizes 1,2 --bind "$bind" --json "$work/gloo.$bind.json" >"$work/out" 2>&1 ||
    { cat "$work/out"; exit 1; }
  if [ "$bind" = core ]; then grep -q "ranks bound to cores" "$work/out"; fi
  check_ranks "$work/gloo.$bind.json" "$bind"
  echo "ok: ddp gloo --bind $bind"
done
if "$DTBENCH" env | grep -q "^# backends:.*mpi"; then
  for bind in core none; do
    "$DTBENCH" ddp "${common[@]}" --world-sizes 2 --reducer overlap --backend mpi --bind "$bind" \
      --no-baseline --json "$work/mpi.$bind.json" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
    check_ranks "$work/mpi.$bind.json" "$bind"
    echo "ok: ddp mpi --bind $bind"
  done
fi
# comm through the self-launch path: runs, and records the mode.
"$DTBENCH" comm --nproc 2 --bind core -n 2 -w 1 -b 8 -e 64 --json "$work/comm.json" >/dev/null
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['config']['bind'] == 'core'" "$work/comm.json"
echo "ok: comm --nproc 2 --bind core"

# The clusters guide's lines, exactly, in their own directory.
mkdir "$work/readme"
bindir=$(dirname "$(readlink -f "$DTBENCH")")
(cd "$work/readme" && PATH="$bindir:$PATH" && set -e &&
  dtbench ddp --model mlp --world-sizes 1,2 --bind core --json bound.json &&
  dtbench launch --nproc-per-node 2 --bind core -v -- dtbench comm -b 8 -e 1M) >"$work/readme.out" 2>&1 ||
  { echo "FAIL: clusters guide's --bind lines"; tail -5 "$work/readme.out"; exit 1; }
# (comm: a wrong element would have made the exit status 3)
check_ranks "$work/readme/bound.json" core
grep -q "ranks bound to cores" "$work/readme.out"
[ "$(grep -c "dtbench launch: started rank [01] (pid [0-9]*) on CPUs" "$work/readme.out")" = 2 ]
echo "ok: clusters guide's --bind lines"

# One core allowed, two ranks to pin: one line, exit 2, nothing run or written.
refuse() {
  local rc=0
  taskset -c "$first" "$DTBENCH" "$@" >"$work/out" 2>"$work/err" || rc=$?
  if [ "$rc" -ne 2 ] || [ "$(wc -l <"$work/err")" -ne 1 ] || [ -s "$work/out" ] ||
     ! grep -q "2 ranks but this process may use 1 core(s) (CPUs $first)" "$work/err"; then
    echo "FAIL: taskset -c $first dtbench $* -> exit $rc"; cat "$work/err" "$work/out" | head -5; exit 1
  fi
  echo "ok: refused: $(cat "$work/err")"
}
refuse launch --nproc-per-node 2 --bind core -- true
refuse ddp "${common[@]}" --world-sizes 1,2 --bind core --json "$work/refused.json"
[ ! -e "$work/refused.json" ]
refuse compare "${common[@]:2}" --models mlp --world-sizes 2 --bind core --no-progress
refuse comm --nproc 2 --bind core -n 1 -b 8 -e 8
echo "bind_cli: all passed"
