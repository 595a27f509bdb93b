#!/usr/bin/env bash
# End-to-end `dtbench ddp` and `dtbench diff` with real processes: a world-size
# sweep per reducer written as JSON and checked field by field, 1-rank
# reducers bitwise equal to the no-ddp baseline, the mpi backend, an A/B diff.
# Usage: ddp_cli.sh path/to/dtbench
set -eu
DTBENCH=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
common=(--model mlp --width 32 --num-classes 10 --batch-size 4 --iters 3 --warmup 1 --threads 1
        --timeout 60s)
# refused RC FILE PATTERN [any]: the command exited 2 with one line on stderr
# (FILE; any number of lines with "any") matching PATTERN, or the test ends
# here. (A bare `[ "$rc" -eq 2 ] && grep` cannot fail under set -e: only the
# last command of an && list can end it. tests/cli/lint_checks.py finds them.)
refused() {
  if [ "$1" -eq 2 ] && { [ "${4:-}" = any ] || [ "$(wc -l <"$2")" -eq 1 ]; } && grep -q -- "$3" "$2"; then
    return 0
  fi
  echo "FAIL: expected exit 2 and ${4:-one} line(s) matching '$3'; got exit $1 and:"; cat "$2"; exit 1
}

check_report() {  # file reducer expected-labels...
  python3 - "$@" <<'PY'
import json, sys
path, reducer, labels = sys.argv[1], sys.argv[2], sys.argv[3:]
doc = json.load(open(path))
assert doc["schema"] == "dtbench.ddp" and doc["schema_version"] == 2, doc["schema"]
assert doc["complete"] is True
cfg = doc["config"]
assert cfg["model"] == "mlp" and cfg["reducer"] == reducer and cfg["batch_size"] == 4, cfg
assert cfg["param_elements"] == 1024 * 32 + 32 + 32 * 32 + 32 + 32 * 10 + 10, cfg["param_elements"]
assert "torch" in json.dumps(doc["env"]).lower()
runs = doc["runs"]
assert [r["label"] for r in runs] == labels, [r["label"] for r in runs]
for r in runs:
    assert len(r["ranks"]) == r["world_size"], r["label"]
    # Every row but the baseline ran the strategy asked for, a 1-rank row too.
    assert r["reducer"] == ("none" if r["label"] == "no ddp" else reducer), (r["label"], r["reducer"])
    assert r["global_batch"] == 4 * r["world_size"]
    for k in r["ranks"]:
        for phase in ("forward", "backward", "comm_wait", "optimizer", "total"):
            assert len(k[phase]) == 3 and all(x >= 0 for x in k[phase]), (r["label"], phase)
        assert all(t > 0 for t in k["total"])
    assert r["summary"]["p50"] > 0 and r["extras"]["threads"] == 1 and r["threads"] == 1
    # sec/iter as benchmark.py: every rank's samples pooled (numpy's linear
    # percentile); ex/sec per rank. The slowest rank per iteration apart.
    def pct(xs, p):
        xs = sorted(xs); k = (len(xs) - 1) * p / 100; f = int(k)
        return xs[f] + (xs[min(f + 1, len(xs) - 1)] - xs[f]) * (k - f)
    pooled = [t for k in r["ranks"] for t in k["total"]]
    slowest = [max(c) for c in zip(*[k["total"] for k in r["ranks"]])]
    s, sl = r["summary"], r["slowest_rank_summary"]
    assert s["samples"] == 3 * r["world_size"] and sl["iterations"] == 3, (s, sl)
    for q in (50, 75, 90, 95):
        assert abs(s[f"p{q}"] - pct(pooled, q)) < 1e-12 and abs(sl[f"p{q}"] - pct(slowest, q)) < 1e-12, (q, s, sl)
    assert abs(s["examples_per_sec_per_rank_p50"] - 4 / s["p50"]) < 1e-9, s
    assert abs(sl["job_examples_per_sec_p50"] - 4 * r["world_size"] / sl["p50"]) < 1e-9, sl
    # Training FLOPs counted from layer shapes: 6 x (1024*32 + 32*32 + 32*10) multiply-adds.
    assert r["train_flops_per_example"] == 6 * (1024 * 32 + 32 * 32 + 32 * 10), r["train_flops_per_example"]
    want = 4 * r["train_flops_per_example"] / r["slowest_rank_summary"]["p50"] / 1e12
    assert abs(r["achieved_tflops_per_rank"] - want) <= 1e-9 + 1e-6 * want, (r["achieved_tflops_per_rank"], want)
    assert r["peak_tflops"] == 0 and r["mfu"] == 0
    # Memory: the model state counted from the tensors held is the formula's
    # (8 + 4K) x parameters (SGD with momentum: K = 1; AdamW: 2), and the
    # allocator's peak over the timed iterations holds at least all of it.
    m, k = r["memory"], 2 if cfg["optimizer"] == "adamw" else 1
    assert m["model_state_expected_bytes"] == (8 + 4 * k) * cfg["param_elements"], (m, k)
    assert m["model_state_bytes"] == m["model_state_expected_bytes"], (r["label"], m)
    assert m["peak_bytes"] >= m["model_state_bytes"], (r["label"], m)
    # The process's RSS peak over the timed iterations (VmHWM, reset after
    # warm-up): LibTorch's own pages alone are tens of MiB.
    assert 16 * 2**20 < m["peak_rss_bytes"] < 4 * 2**30, (r["label"], m)
    ms = r["extras"]["model_state"]
    assert ms["params"] == 4 * cfg["param_elements"] and ms["optimizer"] == 4 * k * cfg["param_elements"], ms
# One rank of any reducer averages over one replica: bitwise the baseline.
if labels[0] == "no ddp" and "1N/1R" in labels:
    h = {r["label"]: r["param_hash"] for r in runs}
    assert h["no ddp"] == h["1N/1R"], h
print("ok:", path, [(r["label"], r["summary"]["p50"]) for r in runs])
PY
}

