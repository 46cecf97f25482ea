#!/usr/bin/env bash
# Every test of libztensor, as CI runs them (.ci/run):
#   1. scripts/setup.sh --test installs missing Debian packages;
#   2. build/ (Release as users build it, with GCC, plus -g for valgrind's
#      traces; warnings are errors): build, compile the core's sources as
#      one batch and zt_cli's as another (a name two sources share fails,
#      whatever batches a machine's build makes), then all of CTest (unit tests,
#      install + consumers + export check, the conformance suite, the ABI
#      check against abi/ and its deliberate-break self-test);
#   2b. build-clang/ (Release with clang, warnings are errors, built with
#      AddressSanitizer + UndefinedBehaviorSanitizer, clang's own; each
#      source compiled alone, where build/ compiles the library in
#      batches, so a name two sources share or a missing include fails): build
#      everything, then the unit, C++ wrapper, CLI and hardening tests and
#      the fuzz corpus replays under the sanitizers. One build serves both:
#      a separate -O0 sanitizer build cost 10 of the suite's minutes. It
#      builds the libFuzzer targets too, its core instrumented for coverage
#      and shared with them (a second instrumented core cost 5 minutes);
#   2c. the README's first command, `bash scripts/demo.sh`, in a fresh clone
#      of HEAD with nothing but the defaults (what a new user runs; uncommitted
#      changes are not in it);
#   3. build-tsan/ (ThreadSanitizer): the tests where threads share a reader,
#      the writer's compression workers, batch decoding's workers, and
#      boxes read in shares;
#   4. fuzz/run_ci.sh over build-clang/: every libFuzzer target for
#      ZT_FUZZ_SECONDS (default 30) each, one per core at a time, when clang
#      is installed (scripts/setup.sh installs it).
# Exits non-zero if any step fails; the last line is a one-line summary.
# Builds go through ccache where it is installed (ZT_CCACHE=0: not).
# Environment: ZT_BUILD_DIR, ZT_CLANG_BUILD_DIR (build directories),
# ZT_JOBS (parallel jobs, default nproc), ZT_CONFORMANCE_CASES (check.py
# --case patterns, ;-separated; unset: the cache's value, by default all).
set -uo pipefail
cd "$(dirname "$0")/.."

build=${ZT_BUILD_DIR:-build}
jobs=${ZT_JOBS:-$(nproc)}
log_dir=$(mktemp -d "${TMPDIR:-/tmp}/zt-test.XXXXXX")
trap 'rm -rf "$log_dir"' EXIT

results=()
failed=0

# step NAME COMMAND...: runs a step, shows its output, records the outcome.
# Each step's wall time goes into the summary ("build ok 212s"), so that the
# suite's time (kept well under 30 minutes on 2 cores) is seen step by step.
step() {
  local name=$1 started=$SECONDS
  shift
  echo "==== $name: $*"
  if "$@" 2>&1 | tee "$log_dir/$name.log"; then
    results+=("$name ok $((SECONDS - started))s")
    return 0
  fi
  results+=("$name FAILED $((SECONDS - started))s")
  failed=1
  return 1
}

# "100% tests passed, 0 tests failed out of 127" -> "127/127"
ctest_counts() {
  sed -n 's/.* tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' "$log_dir/$1.log" |
    awk '{ printf "%d/%d passed", $2 - $1, $2 }'
}

conformance=()
if [ -n "${ZT_CONFORMANCE_CASES+set}" ]; then
  conformance=("-DZT_CONFORMANCE_CASES=$ZT_CONFORMANCE_CASES")
fi

step setup bash scripts/setup.sh --test || true

