#!/bin/sh
# Checks an installed libztensor.so.1: its soname is libztensor.so.1 and its
# dynamic symbol table defines only zt_* symbols (plus the version node
# ZTENSOR_1 of capi/ztensor.map), so no libstdc++, libcbor, xxHash or core
# symbol leaks into the ABI.
# usage: check_exports.sh PATH/TO/libztensor.so.1
set -eu
lib=${1:?usage: check_exports.sh PATH/TO/libztensor.so.1}
[ -f "$lib" ] || { echo "FAIL: $lib does not exist"; exit 1; }

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" != "libztensor.so.1" ]; then
  echo "FAIL: soname is '$soname', expected 'libztensor.so.1'"
  exit 1
fi

# "ADDRESS TYPE NAME[@@VERSION]" -> "TYPE NAME"
symbols=$(nm -D --defined-only "$lib" | awk '{ sub(/@.*/, "", $3); print $2, $3 }')
total=$(printf '%s\n' "$symbols" | grep -c . || true)
# Absolute symbols named like a version node are the version definitions.
leaked=$(printf '%s\n' "$symbols" | awk '!($2 ~ /^zt_/) && !($1 == "A" && $2 ~ /^ZTENSOR_[0-9]+$/)')
if [ -n "$leaked" ]; then
  echo "FAIL: symbols other than zt_* are exported from $lib:"
  printf '%s\n' "$leaked" | head -50
  exit 1
fi
exported=$(printf '%s\n' "$symbols" | awk '$2 ~ /^zt_/' | wc -l)
for required in zt_open zt_open_memory zt_close zt_last_error zt_version zt_component_map zt_verify; do
  printf '%s\n' "$symbols" | awk -v s="$required" '$2 == s { found = 1 } END { exit !found }' ||
    { echo "FAIL: $required is not exported"; exit 1; }
done
echo "OK: soname $soname; $exported zt_* symbols exported, nothing else ($total dynamic symbols defined)"
