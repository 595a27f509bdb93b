#!/usr/bin/env bash
# Installs the Debian packages dtbench needs, and only those that are missing.
# Idempotent: a second run installs nothing. Used by `make bench` / `make test`.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev            # LibTorch 1.13 C++ frontend + c10d (Gloo, Reducer, TCPStore)
  libgloo-dev             # headers ProcessGroupGloo.hpp includes
  libopenmpi-dev openmpi-bin
  libtensorpipe-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev libgmock-dev
  libhwloc-dev
  libopenblas0-pthread    # switches the system BLAS away from the slow reference one
  python3-torch           # PyTorch's own DDP / dist.all_reduce, the peers in benchmarks
  python3-torchvision     # the Python DDP peer's models (bench/peers/torch_ddp.py)
  python3-yaml            # the Kubernetes manifests of docs/guide/clusters.md, read by tests/cli/multinode.sh
)
# Extra packages some targets need (e.g. chromium for the report test) are
# passed as arguments.
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "setup: error: missing packages (${missing[*]}) and not root; install them or run as root" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
