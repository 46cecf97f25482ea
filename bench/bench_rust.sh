#!/bin/sh
# The Rust crate's load benchmark (bindings/rust/ztensor/examples/
# load_bench.rs) for the report: open + every tensor of a model into new
# vectors (decode_many_to_vecs, and decode_many into vec![0; n]s), against
# a thread a core reading the file into one new vec![0; n]. Builds the
# crate against the library of BUILD, installed into BUILD/rust-prefix.
# usage: bench_rust.sh BUILD OUT.txt REPETITIONS
# Exit 77 without a working cargo (the report then says "not run").
set -eu
build=$1 out=$2 reps=$3
here=$(cd "$(dirname "$0")" && pwd)
cargo=$(command -v cargo || true)
[ -n "$cargo" ] || [ ! -x "$HOME/.cargo/bin/cargo" ] || cargo=$HOME/.cargo/bin/cargo
[ -n "$cargo" ] || { echo "bench_rust: no cargo" >&2; exit 77; }
prefix=$build/rust-prefix
cmake --build "$build" --target zt >/dev/null # the install takes the CLI too
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(dirname "$(find "$prefix" -name zt.pc | head -n 1)")
export PKG_CONFIG_PATH="$pc" CARGO_TARGET_DIR="$build/rust-target"
export LD_LIBRARY_PATH="$(dirname "$pc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PATH="$(dirname "$cargo"):$PATH" "$cargo" build --release --offline \
  --manifest-path "$here/../bindings/rust/Cargo.toml" --example load_bench >&2
sh "$here/fresh_loads.sh" "$CARGO_TARGET_DIR/release/examples/load_bench" "$out" "$reps" rust \
  to-vecs by-hand floor floor-huge
