#!/usr/bin/env bash
# Malformed inputs to the JSON readers (`diff`, `report`, `compare --resume`,
# `ddp --resume`): truncated, wrong types, wrong schema or version, huge
# numbers, empty files, directories, unreadable files, binary garbage, deep
# nesting. Each must give exactly one line on stderr, nothing on stdout,
# exit 2, and leave every file it was given or asked to write unchanged.
# Fuzzer findings (tests/fuzz/regressions) run here too.
# Usage: bad_input.sh path/to/dtbench
set -u
DTBENCH=$(readlink -f "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
fails=0; passes=0
fx=$(mktemp -d)   # the inputs and outputs under test
io=$(mktemp -d)   # dtbench's stdout/stderr, outside what is checksummed
trap 'chmod -R u+rwx "$fx" 2>/dev/null; rm -rf "$fx" "$io"' EXIT
cd "$fx" || exit 1

# Real reports to start from, made by this dtbench.
train=(--width 16 --num-classes 4 --batch-size 2 --threads 1 --iters 2 --warmup 0)
"$DTBENCH" ddp --model mlp "${train[@]}" --world-sizes 1 --json ok.json --jsonl ok.jsonl >/dev/null 2>&1 &&
  "$DTBENCH" comm -n 1 -w 0 -b 8 -e 64 --json comm.json >/dev/null 2>&1 &&
  "$DTBENCH" compare "${train[@]}" --models mlp --world-sizes 1 --reducers ddp --bucket-cap-mb 25 \
    --jsonl cmp.jsonl --json cmp.json --no-progress >/dev/null 2>&1 ||
  { echo "FAIL: could not make the fixture reports"; exit 1; }
echo '<html>previous report</html>' >previous.html
echo 'previous,csv' >previous.csv

RUN=()  # a prefix for dtbench (setpriv, to run as another user)
sum_all() { find . -type f -exec md5sum {} + 2>/dev/null | sort; }
# expect_bad NAME DTBENCH-ARGS...: exit 2, one stderr line, no stdout, no file changed.
expect_bad() {
  local name=$1; shift
  local before after rc lines
  before=$(sum_all)
  timeout 30 "${RUN[@]}" "$DTBENCH" "$@" >"$io/out" 2>"$io/err"
  rc=$?
  lines=$(wc -l <"$io/err")
  local out_size; out_size=$(stat -c %s "$io/out")
  rm -f "$io/out"
  mv "$io/err" "$io/err.last"
  after=$(sum_all)
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || [ "$out_size" -ne 0 ] || [ "$before" != "$after" ]; then
    echo "FAIL: $name: dtbench $* -> exit $rc, $lines stderr line(s), $out_size B stdout$([ "$before" != "$after" ] && echo ', files changed')"
    cat -v "$io/err.last" | sed 's/^/    /' | head -5
    fails=$((fails + 1))
  else
    echo "ok: $name -> $(cat -v "$io/err.last")"
    passes=$((passes + 1))
  fi
  rm -f "$io/err.last"
}
# Python one-liners that derive a malformed file from a good one.
mutate() {  # mutate SRC DST PYTHON-EXPR-ON-d
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d))
EOF
}

# ---- files that are not JSON reports at all ----
: >empty.json
printf ' \n\t\n' >blank.json
head -c 300 ok.json >truncated.json
printf '"just a string"' >string.json
printf '[1, 2, 3]' >array.json
cp ok.json trailing.json; printf '}garbage' >>trailing.json
head -c 512 /dev/urandom >binary.json
printf '{"schema": "dtbench.ddp", "x": "\xff\xfe"}' >badutf8.json
python3 -c "print('[' * 200000 + ']' * 200000)" >deep.json
python3 -c "print('{\"schema\":' * 100000 + '1' + '}' * 100000)" >deepobj.json
mkdir adir
ln -s nowhere.json dangling.json

