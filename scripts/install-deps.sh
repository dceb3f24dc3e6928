#!/usr/bin/env bash
# Installs everything hangdx needs on a fresh Debian 12 machine: the C++
# toolchain and libraries (Debian packages), then the Python side (pip):
# build tools, pytest, PyTorch (CPU, for the real-hang fault-injection suite
# and the torchfrtrace comparison) and tabulate (torchfrtrace's table output).
# Idempotent. Needs root (or sudo) for apt-get.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config libre2-dev \
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libsimdjson-dev libcli11-dev \
  python3-dev graphviz >/dev/null
# hangdx watch (docs/live.md): cpp-httplib for its HTTP service, hiredis for
# --redis, and redis-server, which the tests start on a free loopback port
# and stop (they never use a system-wide Redis).
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  libcpp-httplib-dev libhiredis-dev redis-server >/dev/null

PY=${PYTHON:-python3}
"$PY" -m pip install -q --upgrade "scikit-build-core>=0.8" "pybind11>=2.10" pytest tabulate
# The CPU build of PyTorch 2.13 (on disk on our machines; elsewhere from PyPI).
if ! "$PY" -c "import torch" 2>/dev/null; then
  "$PY" -m pip install -q "torch==2.13.0" || echo "install-deps: torch not installed; the real-PyTorch tests will be skipped" >&2
fi
