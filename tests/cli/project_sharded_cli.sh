#!/usr/bin/env bash
# `dtbench project --reducer ddp,zero1,zero2,fsdp` end to end: the projection guide's
# sharded command (llama3-8b by its shapes: nothing allocated), a table and
# rows per strategy, memory per rank as ZeRO's formulas say (checked here
# from the JSON's own inputs), fits and the largest batch, the report's
# per-strategy charts with the limit drawn, a measured profile projected
# for zero1/zero2, an allgather sweep used for the gathers, and bad inputs: one line on stderr, exit 2, no report.
# Usage: project_sharded_cli.sh path/to/dtbench
set -u
DT=$(readlink -f "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/cli/project_lib.sh
. "$HERE/project_lib.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# The projection guide's command ("Sharded: which strategy fits, and how fast?"), under
# a memory cap far below llama3-8b's 32 GB of float32 parameters: shapes only.
( ulimit -v 4000000
  "$DT" project --model llama3-8b --seq-len 8192 --batch-size 2 --forward-ms 900 --backward-ms 1850 \
    --optimizer-ms 30 --reducer ddp,horovod,zero1,zero2,fsdp --optimizer adamw --param-dtype bf16 \
    --activation-memory 62.875GiB --memory-per-rank 95GiB --ranks-per-node 8 --intra-bw 360GB/s \
    --intra-latency 3us --inter-bw 8x400Gbit/s --inter-latency 10us --world-sizes 8,64,512 --json sharded.json
) >sharded.out 2>sharded.err
check "projection guide sharded command (llama3-8b within 4 GB of address space)" $? "$(cat sharded.err)"
[ "$(grep -c '^Projection: llama3-8b, ' sharded.out)" = 5 ] && grep -q 'mem/rank GiB  fits max batch' sharded.out
check "a table per strategy with memory, fits and max batch" $? "$(head -n 20 sharded.out)"
python3 - sharded.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]; psi = d["profile"]["parameters"]; K = d["memory"]["optimizer_states"]
assert psi == 8030261248, psi                      # Llama 3.1 8B from its shapes
assert K == 2 and d["memory"]["param_bytes"] == 2 and d["memory"]["limit_bytes"] == 95 * 2**30
assert len(d["profile"]["units"]) == 33             # the root + 32 blocks
assert abs(sum(u["compute_share"] for u in d["profile"]["units"]) - 1) < 1e-9
want = {"ddp": lambda n: (8 + 4*K) * psi, "horovod": lambda n: (8 + 4*K) * psi, "zero1": lambda n: 8*psi + 4*K*psi/n,
        "zero2": lambda n: 4*psi + (4 + 4*K)*psi/n, "fsdp": lambda n: (8 + 4*K)*psi/n}
seen = set()
for r in rows:
    s, n, m = r["strategy"], r["world_size"], r["memory"]
    seen.add(s)
    assert abs(m["model_state_bytes"] - want[s](n)) <= 1e-6 * want[s](n), (s, n, m)
    # The backward's peak; zero2's and fsdp's gradient shards (made in backward) only after it.
    during = (m["model_state_bytes"] - m["made_in_backward_bytes"] + m["gathered_bytes"] + m["buffers_bytes"]
              + m["activation_bytes"])
    # After backward, through the step: every model state, the buffers kept
    # (ddp's buckets, horovod's fusion buffer, zero1's shard) and AdamW's sqrt(v).
    stepped = psi if s in ("ddp", "horovod") else psi / n
    assert abs(m["step_temporaries_bytes"] - 4 * stepped) <= 1e-6 * 4 * stepped, (s, n, m)
    assert m["kept_buffers_bytes"] == (m["buffers_bytes"] if s in ("ddp", "horovod", "zero1") else 0), (s, n, m)
    after = m["model_state_bytes"] + m["kept_buffers_bytes"] + m["step_temporaries_bytes"]
    assert abs(m["after_backward_bytes"] - after) < 1, (s, n, m)
    assert abs(m["total_bytes"] - max(during, after)) < 1, (s, n)
    # Gradients set to none by zero_grad (ddp, horovod; zero2's and fsdp's shards) are made in backward.
    assert m["made_in_backward_bytes"] == (m["gradients_bytes"] if s != "zero1" else 0), (s, n)
    assert m["fits"] == (m["total_bytes"] <= 95 * 2**30), (s, n)
    assert r["examples_per_sec"] > 0 and r["iteration_s"] > 0
    assert abs(r["tokens_per_sec_per_rank"] - 2 * 8192 / r["iteration_s"]) < 1e-6 * r["tokens_per_sec_per_rank"]