for reducer in ddp overlap sync; do
  "$DTBENCH" ddp "${common[@]}" --reducer "$reducer" --world-sizes 1,2 --json "$work/$reducer.json" \
    >"$work/$reducer.out"
  grep -q "2 ranks --    1N/2R:  p50:" "$work/$reducer.out"
  grep -Eq "^      memory per rank: peak [0-9.]+ MiB of tensors \(process RSS peak [0-9.]+ MiB\), model state [0-9.]+ MiB \(formula [0-9.]+ MiB\)$" \
    "$work/$reducer.out"
  check_report "$work/$reducer.json" "$reducer" "no ddp" 1N/1R 1N/2R
done

# Horovod's tensor fusion: its knobs from Horovod's variables when no flag is
# given (as Horovod users set them), in the config; the same rows and checks
# as every reducer; the flag wins over the variable.
HOROVOD_FUSION_THRESHOLD=65536 HOROVOD_CYCLE_TIME=2 "$DTBENCH" ddp "${common[@]}" --reducer horovod \
  --world-sizes 1,2 --json "$work/horovod.json" >"$work/horovod.out" 2>&1 || { cat "$work/horovod.out"; exit 1; }
check_report "$work/horovod.json" horovod "no ddp" 1N/1R 1N/2R
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['config']
assert c['fusion_threshold_mb'] == 0.0625 and c['cycle_time_ms'] == 2, c" "$work/horovod.json"
HOROVOD_CYCLE_TIME=2 "$DTBENCH" ddp "${common[@]}" --reducer horovod --cycle-time-ms 0.5 --compression fp16 \
  --world-sizes 2 --no-baseline --json "$work/horovod16.json" >/dev/null 2>&1
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['config']
assert c['fusion_threshold_mb'] == 128 and c['cycle_time_ms'] == 0.5 and c['compression'] == 'fp16', c" \
  "$work/horovod16.json"
check_report "$work/horovod16.json" horovod 1N/2R

