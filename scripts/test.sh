#!/usr/bin/env bash
# Runs every test: builds the C++ core with its GoogleTest suites and CLI,
# runs them under ctest, briefly runs the libFuzzer targets, then installs
# the Python package and runs pytest (Python API, real-PyTorch scenarios).
# Usage: scripts/test.sh [--fuzz-seconds N]   (default 12 per target: one per input format, the loader path, the device path)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=12
if [ "${1:-}" = "--fuzz-seconds" ]; then FUZZ_SECONDS=$2; fi
JOBS=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DHANGDX_BUILD_TESTS=ON >/dev/null
cmake --build build -j "$JOBS"
(cd build && ctest --output-on-failure -j "$JOBS")

if command -v clang++ >/dev/null && [ "$FUZZ_SECONDS" -gt 0 ]; then
  CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHANGDX_BUILD_FUZZERS=ON -DHANGDX_BUILD_TESTS=OFF -DHANGDX_BUILD_CLI=OFF >/dev/null
  cmake --build build-fuzz -j "$JOBS"
  scripts/fuzz.sh build-fuzz "$FUZZ_SECONDS"
fi

# Whole-run benchmark, smoke size (the big runs are by hand: docs/performance.md).
bench_dir=$(mktemp -d)
python3 scripts/bench_whole.py --smoke --workdir "$bench_dir" --hangdx "$PWD/build/bin/hangdx" | tail -4
rm -rf "$bench_dir"

python3 -m pip install -q .
HANGDX_BIN="$PWD/build/bin/hangdx" python3 -m pytest -q tests/python
# hangdx watch on real 4-rank gloo jobs (about 3 minutes; skipped without torch).
HANGDX_BIN="$PWD/build/bin/hangdx" python3 -m pytest -q tests/live/test_torch_live.py
