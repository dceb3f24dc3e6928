#!/usr/bin/env bash
# Runs each libFuzzer target for N seconds from a seed corpus of real dumps,
# logs and stack dumps (testdata/).
# Usage: scripts/fuzz.sh BUILD_DIR [SECONDS]   (built with -DHANGDX_BUILD_FUZZERS=ON)
#        FUZZ_RUNS=-1 scripts/fuzz.sh build-fuzz 3600   for a long, random run
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:?build dir}
SECONDS_EACH=${2:-20}
RUNS=${FUZZ_RUNS:-30000}  # per target; FUZZ_RUNS=-1 fuzzes until the time cap
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/inputs" "$work/device" "$work/catalogue" "$BUILD/fuzz-artifacts"
# One corpus for every input format: pickles, JSON dumps and text logs (a
# format's parser is fuzzed on the others' seeds too).
find testdata hangdx/ingest/formats examples -type f \( -name 'fr_trace_rank_*' ! -name '*.json' -o -name '*.pickle' \) \
  -exec cp --backup=numbered {} "$work/inputs/" \; 2>/dev/null || true
find testdata hangdx/ingest/formats -type f -name '*.json' -size -64k -exec cp --backup=numbered {} "$work/inputs/" \; 2>/dev/null || true
find testdata/cases testdata/torch testdata/public -type f \( -name '*.log' -o -name '*.txt' \) -size -64k \
  -exec cp --backup=numbered {} "$work/inputs/" \; 2>/dev/null || true
find examples testdata/device -type f -name '*.json' -size -64k -exec cp --backup=numbered {} "$work/device/" \; 2>/dev/null || true
# The catalogue fuzzer: its own files, one row per seed too (they are long).
for f in hangdx/ingest/messages/data/*.msgs; do
  awk -v dir="$work/catalogue" -v base="$(basename "$f" .msgs)" 'BEGIN{RS="";n=0} {n++; print > (dir "/" base "_" n ".msgs")}' "$f"
done
find testdata/public -type f -name "*.log" -size -64k -exec cp --backup=numbered {} "$work/catalogue/" \; 2>/dev/null || true
# The rows of the format table (hangdx formats), each fuzzed on its own,
# then the loader's path over all of them ("all"), then the device path.
targets=""
for f in $(HANGDX_FUZZ_FORMAT=list "$BUILD/fuzz/format_fuzzer"); do targets="$targets format_fuzzer:$f"; done
targets="$targets format_fuzzer:all device_json_fuzzer: catalogue_fuzzer:"
for target in $targets; do
  bin=${target%%:*}
  format=${target##*:}
  corpus=$work/inputs
  [ "$bin" = device_json_fuzzer ] && corpus=$work/device
  [ "$bin" = catalogue_fuzzer ] && corpus=$work/catalogue
  name=$bin${format:+ ($format)}
  echo "fuzz: $name for ${SECONDS_EACH}s on $(ls "$corpus" | wc -l) seeds"
  rc=0
  # Fixed seed and run count: the CI run is the same every time (a new crash
  # shows up when code changes, not by luck); the time is only a cap.
  HANGDX_FUZZ_FORMAT=${format#all} "$BUILD/fuzz/$bin" -seed=1 -runs="$RUNS" -max_total_time="$SECONDS_EACH" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$BUILD/fuzz-artifacts/" "$corpus" >"$work/log" 2>&1 || rc=$?
  grep -E "^(stat::number_of_executed_units|Done|==.*ERROR|SUMMARY)" "$work/log" || true
  if [ "$rc" -ne 0 ]; then
    tail -40 "$work/log" >&2
    echo "fuzz: $name found a problem (exit $rc); the input is in $BUILD/fuzz-artifacts/" >&2
    exit 1
  fi
done
