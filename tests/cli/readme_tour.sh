#!/usr/bin/env bash
# The README's tour, as written: every `dtbench ...` line of its "A short
# tour" section (backslash continuations joined, trailing comments cut) runs
# in order in one directory, with `dtbench` the binary under test, and must
# exit 0; the lines each block's output excerpt starts with must appear in
# what the command printed. A command added to the tour is tested here
# without touching this file.
# Usage: readme_tour.sh path/to/dtbench path/to/README.md
set -u
DTBENCH=$(readlink -f "$1")
README=$(readlink -f "$2")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir "$work/bin" && ln -s "$DTBENCH" "$work/bin/dtbench"
export PATH="$work/bin:$PATH"
cd "$work"
# One line per command, TAB-separated: its block's number, the command, and
# the start of the first line of the output excerpt that follows the block
# (which one of the block's commands printed it).
python3 - "$README" >commands.tsv <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text.split("## A short tour", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
for i, (lang, body) in enumerate(blocks):
    if lang != "sh":
        continue
    cmds, cur = [], ""
    for line in body.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cur += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            cmds.append(re.sub(r"\s+#\s.*$", "", cur).strip())
            cur = ""
    expect = ""
    if i + 1 < len(blocks) and blocks[i + 1][0] == "":
        first = next((l for l in blocks[i + 1][1].splitlines() if l.strip() and l.strip() != "..."), "")
        # The line with its spacing collapsed, up to its first number (the
        # figures differ from run to run; the words and headers do not).
        line = " ".join(first.strip().lstrip("#").split())
        expect = re.split(r"(?:^|[\s(±])[-+]?\d", line)[0].strip()
    for c in cmds:
        print(f"{i}\t{c}\t{expect}")
PY
n=$(wc -l <commands.tsv)
[ "$n" -ge 8 ] || { echo "FAIL: the README's tour has $n command(s), expected 8 or more"; exit 1; }
fails=0; i=0
last_block=""
check_block() {  # the excerpt of the block just run, in what its commands printed
  [ -z "$last_block" ] || [ -z "$last_expect" ] && return
  # Spacing collapsed in the outputs too.
  cat out.b"$last_block".* | tr -s ' \t' ' ' | sed 's/^[# ]*//' | grep -qF -- "$last_expect" && return
  echo "FAIL: the README's excerpt after block $last_block ('$last_expect') is in none of its outputs"
  fails=$((fails + 1))
}
while IFS=$'\t' read -r block cmd expect; do
  [ "$block" != "$last_block" ] && check_block
  last_block=$block; last_expect=$expect
  i=$((i + 1))
  start=$(date +%s.%N)
  bash -c "$cmd" >"out.b$block.$i" 2>&1 </dev/null
  rc=$?
  took=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
  if [ "$rc" -ne 0 ]; then
    echo "FAIL: exit $rc: $cmd"; tail -5 "out.b$block.$i"; fails=$((fails + 1))
  else
    echo "ok (${took}s): $cmd"
  fi
done <commands.tsv
check_block
echo "$((n - fails)) command(s) and excerpts checked, $fails failed"
[ "$fails" -eq 0 ]
