#!/bin/sh
# The C++ wrapper's load benchmark (bench/load_cpp.cpp, built as
# bench_load_cpp) for the report: open + every tensor of a model into memory
# of its own (Reader::read_many, and Reader::decode_many into
# std::vector<std::byte>s), against a thread a core reading the file into
# one new buffer (4 KiB pages, and huge pages).
# usage: bench_cpp.sh BUILD OUT.txt REPETITIONS
set -eu
build=$1 out=$2 reps=$3
sh "$(dirname "$0")/fresh_loads.sh" "$build/bench/bench_load_cpp" "$out" "$reps" cpp \
  read-many by-hand floor floor-huge
