#!/usr/bin/env bash
# Packs the wheel-flavour build for a GPU machine that has PyTorch's wheel in
# its python3 but none of this machine's packages: gpu-bundle/bin holds the
# front end and dtbench-torch (stripped), gpu-bundle/lib the shared libraries
# they load that are neither LibTorch's, CUDA's (both come from
# that python's torch and its nvidia/ packages, bench/gpu/run.py sets
# LD_LIBRARY_PATH so) nor the C/C++ runtime every Linux has: Open MPI, hwloc,
# libevent, libudev. Open MPI's plugins do not travel: `--backend mpi` does not
# work there (no part uses it). Prints what it packed and the size; the device
# tool carries at most 64 MiB.
#   bench/gpu/pack.sh [BUILD_DIR] [BUNDLE_DIR]    (default build-wheel, gpu-bundle)
set -euo pipefail
build=${1:-build-wheel}
bundle=${2:-gpu-bundle}
for f in dtbench dtbench-torch; do
  [ -x "$build/$f" ] || { echo "pack.sh: $build/$f is missing: make build TORCH=wheel first" >&2; exit 2; }
done
# ldd's output taken whole: `ldd | grep -q` fails under pipefail when grep
# stops reading early (ldd dies of SIGPIPE).
libs=$(ldd "$build/dtbench-torch"; ldd "$build/dtbench")
if ! grep -q 'libtorch_cuda' <<<"$libs"; then
  echo "pack.sh: $build/dtbench-torch is not a CUDA build (the wheel flavour's): nothing a GPU could run" >&2
  exit 2
fi
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
for f in dtbench dtbench-torch; do
  strip -o "$bundle/bin/$f" "$build/$f"
done
# What every glibc system has, and what python3's torch brings: left out.
# libudev (hwloc's) travels: a minimal CUDA image may lack it (run.py puts the
# bundle's lib/ last on LD_LIBRARY_PATH, so the machine's own copy wins).
keep_out='linux-vdso|ld-linux|/libc\.so|/libm\.so|/libpthread|/libdl\.so|/librt\.so|/libutil\.so|/libstdc\+\+|/libgcc_s|/libz\.so|/torch/lib/|/nvidia/|/usr/local/cuda'
if grep -q 'not found' <<<"$libs"; then
  echo "pack.sh: $build/dtbench-torch does not load here either:" >&2
  grep 'not found' <<<"$libs" >&2
  exit 1
fi
awk '$2 == "=>" && $3 ~ /^\// {print $3}' <<<"$libs" | sort -u | { grep -Ev "$keep_out" || true; } |
  while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
echo "packed into $bundle: $(cd "$bundle" && find . -type f | sort | tr '\n' ' ')"
echo "size: $(du -sh "$bundle" | cut -f1) (the device tool carries at most 64 MiB)"
