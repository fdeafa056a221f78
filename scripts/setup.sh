#!/usr/bin/env bash
# Installs the Debian 12 packages goarchive needs to build, test and run its
# demo. Idempotent: does nothing (and needs no network) when all are present.
# A system mariadb service may start on install; our test servers do not
# collide with it (own ports, sockets and data directories).
set -euo pipefail

packages=(
  build-essential cmake pkg-config g++
  libmariadb-dev libcli11-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
  libssl-dev doctest-dev
  mariadb-server mariadb-client percona-toolkit python3 python3-pymysql
  time procps iproute2 man-db groff-base clang libclang-rt-14-dev valgrind
  dpkg-dev    # dpkg-shlibdeps and dpkg-deb: the Debian package (scripts/package.sh, tests/e2e/test_package.py)
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$pkg")
done
[ ${#missing[@]} -gt 0 ] || exit 0

[ "$(id -u)" -eq 0 ] || { echo "setup.sh: run as root to install: ${missing[*]}" >&2; exit 1; }
echo "setup.sh: installing ${missing[*]}"
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
