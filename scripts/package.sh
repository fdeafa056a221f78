#!/usr/bin/env bash
# Builds the Debian package: a Release build of its own (build-pkg; BUILD_DIR overrides), then `cpack -G DEB`
# there (cmake/Packaging.cmake says what goes in). Prints the path of goarchive_<version>_<arch>.deb on stdout;
# install it with `dpkg -i PATH` (or `apt-get install ./PATH`, which also pulls in its Depends).
#   BUILD_DIR=DIR   build directory (default build-pkg)
#   CI=true         warnings are errors
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh >&2

build_dir=${BUILD_DIR:-build-pkg}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
  "-DGOARCHIVE_WERROR=$([ "${CI:-}" = true ] && echo ON || echo OFF)" >&2
cmake --build "$build_dir" -j2 >&2

out=$build_dir/package
rm -rf "$out"
(cd "$build_dir" && cpack -G DEB -B "$PWD/package") >&2
debs=("$out"/goarchive_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { echo "package.sh: expected one .deb in $out" >&2; exit 1; }
deb=$(cd "$out" && pwd)/$(basename "${debs[0]}")
echo "package.sh: built $deb; install it with: dpkg -i $deb" >&2
echo "$deb"