# ---- reports with the wrong schema, version or field types ----
mutate ok.json v2.json "d['schema_version'] = 3"
mutate ok.json vstr.json "d['schema_version'] = '1'"
mutate ok.json noschema.json "del d['schema']"
mutate ok.json foreign.json "d['schema'] = 'someone.else'"
mutate ok.json runs_obj.json "d['runs'] = {}"
mutate ok.json ws_str.json "d['runs'][0]['world_size'] = 'two'"
mutate ok.json ws_huge.json "d['runs'][0]['world_size'] = 1e308"
mutate ok.json ws_neg.json "d['runs'][0]['world_size'] = -4"
mutate ok.json batch_big.json "d['runs'][0]['batch_per_rank'] = 10**30"
mutate ok.json sample_str.json "d['runs'][0]['ranks'][0]['total'][0] = 'fast'"
mutate ok.json sample_neg.json "d['runs'][0]['ranks'][0]['total'][0] = -1.0"
mutate ok.json ranks_null.json "d['runs'][0]['ranks'] = None"
mutate ok.json label_num.json "d['runs'][0]['label'] = 7"
mutate ok.json config_arr.json "d['config'] = [1]"
printf '{"schema": "dtbench.ddp", "schema_version": 1, "runs": [], "big": 1e400}' >overflow.json
mutate comm.json comm_results_null.json "d['results'] = None"
mutate comm.json comm_bytes_str.json "d['results'][0]['size'] = 'many'"
mutate comm.json comm_time_str.json "d['results'][0]['in_place']['time'] = 'slow'"
mutate comm.json comm_v0.json "d['schema_version'] = 0"
mutate cmp.json cmp_points_str.json "d['points'] = 'none'"
mutate cmp.json cmp_key_num.json "d['points'][0]['key'] = 5"
# compare / ddp logs
sed '1s/dtbench.compare/dtbench.other/' cmp.jsonl >log_foreign.jsonl
sed -E '1s/"schema_version":[0-9]+/"schema_version":7/' cmp.jsonl >log_v7.jsonl
{ head -n 1 cmp.jsonl; echo '{"key": {"model": "mlp"'; tail -n 1 cmp.jsonl; } >log_midcut.jsonl
{ head -n 1 cmp.jsonl; echo '[]'; } >log_arrayline.jsonl
head -c 40 cmp.jsonl >log_cuthead.jsonl

cp ok.json unreadable.json

# ---- diff ----
for f in empty blank truncated string array trailing binary badutf8 deep deepobj v2 vstr noschema \
         foreign runs_obj ws_str ws_huge ws_neg batch_big sample_str sample_neg ranks_null label_num \
         overflow comm_results_null; do
  expect_bad "diff $f" diff "$f.json" ok.json
done
expect_bad "diff a directory" diff adir ok.json
expect_bad "diff a dangling link" diff ok.json dangling.json
expect_bad "diff a missing file" diff ok.json missing.json
expect_bad "diff a comm report" diff ok.json comm.json
if [ "$(id -u)" -ne 0 ]; then
  chmod 000 unreadable.json
  expect_bad "diff an unreadable file" diff unreadable.json ok.json
elif setpriv --reuid 65534 --regid 65534 --clear-groups test -x "$DTBENCH" 2>/dev/null; then
  # root reads any file: the unreadable case runs as nobody.
  chmod 755 "$fx"; find . -type f -exec chmod 644 {} +; chmod 000 unreadable.json
  RUN=(setpriv --reuid 65534 --regid 65534 --clear-groups)
  expect_bad "diff an unreadable file (as nobody)" diff unreadable.json ok.json
  RUN=()
else
  echo "note: unreadable-file case left out (root, and nobody cannot run $DTBENCH)"
fi

# ---- report (an existing HTML/CSV must survive a bad input) ----
for f in empty truncated binary deep v2 foreign runs_obj ws_str sample_str comm_results_null \
         comm_bytes_str comm_time_str comm_v0 cmp_points_str cmp_key_num; do
  expect_bad "report $f" report ok.json "$f.json" -o previous.html --csv previous.csv
done
for f in log_foreign log_v7 log_midcut log_arrayline log_cuthead; do
  expect_bad "report $f" report "$f.jsonl" -o previous.html
done
expect_bad "report a directory" report adir -o previous.html

# ---- --resume (the log must not be touched) ----
cgrid=(--models mlp "${train[@]}" --world-sizes 1 --reducers ddp --bucket-cap-mb 25 --no-progress)
for f in log_foreign log_v7 log_midcut log_arrayline log_cuthead; do
  expect_bad "compare --resume $f" compare "${cgrid[@]}" --resume "$f.jsonl"
done
expect_bad "compare --resume empty" compare "${cgrid[@]}" --resume empty.json
expect_bad "compare --resume a report, not a log" compare "${cgrid[@]}" --resume cmp.json
expect_bad "compare --resume a directory" compare "${cgrid[@]}" --resume adir
expect_bad "compare --resume binary" compare "${cgrid[@]}" --resume binary.json
expect_bad "ddp --resume another sweep's log" ddp --model mlp "${train[@]}" --world-sizes 1 --resume cmp.jsonl
expect_bad "ddp --resume a cut header" ddp --model mlp "${train[@]}" --world-sizes 1 --resume log_cuthead.jsonl
expect_bad "ddp --jsonl over an existing log" ddp --model mlp "${train[@]}" --world-sizes 1 --jsonl ok.jsonl

# ---- fuzzer findings kept as regression inputs ----
for f in "$HERE"/../fuzz/regressions/*; do
  [ -f "$f" ] || continue
  cp "$f" "regression.json"
  expect_bad "regression $(basename "$f") (diff)" diff regression.json ok.json
  expect_bad "regression $(basename "$f") (report)" report regression.json -o previous.html
  rm -f regression.json
done

echo "$passes passed, $fails failed"
[ "$fails" -eq 0 ] && [ "$passes" -ge 30 ]
