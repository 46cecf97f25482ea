#!/bin/sh
# Runs the HTTP tests (tests/remote/test_http.py) against a loopback nginx
# started by the tests themselves.
# usage: run.sh PYTHON LIBRARY PYTHON_SOURCE_DIR ZT_CLI
# Exit 77 (CTest: Skipped) when nginx or PYTHON's numpy/pytest is missing.
set -eu
python=$1 library=$2 src=$3 cli=$4

if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "SKIPPED: no nginx (Debian: apt-get install nginx-light)"
  exit 77
fi
. "$(dirname "$0")/../ffi/require_tool.sh"
require_python_modules "$python" "" numpy pytest
export PATH="$PATH:/usr/sbin"
export ZTENSOR_LIBRARY="$library" ZT_CLI="$cli" PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}"
unset ZT_HTTP_BEARER_TOKEN
if [ -n "${ZT_SANITIZE:-}" ]; then
  LD_PRELOAD=$(sh "$(dirname "$0")/../ffi/sanitizer_preload.sh" "$ZT_SANITIZE")
  export LD_PRELOAD ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
fi
exec "$python" -m pytest -p no:cacheprovider -q "$(dirname "$0")/test_http.py"
