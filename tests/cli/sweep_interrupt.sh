#!/usr/bin/env bash
# Sweeps interrupted by a signal keep what they finished: `ddp --world-sizes`
# stopped by SIGINT and `compare` by SIGTERM, each in the middle of a point.
# The finished points must be in the JSON-lines log, the report written so
# far must be valid JSON marked incomplete, no worker may be left, and
# `--resume` must run only the rest and complete the report.
# Usage: sweep_interrupt.sh path/to/dtbench
set -u
DTBENCH=$(readlink -f "$1")
fails=0; passes=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() {  # check NAME STATUS DETAIL
  if [ "$2" -eq 0 ]; then echo "ok: $1"; passes=$((passes + 1));
  else echo "FAIL: $1: $3"; fails=$((fails + 1)); fi
}
lines() { [ -f "$1" ] && wc -l <"$1" || echo 0; }
# wait_lines FILE N: until FILE has N lines (60 s at most).
wait_lines() { for _ in $(seq 1 300); do [ "$(lines "$1")" -ge "$2" ] && return 0; sleep 0.2; done; return 1; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }
valid_jsonl() { python3 -c "import json,sys; [json.loads(l) for l in open(sys.argv[1])]" "$1"; }
workers_of() { pgrep -f -- "--run-json $tmp/" | wc -l; }

train=(--model mlp --width 256 --num-classes 10 --batch-size 8 --threads 1 --warmup 1)

# 1. ddp sweep: rows "no ddp", 1N/1R, 1N/2R; SIGINT during 1N/2R.
cd "$tmp" || exit 1
"$DTBENCH" ddp "${train[@]}" --iters 1500 --world-sizes 1,2 --jsonl ddp.jsonl --json ddp.json \
  >ddp.out 2>ddp.err &
sweep=$!
wait_lines ddp.jsonl 3  # header + two rows
sleep 1.5
kill -INT "$sweep"
wait "$sweep"; rc=$?
sleep 0.5
[ "$rc" -eq 130 ] && [ "$(workers_of)" -eq 0 ]
check "ddp SIGINT: exit $rc (130), no worker left" $? "$(tail -n 3 ddp.err)"
[ "$(lines ddp.jsonl)" -eq 3 ] && valid_jsonl ddp.jsonl &&
  [ "$(json ddp.json "d['complete']")" = False ] && [ "$(json ddp.json "len(d['runs'])")" = 2 ]
check "ddp SIGINT: 2 finished rows in the log and in a valid, incomplete report" $? \
  "$(lines ddp.jsonl) lines; $(head -c 300 ddp.json)"
grep -q "continue with --resume ddp.jsonl" ddp.err
check "ddp SIGINT: the error says how to continue" $? "$(tail -n 2 ddp.err)"
"$DTBENCH" ddp "${train[@]}" --iters 1500 --world-sizes 1,2 --resume ddp.jsonl --json ddp.json \
  >ddp2.out 2>ddp2.err
rc=$?
[ "$rc" -eq 0 ] && [ "$(json ddp.json "d['complete']")" = True ] &&
  [ "$(json ddp.json "[r['label'] for r in d['runs']]")" = "['no ddp', '1N/1R', '1N/2R']" ] &&
  [ "$(grep -c "already in ddp.jsonl" ddp2.err)" -eq 2 ] && [ "$(lines ddp.jsonl)" -eq 4 ]
check "ddp --resume: runs only 1N/2R, report complete with all 3 rows" $? "rc $rc $(tail -n 3 ddp2.err)"
"$DTBENCH" ddp "${train[@]}" --iters 1499 --world-sizes 1,2 --resume ddp.jsonl >/dev/null 2>ddp3.err
rc=$?
[ "$rc" -eq 2 ] && grep -q "different configuration (iters: 1500 vs 1499)" ddp3.err
check "ddp --resume with other flags: refused, exit 2" $? "rc $rc $(cat ddp3.err)"

# 2. compare: points mlp/1R/ddp and mlp/2R/ddp; SIGTERM during the second.
"$DTBENCH" compare --models mlp --width 256 --num-classes 10 --batch-size 8 --threads 1 --warmup 1 \
  --iters 1500 --world-sizes 1,2 --reducers ddp --bucket-cap-mb 25 --jsonl cmp.jsonl \
  --json cmp.json --no-progress >cmp.out 2>cmp.err &
sweep=$!
wait_lines cmp.jsonl 2  # header + one point
sleep 1.5
kill -TERM "$sweep"
wait "$sweep"; rc=$?
sleep 0.5
[ "$rc" -eq 143 ] && [ "$(workers_of)" -eq 0 ] && [ "$(lines cmp.jsonl)" -eq 2 ] && valid_jsonl cmp.jsonl &&
  [ "$(json cmp.json "d['complete']")" = False ] && [ "$(json cmp.json "len(d['points'])")" = 1 ]
check "compare SIGTERM: exit $rc (143), 1 point in the log and in a valid, incomplete report" $? \
  "$(tail -n 3 cmp.err)"
"$DTBENCH" compare --models mlp --width 256 --num-classes 10 --batch-size 8 --threads 1 --warmup 1 \
  --iters 1500 --world-sizes 1,2 --reducers ddp --bucket-cap-mb 25 --resume cmp.jsonl \
  --json cmp.json --no-progress >cmp2.out 2>cmp2.err
rc=$?
[ "$rc" -eq 0 ] && grep -q "1 already in cmp.jsonl, 1 to run" cmp2.out &&
  [ "$(json cmp.json "d['complete']")" = True ] && [ "$(json cmp.json "len(d['points'])")" = 2 ]
check "compare --resume: runs the one missing point, report complete" $? "rc $rc $(tail -n 3 cmp2.err)"

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ]
