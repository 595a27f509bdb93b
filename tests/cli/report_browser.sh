#!/usr/bin/env bash
# Renders a `dtbench report` page in headless Chromium and checks, in the DOM
# the browser built, that it opens with what the runs found, that every chart
# is there and has a non-empty plotted area (the page's own script measures
# each chart with getBBox), the --trace Gantt chart of one iteration and the
# overlap chart included, and that no chart's x-axis labels are drawn over
# each other. A sweep without its 1-rank row leaves its efficiency chart out
# with a line saying why. A copy with one chart's marks removed, and one with
# two labels moved onto each other, must be flagged, so the checks can fail.
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
"$DTBENCH" ddp --model mlp --width 256 --num-classes 10 --batch-size 4 --iters 3 --warmup 1 --threads 1 \
  --world-sizes 2 --no-baseline --json wide.json > /dev/null 2>&1
"$DTBENCH" report wide.json -o wide.html > /dev/null

# A layout search: its layouts as bars, best first, and the finding.
"$DTBENCH" project --model llama3-70b --seq-len 8192 --batch-size 16 --optimizer adamw --param-dtype bf16 \
  --ranks-per-node 8 --intra-bw 360GB/s --intra-latency 3us --inter-bw 8x400Gbit/s --inter-latency 10us \
  --tflops 528.3 --optimizer-ms 30 --attention flash --memory-per-rank 96GB --search --world-sizes 256 --top 5 \
  --json search.json > /dev/null
"$DTBENCH" report search.json -o search.html > /dev/null

render() {  # html -> dumped DOM on stdout
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --user-data-dir="$work/profile" --dump-dom "file://$work/$1" 2> "$work/chromium.log"
}

render report.html > dom.html
render wide.html > wide_dom.html
render search.html > search_dom.html
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
assert charts == 14, charts
assert empty == 0, f"{empty} empty chart(s)"
over = int(re.search(r'data-overlapping-ticks="(\d+)"', body).group(1))
assert over == 0, f"{over} pair(s) of x-axis labels drawn over each other"
assert dom.index("What the runs found") < dom.index("<svg"), "the findings come first"
assert re.search(r"mlp at 2 ranks: \S+.* is the fastest of \d+ runs", dom), "no training finding"
assert "allreduce over gloo on 2 ranks: bus bandwidth peaks at" in dom, "no collective finding"
assert "Left out" not in dom
wide = open("wide_dom.html").read()
wbody = re.search(r"<body[^>]*>", wide).group(0)
assert 'data-empty-charts="0"' in wbody and 'data-overlapping-ticks="0"' in wbody, wbody
assert "Left out: mlp: scaling efficiency vs ranks" in wide and 'id="efficiency-mlp"' in wide
assert '<figure id="efficiency-mlp"' not in wide
assert "scaling efficiency is unknown" in wide
search = open("search_dom.html").read()
sbody = re.search(r"<body[^>]*>", search).group(0)
assert 'data-charts="2"' in sbody and 'data-empty-charts="0"' in sbody and 'data-overlapping-ticks="0"' in sbody, sbody
assert 'id="search-rate-search-json"' in search and 'id="search-memory-search-json"' in search
assert re.search(r"llama3-70b on 256 ranks \(search.json\): the fastest layout that fits 96 GiB per rank is \S+ on dp", search)
sizes = re.findall(r'<svg class="chart"[^>]*data-plot-width="([\d.]+)" data-plot-height="([\d.]+)" data-marks="(\d+)"', dom)
assert len(sizes) == 14, sizes
assert 'id="arrival-allreduce"' in dom and 'id="latency-broadcast"' in dom, "no arrival heat map or latency chart"
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
# Negative control: two x-axis labels of the first chart moved onto each other.
python3 - <<'PY'
import re
html = open("report.html").read()
ticks = list(re.finditer(r'<text class="tick xtick" x="([\d.]+)"', html))
assert len(ticks) >= 2
a, b = ticks[0], ticks[1]
moved = html[:b.start(1)] + a.group(1) + html[b.end(1):]
open("overlap.html", "w").write(moved)
PY
render overlap.html > dom3.html
grep -q 'data-overlapping-ticks="[1-9]' dom3.html
echo "report_browser: all passed"
