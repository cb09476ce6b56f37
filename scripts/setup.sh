#!/usr/bin/env bash
# Installs what building and testing tile needs, and nothing that is already there.
#
#   bash scripts/setup.sh        (from any directory)
#
# 1. Debian/Ubuntu packages: LLVM 19 (llvm-19-dev; libpolly-19-dev, zlib1g-dev and libzstd-dev as
#    well, which llvm-config names when LLVM is linked statically), a C compiler (build-essential:
#    rustc's linker and llvm-sys's C wrappers), curl, and python3-pip when pip is missing.
#    `apt-get update` runs once, and only when something has to be installed.
# 2. A Rust toolchain with clippy and rustfmt, when `cargo` is missing or older than the workspace's
#    rust-version (1.85). Path 1: rustup-init, fetched straight from static.rust-lang.org (the
#    sh.rustup.rs convenience host does not resolve here), installing toolchain $TILE_RUST_TOOLCHAIN
#    (default 1.95.0, the version the project is developed and linted with) into ~/.cargo. Path 2,
#    if that download fails: Debian's rustc-web, cargo-web, rust-web-clippy and rustfmt-web
#    (bookworm: 1.85 in main, 1.96 in bookworm-security), into /usr/bin. Debian's plain `rustc`
#    package is 1.63, too old for our dependencies, so it is never used.
#    Checked on 2026-11-22 on the Debian 12 dev machine: static.rust-lang.org answered (HTTP 200),
#    and rustup-init installed 1.95.0 + clippy + rustfmt into a scratch RUSTUP_HOME/CARGO_HOME in
#    12 s; sh.rustup.rs did not resolve. The Debian fallback's packages were fetched and unpacked
#    into a scratch folder (not installed system-wide): rustc/cargo/clippy/rustfmt 1.96.0 built,
#    linted and format-checked a small crate.
# 3. ptxas, from the PyPI wheel nvidia-cuda-nvcc-cu12 (no GPU needed), into the git-ignored
#    .tools/nvcc, so the binary is .tools/nvcc/nvidia/cuda_nvcc/bin/ptxas. Skipped when TILE_PTXAS
#    already names an executable.
#
# It exports nothing: callers put ~/.cargo/bin on PATH themselves (scripts/test.sh does) and point
# TILE_PTXAS at the ptxas it prints.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

RUST_TOOLCHAIN="${TILE_RUST_TOOLCHAIN:-1.95.0}"
MIN_RUST_MINOR=85 # workspace rust-version = 1.85
NVCC_WHEEL="nvidia-cuda-nvcc-cu12==12.9.86"
PTXAS_DEFAULT="$ROOT/.tools/nvcc/nvidia/cuda_nvcc/bin/ptxas"
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"

log() { echo "setup: $*"; }
die() {
    echo "setup: error: $*" >&2
    exit 1
}

SUDO=()
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "not root and no sudo: cannot install packages"
    SUDO=(sudo)
fi

# rustup's ~/.cargo/bin first, as scripts/test.sh does.
if [ -x "$CARGO_BIN/cargo" ]; then
    PATH="$CARGO_BIN:$PATH"
fi

# --- 1. apt packages -------------------------------------------------------------------------

APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install by hand: $*"
    if [ "$APT_UPDATED" = 0 ]; then
        "${SUDO[@]}" apt-get update -qq >/dev/null
        APT_UPDATED=1
    fi
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

