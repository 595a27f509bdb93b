#!/usr/bin/env bash
# dtbench under a real torchrun (the PyTorch 2.11 wheel's) on two hosts: two
# network namespaces joined by a veth link (tests/cli/netns_lib.sh), named
# node0 and node1, one torchrun agent on each, meeting through torchrun's
# c10d rendezvous hosted by node0's agent. Runs the clusters guide's two-node
# torchrun line as written (extracted from docs/guide/clusters.md) on both hosts, a ddp
# job, and a worker killed on node1 mid-run (both agents end the job, the
# rank is named, nothing is left on either host). Needs root and iproute2;
# exit 77 (skipped) with the reason otherwise or where no torchrun can be
# run. Usage: torchrun_multinode.sh path/to/dtbench
set -u
D=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (ip netns add)"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
command -v unshare >/dev/null && command -v nsenter >/dev/null || skip "unshare/nsenter (util-linux) are not installed"
"$ROOT/bench/peers/python-wheel" -c 'import torch.distributed.run' >/dev/null 2>&1 ||
  skip "no torchrun (the wheel flavour's torch and its Python packages: bash scripts/peers_wheel.sh)"
. "$ROOT/tests/cli/netns_lib.sh"
. "$ROOT/tests/cli/check_lib.sh"
tmp=$(mktemp -d /tmp/dtbench-torchrun2.XXXXXX)
cleanup() { netns_cleanup; pkill -9 -f "$tmp" 2>/dev/null; [ -n "${KEEP:-}" ] && { echo "kept: $tmp"; return; }; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
netns_pair dtt 10.231.15 node0 node1 || skip "$NETNS_ERROR"
# `torchrun` and `dtbench` as the clusters guide writes them.
mkdir -p "$tmp/bin" "$tmp/work"
printf '#!/bin/sh\nexec "%s" -m torch.distributed.run "$@"\n' "$ROOT/bench/peers/python-wheel" >"$tmp/bin/torchrun"
chmod +x "$tmp/bin/torchrun"
ln -s "$D" "$tmp/bin/dtbench"
export PATH="$tmp/bin:$PATH"
cd "$tmp/work"
real_d=$(readlink -f "$D")
# A dtbench process: the front end, or dtbench-torch beside it (its jobs).
is_dtbench() {
  local e; e=$(readlink -f "/proc/$1/exe" 2>/dev/null)
  [ "$e" = "$real_d" ] || [ "$e" = "$(dirname "$real_d")/dtbench-torch" ]
}
left() { for ns in "$NS_A" "$NS_B"; do ip netns pids "$ns"; done | while read -r p; do
  is_dtbench "$p" && echo "$p"; done; }
# on_both NAME LIMIT CMD...: CMD on node0 and node1 at once; rc_a/rc_b, took.
on_both() {
  local name=$1 limit=$2; shift 2
  local start; start=$(date +%s)
  in_a timeout "$limit" "$@" >"$name.a.out" 2>&1 &
  local pa=$!
  in_b timeout "$limit" "$@" >"$name.b.out" 2>&1
  rc_b=$?; wait "$pa"; rc_a=$?
  took=$(( $(date +%s) - start ))
}

# 1. The clusters guide's two-node line, as written, on both hosts.
line=$(python3 - "$ROOT/docs/guide/clusters.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^(torchrun --nnodes 2 .*?)(?:\s+#.*)?$", text, re.M)
print(m.group(1) if m else "")
PY
)
if [ -z "$line" ]; then
  fail "clusters guide: no two-node torchrun line (torchrun --nnodes 2 ...)"
else
  echo "# clusters guide: $line"
  on_both readme 300 sh -c "$line"
  if [ "$rc_a" -eq 0 ] && [ "$rc_b" -eq 0 ] && cat readme.a.out readme.b.out | grep -q "# Out of bounds values : 0 OK" &&
     cat readme.a.out readme.b.out | grep -q "4 ranks (2N/4R)"; then
    ok "clusters guide: two-node torchrun comm on node0 + node1 (${took}s): 2N/4R, 0 wrong"
  else
    fail "clusters guide two-node torchrun line: rc $rc_a/$rc_b"; tail -n 15 readme.a.out readme.b.out
  fi
fi

# 2. ddp across the hosts under the c10d rendezvous (a fresh rendezvous id).
rdzv=(--nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint node0:29401 --rdzv-id ddp2)
on_both ddp 300 torchrun "${rdzv[@]}" --no-python dtbench ddp -m mlp -b 8 -n 3 -w 1 --reducer ddp --timeout 60s \
  --json ddp.json
hosts=$(json ddp.json '" ".join(sorted(j["env"]["world"]["node_hosts"]))' 2>/dev/null)
if [ "$rc_a" -eq 0 ] && [ "$rc_b" -eq 0 ] && [ "$(json ddp.json 'j["runs"][-1]["label"]')" = 2N/4R ] &&
   [ "$(json ddp.json 'j["env"]["world"]["source"]')" = torchrun ] &&
   [ "$(json ddp.json 'j["complete"]')" = True ] && [ "$hosts" = "node0 node1" ]; then
  ok "ddp under two-node torchrun (${took}s): 2N/4R on $hosts, replicas verified"
else
  fail "ddp under two-node torchrun: rc $rc_a/$rc_b"; tail -n 15 ddp.a.out ddp.b.out
fi

# 3. A worker killed on node1 mid-run: both agents end the job, the rank is
# named, nothing is left on either host.
rdzv=(--nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint node0:29402 --rdzv-id kill2)
on_both kill 150 torchrun "${rdzv[@]}" --no-python bash -c \
  'dtbench comm -b 8 -e 8 -n 1000000 --timeout 20s & pid=$!; if [ "$RANK" = 3 ]; then sleep 4; kill -9 $pid; fi; wait $pid'
if [ "$rc_a" -ne 0 ] && [ "$rc_b" -ne 0 ] && [ "$rc_a" -ne 124 ] && [ "$rc_b" -ne 124 ] && [ "$took" -lt 90 ] &&
   cat kill.a.out kill.b.out | grep -Eq "rank +: 3 |rank 3"; then
  ok "killed worker (rank 3 on node1): torchrun exit $rc_a/$rc_b after ${took}s, rank 3 named"
else
  fail "killed worker: rc $rc_a/$rc_b after ${took}s"; tail -n 20 kill.a.out kill.b.out
fi
sleep 2
if [ -n "$(left)" ]; then fail "dtbench processes left: $(left)"; else ok "no process left on either host"; fi
finish
