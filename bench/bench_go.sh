#!/bin/sh
# The Go module's load benchmarks (bindings/go/bench_test.go) for the
# report: open + DecodeMany of whole models into Go memory, each against a
# goroutine a core reading the file into one new allocation. Builds the
# module against the library of BUILD, installed into BUILD/go-prefix.
# usage: bench_go.sh BUILD OUT.txt REPETITIONS
# Exit 77 without a working go (the report then says "not run").
set -eu
build=$1 out=$2 reps=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v go >/dev/null 2>&1 || { echo "bench_go: no go (Debian golang-go)" >&2; exit 77; }
prefix=$build/go-prefix
cmake --build "$build" --target zt >/dev/null # the install takes the CLI too
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(dirname "$(find "$prefix" -name zt.pc | head -n 1)")
export GOCACHE="$build/go-cache" GOPATH="$build/go-path" GOFLAGS=-mod=mod GOPROXY=off \
       GOTOOLCHAIN=local GOTELEMETRY=off CGO_ENABLED=1 PKG_CONFIG_PATH="$pc"
cd "$here/../bindings/go"
go test -c -o "$build/go-bench.test" .
# Each load in a process of its own, the four alternating: a program's
# first load, into memory fresh from the system, as a Go program loads a
# model (in one process the first load ran 1.5x faster than those after
# it, which met Go's zeroing of reused heap memory). The models are
# written into ZT_BENCH_DIR by the first (about 1.4 GB), deleted at the end.
: >"$out"
i=0
while [ "$i" -lt "$reps" ]; do
  for b in LLMDecodeMany LLMFloor SmallDecodeMany SmallFloor; do
    LD_LIBRARY_PATH="$(dirname "$pc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$build/go-bench.test" -test.run '^$' -test.bench "^BenchmarkLoad$b\$" -test.benchtime 1x \
      -test.count 1 | grep '^Benchmark' | tee -a "$out" >&2
  done
  i=$((i + 1))
done
rm -f "${ZT_BENCH_DIR:-.}/go-llm.zt" "${ZT_BENCH_DIR:-.}/go-small.zt"