by = {(r["strategy"], r["world_size"]): r for r in rows}
assert seen == {"ddp", "horovod", "zero1", "zero2", "fsdp"}
assert by[("horovod", 8)]["memory"]["buffers_bytes"] == 128 * 2**20   # Horovod's fusion buffer
assert not by[("ddp", 8)]["memory"]["fits"] and by[("ddp", 8)]["memory"]["largest_batch"] == 0   # 150 GB of states
assert by[("fsdp", 8)]["memory"]["fits"] and by[("fsdp", 8)]["memory"]["largest_batch"] >= 2
# The gradients tensor by tensor (llama3-8b: width w 4,096, key/value width
# 1,024, MLP f 14,336, vocabulary v 128,256, 32 blocks). Backward makes the
# untied head's gradient first, after the head's multiply-adds t*v*w of the
# forward's t*(32*(2w^2 + 2w*1024 + 3w*f) + v*w) + 2*32*w*t^2 (t = 8,192):
# 0.0544269 of the 1,850 ms backward = 100.690 ms. Its 525,336,576 elements
# (2,101,346,304 B) fill the first bucket (1 MiB cap) alone. Each block in
# reverse then gives six buckets (25 MiB cap, closed once reached): down,
# up, gate (234,881,024 B each), norm + o, v + k, q, its input norm (16 KiB)
# opening the next block's down; the last holds block 0's input norm with
# the embedding and final norm: 1 + 32 * 6 + 1 = 194 buckets. zero2 holds
# two buckets adjacent in launch order at most: the head's and the last
# block's down, 2,101,346,304 + 234,881,024 = 2,336,227,328 B (two 25 MiB
# caps were 52,428,800).
buckets = d["profile"]["buckets"]
assert len(buckets) == 194 and by[("ddp", 8)]["buckets"] == 194, len(buckets)
assert buckets[0]["bytes"] == 2101346304 and abs(buckets[0]["ready_s"] - 0.100690) < 1e-5, buckets[0]
assert buckets[1]["bytes"] == 234881024, buckets[1]
for n in (8, 64, 512):
    assert by[("zero2", n)]["memory"]["buffers_bytes"] == 2336227328, by[("zero2", n)]["memory"]
# More ranks: FSDP's states shrink, its communication grows.
assert by[("fsdp", 512)]["memory"]["model_state_bytes"] < by[("fsdp", 8)]["memory"]["model_state_bytes"]
assert by[("fsdp", 512)]["comm_s"] > by[("fsdp", 8)]["comm_s"]
PY
check "JSON: Ψ = 8,030,261,248, model states = ZeRO's formulas, totals, fits, tokens/s per rank, trends" $? ""
"$DT" report sharded.json -o sharded.html >report.out 2>&1 &&
  grep -q 'id="project-memory-' sharded.html && grep -q 'id="project-rate-' sharded.html &&
  grep -q '>memory limit<' sharded.html && grep -q '>fsdp<' sharded.html && grep -q '>zero1<' sharded.html &&
  grep -q 'tokens/s per rank vs ranks' sharded.html
check "report: memory and rate charts, a line per strategy, the limit" $? "$(cat report.out)"

# A measured profile (ddp --trace) projected for zero1 and zero2 over a stated link.
"$DT" ddp --model mlp --batch-size 16 --world-sizes 1 --threads 1 --iters 6 --warmup 2 \
  --trace trace.json --json profile.json >ddp.out 2>&1
check "ddp profile" $? "$(tail -n 3 ddp.out)"
"$DT" project --profile profile.json --reducer ddp,zero1,zero2 --inter-bw 1Gbit/s --inter-latency 50us \
  --world-sizes 1,2,4 --json zero.json >zero.out 2>zero.err
