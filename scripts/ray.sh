#!/usr/bin/env bash
# Ray, for `dtbench launch --ray` (src/launch/ray_driver.py) and its tests
# (tests/cli/ray_cluster.sh): ray==2.60.0 from PyPI into .deps/ray/ (a venv
# of Debian's python3; ~280 MB). Not part of CI's every run: the Ray test
# calls this script and skips with the reason where it cannot install.
#   bash scripts/ray.sh      then   .deps/ray/bin/ray start --head ...
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.deps/ray
VERSION=2.60.0
if [ -f "$DEST/.complete" ]; then exit 0; fi
PY=/usr/bin/python3
if ! "$PY" -c 'import ensurepip' 2>/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "ray.sh: needs python3-venv (apt-get install as root)" >&2; exit 1; }
  apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
rm -rf "$DEST"
"$PY" -m venv "$DEST"
"$DEST/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "ray[default]==$VERSION"
"$DEST/bin/python" -c "import ray; assert ray.__version__ == '$VERSION', ray.__version__"
touch "$DEST/.complete"
echo "ray.sh: ray $VERSION in $DEST" >&2
