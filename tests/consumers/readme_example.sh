#!/bin/sh
# The README's C example, as a reader copies it: the first ```c block of
# README.md, built with the README's own command line (cc -std=c99 example.c
# $(pkg-config --cflags --libs zt)) against an installed package, then run in
# an empty directory. It must exit 0 and print the line the example promises.
# usage: readme_example.sh README.md PREFIX LIBDIR CC OUTDIR [EXTRA_FLAGS]
set -eu
readme=$1 prefix=$2 libdir=$3 cc=$4 out=$5 extra=${6:-}
rm -rf "$out"
mkdir -p "$out"
awk '/^```c$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' "$readme" >"$out/example.c"
[ -s "$out/example.c" ] || { echo "FAIL: no \`\`\`c block in $readme"; exit 1; }
command=$(awk '/^```sh$/ { inside = 1; next } inside && /^```$/ { inside = 0 } inside && /^cc .*example\.c/ { print; exit }' "$readme")
[ "$command" = 'cc -std=c99 example.c $(pkg-config --cflags --libs zt)' ] ||
  { echo "FAIL: the README's build command changed: '$command' (update this test with it)"; exit 1; }
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
cd "$out"
# The README's command, with the test's compiler and the install's real prefix.
# shellcheck disable=SC2046,SC2086 # word splitting is the README's own
"$cc" -std=c99 $extra example.c $(pkg-config --define-variable=prefix="$prefix" --cflags --libs zt) -o example
LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ./example >output.txt
cat output.txt
grep -qx 'layer1.weight: 24 bytes, first 1' output.txt ||
  { echo "FAIL: the example did not print 'layer1.weight: 24 bytes, first 1'"; exit 1; }
[ -s model.zt ] || { echo "FAIL: the example wrote no model.zt"; exit 1; }
echo "README example: built with the README's command, ran, wrote model.zt"
