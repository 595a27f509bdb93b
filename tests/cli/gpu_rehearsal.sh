#!/usr/bin/env bash
# The GPU run rehearsed on the CPU (ctest gpu_rehearsal, label gpu-rehearsal,
# wheel flavour: its peers need torch 2.11's FSDP2), so that the script a
# lent GPU gets cannot rot: bench/gpu/pack.sh packs this build, and
# bench/gpu/run.py --device cpu runs every part's steps through the bundle at
# tiny sizes (gloo), against the peers' torch as on the GPU machine. Checks:
# the dry run names every part with its budget; the run exits 0 with every
# part ok; what comes back fits the device tool (at most 8 files of at most
# 16 MiB, plain names); each part's figures are there; the Python DDP
# profile holds DDP's collectives; a part cut by its budget leaves the
# others' results, names itself and fails the run; bad usage is one line.
#   gpu_rehearsal.sh BUILD_DIR
set -u
build=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/check_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run=$repo/bench/gpu/run.py

if bash "$repo/bench/gpu/pack.sh" "$build" "$tmp/bundle" >"$tmp/pack.log" 2>&1; then
  ok "pack.sh: $(tail -1 "$tmp/pack.log")"
else
  fail "pack.sh"; cat "$tmp/pack.log"; finish; exit 1
fi
[ -x "$tmp/bundle/bin/dtbench-torch" ] && [ -f "$tmp/bundle/lib/libmpi.so.40" ] &&
  ok "the bundle holds both executables and Open MPI" || fail "bundle contents: $(cd "$tmp/bundle" && find .)"

# The dry run: every part, its budget, its commands; nothing runs.
"$run" --dry-run --dtbench "$tmp/bundle/bin/dtbench" >"$tmp/dry" 2>&1
for p in preflight seed strategies horovod comm gpu_tests profile; do
  grep -Eq "^## $p: .*\(budget [0-9]+ s\)" "$tmp/dry" && ok "dry run lists $p" || fail "dry run lacks $p"
done
grep -q "torch_sharded.py --strategy fsdp" "$tmp/dry" && grep -q -- "--reducer zero2" "$tmp/dry" &&
  grep -q -- "--backend nccl .*--cuda-graph 20" "$tmp/dry" &&
  ok "dry run shows the commands" || fail "dry run commands"

# The rehearsal.
start=$(date +%s)
timeout 900 "$run" --device cpu --dtbench "$tmp/bundle/bin/dtbench" --out "$tmp/out" >"$tmp/run.log" 2>&1
rc=$?
echo "# rehearsal: exit $rc in $(($(date +%s) - start)) s"
[ "$rc" -eq 0 ] && ok "run.py --device cpu exits 0" || { fail "run.py --device cpu -> exit $rc"; tail -40 "$tmp/run.log"; }
n=$(find "$tmp/out" -type f | wc -l)
big=$(find "$tmp/out" -type f -size +16M | wc -l)
odd=$(find "$tmp/out" -type f -printf '%f\n' | grep -cv '^[A-Za-z0-9._-]*$')
[ "$n" -le 8 ] && [ "$big" -eq 0 ] && [ "$odd" -eq 0 ] && [ -z "$(find "$tmp/out" -mindepth 1 -type d)" ] &&
  ok "what comes back: $n files, none over 16 MiB, plain names" || fail "out: $n files, $big big, $odd odd names"
for f in summary.md results.json env.json logs.tar.gz ddp_profile.json.gz ddp_et.json.gz profiles.tar.gz \
         dtbench_trace.json.gz; do
  [ -s "$tmp/out/$f" ] && ok "out/$f" || fail "out/$f missing"
done
r=$tmp/out/results.json
for p in preflight seed strategies horovod comm gpu_tests profile; do
  st=$(json "$r" "j['parts']['$p']['status']" 2>/dev/null)
  [ "$st" = ok ] && ok "part $p ok" || fail "part $p: $st $(json "$r" "j['parts']['$p']['detail']" 2>/dev/null)"
done
# Every round of every model on both sides, every strategy and its peer.
[ "$(json "$r" "sum(1 for k in j['results']['seed'] if k.endswith('.dtbench') or k.endswith('.python'))")" = 4 ] &&
  ok "seed: 1 model x 2 rounds x 2 sides" || fail "seed results: $(json "$r" "list(j['results']['seed'])")"
[ "$(json "$r" "j['results']['seed']['resnet50.r1.python']['no_ddp']['p50'] > 0")" = True ] &&
  ok "the Python peer timed its no-DDP run too (--baseline)" || fail "no no_ddp in the peer's line"
[ "$(json "$r" "sorted(k for k in j['results']['strategies'])")" = \
  "['ddp.dtbench', 'ddp.dtbench.profile', 'ddp.torch', 'ddp.torch.profile', 'fsdp.dtbench', 'fsdp.torch', 'horovod.dtbench', 'none.torch', 'overlap.dtbench', 'zero1.dtbench', 'zero1.torch', 'zero2.dtbench']" ] &&
  ok "strategies: six dtbench runs beside DDP, ZeRO, FSDP2, PyTorch without a wrapper, both profiled" ||
  fail "strategies: $(json "$r" "sorted(j['results']['strategies'])")"
