#!/usr/bin/env bash
# scripts/gpu/build.sh: runs HERE, on the build machine (Rust, LLVM 19, ptxas). Builds the release
# binaries that the GPU machine runs (it has no Rust) and gathers them in the git-ignored
# .device-bin/:
#   .device-bin/EXAMPLE          every example (examples/NAME/ and examples/NAME.rs), stripped
#   .device-bin/tile-bench       the benchmark of every example family
#   .device-bin/gpu_tests        the GPU test binary (tests/gpu.rs); also streams_tests and
#                                tracing_tests when those test targets exist
#   .device-bin/ptx/             the PTX of every kernel (TILE_DUMP=ptx), for profile.sh's SASS
#                                and check.sh's spill check with the GPU machine's ptxas
#   .device-bin/bench/           bench/python/*.py and bench/join.py (the baselines)
#   .device-bin/MANIFEST         the commit, the date and the sizes
#   .device-pack/device-bin.tar.xz   all of the above, packed: what a device call carries
# Then, in one device call that carries `.device-pack`, run bench.sh, check.sh or profile.sh from
# the repository root (scripts/gpu/README.md); each unpacks .device-bin first.
#
#   .device-pack/diff.tar.xz     with --diff: the differential tester (tile-fuzz, which compiles
#                                kernels there, so it brings the LLVM library and the libraries that
#                                one links), for scripts/gpu/diff.sh
#
# Usage: bash scripts/gpu/build.sh [--examples "gemm fused_softmax"] [--diff | --diff-only]
#   --examples LIST   copy only these examples (default: all); keeps the carried folder small
#   --diff            also pack the differential tester (about 45 MiB: carry it with few examples)
#   --diff-only       pack only the differential tester
# Honours CARGO_TARGET_DIR. The carried folder must stay under 64 MiB: the script says when not.
set -euo pipefail
cd "$(dirname "$0")/../.."
ONLY=""
DIFF=0
while [ $# -gt 0 ]; do
  case "$1" in
    --examples) ONLY="$2"; shift 2 ;;
    --diff) DIFF=1; shift ;;
    --diff-only) DIFF=2; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
T=${CARGO_TARGET_DIR:-target}

# The differential tester compiles on the GPU machine, which has no LLVM: it travels with the
# shared libraries it loads that are not part of a base system (libLLVM and its dependencies).
pack_diff() {
  cargo build --release -p tile-fuzz
  local P
  P=$(mktemp -d)
  mkdir -p "$P/lib"
  cp "$T/release/tile-fuzz" "$P/" && strip "$P/tile-fuzz"
  ldd "$T/release/tile-fuzz" | awk '/=> \// { print $3 }' \
    | grep -vE '/(libc|libm|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' \
    | while read -r lib; do cp -L "$lib" "$P/lib/"; done
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')" > "$P/MANIFEST"
  mkdir -p .device-pack
  tar -C "$P" -I 'xz -T0' -cf .device-pack/diff.tar.xz .
  rm -rf "$P"
  echo "packed: .device-pack/diff.tar.xz, $(du -sh .device-pack/diff.tar.xz | cut -f1) (carry .device-pack)"
}
if [ $DIFF = 2 ]; then
  rm -f .device-pack/device-bin.tar.xz
  pack_diff
  exit 0
fi
D=.device-bin
rm -rf "$D"
mkdir -p "$D/ptx" "$D/bench/python"

# Examples, with every kernel's PTX written beside them (changing TILE_DUMP rebuilds the kernels).
TILE_DUMP=ptx TILE_DUMP_DIR="$PWD/$D/ptx" cargo build --release --examples
ALL=$( (cd examples && ls -d */ | tr -d / | grep -vx common; ls *.rs 2>/dev/null | sed 's/\.rs$//' | grep -vx lib) | sort -u)
for ex in ${ONLY:-$ALL}; do
  cp "$T/release/examples/$ex" "$D/"
done

cargo build --release -p tile-bench
cp "$T/release/tile-bench" "$T/release/autotune_cost" "$D/"

# Test binaries: cargo names them with a hash, so ask cargo where each one is.
# The `tracing` test needs its feature (without it the binary holds no test).
test_bin() {
  local features=()
  [ "$1" = tracing ] && features=(--features tracing)
  cargo test --release "${features[@]}" --test "$1" --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1"
}
for t in gpu streams tracing; do
  if [ -f "tests/$t.rs" ]; then
    bin=$(test_bin "$t")
    [ -n "$bin" ] && cp "$bin" "$D/${t}_tests"
  fi
done

cp bench/join.py "$D/bench/"
cp bench/python/*.py "$D/bench/python/"
find "$D" -maxdepth 1 -type f -perm -u+x -exec strip {} + 2>/dev/null || true

{
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  du -sh "$D" | cut -f1 | sed 's/^/size /'
} > "$D/MANIFEST"
cat "$D/MANIFEST"
# The device call carries at most 64 MiB with the tree: the binaries hold their kernels' PTX,
# which xz shrinks about twelvefold. The GPU scripts unpack it when .device-bin is absent.
mkdir -p .device-pack
tar -I 'xz -T0' -cf .device-pack/device-bin.tar.xz "$D"
echo "packed: .device-pack/device-bin.tar.xz, $(du -sh .device-pack/device-bin.tar.xz | cut -f1) (carry .device-pack)"
if [ $DIFF = 1 ]; then pack_diff; else rm -f .device-pack/diff.tar.xz; fi
