#!/usr/bin/env bash
# Real Horovod, the peer of `--reducer horovod` (bench/compare_horovod.sh,
# tests/horovod_peer_test.sh): horovod 0.28.1 from PyPI, built against
# Debian's python3-torch 1.13 with Gloo and MPI (no TensorFlow, no MXNet),
# into .deps/horovod/ (a venv that sees the system site packages, so it uses
# Debian's torch). About 8 minutes on 2 cores; not part of CI's every run.
# Needs root for apt (pybind11-dev, python3-venv) where they are missing.
#   bash scripts/horovod.sh     then   .deps/horovod/bin/horovodrun -np 2 --gloo ...
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.deps/horovod
if [ -f "$DEST/.complete" ]; then exit 0; fi
PY=/usr/bin/python3   # Debian's: the one with python3-torch (pyenv's has no torch)
"$PY" -c 'import torch' 2>/dev/null || { echo "horovod.sh: $PY has no torch (apt-get install python3-torch)" >&2; exit 1; }
missing=()
dpkg -s pybind11-dev >/dev/null 2>&1 || missing+=(pybind11-dev)
"$PY" -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "horovod.sh: needs ${missing[*]} (apt-get install as root)" >&2; exit 1; }
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi
rm -rf "$DEST"
"$PY" -m venv --system-site-packages "$DEST"
# Horovod's setup.py imports torch to find its headers: no build isolation.
HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITH_MPI=1 \
HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1 \
MAKEFLAGS=-j"$(nproc)" \
  "$DEST/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
  --no-build-isolation horovod==0.28.1
"$DEST/bin/python" -c 'import horovod.torch as hvd; assert hvd.gloo_built() and hvd.mpi_built()'
touch "$DEST/.complete"
echo "horovod.sh: horovod 0.28.1 (gloo, mpi) on torch $("$PY" -c 'import torch; print(torch.__version__)') in $DEST" >&2