pkg_installed() {
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

ptxas_ok() { [ -n "$1" ] && [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

WANT=(llvm-19-dev libpolly-19-dev zlib1g-dev libzstd-dev build-essential ca-certificates curl)
NEED_PTXAS=1
if [ -n "${TILE_PTXAS:-}" ] && ptxas_ok "$TILE_PTXAS"; then
    NEED_PTXAS=0
elif ptxas_ok "$PTXAS_DEFAULT"; then
    NEED_PTXAS=0
fi
if [ "$NEED_PTXAS" = 1 ] && ! python3 -m pip --version >/dev/null 2>&1; then
    WANT+=(python3 python3-pip)
fi

MISSING=()
if command -v dpkg-query >/dev/null 2>&1; then
    for p in "${WANT[@]}"; do
        pkg_installed "$p" || MISSING+=("$p")
    done
else
    # Not Debian/Ubuntu: trust what is on PATH and say what we could not check.
    [ -x /usr/lib/llvm-19/bin/llvm-config ] || die "no /usr/lib/llvm-19/bin/llvm-config; install LLVM 19 by hand"
fi
if [ "${#MISSING[@]}" -gt 0 ]; then
    apt_install "${MISSING[@]}"
    for p in "${MISSING[@]}"; do log "installed apt package $p"; done
fi
[ -x /usr/lib/llvm-19/bin/llvm-config ] || die "llvm-config missing at /usr/lib/llvm-19/bin (LLVM_SYS_191_PREFIX in .cargo/config.toml)"

# --- 2. Rust ---------------------------------------------------------------------------------

rust_minor() { # prints the minor version of rustc on PATH, or nothing
    rustc --version 2>/dev/null | sed -n 's/^rustc 1\.\([0-9][0-9]*\)\..*/\1/p'
}

rust_ok() {
    command -v cargo >/dev/null 2>&1 || return 1
    local minor
    minor="$(rust_minor)"
    [ -n "$minor" ] && [ "$minor" -ge "$MIN_RUST_MINOR" ]
}

install_rust_rustup() {
    local arch tmp
    arch="$(uname -m)"
    tmp="$(mktemp -d)"
    # sh.rustup.rs does not resolve from our machines; static.rust-lang.org does.
    if ! curl -fsSL --retry 3 -o "$tmp/rustup-init" \
        "https://static.rust-lang.org/rustup/dist/${arch}-unknown-linux-gnu/rustup-init"; then
        rm -rf "$tmp"
        return 1
    fi
    chmod +x "$tmp/rustup-init"
    if ! "$tmp/rustup-init" -y --no-modify-path --profile minimal \
        --default-toolchain "$RUST_TOOLCHAIN" -c clippy -c rustfmt >"$tmp/log" 2>&1; then
        tail -n 20 "$tmp/log" >&2
        rm -rf "$tmp"
        return 1
    fi
    rm -rf "$tmp"
    PATH="$CARGO_BIN:$PATH"
    log "installed Rust $RUST_TOOLCHAIN (clippy, rustfmt) with rustup into $CARGO_BIN"
}

RUST_FROM_DEBIAN=0
install_rust_debian() {
    RUST_FROM_DEBIAN=1
    apt_install rustc-web cargo-web rust-web-clippy rustfmt-web
    hash -r
    log "installed Rust $(rustc --version | cut -d' ' -f2) from Debian's rustc-web/cargo-web/rust-web-clippy/rustfmt-web"
}

if ! rust_ok; then
    if command -v cargo >/dev/null 2>&1; then
        log "cargo on PATH is too old ($(rustc --version 2>/dev/null || echo unknown)); installing a newer one"
    fi
    if ! install_rust_rustup; then
        log "rustup-init could not be fetched or failed; falling back to Debian's rustc-web"
        install_rust_debian
    fi
    rust_ok || die "no usable Rust toolchain after installing (need >= 1.$MIN_RUST_MINOR)"
fi

# clippy and rustfmt
lint_tools_ok() { cargo clippy --version >/dev/null 2>&1 && cargo fmt --version >/dev/null 2>&1; }
if ! lint_tools_ok; then
    if command -v rustup >/dev/null 2>&1; then
        rustup component add clippy rustfmt >/dev/null 2>&1 || die "rustup component add clippy rustfmt failed"
        log "installed rustup components clippy, rustfmt"
    elif [ "$RUST_FROM_DEBIAN" = 0 ]; then
        install_rust_debian
    fi
    lint_tools_ok || die "cargo clippy / cargo fmt do not run"
fi

# --- 3. ptxas --------------------------------------------------------------------------------

if [ -n "${TILE_PTXAS:-}" ] && ptxas_ok "$TILE_PTXAS"; then
    PTXAS="$TILE_PTXAS"
else
    PTXAS="$PTXAS_DEFAULT"
    if ! ptxas_ok "$PTXAS"; then
        rm -rf .tools/nvcc .tools/nvcc.partial
        mkdir -p .tools
        # --target bypasses PEP 668's externally-managed check, so Debian's own pip works too.
        python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
            --no-deps --no-compile \
            --target .tools/nvcc.partial "$NVCC_WHEEL" >/dev/null ||
            die "pip install $NVCC_WHEEL failed"
        mv .tools/nvcc.partial .tools/nvcc
        chmod +x "$PTXAS"
        ptxas_ok "$PTXAS" || die "ptxas installed at $PTXAS does not run"
        log "installed ptxas ($NVCC_WHEEL) into .tools/nvcc"
    fi
fi

log "ready: $(cargo --version), LLVM $(/usr/lib/llvm-19/bin/llvm-config --version)"
echo "ptxas: $PTXAS ($("$PTXAS" --version | sed -n 's/.*, \(V[0-9.]*\)$/\1/p'))"