check "project a measured profile for zero1 and zero2" $? "$(cat zero.err)"
python3 - zero.json <<'PY'
import json, sys
rows = {(r["strategy"], r["world_size"]): r for r in json.load(open(sys.argv[1]))["rows"]}
for w in (2, 4):
    # ZeRO-1 reduce-scatters and gathers after backward: never faster than ZeRO-2, which overlaps.
    assert rows[("zero1", w)]["iteration_s"] >= rows[("zero2", w)]["iteration_s"] - 1e-12
    assert rows[("zero1", w)]["collectives"] == 2 * rows[("ddp", w)]["buckets"]
    assert rows[("zero2", w)]["memory"]["activation_bytes"] > 0   # the "no ddp" row's peak less params and optimizer
PY
check "zero1 >= zero2 per rank count, 2 collectives per bucket, activations from the report" $? "$(cat zero.out)"

# The largest batch is the measured one: a GPT profiled at batch 2, ddp's
# peak measured at batch 4; under a limit half an example's activations
# above that peak, the projection's largest batch for one rank is 4. (The
# "no ddp" row's peak holds no gradients: counted as activations with them
# subtracted, a small model's per-example figure came out half the true one
# and its largest batch twice too large.)
g=(--model gpt2 --layers 2 --width 128 --heads 4 --vocab 2048 --threads 1 --iters 3 --warmup 1 --world-sizes 1)
"$DT" ddp "${g[@]}" --seq-len 64 --batch-size 2 --trace gtrace.json --json gpt2b2.json >g2.out 2>&1 &&
  "$DT" ddp "${g[@]}" --seq-len 64 --batch-size 4 --no-baseline --json gpt2b4.json >g4.out 2>&1 &&
  "$DT" ddp "${g[@]}" --seq-len 128 --batch-size 2 --no-baseline --json gpt2t128.json >g128.out 2>&1
check "gpt2 profile at batch 2 x 64 tokens, ddp at 4 x 64 and 2 x 128" $? "$(tail -n 3 g2.out g4.out g128.out)"
limit=$(python3 - <<'PY'
import json
peak = lambda f, red: next(r["memory"]["peak_bytes"] for r in json.load(open(f))["runs"] if r["reducer"] == red)
p2, p4 = peak("gpt2b2.json", "ddp"), peak("gpt2b4.json", "ddp")
print(int(p4 + (p4 - p2) / 2 / 2))   # half an example's activations above batch 4's peak
PY
)
"$DT" project --profile gpt2b2.json --reducer ddp --world-sizes 1 --memory-per-rank "$limit" --json gbatch.json \
  >gbatch.out 2>gbatch.err &&
python3 - "$limit" <<'PY'
import json, sys
row = json.load(open("gbatch.json"))["rows"][0]
assert row["memory"]["largest_batch"] == 4, (row["memory"], sys.argv[1])
PY
check "largest batch under a limit = the batch measured to fit (ddp, 1 rank)" $? "$(cat gbatch.err; grep -A3 largest gbatch.out)"

# --batch-size / --seq-len with --profile: the batch-2 x 64-token profile
# projected to 4 x 64 and 2 x 128 tokens; ddp's memory per rank against the
# peaks measured there (allocator bytes: within 2 %), the compute scaled by
# the shapes' FLOPs (2 for twice the batch; a little more than 2 for twice
# the length, the attention's products growing as T²).
"$DT" project --profile gpt2b2.json --reducer ddp --world-sizes 1 --batch-size 4 --json gb4.json >gb4.out 2>gb4.err &&
  "$DT" project --profile gpt2b2.json --reducer ddp --world-sizes 1 --seq-len 128 --json gt128.json >gt128.out 2>gt128.err &&
  grep -q "rescaled from the report's 2 x 64 tokens" gt128.out &&
python3 - <<'PY'
import json
peak = lambda f: next(r["memory"]["peak_bytes"] for r in json.load(open(f))["runs"] if r["reducer"] == "ddp")
for proj, measured, compute in (("gb4.json", "gpt2b4.json", (2, 2)), ("gt128.json", "gpt2t128.json", (2.0001, 2.5))):
    d = json.load(open(proj))
    s = d["profile"]["rescaled_from"]
    assert s["batch_per_rank"] == 2 and s["tokens_per_example"] == 64, s
    assert compute[0] <= s["compute_factor"] <= compute[1], (proj, s)
    got, want = d["rows"][0]["memory"]["total_bytes"], peak(measured)
    assert abs(got / want - 1) < 0.02, (proj, got, want)
