#!/usr/bin/env bash
# scripts/rebuild_time.sh: how long a crate of tile kernels takes to rebuild after one edit of a
# tile function they share. Copies tests/fnlib (ten kernels, three `#[tile_fn]` functions) into a
# temporary crate that depends on this checkout's `tile`, builds it once, then three times edits
# `clamp_to` (which all ten kernels call, so every kernel is compiled again: new IR, new PTX, new
# cubins) and times `cargo build`. Uses the workspace's target folder, so dependencies are not
# rebuilt. Prints one line per edit.
#
# Usage: bash scripts/rebuild_time.sh        (from anywhere; needs the toolchain setup.sh installs)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
[ -n "${TILE_PTXAS:-}" ] || [ ! -x "$ROOT/.tools/nvcc/nvidia/cuda_nvcc/bin/ptxas" ] \
  || export TILE_PTXAS="$ROOT/.tools/nvcc/nvidia/cuda_nvcc/bin/ptxas"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/src"
cp "$ROOT/tests/fnlib/src/lib.rs" "$WORK/src/lib.rs"
cat > "$WORK/Cargo.toml" <<TOML
[package]
name = "tile-rebuild-probe"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
tile = { path = "$ROOT" }

[workspace]
TOML
cd "$WORK"
cargo build -q
for lo in 1 2 3; do
  sed -i "s/min(max(x, [-0-9.]*), HI as f32)/min(max(x, -$lo.0), HI as f32)/" src/lib.rs
  grep -q "max(x, -$lo.0)" src/lib.rs
  start=$(date +%s.%N)
  cargo build -q
  end=$(date +%s.%N)
  echo "edit $lo of clamp_to (called by 10 kernels): rebuilt in $(awk "BEGIN { printf \"%.2f\", $end - $start }") s"
done
