#!/usr/bin/env bash
# `dtbench env` of either build flavour: the flavour line, CUDA/cuDNN/NCCL
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
