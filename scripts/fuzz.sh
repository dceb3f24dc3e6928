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
mkdir -p "$work/pickle" "$work/json" "$work/text" "$work/device" "$BUILD/fuzz-artifacts"
find testdata hangdx/ingest/formats examples -type f \( -name 'fr_trace_rank_*' ! -name '*.json' -o -name '*.pickle' \) \
  -exec cp {} "$work/pickle/" \; 2>/dev/null || true
find testdata hangdx/ingest/formats -type f -name '*.json' -size -64k -exec cp --backup=numbered {} "$work/json/" \; 2>/dev/null || true
find testdata/cases testdata/torch -type f \( -name '*.log' -o -name '*.txt' \) -size -64k \
  -exec cp --backup=numbered {} "$work/text/" \; 2>/dev/null || true
find examples testdata/device -type f -name '*.json' -size -64k -exec cp --backup=numbered {} "$work/device/" \; 2>/dev/null || true
for target in pickle_fuzzer:pickle fr_json_fuzzer:json text_log_fuzzer:text nccl_log_fuzzer:text \
    torch_log_fuzzer:text stack_dump_fuzzer:text hccl_plog_fuzzer:text nccl_ras_fuzzer:text device_json_fuzzer:device; do
  bin=${target%%:*}
  corpus=$work/${target##*:}
  echo "fuzz: $bin for ${SECONDS_EACH}s on $(ls "$corpus" | wc -l) seeds"
  rc=0
  # Fixed seed and run count: the CI run is the same every time (a new crash
  # shows up when code changes, not by luck); the time is only a cap.
  "$BUILD/fuzz/$bin" -seed=1 -runs="$RUNS" -max_total_time="$SECONDS_EACH" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$BUILD/fuzz-artifacts/" "$corpus" >"$work/log" 2>&1 || rc=$?
  grep -E "^(stat::number_of_executed_units|Done|==.*ERROR|SUMMARY)" "$work/log" || true
  if [ "$rc" -ne 0 ]; then
    tail -40 "$work/log" >&2
    echo "fuzz: $bin found a problem (exit $rc); the input is in $BUILD/fuzz-artifacts/" >&2
    exit 1
  fi
done
