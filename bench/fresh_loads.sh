#!/bin/sh
# The loop of the bindings' load benchmarks (bench_rust.sh, bench_cpp.sh):
# each load in a process of its own (a program's first load, into memory
# fresh from the system), the loads alternating, REPETITIONS rounds of
# PROGRAM MODEL LOAD DIR for MODEL in llm, small and each LOAD, its lines
# appended to OUT (emptied first). The program writes the models into DIR
# (ZT_BENCH_DIR) as PREFIX-llm.zt and PREFIX-small.zt on its first run
# (about 1.4 GB); they are deleted at the end.
# usage: fresh_loads.sh PROGRAM OUT.txt REPETITIONS PREFIX LOAD...
set -eu
program=$1 out=$2 reps=$3 prefix=$4
shift 4
dir=${ZT_BENCH_DIR:-.}
: >"$out"
i=0
while [ "$i" -lt "$reps" ]; do
  for model in llm small; do
    for load in "$@"; do
      "$program" "$model" "$load" "$dir" | tee -a "$out" >&2
    done
  done
  i=$((i + 1))
done
rm -f "$dir/$prefix-llm.zt" "$dir/$prefix-small.zt"
