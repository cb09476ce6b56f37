#!/usr/bin/env bash
# Twenty-fourth session, call 6: the probe examples/dropout_probe, fourth set of variants (of the fused
# four-words bias + GELU + dropout kernel: rows per program, block, warps, next-row prefetch),
# twice: 1024 columns of 5 to 8 rows; eight contiguous columns per thread (16-byte accesses).
# Usage: bash scripts/gpu/call6_24.sh (the probe in .device-wg/bins.tar.xz).
# The same steps as call 4 (only the probe in bins.tar.xz differs).
exec bash "$(dirname "$0")/call4_24.sh"
