# Sourced by bindings/*/run.sh: require_tool LABEL TOOL VERSION_ARG HINT
# exits 77 (CTest: Skipped) with a line saying why when TOOL is empty
# (not found at configure: HINT says how to enable it) or does not run,
# and otherwise prints its version.
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
