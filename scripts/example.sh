#!/usr/bin/env bash
# Runs one example, on the GPU if there is one, else on the CPU interpreter:
#
#   bash scripts/example.sh [NAME [ARGS...]]     (default NAME: fused_add_mul)
#
# Installs what is missing first (scripts/setup.sh).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

NAME="${1:-fused_add_mul}"
[ "$#" -gt 0 ] && shift

bash scripts/setup.sh

CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
if [ -x "$CARGO_BIN/cargo" ]; then
    export PATH="$CARGO_BIN:$PATH"
fi

exec cargo run --release --example "$NAME" -- "$@"
