#!/bin/sh
# Runs the pytest tests of bindings/python/ztensor with the built library.
# usage: run.sh PYTHON LIBRARY PYTHON_SOURCE_DIR
# Exit 77 (CTest: Skipped) when PYTHON lacks numpy or pytest.
set -eu
python=$1 library=$2 src=$3

. "$(dirname "$0")/../require_tool.sh"
require_python_modules "$python" " (Debian: apt-get install python3-numpy python3-pytest)" numpy pytest

export ZTENSOR_LIBRARY="$library" PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1
if [ -n "${ZT_SANITIZE:-}" ]; then
  # The interpreter is not instrumented: the sanitizer runtimes must be
  # loaded first. Python's own allocations are not ours to judge, so leaks
  # are not reported.
  LD_PRELOAD=$(sh "$(dirname "$0")/../sanitizer_preload.sh" "$ZT_SANITIZE")
  export LD_PRELOAD ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  echo "sanitized library (-fsanitize=$ZT_SANITIZE): LD_PRELOAD=$LD_PRELOAD"
fi
exec "$python" -m pytest -p no:cacheprovider -q "$src/tests"
