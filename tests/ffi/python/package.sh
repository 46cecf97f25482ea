#!/bin/sh
# The Python package as a user installs it (bindings/python/README.md): pip
# builds and installs bindings/python/ offline (no index, no build isolation) beside the
# INSTALLED library, and the package is imported from elsewhere, finding the
# library each documented way: $ZTENSOR_LIBRARY, `pkg-config zt` (an install
# under another prefix), and with neither, one error naming all three.
# usage: package.sh PYTHON PREFIX LIBDIR OUTDIR SOURCE_ROOT
#   LIBDIR is relative to PREFIX.
# Exit 77 (CTest: Skipped) when PYTHON lacks pip or setuptools.
set -eu
python=$1 prefix=$2 libdir=$3 out=$4 root=$5

if ! { "$python" -c 'import pip' && "$python" -c 'import setuptools, numpy'; } 2>/dev/null; then
  echo "SKIPPED: $python lacks pip, setuptools or numpy (Debian: python3-pip python3-setuptools python3-numpy)"
  exit 77
fi

rm -rf "$out" && mkdir -p "$out/src/include" "$out/src/bindings" "$out/site" "$out/elsewhere"
# A copy of the source the package is built from (bindings/python/ and the
# header that holds the version), so that the build leaves the tree alone.
cp -R "$root/bindings/python" "$out/src/bindings/python"
rm -rf "$out/src/bindings/python/build" "$out/src/bindings/python/ztensor.egg-info"
cp "$root/include/ztensor.h" "$out/src/include/"
# ZTENSOR_BUILD_LIBRARY=0: the package without a library of its own (there
# is no source tree around this copy anyway); bundled.sh tests the other.
ZTENSOR_BUILD_LIBRARY=0 "$python" -m pip install --quiet --no-build-isolation --no-index --no-deps \
  --disable-pip-version-check --prefix "$out/site" "$out/src/bindings/python"
pkg=$(find "$out/site" -type d -name ztensor -path '*-packages/*' | head -n 1)
[ -n "$pkg" ] || { echo "FAIL: pip installed no ztensor package under $out/site"; exit 1; }
[ -f "$pkg/py.typed" ] || { echo "FAIL: the installed package has no py.typed"; exit 1; }
site=$(dirname "$pkg")
version=$(sed -n 's/^#define ZT_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$root/include/ztensor.h" | paste -sd.)
lib="$prefix/$libdir/libztensor.so.1"

cd "$out/elsewhere"
check='
import sys, ztensor
assert ztensor.__file__.startswith(sys.argv[1]), ztensor.__file__
assert ztensor.__version__ == sys.argv[2] == ztensor.library_version(), (ztensor.__version__, sys.argv[2])
print("imported", ztensor.__version__, "from", ztensor.__file__)
'
unset ZTENSOR_LIBRARY PKG_CONFIG_PATH || true
echo "-- ZTENSOR_LIBRARY"
ZTENSOR_LIBRARY="$lib" PYTHONPATH="$site" "$python" -c "$check" "$site" "$version"
echo "-- pkg-config zt"
PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" PYTHONPATH="$site" "$python" -c "$check" "$site" "$version"
echo "-- none of the three"
if "$python" -c 'import ctypes; ctypes.CDLL("libztensor.so.1")' 2>/dev/null; then
  echo "note: a libztensor.so.1 is installed system-wide here: the failing case is not run"
else
  msg=$(PYTHONPATH="$site" PKG_CONFIG_PATH="$out/none" "$python" -c 'import ztensor' 2>&1) && {
    echo "FAIL: imported without a library"; exit 1; }
  for want in ZTENSOR_LIBRARY "system loader" "pkg-config zt" "cmake --install"; do
    case $msg in
      *"$want"*) ;;
      *) echo "FAIL: the error does not mention '$want':"; echo "$msg"; exit 1 ;;
    esac
  done
  echo "$msg" | tail -n 1
fi
echo "package OK"
