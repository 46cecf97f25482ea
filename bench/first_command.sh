#!/usr/bin/env bash
# Times the README's first command (`bash scripts/demo.sh`) as on a fresh
# machine: the build set's Debian packages that the project's machine image
# lacks are purged, apt's download cache emptied and the page cache dropped,
# then the demo runs in a fresh clone of HEAD; RUNS times (default 3).
#
# It REMOVES system packages (then the demo installs them again): run it as
# root on a machine of your own, with ZT_REMOVE_PACKAGES=yes.
#
#   ZT_REMOVE_PACKAGES=yes bash bench/first_command.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${ZT_REMOVE_PACKAGES:-}" != yes ] || [ "$(id -u)" -ne 0 ]; then
  echo "first_command.sh purges Debian packages: run it as root with ZT_REMOVE_PACKAGES=yes" >&2
  exit 2
fi
runs=${1:-3}
# What scripts/setup.sh installs by default, less what the image has
# (g++, cmake, ninja-build, pkg-config, libssl-dev, zlib1g-dev), plus the
# libraries those pull in.
packages=(libzstd-dev libcbor-dev libxxhash-dev libutf8proc-dev libutf8proc2 libisal-dev libisal2 nlohmann-json3-dev
  libzip-dev libzip4 libcurl4-openssl-dev libprotobuf-dev libprotobuf-lite32)
clone=$(mktemp -d "${TMPDIR:-/tmp}/zt-first.XXXXXX")
trap 'rm -rf "$clone"' EXIT

for run in $(seq "$runs"); do
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${packages[@]}" > /dev/null 2>&1 || true
  apt-get clean
  rm -rf "$clone/libztensor"
  git clone -q . "$clone/libztensor"
  sync
  echo 3 > /proc/sys/vm/drop_caches
  start=$(date +%s.%N)
  if ! (cd "$clone/libztensor" && bash scripts/demo.sh > "$clone/demo.log" 2>&1); then
    tail -n 30 "$clone/demo.log"
    echo "run $run: the demo failed" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  set_up=$(grep -c '^Setting up' "$clone/demo.log" || true)
  echo "run $run: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s ($set_up packages set up)"
done