# Where the time goes: dtbench's no-ddp and ddp rows and the peer's two runs, phase by phase.
[ "$(json "$r" "all(j['results']['strategies'][k]['phase_p50_s']['forward'] > 0 for k in ('none.torch', 'ddp.torch')) and all(j['results']['strategies']['ddp.dtbench'][row]['phases']['backward'] > 0 for row in ('no ddp', '1N/1R'))")" = True ] &&
  grep -q '^| PyTorch, no wrapper | ' "$tmp/out/summary.md" &&
  ok "strategies: phases of four runs (dtbench no ddp and ddp, PyTorch none and DDP)" || fail "strategies: phase table"
# dtbench's --torch-profiler beside torch.profiler: both traces marked by iteration.
[ "$(json "$r" "[j['results']['strategies'][k]['steps'] for k in ('ddp.dtbench.profile', 'ddp.torch.profile')]")" = \
  "[['ProfilerStep#0', 'ProfilerStep#1'], ['ProfilerStep#0', 'ProfilerStep#1']]" ] &&
  [ "$(json "$r" "j['results']['strategies']['ddp.dtbench.profile']['distributed']['rank']")" = 0 ] &&
  tar tzf "$tmp/out/profiles.tar.gz" | sort | tr '\n' ' ' | grep -q '^gpt_dtbench_profile.1N-1R.json gpt_peer_profile.json $' &&
  ok "GPT-2 profiled on both sides (dtbench --torch-profiler, torch.profiler)" ||
  fail "profiles: $(json "$r" "j['results']['strategies'].get('ddp.dtbench.profile')") $(tar tzf "$tmp/out/profiles.tar.gz")"
[ "$(json "$r" "len(j['results']['horovod'])")" = 6 ] && ok "horovod: six variants" || fail "horovod variants"
[ "$(json "$r" "sorted(k for k in j['results']['comm'] if k.startswith('dtype.'))")" = "['dtype.int64', 'dtype.int8', 'dtype.uint8']" ] &&
  ok "comm: int8, uint8 and int64, every row checked" || fail "comm dtypes: $(json "$r" "list(j['results']['comm'])")"
[ "$(json "$r" "j['results']['comm']['comm']['backend']")" = gloo ] &&
  [ "$(json "$r" "j['results']['comm']['copy'][0]['copy_gbs'] > 0")" = True ] &&
  ok "comm beside the copy ceiling" || fail "comm results"
[ "$(json "$r" "j['results']['comm']['compute']['rows'][0]['slowdown'] > 0 and j['results']['comm']['compute']['rows'][0]['gemm_us_alone'] > 0 and j['results']['comm']['compute']['memory'][0]['peak_bytes'] > 0")" = True ] &&
  ok "comm beside GEMMs, with the allocator's peak" || fail "comm --with-compute results"
grep -q "gpu_cli: skipped (.*no CUDA GPU visible" "$tmp/out/summary.md" &&
  ok "gpu_cli skipped with its reason on the CPU" || fail "gpu_cli line: $(grep gpu_cli "$tmp/out/summary.md")"
# (record_param_comms is NCCL's: the GPU run requires it; gloo records none.)
gzip -dc "$tmp/out/ddp_profile.json.gz" | grep -q '"c10d::allreduce_"' &&
  ok "the Python DDP profile holds DDP's allreduce" || fail "no c10d::allreduce_ in the profile"
[ "$(json "$r" "j['results']['profile']['python-ddp']['execution_trace']['schema'].startswith('1.')")" = True ] &&
  gzip -dc "$tmp/out/ddp_et.json.gz" | grep -q '"c10d::allreduce_"' &&
  ok "its execution trace (Chakra) holds the allreduce" || fail "execution trace: $(json "$r" "j['results']['profile'].get('python-ddp')")"
grep -q '^| resnet50 | 2 | ' "$tmp/out/summary.md" && grep -q '^| fsdp | ' "$tmp/out/summary.md" &&
  ok "summary.md holds the tables" || fail "summary tables"

# A part cut by its budget: named, the other parts' results kept, exit 1.
timeout 300 "$run" --device cpu --dtbench "$tmp/bundle/bin/dtbench" --out "$tmp/cut" --only seed,comm \
  --part-budget seed=3 >"$tmp/cut.log" 2>&1
rc=$?
[ "$rc" -eq 1 ] && [ "$(json "$tmp/cut/results.json" "j['parts']['seed']['status']")" = cut ] &&
  [ "$(json "$tmp/cut/results.json" "j['parts']['comm']['status']")" = ok ] &&
  grep -q "## seed: .*\*\*cut\*\*" "$tmp/cut/summary.md" &&
  ok "a cut part is named, the next part still runs, exit 1" || { fail "cut run -> exit $rc"; tail -20 "$tmp/cut.log"; }
# The cut command's whole process group went with it (launcher, rank, peer).
sleep 1
left=$(pgrep -f "$tmp/bundle/bin/dtbench" | wc -l)
[ "$left" -eq 0 ] && ok "nothing of the cut command is left running" ||
  { fail "$left process(es) of the cut command still run"; pgrep -af "$tmp/bundle/bin/dtbench"; }

# Bad usage: one line, exit 2.
for args in "--only nosuch" "--part-budget seed=x" "--out $tmp/x --dtbench $tmp/nosuch" \
            "--out $tmp/x --device cpu --dtbench $tmp/bundle/bin/dtbench --python $tmp/nosuch"; do
  # shellcheck disable=SC2086
  timeout 60 "$run" $args >"$tmp/o" 2>"$tmp/e"; rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && [ ! -s "$tmp/o" ] &&
    ok "run.py $args -> $(cat "$tmp/e")" || fail "run.py $args -> exit $rc: $(head -3 "$tmp/e")"
done
finish
