# Helpers the bench/compare_*.sh scripts share (sourced).
p50_of() {  # dtbench report, row label
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]));
print([r for r in d['runs'] if r['label']==sys.argv[2]][0]['summary']['p50'])" "$1" "$2"
}
median() { python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
ratio() { python3 -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.3f}')" "$1" "$2"; }
# The GLIBC_TUNABLES that give a Python peer dtbench's malloc thresholds
# (core/allocator.h), so neither side is faster only because of its allocator.
peer_glibc_tunables() {  # dtbench binary
  "$1" env --as-json | python3 -c 'import json,sys; print(json.load(sys.stdin)["malloc"]["peer_glibc_tunables"])'
}