assert json.load(open("gbatch.json"))["profile"]["rescaled_from"] is None
PY
check "a profile rescaled to 4 x 64 and 2 x 128 tokens: memory as measured, compute by the FLOPs" $? "$(cat gb4.err gt128.err; head -n 3 gt128.out)"

# A comm report that also swept allgather: zero2's and fsdp's gathers use its
# fit (named in the table and the JSON), the reduce-scatters and ddp the
# allreduce's; the same report without the allgather rows gives ddp the same
# projection and zero2 another.
"$DT" comm --nproc 2 --collective allreduce,allgather -b 64K -e 1M -f 4 -n 3 -w 1 --placement in \
  --json commag.json >comm.out 2>&1
check "comm sweep of allreduce and allgather" $? "$(tail -n 3 comm.out)"
python3 - <<'PY'
import json
d = json.load(open("commag.json"))
d["results"] = [r for r in d["results"] if r["collective"] == "allreduce"]
json.dump(d, open("commar.json", "w"))
one = json.load(open("commag.json"))
big = max(r["size"] for r in one["results"] if r["collective"] == "allgather")
one["results"] = [r for r in one["results"] if r["collective"] == "allreduce" or r["size"] == big]
json.dump(one, open("commag1.json", "w"))
PY
for c in ag ar; do
  "$DT" project --profile profile.json --reducer ddp,zero2 --comm-intra "comm$c.json" --ranks-per-node 2 \
    --world-sizes 2 --reduce-scatter allreduce --json "proj$c.json" >"proj$c.out" 2>"proj$c.err" ||
    { cat "proj$c.err"; break; }
done
grep -q "all_gather inside a node: measured" projag.out && ! grep -q "all_gather inside" projar.out &&
python3 - <<'PY'
import json
ag, ar = (json.load(open(f)) for f in ("projag.json", "projar.json"))
assert "allgather" in ag["network"]["all_gather"]["intra"]["source"], ag["network"]["all_gather"]
assert ag["network"]["reduce_scatter"]["intra"] is None and ar["network"]["all_gather"]["intra"] is None
rows = lambda d: {(r["strategy"], r["world_size"]): r for r in d["rows"]}
a, b = rows(ag), rows(ar)
assert a[("ddp", 2)]["iteration_s"] == b[("ddp", 2)]["iteration_s"]
assert a[("zero2", 2)]["comm_s"] != b[("zero2", 2)]["comm_s"], (a[("zero2", 2)], b[("zero2", 2)])
PY
check "allgather sweep: used for the gathers only, named in table and JSON" $? "$(cat projag.err projar.err)"

# Forward and backward from an achieved rate instead of phase times, the
# rate over the whole step as a 1-rank row's mfu counts it: GPT-2 small at
# 1024 tokens is 142,406,400 multiply-adds per token (12·L·w² + V·w +
# 2·L·w·T), so 8 sequences at 100 TFLOP/s take 6 × 145,824,153,600 × 8 /
# 1e14 = 69.9956 ms for forward, backward and the 5 ms step: forward
# (69.9956 − 5) / 3 = 21.6652 ms, backward twice that; 250 TFLOP/s peak at
# 40 % MFU is the same rate.
r=(--model gpt2 --seq-len 1024 --batch-size 8 --optimizer-ms 5 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2)
"$DT" project "${r[@]}" --tflops 100 --json rate1.json >rate1.out 2>&1 &&
  "$DT" project "${r[@]}" --peak-tflops 250 --mfu 0.4 --json rate2.json >rate2.out 2>&1 &&
