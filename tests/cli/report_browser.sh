#!/usr/bin/env bash
# Renders a `dtbench report` page in headless Chromium and checks, in the DOM
# the browser built, that every chart is there and has a non-empty plotted
# area (the page's own script measures each chart with getBBox), the --trace
# Gantt chart of one iteration and the overlap chart included. A copy with
# one chart's marks removed must be flagged, so the check can fail.
# Usage: report_browser.sh path/to/dtbench   (needs Debian's chromium)
set -eu
DTBENCH=$(realpath "$1")
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "report_browser: chromium is not installed (make test installs it via scripts/setup.sh)" >&2
  exit 1
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"

# Buckets small enough for ddp to overlap some of them with backward.
"$DTBENCH" compare --models mlp --width 256 --num-classes 10 --batch-size 4 --iters 3 --warmup 1 \
  --threads 1 --world-sizes 1,2 --reducers ddp,sync --bucket-cap-mb 0.1,25 --first-bucket-cap-mb 0.1 \
  --jsonl p.jsonl --trace t.json > /dev/null 2>&1
"$DTBENCH" comm --nproc 2 -b 1K -e 16K -f 4 -n 3 -w 1 --collective allreduce,broadcast \
  --json comm.json > /dev/null
"$DTBENCH" report p.jsonl comm.json t.mlp-2R-ddp-0.1MB.json -o report.html > /dev/null

render() {  # html -> dumped DOM on stdout
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --user-data-dir="$work/profile" --dump-dom "file://$work/$1" 2> "$work/chromium.log"
}

render report.html > dom.html
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --user-data-dir="$work/profile" --window-size=900,1400 --screenshot="$work/shot.png" \
  "file://$work/report.html" 2>> "$work/chromium.log"

python3 - <<'PY'
import os, re
dom = open("dom.html").read()
body = re.search(r"<body[^>]*>", dom).group(0)
charts = int(re.search(r'data-charts="(\d+)"', body).group(1))
empty = int(re.search(r'data-empty-charts="(\d+)"', body).group(1))
# mlp: throughput, efficiency, percentiles, phases, time vs memory, bucket
# sweep; comm: 2 collectives; trace: overlap per strategy and bucket, one Gantt chart
assert charts == 10, charts
assert empty == 0, f"{empty} empty chart(s)"
sizes = re.findall(r'<svg class="chart"[^>]*data-plot-width="([\d.]+)" data-plot-height="([\d.]+)" data-marks="(\d+)"', dom)
assert len(sizes) == 10, sizes
assert 'id="gantt-' in dom, "no Gantt figure"
assert 'id="memory-mlp"' in dom, "no time-vs-memory figure"
assert 'id="overlap"' in dom, "no overlap figure"
for w, h, marks in sizes:
    assert float(w) > 50 and float(h) > 5 and int(marks) > 0, (w, h, marks)
png = open("shot.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000, len(png)
print("ok: chromium rendered", charts, "charts", sizes)
PY

# Negative control: strip the marks of the first chart; the page must notice.
python3 - <<'PY'
import re
html = open("report.html").read()
broken = re.sub(r'(<g class="plot">).*?(</g>\n<g class="legend">)', r'\1\2', html, count=1, flags=re.S)
assert broken != html
open("broken.html", "w").write(broken)
PY
render broken.html > dom2.html
grep -q 'data-empty-charts="1"' dom2.html
grep -q '1 chart(s) have nothing plotted' dom2.html
echo "report_browser: all passed"
