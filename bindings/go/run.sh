#!/bin/sh
# Builds the Go module (cgo, `#cgo pkg-config: zt`) against the INSTALLED
# package, runs `go vet` and then its tests and examples.
# usage: run.sh PREFIX LIBDIR OUTDIR [GO]
#   LIBDIR is relative to PREFIX; GO empty means "not found at configure".
# Exit 77 (CTest: Skipped) when no working go is available.
set -eu
prefix=$1 libdir=$2 out=$3 go=${4:-}
here=$(cd "$(dirname "$0")" && pwd)

. "$here/../../tests/ffi/require_tool.sh"
require_tool go "$go" version "install Debian's golang-go, or set -DZT_GO=/path/to/go, to \
enable the Go module's tests"

mkdir -p "$out"
out=$(cd "$out" && pwd)
# Everything go writes stays in OUTDIR; nothing is fetched (the module has
# no dependencies beyond the standard library).
export GOCACHE="$out/cache" GOPATH="$out/gopath" GOFLAGS=-mod=mod GOPROXY=off \
       GOTOOLCHAIN=local GOTELEMETRY=off CGO_ENABLED=1
# zt.pc finds its prefix from where it lies (${pcfiledir}), so the package
# installed elsewhere (cmake --install --prefix) needs only the search path:
# cgo runs pkg-config itself.
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
echo "pkg-config --cflags --libs zt: $(pkg-config --cflags --libs zt)"

cd "$here"
# gofmt of the same toolchain, where there is one.
gofmt="$("$go" env GOROOT)/bin/gofmt"
if [ -x "$gofmt" ]; then
  unformatted=$("$gofmt" -l .)
  if [ -n "$unformatted" ]; then
    echo "FAILED: not gofmt-formatted: $unformatted"
    exit 1
  fi
fi
"$go" vet ./...
"$go" test -c -o "$out/ztensor.test" .
# A sanitized library needs its runtime loaded first; the Go runtime's own
# allocations are not ours to judge, so leaks are not reported.
preload=$(sh "$here/../../tests/ffi/sanitizer_preload.sh" "${ZT_SANITIZE:-}")
[ -z "$preload" ] || echo "sanitized library (-fsanitize=$ZT_SANITIZE): LD_PRELOAD=$preload"
# The tests write under their own temporary directories (t.TempDir,
# os.TempDir for the examples) and run from OUTDIR.
cd "$out"
LD_PRELOAD="$preload" ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
  LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$out/ztensor.test" -test.count=1 -test.v
