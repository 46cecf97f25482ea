#!/bin/sh
# Builds roundtrip.rs with plain rustc against the INSTALLED package (link
# flags from its zt.pc) and runs its tests.
# usage: run.sh PREFIX LIBDIR OUTDIR [RUSTC]
#   LIBDIR is relative to PREFIX; RUSTC empty means "not found at configure".
# Exit 77 (CTest: Skipped) when no working rustc is available.
set -eu
prefix=$1 libdir=$2 out=$3 rustc=${4:-}
here=$(cd "$(dirname "$0")" && pwd)


if [ -z "$rustc" ]; then
  echo "SKIPPED: rustc not found (looked on PATH, in ~/.cargo/bin and /usr/local/bin;" \
       "set -DZT_RUSTC=/path/to/rustc to enable the Rust consumer)"
  exit 77
fi
if ! "$rustc" --version >/dev/null 2>&1; then
  echo "SKIPPED: $rustc does not run (no default toolchain?):"
  "$rustc" --version 2>&1 | sed 's/^/  /' || true
  exit 77
fi
echo "$("$rustc" --version)"

mkdir -p "$out"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
# zt.pc names the configured prefix; the package was installed elsewhere
# (cmake --install --prefix), so point pkg-config at where it really is.
pc="pkg-config --define-variable=prefix=$prefix"
libs=$($pc --libs-only-L zt)
echo "pkg-config --libs-only-L zt: $libs"
search=""
for flag in $libs; do search="$search -L native=${flag#-L}"; done

# shellcheck disable=SC2086 # word splitting of the flags is intended
"$rustc" --edition 2021 --test -C debuginfo=0 $search -o "$out/roundtrip" "$here/roundtrip.rs"
# A sanitized library needs its runtime loaded first (leaks are reported).
preload=$(sh "$here/../sanitizer_preload.sh" "${ZT_SANITIZE:-}")
[ -z "$preload" ] || echo "sanitized library (-fsanitize=$ZT_SANITIZE): LD_PRELOAD=$preload"
LD_PRELOAD="$preload" LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$out/roundtrip" --test-threads=2
