# Helpers the bench/compare_*.sh scripts share (sourced).
p50_of() {  # dtbench report, row label
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]));
print([r for r in d['runs'] if r['label']==sys.argv[2]][0]['slowest_rank_summary']['p50'])" "$1" "$2"
}
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.3f}')" "$1" "$2"; }
# The GLIBC_TUNABLES that give a Python peer dtbench's malloc thresholds
# (core/allocator.h), so neither side is faster only because of its allocator.
peer_glibc_tunables() {  # dtbench binary
  "$1" env --as-json | python3 -c 'import json,sys; print(json.load(sys.stdin)["malloc"]["peer_glibc_tunables"])'
}
# keep_cpus_awake: an idle-priority busy loop on every CPU this process may
# use, until the script exits (AWAKE=1 in the compare scripts). SCHED_IDLE
# runs only when nothing else on that CPU can and is preempted at once, so a
# vCPU whose threads all wait spins instead of halting: on this VM a halted
# vCPU wakes only when the host reschedules it (~1-2 ms; docs/PERFORMANCE.md,
# "ranks bound to cores, and the VM's halted vCPUs"). Both sides get the same.
awake_spinners=()
stop_awake_spinners() { [ ${#awake_spinners[@]} -eq 0 ] || kill "${awake_spinners[@]}" 2>/dev/null || true; }
keep_cpus_awake() {
  local cpus c
  cpus=$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')
  for c in $cpus; do
    chrt --idle 0 taskset -c "$c" sh -c 'while :; do :; done' &
    awake_spinners+=($!)
  done
  echo "AWAKE=1: idle-priority spinners on CPUs $cpus" >&2
}
