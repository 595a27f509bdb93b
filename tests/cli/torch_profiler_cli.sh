#!/usr/bin/env bash
# `--torch-profiler` (ctest torch_profiler_cli, both flavours): in the wheel
# flavour the guide's command (docs/guide/traces-and-reports.md) writes one
# Kineto trace per rank of its row, each marked ProfilerStep#0 and #1 with
# its rank in distributedInfo and the model's matrix products among its ops;
# every op of the training thread lies inside a step. Debian's LibTorch 1.13
# has no Kineto: one line, exit 2, before any rank starts. Both: with
# --trace, or a .gz name, one line, exit 2.
#   torch_profiler_cli.sh DTBENCH FLAVOUR(debian|wheel)
set -u
dt=$1
flavour=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
base=(train --model gpt2 --layers 2 --width 64 --heads 2 --vocab 256 --seq-len 16 --batch-size 2 --world-sizes 2
      --no-baseline --iters 3 --trace-iters 2)
cmd=("${base[@]}" --torch-profiler prof.json)

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
marks = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")]
steps = sorted(e["name"] for e in marks)
ops = [e for e in ev if e.get("cat") == "cpu_op"]
mm = sum(1 for e in ops if e.get("name") in ("aten::addmm", "aten::mm", "aten::matmul"))
# Every op of the training thread inside an iteration's mark: the trace is
# the marked iterations, nothing before or after.
tid = marks[0]["tid"] if marks else None
spans = [(m["ts"], m["ts"] + m["dur"]) for m in marks]
inside = all(any(a <= e["ts"] and e["ts"] + e.get("dur", 0) <= b + 1 for a, b in spans)
             for e in ops if e.get("tid") == tid)
d = t.get("distributedInfo", {})
print(steps, d.get("rank"), d.get("world_size"), d.get("backend"), mm > 0, inside)
EOF
)
    [ "$got" = "['ProfilerStep#0', 'ProfilerStep#1'] $r 2 gloo True True" ] &&
      ok "rank $r: $f holds two steps, its rank, the matrix products, every op inside a step" ||
      fail "rank $r: $f: $got"
  done
  [ "$(ls prof* | tr '\n' ' ')" = "prof.1N-2R.rank0.json prof.1N-2R.rank1.json " ] &&
    ok "no other file (no probe left behind)" || fail "files: $(ls prof*)"
else
  [ "$rc" -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "no Kineto" err &&
    ok "Debian's LibTorch: $(cat err)" || { fail "debian: exit $rc: $(head -3 err)"; }
  [ -z "$(ls prof* 2>/dev/null)" ] && ok "no file left behind" || fail "files: $(ls prof*)"
fi
"$dt" "${base[@]}" --torch-profiler p.json.gz >out 2>err
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "plain JSON" err &&
  ok "a .gz name: $(cat err)" || fail "a .gz name: exit $rc: $(head -3 err)"
"$dt" "${cmd[@]}" --trace t.json >out 2>err
rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "choose one" err &&
  ok "with --trace: $(cat err)" || fail "with --trace: exit $rc: $(head -3 err)"
finish
