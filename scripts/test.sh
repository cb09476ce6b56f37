#!/usr/bin/env bash
# Every check the project has, in the order CI runs them (.ci/run calls this script, and so should
# you):
#
#   bash scripts/test.sh        (from any directory)
#
# setup (scripts/setup.sh), then formatting, clippy with warnings denied, the workspace's tests (with
# TILE_PTXAS pointing at the ptxas that setup installed, so PTX is assembled for every kernel), and
# the docs with rustdoc warnings denied. Stops at the first failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/setup.sh

CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
if [ -x "$CARGO_BIN/cargo" ]; then
    export PATH="$CARGO_BIN:$PATH"
fi
export TILE_PTXAS="${TILE_PTXAS:-$ROOT/.tools/nvcc/nvidia/cuda_nvcc/bin/ptxas}"
# On CI every build starts from a clean tree and is thrown away: incremental state and debug
# info are only cost there (the same checks run; PTX does not depend on them). Locally they stay
# as cargo's defaults, so this script reuses what `cargo test` built.
if [ -n "${CI:-}" ]; then
    export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=0
fi

START=$SECONDS
TIMES=()
step() {
    echo
    echo "==> $*"
    local t0=$SECONDS
    "$@"
    TIMES+=("$((SECONDS - t0)) s  $*")
}

step cargo fmt --all --check
step cargo clippy --workspace --all-targets -- -D warnings

echo
echo "==> cargo test --workspace   (TILE_PTXAS=$TILE_PTXAS)"
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
t0=$SECONDS
set +e
cargo test --workspace 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
set -e
TIMES+=("$((SECONDS - t0)) s  cargo test --workspace")
# Sum cargo's "test result: ok. N passed; N failed; N ignored; ..." lines.
read -r passed failed ignored < <(awk '
    /^test result:/ {
        for (i = 1; i <= NF; i++) {
            if ($(i + 1) ~ /^passed;?$/) p += $i
            if ($(i + 1) ~ /^failed;?$/) f += $i
            if ($(i + 1) ~ /^ignored;?$/) g += $i
        }
    }
    END { print p + 0, f + 0, g + 0 }' "$LOG")
if [ "$status" != 0 ]; then
    echo "tests: $passed passed, $failed failed, $ignored skipped"
    echo "test.sh: FAILED in cargo test (exit $status)"
    exit "$status"
fi

# The runtime's `tracing` events (a feature, off by default).
step cargo clippy -p tile --all-targets --features tracing -- -D warnings
step cargo test --features tracing --test tracing

# tile in one build with other crates' cudarc features (coexist/Cargo.toml says which): candle-core's
# cannot link without CUDA, so it is checked; a plain cudarc user's runs its tests.
COEXIST=(--manifest-path coexist/Cargo.toml --target-dir target)
step cargo fmt --manifest-path coexist/Cargo.toml --check
step cargo check "${COEXIST[@]}" --all-targets --features candle
step cargo check "${COEXIST[@]}" --all-targets --features cubecl
step cargo clippy "${COEXIST[@]}" --all-targets --features pinned -- -D warnings
step cargo test "${COEXIST[@]}" --features pinned

echo
echo "==> GPU tests say whether they ran (they run on a machine with a CUDA device)"
cargo test --test gpu -- --nocapture --test-threads=1 2>&1 | grep -E "skipped|^test result" || true

# Every crate's documentation but the test package's (its library is the tests' shared kernels).
export RUSTDOCFLAGS="-D warnings"
step cargo doc --workspace --no-deps --exclude tile-tests

echo
echo "==> time per step"
printf '  %s\n' "${TIMES[@]}"
echo "test.sh: fmt, clippy, test and doc passed in $((SECONDS - START)) s"
echo "tests: $passed passed, $failed failed, $ignored skipped"
