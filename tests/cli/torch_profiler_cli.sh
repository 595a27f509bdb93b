#!/usr/bin/env bash
# `--torch-profiler` (ctest torch_profiler_cli, both flavours): in the wheel
# flavour the guide's command (docs/guide/traces-and-reports.md) writes one
# Kineto trace per rank of its row, each marked ProfilerStep#0 and #1 with
# its rank in distributedInfo and the model's matrix products among its ops;
# the untraced iterations stay out. Debian's LibTorch 1.13 has no Kineto: one
# line, exit 2, before any rank starts. Both: with --trace, one line, exit 2.
#   torch_profiler_cli.sh DTBENCH FLAVOUR(debian|wheel)
set -u
dt=$1
flavour=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
cmd=(train --model gpt2 --layers 2 --width 64 --heads 2 --vocab 256 --seq-len 16 --batch-size 2 --world-sizes 2
     --no-baseline --iters 3 --trace-iters 2 --torch-profiler prof.json)

"$dt" "${cmd[@]}" >out 2>err
rc=$?
if [ "$flavour" = wheel ]; then
  [ "$rc" -eq 0 ] && ok "the guide's command exits 0" || { fail "exit $rc"; tail -5 err; }
  grep -q "torch profiler traces prof.1N-2R.rank0.json ... prof.1N-2R.rank1.json" err &&
    ok "the console names the files" ||
    fail "no console line: $(grep -i profil err)"
  for r in 0 1; do
    f=prof.1N-2R.rank$r.json
    got=$(python3 - "$f" <<'EOF' 2>&1
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
steps = sorted(e["name"] for e in ev if str(e.get("name", "")).startswith("ProfilerStep#"))
mm = sum(1 for e in ev if e.get("cat") == "cpu_op" and e.get("name") in ("aten::addmm", "aten::mm", "aten::matmul"))
d = t.get("distributedInfo", {})
print(steps, d.get("rank"), d.get("world_size"), d.get("backend"), mm > 0)
EOF
)
    [ "$got" = "['ProfilerStep#0', 'ProfilerStep#1'] $r 2 gloo True" ] &&
      ok "rank $r: $f holds two steps, its rank, the matrix products" || fail "rank $r: $f: $got"
  done
  [ "$(ls prof* | tr '\n' ' ')" = "prof.1N-2R.rank0.json prof.1N-2R.rank1.json " ] &&
    ok "no other file (no probe left behind)" || fail "files: $(ls prof*)"
else
  [ "$rc" -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "without Kineto" err &&
    ok "Debian's LibTorch: $(cat err)" || { fail "debian: exit $rc: $(head -3 err)"; }
  [ -z "$(ls prof* 2>/dev/null)" ] && ok "no file left behind" || fail "files: $(ls prof*)"
fi
"$dt" "${cmd[@]}" --trace t.json >out 2>err
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "choose one" err &&
  ok "with --trace: $(cat err)" || fail "with --trace: exit $rc: $(head -3 err)"
finish