# The mpi backend through mpirun, with dtbench's own reducer.
"$DTBENCH" ddp "${common[@]}" --backend mpi --reducer overlap --world-sizes 2 --no-baseline \
  --json "$work/mpi.json" >/dev/null
check_report "$work/mpi.json" overlap 1N/2R

# Under an external launcher: one run on the launcher's world.
"$DTBENCH" launch --nproc-per-node 2 -- "$DTBENCH" ddp "${common[@]}" --reducer sync \
  --json "$work/ext.json" >/dev/null
check_report "$work/ext.json" sync 1N/2R

# A/B diff: configuration side by side, a delta per row and percentile.
"$DTBENCH" diff "$work/ddp.json" "$work/overlap.json" --percentiles 50,90 >"$work/diff.out"
grep -q '^\* config.reducer: ddp vs overlap' <(sed 's/^  //' "$work/diff.out")
[ "$(grep -cE '^ +1N/2R +p(50|90) .*% +[0-9.]+ +[0-9.]+$' "$work/diff.out")" -eq 2 ]
grep -q '^Memory per rank, MiB' "$work/diff.out"
grep -Eq '^ +1N/2R +[0-9.]+ +[0-9.]+ +[-+][0-9.]+% ' "$work/diff.out"
# A diff against a different model is refused.
python3 -c "
import json,sys; d=json.load(open('$work/ddp.json')); d['config']['model']='resnet50'
json.dump(d, open('$work/other.json','w'))"
set +e
"$DTBENCH" diff "$work/ddp.json" "$work/other.json" >/dev/null 2>"$work/err"; rc=$?
set -e
refused "$rc" "$work/err" "different models"
# MFU against a given peak: achieved / peak, in the JSON and on the console.
"$DTBENCH" ddp "${common[@]}" --world-sizes 1 --no-baseline --peak-tflops 0.5 \
  --json "$work/mfu.json" >"$work/mfu.out" 2>/dev/null
python3 - "$work/mfu.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
assert r["peak_tflops"] == 0.5 and abs(r["mfu"] - r["achieved_tflops_per_rank"] / 0.5) < 1e-12, r
assert json.load(open(sys.argv[1]))["config"]["peak_tflops"] == 0.5
PY
grep -qE 'GFLOP/example to train: [0-9.]+ TFLOP/s per rank at p50, MFU [0-9.]+% of 0.5 TFLOP/s' "$work/mfu.out"
# --amp fp16 (autocast float16 + the loss scaler): LibTorch >= 2.4 only; 1.13
# refuses it in one line before anything starts. A bare --amp means bf16.
torch_version=$("$DTBENCH" env --as-json | python3 -c 'import json,sys; print(json.load(sys.stdin)["versions"]["libtorch"])')
set +e
"$DTBENCH" ddp "${common[@]}" --world-sizes 1 --reducer ddp --amp fp16 --no-baseline \
  --json "$work/fp16.json" >/dev/null 2>"$work/fp16.err"; rc=$?
set -e
case $torch_version in
  1.*) refused "$rc" "$work/fp16.err" "amp fp16: LibTorch $torch_version's CPU autocast has only bfloat16" ;;
  *) [ "$rc" -eq 0 ] || { cat "$work/fp16.err"; exit 1; }
     python3 - "$work/fp16.json" <<'PY'
import json, math, sys
doc = json.load(open(sys.argv[1]))
assert doc["config"]["amp"] == "fp16", doc["config"]["amp"]
x = doc["runs"][0]["extras"]
# 4 steps (3 + 1 warm-up): at least one taken, and the scale halved once per
# skipped step from 65536 (no growth before 2000 good steps).
assert x["amp"]["dtype"] == "fp16" and 0 <= x["amp"]["skipped_steps"] < 4, x["amp"]
assert x["amp"]["final_scale"] == 65536.0 / 2 ** x["amp"]["skipped_steps"], x["amp"]
assert math.isfinite(x["last_loss"]), x
print("ok: --amp fp16", x["amp"])
PY
     ;;
