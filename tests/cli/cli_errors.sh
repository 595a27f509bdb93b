#!/usr/bin/env bash
# Bad command lines: each must print exactly one line on stderr, nothing on
# stdout, and exit 2. Usage: cli_errors.sh path/to/dtbench
set -u
DTBENCH=$1
fails=0; passes=0
expect_usage_error() {
  local out err rc
  out=$(mktemp); err=$(mktemp)
  timeout 30 "$DTBENCH" "$@" >"$out" 2>"$err"
  rc=$?
  local lines; lines=$(wc -l <"$err")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [ -s "$out" ]; then
    echo "FAIL: dtbench $* -> exit $rc, $lines stderr line(s)"; sed 's/^/    /' "$err" | head -5
    fails=$((fails + 1))
  else
    echo "ok: dtbench $* -> $(cat "$err")"
    passes=$((passes + 1))
  fi
  rm -f "$out" "$err"
}

expect_usage_error
expect_usage_error frobnicate
expect_usage_error comm --no-such-flag
expect_usage_error comm -b -5
expect_usage_error comm -b 1M -e 1K
expect_usage_error comm -b 12Q
expect_usage_error comm -f 1
expect_usage_error comm -f abc
expect_usage_error comm -n 0
expect_usage_error comm -n -3
expect_usage_error comm -w -1
expect_usage_error comm -c 2
expect_usage_error comm -d float8
expect_usage_error comm -o xor
expect_usage_error comm --collective gather
expect_usage_error comm --collective allreduce,,broadcast
expect_usage_error comm --backend carrier-pigeon
expect_usage_error comm --backend nccl
expect_usage_error comm --nproc 0
expect_usage_error comm --timeout 0
expect_usage_error comm --timeout -5s
expect_usage_error comm --timeout 10parsecs
expect_usage_error comm --placement sideways
expect_usage_error comm -r 3
expect_usage_error comm --nproc 2 -r 2
expect_usage_error comm -e 1M -b 1K -i 1 -n 1
expect_usage_error launch --nproc-per-node 2
expect_usage_error launch --nproc-per-node 0 -- true
expect_usage_error launch --nnodes 2 --node-rank 5 -- true
expect_usage_error launch --nnodes 2 -- true
expect_usage_error launch --master-port 70000 -- true
expect_usage_error launch --grace never -- true
expect_usage_error comm -n 1 -b 8 -e 8 --iface nosuchif0
expect_usage_error comm -n 1 -b 8 -e 8 --json /nonexistent-dir/r.json
expect_usage_error comm -n 1 -b 8 -e 8 --json /tmp
expect_usage_error env --json /nonexistent-dir/env.json
expect_usage_error models --json /nonexistent-dir/models.json
expect_usage_error env --bogus
expect_usage_error models --bogus
# A malformed environment is a usage error too.
RANK=1 WORLD_SIZE=1 expect_usage_error comm -n 1 -b 8 -e 8
RANK=0 WORLD_SIZE=2 MASTER_PORT=abc expect_usage_error comm -n 1 -b 8 -e 8

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
