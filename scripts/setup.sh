#!/usr/bin/env bash
# Installs the Debian packages libztensor needs, and only those that are
# missing: with everything present it changes nothing and needs no network.
# Uses sudo when not run as root.
#
#   bash scripts/setup.sh          what building the library and the zt tool
#                                  needs (the README's first command)
#   bash scripts/setup.sh --test   that and what the test suite uses (torch,
#                                  ONNX, nginx, Go, clang, valgrind, abigail,
#                                  ccache; scripts/test.sh and CI)
set -euo pipefail

build=(
  g++ cmake ninja-build pkg-config                             # toolchain
  libzstd-dev libcbor-dev libxxhash-dev libssl-dev             # the library's dependencies
  libutf8proc-dev libisal-dev                                  # CRC-32C and zip CRC-32 (ISA-L)
  nlohmann-json3-dev libzip-dev libcurl4-openssl-dev
  libprotobuf-dev                                              # ONNX models (protobuf)
)
tests=(
  libgtest-dev libbenchmark-dev                                # tests and benchmarks
  python3 python3-cbor2 python3-zstandard python3-numpy        # the conformance suite
  python3-xxhash python3-pytest
  python3-torch                                                # real torch.save files (cli.pytorch)
  python3-onnx                                                 # real ONNX models (cli.onnx)
  python3-pip python3-setuptools                               # the Python package, installed offline
  python3-wheel python3-build python3-venv                     # its wheel, installed in fresh venvs
  nginx-light                                                  # a real HTTP server on loopback (remote reads)
  golang-go                                                    # the Go module (bindings/go)
  valgrind clang libclang-rt-14-dev                            # memory checks, sanitizers, fuzzing
  abigail-tools                                                # the ABI check (abi/, docs/abi.md)
  man-db                                                       # `man zt` after an install (install.man_page)
  ccache                                                       # scripts/test.sh's compiler cache
)

packages=("${build[@]}")
case "${1:-}" in
  "") ;;
  --test) packages+=("${tests[@]}") ;;
  *)
    echo "usage: bash scripts/setup.sh [--test]" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  # One status line per installed architecture; "installed" means usable.
  if ! dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qx installed; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
echo "setup: installing ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup: installed ${#missing[@]} packages"