python3 - <<'PY'
import json
a, b = (json.load(open(f))["profile"] for f in ("rate1.json", "rate2.json"))
fwd = (6 * 145824153600 * 8 / 1e14 - 0.005) / 3
assert abs(fwd - 0.0216652) < 1e-7, fwd
assert abs(a["forward_s"] / fwd - 1) < 1e-9 and abs(a["backward_s"] / (2 * fwd) - 1) < 1e-9, a
assert abs(b["forward_s"] / a["forward_s"] - 1) < 1e-9 and abs(a["optimizer_s"] - 0.005) < 1e-12, b
PY
check "--tflops and --peak-tflops x --mfu: the whole step = 6 x multiply-adds x batch / rate, backward twice forward" $? "$(cat rate1.out rate2.out | tail -n 4)"

# A decoder by its shape flags, as `train` takes them: gpt2 with gpt2-xl's
# shape is gpt2-xl (1,557,611,200 parameters); llama3-405b's preset is
# Hugging Face's 405,853,388,800 (feed-forward 53,248), and llama3-70b with
# 405B's shape flags is the same model.
s=(--seq-len 1024 --batch-size 1 --optimizer-ms 5 --tflops 100 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2)
"$DT" project --model gpt2 --layers 48 --width 1600 --heads 25 "${s[@]}" --json shape1.json >shape1.out 2>&1 &&
  "$DT" project --model gpt2-xl "${s[@]}" --json shape2.json >shape2.out 2>&1 &&
  "$DT" project --model llama3-405b "${s[@]}" --json shape3.json >shape3.out 2>&1 &&
  "$DT" project --model llama3-70b --layers 126 --width 16384 --heads 128 --ffn-hidden-size 53248 "${s[@]}" \
    --json shape4.json >shape4.out 2>&1 &&
  "$DT" project --model llama3-405b --width 8192 --heads 64 "${s[@]}" --json shape5.json >shape5.out 2>&1 &&
python3 - <<'PY'
import json
p = [json.load(open(f"shape{i}.json"))["profile"] for i in (1, 2, 3, 4)]
assert p[0]["parameters"] == p[1]["parameters"] == 1557611200, (p[0]["parameters"], p[1]["parameters"])
assert p[0]["forward_s"] == p[1]["forward_s"], (p[0]["forward_s"], p[1]["forward_s"])
assert p[2]["parameters"] == p[3]["parameters"] == 405853388800, (p[2]["parameters"], p[3]["parameters"])
# 405B at width 8192 keeps its 3.25 ratio: a 26,624-wide feed-forward. Per
# layer 2·8192² + 2·8192·1024 + 3·8192·26624 + 2·8192 = 805,322,752; 126 of
# them, 2·128256·8192 and 8192: 103,572,021,248.
w = json.load(open("shape5.json"))["profile"]["parameters"]
assert w == 103572021248, w
PY
check "shape flags: gpt2 shaped as gpt2-xl is gpt2-xl, llama3-70b shaped as 405B is llama3-405b (405,853,388,800), 405B narrowed keeps its feed-forward ratio" $? "$(tail -n 3 shape1.out shape3.out shape4.out)"

