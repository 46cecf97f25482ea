#!/bin/sh
# Builds consumer.cpp against an installed package with pkg-config and
# strict C++20 flags, then runs it.
# usage: build_and_run.sh PREFIX LIBDIR CXX OUTDIR [EXTRA_FLAGS]
#   LIBDIR is relative to PREFIX ("lib", "lib/x86_64-linux-gnu").
set -eu
prefix=$1 libdir=$2 cxx=$3 out=$4 extra=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
# zt.pc names the configured prefix; the package was installed elsewhere
# (cmake --install --prefix), so point pkg-config at where it really is.
flags=$(pkg-config --define-variable=prefix="$prefix" --cflags --libs zt)
echo "pkg-config --cflags --libs zt: $flags"
# shellcheck disable=SC2086 # word splitting of the flags is intended
"$cxx" -std=c++20 -Wall -Wextra -Wshadow -Wconversion -pedantic -Werror $extra \
  -o "$out/consumer" "$here/consumer.cpp" $flags
LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$out/consumer" "$out/out.zt"