# Builds go through ccache where it is installed: CI runs on a clean clone,
# so without it every run compiles the same sources three times over (about
# 20 of the suite's minutes). Paths are taken relative to the clone and the
# directory is left out of the hash, so a clone in another folder (CI's, a
# developer's earlier run) hits the same entries; warnings are replayed from
# the cache, so -Werror still fails. ZT_CCACHE=0 turns it off.
launcher=()
if [ "${ZT_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  ccache --zero-stats >/dev/null
fi

# Warnings are errors here, never in a user's build (ZT_WERROR is OFF by
# default). -O3 warns where -O2 does not, so CI builds Release like users.
if step configure cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-g \
     -DCMAKE_CXX_FLAGS=-g -DZT_WERROR=ON -DZT_BUILD_TESTS=ON -DZT_ABI_CHECK=ON "${conformance[@]}" "${launcher[@]}" &&
   step build cmake --build "$build" -j "$jobs"; then
  # Every core source compiled as one batch, and every zt_cli source: a name
  # two sources share fails here, whatever batches a machine's build makes.
  step unity-check cmake --build "$build" -j "$jobs" --target zt_unity_check_core zt_unity_check_cli || true
  step ctest ctest --test-dir "$build" --output-on-failure -j "$jobs" || true
  results+=("ctest: $(ctest_counts ctest)")
fi

clang_build=${ZT_CLANG_BUILD_DIR:-build-clang}
if command -v clang++ >/dev/null 2>&1; then
  if step clang-configure cmake -S . -B "$clang_build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DZT_WERROR=ON \
       -DZT_SANITIZE=address,undefined -DZT_BUILD_TESTS=ON -DZT_BUILD_CLI=ON -DZT_UNITY_BUILD=OFF \
       -DZT_BUILD_FUZZ=ON "${launcher[@]}" &&
     step clang-build cmake --build "$clang_build" -j "$jobs"; then
    step clang-sanitized env UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
      ctest --test-dir "$clang_build" -L 'unit|cpp|cli|hardening|fuzz-replay' --output-on-failure \
      -j "$jobs" || true
    results+=("clang + ASan/UBSan: $(ctest_counts clang-sanitized)")
  fi
else
  results+=("clang FAILED: no clang++ (scripts/setup.sh installs it)")
  failed=1
fi

# The README's first command exactly as a new user runs it: a fresh clone,
# default options (warnings are not errors there), the demo's own build.
demo_clone=$(mktemp -d "${TMPDIR:-/tmp}/zt-demo.XXXXXX")
if step demo-clone git clone -q . "$demo_clone/libztensor"; then
  step demo bash -c 'cd "$1" && bash scripts/demo.sh' demo "$demo_clone/libztensor" || true
fi
rm -rf "$demo_clone"

tsan=${ZT_TSAN_BUILD_DIR:-build-tsan}
if step tsan-configure cmake -S . -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
     -DZT_SANITIZE=thread -DZT_BUILD_TESTS=ON -DZT_BUILD_CLI=OFF "${launcher[@]}" &&
   step tsan-build cmake --build "$tsan" -j "$jobs" --target threads_test access_test \
     frame_pipeline_test writer_test batch_decode_test helper_threads_test slice_test \
     inflated_members_test; then
  step tsan-threads env TSAN_OPTIONS=halt_on_error=1 "$tsan/tests/hardening/threads_test" || true
  step tsan-access env TSAN_OPTIONS=halt_on_error=1 "$tsan/tests/access_test" --gtest_filter='*Thread*' || true
  step tsan-frames env TSAN_OPTIONS=halt_on_error=1 "$tsan/tests/frame_pipeline_test" || true
  # The disk-full test's forked child starts helper threads (a 9 MiB
  # component hashed beside its write): fork is not TSan's, left out.
  step tsan-writer env TSAN_OPTIONS=halt_on_error=1 "$tsan/tests/writer_test" \
    --gtest_filter='-*DiskFull*' || true
  # zt_decode_many/zt_decode_ranges: workers, per-request counters, callbacks.
  step tsan-batch env TSAN_OPTIONS=halt_on_error=1 "$tsan/tests/batch_decode_test" || true
  # zt_dense_slice: a box's runs copied or read in shares on every core.
  step tsan-slices env TSAN_OPTIONS=halt_on_error=1 "$tsan/tests/slice_test" || true
  # Deflated zip members inflated side by side, each its own stream.
  step tsan-inflate env TSAN_OPTIONS=halt_on_error=1 "$tsan/tests/inflated_members_test" || true
  # for_each_index's parked helper threads (fork is not TSan's: left out).
  step tsan-helpers env TSAN_OPTIONS=halt_on_error=1 "$tsan/tests/helper_threads_test" \
    --gtest_filter='-*Fork*' || true
fi

if command -v clang++ >/dev/null 2>&1; then
  step fuzz env ZT_FUZZ_BUILD="$clang_build" bash fuzz/run_ci.sh "${ZT_FUZZ_SECONDS:-30}" || true
else
  results+=("fuzz skipped: no clang++")
fi

if [ ${#launcher[@]} -gt 0 ]; then
  results+=("ccache: $(ccache --print-stats 2>/dev/null | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 } $1 == "cache_miss" { m = $2 } END { printf "%d hits, %d misses", h, m }')")
fi
results+=("total $((SECONDS / 60)) min")
summary=$(IFS=';'; echo "${results[*]}" | sed 's/;/; /g')
if [ "$failed" -eq 0 ]; then
  echo "test.sh: PASSED ($summary)"
else
  echo "test.sh: FAILED ($summary)"
fi
# The plain closing line: tests passed and failed over every ctest run.
cat "$log_dir"/ctest.log "$log_dir"/clang-sanitized.log "$log_dir"/tsan-threads.log \
  "$log_dir"/tsan-access.log 2>/dev/null |
  sed -n 's/.* tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\1 \2/p' |
  awk -v steps="$failed" '{ f += $1; n += $2 } END { if (steps && !f) f = 1; printf "%d passed, %d failed\n", n - f, f }'
exit "$failed"
