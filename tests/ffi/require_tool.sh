# Sourced by the test runners (bindings/*/run.sh, tests/ffi/python/run.sh,
# tests/remote/run.sh): each check exits 77 (CTest: Skipped) with a line
# saying why.
#
# require_tool LABEL TOOL VERSION_ARG HINT: TOOL is empty (not found at
# configure: HINT says how to enable it) or does not run; otherwise its
# version is printed.
require_tool() {
  label=$1 tool=$2 version_arg=$3 hint=$4
  if [ -z "$tool" ]; then
    echo "SKIPPED: $label not found; $hint"
    exit 77
  fi
  if ! "$tool" "$version_arg" >/dev/null 2>&1; then
    echo "SKIPPED: $tool does not run:"
    "$tool" "$version_arg" 2>&1 | sed 's/^/  /' || true
    exit 77
  fi
  "$tool" "$version_arg"
}

# require_python_modules PYTHON HINT MODULE...: PYTHON does not run or lacks
# a MODULE (HINT follows the list of missing ones).
require_python_modules() {
  python=$1 hint=$2
  shift 2
  missing=$("$python" -c '
import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' "$@" 2>&1) || {
    echo "SKIPPED: $python does not run: $missing"
    exit 77
  }
  if [ -n "$missing" ]; then
    echo "SKIPPED: $python lacks $missing$hint"
    exit 77
  fi
}
