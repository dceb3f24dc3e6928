#!/usr/bin/env bash
# A long fuzz campaign (not CI; issue 14 asks for 10^7 executions per target):
# builds the libFuzzer targets with ASan and UBSan into BUILD_DIR, then runs
# every row of the format table, the loader's path over all rows and the
# device path, one after the other, each for RUNS executions or SECONDS at
# most, at the lowest CPU priority on one core, with inputs of at most MAX_LEN
# bytes (libFuzzer's -max_len; larger seeds are cut). A summary line per target
# (executions, seconds, exec/s, and what was found) goes to
# BUILD_DIR/fuzz-campaign/summary.txt; crashing inputs to
# BUILD_DIR/fuzz-campaign/artifacts/, corpora grow in BUILD_DIR/fuzz-campaign/corpus-*/.
# Usage: scripts/fuzz_campaign.sh [BUILD_DIR] [RUNS] [SECONDS] [MAX_LEN]
#        (defaults: build-fuzz, 10000000, 36000, 65536)
#   HANGDX_FUZZ_TARGETS="fr-pickle torch-log" runs only those targets (the
#   names of the summary lines, less their binary: a format row, `all`,
#   `device_json_fuzzer`, `catalogue_fuzzer`), in that order; a corpus folder
#   that exists is reused, so a campaign can go on across several runs.
#   nohup scripts/fuzz_campaign.sh build-fuzz 10000000 > fuzz.log 2>&1 &
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-fuzz}
RUNS=${2:-10000000}
SECS=${3:-36000}
MAX_LEN=${4:-65536}
out=$BUILD/fuzz-campaign
mkdir -p "$out/artifacts"
if [ ! -x "$BUILD/fuzz/format_fuzzer" ] || [ ! -x "$BUILD/fuzz/catalogue_fuzzer" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHANGDX_BUILD_FUZZERS=ON \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null || exit 2
  nice -n 19 cmake --build "$BUILD" -j1 --target format_fuzzer device_json_fuzzer catalogue_fuzzer || exit 2
fi
seeds() {  # $1: folder; $2: device, catalogue or formats (as scripts/fuzz.sh seeds them)
  mkdir -p "$1"
  if [ "$2" = catalogue ]; then
    cp hangdx/ingest/messages/data/*.msgs "$1/"
    find testdata/public -type f -name '*.log' -size -64k -exec cp --backup=numbered {} "$1/" \; 2>/dev/null
  elif [ "$2" = device ]; then
    find examples testdata/device -type f -name '*.json' -size -64k -exec cp --backup=numbered {} "$1/" \; 2>/dev/null
  else
    find testdata hangdx/ingest/formats examples -type f -size -64k \( -name 'fr_trace_rank_*' -o -name '*.pickle' \
      -o -name '*.json' -o -name '*.log' -o -name '*.txt' \) -exec cp --backup=numbered {} "$1/" \; 2>/dev/null
  fi
  return 0
}
targets=""
for f in $(HANGDX_FUZZ_FORMAT=list "$BUILD/fuzz/format_fuzzer"); do targets="$targets format_fuzzer:$f"; done
targets="$targets format_fuzzer:all device_json_fuzzer: catalogue_fuzzer:"
if [ -n "${HANGDX_FUZZ_TARGETS:-}" ]; then
  chosen=""
  for want in $HANGDX_FUZZ_TARGETS; do
    for target in $targets; do
      [ "${target##*:}" = "$want" ] || [ "${target%%:*}" = "$want" ] && chosen="$chosen $target"
    done
  done
  targets=$chosen
fi
for target in $targets; do
  bin=${target%%:*}
  format=${target##*:}
  name=$bin${format:+-$format}
  corpus=$out/corpus-$name
  kind=formats
  [ "$bin" = device_json_fuzzer ] && kind=device
  [ "$bin" = catalogue_fuzzer ] && kind=catalogue
  [ -d "$corpus" ] || seeds "$corpus" "$kind"
  start=$(date +%s)
  rc=0
  HANGDX_FUZZ_FORMAT=${format#all} nice -n 19 taskset -c 0 "$BUILD/fuzz/$bin" -runs="$RUNS" -max_total_time="$SECS" \
    -max_len="$MAX_LEN" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" \
    "$corpus" >"$out/$name.log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$name.log" | grep -o '[0-9]*$')
  secs=$(($(date +%s) - start))
  found=$([ "$rc" -eq 0 ] && echo nothing || grep -m1 -E '^==.*ERROR|^SUMMARY|deadly signal|timeout|out-of-memory' "$out/$name.log")
  echo "$name: ${execs:-?} executions in ${secs} s, max_len $MAX_LEN ($(( ${execs:-0} / (secs > 0 ? secs : 1) )) exec/s), exit $rc: $found" |
    tee -a "$out/summary.txt"
done
