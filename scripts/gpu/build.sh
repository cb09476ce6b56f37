#!/usr/bin/env bash
# Builds the release binaries the GPU machine runs (it has no Rust) into .device-bin/.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .device-bin/ptx
# The PTX of every example kernel too, for the SASS check in run.sh.
TILE_DUMP=ptx TILE_DUMP_DIR="$PWD/.device-bin/ptx" cargo build --release --examples
for ex in fused_add_mul launch_overhead $(cd examples && ls -d */ | tr -d / | grep -v '^common$' | grep -v '^fused_add_mul$'); do
  cp "target/release/examples/$ex" .device-bin/
done
# tile-bench: every example kernel family, fused and unfused, with tables, JSON and plots.
cargo build --release -p tile-bench && cp target/release/tile-bench .device-bin/
bin=$(cargo test --release --test gpu --no-run --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="gpu": print(m["executable"])')
cp "$bin" .device-bin/gpu_tests
cp scripts/gpu/*.sh .device-bin/
ls -la .device-bin
