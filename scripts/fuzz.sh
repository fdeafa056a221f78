#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan) in build-fuzz and runs each one for a
# while on its seed corpus. Exits non-zero when a target crashes, trips a sanitizer, breaks an invariant or hangs.
#   FUZZ_SECONDS=N   seconds per target (default 30)
#   FUZZ_TARGETS="fuzz_config fuzz_identifiers"   which targets to run
#   BUILD_DIR=DIR    build directory (default build-fuzz)
#   FUZZ_TOML=1      also instrument the toml++ parser (header-only build; finds known toml++ 3.3.0 bugs quickly)
# Seeds: tests/fuzz/corpus_<name>/ plus, for fuzz_config, every tests/hostile/configs file (placeholders filled
# with plausible values) and examples/shop.toml. New inputs the fuzzer finds go to BUILD_DIR/corpus/<target>,
# crash inputs to BUILD_DIR/artifacts/ (reproduce with: BUILD_DIR/<target> FILE).
# Needs the Debian packages clang and libclang-rt-14-dev (installed here when missing and running as root).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-30}
targets=${FUZZ_TARGETS:-"fuzz_config fuzz_identifiers"}
build_dir=${BUILD_DIR:-build-fuzz}

missing=()
for pkg in clang libclang-rt-14-dev; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "fuzz.sh: install ${missing[*]} (as root) first" >&2; exit 1; }
  echo "fuzz.sh: installing ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

CC=clang CXX=clang++ cmake -S tests/fuzz -B "$build_dir" -DGOARCHIVE_FUZZ=ON \
  "-DGOARCHIVE_FUZZ_TOML_HEADER_ONLY=$([ "${FUZZ_TOML:-0}" = 1 ] && echo ON || echo OFF)" >/dev/null
cmake --build "$build_dir" -j2

# Seeds for fuzz_config: the hostile corpus with its placeholders filled in, so that most files parse.
seeds="$build_dir/seeds_config"
rm -rf "$seeds"
mkdir -p "$seeds"
for f in tests/hostile/configs/*.toml; do
  sed -e 's/@SRC_DB@/shop/g; s/@DST_DB@/shop_archive/g; s/@JOB_SCHEMA@/goarchive/g; s/@HOST@/127.0.0.1/g' \
      -e 's/@SOURCE_PORT@/3306/g; s/@DEST_PORT@/3307/g; s/@USER@/archiver/g; s/@PASSWORD@/secret/g' \
      -e 's#@WORLD_READABLE_PASSWORD_FILE@#/nonexistent/pw#g; s#@PRIVATE_DIR@#/nonexistent#g' \
      "$f" > "$seeds/$(basename "$f")"
done
cp examples/shop.toml "$seeds/"

status=0
mkdir -p "$build_dir/artifacts"
for t in $targets; do
  name=${t#fuzz_}
  corpus="$build_dir/corpus/$t"
  mkdir -p "$corpus"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$build_dir/artifacts/$t-" "$corpus" "tests/fuzz/corpus_$name")
  if [ "$t" = fuzz_config ]; then
    args=(-dict=tests/fuzz/config.dict -max_len=16384 "${args[@]}" "$seeds")
  else
    args=(-max_len=4096 "${args[@]}")
  fi
  echo "fuzz.sh: $t for ${seconds}s"
  log="$build_dir/$t.log"
  if "$build_dir/$t" "${args[@]}" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz.sh: $t: no finding ($runs executions; log $log)"
  else
    status=1
    echo "fuzz.sh: $t FOUND A PROBLEM; log $log, inputs in $build_dir/artifacts/" >&2
    grep -E 'ERROR|SUMMARY|invariant violated|Test unit written|deadly signal|runtime error' "$log" | head -20 >&2 || true
  fi
done
exit "$status"
