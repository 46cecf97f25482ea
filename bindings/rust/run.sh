#!/bin/sh
# Runs `cargo test --offline` for bindings/rust (ztensor-sys, ztensor)
# against the INSTALLED package, found through its zt.pc.
# usage: run.sh PREFIX LIBDIR OUTDIR [CARGO]
#   LIBDIR is relative to PREFIX; CARGO empty means "not found at configure".
# Exit 77 (CTest: Skipped) when no working cargo is available.
set -eu
prefix=$1 libdir=$2 out=$3 cargo=${4:-}
here=$(cd "$(dirname "$0")" && pwd)

. "$here/../../tests/ffi/require_tool.sh"
require_tool cargo "$cargo" --version "looked on PATH, in ~/.cargo/bin and /usr/local/bin; \
set -DZT_CARGO=/path/to/cargo to enable the Rust crates' tests (a cargo that does not run \
has no default toolchain)"
# cargo runs rustc from its own directory
PATH="$(dirname "$cargo"):$PATH"

mkdir -p "$out"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" CARGO_TARGET_DIR="$out/target"
export LD_LIBRARY_PATH="$prefix/$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "pkg-config --variable=libdir zt: $(pkg-config --variable=libdir zt)"
preload=$(sh "$here/../../tests/ffi/sanitizer_preload.sh" "${ZT_SANITIZE:-}")
if [ -z "$preload" ]; then
  exec "$cargo" test --offline --manifest-path "$here/Cargo.toml" -- --test-threads=2
fi
# A sanitized library needs its runtime loaded first, in the test programs
# only (not in rustc): a runner wrapper preloads it. The doc examples are
# built and run by rustdoc, which takes no runner, so they are left out.
echo "sanitized library (-fsanitize=$ZT_SANITIZE): LD_PRELOAD=$preload (doc tests skipped)"
cat > "$out/runner" <<RUN
#!/bin/sh
LD_PRELOAD="$preload" exec "\$@"
RUN
chmod +x "$out/runner"
CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="$out/runner" \
  exec "$cargo" test --offline --manifest-path "$here/Cargo.toml" --tests -- --test-threads=2
