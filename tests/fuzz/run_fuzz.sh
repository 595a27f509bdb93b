#!/usr/bin/env bash
# Builds the report-reader fuzz target with clang (-fsanitize=fuzzer,address)
# and fuzzes it for a bounded time, starting from tests/fuzz/corpus. The
# inputs in tests/fuzz/regressions (past findings) are replayed first. A
# crash is saved under the build folder and fails the run; copy it into
# tests/fuzz/regressions once fixed. Usage: run_fuzz.sh BUILD_DIR [SECONDS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../src" && pwd)
OUT=$1/fuzz
SECONDS_BUDGET=${2:-${DTBENCH_FUZZ_SECONDS:-60}}
CXX=${FUZZ_CXX:-clang++}
command -v "$CXX" >/dev/null || { echo "run_fuzz: $CXX not found (apt-get install clang libclang-rt-14-dev)"; exit 1; }
mkdir -p "$OUT/corpus" "$OUT/crashes"
sources=("$SRC"/report/*.cc "$SRC"/stats/*.cc "$SRC"/core/error.cc "$SRC"/core/units.cc "$SRC"/core/log.cc)
echo "run_fuzz: building $OUT/report_reader_fuzz"
"$CXX" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$SRC" "${sources[@]}" "$HERE/report_reader_fuzz.cc" -lfmt -o "$OUT/report_reader_fuzz"
regressions=("$HERE"/regressions/*)
if [ -e "${regressions[0]}" ]; then
  echo "run_fuzz: replaying ${#regressions[@]} regression input(s)"
  "$OUT/report_reader_fuzz" "${regressions[@]}"
fi
echo "run_fuzz: fuzzing for ${SECONDS_BUDGET}s"
"$OUT/report_reader_fuzz" "$OUT/corpus" "$HERE/corpus" -max_total_time="$SECONDS_BUDGET" \
  -max_len=65536 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$OUT/crashes/" -print_final_stats=1
