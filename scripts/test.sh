#!/usr/bin/env bash
# Builds goarchive and runs the whole test suite (unit + integration + e2e)
# against throw-away local servers. Extra arguments go to ctest (e.g. -L unit).
#   SANITIZE=1       ASan/UBSan build in build-asan
#   BUILD_DIR=DIR    build directory (default build, or build-asan)
#   KEEP_SERVERS=1   leave the servers running afterwards
#   CI=true          warnings are errors
# Servers that were already running before are left running.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

build_dir=${BUILD_DIR:-build}
cmake_args=(-DCMAKE_BUILD_TYPE=Debug "-DGOARCHIVE_WERROR=$([ "${CI:-}" = true ] && echo ON || echo OFF)")
if [ "${SANITIZE:-0}" = 1 ]; then
  build_dir=${BUILD_DIR:-build-asan}
  cmake_args+=(-DGOARCHIVE_SANITIZE=ON)
fi
cmake -S . -B "$build_dir" "${cmake_args[@]}"
cmake --build "$build_dir" -j2

if [ "${KEEP_SERVERS:-0}" != 1 ] && ! bash scripts/servers.sh status >/dev/null; then
  trap 'bash scripts/servers.sh stop' EXIT
fi
bash scripts/servers.sh start
eval "$(bash scripts/servers.sh env)"

status=0
ctest --test-dir "$build_dir" --output-on-failure "$@" || status=$?
echo "test.sh: ctest exited with status $status"
exit "$status"
