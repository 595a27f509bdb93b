# Helpers of faults.sh and launcher_faults.sh (sourced, after DTBENCH is set):
# pass/fail counting, a free port, the launcher's workers, and what is left
# of them. Makes $tmp, removed on exit.
fails=0; passes=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME CONDITION-RESULT DETAIL
  if [ "$2" -eq 0 ]; then echo "ok: $1"; passes=$((passes + 1));
  else echo "FAIL: $1: $3"; fails=$((fails + 1)); fi
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
# Prints the second worker (by pid) of PARENT once it exists and, if given,
# once FILE contains PATTERN; empty if that never happens within 20 s.
second_worker() {  # PARENT [FILE PATTERN]
  local v=""
  for _ in $(seq 1 100); do
    v=$(pgrep -P "$1" | sort -n | sed -n 2p)
    [ -n "$v" ] && { [ $# -lt 3 ] || grep -q "$3" "$2" 2>/dev/null; } && break
    sleep 0.2
  done
  echo "$v"
}
left_behind() { pgrep -f "$tmp/marker" >/dev/null; }
# The live processes left in the process groups of the workers WORKER...
# (zombies, dead but not yet reaped by whoever inherited them, do not count):
# each worker leads its own group, so its own children count too. Take the
# pids while the launcher lives: once it is reaped a survivor has a new
# parent and `pgrep -P launcher` sees nothing.
left_in_groups() {  # WORKER...
  local n=0 p
  for p in "$@"; do
    n=$((n + $(ps -e -o pgid=,stat= | awk -v g="$p" '$1 == g && $2 !~ /^Z/' | wc -l)))
  done
  echo "$n"
}
