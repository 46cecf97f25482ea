#!/bin/sh
# Builds the libFuzzer targets with clang and runs each for a bounded time.
#
#   fuzz/run_ci.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 60. TARGET names are those of fuzz/*.cpp
# without "fuzz_" (open_walk, writer, format_safetensors, ...); default: all.
# Targets run one after another, one job each, starting from the committed
# corpus (fuzz/corpus/TARGET, copied: new inputs stay out of the tree) with
# the dictionary fuzz/zt.dict. Exits non-zero on the first crash, leak,
# timeout or out-of-memory; the reproducer lands in $ZT_FUZZ_ARTIFACTS
# (default build-fuzz/artifacts/). Environment:
#   ZT_FUZZ_BUILD      build directory (default: build-fuzz beside fuzz/)
#   ZT_FUZZ_ARTIFACTS  where crashing inputs go
#   CC, CXX            compilers (default clang, clang++)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
seconds=${1:-60}
[ $# -gt 0 ] && shift
build=${ZT_FUZZ_BUILD:-$root/build-fuzz}
artifacts=${ZT_FUZZ_ARTIFACTS:-$build/artifacts}

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
  -DZT_BUILD_FUZZ=ON -DZT_BUILD_TESTS=OFF -DZT_BUILD_CLI=OFF >/dev/null

if [ $# -gt 0 ]; then
  targets="$*"
else
  targets=$(cd "$here" && ls fuzz_*.cpp | sed 's/^fuzz_//; s/\.cpp$//')
fi
for t in $targets; do
  cmake --build "$build" --target "fuzz_$t" -- -j2 >/dev/null
done

mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
status=0
for t in $targets; do
  mkdir -p "$work/$t"
  [ -d "$here/corpus/$t" ] && cp "$here/corpus/$t/"* "$work/$t/" 2>/dev/null || true
  echo "== fuzz_$t: $seconds s"
  if ! "$build/fuzz/fuzz_$t" "$work/$t" -dict="$here/zt.dict" -max_total_time="$seconds" \
      -max_len=16384 -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
      -artifact_prefix="$artifacts/$t-" 2>"$work/$t.log"; then
    tail -n 60 "$work/$t.log"
    echo "fuzz_$t FAILED: reproducer in $artifacts/"
    status=1
    break
  fi
  grep -E '^#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb' "$work/$t.log" || true
done
exit $status
