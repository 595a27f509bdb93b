#!/usr/bin/env bash
# `dtbench env` of either build flavour (and `dtbench models`, at the end): the flavour line, CUDA/cuDNN/NCCL
# versions compiled in (wheel build) and the GPUs visible (0 here, where a
# CUDA build meets no driver: reported, not a crash), the malloc settings and
# DTBENCH_MALLOC / GLIBC_TUNABLES handling.
# Usage: env_cli.sh path/to/dtbench
set -eu
DTBENCH=$1
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi

"$DTBENCH" env --as-json >"$work/env.json"
"$DTBENCH" env >"$work/env.txt"
python3 - "$work/env.json" "$gpus" <<'PY'
import json, re, sys
env, gpus = json.load(open(sys.argv[1])), int(sys.argv[2])
d, cuda, torch = env["dtbench"], env["cuda"], env["versions"]["libtorch"]
src = d["libtorch_source"]
assert src in ("debian", "wheel"), src
if cuda["built"]:
    assert re.fullmatch(r"\d+\.\d+", cuda["toolkit"]), cuda
    assert re.fullmatch(r"\d+\.\d+\.\d+", cuda["cudnn"]) and re.fullmatch(r"\d+\.\d+\.\d+", cuda["nccl"]), cuda
    assert cuda["devices_visible"] == gpus, (cuda, gpus)
    want = f"(CUDA {cuda['toolkit']}, cuDNN {cuda['cudnn']}, NCCL {cuda['nccl']})"
else:
    assert set(cuda) == {"built"}, cuda
    want = "(CPU only)"
assert d["flavour"].endswith(f"{torch} {want}"), (d["flavour"], want)
assert ("Debian" in d["flavour"]) == (src == "debian"), d["flavour"]
m = env["malloc"]
assert m["mode"] == "tuned" and m["mmap_threshold"] == 32 << 20 and m["trim_threshold"] == 1 << 30, m
assert m["peer_glibc_tunables"] == "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=1073741824", m
print("ok:", d["flavour"], "| GPUs visible:", cuda.get("devices_visible", "-"))
PY
grep -q "^# dtbench.flavour: " "$work/env.txt" || { echo "FAIL: no flavour line"; exit 1; }

mode() { python3 -c 'import json,sys; print(json.load(sys.stdin)["malloc"]["mode"])'; }
[ "$(DTBENCH_MALLOC=default "$DTBENCH" env --as-json | mode)" = default ] || { echo "FAIL: DTBENCH_MALLOC=default"; exit 1; }
[ "$(GLIBC_TUNABLES=glibc.malloc.trim_threshold=1000000 "$DTBENCH" env --as-json | mode)" = env ] ||
  { echo "FAIL: GLIBC_TUNABLES not respected"; exit 1; }
set +e
DTBENCH_MALLOC=jemalloc "$DTBENCH" env >"$work/bad.out" 2>"$work/bad.err"; rc=$?
set -e
[ $rc = 2 ] && [ "$(wc -l <"$work/bad.err")" = 1 ] && grep -q "DTBENCH_MALLOC='jemalloc' is not 'tuned' or 'default'" "$work/bad.err" ||
  { echo "FAIL: bad DTBENCH_MALLOC: rc $rc"; cat "$work/bad.err"; exit 1; }
[ ! -s "$work/bad.out" ] || { echo "FAIL: output despite the error"; exit 1; }
echo "ok: DTBENCH_MALLOC default/env/bad value"

# `dtbench models`: parameter counts and FLOPs per example against the
# published figures (torchvision's "GFLOPS" column is forward GMACs at
# 224x224, every image model here; the only check of those figures; GPT-2 small's 124,439,808 parameters; PaLM's 6N + 12·L·w·T per
# token at 128 tokens; Llama 3.1 8B's 8,030,261,248 and 70B's 70,553,706,496;
# the MLP's three products exactly).
"$DTBENCH" models --json "$work/models.json" >"$work/models.txt"
python3 - "$work/models.json" "$work/models.txt" <<'PY'
import json, sys
rows = {m["name"]: m for m in json.load(open(sys.argv[1]))}
text = open(sys.argv[2]).read().splitlines()
assert text[0].split()[:6] == ["model", "tensors", "elements", "MB", "input", "fwd"], text[0]
assert len(text) == len(rows) + 1, (len(text), len(rows))
# torchvision's table gives G multiply-adds to two decimals: each count must
# round to its figure (224x224; inception_v3 at 299x299).
published = {"resnet18": 1.81, "resnet34": 3.66, "resnet50": 4.09, "resnet101": 7.80, "resnet152": 11.51,
             "resnext50_32x4d": 4.23, "resnext101_32x8d": 16.41, "wide_resnet50_2": 11.40, "vgg16": 15.47,
             "alexnet": 0.71, "inception_v3": 5.71}
for name, gmac in published.items():
    m = rows[name]
    assert m["input"] == ("299x299" if name == "inception_v3" else "224x224"), m
    assert round(m["forward_macs_per_example"] / 1e9, 2) == gmac, (name, m["forward_macs_per_example"], gmac)
for m in rows.values():
    assert m["train_flops_per_example"] == 6 * m["forward_macs_per_example"] > 0, m
mlp = rows["mlp"]
assert mlp["forward_macs_per_example"] == 1024 * 1024 * 2 + 1024 * 1000, mlp
g = rows["gpt2"]
assert g["elements"] == 124439808 and g["input"] == "128 tok", g
n = 12 * 12 * 768 ** 2 + 50257 * 768
assert g["train_flops_per_example"] == 128 * (6 * n + 12 * 12 * 768 * 128), g
assert rows["gpt2-xl"]["elements"] == 1557611200, rows["gpt2-xl"]
l8 = rows["llama3-8b"]
assert l8["elements"] == 8030261248 and l8["tensors"] is None, l8  # Llama 3.1 8B, from the shapes
n = 32 * (2 * 4096 ** 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 128256 * 4096
assert l8["train_flops_per_example"] == 128 * (6 * n + 12 * 32 * 4096 * 128), l8
assert rows["llama3-70b"]["elements"] == 70553706496, rows["llama3-70b"]
print("ok: dtbench models:", len(rows), "models; resnet50", rows["resnet50"]["forward_macs_per_example"] / 1e9,
      "GMAC/example, gpt2", g["train_flops_per_example"] / 1e12, "TFLOP per 128-token sequence")
PY
