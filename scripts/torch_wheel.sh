#!/usr/bin/env bash
# Prints the CMake prefix of a CUDA LibTorch 2.x for the "wheel" build
# flavour (docs/guide/building.md "Build flavours"), installing one if needed:
#  1. python3 already imports a CUDA build of torch (a GPU node, the GPU
#     machine): its own LibTorch, nothing installed;
#  2. else the pinned wheel below, pip-installed (no dependencies) into
#     .deps/torch-<version>/ of the project (ignored by git), with the three
#     NVIDIA runtime wheels whose libraries the CUDA 13 toolkit in
#     /usr/local/cuda lacks (cuSPARSELt, NVSHMEM, cuFile). Everything else
#     libtorch_cuda needs (cudart, cuBLAS, cuDNN 9, NCCL 2, ...) comes from
#     /usr/local/cuda, whose CUDA major (13) matches the wheel's.
# Progress goes to stderr; the prefix alone to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

TORCH_VERSION=2.11.0
NVIDIA_WHEELS=(nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5 'nvidia-cufile==1.15.1.6.*')
DEST=".deps/torch-${TORCH_VERSION}"

if [ "${DTBENCH_WHEEL_INSTALL:-auto}" != "always" ]; then
  found=$(python3 -c 'import torch,sys; sys.stdout.write(torch.utils.cmake_prefix_path if torch.version.cuda else "")' 2>/dev/null || true)
  if [ -n "$found" ]; then
    echo "torch_wheel: using python3's torch ($(python3 -c 'import torch; print(torch.__version__)')), nothing installed" >&2
    echo "$found"
    exit 0
  fi
fi

prefix="$PWD/$DEST/torch/share/cmake"
if [ -f "$DEST/.complete" ] && [ -f "$prefix/Torch/TorchConfig.cmake" ]; then
  echo "$prefix"
  exit 0
fi

cuda_major=$(awk '/^#define CUDART_VERSION/ {print int($3 / 1000)}' \
  /usr/local/cuda/include/cuda_runtime_api.h 2>/dev/null || true)
if [ "$cuda_major" != "13" ]; then
  echo "torch_wheel: error: the torch ${TORCH_VERSION} wheel is built for CUDA 13; /usr/local/cuda has CUDA '${cuda_major:-none}'" >&2
  exit 1
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "torch_wheel: error: python3 has no pip to install torch ${TORCH_VERSION} with" >&2
  exit 1
fi

echo "torch_wheel: installing torch ${TORCH_VERSION} + ${NVIDIA_WHEELS[*]} into ${DEST} (about 1.4 GB)" >&2
rm -rf "$DEST"
python3 -m pip install --quiet --no-deps --no-compile --disable-pip-version-check \
  --target "$DEST" "torch==${TORCH_VERSION}" "${NVIDIA_WHEELS[@]}" >&2
touch "$DEST/.complete"
echo "$prefix"
