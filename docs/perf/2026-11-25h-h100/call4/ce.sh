set -uo pipefail
OUT=${OUT:-/tmp/out}; L=$OUT/l; mkdir -p $L
timeout 120 .device-wg/cross_entropy > "$L/cross_entropy.log" 2>&1; echo "exit $?"
grep -cE " ok$" "$L/cross_entropy.log"; grep -E "FAILED|copy bandwidth|^\| tile|^cross" "$L/cross_entropy.log"
timeout 200 python3 bench/python/baseline.py --filter cross_entropy --out "$L/baseline_ce.json" > "$L/baseline_ce.log" 2>&1; echo "exit $?"
grep -E "^\| cross|^NVIDIA" "$L/baseline_ce.log"
timeout 120 compute-sanitizer --tool racecheck .device-wg/cross_entropy --quick > "$L/racecheck-ce.log" 2>&1; echo "racecheck exit $?: $(grep -E 'RACECHECK SUMMARY' "$L/racecheck-ce.log"), failed: $(grep -c FAILED "$L/racecheck-ce.log"), ok: $(grep -cE ' ok$' "$L/racecheck-ce.log")"
(cd "$OUT" && tar czf logs.tgz l && rm -rf l)
