#!/usr/bin/env bash
# The README's first command: sets the project up, builds the `zt` tool,
# writes an example checkpoint with one object of every kind (dense f32 and
# bf16, FP8, a CSR matrix, a 4-bit quantized_group weight, zstd-compressed
# components, file and object attributes), then inspects and verifies it.
#
#   bash scripts/demo.sh            build in build/, write demo/checkpoint.zt
#   ZT_BUILD_DIR=out bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

build=${ZT_BUILD_DIR:-build}
out=demo
zt="$build/src/cli/zt"

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }
show() { printf '%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

if [ -f scripts/setup.sh ]; then
  step "Setting up (Debian packages; installs only what is missing)"
  bash scripts/setup.sh
fi

step "Configuring and building the zt tool in $build/ (CMake + Ninja)"
if [ -f "$build/CMakeCache.txt" ]; then
  cmake "$build" > /dev/null   # keep the options of an existing build directory
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
fi
cmake --build "$build" --target zt

step "Writing an example checkpoint"
mkdir -p "$out"
show "$zt" demo-checkpoint "$out/checkpoint.zt"

step "What is in it"
show "$zt" info "$out/checkpoint.zt"

step "A deep check: every digest, every decode, the sparse and quantized structure"
show "$zt" verify --verbose "$out/checkpoint.zt"

step "Values come out decoded, whatever the format"
show "$zt" cat "$out/checkpoint.zt" proj.fp8
show "$zt" cat "$out/checkpoint.zt" adjacency

step "And to the formats people hold"
show "$zt" convert "$out/checkpoint.zt" "$out/checkpoint.safetensors" --densify
show "$zt" ls -l "$out/checkpoint.safetensors"

printf '\nDone. Try: %s --help\n' "$zt"