esac
"$DTBENCH" ddp "${common[@]}" --world-sizes 1 --reducer none --amp --json "$work/bf16.json" >/dev/null 2>&1
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['config']; assert c['amp']=='bf16', c['amp']" "$work/bf16.json"
# The defaults are PyTorch's DDP benchmark's: SGD(lr 0.001, momentum 0.9,
# weight_decay 1e-4), broadcast_buffers=False; --weight-decay reaches SGD's
# workers (another 2-rank result).
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['config']
assert (c['optimizer'], c['lr'], c['momentum'], c['weight_decay']) == ('sgd', 0.001, 0.9, 0.0001), c
assert c['broadcast_buffers'] is False, c" "$work/ddp.json"
"$DTBENCH" ddp "${common[@]}" --weight-decay 0 --reducer ddp --world-sizes 2 --no-baseline \
  --json "$work/sgd-nowd.json" >/dev/null 2>&1
python3 -c "import json,sys; a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b['config']['weight_decay'] == 0, b['config']
ha = [r['param_hash'] for r in a['runs'] if r['label'] == '1N/2R'][0]
assert ha != b['runs'][0]['param_hash'], '--weight-decay did not reach the workers'" "$work/ddp.json" "$work/sgd-nowd.json"
# --broadcast-buffers true reaches the workers: a model with batch norm keeps
# its statistics in step, and the replica check compares them.
for bb in true false; do
  "$DTBENCH" ddp --model resnet18 --image-size 32 --batch-size 2 --iters 1 --warmup 0 --threads 1 --timeout 60s \
    --reducer ddp --world-sizes 2 --no-baseline --broadcast-buffers $bb --json "$work/bb-$bb.json" >/dev/null 2>&1
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); want = sys.argv[2] == 'true'
assert d['config']['broadcast_buffers'] is want and d['runs'][0]['extras']['buffers_compared'] is want, d['config']" \
    "$work/bb-$bb.json" $bb
done
# --optimizer adamw: torch.optim.AdamW's defaults in the config, the 1-rank
# row bitwise the baseline; --lr/--weight-decay reach the workers (another
# 2-rank result).
"$DTBENCH" ddp "${common[@]}" --optimizer adamw --reducer overlap --world-sizes 1,2 \
  --json "$work/adamw.json" >/dev/null 2>&1
check_report "$work/adamw.json" overlap "no ddp" 1N/1R 1N/2R
"$DTBENCH" ddp "${common[@]}" --optimizer adamw --lr 0.002 --weight-decay 0 --reducer overlap \
  --world-sizes 2 --no-baseline --json "$work/adamw2.json" >/dev/null 2>&1
python3 - "$work/adamw.json" "$work/adamw2.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ca, cb = a["config"], b["config"]
assert (ca["optimizer"], ca["lr"], ca["momentum"], ca["weight_decay"]) == ("adamw", 0.001, 0, 0.01), ca
assert (cb["optimizer"], cb["lr"], cb["weight_decay"]) == ("adamw", 0.002, 0), cb
ha = {r["label"]: r["param_hash"] for r in a["runs"]}
hb = {r["label"]: r["param_hash"] for r in b["runs"]}
assert ha["1N/2R"] != hb["1N/2R"], "--lr/--weight-decay did not reach the workers"
print("ok: --optimizer adamw", ca["lr"], ca["weight_decay"], "and", cb["lr"], cb["weight_decay"])
PY
# Sharded strategies on 3 ranks (the MLP's buckets do not divide by 3: padded):
# the model state counted from the tensors held is the ZeRO formula's within
# the padding (zero1 8Ψ + 4KΨ/N, zero2 4Ψ + (4 + 4K)Ψ/N, fsdp (8 + 4K)Ψ/N
# with its units resharded after the step), below the
# replicated (8 + 4K)Ψ; one rank is bitwise the baseline; the replicas'
# full parameters agree (the run's own check) and a row is printed.
for reducer in zero1 zero2 fsdp; do
  "$DTBENCH" ddp "${common[@]}" --optimizer adamw --reducer "$reducer" --world-sizes 1,3 \
    --json "$work/$reducer.json" >"$work/$reducer.out" 2>&1 || { cat "$work/$reducer.out"; exit 1; }
  grep -q "3 ranks --    1N/3R:  p50:" "$work/$reducer.out"
  python3 - "$work/$reducer.json" "$reducer" <<'PY'
