#!/bin/sh
# Runs roundtrip.jl against the INSTALLED library, where Julia exists.
# usage: run.sh PREFIX LIBDIR OUTDIR [JULIA]
# Exit 77 (CTest: Skipped) when no julia is available, which is the normal
# case: Julia is not packaged here and roundtrip.jl is documentation.
set -eu
prefix=$1 libdir=$2 out=$3 julia=${4:-}
here=$(cd "$(dirname "$0")" && pwd)

if [ -z "$julia" ]; then
  echo "SKIPPED: julia not found; tests/ffi/julia/roundtrip.jl is a documentation example" \
       "(Julia is not packaged here; see docs/bindings.md). Set -DZT_JULIA=/path/to/julia to run it."
  exit 77
fi
if [ -n "${ZT_SANITIZE:-}" ]; then
  echo "SKIPPED: the library is built with -fsanitize=$ZT_SANITIZE and julia does not load" \
       "the sanitizer runtime; the plain build runs this example"
  exit 77
fi
mkdir -p "$out"
lib=$(ls "$prefix/$libdir"/libztensor.so.[0-9]* | head -n 1)
ZTENSOR_LIBRARY="$lib" "$julia" --startup-file=no "$here/roundtrip.jl"
