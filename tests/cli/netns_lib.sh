# Sourced by the tests that need two "hosts" on one machine (as root): two
# network namespaces joined by a veth pair, so every byte between them
# crosses a link of the test's own. Each namespace may also get its own host
# name (its own UTS namespace at each entry) and its own /etc/hosts (a bind
# mount of /etc/netns/NAME/hosts in its own mount namespace), so schedulers
# that go by host names (Slurm) see two hosts.
#
#   netns_pair TAG SUBNET [NAME_A NAME_B]
#       makes NS_A/NS_B (namespaces), DEV_A/DEV_B (their link ends) and
#       ADDR_A=SUBNET.1 / ADDR_B=SUBNET.2; with names, HOST_A/HOST_B and an
#       /etc/hosts for both that maps both names. Returns non-zero (with the
#       reason in NETNS_ERROR) where namespaces cannot be made.
#   in_a CMD... / in_b CMD...
#       run CMD inside host A / B (its network namespace; with host names
#       also its own host name and /etc/hosts).
#   netns_cleanup
#       kill everything still running in both namespaces, delete them and
#       their /etc/netns entries. Safe to call more than once.

netns_pair() {
  local tag=$1 subnet=$2
  netns_reap_stale "$tag"
  NS_A=${tag}A$$; NS_B=${tag}B$$
  DEV_A=${tag}a$$; DEV_B=${tag}b$$
  ADDR_A=$subnet.1; ADDR_B=$subnet.2
  HOST_A=${3:-}; HOST_B=${4:-}
  NETNS_ERROR=""
  local err; err=$(mktemp)
  if ! ip netns add "$NS_A" 2>"$err"; then NETNS_ERROR="cannot create a network namespace: $(cat "$err")"; rm -f "$err"; return 1; fi
  rm -f "$err"
  ip netns add "$NS_B" || { NETNS_ERROR="cannot create a second network namespace"; return 1; }
  ip link add "$DEV_A" netns "$NS_A" type veth peer name "$DEV_B" netns "$NS_B" ||
    { NETNS_ERROR="cannot create a veth pair between namespaces"; return 1; }
  ip -n "$NS_A" addr add "$ADDR_A/24" dev "$DEV_A"
  ip -n "$NS_B" addr add "$ADDR_B/24" dev "$DEV_B"
  local ns
  for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
  ip -n "$NS_A" link set "$DEV_A" up
  ip -n "$NS_B" link set "$DEV_B" up
  if [ -n "$HOST_A" ]; then
    for ns in "$NS_A" "$NS_B"; do
      mkdir -p "/etc/netns/$ns"
      printf '127.0.0.1 localhost\n%s %s\n%s %s\n' "$ADDR_A" "$HOST_A" "$ADDR_B" "$HOST_B" >"/etc/netns/$ns/hosts"
    done
  fi
}

# A test that was killed (ctest's timeout kills without running its traps)
# leaves its pair behind, with whatever still runs inside (daemons: slurmd,
# raylets): pairs of this tag whose creating shell (the pid in their name)
# is gone are emptied and removed first.
netns_reap_stale() {  # TAG
  local ns owner
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1[AB][0-9]+$"); do
    owner=${ns#"$1"?}
    kill -0 "$owner" 2>/dev/null && continue
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "/etc/netns/$ns"
  done
}

_in_ns() {  # NS HOSTNAME CMD...
  local ns=$1 name=$2; shift 2
  if [ -n "$name" ]; then
    # Only the network namespace is entered (not `ip netns exec`, which
    # mounts a /sys without the cgroup tree that daemons such as slurmd
    # read), plus a host name and an /etc/hosts of this host's own.
    nsenter --net="/run/netns/$ns" unshare --uts --mount sh -c \
      'hostname "$0" && mount --bind "/etc/netns/$1/hosts" /etc/hosts && shift && exec "$@"' "$name" "$ns" "$@"
  else
    ip netns exec "$ns" "$@"
  fi
}
in_a() { _in_ns "$NS_A" "$HOST_A" "$@"; }
in_b() { _in_ns "$NS_B" "$HOST_B" "$@"; }

netns_cleanup() {
  local ns pids
  for ns in ${NS_A:-} ${NS_B:-}; do
    pids=$(ip netns pids "$ns" 2>/dev/null)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
    rm -rf "/etc/netns/$ns"
  done
  return 0
}
