#!/usr/bin/env bash
# The measurement behind docs/training.md, "What to expect" (issue 23): the demo chain on the nine simulator
# worlds of docs/simulator.md, with similarity (joint-sim) and mix pools, 5,000 evaluation questions each.
# Each chain is `lever run examples/demo.yaml` with --set overrides, in its own workspace under $OUT; the
# comparison table (final method, every stage, the vote) is printed at the end of each log, and
# `lever compare <eval run> --baseline <run>/selector:…sft…` gives RL against its SFT start.
# The two chains of a world share its workspace (data is made once). Two chains at a time take about 6–8
# minutes each on this 2-core machine (about 70 minutes for all eighteen).
#   bash bench/worlds.sh [OUT]        (npm run build first)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/lever-worlds}
mkdir -p "$OUT"
WORLDS=(
  "default|"
  "compressed|data.synth.embedding.shared=1.5"
  "mixedtypes|data.synth.embedding.textType=0.3 data.synth.embedding.textConcept=1"
  "wrongconsensus|data.synth.labelNoise=0.35 data.synth.embedding.shared=0.8"
  "hidden|data.synth.itemQuality=1.2 data.synth.embedding.imageAnswer=0"
  "noise|data.synth.labelNoise=0.25"
  "c96|data.synth.concepts=96"
  "decay|data.synth.model.positionDecay=0.4"
  "quality|data.synth.itemQuality=0.8"
)
chain() {
  local world=$1 pool=$2 sets=$3 args=()
  for s in $sets; do args+=(--set "$s"); done
  node dist/src/cli/main.js --workspace "$OUT/ws-$world" run examples/demo.yaml --set "name=$world-$pool" \
    --set report.enabled=false --set data.synth.valItems=5000 --set "pools.sampler=$pool" "${args[@]}" \
    > "$OUT/$world-$pool.log" 2>&1
}
for pool in joint-sim mix; do
  for entry in "${WORLDS[@]}"; do
    chain "${entry%%|*}" "$pool" "${entry#*|}" &
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do sleep 5; done
  done
done
wait
echo "logs in $OUT"
