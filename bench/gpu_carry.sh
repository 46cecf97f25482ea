#!/bin/sh
# Prepares .gpu/ for a lent GPU machine (the device tool): the built
# library without its debug sections (the tree that travels is limited to
# 64 MiB) and the Debian libraries it links, which that machine's image may
# lack. Then: run "sh bench/gpu_check.sh" with carry [".gpu"]; gpu_check.sh
# puts on LD_LIBRARY_PATH only those the machine is missing.
#   usage: sh bench/gpu_carry.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
mkdir -p "$root/.gpu/deps"
strip --strip-debug -o "$root/.gpu/libztensor.so.1" "$build/libztensor.so.1"
ldd "$build/libztensor.so.1" | awk '/=>/ {print $3}' |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt)[.-]' |
  while read -r lib; do cp -L "$lib" "$root/.gpu/deps/"; done
du -sh "$root/.gpu"
