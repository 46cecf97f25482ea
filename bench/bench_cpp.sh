#!/bin/sh
# The C++ wrapper's load benchmark (bench/load_cpp.cpp, built as
# bench_load_cpp) for the report: open + every tensor of a model into memory
# of its own (Reader::read_many, and Reader::decode_many into
# std::vector<std::byte>s), against a thread a core reading the file into
# one new buffer (4 KiB pages, and huge pages).
# usage: bench_cpp.sh BUILD OUT.txt REPETITIONS
set -eu
build=$1 out=$2 reps=$3
# Each load in a process of its own (a program's first load), the loads
# alternating; the models are written into ZT_BENCH_DIR by the first
# (about 1.4 GB), deleted at the end.
dir=${ZT_BENCH_DIR:-.}
: >"$out"
i=0
while [ "$i" -lt "$reps" ]; do
  for model in llm small; do
    for load in read-many by-hand floor floor-huge; do
      "$build/bench/bench_load_cpp" "$model" "$load" "$dir" | tee -a "$out" >&2
    done
  done
  i=$((i + 1))
done
rm -f "$dir/cpp-llm.zt" "$dir/cpp-small.zt"
