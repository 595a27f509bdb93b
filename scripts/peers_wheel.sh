#!/usr/bin/env bash
# The Python side of the wheel flavour's benchmarks: torchvision 0.26.0 (the
# release that matches torch 2.11.0) and the pure-Python packages torch
# imports, pip-installed into .deps/py-2.11/ beside the LibTorch wheel that
# scripts/torch_wheel.sh installs. bench/peers/python-wheel runs python3 on
# both. Not needed by the build; the torchrun test runs torchrun with it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/torch_wheel.sh >/dev/null
# A GPU node whose python3 already has torch 2.11 and torchvision: nothing to
# install (bench/peers/python-wheel then runs that python3 as it is).
if python3 -c 'import torch, torchvision, sys; sys.exit(0 if torch.__version__.startswith("2.11") else 1)' 2>/dev/null; then
  exit 0
fi
DEST=.deps/py-2.11
if [ -f "$DEST/.complete" ]; then exit 0; fi
rm -rf "$DEST"
python3 -m pip install --quiet --disable-pip-version-check --no-compile --target "$DEST" --no-deps torchvision==0.26.0
python3 -m pip install --quiet --disable-pip-version-check --no-compile --target "$DEST" \
  typing_extensions sympy networkx jinja2 fsspec filelock numpy pillow
touch "$DEST/.complete"
echo "peers_wheel: torchvision 0.26.0 and torch's Python dependencies in $DEST" >&2