import json, sys
doc, reducer = json.load(open(sys.argv[1])), sys.argv[2]
cfg, runs = doc["config"], {r["label"]: r for r in doc["runs"]}
assert cfg["reducer"] == reducer and set(runs) == {"no ddp", "1N/1R", "1N/3R"}, (cfg["reducer"], list(runs))
psi, k = cfg["param_elements"], 2
assert runs["no ddp"]["param_hash"] == runs["1N/1R"]["param_hash"], "one sharded rank differs from the baseline"
for label, n in (("1N/1R", 1), ("1N/3R", 3)):
    m = runs[label]["memory"]
    want = {"zero1": 8 * psi + 4 * k * psi // n, "zero2": 4 * psi + (4 + 4 * k) * psi // n,
            "fsdp": (8 + 4 * k) * psi // n}[reducer]
    buckets = runs[label]["extras"]["buckets"]
    assert m["model_state_expected_bytes"] == want, (label, m, want)
    assert want <= m["model_state_bytes"] <= want + buckets * (n - 1) * 4 * (2 + k), (label, m, buckets)
    assert m["peak_bytes"] >= m["model_state_bytes"], (label, m)
    if n == 3:
        assert m["model_state_bytes"] < (8 + 4 * k) * psi * 0.8, ("not sharded", m)
print("ok:", reducer, {l: runs[l]["memory"]["model_state_bytes"] for l in runs})
PY
done
# fsdp keeping its units gathered from forward to backward: the same model
# state after the step (nothing gathered then), the flag in the config; a
# unit smaller than the world (the MLP's width-1 hidden layer: 2 elements on
# 3 ranks) is refused with exit 2, naming the unit.
"$DTBENCH" ddp "${common[@]}" --reducer fsdp --reshard-after-forward false --world-sizes 2 --no-baseline \
  --json "$work/fsdp-keep.json" >/dev/null 2>&1
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); c=d['config']; m=d['runs'][0]['memory']
assert c['reducer'] == 'fsdp' and c['reshard_after_forward'] is False, c
assert m['model_state_expected_bytes'] <= m['model_state_bytes'] < 13 * c['param_elements'] / 2 + 4096, m" "$work/fsdp-keep.json"
set +e
"$DTBENCH" ddp --model mlp --width 1 --num-classes 2 --batch-size 2 --iters 1 --warmup 0 --threads 1 \
  --timeout 60s --reducer fsdp --world-sizes 3 --no-baseline >/dev/null 2>"$work/small.err"; rc=$?
set -e
# (Found by the ranks once the model is built: each rank's line, then the launcher's.)
refused "$rc" "$work/small.err" "unit 1 (block 1) has 2 parameter elements, fewer than the 3 ranks" any
# fp16's loss scaler is not offered with a sharded strategy (either flavour):
# one line, exit 2.
set +e
"$DTBENCH" ddp "${common[@]}" --reducer zero2 --amp fp16 --world-sizes 2 >/dev/null 2>"$work/zamp.err"; rc=$?
set -e
refused "$rc" "$work/zamp.err" "amp fp16 with --reducer zero2"
# A small GPT-2 with AdamW on 2 ranks: the parameter count, FLOPs (PaLM's
# 6N + 12·L·w·T per token) and AdamW's 16 bytes of model state per parameter.
"$DTBENCH" ddp --model gpt2 --layers 2 --width 64 --heads 4 --vocab 1000 --seq-len 32 --batch-size 2 \
  --iters 2 --warmup 1 --threads 1 --timeout 60s --optimizer adamw --reducer overlap --world-sizes 2 \
  --no-baseline --json "$work/gpt.json" >"$work/gpt.out" 2>&1 || { cat "$work/gpt.out"; exit 1; }
