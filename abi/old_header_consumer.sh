#!/bin/sh
# The other direction of the ABI promise: a program compiled against the 1.0
# header (abi/ztensor-1.0.h, kept as released) and linked against today's
# installed library runs. The consumers of tests/consumers are built against
# a directory holding only that header, linked with the install's
# libztensor.so.1, and run on a conformance file.
# usage: old_header_consumer.sh PREFIX LIBDIR CC CXX OUTDIR FILE.zt [EXTRA_FLAGS]
set -eu
prefix=$1 libdir=$2 cc=$3 cxx=$4 out=$5 file=$6 extra=${7:-}
here=$(cd "$(dirname "$0")" && pwd)
consumers=$(dirname "$here")/tests/consumers
rm -rf "$out"
mkdir -p "$out/include"
cp "$here/ztensor-1.0.h" "$out/include/ztensor.h"
lib="-L$prefix/$libdir -lztensor"
# shellcheck disable=SC2086 # word splitting of the flags is intended
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror $extra -I"$out/include" -o "$out/consumer_c" \
  "$consumers/c/consumer.c" $lib -lm
# shellcheck disable=SC2086
"$cxx" -std=c++17 -Wall -Wextra -pedantic -Werror $extra -I"$out/include" -o "$out/consumer_cpp" \
  "$consumers/cmake/main.cpp" $lib
export LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$out/consumer_c" "$file"
"$out/consumer_cpp" "$file"
echo "old_header_consumer: programs built against the 1.0 header ran against $(readlink -f "$prefix/$libdir/libztensor.so.1")"
