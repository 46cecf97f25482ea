#!/bin/sh
# The Python package that installs alone (issue #43): from a copy of the
# source tree, `python3 -m build --wheel --no-isolation bindings/python`
# (Debian's python3-build, offline) configures and builds libztensor with
# CMake and ships it in a py3-none-<platform> wheel. Then, in two fresh
# virtual environments (with the system's site-packages, for numpy, pytest
# and torch, as an offline machine has them), the wheel, and then the
# directory itself (`pip install --no-build-isolation bindings/python`), are
# installed and used with nothing else: no ZTENSOR_LIBRARY, no installed
# library, no PKG_CONFIG_PATH, no PYTHONPATH. The package must load its own copy
# (ztensor.library_path()) and pass its tests: the wheel all of them, the
# directory install (the same files and library, installed another way)
# those of the core API and of torch, since the whole suite already runs
# twice (ffi.python and the wheel) and CI's time is kept under 40 minutes.
# The directory install runs in the tree the wheel was built in, so CMake
# finds its build there and has nothing left to compile: the build from
# nothing is the wheel's.
# usage: bundled.sh PYTHON OUTDIR SOURCE_ROOT
# Exit 77 (CTest: Skipped) when PYTHON lacks pip, setuptools, wheel, build,
# venv, numpy or pytest.
set -eu
python=$1 out=$2 root=$3

. "$(dirname "$0")/../require_tool.sh"
require_python_modules "$python" " (Debian: apt-get install python3-pip python3-setuptools python3-wheel \
python3-build python3-venv python3-numpy python3-pytest)" pip setuptools wheel build venv ensurepip numpy pytest

rm -rf "$out" && mkdir -p "$out/src/bindings" "$out/dist" "$out/elsewhere"
# What building the library needs, and the package (no build outputs).
for p in CMakeLists.txt zt.pc.in LICENSE cmake capi include src; do
  cp -R "$root/$p" "$out/src/"
done
cp -R "$root/bindings/python" "$out/src/bindings/python"
rm -rf "$out/src/bindings/python/build" "$out/src/bindings/python/"*.egg-info
unset ZTENSOR_LIBRARY PKG_CONFIG_PATH LD_LIBRARY_PATH ZTENSOR_BUILD_LIBRARY PYTHONPATH || true
export PYTHONDONTWRITEBYTECODE=1

echo "-- wheel: python3 -m build --wheel --no-isolation (builds libztensor with CMake)"
start=$(date +%s)
if ! "$python" -m build --wheel --no-isolation --outdir "$out/dist" "$out/src/bindings/python" \
    >"$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log"
  echo "FAIL: the wheel did not build"
  exit 1
fi
wheel=$(ls "$out"/dist/ztensor-*.whl)
echo "built $(basename "$wheel") in $(($(date +%s) - start)) s"
case $(basename "$wheel") in
  *-py3-none-linux_*.whl) ;;
  *) echo "FAIL: the wheel is not tagged py3-none-<platform>: $wheel"; exit 1 ;;
esac
"$python" -m zipfile -l "$wheel" | grep -q 'ztensor/libztensor.so.1 ' || {
  echo "FAIL: the wheel holds no ztensor/libztensor.so.1"; "$python" -m zipfile -l "$wheel"; exit 1; }

version=$(sed -n 's/^#define ZT_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$root/include/ztensor.h" | paste -sd.)
check='
import os, sys, ztensor, ztensor.torch
where = os.path.dirname(ztensor.__file__)
assert where.startswith(sys.argv[1]), (where, sys.argv[1])
assert ztensor.library_path() == os.path.realpath(os.path.join(where, "libztensor.so.1")), ztensor.library_path()
assert ztensor.__version__ == sys.argv[2] == ztensor.library_version(), (ztensor.__version__, sys.argv[2])
print("imported", ztensor.__version__, "with", ztensor.library_path())
'
for how in wheel directory; do
  env="$out/venv-$how"
  "$python" -m venv --system-site-packages "$env"
  echo "-- $how: pip install into a fresh venv"
  if [ "$how" = wheel ]; then
    "$env/bin/python" -m pip install --quiet --no-index --no-deps --disable-pip-version-check "$wheel"
  else
    "$env/bin/python" -m pip install --quiet --no-index --no-deps --no-build-isolation \
      --disable-pip-version-check "$out/src/bindings/python"
  fi
  (cd "$out/elsewhere" && "$env/bin/python" -c "$check" "$env" "$version")
  tests="$root/bindings/python/tests"
  if [ "$how" = wheel ]; then set -- "$tests"; else set -- "$tests/test_ztensor.py" "$tests/test_torch.py"; fi
  echo "-- $how: the package's tests"
  if ! (cd "$out/elsewhere" && "$env/bin/python" -m pytest -p no:cacheprovider -q \
      "$@" >"$out/pytest-$how.log" 2>&1); then
    tail -n 60 "$out/pytest-$how.log"
    echo "FAIL: the package's tests, installed from the $how"
    exit 1
  fi
  tail -n 1 "$out/pytest-$how.log"
done
echo "bundled package OK"
