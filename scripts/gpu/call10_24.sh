#!/usr/bin/env bash
# Twenty-fourth session, call 10: the final build (with Philox's key xored first). GPU tests; the example fused_bias_gelu_dropout
# (checks, then its table); tile-bench's dropout families with bench/python/baseline.py's
# (PyTorch, Triton) and bench/join.py's tables; compute-sanitizer memcheck and racecheck of the
# example's --quick run.
# Usage: bash scripts/gpu/call10_24.sh (.device-wg/bins.tar.xz: tile-bench, the two dropout
# examples, gpu_tests, stripped).
# The same steps as call 5 (only the binaries in bins.tar.xz differ).
exec bash "$(dirname "$0")/call5_24.sh"