# Bad inputs: one line, exit 2, no report.
m=(--model gpt2 --forward-ms 1 --backward-ms 2 --optimizer-ms 1 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2)
expect_bad "shape flags on a model without shapes" -m "--layers, --width, --heads, --kv-heads, --vocab a" --model resnet50 --layers 4 --forward-ms 1 --backward-ms 2 --optimizer-ms 1 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "heads that do not divide the width" -m "gpt2: width 1600 is not 24 heads of one size" --model gpt2 --width 1600 --heads 24 --forward-ms 1 --backward-ms 2 --optimizer-ms 1 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "a feed-forward width for gpt2" -m "--ffn-hidden-size sets a Llama's feed-forward wid" "${m[@]}" --ffn-hidden-size 4096
expect_bad "shape flags with a report" -m "--layers: options of --model; a --profile report" --profile profile.json --layers 4 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "unknown strategy" -m "--reducer: 'zero3' is not a strategy the project" "${m[@]}" --reducer zero3
expect_bad "strategy twice" -m "--reducer: 'ddp' is given twice" "${m[@]}" --reducer ddp,ddp
expect_bad "unknown optimizer" -m "--optimizer: 'lamb' is not an optimizer (use sgd" "${m[@]}" --optimizer lamb
expect_bad "param dtype without fsdp" -m "--param-dtype and --reshard-after-forward descri" "${m[@]}" --reducer zero2 --param-dtype bf16
expect_bad "bad param dtype" -m "--param-dtype: 'fp8' is not a parameter dtype (u" "${m[@]}" --reducer fsdp --param-dtype fp8
expect_bad "bad reshard value" -m "--reshard-after-forward: 'maybe' is not true or " "${m[@]}" --reducer fsdp --reshard-after-forward maybe
expect_bad "bad memory size" -m "--memory-per-rank: 'lots' is not a number" "${m[@]}" --memory-per-rank lots
expect_bad "compression with a sharded strategy" -m "--compression: zero2 reduce-scatters float32 gra" "${m[@]}" --reducer zero2 --compression fp16
expect_bad "fsdp without units (a report)" -m "profile.json: no FSDP units known for this profi" --profile profile.json --reducer fsdp --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "activation memory with a report" -m "--activation-memory goes with --model; a --profi" --profile profile.json --activation-memory 1GiB --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "an image size with a report (not ignored)" -m "--image-size: options of --model; a --profile re" --profile profile.json --image-size 64 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "a sequence length with a report of a model without shapes" -m "--seq-len with --profile scales a decoder's prof" --profile profile.json --seq-len 512 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "a batch of 0 with a report" -m "--batch-size and --seq-len must be at least 1" --profile profile.json --batch-size 0 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "phase times with a report" -m "--forward-ms: options of --model; a --profile re" --profile profile.json --forward-ms 5 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "bad reduce-scatter" -m "--reduce-scatter: 'ring' is not native or allred" "${m[@]}" --reducer zero2 --reduce-scatter ring
expect_bad "a rate and phase times" -m "--tflops (or --peak-tflops with --mfu) gives for" "${m[@]}" --tflops 100
expect_bad "a rate both ways" -m "give the achieved rate as --tflops, or as --peak" --model gpt2 --optimizer-ms 1 --tflops 100 --peak-tflops 200 --mfu 0.5 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "an MFU without a peak" -m "--peak-tflops and --mfu go together (the achieve" --model gpt2 --optimizer-ms 1 --mfu 0.5 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "an MFU above 1" -m "--peak-tflops must be positive and --mfu a fract" --model gpt2 --optimizer-ms 1 --peak-tflops 200 --mfu 40 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "a rate without the optimizer's time" -m "--tflops gives forward and backward; the optimiz" --model gpt2 --tflops 100 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "an optimizer step longer than the step" -m "--optimizer-ms 80 is the whole step at that rate (69.9" --model gpt2 --seq-len 1024 --batch-size 8 --optimizer-ms 80 --tflops 100 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "a zero rate" -m "--tflops must be positive" --model gpt2 --optimizer-ms 1 --tflops 0 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "a rate with a report" -m "--tflops: options of --model; a --profile report" --profile profile.json --tflops 100 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2
expect_bad "negative fusion threshold" -m "--fusion-threshold-mb must not be negative and -" "${m[@]}" --reducer horovod --fusion-threshold-mb -2
expect_bad "zero cycle time" -m "--fusion-threshold-mb must not be negative and -" "${m[@]}" --reducer horovod --cycle-time-ms 0
expect_bad "an allgather sweep of one size" -m "commag1.json (gloo allgather, 2 rank(s)): the al" --profile profile.json --reducer zero2 --comm-intra commag1.json --ranks-per-node 2 --world-sizes 2
expect_bad "contention with a sharded strategy" -m "--cores-per-node: CPU contention is modelled for" --profile profile.json --reducer zero1 --cores-per-node 2 --inter-bw 1GB/s --inter-latency 5us --world-sizes 2

# Layouts (docs/guide/projection.md "Layouts"): torchtitan's Llama 3.1 405B
# on 512 GPUs, FSDP 8 x TP 8 x PP 8, interleaved 1F1B; the JSON's stages and
# its figures checked against their own inputs.
BASE=(--model llama3-405b --seq-len 8192 --batch-size 32 --reducer fsdp --optimizer adamw --param-dtype bf16
  --ranks-per-node 8 --intra-bw 360GB/s --intra-latency 3us --inter-bw 8x400Gbit/s --inter-latency 10us
  --tflops 528.3 --optimizer-ms 30 --attention flash --pp-schedule interleaved-1f1b
  --sequence-parallel --loss-parallel --activation-checkpointing full --memory-per-rank 95GiB)
