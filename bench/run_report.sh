#!/usr/bin/env bash
# Builds the benchmarks (Release) and runs the whole performance report of
# issue 7: every figure a ratio against a baseline measured in the same run
# on the same bytes. About 5 minutes on an idle 2-core machine.
#
#   bash bench/run_report.sh            # prints the report, keeps the JSON
#   bash bench/run_report.sh --update   # also writes the table into BENCHMARKS.md
#   bash bench/run_report.sh bench_zstd # reruns one program, reuses the other JSON
#
# Environment: ZT_BENCH_BUILD (build directory, default build-bench),
# ZT_BENCH_REPS (repetitions per benchmark, default 5; medians are reported),
# ZT_BENCH_DIR (where the test files go, default BUILD/bench-files; they are
# deleted by the programs that create them).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ZT_BENCH_BUILD:-$root/build-bench}
reps=${ZT_BENCH_REPS:-5}
out=$build/bench-report
export ZT_BENCH_DIR=${ZT_BENCH_DIR:-$build/bench-files}

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DZT_BUILD_BENCH=ON \
  -DZT_BUILD_TESTS=OFF -DZT_BUILD_CLI=ON >/dev/null
# bench/all holds the C++ programs; the Python ones load the shared library.
ninja -C "$build" -j2 bench/all ztensor
update=()
programs=()
for arg in "$@"; do
  case $arg in
    --update) update=(--update "$root/BENCHMARKS.md") ;;
    bench_*) programs+=("$arg") ;;
    *) echo "usage: $0 [--update] [bench_pages bench_memory bench_open bench_raw bench_zstd bench_planes bench_write bench_convert bench_torch bench_load bench_remote bench_go bench_rust bench_cpp]" >&2; exit 2 ;;
  esac
done
[[ ${#programs[@]} -gt 0 ]] || programs=(bench_pages bench_memory bench_open bench_raw bench_zstd bench_planes bench_write bench_convert bench_torch bench_load bench_remote bench_go bench_rust bench_cpp)
mkdir -p "$out" "$ZT_BENCH_DIR"

load() { cut -d' ' -f1-3 /proc/loadavg; }
load_start=$(load)
if awk -v n="$(nproc)" '{ exit !($1 > n / 2) }' /proc/loadavg; then
  echo "warning: load average $load_start on $(nproc) cores: other jobs share the CPUs;" \
    "single-thread ratios hold, multi-thread speed-ups will not show" >&2
fi
started=$(date +%s)

gbench() {
  local name=$1
  shift
  echo "== $name" >&2
  "$build/bench/$name" --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
    --benchmark_out_format=json --benchmark_out="$out/$name.json" \
    --benchmark_display_aggregates_only=true "$@" >&2
}

for p in "${programs[@]}"; do
  before=$(load)
  case $p in
    bench_pages) echo "== $p" >&2 && { "$build/bench/$p" >"$out/pages.json" || echo "bench_pages: claim or control failed" >&2; } ;;
    bench_memory) echo "== $p" >&2 && "$build/bench/$p" >"$out/memory.json" ;;
    # ztensor.torch (Python, Debian's python3-torch) over this build's library.
    bench_torch) echo "== $p" >&2 && ZTENSOR_LIBRARY="$build/libztensor.so.1" PYTHONPATH="$root/bindings/python" \
      /usr/bin/python3 "$root/bench/bench_torch.py" "$out/bench_torch.json" "$reps" ;;
    # Loading a model to CPU (and GPU, where torch sees one): bench_load.py.
    bench_load) echo "== $p" >&2 && ZTENSOR_LIBRARY="$build/libztensor.so.1" PYTHONPATH="$root/bindings/python" \
      /usr/bin/python3 "$root/bench/bench_load.py" "$out/bench_load.json" "$reps" ;;
    # zt_open_url against a loopback nginx (Debian's nginx-light) and curl.
    bench_remote) echo "== $p" >&2 && ZTENSOR_LIBRARY="$build/libztensor.so.1" PYTHONPATH="$root/bindings/python" \
      /usr/bin/python3 "$root/bench/bench_remote.py" "$out/bench_remote.json" "$reps" ;;
    bench_go) echo "== $p" >&2 && { sh "$root/bench/bench_go.sh" "$build" "$out/bench_go.txt" "$reps" ||
      echo "bench_go: not run (exit $?)" >&2; } ;;
    bench_rust) echo "== $p" >&2 && { sh "$root/bench/bench_rust.sh" "$build" "$out/bench_rust.txt" "$reps" ||
      echo "bench_rust: not run (exit $?)" >&2; } ;;
    # The C++ wrapper's whole-model load (Reader::read_many), fresh processes.
    bench_cpp) echo "== $p" >&2 && sh "$root/bench/bench_cpp.sh" "$build" "$out/bench_cpp.txt" "$reps" ;;
    *) gbench "$p" ;;
  esac
  echo "$(date -u +%H:%MZ) load $before -> $(load)" >"$out/load-$p.txt"
done

cat >"$out/machine.json" <<EOF
{"cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')",
 "nproc": $(nproc), "kernel": "$(uname -r)",
 "mem": "$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)",
 "load_start": "$load_start", "load_end": "$(load)", "date": "$(date -u +%Y-%m-%dT%H:%MZ)",
 "reps": $reps, "seconds": $(($(date +%s) - started))}
EOF

/usr/bin/python3 "$root/bench/report.py" "$out" "${update[@]}" | tee "$out/report.md"
echo "(JSON and report in $out; $(($(date +%s) - started)) s)" >&2