python3 - "$work/gpt.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
c, r = doc["config"], doc["runs"][0]
l, w, v, t, pos = 2, 64, 1000, 32, 1024
assert (c["model"], c["heads"], c["vocab"]) == ("gpt2", 4, 1000), c
assert c["param_elements"] == v * w + pos * w + l * (12 * w * w + 13 * w) + 2 * w, c["param_elements"]
assert r["train_flops_per_example"] == t * (6 * (12 * l * w * w + v * w) + 12 * l * w * t), r["train_flops_per_example"]
m = r["memory"]
assert m["model_state_bytes"] == m["model_state_expected_bytes"] == 16 * c["param_elements"], m
assert r["tokens_per_example"] == 32 and abs(r["tokens_per_sec_per_rank"] - 2 * 32 / r["slowest_rank_summary"]["p50"]) < 1e-6, r
print("ok: gpt2 (2 layers, width 64) with adamw on 2 ranks", r["summary"]["p50"], m)
PY
grep -Eq 'GFLOP/example to train: [0-9.]+ TFLOP/s per rank at p50, [0-9]+ tokens/s per rank$' "$work/gpt.out"
# fsdp with FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16): the rows run
# (their replica check included) and the config says so; the same run's trace
# shows every unit's all-gather at 2 bytes per padded element.
"$DTBENCH" ddp --model gpt2 --layers 2 --width 64 --heads 4 --vocab 1000 --seq-len 32 --batch-size 2 \
  --iters 2 --warmup 1 --threads 1 --timeout 60s --reducer fsdp --amp bf16 --param-dtype bf16 \
  --world-sizes 2 --no-baseline --json "$work/mp.json" --trace "$work/mp.trace.json" >"$work/mp.out" 2>&1 ||
  { cat "$work/mp.out"; exit 1; }
python3 - "$work/mp.json" "$work" <<'PY'
import glob, json, sys
doc = json.load(open(sys.argv[1]))
c = doc["config"]
assert (c["reducer"], c["amp"], c["param_dtype"]) == ("fsdp", "bf16", "bf16"), c
files = glob.glob(sys.argv[2] + "/mp.trace.*.json")  # the row's trace (--trace names one per row)
assert len(files) == 1, files
trace = json.load(open(files[0]))["traceEvents"]
gathers = [e for e in trace if e.get("cat") == "all-gather" and e["ph"] == "b"]
assert gathers, "no all-gathers in the trace"
n = c["param_elements"]
# Each iteration gathers every unit (3: 2 blocks and the root) at least once:
# bf16 is 2 bytes per padded element, so one of each is about 2 n bytes.
units = {}
for e in gathers:
    units.setdefault(e["args"]["unit"], e["args"]["bytes"])
assert sorted(units) == [0, 1, 2], units
assert 2 * n <= sum(units.values()) <= 2 * n + 2 * 3 * 2, (units, n)
print("ok: fsdp --param-dtype bf16 on 2 ranks; unit gathers", units, "bytes for", n, "parameters")
PY

# Tensor parallelism: a gpt2 split 2 ways, alone (tp 2) and replicated by
# the c10d Reducer over the data-parallel groups (dp 2 x tp 2). The tp 2 row
# trains the baseline's model on the baseline's batch: the same loss. The
# parts are a 1/2 share of the blocks; the groups are torchtitan's (tp
# innermost); per-rank figures are a 1/tp share.
# (`train` is the command's name; `ddp`, used above, its alias.)
"$DTBENCH" train --model gpt2 --layers 2 --width 64 --heads 4 --vocab 256 --seq-len 16 --batch-size 2 \
  --iters 2 --warmup 1 --threads 1 --timeout 60s --reducer ddp --tp 2 --world-sizes 2,4 \
  --json "$work/tp.json" >"$work/tp.out" 2>&1 || { cat "$work/tp.out"; exit 1; }