LAYOUT=("${BASE[@]}" --reshard-after-forward false --tp 8 --pp 8 --stages-per-rank 2 --microbatches 32)
( ulimit -v 4000000; "$DT" project "${LAYOUT[@]}" --world-sizes 64,512 --json layout.json ) >layout.out 2>layout.err
check "layout projection (llama3-405b, tp 8 x pp 8, within 4 GB of address space)" $? "$(cat layout.err)"
grep -q 'layout: tp 8, pp 8 interleaved-1f1b v2 M32, SP, loss parallel, full AC' layout.out
check "the table names the layout" $? "$(head -n 12 layout.out)"
python3 - layout.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
l = d["layout"]
assert (l["tp"], l["pp"], l["pp_schedule"], l["microbatches"], l["stages_per_rank"]) == (8, 8, "interleaved-1f1b", 32, 2), l
assert l["activation_checkpointing"] == "full" and l["activation_element_bytes"] == 2 and l["attention"] == "flash"
for r in d["rows"]:
    n = r["world_size"]
    assert r["layout"] == {"dp": n // 64, "tp": 8, "pp": 8, "cp": 1}, r["layout"]
    st = r["stages"]
    assert [s["blocks"] for s in st] == [16] * 6 + [15] * 2, st            # 126 blocks
    assert abs(r["memory"]["total_bytes"] - max(s["total_bytes"] for s in st)) < 1
    # the bubble: (P-1)/v slots of M + (P-1)/v
    work = (r["iteration_s"] - r["bubble_s"]) / 32
    assert r["bubble_s"] > 0 and abs(r["bubble_s"] / (3.5 * work) - 1) < 0.02, (r["bubble_s"], work)
    assert abs(r["tokens_per_sec_per_rank"] - 32 * 8192 / r["iteration_s"] / 64) < 1e-6
    assert r["tp_comm_s"] > 0 and r["pp_comm_s"] > 0 and r["recompute_s"] > 0
PY
check "layout JSON: stages, bubble, tokens per GPU" $? ""
expect_bad "a world not divisible by the layout" -m "--world-sizes: 100 ranks are not a multiple of tp 8" "${LAYOUT[@]}" --world-sizes 100
expect_bad "more stages than blocks" -m "--pp 32 x --stages-per-rank 4 is more stages than" "${BASE[@]}" --reshard-after-forward false --tp 8 --pp 32 --stages-per-rank 4 --microbatches 32 --world-sizes 256
expect_bad "heads not divisible by tp" -m "--tp 3: the model's 128 heads are not divisible" "${BASE[@]}" --reshard-after-forward false --tp 3 --pp 8 --stages-per-rank 2 --microbatches 32 --world-sizes 24
expect_bad "microbatches not dividing the batch" -m "--microbatches 24 does not divide the local batch" "${BASE[@]}" --reshard-after-forward false --tp 8 --pp 8 --stages-per-rank 2 --microbatches 24 --world-sizes 512
expect_bad "fsdp resharding under a pipeline" -m "fsdp with --pp: the projection gathers each unit" "${BASE[@]}" --tp 8 --pp 8 --stages-per-rank 2 --microbatches 32 --world-sizes 512
expect_bad "a layout on an image model" -m "--tp, --pp, --cp, --sequence-parallel, --loss-pa" --model resnet18 --batch-size 2 --image-size 32 --forward-ms 1 --backward-ms 2 --optimizer-ms 1 --ranks-per-node 2 --intra-bw 1GB/s --intra-latency 5us --tp 2 --world-sizes 2
expect_bad "a schedule without a pipeline" -m "--pp-schedule orders a pipeline's microbatches: " "${m[@]}" --pp-schedule gpipe
expect_bad "an unknown schedule" -m "--pp-schedule: 'zb-v' is not a schedule (use gpip" "${m[@]}" --pp-schedule zb-v
expect_bad "an unknown recomputation" -m "--activation-checkpointing: 'op' is not a mode (" "${m[@]}" --activation-checkpointing op
expect_bad "an unknown attention kernel" -m "--attention: 'paged' is not eager or flash" "${m[@]}" --attention paged

# --search: every layout of 256 ranks for Llama 3.1 70B under 96 GB, ranked;
# the JSON's rows fit and are in order; refusals.
SEARCH=(--model llama3-70b --seq-len 8192 --batch-size 16 --optimizer adamw --param-dtype bf16 --ranks-per-node 8
  --intra-bw 360GB/s --intra-latency 3us --inter-bw 8x400Gbit/s --inter-latency 10us --tflops 528.3
  --optimizer-ms 30 --attention flash)
"$DT" project "${SEARCH[@]}" --memory-per-rank 96GB --search --world-sizes 256 --top 5 --json search.json \
  >search.out 2>search.err
check "layout search (llama3-70b, 256 ranks, 96 GB)" $? "$(cat search.err)"
grep -q '^Layout search: llama3-70b, 256 ranks' search.out && [ "$(grep -cE '^ *[1-5] [a-z0-9]+ on dp ' search.out)" = 5 ]
check "the search table: five layouts" $? "$(head -n 12 search.out)"
python3 - search.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s, rows = d["search"], d["rows"]
assert s["world_size"] == 256 and s["fitting"] > 5 and s["candidates"] > s["fitting"], s
assert len(rows) == 5
for r in rows:
    l = r["layout"]
    assert l["dp"] * l["tp"] * l["pp"] == 256 and 8 % l["tp"] == 0, l
    assert r["memory"]["total_bytes"] <= d["memory"]["limit_bytes"] == 96 * 2**30, r
rates = [r["tokens_per_sec_per_rank"] for r in rows]
assert rates == sorted(rates, reverse=True), rates
PY
check "search JSON: every row fits, ranked by tokens/s per rank" $? ""
expect_bad "a search without a memory limit" -m "--search needs --memory-per-rank: the layouts th" "${SEARCH[@]}" --search --world-sizes 256
expect_bad "a search with a layout flag" -m "--search chooses the layout: leave out --tp" "${SEARCH[@]}" --search --memory-per-rank 96GB --world-sizes 256 --tp 8
expect_bad "a search over two world sizes" -m "--search lays out one world size: give --world-s" "${SEARCH[@]}" --search --memory-per-rank 96GB --world-sizes 8,16
expect_bad "--top without --search" -m "--top and --global-batch go with --search" "${SEARCH[@]}" --memory-per-rank 96GB --top 3
expect_bad "a memory limit no layout meets" -m "--search: none of 1020 layouts of 256 ranks fits in 1 GiB per rank; the smallest, fsdp on dp 2 x [tp 8, pp 16" "${SEARCH[@]}" --search --memory-per-rank 1GiB --world-sizes 256

# Context parallelism: torchtitan's Llama 3.1 8B at 262,144 tokens, FSDP 1 x CP 8.
"$DT" project --model llama3-8b --seq-len 262144 --batch-size 1 --reducer fsdp --optimizer adamw --param-dtype bf16 \
  --ranks-per-node 8 --intra-bw 360GB/s --intra-latency 3us --tflops 528.3 --optimizer-ms 30 --attention flash \
  --activation-checkpointing full --cp 8 --world-sizes 8 --json cp.json >cp.out 2>cp.err
check "context parallelism (llama3-8b, 262,144 tokens, cp 8)" $? "$(cat cp.err)"
python3 - cp.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["rows"][0]
assert d["layout"]["cp"] == 8 and r["layout"] == {"dp": 1, "tp": 1, "pp": 1, "cp": 8}, r["layout"]
assert abs(r["tokens_per_sec_per_rank"] - 262144 / r["iteration_s"] / 8) < 1e-6
assert r["cp_comm_s"] >= 0
PY
check "context-parallel JSON: layout and tokens per GPU" $? ""
expect_bad "a sequence cp does not split" -m "--cp 3: the sequence of 8192 tokens does not split" "${SEARCH[@]}" --reducer fsdp --cp 3 --world-sizes 3

echo "project_sharded_cli: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
