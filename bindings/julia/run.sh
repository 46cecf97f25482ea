#!/bin/sh
# Runs the ZTensor package's tests (`Pkg.test()`, test/runtests.jl) against
# the INSTALLED library, where Julia exists.
# usage: run.sh PREFIX LIBDIR OUTDIR [JULIA]
#   LIBDIR is relative to PREFIX; JULIA empty means "not found at configure".
# Exit 77 (CTest: Skipped) when no julia is available, which is the normal
# case: Julia is not packaged on the systems this project builds on.
set -eu
prefix=$1 libdir=$2 out=$3 julia=${4:-}
here=$(cd "$(dirname "$0")" && pwd)

. "$here/../../tests/ffi/require_tool.sh"
if [ -n "${ZT_SANITIZE:-}" ]; then
  echo "SKIPPED: the library is built with -fsanitize=$ZT_SANITIZE and julia does not load" \
       "the sanitizer runtime; the plain build runs these tests"
  exit 77
fi
require_tool julia "$julia" --version "bindings/julia/ZTensor is tested only where Julia \
exists (Julia is not packaged here; see docs/bindings.md). Set -DZT_JULIA=/path/to/julia to run it."

lib=$(ls "$prefix/$libdir"/libztensor.so.[0-9]* 2>/dev/null | head -n 1)
if [ -z "$lib" ]; then
  echo "FAILED: no libztensor.so.N in $prefix/$libdir (is the package installed?)"
  exit 1
fi
echo "ZTENSOR_LIBRARY=$lib"

mkdir -p "$out"
out=$(cd "$out" && pwd)
# Pkg writes a Manifest.toml into the project it tests: test a fresh copy in
# OUTDIR, so that the source tree is never written to (it may be read-only).
rm -rf "$out/ZTensor"
cp -R "$here/ZTensor" "$out/ZTensor"
# Everything Julia writes (compiled caches, logs) stays in OUTDIR; nothing is
# fetched: the package depends on standard libraries only (Libdl; Test for
# the tests). Two threads, so that the threaded tests run threaded.
export JULIA_DEPOT_PATH="$out/depot" JULIA_PKG_OFFLINE=true JULIA_NUM_THREADS=2
export ZTENSOR_LIBRARY="$lib"
cd "$out"
exec "$julia" --startup-file=no --project="$out/ZTensor" -e 'using Pkg; Pkg.test()'