python3 - "$work/tp.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["config"]["tp"] == 2, doc["config"]
runs = doc["runs"]
assert [r["label"] for r in runs] == ["no ddp", "1N/2R tp2", "1N/4R tp2"], [r["label"] for r in runs]
assert [(r["tp"], r["dp"], r["global_batch"]) for r in runs] == [(1, 1, 2), (2, 1, 2), (2, 2, 4)], runs
assert [r["reducer"] for r in runs] == ["none", "none", "ddp"], [r["reducer"] for r in runs]  # dp 1: no strategy
whole = runs[0]["extras"]["param_elements"]
for r in runs[1:]:
    lay = r["extras"]["layout"]
    assert lay["whole_param_elements"] == whole and r["extras"]["param_elements"] < whole, (lay, whole)
    assert lay["groups"]["tp"] == ([[0, 1]] if r["world_size"] == 2 else [[0, 1], [2, 3]]), lay
    assert lay["groups"]["dp"] == ([[0], [1]] if r["world_size"] == 2 else [[0, 2], [1, 3]]), lay
    s = r["summary"]
    assert abs(s["examples_per_sec_per_rank_p50"] - 1 / s["p50"]) < 1e-9, s  # batch 2 over 2 ranks
    # Two sums forward and two backward per block, each of batch x tokens x width floats.
    c = lay["tp_comm"]
    assert c["allreduces_per_iter"] == 4 * 2 and c["bytes_per_iter"] == 8 * 2 * 16 * 64 * 4, c
    assert 0 < c["seconds_per_iter"] < r["slowest_rank_summary"]["p50"], c
# The same model and batch, split or not: the same loss to float32 rounding.
a, b = runs[0]["extras"]["last_loss"], runs[1]["extras"]["last_loss"]
assert abs(a - b) <= 1e-5 * abs(a), (a, b)
print("ok: --tp 2 at 2 and 4 ranks; loss", a, "split", b)
PY
grep -q "1N/4R tp2: 4 rank(s) as dp 2 x tp 2" "$work/tp.out" || { cat "$work/tp.out"; exit 1; }
# A Llama (grouped-query heads) split under --amp bf16: the sums are of
# bfloat16 activations (in float32 where Gloo has no bfloat16 sum).
"$DTBENCH" train --model llama3-8b --layers 2 --width 64 --heads 4 --kv-heads 2 --vocab 256 --seq-len 16 \
  --batch-size 2 --iters 2 --warmup 1 --threads 1 --timeout 60s --tp 2 --amp bf16 --no-baseline \
  --json "$work/tpbf16.json" >"$work/tpbf16.out" 2>&1 || { cat "$work/tpbf16.out"; exit 1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); r=d['runs'][0]
assert (d['config']['amp'], r['tp'], r['reducer']) == ('bf16', 2, 'none'), (d['config']['amp'], r['tp'], r['reducer'])
assert d['config']['param_elements'] == r['extras']['layout']['whole_param_elements'] > r['extras']['param_elements']
print('ok: llama --tp 2 --amp bf16, loss', r['extras']['last_loss'])" "$work/tpbf16.json"
# Pipeline parallelism: a gpt2 cut into 2 stages (1f1b, 4 microbatches),
# alone (pp 2) and with replicas kept in step by sync (dp 2 x pp 2). The pp 2
# row trains the baseline's model on the baseline's batch: the same loss.
# Each rank holds its stage (blocks 1+1; both ends hold the tied
# embedding); the groups are torchtitan's (pp outermost); the measured
# bubble and each rank's peak are in the row.
"$DTBENCH" train --model gpt2 --layers 2 --width 64 --heads 4 --vocab 256 --seq-len 16 --batch-size 4 \
  --iters 2 --warmup 1 --threads 1 --timeout 60s --reducer sync --pp 2 --microbatches 4 --world-sizes 2,4 \
  --json "$work/pp.json" >"$work/pp.out" 2>&1 || { cat "$work/pp.out"; exit 1; }
