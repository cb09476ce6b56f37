#!/usr/bin/env bash
# Twenty-fourth session, call 9: Philox's XORs reassociated (the key first, so that a round
# whose product is uniform hoists it): old (aa6e385) and new tile-bench alternated on the dropout
# families, two rounds.
# Usage: bash scripts/gpu/call9_24.sh (.device-wg/bins.tar.xz: tile-bench, and old/tile-bench).
set -uo pipefail
B=.device-wg; OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
(cd $B && tar xJf bins.tar.xz) || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$L/device.txt"; cat "$L/device.txt"
for round in 1 2; do
  vs="old new"; [ $round = 2 ] && vs="new old"
  for v in $vs; do
    bin=$B/tile-bench; [ $v = old ] && bin=$B/old/tile-bench
    timeout 140 $bin --filter dropout --no-plots --out "$L/$v.$round" > "$L/tb.$v.$round.log" 2>&1
    echo "== $v round $round: exit $?, $(grep -E 'checks' $L/tb.$v.$round.log | tail -1)"
    grep -E "16384x4096" "$L/$v.$round/tile.md" | grep -E "tile_fused|tile_words4" | cut -c1-100
  done
done
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
