#!/bin/sh
# Builds consumer.c against an installed package the way a user would, with
# pkg-config and strict C99 flags, then runs it on a conformance file.
# usage: build_and_run.sh PREFIX LIBDIR CC OUTDIR FILE.zt [EXTRA_FLAGS]
#   LIBDIR is relative to PREFIX ("lib", "lib/x86_64-linux-gnu").
set -eu
prefix=$1 libdir=$2 cc=$3 out=$4 file=$5 extra=${6:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
# zt.pc names the configured prefix; the package was installed elsewhere
# (cmake --install --prefix), so point pkg-config at where it really is.
# A static-only install needs the private dependencies too.
static=
[ -e "$prefix/$libdir/libztensor.so" ] || static=--static
flags=$(pkg-config --define-variable=prefix="$prefix" $static --cflags --libs zt)
echo "pkg-config --cflags --libs zt: $flags"
# The consumer checks that zt.pc, the header and the library say one version.
version=$(pkg-config --modversion zt)
# shellcheck disable=SC2086 # word splitting of the flags is intended
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror $extra "-DZT_PC_VERSION=\"$version\"" \
  -o "$out/consumer" "$here/consumer.c" $flags -lm
LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$out/consumer" "$file"