python3 - "$work/pp.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert (doc["config"]["pp"], doc["config"]["pp_schedule"], doc["config"]["microbatches"]) == (2, "1f1b", 4), doc["config"]
runs = doc["runs"]
assert [r["label"] for r in runs] == ["no ddp", "1N/2R pp2", "1N/4R pp2"], [r["label"] for r in runs]
assert [(r["pp"], r["dp"], r["global_batch"]) for r in runs] == [(1, 1, 4), (2, 1, 4), (2, 2, 8)], runs
assert [r["reducer"] for r in runs] == ["none", "none", "sync"], [r["reducer"] for r in runs]
whole = runs[0]["extras"]["param_elements"]
for r in runs[1:]:
    lay = r["extras"]["layout"]
    assert lay["whole_param_elements"] == whole and r["extras"]["param_elements"] < whole, (lay, whole)
    assert lay["groups"]["pp"] == ([[0, 1]] if r["world_size"] == 2 else [[0, 2], [1, 3]]), lay
    p = lay["pipeline"]
    assert (p["schedule"], p["microbatches"], p["stage_blocks"]) == ("1f1b", 4, [1, 1]), p
    assert abs(p["schedule_bubble"] - 1 / 5) < 1e-12, p  # (P-1)/(M+P-1)
    assert len(p["measured_bubble_per_rank"]) == r["world_size"] == len(p["peak_bytes_per_rank"]), p
    assert all(0 < b < 1 for b in p["measured_bubble_per_rank"]), p
    assert all(b > 0 for b in p["peak_bytes_per_rank"]), p
    # Rank 0 (stage 0) sends each microbatch's activations, 4 x (1 x 16 x 64)
    # floats, and its gradient of the tied embedding (256 x 64) to the last stage.
    assert p["bytes_sent_per_iter"] == (4 * 16 * 64 + 256 * 64) * 4, p
    s = r["summary"]
    assert abs(s["examples_per_sec_per_rank_p50"] - 2 / s["p50"]) < 1e-9, s  # batch 4 over 2 ranks
a, b = runs[0]["extras"]["last_loss"], runs[1]["extras"]["last_loss"]
assert abs(a - b) <= 1e-5 * abs(a), (a, b)
print("ok: --pp 2 at 2 and 4 ranks; loss", a, "pipelined", b)
PY
grep -q "1N/4R pp2: 4 rank(s) as pp 2 x dp 2, reducer sync" "$work/pp.out" || { cat "$work/pp.out"; exit 1; }
grep -q "pipeline 1f1b M4: blocks per stage 1+1; bubble % per rank" "$work/pp.out" || { cat "$work/pp.out"; exit 1; }
# A Llama, interleaved (2 stages per rank, blocks 1+1+1+1) under full
# activation checkpointing, tp 2 x pp 2 on 4 ranks: the baseline's loss.
"$DTBENCH" train --model llama3-8b --layers 4 --width 64 --heads 4 --kv-heads 2 --vocab 256 --seq-len 16 \
  --batch-size 4 --iters 2 --warmup 1 --threads 1 --timeout 60s --tp 2 --pp 2 --pp-schedule interleaved-1f1b \
  --stages-per-rank 2 --microbatches 2 --activation-checkpointing full --world-sizes 4 \
  --json "$work/ppi.json" >"$work/ppi.out" 2>&1 || { cat "$work/ppi.out"; exit 1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); b, r = d['runs']
p = r['extras']['layout']['pipeline']
assert (r['tp'], r['pp'], p['stages_per_rank'], p['stage_blocks']) == (2, 2, 2, [1, 1, 1, 1]), p
assert abs(p['schedule_bubble'] - 1 / 5) < 1e-12, p  # (P-1)/(vM+P-1)
a, c = b['extras']['last_loss'], r['extras']['last_loss']
assert abs(a - c) <= 1e-5 * abs(a), (a, c)
print('ok: llama tp 2 x pp 2 interleaved, loss', a, 'pipelined', c)" "$work/ppi.json"
echo "ddp_cli: all checks passed"
