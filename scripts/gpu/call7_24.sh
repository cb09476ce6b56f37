#!/usr/bin/env bash
# Twenty-fourth session, call 7: the probe examples/dropout_probe, fifth set of variants (of the fused
# four-words bias + GELU + dropout kernel: rows per program, block, warps, next-row prefetch),
# twice: eight contiguous columns per thread against four, 1024 × 6 and 8, 2048 × 1 and 4, each measured twice in a run.
# Usage: bash scripts/gpu/call7_24.sh (the probe in .device-wg/bins.tar.xz).
# The same steps as call 4 (only the probe in bins.tar.xz differs).
exec bash "$(dirname "$0")/call4_24.sh"
