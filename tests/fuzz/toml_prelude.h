// Force-included (-include) before every source of the fuzz targets when toml++ is compiled header-only
// (GOARCHIVE_FUZZ_TOML_HEADER_ONLY=ON, scripts/fuzz.sh with FUZZ_TOML=1).
// toml++ 3.3.0 (Debian 12) asserts on some malformed input that it then reports as a normal parse error, e.g. a
// lone "[" before a newline trips TOML_ASSERT_ASSUME in parser::parse_key (parser.inl:3037). goarchive links
// the packaged library, built with NDEBUG and GCC, where those assertions are compiled out and the input gets
// "TOML syntax error ... expected bare key" (see tests/hostile/configs/syntax_lone_bracket.toml). Compile them
// out here too, so the fuzzer explores past them; ASan and UBSan still watch the parser.
#pragma once
#define TOML_ASSERT(expr) static_cast<void>(0)
