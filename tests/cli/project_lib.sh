# Sourced by project_cli.sh and project_sharded_cli.sh (DT = the dtbench
# binary, run in a scratch directory):
#   check NAME STATUS DETAIL   count one result (STATUS 0 = pass; DETAIL on failure)
#   expect_bad NAME -m TEXT ARGS...
#                              `dtbench project ARGS --json bad.json` must exit 2 with
#                              one line on stderr holding TEXT (what is at fault)
#                              and no report written
fails=0; passes=0
check() {
  if [ "$2" -eq 0 ]; then echo "ok: $1"; passes=$((passes + 1));
  else echo "FAIL: $1: $3"; fails=$((fails + 1)); fi
}
expect_bad() {
  local name=$1 want=$3
  [ "$2" = -m ] || { check "bad input: $name: expect_bad needs -m TEXT" 1 ""; return; }
  shift 3
  rm -f bad.json
  timeout 60 "$DT" project "$@" --json bad.json >bad.out 2>bad.err
  local rc=$? lines; lines=$(wc -l <bad.err)
  [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -e bad.json ] && grep -qF -- "$want" bad.err
  # The status first: the command substitution in the message would reset $?
  # (and the check would pass whatever the exit, the lines or the report).
  local st=$?
  check "bad input: $name (exit $rc: $(head -c 160 bad.err))" $st "wanted '$want': $(cat bad.err)"
}
