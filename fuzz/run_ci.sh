#!/bin/sh
# Builds the libFuzzer targets with clang and runs each for a bounded time.
#
#   fuzz/run_ci.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to 60. TARGET names are those of fuzz/*.cpp
# without "fuzz_" (open_walk, writer, format_safetensors, ...); default: all.
# Targets run ZT_FUZZ_JOBS at a time (default: the number of cores), one
# libFuzzer job each, starting from the committed corpus (fuzz/corpus/TARGET,
# copied: new inputs stay out of the tree) with the dictionary fuzz/zt.dict.
# Exits non-zero if any target finds a crash, leak, timeout or
# out-of-memory; the reproducer lands in $ZT_FUZZ_ARTIFACTS (default
# build-fuzz/artifacts/). Environment:
#   ZT_FUZZ_BUILD      build directory (default: build-fuzz beside fuzz/); one
#                      configured with ZT_BUILD_FUZZ=ON already is used as is
#   ZT_FUZZ_ARTIFACTS  where crashing inputs go
#   ZT_FUZZ_JOBS       targets run at once (default: nproc)
#   CC, CXX            compilers (default clang, clang++)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
seconds=${1:-60}
[ $# -gt 0 ] && shift
build=${ZT_FUZZ_BUILD:-$root/build-fuzz}
artifacts=${ZT_FUZZ_ARTIFACTS:-$build/artifacts}
jobs=${ZT_FUZZ_JOBS:-$(nproc)}

# A build directory configured with the fuzz targets already (scripts/test.sh
# passes its sanitized clang build, whose core the targets share) is used as
# it is; any other is configured for the targets alone.
if ! grep -qs '^ZT_BUILD_FUZZ:BOOL=ON$' "$build/CMakeCache.txt"; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
    -DZT_BUILD_FUZZ=ON -DZT_BUILD_TESTS=OFF -DZT_BUILD_CLI=OFF >/dev/null
fi

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

# run_target T: one bounded run of fuzz_T; its exit status lands in $work/T.rc.
run_target() {
  mkdir -p "$work/$1"
  [ -d "$here/corpus/$1" ] && cp "$here/corpus/$1/"* "$work/$1/" 2>/dev/null || true
  rc=0
  # A sharded model is a root and its shards, each at least 8 KiB (v2 blobs
  # sit at multiples of 4096): its inputs need more room.
  max_len=16384
  [ "$1" = shards ] && max_len=65536
  "$build/fuzz/fuzz_$1" "$work/$1" -dict="$here/zt.dict" -max_total_time="$seconds" \
    -max_len="$max_len" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$1-" 2>"$work/$1.log" || rc=$?
  echo "$rc" >"$work/$1.rc"
}

# Targets run side by side, $jobs at a time: the CI machine's cores are
# otherwise idle during this step, and each target gets its full time.
running=0
for t in $targets; do
  echo "== fuzz_$t: $seconds s"
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait
    running=0
  fi
done
wait

status=0
for t in $targets; do
  if [ "$(cat "$work/$t.rc")" != 0 ]; then
    tail -n 60 "$work/$t.log"
    echo "fuzz_$t FAILED: reproducer in $artifacts/"
    status=1
  else
    echo "fuzz_$t:"
    grep -E '^#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb' "$work/$t.log" || true
  fi
done
exit $status
